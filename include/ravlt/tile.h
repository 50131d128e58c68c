/* ravlt public API: large images. Tiled detection (SAHI's slicing aided hyper inference:
 * the detector's own pipeline on overlapping tiles of the original image, boxes and masks
 * shifted back, merged class by class) and native-resolution tiled segmentation (mmseg's
 * slide inference over the original image, no resize to the test scale, with memory bounded
 * by one band of tile rows).
 *
 *   rv_tile_opts to = rv_tile_default_opts();          // 512 x 512, overlap 0.2, NMS 0.5
 *   to.tile_h = to.tile_w = 640;
 *   to.merge = RV_TILE_MERGE_NMM;                       // SAHI's greedy merging (IoS 0.5)
 *   rv_tile_detections det;
 *   if (rv_model_detect_tiled(m, &det, &img, &to, arena, ctx) != RV_OK) ...;
 *   for (int i = 0; i < det.n; i++)
 *     printf("%s %.3f\n", rv_model_class_name(m, det.labels[i]), det.scores[i]);
 *   // det.masks[i] (instance models): a COCO RLE of the whole image, img.h x img.w
 *
 *   int32_t *labels = malloc(sizeof *labels * img.h * img.w);
 *   rv_model_segment_tiled(m, labels, &img, &to, arena, ctx);  // segmentors
 *
 * Detection (sahi/slicing.py get_slice_bboxes, sahi/predict.py get_sliced_prediction):
 * tiles of tile_h x tile_w start every tile - int(overlap * tile) pixels from the top-left;
 * a tile that would cross the right or bottom edge is moved back inside (its right / bottom
 * side on the edge), and an image smaller than a tile is one tile of the image's size
 * (rv_tile_boxes). Each tile is run through the model's whole test pipeline (its resize to
 * the test scale, its score threshold, NMS and per-image cap: max_per_img applies per tile);
 * with `full` and more than one tile, the whole image too (SAHI's standard prediction). All
 * detections, shifted to image coordinates, are merged class by class: NMS (IoU >= thr
 * suppresses) or NMM (greedy non-maximum merging over the intersection over the smaller box:
 * the matched detections unite their boxes and masks with the kept one, which keeps the
 * highest score) -- heads/det_ops.h rv_merge_tile_dets has the exact rule. The merged result is
 * not cut to the model's max_per_img; max_dets > 0 keeps the best max_dets.
 *
 * Segmentation (mmseg 0.x slide_inference at the original resolution): crops of tile_h x
 * tile_w (of the image's size where it is smaller) every stride = tile - int(overlap *
 * tile) pixels, y1 = min(i * stride_h, H - crop_h) (the same in x), each normalised like
 * the model's test pipeline but not resized or padded, run through the backbone and decode
 * head, its logits bilinearly resized to the crop (encode_decode); the logits are summed
 * where crops overlap in tile order, divided by the number of crops covering each pixel, and
 * the argmax (first maximum) is the label. Only one band of tile rows of summed logits
 * exists at a time (num_classes x tile_h x image width floats) besides the crop's own
 * activations; the image itself and the labels are the only full-resolution buffers.
 *
 * Both check the image size against rv_ctx_max_pixels, as the image readers do.
 */
#ifndef RAVLT_TILE_H
#define RAVLT_TILE_H

#include <ravlt/core.h>
#include <ravlt/eval.h>
#include <ravlt/image.h>
#include <ravlt/model.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  RV_TILE_MERGE_NMS = 0, /* class-wise NMS on the IoU (the default) */
  RV_TILE_MERGE_NMM = 1  /* class-wise greedy non-maximum merging on the IoS (SAHI's default) */
} rv_tile_merge;

/* Called after each tile with the tiles done and their total; a nonzero return stops the
 * run (RV_ERR_INTERRUPTED). */
typedef int (*rv_tile_progress_fn)(void *user, int done, int total);

typedef struct {
  int tile_h, tile_w;          /* tile size in pixels of the original image, >= 1 */
  double overlap_h, overlap_w; /* overlap ratio of neighbouring tiles, 0 <= r < 1 (0.2) */
  rv_tile_merge merge;         /* detection: how tiles' detections are merged */
  float merge_thr;             /* detection: the IoU (NMS) / IoS (NMM) threshold, (0, 1] (0.5) */
  int full;                    /* detection: also the whole image, at the model's scale (0) */
  float score_thr;             /* detection: runs' detections under it are dropped before the
                                * merge (SAHI's confidence_threshold); 0: the model's own (0) */
  int max_dets;                /* detection: keep the best max_dets after merging; <= 0 all */
  rv_tile_progress_fn progress; /* may be NULL */
  void *progress_user;
} rv_tile_opts;

/* 512 x 512, overlap 0.2, NMS at 0.5, no full-image run, no cap, no progress. */
RV_API rv_tile_opts rv_tile_default_opts(void);
/* RV_ERR_ARG with a one-line message naming the first bad field. */
RV_API rv_status rv_tile_opts_check(const rv_tile_opts *o, rv_ctx *ctx);

/* The detection tiles of an img_h x img_w image (SAHI's get_slice_bboxes): the first
 * min(count, cap) as x1, y1, x2, y2 (exclusive) into xyxy[4 * cap]; returns their count
 * (-1 for invalid options or size). xyxy may be NULL with cap 0 to count. */
RV_API long rv_tile_boxes(int *xyxy, long cap, int img_h, int img_w, const rv_tile_opts *o);

/* Detections of a tiled run; arrays and the masks' runs from the arena given to
 * rv_model_detect_tiled (valid until it is reset or freed). By descending score. */
typedef struct {
  int n;
  float *bboxes;  /* [n, 4] x1, y1, x2, y2 in image coordinates */
  float *scores;  /* [n] */
  int *labels;    /* [n] class index 0..K-1 */
  rv_rle *masks;  /* [n] COCO RLEs of img_h x img_w (runs borrowed from the arena), or NULL
                   * for a model without masks */
  int img_h, img_w;
  int runs;       /* model runs: the tiles, plus one for the whole image with `full` */
} rv_tile_detections;

RV_API rv_status rv_model_detect_tiled(const rv_model *m, rv_tile_detections *det,
                                       const rv_image *bgr, const rv_tile_opts *opts,
                                       rv_arena *arena, rv_ctx *ctx);
/* labels[bgr->h * bgr->w]: class index per pixel. opts: tile size and overlap (the
 * detection fields are ignored). */
RV_API rv_status rv_model_segment_tiled(const rv_model *m, int32_t *labels, const rv_image *bgr,
                                        const rv_tile_opts *opts, rv_arena *arena, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
