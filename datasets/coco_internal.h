/* Internal to datasets/coco*.c: shared between the annotation loader and the fast results
 * reader. Not a public header. */
#ifndef RV_DATASETS_COCO_INTERNAL_H
#define RV_DATASETS_COCO_INTERNAL_H

#include "datasets/coco.h"

#include "datasets/json_scan.h"

/* Memory for the run lengths of many masks: 2 MB blocks, freed together (one malloc per block
 * instead of one per mask: fewer calls, less heap overhead, a quick free). One chain per thread while parsing; the chains are then
 * joined into rv_coco_results.pool. */
typedef struct rv_coco_block rv_coco_block;
typedef struct {
  rv_coco_block *head;
} rv_coco_pool;
uint32_t *rv_coco_pool_counts(rv_coco_pool *pool, size_t n); /* NULL: no memory */
/* Shrink the last allocation p (n entries) to its first keep entries. */
void rv_coco_pool_trim(rv_coco_pool *pool, const uint32_t *p, size_t n, size_t keep);
void rv_coco_pool_join(rv_coco_pool *dst, rv_coco_pool *src);  /* src becomes empty */
void rv_coco_pool_free(rv_coco_pool *pool);

/* COCO.annToRLE on the "segmentation" value at c (polygons with the image size h x w,
 * uncompressed or compressed RLE with their own size). want = 0: only skip over it.
 * Compressed RLE strings are decoded into pool when it is not NULL (the RLE borrows the
 * memory). Returns 1, or 0 with the problem in c->err. */
int rv_coco_parse_segm(rv_jcur *c, rv_rle *out, uint32_t h, uint32_t w, int want, rv_coco_pool *pool);
/* Monotonic seconds, for the phase times in the debug log. */
double rv_coco_mono_s(void);

/* Parse a results list into r->dets (no loadRes rules yet). Masks are decoded when the
 * evaluation needs them (segm, mask area mode, or a first result without a bbox). */
rv_status rv_coco_parse_results(rv_coco_results *r, const rv_coco *gt, const char *json, size_t len,
                                const char *name, rv_iou_type t, rv_coco_area_mode mode, int threads,
                                rv_ctx *ctx);

#endif
