/* COCO results JSON as mmdet's CocoDataset.results2json writes it.
 *
 *   rv_det_json *r = rv_det_json_create(with_masks);
 *   rv_det_json_add(r, image_id, &det, order, cat_ids, ctx);   // per image
 *   rv_det_json_write(r, "results.bbox.json", "results.segm.json", ctx);
 *   rv_det_json_free(r);
 *
 * Entries follow mmdet: per image, classes in index order, detections of a class in NMS
 * order (`order` from rv_detections_class_order); bbox = [x1, y1, x2 - x1, y2 - y1] computed
 * in double from the float32 box (numpy .tolist()), score = float32 score as a double,
 * segmentation = {"size": [h, w], "counts": compressed RLE string} (pycocotools
 * encode of the Fortran-ordered mask). Numbers are printed as Python's repr prints them
 * (the shortest text that reads back to the same double), so files match mmdet's byte for
 * byte when the values are equal. Files are written to a temporary name and renamed.
 */
#ifndef RV_DATASETS_DET_JSON_H
#define RV_DATASETS_DET_JSON_H

#include "eval/rle.h"
#include "heads/det.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rv_det_json rv_det_json;

rv_det_json *rv_det_json_create(int with_masks);
void rv_det_json_free(rv_det_json *r);
/* cat_ids[label] is the category id of each class. order NULL: detection order. */
rv_status rv_det_json_add(rv_det_json *r, int64_t image_id, const rv_detections *det,
                              const int *order, const int *cat_ids, rv_ctx *ctx);
/* The same from arrays: n boxes [x1, y1, x2, y2], scores, labels and, when the writer has
 * masks, COCO RLEs (masks may be NULL: no segm entries) -- a tiled run's detections. */
rv_status rv_det_json_add_rle(rv_det_json *r, int64_t image_id, int n, const float *bboxes, const float *scores,
                              const int *labels, const rv_rle *masks, const int *order, const int *cat_ids,
                              rv_ctx *ctx);
size_t rv_det_json_count(const rv_det_json *r);
/* bbox_path: required; segm_path: NULL to skip (or when created without masks). */
/* The bbox (segm 0) or segm (1) results as one JSON array to an open stream (stdout). */
rv_status rv_det_json_fwrite(const rv_det_json *r, FILE *f, int segm, rv_ctx *ctx);
rv_status rv_det_json_write(const rv_det_json *r, const char *bbox_path,
                                const char *segm_path, rv_ctx *ctx);
/* Python repr of a double (shortest round-trip), into buf (>= 32 bytes). */
void rv_format_double_repr(char *buf, size_t size, double v);

#ifdef __cplusplus
}
#endif
#endif
