/* The flat entry points of the Python package (models/pyapi.h), from C: the evaluation with
 * pycocotools' params (equal to rv_coco_evaluate), useCats = 0, the scores array, the mask
 * functions, mean_iou and the errors. python/tests covers them again through ctypes. */
#include "test_util.h"

#include "models/pyapi.h"

#include <unistd.h>

static const double IOU[10] = {.5, .55, .6, .65, .7, .75, .8, .85, .9, .95};

static void default_params(double rec[101], double rng[8], int md[3]) {
  rv_linspace(rec, 0, 1, 101);
  const double r[8] = {0, 1e10, 0, 1024, 1024, 9216, 9216, 1e10};
  memcpy(rng, r, sizeof r);
  md[0] = 1;
  md[1] = 100; /* given unsorted: the entry point sorts maxDets */
  md[2] = 10;
}

static void test_eval_equals_library(void **state) {
  (void)state;
  static const char *LBL[4] = {"all", "small", "medium", "large"};
  for (int t = 0; t < 2; t++) {
    rv_ctx *ctx = rv_py_ctx_new(2);
    rv_coco *gt = NULL;
    rv_coco_results *dt = NULL;
    assert_int_equal(rv_py_coco_load(&gt, fixture_path("coco_eval/06_mixed/gt.json"), NULL, 0, NULL, 1, ctx), RV_OK);
    assert_int_equal(rv_py_results_load(&dt, gt, t ? fixture_path("coco_eval/06_mixed/dt_segm.json")
                                                   : fixture_path("coco_eval/06_mixed/dt_bbox.json"),
                                        NULL, 0, NULL, t, ctx),
                     RV_OK);
    size_t n[3];
    int has_segm = 0;
    rv_py_coco_counts(gt, n, &has_segm);
    assert_true(n[0] > 0 && n[1] > 0 && n[2] > 0 && has_segm);
    int64_t *imgs = malloc(sizeof(int64_t) * n[0]), *cats = malloc(sizeof(int64_t) * n[1]);
    rv_py_coco_ids(gt, imgs, cats);
    double rec[101], rng[8], stats[12], ref_stats[12];
    int md[3];
    default_params(rec, rng, md);
    rv_py_eval *ev = NULL;
    assert_int_equal(rv_py_eval_run(&ev, gt, dt, t, imgs, n[0], cats, n[1], IOU, 10, rec, 101, md, 3, rng, LBL, 4, 1, 0,
                                    ctx),
                     RV_OK);
    assert_int_equal(rv_py_eval_copy(ev, NULL, NULL, NULL), 0); /* before accumulate */
    assert_int_equal(rv_py_eval_accumulate(ev, ctx), RV_OK);
    rv_py_eval_summarize(ev, stats);
    /* the library's own path (rv_coco_evaluate with the default params) */
    rv_cocoeval_params p = rv_cocoeval_default_params((rv_iou_type)t);
    rv_cocoeval *ref = NULL;
    assert_int_equal(rv_coco_evaluate(&ref, gt, dt, &p, ctx), RV_OK);
    rv_cocoeval_summarize(ref, ref_stats);
    assert_memory_equal(stats, ref_stats, sizeof stats);
    size_t d[5];
    rv_py_eval_dims(ev, d);
    assert_int_equal(d[2], rv_cocoeval_num_cats(ref));
    size_t np = d[0] * d[1] * d[2] * d[3] * d[4], nr = d[0] * d[2] * d[3] * d[4];
    double *pr = malloc(sizeof(double) * np), *rc = malloc(sizeof(double) * nr), *sc = malloc(sizeof(double) * np);
    assert_int_equal(rv_py_eval_copy(ev, pr, rc, sc), 1);
    assert_memory_equal(pr, rv_cocoeval_precision(ref), sizeof(double) * np);
    assert_memory_equal(rc, rv_cocoeval_recall(ref), sizeof(double) * nr);
    int defined = 0;
    for (size_t i = 0; i < np; i++) {
      assert_true((pr[i] == -1) == (sc[i] == -1));
      defined += pr[i] > 0;
    }
    assert_true(defined > 0);
    char text[2048];
    int len = rv_py_eval_summary_text(ev, text, sizeof text);
    assert_true(len > 0 && (size_t)len < sizeof text);
    assert_non_null(strstr(text, " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = "));
    /* useCats = 0: one pooled category */
    rv_py_eval *ev0 = NULL;
    assert_int_equal(rv_py_eval_run(&ev0, gt, dt, t, imgs, n[0], cats, n[1], IOU, 10, rec, 101, md, 3, rng, LBL, 4, 0, 0,
                                    ctx),
                     RV_OK);
    assert_int_equal(rv_py_eval_accumulate(ev0, ctx), RV_OK);
    rv_py_eval_dims(ev0, d);
    assert_int_equal(d[2], 1);
    double s0[12];
    rv_py_eval_summarize(ev0, s0);
    assert_true(s0[0] > 0 && s0[0] <= 1);
    /* bad params: a message, no crash */
    rv_py_eval *bad = NULL;
    assert_int_equal(rv_py_eval_run(&bad, gt, dt, t, imgs, n[0], cats, n[1], IOU, 0, rec, 101, md, 3, rng, LBL, 4, 1, 0, ctx),
                     RV_ERR_ARG);
    assert_null(bad);
    assert_non_null(strstr(rv_py_errmsg(ctx), "iouThrs"));
    rv_py_eval_free(ev0);
    rv_py_eval_free(ev);
    rv_cocoeval_free(ref);
    free(pr);
    free(rc);
    free(sc);
    free(imgs);
    free(cats);
    rv_py_results_free(dt);
    rv_py_coco_free(gt);
    rv_py_ctx_free(ctx);
  }
}

