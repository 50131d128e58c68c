/* libFuzzer target: the pickle-subset interpreter on arbitrary bytes; an accepted value
 * graph is walked (bounded depth: it may contain cycles). */
#include "formats/pickle.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t walk(const rv_pk_value *v, int depth) {
  if (!v || depth > 24) return 0;
  size_t n = 1 + v->len + v->len2;
  if (v->len && (unsigned char)v->s[v->len - 1] == 0xff) n++; /* touch the last byte */
  for (size_t i = 0; i < v->n; i++) {
    n += walk(v->items[i], depth + 1);
    if (v->type == RV_PK_DICT) n += walk(v->keys[i], depth + 1);
  }
  n += walk(v->a, depth + 1) + walk(v->b, depth + 1) + walk(v->c, depth + 1);
  n += walk(v->d, depth + 1) + walk(v->e, depth + 1);
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rv_ctx *ctx = rv_ctx_create();
  rv_pickle *pk = NULL;
  const rv_pk_value *root = NULL;
  if (rv_pickle_load(&pk, &root, data, size, "fuzz.pkl", ctx) == RV_OK) {
    if (!root) abort();
    volatile size_t n = walk(root, 0);
    (void)n;
    (void)rv_pk_dict_get(root, "state_dict");
    rv_pickle_free(pk);
  } else if (pk || root || rv_ctx_errmsg(ctx)[0] == 0) {
    abort();
  }
  rv_ctx_free(ctx);
  return 0;
}
