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
#include "eval/confusion.h"
#include "eval/tide.h"
#include <ravlt/analysis.h>
#include <sys/stat.h>
#include <unistd.h>
#include "eval/segmetrics.h"
#include "datasets/analysis_util.h"

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

static rv_coco_obj box_obj(int64_t id, int64_t img, int64_t cat, double x, double y, double w, double h, double score,
                           int crowd) {
  rv_coco_obj o;
  memset(&o, 0, sizeof o);
  o.id = id;
  o.image_id = img;
  o.category_id = cat;
  o.bbox[0] = x;
  o.bbox[1] = y;
  o.bbox[2] = w;
  o.bbox[3] = h;
  o.area = w * h;
  o.score = score;
  o.iscrowd = crowd;
  o.has_bbox = 1;
  return o;
}

/* One rule each (mmdet 2.x analyze_per_img_dets): crowd gt ignored, one detection over two gt
 * (counted in both rows), scores below the threshold left out and at it counted, background
 * row and column, IoU exactly 0.5 counted, detections of other images or categories left out.
 * Categories in the file's order 3, 1, 2 (indices 0, 1, 2; background 3). */
static void confusion_fixture(rv_coco_obj *gt, size_t *ng, rv_coco_obj *dt, size_t *nd) {
  size_t g = 0, d = 0;
  gt[g++] = box_obj(1, 10, 1, 100, 100, 20, 20, 0, 1); /* crowd */
  gt[g++] = box_obj(2, 10, 1, 0, 0, 10, 10, 0, 0);
  gt[g++] = box_obj(3, 10, 2, 0, 0, 10, 11, 0, 0);
  gt[g++] = box_obj(4, 10, 3, 50, 0, 10, 10, 0, 0);
  gt[g++] = box_obj(5, 10, 3, 80, 80, 10, 10, 0, 0); /* missed */
  gt[g++] = box_obj(6, 11, 2, 0, 0, 10, 10, 0, 0);
  dt[d++] = box_obj(1, 10, 1, 100, 100, 20, 20, 0.9, 0); /* only the crowd: background */
  dt[d++] = box_obj(2, 10, 1, 0, 0, 10, 10.5, 0.8, 0);   /* gt 2 and gt 3 */
  dt[d++] = box_obj(3, 10, 2, 0, 0, 10, 11, 0.29, 0);    /* below 0.3 */
  dt[d++] = box_obj(4, 10, 3, 50, 0, 10, 10, 0.3, 0);    /* at 0.3 */
  dt[d++] = box_obj(5, 10, 2, 200, 200, 5, 5, 0.5, 0);   /* background */
  dt[d++] = box_obj(6, 11, 2, 0, 0, 10, 5, 1.0, 0);      /* IoU 0.5 exactly */
  dt[d++] = box_obj(7, 11, 99, 0, 0, 10, 10, 1.0, 0);    /* not a category of the file */
  dt[d++] = box_obj(8, 999, 1, 0, 0, 10, 10, 1.0, 0);    /* not an image of the file */
  *ng = g;
  *nd = d;
}

static const int64_t CONF_WANT[16] = {1, 0, 0, 1, /* cat 3 */
                                      0, 1, 0, 0, /* cat 1 */
                                      0, 1, 1, 1, /* cat 2 */
                                      0, 1, 1, 0 /* background */};

