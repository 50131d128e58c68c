/* JSON helpers and thumbnails for the analyses (analysis_util.h). */
#include "datasets/analysis_util.h"

#include "core/image.h"

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
cJSON *rv_jnum_item(double v) {
  char buf[40];
  if (isnan(v) || isinf(v)) return cJSON_CreateNull();
  if (v == (double)(long long)v && fabs(v) < 1e15) /* integers (and -1, 0, 1: most cells) */
    snprintf(buf, sizeof buf, "%lld", (long long)v);
  else {
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
  }
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

cJSON *rv_jarr_num(const double *v, size_t n) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; a && i < n; i++) {
    cJSON *x = rv_jnum_item(v[i]);
    if (!x) {
      cJSON_Delete(a);
      return NULL;
    }
    cJSON_AddItemToArray(a, x);
  }
  return a;
}

cJSON *rv_jarr_i64(const int64_t *v, size_t n) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; a && i < n; i++) {
    char buf[24];
    snprintf(buf, sizeof buf, "%lld", (long long)v[i]);
    cJSON *x = cJSON_CreateRaw(buf);
    if (!x) {
      cJSON_Delete(a);
      return NULL;
    }
    cJSON_AddItemToArray(a, x);
  }
  return a;
}

double rv_jnum(const cJSON *obj, const char *name) {
  const cJSON *x = name ? cJSON_GetObjectItemCaseSensitive(obj, name) : obj;
  return cJSON_IsNumber(x) && isfinite(x->valuedouble) ? x->valuedouble : NAN;
}
