/* FPN neck: laterals, nearest top-down, 3x3 outputs, extra levels. See fpn.h. */
#include "necks/fpn.h"
#include "nn/conv.h"

#include <stdio.h>
#include <string.h>

struct rv_fpn {
  rv_fpn_config cfg;      /* resolved: in/out channels filled, end_level explicit */
  int num_lat;            /* end_level - start_level */
  int num_extra_convs;    /* fpn_convs beyond the laterals */
  rv_convmod lateral[RV_FPN_MAX_LEVELS];
  rv_convmod out_conv[RV_FPN_MAX_LEVELS * 2];
};

rv_fpn_config rv_fpn_default_config(void) {
  rv_fpn_config c;
  memset(&c, 0, sizeof c);
  c.num_ins = 4;
  for (int i = 0; i < RV_FPN_MAX_LEVELS; i++) c.in_channels[i] = -1;
  c.out_channels = -1;
  c.num_outs = 4;
  c.start_level = 0;
  c.end_level = -1;
  c.extra = RV_FPN_EXTRA_MAXPOOL;
  c.relu_before_extra_convs = 0;
  return c;
}

rv_fpn_config rv_fpn_retinanet_config(void) {
  rv_fpn_config c = rv_fpn_default_config();
  c.start_level = 1;
  c.num_outs = 5;
  c.extra = RV_FPN_EXTRA_ON_INPUT;
  return c;
}

void rv_fpn_free(rv_fpn *f) {
  if (!f) return;
  for (int i = 0; i < RV_FPN_MAX_LEVELS; i++) rv_convmod_free(&f->lateral[i]);
  for (int i = 0; i < RV_FPN_MAX_LEVELS * 2; i++) rv_convmod_free(&f->out_conv[i]);
  rv_free(f);
}

const rv_fpn_config *rv_fpn_config_of(const rv_fpn *f) { return &f->cfg; }

static rv_status check_config(const rv_fpn_config *c, int *num_lat, int *num_extra, rv_ctx *ctx) {
  if (c->num_ins < 1 || c->num_ins > RV_FPN_MAX_LEVELS)
    return rv_error(ctx, RV_ERR_ARG, "FPN: num_ins %d outside 1..%d", c->num_ins, RV_FPN_MAX_LEVELS);
  int end = c->end_level == -1 ? c->num_ins : c->end_level;
  if (end < 1 || end > c->num_ins || c->start_level < 0 || c->start_level >= end)
    return rv_error(ctx, RV_ERR_ARG, "FPN: levels [%d, %d) invalid for %d inputs", c->start_level, end,
                    c->num_ins);
  int nl = end - c->start_level;
  if (c->end_level == -1 ? c->num_outs < nl : c->num_outs != nl)
    return rv_error(ctx, RV_ERR_ARG, "FPN: num_outs %d invalid for %d lateral levels (end_level %d)",
                    c->num_outs, nl, c->end_level);
  if (c->num_outs > 2 * RV_FPN_MAX_LEVELS - 1)
    return rv_error(ctx, RV_ERR_ARG, "FPN: num_outs %d too large", c->num_outs);
  if (c->extra < RV_FPN_EXTRA_MAXPOOL || c->extra > RV_FPN_EXTRA_ON_OUTPUT)
    return rv_error(ctx, RV_ERR_ARG, "FPN: unknown extra-level mode %d", (int)c->extra);
  *num_lat = nl;
  *num_extra = c->extra == RV_FPN_EXTRA_MAXPOOL ? 0 : c->num_outs - nl;
  return RV_OK;
}

rv_status rv_fpn_load(rv_fpn **out, const rv_fpn_config *cfg, rv_params *p,
                      const char *prefix, rv_ctx *ctx) {
  *out = NULL;
  int nl = 0, ne = 0;
  RV_TRY(check_config(cfg, &nl, &ne, ctx));
  rv_fpn *f = rv_calloc(1, sizeof *f);
  if (!f) return rv_error(ctx, RV_ERR_NOMEM, "out of memory (FPN)");
  f->cfg = *cfg;
  f->cfg.end_level = cfg->end_level == -1 ? cfg->num_ins : cfg->end_level;
  f->num_lat = nl;
  f->num_extra_convs = ne;
  rv_fpn_config *c = &f->cfg;
  char name[512];
  rv_status st = RV_OK;
  for (int i = 0; i < nl && st == RV_OK; i++) {
    int lvl = c->start_level + i;
    snprintf(name, sizeof name, "%slateral_convs.%d", prefix, i);
    st = rv_convmod_load(&f->lateral[i], p, name, c->in_channels[lvl], c->out_channels, 1, 1,
                         RV_ACT_NONE, ctx);
    if (st != RV_OK) break;
    c->in_channels[lvl] = f->lateral[i].cin;
    c->out_channels = f->lateral[i].cout;
  }
  for (int i = 0; i < nl + ne && st == RV_OK; i++) {
    int cin = c->out_channels, stride = 1;
    if (i >= nl) {
      stride = 2;
      if (i == nl && c->extra == RV_FPN_EXTRA_ON_INPUT) cin = c->in_channels[c->end_level - 1];
    }
    snprintf(name, sizeof name, "%sfpn_convs.%d", prefix, i);
    st = rv_convmod_load(&f->out_conv[i], p, name, cin, c->out_channels, 3, stride, RV_ACT_NONE, ctx);
  }
  /* A checkpoint with more convs than the config uses was built for another FPN mode. */
  if (st == RV_OK) {
    snprintf(name, sizeof name, "%slateral_convs.%d", prefix, nl);
    if (rv_convmod_exists(p, name))
      st = rv_error(ctx, RV_ERR_MODEL, "FPN: checkpoint has '%s' but the config has %d lateral levels",
                    name, nl);
  }
  if (st == RV_OK) {
    snprintf(name, sizeof name, "%sfpn_convs.%d", prefix, nl + ne);
    if (rv_convmod_exists(p, name))
      st = rv_error(ctx, RV_ERR_MODEL,
                    "FPN: checkpoint has '%s' (an extra-level conv) but the config uses %d convs "
                    "(num_outs %d, %s)", name, nl + ne, c->num_outs,
                    c->extra == RV_FPN_EXTRA_MAXPOOL ? "max-pool extra levels" : "extra convs");
  }
  if (st != RV_OK) {
    rv_fpn_free(f);
    return st;
  }
  *out = f;
  return RV_OK;
}

