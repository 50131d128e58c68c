/* Named weight sets: container, safetensors reader (mmap, validated) and writer. */
#define _POSIX_C_SOURCE 200809L
#include "formats/weights.h"
#include "core/fs.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rv_weights {
  char *path;
  rv_wtensor *t;
  int count, cap;
  char **meta_k, **meta_v;
  int meta_count, meta_cap;
  void **owned;
  int owned_count, owned_cap;
  rv_mapped_file file; /* rv_safetensors_open's file; the tensors point into it */
};

static const char *const DT_NAMES[RV_DT_COUNT] = {"F32", "F16", "BF16", "F64", "I64",
                                                  "I32", "I16", "I8",   "U8",  "BOOL"};
static const size_t DT_SIZES[RV_DT_COUNT] = {4, 2, 2, 8, 8, 4, 2, 1, 1, 1};

const char *rv_dtype_name(rv_dtype dt) { return (unsigned)dt < RV_DT_COUNT ? DT_NAMES[dt] : "?"; }
size_t rv_dtype_size(rv_dtype dt) { return (unsigned)dt < RV_DT_COUNT ? DT_SIZES[dt] : 0; }

int rv_dtype_from_name(const char *s, rv_dtype *out) {
  for (int i = 0; i < RV_DT_COUNT; i++)
    if (strcmp(s, DT_NAMES[i]) == 0) { *out = (rv_dtype)i; return 0; }
  return -1;
}

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

rv_weights *rv_weights_new(const char *path) {
  rv_weights *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->path = dupstr(path ? path : "(memory)");
  if (!w->path) { free(w); return NULL; }
  return w;
}

void rv_weights_free(rv_weights *w) {
  if (!w) return;
  for (int i = 0; i < w->count; i++) free(w->t[i].name);
  free(w->t);
  for (int i = 0; i < w->meta_count; i++) { free(w->meta_k[i]); free(w->meta_v[i]); }
  free(w->meta_k);
  free(w->meta_v);
  for (int i = 0; i < w->owned_count; i++) rv_free(w->owned[i]);
  free(w->owned);
  rv_file_unmap(&w->file);
  free(w->path);
  free(w);
}

rv_status rv_weights_adopt(rv_weights *w, void *buf) {
  if (w->owned_count == w->owned_cap) {
    int nc = w->owned_cap ? w->owned_cap * 2 : 16;
    void **o = realloc(w->owned, (size_t)nc * sizeof *o);
    if (!o) return RV_ERR_NOMEM;
    w->owned = o;
    w->owned_cap = nc;
  }
  w->owned[w->owned_count++] = buf;
  return RV_OK;
}

rv_status rv_weights_add(rv_weights *w, const char *name, rv_dtype dt, int ndim,
                         const int64_t *shape, const void *data, size_t nbytes,
                         int take_ownership, rv_ctx *ctx) {
  if (ndim < 0 || ndim > RV_MAX_DIMS)
    return rv_error(ctx, RV_ERR_FORMAT, "%s: tensor '%s' has %d dimensions (max %d)", w->path,
                    name, ndim, RV_MAX_DIMS);
  if (w->count == w->cap) {
    int nc = w->cap ? w->cap * 2 : 64;
    rv_wtensor *t = realloc(w->t, (size_t)nc * sizeof *t);
    if (!t) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", w->path);
    w->t = t;
    w->cap = nc;
  }
  rv_wtensor *t = &w->t[w->count];
  memset(t, 0, sizeof *t);
  t->name = dupstr(name);
  if (!t->name) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", w->path);
  t->dtype = dt;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
  t->data = data;
  t->nbytes = nbytes;
  w->count++;
  if (take_ownership && data && rv_weights_adopt(w, (void *)data) != RV_OK)
    return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", w->path);
  return RV_OK;
}

rv_status rv_weights_set_meta(rv_weights *w, const char *key, const char *value) {
  for (int i = 0; i < w->meta_count; i++)
    if (strcmp(w->meta_k[i], key) == 0) {
      char *v = dupstr(value);
      if (!v) return RV_ERR_NOMEM;
      free(w->meta_v[i]);
      w->meta_v[i] = v;
      return RV_OK;
    }
  if (w->meta_count == w->meta_cap) {
    int nc = w->meta_cap ? w->meta_cap * 2 : 8;
    char **k = realloc(w->meta_k, (size_t)nc * sizeof *k);
    if (!k) return RV_ERR_NOMEM;
    w->meta_k = k;
    char **v = realloc(w->meta_v, (size_t)nc * sizeof *v);
    if (!v) return RV_ERR_NOMEM;
    w->meta_v = v;
    w->meta_cap = nc;
  }
  char *k = dupstr(key), *v = dupstr(value);
  if (!k || !v) { free(k); free(v); return RV_ERR_NOMEM; }
  w->meta_k[w->meta_count] = k;
  w->meta_v[w->meta_count] = v;
  w->meta_count++;
  return RV_OK;
}

