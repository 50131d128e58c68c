/* Semantic FPN head and conv_seg. See seg_heads.h. */
#include "heads/seg_heads.h"
#include "nn/conv.h"

#include <stdio.h>
#include <string.h>

struct rv_fpn_head {
  rv_fpn_head_config cfg;
  int num_convs[RV_FPN_HEAD_MAX_LEVELS];
  int upsample[RV_FPN_HEAD_MAX_LEVELS];   /* 1 if each conv is followed by a x2 upsample */
  rv_convmod conv[RV_FPN_HEAD_MAX_LEVELS][RV_FPN_HEAD_MAX_CONVS];
  rv_convmod conv_seg;
};

rv_fpn_head_config rv_fpn_head_default_config(void) {
  rv_fpn_head_config c;
  memset(&c, 0, sizeof c);
  c.num_levels = 4;
  for (int i = 0; i < RV_FPN_HEAD_MAX_LEVELS; i++) c.in_channels[i] = -1;
  for (int i = 0; i < 4; i++) c.feature_strides[i] = 4 << i;
  c.channels = -1;
  c.num_classes = -1;
  return c;
}

void rv_fpn_head_free(rv_fpn_head *h) {
  if (!h) return;
  for (int i = 0; i < RV_FPN_HEAD_MAX_LEVELS; i++)
    for (int k = 0; k < RV_FPN_HEAD_MAX_CONVS; k++) rv_convmod_free(&h->conv[i][k]);
  rv_convmod_free(&h->conv_seg);
  rv_free(h);
}

const rv_fpn_head_config *rv_fpn_head_config_of(const rv_fpn_head *h) { return &h->cfg; }

rv_status rv_seg_classifier_load(rv_convmod *m, rv_params *p, const char *prefix, int cin,
                                 int num_classes, rv_ctx *ctx) {
  char name[512];
  snprintf(name, sizeof name, "%sconv_seg", prefix);
  return rv_convmod_load(m, p, name, cin, num_classes, 1, 1, RV_ACT_NONE, ctx);
}

static int ilog2_exact(int v) {
  int l = 0;
  while ((1 << l) < v) l++;
  return (1 << l) == v ? l : -1;
}

rv_status rv_fpn_head_load(rv_fpn_head **out, const rv_fpn_head_config *cfg, rv_params *p,
                           const char *prefix, rv_ctx *ctx) {
  *out = NULL;
  if (cfg->num_levels < 1 || cfg->num_levels > RV_FPN_HEAD_MAX_LEVELS)
    return rv_error(ctx, RV_ERR_ARG, "FPNHead: %d levels (1..%d allowed)", cfg->num_levels,
                    RV_FPN_HEAD_MAX_LEVELS);
  rv_fpn_head *h = rv_calloc(1, sizeof *h);
  if (!h) return rv_error(ctx, RV_ERR_NOMEM, "out of memory (FPNHead)");
  h->cfg = *cfg;
  rv_fpn_head_config *c = &h->cfg;
  rv_status st = RV_OK;
  const int l0 = ilog2_exact(c->feature_strides[0]);
  for (int i = 0; i < c->num_levels && st == RV_OK; i++) {
    int li = ilog2_exact(c->feature_strides[i]);
    if (l0 < 0 || li < l0) {
      st = rv_error(ctx, RV_ERR_ARG, "FPNHead: feature stride %d must be a power of two >= %d",
                    c->feature_strides[i], c->feature_strides[0]);
      break;
    }
    h->num_convs[i] = li - l0 > 1 ? li - l0 : 1;
    h->upsample[i] = li != l0;
    if (h->num_convs[i] > RV_FPN_HEAD_MAX_CONVS) {
      st = rv_error(ctx, RV_ERR_ARG, "FPNHead: stride ratio %d too large", c->feature_strides[i] / c->feature_strides[0]);
      break;
    }
    char name[512];
    for (int k = 0; k < h->num_convs[i] && st == RV_OK; k++) {
      /* Sequential index: conv, [upsample], conv, [upsample]... */
      snprintf(name, sizeof name, "%sscale_heads.%d.%d", prefix, i, k * (h->upsample[i] ? 2 : 1));
      st = rv_convmod_load(&h->conv[i][k], p, name, k == 0 ? c->in_channels[i] : c->channels,
                           c->channels, 3, 1, RV_ACT_RELU, ctx);
      if (st != RV_OK) break;
      h->conv[i][k].algo = RV_CONV_AUTO_FAST; /* Winograd F(4x4) allowed: see kernels/conv.c */
      if (k == 0) c->in_channels[i] = h->conv[i][k].cin;
      c->channels = h->conv[i][k].cout;
    }
    if (st == RV_OK) {
      snprintf(name, sizeof name, "%sscale_heads.%d.%d", prefix, i,
               h->num_convs[i] * (h->upsample[i] ? 2 : 1));
      if (rv_convmod_exists(p, name))
        st = rv_error(ctx, RV_ERR_MODEL, "FPNHead: checkpoint has '%s' but feature stride %d needs %d convs",
                      name, c->feature_strides[i], h->num_convs[i]);
    }
  }
  if (st == RV_OK) {
    char name[512];
    snprintf(name, sizeof name, "%sscale_heads.%d.0", prefix, c->num_levels);
    if (rv_convmod_exists(p, name))
      st = rv_error(ctx, RV_ERR_MODEL, "FPNHead: checkpoint has '%s' but the config has %d levels", name,
                    c->num_levels);
  }
  if (st == RV_OK) st = rv_seg_classifier_load(&h->conv_seg, p, prefix, c->channels, c->num_classes, ctx);
  if (st == RV_OK) c->num_classes = h->conv_seg.cout;
  if (st != RV_OK) {
    rv_fpn_head_free(h);
    return st;
  }
  *out = h;
  return RV_OK;
}

