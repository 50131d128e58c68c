/* The JSON pieces both COCO readers share (datasets/coco_json.c): the annotation loader
 * (datasets/coco.c) and the fast results reader (datasets/coco_results.c). Not a public
 * header. */
#ifndef RV_DATASETS_COCO_JSON_H
#define RV_DATASETS_COCO_JSON_H

#include "datasets/json_scan.h"
#include "eval/rle.h"

#include <stddef.h>
#include <stdint.h>

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
/* After whitespace, a number that starts as JSON's do ('-' or a digit), into *v; 0 without a
 * message where none starts (so the caller's message, naming the field, stands), with
 * rv_jnumber's where it is malformed. */
int rv_coco_jnumber(rv_jcur *c, double *v);
/* rv_coco_jnumber that is an integer of magnitude at most 2^53 (an id), into *out. */
int rv_coco_jid(rv_jcur *c, int64_t *out);
/* A "bbox" value: [] (loadRes: no box, *has unchanged) or [x, y, w, h] of finite numbers
 * (*has = 1); otherwise 0 with "'bbox' must be 4 numbers". */
int rv_coco_jbbox(rv_jcur *c, double b[4], int *has);
/* Monotonic seconds, for the phase times in the debug log. */
double rv_coco_mono_s(void);
/* Re-issue the message in ctx with a "file: section[i]: " prefix. */
rv_status rv_coco_prefix_error(rv_ctx *ctx, rv_status st, const char *name, const char *section, size_t i);

#endif
