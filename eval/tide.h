/* TIDE error analysis (Bolya et al., ECCV 2020) with the numbers of the reference code,
 * dbolya/tide 1.0.1 (tidecv): TIDE(pos_threshold=0.5, background_threshold=0.1), evaluate()
 * on COCO-style data, get_main_errors() / get_special_errors() and the run's AP.
 *
 *   rv_tide_params p = rv_tide_default_params();
 *   rv_tide_result r;
 *   if (rv_tide_run(&r, &p, RV_IOU_BBOX, img_ids, n_img, gt, n_gt, dt, n_dt, ctx) == RV_OK)
 *     printf("AP50 %.2f  Cls %.2f ... Miss %.2f\n", r.ap, r.main[RV_TIDE_CLS], r.main[RV_TIDE_MISS]);
 *   rv_tide_result_free(&r);
 *
 * What the reference does, and this code with it (quantify.py, ap.py, errors/):
 *   per image (in img_ids order): the detections sorted by score (stable over their order in
 *   dt) and cut to max_dets; IoU against every non-crowd gt of the image whatever the class
 *   (boxes: maskApi bbIou; masks: rleIou); greedy matching in score order, each detection taking
 *   the unused same-class gt of highest IoU when it is >= pos_thr (ties: the first gt); crowd gt
 *   are ignore regions: an unmatched detection of the region's class with crowd IoU (area of
 *   the intersection / area of the detection) > pos_thr is ignored (no AP point);
 *   every unmatched or ignored detection gets one error, tested in this order: Loc (best
 *   same-class IoU in [bg_thr, pos_thr]), Cls (best other-class IoU >= pos_thr), Dupe (best IoU
 *   with a used same-class gt >= pos_thr), Bkg (best IoU with any gt <= bg_thr; every
 *   detection of an image without gt), else Both; an unmatched gt that no Loc or Cls error
 *   points at is a Miss. Fixing Cls / Loc turns the highest-scoring such detection of each unused
 *   gt into a true positive (of the gt's class for Cls) and drops the others; fixing Dupe, Bkg,
 *   Both drops the detections; fixing Miss removes the gt. dAP = max(AP(fixed) - AP, 0).
 *   FalsePos: every true positive scored 1, every false positive 0; FalseNeg: gt count = true
 *   positives. AP per class: 101-point interpolation at recall x/100 (ap.py), 0 for a class
 *   without gt, averaged over the classes with a point or a gt. The order of the AP points
 *   (which decides ties of equal scores) follows the reference's insertion order.
 * All values in AP points (0-100) as TIDE prints them. Images run in parallel (OpenMP); the
 * result does not depend on the thread count. */
#ifndef RV_EVAL_TIDE_H
#define RV_EVAL_TIDE_H

#include "core/rv.h"
#include <ravlt/eval.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The main error types in TIDE's order (short names "Cls", "Loc", "Both", "Dupe", "Bkg",
 * "Miss"), then the special ones ("FalsePos", "FalseNeg"). */
enum { RV_TIDE_CLS = 0, RV_TIDE_LOC, RV_TIDE_BOTH, RV_TIDE_DUPE, RV_TIDE_BKG, RV_TIDE_MISS, RV_TIDE_N_MAIN };
enum { RV_TIDE_FALSE_POS = 0, RV_TIDE_FALSE_NEG, RV_TIDE_N_SPECIAL };
/* Per-object outcome (rv_tide_result dt_kind / gt_kind): an error type above, or: */
enum {
  RV_TIDE_NOT_EVALUATED = -1, /* dt past max_dets, an image not in img_ids, a crowd gt */
  RV_TIDE_TP = 10,            /* a matched detection / gt */
  RV_TIDE_FN_FIXABLE = 11     /* gt: unmatched, but a Cls or Loc error points at it (not a Miss) */
};

extern const char *const rv_tide_main_names[RV_TIDE_N_MAIN];
extern const char *const rv_tide_special_names[RV_TIDE_N_SPECIAL];

typedef struct {
  double pos_thr; /* 0.5 */
  double bg_thr;  /* 0.1 */
  int max_dets;   /* 100 (TIDE's COCO data) */
  int threads;    /* OpenMP threads, 0 = default */
} rv_tide_params;

rv_tide_params rv_tide_default_params(void);

typedef struct {
  double ap;                           /* TIDE's AP at pos_thr ("bbox AP @ 50"), NaN without classes */
  double main[RV_TIDE_N_MAIN];         /* dAP of each main error */
  double special[RV_TIDE_N_SPECIAL];   /* dAP FalsePos, FalseNeg */
  size_t counts[RV_TIDE_N_MAIN];       /* number of errors of each type */
  int8_t *dt_kind;                     /* n_dt: RV_TIDE_TP, an error type (ignored detections
                                          too) or RV_TIDE_NOT_EVALUATED */
  uint8_t *dt_ignored;                 /* n_dt: 1 = in a crowd region (no AP point) */
  int8_t *gt_kind;                     /* n_gt: RV_TIDE_TP, RV_TIDE_MISS, RV_TIDE_FN_FIXABLE or
                                          RV_TIDE_NOT_EVALUATED */
  size_t n_dt, n_gt;
} rv_tide_result;

/* img_ids: the images in the annotation file's order (TIDE walks them in that order);
 * gt / dt: the annotation file's objects and the results (bbox or segm filled for t). Objects
 * of other images are not evaluated. */
rv_status rv_tide_run(rv_tide_result *r, const rv_tide_params *p, rv_iou_type t, const int64_t *img_ids,
                      size_t n_img, const rv_coco_obj *gt, size_t n_gt, const rv_coco_obj *dt, size_t n_dt,
                      rv_ctx *ctx);
/* The same from IoU matrices built for gt / dt with max_dets = p->max_dets (eval/img_iou.h). */
struct rv_img_ious_s;
rv_status rv_tide_run_ious(rv_tide_result *r, const rv_tide_params *p, const struct rv_img_ious_s *m,
                           const rv_coco_obj *gt, size_t n_gt, const rv_coco_obj *dt, size_t n_dt, rv_ctx *ctx);
void rv_tide_result_free(rv_tide_result *r);

/* ap.py's APDataObject.get_ap: points (1 = true positive) in score order, num_gt gt;
 * 0 when num_gt is 0. In AP points. */
double rv_tide_class_ap(const uint8_t *is_true, size_t n, int64_t num_gt);

#ifdef __cplusplus
}
#endif
#endif
