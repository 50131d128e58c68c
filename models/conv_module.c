/* ConvModule loading (BN folded at load) and forward. See conv_module.h. */
#include "models/conv_module.h"

#include <stdio.h>
#include <string.h>

#define BN_EPS 1e-5f

static const rv_wtensor *find_fmt(const rv_weights *w, char *buf, size_t cap, const char *prefix,
                                  const char *suffix) {
  snprintf(buf, cap, "%s%s", prefix, suffix);
  return rv_weights_find(w, buf);
}

static void shape_str(char *buf, size_t cap, const rv_wtensor *t) {
  size_t o = 0;
  o += (size_t)snprintf(buf + o, cap - o, "[");
  for (int i = 0; i < t->ndim && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, i ? ", %lld" : "%lld", (long long)t->shape[i]);
  if (o < cap) snprintf(buf + o, cap - o, "]");
}

/* Copy a 1-D float vector of length n from `name`; RV_ERR_MODEL on a shape mismatch. */
static rv_status load_vec(float *dst, const rv_weights *w, const char *name, int n, rv_ctx *ctx) {
  const rv_wtensor *t = rv_weights_find(w, name);
  if (!t) return rv_error(ctx, RV_ERR_NOTFOUND, "checkpoint has no tensor '%s'", name);
  if (t->ndim != 1 || t->shape[0] != n) {
    char s[96];
    shape_str(s, sizeof s, t);
    return rv_error(ctx, RV_ERR_MODEL, "tensor '%s' has shape %s, expected [%d]", name, s, n);
  }
  rv_wtensor_to_f32(t, dst);
  return RV_OK;
}

int rv_convmod_exists(const rv_weights *w, const char *prefix) {
  char name[512];
  return find_fmt(w, name, sizeof name, prefix, ".conv.weight") != NULL ||
         find_fmt(w, name, sizeof name, prefix, ".weight") != NULL;
}

void rv_convmod_free(rv_convmod *m) {
  if (!m) return;
  rv_free(m->w);
  rv_free(m->b);
  m->w = m->b = NULL;
}

