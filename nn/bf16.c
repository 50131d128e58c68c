/* bf16 forwards of nn/ modules. See bf16.h. */
#include "nn/bf16.h"

#include <string.h>

static int is_pointwise(const rv_convmod *m) {
  return m->kind == RV_MOD_CONV && m->k == 1 && m->stride == 1 && m->pad == 0;
}
static int is_3x3(const rv_convmod *m) {
  return m->kind == RV_MOD_CONV && m->k == 3 && m->stride == 1 && m->pad == 1;
}

rv_status rv_convmod_set_bf16(rv_convmod *m, int on, rv_ctx *ctx) {
  if (!on || !m->w) {
    rv_free(m->wbf16);
    m->wbf16 = NULL;
    m->wbf16_rois = 0;
    return RV_OK;
  }
  if (m->wbf16) return RV_OK;
  size_t words = 0;
  if (m->kind == RV_MOD_LINEAR) words = rv_bf16_linear_words(m->cout, m->cin);
  else if (is_pointwise(m)) words = rv_bf16_packed_words(m->cout, m->cin);
  else if (is_3x3(m)) words = rv_winograd_bf16_words(m->cout, m->cin);
  if (!words) return RV_OK;
  uint32_t *p = rv_malloc(words * sizeof(uint32_t));
  if (!p) return rv_error(ctx, RV_ERR_NOMEM, "out of memory packing bf16 weights (%d -> %d)",
                          m->cin, m->cout);
  if (m->kind == RV_MOD_LINEAR) rv_bf16_linear_pack(p, m->w, m->cout, m->cin);
  else if (is_pointwise(m)) rv_bf16_pack_weights(p, m->w, m->cout, m->cin);
  else if (rv_winograd_bf16_pack(p, m->w, m->cout, m->cin) != RV_OK) {
    rv_free(p);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory packing bf16 weights (%d -> %d)", m->cin,
                    m->cout);
  }
  m->wbf16 = p;
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
    /* where the float32 rule takes Winograd F(4x4) (F(2x2) and im2col stay float32) */
    if (rv_conv3x3_algo(algo, n, m->cin, m->cout, h, w) != RV_CONV_WINOGRAD4)
      return RV_ERR_UNSUPPORTED;
    rv_conv_params p = rv_conv_default_params(3, 1, 1);
    p.act = act;
    p.accumulate = accumulate;
    if (y_batch_stride == (size_t)m->cout * h * w)
      return rv_conv2d_winograd_bf16(y, x, m->wbf16, m->b, n, m->cin, h, w, m->cout, p, scratch);
    for (int i = 0; i < n; i++)
      RV_TRY(rv_conv2d_winograd_bf16(y + (size_t)i * y_batch_stride, x + (size_t)i * in_item,
                                     m->wbf16, m->b, 1, m->cin, h, w, m->cout, p, scratch));
    return RV_OK;
  }
  return RV_ERR_UNSUPPORTED;
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
