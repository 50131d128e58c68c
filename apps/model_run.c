/* Model loading and output naming shared by the model-running subcommands. */
#define _POSIX_C_SOURCE 200809L
#include "apps/model_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

rv_status rv_cli_load_model(rv_model **m, const char *weights, const char *name, rv_ctx *ctx) {
  RV_TRY(rv_model_load(m, weights, name, ctx));
  rv_log(ctx, RV_LOG_DEBUG, "model: %s %s, %d classes (architecture from %s)", rv_model_arch(*m),
         rv_model_task(*m) == RV_TASK_SEGMENT ? "segmentor" : "detector", rv_model_num_classes(*m),
         rv_model_source(*m));
  return RV_OK;
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

rv_status rv_cli_mkdirs(const char *dir, rv_ctx *ctx) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", dir);
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == 0) {
      char c = *p;
      *p = 0;
      if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return rv_error(ctx, RV_ERR_IO, "%s: cannot create folder: %s", buf, strerror(errno));
      *p = c;
      if (!c) break;
    }
  }
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return rv_error(ctx, RV_ERR_IO, "%s: not a folder", dir);
  return RV_OK;
}
