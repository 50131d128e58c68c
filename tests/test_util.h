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
#include "core/ops.h"

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
/* max |a-b| */
static inline double max_abs_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (d > m || d != d) m = d != d ? INFINITY : d;
  }
  return m;
}
static inline double max_abs(const float *a, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) if (fabs(a[i]) > m) m = fabs(a[i]);
  return m;
}

/* Whole file as a NUL-terminated string (malloc'd), NULL if unreadable. */
static inline char *test_read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
  if (b) b[n] = 0;
  fclose(f);
  return b;
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
