/* The one checkpoint parameter loader. See param.h. */
#include "nn/param.h"

#include "kernels/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

rv_params rv_params_view(const rv_weights *w) {
  rv_params p = {w, NULL};
  return p;
}

rv_status rv_params_init(rv_params *p, const rv_weights *w, rv_ctx *ctx) {
  p->w = w;
  int n = rv_weights_count(w);
  p->used = rv_calloc((size_t)(n > 0 ? n : 1), 1);
  if (!p->used) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", rv_params_path(p));
  return RV_OK;
}

void rv_params_free(rv_params *p) {
  if (!p) return;
  rv_free(p->used);
  p->used = NULL;
}

const char *rv_params_path(const rv_params *p) {
  const char *s = p->w ? rv_weights_path(p->w) : NULL;
  return s && *s ? s : "weights";
}

const rv_wtensor *rv_param_find(const rv_params *p, const char *key) {
  return rv_weights_find(p->w, key);
}

static int index_of(const rv_params *p, const rv_wtensor *t) {
  if (!t || rv_weights_count(p->w) == 0) return -1;
  ptrdiff_t i = t - rv_weights_get(p->w, 0);
  return i >= 0 && i < rv_weights_count(p->w) ? (int)i : -1;
}

void rv_param_mark(rv_params *p, const rv_wtensor *t) {
  int i = index_of(p, t);
  if (p->used && i >= 0) p->used[i] = 1;
}

int rv_param_used(const rv_params *p, const rv_wtensor *t) {
  int i = index_of(p, t);
  return p->used && i >= 0 && p->used[i];
}

void rv_param_shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
  size_t o = 0;
  buf[0] = 0;
  o += (size_t)snprintf(buf + o, cap - o, "[");
  for (int i = 0; i < ndim && o < cap; i++) {
    if (shape[i] < 0) o += (size_t)snprintf(buf + o, cap - o, i ? ", ?" : "?");
    else o += (size_t)snprintf(buf + o, cap - o, i ? ", %lld" : "%lld", (long long)shape[i]);
  }
  if (o < cap) snprintf(buf + o, cap - o, "]");
}

static int is_float(rv_dtype dt) {
  return dt == RV_DT_F32 || dt == RV_DT_F16 || dt == RV_DT_BF16 || dt == RV_DT_F64;
}

rv_status rv_param_get(rv_params *p, const rv_wtensor **out, const char *key, int ndim,
                       const int64_t *shape, rv_ctx *ctx) {
  if (out) *out = NULL;
  const rv_wtensor *t = rv_weights_find(p->w, key);
  char want[128], got[128];
  rv_param_shape_str(want, sizeof want, ndim, shape);
  if (!t)
    return rv_error(ctx, RV_ERR_NOTFOUND, "%s: missing key '%s' (expected shape %s)",
                    rv_params_path(p), key, want);
  int same = t->ndim == ndim;
  for (int i = 0; same && i < ndim; i++)
    same = (shape[i] < 0 && t->shape[i] > 0) || t->shape[i] == shape[i];
  if (!same) {
    rv_param_shape_str(got, sizeof got, t->ndim, t->shape);
    return rv_error(ctx, RV_ERR_MODEL, "%s: key '%s' has shape %s, expected %s",
                    rv_params_path(p), key, got, want);
  }
  if (!is_float(t->dtype))
    return rv_error(ctx, RV_ERR_MODEL, "%s: key '%s' has dtype %s, expected a float type",
                    rv_params_path(p), key, rv_dtype_name(t->dtype));
  rv_param_mark(p, t);
  if (out) *out = t;
  return RV_OK;
}

rv_status rv_param_read(rv_params *p, float *dst, const char *key, int ndim,
                        const int64_t *shape, rv_ctx *ctx) {
  const rv_wtensor *t;
  RV_TRY(rv_param_get(p, &t, key, ndim, shape, ctx));
  rv_wtensor_to_f32(t, dst);
  return RV_OK;
}

