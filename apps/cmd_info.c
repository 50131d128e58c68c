/* `ravlt info MODEL [--size HxW] [--backbone] [--json]`: parameters and multiply-accumulates
 * of a RAVLT preset or checkpoint, per stage and in total, split into convolutions,
 * attention matmuls and norms. */
#include "apps/cli.h"
#include "apps/model_args.h"
#include "backbone/ravlt.h"
#include "apps/commands.h"

#include <stddef.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int size[2];
  int backbone;
  const char *json;
} info_opts;

static const rv_opt OPTS[] = {
    {"--size", NULL, RV_OPT_SIZE, offsetof(info_opts, size), 1, 65536, NULL, "HxW", "input size, height first (default 224x224)", 0},
    {"--backbone", NULL, RV_OPT_FLAG, offsetof(info_opts, backbone), 0, 0, NULL, NULL,
     "count the backbone (4 outputs with extra_norms) even for a classifier", 0},
    {"--json", NULL, RV_OPT_STR, offsetof(info_opts, json), 0, 0, NULL, "FILE",
     "write {\"params\", \"macs\", \"macs_paper\", \"stages\": [...], ...} to FILE\n"
     "('-': stdout, instead of the table)", 0},
    RV_OPT_END};

const rv_cmd_spec rv_spec_info = {
    "info", "MODEL [--size HxW] [--backbone] [--json FILE|-]",
    "MODEL is a preset (ravlt-t, ravlt-s, ravlt-b, ravlt-l: ImageNet classifiers;\n"
    "ravlt-t-backbone ... : the dense-prediction backbone) or a checkpoint (.pth or\n"
    ".safetensors, with or without the 'backbone.' key prefix).\n",
    OPTS, 1,
    "Multiply-accumulates: 'macs' = convolutions + attention matmuls (every conv/matmul\n"
    "MAC); 'macs_paper' = convolutions + norms (fvcore: LayerNorm 5/elem, eval BatchNorm\n"
    "2/elem) without the attention matmuls, which is what the paper's table reports\n"
    "(2.4/4.6/9.9/16.0 G for T/S/B/L at 224x224).\n",
    "  ravlt info ravlt-s\n"
    "  ravlt info ravlt-s-backbone --size 512x512\n"
    "  ravlt info upernet_ravlt_s.pth --size 512x2048 --json -\n",
    sizeof(info_opts)};

static void fmt_int(char *buf, size_t n, int64_t v) {
  char tmp[32];
  snprintf(tmp, sizeof tmp, "%lld", (long long)v);
  size_t len = strlen(tmp), o = 0;
  for (size_t i = 0; i < len && o + 2 < n; i++) {
    buf[o++] = tmp[i];
    size_t left = len - i - 1;
    if (left > 0 && left % 3 == 0 && tmp[i] != '-') buf[o++] = ',';
  }
  buf[o] = 0;
}

static void row(const char *name, int h, int w, const rv_ravlt_cost *c) {
  char p[32], size[32];
  fmt_int(p, sizeof p, c->params);
  if (h > 0) snprintf(size, sizeof size, "%dx%d", h, w);
  else snprintf(size, sizeof size, "-");
  printf("%-12s %-10s %12s %10.3f %10.3f %10.3f %10.3f %10.3f\n", name, size, p,
         c->macs_conv / 1e9, c->macs_attn / 1e9, c->macs_norm / 1e9,
         rv_ravlt_cost_macs(c) / 1e9, rv_ravlt_cost_macs_paper(c) / 1e9);
}

static cJSON *cost_json(const char *name, int h, int w, const rv_ravlt_cost *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  if (h > 0) { cJSON_AddNumberToObject(o, "h", h); cJSON_AddNumberToObject(o, "w", w); }
  cJSON_AddNumberToObject(o, "params", (double)c->params);
  cJSON_AddNumberToObject(o, "macs", (double)rv_ravlt_cost_macs(c));
  cJSON_AddNumberToObject(o, "macs_paper", (double)rv_ravlt_cost_macs_paper(c));
  cJSON_AddNumberToObject(o, "macs_conv", (double)c->macs_conv);
  cJSON_AddNumberToObject(o, "macs_attn", (double)c->macs_attn);
  cJSON_AddNumberToObject(o, "macs_norm", (double)c->macs_norm);
  return o;
}

