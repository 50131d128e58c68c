/* Model loading and output naming shared by the model-running subcommands. */
#define _POSIX_C_SOURCE 200809L
#include "apps/model_run.h"

#include "apps/cli.h"
#include "apps/mpi_run.h"
#include "models/zoo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Download bar on stderr (a TTY, not --quiet): "name [####....] 12.3/45.6 MB 3.2 MB/s". */
typedef struct {
  const char *label;
  double t0, last;
  int enabled, drawn;
} dl_bar;

static int dl_progress(void *user, int64_t done, int64_t total) {
  dl_bar *b = user;
  if (!b->enabled) return 0;
  double t = rv_now();
  if (t - b->last < 0.2 && !(total > 0 && done >= total)) return 0;
  b->last = t;
  b->drawn = 1;
  char bar[31];
  double frac = total > 0 ? (double)done / (double)total : 0;
  for (int i = 0; i < 30; i++) bar[i] = i < (int)(frac * 30) ? '#' : '.';
  bar[30] = 0;
  double el = t - b->t0;
  fprintf(stderr, "\r%s [%s] %.1f/%.1f MB %.1f MB/s   ", b->label, bar, (double)done / 1e6,
          total > 0 ? (double)total / 1e6 : 0.0, el > 0 ? (double)done / 1e6 / el : 0.0);
  fflush(stderr);
  return 0;
}

static int is_file(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}

rv_status rv_cli_resolve_weights(char *out, size_t cap, const char *weights, const char **model,
                                 rv_ctx *ctx) {
  const rv_zoo_entry *e = is_file(weights) ? NULL : rv_zoo_find(weights);
  if (model) *model = e ? e->model : NULL;
  if (!e && !is_file(weights) && !strchr(weights, '/') && !strchr(weights, '.'))
    return rv_error(ctx, RV_ERR_NOTFOUND, "%s: no such file and not a model name ('ravlt models' lists them)",
                    weights);
  if (!e) {
    if (snprintf(out, cap, "%s", weights) >= (int)cap) return rv_error(ctx, RV_ERR_ARG, "path too long");
    return RV_OK;
  }
  dl_bar bar = {e->name, rv_now(), 0, !rv_cli.quiet && isatty(2), 0};
  rv_download_opts o = {0};
  o.progress = dl_progress;
  o.user = &bar;
  o.retries = 3;
  char url[4096];
  RV_TRY(rv_zoo_url(url, sizeof url, e, NULL, ctx));
  if (!rv_cli.quiet) {
    /* Say where it comes from unless it is already cached. */
    char dir[4096], st_path[4200];
    const char *dot = strrchr(e->file, '.');
    if (rv_cache_dir(dir, sizeof dir, ctx) == RV_OK) {
      snprintf(st_path, sizeof st_path, "%s/%.*s.safetensors", dir, (int)(dot - e->file), e->file);
      if (!is_file(st_path)) fprintf(stderr, "ravlt: %s: fetching %s into %s\n", e->name, url, dir);
    }
  }
  rv_status st = rv_zoo_fetch(out, cap, e, NULL, NULL, &o, ctx);
  if (bar.drawn) fputc('\n', stderr);
  return st;
}

void rv_cli_log_model(const rv_model *m, rv_ctx *ctx) {
  rv_log(ctx, RV_LOG_DEBUG, "model: %s %s, %d classes (architecture from %s)", rv_model_arch(m),
         rv_model_task(m) == RV_TASK_SEGMENT ? "segmentor" : "detector", rv_model_num_classes(m),
         rv_model_source(m));
}

/* W names a built-in demo model (no file of that name shadows it) */
static int demo_weights(const char *weights) { return rv_cli_is_demo(weights) && !is_file(weights); }

int rv_cli_check_model_opt(const char *cmd, const char *weights, const char *model) {
  if (!model || (weights && !demo_weights(weights))) return 0;
  return rv_cli_usage_error(cmd, "--model %s: the built-in demo model has its own architecture; --model is for "
                                 "a --weights checkpoint without a config", model);
}

rv_status rv_cli_load_model(rv_model **m, const char *weights, const char *name, rv_ctx *ctx) {
  return rv_cli_load_model_ex(m, weights, name, NULL, ctx);
}

