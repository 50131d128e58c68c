/* Comparison helpers of `ravlt check-fixture` (contract in apps/check_fixture.h). */
#include "apps/check_fixture.h"
#include "eval/compare.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void shape_str(char *buf, size_t n, const rv_wtensor *t) {
  size_t o = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < t->ndim && o < n; i++)
    o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  if (o < n) snprintf(buf + o, n - o, "]");
}

static int verdict(rv_check_state *s, const char *label, const char *shape, const float *got,
                   const float *ref, size_t n, double tol) {
  rv_cmp c = rv_compare_f32(got, ref, n);
  double ma = c.max_abs, scale = c.scale, rel = c.rel;
  size_t wi = c.worst;
  int pass = rel <= tol;
  s->checked++;
  if (!pass) s->failures++;
  printf("  %s %s: max_abs %.3g max_rel %.3g scale %.3g %s\n", label, shape, ma, rel, scale,
         pass ? "PASS" : "FAIL");
  if (!pass && s->verbose && n > 0)
    printf("    worst at flat index %zu: got %.9g ref %.9g (tolerance %.3g)\n", wi,
           (double)got[wi], (double)ref[wi], tol * scale);
  fflush(stdout);
  return pass;
}

int rv_check_tensor(rv_check_state *s, const char *label, const float *got, size_t n,
                    const char *ref_name, double tol) {
  const rv_wtensor *t = s->io ? rv_weights_find(s->io, ref_name) : NULL;
  if (!t) {
    s->checked++;
    s->failures++;
    printf("  %s: reference '%s' missing from io.safetensors FAIL\n", label, ref_name);
    return 0;
  }
  char shape[128];
  shape_str(shape, sizeof shape, t);
  size_t numel = rv_wtensor_numel(t);
  if (numel != n) {
    s->checked++;
    s->failures++;
    printf("  %s %s: %zu values computed, reference has %zu FAIL\n", label, shape, n, numel);
    return 0;
  }
  float *ref = malloc(sizeof(float) * (numel ? numel : 1));
  if (!ref) {
    s->checked++;
    s->failures++;
    printf("  %s: out of memory FAIL\n", label);
    return 0;
  }
  rv_wtensor_to_f32(t, ref);
  int pass = verdict(s, label, shape, got, ref, n, tol);
  free(ref);
  return pass;
}

int rv_check_values(rv_check_state *s, const char *label, const float *got, const float *ref,
                    size_t n, double tol) {
  char shape[48];
  snprintf(shape, sizeof shape, "[%zu]", n);
  return verdict(s, label, shape, got, ref, n, tol);
}

int rv_check_report(rv_check_state *s, const char *label, int pass, const char *fmt, ...) {
  s->checked++;
  if (!pass) s->failures++;
  printf("  %s: ", label);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf(" %s\n", pass ? "PASS" : "FAIL");
  fflush(stdout);
  return pass;
}

float *rv_check_load_f32(rv_check_state *s, const char *name, size_t *numel) {
  const rv_wtensor *t = s->io ? rv_weights_find(s->io, name) : NULL;
  if (!t) return NULL;
  size_t n = rv_wtensor_numel(t);
  float *p = malloc(sizeof(float) * (n ? n : 1));
  if (!p) return NULL;
  rv_wtensor_to_f32(t, p);
  if (numel) *numel = n;
  return p;
}
