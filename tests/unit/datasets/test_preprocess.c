/* datasets/preprocess.h against the official pipeline: the e2e fixtures (decode ==
 * image_bgr, Resize == resized_bgr, img_meta shapes and float32 scale factors, Normalize
 * and Pad), plus mmcv's rounding rules, MultiScaleFlipAug scales and flips.
 * Tolerances: decode and resize exact (0 grey levels); Normalize within 1e-5 of the
 * float64 formula (float32 arithmetic), padding exactly 0. */
#include "test_util.h"
#include "formats/image.h"
#include "formats/weights.h"
#include "datasets/preprocess.h"

#include <cjson/cJSON.h>

static int json_int_at(const cJSON *arr, int i) {
  const cJSON *v = cJSON_GetArrayItem(arr, i);
  assert_non_null(v);
  return (int)cJSON_GetNumberValue(v);
}

/* Build params from the fixture's test_pipeline (MultiScaleFlipAug img_scale, Normalize,
 * Pad) instead of assuming them. */
static rv_preprocess_params params_from_pipeline(const cJSON *pipe) {
  rv_preprocess_params p = rv_preprocess_mmseg_params();
  p.size_divisor = 0;
  p.scale_w = p.scale_h = -1;
  const cJSON *step;
  cJSON_ArrayForEach(step, pipe) {
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(step, "type"));
    if (!type || strcmp(type, "MultiScaleFlipAug") != 0) continue;
    const cJSON *sc = cJSON_GetObjectItem(step, "img_scale");
    p.scale_w = json_int_at(sc, 0);
    p.scale_h = json_int_at(sc, 1);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(step, "flip")));
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(step, "transforms")) {
      const char *tt = cJSON_GetStringValue(cJSON_GetObjectItem(t, "type"));
      if (strcmp(tt, "Resize") == 0) assert_true(cJSON_IsTrue(cJSON_GetObjectItem(t, "keep_ratio")));
      if (strcmp(tt, "Pad") == 0) p.size_divisor = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(t, "size_divisor"));
      if (strcmp(tt, "Normalize") == 0) {
        for (int c = 0; c < 3; c++) {
          p.mean[c] = (float)cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "mean"), c));
          p.std[c] = (float)cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "std"), c));
        }
        p.to_rgb = cJSON_IsTrue(cJSON_GetObjectItem(t, "to_rgb"));
      }
    }
  }
  assert_true(p.scale_w > 0);
  return p;
}

static const rv_wtensor *need(const rv_weights *w, const char *name) {
  const rv_wtensor *t = rv_weights_find(w, name);
  if (!t) fail_msg("io.safetensors has no '%s'", name);
  assert_int_equal(t->dtype, RV_DT_U8);
  assert_int_equal(t->ndim, 3);
  return t;
}

