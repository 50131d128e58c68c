/* Bounded pickle-subset interpreter (see pickle.h). One pass over the opcodes with an
 * explicit value stack, mark stack and memo; no recursion, nothing is ever executed. */
#include "formats/pickle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rv_pickle {
  rv_pk_value **all; /* every value made, freed together */
  size_t nall, capall;
};

typedef struct {
  rv_pickle *pk;
  const unsigned char *buf;
  size_t len, pos, op_pos;
  const char *name;
  rv_ctx *ctx;
  rv_pk_value **stack;
  size_t sp, scap;
  size_t *marks;
  size_t nmarks, mcap;
  rv_pk_value **memo;
  size_t memo_cap, memo_limit, memo_next;
} unpickler;

static const char *const TYPE_NAMES[RV_PK_TYPE_COUNT] = {
    "None", "bool", "int", "bigint", "float", "str", "bytes", "tuple",
    "list", "set",  "dict", "global", "object", "persistent id"};

const char *rv_pk_type_name(rv_pk_type t) {
  return (unsigned)t < RV_PK_TYPE_COUNT ? TYPE_NAMES[t] : "?";
}

static rv_status failv(unpickler *u, rv_status st, const char *fmt, va_list ap) {
  char msg[256];
  vsnprintf(msg, sizeof msg, fmt, ap);
  return rv_error(u->ctx, st, "%s: pickle: %s at offset %zu", u->name, msg, u->op_pos);
}

__attribute__((format(printf, 2, 3))) static rv_status fail(unpickler *u, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rv_status st = failv(u, RV_ERR_FORMAT, fmt, ap);
  va_end(ap);
  return st;
}

static rv_status nomem(unpickler *u) { return rv_error(u->ctx, RV_ERR_NOMEM, "%s: pickle: out of memory", u->name); }

/* Grow *arr (elements of size esz) to hold at least need elements. */
static int grow(void **arr, size_t *cap, size_t need, size_t esz) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap : 16;
  while (nc < need) {
    if (nc > SIZE_MAX / 2) return -1;
    nc *= 2;
  }
  size_t bytes;
  if (rv_mul_size(nc, esz, &bytes)) return -1;
  void *p = realloc(*arr, bytes);
  if (!p) return -1;
  *arr = p;
  *cap = nc;
  return 0;
}

static rv_pk_value *new_value(unpickler *u, rv_pk_type t) {
  rv_pickle *pk = u->pk;
  if (grow((void **)&pk->all, &pk->capall, pk->nall + 1, sizeof *pk->all)) return NULL;
  rv_pk_value *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->type = t;
  pk->all[pk->nall++] = v;
  return v;
}

static void free_value(rv_pk_value *v) {
  free(v->items);
  free(v->keys);
  free(v->hidx);
  if (v->owns_s) free((void *)v->s);
  free(v);
}

void rv_pickle_free(rv_pickle *p) {
  if (!p) return;
  for (size_t i = 0; i < p->nall; i++) free_value(p->all[i]);
  free(p->all);
  free(p);
}

/* ---- containers ---------------------------------------------------------------------- */

static int seq_push(rv_pk_value *s, rv_pk_value *x) {
  if (grow((void **)&s->items, &s->cap, s->n + 1, sizeof *s->items)) return -1;
  s->items[s->n++] = x;
  return 0;
}

static int hashable(const rv_pk_value *k) {
  return k->type == RV_PK_STR || k->type == RV_PK_INT || k->type == RV_PK_BOOL;
}

