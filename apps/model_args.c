/* RAVLT model names and sizes on the command line; the OpenBLAS kernel check. */
#define _POSIX_C_SOURCE 200809L
#include "apps/model_args.h"

#include <cblas.h>
#include <strings.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int rv_parse_size(const char *s, int *h, int *w) {
  char *end;
  long a = strtol(s, &end, 10), b;
  if (end == s || a < 1 || a > 65536) return -1;
  if (*end == 0) { b = a; }
  else {
    if (*end != 'x' && *end != 'X') return -1;
    const char *p = end + 1;
    b = strtol(p, &end, 10);
    if (end == p || *end || b < 1 || b > 65536) return -1;
  }
  *h = (int)a;
  *w = (int)b;
  return 0;
}

rv_status rv_model_config(const char *model, rv_ravlt_config *cfg, rv_weights **weights,
                          rv_ctx *ctx) {
  if (weights) *weights = NULL;
  struct stat sb;
  if (stat(model, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    if (rv_ravlt_preset(cfg, model, ctx) == RV_OK) return RV_OK;
    return rv_error(ctx, RV_ERR_ARG,
                    "'%s' is neither a preset (ravlt-t/s/b/l, ravlt-t/s/b/l-backbone) nor a "
                    "checkpoint file", model);
  }
  rv_weights *w = NULL;
  RV_TRY(rv_weights_open(&w, model, ctx));
  rv_status st = rv_ravlt_config_from_weights(cfg, w, NULL, ctx);
  if (st != RV_OK || !weights) rv_weights_free(w);
  else *weights = w;
  return st;
}

void rv_cli_fix_blas_core(void) {
  if (getenv("OPENBLAS_CORETYPE")) return;
  const char *core = openblas_get_corename();
  if (!core || strcasecmp(core, "prescott") != 0) return;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  const char *want = NULL;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    want = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    want = "Haswell";
  if (!want) return;
  static char buf[65536]; /* the command line, NUL-separated */
  static char *args[1024];
  FILE *f = fopen("/proc/self/cmdline", "rb");
  if (!f) return;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  if (n == 0 || n >= sizeof buf - 1) return;
  buf[n] = 0;
  int na = 0;
  for (size_t i = 0; i < n && na < 1023; i += strlen(buf + i) + 1) args[na++] = buf + i;
  args[na] = NULL;
  if (setenv("OPENBLAS_CORETYPE", want, 1) != 0) return;
  execv("/proc/self/exe", args);
  unsetenv("OPENBLAS_CORETYPE"); /* exec failed: carry on with the slow kernels */
#endif
}