int rv_weights_count(const rv_weights *w) { return w->count; }
const rv_wtensor *rv_weights_get(const rv_weights *w, int i) {
  return (i >= 0 && i < w->count) ? &w->t[i] : NULL;
}
const rv_wtensor *rv_weights_find(const rv_weights *w, const char *name) {
  for (int i = 0; i < w->count; i++)
    if (strcmp(w->t[i].name, name) == 0) return &w->t[i];
  return NULL;
}
int rv_weights_meta_count(const rv_weights *w) { return w->meta_count; }
const char *rv_weights_meta_key(const rv_weights *w, int i) {
  return (i >= 0 && i < w->meta_count) ? w->meta_k[i] : NULL;
}
const char *rv_weights_meta(const rv_weights *w, const char *key) {
  for (int i = 0; i < w->meta_count; i++)
    if (strcmp(w->meta_k[i], key) == 0) return w->meta_v[i];
  return NULL;
}
const char *rv_weights_path(const rv_weights *w) { return w->path; }

size_t rv_wtensor_numel(const rv_wtensor *t) {
  size_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
  return n;
}

static float half_to_f32(uint16_t h) {
  uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
  if (e == 0) {
    if (m == 0) u = s;
    else { /* subnormal */
      float f = ldexpf((float)m, -24);
      return s ? -f : f;
    }
  } else if (e == 31) u = s | 0x7f800000u | (m << 13);
  else u = s | ((e + 112) << 23) | (m << 13);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

void rv_wtensor_to_f32(const rv_wtensor *t, float *dst) {
  size_t n = rv_wtensor_numel(t);
  const unsigned char *p = t->data;
  for (size_t i = 0; i < n; i++) {
    switch (t->dtype) {
    case RV_DT_F32: { float v; memcpy(&v, p + 4 * i, 4); dst[i] = v; break; }
    case RV_DT_F64: { double v; memcpy(&v, p + 8 * i, 8); dst[i] = (float)v; break; }
    case RV_DT_F16: { uint16_t v; memcpy(&v, p + 2 * i, 2); dst[i] = half_to_f32(v); break; }
    case RV_DT_BF16: {
      uint16_t v; memcpy(&v, p + 2 * i, 2);
      uint32_t u = (uint32_t)v << 16; float f; memcpy(&f, &u, 4); dst[i] = f; break;
    }
    case RV_DT_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); dst[i] = (float)v; break; }
    case RV_DT_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); dst[i] = (float)v; break; }
    case RV_DT_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); dst[i] = (float)v; break; }
    case RV_DT_I8: dst[i] = (float)(int8_t)p[i]; break;
    case RV_DT_U8: case RV_DT_BOOL: dst[i] = (float)p[i]; break;
    default: dst[i] = 0; break;
    }
  }
}

/* ---- safetensors ------------------------------------------------------------------- */

#define ST_MAX_HEADER ((uint64_t)256 << 20)

typedef struct {
  size_t b, e;
  const char *name;
} st_range;

static int cmp_range(const void *x, const void *y) {
  const st_range *a = x, *c = y;
  if (a->b != c->b) return a->b < c->b ? -1 : 1;
  return a->e < c->e ? -1 : a->e > c->e;
}

