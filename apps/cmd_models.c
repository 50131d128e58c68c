/* `ravlt models [--json] [--urls]`: the official RAVLT checkpoints that --weights accepts
 * by name (models/zoo.h), with params, FLOPs, published metric and whether they are cached. */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "models/zoo.h"
#include "apps/commands.h"

#include <stddef.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
  const char *json;
  int urls;
} models_opts;

static const rv_opt OPTS[] = {
    {"--json", NULL, RV_OPT_STR, offsetof(models_opts, json), 0, 0, NULL, "FILE",
     "write [{\"name\", \"model\", \"task\", \"method\", \"file\", \"url\", \"params_m\",\n"
     "\"flops_g\", \"metric\", \"value\", \"mask_ap\", \"cached\"}] to FILE\n"
     "('-': stdout, instead of the table)", 0},
    {"--urls", NULL, RV_OPT_FLAG, offsetof(models_opts, urls), 0, 0, NULL, NULL, "print the download URL of each entry as a last column", 0},
    RV_OPT_END};

const rv_cmd_spec rv_spec_models = {
    "models", "[--json FILE|-] [--urls]",
    "Lists the official RAVLT checkpoints (qhfan/RALA README). Any NAME below can be given to\n"
    "--weights of segment / detect / video / eval: the checkpoint is downloaded into the cache\n"
    "($XDG_CACHE_HOME/ravlt or ~/.cache/ravlt), converted once to safetensors, and reused.\n"
    "Set RAVLT_BASE_URL to use a mirror (default " RV_ZOO_DEFAULT_BASE "),\n"
    "RAVLT_OFFLINE=1 to never connect. Params / FLOPs / metric are the published numbers.\n",
    OPTS, 0, NULL,
    "  ravlt models\n"
    "  ravlt models --json - | python3 -m json.tool\n"
    "  ravlt segment --weights semantic-fpn-ravlt-s photo.jpg\n",
    sizeof(models_opts)};

/* 1 if <cache>/<stem>.safetensors exists. */
static int cached(const char *dir, const rv_zoo_entry *e) {
  if (!dir || !e->file) return 0;
  const char *dot = strrchr(e->file, '.');
  char p[4200];
  snprintf(p, sizeof p, "%s/%.*s.safetensors", dir, (int)(dot - e->file), e->file);
  struct stat sb;
  return stat(p, &sb) == 0 && sb.st_size > 0;
}

int rv_cmd_models(int argc, char **argv) {
  models_opts mo = {NULL, 0};
  int npos;
  int prc = rv_cli_parse(&rv_spec_models, &mo, argc, argv, &npos);
  if (prc >= 0) return prc;
  int urls = mo.urls;
  rv_ctx *ctx = rv_cli_ctx();
  char dir[4096];
  /* The cache folder is only looked at (created if missing, harmless). */
  const char *cdir = rv_cache_dir(dir, sizeof dir, ctx) == RV_OK ? dir : NULL;
  int n = 0;
  const rv_zoo_entry *es = rv_zoo_entries(&n);
  char url[4096];
  if (mo.json) {
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
      const rv_zoo_entry *e = &es[i];
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "name", e->name);
      cJSON_AddStringToObject(o, "model", e->model);
      cJSON_AddStringToObject(o, "task", rv_zoo_task_name(e->task));
      cJSON_AddStringToObject(o, "method", e->method);
      if (e->file && rv_zoo_url(url, sizeof url, e, NULL, NULL) == RV_OK) {
        cJSON_AddStringToObject(o, "file", e->file);
        cJSON_AddStringToObject(o, "url", url);
      } else {
        cJSON_AddNullToObject(o, "file");
        cJSON_AddNullToObject(o, "url");
      }
#define NUM_OR_NULL(key, v) ((v) > 0 ? (void)cJSON_AddNumberToObject(o, key, v) : (void)cJSON_AddNullToObject(o, key))
      NUM_OR_NULL("params_m", e->params_m);
      NUM_OR_NULL("flops_g", e->flops_g);
      cJSON_AddStringToObject(o, "metric", e->metric);
      NUM_OR_NULL("value", e->value);
      NUM_OR_NULL("mask_ap", e->mask_ap);
#undef NUM_OR_NULL
      cJSON_AddBoolToObject(o, "cached", cached(cdir, e));
      cJSON_AddItemToArray(arr, o);
    }
    char *txt = cJSON_Print(arr);
    cJSON_Delete(arr);
    if (!txt) { rv_ctx_free(ctx); fputs("ravlt models: out of memory\n", stderr); return 1; }
    rv_status st = rv_cli_json_write(mo.json, txt, ctx);
    free(txt);
    int rc = st == RV_OK ? 0 : rv_cli_fail(ctx, "models", st);
    if (rc || rv_cli_json_stdout(mo.json)) {
      rv_ctx_free(ctx);
      return rc;
    }
  }
  printf("%-27s %-8s %-22s %7s %7s  %-22s %s\n", "NAME", "TASK", "METHOD", "PARAMS", "FLOPS",
         "PUBLISHED", urls ? "CACHED URL" : "CACHED");
  for (int i = 0; i < n; i++) {
    const rv_zoo_entry *e = &es[i];
    char params[16] = "-", flops[16] = "-", metric[40] = "-";
    if (e->params_m > 0) snprintf(params, sizeof params, "%gM", e->params_m);
    if (e->flops_g > 0) snprintf(flops, sizeof flops, "%gG", e->flops_g);
    if (e->value > 0 && e->mask_ap > 0)
      snprintf(metric, sizeof metric, "%s %.1f mask %.1f", e->metric, e->value, e->mask_ap);
    else if (e->value > 0) snprintf(metric, sizeof metric, "%s %.1f", e->metric, e->value);
    else if (!e->file) snprintf(metric, sizeof metric, "(no checkpoint)");
    printf("%-27s %-8s %-22s %7s %7s  %-22s %s", e->name, rv_zoo_task_name(e->task), e->method,
           params, flops, metric, cached(cdir, e) ? "yes" : "no");
    if (urls) printf(" %s", e->file && rv_zoo_url(url, sizeof url, e, NULL, NULL) == RV_OK ? url : "-");
    putchar('\n');
  }
  if (cdir) printf("\ncache: %s   base URL: %s\n", cdir, rv_zoo_base_url(NULL));
  rv_ctx_free(ctx);
  return 0;
}