static uint64_t key_hash(const rv_pk_value *k) {
  uint64_t h = 1469598103934665603ULL;
  if (k->type == RV_PK_STR) {
    for (size_t i = 0; i < k->len; i++) h = (h ^ (unsigned char)k->s[i]) * 1099511628211ULL;
  } else {
    h = ((uint64_t)k->i + 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  return h;
}

static int key_eq(const rv_pk_value *a, const rv_pk_value *b) {
  int as = a->type == RV_PK_STR, bs = b->type == RV_PK_STR;
  if (as != bs) return 0;
  if (as) return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
  return a->i == b->i; /* int and bool compare by value, as in Python */
}

/* Index of key in dict d, or -1. Only hashable keys are indexed. */
static long dict_find(const rv_pk_value *d, const rv_pk_value *k) {
  if (!d->hcap || !hashable(k)) return -1;
  size_t mask = d->hcap - 1;
  for (size_t h = (size_t)key_hash(k) & mask;; h = (h + 1) & mask) {
    uint32_t e = d->hidx[h];
    if (!e) return -1;
    if (key_eq(d->keys[e - 1], k)) return (long)(e - 1);
  }
}

static void hidx_insert(rv_pk_value *d, size_t idx) {
  size_t mask = d->hcap - 1;
  size_t h = (size_t)key_hash(d->keys[idx]) & mask;
  while (d->hidx[h]) h = (h + 1) & mask;
  d->hidx[h] = (uint32_t)(idx + 1);
}

static int dict_set(rv_pk_value *d, rv_pk_value *k, rv_pk_value *v) {
  long f = dict_find(d, k);
  if (f >= 0) { d->items[f] = v; return 0; }
  if (d->n >= UINT32_MAX - 1) return -1;
  size_t kcap = d->cap;
  if (grow((void **)&d->items, &d->cap, d->n + 1, sizeof *d->items)) return -1;
  if (d->cap != kcap || !d->keys) {
    rv_pk_value **nk = realloc(d->keys, d->cap * sizeof *nk);
    if (!nk) return -1;
    d->keys = nk;
  }
  d->keys[d->n] = k;
  d->items[d->n] = v;
  d->n++;
  if (!hashable(k)) return 0;
  if ((d->n + 1) * 2 > d->hcap) { /* rebuild the index at twice the size */
    size_t nc = d->hcap ? d->hcap * 2 : 16;
    while ((d->n + 1) * 2 > nc) nc *= 2;
    uint32_t *nh = calloc(nc, sizeof *nh);
    if (!nh) return -1;
    free(d->hidx);
    d->hidx = nh;
    d->hcap = nc;
    for (size_t i = 0; i < d->n; i++)
      if (hashable(d->keys[i])) hidx_insert(d, i);
  } else {
    hidx_insert(d, d->n - 1);
  }
  return 0;
}

/* ---- readers --------------------------------------------------------------------------- */

static int need(unpickler *u, size_t n) { return u->len - u->pos >= n; }

static uint64_t rd_le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static int utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c < 0x80) { i++; continue; }
    size_t k;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) { k = 1; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { k = 2; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { k = 3; cp = c & 0x07; }
    else return 0;
    if (n - i <= k) return 0;
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (s[i + j] & 0x3f);
    }
    if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return 0;
    i += k + 1;
  }
  return 1;
}

/* ---- stack ----------------------------------------------------------------------------- */

static size_t fence(const unpickler *u) { return u->nmarks ? u->marks[u->nmarks - 1] : 0; }

static rv_status push(unpickler *u, rv_pk_value *v) {
  if (!v) return nomem(u);
  if (u->sp == u->scap) {
    /* Every push consumes at least one byte of input, so len + 16 bounds the stack. */
    if (u->sp >= u->len + 16) return fail(u, "stack overflow");
    if (grow((void **)&u->stack, &u->scap, u->sp + 1, sizeof *u->stack)) return nomem(u);
  }
  u->stack[u->sp++] = v;
  return RV_OK;
}

static rv_status pop(unpickler *u, rv_pk_value **out) {
  if (u->sp <= fence(u)) return fail(u, "stack underflow");
  *out = u->stack[--u->sp];
  return RV_OK;
}

static rv_status top(unpickler *u, rv_pk_value **out) {
  if (u->sp <= fence(u)) return fail(u, "stack underflow (empty stack)");
  *out = u->stack[u->sp - 1];
  return RV_OK;
}

/* Pop the last mark: items are stack[*from .. sp). */
static rv_status pop_mark(unpickler *u, size_t *from) {
  if (!u->nmarks) return fail(u, "no MARK on the stack");
  *from = u->marks[--u->nmarks];
  return RV_OK;
}

