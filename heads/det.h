/* Detection heads and their ops: anchors, the delta box coder, NMS, RoIAlign, the RPN, the
 * RoI box heads (ConvFC / Shared2FC), the FCN mask head with mmdet's paste, the cascade and
 * single-stage RoI test logic, and RetinaNet. Semantics follow mmdet 2.11 + mmcv 1.7 at test
 * time (tests/fixtures/SEMANTICS.md sections C-H).
 *
 *   // ops
 *   float base[3 * 4];
 *   const float ratios[3] = {0.5f, 1.f, 2.f}, scales[1] = {8.f};
 *   int A = rv_anchor_base_f32(base, 4, ratios, 3, scales, 1);      // 3 base anchors
 *   rv_anchor_grid_f32(anchors, base, A, feat_h, feat_w, 4);         // [(y*W+x)*A+a][4]
 *   rv_delta2bbox_f32(boxes, anchors, 4, deltas, 4, n, 1, &coder, img_h, img_w);
 *   int nk = rv_batched_nms(keep, boxes, scores, level_ids, n, 0.7f, scratch);
 *
 *   // heads (weights by their official state_dict names)
 *   rv_rpn_head rpn;
 *   rv_rpn_head_load(&rpn, p, "rpn_head", ctx);
 *   rv_rpn_proposals(&props, &rpn, pyramid, 5, &meta, &cfg, arena, ctx);
 *   ...
 *   rv_rpn_head_free(&rpn);
 *
 * Boxes are [x1, y1, x2, y2] float32; RoIs are [batch, x1, y1, x2, y2]. Weights are copied
 * (BatchNorm folded into the preceding conv) at load time and never written afterwards;
 * activations and outputs come from the caller's arena.
 */
#ifndef RV_HEADS_DET_H
#define RV_HEADS_DET_H

#include "core/ops.h"
#include "nn/param.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- image meta ------------------------------------------------------------------------ */
/* rv_img_meta (ori/img/pad shapes, float32 scale_factor [w,h,w,h]) is defined once, in
 * core/image.h, and filled by datasets/preprocess.c. */
#include "core/image.h"

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

/* ---- layers shared by heads (heads/det_layers.c) ---------------------------------------- */
typedef struct {
  float *w;           /* [cout, cin, k, k] (BN folded) or linear [cout, cin] */
  float *b;           /* [cout], never NULL */
  int cin, cout, k;
  rv_conv_algo algo;  /* rv_det_layer_conv's algorithm: RV_CONV_AUTO from loading; the box and
                         mask heads set RV_CONV_AUTO_FAST on their RoI convs */
} rv_det_layer;
/* Load `<name>.weight` / `<name>.bias` (bias optional -> zeros). k = kernel size expected
 * (0 = linear, -k = ConvTranspose2d with weight [cin, cout, k, k]). For a ConvModule prefix with BN, call rv_det_layer_load_convmodule. */
rv_status rv_det_layer_load(rv_det_layer *l, rv_params *p, const char *name, int k,
                            rv_ctx *ctx);
/* ConvModule `<prefix>.conv.{weight,bias}` with optional `<prefix>.bn.*` (eps 1e-5) folded. */
rv_status rv_det_layer_load_convmodule(rv_det_layer *l, rv_params *p, const char *prefix,
                                       int k, rv_ctx *ctx);
void rv_det_layer_free(rv_det_layer *l);
/* y[n, cout, h, w] = act(conv(x)), stride 1, pad k/2 (k = 1 or 3), with l->algo. */
rv_status rv_det_layer_conv(float *y, const rv_det_layer *l, const float *x, int n, int h,
                            int w, rv_act act, rv_arena *scratch);
/* Stack of nl 3x3 pad-1 conv + ReLU layers over n rois of s x s: x [n, cin, s, s] ->
 * y [n, cout, s, s] (y must not alias x). Each layer is one rv_det_layer_conv over all rois
 * (with the layer's algo). RV_ERR_NOMEM if the scratch arena is short. */
rv_status rv_det_conv_stack_rois(float *y, const rv_det_layer *layers, int nl, const float *x,
                                 int n, int s, rv_arena *scratch);
/* Linear over rows: y[n, cout] = act(x[n, cin] W^T + b) (one GEMM). */
void rv_det_layer_linear(float *y, const rv_det_layer *l, const float *x, int n, rv_act act);
/* 1 if `name` exists in w. */
int rv_det_has(const rv_params *p, const char *name);

