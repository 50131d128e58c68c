/* Post-processing of semantic segmentation logits (mmseg 0.13 test time): bilinear resize of
 * [C, H, W] score planes, fused with the per-pixel argmax (simple test) or with softmax and
 * accumulation (aug test), plus the top-1/top-2 margin used to compare label maps.
 *
 *   rv_seg_resize_planes(y, x, C, h, w, oh, ow, scratch);      // == rv_resize_bilinear_f32
 *   rv_seg_resize_argmax(labels, x, C, h, w, oh, ow, scratch); // argmax(resize(x))
 *   rv_seg_resize_softmax_add(acc, x, C, h, w, oh, ow, flip, scratch);
 *
 * Every resize is bilinear with align_corners=False and gives bit for bit the values of
 * rv_resize_bilinear_f32 (kernels/resize.c, PyTorch's CPU formula
 *   y = l0h * (l0w * x[i0h][i0w] + l1w * x[i0h][i1w]) + l1h * (l0w * x[i1h][i0w] + l1w * x[i1h][i1w])):
 * the inner brackets are computed once per (input row, output column) over a band of output
 * rows (separable evaluation, same operations in the same order), then blended per output row
 * with contiguous loads (for equal widths the horizontal pass is the identity and skipped). The argmax takes the first maximum; the softmax is
 * exp(v - max) / sum_c exp(v_c - max) in float32. Scratch comes from the arena (a band of
 * horizontally resampled rows, about C * 20 * ow floats) and is released before returning.
 * The full-size resized planes are never materialised by the fused variants.
 */
#ifndef RV_MODELS_SEG_POST_H
#define RV_MODELS_SEG_POST_H

#include "core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[C, oh, ow] = bilinear(x[C, h, w]). RV_ERR_NOMEM if the scratch arena cannot grow. */
rv_status rv_seg_resize_planes(float *y, const float *x, int num_planes, int h, int w, int oh,
                               int ow, rv_arena *scratch);
/* labels[oh * ow] = argmax_c bilinear(x)[c] (the first maximum wins). */
rv_status rv_seg_resize_argmax(int32_t *labels, const float *x, int num_classes, int h, int w,
                               int oh, int ow, rv_arena *scratch);
/* acc[C, oh, ow] += softmax_c(bilinear(x)); if flip, the result is mirrored left-right
 * before the add (the flip-back of a horizontally flipped test image). */
rv_status rv_seg_resize_softmax_add(float *acc, const float *x, int num_classes, int h, int w,
                                    int oh, int ow, int flip, rv_arena *scratch);

/* Two successive resizes h x w -> mh x mw -> oh x ow (mmseg's encode_decode to the input
 * size, then the rescale to ori_shape), fused band by band: the mh x mw planes are never
 * materialised, the values are bit-identical to two rv_resize_bilinear_f32 calls. mh = 0:
 * one resize. A stage between equal sizes is the identity and is skipped. */
rv_status rv_seg_resize2_argmax(int32_t *labels, const float *x, int num_classes, int h, int w,
                                int mh, int mw, int oh, int ow, rv_arena *scratch);
rv_status rv_seg_resize2_softmax_add(float *acc, const float *x, int num_classes, int h, int w,
                                     int mh, int mw, int oh, int ow, int flip, rv_arena *scratch);

/* labels[i] = argmax_c x[c * hw + i], the first maximum wins. */
void rv_seg_argmax(int32_t *labels, const float *x, int num_classes, size_t hw);

/* margin[i] = p1 - p2, the gap between the two largest softmax probabilities over classes
 * of x[c * hw + i] (double precision; 1 for a single class). A label can only flip between
 * implementations where this is tiny. is_prob: x already holds probabilities. */
void rv_seg_top2_margin(float *margin, const float *x, int num_classes, size_t hw, int is_prob);

#ifdef __cplusplus
}
#endif
#endif