static void test_det_confusion_rules(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_coco_obj gt[8], dt[8];
  size_t ng, nd;
  confusion_fixture(gt, &ng, dt, &nd);
  const int64_t cats[3] = {3, 1, 2}, imgs[2] = {10, 11};
  for (int masks = 0; masks <= 1; masks++)
    for (int th = 1; th <= 2; th++) {
      if (masks) { /* the same boxes as masks on a 300 x 300 image: mask IoU gives the same counts */
        for (size_t k = 0; k < ng; k++) assert_int_equal(rv_rle_from_bbox(&gt[k].segm, gt[k].bbox, 300, 300, ctx), RV_OK);
        for (size_t k = 0; k < nd; k++) assert_int_equal(rv_rle_from_bbox(&dt[k].segm, dt[k].bbox, 300, 300, ctx), RV_OK);
      }
      int64_t counts[16] = {0}, fp[2], fn[2];
      uint8_t dto[8], gto[8];
      rv_det_confusion_detail det = {dto, gto, fp, fn};
      rv_det_confusion_params p = rv_det_confusion_default_params();
      p.threads = th;
      assert_int_equal(rv_det_confusion(counts, cats, 3, masks ? RV_IOU_SEGM : RV_IOU_BBOX, imgs, 2, gt, ng, dt, nd, &p, &det, ctx),
                       RV_OK);
      for (int q = 0; q < 16; q++)
        if (counts[q] != CONF_WANT[q])
          fail_msg("%s: counts[%d][%d] = %lld, want %lld", masks ? "segm" : "bbox", q / 4, q % 4, (long long)counts[q],
                   (long long)CONF_WANT[q]);
      assert_int_equal(fp[0], 2);
      assert_int_equal(fn[0], 2);
      assert_int_equal(fp[1], 0);
      assert_int_equal(fn[1], 0);
      const uint8_t want_dt[8] = {2, 1, 0, 1, 2, 1, 0, 0}, want_gt[6] = {0, 1, 2, 1, 2, 1};
      assert_memory_equal(dto, want_dt, 8);
      assert_memory_equal(gto, want_gt, 6);
      /* --conf-score-thr 0.25 brings the 0.29 detection in: gt 3 (category 2) is found */
      p.score_thr = 0.25;
      memset(counts, 0, sizeof counts);
      assert_int_equal(rv_det_confusion(counts, cats, 3, masks ? RV_IOU_SEGM : RV_IOU_BBOX, imgs, 2, gt, ng, dt, nd, &p, NULL, ctx),
                       RV_OK);
      assert_int_equal(counts[2 * 4 + 3], 0);
      assert_int_equal(counts[2 * 4 + 2], 2);
      assert_int_equal(counts[1 * 4 + 2], 1); /* and it overlaps gt 2 (category 1) too */
      if (masks) {
        for (size_t k = 0; k < ng; k++) rv_rle_free(&gt[k].segm);
        for (size_t k = 0; k < nd; k++) rv_rle_free(&dt[k].segm);
      }
    }
  assert_true(fabs(rv_det_box_iou((double[4]){0, 0, 10, 10}, (double[4]){0, 0, 10, 5}) - 0.5) == 0);
  assert_true(rv_det_box_iou((double[4]){0, 0, 0, 0}, (double[4]){0, 0, 0, 0}) == 0); /* union floored at 1e-6 */
  rv_ctx_free(ctx);
}

/* mmseg 0.x tools/confusion_matrix.py on a hand-made map: C = 3, reduce_zero_label (0 ignored,
 * k = class k-1, 255 ignored), predictions without a class left out. */
static void test_seg_confusion(void **state) {
  (void)state;
  const uint8_t label[9] = {0, 1, 2, 3, 255, 1, 2, 3, 3};
  const int32_t pred[9] = {0, 0, 1, 2, 1, 5, -1, 2, 0};
  uint8_t pred_u8[9];
  for (int i = 0; i < 9; i++) pred_u8[i] = pred[i] >= 0 && pred[i] < 3 ? (uint8_t)(pred[i] + 1) : 0;
  const int64_t want[9] = {1, 0, 0, 0, 1, 0, 1, 0, 2};
  int64_t c1[9] = {0}, c2[9] = {0};
  double m1 = rv_seg_confusion_add_i32(c1, 3, pred, label, 9, 1, 255);
  double m2 = rv_seg_confusion_add_u8(c2, 3, pred_u8, 1, label, 9, 1, 255);
  assert_memory_equal(c1, want, sizeof want);
  assert_memory_equal(c2, want, sizeof want);
  /* per-image mIoU: (1/3 + 1/2 + 2/3) / 3 */
  assert_true(fabs(m1 - 0.5) < 1e-15);
  assert_true(fabs(m2 - 0.5) < 1e-15);
  /* added, not overwritten; without reduce_zero_label 0 is class 0 and 3 is out of range */
  rv_seg_confusion_add_i32(c1, 3, pred, label, 9, 0, 255);
  assert_int_equal(c1[0], 2); /* label 0 pred 0 */
  assert_int_equal(c1[1 * 3 + 0], 0 + 1); /* label 1 pred 0 */
  const uint8_t all_ignored[2] = {0, 255};
  assert_true(isnan(rv_seg_confusion_add_i32(c1, 3, pred, all_ignored, 2, 1, 255)));
}

