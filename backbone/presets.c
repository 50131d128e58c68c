/* RAVLT configurations: the official presets (classfication/RALA.py RAVLT_T/S/B/L and the
 * matching detection/segmentation backbone configs), JSON configs (fixture config.json),
 * configs inferred from weights, validation. */
#include "backbone/ravlt.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void default_flags(rv_ravlt_config *c) {
  /* official default flagss = [['l']*10, ['l']*10, ['v','v']*10, ['v']*10] */
  for (int s = 0; s < RV_RAVLT_STAGES; s++)
    for (int j = 0; j < RV_RAVLT_MAX_DEPTH; j++) c->flags[s][j] = s < 2 ? 'l' : 'v';
}

rv_ravlt_config rv_ravlt_default_config(void) {
  rv_ravlt_config c;
  memset(&c, 0, sizeof c);
  c.in_chans = 3;
  const int dims[4] = {96, 192, 384, 768}, depths[4] = {2, 2, 6, 2}, heads[4] = {3, 6, 12, 24};
  for (int s = 0; s < 4; s++) {
    c.embed_dims[s] = dims[s];
    c.depths[s] = depths[s];
    c.num_heads[s] = heads[s];
    c.mlp_ratios[s] = 3.0;
    c.layerscales[s] = 0;
    c.layer_init_values[s] = 1e-6;
    c.out_indices[s] = s;
  }
  c.num_outs = 4;
  default_flags(&c);
  c.classifier = 0;
  c.projection = 1024;
  c.num_classes = 1000;
  c.ln_eps = 1e-6f;
  c.bn_eps = 1e-5f;
  return c;
}

typedef struct {
  const char *name;
  int dims[4], depths[4], heads[4];
  double init[4];
} preset;

static const preset PRESETS[] = {
    {"ravlt-t", {64, 128, 256, 512}, {2, 2, 6, 2}, {1, 2, 4, 8}, {1, 1, 1, 1}},
    {"ravlt-s", {64, 128, 320, 512}, {3, 5, 9, 3}, {1, 2, 5, 8}, {1, 1, 1, 1}},
    {"ravlt-b", {96, 192, 384, 512}, {4, 6, 12, 6}, {1, 2, 6, 8}, {1, 1, 1e-6, 1e-6}},
    {"ravlt-l", {96, 192, 448, 640}, {4, 7, 19, 8}, {1, 2, 7, 10}, {1e-6, 1e-6, 1e-6, 1e-6}},
};

const char *const *rv_ravlt_preset_names(void) {
  static const char *const names[] = {"ravlt-t", "ravlt-s", "ravlt-b", "ravlt-l",
                                      "ravlt-t-backbone", "ravlt-s-backbone",
                                      "ravlt-b-backbone", "ravlt-l-backbone", NULL};
  return names;
}

rv_status rv_ravlt_preset(rv_ravlt_config *cfg, const char *name, rv_ctx *ctx) {
  for (size_t i = 0; i < sizeof PRESETS / sizeof PRESETS[0]; i++) {
    const preset *p = &PRESETS[i];
    size_t len = strlen(p->name);
    if (strncmp(name, p->name, len) != 0) continue;
    int backbone;
    if (name[len] == 0) backbone = 0;
    else if (strcmp(name + len, "-backbone") == 0) backbone = 1;
    else continue;
    rv_ravlt_config c = rv_ravlt_default_config();
    for (int s = 0; s < 4; s++) {
      c.embed_dims[s] = p->dims[s];
      c.depths[s] = p->depths[s];
      c.num_heads[s] = p->heads[s];
      c.mlp_ratios[s] = 3.5;
      c.layerscales[s] = 1;
      c.layer_init_values[s] = p->init[s];
    }
    c.classifier = !backbone;
    *cfg = c;
    return RV_OK;
  }
  return rv_error(ctx, RV_ERR_ARG,
                  "unknown RAVLT preset '%s' (known: ravlt-t/s/b/l, ravlt-t/s/b/l-backbone)",
                  name);
}

int rv_ravlt_ffn_dim(const rv_ravlt_config *cfg, int stage) {
  /* Python int(mlp_ratio * embed_dim): truncation of the double product */
  return (int)(cfg->mlp_ratios[stage] * (double)cfg->embed_dims[stage]);
}