static rv_status parse_header(rv_weights *w, const unsigned char *buf, size_t len, rv_ctx *ctx) {
  if (len < 8)
    return rv_error(ctx, RV_ERR_FORMAT, "%s: not a safetensors file (%zu bytes, need an 8-byte header length)", w->path, len);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | buf[i];
  if (hlen < 2 || hlen > ST_MAX_HEADER || hlen > len - 8)
    return rv_error(ctx, RV_ERR_FORMAT, "%s: safetensors header length %llu is impossible for a %zu-byte file",
                    w->path, (unsigned long long)hlen, len);
  const char *hjson = (const char *)buf + 8;
  const unsigned char *data = buf + 8 + hlen;
  size_t data_len = len - 8 - (size_t)hlen;
  cJSON *root = cJSON_ParseWithLength(hjson, (size_t)hlen);
  if (!root || !cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return rv_error(ctx, RV_ERR_FORMAT, "%s: safetensors header is not a JSON object", w->path);
  }
  rv_status st = RV_OK;
  int n_ranges = cJSON_GetArraySize(root);
  st_range *ranges = malloc(sizeof *ranges * (size_t)(n_ranges > 0 ? n_ranges : 1));
  if (!ranges) st = rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", w->path);
  n_ranges = 0;
  for (cJSON *it = root->child; it && st == RV_OK; it = it->next) {
    const char *name = it->string ? it->string : "";
    if (strcmp(name, "__metadata__") == 0) {
      if (!cJSON_IsObject(it)) { st = rv_error(ctx, RV_ERR_FORMAT, "%s: __metadata__ is not an object", w->path); break; }
      for (cJSON *m = it->child; m; m = m->next) {
        if (!cJSON_IsString(m)) { st = rv_error(ctx, RV_ERR_FORMAT, "%s: __metadata__ value '%s' is not a string", w->path, m->string); break; }
        if (rv_weights_set_meta(w, m->string, m->valuestring) != RV_OK) { st = rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", w->path); break; }
      }
      continue;
    }
    cJSON *dt = cJSON_GetObjectItemCaseSensitive(it, "dtype");
    cJSON *sh = cJSON_GetObjectItemCaseSensitive(it, "shape");
    cJSON *of = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
    rv_dtype dtype;
    if (!cJSON_IsObject(it) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of) ||
        cJSON_GetArraySize(of) != 2) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: tensor '%s' entry needs dtype, shape and data_offsets[2]", w->path, name);
      break;
    }
    if (rv_dtype_from_name(dt->valuestring, &dtype)) {
      st = rv_error(ctx, RV_ERR_UNSUPPORTED, "%s: tensor '%s' has unknown dtype '%s'", w->path, name, dt->valuestring);
      break;
    }
    int ndim = cJSON_GetArraySize(sh);
    if (ndim > RV_MAX_DIMS) { st = rv_error(ctx, RV_ERR_FORMAT, "%s: tensor '%s' has %d dimensions", w->path, name, ndim); break; }
    int64_t shape[RV_MAX_DIMS];
    size_t numel = 1;
    int bad = 0;
    for (int i = 0; i < ndim; i++) {
      cJSON *d = cJSON_GetArrayItem(sh, i);
      if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble > 9.0e15 ||
          d->valuedouble != floor(d->valuedouble)) { bad = 1; break; }
      shape[i] = (int64_t)d->valuedouble;
      if (rv_mul_size(numel, (size_t)shape[i], &numel)) { bad = 1; break; }
    }
    size_t nbytes;
    if (bad || rv_mul_size(numel, rv_dtype_size(dtype), &nbytes)) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: tensor '%s' has an invalid shape", w->path, name);
      break;
    }
    double b = cJSON_GetArrayItem(of, 0)->valuedouble, e = cJSON_GetArrayItem(of, 1)->valuedouble;
    if (!cJSON_IsNumber(cJSON_GetArrayItem(of, 0)) || !cJSON_IsNumber(cJSON_GetArrayItem(of, 1)) ||
        b < 0 || e < b || e > (double)data_len || b != floor(b) || e != floor(e)) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: tensor '%s' data_offsets [%.0f, %.0f] outside the %zu-byte data section",
                    w->path, name, b, e, data_len);
      break;
    }
    if ((size_t)(e - b) != nbytes) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: tensor '%s' has %.0f bytes but dtype %s and its shape need %zu",
                    w->path, name, e - b, dt->valuestring, nbytes);
      break;
    }
    if (rv_weights_find(w, name)) { st = rv_error(ctx, RV_ERR_FORMAT, "%s: tensor '%s' appears twice", w->path, name); break; }
    ranges[n_ranges++] = (st_range){(size_t)b, (size_t)e, name};
    st = rv_weights_add(w, name, dtype, ndim, shape, data + (size_t)b, nbytes, 0, ctx);
  }
  /* the format: the tensors' byte ranges tile the data section in order, no overlap, no hole */
  if (st == RV_OK && n_ranges > 0) {
    qsort(ranges, (size_t)n_ranges, sizeof *ranges, cmp_range);
    size_t at = 0;
    for (int i = 0; i < n_ranges && st == RV_OK; i++) {
      if (ranges[i].b < at && i > 0)
        st = rv_error(ctx, RV_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap (data_offsets [%zu, %zu] and [%zu, %zu])", w->path,
                      ranges[i - 1].name, ranges[i].name, ranges[i - 1].b, ranges[i - 1].e, ranges[i].b, ranges[i].e);
      else if (ranges[i].b != at)
        st = rv_error(ctx, RV_ERR_FORMAT, "%s: data_offsets leave bytes %zu..%zu unused before tensor '%s' (the format forbids holes)",
                      w->path, at, ranges[i].b, ranges[i].name);
      at = ranges[i].e;
    }
  }
  free(ranges);
  cJSON_Delete(root);
  return st;
}

