/* Semantic segmentation metrics against mmseg 0.x: every miou case folder (gt/ and pred/
 * label PNGs, expected.json) under tests/fixtures/miou, and tests/data/eval/random_miou_* (tools/
 * gen_eval_cases.py --miou). Tolerance: area totals exact, aAcc/mIoU/mAcc and per-class
 * IoU/Acc within 1e-9 (NaN where expected null), mmseg's rounded values exact. Plus the
 * reduce_zero_label wrap, ignore index, out-of-range values, merging, bad PNG inputs. */
#define _POSIX_C_SOURCE 200809L
#include "eval_test_util.h"
#include "formats/image.h"
#include "datasets/ade20k.h"
#include "eval/segmetrics.h"
#include <unistd.h>

static int g_exact, g_total;

static void cmp_val(const char *what, double got, const cJSON *e, double tol) {
  if (cJSON_IsNull(e)) {
    if (!isnan(got)) fail_msg("%s = %.17g, expected NaN", what, got);
    return;
  }
  double x = e->valuedouble;
  if (!(fabs(got - x) <= tol)) fail_msg("%s = %.17g, expected %.17g", what, got, x);
  g_exact += got == x;
  g_total++;
}

static void check_case(const char *dir) {
  char p[1400], q[1400], w[1500];
  rv_ctx *ctx = rv_ctx_create();
  snprintf(p, sizeof p, "%s/expected.json", dir);
  cJSON *e = load_json(p);
  assert_non_null(e);
  const cJSON *conv = cJSON_GetObjectItem(e, "convention");
  int C = conv ? cJSON_GetObjectItem(conv, "num_classes")->valueint : 150;
  rv_seg_areas acc;
  assert_int_equal(rv_seg_areas_init(&acc, C, ctx), RV_OK);
  snprintf(p, sizeof p, "%s/pred", dir);
  snprintf(q, sizeof q, "%s/gt", dir);
  size_t n = 0;
  if (rv_ade20k_eval_dirs(&acc, p, q, RV_ADE_PRED_ZERO_BASED, 2, &n, ctx) != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
  assert_int_equal(n, (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(e, "images")));
  static const char *tot[4] = {"total_area_intersect", "total_area_union", "total_area_pred_label", "total_area_label"};
  const int64_t *mine[4] = {acc.intersect, acc.union_, acc.pred, acc.label};
  for (int t = 0; t < 4; t++) {
    const cJSON *arr = cJSON_GetObjectItem(e, tot[t]);
    assert_int_equal(cJSON_GetArraySize(arr), C);
    for (int k = 0; k < C; k++)
      if ((double)mine[t][k] != cJSON_GetArrayItem(arr, k)->valuedouble)
        fail_msg("%s: %s[%d] = %lld, expected %.0f", dir, tot[t], k, (long long)mine[t][k],
                 cJSON_GetArrayItem(arr, k)->valuedouble);
  }
  rv_seg_metrics m;
  assert_int_equal(rv_seg_metrics_compute(&m, &acc, ctx), RV_OK);
  snprintf(w, sizeof w, "%s aAcc", dir);
  cmp_val(w, m.aAcc, cJSON_GetObjectItem(e, "aAcc"), 1e-9);
  snprintf(w, sizeof w, "%s mIoU", dir);
  cmp_val(w, m.mIoU, cJSON_GetObjectItem(e, "mIoU"), 1e-9);
  snprintf(w, sizeof w, "%s mAcc", dir);
  cmp_val(w, m.mAcc, cJSON_GetObjectItem(e, "mAcc"), 1e-9);
  for (int k = 0; k < C; k++) {
    snprintf(w, sizeof w, "%s IoU[%d]", dir, k);
    cmp_val(w, m.iou[k], cJSON_GetArrayItem(cJSON_GetObjectItem(e, "IoU"), k), 1e-9);
    snprintf(w, sizeof w, "%s Acc[%d]", dir, k);
    cmp_val(w, m.acc[k], cJSON_GetArrayItem(cJSON_GetObjectItem(e, "Acc"), k), 1e-9);
  }
  const cJSON *rep = cJSON_GetObjectItem(e, "mmseg_reported");
  if (rep) {
    assert_true(rv_mmseg_round(m.aAcc) == cJSON_GetObjectItem(rep, "aAcc")->valuedouble);
    assert_true(rv_mmseg_round(m.mIoU) == cJSON_GetObjectItem(rep, "mIoU")->valuedouble);
    assert_true(rv_mmseg_round(m.mAcc) == cJSON_GetObjectItem(rep, "mAcc")->valuedouble);
  }
  /* the same predictions in the ADE20K annotation convention (k+1, 0 = none) give the same */
  rv_seg_areas acc2;
  assert_int_equal(rv_seg_areas_init(&acc2, C, ctx), RV_OK);
  char tmpd[] = "/tmp/rv_segm_XXXXXX";
  assert_non_null(mkdtemp(tmpd));
  rv_name_list nl;
  assert_int_equal(rv_list_files(&nl, p, ".png", ctx), RV_OK);
  for (size_t i = 0; i < nl.n; i++) {
    char src[1800], dst[1800];
    snprintf(src, sizeof src, "%s/%s", p, nl.names[i]);
    snprintf(dst, sizeof dst, "%s/%s", tmpd, nl.names[i]);
    rv_image im = {0};
    assert_int_equal(rv_image_read_gray(src, &im, ctx), RV_OK);
    for (size_t j = 0; j < (size_t)im.h * im.w; j++) im.data[j] = im.data[j] >= C ? 0 : (uint8_t)(im.data[j] + 1);
    assert_int_equal(rv_image_write(dst, &im, ctx), RV_OK);
    rv_image_free(&im);
  }
  assert_int_equal(rv_ade20k_eval_dirs(&acc2, tmpd, q, RV_ADE_PRED_ANNOTATION, 1, &n, ctx), RV_OK);
  assert_memory_equal(acc.intersect, acc2.intersect, sizeof(int64_t) * 4 * (size_t)C);
  for (size_t i = 0; i < nl.n; i++) {
    char dst[1800];
    snprintf(dst, sizeof dst, "%s/%s", tmpd, nl.names[i]);
    unlink(dst);
  }
  rmdir(tmpd);
  rv_name_list_free(&nl);
  rv_seg_areas_free(&acc2);
  rv_seg_metrics_free(&m);
  rv_seg_areas_free(&acc);
  cJSON_Delete(e);
  rv_ctx_free(ctx);
}

static int run_dir(const char *root, const char *prefix) {
  char names[64][256];
  int n = list_dirs(root, prefix, names, 64);
  for (int i = 0; i < n; i++) {
    char d[1300];
    snprintf(d, sizeof d, "%s/%.255s", root, names[i]);
    check_case(d);
  }
  return n;
}

static void test_fixture_cases(void **state) {
  (void)state;
  g_exact = g_total = 0;
  int n = run_dir(fixture_path("miou"), "");
  assert_true(n >= 3);
  printf("miou: %d fixture cases; %d/%d values bit-identical\n", n, g_exact, g_total);
}

static void test_random_cases(void **state) {
  (void)state;
  g_exact = g_total = 0;
  int n = run_dir(data_path("eval"), "random_miou_");
  printf("random miou cases: %d; %d/%d values bit-identical\n", n, g_exact, g_total);
  assert_true(n >= 2);
}

static void test_semantics(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  /* reduce_zero_label: 0 -> ignored, 255 -> ignored, 1..C -> 0..C-1, 151..254 -> 150..253 */
  assert_int_equal(rv_seg_reduce_label(0), 255);
  assert_int_equal(rv_seg_reduce_label(255), 255);
  assert_int_equal(rv_seg_reduce_label(1), 0);
  assert_int_equal(rv_seg_reduce_label(200), 199);
  rv_seg_areas a, b;
  assert_int_equal(rv_seg_areas_init(&a, 3, ctx), RV_OK);
  assert_int_equal(rv_seg_areas_init(&b, 3, ctx), RV_OK);
  /* label (raw):  0  1  2  3  4  255  1  2
   * reduced:    255  0  1  2  3  255  0  1
   * pred:         1  0  2  2  0    1  7  1 */
  uint8_t label[8] = {0, 1, 2, 3, 4, 255, 1, 2}, pred[8] = {1, 0, 2, 2, 0, 1, 7, 1};
  rv_seg_areas_add_u8(&a, pred, label, 8, 1, 255);
  /* kept pixels: (p0,l0) (p2,l1) (p2,l2) (p0,l3) (p7,l0) (p1,l1) */
  int64_t ei[3] = {1, 1, 1}, ep[3] = {2, 1, 2}, el[3] = {2, 2, 1};
  assert_memory_equal(a.intersect, ei, sizeof ei);
  assert_memory_equal(a.pred, ep, sizeof ep);
  assert_memory_equal(a.label, el, sizeof el);
  for (int k = 0; k < 3; k++) assert_int_equal(a.union_[k], ep[k] + el[k] - ei[k]);
  /* the int32 path and merging agree */
  int32_t p32[8];
  for (int i = 0; i < 8; i++) p32[i] = pred[i];
  rv_seg_areas_add_i32(&b, p32, label, 4, 1, 255);
  rv_seg_areas c;
  assert_int_equal(rv_seg_areas_init(&c, 3, ctx), RV_OK);
  rv_seg_areas_add_i32(&c, p32 + 4, label + 4, 4, 1, 255);
  rv_seg_areas_merge(&b, &c);
  assert_memory_equal(a.intersect, b.intersect, sizeof(int64_t) * 12);
  rv_seg_metrics m;
  assert_int_equal(rv_seg_metrics_compute(&m, &a, ctx), RV_OK);
  assert_true(m.aAcc == 3.0 / 5.0);
  assert_true(m.iou[0] == 1.0 / 3.0);
  assert_true(m.acc[2] == 1.0);
  rv_seg_metrics_free(&m);
  /* absent classes: NaN, and nanmean of all-NaN is NaN */
  rv_seg_areas_reset(&c);
  assert_int_equal(rv_seg_metrics_compute(&m, &c, ctx), RV_OK);
  assert_true(isnan(m.iou[0]) && isnan(m.mIoU) && isnan(m.aAcc));
  rv_seg_metrics_free(&m);
  /* predicted but absent from gt: IoU 0, Acc NaN */
  uint8_t l2[2] = {1, 1}, p2[2] = {0, 1};
  rv_seg_areas_reset(&c);
  rv_seg_areas_add_u8(&c, p2, l2, 2, 1, 255);
  assert_int_equal(rv_seg_metrics_compute(&m, &c, ctx), RV_OK);
  assert_true(m.iou[1] == 0.0 && isnan(m.acc[1]));
  assert_true(m.mIoU == 0.25); /* (0.5 + 0 + 0(NaN)) / 2 */
  rv_seg_metrics_free(&m);
  assert_true(rv_mmseg_round(0.18248952602531374) == 0.1825);
  rv_seg_areas_free(&a);
  rv_seg_areas_free(&b);
  rv_seg_areas_free(&c);
  rv_ctx_free(ctx);
}

static void test_bad_pngs(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  char tmpd[] = "/tmp/rv_segbad_XXXXXX";
  assert_non_null(mkdtemp(tmpd));
  char gp[300], pp[300], gdir[256], pdir[256];
  snprintf(gdir, sizeof gdir, "%s/gt", tmpd);
  snprintf(pdir, sizeof pdir, "%s/pred", tmpd);
  mkdir(gdir, 0700);
  mkdir(pdir, 0700);
  snprintf(gp, sizeof gp, "%s/a.png", gdir);
  snprintf(pp, sizeof pp, "%s/a.png", pdir);
  rv_image g = {0}, p = {0};
  assert_int_equal(rv_image_alloc(&g, 4, 5, 1, ctx), RV_OK);
  assert_int_equal(rv_image_alloc(&p, 4, 5, 1, ctx), RV_OK);
  g.data[7] = 200; /* out of range label */
  assert_int_equal(rv_image_write(gp, &g, ctx), RV_OK);
  assert_int_equal(rv_image_write(pp, &p, ctx), RV_OK);
  rv_seg_areas acc;
  assert_int_equal(rv_seg_areas_init(&acc, 150, ctx), RV_OK);
  size_t n;
  assert_int_equal(rv_ade20k_eval_dirs(&acc, pdir, gdir, RV_ADE_PRED_ZERO_BASED, 2, &n, ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "gt/a.png: label 200 at x=2 y=1"));
  g.data[7] = 3;
  p.data[0] = 151; /* out of range prediction */
  assert_int_equal(rv_image_write(gp, &g, ctx), RV_OK);
  assert_int_equal(rv_image_write(pp, &p, ctx), RV_OK);
  assert_int_equal(rv_ade20k_eval_dirs(&acc, pdir, gdir, RV_ADE_PRED_ANNOTATION, 2, &n, ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "pred/a.png: prediction 151"));
  rv_image_free(&p);
  assert_int_equal(rv_image_alloc(&p, 5, 5, 1, ctx), RV_OK); /* size mismatch */
  assert_int_equal(rv_image_write(pp, &p, ctx), RV_OK);
  assert_int_equal(rv_ade20k_eval_dirs(&acc, pdir, gdir, RV_ADE_PRED_ANNOTATION, 1, &n, ctx), RV_ERR_SHAPE);
  unlink(pp); /* missing prediction */
  assert_int_equal(rv_ade20k_eval_dirs(&acc, pdir, gdir, RV_ADE_PRED_ANNOTATION, 1, &n, ctx), RV_ERR_NOTFOUND);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "missing prediction"));
  unlink(gp);
  rmdir(gdir);
  rmdir(pdir);
  rmdir(tmpd);
  rv_image_free(&g);
  rv_image_free(&p);
  rv_seg_areas_free(&acc);
  rv_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_semantics),
      cmocka_unit_test(test_fixture_cases),
      cmocka_unit_test(test_random_cases),
      cmocka_unit_test(test_bad_pngs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