static rv_status memo_put(unpickler *u, uint64_t idx) {
  rv_pk_value *v = NULL;
  RV_TRY(top(u, &v));
  if (idx >= u->memo_limit) return fail(u, "memo index %llu too large", (unsigned long long)idx);
  if (idx >= u->memo_cap) {
    size_t old = u->memo_cap;
    if (grow((void **)&u->memo, &u->memo_cap, (size_t)idx + 1, sizeof *u->memo)) return nomem(u);
    memset(u->memo + old, 0, (u->memo_cap - old) * sizeof *u->memo);
  }
  u->memo[idx] = v;
  return RV_OK;
}

static rv_status memo_get(unpickler *u, uint64_t idx) {
  if (idx >= u->memo_cap || !u->memo[idx])
    return fail(u, "memo key %llu not defined", (unsigned long long)idx);
  return push(u, u->memo[idx]);
}

/* ---- opcodes ---------------------------------------------------------------------------- */

static rv_status op_str(unpickler *u, int lenbytes, rv_pk_type t) {
  if (!need(u, (size_t)lenbytes)) return fail(u, "truncated length");
  uint64_t n = rd_le(u->buf + u->pos, lenbytes);
  u->pos += (size_t)lenbytes;
  if (n > u->len - u->pos) return fail(u, "%s of %llu bytes runs past the end", rv_pk_type_name(t), (unsigned long long)n);
  const unsigned char *s = u->buf + u->pos;
  if (t == RV_PK_STR && !utf8_valid(s, (size_t)n)) return fail(u, "string is not valid UTF-8");
  u->pos += (size_t)n;
  rv_pk_value *v = new_value(u, t);
  if (v) { v->s = (const char *)s; v->len = (size_t)n; }
  return push(u, v);
}

static rv_status op_int(unpickler *u, int64_t i, rv_pk_type t) {
  rv_pk_value *v = new_value(u, t);
  if (v) v->i = i;
  return push(u, v);
}

static rv_status op_long(unpickler *u, int lenbytes) {
  if (!need(u, (size_t)lenbytes)) return fail(u, "truncated length");
  uint64_t n = rd_le(u->buf + u->pos, lenbytes);
  u->pos += (size_t)lenbytes;
  if (lenbytes == 4 && (n & 0x80000000u)) return fail(u, "LONG4 with a negative length");
  if (n > u->len - u->pos) return fail(u, "long of %llu bytes runs past the end", (unsigned long long)n);
  const unsigned char *p = u->buf + u->pos;
  u->pos += (size_t)n;
  if (n > 8) {
    rv_pk_value *v = new_value(u, RV_PK_BIGINT);
    if (v) { v->s = (const char *)p; v->len = (size_t)n; }
    return push(u, v);
  }
  uint64_t x = n ? rd_le(p, (int)n) : 0;
  if (n && n < 8 && (p[n - 1] & 0x80)) x |= ~(uint64_t)0 << (8 * n); /* sign-extend */
  int64_t i;
  memcpy(&i, &x, sizeof i);
  return op_int(u, i, RV_PK_INT);
}

static rv_status op_tuple_from(unpickler *u, size_t from) {
  rv_pk_value *t = new_value(u, RV_PK_TUPLE);
  if (!t) return nomem(u);
  size_t n = u->sp - from;
  if (n) {
    t->items = malloc(n * sizeof *t->items);
    if (!t->items) return nomem(u);
    memcpy(t->items, u->stack + from, n * sizeof *t->items);
    t->n = t->cap = n;
  }
  u->sp = from;
  return push(u, t);
}

static rv_status op_small_tuple(unpickler *u, size_t n) {
  if (u->sp - fence(u) < n) return fail(u, "stack underflow for TUPLE%zu", n);
  return op_tuple_from(u, u->sp - n);
}

/* "module\nname\n" of GLOBAL: ASCII identifiers (dots allowed) ending in a newline. */
static rv_status read_line(unpickler *u, const char **s, size_t *n) {
  const unsigned char *b = u->buf + u->pos;
  const unsigned char *nl = memchr(b, '\n', u->len - u->pos);
  if (!nl) return fail(u, "unterminated text argument");
  *s = (const char *)b;
  *n = (size_t)(nl - b);
  for (size_t i = 0; i < *n; i++)
    if (b[i] < 0x20 || b[i] >= 0x7f) return fail(u, "non-printable byte in a text argument");
  u->pos += *n + 1;
  return RV_OK;
}

