/* Linear / conv / transposed-conv layers read through the parameter loader. See layer.h. */
#include "nn/layer.h"

#include <stdio.h>
#include <string.h>

rv_status rv_layer_load(rv_layer *l, rv_params *p, const char *name, int k, rv_ctx *ctx) {
  memset(l, 0, sizeof *l);
  l->algo = RV_CONV_AUTO;
  char key[512];
  snprintf(key, sizeof key, "%s.weight", name);
  const int kk = k < 0 ? -k : k;
  l->kind = k == 0 ? RV_MOD_LINEAR : k < 0 ? RV_MOD_DECONV : RV_MOD_CONV;
  l->stride = 1;
  l->pad = kk / 2;
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
    rv_layer_free(l);
    return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory for key '%s'", rv_params_path(p), key);
  }
  if (rv_param_find(p, key)) {
    const int64_t vec[1] = {l->cout};
    rv_status st = rv_param_read(p, l->b, key, 1, vec, ctx);
    if (st != RV_OK) {
      rv_layer_free(l);
      return st;
    }
  }
  return RV_OK;
}

rv_status rv_layer_load_convmodule(rv_layer *l, rv_params *p, const char *prefix, int k,
                                   rv_ctx *ctx) {
  char key[512];
  snprintf(key, sizeof key, "%s.conv.weight", prefix);
  if (!rv_param_find(p, key)) { /* name the ConvModule's key (rv_convmod_load would accept P.weight) */
    const int64_t shape[4] = {-1, -1, k, k};
    const rv_wtensor *t;
    memset(l, 0, sizeof *l);
    return rv_param_get(p, &t, key, 4, shape, ctx);
  }
  return rv_convmod_load(l, p, prefix, -1, -1, k, 1, RV_ACT_NONE, ctx);
}

void rv_layer_free(rv_layer *l) { rv_convmod_free(l); }

rv_status rv_layer_conv(float *y, const rv_layer *l, const float *x, int n, int h, int w,
                        rv_act act, rv_arena *scratch) {
  rv_conv_params p = rv_conv_default_params(l->k, 1, l->k / 2);
  p.act = act;
  p.algo = l->algo;
  return rv_conv2d_f32(y, x, l->w, l->b, n, l->cin, h, w, l->cout, p, scratch);
}

void rv_layer_linear(float *y, const rv_layer *l, const float *x, int n, rv_act act) {
  /* y[n, cout] = x[n, cin] * W[cout, cin]^T + b */
  for (int r = 0; r < n; r++) memcpy(y + (size_t)r * l->cout, l->b, (size_t)l->cout * sizeof(float));
  rv_gemm_f32(0, 1, n, l->cout, l->cin, 1.0f, x, l->cin, l->w, l->cin, 1.0f, y, l->cout);
  if (act != RV_ACT_NONE) rv_act_f32(y, (size_t)n * l->cout, act);
}