/* ---- RPN (heads/rpn.c) ----------------------------------------------------------------- */
typedef struct {
  rv_det_layer conv;            /* rpn_conv 3x3 (+ReLU) */
  rv_det_layer clsreg;          /* rpn_cls 1x1 (A rows) and rpn_reg 1x1 (4A rows) stacked: one
                                 * GEMM per level */
  int num_anchors;              /* nr * ns */
  float ratios[3], scales[1];   /* 0.5, 1, 2 and 8: base anchors per level (size = stride) */
  int nr, ns;
} rv_rpn_head;
typedef struct {
  int nms_pre;        /* 1000 */
  int max_per_img;    /* 1000 */
  float iou_thr;      /* 0.7 */
  float min_bbox_size;/* 0 */
} rv_rpn_cfg;
rv_rpn_cfg rv_rpn_cfg_default(void);
rv_status rv_rpn_head_load(rv_rpn_head *h, rv_params *p, const char *prefix, rv_ctx *ctx);
void rv_rpn_head_free(rv_rpn_head *h);
/* Raw outputs of one level: cls [1, A, H, W], reg [1, 4A, H, W] (from the arena). */
rv_status rv_rpn_forward_level(rv_tensor *cls, rv_tensor *reg, const rv_rpn_head *h,
                               rv_tensor feat, rv_arena *arena, rv_ctx *ctx);
/* Proposals from raw outputs of L levels (strides 4*2^l): props [n, 4] and scores [n] in
 * resized-image coordinates, sorted by score. Arrays from the arena. */
rv_status rv_rpn_get_proposals(float **props, float **scores, int *n, const rv_rpn_head *h,
                               const rv_tensor *cls, const rv_tensor *reg, const int *strides,
                               int levels, const rv_img_meta *meta, const rv_rpn_cfg *cfg,
                               rv_arena *arena, rv_ctx *ctx);

/* ---- RoI box heads (heads/bbox_heads.c) ------------------------------------------------ */
typedef struct {
  int num_convs, num_fcs;
  rv_det_layer convs[8];  /* shared_convs.i (ConvModule 3x3, BN folded, ReLU) */
  rv_det_layer fcs[4];    /* shared_fcs.i (Linear + ReLU) */
  rv_det_layer fc_cls;    /* K+1 (background last) */
  rv_det_layer fc_reg;    /* 4K (class-specific) or 4 (class agnostic) */
  int in_channels, roi_size, num_classes, class_agnostic;
  rv_bbox_coder coder;
} rv_bbox_head;
/* prefix e.g. "roi_head.bbox_head.0"; stds are the coder's target_stds. */
rv_status rv_bbox_head_load(rv_bbox_head *h, rv_params *p, const char *prefix,
                            const double stds[4], rv_ctx *ctx);
void rv_bbox_head_free(rv_bbox_head *h);
/* roi_feats [n, C, s, s] -> cls [n, K+1], reg [n, 4K]; all rois in one batch. */
rv_status rv_bbox_head_forward(float *cls, float *reg, const rv_bbox_head *h,
                               const float *roi_feats, int n, rv_arena *scratch, rv_ctx *ctx);

/* ---- FCN mask head (heads/mask_head.c) ------------------------------------------------- */
typedef struct {
  int num_convs;
  rv_det_layer convs[8];   /* 3x3 + bias + ReLU */
  rv_det_layer upsample;   /* ConvTranspose2d 2x2 s2 weight [cin, cout, 2, 2] + ReLU */
  rv_det_layer logits;     /* 1x1 -> K */
  int in_channels, roi_size, num_classes;
} rv_mask_head;
rv_status rv_mask_head_load(rv_mask_head *h, rv_params *p, const char *prefix,
                            rv_ctx *ctx);
void rv_mask_head_free(rv_mask_head *h);
/* roi_feats [n, C, 14, 14] -> logits [n, K, 28, 28], or with labels != NULL only the
 * channel labels[i] of each roi: logits [n, 1, 28, 28]. */
rv_status rv_mask_head_forward(float *logits, const rv_mask_head *h, const float *roi_feats,
                               int n, const int *labels, rv_arena *scratch, rv_ctx *ctx);
/* mmdet _do_paste_mask (CPU, skip_empty) of one mask prob map [mh, mw] for box (original
 * coordinates) into out [img_h, img_w] (fully written): out = grid_sample(bilinear,
 * align_corners=False, zeros)(prob) at pixel centres >= thr. */
void rv_paste_mask_u8(unsigned char *out, int img_h, int img_w, const float *prob, int mh,
                      int mw, const float box[4], float thr);

/* ---- RoI heads: cascade and standard (heads/cascade.c) --------------------------------- */
typedef struct {
  float score_thr;   /* 0.05 */
  float iou_thr;     /* 0.5 */
  int max_per_img;   /* 100 */
  float mask_thr;    /* 0.5 */
} rv_rcnn_cfg;
rv_rcnn_cfg rv_rcnn_cfg_default(void);

