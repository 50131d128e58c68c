/* JSON helpers and thumbnails for the analyses (analysis_util.h). */
#include "datasets/analysis_util.h"

#include "formats/image.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *rv_base64(const char *prefix, const unsigned char *data, size_t n) {
  static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t pl = prefix ? strlen(prefix) : 0, ol = 4 * ((n + 2) / 3);
  char *out = malloc(pl + ol + 1);
  if (!out) return NULL;
  if (pl) memcpy(out, prefix, pl);
  char *o = out + pl;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)data[i] << 16 | (uint32_t)data[i + 1] << 8 | data[i + 2];
    *o++ = A[v >> 18];
    *o++ = A[(v >> 12) & 63];
    *o++ = A[(v >> 6) & 63];
    *o++ = A[v & 63];
  }
  if (i < n) {
    uint32_t v = (uint32_t)data[i] << 16 | (i + 1 < n ? (uint32_t)data[i + 1] << 8 : 0);
    *o++ = A[v >> 18];
    *o++ = A[(v >> 12) & 63];
    *o++ = i + 1 < n ? A[(v >> 6) & 63] : '=';
    *o++ = '=';
  }
  *o = 0;
  return out;
}

rv_status rv_thumb_data_uri(char **uri, const rv_image *img, int max_side, rv_ctx *ctx) {
  *uri = NULL;
  rv_image small = {0};
  const rv_image *src = img;
  int side = img->w > img->h ? img->w : img->h;
  if (max_side > 0 && side > max_side) {
    double s = (double)max_side / side;
    int w = (int)lround(img->w * s), h = (int)lround(img->h * s);
    RV_TRY(rv_image_resize(&small, img, w > 0 ? w : 1, h > 0 ? h : 1, RV_INTERP_AREA, ctx));
    src = &small;
  }
  unsigned char *buf = NULL;
  size_t len = 0;
  rv_status st = rv_image_encode_jpeg(src, 80, &buf, &len, ctx);
  rv_image_free(&small);
  if (st != RV_OK) return st;
  *uri = rv_base64("data:image/jpeg;base64,", buf, len);
  free(buf);
  return *uri ? RV_OK : rv_error(ctx, RV_ERR_NOMEM, "thumbnail: out of memory");
}

/* cJSON prints a double with 15 digits when they read back within an epsilon, which is not
 * always the same double: numbers go in as raw text, the shortest of %.15g / %.16g / %.17g
 * that reads back exactly (strtod), null for NaN and inf. */
/* v written exactly into buf (>= 32 bytes): integers as such, else the shortest of %.15g and
 * %.17g that reads back as v; null for NaN / inf. Returns the length. */
static int num_text(char *buf, double v) {
  if (isnan(v) || isinf(v)) return (int)(memcpy(buf, "null", 5), 4);
  if (v == (double)(long long)v && fabs(v) < 1e15) /* integers (and -1, 0, 1: most cells) */
    return snprintf(buf, 32, "%lld", (long long)v);
  int n = snprintf(buf, 32, "%.15g", v);
  if (strtod(buf, NULL) != v) n = snprintf(buf, 32, "%.17g", v);
  return n;
}

cJSON *rv_jnum_item(double v) {
  char buf[40];
  num_text(buf, v);
  return cJSON_CreateRaw(buf);
}

cJSON *rv_jadd_num(cJSON *obj, const char *name, double v) {
  cJSON *x = rv_jnum_item(v);
  if (x && !cJSON_AddItemToObject(obj, name, x)) {
    cJSON_Delete(x);
    return NULL;
  }
  return x;
}

/* the text of an array with no number (a dimension is 0): the nested empty arrays */
static char *empty_text(char *o, const size_t *dims, int nd) {
  *o++ = '[';
  if (nd > 1)
    for (size_t i = 0; i < dims[0]; i++) {
      if (i) *o++ = ',';
      o = empty_text(o, dims + 1, nd - 1);
    }
  *o++ = ']';
  return o;
}

/* Arrays are one raw item holding their whole text (no item per number: a [10][101][80]
 * precision array is 80,800 numbers). */
char *rv_jtext_num(const double *v, const size_t *dims, int nd) {
  if (nd < 1 || nd > 8) return NULL;
  size_t n = 1, groups = 0; /* numbers, and bracket pairs: 1 + d0 + d0*d1 + ... */
  for (int d = 0; d < nd; d++) {
    groups += n;
    n *= dims[d];
  }
  size_t cap = n * 25 + groups * 3 + 16;
  char *t = malloc(cap), *o = t;
  if (!t) return NULL;
  size_t idx[8] = {0};
  if (n == 0) {
    *empty_text(o, dims, nd) = 0;
    return t;
  }
  for (int d = 0; d < nd; d++) *o++ = '[';
  for (size_t i = 0; i < n; i++) {
    o += num_text(o, v[i]);
    int d = nd - 1; /* close the finished dimensions, open the next ones */
    while (d >= 0 && ++idx[d] == dims[d]) {
      idx[d] = 0;
      *o++ = ']';
      d--;
    }
    if (d < 0) break;
    *o++ = ',';
    for (int e = d + 1; e < nd; e++) *o++ = '[';
  }
  *o = 0;
  return t;
}

cJSON *rv_jarr_num(const double *v, size_t n) {
  char *t = rv_jtext_num(v, &n, 1);
  if (!t) return NULL;
  cJSON *x = cJSON_CreateRaw(t);
  free(t);
  return x;
}

cJSON *rv_jarr_i64(const int64_t *v, size_t n) {
  char *t = malloc(n * 22 + 3), *o = t;
  if (!t) return NULL;
  *o++ = '[';
  for (size_t i = 0; i < n; i++) o += sprintf(o, i ? ",%lld" : "%lld", (long long)v[i]);
  *o++ = ']';
  *o = 0;
  cJSON *x = cJSON_CreateRaw(t);
  free(t);
  return x;
}

double rv_jnum(const cJSON *obj, const char *name) {
  const cJSON *x = name ? cJSON_GetObjectItemCaseSensitive(obj, name) : obj;
  return cJSON_IsNumber(x) && isfinite(x->valuedouble) ? x->valuedouble : NAN;
}
