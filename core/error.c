/* Status strings, per-context last error, the log hook and aligned allocation. */
#define _POSIX_C_SOURCE 200809L
#include "core/rv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rv_ctx {
  char errmsg[1024];
  rv_log_fn log_fn;
  void *log_user;
  rv_log_level log_min;
  int threads;
  long long max_pixels; /* 0: RV_DEFAULT_MAX_PIXELS */
};

const char *rv_status_str(rv_status st) {
  switch (st) {
  case RV_OK: return "ok";
  case RV_ERR_IO: return "i/o error";
  case RV_ERR_FORMAT: return "malformed input";
  case RV_ERR_UNSUPPORTED: return "unsupported";
  case RV_ERR_ARG: return "invalid argument";
  case RV_ERR_SHAPE: return "shape mismatch";
  case RV_ERR_NOMEM: return "out of memory";
  case RV_ERR_NOTFOUND: return "not found";
  case RV_ERR_MODEL: return "model mismatch";
  case RV_ERR_INTERRUPTED: return "interrupted";
  case RV_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

rv_ctx *rv_ctx_create(void) {
  rv_ctx *c = calloc(1, sizeof *c);
  if (c) c->log_min = RV_LOG_INFO;
  return c;
}

void rv_ctx_free(rv_ctx *ctx) { free(ctx); }

void rv_ctx_set_log(rv_ctx *ctx, rv_log_fn fn, void *user) {
  ctx->log_fn = fn;
  ctx->log_user = user;
}

void rv_ctx_set_log_level(rv_ctx *ctx, rv_log_level min_level) { ctx->log_min = min_level; }
void rv_ctx_set_threads(rv_ctx *ctx, int n) { ctx->threads = n < 0 ? 0 : n; }
int rv_ctx_threads(const rv_ctx *ctx) { return ctx ? ctx->threads : 0; }
void rv_ctx_set_max_pixels(rv_ctx *ctx, long long n) { ctx->max_pixels = n < 1 ? 0 : n; }
long long rv_ctx_max_pixels(const rv_ctx *ctx) { return ctx && ctx->max_pixels > 0 ? ctx->max_pixels : RV_DEFAULT_MAX_PIXELS; }
const char *rv_ctx_errmsg(const rv_ctx *ctx) { return ctx ? ctx->errmsg : ""; }
void rv_ctx_clear_error(rv_ctx *ctx) { if (ctx) ctx->errmsg[0] = 0; }

rv_status rv_error(rv_ctx *ctx, rv_status st, const char *fmt, ...) {
  if (!ctx) return st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
  va_end(ap);
  /* keep it one line */
  for (char *p = ctx->errmsg; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  return st;
}

void rv_log(rv_ctx *ctx, rv_log_level level, const char *fmt, ...) {
  if (!ctx || !ctx->log_fn || level < ctx->log_min) return;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  ctx->log_fn(ctx->log_user, level, buf);
}

void rv_assert_fail(const char *expr, const char *file, int line) {
  fprintf(stderr, "ravlt: assertion failed: %s (%s:%d)\n", expr, file, line); abort(); /* RV_ASSERT */
}

void *rv_malloc(size_t n) {
  if (n == 0) n = 1;
  size_t r = (n + 63) & ~(size_t)63;
  if (r < n) return NULL;
  return aligned_alloc(64, r);
}

void *rv_calloc(size_t count, size_t size) {
  size_t n;
  if (rv_mul_size(count, size, &n)) return NULL;
  void *p = rv_malloc(n);
  if (p) memset(p, 0, n);
  return p;
}

void rv_free(void *p) { free(p); }

int rv_mul_size(size_t a, size_t b, size_t *out) {
  if (a && b > SIZE_MAX / a) return -1;
  *out = a * b;
  return 0;
}