typedef struct {
  int num_stages;           /* 1 = StandardRoIHead (Mask R-CNN), 3 = CascadeRoIHead */
  rv_bbox_head bbox[4];
  rv_mask_head mask[4];     /* cascade: one per stage; standard: mask[0] */
  int num_mask_heads;       /* 0 when there is no mask branch */
  int num_classes;
} rv_roi_head;

/* Trace hook: called with intermediate tensors named like the fixtures' io keys
 * ("roi.stage0.rois", "mask.merged_probs"...); shape has ndim entries. May be NULL. */
typedef void (*rv_det_trace_fn)(void *user, const char *name, const float *data,
                                const int *shape, int ndim);
typedef struct {
  rv_det_trace_fn fn;
  void *user;
  int times_only; /* the hook only notes when each tensor is ready (benchmarks): the
                   * heads then do no work for it (the mask head computes the detected
                   * classes' channels only, as without a hook) */
} rv_det_trace;

/* Final detections of one image (arrays from the arena). */
typedef struct {
  int n;
  float *bboxes;          /* [n, 4] original-image coordinates */
  float *scores;          /* [n] */
  int *labels;            /* [n] class index 0..K-1 */
  unsigned char *masks;   /* [n, mask_h, mask_w] 0/1 or NULL */
  int mask_h, mask_w;
} rv_detections;

/* BBoxHead.get_bboxes: softmax of the (stage-averaged) logits [n, K+1] (double), decode of
 * reg [n, 4K] on rois [n, 5] (clipped to img), division by the scale factor, multiclass NMS
 * -> det->bboxes/scores/labels (arrays of capacity cap, already allocated), det->n. */
rv_status rv_rcnn_get_bboxes(rv_detections *det, const rv_bbox_head *bh, const float *rois,
                             const double *logits, const float *reg, int n, int cap,
                             const rv_img_meta *meta, const rv_rcnn_cfg *cfg, rv_arena *arena,
                             rv_ctx *ctx);

/* Loads "roi_head.bbox_head[.i]" and "roi_head.mask_head[.i]"; num_stages 3 with stds the
 * standard cascade stds, 1 with [0.1, 0.1, 0.2, 0.2]; stds may be NULL for those defaults. */
rv_status rv_roi_head_load(rv_roi_head *h, rv_params *p, const char *prefix,
                           int num_stages, const double (*stds)[4], rv_ctx *ctx);
void rv_roi_head_free(rv_roi_head *h);
/* Test: proposals [n, 4] (resized coords) + feats (levels strides 4..32) -> detections in
 * original coordinates (NMS order), with masks pasted at ori size if the head has masks.
 * mmdet 2.11 quirks kept: the cascade averages raw logits over stages and refines rois with
 * the argmax foreground class; boxes are divided by the scale factor before NMS; with one
 * stage (StandardRoIHead) a roi whose y2 is exactly 0 gets zero logits and deltas (its
 * batch-padding rule) and a detection whose mask roi has y2 == 0 gets an empty mask. */
rv_status rv_roi_head_simple_test(rv_detections *det, const rv_roi_head *h,
                                  const rv_tensor *feats, const float *proposals, int n,
                                  const rv_img_meta *meta, const rv_rcnn_cfg *cfg,
                                  const rv_det_trace *trace, rv_arena *arena, rv_ctx *ctx);

/* ---- RetinaNet (heads/retina.c) -------------------------------------------------------- */
typedef struct {
  int stacked_convs;
  rv_det_layer cls_convs[8], reg_convs[8]; /* 3x3 + ReLU (no norm) */
  rv_det_layer cls, reg;                   /* retina_cls (A*K), retina_reg (A*4) */
  int num_anchors, num_classes;
  float ratios[3], scales[3];
} rv_retina_head;
typedef struct {
  int nms_pre;      /* 1000 */
  float score_thr;  /* 0.05 */
  float iou_thr;    /* 0.5 */
  int max_per_img;  /* 100 */
} rv_retina_cfg;
rv_retina_cfg rv_retina_cfg_default(void);
rv_status rv_retina_head_load(rv_retina_head *h, rv_params *p, const char *prefix,
                              rv_ctx *ctx);
void rv_retina_head_free(rv_retina_head *h);
/* Raw outputs of one level: cls [1, A*K, H, W], reg [1, 4A, H, W]. */
rv_status rv_retina_forward_level(rv_tensor *cls, rv_tensor *reg, const rv_retina_head *h,
                                  rv_tensor feat, rv_arena *arena, rv_ctx *ctx);
/* Detections (original coordinates) from raw outputs of `levels` levels with strides. */
rv_status rv_retina_get_bboxes(rv_detections *det, const rv_retina_head *h,
                               const rv_tensor *cls, const rv_tensor *reg, const int *strides,
                               int levels, const rv_img_meta *meta, const rv_retina_cfg *cfg,
                               rv_arena *arena, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