rv_status rv_safetensors_parse(rv_weights **out, const void *buf, size_t len, const char *name,
                               rv_ctx *ctx) {
  *out = NULL;
  rv_weights *w = rv_weights_new(name);
  if (!w) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name ? name : "(memory)");
  void *copy = rv_malloc(len ? len : 1);
  if (!copy || rv_weights_adopt(w, copy) != RV_OK) {
    rv_free(copy);
    rv_weights_free(w);
    return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name ? name : "(memory)");
  }
  if (len) memcpy(copy, buf, len);
  rv_status st = parse_header(w, copy, len, ctx);
  if (st != RV_OK) { rv_weights_free(w); return st; }
  *out = w;
  return RV_OK;
}

rv_status rv_safetensors_open(rv_weights **out, const char *path, rv_ctx *ctx) {
  *out = NULL;
  rv_weights *w = rv_weights_new(path);
  if (!w) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", path);
  /* mapped (MAP_POPULATE: loading reads every tensor), or read when it is a pipe */
  rv_status st = rv_file_map(&w->file, path, ctx);
  if (st == RV_OK)
    st = parse_header(w, (const unsigned char *)w->file.data, w->file.len, ctx);
  if (st != RV_OK) {
    rv_weights_free(w);
    return st;
  }
  *out = w;
  return RV_OK;
}

/* ---- writer ------------------------------------------------------------------------ */

rv_status rv_safetensors_write(const char *path, const rv_weights *w, rv_ctx *ctx) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", path);
  if (w->meta_count) {
    cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
    for (int i = 0; m && i < w->meta_count; i++) cJSON_AddStringToObject(m, w->meta_k[i], w->meta_v[i]);
  }
  size_t off = 0;
  for (int i = 0; i < w->count; i++) {
    const rv_wtensor *t = &w->t[i];
    cJSON *e = cJSON_AddObjectToObject(root, t->name);
    if (!e) { cJSON_Delete(root); return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", path); }
    cJSON_AddStringToObject(e, "dtype", rv_dtype_name(t->dtype));
    cJSON *sh = cJSON_AddArrayToObject(e, "shape");
    for (int d = 0; d < t->ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->shape[d]));
    cJSON *of = cJSON_AddArrayToObject(e, "data_offsets");
    cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off));
    cJSON_AddItemToArray(of, cJSON_CreateNumber((double)(off + t->nbytes)));
    off += t->nbytes;
  }
  char *hdr = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!hdr) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", path);
  size_t hlen = strlen(hdr);
  size_t padded = (hlen + 7) & ~(size_t)7; /* align the data section to 8 bytes */

  rv_out_file o;
  rv_status st = rv_out_open(&o, path, ctx);
  if (st != RV_OK) {
    free(hdr);
    return st;
  }
  unsigned char lenb[8];
  for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  int ok = fwrite(lenb, 1, 8, o.f) == 8 && fwrite(hdr, 1, hlen, o.f) == hlen;
  for (size_t i = hlen; ok && i < padded; i++) ok = fputc(' ', o.f) != EOF;
  for (int i = 0; ok && i < w->count; i++)
    if (w->t[i].nbytes) ok = fwrite(w->t[i].data, 1, w->t[i].nbytes, o.f) == w->t[i].nbytes;
  free(hdr);
  if (!ok) {
    rv_out_abort(&o);
    return rv_error(ctx, RV_ERR_IO, "%s: write failed: %s", path, strerror(errno));
  }
  return rv_out_close(&o, ctx);
}
