/* The image-run driver (apps/image_run.h): loading the model, the loop, a path-list command. */
#define _POSIX_C_SOURCE 200809L
#include "apps/image_run.h"

#include "apps/model_args.h"
#include "apps/mpi_run.h"
#include "apps/outputs.h"
#include "core/fs.h"
#include "nn/param.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rv_model_opts_check(const char *cmd, rv_run_kind kind, const rv_model_opts *mo) {
  if (kind == RV_RUN_CLASSIFY) return mo->weights ? 0 : rv_cli_usage_error(cmd, "--weights W is required");
  return rv_cli_check_model_opt(cmd, mo->weights, mo->model);
}

/* A RAVLT classifier checkpoint: every key it does not use a warning (an error with --strict). */
static rv_status load_classifier(rv_run_model *rm, const rv_model_opts *mo, rv_ctx *ctx) {
  rv_ravlt_config cfg;
  rv_weights *w = NULL;
  RV_TRY(rv_model_config(mo->weights, &cfg, &w, ctx));
  rv_status st = RV_OK;
  if (!w) st = rv_error(ctx, RV_ERR_ARG, "--weights '%s' is not a file", mo->weights);
  else if (!cfg.classifier)
    st = rv_error(ctx, RV_ERR_MODEL, "%s: no classifier head (proj/norm/head keys): a backbone checkpoint cannot classify",
                  mo->weights);
  rv_params P;
  if (st == RV_OK && (st = rv_params_init(&P, w, ctx)) == RV_OK) {
    st = rv_ravlt_create_params(&rm->classifier, &cfg, &P, NULL, ctx);
    if (st == RV_OK) st = rv_params_check_unused(&P, NULL, mo->strict, "classifier", ctx);
    rv_params_free(&P);
  }
  rv_weights_free(w);
  if (st == RV_OK) st = rv_cli_set_backbone_precision(rm->classifier, mo->precision, ctx);
  rm->num_classes = cfg.num_classes;
  return st;
}

rv_status rv_run_model_load(rv_run_model *rm, const char *cmd, rv_run_kind kind, const char *use,
                            const rv_model_opts *mo, rv_ctx *ctx) {
  memset(rm, 0, sizeof *rm);
  rm->kind = kind;
  rm->weights = mo->weights;
  if (kind == RV_RUN_CLASSIFY) return load_classifier(rm, mo, ctx);
  const int det = kind == RV_RUN_DETECT;
  rm->demo = !mo->weights;
  if (rm->demo) rm->weights = det ? RV_CLI_DEMO_DET : RV_CLI_DEMO;
  RV_TRY(rm->demo ? rv_cli_load_demo(&rm->m, det, ctx)
                  : rv_cli_load_model_ex(&rm->m, mo->weights, mo->model, &(rv_model_load_opts){mo->strict}, ctx));
  RV_TRY(rv_cli_set_precision(rm->m, mo->precision, ctx));
  if (rm->demo) rv_cli_demo_notice(cmd, rm->m);
  RV_TRY(rv_cli_check_task(rm->m, det ? RV_TASK_DETECT : RV_TASK_SEGMENT, rm->weights, use, ctx));
  rm->num_classes = rv_model_num_classes(rm->m);
  if (rv_cli_class_tables(rm->m, &rm->names, &rm->palette)) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  return RV_OK;
}

void rv_run_model_free(rv_run_model *rm) {
  free(rm->names);
  free(rm->palette);
  rv_model_free(rm->m);
  rv_ravlt_free(rm->classifier);
  memset(rm, 0, sizeof *rm);
}

