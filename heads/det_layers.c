/* Convolution / linear layers of the detection heads: loading by official key names (with
 * BatchNorm folded) and the forward helpers used by the RPN, box, mask and RetinaNet heads. */
#include "heads/det.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int rv_det_has(const rv_params *p, const char *name) { return rv_param_find(p, name) != NULL; }

rv_status rv_det_layer_load(rv_det_layer *l, rv_params *p, const char *name, int k,
                            rv_ctx *ctx) {
  memset(l, 0, sizeof *l);
  l->algo = RV_CONV_AUTO;
  char key[512];
  snprintf(key, sizeof key, "%s.weight", name);
  const int kk = k < 0 ? -k : k;
  /* linear [cout, cin]; conv [cout, cin, k, k]; transposed conv (k < 0) [cin, cout, k, k] */
  const int64_t shape[4] = {-1, -1, kk, kk};
  RV_TRY(rv_param_alloc(p, &l->w, NULL, key, k == 0 ? 2 : 4, shape, ctx));
  const rv_wtensor *tw = rv_param_find(p, key);
  l->cout = (int)tw->shape[k < 0 ? 1 : 0];
  l->cin = (int)tw->shape[k < 0 ? 0 : 1];
  l->k = kk;
  snprintf(key, sizeof key, "%s.bias", name);
  l->b = rv_calloc((size_t)l->cout, sizeof(float));
  if (!l->b) {
    rv_det_layer_free(l);
    return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory for key '%s'", rv_params_path(p), key);
  }
  if (rv_param_find(p, key)) {
    const int64_t vec[1] = {l->cout};
    rv_status st = rv_param_read(p, l->b, key, 1, vec, ctx);
    if (st != RV_OK) {
      rv_det_layer_free(l);
      return st;
    }
  }
  return RV_OK;
}

rv_status rv_det_layer_load_convmodule(rv_det_layer *l, rv_params *p, const char *prefix,
                                       int k, rv_ctx *ctx) {
  char key[512];
  snprintf(key, sizeof key, "%s.conv", prefix);
  RV_TRY(rv_det_layer_load(l, p, key, k, ctx));
  snprintf(key, sizeof key, "%s.bn.running_mean", prefix);
  if (!rv_param_find(p, key)) return RV_OK;
  snprintf(key, sizeof key, "%s.bn", prefix);
  rv_status st = rv_param_bn_fold(p, l->w, l->b, l->cout, (size_t)l->cin * l->k * l->k, key,
                                  1e-5f, ctx);
  if (st != RV_OK) rv_det_layer_free(l);
  return st;
}

void rv_det_layer_free(rv_det_layer *l) {
  rv_free(l->w);
  rv_free(l->b);
  l->w = l->b = NULL;
}

rv_status rv_det_layer_conv(float *y, const rv_det_layer *l, const float *x, int n, int h,
                            int w, rv_act act, rv_arena *scratch) {
  rv_conv_params p = rv_conv_default_params(l->k, 1, l->k / 2);
  p.act = act;
  p.algo = l->algo;
  return rv_conv2d_f32(y, x, l->w, l->b, n, l->cin, h, w, l->cout, p, scratch);
}

void rv_det_layer_linear(float *y, const rv_det_layer *l, const float *x, int n, rv_act act) {
  /* y[n, cout] = x[n, cin] * W[cout, cin]^T + b */
  for (int r = 0; r < n; r++) memcpy(y + (size_t)r * l->cout, l->b, (size_t)l->cout * sizeof(float));
  rv_gemm_f32(0, 1, n, l->cout, l->cin, 1.0f, x, l->cin, l->w, l->cin, 1.0f, y, l->cout);
  if (act != RV_ACT_NONE) rv_act_f32(y, (size_t)n * l->cout, act);
}

/* ---- batched RoI conv stack ------------------------------------------------------------- */

/* With AVX-512 and every layer F(4x4) at one width: the channels-last Winograd path
 * (rv_conv2d_winograd_rois_f32), the first layer reading NCHW, the middle ones NHWC, the
 * last writing NCHW; the same results as the NCHW path bit for bit. */
static rv_status conv_stack_rois_nhwc(float *y, const rv_det_layer *layers, int nl,
                                      const float *x, int n, int s, rv_arena *scratch) {
  const int c = layers[0].cin;
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  float *a = nl > 1 ? rv_arena_floats(scratch, (size_t)n * c * s * s) : NULL;
  if (nl > 1 && !a) return RV_ERR_NOMEM;
  const float *cur = x;
  rv_status st = RV_OK;
  for (int i = 0; i < nl && st == RV_OK; i++) {
    /* the last layer lands in y and reads a: layers alternate a / y backwards from it */
    float *out = i == nl - 1 ? y : (nl - 2 - i) % 2 == 0 ? a : y;
    int layout = (i == 0 ? RV_ROIS_IN_NCHW : 0) | (i == nl - 1 ? RV_ROIS_OUT_NCHW : 0);
    st = rv_conv2d_winograd_rois_f32(out, cur, layers[i].w, layers[i].b, n, c, s, s, c, 1,
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
rv_status rv_det_conv_stack_rois(float *y, const rv_det_layer *layers, int nl, const float *x,
                                 int n, int s, rv_arena *scratch) {
  if (n <= 0) return RV_OK;
  const size_t ss = (size_t)s * s;
  int maxc = 0, wide = 0, rois = rv_winograd_rois_supported() && nl >= 1;
  for (int i = 0; i < nl; i++) {
    RV_ASSERT(layers[i].k == 3 && (i == 0 || layers[i].cin == layers[i - 1].cout));
    if (layers[i].cout > maxc) maxc = layers[i].cout;
    if (layers[i].cout > layers[nl - 1].cout) wide = 1;
    rv_conv_algo a = rv_conv3x3_algo(layers[i].algo, n, layers[i].cin, layers[i].cout, s, s);
    if (a != RV_CONV_WINOGRAD4 || layers[i].cin != layers[0].cin || layers[i].cout != layers[0].cin)
      rois = 0;
  }
  if (rois) return conv_stack_rois_nhwc(y, layers, nl, x, n, s, scratch);
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
    st = rv_det_layer_conv(out, &layers[i], cur, n, s, s, RV_ACT_RELU, scratch);
    cur = out;
  }
  rv_arena_release(scratch, mk);
  return st;
}
