/* A bounded interpreter for the subset of Python pickle (protocols 2-5) that torch.save
 * emits. It builds a graph of plain values; it never imports or calls anything: every
 * GLOBAL is a name, and calling it (REDUCE / NEWOBJ) makes an opaque object that records
 * the callable and its arguments, and accepts BUILD, SETITEM(S) and APPEND(S).
 *
 *   rv_pickle *pk;
 *   const rv_pk_value *root;
 *   if (rv_pickle_load(&pk, &root, buf, len, "ckpt.pth:data.pkl", ctx) != RV_OK) ...;
 *   const rv_pk_value *sd = rv_pk_dict_get(root, "state_dict");
 *   for (size_t i = 0; sd && sd->type == RV_PK_DICT && i < sd->n; i++)
 *     ... sd->keys[i], sd->items[i] ...
 *   rv_pickle_free(pk);   // frees every value; `buf` must outlive pk (strings point into it)
 *
 * Two things are interpreted because torch checkpoints need them: `collections.OrderedDict`
 * called with no arguments gives an ordinary dict, and `_codecs.encode(str, 'latin1')`
 * gives bytes (numpy scalars in mmcv meta). Limits: the stack, the mark stack and the memo
 * are bounded by the input length (every entry costs at least one byte of input), memo
 * indices must be below max(len, 1024), strings must be valid UTF-8 like Python requires.
 * Every malformed input gives RV_ERR_FORMAT with "NAME: pickle: ... at offset N".
 */
#ifndef RV_CORE_PICKLE_H
#define RV_CORE_PICKLE_H

#include "core/rv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  RV_PK_NONE = 0,
  RV_PK_BOOL,    /* i: 0 or 1 */
  RV_PK_INT,     /* i */
  RV_PK_BIGINT,  /* an integer wider than 64 bits: s/len hold its little-endian bytes */
  RV_PK_FLOAT,   /* f */
  RV_PK_STR,     /* s/len: UTF-8 (not NUL-terminated, may contain NUL) */
  RV_PK_BYTES,   /* s/len */
  RV_PK_TUPLE,   /* items[0..n) */
  RV_PK_LIST,    /* items[0..n) */
  RV_PK_SET,     /* items[0..n) (set and frozenset) */
  RV_PK_DICT,    /* keys[0..n) -> items[0..n), insertion order, later SETITEM replaces */
  RV_PK_GLOBAL,  /* module s/len, name s2/len2 */
  RV_PK_OBJECT,  /* callable a, args b (may be NULL), state c (BUILD), dict d / list e for
                    SETITEM(S) / APPEND(S) on it (NULL until used) */
  RV_PK_PERSID,  /* persistent id: a */
  RV_PK_TYPE_COUNT
} rv_pk_type;

typedef struct rv_pk_value rv_pk_value;
struct rv_pk_value {
  rv_pk_type type;
  int64_t i;
  double f;
  const char *s, *s2;
  size_t len, len2;
  rv_pk_value *a, *b, *c, *d, *e;
  rv_pk_value **items, **keys;
  size_t n, cap;
  /* private: hash index of a dict's str/int keys, and whether s is heap-owned */
  uint32_t *hidx;
  size_t hcap;
  int owns_s;
};

typedef struct rv_pickle rv_pickle;

/* Run the pickle in buf[0..len). On success *root is the value STOP returned; all values
 * belong to *out. `name` prefixes error messages. */
rv_status rv_pickle_load(rv_pickle **out, const rv_pk_value **root, const void *buf, size_t len,
                         const char *name, rv_ctx *ctx);
void rv_pickle_free(rv_pickle *p);

const char *rv_pk_type_name(rv_pk_type t);
/* dict lookup by string key (also works on an opaque object's SETITEM dict); NULL if absent
 * or v is not a dict. */
const rv_pk_value *rv_pk_dict_get(const rv_pk_value *v, const char *key);
/* 1 if v is RV_PK_STR equal to s. */
int rv_pk_str_eq(const rv_pk_value *v, const char *s);
/* 1 if v is the global module.name. */
int rv_pk_is_global(const rv_pk_value *v, const char *module, const char *name);
/* The callable of an opaque object if it is a global (else NULL). */
const rv_pk_value *rv_pk_object_global(const rv_pk_value *v);

#ifdef __cplusplus
}
#endif
#endif
