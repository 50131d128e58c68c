/* mmcv/mmdet/mmseg test-time pre-processing: Resize(keep_ratio) -> [Flip] -> Normalize ->
 * [Pad]. See preprocess.h for the exact semantics and SEMANTICS.md A/K for the sources. */
#include "datasets/preprocess.h"

#include <math.h>
#include <string.h>

static const float imagenet_mean[3] = {123.675f, 116.28f, 103.53f};
static const float imagenet_std[3] = {58.395f, 57.12f, 57.375f};

static rv_preprocess_params base_params(void) {
  rv_preprocess_params p;
  memset(&p, 0, sizeof p);
  p.keep_ratio = 1;
  p.interp = RV_INTERP_LINEAR;
  memcpy(p.mean, imagenet_mean, sizeof p.mean);
  memcpy(p.std, imagenet_std, sizeof p.std);
  p.to_rgb = 1;
  return p;
}

rv_preprocess_params rv_preprocess_mmdet_params(void) {
  rv_preprocess_params p = base_params();
  p.scale_w = 1333;
  p.scale_h = 800;
  p.size_divisor = 32;
  return p;
}

rv_preprocess_params rv_preprocess_mmseg_params(void) {
  rv_preprocess_params p = base_params();
  p.scale_w = 2048;
  p.scale_h = 512;
  return p;
}

/* mmcv.rescale_size(old_size=(w, h), scale=(a, b)):
 *   sf = min(max(a,b) / max(h,w), min(a,b) / min(h,w))      (Python float64 division)
 *   new = (int(w*sf + 0.5), int(h*sf + 0.5))                 (truncation of a positive) */
void rv_rescale_size(int w, int h, int scale_a, int scale_b, int *new_w, int *new_h, double *sf) {
  RV_ASSERT(w > 0 && h > 0 && scale_a > 0 && scale_b > 0);
  double lo = scale_a < scale_b ? scale_a : scale_b, hi = scale_a < scale_b ? scale_b : scale_a;
  double long_e = w > h ? w : h, short_e = w > h ? h : w;
  double f1 = hi / long_e, f2 = lo / short_e;
  double f = f1 < f2 ? f1 : f2;
  if (new_w) *new_w = (int)((double)w * f + 0.5);
  if (new_h) *new_h = (int)((double)h * f + 0.5);
  if (sf) *sf = f;
}

void rv_preprocess_out_size(const rv_preprocess_params *p, int w, int h, int *new_w, int *new_h) {
  if (p->scale_w <= 0 || p->scale_h <= 0) {
    *new_w = w;
    *new_h = h;
  } else if (p->keep_ratio) {
    rv_rescale_size(w, h, p->scale_w, p->scale_h, new_w, new_h, NULL);
  } else {
    *new_w = p->scale_w;
    *new_h = p->scale_h;
  }
}

rv_status rv_preprocess_resize(rv_image *dst, rv_img_meta *meta, const rv_image *src,
                               const rv_preprocess_params *p, rv_ctx *ctx) {
  if (!src || !src->data || src->h <= 0 || src->w <= 0)
    return rv_error(ctx, RV_ERR_ARG, "preprocess: empty input image");
  if (src->c != 3)
    return rv_error(ctx, RV_ERR_SHAPE, "preprocess: image has %d channels, expected 3 (BGR)", src->c);
  if (p->size_divisor < 0) return rv_error(ctx, RV_ERR_ARG, "preprocess: negative size_divisor");
  int nw, nh;
  rv_preprocess_out_size(p, src->w, src->h, &nw, &nh);
  if (nw <= 0 || nh <= 0)
    return rv_error(ctx, RV_ERR_SHAPE, "preprocess: image %dx%d resizes to an empty %dx%d", src->w,
                    src->h, nw, nh);
  if (nw == src->w && nh == src->h) {
    RV_TRY(rv_image_copy(dst, src, ctx)); /* cv2.resize to the same size is a copy */
  } else {
    RV_TRY(rv_image_resize(dst, src, nw, nh, p->interp, ctx));
  }
  if (p->flip) RV_TRY(rv_image_flip(dst, dst, 1, ctx));
  memset(meta, 0, sizeof *meta);
  meta->ori_h = src->h;
  meta->ori_w = src->w;
  meta->img_h = nh;
  meta->img_w = nw;
  meta->pad_h = rv_pad_to_multiple(nh, p->size_divisor);
  meta->pad_w = rv_pad_to_multiple(nw, p->size_divisor);
  /* w_scale = new_w / w (Python float64), stored as float32 */
  float sw = (float)((double)nw / (double)src->w), sh = (float)((double)nh / (double)src->h);
  meta->scale_factor[0] = sw;
  meta->scale_factor[1] = sh;
  meta->scale_factor[2] = sw;
  meta->scale_factor[3] = sh;
  meta->flip = p->flip ? 1 : 0;
  meta->scale_w = p->scale_w;
  meta->scale_h = p->scale_h;
  return RV_OK;
}

