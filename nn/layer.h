/* A plain layer read from a checkpoint: nn.Linear, nn.Conv2d (k x k, stride 1, pad k/2) or
 * nn.ConvTranspose2d (2x2, stride 2), bias zeros when absent, a ConvModule's BatchNorm folded
 * in at load; all read by nn/conv.h's rv_mod_read (through nn/param.h) and run by its
 * rv_convmod_run. The detection heads are built of these.
 *
 *   rv_layer fc;
 *   rv_params P = rv_params_view(w);
 *   if (rv_layer_load(&fc, &P, "roi_head.bbox_head.fc_cls", 0, ctx)) ...;  // linear
 *   rv_layer_linear(y, &fc, x, rows, RV_ACT_NONE);
 *   rv_layer_free(&fc);
 */
#ifndef RV_NN_LAYER_H
#define RV_NN_LAYER_H

#include "kernels/ops.h"
#include "nn/conv.h"
#include "nn/param.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The module type of nn/conv.h: w [cout, cin, k, k] (BN folded), linear [cout, cin] or
 * transposed [cin, cout, k, k] (kind); b [cout], never NULL; algo: rv_layer_conv's algorithm
 * (RV_CONV_AUTO from loading; the box and mask heads set RV_CONV_AUTO_FAST on their RoI
 * convs); stride 1, pad k/2, act none. */
typedef rv_convmod rv_layer;
/* Load `<name>.weight` / `<name>.bias` (bias optional -> zeros). k = kernel size expected
 * (0 = linear, -k = ConvTranspose2d with weight [cin, cout, k, k]). For a ConvModule prefix
 * with BN, call rv_layer_load_convmodule. */
rv_status rv_layer_load(rv_layer *l, rv_params *p, const char *name, int k, rv_ctx *ctx);
/* ConvModule `<prefix>.conv.{weight,bias}` with optional `<prefix>.bn.*` (eps 1e-5) folded:
 * rv_convmod_load's reading (k x k, stride 1, act none) of a ConvModule prefix. */
rv_status rv_layer_load_convmodule(rv_layer *l, rv_params *p, const char *prefix, int k,
                                   rv_ctx *ctx);
void rv_layer_free(rv_layer *l);
/* y[n, cout, h, w] = act(conv(x)), stride 1, pad k/2 (k = 1 or 3), with l->algo: the whole
 * batch in one rv_convmod_run call. */
rv_status rv_layer_conv(float *y, const rv_layer *l, const float *x, int n, int h, int w,
                        rv_act act, rv_arena *scratch);
/* Linear over rows: y[n, cout] = act(x[n, cin] W^T + b) (one GEMM). */
void rv_layer_linear(float *y, const rv_layer *l, const float *x, int n, rv_act act);

/* rv_layer_linear with a status and scratch (the bf16 forward packs x's rows there);
 * RV_ERR_NOMEM if scratch is short. */
rv_status rv_layer_linear_ex(float *y, const rv_layer *l, const float *x, int n, rv_act act,
                             rv_arena *scratch);
#ifdef __cplusplus
}
#endif
#endif
