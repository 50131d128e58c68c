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
  RV_ERR_INTERNAL
} rv_status;

const char *rv_status_str(rv_status st);

typedef enum { RV_LOG_DEBUG = 0, RV_LOG_INFO, RV_LOG_WARN, RV_LOG_ERROR } rv_log_level;
typedef void (*rv_log_fn)(void *user, rv_log_level level, const char *msg);

/* A context carries the last error message and the log hook. One context per thread of
 * control; it is not shared between threads concurrently. */
typedef struct rv_ctx rv_ctx;

rv_ctx *rv_ctx_create(void);
void rv_ctx_free(rv_ctx *ctx);
void rv_ctx_set_log(rv_ctx *ctx, rv_log_fn fn, void *user);
void rv_ctx_set_log_level(rv_ctx *ctx, rv_log_level min_level);
/* Number of threads kernels may use (OpenMP and OpenBLAS); 0 = all cores. */
void rv_ctx_set_threads(rv_ctx *ctx, int n);
int rv_ctx_threads(const rv_ctx *ctx);
const char *rv_ctx_errmsg(const rv_ctx *ctx);
void rv_ctx_clear_error(rv_ctx *ctx);

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