static void test_results_from_arrays(void **state) {
  (void)state;
  rv_ctx *ctx = rv_py_ctx_new(0);
  rv_coco *gt = NULL;
  rv_coco_results *r = NULL;
  assert_int_equal(rv_py_coco_load(&gt, fixture_path("coco_eval/01_tiny/gt.json"), NULL, 0, NULL, 0, ctx), RV_OK);
  int64_t img0;
  size_t n[3];
  rv_py_coco_counts(gt, n, NULL);
  int64_t *imgs = malloc(sizeof(int64_t) * n[0]);
  rv_py_coco_ids(gt, imgs, NULL);
  img0 = imgs[0];
  free(imgs);
  int64_t im[2] = {img0, img0}, cat[2] = {1, 1};
  double score[2] = {0.9, 0.5}, bb[8] = {1, 2, 3, 4, 5, 6, 7, 8}, area[2], bbox[8];
  assert_int_equal(rv_py_results_from_arrays(&r, gt, 2, im, cat, score, bb, 0, "arrays", ctx), RV_OK);
  assert_int_equal(rv_py_results_count(r), 2);
  int64_t id[2];
  rv_py_results_copy(r, id, NULL, NULL, bbox, area, NULL);
  assert_true(id[0] == 1 && id[1] == 2 && area[0] == 12 && area[1] == 56 && bbox[4] == 5);
  rv_py_results_free(r);
  im[1] = 987654321;
  assert_int_equal(rv_py_results_from_arrays(&r, gt, 2, im, cat, score, bb, 0, "arrays", ctx), RV_ERR_FORMAT);
  assert_null(r);
  assert_non_null(strstr(rv_py_errmsg(ctx), "image_id 987654321 is not in the ground truth"));
  rv_py_coco_free(gt);
  rv_py_ctx_free(ctx);
}