void rv_ravlt_stage_size(int h, int w, int stage, int *oh, int *ow) {
  /* stem: two stride-2 3x3 convs with pad 1 (ceil halving), then one per stage */
  for (int i = 0; i < 2 + stage; i++) {
    h = (h + 1) / 2;
    w = (w + 1) / 2;
  }
  *oh = h;
  *ow = w;
}

rv_status rv_ravlt_config_validate(const rv_ravlt_config *c, rv_ctx *ctx) {
  if (c->in_chans < 1 || c->in_chans > 64)
    return rv_error(ctx, RV_ERR_ARG, "RAVLT config: in_chans %d out of range", c->in_chans);
  for (int s = 0; s < 4; s++) {
    int dim = c->embed_dims[s], h = c->num_heads[s];
    if (dim < 2 || dim > 65536 || (s == 0 && dim % 2))
      return rv_error(ctx, RV_ERR_ARG, "RAVLT config: embed_dims[%d] = %d invalid", s, dim);
    if (c->depths[s] < 0 || c->depths[s] > RV_RAVLT_MAX_DEPTH)
      return rv_error(ctx, RV_ERR_ARG, "RAVLT config: depths[%d] = %d (0..%d)", s, c->depths[s],
                      RV_RAVLT_MAX_DEPTH);
    if (h < 1 || dim % h)
      return rv_error(ctx, RV_ERR_ARG, "RAVLT config: stage %d: %d heads do not divide dim %d", s,
                      h, dim);
    if ((dim / h) % 4)
      return rv_error(ctx, RV_ERR_ARG,
                      "RAVLT config: stage %d: head_dim %d is not a multiple of 4 (2-D RoPE)", s,
                      dim / h);
    if (!(c->mlp_ratios[s] > 0) || rv_ravlt_ffn_dim(c, s) < 1 || rv_ravlt_ffn_dim(c, s) > 1 << 20)
      return rv_error(ctx, RV_ERR_ARG, "RAVLT config: mlp_ratios[%d] = %g invalid", s,
                      c->mlp_ratios[s]);
    for (int j = 0; j < c->depths[s]; j++)
      if (c->flags[s][j] != 'l' && c->flags[s][j] != 'v')
        return rv_error(ctx, RV_ERR_ARG, "RAVLT config: flag of stage %d block %d is '%c' (l or v)",
                        s, j, c->flags[s][j] ? c->flags[s][j] : '?');
  }
  if (!c->classifier) {
    if (c->num_outs < 1 || c->num_outs > 4)
      return rv_error(ctx, RV_ERR_ARG, "RAVLT config: %d out_indices", c->num_outs);
    for (int i = 0; i < c->num_outs; i++)
      if (c->out_indices[i] < 0 || c->out_indices[i] > 3 ||
          (i > 0 && c->out_indices[i] <= c->out_indices[i - 1]))
        return rv_error(ctx, RV_ERR_ARG, "RAVLT config: out_indices must be ascending in 0..3");
  } else if (c->projection < 1 || c->num_classes < 1) {
    return rv_error(ctx, RV_ERR_ARG, "RAVLT config: classifier needs projection and num_classes");
  }
  if (!(c->ln_eps > 0) || !(c->bn_eps > 0))
    return rv_error(ctx, RV_ERR_ARG, "RAVLT config: eps must be positive");
  return RV_OK;
}

/* ---- JSON ------------------------------------------------------------------------------- */

static rv_status json_ints(rv_ctx *ctx, const cJSON *o, const char *key, int *dst, int n,
                           int *count) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!a || cJSON_IsNull(a)) return RV_OK;
  if (!cJSON_IsArray(a) || (count ? cJSON_GetArraySize(a) > n : cJSON_GetArraySize(a) != n))
    return rv_error(ctx, RV_ERR_FORMAT, "RAVLT config: '%s' must be a list of %d numbers", key, n);
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, a) {
    if (cJSON_IsBool(e)) dst[i++] = cJSON_IsTrue(e);
    else if (cJSON_IsNumber(e) && e->valuedouble == floor(e->valuedouble) && fabs(e->valuedouble) < 1e9)
      dst[i++] = (int)e->valuedouble;
    else return rv_error(ctx, RV_ERR_FORMAT, "RAVLT config: '%s'[%d] is not an integer", key, i);
  }
  if (count) *count = i;
  return RV_OK;
}

