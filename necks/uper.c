/* UperNet PPM + top-down fusion + fpn_bottleneck. See uper.h. */
#include "necks/uper.h"
#include "nn/conv.h"

#include <stdio.h>
#include <string.h>

struct rv_uper {
  rv_uper_config cfg;
  rv_convmod ppm[RV_UPER_MAX_SCALES];
  rv_convmod bottleneck;
  rv_convmod lateral[RV_UPER_MAX_LEVELS];
  rv_convmod fpn[RV_UPER_MAX_LEVELS];
  /* fpn_bottleneck split by input slice (level i's channels of the concatenation):
   * [cout, channels, 3, 3] each, the bias and ReLU on the last; see rv_uper_forward */
  rv_convmod fpn_bottleneck[RV_UPER_MAX_LEVELS];
};

rv_uper_config rv_uper_default_config(void) {
  rv_uper_config c;
  memset(&c, 0, sizeof c);
  c.num_ins = 4;
  for (int i = 0; i < RV_UPER_MAX_LEVELS; i++) c.in_channels[i] = -1;
  c.channels = -1;
  c.num_pool_scales = 4;
  c.pool_scales[0] = 1;
  c.pool_scales[1] = 2;
  c.pool_scales[2] = 3;
  c.pool_scales[3] = 6;
  return c;
}

void rv_uper_free(rv_uper *u) {
  if (!u) return;
  for (int i = 0; i < RV_UPER_MAX_SCALES; i++) rv_convmod_free(&u->ppm[i]);
  for (int i = 0; i < RV_UPER_MAX_LEVELS; i++) {
    rv_convmod_free(&u->lateral[i]);
    rv_convmod_free(&u->fpn[i]);
    rv_convmod_free(&u->fpn_bottleneck[i]);
  }
  rv_convmod_free(&u->bottleneck);
  rv_free(u);
}

const rv_uper_config *rv_uper_config_of(const rv_uper *u) { return &u->cfg; }

rv_status rv_uper_load(rv_uper **out, const rv_uper_config *cfg, rv_params *p,
                       const char *prefix, rv_ctx *ctx) {
  *out = NULL;
  if (cfg->num_ins < 2 || cfg->num_ins > RV_UPER_MAX_LEVELS)
    return rv_error(ctx, RV_ERR_ARG, "UperNet: num_ins %d outside 2..%d", cfg->num_ins, RV_UPER_MAX_LEVELS);
  if (cfg->num_pool_scales < 1 || cfg->num_pool_scales > RV_UPER_MAX_SCALES)
    return rv_error(ctx, RV_ERR_ARG, "UperNet: %d pool scales (1..%d allowed)", cfg->num_pool_scales,
                    RV_UPER_MAX_SCALES);
  for (int k = 0; k < cfg->num_pool_scales; k++)
    if (cfg->pool_scales[k] < 1 || cfg->pool_scales[k] > 1024)
      return rv_error(ctx, RV_ERR_ARG, "UperNet: pool scale %d invalid", cfg->pool_scales[k]);
  rv_uper *u = rv_calloc(1, sizeof *u);
  if (!u) return rv_error(ctx, RV_ERR_NOMEM, "out of memory (UperNet)");
  u->cfg = *cfg;
  rv_uper_config *c = &u->cfg;
  const int last = c->num_ins - 1;
  char name[512];
  rv_status st = RV_OK;
  for (int k = 0; k < c->num_pool_scales && st == RV_OK; k++) {
    snprintf(name, sizeof name, "%spsp_modules.%d.1", prefix, k);
    st = rv_convmod_load(&u->ppm[k], p, name, c->in_channels[last], c->channels, 1, 1, RV_ACT_RELU, ctx);
    if (st == RV_OK) {
      c->in_channels[last] = u->ppm[k].cin;
      c->channels = u->ppm[k].cout;
    }
  }
  if (st == RV_OK) {
    snprintf(name, sizeof name, "%spsp_modules.%d.1", prefix, c->num_pool_scales);
    if (rv_convmod_exists(p, name))
      st = rv_error(ctx, RV_ERR_MODEL, "UperNet: checkpoint has '%s' but the config has %d pool scales",
                    name, c->num_pool_scales);
  }
  if (st == RV_OK) {
    snprintf(name, sizeof name, "%sbottleneck", prefix);
    st = rv_convmod_load(&u->bottleneck, p, name, c->in_channels[last] + c->num_pool_scales * c->channels,
                         c->channels, 3, 1, RV_ACT_RELU, ctx);
  }
  for (int i = 0; i < last && st == RV_OK; i++) {
    snprintf(name, sizeof name, "%slateral_convs.%d", prefix, i);
    st = rv_convmod_load(&u->lateral[i], p, name, c->in_channels[i], c->channels, 1, 1, RV_ACT_RELU, ctx);
    if (st != RV_OK) break;
    c->in_channels[i] = u->lateral[i].cin;
    snprintf(name, sizeof name, "%sfpn_convs.%d", prefix, i);
    st = rv_convmod_load(&u->fpn[i], p, name, c->channels, c->channels, 3, 1, RV_ACT_RELU, ctx);
    u->fpn[i].algo = RV_CONV_AUTO_FAST; /* Winograd F(4x4) allowed: see kernels/conv.c */
  }
  if (st == RV_OK) {
    snprintf(name, sizeof name, "%slateral_convs.%d", prefix, last);
    if (rv_convmod_exists(p, name))
      st = rv_error(ctx, RV_ERR_MODEL, "UperNet: checkpoint has '%s' but the config has %d inputs", name,
                    c->num_ins);
  }
  if (st == RV_OK) {
    snprintf(name, sizeof name, "%sfpn_bottleneck", prefix);
    rv_convmod full;
    memset(&full, 0, sizeof full);
    st = rv_convmod_load(&full, p, name, c->num_ins * c->channels, c->channels, 3, 1, RV_ACT_RELU,
                         ctx);
    for (int i = 0; i < c->num_ins && st == RV_OK; i++) {
      st = rv_convmod_slice_inputs(&u->fpn_bottleneck[i], &full, i * c->channels, c->channels,
                                   i == last, ctx);
      u->fpn_bottleneck[i].algo = RV_CONV_AUTO_FAST;
    }
    rv_convmod_free(&full);
  }
  if (st != RV_OK) {
    rv_uper_free(u);
    return st;
  }
  *out = u;
  return RV_OK;
}

