/* `ravlt check-fixture [--pth] [--verbose] DIR`: run a golden fixture folder
 * (config.json + weights + io.safetensors) and compare every expected output. The
 * checker is chosen by config.json "kind" (apps/check_fixture.h). */
#define _POSIX_C_SOURCE 200809L
#include "apps/check_fixture.h"
#include "apps/cli.h"
#include "kernels/ops.h"
#include "apps/commands.h"
#include "models/family.h"

#include <stddef.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
  int pth;
} check_fixture_opts;

static const rv_opt OPTS[] = {
    {"--pth", NULL, RV_OPT_FLAG, offsetof(check_fixture_opts, pth), 0, 0, NULL, NULL,
     "load DIR/checkpoint.pth (mmcv checkpoint) instead of weights.safetensors", 0},
    RV_OPT_END};

const rv_cmd_spec rv_spec_check_fixture = {
    "check-fixture", "[--pth] [--verbose] DIR",
    "Runs the model described by DIR/config.json (\"kind\": backbone, upernet, semantic_fpn,\n"
    "cascade_mask_rcnn, mask_rcnn, retinanet, e2e_*) on the inputs in DIR/io.safetensors\n"
    "with the weights in DIR/weights.safetensors (or DIR/checkpoint.pth with --pth, or when\n"
    "there is no weights.safetensors) and compares every expected output present.\n"
    "Float tensors pass when max|got - ref| <= 1e-4 * max(1, max|ref|) unless the kind\n"
    "states another rule. Prints one line per comparison and a summary; exits 1 on any FAIL.\n"
    "With --verbose (a common option): where the worst error of a failing tensor is.\n",
    OPTS, 1, NULL,
    "  ravlt check-fixture tests/fixtures/e2e/cascade_mask_rcnn\n"
    "  ravlt check-fixture --pth --verbose tests/fixtures/backbone/tiny\n",
    sizeof(check_fixture_opts)};

static char *read_text(const char *path, rv_ctx *ctx, rv_status *st) {
  FILE *f = fopen(path, "rb");
  if (!f) { *st = rv_error(ctx, RV_ERR_IO, "%s: cannot open", path); return NULL; }
  if (fseek(f, 0, SEEK_END) != 0) { fclose(f); *st = rv_error(ctx, RV_ERR_IO, "%s: cannot seek", path); return NULL; }
  long n = ftell(f);
  if (n < 0 || n > (64L << 20)) { fclose(f); *st = rv_error(ctx, RV_ERR_FORMAT, "%s: bad size", path); return NULL; }
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  if (!buf) { fclose(f); *st = rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", path); return NULL; }
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(buf);
    *st = rv_error(ctx, RV_ERR_IO, "%s: short read", path);
    return NULL;
  }
  fclose(f);
  buf[n] = 0;
  return buf;
}

static int exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

typedef int (*checker_fn)(rv_check_state *s);

static checker_fn pick(const char *kind, const char **family) {
  if (strcmp(kind, "backbone") == 0) { *family = "backbone"; return rv_check_backbone; }
  const rv_family *f = rv_family_by_arch(kind); /* a head fixture's kind: its family's arch */
  if (f && f->task == RV_TASK_SEGMENT) {
    *family = "segmentor head";
    return rv_check_segmentor_head;
  }
  if (f && f->task == RV_TASK_DETECT) {
    *family = "detector head";
    return rv_check_detector_head;
  }
  if (strncmp(kind, "e2e_", 4) == 0) { *family = "end-to-end"; return rv_check_e2e; }
  *family = NULL;
  return NULL;
}

int rv_cmd_check_fixture(int argc, char **argv) {
  const char *cmd = "check-fixture";
  check_fixture_opts co = {0};
  int npos;
  int prc = rv_cli_parse(&rv_spec_check_fixture, &co, argc, argv, &npos);
  if (prc >= 0) return prc;
  int use_pth = co.pth, verbose = rv_cli.verbose;
  const char *dir = npos ? argv[0] : NULL;
  if (!dir) return rv_cli_usage_error(cmd, "missing fixture folder");
  rv_blas_init(); /* OpenBLAS kernels for this CPU (kernels/ops.h) */
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) { fprintf(stderr, "ravlt %s: out of memory\n", cmd); return 1; }
  rv_check_state s;
  memset(&s, 0, sizeof s);
  s.dir = dir;
  s.ctx = ctx;
  s.verbose = verbose;
  int rc = 1;
  rv_status st = RV_OK;
  char path[4096];
  snprintf(path, sizeof path, "%s/config.json", dir);
  char *text = read_text(path, ctx, &st);
  if (!text) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
  s.config = cJSON_Parse(text);
  free(text);
  const cJSON *kind = s.config ? cJSON_GetObjectItemCaseSensitive(s.config, "kind") : NULL;
  if (!s.config || !cJSON_IsObject(s.config) || !cJSON_IsString(kind)) {
    fprintf(stderr, "ravlt %s: %s: not a JSON object with a \"kind\" string\n", cmd, path);
    goto done;
  }
  const char *family;
  checker_fn fn = pick(kind->valuestring, &family);
  if (!fn) {
    fprintf(stderr, "ravlt %s: %s: fixture kind '%s' is not supported by this build%s\n", cmd,
            dir, kind->valuestring, family ? "" : " (unknown kind)");
    goto done;
  }
  char wpath[4096], spath[4096];
  snprintf(spath, sizeof spath, "%s/weights.safetensors", dir);
  snprintf(wpath, sizeof wpath, "%s/checkpoint.pth", dir);
  const char *weights_path = use_pth || !exists(spath) ? wpath : spath;
  if (!exists(weights_path)) {
    fprintf(stderr, "ravlt %s: %s: no %s\n", cmd, dir,
            use_pth ? "checkpoint.pth" : "weights.safetensors or checkpoint.pth");
    goto done;
  }
  if ((st = rv_weights_open(&s.weights, weights_path, ctx)) != RV_OK) {
    rc = rv_cli_fail(ctx, cmd, st);
    goto done;
  }
  snprintf(path, sizeof path, "%s/io.safetensors", dir);
  if ((st = rv_safetensors_open(&s.io, path, ctx)) != RV_OK) {
    rc = rv_cli_fail(ctx, cmd, st);
    goto done;
  }
  printf("%s: %s fixture, weights %s\n", dir, kind->valuestring, weights_path);
  fflush(stdout);
  int r = fn(&s);
  if (r != 0) {
    const char *m = rv_ctx_errmsg(ctx);
    fprintf(stderr, "ravlt %s: %s\n", cmd, m && *m ? m : "checker failed");
    printf("%d checks, %d failed (checker error)\n", s.checked, s.failures + 1);
    goto done;
  }
  printf("%d checks, %d failed\n", s.checked, s.failures);
  if (s.checked == 0) fprintf(stderr, "ravlt %s: no comparison was made\n", cmd);
  rc = (s.failures == 0 && s.checked > 0) ? 0 : 1;
done:
  rv_weights_free(s.io);
  rv_weights_free(s.weights);
  cJSON_Delete(s.config);
  rv_ctx_free(ctx);
  return rc;
}