static void test_masks(void **state) {
  (void)state;
  rv_ctx *ctx = rv_py_ctx_new(0);
  /* two 4x5 column-major masks */
  uint8_t m[40] = {0};
  for (int i = 3; i < 8; i++) m[i] = 1;
  for (int i = 20 + 10; i < 40; i++) m[i] = 1;
  char *s[2];
  assert_int_equal(rv_py_rle_encode(m, 4, 5, 2, s, ctx), RV_OK);
  uint8_t back[40];
  assert_int_equal(rv_py_rle_decode((const char *const *)s, 4, 5, 2, back, ctx), RV_OK);
  assert_memory_equal(back, m, sizeof m);
  uint32_t area[2];
  double bb[8];
  assert_int_equal(rv_py_rle_area_bbox((const char *const *)s, 4, 5, 2, area, bb, ctx), RV_OK);
  assert_true(area[0] == 5 && area[1] == 10);
  uint32_t hw[4] = {4, 5, 4, 5}, ohw[2];
  char *u = NULL;
  assert_int_equal(rv_py_rle_merge((const char *const *)s, hw, 2, 0, &u, ohw, ctx), RV_OK);
  assert_true(ohw[0] == 4 && ohw[1] == 5);
  assert_int_equal(rv_py_rle_area_bbox((const char *const *)&u, 4, 5, 1, area, NULL, ctx), RV_OK);
  assert_int_equal(area[0], 15);
  double o[4];
  uint8_t crowd[2] = {0, 1};
  assert_int_equal(rv_py_rle_iou((const char *const *)s, hw, 2, (const char *const *)s, hw, 2, crowd, o, ctx), RV_OK);
  assert_true(o[0] == 1 && o[1] == 0 && o[2] == 0 && o[3] == 1);
  uint32_t counts[4] = {3, 5, 2, 10};
  char *c = NULL;
  assert_int_equal(rv_py_rle_from_counts(counts, 4, 4, 5, &c, ctx), RV_OK);
  assert_string_equal(c, "3525"); /* tests/fixtures/rle frUncompressedRLE 'simple' */
  rv_py_free(c);
  /* counts that do not sum to h*w are encoded as they are (pycocotools' frUncompressedRLE) */
  assert_int_equal(rv_py_rle_from_counts(counts, 3, 4, 5, &c, ctx), RV_OK);
  assert_string_equal(c, "352");
  rv_py_free(c);
  double box[4] = {1, 1, 2, 2};
  char *b[1];
  assert_int_equal(rv_py_rle_from_bbox(box, 1, 4, 5, b, ctx), RV_OK);
  assert_int_equal(rv_py_rle_area_bbox((const char *const *)b, 4, 5, 1, area, NULL, ctx), RV_OK);
  assert_int_equal(area[0], 4);
  rv_py_free(b[0]);
  double tri[6] = {0, 0, 4, 0, 0, 3};
  char *pl = NULL;
  assert_int_equal(rv_py_rle_from_poly(tri, 3, 4, 5, &pl, ctx), RV_OK);
  assert_non_null(pl);
  rv_py_free(pl);
  const char *shortc = "7"; /* 7 background pixels of 16: the rest is background too */
  assert_int_equal(rv_py_rle_decode(&shortc, 4, 4, 1, back, ctx), RV_OK);
  const char *bad = "2d0"; /* 2 + 20 > 16: pycocotools' "Invalid RLE mask representation" */
  assert_int_equal(rv_py_rle_decode(&bad, 4, 4, 1, back, ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_py_errmsg(ctx), "Invalid RLE"));
  rv_py_free(u);
  rv_py_free(s[0]);
  rv_py_free(s[1]);
  rv_py_ctx_free(ctx);
}

static void test_mean_iou_and_model_errors(void **state) {
  (void)state;
  rv_ctx *ctx = rv_py_ctx_new(0);
  int32_t pred[6] = {0, 1, 1, 2, 2, 7};
  uint8_t lab[6] = {0, 1, 2, 2, 255, 1};
  const void *pp[1] = {pred};
  const uint8_t *lp[1] = {lab};
  size_t npix[1] = {6};
  double iou[3], acc[3], all;
  int64_t areas[12];
  assert_int_equal(rv_py_mean_iou(pp, 0, lp, npix, 1, 3, 255, 0, iou, acc, &all, areas, ctx), RV_OK);
  /* labels 0,1,2,2,(ignored),1 vs preds 0,1,1,2,-,7: intersect 1,1,1; union 1,3,2 */
  assert_true(iou[0] == 1.0 && iou[1] == 1.0 / 3 && iou[2] == 0.5);
  assert_true(all == 3.0 / 5);
  assert_true(areas[0] == 1 && areas[3 + 1] == 3 && areas[9 + 1] == 2);
  rv_model *m = NULL;
  assert_int_not_equal(rv_py_model_load(&m, "no_such_model", NULL, ctx), RV_OK);
  assert_null(m);
  assert_non_null(strstr(rv_py_errmsg(ctx), "no_such_model"));
  assert_int_equal(rv_py_abi(), RV_PY_ABI);
  rv_py_ctx_free(ctx);
}