rv_status rv_cli_load_model_ex(rv_model **m, const char *weights, const char *name,
                               const rv_model_load_opts *opts, rv_ctx *ctx) {
  if (demo_weights(weights)) return rv_cli_load_demo(m, !strcmp(weights, RV_CLI_DEMO_DET), ctx);
  char path[4096];
  const char *zoo_model = NULL;
  RV_TRY(rv_cli_resolve_weights(path, sizeof path, weights, &zoo_model, ctx));
  const rv_zoo_entry *e = zoo_model ? rv_zoo_find(weights) : NULL;
  if (e && e->task == RV_ZOO_CLASSIFY)
    return rv_error(ctx, RV_ERR_ARG, "%s is an ImageNet classifier: use 'ravlt classify --weights %s'",
                    weights, weights);
  RV_TRY(rv_model_load_ex(m, path, name ? name : zoo_model, opts, ctx));
  rv_cli_log_model(*m, ctx);
  return RV_OK;
}

rv_status rv_cli_set_precision(rv_model *m, const char *precision, rv_ctx *ctx) {
  if (!precision || !strcmp(precision, "f32")) return RV_OK;
  rv_precision p;
  RV_TRY(rv_precision_parse(precision, &p, ctx));
  return rv_model_set_precision(m, p, ctx);
}

rv_status rv_cli_set_backbone_precision(rv_ravlt *b, const char *precision, rv_ctx *ctx) {
  if (!precision || !strcmp(precision, "f32")) return RV_OK;
  rv_precision p;
  RV_TRY(rv_precision_parse(precision, &p, ctx));
  return rv_ravlt_set_bf16(b, p == RV_PRECISION_BF16, ctx);
}

rv_status rv_cli_check_task(const rv_model *m, rv_task want, const char *weights, const char *use, rv_ctx *ctx) {
  if (rv_model_task(m) == want) return RV_OK;
  const int det = want == RV_TASK_DETECT;
  const char *hint = "";
  if (!strcmp(weights, det ? RV_CLI_DEMO : RV_CLI_DEMO_DET))
    hint = det ? " (the demo detector is --weights " RV_CLI_DEMO_DET ")" : " (the demo segmentation model is --weights " RV_CLI_DEMO ")";
  return rv_error(ctx, RV_ERR_MODEL, "%s: this checkpoint is a %s %s, not a %s: use 'ravlt %s'%s", weights, rv_model_arch(m),
                  det ? "segmentor" : "detector", det ? "detector" : "segmentor", use, hint);
}

int rv_cli_class_tables(const rv_model *m, const char ***names, unsigned char (**palette)[3]) {
  int n = rv_model_num_classes(m);
  *names = calloc((size_t)n, sizeof **names);
  *palette = calloc((size_t)n, sizeof **palette);
  if (!*names || !*palette) {
    free(*names);
    free(*palette);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    (*names)[i] = rv_model_class_name(m, i);
    rv_model_class_color(m, i, (*palette)[i]);
  }
  return 0;
}

void rv_cli_out_name(char *out, size_t n, const char *dir, const char *path, const char *suffix) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  int len = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
  snprintf(out, n, "%s/%.*s%s", dir, len, base, suffix);
}

rv_status rv_cli_load_demo(rv_model **m, int det, rv_ctx *ctx) {
  size_t len;
  const unsigned char *b = rv_cli_demo_bytes(det, &len);
  rv_weights *w = NULL;
  RV_TRY(rv_safetensors_parse(&w, b, len, det ? "<built-in demo detector>" : "<built-in demo model>", ctx));
  rv_status st = rv_model_from_weights(m, w, NULL, ctx);
  rv_weights_free(w);
  if (st == RV_OK) rv_cli_log_model(*m, ctx);
  return st;
}

void rv_cli_demo_notice(const char *cmd, const rv_model *m) {
  if (!rv_cli.quiet && rv_mpi_rank() == 0) /* under mpirun: once, not per rank */
    fprintf(stderr, "ravlt %s: no --weights: using the built-in demo %s (synthetic shapes, %d classes); see "
                    "'ravlt models' for real checkpoints\n", cmd,
            rv_model_task(m) == RV_TASK_DETECT ? "detector" : "model", rv_model_num_classes(m));
}
