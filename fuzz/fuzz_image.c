/* libFuzzer target: rv_image_decode (OpenCV imdecode behind the wrapper) on arbitrary
 * bytes, then the mmdet test pipeline and the Pillow resampler on a downscaled copy, so
 * any size the decoder accepts goes through our pre-processing under ASan/UBSan. Images
 * over 4 Mpixel are skipped after decoding (the decoder, not ravlt, is then the cost). */
#include "formats/image.h"
#include "datasets/preprocess.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rv_ctx *ctx = rv_ctx_create();
  rv_image img = {0}, small = {0}, out = {0};
  rv_status st = rv_image_decode(data, size, "fuzz", &img, ctx);
  if (st != RV_OK) {
    if (img.data != NULL || rv_ctx_errmsg(ctx)[0] == 0) abort(); /* no object, a message */
  } else if ((size_t)img.h * (size_t)img.w <= ((size_t)4 << 20)) {
    if (img.c != 3) abort();
    int w = img.w > 64 ? 64 : img.w, h = img.h > 48 ? 48 : img.h;
    if (rv_image_resize(&small, &img, w, h, RV_INTERP_AREA, ctx) != RV_OK) abort();
    rv_preprocess_params p = rv_preprocess_mmdet_params();
    p.scale_w = 96; /* keep the work small */
    p.scale_h = 64;
    rv_img_meta m;
    rv_arena *a = rv_arena_create(0);
    rv_tensor x;
    if (rv_preprocess(&x, &m, &small, &p, a, ctx) == RV_OK) {
      if (x.h != m.pad_h || x.w != m.pad_w || m.pad_h % 32 || m.pad_w % 32) abort();
    }
    if (rv_image_resize_pil(&out, &small, 1 + (int)(size % 50), 1 + (int)(size % 37), RV_PIL_BICUBIC, ctx) != RV_OK)
      abort();
    rv_arena_free(a);
  }
  rv_image_free(&img);
  rv_image_free(&small);
  rv_image_free(&out);
  rv_ctx_free(ctx);
  return 0;
}
