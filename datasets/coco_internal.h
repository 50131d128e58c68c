/* Internal to datasets/coco*.c: shared between the annotation loader and the fast results
 * reader. Not a public header. */
#ifndef RV_DATASETS_COCO_INTERNAL_H
#define RV_DATASETS_COCO_INTERNAL_H

#include "datasets/coco.h"

struct cJSON;
/* COCO.annToRLE on a parsed "segmentation" value (polygons, uncompressed or compressed RLE). */
rv_status rv_coco_seg_to_rle(rv_rle *out, const struct cJSON *seg, uint32_t h, uint32_t w, rv_ctx *ctx);
/* Parse a results list into r->dets (no loadRes rules yet). Masks are decoded when the
 * evaluation needs them (segm, mask area mode, or a first result without a bbox). */
rv_status rv_coco_parse_results(rv_coco_results *r, const rv_coco *gt, const char *json, size_t len,
                                const char *name, rv_iou_type t, rv_coco_area_mode mode, int threads,
                                rv_ctx *ctx);

#endif