/* Write src (batch n, c channels) resized to oh x ow into channel offset `c0` of a
 * concatenation buffer with `cat_c` channels per item. */
static void resize_into_slice(float *cat, int cat_c, int c0, int oh, int ow, rv_tensor src) {
  size_t ohw = (size_t)oh * (size_t)ow, ihw = (size_t)src.h * (size_t)src.w;
  for (int b = 0; b < src.n; b++) {
    float *d = cat + ((size_t)b * (size_t)cat_c + (size_t)c0) * ohw;
    const float *s = src.data + (size_t)b * (size_t)src.c * ihw;
    if (src.h == oh && src.w == ow)
      memcpy(d, s, (size_t)src.c * ohw * sizeof(float));
    else
      rv_resize_bilinear_f32(d, s, src.c, src.h, src.w, oh, ow);
  }
}

/* Whether level i's slice of fpn_bottleneck is cheaper at the level's own resolution
 * (rv_convmod_upsampled_into: 9 multiply-adds per coarse pixel, cin cout each) than as a
 * Winograd F(4x4) conv over the upsampled map (2.25 per fine pixel plus the transforms):
 * from a 2x upsampling (area 1/4) on, with a margin for sizes that do not halve exactly. */
static int upsampled_cheaper(int h, int w, int h0, int w0) {
  return (h != h0 || w != w0) && 10 * (size_t)h * (size_t)w <= 3 * (size_t)h0 * (size_t)w0;
}