static void check_e2e(const char *name) {
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s", fixture_path("e2e"));
  rv_ctx *ctx = rv_ctx_create();
  snprintf(path, sizeof path, "%s/%s/config.json", dir, name);
  char *txt = test_read_text(path);
  if (!txt) fail_msg("missing fixture %s", path);
  cJSON *cfg = cJSON_Parse(txt);
  assert_non_null(cfg);
  const cJSON *meta_j = cJSON_GetObjectItem(cfg, "img_meta");
  rv_preprocess_params p = params_from_pipeline(cJSON_GetObjectItem(cfg, "test_pipeline"));
  /* the library's presets are the official pipelines */
  rv_preprocess_params preset = p.size_divisor ? rv_preprocess_mmdet_params() : rv_preprocess_mmseg_params();
  assert_int_equal(preset.scale_w, p.scale_w);
  assert_int_equal(preset.scale_h, p.scale_h);
  assert_int_equal(preset.size_divisor, p.size_divisor);
  assert_memory_equal(preset.mean, p.mean, sizeof p.mean);
  assert_memory_equal(preset.std, p.std, sizeof p.std);
  assert_int_equal(preset.to_rgb, p.to_rgb);

  rv_weights *io = NULL;
  snprintf(path, sizeof path, "%s/%s/io.safetensors", dir, name);
  assert_int_equal(rv_weights_open(&io, path, ctx), RV_OK);

  /* 1. decode == image_bgr */
  rv_image img = {0};
  snprintf(path, sizeof path, "%s/%s/image.jpg", dir, name);
  assert_int_equal(rv_image_read(path, &img, ctx), RV_OK);
  const rv_wtensor *bgr = need(io, "image_bgr");
  assert_int_equal(img.h, bgr->shape[0]);
  assert_int_equal(img.w, bgr->shape[1]);
  assert_int_equal(img.c, 3);
  size_t ndiff = 0;
  for (size_t i = 0; i < bgr->nbytes; i++) ndiff += img.data[i] != ((const unsigned char *)bgr->data)[i];
  if (ndiff) fail_msg("%s: decode differs from image_bgr in %zu of %zu bytes", name, ndiff, bgr->nbytes);

  /* 2. Resize == resized_bgr, meta == img_meta */
  rv_image rs = {0};
  rv_img_meta m;
  assert_int_equal(rv_preprocess_resize(&rs, &m, &img, &p, ctx), RV_OK);
  const rv_wtensor *ref = need(io, "resized_bgr");
  assert_int_equal(rs.h, ref->shape[0]);
  assert_int_equal(rs.w, ref->shape[1]);
  int maxd = 0;
  ndiff = 0;
  for (size_t i = 0; i < ref->nbytes; i++) {
    int d = abs((int)rs.data[i] - (int)((const unsigned char *)ref->data)[i]);
    if (d > maxd) maxd = d;
    ndiff += d != 0;
  }
  if (maxd) fail_msg("%s: resize differs from resized_bgr: %zu bytes, max %d", name, ndiff, maxd);
  const cJSON *ori = cJSON_GetObjectItem(meta_j, "ori_shape"), *ish = cJSON_GetObjectItem(meta_j, "img_shape"),
              *psh = cJSON_GetObjectItem(meta_j, "pad_shape"), *sf = cJSON_GetObjectItem(meta_j, "scale_factor");
  assert_int_equal(m.ori_h, json_int_at(ori, 0));
  assert_int_equal(m.ori_w, json_int_at(ori, 1));
  assert_int_equal(m.img_h, json_int_at(ish, 0));
  assert_int_equal(m.img_w, json_int_at(ish, 1));
  assert_int_equal(m.pad_h, json_int_at(psh, 0));
  assert_int_equal(m.pad_w, json_int_at(psh, 1));
  for (int k = 0; k < 4; k++) {
    float want = (float)cJSON_GetNumberValue(cJSON_GetArrayItem(sf, k));
    if (m.scale_factor[k] != want)
      fail_msg("%s: scale_factor[%d] %.9g != %.9g", name, k, (double)m.scale_factor[k], (double)want);
  }
  assert_int_equal(m.flip, 0);

  /* 3. Normalize + Pad: the full tensor */
  rv_arena *arena = rv_arena_create(0);
  rv_tensor x;
  rv_img_meta m2;
  assert_int_equal(rv_preprocess(&x, &m2, &img, &p, arena, ctx), RV_OK);
  assert_memory_equal(&m, &m2, sizeof m);
  assert_int_equal(x.n, 1);
  assert_int_equal(x.c, 3);
  assert_int_equal(x.h, m.pad_h);
  assert_int_equal(x.w, m.pad_w);
  double maxe = 0;
  for (int c = 0; c < 3; c++)
    for (int y = 0; y < x.h; y++)
      for (int xx = 0; xx < x.w; xx++) {
        float v = *rv_tensor_at(x, 0, c, y, xx);
        if (y >= m.img_h || xx >= m.img_w) {
          if (v != 0.0f) fail_msg("%s: padding (%d,%d,%d) = %g", name, c, y, xx, (double)v);
          continue;
        }
        int px = ((const unsigned char *)ref->data)[((size_t)y * m.img_w + xx) * 3 + (2 - c)]; /* RGB */
        double want = ((double)px - (double)p.mean[c]) / (double)p.std[c];
        double e = fabs((double)v - want);
        if (e > maxe) maxe = e;
      }
  printf("  %s: %dx%d -> %dx%d (pad %dx%d), decode and resize exact, normalize max err %.2e\n", name,
         m.ori_w, m.ori_h, m.img_w, m.img_h, m.pad_w, m.pad_h, maxe);
  assert_true(maxe < 1e-5);

  rv_arena_free(arena);
  rv_image_free(&img);
  rv_image_free(&rs);
  rv_weights_free(io);
  cJSON_Delete(cfg);
  free(txt);
  rv_ctx_free(ctx);
}

