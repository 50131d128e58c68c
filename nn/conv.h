/* ConvModule: an mmcv ConvModule (conv [+ BN] [+ ReLU]) or a plain nn.Conv2d loaded from a
 * checkpoint (through nn/param.h), with eval-mode BatchNorm folded into the convolution at
 * load time. Its algorithms are options of the one type: m.algo picks direct / im2col-GEMM /
 * Winograd (kernels/conv.c's rule), rv_convmod_upsampled_into the conv of a bilinearly
 * upsampled input without the upsampled map.
 *
 *   rv_convmod m;
 *   rv_params P = rv_params_view(w);   // or a recording rv_params_init
 *   // "decode_head.bottleneck" -> .conv.weight [.conv.bias] [.bn.{weight,bias,running_*}]
 *   if (rv_convmod_load(&m, &P, "decode_head.bottleneck", -1, 512, 3, 1, RV_ACT_RELU, ctx))
 *     ...error in ctx...;
 *   rv_tensor y;
 *   rv_convmod_forward(&m, &y, x, arena, ctx);        // y from the arena
 *   rv_convmod_free(&m);
 *
 * Key layout accepted for prefix P: "P.conv.weight" (ConvModule; then optional "P.conv.bias"
 * and "P.bn.*" with eps 1e-5), else "P.weight" (plain conv; optional "P.bias"). The
 * weight is copied (float32); the module never points into the weight file. Padding is
 * (k-1)/2 (all convolutions of the FPN / UperNet / Semantic FPN heads are 'same').
 */
#ifndef RV_NN_CONV_H
#define RV_NN_CONV_H

#include "kernels/ops.h"
#include "nn/param.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a module computes. */
typedef enum {
  RV_MOD_CONV = 0, /* nn.Conv2d / ConvModule: w [cout, cin, k, k] */
  RV_MOD_LINEAR,   /* nn.Linear: w [cout, cin], k 0 */
  RV_MOD_DECONV    /* nn.ConvTranspose2d: w [cin, cout, k, k] */
} rv_mod_kind;

/* The one module type of nn/: rv_convmod (this file's loader and forwards) and rv_layer
 * (nn/layer.h: the detection heads' loader, linear and transposed convs) are this struct. */
typedef struct {
  int cin, cout, k, stride, pad;
  rv_act act;   /* applied after bias (ReLU for ConvModule with an act_cfg); rv_layer's
                 * forwards take the act as an argument instead (loaded as none) */
  float *w;     /* [cout, cin, k, k], BN folded */
  float *b;     /* [cout] (zeros when the checkpoint has no bias and no BN) */
  rv_conv_algo algo; /* RV_CONV_AUTO after load; a model may set RV_CONV_AUTO_FAST */
  rv_mod_kind kind;
  uint32_t *wbf16;   /* NULL (float32), or the weights packed for the bf16 forward
                      * (rv_convmod_set_bf16 below) */
  int wbf16_rois;    /* 1: wbf16 in the RoI stacks' channels-last layout (rv_convmods_set_bf16_rois) */
  int wbf16_wino;    /* a 3x3 module's wbf16: the Winograd tile it is packed for (2 or 4) */
  uint32_t *wbf16_up;   /* bf16 mode, a module switched by rv_convmods_set_bf16_upsampled: the
                         * tap weights of rv_conv3x3_upsampled_bf16_packed */
} rv_convmod;

/* The one reading path of the module type (rv_convmod_load and nn/layer.h's loaders are
 * wrappers): the weight `wkey` through nn/param.h (want: the expected shape, -1 any; ndim 2
 * for RV_MOD_LINEAR [cout, cin], else 4: conv [cout, cin, k, k] with a square odd k,
 * transposed [cin, cout, k, k]), the bias `bkey` when present (else zeros; bkey may be
 * NULL), BatchNorm at `bn` ("P.bn", eps 1e-5) folded when `bn`.weight is present (bn may be
 * NULL). Leaves stride 1, pad k/2, act none, algo RV_CONV_AUTO; m is zeroed on error. */
rv_status rv_mod_read(rv_convmod *m, rv_params *p, rv_mod_kind kind, const char *wkey,
                      const int64_t *want, const char *bkey, const char *bn, rv_ctx *ctx);

/* Load the module at `prefix`. cin / cout / k: expected values, or -1 to accept the
 * checkpoint's. RV_ERR_NOTFOUND when no weight exists, RV_ERR_MODEL on a shape mismatch
 * (nn/param.h's wording: the key and both shapes). */
rv_status rv_convmod_load(rv_convmod *m, rv_params *p, const char *prefix, int cin, int cout,
                          int k, int stride, rv_act act, rv_ctx *ctx);
/* 1 if a ConvModule or plain conv weight exists at prefix. */
int rv_convmod_exists(const rv_params *p, const char *prefix);
void rv_convmod_free(rv_convmod *m);

/* Output spatial size for an input of h x w. */
void rv_convmod_out_size(const rv_convmod *m, int h, int w, int *oh, int *ow);

/* The one conv forward (every forward below and rv_layer_conv): y = act([y if accumulate]
 * + conv(x) + b) with the module's weights, stride, pad and algo and the given act; batch
 * item i at y + i*y_batch_stride (floats), or with y_batch_stride 0 the whole batch in one
 * kernel call (y contiguous [x.n, cout, oh, ow]: the RoI heads' convs over all rois). */
rv_status rv_convmod_run(const rv_convmod *m, float *y, size_t y_batch_stride, rv_tensor x,
                         rv_act act, int accumulate, rv_arena *a, rv_ctx *ctx);

/* y = act(conv(x) + b), y allocated from the arena as [x.n, cout, oh, ow]. */
rv_status rv_convmod_forward(const rv_convmod *m, rv_tensor *y, rv_tensor x, rv_arena *a,
                             rv_ctx *ctx);
