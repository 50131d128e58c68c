/* One kernel-check helper for the tests (ncnn testutil style): seeded random fills, a
 * comparison with relative + absolute tolerance that names the worst element, and the odd
 * sizes a shape sweep walks.
 *
 *   float *x = kc_rand(n, seed);                       // uniform [-1, 1), free() it
 *   kc_assert_close(got, ref, n, 2e-5, "pointwise");   // |d| <= tol * max(1, max|ref|)
 *   kc_assert_near(got, ref, n, 1e-5, 1e-6, "softmax"); // |d_i| <= atol + rtol |ref_i|
 *   for (int i = 0; i < KC_NSIZES; i++) ... kc_sizes[i] ...
 *
 * Include after test_util.h (cmocka).
 */
#ifndef RV_TESTS_KERNEL_CHECK_H
#define RV_TESTS_KERNEL_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Sizes a sweep tries: 1, primes and one past the vector and block widths. */
static const int kc_sizes[] = {1, 2, 3, 5, 7, 13, 17, 31, 33, 49, 65};
#define KC_NSIZES ((int)(sizeof kc_sizes / sizeof kc_sizes[0]))

/* n floats uniform in [-1, 1) from seed (malloc'd, never NULL). */
static inline float *kc_rand(size_t n, uint64_t seed) {
  float *p = malloc(n * sizeof(float) + 4);
  assert_non_null(p);
  fill_rand(p, n, seed);
  return p;
}

/* Whether |got_i - ref_i| <= atol + rtol |ref_i| for every i, by the fixture comparer's mixed
 * rule (eval/compare.h: the one tensor comparer of check-fixture and the tests); *worst: the
 * index of the largest |d| / (atol + rtol |ref|). */
static inline int kc_within(const float *got, const float *ref, size_t n, double rtol,
                            double atol, size_t *worst) {
  rv_cmp c = rv_compare_f32_mixed(got, ref, n, atol, rtol);
  *worst = c.worst;
  return c.rel <= 1.0;
}

/* |got_i - ref_i| <= atol + rtol |ref_i| for every i, else a message naming the worst index. */
static inline void kc_assert_near(const float *got, const float *ref, size_t n, double rtol,
                                  double atol, const char *what) {
  size_t w;
  if (!kc_within(got, ref, n, rtol, atol, &w)) {
    fprintf(stderr, "%s: worst at [%zu]: got %.9g, want %.9g (|d| %.3g > %.3g + %.3g |want|)\n",
            what, w, got[w], ref[w], fabs((double)got[w] - ref[w]), atol, rtol);
    fail();
  }
}

/* max|got - ref| <= tol * max(1, max|ref|) (one scale for the whole tensor: the comparer's
 * scale rule, rv_compare_f32), else a message naming the worst index. */
static inline void kc_assert_close(const float *got, const float *ref, size_t n, double tol,
                                   const char *what) {
  rv_cmp c = rv_compare_f32(got, ref, n);
  if (!(c.rel <= tol)) {
    size_t w = c.worst;
    fprintf(stderr, "%s: worst at [%zu]: got %.9g, want %.9g (|d| %.3g > %.3g x max(1, max|want|) %.3g)\n",
            what, w, got[w], ref[w], fabs((double)got[w] - ref[w]), tol, c.scale);
    fail();
  }
}

/* A context post function for the kernels' block epilogues (rv_block_fn): z += 3 y over the
 * block where it lies (a residual add), counting the elements it saw (threads call it at
 * once). */
typedef struct {
  float *z;
  size_t calls;
} kc_post_arg;
static inline void kc_add_three_times(void *arg, float *blk, size_t ldy, int c0, int rows,
                                      size_t p0, size_t len) {
  kc_post_arg *a = arg;
  for (int r = 0; r < rows; r++)
    for (size_t i = 0; i < len; i++)
      a->z[(size_t)(c0 + r) * ldy + p0 + i] += 3.0f * blk[(size_t)r * ldy + i];
  const size_t n = (size_t)rows * len;
  __atomic_fetch_add(&a->calls, n, __ATOMIC_RELAXED);
}

#endif
