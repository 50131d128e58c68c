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
