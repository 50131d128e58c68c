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
 *   // detection lists: each reference row matched to a computed one (rv_det_match_opts)
 *   rv_det_list r = {n_ref, ref_boxes, 5, ref_boxes + 4, 5, NULL, ref_labels, NULL};
 *   rv_det_list g = {det.n, det.bboxes, 4, det.scores, 1, det.labels, NULL, class_order};
 *   rv_det_match_opts o = {1e-4, 0.05, 0, 0, 1, 1, -1, -1};
 *   rv_det_match m = rv_match_detections(match, match_got, &r, &g, &o);
 *   // match[i]: the place in g of reference row i's match, or -1; m.matched, m.moved, ...
 *
 * NaN or Inf in either array make the error infinite (never a pass); a detection with a NaN
 * box or score matches nothing. Pure functions: no allocation (the caller gives the
 * matcher's arrays), no output.
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

/* A detection list as the matcher reads it. Place j of the list is row r = order ? order[j]
 * : j of the arrays: box boxes[r * box_stride + 0..3] (x1, y1, x2, y2), score
 * scores[r * score_stride] (scores may be NULL: not compared), label labels[r], or
 * (int)labels_f32[r] (labels stored as floats, as fixtures hold them); neither: no labels. */
typedef struct {
  int n;
  const float *boxes;
  int box_stride;
  const float *scores;
  int score_stride;
  const int *labels;
  const float *labels_f32;
  const int *order;
} rv_det_list;

/* When a computed detection matches a reference one, and where it is looked for. */
typedef struct {
  double score_tol;     /* |score - reference score| <= score_tol; < 0: scores not compared */
  double box_tol;       /* every coordinate within box_tol; < 0: not compared */
  double min_iou;       /* > 0: box IoU >= min_iou (rv_box_iou) */
  int iou_plus1;        /* that IoU with mmdet v1's +1 px widths */
  int same_label;       /* labels equal (where both lists have labels) */
  int same_place_first; /* the computed detection at the reference row's own place, when it
                         * matches, before any other */
  int window;           /* else the best match (the smallest box error, or the largest IoU;
                         * the first among equals) among the unmatched computed detections
                         * within window places of the reference row's; < 0: anywhere */
  double tie_tol;       /* >= 0: a computed detection at place k != i only when the reference
                         * scores at places i and k are within tie_tol (a near tie float32
                         * cannot order); < 0: no such condition */
} rv_det_match_opts;

typedef struct {
  int matched;          /* reference rows matched */
  int moved;            /* of those, matched at another place than their own */
  int unmatched_ref;    /* reference rows without a match */
  int unmatched_got;    /* computed rows without a match */
  double max_box_err;   /* over the matched pairs: the largest coordinate difference */
  double max_score_err; /* over the matched pairs (0 without scores) */
  double min_iou;       /* over the matched pairs (1 when none) */
} rv_det_match;

/* Greedy matching, reference rows in their list order: match[ref->n] receives for each
 * reference row the place in got of its match (-1: none), match_got[got->n] for each
 * computed place its reference row (-1: none). */
rv_det_match rv_match_detections(int *match, int *match_got, const rv_det_list *ref,
                                 const rv_det_list *got, const rv_det_match_opts *o);
/* Intersection over union of two x1, y1, x2, y2 boxes (plus1: widths x2 - x1 + 1); 0 when
 * they do not overlap or a coordinate is NaN. */
double rv_box_iou(const float *a, const float *b, int plus1);

#ifdef __cplusplus
}
#endif
#endif
