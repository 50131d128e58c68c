/* PyTorch zip checkpoints (.pth): zip access with libzip, the pickle via formats/pickle.c,
 * tensor reconstruction from storages and mmcv meta flattening. See pth.h. */
#define _POSIX_C_SOURCE 200809L
#include "formats/pth.h"
#include "formats/pickle.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>

#define PKL_MAX ((zip_uint64_t)1 << 30)   /* data.pkl larger than 1 GiB is not a checkpoint */
#define META_DEPTH 16                     /* nesting of meta dicts / lists we flatten */
#define MAX_KEY 1024                      /* flattened meta key length */

typedef struct {
  char *key;        /* storage key ("0", "1", ...) */
  rv_dtype dtype;
  unsigned char *data;
  size_t numel;
} storage;

typedef struct {
  zip_t *z;
  const char *name;   /* file name for messages */
  rv_ctx *ctx;
  uint64_t archive_len;
  char *prefix;       /* "archive" in "archive/data.pkl" */
  int big_endian;
  rv_weights *w;
  storage *st;
  size_t nst, capst;
  uint32_t *hidx;     /* open-addressing index over st by key */
  size_t hcap;
  uint64_t gathered;  /* bytes copied for non-contiguous views so far */
} loader;

static char *dupn(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

/* ---- zip entries ------------------------------------------------------------------------- */

/* Read `want` bytes of entry `idx` (all of it if want == SIZE_MAX) into a new rv_malloc
 * buffer. The declared size is checked against the compressed size and the archive before
 * anything is allocated, and the CRC is verified when the whole entry is read. */
static rv_status read_entry(loader *L, zip_int64_t idx, const char *ename, size_t want,
                            zip_uint64_t max, unsigned char **out, size_t *outlen) {
  *out = NULL;
  zip_stat_t sb;
  zip_stat_init(&sb);
  if (zip_stat_index(L->z, (zip_uint64_t)idx, 0, &sb) != 0 || !(sb.valid & ZIP_STAT_SIZE))
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: zip entry '%s': cannot stat: %s", L->name, ename,
                    zip_strerror(L->z));
  zip_uint64_t csize = (sb.valid & ZIP_STAT_COMP_SIZE) ? sb.comp_size : sb.size;
  int stored = !(sb.valid & ZIP_STAT_COMP_METHOD) || sb.comp_method == ZIP_CM_STORE;
  /* deflate expands at most ~1032x; stored entries cannot exceed their compressed size */
  if (sb.size > max || csize > L->archive_len ||
      (stored ? sb.size > csize : sb.size / 1100 > csize + 1))
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: zip entry '%s' declares %llu bytes, impossible in a %llu-byte archive",
                    L->name, ename, (unsigned long long)sb.size, (unsigned long long)L->archive_len);
  size_t n = want == SIZE_MAX ? (size_t)sb.size : want;
  if ((zip_uint64_t)n > sb.size)
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: zip entry '%s' has %llu bytes, need %zu", L->name,
                    ename, (unsigned long long)sb.size, n);
  unsigned char *buf = rv_malloc(n ? n : 1);
  if (!buf) return rv_error(L->ctx, RV_ERR_NOMEM, "%s: out of memory reading '%s' (%zu bytes)", L->name, ename, n);
  zip_file_t *f = zip_fopen_index(L->z, (zip_uint64_t)idx, 0);
  if (!f) {
    rv_free(buf);
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: zip entry '%s': cannot open: %s", L->name, ename, zip_strerror(L->z));
  }
  size_t got = 0;
  rv_status st = RV_OK;
  while (got < n) {
    zip_int64_t r = zip_fread(f, buf + got, (zip_uint64_t)(n - got));
    if (r < 0) { st = rv_error(L->ctx, RV_ERR_FORMAT, "%s: zip entry '%s': %s", L->name, ename, zip_file_strerror(f)); break; }
    if (r == 0) break;
    got += (size_t)r;
  }
  if (st == RV_OK && got != n)
    st = rv_error(L->ctx, RV_ERR_FORMAT, "%s: zip entry '%s' is truncated (%zu of %zu bytes)", L->name, ename, got, n);
  if (st == RV_OK && (zip_uint64_t)n == sb.size) { /* reach EOF so libzip checks the CRC */
    unsigned char extra;
    zip_int64_t r = zip_fread(f, &extra, 1);
    if (r != 0)
      st = rv_error(L->ctx, RV_ERR_FORMAT, "%s: zip entry '%s': %s", L->name, ename,
                    r < 0 ? zip_file_strerror(f) : "longer than declared");
  }
  zip_fclose(f);
  if (st != RV_OK) { rv_free(buf); return st; }
  *out = buf;
  *outlen = n;
  return RV_OK;
}