/* mmcv.imnormalize: img.astype(float32); cvtColor BGR2RGB; cv2.subtract(img, mean);
 * cv2.multiply(img, 1/std). OpenCV converts the float64 mean and 1/std scalars to the
 * float32 depth of the image, so per element: y = (v - (float)mean) * (float)(1/std),
 * two float32 roundings (this file is C11 without fp-contract, so no FMA).
 * dst: 3 x dst_h x dst_w, channel c of the output = RGB channel c (to_rgb) or BGR. */
void rv_preprocess_normalize(float *dst, int dst_h, int dst_w, const rv_image *src,
                             const rv_preprocess_params *p) {
  RV_ASSERT(src->c == 3 && dst_h >= src->h && dst_w >= src->w);
  size_t plane = (size_t)dst_h * (size_t)dst_w;
  for (int oc = 0; oc < 3; oc++) {
    int ic = p->to_rgb ? 2 - oc : oc; /* source channel in the BGR pixel */
    float mean = p->mean[oc];
    float stdinv = (float)(1.0 / (double)p->std[oc]);
    float *o = dst + (size_t)oc * plane;
    for (int y = 0; y < src->h; y++) {
      const unsigned char *s = src->data + (size_t)y * src->w * 3 + ic;
      float *row = o + (size_t)y * dst_w;
      for (int x = 0; x < src->w; x++) {
        float v = (float)s[(size_t)x * 3] - mean;
        row[x] = v * stdinv;
      }
      for (int x = src->w; x < dst_w; x++) row[x] = 0.0f;
    }
    for (int y = src->h; y < dst_h; y++) memset(o + (size_t)y * dst_w, 0, sizeof(float) * (size_t)dst_w);
  }
}

rv_status rv_preprocess(rv_tensor *out, rv_img_meta *meta, const rv_image *img,
                        const rv_preprocess_params *p, rv_arena *arena, rv_ctx *ctx) {
  rv_image resized = {0};
  rv_status st = rv_preprocess_resize(&resized, meta, img, p, ctx);
  if (st != RV_OK) {
    rv_image_free(&resized);
    return st;
  }
  *out = rv_tensor_new(arena, 1, 3, meta->pad_h, meta->pad_w);
  if (!out->data) {
    rv_image_free(&resized);
    return rv_error(ctx, RV_ERR_NOMEM, "preprocess: cannot allocate the 1x3x%dx%d input tensor",
                    meta->pad_h, meta->pad_w);
  }
  rv_preprocess_normalize(out->data, meta->pad_h, meta->pad_w, &resized, p);
  rv_image_free(&resized);
  return RV_OK;
}

/* mmseg MultiScaleFlipAug: with an img_scale tuple and img_ratios, the scales are
 * (int(sw*r), int(sh*r)); with img_scale None, (int(w*r), int(h*r)) of the image. Then
 * for each scale, flip False then True (one direction, horizontal). */
