/* `ravlt check-fixture` on detection head fixtures whose reference rows were reordered:
 * float32 cannot order two rows whose scores differ by less than its own error, so the
 * checker matches reference rows to computed rows across such near ties (apps/
 * check_detector.c). Reordering a near-tied pair of the reference must still pass, with
 * the pair reported and every detection- or proposal-indexed tensor compared in the matched
 * order; reordering a pair that is not tied must fail.
 *   - cascade fixture, the detections with the smallest reference score gap (< 1e-4, its
 *     score tolerance) swapped: PASS, "2 near-tied detections";
 *   - cascade, detections 0 and 1 (same label, gap far above 1e-4; masks swapped too):
 *     FAIL on the boxes;
 *   - Mask R-CNN, its smallest detection gap (above its 1e-5 tolerance) swapped: FAIL;
 *   - cascade, the proposals with the smallest score gap swapped (rpn.proposals, scores
 *     and every roi.stageS.* row): PASS, "2 near-tied proposals". */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "test_util.h"
#include "formats/weights.h"

#include <unistd.h>

static char tmpdir[256];

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static int det_indexed(const char *n) {
  return has_prefix(n, "det.") || has_prefix(n, "mask.");
}
static int prop_indexed(const char *n) {
  return has_prefix(n, "rpn.proposal") || has_prefix(n, "roi.stage");
}

/* DIR/io.safetensors = the fixture's io with rows i and j swapped in every tensor that
 * `which` selects (rows beyond a trimmed tensor's length are left alone); weights and
 * config linked. */
static void make_swapped(const char *kind, const char *dir, int (*which)(const char *), int i,
                         int j) {
  char rel[128], p[1024];
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *io = NULL;
  snprintf(rel, sizeof rel, "heads/%s/io.safetensors", kind);
  assert_int_equal(rv_weights_open(&io, fixture_path(rel), ctx), RV_OK);
  rv_weights *out = rv_weights_new("swapped");
  assert_non_null(out);
  for (int k = 0; k < rv_weights_count(io); k++) {
    const rv_wtensor *t = rv_weights_get(io, k);
    unsigned char *buf = rv_malloc(t->nbytes ? t->nbytes : 1);
    assert_non_null(buf);
    memcpy(buf, t->data, t->nbytes);
    if (which(t->name) && t->ndim > 0 && t->shape[0] > i && t->shape[0] > j) {
      size_t row = t->nbytes / (size_t)t->shape[0];
      unsigned char *tmp = malloc(row);
      assert_non_null(tmp);
      memcpy(tmp, buf + (size_t)i * row, row);
      memcpy(buf + (size_t)i * row, buf + (size_t)j * row, row);
      memcpy(buf + (size_t)j * row, tmp, row);
      free(tmp);
    }
    assert_int_equal(rv_weights_add(out, t->name, t->dtype, t->ndim, t->shape, buf, t->nbytes, 1,
                                    ctx), RV_OK);
  }
  assert_int_equal(test_run("mkdir -p %s && ln -sf %s/heads/%s/weights.safetensors "
                            "%s/heads/%s/config.json %s/", dir, RV_FIXTURES, kind, RV_FIXTURES,
                            kind, dir), 0);
  snprintf(p, sizeof p, "%s/io.safetensors", dir);
  assert_int_equal(rv_safetensors_write(p, out, ctx), RV_OK);
  rv_weights_free(out);
  rv_weights_free(io);
  rv_ctx_free(ctx);
}

/* index i of the smallest gap between consecutive values of `name` (scores, descending) */
static int smallest_gap(const char *kind, const char *name, double *gap) {
  char p[256];
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *io = NULL;
  snprintf(p, sizeof p, "heads/%s/io.safetensors", kind);
  assert_int_equal(rv_weights_open(&io, fixture_path(p), ctx), RV_OK);
  const rv_wtensor *t = rv_weights_find(io, name);
  assert_non_null(t);
  size_t n = rv_wtensor_numel(t);
  float *v = malloc(sizeof(float) * n);
  assert_non_null(v);
  rv_wtensor_to_f32(t, v);
  int best = 0;
  *gap = 1e30;
  for (size_t k = 0; k + 1 < n; k++)
    if ((double)v[k] - v[k + 1] < *gap) {
      *gap = (double)v[k] - v[k + 1];
      best = (int)k;
    }
  free(v);
  rv_weights_free(io);
  rv_ctx_free(ctx);
  return best;
}

/* check-fixture on dir: exit status, output in *out (malloc'd) */
static int check(const char *dir, char **out) {
  char log[512];
  snprintf(log, sizeof log, "%s/log.txt", dir);
  int rc = test_run("%s check-fixture %s > %s 2>&1", RV_BIN, dir, log);
  *out = test_read_text(log);
  assert_non_null(*out);
  return rc;
}

/* The cascade reference with the closest pair of `scores` swapped in every tensor `which`
 * selects: check-fixture passes and reports the pair (`expect`). */
static void expect_tie_pass(const char *scores, int (*which)(const char *), const char *sub,
                            const char *expect) {
  double gap;
  int i = smallest_gap("cascade_mask_rcnn", scores, &gap);
  printf("cascade: %s rows %d/%d, reference score gap %.3g\n", scores, i, i + 1, gap);
  assert_true(gap < 1e-4);
  char dir[512], *out;
  snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
  make_swapped("cascade_mask_rcnn", dir, which, i, i + 1);
  int rc = check(dir, &out);
  if (rc != 0 || !strstr(out, expect)) printf("%s", out);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out, expect));
  assert_non_null(strstr(out, "checks, 0 failed"));
  free(out);
}

static void test_near_tied_detections_pass(void **state) {
  (void)state;
  expect_tie_pass("det.scores", det_indexed, "casc_det_tie",
                  "2 near-tied detections in another order");
}

static void test_untied_detections_fail(void **state) {
  (void)state;
  char dir[512], *out;
  snprintf(dir, sizeof dir, "%s/casc_det_swap", tmpdir);
  make_swapped("cascade_mask_rcnn", dir, det_indexed, 0, 1);
  int rc = check(dir, &out);
  if (rc == 0) printf("%s", out);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(out, "det.bboxes")); /* same labels: the boxes and scores disagree */
  assert_non_null(strstr(out, "px (tol 1e-2) FAIL"));
  assert_null(strstr(out, "near-tied detections"));
  free(out);
  double gap;
  int i = smallest_gap("mask_rcnn", "det.scores", &gap);
  printf("mask_rcnn: detections %d/%d, reference score gap %.3g (tolerance 1e-5)\n", i, i + 1,
         gap);
  assert_true(gap > 1e-5);
  snprintf(dir, sizeof dir, "%s/mrcnn_det_swap", tmpdir);
  make_swapped("mask_rcnn", dir, det_indexed, i, i + 1);
  rc = check(dir, &out);
  if (rc == 0) printf("%s", out);
  assert_int_not_equal(rc, 0);
  free(out);
}

static void test_near_tied_proposals_pass(void **state) {
  (void)state;
  expect_tie_pass("rpn.proposal_scores", prop_indexed, "casc_prop_tie",
                  "2 near-tied proposals matched in another order");
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/ravlt_det_ties_XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_near_tied_detections_pass),
      cmocka_unit_test(test_untied_detections_fail),
      cmocka_unit_test(test_near_tied_proposals_pass),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (!getenv("RV_KEEP_TMP")) test_run("rm -rf %s", tmpdir);
  return rc;
}
