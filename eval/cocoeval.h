/* COCO detection evaluation (box and mask AP/AR) with the numbers pycocotools' COCOeval gives.
 *
 *   rv_cocoeval_params p = rv_cocoeval_default_params(RV_IOU_SEGM);
 *   rv_cocoeval_input in = {img_ids, n_img, cat_ids, n_cat, gts, n_gt, dts, n_dt};
 *   rv_cocoeval *ev = NULL;
 *   if (rv_cocoeval_evaluate(&ev, &p, &in, ctx) == RV_OK &&
 *       rv_cocoeval_accumulate(ev, ctx) == RV_OK) {
 *     double stats[12];
 *     rv_cocoeval_summarize(ev, stats);        // pycocotools' 12 numbers (-1 = undefined)
 *     char text[2048];
 *     rv_cocoeval_summary_text(ev, text, sizeof text);
 *   }
 *   rv_cocoeval_free(ev);
 *
 * Inputs are plain arrays of rv_coco_obj (datasets/coco.h fills them from JSON with the
 * loadRes rules; a detector can fill them directly). The evaluation follows cocoeval.py
 * step by step: stable score sorts, per-image-and-category maxDets, gt ignore flags from
 * iscrowd and the area ranges (inclusive bounds), greedy matching with crowd gt, linspace
 * thresholds, the precision envelope and searchsorted on recall, -1 for undefined cells and
 * numpy's blocked pairwise mean. evaluateImg runs in parallel over (category, image) pairs and
 * accumulate over categories (OpenMP); results do not depend on the thread count.
 */
#ifndef RV_EVAL_COCOEVAL_H
#define RV_EVAL_COCOEVAL_H

#include "core/rv.h"
#include "eval/rle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* rv_iou_type, rv_coco_obj, rv_cocoeval_params, rv_cocoeval_input, rv_cocoeval and
 * rv_cocoeval_default_params / params_mmdet / evaluate / accumulate / summarize /
 * summary_text / num_cats / cat_id / category_ap / precision / recall / scores / get_params /
 * free
 * are public: <ravlt/eval.h>. */

/* evalImgs and ious (pycocotools' per-image records), one (image, category) pair at a time:
 * the pairs with a gt or a detection, category-major, images in id order. The evaluation's
 * inputs must still be valid. */
typedef struct {
  int64_t *dt_ids;     /* D: score order (the kept maxDets[-1]) */
  double *dt_scores;   /* D */
  int64_t *gt_ids;     /* G: file order (the columns of ious) */
  double *ious;        /* D x G: IoU / OKS (valid when has_ious) */
  int64_t *gt_order;   /* A x G: per area range, the gt (index into gt_ids) at each position, ignored last */
  uint8_t *gt_ignore;  /* A x G, in that order */
  int64_t *dt_matches; /* A x T x D: the matched gt id, or 0 */
  int64_t *gt_matches; /* A x T x G (positions as gt_order): the matched dt id, or 0 */
  uint8_t *dt_ignore;  /* A x T x D */
  int has_ious;        /* 0 where pycocotools' ious is [] (no dt or no gt) */
} rv_cocoeval_detail;
size_t rv_cocoeval_num_pairs(const rv_cocoeval *ev);
/* Pair q: index of its image (into the sorted unique img_ids) and category, D and G. */
void rv_cocoeval_pair_info(const rv_cocoeval *ev, size_t q, size_t *img_idx, size_t *cat_idx, size_t *n_dt,
                           size_t *n_gt);
size_t rv_cocoeval_num_imgs(const rv_cocoeval *ev);
int64_t rv_cocoeval_img_id(const rv_cocoeval *ev, size_t i);
/* Recomputes pair q (evaluateImg for every area range) into det's arrays (sized by pair_info). */
rv_status rv_cocoeval_pair_detail(const rv_cocoeval *ev, size_t q, rv_cocoeval_detail *det, rv_ctx *ctx);

/* np.linspace(start, stop, num) bit for bit: k*step + start, last element = stop. */
void rv_linspace(double *out, double start, double stop, int num);
/* np.mean of a float64 vector bit for bit (pairwise sums in blocks of 8192). n == 0 -> NaN. */
double rv_np_mean(const double *v, size_t n);
/* np.sum of a float64 vector bit for bit (the numerator of rv_np_mean). */
double rv_np_sum(const double *v, size_t n);

/* The matching of category k (index into the sorted category ids) at area range a and IoU
 * threshold t for maxDets max_det: the detections of every image (image order, each image's by
 * score, at most max_det), their scores and states (1 true positive, 0 false positive,
 * 2 ignored) into caller arrays (NULL: not written); *npig (may be NULL): the non-ignored gt.
 * Returns the number of detections (with max_det = INT_MAX, the capacity to allocate). After
 * rv_cocoeval_evaluate. */
size_t rv_cocoeval_cat_dets(const rv_cocoeval *ev, size_t k, int a, int t, int max_det, double *score, uint8_t *state,
                            int64_t *npig);

#ifdef __cplusplus
}
#endif
#endif