static rv_status make_global(unpickler *u, const char *m, size_t ml, const char *nm, size_t nl) {
  rv_pk_value *g = new_value(u, RV_PK_GLOBAL);
  if (g) { g->s = m; g->len = ml; g->s2 = nm; g->len2 = nl; }
  return push(u, g);
}

/* The result of calling `callable(*args)`. */
static rv_status call(unpickler *u, rv_pk_value *callable, rv_pk_value *args) {
  int noargs = args && args->type == RV_PK_TUPLE && args->n == 0;
  if (noargs && (rv_pk_is_global(callable, "collections", "OrderedDict") ||
                 rv_pk_is_global(callable, "builtins", "dict")))
    return push(u, new_value(u, RV_PK_DICT));
  if (rv_pk_is_global(callable, "_codecs", "encode") && args && args->type == RV_PK_TUPLE &&
      args->n == 2 && args->items[0]->type == RV_PK_STR && rv_pk_str_eq(args->items[1], "latin1")) {
    /* latin-1 encode: every code point must be < 256 */
    const unsigned char *s = (const unsigned char *)args->items[0]->s;
    size_t n = args->items[0]->len, k = 0;
    unsigned char *o = malloc(n ? n : 1);
    if (!o) return nomem(u);
    for (size_t i = 0; i < n; k++) {
      if (s[i] < 0x80) o[k] = s[i++];
      else if ((s[i] == 0xc2 || s[i] == 0xc3) && i + 1 < n) { o[k] = (unsigned char)(((s[i] & 3) << 6) | (s[i + 1] & 0x3f)); i += 2; }
      else { free(o); return fail(u, "_codecs.encode: character outside latin-1"); }
    }
    rv_pk_value *b = new_value(u, RV_PK_BYTES);
    if (!b) { free(o); return nomem(u); }
    b->s = (const char *)o;
    b->len = k;
    b->owns_s = 1;
    return push(u, b);
  }
  rv_pk_value *o = new_value(u, RV_PK_OBJECT);
  if (o) { o->a = callable; o->b = args; }
  return push(u, o);
}

/* Target of SETITEM(S): a dict, or the item dict of an opaque object. */
static rv_status dict_target(unpickler *u, rv_pk_value *t, rv_pk_value **d) {
  if (t->type == RV_PK_DICT) { *d = t; return RV_OK; }
  if (t->type == RV_PK_OBJECT) {
    if (!t->d && !(t->d = new_value(u, RV_PK_DICT))) return nomem(u);
    *d = t->d;
    return RV_OK;
  }
  return fail(u, "SETITEM on a %s", rv_pk_type_name(t->type));
}

static rv_status list_target(unpickler *u, rv_pk_value *t, rv_pk_value **l, rv_pk_type want, const char *op) {
  if (t->type == want) { *l = t; return RV_OK; }
  if (t->type == RV_PK_OBJECT) {
    rv_pk_value **slot = &t->e;
    if (!*slot && !(*slot = new_value(u, want))) return nomem(u);
    if ((*slot)->type != want) return fail(u, "%s on an object that received another kind of item", op);
    *l = *slot;
    return RV_OK;
  }
  return fail(u, "%s on a %s", op, rv_pk_type_name(t->type));
}