/* Finds "<prefix>/data.pkl" (prefix without '/'), the archive's record directory. */
static rv_status find_pickle(loader *L, zip_int64_t *idx) {
  zip_int64_t n = zip_get_num_entries(L->z, 0);
  for (zip_int64_t i = 0; i < n; i++) {
    const char *nm = zip_get_name(L->z, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
    if (!nm) continue;
    size_t l = strlen(nm);
    if (l < 10 || strcmp(nm + l - 9, "/data.pkl") != 0) continue;
    if (memchr(nm, '/', l - 9)) continue;
    L->prefix = dupn(nm, l - 9);
    if (!L->prefix) return rv_error(L->ctx, RV_ERR_NOMEM, "%s: out of memory", L->name);
    *idx = i;
    return RV_OK;
  }
  return rv_error(L->ctx, RV_ERR_FORMAT, "%s: zip has no '<name>/data.pkl' entry: not a PyTorch checkpoint", L->name);
}

static rv_status read_byteorder(loader *L) {
  char ename[512];
  snprintf(ename, sizeof ename, "%s/byteorder", L->prefix);
  zip_int64_t idx = zip_name_locate(L->z, ename, ZIP_FL_ENC_RAW);
  if (idx < 0) return RV_OK; /* absent: little-endian */
  unsigned char *b;
  size_t n;
  RV_TRY(read_entry(L, idx, ename, SIZE_MAX, 64, &b, &n));
  if (n == 6 && memcmp(b, "little", 6) == 0) L->big_endian = 0;
  else if (n == 3 && memcmp(b, "big", 3) == 0) L->big_endian = 1;
  else {
    rv_free(b);
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: '%s' is neither 'little' nor 'big'", L->name, ename);
  }
  rv_free(b);
  return RV_OK;
}

/* ---- storages ---------------------------------------------------------------------------- */

static uint64_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static storage *storage_find(loader *L, const char *key) {
  if (!L->hcap) return NULL;
  size_t mask = L->hcap - 1;
  for (size_t h = (size_t)str_hash(key) & mask; L->hidx[h]; h = (h + 1) & mask)
    if (strcmp(L->st[L->hidx[h] - 1].key, key) == 0) return &L->st[L->hidx[h] - 1];
  return NULL;
}

static int storage_index(loader *L) {
  if ((L->nst + 1) * 2 <= L->hcap) {
    size_t mask = L->hcap - 1, h = (size_t)str_hash(L->st[L->nst - 1].key) & mask;
    while (L->hidx[h]) h = (h + 1) & mask;
    L->hidx[h] = (uint32_t)L->nst;
    return 0;
  }
  size_t nc = L->hcap ? L->hcap * 2 : 64;
  uint32_t *nh = calloc(nc, sizeof *nh);
  if (!nh) return -1;
  free(L->hidx);
  L->hidx = nh;
  L->hcap = nc;
  for (size_t i = 0; i < L->nst; i++) {
    size_t h = (size_t)str_hash(L->st[i].key) & (nc - 1);
    while (nh[h]) h = (h + 1) & (nc - 1);
    nh[h] = (uint32_t)(i + 1);
  }
  return 0;
}

static const struct { const char *name; rv_dtype dt; } STORAGE_TYPES[] = {
    {"FloatStorage", RV_DT_F32}, {"DoubleStorage", RV_DT_F64}, {"HalfStorage", RV_DT_F16},
    {"BFloat16Storage", RV_DT_BF16}, {"LongStorage", RV_DT_I64}, {"IntStorage", RV_DT_I32},
    {"ShortStorage", RV_DT_I16}, {"CharStorage", RV_DT_I8}, {"ByteStorage", RV_DT_U8},
    {"BoolStorage", RV_DT_BOOL}};

static void byteswap(unsigned char *p, size_t numel, size_t es) {
  for (size_t i = 0; i < numel; i++, p += es)
    for (size_t a = 0, b = es - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

/* Resolve a persistent id ('storage', torch.XStorage, key, location, numel) to its loaded
 * storage, reading the zip entry on first use. */
static rv_status get_storage(loader *L, const char *tname, const rv_pk_value *pid, storage **out) {
  const rv_pk_value *t = pid->a;
  if (!t || t->type != RV_PK_TUPLE || t->n < 5 || !rv_pk_str_eq(t->items[0], "storage"))
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': persistent id is not ('storage', type, key, location, numel)", L->name, tname);
  const rv_pk_value *ty = t->items[1], *key = t->items[2], *numel = t->items[4];
  if (ty->type == RV_PK_OBJECT && ty->a) ty = ty->a; /* tolerate a called type */
  rv_dtype dt = RV_DT_COUNT;
  if (ty->type == RV_PK_GLOBAL && ty->len == 5 && memcmp(ty->s, "torch", 5) == 0)
    for (size_t i = 0; i < sizeof STORAGE_TYPES / sizeof *STORAGE_TYPES; i++)
      if (ty->len2 == strlen(STORAGE_TYPES[i].name) && memcmp(ty->s2, STORAGE_TYPES[i].name, ty->len2) == 0)
        dt = STORAGE_TYPES[i].dt;
  if (dt == RV_DT_COUNT) {
    if (ty->type == RV_PK_GLOBAL)
      return rv_error(L->ctx, RV_ERR_UNSUPPORTED, "%s: tensor '%s': storage type %.*s.%.*s is not supported", L->name,
                      tname, (int)(ty->len > 64 ? 64 : ty->len), ty->s, (int)(ty->len2 > 64 ? 64 : ty->len2), ty->s2);
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': storage type is a %s, not a torch storage class",
                    L->name, tname, rv_pk_type_name(ty->type));
  }
  if (key->type != RV_PK_STR || key->len == 0 || key->len > 128 || memchr(key->s, '/', key->len) ||
      memchr(key->s, 0, key->len))
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': bad storage key", L->name, tname);
  if (numel->type != RV_PK_INT || numel->i < 0)
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': bad storage size", L->name, tname);
  char k[130];
  memcpy(k, key->s, key->len);
  k[key->len] = 0;
  storage *s = storage_find(L, k);
  if (s) {
    if (s->dtype != dt || s->numel != (size_t)numel->i)
      return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': storage '%s' is declared with two different types or sizes",
                      L->name, tname, k);
    *out = s;
    return RV_OK;
  }
  size_t es = rv_dtype_size(dt), nbytes;
  if ((uint64_t)numel->i > SIZE_MAX || rv_mul_size((size_t)numel->i, es, &nbytes))
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': storage '%s' size %lld overflows", L->name, tname, k,
                    (long long)numel->i);
  char ename[300];
  snprintf(ename, sizeof ename, "%s/data/%s", L->prefix, k);
  zip_int64_t idx = zip_name_locate(L->z, ename, ZIP_FL_ENC_RAW);
  if (idx < 0)
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s' needs zip entry '%s', which is missing", L->name, tname, ename);
  zip_stat_t sb;
  zip_stat_init(&sb);
  if (zip_stat_index(L->z, (zip_uint64_t)idx, 0, &sb) == 0 && (sb.valid & ZIP_STAT_SIZE) && sb.size < nbytes)
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: storage '%s' has %llu bytes but is declared as %lld %s elements (%zu bytes)",
                    L->name, ename, (unsigned long long)sb.size, (long long)numel->i, rv_dtype_name(dt), nbytes);
  unsigned char *data;
  size_t got;
  RV_TRY(read_entry(L, idx, ename, nbytes, (zip_uint64_t)1 << 40, &data, &got));
  if (rv_weights_adopt(L->w, data) != RV_OK) {
    rv_free(data);
    return rv_error(L->ctx, RV_ERR_NOMEM, "%s: out of memory", L->name);
  }
  if (L->big_endian && es > 1) byteswap(data, (size_t)numel->i, es);
  if (L->nst == L->capst) {
    size_t nc = L->capst ? L->capst * 2 : 64;
    storage *ns = realloc(L->st, nc * sizeof *ns);
    if (!ns) return rv_error(L->ctx, RV_ERR_NOMEM, "%s: out of memory", L->name);
    L->st = ns;
    L->capst = nc;
  }
  s = &L->st[L->nst];
  s->key = dupn(k, key->len);
  if (!s->key) return rv_error(L->ctx, RV_ERR_NOMEM, "%s: out of memory", L->name);
  s->dtype = dt;
  s->data = data;
  s->numel = (size_t)numel->i;
  L->nst++;
  if (storage_index(L)) return rv_error(L->ctx, RV_ERR_NOMEM, "%s: out of memory", L->name);
  *out = s;
  return RV_OK;
}

