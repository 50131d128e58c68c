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

/* rv_coco_image, rv_coco_category, rv_coco, rv_coco_area_mode, rv_coco_results and
 * rv_coco_load / load_mem / free / find_image / find_category / load_results /
 * load_results_mem / results_prepare / results_free / results_write / evaluate are public:
 * <ravlt/eval.h>. */

/* A load without masks that keeps each annotation's segmentation text (a copy), so that
 * rv_coco_add_masks can rasterise them later without reading the file again (COCO(gt) and
 * then a segm loadRes in the Python package). The rv_coco is the one rv_coco_load(.., 0, ..)
 * gives. */
rv_status rv_coco_load_lazy(rv_coco **out, const char *path, int threads, rv_ctx *ctx);
rv_status rv_coco_load_mem_lazy(rv_coco **out, const char *json, size_t len, const char *name, int threads,
                                rv_ctx *ctx);
/* The masks of a lazy load (the rv_coco then equals rv_coco_load(.., 1, ..)'s, with the same
 * errors); RV_OK at once when c has its masks. On an error c is left as it was. */
rv_status rv_coco_add_masks(rv_coco *c, int threads, rv_ctx *ctx);

/* dst takes over src's mask memory: call it when detections read into src are moved into dst
 * (src's masks may borrow from it). */
void rv_coco_results_take_memory(rv_coco_results *dst, rv_coco_results *src);

#ifdef __cplusplus
}
#endif
#endif