/* rv_coco_analyze on a TIDE case: the JSON contract's keys, its PR array equal to the
 * evaluator's precision array (area all, last maxDets), TIDE equal to rv_tide_run, the
 * confusion matrix's counts consistent with its rules (every non-crowd gt of a category in
 * exactly... its row sums), and the HTML report made from it. */
static void test_coco_analysis_json(void **state) {
  (void)state;
  const char *dir = RV_TEST_DATA "/analysis/tide/01_mixed";
  rv_ctx *ctx = rv_ctx_create();
  rv_coco *gt = NULL;
  rv_coco_results res = {0}, other = {0};
  assert_int_equal(rv_coco_load(&gt, RV_TEST_DATA "/analysis/tide/01_mixed/gt.json", 1, 0, ctx), RV_OK);
  for (int t = 0; t < 2; t++) {
    rv_iou_type it = t ? RV_IOU_SEGM : RV_IOU_BBOX;
    char p[1024];
    snprintf(p, sizeof p, "%s/dt_%s.json", dir, t ? "segm" : "bbox");
    if (rv_coco_load_results(&res, gt, p, it, RV_COCO_AREA_BOX, 0, ctx) != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
    snprintf(p, sizeof p, RV_TEST_DATA "/analysis/tide/03_many_dets/dt_%s.json", t ? "segm" : "bbox");
    rv_cocoeval_params ep = rv_cocoeval_default_params(it);
    rv_cocoeval *ev = NULL;
    assert_int_equal(rv_coco_evaluate(&ev, gt, &res, &ep, ctx), RV_OK);
    rv_analysis_params ap = rv_analysis_default_params();
    char *json = NULL;
    /* compared with itself: deltas 0 */
    if (rv_coco_analyze(&json, gt, &res, it, t ? NULL : ev, &ep, &res, "same", NULL, "01_mixed", &ap, ctx) != RV_OK)
      fail_msg("%s", rv_ctx_errmsg(ctx));
    cJSON *j = cJSON_Parse(json);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "iou_type")->valuestring, t ? "segm" : "bbox");
    const char *keys[] = {"stats", "per_category", "pr", "tide", "confusion", "f1", "worst_images", "compare"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
      if (!cJSON_GetObjectItem(j, keys[k])) fail_msg("no '%s' in the analysis", keys[k]);
    /* PR: precision[t][r][k] == the evaluator's precision[t][r][k][area all][last maxDets] */
    const double *pr = rv_cocoeval_precision(ev);
    size_t K = rv_cocoeval_num_cats(ev);
    const cJSON *P = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "pr"), "precision");
    assert_int_equal(cJSON_GetArraySize(P), 10);
    for (int ti = 0; ti < 10; ti++)
      for (int r = 0; r < 101; r++)
        for (size_t k = 0; k < K; k++) {
          double want = pr[((((size_t)ti * 101 + r) * K + k) * 4 + 0) * 3 + 2];
          double got = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetArrayItem(P, ti), r), (int)k)->valuedouble;
          if (got != want) fail_msg("pr[%d][%d][%zu] = %.17g, evaluator %.17g", ti, r, k, got, want);
        }
    /* per_category ap == the evaluator's category AP */
    const cJSON *pc = cJSON_GetObjectItem(j, "per_category");
    assert_int_equal((size_t)cJSON_GetArraySize(pc), K);
    for (size_t k = 0; k < K; k++)
      assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(pc, (int)k), "ap")->valuedouble == rv_cocoeval_category_ap(ev, k));
    /* TIDE as rv_tide_run */
    int64_t ids[64];
    for (size_t i = 0; i < gt->n_images; i++) ids[i] = gt->images[i].id;
    rv_tide_params tp = rv_tide_default_params();
    rv_tide_result tr;
    assert_int_equal(rv_tide_run(&tr, &tp, it, ids, gt->n_images, gt->anns, gt->n_anns, res.dets, res.n, ctx), RV_OK);
    const cJSON *tide = cJSON_GetObjectItem(j, "tide");
    assert_true(cJSON_GetObjectItem(tide, "ap50")->valuedouble == tr.ap);
    assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(tide, "main"), "Loc")->valuedouble == tr.main[RV_TIDE_LOC]);
    rv_tide_result_free(&tr);
    /* confusion: labels = the file's categories then "background"; a row of category c sums to
     * at least its non-crowd gt (each gt is found, or counted in the background column) */
    const cJSON *conf = cJSON_GetObjectItem(j, "confusion"), *lab = cJSON_GetObjectItem(conf, "labels");
    assert_int_equal((size_t)cJSON_GetArraySize(lab), gt->n_cats + 1);
    assert_string_equal(cJSON_GetArrayItem(lab, (int)gt->n_cats)->valuestring, "background");
    const cJSON *cmp = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "compare"), "per_category"), *e;
    cJSON_ArrayForEach(e, cmp) {
      double d = cJSON_GetObjectItem(e, "delta")->valuedouble;
      assert_true(cJSON_IsNull(cJSON_GetObjectItem(e, "delta")) || d == 0);
    }
    { /* F1: the best threshold pooled over the categories, by brute force over every score */
      size_t cap = 0;
      for (size_t k = 0; k < K; k++) cap += rv_cocoeval_cat_dets(ev, k, 0, 0, 100, NULL, NULL, NULL);
      double *sc = malloc(sizeof *sc * (cap + 1));
      uint8_t *stt = malloc(cap + 1);
      size_t n = 0;
      int64_t npig = 0;
      for (size_t k = 0; k < K; k++) {
        int64_t np1 = 0;
        n += rv_cocoeval_cat_dets(ev, k, 0, 0, 100, sc + n, stt + n, &np1);
        npig += np1;
      }
      double best = -1, best_thr = -1;
      for (size_t i = 0; i < n; i++) { /* threshold sc[i]: every detection at or above it */
        if (stt[i] == 2) continue;
        double ntp = 0, nfp = 0;
        for (size_t q = 0; q < n; q++)
          if (stt[q] != 2 && sc[q] >= sc[i]) {
            if (stt[q] == 1) ntp++;
            else nfp++;
          }
        double p_ = ntp / (ntp + nfp), rc = ntp / (double)npig, f = p_ + rc > 0 ? 2 * p_ * rc / (p_ + rc) : 0;
        if (f > best || (f == best && sc[i] > best_thr)) {
          best = f;
          best_thr = sc[i];
        }
      }
      const cJSON *ov = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "f1"), "overall");
      if (fabs(cJSON_GetObjectItem(ov, "f1")->valuedouble - best) > 1e-12 || cJSON_GetObjectItem(ov, "threshold")->valuedouble != best_thr)
        fail_msg("best F1 %.17g at %.17g, brute force %.17g at %.17g", cJSON_GetObjectItem(ov, "f1")->valuedouble,
                 cJSON_GetObjectItem(ov, "threshold")->valuedouble, best, best_thr);
      free(sc);
      free(stt);
    }
    const cJSON *w = cJSON_GetObjectItem(j, "worst_images");
    assert_true(cJSON_GetArraySize(w) > 0);
    for (int i = 1; i < cJSON_GetArraySize(w); i++) {
      const cJSON *a = cJSON_GetArrayItem(w, i - 1), *b = cJSON_GetArrayItem(w, i);
      assert_true(cJSON_GetObjectItem(a, "fp")->valuedouble + cJSON_GetObjectItem(a, "fn")->valuedouble >=
                  cJSON_GetObjectItem(b, "fp")->valuedouble + cJSON_GetObjectItem(b, "fn")->valuedouble);
    }
    /* the report */
    char html[256];
    snprintf(html, sizeof html, "/tmp/rv_test_analysis_%d.html", (int)getpid());
    const char *parts[1] = {json};
    assert_int_equal(rv_analysis_write_html(html, parts, 1, "test <report>", ctx), RV_OK);
    char *text = test_read_text(html);
    assert_non_null(text);
    const char *ids_want[] = {"-summary\"", "-categories\"", "-pr\"", "-tide\"", "-confusion\"", "-f1\"", "-worst\"", "-compare\""};
    for (size_t k = 0; k < sizeof ids_want / sizeof *ids_want; k++) {
      char id[64];
      snprintf(id, sizeof id, "id=\"%s%s", t ? "segm" : "bbox", ids_want[k]);
      if (!strstr(text, id)) fail_msg("report: no %s", id);
    }
    assert_non_null(strstr(text, "test &lt;report&gt;"));
    assert_null(strstr(text, "http://"));
    assert_null(strstr(text, "https://"));
    if (getenv("RV_KEEP_REPORT")) fprintf(stderr, "kept %s\n", html);
    else unlink(html);
    free(text);
    cJSON_Delete(j);
    free(json);
    rv_cocoeval_free(ev);
    rv_coco_results_free(&res);
  }
  (void)other;
  /* a results file on another gt: an error, not a report */
  const char *bad[1] = {"{\"report\": \"nope\"}"};
  assert_int_equal(rv_analysis_write_html("/tmp/never.html", bad, 1, NULL, ctx), RV_ERR_FORMAT);
  rv_coco_free(gt);
  rv_ctx_free(ctx);
}

