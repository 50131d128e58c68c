/* ravlt public API: status codes, the context (error message, log hook, threads), the
 * activation arena.
 *
 *   rv_ctx *ctx = rv_ctx_create();
 *   rv_ctx_set_log(ctx, my_log, my_user);          // optional; default: silent
 *   rv_model *m;
 *   if (rv_model_load(&m, "w.pth", NULL, ctx) != RV_OK) fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx));
 *   rv_arena *arena = rv_arena_create(0);           // activation memory, reused per image
 *   ...
 *   rv_arena_free(arena);
 *   rv_ctx_free(ctx);
 *
 * The library never prints and never exits: functions return an rv_status and leave a
 * one-line message in the context (like sqlite's errmsg).
 */
#ifndef RAVLT_CORE_H
#define RAVLT_CORE_H

#include <stddef.h>
#include <stdint.h>

/* Marks a function of the public API: exported from libravlt.so (everything else is built
 * with hidden visibility). */
#ifndef RV_API
#define RV_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  RV_OK = 0,
  RV_ERR_IO,          /* file missing, unreadable, short read, write failure */
  RV_ERR_FORMAT,      /* malformed or corrupt file contents */
  RV_ERR_UNSUPPORTED, /* valid input this build does not handle (legacy .pth, dtype...) */
  RV_ERR_ARG,         /* invalid argument or option value */
  RV_ERR_SHAPE,       /* tensor shape mismatch / impossible size */
  RV_ERR_NOMEM,       /* allocation failed */
  RV_ERR_NOTFOUND,    /* missing tensor / key / entry */
  RV_ERR_MODEL,       /* checkpoint does not match the requested architecture */
  RV_ERR_INTERRUPTED, /* stopped by the caller (signal, cancel) */
  RV_ERR_INTERNAL,
  RV_ERR_CANCELLED    /* the call was cancelled with rv_ctx_cancel (the model stays usable) */
} rv_status;

/* "ok", "I/O error", ... (static strings). */
RV_API const char *rv_status_str(rv_status st);

typedef enum { RV_LOG_DEBUG = 0, RV_LOG_INFO, RV_LOG_WARN, RV_LOG_ERROR } rv_log_level;
typedef void (*rv_log_fn)(void *user, rv_log_level level, const char *msg);

/* A context carries the last error message, the log hook, the thread budget and a
 * cancellation request. One context per thread of control; it is not shared between threads
 * concurrently (except rv_ctx_cancel, which any thread or a signal handler may call). */
typedef struct rv_ctx rv_ctx;

RV_API rv_ctx *rv_ctx_create(void);
RV_API void rv_ctx_free(rv_ctx *ctx);
RV_API void rv_ctx_set_log(rv_ctx *ctx, rv_log_fn fn, void *user);
RV_API void rv_ctx_set_log_level(rv_ctx *ctx, rv_log_level min_level);
/* Threads of a call made with this context (OpenMP and OpenBLAS): its budget T; 0 (the
 * default) = the calling thread's OpenMP default (OMP_NUM_THREADS, else all cores).
 * A call on a model (rv_model_segment, rv_model_detect) shares T with the other calls in
 * flight on the same model: it runs on max(1, T / calls in flight) threads, recomputed
 * between layers, so N threads sharing one model use about T threads in all, never N x T.
 * The outputs do not depend on the thread count (docs/embedding.md: the rule, its
 * exceptions and how to size threads). */
RV_API void rv_ctx_set_threads(rv_ctx *ctx, int n);
RV_API int rv_ctx_threads(const rv_ctx *ctx);
/* The most threads the last call made with ctx ran on (0 before any call). */
RV_API int rv_ctx_last_call_threads(const rv_ctx *ctx);
/* Asks the call running with ctx to stop: it returns RV_ERR_CANCELLED at its next check
 * (between backbone blocks, heads, aug-test passes and sliding-window tiles: well under a
 * second), leaving the model usable. With no call running, the next call made with ctx is
 * the one cancelled. The request is consumed when that call returns, whatever its status.
 * An atomic store: safe from another thread and from a signal handler. */
RV_API void rv_ctx_cancel(rv_ctx *ctx);
/* Largest image (width x height) the image readers decode; checked from the file's header
 * before decoding. Default RV_DEFAULT_MAX_PIXELS (2^27); n < 1 restores it. */
#define RV_DEFAULT_MAX_PIXELS (1LL << 27)
RV_API void rv_ctx_set_max_pixels(rv_ctx *ctx, long long n);
RV_API long long rv_ctx_max_pixels(const rv_ctx *ctx);
RV_API const char *rv_ctx_errmsg(const rv_ctx *ctx);
RV_API void rv_ctx_clear_error(rv_ctx *ctx);

/* Bump allocator for activations. Blocks grow geometrically; rv_arena_reset keeps them,
 * so after the first image a forward pass allocates nothing from the system. Not
 * thread-safe: one arena per stream/thread. initial_bytes: 0 = a default. */
typedef struct rv_arena rv_arena;

RV_API rv_arena *rv_arena_create(size_t initial_bytes);
RV_API void rv_arena_free(rv_arena *a);
RV_API void rv_arena_reset(rv_arena *a);
RV_API size_t rv_arena_used(const rv_arena *a);       /* bytes in use now */
RV_API size_t rv_arena_peak(const rv_arena *a);       /* high-water mark since creation */
RV_API size_t rv_arena_capacity(const rv_arena *a);   /* bytes reserved from the system */

/* OpenBLAS DYNAMIC_ARCH builds fall back to generic SSE3 kernels on CPUs newer than their
 * CPU table (e.g. OpenBLAS 0.3.21 on Emerald Rapids: sgemm 5-7x slower). If so, and
 * OPENBLAS_CORETYPE is unset, this sets it to the best kernel family the CPU supports and
 * re-runs OpenBLAS's kernel selection. Process-wide (environment, OpenBLAS dispatch): call
 * it once at start-up, before other threads run. Returns the OpenBLAS core name in use. */
RV_API const char *rv_blas_init(void);

#ifdef __cplusplus
}
#endif
#endif