int rv_preprocess_aug_list(rv_preprocess_params *out, int max, const rv_preprocess_params *base,
                           const double *ratios, int n_ratios, int flip, int img_w, int img_h) {
  static const double one = 1.0;
  int use_base = ratios == NULL || n_ratios <= 0;
  if (use_base) {
    ratios = &one;
    n_ratios = 1;
  }
  int k = 0;
  for (int i = 0; i < n_ratios; i++) {
    double r = ratios[i];
    if (!(r > 0)) return -1;
    int sw, sh;
    if (use_base) {
      sw = base->scale_w;
      sh = base->scale_h;
    } else if (base->scale_w > 0 && base->scale_h > 0) {
      sw = (int)((double)base->scale_w * r);
      sh = (int)((double)base->scale_h * r);
    } else {
      sw = (int)((double)img_w * r);
      sh = (int)((double)img_h * r);
    }
    for (int f = 0; f <= (flip ? 1 : 0); f++) {
      if (k < max) {
        out[k] = *base;
        out[k].scale_w = sw;
        out[k].scale_h = sh;
        out[k].flip = f;
        if (out[k].scale_w <= 0 || out[k].scale_h <= 0) return -1;
      }
      k++;
    }
  }
  return k;
}

void rv_flip_planes_f32(float *x, int planes, int h, int w) {
  for (size_t r = 0; r < (size_t)planes * (size_t)h; r++) {
    float *row = x + r * (size_t)w;
    for (int a = 0, b = w - 1; a < b; a++, b--) {
      float t = row[a];
      row[a] = row[b];
      row[b] = t;
    }
  }
}

/* torchvision.transforms.functional._compute_resized_output_size for an int size. */
int rv_tv_resize_size(int w, int h, int size, int *new_w, int *new_h) {
  int sh = w <= h ? w : h, lg = w <= h ? h : w;
  if (sh == size) {
    *new_w = w;
    *new_h = h;
    return 0;
  }
  int nl = (int)((double)size * (double)lg / (double)sh); /* int(size * long / short) */
  *new_w = w <= h ? size : nl;
  *new_h = w <= h ? nl : size;
  return 1;
}

/* Python round() of x/2 for an integer x: half to even. */
static int round_half_even_div2(int x) {
  double r = rint((double)x / 2.0); /* default rounding mode: to nearest, ties to even */
  return (int)r;
}

rv_status rv_preprocess_imagenet(rv_tensor *out, const rv_image *img, int input_size, rv_arena *arena,
                                 rv_ctx *ctx) {
  static const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
  if (!img || !img->data || img->c != 3)
    return rv_error(ctx, RV_ERR_ARG, "imagenet preprocess: expected a 3-channel image");
  if (input_size < 8 || input_size > 4096)
    return rv_error(ctx, RV_ERR_ARG, "imagenet preprocess: input size %d out of range", input_size);
  int size = input_size > 224 ? input_size : (int)((256.0 / 224.0) * (double)input_size);
  int nw, nh;
  rv_image rs = {0};
  const rv_image *src = img;
  if (rv_tv_resize_size(img->w, img->h, size, &nw, &nh)) {
    if (nw <= 0 || nh <= 0 || (double)nw * (double)nh > (double)(1 << 28))
      return rv_error(ctx, RV_ERR_SHAPE, "imagenet preprocess: image %dx%d has an extreme aspect ratio",
                      img->w, img->h);
    RV_TRY(rv_image_resize_pil(&rs, img, nw, nh, RV_PIL_BICUBIC, ctx));
    src = &rs;
  }
  int crop = input_size;
  if (src->w < crop || src->h < crop) {
    rv_image_free(&rs);
    return rv_error(ctx, RV_ERR_SHAPE, "imagenet preprocess: %dx%d is smaller than the %d crop", src->w,
                    src->h, crop);
  }
  int top = round_half_even_div2(src->h - crop), left = round_half_even_div2(src->w - crop);
  *out = rv_tensor_new(arena, 1, 3, crop, crop);
  if (!out->data) {
    rv_image_free(&rs);
    return rv_error(ctx, RV_ERR_NOMEM, "imagenet preprocess: cannot allocate 1x3x%dx%d", crop, crop);
  }
  for (int c = 0; c < 3; c++) {
    int ic = 2 - c; /* RGB plane c from BGR pixel */
    for (int y = 0; y < crop; y++) {
      const unsigned char *row = src->data + ((size_t)(top + y) * src->w + left) * 3;
      float *o = rv_tensor_at(*out, 0, c, y, 0);
      for (int x = 0; x < crop; x++) {
        float v = (float)row[(size_t)x * 3 + ic] / 255.0f; /* ToTensor */
        o[x] = (v - mean[c]) / stdv[c];                      /* Normalize: sub_, div_ */
      }
    }
  }
  rv_image_free(&rs);
  return RV_OK;
}