static rv_status json_doubles(rv_ctx *ctx, const cJSON *o, const char *key, double *dst, int n) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!a || cJSON_IsNull(a)) return RV_OK;
  if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n)
    return rv_error(ctx, RV_ERR_FORMAT, "RAVLT config: '%s' must be a list of %d numbers", key, n);
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, a) {
    if (!cJSON_IsNumber(e))
      return rv_error(ctx, RV_ERR_FORMAT, "RAVLT config: '%s'[%d] is not a number", key, i);
    dst[i++] = e->valuedouble;
  }
  return RV_OK;
}

rv_status rv_ravlt_config_from_json(rv_ravlt_config *cfg, const char *json_text, rv_ctx *ctx) {
  cJSON *o = cJSON_Parse(json_text);
  if (!o || !cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return rv_error(ctx, RV_ERR_FORMAT, "RAVLT config: not a JSON object");
  }
  rv_ravlt_config c = rv_ravlt_default_config();
  rv_status st = RV_OK;
  int nout = 0;
  if ((st = json_ints(ctx, o, "embed_dims", c.embed_dims, 4, NULL)) ||
      (st = json_ints(ctx, o, "depths", c.depths, 4, NULL)) ||
      (st = json_ints(ctx, o, "num_heads", c.num_heads, 4, NULL)) ||
      (st = json_ints(ctx, o, "layerscales", c.layerscales, 4, NULL)) ||
      (st = json_doubles(ctx, o, "mlp_ratios", c.mlp_ratios, 4)) ||
      (st = json_doubles(ctx, o, "layer_init_values", c.layer_init_values, 4)))
    goto done;
  if (cJSON_GetObjectItemCaseSensitive(o, "out_indices")) {
    if ((st = json_ints(ctx, o, "out_indices", c.out_indices, 4, &nout))) goto done;
    c.num_outs = nout;
  }
  const cJSON *ic = cJSON_GetObjectItemCaseSensitive(o, "in_chans");
  if (ic) {
    if (!cJSON_IsNumber(ic)) { st = rv_error(ctx, RV_ERR_FORMAT, "RAVLT config: in_chans"); goto done; }
    c.in_chans = (int)ic->valuedouble;
  }
  const cJSON *fl = cJSON_GetObjectItemCaseSensitive(o, "flagss");
  if (fl && !cJSON_IsNull(fl)) {
    if (!cJSON_IsArray(fl) || cJSON_GetArraySize(fl) != 4) {
      st = rv_error(ctx, RV_ERR_FORMAT, "RAVLT config: 'flagss' must be 4 lists");
      goto done;
    }
    for (int s = 0; s < 4; s++) {
      const cJSON *l = cJSON_GetArrayItem(fl, s);
      if (!cJSON_IsArray(l) || cJSON_GetArraySize(l) > RV_RAVLT_MAX_DEPTH) {
        st = rv_error(ctx, RV_ERR_FORMAT, "RAVLT config: flagss[%d] must be a list", s);
        goto done;
      }
      for (int j = 0; j < RV_RAVLT_MAX_DEPTH; j++) c.flags[s][j] = 0;
      int j = 0;
      const cJSON *e;
      cJSON_ArrayForEach(e, l) {
        if (!cJSON_IsString(e) || strlen(e->valuestring) != 1) {
          st = rv_error(ctx, RV_ERR_FORMAT, "RAVLT config: flagss[%d][%d] must be 'l' or 'v'", s, j);
          goto done;
        }
        c.flags[s][j++] = e->valuestring[0];
      }
      if (j < c.depths[s]) {
        st = rv_error(ctx, RV_ERR_FORMAT, "RAVLT config: flagss[%d] has %d flags for %d blocks", s,
                      j, c.depths[s]);
        goto done;
      }
    }
  }
  if ((st = rv_ravlt_config_validate(&c, ctx))) goto done;
  *cfg = c;
done:
  cJSON_Delete(o);
  return st;
}

/* ---- from weights ----------------------------------------------------------------------- */

