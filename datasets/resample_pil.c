/* Pillow-compatible uint8 resampling (Image.resize with BILINEAR / BICUBIC, no box, no
 * reducing_gap), the resize of torchvision's ImageNet test transform. OpenCV's
 * INTER_CUBIC is a different filter (no antialiasing when shrinking), so classification
 * parity needs this one.
 *
 * Algorithm (Pillow's separable convolution, as documented by its Resample.c):
 *   scale = in/out; fscale = max(scale, 1); support = filter_support * fscale
 *   for output index o: centre = (o + 0.5) * scale
 *     xmin = max((int)(centre - support + 0.5), 0); xmax = min((int)(centre + support + 0.5), in)
 *     k[i] = filter((xmin + i - centre + 0.5) / fscale), i in [0, xmax - xmin), normalised
 *     to sum 1, then fixed point: (int)(k * 2^22 +- 0.5) (rounded away from zero)
 *   out = clamp((2^21 + sum in[xmin+i] * k[i]) >> 22, 0, 255)
 * Horizontal pass first (over the rows the vertical pass needs), rounded to uint8, then
 * the vertical pass. A pass whose size does not change is skipped. */
#include "datasets/preprocess.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PIL_PRECISION_BITS (32 - 8 - 2)

static double filter_bilinear(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

/* Keys cubic with a = -0.5 */
static double filter_bicubic(double x) {
  const double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

typedef struct {
  int ksize;
  int *bounds; /* out_size x {xmin, count} */
  int32_t *k;  /* out_size x ksize fixed-point weights */
} coeffs;

static void coeffs_free(coeffs *c) {
  free(c->bounds);
  free(c->k);
}

static int precompute(coeffs *c, int in_size, int out_size, rv_pil_filter f) {
  double support0 = f == RV_PIL_BICUBIC ? 2.0 : 1.0;
  double scale = (double)in_size / (double)out_size;
  double fscale = scale < 1.0 ? 1.0 : scale;
  double support = support0 * fscale;
  c->ksize = (int)ceil(support) * 2 + 1;
  c->bounds = malloc(sizeof(int) * 2 * (size_t)out_size);
  c->k = malloc(sizeof(int32_t) * (size_t)c->ksize * (size_t)out_size);
  double *w = malloc(sizeof(double) * (size_t)c->ksize);
  if (!c->bounds || !c->k || !w) {
    free(w);
    return -1;
  }
  for (int o = 0; o < out_size; o++) {
    double centre = ((double)o + 0.5) * scale;
    double ss = 1.0 / fscale, ww = 0.0;
    int xmin = (int)(centre - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = (int)(centre + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    for (int i = 0; i < xmax; i++) {
      double x = ((double)(i + xmin) - centre + 0.5) * ss;
      w[i] = f == RV_PIL_BICUBIC ? filter_bicubic(x) : filter_bilinear(x);
      ww += w[i];
    }
    int32_t *k = c->k + (size_t)o * c->ksize;
    for (int i = 0; i < c->ksize; i++) {
      double v = i < xmax ? (ww != 0.0 ? w[i] / ww : w[i]) : 0.0;
      double s = v * (double)(1 << PIL_PRECISION_BITS);
      k[i] = (int32_t)(v < 0 ? -0.5 + s : 0.5 + s);
    }
    c->bounds[2 * o] = xmin;
    c->bounds[2 * o + 1] = xmax;
  }
  free(w);
  return 0;
}

static inline unsigned char clip8(int32_t v) {
  int32_t s = v >> PIL_PRECISION_BITS; /* arithmetic shift = floor, as Pillow */
  return (unsigned char)(s < 0 ? 0 : s > 255 ? 255 : s);
}

/* dst rows [0, rows) = horizontal resample of src rows [row0, row0 + rows). */
static void pass_h(unsigned char *dst, int ow, const rv_image *src, int row0, int rows, const coeffs *c) {
  int ch = src->c;
  for (int y = 0; y < rows; y++) {
    const unsigned char *in = src->data + (size_t)(row0 + y) * src->w * ch;
    unsigned char *out = dst + (size_t)y * ow * ch;
    for (int o = 0; o < ow; o++) {
      int xmin = c->bounds[2 * o], n = c->bounds[2 * o + 1];
      const int32_t *k = c->k + (size_t)o * c->ksize;
      for (int q = 0; q < ch; q++) {
        int32_t ss = 1 << (PIL_PRECISION_BITS - 1);
        for (int i = 0; i < n; i++) ss += (int32_t)in[(size_t)(xmin + i) * ch + q] * k[i];
        out[(size_t)o * ch + q] = clip8(ss);
      }
    }
  }
}

/* vertical pass: in has w x in_rows pixels; bounds are relative to row `shift`. */
static void pass_v(unsigned char *dst, int oh, const unsigned char *in, int w, int ch, int shift,
                   const coeffs *c) {
  size_t row = (size_t)w * ch;
  for (int o = 0; o < oh; o++) {
    int ymin = c->bounds[2 * o] - shift, n = c->bounds[2 * o + 1];
    const int32_t *k = c->k + (size_t)o * c->ksize;
    unsigned char *out = dst + (size_t)o * row;
    for (size_t x = 0; x < row; x++) {
      int32_t ss = 1 << (PIL_PRECISION_BITS - 1);
      for (int i = 0; i < n; i++) ss += (int32_t)in[(size_t)(ymin + i) * row + x] * k[i];
      out[x] = clip8(ss);
    }
  }
}

rv_status rv_image_resize_pil(rv_image *dst, const rv_image *src, int w, int h, rv_pil_filter f,
                              rv_ctx *ctx) {
  if (!src || !src->data || src->h <= 0 || src->w <= 0)
    return rv_error(ctx, RV_ERR_ARG, "PIL resize: empty source image");
  if (dst == src || (dst->data && dst->data == src->data))
    return rv_error(ctx, RV_ERR_ARG, "PIL resize: destination must differ from the source");
  if (w <= 0 || h <= 0) return rv_error(ctx, RV_ERR_ARG, "PIL resize: invalid size %dx%d", w, h);
  if (f != RV_PIL_BILINEAR && f != RV_PIL_BICUBIC)
    return rv_error(ctx, RV_ERR_ARG, "PIL resize: unsupported filter %d", (int)f);
  int need_h = w != src->w, need_v = h != src->h;
  coeffs ch = {0}, cv = {0};
  unsigned char *tmp = NULL;
  rv_status st = RV_OK;
  if (precompute(&ch, src->w, w, f) || precompute(&cv, src->h, h, f)) {
    st = rv_error(ctx, RV_ERR_NOMEM, "PIL resize: out of memory");
    goto done;
  }
  int first = cv.bounds[0], last = cv.bounds[2 * h - 2] + cv.bounds[2 * h - 1];
  const unsigned char *vin = src->data;
  int shift = 0;
  if (need_h) {
    int rows = need_v ? last - first : src->h;
    int row0 = need_v ? first : 0;
    if (need_v) {
      tmp = malloc((size_t)w * src->c * (size_t)rows);
      if (!tmp) {
        st = rv_error(ctx, RV_ERR_NOMEM, "PIL resize: out of memory");
        goto done;
      }
      pass_h(tmp, w, src, row0, rows, &ch);
      vin = tmp;
      shift = first;
    } else {
      if ((st = rv_image_alloc(dst, h, w, src->c, ctx)) != RV_OK) goto done;
      pass_h(dst->data, w, src, 0, h, &ch);
      goto done;
    }
  }
  if (need_v) {
    if ((st = rv_image_alloc(dst, h, w, src->c, ctx)) != RV_OK) goto done;
    pass_v(dst->data, h, vin, w, src->c, shift, &cv);
  } else if (!need_h) {
    st = rv_image_copy(dst, src, ctx);
  }
done:
  free(tmp);
  coeffs_free(&ch);
  coeffs_free(&cv);
  return st;
}