/* ABI 2: a model's config text and its JSON, rectangular slide windows, drawing, imwrite. */
static void test_abi2(void **state) {
  (void)state;
  rv_ctx *ctx = rv_py_ctx_new(2);
  rv_model *m = NULL, *w = NULL;
  assert_int_equal(rv_py_model_load(&m, fixture_path("e2e/semantic_fpn/checkpoint.pth"), NULL, ctx), RV_OK);
  assert_int_equal(rv_py_model_load(&w, fixture_path("e2e/semantic_fpn/weights.safetensors"), NULL, ctx), RV_OK);
  const char *text = rv_model_config_text(m);
  assert_non_null(text);
  assert_non_null(strstr(text, "decode_head"));
  assert_null(rv_model_config_text(w)); /* no meta config in the conversion */
  char *json = NULL;
  assert_int_equal(rv_py_config_json(text, "ck:config", &json, ctx), RV_OK);
  assert_non_null(strstr(json, "\"type\":\"EncoderDecoder\""));
  rv_py_free(json);
  assert_int_equal(rv_py_config_json("model = dict(type=)", "bad.py", &json, ctx), RV_ERR_FORMAT);
  assert_null(json);
  assert_non_null(strstr(rv_py_errmsg(ctx), "bad.py:1:"));
  int cfg[5];
  rv_py_model_seg_cfg(m, cfg);
  assert_int_equal(cfg[0], 0);
  rv_py_model_set_seg_cfg(m, 1, 256, 384, 171, 0); /* stride w <= 0 keeps the current one */
  rv_py_model_seg_cfg(m, cfg);
  assert_true(cfg[0] == 1 && cfg[1] == 256 && cfg[2] == 384 && cfg[3] == 171 && cfg[4] == 341);
  rv_py_model_free(m);
  rv_py_model_free(w);

  uint8_t img[20 * 30 * 3] = {0};
  const uint8_t red[3] = {0, 0, 255};
  assert_int_equal(rv_py_draw_rect(img, 20, 30, 3, 2, 3, 10, 12, red, 1, 1.0f, ctx), RV_OK); /* filled */
  assert_true(img[(5 * 30 + 5) * 3 + 2] == 255 && img[(5 * 30 + 5) * 3] == 0); /* inside: red (BGR) */
  assert_true(img[(15 * 30 + 5) * 3 + 2] == 0);                                 /* below it: untouched */
  assert_int_equal(rv_py_draw_rect(img, 0, 30, 3, 0, 0, 1, 1, red, 1, 0, ctx), RV_ERR_ARG);
  int size[3] = {0};
  rv_py_text_size("ab", 0.5, 1, size);
  assert_true(size[0] > 0 && size[1] > 0);
  assert_int_equal(rv_py_draw_text(img, 20, 30, 3, "ab", 1, 18, 0.5, red, 1, ctx), RV_OK);
  assert_int_equal(rv_py_draw_text(img, 20, 30, 3, "ab", 1, 18, -1, red, 1, ctx), RV_ERR_ARG);
  char path[512];
  snprintf(path, sizeof path, "%s/rv_test_pyapi_%d.png", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  assert_int_equal(rv_py_imwrite(path, img, 20, 30, 3, ctx), RV_OK);
  uint8_t *back = NULL;
  int hwc[3];
  assert_int_equal(rv_py_imread(path, 0, &back, hwc, ctx), RV_OK);
  assert_true(hwc[0] == 20 && hwc[1] == 30 && hwc[2] == 3 && memcmp(back, img, sizeof img) == 0);
  rv_py_free(back);
  remove(path);
  assert_int_equal(rv_py_imwrite(path, img, 20, 30, 2, ctx), RV_ERR_ARG);
  rv_py_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_abi2),
      cmocka_unit_test(test_eval_equals_library),
      cmocka_unit_test(test_results_from_arrays),
      cmocka_unit_test(test_masks),
      cmocka_unit_test(test_mean_iou_and_model_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
