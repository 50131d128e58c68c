/* Per-image IoU matrices of detections against every gt of the image, whatever the category
 * (what TIDE and the confusion matrix need, unlike COCOeval's per-category ones), computed once
 * and shared by eval/tide.c and eval/confusion.c.
 *
 *   rv_img_ious m;
 *   rv_img_ious_build(&m, RV_IOU_SEGM, img_ids, n_img, gt, n_gt, dt, n_dt, 100, 0.3, 0, ctx);
 *   ... rv_tide_run_ious(&r, &p, &m, ...); rv_det_confusion_ious(..., &m, ...);
 *   rv_img_ious_free(&m);
 *
 * Per image i (img_ids order; an id repeated counts once, objects of other images are left out):
 *   gt  g_idx[g_off[i] .. g_off[i+1]): its gt in file order;
 *   dt  d_idx[d_off[i] .. d_off[i+1]): its detections sorted by score, descending, ties in file
 *       order (a stable sort); the first rows[i] of them have IoUs: as many as max_dets, and more
 *       when more have a score >= min_score (so every detection at or above min_score has them);
 *   iou[iou_off[i] + r * G + c] for row r and gt column c (G = g_off[i+1] - g_off[i]):
 *       pycocotools' iou() (boxes: bbIou on [x, y, w, h]; masks: rleIou), with the crowd rule
 *       (intersection / detection area) in the columns of crowd gt. */
#ifndef RV_EVAL_IMG_IOU_H
#define RV_EVAL_IMG_IOU_H

#include "core/rv.h"
#include <ravlt/eval.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rv_img_ious_s {
  rv_iou_type t;
  size_t n_img;
  size_t *g_off, *g_idx; /* n_img + 1 offsets; gt indices */
  size_t *d_off, *d_idx; /* n_img + 1 offsets; detection indices, by score */
  size_t *rows;          /* n_img: detections with IoUs (a prefix of each image's d_idx) */
  size_t *iou_off;       /* n_img + 1 */
  double *iou;
  long *img_of_gt, *img_of_dt; /* n_gt / n_dt: the image's position, -1 when not one of img_ids */
} rv_img_ious;

rv_status rv_img_ious_build(rv_img_ious *m, rv_iou_type t, const int64_t *img_ids, size_t n_img, const rv_coco_obj *gt,
                            size_t n_gt, const rv_coco_obj *dt, size_t n_dt, int max_dets, double min_score, int threads,
                            rv_ctx *ctx);
void rv_img_ious_free(rv_img_ious *m);

#ifdef __cplusplus
}
#endif
#endif
