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
#include <ravlt/eval.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rv_rle and rv_rle_free / copy / encode / encode_rowmajor / decode / to_string /
 * from_string / from_string_n / from_counts / from_poly / from_bbox / merge / area / to_bbox /
 * iou / iou_pair and rv_bbox_iou are public: <ravlt/eval.h>. */

/* rv_rle_encode_rowmajor of an h x w mask that is zero except for the mh x mw row-major
 * window M at rows y0.., columns x0.. (a tile's mask in the whole image), without the
 * h x w mask: the same runs. RV_ERR_ARG when the window does not fit or h * w exceeds 32
 * bits. */
rv_status rv_rle_encode_window(rv_rle *r, const uint8_t *M, uint32_t mh, uint32_t mw, uint32_t y0,
                               uint32_t x0, uint32_t h, uint32_t w, rv_ctx *ctx);

/* rv_rle_from_string_n into caller memory: cnts has rv_rle_string_max_counts(s, len) entries
 * (an upper bound of the count), and r borrows it (r->borrowed = 1). */
size_t rv_rle_string_max_counts(const char *s, size_t len);
rv_status rv_rle_from_string_into(rv_rle *r, uint32_t *cnts, const char *s, size_t len, uint32_t h, uint32_t w,
                                  const char *what, rv_ctx *ctx);
/* The same without the check that the counts sum to h*w (pycocotools reads any counts; the
 * functions here accept such RLEs: area and toBbox as maskApi computes them, IoU walks that
 * end, decode through rv_rle_decode_checked). _into borrows cnts as above. */
rv_status rv_rle_from_string_any(rv_rle *r, const char *s, size_t len, uint32_t h, uint32_t w, const char *what,
                                 rv_ctx *ctx);
rv_status rv_rle_from_string_any_into(rv_rle *r, uint32_t *cnts, const char *s, size_t len, uint32_t h, uint32_t w,
                                      const char *what, rv_ctx *ctx);
rv_status rv_rle_from_counts_any(rv_rle *r, const uint32_t *counts, size_t m, uint32_t h, uint32_t w, rv_ctx *ctx);
/* Sum of the counts (h*w for a valid RLE). */
uint64_t rv_rle_sum(const rv_rle *r);
/* rv_rle_decode for any counts (rleDecode 2.0.x): 0 when they pass h*w ("Invalid RLE mask
 * representation"); short counts leave the rest 0. */
int rv_rle_decode_checked(const rv_rle *r, uint8_t *mask_colmajor);
/* Reference: rleToBbox literally (a division per run); rv_rle_to_bbox gives the same bits. */
void rv_rle_to_bbox_naive(const rv_rle *r, double bb[4]);

/* What the IoU kernel needs of one mask, from one pass over its runs. */
typedef struct {
  double bb[4];   /* rv_rle_to_bbox */
  uint32_t area;  /* rv_rle_area */
  int irregular;  /* a run after the first is empty, or the counts do not sum to h*w (then the
                     box is rv_rle_to_bbox_naive's and IoUs take maskApi's literal walk) */
} rv_rle_info;
void rv_rle_info_get(rv_rle_info *info, const rv_rle *r);

/* Reference: rleFrPoly literally, its point arrays and floating-point downsampling
 * (rv_rle_from_poly walks the boundary without the arrays and downsamples in integers, with
 * the same result). */
rv_status rv_rle_from_poly_naive(rv_rle *r, const double *xy, size_t k, uint32_t h, uint32_t w, rv_ctx *ctx);

/* rv_rle_iou (pairs whose rleToBbox boxes do not overlap are 0 without a run walk; -1 where
 * sizes differ and the boxes overlap; no allocation) with the masks' rv_rle_info computed
 * beforehand (boxes for the overlap test, areas for the union). */
void rv_rle_iou_info(double *o, const rv_rle *dt, const rv_rle_info *dt_info, size_t m, const rv_rle *gt,
                     const rv_rle_info *gt_info, size_t n, const uint8_t *iscrowd);
/* rv_rle_iou_pair computes the intersection from a merge of the foreground intervals;
 * reference: maskApi rleIou's run walk literally, with the same bits. */
double rv_rle_iou_pair_naive(const rv_rle *dt, const rv_rle *gt, int crowd);

#ifdef __cplusplus
}
#endif
#endif