static rv_status step(unpickler *u, int *done) {
  u->op_pos = u->pos;
  if (!need(u, 1)) return fail(u, "truncated (no STOP opcode)");
  unsigned op = u->buf[u->pos++];
  rv_pk_value *a = NULL, *b = NULL, *c = NULL;
  size_t from = 0;
  switch (op) {
  case 0x80: /* PROTO */
    if (!need(u, 1)) return fail(u, "truncated PROTO");
    if (u->buf[u->pos] < 2 || u->buf[u->pos] > 5) return fail(u, "unsupported protocol %u", u->buf[u->pos]);
    u->pos++;
    return RV_OK;
  case 0x95: { /* FRAME: an 8-byte frame length, framing is otherwise transparent */
    if (!need(u, 8)) return fail(u, "truncated FRAME");
    uint64_t n = rd_le(u->buf + u->pos, 8);
    u->pos += 8;
    if (n > u->len - u->pos) return fail(u, "FRAME of %llu bytes runs past the end", (unsigned long long)n);
    return RV_OK;
  }
  case '.': *done = 1; return RV_OK; /* STOP */
  case '(': /* MARK */
    if (u->nmarks >= u->len + 16) return fail(u, "too many marks");
    if (grow((void **)&u->marks, &u->mcap, u->nmarks + 1, sizeof *u->marks)) return nomem(u);
    u->marks[u->nmarks++] = u->sp;
    return RV_OK;
  case '0': return pop(u, &a); /* POP */
  case '1': RV_TRY(pop_mark(u, &from)); u->sp = from; return RV_OK; /* POP_MARK */
  case '2': RV_TRY(top(u, &a)); return push(u, a); /* DUP */
  case 'N': return push(u, new_value(u, RV_PK_NONE));
  case 0x88: return op_int(u, 1, RV_PK_BOOL);
  case 0x89: return op_int(u, 0, RV_PK_BOOL);
  case 'J': /* BININT: 4-byte signed */
    if (!need(u, 4)) return fail(u, "truncated BININT");
    { int32_t v = (int32_t)(uint32_t)rd_le(u->buf + u->pos, 4); u->pos += 4; return op_int(u, v, RV_PK_INT); }
  case 'K':
    if (!need(u, 1)) return fail(u, "truncated BININT1");
    u->pos += 1;
    return op_int(u, u->buf[u->pos - 1], RV_PK_INT);
  case 'M':
    if (!need(u, 2)) return fail(u, "truncated BININT2");
    u->pos += 2;
    return op_int(u, (int64_t)rd_le(u->buf + u->pos - 2, 2), RV_PK_INT);
  case 0x8a: return op_long(u, 1); /* LONG1 */
  case 0x8b: return op_long(u, 4); /* LONG4 */
  case 'G': { /* BINFLOAT: big-endian double */
    if (!need(u, 8)) return fail(u, "truncated BINFLOAT");
    uint64_t x = 0;
    for (int i = 0; i < 8; i++) x = (x << 8) | u->buf[u->pos + (size_t)i];
    u->pos += 8;
    rv_pk_value *v = new_value(u, RV_PK_FLOAT);
    if (v) memcpy(&v->f, &x, sizeof v->f);
    return push(u, v);
  }
  case 'X': return op_str(u, 4, RV_PK_STR);    /* BINUNICODE */
  case 0x8c: return op_str(u, 1, RV_PK_STR);   /* SHORT_BINUNICODE */
  case 0x8d: return op_str(u, 8, RV_PK_STR);   /* BINUNICODE8 */
  case 'B': return op_str(u, 4, RV_PK_BYTES);  /* BINBYTES */
  case 'C': return op_str(u, 1, RV_PK_BYTES);  /* SHORT_BINBYTES */
  case 0x8e: return op_str(u, 8, RV_PK_BYTES); /* BINBYTES8 */
  case 0x96: return op_str(u, 8, RV_PK_BYTES); /* BYTEARRAY8 */
  case ')': return push(u, new_value(u, RV_PK_TUPLE));
  case ']': return push(u, new_value(u, RV_PK_LIST));
  case '}': return push(u, new_value(u, RV_PK_DICT));
  case 0x8f: return push(u, new_value(u, RV_PK_SET));
  case 't': RV_TRY(pop_mark(u, &from)); return op_tuple_from(u, from);
  case 0x85: return op_small_tuple(u, 1);
  case 0x86: return op_small_tuple(u, 2);
  case 0x87: return op_small_tuple(u, 3);
  case 'l': case 0x91: { /* LIST, FROZENSET: items since the mark */
    RV_TRY(pop_mark(u, &from));
    RV_TRY(op_tuple_from(u, from));
    u->stack[u->sp - 1]->type = op == 'l' ? RV_PK_LIST : RV_PK_SET;
    return RV_OK;
  }
  case 'd': { /* DICT: key/value pairs since the mark */
    RV_TRY(pop_mark(u, &from));
    if ((u->sp - from) % 2) return fail(u, "odd number of items for DICT");
    rv_pk_value *d = new_value(u, RV_PK_DICT);
    if (!d) return nomem(u);
    for (size_t i = from; i < u->sp; i += 2)
      if (dict_set(d, u->stack[i], u->stack[i + 1])) return nomem(u);
    u->sp = from;
    return push(u, d);
  }
  case 'a': /* APPEND */
    RV_TRY(pop(u, &a));
    RV_TRY(top(u, &b));
    RV_TRY(list_target(u, b, &c, RV_PK_LIST, "APPEND"));
    return seq_push(c, a) ? nomem(u) : RV_OK;
  case 'e': case 0x90: { /* APPENDS, ADDITEMS */
    RV_TRY(pop_mark(u, &from));
    if (from <= fence(u)) return fail(u, "stack underflow for %s", op == 'e' ? "APPENDS" : "ADDITEMS");
    RV_TRY(list_target(u, u->stack[from - 1], &c, op == 'e' ? RV_PK_LIST : RV_PK_SET,
                       op == 'e' ? "APPENDS" : "ADDITEMS"));
    for (size_t i = from; i < u->sp; i++)
      if (seq_push(c, u->stack[i])) return nomem(u);
    u->sp = from;
    return RV_OK;
  }
  case 's': /* SETITEM */
    RV_TRY(pop(u, &a));
    RV_TRY(pop(u, &b));
    RV_TRY(top(u, &c));
    RV_TRY(dict_target(u, c, &c));
    return dict_set(c, b, a) ? nomem(u) : RV_OK;
  case 'u': { /* SETITEMS */
    RV_TRY(pop_mark(u, &from));
    if (from <= fence(u)) return fail(u, "stack underflow for SETITEMS");
    if ((u->sp - from) % 2) return fail(u, "odd number of items for SETITEMS");
    RV_TRY(dict_target(u, u->stack[from - 1], &c));
    for (size_t i = from; i < u->sp; i += 2)
      if (dict_set(c, u->stack[i], u->stack[i + 1])) return nomem(u);
    u->sp = from;
    return RV_OK;
  }
  case 'c': { /* GLOBAL */
    const char *m = NULL, *nm = NULL;
    size_t ml = 0, nl = 0;
    RV_TRY(read_line(u, &m, &ml));
    RV_TRY(read_line(u, &nm, &nl));
    return make_global(u, m, ml, nm, nl);
  }
  case 0x93: /* STACK_GLOBAL */
    RV_TRY(pop(u, &b));
    RV_TRY(pop(u, &a));
    if (a->type != RV_PK_STR || b->type != RV_PK_STR) return fail(u, "STACK_GLOBAL needs two strings");
    return make_global(u, a->s, a->len, b->s, b->len);
  case 'R': /* REDUCE */
    RV_TRY(pop(u, &b));
    RV_TRY(pop(u, &a));
    return call(u, a, b);
  case 0x81: /* NEWOBJ: cls.__new__(cls, *args) */
    RV_TRY(pop(u, &b));
    RV_TRY(pop(u, &a));
    return call(u, a, b);
  case 0x92: /* NEWOBJ_EX: cls, args, kwargs */
    RV_TRY(pop(u, &c));
    RV_TRY(pop(u, &b));
    RV_TRY(pop(u, &a));
    RV_TRY(call(u, a, b));
    if (u->stack[u->sp - 1]->type == RV_PK_OBJECT) u->stack[u->sp - 1]->c = c; /* kwargs */
    return RV_OK;
  case 'b': /* BUILD: an object keeps its state; dicts take attributes, not items */
    RV_TRY(pop(u, &a));
    RV_TRY(top(u, &b));
    if (b->type == RV_PK_OBJECT) b->c = a;
    return RV_OK;
  case 'Q': /* BINPERSID */
    RV_TRY(pop(u, &a));
    c = new_value(u, RV_PK_PERSID);
    if (c) c->a = a;
    return push(u, c);
  case 'q':
    if (!need(u, 1)) return fail(u, "truncated BINPUT");
    u->pos++;
    return memo_put(u, u->buf[u->pos - 1]);
  case 'r':
    if (!need(u, 4)) return fail(u, "truncated LONG_BINPUT");
    u->pos += 4;
    return memo_put(u, rd_le(u->buf + u->pos - 4, 4));
  case 0x94: RV_TRY(memo_put(u, u->memo_next)); u->memo_next++; return RV_OK; /* MEMOIZE */
  case 'h':
    if (!need(u, 1)) return fail(u, "truncated BINGET");
    u->pos++;
    return memo_get(u, u->buf[u->pos - 1]);
  case 'j':
    if (!need(u, 4)) return fail(u, "truncated LONG_BINGET");
    u->pos += 4;
    return memo_get(u, rd_le(u->buf + u->pos - 4, 4));
  case 'p': case 'g': { /* PUT, GET (text index) */
    const char *s = NULL;
    size_t n = 0;
    RV_TRY(read_line(u, &s, &n));
    uint64_t idx = 0;
    if (n == 0 || n > 18) return fail(u, "bad memo index");
    for (size_t i = 0; i < n; i++) {
      if (s[i] < '0' || s[i] > '9') return fail(u, "bad memo index");
      idx = idx * 10 + (uint64_t)(s[i] - '0');
    }
    return op == 'p' ? memo_put(u, idx) : memo_get(u, idx);
  }
  default:
    return rv_error(u->ctx, RV_ERR_FORMAT, "%s: pickle: opcode 0x%02x at offset %zu not allowed here",
                    u->name, op, u->op_pos);
  }
}