int rv_cmd_info(int argc, char **argv) {
  const char *cmd = "info";
  info_opts io = {{224, 224}, 0, NULL};
  int npos;
  int prc = rv_cli_parse(&rv_spec_info, &io, argc, argv, &npos);
  if (prc >= 0) return prc;
  const char *model = npos ? argv[0] : NULL;
  int h = io.size[0], w = io.size[1], backbone = io.backbone;
  const char *json = io.json;
  if (!model) return rv_cli_usage_error(cmd, "missing MODEL (a preset such as ravlt-s, or a checkpoint)");
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  rv_ravlt_config cfg;
  rv_weights *wf = NULL;
  rv_status mst = rv_model_config(model, &cfg, &wf, ctx);
  int from_file = wf != NULL;
  rv_weights_free(wf);
  if (mst != RV_OK) {
    int rc = rv_cli_fail(ctx, cmd, mst);
    rv_ctx_free(ctx);
    return rc;
  }
  if (backbone && cfg.classifier) {
    cfg.classifier = 0;
    cfg.num_outs = 4;
    for (int s = 0; s < 4; s++) cfg.out_indices[s] = s;
  }
  rv_ravlt_costs c;
  rv_status st = rv_ravlt_count(&cfg, h, w, &c, ctx);
  if (st != RV_OK) {
    int rc = rv_cli_fail(ctx, cmd, st);
    rv_ctx_free(ctx);
    return rc;
  }
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", model);
    cJSON_AddStringToObject(o, "variant", cfg.classifier ? "classifier" : "backbone");
    cJSON *in = cJSON_AddArrayToObject(o, "input");
    cJSON_AddItemToArray(in, cJSON_CreateNumber(h));
    cJSON_AddItemToArray(in, cJSON_CreateNumber(w));
    cJSON_AddNumberToObject(o, "params", (double)c.total.params);
    cJSON_AddNumberToObject(o, "macs", (double)rv_ravlt_cost_macs(&c.total));
    cJSON_AddNumberToObject(o, "macs_paper", (double)rv_ravlt_cost_macs_paper(&c.total));
    cJSON_AddNumberToObject(o, "macs_conv", (double)c.total.macs_conv);
    cJSON_AddNumberToObject(o, "macs_attn", (double)c.total.macs_attn);
    cJSON_AddNumberToObject(o, "macs_norm", (double)c.total.macs_norm);
    cJSON_AddItemToObject(o, "patch_embed", cost_json("patch_embed", 0, 0, &c.stem));
    cJSON *arr = cJSON_AddArrayToObject(o, "stages");
    for (int s = 0; s < 4; s++) {
      char name[16];
      snprintf(name, sizeof name, "stage%d", s + 1);
      cJSON *so = cost_json(name, c.h[s], c.w[s], &c.stages[s]);
      cJSON_AddNumberToObject(so, "dim", cfg.embed_dims[s]);
      cJSON_AddNumberToObject(so, "depth", cfg.depths[s]);
      cJSON_AddNumberToObject(so, "heads", cfg.num_heads[s]);
      cJSON_AddItemToArray(arr, so);
    }
    if (cfg.classifier) cJSON_AddItemToObject(o, "head", cost_json("head", 0, 0, &c.head));
    char *txt = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    st = txt ? rv_cli_json_write(json, txt, ctx) : rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    free(txt);
    if (st != RV_OK) {
      int rc = rv_cli_fail(ctx, cmd, st);
      rv_ctx_free(ctx);
      return rc;
    }
  }
  if (!rv_cli_json_stdout(json)) {
    printf("%s: RAVLT %s%s, input %dx%d\n", model,
           cfg.classifier ? "ImageNet classifier" : "backbone (GLTA)",
           from_file ? " (architecture read from the checkpoint; attention kinds: RALA in "
                       "stages 1-2, softmax in 3-4)" : "",
           h, w);
    printf("  embed %d/%d/%d/%d, depths %d/%d/%d/%d, heads %d/%d/%d/%d, mlp %.4g, layerscale %s\n",
           cfg.embed_dims[0], cfg.embed_dims[1], cfg.embed_dims[2], cfg.embed_dims[3],
           cfg.depths[0], cfg.depths[1], cfg.depths[2], cfg.depths[3], cfg.num_heads[0],
           cfg.num_heads[1], cfg.num_heads[2], cfg.num_heads[3], cfg.mlp_ratios[0],
           cfg.layerscales[0] ? "yes" : "no");
    printf("%-12s %-10s %12s %10s %10s %10s %10s %10s\n", "part", "features", "params",
           "conv GMAC", "attn GMAC", "norm GMAC", "GMACs", "paper");
    row("patch_embed", 0, 0, &c.stem);
    for (int s = 0; s < 4; s++) {
      char name[16];
      snprintf(name, sizeof name, "stage%d", s + 1);
      row(name, c.h[s], c.w[s], &c.stages[s]);
    }
    if (cfg.classifier) row("head", 0, 0, &c.head);
    row("total", 0, 0, &c.total);
    printf("macs %.3f G (conv + attention matmuls), macs_paper %.3f G (conv + norms, without "
           "attention matmuls: the paper's table)\n",
           rv_ravlt_cost_macs(&c.total) / 1e9, rv_ravlt_cost_macs_paper(&c.total) / 1e9);
  }
  rv_ctx_free(ctx);
  return 0;
}
