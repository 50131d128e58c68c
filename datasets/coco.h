/* COCO annotation files and detection results (JSON), with pycocotools' loading rules.
 *
 *   rv_coco *gt = NULL;
 *   rv_coco_results res = {0};
 *   rv_cocoeval *ev = NULL;
 *   if (rv_coco_load(&gt, "instances_val2017.json", 1, 0, ctx) == RV_OK &&
 *       rv_coco_load_results(&res, gt, "segm.json", RV_IOU_SEGM, RV_COCO_AREA_BOX, 0, ctx) == RV_OK &&
 *       rv_coco_evaluate(&ev, gt, &res, &params, ctx) == RV_OK) { ...rv_cocoeval_summarize... }
 *   rv_cocoeval_free(ev); rv_coco_results_free(&res); rv_coco_free(gt);
 *
 * Ground truth (COCO.annToRLE): polygon lists are rasterised per part (frPyObjects: a first
 * part of 4 numbers makes every part a box) and merged; uncompressed and compressed RLEs keep
 * their own size. The gt "area" is the file's value; "ignore" comes from "iscrowd".
 *
 * Results (COCO.loadRes): ids are index+1 in the file. The first result decides the branch:
 * when it has a non-empty "bbox", every result must have one, its area is w*h (also for segm
 * evaluation: that is what mmdet 2.x fed pycocotools, so the published mask APs use it) and a
 * missing segmentation becomes the box polygon. Otherwise the area is the mask pixel count and
 * a missing bbox is toBbox(mask). RV_COCO_AREA_MASK instead takes the mask pixel count
 * whenever a segmentation is present (a variant; not what published numbers used).
 * Results on images missing from the gt are an error (pycocotools asserts); results whose
 * category is not in the gt are kept but never evaluated (pycocotools drops them silently;
 * n_unknown_category counts them). An empty results list is accepted (pycocotools fails).
 *
 * Speed: files are mapped once and read with a streaming scanner (datasets/json_scan.h), no
 * JSON tree; list elements (annotations, results) are parsed and their masks decoded in
 * parallel (OpenMP), result masks into per-thread pool blocks (rv_coco_results.pool). A
 * 5000-image set with 35k polygon annotations and 491k mask results (136 MB) loads in ~0.25 s
 * + ~0.65 s of CPU time (bench/RESULTS_cocoeval.md).
 */
#ifndef RV_DATASETS_COCO_H
#define RV_DATASETS_COCO_H

#include "core/rv.h"
#include "eval/cocoeval.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int64_t id;
  int32_t width, height;
  char *file_name; /* may be NULL */
} rv_coco_image;

typedef struct {
  int64_t id;
  char *name; /* may be NULL */
} rv_coco_category;

typedef struct {
  char *path;
  rv_coco_image *images; size_t n_images;     /* file order */
  rv_coco_category *cats; size_t n_cats;      /* file order */
  rv_coco_obj *anns; size_t n_anns;           /* file order; segm filled when loaded with segm */
  int has_segm;
  int64_t *img_ids_sorted; size_t *img_idx_sorted; /* lookup by id */
  int64_t *cat_ids_sorted; size_t *cat_idx_sorted;
} rv_coco;

/* Load a COCO instances file. load_segm: convert every annotation's segmentation to an RLE
 * (needed for segm evaluation). threads: 0 = default. Errors name the file and the entry
 * (e.g. "gt.json: annotations[12]: 'bbox' must be 4 numbers"). */
rv_status rv_coco_load(rv_coco **out, const char *path, int load_segm, int threads, rv_ctx *ctx);
/* Same from a JSON text in memory (name is used in messages). */
rv_status rv_coco_load_mem(rv_coco **out, const char *json, size_t len, const char *name, int load_segm,
                           int threads, rv_ctx *ctx);
void rv_coco_free(rv_coco *c);
const rv_coco_image *rv_coco_find_image(const rv_coco *c, int64_t id);
const rv_coco_category *rv_coco_find_category(const rv_coco *c, int64_t id);

typedef enum { RV_COCO_AREA_BOX = 0, RV_COCO_AREA_MASK = 1 } rv_coco_area_mode;

typedef struct {
  rv_coco_obj *dets;
  size_t n;
  size_t n_unknown_category;
  void *pool; /* run lengths of the masks read from a file (their segm.borrowed is set) */
} rv_coco_results;

/* Load a results file (a JSON list of {image_id, category_id, score, bbox?, segmentation?})
 * and apply rv_coco_results_prepare. */
rv_status rv_coco_load_results(rv_coco_results *r, const rv_coco *gt, const char *path, rv_iou_type t,
                               rv_coco_area_mode mode, int threads, rv_ctx *ctx);
rv_status rv_coco_load_results_mem(rv_coco_results *r, const rv_coco *gt, const char *json, size_t len,
                                   const char *name, rv_iou_type t, rv_coco_area_mode mode, int threads,
                                   rv_ctx *ctx);
/* loadRes rules on detections filled in memory (image_id, category_id, score, has_bbox/bbox,
 * has_segm/segm): ids, areas, missing boxes or masks, image and mask size checks. The
 * segmentations must be in the gt image's size. `what` names the source in messages. */
rv_status rv_coco_results_prepare(rv_coco_results *r, const rv_coco *gt, rv_iou_type t,
                                  rv_coco_area_mode mode, const char *what, rv_ctx *ctx);
void rv_coco_results_free(rv_coco_results *r);
/* dst takes over src's mask memory: call it when detections read into src are moved into dst
 * (src's masks may borrow from it). */
void rv_coco_results_take_memory(rv_coco_results *dst, rv_coco_results *src);

/* Write detections as a COCO results JSON (the format mmdet's results2json writes; bbox and
 * score with 17 significant digits, segmentation as compressed RLE when with_segm), to a
 * temporary file renamed into place. */
rv_status rv_coco_results_write(const char *path, const rv_coco_obj *dets, size_t n, int with_segm,
                                rv_ctx *ctx);

/* Evaluate results against the gt with the gt's images and categories (evaluate + accumulate). */
rv_status rv_coco_evaluate(rv_cocoeval **ev, const rv_coco *gt, const rv_coco_results *res,
                           const rv_cocoeval_params *p, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
