/* The bf16 mode of nn/ modules (RV_PRECISION_BF16 beyond the backbone): a module switched
 * on holds its weights packed once for the AVX512_BF16 kernels (rv_convmod.wbf16), and its
 * forwards (rv_convmod_forward*, rv_layer_conv, rv_layer_linear_ex) take them: both operands
 * rounded to bfloat16, products summed in float32, bias and act in float32.
 *
 *   kind / shape                      bf16 forward
 *   linear                            rv_linear_bf16 (core/gemm_bf16.c)
 *   conv 1x1 stride 1                 rv_pointwise_bf16
 *   conv 3x3 stride 1 pad 1, where    rv_conv2d_winograd_bf16: F(4x4, 3x3), the GEMMs on the
 *   the float32 rule takes F(4x4)     bf16 kernel, the transforms in float32 (its rounding
 *                                     error is ten times a direct conv's: the transforms
 *                                     amplify it; tests/test_bf16_gemm.c)
 *   RoI conv stacks (heads/det.h)     rv_conv2d_winograd_rois_bf16 (rv_convmods_set_bf16_rois)
 *   conv of an upsampled map          rv_conv3x3_upsampled_bf16 (the taps' GEMM in bf16)
 * Other modules (transposed convs, strided convs, 3x3 convs the float32 rule runs by
 * im2col or F(2x2), accumulating 1x1 forwards) keep the float32 forward.
 * Switching off frees the packed weights: the float32 forward is then the one it was,
 * bit for bit. Only where rv_bf16_supported() (the model checks before switching). */
#ifndef RV_NN_BF16_H
#define RV_NN_BF16_H
#include "nn/conv.h"
#include "nn/layer.h"
#ifdef __cplusplus
extern "C" {
#endif
/* on 1: pack m's weights for its bf16 forward (nothing for a module without one, or an
 * unloaded one: w NULL); on 0: free them. RV_ERR_NOMEM (m unchanged) when memory is short. */
rv_status rv_convmod_set_bf16(rv_convmod *m, int on, rv_ctx *ctx);
/* The same over count modules; on failure the ones switched are switched back. */
rv_status rv_convmods_set_bf16(rv_convmod *m, int count, int on, rv_ctx *ctx);
/* The same for the 3x3 convs of a RoI conv stack (heads/det_layers.c): the weights in the
 * layout of rv_conv2d_winograd_rois_bf16 (wbf16_rois 1; other modules as above). Such a
 * module's bf16 forward is the stack's only: rv_convmod_bf16_conv declines it. */
rv_status rv_convmods_set_bf16_rois(rv_convmod *m, int count, int on, rv_ctx *ctx);
/* y (image i at y + i * y_batch_stride) = act([y if accumulate] + conv(x) + b) over n images
 * by m's bf16 forward; RV_ERR_UNSUPPORTED (nothing written) where m has none for this call
 * (the caller runs the float32 one). */
rv_status rv_convmod_bf16_conv(const rv_convmod *m, float *y, size_t y_batch_stride,
                               const float *x, int n, int h, int w, rv_act act, int accumulate,
                               rv_conv_algo algo, rv_arena *scratch);
/* rv_layer_linear with a status and scratch (the bf16 forward packs x's rows there);
 * RV_ERR_NOMEM if scratch is short. */
rv_status rv_layer_linear_ex(float *y, const rv_layer *l, const float *x, int n, rv_act act,
                             rv_arena *scratch);
#ifdef __cplusplus
}
#endif
#endif
