/* Convolution / linear layers of the detection heads: loading by official key names (with
 * BatchNorm folded) and the forward helpers used by the RPN, box, mask and RetinaNet heads. */
#include "heads/det.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int rv_det_has(const rv_weights *w, const char *name) { return rv_weights_find(w, name) != NULL; }

static rv_status load_f32(float **dst, const rv_wtensor *t, rv_ctx *ctx) {
  size_t n = rv_wtensor_numel(t);
  *dst = rv_malloc((n ? n : 1) * sizeof(float));
  if (!*dst) return rv_error(ctx, RV_ERR_NOMEM, "weights: out of memory for %s", t->name);
  rv_wtensor_to_f32(t, *dst);
  return RV_OK;
}

static rv_status check_float(const rv_wtensor *t, rv_ctx *ctx) {
  if (t->dtype != RV_DT_F32 && t->dtype != RV_DT_F16 && t->dtype != RV_DT_BF16 &&
      t->dtype != RV_DT_F64)
    return rv_error(ctx, RV_ERR_MODEL, "weights: %s has dtype %s, expected a float type",
                    t->name, rv_dtype_name(t->dtype));
  return RV_OK;
}

rv_status rv_det_layer_load(rv_det_layer *l, const rv_weights *w, const char *name, int k,
                            rv_ctx *ctx) {
  memset(l, 0, sizeof *l);
  l->algo = RV_CONV_AUTO;
  char key[512];
  snprintf(key, sizeof key, "%s.weight", name);
  const rv_wtensor *tw = rv_weights_find(w, key);
  if (!tw) return rv_error(ctx, RV_ERR_NOTFOUND, "weights: missing tensor %s", key);
  RV_TRY(check_float(tw, ctx));
  if (k == 0) {
    if (tw->ndim != 2)
      return rv_error(ctx, RV_ERR_MODEL, "weights: %s has %d dims, expected 2 (linear)", key,
                      tw->ndim);
    l->cout = (int)tw->shape[0];
    l->cin = (int)tw->shape[1];
    l->k = 0;
  } else {
    int kk = k < 0 ? -k : k;
    if (tw->ndim != 4 || tw->shape[2] != kk || tw->shape[3] != kk)
      return rv_error(ctx, RV_ERR_MODEL, "weights: %s is not a %dx%d conv kernel", key, kk, kk);
    /* transposed conv (k < 0): PyTorch layout [cin, cout, k, k] */
    l->cout = (int)tw->shape[k < 0 ? 1 : 0];
    l->cin = (int)tw->shape[k < 0 ? 0 : 1];
    l->k = kk;
  }
  if (l->cout <= 0 || l->cin <= 0)
    return rv_error(ctx, RV_ERR_MODEL, "weights: %s has an empty shape", key);
  RV_TRY(load_f32(&l->w, tw, ctx));
  snprintf(key, sizeof key, "%s.bias", name);
  const rv_wtensor *tb = rv_weights_find(w, key);
  l->b = rv_calloc((size_t)l->cout, sizeof(float));
  if (!l->b) {
    rv_det_layer_free(l);
    return rv_error(ctx, RV_ERR_NOMEM, "weights: out of memory for %s", key);
  }
  if (tb) {
    rv_status st = check_float(tb, ctx);
    if (st == RV_OK && (int64_t)rv_wtensor_numel(tb) != l->cout)
      st = rv_error(ctx, RV_ERR_MODEL, "weights: %s has %zu values, expected %d", key,
                    rv_wtensor_numel(tb), l->cout);
    if (st != RV_OK) {
      rv_det_layer_free(l);
      return st;
    }
    rv_wtensor_to_f32(tb, l->b);
  }
  return RV_OK;
}

rv_status rv_det_layer_load_convmodule(rv_det_layer *l, const rv_weights *w, const char *prefix,
                                       int k, rv_ctx *ctx) {
  char key[512];
  snprintf(key, sizeof key, "%s.conv", prefix);
  RV_TRY(rv_det_layer_load(l, w, key, k, ctx));
  snprintf(key, sizeof key, "%s.bn.running_mean", prefix);
  if (!rv_weights_find(w, key)) return RV_OK;
  const char *parts[4] = {"running_mean", "running_var", "weight", "bias"};
  float *v[4] = {0};
  rv_status st = RV_OK;
  for (int i = 0; i < 4 && st == RV_OK; i++) {
    snprintf(key, sizeof key, "%s.bn.%s", prefix, parts[i]);
    const rv_wtensor *t = rv_weights_find(w, key);
    if (!t)
      st = rv_error(ctx, RV_ERR_NOTFOUND, "weights: missing tensor %s", key);
    else if (check_float(t, ctx) != RV_OK)
      st = RV_ERR_MODEL;
    else if ((int64_t)rv_wtensor_numel(t) != l->cout)
      st = rv_error(ctx, RV_ERR_MODEL, "weights: %s has %zu values, expected %d", key,
                    rv_wtensor_numel(t), l->cout);
    else
      st = load_f32(&v[i], t, ctx);
  }
  if (st == RV_OK)
    rv_bn_fold(l->w, l->b, l->cout, (size_t)l->cin * l->k * l->k, v[0], v[1], v[2], v[3],
               1e-5f);
  for (int i = 0; i < 4; i++) rv_free(v[i]);
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
