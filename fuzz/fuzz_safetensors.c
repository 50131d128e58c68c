/* libFuzzer target: rv_safetensors_parse on arbitrary bytes; every accepted tensor is read
 * end to end (so an offset or size that escaped validation shows up under ASan). */
#include "formats/weights.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w = NULL;
  if (rv_safetensors_parse(&w, data, size, "fuzz.safetensors", ctx) == RV_OK) {
    volatile unsigned sum = 0;
    for (int i = 0; i < rv_weights_count(w); i++) {
      const rv_wtensor *t = rv_weights_get(w, i);
      const unsigned char *p = t->data;
      for (size_t k = 0; k < t->nbytes; k++) sum += p[k];
      size_t n = rv_wtensor_numel(t);
      if (n <= 4096) {
        float *f = malloc(n * sizeof *f + 1);
        if (f) { rv_wtensor_to_f32(t, f); free(f); }
      }
      if (rv_weights_find(w, t->name) == NULL) abort(); /* names must resolve */
    }
    (void)sum;
    for (int i = 0; i < rv_weights_meta_count(w); i++)
      if (!rv_weights_meta(w, rv_weights_meta_key(w, i))) abort();
    rv_weights_free(w);
  } else if (w != NULL || rv_ctx_errmsg(ctx)[0] == 0) {
    abort(); /* a failure must leave no object and give a message */
  }
  rv_ctx_free(ctx);
  return 0;
}
