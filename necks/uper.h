/* UperNet feature fusion (mmseg 0.13 `decode_heads/uper_head.py` up to, not including,
 * conv_seg; the PPM of `psp_head.py`). Eval mode; every ConvModule is conv(no bias) + BN +
 * ReLU, with BN folded at load.
 *
 *   rv_uper_config cfg = rv_uper_default_config();   // 4 inputs, pool scales 1,2,3,6
 *   rv_uper *u;
 *   if (rv_uper_load(&u, &cfg, weights, "decode_head.", ctx)) ...;
 *   rv_tensor fused;                                   // [n, channels, H0, W0]
 *   rv_uper_forward(u, &fused, feats, 4, arena, ctx);
 *   rv_uper_free(u);
 *
 * Semantics (SEMANTICS.md section I.25), x_i = input i, last = num_ins-1:
 *   ppm_s   = bilinear(ReLU(BN(conv1x1(adaptive_avgpool(x_last, s)))), size of x_last)
 *   L_last  = bottleneck3x3(cat[x_last, ppm_1, ppm_2, ppm_3, ppm_6])
 *   L_i     = lateral_convs[i](x_i)  (1x1), i < last
 *   L_{i-1} += bilinear(L_i, size of L_{i-1})         top-down, i = last..1
 *   F_i     = fpn_convs[i](L_i) (3x3), i < last;  F_last = L_last
 *   out     = fpn_bottleneck3x3(cat[F_0, bilinear(F_1..F_last, size of F_0)])
 * Bilinear is align_corners=False (rv_resize_bilinear_f32). Keys under the prefix:
 * psp_modules.<k>.1.{conv,bn}, bottleneck, lateral_convs.<i>, fpn_convs.<i>, fpn_bottleneck.
 */
#ifndef RV_NECKS_UPER_H
#define RV_NECKS_UPER_H

#include "kernels/ops.h"
#include "nn/param.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RV_UPER_MAX_LEVELS 8
#define RV_UPER_MAX_SCALES 8

typedef struct {
  int num_ins;
  int in_channels[RV_UPER_MAX_LEVELS];  /* -1: read from the weights */
  int channels;                          /* -1: read from the weights */
  int num_pool_scales;
  int pool_scales[RV_UPER_MAX_SCALES];
} rv_uper_config;

/* num_ins 4, channels -1, in_channels -1, pool scales (1, 2, 3, 6). */
rv_uper_config rv_uper_default_config(void);

typedef struct rv_uper rv_uper;

rv_status rv_uper_load(rv_uper **out, const rv_uper_config *cfg, rv_params *p,
                       const char *prefix, rv_ctx *ctx);
void rv_uper_free(rv_uper *u);
const rv_uper_config *rv_uper_config_of(const rv_uper *u);

/* *out is allocated from the arena; scratch is released before returning. */
rv_status rv_uper_forward(const rv_uper *u, rv_tensor *out, const rv_tensor *inputs,
                          int num_inputs, rv_arena *a, rv_ctx *ctx);

/* The bf16 mode of the PPM, bottleneck, lateral, FPN and fusion convs (nn/conv.h, bf16 mode); on 0
 * frees it. */
rv_status rv_uper_set_bf16(rv_uper *u, int on, rv_ctx *ctx);
#ifdef __cplusplus
}
#endif
#endif
