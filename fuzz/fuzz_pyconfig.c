/* libFuzzer target: the mmcv config parser on arbitrary text; an accepted tree is printed. */
#include "formats/pyconfig.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rv_ctx *ctx = rv_ctx_create();
  cJSON *o = NULL;
  if (rv_pyconfig_parse_len(&o, (const char *)data, size, "fuzz.py", ctx) == RV_OK) {
    if (!cJSON_IsObject(o)) abort();
    char *s = cJSON_PrintUnformatted(o);
    free(s);
    cJSON_Delete(o);
  } else if (o || rv_ctx_errmsg(ctx)[0] == 0) {
    abort();
  }
  rv_ctx_free(ctx);
  return 0;
}
