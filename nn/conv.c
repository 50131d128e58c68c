/* ConvModule loading (BN folded at load, through nn/param.h) and forward. See conv.h. */
#include "nn/conv.h"

#include <stdio.h>
#include <string.h>

#define BN_EPS 1e-5f

static const rv_wtensor *find_fmt(const rv_params *p, char *buf, size_t cap, const char *prefix,
                                  const char *suffix) {
  snprintf(buf, cap, "%s%s", prefix, suffix);
  return rv_param_find(p, buf);
}

int rv_convmod_exists(const rv_params *p, const char *prefix) {
  char name[512];
  return find_fmt(p, name, sizeof name, prefix, ".conv.weight") != NULL ||
         find_fmt(p, name, sizeof name, prefix, ".weight") != NULL;
}

void rv_convmod_free(rv_convmod *m) {
  if (!m) return;
  rv_free(m->w);
  rv_free(m->b);
  m->w = m->b = NULL;
  rv_convmod_set_bf16(m, 0, NULL); /* nn/conv.h, bf16 mode: frees the packed weights */
}

rv_status rv_mod_read(rv_convmod *m, rv_params *p, rv_mod_kind kind, const char *wkey,
                      const int64_t *want, const char *bkey, const char *bn, rv_ctx *ctx) {
  memset(m, 0, sizeof *m);
  m->kind = kind;
  const rv_wtensor *wt;
  RV_TRY(rv_param_alloc(p, &m->w, &wt, wkey, kind == RV_MOD_LINEAR ? 2 : 4, want, ctx));
  if (kind == RV_MOD_CONV && (wt->shape[2] != wt->shape[3] || wt->shape[2] % 2 != 1 ||
                              wt->shape[0] > (1 << 20) || wt->shape[1] > (1 << 20))) {
    char s[96];
    rv_param_shape_str(s, sizeof s, wt->ndim, wt->shape);
    rv_convmod_free(m);
    return rv_error(ctx, RV_ERR_MODEL, "%s: key '%s' has shape %s, expected [cout, cin, k, k] with odd k",
                    rv_params_path(p), wkey, s);
  }
  /* linear [cout, cin]; conv [cout, cin, k, k]; transposed conv [cin, cout, k, k] */
  m->cout = (int)wt->shape[kind == RV_MOD_DECONV ? 1 : 0];
  m->cin = (int)wt->shape[kind == RV_MOD_DECONV ? 0 : 1];
  m->k = kind == RV_MOD_LINEAR ? 0 : (int)wt->shape[2];
  m->stride = 1;
  m->pad = m->k / 2;
  m->act = RV_ACT_NONE;
  m->algo = RV_CONV_AUTO;
  m->b = rv_calloc((size_t)m->cout, sizeof(float));
  if (!m->b) {
    rv_convmod_free(m);
    return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory for key '%s'", rv_params_path(p), wkey);
  }
  rv_status st = RV_OK;
  const int64_t vec[1] = {m->cout};
  if (bkey && rv_param_find(p, bkey)) st = rv_param_read(p, m->b, bkey, 1, vec, ctx);
  if (st == RV_OK && bn) {
    char key[512];
    snprintf(key, sizeof key, "%s.weight", bn);
    if (rv_param_find(p, key))
      st = rv_param_bn_fold(p, m->w, m->b, m->cout, (size_t)m->cin * (size_t)m->k * (size_t)m->k, bn,
                            BN_EPS, ctx);
  }
  if (st != RV_OK) rv_convmod_free(m);
  return st;
}

rv_status rv_convmod_load(rv_convmod *m, rv_params *p, const char *prefix, int cin, int cout,
                          int k, int stride, rv_act act, rv_ctx *ctx) {
  memset(m, 0, sizeof *m);
  char name[512], bname[512], bn[512];
  /* a ConvModule (P.conv.weight) or a plain conv (P.weight) */
  int is_module = find_fmt(p, name, sizeof name, prefix, ".conv.weight") != NULL;
  if (!is_module && !find_fmt(p, name, sizeof name, prefix, ".weight")) {
    /* neither: name the one the module's other keys point to (a ConvModule by default) */
    int plain = find_fmt(p, bname, sizeof bname, prefix, ".bias") != NULL &&
                !find_fmt(p, bname, sizeof bname, prefix, ".conv.bias");
    snprintf(name, sizeof name, "%s%s", prefix, plain ? ".weight" : ".conv.weight");
  }
  snprintf(bname, sizeof bname, "%s%s", prefix, is_module ? ".conv.bias" : ".bias");
  snprintf(bn, sizeof bn, "%s.bn", prefix);
  const int64_t want[4] = {cout, cin, k, k};
  RV_TRY(rv_mod_read(m, p, RV_MOD_CONV, name, want, bname, is_module ? bn : NULL, ctx));
  m->stride = stride;
  m->act = act;
  return RV_OK;
}

