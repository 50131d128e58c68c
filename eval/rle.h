/* Run-length encoded binary masks with pycocotools' semantics (common/maskApi.c).
 *
 *   rv_rle r = {0};
 *   rv_rle_encode(&r, mask_colmajor, h, w, ctx);    // mask[x*h + y] in {0,1}
 *   char *s = rv_rle_to_string(&r);                 // "counts" as COCO JSON stores it
 *   uint32_t a = rv_rle_area(&r);
 *   double bb[4]; rv_rle_to_bbox(&r, bb);           // x, y, w, h
 *   free(s); rv_rle_free(&r);
 *
 * A mask of h x w pixels is stored column-major (x-major, like a Fortran array): counts
 * alternate background/foreground runs starting with background, over pixel index x*h + y.
 * A valid RLE has counts that sum to h*w. The functions that read external data
 * (rv_rle_from_string, rv_rle_from_counts, rv_rle_from_poly) validate it; the others assume
 * valid RLEs. Results are bit-identical to pycocotools (encodings, areas, boxes, IoUs).
 */
#ifndef RV_EVAL_RLE_H
#define RV_EVAL_RLE_H

#include "core/rv.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint32_t h, w;  /* mask size */
  size_t m;       /* number of runs */
  uint32_t *cnts; /* m run lengths (malloc'd, NULL when m == 0) */
  int borrowed;   /* 1: cnts belong to a container (e.g. rv_coco_results' pool), not to the RLE */
} rv_rle;

/* Frees cnts unless borrowed; the RLE becomes empty. */
void rv_rle_free(rv_rle *r);
/* Deep copy. */
rv_status rv_rle_copy(rv_rle *dst, const rv_rle *src, rv_ctx *ctx);

/* Encode a column-major mask (M[x*h + y], nonzero = foreground; maskApi rleEncode compares
 * with the previous byte, so only 0/1 masks give the pycocotools string). */
rv_status rv_rle_encode(rv_rle *r, const uint8_t *mask_colmajor, uint32_t h, uint32_t w, rv_ctx *ctx);
/* Encode a row-major mask (M[y*w + x] nonzero = foreground), as a model or a PNG gives it. */
rv_status rv_rle_encode_rowmajor(rv_rle *r, const uint8_t *mask, uint32_t h, uint32_t w, rv_ctx *ctx);
/* Decode into h*w bytes (0/1), column-major. */
void rv_rle_decode(const rv_rle *r, uint8_t *mask_colmajor);

/* Compressed string (maskApi rleToString: 5 bits per char + continuation, +48, counts
 * delta-coded against cnts[i-2] for i > 2). Returns a malloc'd string or NULL (no memory). */
char *rv_rle_to_string(const rv_rle *r);
/* Parse a compressed string; fails with RV_ERR_FORMAT (message names `what`) on characters
 * outside '0'..'o', a truncated last count, a count outside 0..2^32-1, or counts whose sum
 * differs from h*w. */
rv_status rv_rle_from_string(rv_rle *r, const char *s, uint32_t h, uint32_t w, const char *what,
                             rv_ctx *ctx);
/* The same on len characters (not NUL-terminated); a NUL inside is a bad character. */
rv_status rv_rle_from_string_n(rv_rle *r, const char *s, size_t len, uint32_t h, uint32_t w,
                               const char *what, rv_ctx *ctx);
/* The same into caller memory: cnts has rv_rle_string_max_counts(s, len) entries (an upper
 * bound of the count), and r borrows it (r->borrowed = 1). */
size_t rv_rle_string_max_counts(const char *s, size_t len);
rv_status rv_rle_from_string_into(rv_rle *r, uint32_t *cnts, const char *s, size_t len, uint32_t h, uint32_t w,
                                  const char *what, rv_ctx *ctx);
