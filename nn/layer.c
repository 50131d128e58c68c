/* Linear / conv / transposed-conv layers read through the parameter loader. See layer.h. */
#include "nn/layer.h"

#include <stdio.h>
#include <string.h>

rv_status rv_layer_load(rv_layer *l, rv_params *p, const char *name, int k, rv_ctx *ctx) {
  char wkey[512], bkey[512];
  snprintf(wkey, sizeof wkey, "%s.weight", name);
  snprintf(bkey, sizeof bkey, "%s.bias", name);
  const int kk = k < 0 ? -k : k;
  const int64_t want[4] = {-1, -1, kk, kk};
  return rv_mod_read(l, p, k == 0 ? RV_MOD_LINEAR : k < 0 ? RV_MOD_DECONV : RV_MOD_CONV, wkey, want,
                     bkey, NULL, ctx);
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
  rv_layer m = *l; /* stride 1, pad k/2 whatever a hand-built layer holds */
  m.stride = 1;
  m.pad = l->k / 2;
  const rv_tensor xt = {(float *)x, n, l->cin, h, w};
  return rv_convmod_run(&m, y, 0, xt, act, 0, scratch, NULL);
}

void rv_layer_linear(float *y, const rv_layer *l, const float *x, int n, rv_act act) {
  /* y[n, cout] = x[n, cin] * W[cout, cin]^T + b */
  for (int r = 0; r < n; r++) memcpy(y + (size_t)r * l->cout, l->b, (size_t)l->cout * sizeof(float));
  rv_gemm_f32(0, 1, n, l->cout, l->cin, 1.0f, x, l->cin, l->w, l->cin, 1.0f, y, l->cout);
  if (act != RV_ACT_NONE) rv_act_f32(y, (size_t)n * l->cout, act);
}

rv_status rv_layer_linear_ex(float *y, const rv_layer *l, const float *x, int n, rv_act act,
                             rv_arena *scratch) {
  if (!l->wbf16) {
    rv_layer_linear(y, l, x, n, act);
    return RV_OK;
  }
  for (int r = 0; r < n; r++) memcpy(y + (size_t)r * l->cout, l->b, (size_t)l->cout * sizeof(float));
  RV_TRY(rv_linear_bf16(y, l->wbf16, x, n, l->cout, l->cin, scratch));
  if (act != RV_ACT_NONE) rv_act_f32(y, (size_t)n * l->cout, act);
  return RV_OK;
}