rv_status rv_param_alloc(rv_params *p, float **dst, const rv_wtensor **out, const char *key,
                         int ndim, const int64_t *shape, rv_ctx *ctx) {
  *dst = NULL;
  const rv_wtensor *t;
  RV_TRY(rv_param_get(p, &t, key, ndim, shape, ctx));
  size_t n = rv_wtensor_numel(t);
  *dst = rv_malloc((n ? n : 1) * sizeof(float));
  if (!*dst) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory for key '%s'", rv_params_path(p), key);
  rv_wtensor_to_f32(t, *dst);
  if (out) *out = t;
  return RV_OK;
}

rv_status rv_param_bn_fold(rv_params *p, float *w, float *b, int cout, size_t per_out,
                           const char *bn, float eps, rv_ctx *ctx) {
  static const char *const parts[4] = {"running_mean", "running_var", "weight", "bias"};
  float *v = rv_malloc((size_t)4 * (size_t)cout * sizeof(float));
  if (!v) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory for '%s'", rv_params_path(p), bn);
  char key[512];
  const int64_t shape[1] = {cout};
  rv_status st = RV_OK;
  for (int i = 0; i < 4 && st == RV_OK; i++) {
    snprintf(key, sizeof key, "%s.%s", bn, parts[i]);
    st = rv_param_read(p, v + (size_t)i * (size_t)cout, key, 1, shape, ctx);
  }
  const float *var = v + cout;
  for (int c = 0; c < cout && st == RV_OK; c++)
    if (!(var[c] >= 0.0f)) {
      snprintf(key, sizeof key, "%s.running_var", bn);
      st = rv_error(ctx, RV_ERR_MODEL, "%s: key '%s' has a negative or NaN value at index %d",
                    rv_params_path(p), key, c);
    }
  if (st == RV_OK) {
    snprintf(key, sizeof key, "%s.num_batches_tracked", bn);
    rv_param_mark(p, rv_weights_find(p->w, key));
    rv_bn_fold(w, b, cout, per_out, v, v + cout, v + 2 * (size_t)cout, v + 3 * (size_t)cout, eps);
  }
  rv_free(v);
  return st;
}

static int skipped(const char *name, const char *const *skip) {
  size_t n = strlen(name);
  if (n >= 19 && strcmp(name + n - 19, "num_batches_tracked") == 0) return 1;
  for (int i = 0; skip && skip[i]; i++)
    if (strncmp(name, skip[i], strlen(skip[i])) == 0) return 1;
  return 0;
}

int rv_params_count_unused(const rv_params *p, const char *const *skip) {
  int k = 0;
  for (int i = 0; p->used && i < rv_weights_count(p->w); i++)
    if (!p->used[i] && !skipped(rv_weights_get(p->w, i)->name, skip)) k++;
  return k;
}

rv_status rv_params_check_unused(const rv_params *p, const char *const *skip, int strict,
                                 const char *what, rv_ctx *ctx) {
  int k = rv_params_count_unused(p, skip);
  if (k == 0) return RV_OK;
  /* the list, "a, b, c", cut after ~1 KB */
  char list[1024];
  size_t o = 0;
  int shown = 0;
  const char *first = NULL;
  list[0] = 0;
  for (int i = 0; i < rv_weights_count(p->w); i++) {
    const char *name = rv_weights_get(p->w, i)->name;
    if (p->used[i] || skipped(name, skip)) continue;
    if (!first) first = name;
    if (o + strlen(name) + 3 >= sizeof list - 16) break;
    o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", shown ? ", " : "", name);
    shown++;
  }
  if (shown < k) snprintf(list + o, sizeof list - o, ", ... (%d more)", k - shown);
  if (strict)
    return rv_error(ctx, RV_ERR_MODEL, "%s: unexpected key '%s' (%d key%s the %s does not use: %s)",
                    rv_params_path(p), first, k, k == 1 ? "" : "s", what, list);
  rv_log(ctx, RV_LOG_WARN, "%s: %d unexpected key%s the %s does not use: %s", rv_params_path(p), k,
         k == 1 ? "" : "s", what, list);
  return RV_OK;
}
