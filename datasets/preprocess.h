/* Test-time pre-processing exactly as mmcv 1.7 / mmdet 2.11 / mmseg 0.13 do it:
 * LoadImageFromFile -> Resize(keep_ratio) -> [RandomFlip] -> Normalize(to_rgb) -> [Pad 32].
 *
 *   rv_preprocess_params p = rv_preprocess_mmdet_params();    // (1333, 800), pad 32
 *   rv_image img = {0};
 *   rv_image_read("photo.jpg", &img, ctx);
 *   rv_tensor x; rv_img_meta meta;
 *   if (rv_preprocess(&x, &meta, &img, &p, arena, ctx) != RV_OK) ...;
 *   // x: 1 x 3 x meta.pad_h x meta.pad_w float32, RGB, (v - mean) / std, zero padded
 *   // boxes in resized coordinates / meta.scale_factor -> original coordinates
 *
 * Semantics (see tests/fixtures/SEMANTICS.md A and K):
 * - keep_ratio: sf = min(max(scale)/max(h,w), min(scale)/min(h,w)) (double),
 *   new_w = (int)(w*sf + 0.5), new_h = (int)(h*sf + 0.5); cv2.resize INTER_LINEAR on the
 *   uint8 BGR image; scale_factor = float32 {new_w/w, new_h/h, new_w/w, new_h/h}.
 *   keep_ratio = 0: resize to the scale exactly (w, h) = (scale_w, scale_h).
 * - Normalize: float32 (v - (float)mean) * (float)(1/std) after BGR->RGB, like
 *   cv2.subtract/cv2.multiply in mmcv.imnormalize.
 * - Pad: bottom/right zeros to multiples of size_divisor (mmdet 32; mmseg ADE20K none).
 * - Flip (aug test): horizontal mirror of the resized image, before Normalize.
 * - Multi-scale (mmseg MultiScaleFlipAug img_ratios): scale_r = ((int)(sw*r), (int)(sh*r))
 *   of the base scale (sw, sh), or of the image's own (w, h) when no base scale is given,
 *   then the keep-ratio resize above. Order: for each ratio, for flip in {no, yes}.
 */
#ifndef RV_DATASETS_PREPROCESS_H
#define RV_DATASETS_PREPROCESS_H

#include "formats/image.h"
#include "core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* rv_img_meta (ori/img/pad shapes, scale_factor, flip) is defined in formats/image.h. */

typedef struct {
  int scale_w, scale_h;   /* Resize img_scale tuple, e.g. (1333, 800) or (2048, 512);
                             0, 0: keep the original size (no resize) */
  int keep_ratio;         /* 1 (the test pipelines) */
  rv_interp interp;       /* RV_INTERP_LINEAR ('bilinear', mmcv's default) */
  float mean[3], std[3];  /* RGB order */
  int to_rgb;             /* 1: BGR -> RGB before normalising */
  int size_divisor;       /* Pad size_divisor; 0 = no Pad */
  int flip;               /* horizontal flip after resize */
} rv_preprocess_params;

/* COCO (mmdet): img_scale (1333, 800), keep_ratio, ImageNet mean/std, to_rgb, Pad 32. */
rv_preprocess_params rv_preprocess_mmdet_params(void);
/* ADE20K (mmseg): img_scale (2048, 512), keep_ratio, ImageNet mean/std, to_rgb, no Pad. */
rv_preprocess_params rv_preprocess_mmseg_params(void);

/* mmcv.rescale_size for a (scale_a, scale_b) tuple (order does not matter): new size and
 * the float64 factor. */
void rv_rescale_size(int w, int h, int scale_a, int scale_b, int *new_w, int *new_h,
                     double *sf);
/* New image size for params p (keep_ratio or exact), w/o doing anything. */
void rv_preprocess_out_size(const rv_preprocess_params *p, int w, int h, int *new_w,
                            int *new_h);
static inline int rv_pad_to_multiple(int x, int divisor) {
  return divisor > 0 ? (x + divisor - 1) / divisor * divisor : x;
}

/* Resize (+ flip) step only: dst = the uint8 BGR image that Normalize sees (the fixtures'
 * `resized_bgr`), and meta filled (pad_* computed from size_divisor). */
rv_status rv_preprocess_resize(rv_image *dst, rv_img_meta *meta, const rv_image *src,
                               const rv_preprocess_params *p, rv_ctx *ctx);
/* Normalize + Pad: writes 3 planes of dst_h x dst_w floats (NCHW for one image) from the
 * resized BGR image (3 channels): RGB (if to_rgb) (v - mean)/std, zeros outside
 * src->h x src->w. dst_h >= src->h, dst_w >= src->w (a batch may pad to its largest). */
void rv_preprocess_normalize(float *dst, int dst_h, int dst_w, const rv_image *src,
                             const rv_preprocess_params *p);
/* The whole pipeline for one image: *out = 1 x 3 x pad_h x pad_w from the arena. */
rv_status rv_preprocess(rv_tensor *out, rv_img_meta *meta, const rv_image *img,
                        const rv_preprocess_params *p, rv_arena *arena, rv_ctx *ctx);

/* Test-time augmentation list (MultiScaleFlipAug): for each ratio (in order), flip 0
 * then (if flip) 1. ratios NULL / n_ratios 0 means the single base scale. Writes up to
 * max items into out (params copies with scale and flip set) and returns the count
 * (n_ratios * (flip ? 2 : 1)), or -1 if a ratio is not positive. With base scale 0,0 the
 * scale is taken from the image size (img_w, img_h), like mmseg with img_scale=None. */
int rv_preprocess_aug_list(rv_preprocess_params *out, int max, const rv_preprocess_params *base,
                           const double *ratios, int n_ratios, int flip, int img_w, int img_h);

/* ---- ImageNet classification (torchvision test transform of the RALA classification
 * code: Resize(short side, PIL bicubic) -> CenterCrop -> ToTensor -> Normalize) -------- */
typedef enum { RV_PIL_BILINEAR = 2, RV_PIL_BICUBIC = 3 } rv_pil_filter; /* PIL's numbers */
/* Pillow Image.resize((w, h), filter) on uint8 pixels, bit-exact (datasets/resample_pil.c).
 * Works on any channel order (BGR in, BGR out). */
rv_status rv_image_resize_pil(rv_image *dst, const rv_image *src, int w, int h, rv_pil_filter f,
                              rv_ctx *ctx);
/* torchvision Resize(int size): short side -> size, long side -> (int)(size * long / short);
 * returns 0 if the image already has that short side (torchvision then does not resample). */
int rv_tv_resize_size(int w, int h, int size, int *new_w, int *new_h);
/* The RALA/DeiT ImageNet eval transform: resize_short = input_size > 224 ? input_size :
 * (int)(256/224 * input_size); crop = input_size. *out = 1 x 3 x crop x crop, RGB,
 * (v/255 - mean) / std with mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225), float32 as
 * torch computes it. img is BGR (as decoded). Crop offsets round((size - crop) / 2) with
 * Python's round-half-even. */
rv_status rv_preprocess_imagenet(rv_tensor *out, const rv_image *img, int input_size, rv_arena *arena,
                                 rv_ctx *ctx);

/* Horizontal flip of a label map / score planes back after a flipped forward pass. */
void rv_flip_planes_f32(float *x, int planes, int h, int w);

#ifdef __cplusplus
}
#endif
#endif
