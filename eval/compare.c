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

double rv_box_iou(const float *a, const float *b, int plus1) {
  const double e = plus1 ? 1.0 : 0.0;
  double ix = fmin(a[2], b[2]) - fmax(a[0], b[0]) + e, iy = fmin(a[3], b[3]) - fmax(a[1], b[1]) + e;
  if (!(ix > 0 && iy > 0)) return 0;
  double in = ix * iy;
  double ua = ((double)a[2] - a[0] + e) * ((double)a[3] - a[1] + e) +
              ((double)b[2] - b[0] + e) * ((double)b[3] - b[1] + e) - in;
  return ua > 0 ? in / ua : 0;
}

static int place_row(const rv_det_list *l, int j) { return l->order ? l->order[j] : j; }
static const float *box_at(const rv_det_list *l, int j) {
  return l->boxes + (size_t)place_row(l, j) * (size_t)l->box_stride;
}
static double score_at(const rv_det_list *l, int j) {
  return l->scores[(size_t)place_row(l, j) * (size_t)l->score_stride];
}
static int has_labels(const rv_det_list *l) { return l->labels || l->labels_f32; }
static int label_at(const rv_det_list *l, int j) {
  int r = place_row(l, j);
  return l->labels ? l->labels[r] : (int)l->labels_f32[r];
}

/* 1 when got's place j matches ref's place i; *cost: the box error, or 1 - IoU. */
static int pair_ok(const rv_det_list *ref, int i, const rv_det_list *got, int j,
                   const rv_det_match_opts *o, double *cost) {
  if (o->same_label && has_labels(ref) && has_labels(got) && label_at(ref, i) != label_at(got, j))
    return 0;
  if (o->score_tol >= 0 && ref->scores && got->scores &&
      !(fabs(score_at(got, j) - score_at(ref, i)) <= o->score_tol))
    return 0;
  const float *a = box_at(ref, i), *b = box_at(got, j);
  double e = 0;
  for (int c = 0; c < 4; c++) {
    double d = fabs((double)b[c] - a[c]);
    if (d > e || isnan(d)) e = d; /* NaN: never within a tolerance */
  }
  if (o->box_tol >= 0 && !(e <= o->box_tol)) return 0;
  if (o->min_iou > 0) {
    double v = rv_box_iou(a, b, o->iou_plus1);
    if (!(v >= o->min_iou)) return 0;
    *cost = 1.0 - v;
  } else {
    *cost = e;
  }
  return 1;
}

rv_det_match rv_match_detections(int *match, int *match_got, const rv_det_list *ref,
                                 const rv_det_list *got, const rv_det_match_opts *o) {
  rv_det_match m = {0, 0, 0, 0, 0, 0, 1};
  for (int j = 0; j < got->n; j++) match_got[j] = -1;
  for (int i = 0; i < ref->n; i++) {
    int best = -1;
    double c, best_c = 0;
    if (o->same_place_first && i < got->n && match_got[i] < 0 && pair_ok(ref, i, got, i, o, &c)) {
      best = i;
    } else {
      int lo = o->window < 0 ? 0 : i - o->window, hi = o->window < 0 ? got->n - 1 : i + o->window;
      if (lo < 0) lo = 0;
      if (hi > got->n - 1) hi = got->n - 1;
      for (int k = lo; k <= hi; k++) {
        if (match_got[k] >= 0) continue;
        if (o->tie_tol >= 0 && k != i &&
            (k >= ref->n || !ref->scores || !(fabs(score_at(ref, k) - score_at(ref, i)) <= o->tie_tol)))
          continue;
        if (pair_ok(ref, i, got, k, o, &c) && (best < 0 || c < best_c)) best = k, best_c = c;
      }
    }
    match[i] = best;
    if (best < 0) {
      m.unmatched_ref++;
      continue;
    }
    match_got[best] = i;
    m.matched++;
    m.moved += best != i;
    const float *a = box_at(ref, i), *b = box_at(got, best);
    for (int k = 0; k < 4; k++) m.max_box_err = fmax(m.max_box_err, fabs((double)b[k] - a[k]));
    if (ref->scores && got->scores)
      m.max_score_err = fmax(m.max_score_err, fabs(score_at(got, best) - score_at(ref, i)));
    m.min_iou = fmin(m.min_iou, rv_box_iou(a, b, o->iou_plus1));
  }
  m.unmatched_got = got->n - m.matched;
  return m;
}