rv_status rv_fpn_forward(const rv_fpn *f, rv_tensor *outs, const rv_tensor *inputs,
                         int num_inputs, rv_arena *a, rv_ctx *ctx) {
  const rv_fpn_config *c = &f->cfg;
  if (num_inputs != c->num_ins)
    return rv_error(ctx, RV_ERR_SHAPE, "FPN expects %d input features, got %d", c->num_ins, num_inputs);
  int n = inputs[0].n;
  for (int i = 0; i < num_inputs; i++) {
    if (!inputs[i].data || inputs[i].n != n || inputs[i].h <= 0 || inputs[i].w <= 0)
      return rv_error(ctx, RV_ERR_SHAPE, "FPN input %d is empty or has another batch size", i);
    if (i >= c->start_level && i < c->end_level && inputs[i].c != c->in_channels[i])
      return rv_error(ctx, RV_ERR_SHAPE, "FPN input %d has %d channels, the weights expect %d", i,
                      inputs[i].c, c->in_channels[i]);
  }
  const int nl = f->num_lat, oc = c->out_channels;
  /* outputs first (they outlive the scratch) */
  int h = 0, w = 0;
  for (int i = 0; i < c->num_outs; i++) {
    if (i < nl) {
      h = inputs[c->start_level + i].h;
      w = inputs[c->start_level + i].w;
    } else if (c->extra == RV_FPN_EXTRA_MAXPOOL) {
      h = (h - 1) / 2 + 1;
      w = (w - 1) / 2 + 1;
    } else {
      if (i == nl && c->extra == RV_FPN_EXTRA_ON_INPUT) {
        h = inputs[c->end_level - 1].h;
        w = inputs[c->end_level - 1].w;
      }
      rv_convmod_out_size(&f->out_conv[i], h, w, &h, &w);
    }
    outs[i] = rv_tensor_new(a, n, oc, h, w);
    if (!outs[i].data) return rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (FPN output %d)", i);
  }
  rv_arena_mark m = rv_arena_get_mark(a);
  rv_tensor lat[RV_FPN_MAX_LEVELS];
  rv_status st = RV_OK;
  for (int i = 0; i < nl && st == RV_OK; i++)
    st = rv_convmod_forward(&f->lateral[i], &lat[i], inputs[c->start_level + i], a, ctx);
  for (int i = nl - 1; i > 0 && st == RV_OK; i--) /* lat[i-1] += nearest(lat[i]) */
    rv_resize_nearest_add_f32(lat[i - 1].data, lat[i].data, lat[i].n * lat[i].c, lat[i].h,
                              lat[i].w, lat[i - 1].h, lat[i - 1].w);
  for (int i = 0; i < nl && st == RV_OK; i++)
    st = rv_convmod_forward_into(&f->out_conv[i], outs[i].data,
                                 (size_t)oc * (size_t)outs[i].h * (size_t)outs[i].w, lat[i], a, ctx);
  for (int i = nl; i < c->num_outs && st == RV_OK; i++) {
    size_t item = (size_t)oc * (size_t)outs[i].h * (size_t)outs[i].w;
    if (c->extra == RV_FPN_EXTRA_MAXPOOL) {
      rv_maxpool2d_f32(outs[i].data, outs[i - 1].data, n * oc, outs[i - 1].h, outs[i - 1].w, 1, 2, 0);
      continue;
    }
    rv_tensor src;
    if (i == nl) {
      src = c->extra == RV_FPN_EXTRA_ON_INPUT     ? inputs[c->end_level - 1]
            : c->extra == RV_FPN_EXTRA_ON_LATERAL ? lat[nl - 1]
                                                  : outs[nl - 1];
    } else {
      src = outs[i - 1];
      if (c->relu_before_extra_convs) { /* F.relu(outs[-1]) is not in place */
        size_t cnt = rv_tensor_numel(src);
        float *tmp = rv_arena_floats(a, cnt);
        if (!tmp) {
          st = rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (FPN extra level)");
          break;
        }
        memcpy(tmp, src.data, cnt * sizeof(float));
        rv_relu_f32(tmp, cnt);
        src.data = tmp;
      }
    }
    st = rv_convmod_forward_into(&f->out_conv[i], outs[i].data, item, src, a, ctx);
  }
  rv_arena_release(a, m);
  return st;
}

rv_status rv_fpn_set_bf16(rv_fpn *f, int on, rv_ctx *ctx) {
  RV_TRY(rv_convmods_set_bf16(f->lateral, RV_FPN_MAX_LEVELS, on, ctx));
  rv_status st = rv_convmods_set_bf16(f->out_conv, RV_FPN_MAX_LEVELS * 2, on, ctx);
  if (st != RV_OK) rv_convmods_set_bf16(f->lateral, RV_FPN_MAX_LEVELS, 0, ctx);
  return st;
}
