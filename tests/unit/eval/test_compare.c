/* The fixture comparer (eval/compare.h) that check-fixture and the parity tests share:
 * the scale-relative rule max|got-ref| / max(1, max|ref|) and where it is largest, the
 * mixed rule |err| / (atol + rtol|ref|), NaN/Inf never passing, label maps with a
 * top-1/top-2 margin, and the detection matcher (rv_match_detections: rows in place,
 * near-tied rows reordered, unmatched rows on either side, NaN, the closest of several
 * candidates, IoU with and without the +1 px widths). */
#include "test_util.h"

static void test_scale_rule(void **state) {
  (void)state;
  const float ref[5] = {0.5f, -4.0f, 2.0f, 0.0f, 1.0f};
  float got[5] = {0.5f, -4.0f, 2.0f, 0.0f, 1.0f};
  rv_cmp c = rv_compare_f32(got, ref, 5);
  assert_true(c.max_abs == 0 && c.rel == 0);
  assert_true(c.max_ref == 4.0 && c.scale == 4.0);
  got[2] = 2.5f; /* error 0.5 at index 2, scale 4 */
  got[4] = 1.25f;
  c = rv_compare_f32(got, ref, 5);
  assert_true(c.max_abs == 0.5);
  assert_int_equal(c.worst, 2);
  assert_true(c.rel == 0.125);
  /* below 1 the scale is 1: an absolute error */
  const float small[2] = {0.25f, -0.5f};
  const float sgot[2] = {0.25f, -0.25f};
  c = rv_compare_f32(sgot, small, 2);
  assert_true(c.scale == 1.0 && c.rel == 0.25);
  assert_int_equal(c.worst, 1);
  /* NaN or Inf: infinite, at its index */
  got[3] = NAN;
  c = rv_compare_f32(got, ref, 5);
  assert_true(isinf(c.rel));
  assert_int_equal(c.worst, 3);
  got[3] = 0.0f;
  got[0] = INFINITY;
  c = rv_compare_f32(got, ref, 5);
  assert_true(isinf(c.max_abs));
  assert_int_equal(c.worst, 0);
  /* nothing to compare: no error */
  c = rv_compare_f32(got, ref, 0);
  assert_true(c.rel == 0 && c.scale == 1.0);
}

static void test_mixed_rule(void **state) {
  (void)state;
  const float ref[3] = {0.0f, 100.0f, -10.0f};
  float got[3] = {1e-4f, 100.05f, -10.0f};
  /* allowed: 2e-4 + 1e-3|ref| -> 2e-4, 0.1002, 0.0102 */
  rv_cmp c = rv_compare_f32_mixed(got, ref, 3, 2e-4, 1e-3);
  assert_true(c.rel > 0.49 && c.rel < 0.51); /* 1e-4 / 2e-4 and 0.05 / 0.1002 tie near 0.5 */
  assert_true(c.rel <= 1.0);
  got[2] = -10.02f; /* 0.02 / 0.0102 ~ 1.96: fails, the worst */
  c = rv_compare_f32_mixed(got, ref, 3, 2e-4, 1e-3);
  assert_true(c.rel > 1.9 && c.rel < 2.0);
  assert_int_equal(c.worst, 2);
  assert_true(fabs(c.max_abs - 0.05) < 1e-5); /* the largest absolute error is elsewhere */
  got[0] = NAN;
  c = rv_compare_f32_mixed(got, ref, 3, 2e-4, 1e-3);
  assert_true(isinf(c.rel));
  assert_int_equal(c.worst, 0);
}

static void test_labels(void **state) {
  (void)state;
  const int32_t got[6] = {0, 1, 2, 3, 4, 5};
  const float ref[6] = {0, 1, 7, 3, 9, 5};
  const float margin[6] = {0.5f, 0.5f, 1e-5f, 0.2f, 0.3f, 0.9f};
  rv_label_cmp l = rv_compare_labels(got, ref, margin, 1e-4, 6);
  assert_int_equal(l.differ, 2);
  assert_int_equal(l.bad, 1); /* index 2 is a near tie: not counted */
  assert_int_equal(l.low, 1);
  assert_int_equal(l.counted, 5);
  assert_true(l.min_margin == 1e-5f);
  l = rv_compare_labels(got, ref, NULL, 1e-4, 6);
  assert_int_equal(l.differ, 2);
  assert_int_equal(l.bad, 2);
  assert_int_equal(l.counted, 6);
  assert_int_equal(l.low, 0);
  l = rv_compare_labels(got, (const float[6]){0, 1, 2, 3, 4, 5}, margin, 1e-4, 6);
  assert_int_equal(l.differ, 0);
  assert_int_equal(l.bad, 0);
}

/* five reference detections, boxes [5i, 5i, 5i + 4, 5i + 4] with the score as a fifth
 * column (as the e2e fixtures store them), labels as floats; rows 1 and 2 near-tied */