static void test_e2e_upernet(void **s) { (void)s; check_e2e("upernet"); }
static void test_e2e_semantic_fpn(void **s) { (void)s; check_e2e("semantic_fpn"); }
static void test_e2e_mask_rcnn(void **s) { (void)s; check_e2e("mask_rcnn"); }
static void test_e2e_cascade(void **s) { (void)s; check_e2e("cascade_mask_rcnn"); }
static void test_e2e_retinanet(void **s) { (void)s; check_e2e("retinanet"); }

static void test_rescale_size(void **state) {
  (void)state;
  int w, h;
  double sf;
  rv_rescale_size(440, 333, 1333, 200, &w, &h, &sf);
  assert_int_equal(w, 264);
  assert_int_equal(h, 200);
  assert_true(sf == 200.0 / 333.0);
  rv_rescale_size(440, 333, 200, 1333, &w, &h, NULL); /* tuple order does not matter */
  assert_int_equal(w, 264);
  assert_int_equal(h, 200);
  /* half rounds up (int(x + 0.5)), unlike Python's round(): 5*0.5 = 2.5 -> 3 */
  rv_rescale_size(5, 8, 4, 3, &w, &h, &sf);
  assert_true(sf == 0.5);
  assert_int_equal(w, 3);
  assert_int_equal(h, 4);
  /* messi5: anisotropic float32 factors */
  rv_preprocess_params p = rv_preprocess_mmdet_params();
  rv_image img = {0}, out = {0};
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_image_alloc(&img, 342, 548, 3, ctx), RV_OK);
  rv_img_meta m;
  assert_int_equal(rv_preprocess_resize(&out, &m, &img, &p, ctx), RV_OK);
  assert_int_equal(m.img_w, 1282);
  assert_int_equal(m.img_h, 800);
  assert_int_equal(m.pad_w, 1312);
  assert_int_equal(m.pad_h, 800);
  assert_true(m.scale_factor[0] == 2.339416027069092f);
  assert_true(m.scale_factor[1] == 2.3391811847686768f);
  assert_true(m.scale_factor[2] == m.scale_factor[0] && m.scale_factor[3] == m.scale_factor[1]);
  /* keep_ratio = 0: exact size; scale 0,0: no resize */
  p.keep_ratio = 0;
  p.scale_w = 100;
  p.scale_h = 50;
  assert_int_equal(rv_preprocess_resize(&out, &m, &img, &p, ctx), RV_OK);
  assert_int_equal(out.w, 100);
  assert_int_equal(out.h, 50);
  assert_int_equal(m.pad_w, 128);
  assert_int_equal(m.pad_h, 64);
  p.scale_w = p.scale_h = 0;
  p.size_divisor = 0;
  assert_int_equal(rv_preprocess_resize(&out, &m, &img, &p, ctx), RV_OK);
  assert_int_equal(out.w, 548);
  assert_true(m.scale_factor[0] == 1.0f);
  /* bad inputs */
  rv_image grey = {0}, empty = {0};
  assert_int_equal(rv_image_alloc(&grey, 10, 10, 1, ctx), RV_OK);
  assert_int_equal(rv_preprocess_resize(&out, &m, &grey, &p, ctx), RV_ERR_SHAPE);
  assert_int_equal(rv_preprocess_resize(&out, &m, &empty, &p, ctx), RV_ERR_ARG);
  p = rv_preprocess_mmdet_params();
  rv_image tiny = {0};
  assert_int_equal(rv_image_alloc(&tiny, 1, 4000, 3, ctx), RV_OK); /* 1333/4000*1 -> 0 rows */
  assert_int_equal(rv_preprocess_resize(&out, &m, &tiny, &p, ctx), RV_ERR_SHAPE);
  rv_image_free(&tiny);
  rv_image_free(&grey);
  rv_image_free(&img);
  rv_image_free(&out);
  rv_ctx_free(ctx);
  assert_int_equal(rv_pad_to_multiple(800, 32), 800);
  assert_int_equal(rv_pad_to_multiple(801, 32), 832);
  assert_int_equal(rv_pad_to_multiple(7, 0), 7);
}