void rv_convmod_out_size(const rv_convmod *m, int h, int w, int *oh, int *ow) {
  *oh = rv_conv_out_size(h, m->k, m->stride, m->pad, 1);
  *ow = rv_conv_out_size(w, m->k, m->stride, m->pad, 1);
}

rv_status rv_convmod_run(const rv_convmod *m, float *y, size_t y_batch_stride, rv_tensor x,
                         rv_act act, int accumulate, rv_arena *a, rv_ctx *ctx) {
  RV_ASSERT(m && m->w && y && x.data);
  RV_TRY(rv_ctx_check(ctx)); /* each conv layer: cancelled, or the call's threads anew */
  if (x.c != m->cin)
    return rv_error(ctx, RV_ERR_SHAPE, "conv expects %d input channels, got %d", m->cin, x.c);
  rv_conv_params p = rv_conv_default_params(m->k, m->stride, m->pad);
  p.act = act;
  p.algo = m->algo;
  p.accumulate = accumulate;
  /* stride 0: the whole batch in one call; else item by item */
  const int calls = y_batch_stride ? x.n : 1, n = y_batch_stride ? 1 : x.n;
  size_t in_item = (size_t)x.c * (size_t)x.h * (size_t)x.w;
  if (m->wbf16) { /* the bf16 forward where it has one (bf16 mode, conv.h) */
    rv_status st = rv_convmod_bf16_conv(m, y, y_batch_stride ? y_batch_stride
                                                             : (size_t)m->cout * x.h * x.w,
                                        x.data, x.n, x.h, x.w, act, accumulate, m->algo, a);
    if (st != RV_ERR_UNSUPPORTED) {
      if (st != RV_OK)
        return rv_error(ctx, st, "bf16 conv %dx%d (%d -> %d channels, %dx%d input): %s", m->k,
                        m->k, m->cin, m->cout, x.h, x.w, rv_status_str(st));
      return RV_OK;
    }
  }
  for (int i = 0; i < calls; i++) {
    rv_status st = rv_conv2d_f32(y + (size_t)i * y_batch_stride, x.data + (size_t)i * in_item, m->w,
                                 m->b, n, x.c, x.h, x.w, m->cout, p, a);
    if (st != RV_OK)
      return rv_error(ctx, st, "conv %dx%d (%d -> %d channels, %dx%d input): %s", m->k, m->k, m->cin,
                      m->cout, x.h, x.w, rv_status_str(st));
  }
  return RV_OK;
}

rv_status rv_convmod_forward_into(const rv_convmod *m, float *y, size_t y_batch_stride,
                                  rv_tensor x, rv_arena *a, rv_ctx *ctx) {
  return rv_convmod_run(m, y, y_batch_stride, x, m->act, 0, a, ctx);
}

rv_status rv_convmod_accumulate_into(const rv_convmod *m, float *y, size_t y_batch_stride,
                                     rv_tensor x, rv_arena *a, rv_ctx *ctx) {
  return rv_convmod_run(m, y, y_batch_stride, x, m->act, 1, a, ctx);
}

