/* mmseg 0.x semantic segmentation metrics (see segmetrics.h for the exact semantics). */
#include "eval/segmetrics.h"
#include "eval/cocoeval.h" /* rv_np_mean */

#include <math.h>
#include <stdlib.h>
#include <string.h>

rv_status rv_seg_areas_init(rv_seg_areas *a, int num_classes, rv_ctx *ctx) {
  memset(a, 0, sizeof *a);
  if (num_classes < 1 || num_classes > 65536)
    return rv_error(ctx, RV_ERR_ARG, "segmentation metrics: %d classes (1..65536)", num_classes);
  int64_t *buf = calloc((size_t)num_classes * 4, sizeof *buf);
  if (!buf) return rv_error(ctx, RV_ERR_NOMEM, "segmentation metrics: out of memory");
  a->num_classes = num_classes;
  a->intersect = buf;
  a->union_ = buf + num_classes;
  a->pred = buf + 2 * (size_t)num_classes;
  a->label = buf + 3 * (size_t)num_classes;
  return RV_OK;
}

void rv_seg_areas_free(rv_seg_areas *a) {
  if (!a) return;
  free(a->intersect);
  memset(a, 0, sizeof *a);
}

void rv_seg_areas_reset(rv_seg_areas *a) {
  memset(a->intersect, 0, sizeof(int64_t) * 4 * (size_t)a->num_classes);
}

void rv_seg_areas_merge(rv_seg_areas *dst, const rv_seg_areas *src) {
  RV_ASSERT(dst->num_classes == src->num_classes);
  for (size_t i = 0; i < 4 * (size_t)dst->num_classes; i++) dst->intersect[i] += src->intersect[i];
}

/* intersect_and_union: mask = label != ignore; histograms (range 0..C-1) of pred[mask],
 * label[mask] and of pred[mask] where pred == label. The union is pred + label - intersect,
 * additive over images, so it is derived from the totals. */
#define ADD_IMPL                                                             \
  const int64_t C = a->num_classes;                                          \
  for (size_t i = 0; i < n; i++) {                                           \
    int l = reduce_zero_label ? rv_seg_reduce_label(label[i]) : label[i];    \
    if (l == ignore_index) continue;                                         \
    int64_t p = (int64_t)pred[i];                                            \
    int pin = p >= 0 && p < C, lin = l < C;                                  \
    if (pin) a->pred[p]++;                                                   \
    if (lin) a->label[l]++;                                                  \
    if (pin && p == l) a->intersect[p]++;                                    \
  }                                                                          \
  for (int64_t k = 0; k < C; k++) a->union_[k] = a->pred[k] + a->label[k] - a->intersect[k];

void rv_seg_areas_add_u8(rv_seg_areas *a, const uint8_t *pred, const uint8_t *label, size_t n,
                         int reduce_zero_label, int ignore_index) {
  ADD_IMPL
}

void rv_seg_areas_add_i32(rv_seg_areas *a, const int32_t *pred, const uint8_t *label, size_t n,
                          int reduce_zero_label, int ignore_index) {
  ADD_IMPL
}
#undef ADD_IMPL

double rv_nanmean(const double *v, size_t n) {
  if (n == 0) return NAN;
  double *z = malloc(sizeof(double) * (n ? n : 1));
  if (!z) return NAN;
  size_t cnt = 0;
  for (size_t i = 0; i < n; i++) {
    z[i] = isnan(v[i]) ? 0.0 : v[i];
    cnt += !isnan(v[i]);
  }
  double tot = rv_np_sum(z, n);
  free(z);
  return cnt ? tot / (double)cnt : NAN;
}

double rv_mmseg_round(double x) {
  /* np.round(x * 100, 2) = rint(x * 100 * 100) / 100, then / 100 */
  double y = x * 100;
  return rint(y * 100.0) / 100.0 / 100.0;
}

rv_status rv_seg_metrics_compute(rv_seg_metrics *m, const rv_seg_areas *a, rv_ctx *ctx) {
  memset(m, 0, sizeof *m);
  size_t C = (size_t)a->num_classes;
  m->iou = malloc(sizeof(double) * C);
  m->acc = malloc(sizeof(double) * C);
  if (!m->iou || !m->acc) {
    rv_seg_metrics_free(m);
    return rv_error(ctx, RV_ERR_NOMEM, "segmentation metrics: out of memory");
  }
  m->num_classes = a->num_classes;
  int64_t si = 0, sl = 0;
  for (size_t k = 0; k < C; k++) {
    /* float64 divisions; 0/0 is NaN as in torch */
    m->iou[k] = a->union_[k] ? (double)a->intersect[k] / (double)a->union_[k] : NAN;
    m->acc[k] = a->label[k] ? (double)a->intersect[k] / (double)a->label[k] : NAN;
    si += a->intersect[k];
    sl += a->label[k];
  }
  m->aAcc = sl ? (double)si / (double)sl : NAN;
  m->mIoU = rv_nanmean(m->iou, C);
  m->mAcc = rv_nanmean(m->acc, C);
  return RV_OK;
}

void rv_seg_metrics_free(rv_seg_metrics *m) {
  if (!m) return;
  free(m->iou);
  free(m->acc);
  m->iou = m->acc = NULL;
}