/* ---- tensors ------------------------------------------------------------------------------ */

static int int_tuple(const rv_pk_value *v, int64_t *dst, int *n) {
  if (!v || (v->type != RV_PK_TUPLE && v->type != RV_PK_LIST) || v->n > RV_MAX_DIMS) return -1;
  for (size_t i = 0; i < v->n; i++) {
    if (v->items[i]->type != RV_PK_INT || v->items[i]->i < 0) return -1;
    dst[i] = v->items[i]->i;
  }
  *n = (int)v->n;
  return 0;
}

/* If v is a tensor (torch._utils._rebuild_tensor_v2 / _rebuild_tensor, possibly wrapped in
 * _rebuild_parameter), return its argument tuple. */
static const rv_pk_value *tensor_args(const rv_pk_value *v) {
  for (int depth = 0; depth < 2; depth++) {
    const rv_pk_value *g = rv_pk_object_global(v);
    if (!g || !v->b || v->b->type != RV_PK_TUPLE) return NULL;
    if (rv_pk_is_global(g, "torch._utils", "_rebuild_tensor_v2") ||
        rv_pk_is_global(g, "torch._utils", "_rebuild_tensor"))
      return v->b->n >= 4 ? v->b : NULL;
    if ((rv_pk_is_global(g, "torch._utils", "_rebuild_parameter") ||
         rv_pk_is_global(g, "torch._utils", "_rebuild_parameter_with_state")) && v->b->n >= 1)
      v = v->b->items[0];
    else
      return NULL;
  }
  return NULL;
}