/* The segmentation analysis from folders of hand-made PNGs: confusion counts exact, the metrics
 * equal rv_ade20k_eval_dirs' on the same folders, the worst image first, an image thumbnail
 * when the image is at hand, errors named. */
static void write_gray(const char *path, const uint8_t *v, int h, int w) {
  rv_image im = {0};
  assert_int_equal(rv_image_alloc(&im, h, w, 1, NULL), RV_OK);
  memcpy(im.data, v, (size_t)h * w);
  assert_int_equal(rv_image_write(path, &im, NULL), RV_OK);
  rv_image_free(&im);
}

static void test_seg_analysis_dirs(void **state) {
  (void)state;
  char root[] = "/tmp/rv_seg_analysis_XXXXXX", p[1024];
  assert_non_null(mkdtemp(root));
  const char *sub[3] = {"gt", "pred", "img"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", root, sub[i]);
    assert_int_equal(mkdir(p, 0755), 0);
  }
  /* C = 3; image a: perfect; image b: the labels of test_seg_confusion (annotation convention
   * for the prediction: 0 = no class) */
  const uint8_t ga[4] = {1, 2, 3, 0}, pa[4] = {1, 2, 3, 3};
  const uint8_t gb[9] = {0, 1, 2, 3, 255, 1, 2, 3, 3}, pb[9] = {1, 1, 2, 3, 2, 0, 0, 3, 1};
  snprintf(p, sizeof p, "%s/gt/a.png", root);
  write_gray(p, ga, 2, 2);
  snprintf(p, sizeof p, "%s/pred/a.png", root);
  write_gray(p, pa, 2, 2);
  snprintf(p, sizeof p, "%s/gt/b.png", root);
  write_gray(p, gb, 3, 3);
  snprintf(p, sizeof p, "%s/pred/b.png", root);
  write_gray(p, pb, 3, 3);
  rv_image img = {0};
  assert_int_equal(rv_image_alloc(&img, 3, 3, 3, NULL), RV_OK);
  snprintf(p, sizeof p, "%s/img/b.jpg", root);
  assert_int_equal(rv_image_write(p, &img, NULL), RV_OK);
  rv_image_free(&img);
  rv_ctx *ctx = rv_ctx_create();
  rv_seg_analysis *a = NULL;
  rv_analysis_params prm = rv_analysis_default_params();
  prm.threads = 2;
  const char *names[3] = {"x", "y", "z"};
  assert_int_equal(rv_seg_analysis_create(&a, 3, names, &prm, ctx), RV_OK);
  char pd[1024], gd[1024], id[1024];
  snprintf(pd, sizeof pd, "%s/pred", root);
  snprintf(gd, sizeof gd, "%s/gt", root);
  snprintf(id, sizeof id, "%s/img", root);
  size_t n = 0;
  if (rv_seg_analysis_add_dirs(a, pd, gd, id, RV_ADE_PRED_ANNOTATION, &n, ctx) != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
  assert_int_equal(n, 2);
  char *json = NULL;
  assert_int_equal(rv_seg_analysis_json(a, &json, ctx), RV_OK);
  cJSON *j = cJSON_Parse(json);
  assert_non_null(j);
  const int64_t want[9] = {1 + 1, 0, 0, 0, 1 + 1, 0, 1, 0, 2 + 1};
  const cJSON *rows = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "confusion"), "counts");
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++)
      if (cJSON_GetArrayItem(cJSON_GetArrayItem(rows, r), c)->valuedouble != (double)want[r * 3 + c])
        fail_msg("confusion[%d][%d] = %g, want %lld", r, c, cJSON_GetArrayItem(cJSON_GetArrayItem(rows, r), c)->valuedouble,
                 (long long)want[r * 3 + c]);
  rv_seg_areas acc;
  assert_int_equal(rv_seg_areas_init(&acc, 3, ctx), RV_OK);
  assert_int_equal(rv_ade20k_eval_dirs(&acc, pd, gd, RV_ADE_PRED_ANNOTATION, 1, NULL, ctx), RV_OK);
  rv_seg_metrics m;
  assert_int_equal(rv_seg_metrics_compute(&m, &acc, ctx), RV_OK);
  assert_true(cJSON_GetObjectItem(j, "mIoU")->valuedouble == m.mIoU);
  assert_true(cJSON_GetObjectItem(j, "aAcc")->valuedouble == m.aAcc);
  for (int k = 0; k < 3; k++) assert_true(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "IoU"), k)->valuedouble == m.iou[k]);
  rv_seg_metrics_free(&m);
  rv_seg_areas_free(&acc);
  const cJSON *w = cJSON_GetObjectItem(j, "worst_images");
  assert_int_equal(cJSON_GetArraySize(w), 2);
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(w, 0), "name")->valuestring, "b");
  assert_true(fabs(cJSON_GetObjectItem(cJSON_GetArrayItem(w, 0), "mIoU")->valuedouble - 0.5) < 1e-15);
  assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(w, 1), "mIoU")->valuedouble == 1);
  assert_non_null(cJSON_GetObjectItem(cJSON_GetArrayItem(w, 0), "thumbnail"));
  assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "names"), 2)->valuestring, "z");
  /* the HTML report of it */
  snprintf(p, sizeof p, "%s/r.html", root);
  const char *parts[1] = {json};
  assert_int_equal(rv_analysis_write_html(p, parts, 1, NULL, ctx), RV_OK);
  char *text = test_read_text(p);
  assert_non_null(strstr(text, "id=\"ade20k-confusion\""));
  assert_non_null(strstr(text, "id=\"ade20k-worst\""));
  free(text);
  unlink(p);
  cJSON_Delete(j);
  free(json);
  rv_seg_analysis_free(a);
  /* a missing prediction is named */
  snprintf(p, sizeof p, "%s/pred/b.png", root);
  unlink(p);
  assert_int_equal(rv_seg_analysis_create(&a, 3, NULL, &prm, ctx), RV_OK);
  assert_int_equal(rv_seg_analysis_add_dirs(a, pd, gd, NULL, RV_ADE_PRED_ANNOTATION, &n, ctx), RV_ERR_NOTFOUND);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "b.png"));
  rv_seg_analysis_free(a);
  /* a label out of range is named */
  const uint8_t bad[4] = {1, 9, 1, 1};
  snprintf(p, sizeof p, "%s/gt/b.png", root);
  unlink(p);
  snprintf(p, sizeof p, "%s/gt/a.png", root);
  write_gray(p, bad, 2, 2);
  assert_int_equal(rv_seg_analysis_create(&a, 3, NULL, &prm, ctx), RV_OK);
  assert_int_equal(rv_seg_analysis_add_dirs(a, pd, gd, NULL, RV_ADE_PRED_ANNOTATION, &n, ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "label 9"));
  rv_seg_analysis_free(a);
  assert_int_equal(rv_seg_analysis_create(&a, 0, NULL, &prm, ctx), RV_ERR_ARG);
  /* cleanup */
  const char *files[] = {"gt/a.png", "pred/a.png", "img/b.jpg"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", root, files[i]);
    unlink(p);
  }
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", root, sub[i]);
    rmdir(p);
  }
  rmdir(root);
  rv_ctx_free(ctx);
}