rv_status rv_convmod_upsampled_into(const rv_convmod *m, float *y, size_t y_batch_stride,
                                   rv_tensor x, int oh, int ow, int accumulate, rv_arena *a,
                                   rv_ctx *ctx) {
  RV_ASSERT(m && m->w && y && x.data);
  RV_TRY(rv_ctx_check(ctx));
  if (x.c != m->cin)
    return rv_error(ctx, RV_ERR_SHAPE, "conv expects %d input channels, got %d", m->cin, x.c);
  if (m->k != 3 || m->stride != 1 || m->pad != 1 || (m->act != RV_ACT_NONE && m->act != RV_ACT_RELU))
    return rv_error(ctx, RV_ERR_INTERNAL, "conv of an upsampled map: needs a 3x3 stride-1 pad-1 conv");
  size_t in_item = (size_t)x.c * (size_t)x.h * (size_t)x.w;
  for (int i = 0; i < x.n; i++) {
    /* bf16 mode (nn/conv.h, bf16 mode): the taps' GEMM in bf16 */
    float *yi = y + (size_t)i * y_batch_stride;
    const float *xi = x.data + (size_t)i * in_item;
    rv_status st = m->wbf16_up ? rv_conv3x3_upsampled_bf16_packed(yi, xi, m->wbf16_up, m->b, 1,
                                                                  x.c, x.h, x.w, m->cout, oh, ow,
                                                                  m->act, accumulate, a)
                   : m->wbf16 && !m->wbf16_rois
                       ? rv_conv3x3_upsampled_bf16(yi, xi, m->w, m->b, 1, x.c, x.h, x.w, m->cout,
                                                   oh, ow, m->act, accumulate, a)
                       : rv_conv3x3_upsampled_f32(y + (size_t)i * y_batch_stride, x.data + (size_t)i * in_item,
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

/* ---- bf16 mode (see conv.h) ---- */

static int is_pointwise(const rv_convmod *m) {
  return m->kind == RV_MOD_CONV && m->k == 1 && m->stride == 1 && m->pad == 0;
}
static int is_3x3(const rv_convmod *m) {
  return m->kind == RV_MOD_CONV && m->k == 3 && m->stride == 1 && m->pad == 1;
}

rv_status rv_convmod_set_bf16(rv_convmod *m, int on, rv_ctx *ctx) {
  if (!on || !m->w) {
    rv_free(m->wbf16);
    rv_free(m->wbf16_up);
    m->wbf16 = m->wbf16_up = NULL;
    m->wbf16_rois = 0;
    m->wbf16_wino = 0;
    return RV_OK;
  }
  if (m->wbf16) return RV_OK;
  /* the tile the module's float32 rule takes at the sizes where it runs Winograd */
  const int tile = m->algo == RV_CONV_AUTO || m->algo == RV_CONV_WINOGRAD2 ? 2 : 4;
  size_t words = 0;
  if (m->kind == RV_MOD_LINEAR) words = rv_bf16_linear_words(m->cout, m->cin);
  else if (is_pointwise(m)) words = rv_bf16_packed_words(m->cout, m->cin);
  else if (is_3x3(m)) words = rv_winograd_bf16_words_m(m->cout, m->cin, tile);
  if (!words) return RV_OK;
  uint32_t *p = rv_malloc(words * sizeof(uint32_t));
  if (!p) return rv_error(ctx, RV_ERR_NOMEM, "out of memory packing bf16 weights (%d -> %d)",
                          m->cin, m->cout);
  if (m->kind == RV_MOD_LINEAR) rv_bf16_linear_pack(p, m->w, m->cout, m->cin);
  else if (is_pointwise(m)) rv_bf16_pack_weights(p, m->w, m->cout, m->cin);
  else if (rv_winograd_bf16_pack_m(p, m->w, m->cout, m->cin, tile) != RV_OK) {
    rv_free(p);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory packing bf16 weights (%d -> %d)", m->cin,
                    m->cout);
  }
  m->wbf16 = p;
  m->wbf16_wino = is_3x3(m) ? tile : 0;
  return RV_OK;
}

rv_status rv_convmods_set_bf16_upsampled(rv_convmod *m, int count, int on, rv_ctx *ctx) {
  for (int i = 0; i < count; i++) {
    rv_convmod *c = &m[i];
    rv_status st = rv_convmod_set_bf16(c, on, ctx);
    if (st == RV_OK && on && c->w && is_3x3(c) && !c->wbf16_up) {
      uint32_t *p = rv_malloc(rv_conv3x3_upsampled_bf16_words(c->cout, c->cin) * sizeof(uint32_t));
      if (!p || rv_conv3x3_upsampled_bf16_pack(p, c->w, c->cout, c->cin) != RV_OK) {
        rv_free(p);
        rv_convmod_set_bf16(c, 0, ctx);
        st = rv_error(ctx, RV_ERR_NOMEM, "out of memory packing bf16 weights (%d -> %d)",
                      c->cin, c->cout);
      } else {
        c->wbf16_up = p;
      }
    }
    if (st != RV_OK) {
      rv_convmods_set_bf16_upsampled(m, i, 0, ctx);
      return st;
    }
  }
  return RV_OK;
}

rv_status rv_convmods_set_bf16_rois(rv_convmod *m, int count, int on, rv_ctx *ctx) {
  for (int i = 0; i < count; i++) {
    rv_convmod *c = &m[i];
    if (!on || !c->w || !is_3x3(c) || c->cin % 2 != 0 || c->wbf16) {
      rv_status st = rv_convmod_set_bf16(c, on, ctx);
      if (st == RV_OK) continue;
      rv_convmods_set_bf16_rois(m, i, 0, ctx);
      return st;
    }
    uint32_t *p = rv_malloc(rv_winograd_rois_bf16_words(c->cout, c->cin) * sizeof(uint32_t));
    if (!p || rv_winograd_rois_bf16_pack(p, c->w, c->cout, c->cin) != RV_OK) {
      rv_free(p);
      rv_convmods_set_bf16_rois(m, i, 0, ctx);
      return rv_error(ctx, RV_ERR_NOMEM, "out of memory packing bf16 weights (%d -> %d)",
                      c->cin, c->cout);
    }
    c->wbf16 = p;
    c->wbf16_rois = 1;
  }
  return RV_OK;
}

rv_status rv_convmods_set_bf16(rv_convmod *m, int count, int on, rv_ctx *ctx) {
  for (int i = 0; i < count; i++) {
    rv_status st = rv_convmod_set_bf16(&m[i], on, ctx);
    if (st != RV_OK) {
      for (int j = 0; j < i; j++) rv_convmod_set_bf16(&m[j], 0, ctx);
      return st;
    }
  }
  return RV_OK;
}

static void relu_row(float *r, size_t n) { rv_act_serial_f32(r, n, RV_ACT_RELU); }

rv_status rv_convmod_bf16_conv(const rv_convmod *m, float *y, size_t y_batch_stride,
                               const float *x, int n, int h, int w, rv_act act, int accumulate,
                               rv_conv_algo algo, rv_arena *scratch) {
  if (!m->wbf16 || m->wbf16_rois || (act != RV_ACT_NONE && act != RV_ACT_RELU))
    return RV_ERR_UNSUPPORTED;
  const size_t in_item = (size_t)m->cin * h * w;
  if (is_pointwise(m)) {
    if (accumulate) return RV_ERR_UNSUPPORTED;
    for (int i = 0; i < n; i++)
      RV_TRY(rv_pointwise_bf16(y + (size_t)i * y_batch_stride, m->wbf16, m->b,
                               x + (size_t)i * in_item, m->cout, m->cin, (size_t)h * w,
                               act == RV_ACT_RELU ? relu_row : NULL, scratch));
    return RV_OK;
  }
  if (is_3x3(m)) {
    /* where the float32 rule takes the Winograd tile the weights are packed for (im2col,
     * and an RV_CONV_AUTO_FAST module's F(2x2) at mid sizes, stay float32) */
    const rv_conv_algo a = rv_conv3x3_algo(algo, n, m->cin, m->cout, h, w);
    const int tile = a == RV_CONV_WINOGRAD4 ? 4 : a == RV_CONV_WINOGRAD2 ? 2 : 0;
    if (tile != m->wbf16_wino) return RV_ERR_UNSUPPORTED;
    rv_conv_params p = rv_conv_default_params(3, 1, 1);
    p.act = act;
    p.accumulate = accumulate;
    if (y_batch_stride == (size_t)m->cout * h * w)
      return rv_conv2d_winograd_bf16_m(y, x, m->wbf16, m->b, n, m->cin, h, w, m->cout, p, tile,
                                       scratch);
    for (int i = 0; i < n; i++)
      RV_TRY(rv_conv2d_winograd_bf16_m(y + (size_t)i * y_batch_stride, x + (size_t)i * in_item,
                                       m->wbf16, m->b, 1, m->cin, h, w, m->cout, p, tile,
                                       scratch));
    return RV_OK;
  }
  return RV_ERR_UNSUPPORTED;
}
