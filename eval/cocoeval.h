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

typedef enum { RV_IOU_BBOX = 0, RV_IOU_SEGM = 1 } rv_iou_type;

/* One ground truth annotation or one detection. */
typedef struct {
  int64_t id;          /* gt: annotation id (must be non-zero); dt: index+1 in the results */
  int64_t image_id, category_id;
  double bbox[4];      /* x, y, w, h (bbox evaluation) */
  double area;         /* gt: the file's "area"; dt: see datasets/coco.h (loadRes rules) */
  double score;        /* dt only */
  int iscrowd;         /* gt only */
  int has_bbox, has_segm;
  rv_rle segm;         /* segm evaluation: the mask (gt: polygons merged / RLE) */
} rv_coco_obj;

#define RV_COCO_MAX_IOU 32
#define RV_COCO_MAX_REC 1024
#define RV_COCO_MAX_DETS 8
#define RV_COCO_MAX_AREAS 8

typedef struct {
  rv_iou_type iou_type;
  int n_iou;
  double iou_thrs[RV_COCO_MAX_IOU];   /* np.linspace(.5, .95, 10) */
  int n_rec;
  double rec_thrs[RV_COCO_MAX_REC];   /* np.linspace(0, 1, 101) */
  int n_max_dets;
  int max_dets[RV_COCO_MAX_DETS];     /* ascending: [1, 10, 100] */
  int n_areas;
  double area_rng[RV_COCO_MAX_AREAS][2]; /* all [0,1e10], small [0,1024], medium [1024,9216], large [9216,1e10] */
  const char *area_lbl[RV_COCO_MAX_AREAS];
  int threads; /* OpenMP threads, 0 = default */
  int naive;   /* 1: accumulate with the literal reference code (tests compare the two) */
} rv_cocoeval_params;

/* pycocotools' Params (iouType bbox or segm). */
rv_cocoeval_params rv_cocoeval_default_params(rv_iou_type t);
/* mmdetection 2.x CocoDataset.evaluate: maxDets = proposal_nums = [100, 300, 1000]. */
void rv_cocoeval_params_mmdet(rv_cocoeval_params *p);
/* np.linspace(start, stop, num) bit for bit: k*step + start, last element = stop. */
void rv_linspace(double *out, double start, double stop, int num);
/* np.mean of a float64 vector bit for bit (pairwise sums in blocks of 8192). n == 0 -> NaN. */
double rv_np_mean(const double *v, size_t n);
/* np.sum of a float64 vector bit for bit (the numerator of rv_np_mean). */
double rv_np_sum(const double *v, size_t n);

typedef struct {
  const int64_t *img_ids; size_t n_imgs; /* any order; duplicates allowed (np.unique) */
  const int64_t *cat_ids; size_t n_cats;
  const rv_coco_obj *gt; size_t n_gt;    /* gt outside img_ids/cat_ids are skipped */
  const rv_coco_obj *dt; size_t n_dt;    /* dt outside img_ids/cat_ids are skipped */
} rv_cocoeval_input;

typedef struct rv_cocoeval rv_cocoeval;

/* evaluate(): per (image, category) IoUs and matching for every area range. The inputs must
 * stay valid until rv_cocoeval_accumulate returns. */
rv_status rv_cocoeval_evaluate(rv_cocoeval **out, const rv_cocoeval_params *p,
                               const rv_cocoeval_input *in, rv_ctx *ctx);
/* accumulate(): precision and scores [T][R][K][A][M], recall [T][K][A][M], -1 where undefined. */
rv_status rv_cocoeval_accumulate(rv_cocoeval *ev, rv_ctx *ctx);
/* summarize(): the 12 stats of _summarizeDets. */
void rv_cocoeval_summarize(const rv_cocoeval *ev, double stats[12]);
/* pycocotools' 12 printed lines (each ending in '\n'); returns the length written (or needed). */
int rv_cocoeval_summary_text(const rv_cocoeval *ev, char *buf, size_t size);
/* Sorted unique category ids (K of them) and their AP: mean(precision[:, :, k, 0, -1] > -1),
 * -1 when the category has no gt (mmdet's classwise table and the fixtures' definition). */
size_t rv_cocoeval_num_cats(const rv_cocoeval *ev);
int64_t rv_cocoeval_cat_id(const rv_cocoeval *ev, size_t k);
double rv_cocoeval_category_ap(const rv_cocoeval *ev, size_t k);
/* Accumulated arrays (NULL before accumulate). */
const double *rv_cocoeval_precision(const rv_cocoeval *ev);
const double *rv_cocoeval_recall(const rv_cocoeval *ev);
/* scores [T][R][K][A][M] (pycocotools' eval['scores']): the detection score at the position
 * each recall threshold reads, 0 past the end, -1 where undefined. */
const double *rv_cocoeval_scores(const rv_cocoeval *ev);
const rv_cocoeval_params *rv_cocoeval_get_params(const rv_cocoeval *ev);
void rv_cocoeval_free(rv_cocoeval *ev);

#ifdef __cplusplus
}
#endif
#endif