/* out[...] = storage[offset + sum_d idx_d * stride_d] over the row-major index space. */
static void gather(unsigned char *dst, const unsigned char *src, size_t es, int ndim,
                   const int64_t *size, const int64_t *stride, size_t offset, size_t numel) {
  int64_t idx[RV_MAX_DIMS] = {0};
  size_t pos = offset;
  for (size_t i = 0; i < numel; i++) {
    memcpy(dst + i * es, src + pos * es, es);
    for (int d = ndim - 1; d >= 0; d--) { /* odometer increment */
      if (++idx[d] < size[d]) { pos += (size_t)stride[d]; break; }
      pos -= (size_t)(stride[d] * (size[d] - 1));
      idx[d] = 0;
    }
  }
}

static rv_status add_tensor(loader *L, const char *tname, const rv_pk_value *args) {
  const rv_pk_value *pid = args->items[0];
  if (pid->type != RV_PK_PERSID)
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': storage is a %s, not a persistent id", L->name, tname,
                    rv_pk_type_name(pid->type));
  storage *s = NULL;
  RV_TRY(get_storage(L, tname, pid, &s));
  int64_t size[RV_MAX_DIMS], stride[RV_MAX_DIMS];
  int nd = 0, nds = 0;
  if (args->items[1]->type != RV_PK_INT || args->items[1]->i < 0 ||
      int_tuple(args->items[2], size, &nd) || int_tuple(args->items[3], stride, &nds) || nd != nds)
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': bad storage offset, size or stride", L->name, tname);
  uint64_t offset = (uint64_t)args->items[1]->i;
  size_t es = rv_dtype_size(s->dtype), numel = 1;
  uint64_t last = offset; /* largest storage index touched */
  for (int d = 0; d < nd; d++) {
    if (rv_mul_size(numel, (size_t)size[d], &numel))
      return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': size overflows", L->name, tname);
  }
  int contiguous = 1;
  if (numel > 0) {
    uint64_t expect = 1;
    for (int d = nd - 1; d >= 0; d--) {
      uint64_t span = (uint64_t)(size[d] - 1) * (uint64_t)stride[d];
      if (stride[d] != 0 && (uint64_t)(size[d] - 1) > UINT64_MAX / (uint64_t)stride[d])
        return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': stride overflows", L->name, tname);
      if (last > UINT64_MAX - span)
        return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': stride overflows", L->name, tname);
      last += span;
      if (size[d] != 1 && (uint64_t)stride[d] != expect) contiguous = 0;
      expect *= (uint64_t)size[d];
    }
    if (last >= s->numel)
      return rv_error(L->ctx, RV_ERR_FORMAT,
                      "%s: tensor '%s' (offset %llu, last element %llu) reaches past its storage of %zu elements",
                      L->name, tname, (unsigned long long)offset, (unsigned long long)last, s->numel);
  } else if (offset > s->numel) {
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': storage offset %llu past its storage of %zu elements",
                    L->name, tname, (unsigned long long)offset, s->numel);
  }
  size_t nbytes = numel * es; /* <= storage bytes, cannot overflow */
  const unsigned char *data = numel ? s->data + (size_t)offset * es : s->data;
  if (!contiguous) {
    /* views may legitimately repeat data (stride 0), but not without bound: a few views per
     * stored byte is the most a real checkpoint holds */
    L->gathered += nbytes;
    if (L->gathered > 16 * L->archive_len + ((uint64_t)64 << 20))
      return rv_error(L->ctx, RV_ERR_FORMAT, "%s: tensor '%s': strided views expand to over %llu bytes, implausible for a %llu-byte file",
                      L->name, tname, (unsigned long long)L->gathered, (unsigned long long)L->archive_len);
    unsigned char *g = rv_malloc(nbytes);
    if (!g || rv_weights_adopt(L->w, g) != RV_OK) {
      rv_free(g);
      return rv_error(L->ctx, RV_ERR_NOMEM, "%s: out of memory", L->name);
    }
    gather(g, s->data, es, nd, size, stride, (size_t)offset, numel);
    data = g;
  }
  return rv_weights_add(L->w, tname, s->dtype, nd, size, data, nbytes, 0, L->ctx);
}

