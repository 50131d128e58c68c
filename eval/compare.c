/* The fixture comparer. See compare.h. */
#include "eval/compare.h"

#include <math.h>

rv_cmp rv_compare_f32(const float *got, const float *ref, size_t n) {
  rv_cmp c = {0, 0, 1, 0, 0};
  for (size_t i = 0; i < n; i++) {
    double r = ref[i], d = fabs((double)got[i] - r);
    if (!isfinite(d)) d = INFINITY;
    if (d > c.max_abs) {
      c.max_abs = d;
      c.worst = i;
    }
    if (fabs(r) > c.max_ref) c.max_ref = fabs(r);
  }
  c.scale = c.max_ref > 1.0 ? c.max_ref : 1.0;
  c.rel = c.max_abs / c.scale;
  return c;
}

rv_cmp rv_compare_f32_mixed(const float *got, const float *ref, size_t n, double atol, double rtol) {
  rv_cmp c = {0, 0, 1, 0, 0};
  for (size_t i = 0; i < n; i++) {
    double r = ref[i], d = fabs((double)got[i] - r);
    double q = d / (atol + rtol * fabs(r));
    if (!isfinite(d)) d = q = INFINITY;
    if (q > c.rel) {
      c.rel = q;
      c.worst = i;
    }
    if (d > c.max_abs) c.max_abs = d;
    if (fabs(r) > c.max_ref) c.max_ref = fabs(r);
  }
  return c;
}

rv_label_cmp rv_compare_labels(const int32_t *got, const float *ref, const float *margin, double thr,
                               size_t n) {
  rv_label_cmp c = {0, 0, 0, 0, 1.0f};
  for (size_t i = 0; i < n; i++) {
    int differ = got[i] != (int32_t)ref[i];
    int above = !margin || margin[i] > thr;
    if (margin && margin[i] < c.min_margin) c.min_margin = margin[i];
    c.differ += differ;
    c.bad += differ && above;
    c.counted += above;
    c.low += !above;
  }
  return c;
}