static const float REF5[5][5] = {{0, 0, 4, 4, 0.9f},
                                 {5, 5, 9, 9, 0.5f},
                                 {10, 10, 14, 14, 0.500005f},
                                 {15, 15, 19, 19, 0.3f},
                                 {20, 20, 24, 24, 0.1f}};
static const float REF5_LABELS[5] = {1, 2, 2, 0, 1};

static rv_det_list ref5(void) {
  rv_det_list r = {5, &REF5[0][0], 5, &REF5[0][4], 5, NULL, REF5_LABELS, NULL};
  return r;
}

static void test_match_in_place_and_ties(void **state) {
  (void)state;
  float box[5][4], score[5];
  int label[5], match[5], mg[6];
  for (int i = 0; i < 5; i++) {
    for (int k = 0; k < 4; k++) box[i][k] = REF5[i][k] + 1e-3f;
    score[i] = REF5[i][4] - 1e-6f;
    label[i] = (int)REF5_LABELS[i];
  }
  const rv_det_list r = ref5();
  rv_det_list g = {5, &box[0][0], 4, score, 1, label, NULL, NULL};
  rv_det_match_opts o = {1e-5, 1e-2, 0, 0, 1, 1, 16, 1e-5};
  rv_det_match m = rv_match_detections(match, mg, &r, &g, &o);
  assert_int_equal(m.matched, 5);
  assert_int_equal(m.moved, 0);
  assert_int_equal(m.unmatched_ref + m.unmatched_got, 0);
  assert_true(fabs(m.max_box_err - 1e-3) < 1e-5 && fabs(m.max_score_err - 1e-6) < 1e-7);
  for (int i = 0; i < 5; i++) assert_int_equal(match[i], i), assert_int_equal(mg[i], i);
  /* the near-tied rows 1 and 2 in the other order: matched across the tie */
  const int swap[5] = {0, 2, 1, 3, 4};
  g.order = swap;
  m = rv_match_detections(match, mg, &r, &g, &o);
  assert_int_equal(m.matched, 5);
  assert_int_equal(m.moved, 2);
  assert_int_equal(match[1], 2), assert_int_equal(match[2], 1);
  assert_int_equal(mg[1], 2), assert_int_equal(mg[2], 1);
  /* not a tie under a tighter tie_tol (the reference scores are 5e-6 apart): no match */
  o.tie_tol = 1e-6;
  m = rv_match_detections(match, mg, &r, &g, &o);
  assert_int_equal(m.matched, 3);
  assert_int_equal(m.unmatched_ref, 2), assert_int_equal(m.unmatched_got, 2);
  assert_int_equal(match[1], -1), assert_int_equal(match[2], -1), assert_int_equal(mg[1], -1);
  /* no tie condition but no window: in place only */
  o.tie_tol = -1, o.window = 0;
  m = rv_match_detections(match, mg, &r, &g, &o);
  assert_int_equal(m.matched, 3);
  /* anywhere: rows 0 and 4 swapped (scores far apart) still match by label, box and score */
  const int far[5] = {4, 1, 2, 3, 0};
  g.order = far, o.window = -1;
  m = rv_match_detections(match, mg, &r, &g, &o);
  assert_int_equal(m.matched, 5);
  assert_int_equal(m.moved, 2);
  assert_int_equal(match[0], 4), assert_int_equal(match[4], 0);
  /* ... but not across a label change */
  label[0] = 7;
  m = rv_match_detections(match, mg, &r, &g, &o);
  assert_int_equal(m.matched, 4);
  assert_int_equal(match[0], -1), assert_int_equal(mg[4], -1);
  /* labels not compared when one side has none */
  g.labels = NULL;
  m = rv_match_detections(match, mg, &r, &g, &o);
  assert_int_equal(m.matched, 5);
}