rv_status rv_uper_forward(const rv_uper *u, rv_tensor *out, const rv_tensor *inputs,
                          int num_inputs, rv_arena *a, rv_ctx *ctx) {
  const rv_uper_config *c = &u->cfg;
  if (num_inputs != c->num_ins)
    return rv_error(ctx, RV_ERR_SHAPE, "UperNet expects %d input features, got %d", c->num_ins, num_inputs);
  const int n = inputs[0].n, last = c->num_ins - 1, ch = c->channels;
  for (int i = 0; i < num_inputs; i++) {
    if (!inputs[i].data || inputs[i].n != n || inputs[i].h <= 0 || inputs[i].w <= 0)
      return rv_error(ctx, RV_ERR_SHAPE, "UperNet input %d is empty or has another batch size", i);
    if (inputs[i].c != c->in_channels[i])
      return rv_error(ctx, RV_ERR_SHAPE, "UperNet input %d has %d channels, the weights expect %d", i,
                      inputs[i].c, c->in_channels[i]);
  }
  const int h0 = inputs[0].h, w0 = inputs[0].w;
  *out = rv_tensor_new(a, n, ch, h0, w0);
  if (!out->data) return rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (UperNet output)");
  rv_arena_mark m = rv_arena_get_mark(a);
  rv_status st = RV_OK;
  rv_tensor lat[RV_UPER_MAX_LEVELS];
  /* PSP: cat[x, ppm_s...] -> bottleneck */
  {
    const rv_tensor x = inputs[last];
    const int cat_c = x.c + c->num_pool_scales * ch;
    rv_tensor cat = rv_tensor_new(a, n, cat_c, x.h, x.w);
    if (!cat.data) st = rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (UperNet PPM)");
    if (st == RV_OK) resize_into_slice(cat.data, cat_c, 0, x.h, x.w, x);
    for (int k = 0; k < c->num_pool_scales && st == RV_OK; k++) {
      rv_arena_mark mk = rv_arena_get_mark(a);
      const int s = c->pool_scales[k];
      rv_tensor pooled = rv_tensor_new(a, n, x.c, s, s), conv;
      if (!pooled.data) {
        st = rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (UperNet PPM)");
        break;
      }
      rv_adaptive_avgpool_f32(pooled.data, x.data, n * x.c, x.h, x.w, s, s);
      st = rv_convmod_forward(&u->ppm[k], &conv, pooled, a, ctx);
      if (st == RV_OK) resize_into_slice(cat.data, cat_c, x.c + k * ch, x.h, x.w, conv);
      rv_arena_release(a, mk);
    }
    if (st == RV_OK) st = rv_convmod_forward(&u->bottleneck, &lat[last], cat, a, ctx);
  }
  for (int i = 0; i < last && st == RV_OK; i++)
    st = rv_convmod_forward(&u->lateral[i], &lat[i], inputs[i], a, ctx);
  for (int i = last; i > 0 && st == RV_OK; i--) /* lat[i-1] += bilinear(lat[i]) */
    rv_resize_bilinear_add_f32(lat[i - 1].data, lat[i].data, n * ch, lat[i].h, lat[i].w,
                               lat[i - 1].h, lat[i - 1].w);
  /* out = fpn_bottleneck(cat[F_0, up(F_1), ..., up(F_last)]) as the sum over levels i of
   * the conv of level i's weight slice over up(F_i) (F_i = fpn_convs[i](lat[i]), F_last =
   * lat[last], up = bilinear to level 0's size), accumulated in `out`, the bias and ReLU
   * with the last: the same sum as one conv over the concatenation without its buffer
   * (num_ins x channels at level 0: 537 MB for UperNet-S at 512x2048), and the 3x3
   * convs' input transforms done once per input channel (kernels/winograd.c). The coarse
   * levels' terms are computed at their own resolution without up(F_i) (upsampled_cheaper). */
  const size_t item = (size_t)ch * (size_t)h0 * (size_t)w0;
  for (int i = 0; i <= last && st == RV_OK; i++) {
    rv_arena_mark mk = rv_arena_get_mark(a);
    rv_tensor f = lat[last];
    if (i < last) st = rv_convmod_forward(&u->fpn[i], &f, lat[i], a, ctx);
    if (st == RV_OK && i > 0 && upsampled_cheaper(f.h, f.w, h0, w0)) {
      st = rv_convmod_upsampled_into(&u->fpn_bottleneck[i], out->data, item, f, h0, w0, 1, a, ctx);
    } else {
      if (st == RV_OK && (f.h != h0 || f.w != w0)) {
        rv_tensor up = rv_tensor_new(a, n, ch, h0, w0);
        if (!up.data) st = rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (UperNet fusion)");
        if (st == RV_OK) rv_resize_bilinear_f32(up.data, f.data, n * ch, f.h, f.w, h0, w0);
        f = up;
      }
      if (st == RV_OK)
        st = i == 0 ? rv_convmod_forward_into(&u->fpn_bottleneck[i], out->data, item, f, a, ctx)
                    : rv_convmod_accumulate_into(&u->fpn_bottleneck[i], out->data, item, f, a, ctx);
    }
    rv_arena_release(a, mk);
  }
  rv_arena_release(a, m);
  return st;
}

rv_status rv_uper_set_bf16(rv_uper *u, int on, rv_ctx *ctx) {
  rv_status st = rv_convmods_set_bf16(u->ppm, RV_UPER_MAX_SCALES, on, ctx);
  if (st == RV_OK) st = rv_convmods_set_bf16(&u->bottleneck, 1, on, ctx);
  if (st == RV_OK) st = rv_convmods_set_bf16(u->lateral, RV_UPER_MAX_LEVELS, on, ctx);
  if (st == RV_OK) st = rv_convmods_set_bf16(u->fpn, RV_UPER_MAX_LEVELS, on, ctx);
  if (st == RV_OK) st = rv_convmods_set_bf16(u->fpn_bottleneck, 1, on, ctx);
  if (st == RV_OK) /* levels 1.. also convolve upsampled maps: their tap weights packed too */
    st = rv_convmods_set_bf16_upsampled(u->fpn_bottleneck + 1, RV_UPER_MAX_LEVELS - 1, on, ctx);
  if (st != RV_OK && on) rv_uper_set_bf16(u, 0, ctx);
  return st;
}
