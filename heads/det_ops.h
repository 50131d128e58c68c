/* Reusable detection ops (no weights): anchors, the delta box coder, NMS, RoIAlign and the
 * mask paste, as mmdet 2.11 + mmcv 1.7 compute them at test time (tests/fixtures/SEMANTICS.md
 * sections C-H). The heads (heads/det.h) are built on them.
 *
 *   float base[3 * 4];
 *   const float ratios[3] = {0.5f, 1.f, 2.f}, scales[1] = {8.f};
 *   int A = rv_anchor_base_f32(base, 4, ratios, 3, scales, 1);      // 3 base anchors
 *   rv_anchor_grid_f32(anchors, base, A, feat_h, feat_w, 4);         // [(y*W+x)*A+a][4]
 *   rv_delta2bbox_f32(boxes, anchors, 4, deltas, 4, n, 1, &coder, img_h, img_w);
 *   int nk = rv_batched_nms(keep, boxes, scores, level_ids, n, 0.7f, scratch);
 *
 * Boxes are [x1, y1, x2, y2] float32; RoIs are [batch, x1, y1, x2, y2].
 */
#ifndef RV_HEADS_DET_OPS_H
#define RV_HEADS_DET_OPS_H

#include "kernels/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- image meta ------------------------------------------------------------------------ */
/* rv_img_meta (ori/img/pad shapes, float32 scale_factor [w,h,w,h]) is defined once, in
 * formats/image.h, and filled by datasets/preprocess.c. */
#include "formats/image.h"

/* ---- anchors (heads/anchors.c) --------------------------------------------------------- */
/* mmdet AnchorGenerator base anchors, centre offset 0, float32 arithmetic:
 * h_ratio = sqrt(r), w_ratio = 1/h_ratio, ws = base*w_ratio*s, hs = base*h_ratio*s, anchor =
 * [-ws/2, -hs/2, ws/2, hs/2]; ratio-major, scale-minor order. base: [nr*ns*4]. Returns nr*ns. */
int rv_anchor_base_f32(float *base, float base_size, const float *ratios, int nr,
                       const float *scales, int ns);
/* Scales of an octave anchor generator: octave_base * 2^(i/per_octave), float32. */
void rv_anchor_octave_scales(float *scales, float octave_base, int per_octave);
/* anchors[((y*w + x)*A + a)*4 + k] = base[a*4+k] + (k even ? x : y) * stride (float32). */
void rv_anchor_grid_f32(float *anchors, const float *base, int A, int h, int w, int stride);

/* ---- box coder (heads/bbox_coder.c) ---------------------------------------------------- */
typedef struct {
  double means[4];
  double stds[4];
  double max_ratio;  /* |log(wh_ratio_clip)| = |log(16/1000)| */
} rv_bbox_coder;
rv_bbox_coder rv_bbox_coder_default(void); /* means 0, stds 1 */

/* mmdet delta2bbox for n rows: roi r (x1,y1,x2,y2 at rois + r*roi_stride) and `ncls` delta
 * quadruples per row (deltas + r*delta_stride + c*4) -> out[(r*ncls + c)*4 + k].
 * d = delta*std + mean; dw,dh clamped to +-max_ratio; px=(x1+x2)/2, pw=x2-x1;
 * g = p + pw*dx, gw = pw*exp(dw); box = g -+ gw/2; x clipped to [0,img_w], y to [0,img_h]
 * (no clipping if img_w <= 0). Arithmetic in double, rounded once. */
void rv_delta2bbox_f32(float *out, const float *rois, int roi_stride, const float *deltas,
                       int delta_stride, int n, int ncls, const rv_bbox_coder *coder, int img_h,
                       int img_w);

/* ---- NMS (heads/nms.c) ----------------------------------------------------------------- */
/* Sort order used everywhere: score descending, ties by index ascending (mmcv's sort is not
 * stable; this is the deterministic choice). order[0..n) receives the permutation. */
int rv_argsort_desc(int *order, const float *scores, int n, rv_arena *scratch); /* -1: OOM */
/* The first min(k, n) indices of that order (the same as rv_argsort_desc's first k) into
 * order[0..k), by selection and a sort of those k: returns their count, -1 on OOM. */
int rv_argsort_topk_desc(int *order, const float *scores, int n, int k, rv_arena *scratch);
/* Greedy NMS (mmcv nms, offset 0): visits boxes by descending score, drops j when
 * inter/(area_i + area_j - inter) > iou_thr. keep[] (capacity n) receives kept indices in
 * score order; returns their count. scratch: arena for temporaries (released). -1 on OOM. */
int rv_nms(int *keep, const float *boxes, const float *scores, int n, float iou_thr,
           rv_arena *scratch);
/* mmcv batched_nms: NMS independently for each idxs value, result sorted by score desc
 * (ties by index). Returns count, -1 on OOM. */
int rv_batched_nms(int *keep, const float *boxes, const float *scores, const int *idxs, int n,
                   float iou_thr, rv_arena *scratch);

/* mmdet multiclass_nms on per-class boxes. boxes: [n, K, 4] (class-specific) or [n, 4] when
 * boxes_per_class is 0; scores: [n, score_stride] with class k at column k (0..K-1; the
 * background column, if any, is ignored). Candidates are (row, class) pairs with
 * score > score_thr in row-major order, then batched NMS by class, then the first max_num
 * (<= 0: all). Output arrays hold up to max_num (or all candidates); returns the count or -1
 * on OOM. out_rows (may be NULL) receives the source row of each detection. */
