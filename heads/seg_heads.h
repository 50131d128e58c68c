/* Semantic segmentation decode heads (mmseg 0.13), eval mode, BN folded at load:
 * the Semantic FPN head (`decode_heads/fpn_head.py:FPNHead`) and the pixel classifier
 * `conv_seg` shared by every BaseDecodeHead (UperNet's classifier after necks/uper.h).
 *
 *   rv_fpn_head_config cfg = rv_fpn_head_default_config();   // strides 4,8,16,32
 *   rv_fpn_head *h;
 *   if (rv_fpn_head_load(&h, &cfg, weights, "decode_head.", ctx)) ...;
 *   rv_tensor logits;                                  // [n, num_classes, H0, W0]
 *   rv_fpn_head_forward(h, &logits, fpn_outs, 4, arena, ctx);
 *   rv_fpn_head_free(h);
 *
 * FPNHead semantics (SEMANTICS.md I.26), level i with stride s_i, x_i its input:
 *   scale head i = max(1, log2(s_i/s_0)) x [ConvModule 3x3 (BN, ReLU)
 *                  + (s_i != s_0) nn.Upsample(scale_factor 2, bilinear, align_corners False)]
 *   out = head_0(x_0) + sum_{i>0} bilinear(head_i(x_i), size of head_0(x_0))
 *   logits = conv_seg(out)              (dropout is the identity at test time)
 * The x2 upsample gives floor(2h) rows with src = (dst + 0.5) * 0.5 - 0.5; odd sizes
 * overshoot (7 -> 14 -> 28 vs 25) and the final resize brings them back. Keys:
 * scale_heads.<i>.<2k>.{conv,bn}, conv_seg.{weight,bias}.
 */
#ifndef RV_HEADS_SEG_HEADS_H
#define RV_HEADS_SEG_HEADS_H

#include "kernels/ops.h"
#include "nn/conv.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RV_FPN_HEAD_MAX_LEVELS 8
#define RV_FPN_HEAD_MAX_CONVS 8

typedef struct {
  int num_levels;
  int in_channels[RV_FPN_HEAD_MAX_LEVELS];      /* -1: read from the weights */
  int feature_strides[RV_FPN_HEAD_MAX_LEVELS];  /* powers of two, the first the smallest */
  int channels;                                 /* -1: read from the weights */
  int num_classes;                              /* -1: read from the weights */
} rv_fpn_head_config;

/* 4 levels, strides 4, 8, 16, 32, channels/classes/in_channels from the weights. */
rv_fpn_head_config rv_fpn_head_default_config(void);

typedef struct rv_fpn_head rv_fpn_head;

rv_status rv_fpn_head_load(rv_fpn_head **out, const rv_fpn_head_config *cfg, rv_params *p,
                           const char *prefix, rv_ctx *ctx);
void rv_fpn_head_free(rv_fpn_head *h);
const rv_fpn_head_config *rv_fpn_head_config_of(const rv_fpn_head *h);
/* logits [n, num_classes, H0, W0] from the arena. */
rv_status rv_fpn_head_forward(const rv_fpn_head *h, rv_tensor *logits, const rv_tensor *inputs,
                              int num_inputs, rv_arena *a, rv_ctx *ctx);

/* The 1x1 pixel classifier conv_seg (bias, no act). cin / num_classes: expected values or -1. */
rv_status rv_seg_classifier_load(rv_convmod *m, rv_params *p, const char *prefix, int cin,
                                 int num_classes, rv_ctx *ctx);

/* The bf16 mode of the scale heads' convs (nn/conv.h, bf16 mode; conv_seg stays float32); on 0 frees
 * it. */
rv_status rv_fpn_head_set_bf16(rv_fpn_head *h, int on, rv_ctx *ctx);
#ifdef __cplusplus
}
#endif
#endif
