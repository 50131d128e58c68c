/* FPN neck (mmdet 2.11 / mmseg 0.13 `necks/fpn.py`), eval mode, no norm layers.
 *
 *   rv_fpn_config cfg = rv_fpn_default_config();        // 4 levels in, 4 out, no extras
 *   cfg.num_ins = 4; memcpy(cfg.in_channels, dims, 4 * sizeof(int));
 *   cfg.out_channels = 256;                                // or -1: read from the weights
 *   cfg.num_outs = 5;                                      // Mask/Cascade R-CNN: P6 by max-pool
 *   rv_fpn *fpn;
 *   if (rv_fpn_load(&fpn, &cfg, weights, "neck.", ctx)) ...;
 *   rv_tensor outs[5];
 *   rv_fpn_forward(fpn, outs, feats, 4, arena, ctx);        // outs[i] from the arena
 *   rv_fpn_free(fpn);
 *
 * Semantics (SEMANTICS.md section B):
 *   L_i  = lateral_convs[i](C_{i+start_level})      1x1 conv with bias, no act
 *   L_{i-1} += nearest(L_i, size of L_{i-1})          top-down, i = last..1 (src = floor(dst*in/out))
 *   P_i  = fpn_convs[i](L_i)                          3x3 pad 1 with bias, no act
 *   extra levels when num_outs > number of laterals:
 *   - RV_FPN_EXTRA_MAXPOOL (add_extra_convs=False; Faster/Mask/Cascade R-CNN):
 *       P_{k+1} = max_pool2d(P_k, 1, stride 2) = P_k[::2, ::2]   (size ceil(h/2))
 *   - RV_FPN_EXTRA_ON_INPUT (RetinaNet: start_level=1, add_extra_convs='on_input'):
 *       P_first = fpn_convs[L](C_{end_level-1})  3x3 stride 2 pad 1 on the BACKBONE feature
 *   - RV_FPN_EXTRA_ON_LATERAL / RV_FPN_EXTRA_ON_OUTPUT: source is L_last / P_last;
 *     then P_{k+1} = fpn_convs[k+1]([relu](P_k)), relu only if relu_before_extra_convs
 *     (False for RetinaNet: P7 = conv(P6) without ReLU).
 * Weight keys under the prefix: lateral_convs.<i>.conv.{weight,bias},
 * fpn_convs.<j>.conv.{weight,bias} (j >= number of laterals are the extra convs).
 */
#ifndef RV_NECKS_FPN_H
#define RV_NECKS_FPN_H

#include "kernels/ops.h"
#include "nn/param.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RV_FPN_MAX_LEVELS 8

typedef enum {
  RV_FPN_EXTRA_MAXPOOL = 0,   /* add_extra_convs=False */
  RV_FPN_EXTRA_ON_INPUT,      /* 'on_input' (and True with extra_convs_on_inputs=True) */
  RV_FPN_EXTRA_ON_LATERAL,    /* 'on_lateral' */
  RV_FPN_EXTRA_ON_OUTPUT      /* 'on_output' (and True with extra_convs_on_inputs=False) */
} rv_fpn_extra;

typedef struct {
  int num_ins;                            /* number of backbone features given to forward */
  int in_channels[RV_FPN_MAX_LEVELS];     /* their channels; -1: read from the weights */
  int out_channels;                       /* -1: read from the weights */
  int num_outs;
  int start_level;                        /* first backbone level used */
  int end_level;                          /* exclusive; -1 = num_ins */
  rv_fpn_extra extra;
  int relu_before_extra_convs;
} rv_fpn_config;

/* num_ins 4, in_channels -1, out_channels -1, num_outs 4, start 0, end -1, max-pool, no relu. */
rv_fpn_config rv_fpn_default_config(void);
/* RetinaNet neck of RALA_retinanet.py: start_level 1, on_input, num_outs 5. */
rv_fpn_config rv_fpn_retinanet_config(void);

typedef struct rv_fpn rv_fpn;

/* Validates the config, copies the weights found under `prefix` ("neck." or ""), checking
 * every expected key and shape; the resolved config is available from rv_fpn_config_of. */
rv_status rv_fpn_load(rv_fpn **out, const rv_fpn_config *cfg, rv_params *p,
                      const char *prefix, rv_ctx *ctx);
void rv_fpn_free(rv_fpn *f);
const rv_fpn_config *rv_fpn_config_of(const rv_fpn *f);

/* outs[0..num_outs-1] are allocated from the arena (intermediate laterals are released
 * before returning). inputs: num_inputs == cfg.num_ins NCHW tensors of one batch size. */
rv_status rv_fpn_forward(const rv_fpn *f, rv_tensor *outs, const rv_tensor *inputs,
                         int num_inputs, rv_arena *a, rv_ctx *ctx);

/* The bf16 mode of the lateral and output convs (nn/conv.h, bf16 mode); on 0 frees it. */
rv_status rv_fpn_set_bf16(rv_fpn *f, int on, rv_ctx *ctx);
#ifdef __cplusplus
}
#endif
#endif
