/* ravlt core: status codes, the per-context error message, the log hook, asserts.
 *
 *   rv_ctx *ctx = rv_ctx_create();
 *   rv_ctx_set_log(ctx, my_log, my_user);          // optional; default: silent
 *   rv_status st = rv_safetensors_open(&f, "w.safetensors", ctx);
 *   if (st != RV_OK) fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx));
 *   rv_ctx_free(ctx);
 *
 * The library never prints and never exits: functions return an rv_status and leave a
 * one-line message in the context (like sqlite's errmsg). Programmer errors (violated
 * preconditions) go through RV_ASSERT, which aborts with file:line.
 */
#ifndef RV_CORE_RV_H
#define RV_CORE_RV_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

/* The public types and functions (rv_status, rv_log_fn, rv_ctx, rv_arena, ...) are defined
 * once, in the installed header; this file adds the library's internal helpers. */
#include <ravlt/core.h>

/* Marks a function of the public API (declared in the headers under include/ravlt/): exported from
 * libravlt.so, which is built with hidden visibility. */
#ifndef RV_API
#define RV_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Record an error (printf-style, one line) and return st. ctx may be NULL. */
rv_status rv_error(rv_ctx *ctx, rv_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Send a message to the log hook. ctx may be NULL (then dropped). */
void rv_log(rv_ctx *ctx, rv_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void rv_assert_fail(const char *expr, const char *file, int line);
#define RV_ASSERT(e) ((e) ? (void)0 : rv_assert_fail(#e, __FILE__, __LINE__))

/* Propagate a non-OK status. */
#define RV_TRY(expr) do { rv_status rv_try_st_ = (expr); if (rv_try_st_ != RV_OK) return rv_try_st_; } while (0)

/* ---- Calls: threads and cancellation (core/error.c) --------------------------------------
 * rv_share counts the calls in flight on one shareable object (each rv_model has one; never
 * a global). A call scope, opened by the model's entry points (rv_model_segment / detect),
 * counts itself in and sets the calling thread's OpenMP thread count (an ICV of that thread
 * alone, which OpenBLAS's OpenMP build also reads) to max(1, T / in flight), T the context's
 * budget (rv_ctx_set_threads, else the thread's OpenMP default at the call's start).
 * rv_ctx_check, called between layers, returns RV_ERR_CANCELLED once rv_ctx_cancel was
 * called, and otherwise applies the rule again with the count of that moment: a call that
 * started alone gives threads back as others arrive, and takes them back as they leave.
 * Never call it between a kernel's scratch allocation (sized by omp_get_max_threads()) and
 * that kernel's parallel region. rv_call_end restores the caller's thread count, records the
 * most threads the call used (rv_ctx_last_call_threads) and consumes a cancellation.
 * Nested scopes (a Python entry point around rv_model_segment) count once. */
typedef struct {
  int inflight; /* __atomic builtins only */
} rv_share;
void rv_call_begin(rv_ctx *ctx, rv_share *share);
/* Closes the scope; returns st (for `return rv_call_end(ctx, st);`). */
rv_status rv_call_end(rv_ctx *ctx, rv_status st);
rv_status rv_ctx_check(rv_ctx *ctx);
/* At the start of a layer-level entry (backbone forward, segmentor / detector test): inside
 * a call scope, the rule above; outside one (the CLI's bench, tools calling the parts),
 * rv_ctx_threads(ctx) threads when set, else the thread's setting is left alone. */
void rv_ctx_apply_threads(rv_ctx *ctx);

/* Aligned heap allocation (64 bytes), zeroed for calloc. NULL on failure or overflow. */
void *rv_malloc(size_t n);
void *rv_calloc(size_t count, size_t size);
void rv_free(void *p);
/* a*b with overflow detection: returns 0 and sets *out on success, -1 on overflow. */
int rv_mul_size(size_t a, size_t b, size_t *out);

#ifdef __cplusplus
}
#endif
#endif
