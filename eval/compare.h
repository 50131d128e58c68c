/* The fixture comparer: the one rule set `ravlt check-fixture` (apps/check_*.c) and the
 * parity tests (tests/) measure computed arrays against stored references with.
 *
 *   rv_cmp c = rv_compare_f32(got, ref, n);
 *   if (c.rel > 1e-4) ... c.max_abs, c.scale, c.worst (flat index of the largest error) ...
 *   rv_cmp m = rv_compare_f32_mixed(got, ref, n, 2e-4, 1e-3);   // |err| <= atol + rtol|ref|
 *   if (m.rel > 1.0) ...
 *   rv_label_cmp l = rv_compare_labels(got, ref, margin, 1e-3, n); // label maps
 *   if (l.bad) ... (labels that differ where the reference's top-1/top-2 margin > 1e-3) ...
 *
 * NaN or Inf in either array make the error infinite (never a pass). Pure functions: no
 * allocation, no output.
 */
#ifndef RV_EVAL_COMPARE_H
#define RV_EVAL_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  double max_abs; /* max |got - ref| (INFINITY when some difference is not finite) */
  double max_ref; /* max |ref| */
  double scale;   /* rv_compare_f32: max(1, max|ref|); mixed: unused (1) */
  double rel;     /* rv_compare_f32: max_abs / scale; mixed: max |err| / (atol + rtol|ref|) */
  size_t worst;   /* flat index where the error (the rule's measure) is largest */
} rv_cmp;

/* Scale-relative rule: rel = max|got - ref| / max(1, max|ref|) (pass: rel <= tol). */
rv_cmp rv_compare_f32(const float *got, const float *ref, size_t n);
/* Element-wise mixed rule: rel = max |got - ref| / (atol + rtol |ref|) (pass: rel <= 1). */
rv_cmp rv_compare_f32_mixed(const float *got, const float *ref, size_t n, double atol, double rtol);
typedef struct {
  size_t differ;    /* positions where got != ref */
  size_t bad;       /* of those, where the margin is above the threshold (or no margins) */
  size_t counted;   /* positions whose margin is above the threshold (n without margins) */
  size_t low;       /* positions whose margin is at or below it */
  float min_margin; /* the smallest margin (1 without margins) */
} rv_label_cmp;
/* Label maps: got (int32) against ref (class indices stored as floats, as fixtures hold them);
 * margin (may be NULL): the reference's top-1/top-2 probability margin per position; a
 * differing label counts as bad only where margin > thr (a near tie may flip). */
rv_label_cmp rv_compare_labels(const int32_t *got, const float *ref, const float *margin, double thr,
                               size_t n);

#ifdef __cplusplus
}
#endif
#endif
