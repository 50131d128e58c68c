/* RAVLT model names and sizes on the command line. */
#include "apps/model_args.h"

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
