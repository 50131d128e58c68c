/* The family ops (models/family.h): one shape for both tasks, driven here directly on the
 * demo models (models/demo_seg.safetensors: Semantic FPN, models/demo_det.safetensors:
 * RetinaNet) with a features function that counts its calls:
 *  - a whole-mode segmentor and a detector call it once per input, a slide-mode segmentor
 *    once per window (mmseg's grid: h_grids * w_grids), an aug-test input once;
 *  - the labels / detections of the ops equal rv_model_segment's / rv_model_detect's bit
 *    for bit (the model drives the same ops: a model path that did something else differs);
 *  - a family asked for the other task's output refuses with RV_ERR_MODEL;
 *  - set_precision through the ops: f32 after bf16 gives the f32 output bit for bit again. */
#include "formats/pyconfig.h"
#include "models/model.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const rv_ravlt *backbone;
  int calls;
  int last_h, last_w;
} counter;

static rv_status counted(void *user, rv_tensor *feats, int num_feats, rv_tensor img, rv_arena *a, rv_ctx *ctx) {
  counter *c = user;
  c->calls++;
  c->last_h = img.h;
  c->last_w = img.w;
  return rv_family_ravlt_features((void *)c->backbone, feats, num_feats, img, a, ctx);
}

static const char *demo_path(const char *file) {
  static char buf[1024];
  snprintf(buf, sizeof buf, "%s/../../models/%s", RV_TEST_DATA, file);
  return buf;
}

/* a deterministic textured BGR image */
static rv_image make_image(int h, int w) {
  rv_image img = {malloc((size_t)h * w * 3), h, w, 3};
  uint64_t s = 7;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int c = 0; c < 3; c++) {
        int v = ((x / 23 + y / 17 + c) % 3) * 90 + (int)(test_rand(&s) * 20.0f + 20.0f);
        img.data[((size_t)y * w + x) * 3 + c] = (unsigned char)(v > 255 ? 255 : v);
      }
  return img;
}

/* the head loaded through the row's ops from the same weights as the model */
typedef struct {
  rv_weights *w;
  rv_params P;
  const rv_family_ops *ops;
  void *head;
  rv_family_load L;
  rv_seg_test_cfg test;
  cJSON *cfg;
} family_head;

static void head_open(family_head *h, const char *path, const rv_family_ops *ops, rv_ctx *ctx) {
  memset(h, 0, sizeof *h);
  assert_int_equal(rv_weights_open(&h->w, path, ctx), RV_OK);
  const rv_family *f = rv_family_sniff(h->w, -1);
  assert_non_null(f);
  h->ops = ops;
  assert_int_equal(rv_params_init(&h->P, h->w, ctx), RV_OK);
  h->L.family = f;
  h->L.seg_test = &h->test;
  const char *text = rv_weights_meta(h->w, "config"); /* the model reads its test_cfg too */
  if (text) {
    assert_int_equal(rv_pyconfig_parse(&h->cfg, text, "config", ctx), RV_OK);
    h->L.config = h->cfg;
    h->L.model = cJSON_GetObjectItemCaseSensitive(h->cfg, "model");
  }
  assert_int_equal(ops->load(&h->head, &h->L, &h->P, ctx), RV_OK);
  assert_non_null(h->head);
  assert_true(h->L.num_classes > 0);
}

static void head_close(family_head *h) {
  h->ops->free(h->head);
  cJSON_Delete(h->cfg);
  rv_params_free(&h->P);
  rv_weights_free(h->w);
}