/* The HTML writer takes JSON from users (ravlt.analysis.write_report): malformed analyses
 * (missing keys, wrong types, ragged matrices, non-finite and huge numbers) render or fail with
 * a message, never crash (run under ASan + UBSan in CI). */
static void test_report_malformed(void **state) {
  (void)state;
  static const char *const cases[] = {
      "{\"report\": \"coco\"}",
      "{\"report\": \"coco\", \"iou_type\": \"\\\"><x>\"}",
      "{\"report\": \"coco\", \"iou_type\": 5, \"stats\": \"x\", \"per_category\": [1, 2, {}],"
      " \"pr\": {\"precision\": [[[1]]], \"rec_thrs\": [0, 1e999], \"iou_thrs\": [0.5, 0.75]},"
      " \"confusion\": {\"counts\": [[1, 2], [3], \"q\", [-4, 1e999, null]], \"names\": [], \"labels\": [{}]},"
      " \"worst_images\": [{\"width\": 1e300, \"height\": 5, \"thumbnail\": 7, \"objects\": [{\"bbox\": [1]},"
      " {\"bbox\": [1, 2, 3, 4], \"kind\": \"dt\", \"label\": \"<x>\"}]}, 5, {\"width\": -1}],"
      " \"tide\": {\"main\": {\"Cls\": 1e999, \"Loc\": -3}}, \"f1\": {\"overall\": {}, \"thresholds\": [0.1, \"a\"]},"
      " \"compare\": {\"per_category\": [{\"delta\": 0.5}, {\"delta\": -0.25, \"name\": \"&\"}]}}",
      "{\"report\": \"ade20k\", \"IoU\": [1, 2, \"x\"], \"Acc\": [], \"confusion\": {\"counts\": [[1]]},"
      " \"worst_images\": [{}, {\"thumbnail\": \"\\\" onload=x\"}]}",
      "{\"report\": \"ade20k\"}",
  };
  rv_ctx *ctx = rv_ctx_create();
  char path[256];
  snprintf(path, sizeof path, "/tmp/rv_test_malformed_%d.html", (int)getpid());
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *parts[1] = {cases[i]};
    if (rv_analysis_write_html(path, parts, 1, NULL, ctx) != RV_OK) fail_msg("case %zu: %s", i, rv_ctx_errmsg(ctx));
    char *text = test_read_text(path);
    assert_non_null(text);
    assert_null(strstr(text, "nan\""));  /* no NaN in an SVG attribute */
    assert_null(strstr(text, "<x>"));  /* text is escaped, ids are never the JSON's text */
    assert_null(strstr(text, "\" onload")); /* and attribute values too */
    free(text);
  }
  unlink(path);
  const char *bad[2] = {"[1, 2]", "{\"report\": \"coco\""};
  for (int i = 0; i < 2; i++) assert_int_equal(rv_analysis_write_html(path, bad + i, 1, NULL, ctx), RV_ERR_FORMAT);
  assert_int_equal(access(path, F_OK), -1);
  assert_int_equal(rv_analysis_write_html("/nonexistent-dir/r.html", cases, 1, NULL, ctx), RV_ERR_IO);
  rv_ctx_free(ctx);
}