/* mmseg MultiScaleFlipAug(img_scale=(2048, 512), img_ratios=[0.5..1.75], flip=True) on a
 * 512x384 (w x h) image; sizes from mmcv's formulas evaluated in Python. */
static void test_aug_list(void **state) {
  (void)state;
  static const double ratios[6] = {0.5, 0.75, 1.0, 1.25, 1.5, 1.75};
  static const int scales[6][2] = {{1024, 256}, {1536, 384}, {2048, 512}, {2560, 640}, {3072, 768}, {3584, 896}};
  static const int sizes[6][2] = {{341, 256}, {512, 384}, {683, 512}, {853, 640}, {1024, 768}, {1195, 896}};
  rv_preprocess_params base = rv_preprocess_mmseg_params(), aug[12];
  assert_int_equal(rv_preprocess_aug_list(aug, 12, &base, ratios, 6, 1, 512, 384), 12);
  for (int i = 0; i < 12; i++) {
    assert_int_equal(aug[i].scale_w, scales[i / 2][0]);
    assert_int_equal(aug[i].scale_h, scales[i / 2][1]);
    assert_int_equal(aug[i].flip, i % 2);
    int w, h;
    rv_preprocess_out_size(&aug[i], 512, 384, &w, &h);
    assert_int_equal(w, sizes[i / 2][0]);
    assert_int_equal(h, sizes[i / 2][1]);
  }
  /* count only / no ratios / bad ratio / ratios of the image size (img_scale None) */
  assert_int_equal(rv_preprocess_aug_list(aug, 0, &base, ratios, 6, 0, 512, 384), 6);
  assert_int_equal(rv_preprocess_aug_list(aug, 12, &base, NULL, 0, 1, 512, 384), 2);
  assert_int_equal(aug[1].scale_w, 2048);
  assert_int_equal(aug[1].flip, 1);
  double bad = -1;
  assert_int_equal(rv_preprocess_aug_list(aug, 12, &base, &bad, 1, 0, 512, 384), -1);
  base.scale_w = base.scale_h = 0;
  assert_int_equal(rv_preprocess_aug_list(aug, 12, &base, ratios, 2, 0, 259, 194), 2);
  assert_int_equal(aug[0].scale_w, 129); /* int(259*0.5) */
  assert_int_equal(aug[0].scale_h, 97);
  assert_int_equal(aug[1].scale_w, 194); /* int(259*0.75) = int(194.25) */
}

static void test_flip_and_normalize(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_image img = {0}, a = {0}, b = {0};
  assert_int_equal(rv_image_alloc(&img, 37, 53, 3, ctx), RV_OK);
  uint64_t seed = 7;
  for (size_t i = 0; i < (size_t)37 * 53 * 3; i++) img.data[i] = (unsigned char)((test_rand(&seed) + 1.0f) * 127.5f);
  rv_preprocess_params p = rv_preprocess_mmdet_params();
  rv_img_meta ma, mb;
  assert_int_equal(rv_preprocess_resize(&a, &ma, &img, &p, ctx), RV_OK);
  p.flip = 1;
  assert_int_equal(rv_preprocess_resize(&b, &mb, &img, &p, ctx), RV_OK);
  assert_int_equal(mb.flip, 1);
  assert_int_equal(ma.img_w, mb.img_w);
  for (int y = 0; y < a.h; y++)
    for (int x = 0; x < a.w; x++) assert_memory_equal(rv_image_px(&a, y, x), rv_image_px(&b, y, a.w - 1 - x), 3);
  /* normalize into a larger batch slot: zeros outside, BGR->RGB, exact float32 formula */
  int dh = a.h + 5, dw = a.w + 9;
  float *buf = malloc(sizeof(float) * 3 * (size_t)dh * dw);
  for (size_t i = 0; i < 3 * (size_t)dh * dw; i++) buf[i] = 42.0f;
  rv_preprocess_normalize(buf, dh, dw, &a, &p);
  for (int c = 0; c < 3; c++) {
    float mean = p.mean[c], stdinv = (float)(1.0 / (double)p.std[c]);
    for (int y = 0; y < dh; y++)
      for (int x = 0; x < dw; x++) {
        float v = buf[((size_t)c * dh + y) * dw + x];
        if (y >= a.h || x >= a.w) {
          assert_true(v == 0.0f);
          continue;
        }
        float d = (float)rv_image_px(&a, y, x)[2 - c] - mean;
        assert_true(v == d * stdinv);
      }
  }
  /* to_rgb = 0 keeps BGR order */
  p.to_rgb = 0;
  rv_preprocess_normalize(buf, dh, dw, &a, &p);
  assert_true(buf[0] == ((float)a.data[0] - p.mean[0]) * (float)(1.0 / (double)p.std[0]));
  free(buf);
  /* flip planes back */
  float pl[2 * 2 * 3] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  rv_flip_planes_f32(pl, 2, 2, 3);
  assert_true(pl[0] == 3 && pl[2] == 1 && pl[3] == 6 && pl[11] == 10);
  rv_image_free(&img);
  rv_image_free(&a);
  rv_image_free(&b);
  rv_ctx_free(ctx);
}