int rv_multiclass_nms(float *out_boxes, float *out_scores, int *out_labels, int *out_rows,
                      const float *boxes, int boxes_per_class, const float *scores,
                      int score_stride, int n, int num_classes, float score_thr, float iou_thr,
                      int max_num, rv_arena *scratch);
/* Upper bound on multiclass_nms output for the given inputs (count of candidates). */
int rv_multiclass_nms_candidates(const float *scores, int score_stride, int n, int num_classes,
                                 float score_thr);

/* ---- merging overlapping tiles (heads/tile_merge.c) ------------------------------------ */
/* The overlap of boxes a and b (x1, y1, x2, y2), in double: intersection over union, or with
 * ios over the smaller box's area (SAHI's IOS); 0 when the denominator is 0. */
double rv_box_overlap(const float *a, const float *b, int ios);
/* SAHI's postprocess of sliced predictions, class by class (postprocess_class_agnostic
 * False), NMS (nmm 0) or NMM (nmm 1): within a class, by descending score (ties: index ascending), the best detection
 * left is kept and every later one whose overlap with its box reaches thr (>=) leaves the
 * pool. NMS (batched_nms, IoU): those are suppressed. NMM (batched_greedy_nmm +
 * GreedyNMMPostprocess, IoS): they are merged into the kept one in descending score order,
 * each only if it still overlaps the merged box by more than thr (strict, has_match):
 * the box becomes the union, the score the maximum; a matched one that no longer overlaps
 * enough is dropped. n detections in; returns K (-1 out of scratch memory) results in
 * out_boxes [K, 4], out_scores, out_labels (capacity n), by descending score (ties: index of
 * the kept detection); slot[i] = the result detection i was kept as or merged into, -1 when
 * suppressed or dropped (the caller unites masks with it). */
int rv_merge_tile_dets(float *out_boxes, float *out_scores, int *out_labels, int *slot,
                       const float *boxes, const float *scores, const int *labels, int n,
                       int nmm, float thr, rv_arena *scratch);

/* ---- RoIAlign (heads/roi_align.c) ------------------------------------------------------ */
/* mmcv RoIAlign (avg, aligned flag, sampling_ratio 0 = adaptive ceil(roi/out)) on one
 * feature map in channels-last layout, feat_hwc [H, W, C] (every sample reads C contiguous
 * floats per tap; batch index of the rois ignored: batch 1). rois: n rows of 5 (batch, x1,
 * y1, x2, y2); only rows with sel == NULL or sel[r] != 0 are computed. out [n, C, oh, ow].
 * Scratch: threads x C floats; RV_ERR_NOMEM if short. */
rv_status rv_roi_align_f32(float *out, const float *feat_hwc, int c, int h, int w,
                           const float *rois, int n, const unsigned char *sel,
                           float spatial_scale, int oh, int ow, int sampling_ratio, int aligned,
                           rv_arena *scratch);
/* dst [h, w, c] = src [c, h, w] */
void rv_nchw_to_hwc_f32(float *dst, const float *src, int c, int h, int w);
/* Plain reference (per sample bilinear in the mmcv order) for tests. */
void rv_roi_align_naive_f32(float *out, const float *feat, int c, int h, int w,
                            const float *rois, int n, float spatial_scale, int oh, int ow,
                            int sampling_ratio, int aligned);
/* SingleRoIExtractor level: floor(log2(sqrt(w*h)/finest_scale + 1e-6)) clamped [0, L-1]. */
void rv_roi_map_levels(int *lvl, const float *rois, int n, int num_levels, double finest_scale);
/* The feature levels of a SingleRoIExtractor in channels-last copies (arena), made once per
 * image and shared by every RoI stage. */
#define RV_ROI_MAX_LEVELS 8
typedef struct {
  const float *data[RV_ROI_MAX_LEVELS]; /* level l: [h[l], w[l], c] */
  int h[RV_ROI_MAX_LEVELS], w[RV_ROI_MAX_LEVELS];
  int c, num_levels;
} rv_roi_feats;
/* From NCHW levels, each batch 1 with c channels (what the head's weights take);
 * RV_ERR_SHAPE naming the level otherwise. */
rv_status rv_roi_feats_prepare(rv_roi_feats *rf, const rv_tensor *feats, int num_levels,
                               int c, rv_arena *a, rv_ctx *ctx);
/* SingleRoIExtractor: out [n, C, s, s] from the levels of rf with strides[l]; aligned,
 * sampling 0, finest_scale 56. */
rv_status rv_roi_extract(float *out, const rv_roi_feats *rf, const int *strides,
                         const float *rois, int n, int s, rv_arena *scratch, rv_ctx *ctx);

/* ---- mask paste (heads/mask_paste.c) --------------------------------------------------- */
/* mmdet _do_paste_mask (CPU, skip_empty) of one mask prob map [mh, mw] for box (original
 * coordinates) into out [img_h, img_w] (fully written): out = grid_sample(bilinear,
 * align_corners=False, zeros)(prob) at pixel centres >= thr. */
void rv_paste_mask_u8(unsigned char *out, int img_h, int img_w, const float *prob, int mh,
                      int mw, const float box[4], float thr);

#ifdef __cplusplus
}
#endif
#endif
