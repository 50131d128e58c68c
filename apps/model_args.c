/* RAVLT model names and sizes on the command line. */
#include "apps/model_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

rv_status rv_model_config(const char *model, rv_ravlt_config *cfg, rv_weights **weights,
                          rv_ctx *ctx) {
  if (weights) *weights = NULL;
  struct stat sb;
  if (stat(model, &sb) != 0 || S_ISDIR(sb.st_mode)) { /* a pipe (<(cat x.pth)) is read as a file */
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