/* Pillow-compatible resampling and the ImageNet transform, against references made with
 * Debian's Pillow 9.4 + torch 1.13 (tests/data/image/pil: Image.open(...).convert('RGB')
 * .resize((w, h), filter) saved as PNG; messi5_inet224_crop.png = the 224x224 centre crop
 * after torchvision Resize(256, bicubic)). Tolerance: exact (0 grey levels, bit-exact
 * float32 after ToTensor/Normalize). */
#define SAMPLES "/usr/share/doc/opencv-doc/examples/data"
static void test_pil_resize(void **state) {
  (void)state;
  static const struct { const char *img, *ref; rv_pil_filter f; } cases[] = {
      {"fruits.jpg", "image/pil/fruits_bicubic_224x171.png", RV_PIL_BICUBIC},
      {"fruits.jpg", "image/pil/fruits_bicubic_13x11.png", RV_PIL_BICUBIC},
      {"messi5.jpg", "image/pil/messi5_bilinear_293x183.png", RV_PIL_BILINEAR},
      {"baboon.jpg", "image/pil/baboon_bicubic_100x600.png", RV_PIL_BICUBIC},
  };
  rv_ctx *ctx = rv_ctx_create();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rv_image img = {0}, ref = {0}, out = {0};
    char p[512];
    snprintf(p, sizeof p, "%s/%s", SAMPLES, cases[i].img);
    assert_int_equal(rv_image_read(p, &img, ctx), RV_OK);
    assert_int_equal(rv_image_read(data_path(cases[i].ref), &ref, ctx), RV_OK);
    assert_int_equal(rv_image_resize_pil(&out, &img, ref.w, ref.h, cases[i].f, ctx), RV_OK);
    size_t n = (size_t)ref.h * ref.w * 3, nd = 0;
    for (size_t k = 0; k < n; k++) nd += out.data[k] != ref.data[k];
    if (nd) fail_msg("%s: %zu of %zu bytes differ from Pillow", cases[i].ref, nd, n);
    rv_image_free(&img);
    rv_image_free(&ref);
    rv_image_free(&out);
  }
  /* same size: a copy; errors */
  rv_image a = {0}, b = {0};
  assert_int_equal(rv_image_alloc(&a, 5, 6, 3, ctx), RV_OK);
  a.data[17] = 200;
  assert_int_equal(rv_image_resize_pil(&b, &a, 6, 5, RV_PIL_BICUBIC, ctx), RV_OK);
  assert_memory_equal(a.data, b.data, 90);
  assert_int_equal(rv_image_resize_pil(&b, &a, 0, 5, RV_PIL_BICUBIC, ctx), RV_ERR_ARG);
  assert_int_equal(rv_image_resize_pil(&b, &a, 4, 5, (rv_pil_filter)7, ctx), RV_ERR_ARG);
  assert_int_equal(rv_image_resize_pil(&a, &a, 4, 5, RV_PIL_BICUBIC, ctx), RV_ERR_ARG);
  rv_image_free(&a);
  rv_image_free(&b);
  rv_ctx_free(ctx);
}