const char *rv_ravlt_detect_prefix(const rv_weights *w) {
  if (rv_weights_find(w, "backbone.patch_embed.proj.0.weight")) return "backbone.";
  if (rv_weights_find(w, "patch_embed.proj.0.weight")) return "";
  return NULL;
}

static const rv_wtensor *findf(const rv_weights *w, const char *prefix, const char *fmt, int a,
                               int b) {
  char name[256], full[300];
  snprintf(name, sizeof name, fmt, a, b);
  snprintf(full, sizeof full, "%s%s", prefix, name);
  return rv_weights_find(w, full);
}

rv_status rv_ravlt_config_from_weights(rv_ravlt_config *cfg, const rv_weights *w,
                                       const char *prefix, rv_ctx *ctx) {
  if (!prefix) prefix = rv_ravlt_detect_prefix(w);
  if (!prefix)
    return rv_error(ctx, RV_ERR_MODEL, "%s: no RAVLT patch_embed.proj.0.weight key",
                    rv_weights_path(w) ? rv_weights_path(w) : "weights");
  rv_ravlt_config c = rv_ravlt_default_config();
  const rv_wtensor *t = findf(w, prefix, "patch_embed.proj.0.weight", 0, 0);
  if (!t || t->ndim != 4)
    return rv_error(ctx, RV_ERR_MODEL, "weights: bad %spatch_embed.proj.0.weight", prefix);
  c.in_chans = (int)t->shape[1];
  for (int s = 0; s < 4; s++) {
    const rv_wtensor *pw = findf(w, prefix, "layers.%d.blocks.0.pos.weight", s, 0);
    const rv_wtensor *an = findf(w, prefix, "layers.%d.RoPE.angle", s, 0);
    if (!pw || pw->ndim != 4 || !an || an->ndim != 1 || an->shape[0] < 1)
      return rv_error(ctx, RV_ERR_MODEL,
                      "weights: stage %d: missing %slayers.%d.blocks.0.pos.weight or RoPE.angle", s,
                      prefix, s);
    int dim = (int)pw->shape[0];
    int hd = 2 * (int)an->shape[0];
    if (hd <= 0 || dim % hd)
      return rv_error(ctx, RV_ERR_MODEL, "weights: stage %d: RoPE.angle length %d does not divide dim %d",
                      s, (int)an->shape[0], dim);
    c.embed_dims[s] = dim;
    c.num_heads[s] = dim / hd;
    int d = 0;
    while (d < RV_RAVLT_MAX_DEPTH && findf(w, prefix, "layers.%d.blocks.%d.pos.weight", s, d)) d++;
    c.depths[s] = d;
    const rv_wtensor *f1 = findf(w, prefix, "layers.%d.blocks.0.ffn.fc1.weight", s, 0);
    if (!f1 || f1->ndim < 1)
      return rv_error(ctx, RV_ERR_MODEL, "weights: missing %slayers.%d.blocks.0.ffn.fc1.weight",
                      prefix, s);
    c.mlp_ratios[s] = ((double)f1->shape[0] + 0.5) / dim; /* int(r * dim) == fc1 rows */
    c.layerscales[s] = findf(w, prefix, "layers.%d.blocks.0.gamma_1", s, 0) != NULL;
  }
  const rv_wtensor *head = findf(w, prefix, "head.weight", 0, 0);
  const rv_wtensor *proj = findf(w, prefix, "proj.weight", 0, 0);
  if (head && proj && head->ndim >= 2 && proj->ndim >= 2 && !findf(w, prefix, "extra_norms.0.norm.weight", 0, 0)) {
    c.classifier = 1;
    c.projection = (int)proj->shape[0];
    c.num_classes = (int)head->shape[0];
  } else {
    c.num_outs = 0;
    for (int s = 0; s < 4; s++)
      if (findf(w, prefix, "extra_norms.%d.norm.weight", s, 0)) c.out_indices[c.num_outs++] = s;
    if (c.num_outs == 0) {
      for (int s = 0; s < 4; s++) c.out_indices[s] = s;
      c.num_outs = 4;
    }
  }
  RV_TRY(rv_ravlt_config_validate(&c, ctx));
  *cfg = c;
  return RV_OK;
}