/* Run scale head i on x; result from the arena. */
static rv_status scale_head(const rv_fpn_head *h, int i, rv_tensor *y, rv_tensor x, rv_arena *a,
                            rv_ctx *ctx) {
  rv_tensor t = x;
  for (int k = 0; k < h->num_convs[i]; k++) {
    rv_tensor c;
    RV_TRY(rv_convmod_forward(&h->conv[i][k], &c, t, a, ctx));
    t = c;
    if (h->upsample[i]) {
      rv_tensor u = rv_tensor_new(a, t.n, t.c, 2 * t.h, 2 * t.w);
      if (!u.data) return rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (FPNHead upsample)");
      rv_resize_bilinear_scale_f32(u.data, t.data, t.n * t.c, t.h, t.w, u.h, u.w, 0.5, 0.5);
      t = u;
    }
  }
  *y = t;
  return RV_OK;
}

rv_status rv_fpn_head_forward(const rv_fpn_head *h, rv_tensor *logits, const rv_tensor *inputs,
                              int num_inputs, rv_arena *a, rv_ctx *ctx) {
  const rv_fpn_head_config *c = &h->cfg;
  if (num_inputs != c->num_levels)
    return rv_error(ctx, RV_ERR_SHAPE, "FPNHead expects %d input features, got %d", c->num_levels,
                    num_inputs);
  const int n = inputs[0].n;
  for (int i = 0; i < num_inputs; i++) {
    if (!inputs[i].data || inputs[i].n != n || inputs[i].h <= 0 || inputs[i].w <= 0)
      return rv_error(ctx, RV_ERR_SHAPE, "FPNHead input %d is empty or has another batch size", i);
    if (inputs[i].c != c->in_channels[i])
      return rv_error(ctx, RV_ERR_SHAPE, "FPNHead input %d has %d channels, the weights expect %d", i,
                      inputs[i].c, c->in_channels[i]);
  }
  /* level 0 has no upsample: its output size is the input size */
  const int h0 = inputs[0].h, w0 = inputs[0].w;
  if (h->upsample[0]) return rv_error(ctx, RV_ERR_INTERNAL, "FPNHead: level 0 cannot upsample");
  *logits = rv_tensor_new(a, n, c->num_classes, h0, w0);
  if (!logits->data) return rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (FPNHead logits)");
  rv_arena_mark m = rv_arena_get_mark(a);
  rv_tensor sum;
  rv_status st = scale_head(h, 0, &sum, inputs[0], a, ctx);
  for (int i = 1; i < c->num_levels && st == RV_OK; i++) {
    rv_arena_mark mi = rv_arena_get_mark(a);
    rv_tensor y;
    st = scale_head(h, i, &y, inputs[i], a, ctx);
    if (st != RV_OK) break;
    rv_resize_bilinear_add_f32(sum.data, y.data, n * y.c, y.h, y.w, h0, w0);
    rv_arena_release(a, mi);
  }
  if (st == RV_OK)
    st = rv_convmod_forward_into(&h->conv_seg, logits->data,
                                 (size_t)c->num_classes * (size_t)h0 * (size_t)w0, sum, a, ctx);
  rv_arena_release(a, m);
  return st;
}

rv_status rv_fpn_head_set_bf16(rv_fpn_head *h, int on, rv_ctx *ctx) {
  /* the scale heads' convs; conv_seg (the classifier) stays float32 */
  rv_status st = rv_convmods_set_bf16(&h->conv[0][0],
                                      RV_FPN_HEAD_MAX_LEVELS * RV_FPN_HEAD_MAX_CONVS, on, ctx);
  return st;
}
