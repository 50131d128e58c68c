/* Detection heads: the RPN, the RoI box heads (ConvFC / Shared2FC), the FCN mask head, the
 * cascade and single-stage RoI test logic, and RetinaNet, over the reusable detection ops of
 * heads/det_ops.h (anchors, box coder, NMS, RoIAlign, mask paste). Semantics follow mmdet
 * 2.11 + mmcv 1.7 at test time (tests/fixtures/SEMANTICS.md sections C-H).
 *
 *   rv_params P = rv_params_view(w);   // weights by their official state_dict names
 *   rv_rpn_head rpn;
 *   rv_rpn_head_load(&rpn, &P, "rpn_head", ctx);
 *   rv_rpn_proposals(&props, &rpn, pyramid, 5, &meta, &cfg, arena, ctx);
 *   ...
 *   rv_rpn_head_free(&rpn);
 *
 * Weights are copied (BatchNorm folded into the preceding conv) at load time and never
 * written afterwards; activations and outputs come from the caller's arena.
 */
#ifndef RV_HEADS_DET_H
#define RV_HEADS_DET_H

#include "kernels/ops.h"
#include "heads/det_ops.h"
#include "nn/layer.h"
#include <ravlt/model.h>
#include "nn/param.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- RoI conv stacks (heads/det_layers.c) ---------------------------------------------- */
/* Stack of nl 3x3 pad-1 conv + ReLU layers over n rois of s x s: x [n, cin, s, s] ->
 * y [n, cout, s, s] (y must not alias x). Each layer is one rv_layer_conv over all rois
 * (with the layer's algo). RV_ERR_NOMEM if the scratch arena is short. */
rv_status rv_det_conv_stack_rois(float *y, const rv_layer *layers, int nl, const float *x,
                                 int n, int s, rv_arena *scratch);
/* The same with y [n, s, s, cout] (channels-last) where the stack runs on the channels-last
 * Winograd path (AVX-512, every layer F(4x4) at one width: rv_conv2d_winograd_rois_f32 / _bf16,
 * the same sums), RV_ERR_UNSUPPORTED (nothing done) elsewhere. */
rv_status rv_det_conv_stack_rois_hwc(float *y, const rv_layer *layers, int nl, const float *x,
                                     int n, int s, rv_arena *scratch);
/* ---- RPN (heads/rpn.c) ----------------------------------------------------------------- */
typedef struct {
  rv_layer conv;            /* rpn_conv 3x3 (+ReLU) */
  rv_layer clsreg;          /* rpn_cls 1x1 (A rows) and rpn_reg 1x1 (4A rows) stacked: one
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
  rv_layer convs[8];  /* shared_convs.i (ConvModule 3x3, BN folded, ReLU) */
  rv_layer fcs[4];    /* shared_fcs.i (Linear + ReLU) */
  rv_layer fc_cls;    /* K+1 (background last) */
  rv_layer fc_reg;    /* 4K (class-specific) or 4 (class agnostic) */
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
  rv_layer convs[8];   /* 3x3 + bias + ReLU */
  rv_layer upsample;   /* ConvTranspose2d 2x2 s2 weight [cin, cout, 2, 2] + ReLU */
  rv_layer logits;     /* 1x1 -> K */
  int in_channels, roi_size, num_classes;
} rv_mask_head;
rv_status rv_mask_head_load(rv_mask_head *h, rv_params *p, const char *prefix,
                            rv_ctx *ctx);
void rv_mask_head_free(rv_mask_head *h);
/* roi_feats [n, C, 14, 14] -> logits [n, K, 28, 28], or with labels != NULL only the
 * channel labels[i] of each roi: logits [n, 1, 28, 28]. With labels, AVX-512 and the conv
 * stack on its channels-last path, the deconv and the label's logits are fused over all rois
 * (heads/mask_head.c; in bf16 mode, when the convs are, the deconv's GEMM in bf16). */
rv_status rv_mask_head_forward(float *logits, const rv_mask_head *h, const float *roi_feats,
                               int n, const int *labels, rv_arena *scratch, rv_ctx *ctx);
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

/* Final detections of one image: rv_detections, defined in <ravlt/model.h>. */

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
  rv_layer cls_convs[8], reg_convs[8]; /* 3x3 + ReLU (no norm) */
  rv_layer cls, reg;                   /* retina_cls (A*K), retina_reg (A*4) */
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

/* ---- bf16 mode (nn/conv.h, bf16 mode) ------------------------------------------------------------
 * The heads' GEMM-heavy layers switched to bf16 (on 1) or back to float32 (on 0: float32
 * results bit for bit again): the RPN's 3x3 conv, the RoI box heads' shared convs and fcs,
 * the mask heads' convs, RetinaNet's conv towers. The classifiers and regressors (rpn_cls /
 * rpn_reg, fc_cls / fc_reg, the mask logits, retina_cls / retina_reg) and the mask
 * upsample stay float32. */
rv_status rv_rpn_head_set_bf16(rv_rpn_head *h, int on, rv_ctx *ctx);
rv_status rv_roi_head_set_bf16(rv_roi_head *h, int on, rv_ctx *ctx);
rv_status rv_retina_head_set_bf16(rv_retina_head *h, int on, rv_ctx *ctx);
#ifdef __cplusplus
}
#endif
#endif
