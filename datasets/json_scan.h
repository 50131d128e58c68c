/* A small strict JSON scanner for the COCO readers (internal to datasets/): no tree, values
 * are read straight into the caller's structures, large lists are split into element spans
 * that can be parsed in parallel. Functions return 1 on success and 0 on failure, with the
 * first problem described in cur->err.
 *
 *   rv_jcur c = {text, text + len, ""};
 *   if (!rv_jexpect(&c, '{')) ...c.err...;
 */
#ifndef RV_DATASETS_JSON_SCAN_H
#define RV_DATASETS_JSON_SCAN_H

#include "core/rv.h"
#include <stddef.h>
#include <string.h>

typedef struct {
  const char *p, *end;
  char err[200];
} rv_jcur;

int rv_jfail(rv_jcur *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rv_jws(rv_jcur *c);
/* Skip whitespace; 1 if the next character is ch (not consumed). */
int rv_jpeek(rv_jcur *c, char ch);
int rv_jexpect(rv_jcur *c, char ch);
/* Strict JSON number grammar; the value through strtod (correctly rounded). */
int rv_jnumber(rv_jcur *c, double *v);
/* A string, unescaped into out (NUL-terminated, cap bytes); out NULL = skip. */
int rv_jstring(rv_jcur *c, char *out, size_t cap, size_t *len);
/* Any value (validated). */
int rv_jskip(rv_jcur *c);
/* "key": (a key longer than cap comes back empty) */
int rv_jkey(rv_jcur *c, char *k, size_t cap, size_t *kl);
static inline int rv_jkey_is(const char *k, size_t kl, const char *want) { /* inline: strlen of a literal folds */
  return kl == strlen(want) && memcmp(k, want, kl) == 0;
}
/* After an element of an object or list: 1 if ',' follows (consumed), 0 if `close` (consumed),
 * -1 on anything else (error set). */
int rv_jnext(rv_jcur *c, char close);
/* c->p at a '[': the element spans. (*starts)[i] .. (*starts)[i+1]-1 is element i (without its
 * separator); *n elements; c->p ends after the ']'. Strings and nesting are tracked, the
 * elements themselves are not validated here. *starts is malloc'd (n+1 entries). */
int rv_jsplit_list(rv_jcur *c, const char ***starts, size_t *n);
/* "NAME: malformed JSON near line L column C (what)" */
rv_status rv_jsyntax_error(rv_ctx *ctx, const char *name, const char *json, const char *at, const char *what);

#endif