rv_status rv_pickle_load(rv_pickle **out, const rv_pk_value **root, const void *buf, size_t len,
                         const char *name, rv_ctx *ctx) {
  *out = NULL;
  *root = NULL;
  unpickler u;
  memset(&u, 0, sizeof u);
  u.buf = buf;
  u.len = len;
  u.name = name ? name : "(memory)";
  u.ctx = ctx;
  u.memo_limit = len > 1024 ? len : 1024;
  u.pk = calloc(1, sizeof *u.pk);
  if (!u.pk) return rv_error(ctx, RV_ERR_NOMEM, "%s: pickle: out of memory", u.name);
  rv_status st = RV_OK;
  int done = 0;
  while (st == RV_OK && !done) st = step(&u, &done);
  if (st == RV_OK) { /* like Python, STOP returns the top of the stack */
    if (u.sp <= fence(&u)) st = fail(&u, "STOP with an empty stack");
    else *root = u.stack[u.sp - 1];
  }
  free(u.stack);
  free(u.marks);
  free(u.memo);
  if (st != RV_OK) {
    rv_pickle_free(u.pk);
    *root = NULL;
    return st;
  }
  *out = u.pk;
  return RV_OK;
}

/* ---- queries ---------------------------------------------------------------------------- */

int rv_pk_str_eq(const rv_pk_value *v, const char *s) {
  size_t n = strlen(s);
  return v && v->type == RV_PK_STR && v->len == n && memcmp(v->s, s, n) == 0;
}

int rv_pk_is_global(const rv_pk_value *v, const char *module, const char *name) {
  size_t ml = strlen(module), nl = strlen(name);
  return v && v->type == RV_PK_GLOBAL && v->len == ml && v->len2 == nl &&
         memcmp(v->s, module, ml) == 0 && memcmp(v->s2, name, nl) == 0;
}

const rv_pk_value *rv_pk_object_global(const rv_pk_value *v) {
  return v && v->type == RV_PK_OBJECT && v->a && v->a->type == RV_PK_GLOBAL ? v->a : NULL;
}

const rv_pk_value *rv_pk_dict_get(const rv_pk_value *v, const char *key) {
  if (v && v->type == RV_PK_OBJECT) v = v->d;
  if (!v || v->type != RV_PK_DICT) return NULL;
  rv_pk_value k;
  memset(&k, 0, sizeof k);
  k.type = RV_PK_STR;
  k.s = key;
  k.len = strlen(key);
  long i = dict_find(v, &k);
  return i >= 0 ? v->items[i] : NULL;
}