rv_status rv_convmod_load(rv_convmod *m, const rv_weights *w, const char *prefix, int cin,
                          int cout, int k, int stride, rv_act act, rv_ctx *ctx) {
  memset(m, 0, sizeof *m);
  char name[512], bname[512];
  int is_module = 1;
  const rv_wtensor *wt = find_fmt(w, name, sizeof name, prefix, ".conv.weight");
  if (!wt) {
    is_module = 0;
    wt = find_fmt(w, name, sizeof name, prefix, ".weight");
  }
  if (!wt)
    return rv_error(ctx, RV_ERR_NOTFOUND, "checkpoint has no tensor '%s.conv.weight' (or '%s.weight')",
                    prefix, prefix);
  char s[96];
  shape_str(s, sizeof s, wt);
  if (wt->ndim != 4 || wt->shape[2] != wt->shape[3] || wt->shape[2] % 2 != 1 ||
      wt->shape[0] <= 0 || wt->shape[1] <= 0 || wt->shape[0] > (1 << 20) || wt->shape[1] > (1 << 20))
    return rv_error(ctx, RV_ERR_MODEL, "tensor '%s' has shape %s, expected [cout, cin, k, k] with odd k",
                    name, s);
  if ((cout >= 0 && wt->shape[0] != cout) || (cin >= 0 && wt->shape[1] != cin) ||
      (k >= 0 && wt->shape[2] != k))
    return rv_error(ctx, RV_ERR_MODEL, "tensor '%s' has shape %s, expected [%d, %d, %d, %d]", name, s,
                    cout, cin, k >= 0 ? k : (int)wt->shape[2], k >= 0 ? k : (int)wt->shape[3]);
  m->cout = (int)wt->shape[0];
  m->cin = (int)wt->shape[1];
  m->k = (int)wt->shape[2];
  m->stride = stride;
  m->pad = (m->k - 1) / 2;
  m->act = act;
  size_t per_out = (size_t)m->cin * (size_t)m->k * (size_t)m->k;
  m->w = rv_malloc((size_t)m->cout * per_out * sizeof(float));
  m->b = rv_calloc((size_t)m->cout, sizeof(float));
  if (!m->w || !m->b) {
    rv_convmod_free(m);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory loading '%s'", name);
  }
  rv_wtensor_to_f32(wt, m->w);
  rv_status st = RV_OK;
  const char *bias_suffix = is_module ? ".conv.bias" : ".bias";
  if (find_fmt(w, bname, sizeof bname, prefix, bias_suffix))
    st = load_vec(m->b, w, bname, m->cout, ctx);
  if (st == RV_OK && is_module && find_fmt(w, bname, sizeof bname, prefix, ".bn.weight")) {
    float *bn = rv_malloc((size_t)4 * (size_t)m->cout * sizeof(float));
    if (!bn) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory loading '%s'", name);
    static const char *const suff[4] = {".bn.running_mean", ".bn.running_var", ".bn.weight",
                                        ".bn.bias"};
    for (int i = 0; i < 4 && st == RV_OK; i++) {
      snprintf(bname, sizeof bname, "%s%s", prefix, suff[i]);
      st = load_vec(bn + (size_t)i * (size_t)m->cout, w, bname, m->cout, ctx);
    }
    if (st == RV_OK) {
      const float *var = bn + m->cout;
      for (int c = 0; c < m->cout; c++)
        if (!(var[c] >= 0.0f)) {
          snprintf(bname, sizeof bname, "%s.bn.running_var", prefix);
          st = rv_error(ctx, RV_ERR_MODEL, "tensor '%s' has a negative or NaN variance at %d", bname, c);
          break;
        }
    }
    if (st == RV_OK)
      rv_bn_fold(m->w, m->b, m->cout, per_out, bn, bn + m->cout, bn + 2 * (size_t)m->cout,
                 bn + 3 * (size_t)m->cout, BN_EPS);
    rv_free(bn);
  }
  if (st != RV_OK) rv_convmod_free(m);
  return st;
}

void rv_convmod_out_size(const rv_convmod *m, int h, int w, int *oh, int *ow) {
  *oh = rv_conv_out_size(h, m->k, m->stride, m->pad, 1);
  *ow = rv_conv_out_size(w, m->k, m->stride, m->pad, 1);
}

static rv_status forward_into(const rv_convmod *m, float *y, size_t y_batch_stride, rv_tensor x,
                              int accumulate, rv_arena *a, rv_ctx *ctx) {
  RV_ASSERT(m && m->w && y && x.data);
  if (x.c != m->cin)
    return rv_error(ctx, RV_ERR_SHAPE, "conv expects %d input channels, got %d", m->cin, x.c);
  rv_conv_params p = rv_conv_default_params(m->k, m->stride, m->pad);
  p.act = m->act;
  p.algo = m->algo;
  p.accumulate = accumulate;
  size_t in_item = (size_t)x.c * (size_t)x.h * (size_t)x.w;
  for (int i = 0; i < x.n; i++) {
    rv_status st = rv_conv2d_f32(y + (size_t)i * y_batch_stride, x.data + (size_t)i * in_item, m->w,
                                 m->b, 1, x.c, x.h, x.w, m->cout, p, a);
    if (st != RV_OK)
      return rv_error(ctx, st, "conv %dx%d (%d -> %d channels, %dx%d input): %s", m->k, m->k, m->cin,
                      m->cout, x.h, x.w, rv_status_str(st));
  }
  return RV_OK;
}

rv_status rv_convmod_forward_into(const rv_convmod *m, float *y, size_t y_batch_stride,
                                  rv_tensor x, rv_arena *a, rv_ctx *ctx) {
  return forward_into(m, y, y_batch_stride, x, 0, a, ctx);
}

rv_status rv_convmod_accumulate_into(const rv_convmod *m, float *y, size_t y_batch_stride,
                                     rv_tensor x, rv_arena *a, rv_ctx *ctx) {
  return forward_into(m, y, y_batch_stride, x, 1, a, ctx);
}

