/* Confusion matrices of detections and of semantic segmentation.
 *
 * Detection, as mmdetection 2.x tools/analysis_tools/confusion_matrix.py counts it
 * (analyze_per_img_dets, no extra NMS), in double precision:
 *   rows = ground truth, columns = prediction, K categories in the caller's order, then
 *   "background" (index K). Per image, against its non-crowd gt of the K categories: a
 *   detection with score >= score_thr adds 1 to [gt, det] for every gt it overlaps with
 *   IoU >= iou_thr (boxes x1y1x2y2 without +1, IoU = overlap / max(union, 1e-6); masks:
 *   pycocotools' IoU), and to [background, det] when it overlaps none; a gt that no detection
 *   of its own category overlaps adds 1 to [gt, background].
 *
 *   int64_t *counts = calloc((K + 1) * (K + 1), sizeof *counts);
 *   rv_det_confusion_params p = rv_det_confusion_default_params();
 *   rv_det_confusion(counts, cat_ids, K, RV_IOU_BBOX, img_ids, n_img, gt, n_gt, dt, n_dt, &p,
 *                    NULL, ctx);
 *
 * Semantic segmentation, as mmsegmentation 0.x tools/confusion_matrix.py: rows = label,
 * columns = prediction, C x C; ignored labels (ignore_index, and 0 with reduce_zero_label, where
 * label k is class k-1) and labels >= C are left out, and so are prediction pixels without a
 * class (outside 0..C-1). */
#ifndef RV_EVAL_CONFUSION_H
#define RV_EVAL_CONFUSION_H

#include "core/rv.h"
#include <ravlt/eval.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  double score_thr; /* 0.3 */
  double iou_thr;   /* 0.5 */
  int threads;      /* OpenMP threads, 0 = default */
} rv_det_confusion_params;

rv_det_confusion_params rv_det_confusion_default_params(void);

/* What each object became (optional outputs of rv_det_confusion). */
typedef struct {
  uint8_t *dt_out;  /* n_dt: 0 not counted (score below, other image or category), 1 true positive
                       (overlaps a gt of its category), 2 false positive (a confusion or background) */
  uint8_t *gt_out;  /* n_gt: 0 not counted (crowd, ...), 1 found, 2 missed ([gt, background]) */
  int64_t *img_fp;  /* n_img: false positives (dt_out == 2) of each image */
  int64_t *img_fn;  /* n_img: missed gt of each image */
} rv_det_confusion_detail;

/* counts: (K+1) x (K+1), zeroed by the caller (counts are added). detail may be NULL; its
 * arrays are caller memory of the sizes above (any may be NULL). */
rv_status rv_det_confusion(int64_t *counts, const int64_t *cat_ids, size_t K, rv_iou_type t, const int64_t *img_ids,
                           size_t n_img, const rv_coco_obj *gt, size_t n_gt, const rv_coco_obj *dt, size_t n_dt,
                           const rv_det_confusion_params *p, rv_det_confusion_detail *detail, rv_ctx *ctx);

/* The same from IoU matrices (eval/img_iou.h) built for gt / dt with min_score <= score_thr
 * (their mask IoUs are used for segm; boxes take rv_det_box_iou). The detail's per-image arrays
 * follow the matrices' image order. */
struct rv_img_ious_s;
rv_status rv_det_confusion_ious(int64_t *counts, const int64_t *cat_ids, size_t K, const struct rv_img_ious_s *m,
                                const rv_coco_obj *gt, size_t n_gt, const rv_coco_obj *dt, size_t n_dt,
                                const rv_det_confusion_params *p, rv_det_confusion_detail *detail, rv_ctx *ctx);

/* mmdet's bbox_overlaps for one pair of [x, y, w, h] boxes (as x1 y1 x1+w y1+h), double. */
double rv_det_box_iou(const double a[4], const double b[4]);

/* One label map of n pixels into counts (C x C, added). pred: class = value - pred_offset
 * (pred_offset 1 for the annotation convention `ravlt segment` writes, 0 for class indices).
 * Returns the image's mIoU (mean over the classes with a non-empty union of
 * intersection / union, mmseg's metric on one image), NaN when no pixel counts. */
double rv_seg_confusion_add_u8(int64_t *counts, int C, const uint8_t *pred, int pred_offset, const uint8_t *label,
                               size_t n, int reduce_zero_label, int ignore_index);
double rv_seg_confusion_add_i32(int64_t *counts, int C, const int32_t *pred, const uint8_t *label, size_t n,
                                int reduce_zero_label, int ignore_index);

#ifdef __cplusplus
}
#endif
#endif
