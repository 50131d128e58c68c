/* Semantic segmentation metrics exactly as mmsegmentation 0.x computes them
 * (core/evaluation/metrics.py intersect_and_union / eval_metrics, CustomDataset.evaluate).
 *
 *   rv_seg_areas acc;
 *   rv_seg_areas_init(&acc, 150, ctx);
 *   for each image:                                   // label: the raw annotation PNG
 *     rv_seg_areas_add_u8(&acc, pred, label, h * w, 1, 255);   // reduce_zero_label, ignore 255
 *   rv_seg_metrics m;
 *   rv_seg_metrics_compute(&m, &acc, ctx);            // m.aAcc, m.mIoU, m.mAcc, m.iou[k] (NaN = absent)
 *   rv_seg_metrics_free(&m); rv_seg_areas_free(&acc);
 *
 * Counts are int64 per class (intersection, union, prediction, label) and can be merged
 * across shards or threads (rv_seg_areas_merge). Semantics: with reduce_zero_label the label
 * becomes 0->255, then label-1 in uint8 (wrapping), then 254->255, so 0 and 255 are ignored
 * and k in 1..C is class k-1; pixels whose label equals ignore_index are dropped; values
 * outside 0..C-1 are not counted in a histogram (torch.histc range) but still take part in
 * the others. IoU = I/U, Acc = I/L (NaN for 0/0), aAcc = sum I / sum L, and the means are
 * np.nanmean over the C classes (numpy's pairwise sum; see cocoeval.h rv_np_mean).
 */
#ifndef RV_EVAL_SEGMETRICS_H
#define RV_EVAL_SEGMETRICS_H

#include "core/rv.h"
#include <ravlt/eval.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rv_seg_areas, rv_seg_metrics and rv_seg_areas_init / free / reset / merge / add_u8 /
 * add_i32, rv_seg_metrics_compute / free are public: <ravlt/eval.h>. */

/* The label after reduce_zero_label (uint8 wrap included). */
static inline uint8_t rv_seg_reduce_label(uint8_t v) {
  uint8_t x = v == 0 ? 255 : v;
  x = (uint8_t)(x - 1);
  return x == 254 ? 255 : x;
}

/* np.nanmean: NaNs count as 0 in the pairwise sum over all n, divided by the non-NaN count
 * (NaN when every entry is NaN). */
double rv_nanmean(const double *v, size_t n);
/* What mmseg's evaluate() reports: np.round(x * 100, 2) / 100. */
double rv_mmseg_round(double x);

#ifdef __cplusplus
}
#endif
#endif
