/* Status strings, the context (last error, log hook, threads of a call, cancellation) and
 * aligned allocation. */
#define _POSIX_C_SOURCE 200809L
#include "core/rv.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

struct rv_ctx {
  char errmsg[1024];
  rv_log_fn log_fn;
  void *log_user;
  rv_log_level log_min;
  int threads;
  long long max_pixels; /* 0: RV_DEFAULT_MAX_PIXELS */
  atomic_int cancel;    /* rv_ctx_cancel (lock-free: async-signal-safe) */
  /* the call in progress (core/rv.h "Calls") */
  int depth;            /* nested scopes; the outermost counts */
  rv_share *share;      /* the model's count of calls in flight, or NULL */
  int budget;           /* T */
  int saved;            /* the caller's OpenMP thread count, restored at the end */
  int level;            /* the caller's OpenMP nesting level (deeper: inside our regions) */
  int most;             /* the most threads used so far */
  int last_call;        /* rv_ctx_last_call_threads */
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
  case RV_ERR_CANCELLED: return "cancelled";
  }
  return "unknown status";
}

rv_ctx *rv_ctx_create(void) {
  rv_ctx *c = calloc(1, sizeof *c);
  if (c) {
    c->log_min = RV_LOG_INFO;
    atomic_init(&c->cancel, 0);
  }
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
int rv_ctx_last_call_threads(const rv_ctx *ctx) { return ctx ? ctx->last_call : 0; }
void rv_ctx_cancel(rv_ctx *ctx) {
  if (ctx) atomic_store(&ctx->cancel, 1);
}

/* ---- Calls: threads and cancellation (core/rv.h) ----------------------------------------
 * Why per call and per model: OpenMP's thread count is an ICV of each thread, and a thread
 * that is not an OpenMP thread (the application's own pthreads) starts with the default:
 * all cores. N application threads each running a call at that default started N teams of
 * all cores (N x cores threads, each team's waiting threads spinning on cores the others
 * needed). Dividing T by the calls in flight on the model keeps the sum near T; a model is
 * the natural unit (the library owns no global state, and the calls that compete are those
 * sharing a model's weights: an application running two models at once sizes their
 * contexts itself, docs/embedding.md). OpenBLAS never starts threads of its own here
 * (kernels/gemm.c): it is called on one thread, inside the library's OpenMP teams. */
static int omp_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

static void apply(rv_ctx *ctx) {
  int k = ctx->share ? __atomic_load_n(&ctx->share->inflight, __ATOMIC_RELAXED) : 1;
  int n = ctx->budget / (k > 1 ? k : 1);
  if (n < 1) n = 1;
#ifdef _OPENMP
  if (omp_get_max_threads() != n) omp_set_num_threads(n);
#endif
  if (n > ctx->most) ctx->most = n;
}

void rv_call_begin(rv_ctx *ctx, rv_share *share) {
  if (!ctx || ctx->depth++ > 0) return;
  ctx->saved = omp_threads();
#ifdef _OPENMP
  ctx->level = omp_get_level();
#endif
  ctx->budget = ctx->threads > 0 ? ctx->threads : ctx->saved;
  ctx->share = share;
  ctx->most = 0;
  if (share) __atomic_add_fetch(&share->inflight, 1, __ATOMIC_SEQ_CST);
  apply(ctx);
}

rv_status rv_call_end(rv_ctx *ctx, rv_status st) {
  if (!ctx || ctx->depth == 0 || --ctx->depth > 0) return st;
  if (ctx->share) __atomic_sub_fetch(&ctx->share->inflight, 1, __ATOMIC_SEQ_CST);
  ctx->share = NULL;
#ifdef _OPENMP
  if (omp_get_max_threads() != ctx->saved) omp_set_num_threads(ctx->saved);
#endif
  ctx->last_call = ctx->most;
  ctx->level = 0;
  atomic_store(&ctx->cancel, 0);
  return st;
}

rv_status rv_ctx_check(rv_ctx *ctx) {
  if (!ctx) return RV_OK;
#ifdef _OPENMP
  if (omp_get_level() > ctx->level) return RV_OK; /* a layer run by one thread of a team */
#endif
  if (atomic_load_explicit(&ctx->cancel, memory_order_relaxed))
    return rv_error(ctx, RV_ERR_CANCELLED, "cancelled (rv_ctx_cancel)");
  if (ctx->depth > 0) apply(ctx);
  return RV_OK;
}

void rv_ctx_apply_threads(rv_ctx *ctx) {
  if (!ctx) return;
#ifdef _OPENMP
  if (omp_get_level() > ctx->level) return;
#endif
  if (ctx->depth > 0) {
    apply(ctx);
    return;
  }
#ifdef _OPENMP
  if (ctx->threads > 0) omp_set_num_threads(ctx->threads);
#endif
}

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
