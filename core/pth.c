/* PLACEHOLDER until the .pth reader lands (being written now). */
#include "core/pth.h"
rv_status rv_pth_load(rv_weights **out, const char *path, rv_ctx *ctx) {
  *out = NULL;
  return rv_error(ctx, RV_ERR_UNSUPPORTED, "%s: .pth reading is not built yet", path);
}