static void test_imagenet(void **state) {
  (void)state;
  int w, h;
  assert_int_equal(rv_tv_resize_size(548, 342, 256, &w, &h), 1);
  assert_int_equal(w, 410); /* int(256 * 548 / 342) = int(410.2) */
  assert_int_equal(h, 256);
  assert_int_equal(rv_tv_resize_size(300, 256, 256, &w, &h), 0);
  assert_int_equal(w, 300);
  assert_int_equal(rv_tv_resize_size(194, 259, 256, &w, &h), 1);
  assert_int_equal(w, 256);
  assert_int_equal(h, 341);
  rv_ctx *ctx = rv_ctx_create();
  rv_arena *arena = rv_arena_create(0);
  rv_image img = {0}, crop = {0};
  assert_int_equal(rv_image_read(SAMPLES "/messi5.jpg", &img, ctx), RV_OK);
  assert_int_equal(rv_image_read(data_path("image/pil/messi5_inet224_crop.png"), &crop, ctx), RV_OK);
  rv_tensor t;
  assert_int_equal(rv_preprocess_imagenet(&t, &img, 224, arena, ctx), RV_OK);
  assert_int_equal(t.c, 3);
  assert_int_equal(t.h, 224);
  assert_int_equal(t.w, 224);
  static const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
  for (int c = 0; c < 3; c++)
    for (int y = 0; y < 224; y++)
      for (int x = 0; x < 224; x++) {
        float v = (float)rv_image_px(&crop, y, x)[2 - c] / 255.0f;
        float want = (v - mean[c]) / sd[c];
        if (*rv_tensor_at(t, 0, c, y, x) != want)
          fail_msg("imagenet (%d,%d,%d): %.9g != %.9g", c, y, x, (double)*rv_tensor_at(t, 0, c, y, x), (double)want);
      }
  /* torch's float32 ToTensor/Normalize values (hex from torch 1.13) for v = 0 and 255 */
  rv_image px = {0};
  assert_int_equal(rv_image_alloc(&px, 256, 256, 3, ctx), RV_OK); /* short side 256: no resize */
  for (size_t k = 0; k < (size_t)256 * 256 * 3; k += 3) px.data[k] = 255; /* B = 255, G = R = 0 */
  assert_int_equal(rv_preprocess_imagenet(&t, &px, 224, arena, ctx), RV_OK);
  assert_true(t.data[0] == -0x1.0f177ap+1f);                  /* R = 0 */
  assert_true(t.data[224 * 224] == -0x1.049248p+1f);          /* G = 0 */
  assert_true(t.data[2 * 224 * 224] == 0x1.51eb86p+1f);       /* B = 255 */
  assert_int_equal(rv_preprocess_imagenet(&t, &px, 4, arena, ctx), RV_ERR_ARG);
  rv_image grey = {0};
  assert_int_equal(rv_image_alloc(&grey, 8, 8, 1, ctx), RV_OK);
  assert_int_equal(rv_preprocess_imagenet(&t, &grey, 224, arena, ctx), RV_ERR_ARG);
  rv_image thin = {0}; /* 1 x 20000 would resize to 256 x 5120000: refused */
  assert_int_equal(rv_image_alloc(&thin, 1, 20000, 3, ctx), RV_OK);
  assert_int_equal(rv_preprocess_imagenet(&t, &thin, 224, arena, ctx), RV_ERR_SHAPE);
  rv_image_free(&thin);
  rv_image_free(&grey);
  rv_image_free(&px);
  rv_image_free(&img);
  rv_image_free(&crop);
  rv_arena_free(arena);
  rv_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_e2e_upernet),  cmocka_unit_test(test_e2e_semantic_fpn),
      cmocka_unit_test(test_e2e_mask_rcnn), cmocka_unit_test(test_e2e_cascade),
      cmocka_unit_test(test_e2e_retinanet), cmocka_unit_test(test_rescale_size),
      cmocka_unit_test(test_aug_list),      cmocka_unit_test(test_flip_and_normalize),
      cmocka_unit_test(test_pil_resize),    cmocka_unit_test(test_imagenet),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