rv_status rv_image_loop(rv_image_run *r, rv_ctx *ctx) {
  if (!r->arena && !(r->arena = rv_arena_create(0))) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (r->list_failed && !r->failed_paths && !(r->failed_paths = calloc(r->n + 1, sizeof *r->failed_paths)))
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_progress prog;
  rv_progress_start(&prog, r->cmd, (long)rv_shard_size(&r->shard, r->n));
  rv_status st = RV_OK;
  for (size_t k = 0; k < r->n && st == RV_OK && !rv_cli_stop_signal(); k++) {
    if (!rv_shard_has(&r->shard, k)) continue;
    if (r->skip && r->skip(r->user, k)) {
      rv_progress_step(&prog, 1);
      continue;
    }
    char path[4096];
    rv_image img = {0};
    double t0 = rv_now();
    st = r->path(r->user, r, k, path, sizeof path, ctx);
    if (st == RV_OK) st = rv_image_read(path, &img, ctx);
    if (st == RV_OK) st = r->image(r->user, r, k, path, &img, ctx);
    r->t_model += rv_now() - t0;
    if (st == RV_OK) rv_log(ctx, RV_LOG_DEBUG, "%s: %dx%d in %.3f s", path, img.w, img.h, rv_now() - t0);
    rv_image_free(&img);
    rv_arena_reset(r->arena);
    rv_progress_step(&prog, 1);
    if (st == RV_OK) {
      r->done++;
      continue;
    }
    if (st == RV_ERR_NOMEM) break;
    if (r->name) { /* "NAME: ERROR", the message the run ends with when it stops here */
      char name[4200], msg[1024];
      r->name(r->user, r, k, path, name, sizeof name);
      snprintf(msg, sizeof msg, "%s", rv_ctx_errmsg(ctx));
      st = rv_error(ctx, st, "%s: %s", name, msg);
    }
    if (!r->keep_going) break;
    fprintf(stderr, "%sravlt %s: %s\n", rv_progress_break(&prog), r->cmd, rv_ctx_errmsg(ctx));
    if (r->failed_paths && !(r->failed_paths[r->failed] = strdup(path))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    else st = RV_OK;
    r->failed++;
  }
  rv_progress_end(&prog);
  r->signal = rv_cli_stop_signal();
  return st;
}

void rv_image_run_report(const rv_image_run *r, const char *summary, const char *failed_note) {
  if (r->signal)
    fprintf(stderr, "ravlt %s: stopped by signal %d after %zu image(s); the outputs hold the images done\n", r->cmd,
            r->signal, r->done + r->failed);
  if (summary && (!rv_cli.quiet || r->failed)) fprintf(stderr, "ravlt %s: %s\n", r->cmd, summary);
  if (!r->failed) return;
  fprintf(stderr, "ravlt %s: %zu image(s) failed%s%s", r->cmd, r->failed, failed_note ? " " : "", failed_note ? failed_note : "");
  if (!r->failed_paths) {
    fputs(" (named above)\n", stderr);
    return;
  }
  fputc(':', stderr);
  for (size_t k = 0; k < r->failed; k++) fprintf(stderr, " %s", r->failed_paths[k]);
  fputc('\n', stderr);
}

void rv_image_run_free(rv_image_run *r) {
  for (size_t k = 0; r->failed_paths && k < r->failed; k++) free(r->failed_paths[k]);
  free(r->failed_paths);
  r->failed_paths = NULL;
  rv_arena_free(r->arena);
  r->arena = NULL;
  rv_input_list_free(&r->list);
  rv_run_model_free(&r->model);
}

static rv_status list_path(void *user, rv_image_run *r, size_t k, char *buf, size_t cap, rv_ctx *ctx) {
  (void)user;
  if (snprintf(buf, cap, "%s", r->list.paths[k]) >= (int)cap) return rv_error(ctx, RV_ERR_ARG, "%s: path too long", r->list.paths[k]);
  return RV_OK;
}

static void list_name(void *user, rv_image_run *r, size_t k, const char *path, char *buf, size_t cap) {
  (void)user, (void)r, (void)k;
  snprintf(buf, cap, "%s", path);
}

/* Every output checked before the model loads: the folder, no output over an input, no two
 * inputs writing the same file. */
static rv_status check_outputs(const rv_image_cmd *c, rv_ctx *ctx) {
  const rv_input_list *list = &c->run.list;
  int ns = 0;
  while (c->suffixes && c->suffixes[ns]) ns++;
  if (c->out_dir && ns) RV_TRY(rv_out_check_dir(c->out_dir, ctx));
  size_t cap = (size_t)list->n * (size_t)(c->out_dir ? ns : 0) + (size_t)c->n_outs + 1;
  char **outs = calloc(cap, sizeof *outs);
  const char **from = calloc(cap, sizeof *from), **ins = calloc((size_t)list->n + 2, sizeof *ins);
  rv_status st = outs && from && ins ? RV_OK : rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  int n = 0;
  for (int i = 0; st == RV_OK && c->out_dir && i < list->n; i++) {
    if (!rv_shard_has(&c->run.shard, (size_t)i)) continue;
    for (int s = 0; s < ns && st == RV_OK; s++) {
      char out[4096];
      rv_cli_out_name(out, sizeof out, c->out_dir, list->paths[i], c->suffixes[s]);
      from[n] = list->paths[i];
      if (!(outs[n++] = strdup(out))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    }
  }
  for (int k = 0; st == RV_OK && k < c->n_outs; k++) {
    if (!c->outs[k]) continue;
    from[n] = "--json";
    if (!(outs[n++] = strdup(c->outs[k]))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  int nin = 0;
  for (int i = 0; ins && i < list->n; i++) ins[nin++] = list->paths[i];
  if (ins && c->extra_in) ins[nin++] = c->extra_in;
  if (st == RV_OK) st = rv_cli_outputs_check((const char *const *)outs, from, n, ins, nin, ctx);
  for (int k = 0; outs && k < n; k++) free(outs[k]);
  free(outs);
  free(from);
  free(ins);
  return st;
}

int rv_image_cmd_run(rv_image_cmd *c) {
  rv_image_run *r = &c->run;
  if (!c->nargs) return rv_cli_usage_error(r->cmd, "no input images");
  if (rv_model_opts_check(r->cmd, c->kind, c->mo)) return 2;
  r->shard = (rv_shard){0, 1};
  if (c->shard && rv_shard_parse(&r->shard, c->shard))
    return rv_cli_usage_error(r->cmd, "--shard must be i/N with 0 <= i < N, not '%s'", c->shard);
  r->keep_going = 1;
  r->list_failed = 1;
  r->path = list_path;
  r->name = list_name;
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  int rc = 0;
  rv_status st = rv_inputs_collect(&r->list, c->args, c->nargs, 0, ctx);
  r->n = (size_t)r->list.n;
  if (st == RV_OK) st = check_outputs(c, ctx);
  if (st == RV_OK) st = rv_run_model_load(&r->model, r->cmd, c->kind, c->use, c->mo, ctx);
  if (st == RV_OK && c->prepare) st = c->prepare(r->user, r, ctx);
  if (st != RV_OK) {
    rc = rv_cli_fail(ctx, r->cmd, st);
    goto out;
  }
  rv_cli_signals_install(1);
  st = rv_image_loop(r, ctx);
  if (st == RV_OK && c->finish) st = c->finish(r->user, r, ctx);
  rv_cli_signals_restore();
  if (st != RV_OK) {
    rc = rv_cli_fail(ctx, r->cmd, st);
    goto out;
  }
  char line[8192] = "";
  if (c->summary) c->summary(r->user, r, line, sizeof line);
  rv_image_run_report(r, c->summary ? line : NULL, c->failed_note);
  rc = rv_cli_signal_exit_code(r->failed ? 1 : 0);
out:
  rv_image_run_free(r);
  rv_ctx_free(ctx);
  return rc;
}
