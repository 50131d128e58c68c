/* ravlt public API: images (decoded by OpenCV inside the library; no OpenCV header needed).
 *
 *   rv_image img = {0};
 *   if (rv_image_read("photo.jpg", &img, ctx) != RV_OK) ...rv_ctx_errmsg(ctx)...;
 *   ... img.data[(y * img.w + x) * img.c + k] ...     // HWC uint8, BGR
 *   rv_image_write("copy.png", &img, ctx);
 *   rv_image_free(&img);
 *
 * Pixels are HWC uint8 in OpenCV's channel order: 3-channel images are BGR (as cv2.imread
 * and mmcv give them), 1-channel images are grey / label maps. Decoding is byte-identical
 * to cv2.imread / mmcv.imfrombytes.
 */
#ifndef RAVLT_IMAGE_H
#define RAVLT_IMAGE_H

#include <ravlt/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* HWC uint8, rows contiguous (stride w*c). Owned; release with rv_image_free. A
 * zero-initialised rv_image is empty and may be passed as an output anywhere. */
typedef struct {
  unsigned char *data;
  int h, w, c;
} rv_image;

/* mmdet/mmseg img_meta of one pre-processed image. Shapes are h, w; channels are always 3. */
typedef struct {
  int ori_h, ori_w;       /* ori_shape: decoded image */
  int img_h, img_w;       /* img_shape: after Resize (boxes are clipped to this) */
  int pad_h, pad_w;       /* pad_shape: after Pad (== img_* without Pad) */
  float scale_factor[4];  /* float32 [w, h, w, h]: new_w/w, new_h/h; resized = orig * factor */
  int flip;               /* 1 if horizontally flipped (aug test) */
  int scale_w, scale_h;   /* the Resize "scale" tuple that was used (0 if none) */
} rv_img_meta;

/* Allocate (or reuse, when already that size) an h x w x c image, contents zeroed. */
RV_API rv_status rv_image_alloc(rv_image *img, int h, int w, int c, rv_ctx *ctx);
RV_API void rv_image_free(rv_image *img); /* frees data and zeroes the struct; NULL-safe */
RV_API rv_status rv_image_copy(rv_image *dst, const rv_image *src, rv_ctx *ctx);
static inline unsigned char *rv_image_px(const rv_image *img, int y, int x) {
  return img->data + ((size_t)y * (size_t)img->w + (size_t)x) * (size_t)img->c;
}

/* Decode a file as 3-channel BGR (cv2.IMREAD_COLOR: grey/alpha/16-bit inputs are
 * converted, EXIF orientation applied). Errors name the file: missing/unreadable
 * (RV_ERR_IO), empty or not a decodable image (RV_ERR_FORMAT). A truncated JPEG is
 * decoded as far as the data goes (libjpeg fills the rest with grey) and a warning is
 * logged through ctx, not an error: this matches cv2.imread/mmcv. */
RV_API rv_status rv_image_read(const char *path, rv_image *img, rv_ctx *ctx);
/* Decode an 8-bit single-channel PNG (or other grey image) as is (cv2.IMREAD_UNCHANGED),
 * for label maps. 16-bit, multi-channel and palette-indexed images are rejected with a
 * clear error (OpenCV would expand palette indices to colours). */
RV_API rv_status rv_image_read_gray(const char *path, rv_image *img, rv_ctx *ctx);
/* Decode from memory (cv2.imdecode IMREAD_COLOR); `name` is used in messages. */
RV_API rv_status rv_image_decode(const void *buf, size_t len, const char *name, rv_image *img,
                                 rv_ctx *ctx);
/* Encode by the file extension (.png .jpg .jpeg .bmp .ppm .pgm .tif .webp ...) and write to
 * a temporary file in the same folder, then rename: a failure leaves nothing behind. JPEG
 * quality 95. 1-, 3- (BGR) and 4-channel images. */
RV_API rv_status rv_image_write(const char *path, const rv_image *img, rv_ctx *ctx);
/* Encode to memory; *buf is malloc'ed (free()). ext like ".png" or ".jpg". */
RV_API rv_status rv_image_encode(const rv_image *img, const char *ext, unsigned char **buf,
                                 size_t *len, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