/* Uncompressed RLE (COCO {"counts": [...], "size": [h, w]}); validates the sum. */
rv_status rv_rle_from_counts(rv_rle *r, const uint32_t *counts, size_t m, uint32_t h, uint32_t w,
                             const char *what, rv_ctx *ctx);

/* Union (intersect = 0) or intersection (intersect = 1) of n RLEs (maskApi rleMerge). n == 0
 * gives an empty 0x0 RLE; RLEs of different sizes give a 0x0 RLE, as pycocotools does. */
rv_status rv_rle_merge(rv_rle *out, const rv_rle *in, size_t n, int intersect, rv_ctx *ctx);

/* Foreground pixel count (uint32, like pycocotools). */
uint32_t rv_rle_area(const rv_rle *r);
/* Tight box [x, y, w, h] (maskApi rleToBbox: a run crossing a column widens to full height). */
void rv_rle_to_bbox(const rv_rle *r, double bb[4]);
/* Reference: rleToBbox literally (a division per run); rv_rle_to_bbox gives the same bits. */
void rv_rle_to_bbox_naive(const rv_rle *r, double bb[4]);

/* What the IoU kernel needs of one mask, from one pass over its runs. */
typedef struct {
  double bb[4];   /* rv_rle_to_bbox */
  uint32_t area;  /* rv_rle_area */
  int irregular;  /* a run after the first is empty (then IoUs take maskApi's literal walk) */
} rv_rle_info;
void rv_rle_info_get(rv_rle_info *info, const rv_rle *r);

/* Polygon of k points xy[2k] rasterised exactly like maskApi rleFrPoly (x5 upsampling). */
rv_status rv_rle_from_poly(rv_rle *r, const double *xy, size_t k, uint32_t h, uint32_t w, rv_ctx *ctx);
/* Reference: rleFrPoly's floating-point downsampling literally (rv_rle_from_poly does it in
 * integers, with the same result). */
rv_status rv_rle_from_poly_naive(rv_rle *r, const double *xy, size_t k, uint32_t h, uint32_t w, rv_ctx *ctx);
/* Box [x, y, w, h] -> RLE (rleFrBbox = the 4-corner polygon). */
rv_status rv_rle_from_bbox(rv_rle *r, const double bb[4], uint32_t h, uint32_t w, rv_ctx *ctx);

/* IoU matrix o[d*n + g] (rows = detections, like pycocotools' iou()). iscrowd may be NULL.
 * For a crowd gt the union is the detection's area. -1 where sizes differ and the boxes
 * overlap; pairs whose rleToBbox boxes do not overlap are 0 without a run walk. No
 * allocation (rv_rle_info of up to 64 gt at a time on the stack). */
void rv_rle_iou(double *o, const rv_rle *dt, size_t m, const rv_rle *gt, size_t n,
                const uint8_t *iscrowd);
/* Box IoU matrix o[d*n + g] in double, maskApi bbIou (crowd: union = dt box area). */
void rv_bbox_iou(double *o, const double *dt, size_t m, const double *gt, size_t n,
                 const uint8_t *iscrowd);
/* rv_rle_iou with the masks' rv_rle_info computed beforehand (boxes for the overlap test,
 * areas for the union); no allocation. */
void rv_rle_iou_info(double *o, const rv_rle *dt, const rv_rle_info *dt_info, size_t m, const rv_rle *gt,
                     const rv_rle_info *gt_info, size_t n, const uint8_t *iscrowd);
/* IoU of one pair (sizes assumed equal, valid RLEs): intersection / union with the
 * pycocotools conventions (0 when the intersection is empty; crowd: union = dt area). The
 * intersection comes from a merge of the foreground intervals. */
double rv_rle_iou_pair(const rv_rle *dt, const rv_rle *gt, int crowd);
/* Reference: maskApi rleIou's run walk literally; rv_rle_iou_pair gives the same bits. */
double rv_rle_iou_pair_naive(const rv_rle *dt, const rv_rle *gt, int crowd);

#ifdef __cplusplus
}
#endif
#endif