static void test_match_unmatched_nan_best(void **state) {
  (void)state;
  /* computed: ref rows 0, 1, 3 (row 2 missing), an extra box, then a NaN copy of row 4 */
  float box[5][4] = {{0, 0, 4, 4}, {5, 5, 9, 9}, {15, 15, 19, 19}, {40, 40, 44, 44}, {20, NAN, 24, 24}};
  float score[5] = {0.9f, 0.5f, 0.3f, 0.7f, 0.1f};
  int label[5] = {1, 2, 0, 1, 1}, match[5], mg[5];
  const rv_det_list r = ref5();
  rv_det_list g = {5, &box[0][0], 4, score, 1, label, NULL, NULL};
  const rv_det_match_opts o = {1e-4, 0.05, 0, 0, 1, 1, -1, -1};
  rv_det_match m = rv_match_detections(match, mg, &r, &g, &o);
  assert_int_equal(m.matched, 3);
  assert_int_equal(m.moved, 1); /* ref row 3 at computed place 2 */
  assert_int_equal(m.unmatched_ref, 2), assert_int_equal(m.unmatched_got, 2);
  const int want[5] = {0, 1, -1, 2, -1}, want_g[5] = {0, 1, 3, -1, -1};
  for (int i = 0; i < 5; i++) assert_int_equal(match[i], want[i]), assert_int_equal(mg[i], want_g[i]);
  assert_true(m.max_box_err == 0 && isfinite(m.max_score_err));
  /* a NaN score matches nothing either, even with the box unchecked */
  box[4][1] = 20, score[4] = NAN;
  const rv_det_match_opts loose = {1e-4, -1, 0, 0, 1, 1, -1, -1};
  m = rv_match_detections(match, mg, &r, &g, &loose);
  assert_int_equal(match[4], -1);
  score[4] = 0.1f;
  m = rv_match_detections(match, mg, &r, &g, &loose);
  assert_int_equal(match[4], 4);
  /* several candidates: the closest box, the first among equals */
  const float rb[1][5] = {{10, 10, 20, 20, 0.5f}};
  const float cb[3][4] = {{10.04f, 10, 20, 20}, {10.01f, 10, 20, 20}, {10, 10, 20.01f, 20}};
  const float cs[3] = {0.5f, 0.5f, 0.5f};
  const rv_det_list r1 = {1, &rb[0][0], 5, &rb[0][4], 5, NULL, NULL, NULL};
  const rv_det_list g3 = {3, &cb[0][0], 4, cs, 1, NULL, NULL, NULL};
  rv_det_match_opts anywhere = {1e-4, 0.05, 0, 0, 1, 0, -1, -1};
  m = rv_match_detections(match, mg, &r1, &g3, &anywhere);
  assert_int_equal(match[0], 1);
  anywhere.same_place_first = 1; /* place 0 matches: taken before the closer one */
  m = rv_match_detections(match, mg, &r1, &g3, &anywhere);
  assert_int_equal(match[0], 0);
}

static void test_match_iou(void **state) {
  (void)state;
  const float a[4] = {0, 0, 10, 10}, b[4] = {5, 0, 15, 10}, z[4] = {3, 3, 3, 8};
  assert_true(fabs(rv_box_iou(a, b, 0) - 50.0 / 150.0) < 1e-12);
  assert_true(fabs(rv_box_iou(a, b, 1) - 66.0 / 176.0) < 1e-12);
  assert_true(rv_box_iou(z, z, 0) == 0.0); /* zero width: plain IoU 0 even with itself */
  assert_true(rv_box_iou(z, z, 1) == 1.0);
  const float n[4] = {0, NAN, 10, 10};
  assert_true(rv_box_iou(a, n, 0) == 0.0 && rv_box_iou(n, n, 1) == 0.0);
  /* greedy by IoU in the reference order (bf16 against float32): each computed box once */
  const float fb[2][4] = {{0, 0, 100, 100}, {1, 0, 101, 100}};
  const float gb[2][4] = {{1, 0, 101, 100}, {0, 0, 100, 100}};
  const int fl[2] = {3, 3}, gl[2] = {3, 3};
  int match[2], mg[2];
  const rv_det_list r = {2, &fb[0][0], 4, NULL, 1, fl, NULL, NULL};
  const rv_det_list g = {2, &gb[0][0], 4, NULL, 1, gl, NULL, NULL};
  const rv_det_match_opts o = {-1, -1, 0.95, 1, 1, 0, -1, -1};
  rv_det_match m = rv_match_detections(match, mg, &r, &g, &o);
  assert_int_equal(m.matched, 2);
  assert_int_equal(match[0], 1), assert_int_equal(match[1], 0);
  assert_true(m.min_iou == 1.0 && m.max_score_err == 0);
  const rv_det_match_opts strict = {-1, -1, 0.999, 1, 1, 0, -1, -1};
  m = rv_match_detections(match, mg, &r, &g, &strict); /* the IoU 1 pairs only */
  assert_int_equal(m.matched, 2);
  const float shifted[2][4] = {{3, 0, 103, 100}, {50, 50, 60, 60}};
  const rv_det_list gs = {2, &shifted[0][0], 4, NULL, 1, gl, NULL, NULL};
  m = rv_match_detections(match, mg, &r, &gs, &o); /* IoU 0.94, 0.96: only row 1 */
  assert_int_equal(m.matched, 1);
  assert_int_equal(match[0], -1), assert_int_equal(match[1], 0);
  assert_int_equal(m.unmatched_got, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scale_rule),
      cmocka_unit_test(test_mixed_rule),
      cmocka_unit_test(test_labels),
      cmocka_unit_test(test_match_in_place_and_ties),
      cmocka_unit_test(test_match_unmatched_nan_best),
      cmocka_unit_test(test_match_iou),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
