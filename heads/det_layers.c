/* The RoI heads' batched conv stacks over nn/layer.h layers. See det.h. */
#include "heads/det.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- batched RoI conv stack ------------------------------------------------------------- */

/* With AVX-512 and every layer F(4x4) at one width: the channels-last Winograd path
 * (rv_conv2d_winograd_rois_f32), the first layer reading NCHW, the middle ones NHWC, the
 * last writing NCHW; the same results as the NCHW path bit for bit. */
static rv_status conv_stack_rois_nhwc(float *y, const rv_layer *layers, int nl,
                                      const float *x, int n, int s, int bf16, int out_nchw,
                                      rv_arena *scratch) {
  const int c = layers[0].cin;
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  float *a = nl > 1 ? rv_arena_floats(scratch, (size_t)n * c * s * s) : NULL;
  if (nl > 1 && !a) return RV_ERR_NOMEM;
  const float *cur = x;
  rv_status st = RV_OK;
  for (int i = 0; i < nl && st == RV_OK; i++) {
    /* the last layer lands in y and reads a: layers alternate a / y backwards from it */
    float *out = i == nl - 1 ? y : (nl - 2 - i) % 2 == 0 ? a : y;
    int layout = (i == 0 ? RV_ROIS_IN_NCHW : 0) | (i == nl - 1 && out_nchw ? RV_ROIS_OUT_NCHW : 0);
    st = bf16 ? rv_conv2d_winograd_rois_bf16(out, cur, layers[i].wbf16, layers[i].b, n, c, s,
                                             s, c, 1, RV_ACT_RELU, layout, scratch)
              : rv_conv2d_winograd_rois_f32(out, cur, layers[i].w, layers[i].b, n, c, s, s, c, 1,
                                            RV_ACT_RELU, 4, layout, scratch);
    cur = out;
  }
  rv_arena_release(scratch, mk);
  return st;
}

/* Each layer is one rv_conv2d_f32 over all n rois in NCHW, so its algorithm rule applies
 * to the whole batch (Winograd F(4x4) for 256 channels on 7x7 / 14x14 rois, with the weight
 * transform done once per layer). Layers ping-pong between a scratch buffer and y, so the
 * last one lands in y; a second scratch buffer stands in for y when a middle layer is wider
 * than the last. */
/* Whether the stack takes the channels-last path (*bf16: with its GEMMs in bf16) */
static int rois_path(const rv_layer *layers, int nl, int n, int s, int *bf16) {
  int rois = rv_winograd_rois_supported() && nl >= 1;
  for (int i = 0; i < nl; i++) {
    RV_ASSERT(layers[i].k == 3 && (i == 0 || layers[i].cin == layers[i - 1].cout));
    rv_conv_algo a = rv_conv3x3_algo(layers[i].algo, n, layers[i].cin, layers[i].cout, s, s);
    if (a != RV_CONV_WINOGRAD4 || layers[i].cin != layers[0].cin || layers[i].cout != layers[0].cin)
      rois = 0;
  }
  /* bf16 (nn/conv.h, bf16 mode): the channels-last path with every layer packed for it, else each
   * layer's rv_layer_conv */
  *bf16 = nl >= 1 && layers[0].wbf16 != NULL;
  for (int i = 0; i < nl; i++)
    if (!layers[i].wbf16 || !layers[i].wbf16_rois) *bf16 = 0;
  if (nl >= 1 && layers[0].wbf16 && !*bf16) rois = 0;
  return rois;
}

rv_status rv_det_conv_stack_rois_hwc(float *y, const rv_layer *layers, int nl, const float *x,
                                     int n, int s, rv_arena *scratch) {
  int bf16;
  if (!rois_path(layers, nl, n, s, &bf16)) return RV_ERR_UNSUPPORTED;
  if (n <= 0) return RV_OK;
  return conv_stack_rois_nhwc(y, layers, nl, x, n, s, bf16, 0, scratch);
}

rv_status rv_det_conv_stack_rois(float *y, const rv_layer *layers, int nl, const float *x,
                                 int n, int s, rv_arena *scratch) {
  if (n <= 0) return RV_OK;
  const size_t ss = (size_t)s * s;
  int maxc = 0, wide = 0, bf16;
  for (int i = 0; i < nl; i++) {
    if (layers[i].cout > maxc) maxc = layers[i].cout;
    if (layers[i].cout > layers[nl - 1].cout) wide = 1;
  }
  if (rois_path(layers, nl, n, s, &bf16))
    return conv_stack_rois_nhwc(y, layers, nl, x, n, s, bf16, 1, scratch);
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  float *a = nl > 1 ? rv_arena_floats(scratch, (size_t)n * maxc * ss) : NULL;
  float *b = nl > 2 && wide ? rv_arena_floats(scratch, (size_t)n * maxc * ss) : y;
  if ((nl > 1 && !a) || !b) {
    rv_arena_release(scratch, mk);
    return RV_ERR_NOMEM;
  }
  const float *cur = x;
  rv_status st = RV_OK;
  for (int i = 0; i < nl && st == RV_OK; i++) {
    float *out = i == nl - 1 ? y : (nl - 1 - i) % 2 ? a : b;
    st = rv_layer_conv(out, &layers[i], cur, n, s, s, RV_ACT_RELU, scratch);
    cur = out;
  }
  rv_arena_release(scratch, mk);
  return st;
}