/* Same, writing batch item i at y + i*y_batch_stride (floats): lets a caller write
 * straight into a channel slice of a concatenation buffer. */
rv_status rv_convmod_forward_into(const rv_convmod *m, float *y, size_t y_batch_stride,
                                  rv_tensor x, rv_arena *a, rv_ctx *ctx);
/* y = act(y + conv(x) + b) (y's contents added before the act), same layout as _into. */
rv_status rv_convmod_accumulate_into(const rv_convmod *m, float *y, size_t y_batch_stride,
                                     rv_tensor x, rv_arena *a, rv_ctx *ctx);

/* y = act([y if accumulate] + conv(up(x)) + b), up = bilinear resize of x to oh x ow
 * (align_corners=False), for a 3x3 stride-1 pad-1 module, without the upsampled map
 * (rv_conv3x3_upsampled_f32: cheaper by the area ratio); same layout as _into. */
rv_status rv_convmod_upsampled_into(const rv_convmod *m, float *y, size_t y_batch_stride,
                                   rv_tensor x, int oh, int ow, int accumulate, rv_arena *a,
                                   rv_ctx *ctx);

/* dst = the conv of src restricted to input channels [c0, c0 + cin) (weights copied:
 * [cout, cin, k, k]); with_bias_act: src's bias and act, else none (the parts of a conv
 * over a concatenation, summed with rv_convmod_accumulate_into, the last one with the bias
 * and act). dst's algo is RV_CONV_AUTO. */
rv_status rv_convmod_slice_inputs(rv_convmod *dst, const rv_convmod *src, int c0, int cin,
                                  int with_bias_act, rv_ctx *ctx);


/* ---- bf16 mode ----------------------------------------------------------------------------
 * The bf16 mode of nn/ modules (RV_PRECISION_BF16 beyond the backbone): a module switched
 * on holds its weights packed once for the AVX512_BF16 kernels (rv_convmod.wbf16), and its
 * forwards (rv_convmod_forward*, rv_layer_conv, rv_layer_linear_ex) take them: both operands
 * rounded to bfloat16, products summed in float32, bias and act in float32.
 *
 *   kind / shape                      bf16 forward
 *   linear                            rv_linear_bf16 (kernels/gemm_bf16.c)
 *   conv 1x1 stride 1                 rv_pointwise_bf16
 *   conv 3x3 stride 1 pad 1, where    rv_conv2d_winograd_bf16_m: the float32 rule's Winograd
 *   the float32 rule takes Winograd   tile, the GEMMs on the bf16 kernel, the transforms in
 *   with the tile the module is       float32; packed for F(2x2) under RV_CONV_AUTO (the
 *   packed for                        detection FPN and RPN, UperNet's PPM bottleneck), else
 *                                     F(4x4) (RV_CONV_AUTO_FAST: dense heads). The transforms
 *                                     amplify bf16's rounding: F(2x2) ~3x, F(4x4) ~10x a
 *                                     direct conv's (tests/unit/backbone/test_bf16_gemm.c)
 *   RoI conv stacks (heads/det.h)     rv_conv2d_winograd_rois_bf16 (rv_convmods_set_bf16_rois)
 *   conv of an upsampled map          rv_conv3x3_upsampled_bf16_packed (the taps' GEMM in
 *                                     bf16, its weights packed by
 *                                     rv_convmods_set_bf16_upsampled; other modules:
 *                                     rv_conv3x3_upsampled_bf16, packed per call)
 * Other modules (transposed convs, strided convs, 3x3 convs the float32 rule runs by
 * im2col, an RV_CONV_AUTO_FAST module's F(2x2) calls at mid sizes, accumulating 1x1
 * forwards) keep the float32 forward.
 * Switching off frees the packed weights: the float32 forward is then the one it was,
 * bit for bit. Only where rv_bf16_supported() (the model checks before switching). */
/* on 1: pack m's weights for its bf16 forward (nothing for a module without one, or an
 * unloaded one: w NULL); on 0: free them. RV_ERR_NOMEM (m unchanged) when memory is short. */
rv_status rv_convmod_set_bf16(rv_convmod *m, int on, rv_ctx *ctx);
/* The same over count modules; on failure the ones switched are switched back. */
rv_status rv_convmods_set_bf16(rv_convmod *m, int count, int on, rv_ctx *ctx);
/* The same for the 3x3 convs of a RoI conv stack (heads/det_layers.c): the weights in the
 * layout of rv_conv2d_winograd_rois_bf16 (wbf16_rois 1; other modules as above). Such a
 * module's bf16 forward is the stack's only: rv_convmod_bf16_conv declines it. */
rv_status rv_convmods_set_bf16_rois(rv_convmod *m, int count, int on, rv_ctx *ctx);
/* The same as rv_convmods_set_bf16 for 3x3 modules that also convolve upsampled maps
 * (rv_convmod_upsampled_into: UperNet's fpn_bottleneck slices), their tap weights packed
 * too (wbf16_up). */
rv_status rv_convmods_set_bf16_upsampled(rv_convmod *m, int count, int on, rv_ctx *ctx);
/* y (image i at y + i * y_batch_stride) = act([y if accumulate] + conv(x) + b) over n images
 * by m's bf16 forward; RV_ERR_UNSUPPORTED (nothing written) where m has none for this call
 * (the caller runs the float32 one). */
rv_status rv_convmod_bf16_conv(const rv_convmod *m, float *y, size_t y_batch_stride,
                               const float *x, int n, int h, int w, rv_act act, int accumulate,
                               rv_conv_algo algo, rv_arena *scratch);
#ifdef __cplusplus
}
#endif
#endif