/* The exact JSON numbers and nested arrays of the analyses (datasets/analysis_util.c). */
static void test_json_text(void **state) {
  (void)state;
  const double v[6] = {0.99999999999999978, -1, 0.1, NAN, 1e-300, 3};
  const size_t d2[2] = {2, 3}, d0[3] = {2, 0, 4}, d1[1] = {0};
  char *t = rv_jtext_num(v, d2, 2);
  assert_string_equal(t, "[[0.99999999999999978,-1,0.1],[null,1e-300,3]]");
  cJSON *j = cJSON_Parse(t);
  assert_true(cJSON_GetArrayItem(cJSON_GetArrayItem(j, 0), 0)->valuedouble == v[0]);
  assert_true(cJSON_GetArrayItem(cJSON_GetArrayItem(j, 1), 1)->valuedouble == v[4]);
  cJSON_Delete(j);
  free(t);
  t = rv_jtext_num(v, d0, 3);
  assert_string_equal(t, "[[],[]]");
  free(t);
  t = rv_jtext_num(v, d1, 1);
  assert_string_equal(t, "[]");
  free(t);
  char b64[64];
  char *e = rv_base64("x:", (const unsigned char *)"hello", 5);
  snprintf(b64, sizeof b64, "%s", e);
  free(e);
  assert_string_equal(b64, "x:aGVsbG8=");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tide_goldens),
      cmocka_unit_test(test_det_confusion_rules),
      cmocka_unit_test(test_seg_confusion),
      cmocka_unit_test(test_coco_analysis_json),
      cmocka_unit_test(test_seg_analysis_dirs),
      cmocka_unit_test(test_report_malformed),
      cmocka_unit_test(test_json_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
