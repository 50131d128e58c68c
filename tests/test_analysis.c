/* The error analysis of `ravlt eval --report` (eval/tide.c, eval/confusion.c,
 * datasets/coco_analysis.c):
 *   - TIDE against goldens of dbolya/tide 1.0.1's own code (tools/gen_tide_goldens.py, run
 *     outside the repository; tests/data/analysis/tide/<case>): AP50, the six main dAPs and the
 *     two special ones within 0.01 AP points (they agree to ~1e-12), the error counts exactly,
 *     box and mask, with 1 and 2 threads;
 *   - the detection confusion matrix (mmdetection 2.x tools/analysis_tools/confusion_matrix.py)
 *     on hand-made images, one rule each;
 *   - the semantic segmentation confusion matrix (mmsegmentation 0.x tools/confusion_matrix.py)
 *     on hand-made label maps;
 *   - the analysis' PR arrays equal to the evaluator's precision array. */
#define _POSIX_C_SOURCE 200809L
#include "eval_test_util.h"
#include "datasets/coco.h"
#include "eval/tide.h"

static void tide_case(const char *dir, const char *iou, int threads) {
  char p[1024];
  rv_ctx *ctx = rv_ctx_create();
  rv_iou_type t = strcmp(iou, "bbox") == 0 ? RV_IOU_BBOX : RV_IOU_SEGM;
  snprintf(p, sizeof p, "%s/gt.json", dir);
  rv_coco *gt = NULL;
  if (rv_coco_load(&gt, p, t == RV_IOU_SEGM, threads, ctx) != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
  snprintf(p, sizeof p, "%s/dt_%s.json", dir, iou);
  rv_coco_results res;
  if (rv_coco_load_results(&res, gt, p, t, RV_COCO_AREA_BOX, threads, ctx) != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
  int64_t *ids = malloc(sizeof *ids * (gt->n_images + 1));
  for (size_t i = 0; i < gt->n_images; i++) ids[i] = gt->images[i].id;
  rv_tide_params prm = rv_tide_default_params();
  prm.threads = threads;
  rv_tide_result r;
  if (rv_tide_run(&r, &prm, t, ids, gt->n_images, gt->anns, gt->n_anns, res.dets, res.n, ctx) != RV_OK)
    fail_msg("%s", rv_ctx_errmsg(ctx));
  snprintf(p, sizeof p, "%s/expected.json", dir);
  cJSON *exp = load_json(p);
  assert_non_null(exp);
  const cJSON *e = cJSON_GetObjectItem(exp, t == RV_IOU_BBOX ? "bbox" : "segm");
  assert_non_null(e);
  double want = cJSON_GetObjectItem(e, "ap")->valuedouble;
  if (getenv("RV_TEST_VERBOSE")) fprintf(stderr, "%s %s: AP %.12f vs %.12f, Loc %.12f Cls %.12f FN %.12f\n", dir, iou, r.ap, want, r.main[1], r.main[0], r.special[1]);
  if (!(fabs(r.ap - want) <= 0.01)) fail_msg("%s %s: AP50 %.6f, TIDE %.6f", dir, iou, r.ap, want);
  const cJSON *m = cJSON_GetObjectItem(e, "main"), *c = cJSON_GetObjectItem(e, "counts"), *s = cJSON_GetObjectItem(e, "special");
  for (int k = 0; k < RV_TIDE_N_MAIN; k++) {
    double x = cJSON_GetObjectItem(m, rv_tide_main_names[k])->valuedouble;
    if (!(fabs(r.main[k] - x) <= 0.01)) fail_msg("%s %s: dAP %s %.6f, TIDE %.6f", dir, iou, rv_tide_main_names[k], r.main[k], x);
    int n = cJSON_GetObjectItem(c, rv_tide_main_names[k])->valueint;
    if ((int)r.counts[k] != n) fail_msg("%s %s: %zu %s errors, TIDE %d", dir, iou, r.counts[k], rv_tide_main_names[k], n);
  }
  for (int k = 0; k < RV_TIDE_N_SPECIAL; k++) {
    double x = cJSON_GetObjectItem(s, rv_tide_special_names[k])->valuedouble;
    if (!(fabs(r.special[k] - x) <= 0.01))
      fail_msg("%s %s: dAP %s %.6f, TIDE %.6f", dir, iou, rv_tide_special_names[k], r.special[k], x);
  }
  cJSON_Delete(exp);
  rv_tide_result_free(&r);
  free(ids);
  rv_coco_results_free(&res);
  rv_coco_free(gt);
  rv_ctx_free(ctx);
}

static void test_tide_goldens(void **state) {
  (void)state;
  char names[16][256], dir[1024];
  int n = list_dirs(RV_TEST_DATA "/analysis/tide", "", names, 16);
  assert_true(n >= 3);
  for (int i = 0; i < n; i++) {
    snprintf(dir, sizeof dir, RV_TEST_DATA "/analysis/tide/%s", names[i]);
    for (int th = 1; th <= 2; th++) {
      tide_case(dir, "bbox", th);
      tide_case(dir, "segm", th);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tide_goldens),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