static void test_segmentor_ops(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_arena *a = rv_arena_create(0);
  rv_model *m = NULL;
  assert_int_equal(rv_model_load(&m, demo_path("demo_seg.safetensors"), NULL, ctx), RV_OK);
  assert_int_equal(rv_model_task(m), RV_TASK_SEGMENT);
  family_head h;
  head_open(&h, demo_path("demo_seg.safetensors"), &rv_segmentor_family_ops, ctx);
  assert_int_equal(h.L.num_classes, rv_model_num_classes(m));
  assert_non_null(h.L.decoder);
  assert_null(h.L.detector);
  assert_int_equal(h.L.has_masks, 0);

  rv_image img = make_image(150, 230);
  const size_t hw = (size_t)img.h * img.w;
  int32_t *lm = malloc(hw * sizeof *lm), *lo = malloc(hw * sizeof *lo);
  rv_preprocess_params pp = rv_model_preprocess(m);
  rv_tensor x;
  rv_img_meta meta;
  assert_int_equal(rv_preprocess(&x, &meta, &img, &pp, a, ctx), RV_OK);
  counter c = {rv_model_backbone(m), 0, 0, 0};
  rv_family_run r = {0};
  r.img = x;
  r.meta = &meta;
  r.features = counted;
  r.features_user = &c;
  r.seg_test = &h.test;
  r.labels = lo;
  r.ori_h = img.h;
  r.ori_w = img.w;

  /* whole: one backbone call on the whole input, the model's labels */
  h.test.mode = RV_SEG_MODE_WHOLE;
  rv_model_seg_test_cfg(m)->mode = RV_SEG_MODE_WHOLE;
  assert_int_equal(h.ops->forward(h.head, &r, a, ctx), RV_OK);
  assert_int_equal(c.calls, 1);
  assert_int_equal(c.last_h, x.h);
  assert_int_equal(c.last_w, x.w);
  assert_int_equal(rv_model_segment(m, lm, &img, NULL, a, ctx), RV_OK);
  assert_memory_equal(lm, lo, hw * sizeof *lm);

  /* slide: one call per window of mmseg's grid, windows of the crop size */
  rv_seg_test_cfg slide = {RV_SEG_MODE_SLIDE, 64, 96, 40, 50};
  h.test = slide;
  *rv_model_seg_test_cfg(m) = slide;
  const int hg = (x.h - 64 + 40 - 1 > 0 ? x.h - 64 + 40 - 1 : 0) / 40 + 1;
  const int wg = (x.w - 96 + 50 - 1 > 0 ? x.w - 96 + 50 - 1 : 0) / 50 + 1;
  assert_true(hg * wg > 1);
  printf("  segmentor ops: %dx%d input, slide %d x %d windows\n", x.w, x.h, hg, wg);
  c.calls = 0;
  assert_int_equal(h.ops->forward(h.head, &r, a, ctx), RV_OK);
  assert_int_equal(c.calls, hg * wg);
  assert_int_equal(c.last_h, 64);
  assert_int_equal(c.last_w, 96);
  assert_int_equal(rv_model_segment(m, lm, &img, NULL, a, ctx), RV_OK);
  assert_memory_equal(lm, lo, hw * sizeof *lm);

  /* aug-test: one forward per (scale, flip) input adds its probabilities; the model's list
   * of two (1.0, unflipped and flipped) gives the labels of the two forwards */
  h.test.mode = RV_SEG_MODE_WHOLE;
  rv_model_seg_test_cfg(m)->mode = RV_SEG_MODE_WHOLE;
  const int C = h.L.num_classes;
  float *acc = calloc((size_t)C * hw, sizeof *acc);
  static const double one[1] = {1.0};
  rv_preprocess_params list[4];
  const int n = rv_preprocess_aug_list(list, 4, &pp, one, 1, 1, img.w, img.h);
  assert_int_equal(n, 2);
  c.calls = 0;
  for (int i = 0; i < n; i++) {
    rv_arena_mark mk = rv_arena_get_mark(a);
    rv_family_run ra = r;
    assert_int_equal(rv_preprocess(&ra.img, &meta, &img, &list[i], a, ctx), RV_OK);
    ra.labels = NULL;
    ra.probs = acc;
    ra.flipped = list[i].flip;
    assert_int_equal(h.ops->forward(h.head, &ra, a, ctx), RV_OK);
    rv_arena_release(a, mk);
  }
  assert_int_equal(c.calls, 2);
  rv_seg_aug_labels(lo, acc, C, img.h, img.w, n);
  rv_seg_run_opts o = {0};
  o.aug_test = 1;
  o.ratios = one;
  o.n_ratios = 1;
  o.flip = 1;
  assert_int_equal(rv_model_segment(m, lm, &img, &o, a, ctx), RV_OK);
  assert_memory_equal(lm, lo, hw * sizeof *lm);
  free(acc);

  /* the other task's output: refused, by the model too */
  rv_detections det;
  rv_family_run rd = r;
  rd.labels = NULL;
  rd.det = &det;
  assert_int_equal(h.ops->forward(h.head, &rd, a, ctx), RV_ERR_MODEL);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "segmentor, not a detector"));
  assert_int_equal(rv_model_detect(m, &det, NULL, &img, a, ctx), RV_ERR_MODEL);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "semantic_fpn segmentor, not a detector: use 'ravlt segment'"));

  /* precision through the ops: f32 again after bf16 is the f32 output bit for bit */
  r.labels = lo;
  h.test.mode = RV_SEG_MODE_WHOLE;
  assert_int_equal(h.ops->forward(h.head, &r, a, ctx), RV_OK);
  memcpy(lm, lo, hw * sizeof *lm);
  rv_status st = h.ops->set_precision(h.head, RV_PRECISION_BF16, ctx);
  assert_true(st == RV_OK || (st == RV_ERR_UNSUPPORTED && !rv_cpu_has_bf16()));
  assert_int_equal(h.ops->set_precision(h.head, RV_PRECISION_F32, ctx), RV_OK);
  assert_int_equal(h.ops->forward(h.head, &r, a, ctx), RV_OK);
  assert_memory_equal(lm, lo, hw * sizeof *lm);

  free(lm);
  free(lo);
  rv_image_free(&img);
  head_close(&h);
  rv_model_free(m);
  rv_arena_free(a);
  rv_ctx_free(ctx);
}