rv_status rv_convmod_upsampled_into(const rv_convmod *m, float *y, size_t y_batch_stride,
                                   rv_tensor x, int oh, int ow, int accumulate, rv_arena *a,
                                   rv_ctx *ctx) {
  RV_ASSERT(m && m->w && y && x.data);
  if (x.c != m->cin)
    return rv_error(ctx, RV_ERR_SHAPE, "conv expects %d input channels, got %d", m->cin, x.c);
  if (m->k != 3 || m->stride != 1 || m->pad != 1 || (m->act != RV_ACT_NONE && m->act != RV_ACT_RELU))
    return rv_error(ctx, RV_ERR_INTERNAL, "conv of an upsampled map: needs a 3x3 stride-1 pad-1 conv");
  size_t in_item = (size_t)x.c * (size_t)x.h * (size_t)x.w;
  for (int i = 0; i < x.n; i++) {
    rv_status st = rv_conv3x3_upsampled_f32(y + (size_t)i * y_batch_stride, x.data + (size_t)i * in_item,
                                            m->w, m->b, 1, x.c, x.h, x.w, m->cout, oh, ow, m->act,
                                            accumulate, a);
    if (st != RV_OK)
      return rv_error(ctx, st, "conv 3x3 (%d -> %d channels) of a %dx%d input upsampled to %dx%d: %s",
                      m->cin, m->cout, x.h, x.w, oh, ow, rv_status_str(st));
  }
  return RV_OK;
}

rv_status rv_convmod_slice_inputs(rv_convmod *dst, const rv_convmod *src, int c0, int cin,
                                  int with_bias_act, rv_ctx *ctx) {
  memset(dst, 0, sizeof *dst);
  if (c0 < 0 || cin <= 0 || c0 + cin > src->cin)
    return rv_error(ctx, RV_ERR_INTERNAL, "conv input slice [%d, %d) outside %d channels", c0,
                    c0 + cin, src->cin);
  const size_t kk = (size_t)src->k * (size_t)src->k, row = (size_t)cin * kk;
  dst->w = rv_malloc(sizeof(float) * row * (size_t)src->cout);
  if (!dst->w) return rv_error(ctx, RV_ERR_NOMEM, "out of memory (conv weights)");
  for (int co = 0; co < src->cout; co++)
    memcpy(dst->w + (size_t)co * row, src->w + ((size_t)co * src->cin + (size_t)c0) * kk,
           sizeof(float) * row);
  if (with_bias_act && src->b) {
    dst->b = rv_malloc(sizeof(float) * (size_t)src->cout);
    if (!dst->b) {
      rv_convmod_free(dst);
      return rv_error(ctx, RV_ERR_NOMEM, "out of memory (conv bias)");
    }
    memcpy(dst->b, src->b, sizeof(float) * (size_t)src->cout);
  }
  dst->cin = cin, dst->cout = src->cout, dst->k = src->k, dst->stride = src->stride;
  dst->pad = src->pad;
  dst->act = with_bias_act ? src->act : RV_ACT_NONE;
  dst->algo = RV_CONV_AUTO;
  return RV_OK;
}

rv_status rv_convmod_forward(const rv_convmod *m, rv_tensor *y, rv_tensor x, rv_arena *a,
                             rv_ctx *ctx) {
  int oh, ow;
  rv_convmod_out_size(m, x.h, x.w, &oh, &ow);
  if (oh <= 0 || ow <= 0)
    return rv_error(ctx, RV_ERR_SHAPE, "conv output would be empty for a %dx%d input", x.h, x.w);
  *y = rv_tensor_new(a, x.n, m->cout, oh, ow);
  if (!y->data) return rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (%dx%dx%d)", m->cout, oh, ow);
  return rv_convmod_forward_into(m, y->data, (size_t)m->cout * (size_t)oh * (size_t)ow, x, a, ctx);
}