/* ---- meta ---------------------------------------------------------------------------------- */

typedef struct {
  char *p;
  size_t n, cap;
  int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 64;
    while (nc < b->n + n + 1) {
      if (nc > SIZE_MAX / 2) { b->oom = 1; return; }
      nc *= 2;
    }
    char *q = realloc(b->p, nc);
    if (!q) { b->oom = 1; return; }
    b->p = q;
    b->cap = nc;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* Python's repr(float): shortest round-trip digits, exponent form outside [1e-4, 1e16). */
static void py_float_repr(char *out, size_t cap, double x) {
  if (isnan(x)) { snprintf(out, cap, "nan"); return; }
  if (isinf(x)) { snprintf(out, cap, x < 0 ? "-inf" : "inf"); return; }
  char e[40];
  int prec = 1;
  for (; prec <= 17; prec++) {
    snprintf(e, sizeof e, "%.*e", prec - 1, x);
    if (strtod(e, NULL) == x) break;
  }
  int exp10 = atoi(strchr(e, 'e') + 1);
  if (exp10 >= -4 && exp10 < 16) {
    int dec = prec - 1 - exp10;
    snprintf(out, cap, "%.*f", dec > 0 ? dec : 0, x);
    if (!strchr(out, '.')) strncat(out, ".0", cap - strlen(out) - 1);
  } else {
    char mant[32];
    snprintf(mant, sizeof mant, "%.*e", prec - 1, x);
    char *ep = strchr(mant, 'e');
    *ep = 0;
    snprintf(out, cap, "%se%c%02d", mant, exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  }
}

static void json_string(sbuf *b, const char *s, size_t n) {
  sb_put(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    if (c == '"' || c == '\\') { esc[0] = '\\'; esc[1] = (char)c; sb_put(b, esc, 2); }
    else if (c == '\n') sb_put(b, "\\n", 2);
    else if (c == '\t') sb_put(b, "\\t", 2);
    else if (c == '\r') sb_put(b, "\\r", 2);
    else if (c < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", c); sb_put(b, esc, 6); }
    else sb_put(b, (const char *)&s[i], 1);
  }
  sb_put(b, "\"", 1);
}

/* numpy.core.multiarray.scalar(numpy.dtype(code, ...) with BUILD state (v, order, ...), raw
 * bytes) -> its number as Python prints it. 0 on success. */
static int numpy_scalar(const rv_pk_value *v, char *out, size_t cap) {
  const rv_pk_value *g = rv_pk_object_global(v);
  if (!g || !(rv_pk_is_global(g, "numpy.core.multiarray", "scalar") ||
              rv_pk_is_global(g, "numpy._core.multiarray", "scalar")))
    return -1;
  const rv_pk_value *a = v->b;
  if (!a || a->type != RV_PK_TUPLE || a->n != 2 || a->items[1]->type != RV_PK_BYTES) return -1;
  const rv_pk_value *dt = a->items[0], *raw = a->items[1];
  const rv_pk_value *dg = rv_pk_object_global(dt);
  if (!dg || !rv_pk_is_global(dg, "numpy", "dtype") || !dt->b || dt->b->type != RV_PK_TUPLE ||
      dt->b->n < 1 || dt->b->items[0]->type != RV_PK_STR || dt->b->items[0]->len != 2)
    return -1;
  char kind = dt->b->items[0]->s[0];
  int size = dt->b->items[0]->s[1] - '0';
  if ((size != 1 && size != 2 && size != 4 && size != 8) || raw->len != (size_t)size) return -1;
  int big = 0; /* byte order from the BUILD state (version, '<' | '>' | '|' | '=', ...) */
  if (dt->c && dt->c->type == RV_PK_TUPLE && dt->c->n > 1 && rv_pk_str_eq(dt->c->items[1], ">")) big = 1;
  unsigned char b[8];
  for (int i = 0; i < size; i++) b[i] = (unsigned char)raw->s[big ? size - 1 - i : i];
  uint64_t u = 0;
  for (int i = size - 1; i >= 0; i--) u = (u << 8) | b[i];
  if (kind == 'f' && size == 8) { double d; memcpy(&d, &u, 8); py_float_repr(out, cap, d); }
  else if (kind == 'f' && size == 4) { uint32_t x = (uint32_t)u; float f; memcpy(&f, &x, 4); py_float_repr(out, cap, (double)f); }
  else if (kind == 'i') {
    int64_t s = (int64_t)u;
    if (size < 8 && (u >> (8 * size - 1)) & 1) s = (int64_t)(u | (~(uint64_t)0 << (8 * size)));
    snprintf(out, cap, "%lld", (long long)s);
  } else if (kind == 'u') snprintf(out, cap, "%llu", (unsigned long long)u);
  else if (kind == 'b' && size == 1) snprintf(out, cap, "%s", u ? "True" : "False");
  else return -1;
  return 0;
}

/* JSON text of a list/tuple/dict tree of plain values; -1 if something is not plain. */
static int to_json(sbuf *b, const rv_pk_value *v, int depth) {
  char num[64];
  if (depth > META_DEPTH) return -1;
  switch (v->type) {
  case RV_PK_NONE: sb_str(b, "null"); return 0;
  case RV_PK_BOOL: sb_str(b, v->i ? "true" : "false"); return 0;
  case RV_PK_INT: snprintf(num, sizeof num, "%lld", (long long)v->i); sb_str(b, num); return 0;
  case RV_PK_FLOAT:
    if (!isfinite(v->f)) { sb_str(b, "null"); return 0; }
    py_float_repr(num, sizeof num, v->f);
    sb_str(b, num);
    return 0;
  case RV_PK_STR: json_string(b, v->s, v->len); return 0;
  case RV_PK_TUPLE: case RV_PK_LIST:
    sb_str(b, "[");
    for (size_t i = 0; i < v->n; i++) {
      if (i) sb_str(b, ",");
      if (to_json(b, v->items[i], depth + 1)) return -1;
    }
    sb_str(b, "]");
    return 0;
  case RV_PK_DICT:
    sb_str(b, "{");
    for (size_t i = 0; i < v->n; i++) {
      if (i) sb_str(b, ",");
      const rv_pk_value *k = v->keys[i];
      if (k->type == RV_PK_STR) json_string(b, k->s, k->len);
      else if (k->type == RV_PK_INT) { snprintf(num, sizeof num, "\"%lld\"", (long long)k->i); sb_str(b, num); }
      else return -1;
      sb_str(b, ":");
      if (to_json(b, v->items[i], depth + 1)) return -1;
    }
    sb_str(b, "}");
    return 0;
  case RV_PK_OBJECT:
    if (numpy_scalar(v, num, sizeof num) == 0) { sb_str(b, num); return 0; }
    return -1;
  default: return -1;
  }
}

static rv_status set_meta(loader *L, const char *key, const char *val) {
  if (rv_weights_set_meta(L->w, key, val) != RV_OK)
    return rv_error(L->ctx, RV_ERR_NOMEM, "%s: out of memory", L->name);
  return RV_OK;
}

/* Flatten meta[key] = v into string metadata; unsupported values are skipped. */
static rv_status flatten_meta(loader *L, const char *key, const rv_pk_value *v, int depth) {
  char num[64];
  if (depth > META_DEPTH) return RV_OK;
  switch (v->type) {
  case RV_PK_STR: {
    if (memchr(v->s, 0, v->len)) return RV_OK; /* not representable as a C string */
    char *s = dupn(v->s, v->len);
    if (!s) return rv_error(L->ctx, RV_ERR_NOMEM, "%s: out of memory", L->name);
    rv_status st = set_meta(L, key, s);
    free(s);
    return st;
  }
  case RV_PK_BOOL: return set_meta(L, key, v->i ? "True" : "False");
  case RV_PK_INT: snprintf(num, sizeof num, "%lld", (long long)v->i); return set_meta(L, key, num);
  case RV_PK_FLOAT: py_float_repr(num, sizeof num, v->f); return set_meta(L, key, num);
  case RV_PK_OBJECT:
    if (numpy_scalar(v, num, sizeof num) == 0) return set_meta(L, key, num);
    if (v->d) return flatten_meta(L, key, v->d, depth + 1); /* e.g. mmcv ConfigDict items */
    return RV_OK;
  case RV_PK_TUPLE: case RV_PK_LIST: {
    sbuf b = {0};
    int bad = to_json(&b, v, depth);
    rv_status st = RV_OK;
    if (b.oom) st = rv_error(L->ctx, RV_ERR_NOMEM, "%s: out of memory", L->name);
    else if (!bad) st = set_meta(L, key, b.p ? b.p : "[]");
    free(b.p);
    return st;
  }
  case RV_PK_DICT:
    for (size_t i = 0; i < v->n; i++) {
      const rv_pk_value *k = v->keys[i];
      char sub[MAX_KEY];
      int w;
      if (k->type == RV_PK_STR && !memchr(k->s, 0, k->len) && k->len < MAX_KEY)
        w = key[0] ? snprintf(sub, sizeof sub, "%s.%.*s", key, (int)k->len, k->s)
                   : snprintf(sub, sizeof sub, "%.*s", (int)k->len, k->s);
      else if (k->type == RV_PK_INT)
        w = key[0] ? snprintf(sub, sizeof sub, "%s.%lld", key, (long long)k->i)
                   : snprintf(sub, sizeof sub, "%lld", (long long)k->i);
      else
        continue;
      if (w < 0 || (size_t)w >= sizeof sub) continue;
      RV_TRY(flatten_meta(L, sub, v->items[i], depth + 1));
    }
    return RV_OK;
  default:
    return RV_OK;
  }
}

/* ---- top level ------------------------------------------------------------------------------- */

static int has_tensor(const rv_pk_value *d) {
  if (!d || d->type != RV_PK_DICT) return 0;
  for (size_t i = 0; i < d->n; i++)
    if (tensor_args(d->items[i])) return 1;
  return 0;
}

static rv_status load_state_dict(loader *L, const rv_pk_value *root) {
  if (root->type == RV_PK_OBJECT && root->d) root = root->d; /* dict subclass */
  if (root->type != RV_PK_DICT)
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: checkpoint holds a %s, not a dict", L->name, rv_pk_type_name(root->type));
  const rv_pk_value *sd = rv_pk_dict_get(root, "state_dict");
  if (sd) {
    if (sd->type == RV_PK_OBJECT && sd->d) sd = sd->d;
    if (sd->type != RV_PK_DICT)
      return rv_error(L->ctx, RV_ERR_FORMAT, "%s: 'state_dict' is a %s, not a dict", L->name, rv_pk_type_name(sd->type));
  } else if (has_tensor(root)) {
    sd = root;
  } else if (has_tensor(rv_pk_dict_get(root, "model"))) {
    sd = rv_pk_dict_get(root, "model");
  } else {
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: checkpoint has no 'state_dict' and no tensors at its top level", L->name);
  }
  size_t skipped = 0;
  for (size_t i = 0; i < sd->n; i++) {
    const rv_pk_value *k = sd->keys[i];
    const rv_pk_value *args = tensor_args(sd->items[i]);
    if (k->type != RV_PK_STR || !args) { skipped++; continue; }
    if (memchr(k->s, 0, k->len))
      return rv_error(L->ctx, RV_ERR_FORMAT, "%s: a state_dict key contains a NUL byte", L->name);
    char *name = dupn(k->s, k->len);
    if (!name) return rv_error(L->ctx, RV_ERR_NOMEM, "%s: out of memory", L->name);
    rv_status st = add_tensor(L, name, args);
    free(name);
    RV_TRY(st);
  }
  if (skipped)
    rv_log(L->ctx, RV_LOG_WARN, "%s: skipped %zu state_dict entries that are not tensors", L->name, skipped);
  if (rv_weights_count(L->w) == 0 && sd->n > 0)
    return rv_error(L->ctx, RV_ERR_FORMAT, "%s: state_dict holds no tensors", L->name);
  const rv_pk_value *meta = rv_pk_dict_get(root, "meta");
  if (meta && sd != root) {
    if (meta->type == RV_PK_OBJECT && meta->d) meta = meta->d;
    if (meta->type == RV_PK_DICT) RV_TRY(flatten_meta(L, "", meta, 0));
  }
  return RV_OK;
}

static rv_status load_zip(rv_weights **out, zip_t *z, uint64_t archive_len, const char *name, rv_ctx *ctx) {
  loader L;
  memset(&L, 0, sizeof L);
  L.z = z;
  L.name = name;
  L.ctx = ctx;
  L.archive_len = archive_len;
  L.w = rv_weights_new(name);
  if (!L.w) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name);
  unsigned char *pkl = NULL;
  size_t pkl_len = 0;
  rv_pickle *pk = NULL;
  const rv_pk_value *root = NULL;
  zip_int64_t idx = -1;
  rv_status st = find_pickle(&L, &idx);
  char ename[600];
  if (st == RV_OK) {
    snprintf(ename, sizeof ename, "%s/data.pkl", L.prefix);
    st = read_entry(&L, idx, ename, SIZE_MAX, PKL_MAX, &pkl, &pkl_len);
  }
  if (st == RV_OK) st = read_byteorder(&L);
  if (st == RV_OK) st = rv_pickle_load(&pk, &root, pkl, pkl_len, name, ctx);
  if (st == RV_OK) st = load_state_dict(&L, root);
  rv_pickle_free(pk);
  rv_free(pkl);
  for (size_t i = 0; i < L.nst; i++) free(L.st[i].key);
  free(L.st);
  free(L.hidx);
  free(L.prefix);
  if (st != RV_OK) {
    rv_weights_free(L.w);
    return st;
  }
  *out = L.w;
  return RV_OK;
}

rv_status rv_pth_load(rv_weights **out, const char *path, rv_ctx *ctx) {
  *out = NULL;
  struct stat sb;
  if (stat(path, &sb) != 0) return rv_error(ctx, RV_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (!S_ISREG(sb.st_mode)) return rv_error(ctx, RV_ERR_IO, "%s: not a regular file", path);
  int err = 0;
  zip_t *z = zip_open(path, ZIP_RDONLY, &err);
  if (!z) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    rv_status st = rv_error(ctx, err == ZIP_ER_OPEN || err == ZIP_ER_READ ? RV_ERR_IO : RV_ERR_FORMAT,
                            "%s: not a readable zip archive: %s", path, zip_error_strerror(&ze));
    zip_error_fini(&ze);
    return st;
  }
  rv_status st = load_zip(out, z, (uint64_t)sb.st_size, path, ctx);
  zip_discard(z);
  return st;
}

rv_status rv_pth_load_buffer(rv_weights **out, const void *buf, size_t len, const char *name, rv_ctx *ctx) {
  *out = NULL;
  if (!name) name = "(memory)";
  zip_error_t ze;
  zip_error_init(&ze);
  static const char empty[1] = {0};
  zip_source_t *src = zip_source_buffer_create(len ? buf : empty, len, 0, &ze);
  zip_t *z = src ? zip_open_from_source(src, ZIP_RDONLY, &ze) : NULL;
  if (!z) {
    rv_status st = rv_error(ctx, RV_ERR_FORMAT, "%s: not a readable zip archive: %s", name, zip_error_strerror(&ze));
    zip_error_fini(&ze);
    if (src) zip_source_free(src);
    return st;
  }
  zip_error_fini(&ze);
  rv_status st = load_zip(out, z, (uint64_t)len, name, ctx);
  zip_discard(z);
  return st;
}
