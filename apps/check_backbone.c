#define _POSIX_C_SOURCE 200809L
/* check-fixture kind "backbone": build the RAVLT backbone from config.json and the
 * fixture weights, run io "input", compare out.0..3 and every intermediate trace present
 * in io.safetensors (patch_embed, s{i}b{j}.*, s{i}.prenorm, s{i}.down). Rule: max|err| <=
 * 1e-4 * max(1, max|ref|) per tensor. */
#include "apps/check_fixture.h"
#include "apps/cli.h"
#include "backbone/ravlt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BACKBONE_TOL 1e-4

typedef struct {
  rv_check_state *s;
  int n;              /* batch */
  char **seen;        /* trace names compared */
  int nseen;
} trace_ctx;

static void on_trace(void *user, const char *name, int image, rv_tensor t) {
  trace_ctx *tc = user;
  const rv_wtensor *ref = rv_weights_find(tc->s->io, name);
  if (!ref) return;
  size_t per = rv_tensor_numel(t), numel = 0;
  float *all = rv_check_load_f32(tc->s, name, &numel);
  char label[96];
  if (tc->n > 1) snprintf(label, sizeof label, "%s[%d]", name, image);
  else snprintf(label, sizeof label, "%s", name);
  if (!all || numel != per * (size_t)tc->n) {
    rv_check_report(tc->s, label, 0, "reference has %zu values, expected %zu", numel,
                    per * (size_t)tc->n);
  } else {
    rv_check_values(tc->s, label, t.data, all + per * (size_t)image, per, BACKBONE_TOL);
  }
  free(all);
  if (image == 0) {
    char **p = realloc(tc->seen, sizeof *p * (size_t)(tc->nseen + 1));
    if (p) {
      tc->seen = p;
      tc->seen[tc->nseen] = strdup(name);
      if (tc->seen[tc->nseen]) tc->nseen++;
    }
  }
}

int rv_check_backbone(rv_check_state *s) {
  rv_ctx *ctx = s->ctx;
  rv_ravlt_config cfg;
  char *text = cJSON_PrintUnformatted(s->config);
  if (!text) return rv_error(ctx, RV_ERR_NOMEM, "out of memory"), 1;
  rv_status st = rv_ravlt_config_from_json(&cfg, text, ctx);
  free(text);
  if (st != RV_OK) return 1;
  const cJSON *pj = cJSON_GetObjectItemCaseSensitive(s->config, "weights_key_prefix");
  const char *prefix = cJSON_IsString(pj) ? pj->valuestring : NULL;
  if (prefix && !rv_weights_find(s->weights, "backbone.patch_embed.proj.0.weight") &&
      strcmp(prefix, "backbone.") == 0)
    prefix = NULL; /* a bare-key file: detect */
  rv_ravlt *m = NULL;
  if (rv_ravlt_create(&m, &cfg, s->weights, prefix, ctx) != RV_OK) return 1;
  const rv_wtensor *in = rv_weights_find(s->io, "input");
  if (!in || in->ndim != 4) {
    rv_ravlt_free(m);
    rv_error(ctx, RV_ERR_FORMAT, "%s/io.safetensors: no 4-d 'input' tensor", s->dir);
    return 1;
  }
  size_t numel = 0;
  float *x = rv_check_load_f32(s, "input", &numel);
  rv_arena *arena = rv_arena_create(0);
  if (!x || !arena) {
    free(x);
    rv_arena_free(arena);
    rv_ravlt_free(m);
    rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    return 1;
  }
  rv_tensor input = {x, (int)in->shape[0], (int)in->shape[1], (int)in->shape[2], (int)in->shape[3]};
  trace_ctx tc = {s, input.n, NULL, 0};
  rv_tensor out[RV_RAVLT_STAGES];
  double t0 = rv_now();
  st = rv_ravlt_forward_traced(m, arena, input, out, on_trace, &tc, ctx);
  double dt = rv_now() - t0;
  int rc = 0;
  if (st != RV_OK) {
    rc = 1;
  } else {
    for (int k = 0; k < cfg.num_outs; k++) {
      int i = cfg.out_indices[k];
      char name[16];
      snprintf(name, sizeof name, "out.%d", i);
      rv_check_tensor(s, name, out[i].data, rv_tensor_numel(out[i]), name, BACKBONE_TOL);
    }
    /* every other io tensor must have been produced as a trace */
    for (int i = 0; i < rv_weights_count(s->io); i++) {
      const char *nm = rv_weights_get(s->io, i)->name;
      if (strcmp(nm, "input") == 0 || strncmp(nm, "out.", 4) == 0) continue;
      int found = 0;
      for (int j = 0; j < tc.nseen && !found; j++) found = strcmp(tc.seen[j], nm) == 0;
      if (!found) rv_check_report(s, nm, 0, "expected intermediate was not produced");
    }
    printf("  forward %dx%dx%dx%d: %.1f ms (with checks)\n", input.n, input.c, input.h, input.w,
           dt * 1e3);
  }
  for (int j = 0; j < tc.nseen; j++) free(tc.seen[j]);
  free(tc.seen);
  free(x);
  rv_arena_free(arena);
  rv_ravlt_free(m);
  return rc;
}