static void test_detector_ops(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_arena *a = rv_arena_create(0), *a2 = rv_arena_create(0);
  rv_model *m = NULL;
  assert_int_equal(rv_model_load(&m, demo_path("demo_det.safetensors"), NULL, ctx), RV_OK);
  assert_int_equal(rv_model_task(m), RV_TASK_DETECT);
  family_head h;
  head_open(&h, demo_path("demo_det.safetensors"), &rv_detector_family_ops, ctx);
  assert_int_equal(h.L.num_classes, rv_model_num_classes(m));
  assert_non_null(h.L.detector);
  assert_null(h.L.decoder);
  assert_int_equal(h.L.has_masks, rv_model_has_masks(m));

  rv_image img = make_image(200, 260);
  rv_preprocess_params pp = rv_model_preprocess(m);
  rv_tensor x;
  rv_img_meta meta;
  assert_int_equal(rv_preprocess(&x, &meta, &img, &pp, a, ctx), RV_OK);
  counter c = {rv_model_backbone(m), 0, 0, 0};
  rv_detections d1, d2;
  rv_family_run r = {0};
  r.img = x;
  r.meta = &meta;
  r.features = counted;
  r.features_user = &c;
  r.det = &d1;
  assert_int_equal(h.ops->forward(h.head, &r, a, ctx), RV_OK);
  assert_int_equal(c.calls, 1);
  assert_int_equal(c.last_h, x.h);
  assert_int_equal(rv_model_detect(m, &d2, NULL, &img, a2, ctx), RV_OK);
  printf("  detector ops: %d detections, the model's %d\n", d1.n, d2.n);
  assert_int_equal(d1.n, d2.n);
  if (d1.n > 0) {
    assert_memory_equal(d1.bboxes, d2.bboxes, (size_t)d1.n * 4 * sizeof(float));
    assert_memory_equal(d1.scores, d2.scores, (size_t)d1.n * sizeof(float));
    assert_memory_equal(d1.labels, d2.labels, (size_t)d1.n * sizeof(int));
  }

  /* the other task's output: refused, by the model too */
  const size_t hw = (size_t)img.h * img.w;
  int32_t *lab = malloc(hw * sizeof *lab);
  rv_family_run rs = r;
  rs.det = NULL;
  rs.labels = lab;
  rs.ori_h = img.h;
  rs.ori_w = img.w;
  assert_int_equal(h.ops->forward(h.head, &rs, a, ctx), RV_ERR_MODEL);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "detector, not a segmentor"));
  assert_int_equal(rv_model_segment(m, lab, &img, NULL, a, ctx), RV_ERR_MODEL);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "retinanet detector, not a segmentor: use 'ravlt detect'"));
  free(lab);

  /* precision through the ops: f32 again after bf16 gives the f32 detections bit for bit */
  rv_arena_reset(a2);
  rv_status st = h.ops->set_precision(h.head, RV_PRECISION_BF16, ctx);
  assert_true(st == RV_OK || (st == RV_ERR_UNSUPPORTED && !rv_cpu_has_bf16()));
  assert_int_equal(h.ops->set_precision(h.head, RV_PRECISION_F32, ctx), RV_OK);
  r.det = &d2;
  assert_int_equal(h.ops->forward(h.head, &r, a2, ctx), RV_OK);
  assert_int_equal(d1.n, d2.n);
  if (d1.n > 0) assert_memory_equal(d1.bboxes, d2.bboxes, (size_t)d1.n * 4 * sizeof(float));

  rv_image_free(&img);
  head_close(&h);
  rv_model_free(m);
  rv_arena_free(a);
  rv_arena_free(a2);
  rv_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_segmentor_ops),
      cmocka_unit_test(test_detector_ops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
