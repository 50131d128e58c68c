/* libFuzzer target: the COCO readers (datasets/coco.c, datasets/json_scan.c, the RLE string
 * decoder and polygon rasteriser behind them) and, on small accepted inputs, the evaluation.
 *
 * Input: GT_JSON [0x00 RESULTS_JSON]. The ground truth is loaded with segmentations; if a
 * NUL byte follows, the rest is loaded as a results file for bbox and for segm (box-area
 * mode for one, mask-area mode for the other) and, when both sides are small, evaluated.
 * Contract checked on every input: an accepted file gives consistent objects (every image and
 * category found by id; every mask's box and area from the fast one-pass reader equal to
 * maskApi's literal rleToBbox and rleArea, whatever its counts sum to (pycocotools reads any);
 * areas not NaN, stats in [0, 1] or -1), a rejected one leaves no
 * object and a message (abort() otherwise, which libFuzzer reports).
 */
#include "datasets/coco.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The one-pass box / area / regularity reader agrees with the literal maskApi code, and a mask
 * whose counts do not cover h*w exactly is flagged irregular (its IoUs take the safe walk). */
static void check_rle(const rv_rle *r) {
  uint64_t s = 0;
  for (size_t i = 0; i < r->m; i++) s += r->cnts[i];
  rv_rle_info in;
  rv_rle_info_get(&in, r);
  double bb[4];
  rv_rle_to_bbox_naive(r, bb);
  if (memcmp(bb, in.bb, sizeof bb) != 0 || in.area != rv_rle_area(r)) abort();
  if (s != (uint64_t)r->h * r->w && !in.irregular) abort();
}

static void check_gt(const rv_coco *gt) {
  for (size_t i = 0; i < gt->n_images; i++)
    if (rv_coco_find_image(gt, gt->images[i].id) == NULL) abort();
  for (size_t i = 0; i < gt->n_cats; i++)
    if (rv_coco_find_category(gt, gt->cats[i].id) == NULL) abort();
  for (size_t i = 0; i < gt->n_anns; i++) {
    const rv_coco_obj *a = &gt->anns[i];
    if (a->has_segm) check_rle(&a->segm); /* a file RLE keeps its own size (pycocotools) */
  }
}

static void results(const rv_coco *gt, const char *json, size_t len, rv_iou_type t,
                    rv_coco_area_mode mode, rv_ctx *ctx) {
  rv_coco_results r;
  memset(&r, 0, sizeof r);
  rv_ctx_clear_error(ctx); /* a message must come from this call */
  if (rv_coco_load_results_mem(&r, gt, json, len, "fuzz_dt.json", t, mode, 1, ctx) != RV_OK) {
    if (r.dets || r.n || rv_ctx_errmsg(ctx)[0] == 0) abort();
    return;
  }
  for (size_t i = 0; i < r.n; i++) {
    const rv_coco_obj *d = &r.dets[i];
    const rv_coco_image *im = rv_coco_find_image(gt, d->image_id);
    if (!im || isnan(d->area)) abort();
    if (d->has_segm) check_rle(&d->segm); /* any size: pycocotools' loadRes keeps it (IoU -1) */
  }
  if (r.n <= 2000 && gt->n_anns <= 2000 && gt->n_images <= 200) {
    rv_cocoeval_params p = rv_cocoeval_default_params(t);
    p.threads = 1;
    rv_cocoeval *ev = NULL;
    rv_ctx_clear_error(ctx);
    if (rv_coco_evaluate(&ev, gt, &r, &p, ctx) == RV_OK) {
      double stats[12];
      rv_cocoeval_summarize(ev, stats);
      for (int k = 0; k < 12; k++)
        if (isnan(stats[k]) || stats[k] > 1.0 || (stats[k] < 0 && stats[k] != -1.0)) abort();
      rv_cocoeval_free(ev);
    } else if (ev || rv_ctx_errmsg(ctx)[0] == 0) {
      abort();
    }
  }
  rv_coco_results_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  const char *sep = memchr(text, 0, size);
  size_t gt_len = sep ? (size_t)(sep - text) : size;
  rv_ctx *ctx = rv_ctx_create();
  rv_coco *gt = NULL;
  if (rv_coco_load_mem(&gt, text, gt_len, "fuzz_gt.json", 1, 1, ctx) != RV_OK) {
    if (gt || rv_ctx_errmsg(ctx)[0] == 0) abort();
    rv_ctx_free(ctx);
    return 0;
  }
  check_gt(gt);
  if (sep) {
    const char *dt = sep + 1;
    size_t dt_len = size - gt_len - 1;
    results(gt, dt, dt_len, RV_IOU_BBOX, RV_COCO_AREA_BOX, ctx);
    results(gt, dt, dt_len, RV_IOU_SEGM, RV_COCO_AREA_MASK, ctx);
  }
  rv_coco_free(gt);
  rv_ctx_free(ctx);
  return 0;
}
