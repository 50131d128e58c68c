/* Helpers shared by the cmocka tests. */
#ifndef RV_TESTS_TEST_UTIL_H
#define RV_TESTS_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kernels/ops.h"
#include "formats/weights.h"
#include "eval/compare.h"

/* Every test runs with the OpenBLAS kernels the CPU supports, as the CLI does (rv_blas_init
 * leaves a platform- or user-set OPENBLAS_CORETYPE alone). */
__attribute__((constructor)) static void rv_test_blas_init(void) { (void)rv_blas_init(); }

/* Path under the golden fixtures (RV_FIXTURES, tests/fixtures by default); returns a static buffer per call slot. */
static inline const char *fixture_path(const char *rel) {
  static char buf[8][1024];
  static int slot;
  slot = (slot + 1) & 7;
  snprintf(buf[slot], sizeof buf[slot], "%s/%s", RV_FIXTURES, rel);
  return buf[slot];
}
static inline const char *data_path(const char *rel) {
  static char buf[8][1024];
  static int slot;
  slot = (slot + 1) & 7;
  snprintf(buf[slot], sizeof buf[slot], "%s/%s", RV_TEST_DATA, rel);
  return buf[slot];
}
static inline int path_exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}
/* Deterministic pseudo-random floats in [-1, 1). */
static inline float test_rand(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((*s >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}
static inline void fill_rand(float *x, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) x[i] = test_rand(&seed);
}
/* max |a-b| (INFINITY where a difference is not finite): the comparer's (eval/compare.h) */
static inline double max_abs_diff(const float *a, const float *b, size_t n) {
  return rv_compare_f32(a, b, n).max_abs;
}
static inline double max_abs(const float *a, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) if (fabs(a[i]) > m) m = fabs(a[i]);
  return m;
}

/* Whole file as a NUL-terminated string (malloc'd), NULL if unreadable; *len (may be NULL)
 * its size. The one file reader of the tests. */
static inline char *test_read_file(const char *path, size_t *len) {
  if (len) *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
  if (b) b[n] = 0;
  fclose(f);
  if (b && len) *len = (size_t)n;
  return b;
}
static inline char *test_read_text(const char *path) { return test_read_file(path, NULL); }

/* ---- fixture comparisons: the library's comparer (eval/compare.h), as check-fixture ---- */

/* max|got-ref| / max(1, max|ref|) (check-fixture's rule; NaN/Inf: infinite). */
static inline double test_rel_err(const float *got, const float *ref, size_t n) {
  return rv_compare_f32(got, ref, n).rel;
}
/* The io tensor `name` as float32 (malloc'd, one spare float; free with free()), NULL if
 * absent; t (may be NULL) views it as NCHW (shape right-aligned, 1s in front). */
static inline float *test_io_f32(const rv_weights *io, const char *name, rv_tensor *t) {
  const rv_wtensor *w = rv_weights_find(io, name);
  if (t) memset(t, 0, sizeof *t);
  if (!w) return NULL;
  float *d = malloc((rv_wtensor_numel(w) + 1) * sizeof(float));
  assert_non_null(d);
  rv_wtensor_to_f32(w, d);
  if (t) {
    int s[4] = {1, 1, 1, 1};
    for (int i = 0; i < w->ndim && i < 4; i++) s[4 - w->ndim + i] = (int)w->shape[i];
    *t = (rv_tensor){d, s[0], s[1], s[2], s[3]};
  }
  return d;
}
/* got (n floats) within tol of the io tensor `name` by test_rel_err; prints the figure. */
static inline void test_expect_close(const char *what, const float *got, const rv_weights *io,
                                     const char *name, size_t n, double tol) {
  rv_tensor t;
  float *ref = test_io_f32(io, name, &t);
  if (!ref) print_error("fixture tensor '%s' missing\n", name);
  assert_non_null(ref);
  assert_int_equal(rv_tensor_numel(t), n);
  double e = test_rel_err(got, ref, n);
  printf("  %-16s %-14s rel err %.3g (tol %.0e)\n", what, name, e, tol);
  assert_true(e <= tol);
  free(ref);
}

/* Run a shell command (printf-style); its exit status, or -1 if it did not exit. */
static inline int test_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int test_run(const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

#endif
