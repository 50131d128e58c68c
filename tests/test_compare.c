/* The fixture comparer (eval/compare.h) that check-fixture and the parity tests share:
 * the scale-relative rule max|got-ref| / max(1, max|ref|) and where it is largest, the
 * mixed rule |err| / (atol + rtol|ref|), NaN/Inf never passing, and label maps with a
 * top-1/top-2 margin. */
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scale_rule),
      cmocka_unit_test(test_mixed_rule),
      cmocka_unit_test(test_labels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
