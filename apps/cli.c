/* CLI helpers: stderr log hook, error reporting, progress bar. */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "apps/mpi_run.h"
#include "apps/outputs.h"
#include "core/fs.h"
#include "formats/image.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

rv_cli_opts rv_cli;

static void log_stderr(void *user, rv_log_level level, const char *msg) {
  (void)user;
  const char *tag = level == RV_LOG_ERROR ? "error: " : level == RV_LOG_WARN ? "warning: " : level == RV_LOG_DEBUG ? "debug: " : "";
  fprintf(stderr, "ravlt: %s%s\n", tag, msg);
}

rv_ctx *rv_cli_ctx(void) {
  rv_ctx *ctx = rv_ctx_create();
  if (!ctx) return NULL;
  rv_ctx_set_log(ctx, log_stderr, NULL);
  rv_ctx_set_log_level(ctx, rv_cli.quiet ? RV_LOG_WARN : rv_cli.verbose ? RV_LOG_DEBUG : RV_LOG_INFO);
  rv_ctx_set_threads(ctx, rv_cli.threads);
  if (rv_cli.max_pixels > 0) rv_ctx_set_max_pixels(ctx, rv_cli.max_pixels);
  return ctx;
}

int rv_cli_exit_code(rv_status st) { return st == RV_ERR_ARG ? 2 : 1; }

int rv_cli_fail(rv_ctx *ctx, const char *cmd, rv_status st) {
  const char *m = rv_ctx_errmsg(ctx);
  fprintf(stderr, "ravlt %s: %s\n", cmd, (m && *m) ? m : rv_status_str(st));
  return rv_cli_exit_code(st);
}

int rv_cli_fail_once(rv_ctx *ctx, const char *cmd, rv_status st) {
  return rv_mpi_rank() == 0 ? rv_cli_fail(ctx, cmd, st) : rv_cli_exit_code(st);
}

int rv_cli_usage_error(const char *cmd, const char *fmt, ...) {
  if (rv_mpi_rank() != 0) return 2; /* under mpirun every rank parses the same line: one message */
  fprintf(stderr, "ravlt %s: ", cmd);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see 'ravlt %s --help')\n", cmd);
  return 2;
}

int rv_cli_is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }

int rv_cli_parse(const rv_cmd_spec *spec, void *dst, int argc, char **argv, int *npos) {
  rv_opts_result r;
  *npos = 0;
  if (rv_opts_parse(spec, dst, &rv_cli, argc, argv, &r)) {
    if (rv_mpi_rank() == 0) fprintf(stderr, "ravlt %s: %s (see 'ravlt %s --help')\n", spec->name, r.err, spec->name);
    return 2;
  }
  if (r.help) {
    if (rv_mpi_rank() == 0) rv_opts_help(spec, stdout);
    return 0;
  }
  for (int i = 0; i < r.n_deprecated && !rv_cli.quiet && rv_mpi_rank() == 0; i++)
    fprintf(stderr, "ravlt %s: %s is deprecated, use %s\n", spec->name, r.deprecated[i]->alias, r.deprecated[i]->name);
  /* OpenCV's own process-wide settings: its backend warnings only with --verbose */
  rv_image_set_opencv_log_level(rv_cli.verbose ? 1 : 0);
  if (rv_cli.threads > 0) rv_image_set_opencv_threads(rv_cli.threads);
  *npos = r.npos;
  /* before any work: no output over an input (one declaration per command, apps/outputs.c) */
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  rv_status st = rv_cli_io_check(spec, dst, argv, r.npos, ctx);
  int rc = st == RV_OK ? -1 : rv_cli_fail_once(ctx, spec->name, st);
  rv_ctx_free(ctx);
  return rc;
}

int rv_cli_json_stdout(const char *path) { return path && strcmp(path, "-") == 0; }

rv_status rv_cli_json_write(const char *path, const char *text, rv_ctx *ctx) {
  if (rv_cli_json_stdout(path)) {
    errno = 0;
    if (fputs(text, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout) != 0)
      return rv_error(ctx, RV_ERR_IO, "standard output: write failed (%s)", strerror(errno ? errno : EIO));
    return RV_OK;
  }
  rv_out_file o;
  RV_TRY(rv_out_open(&o, path, ctx));
  if (fputs(text, o.f) < 0 || fputc('\n', o.f) < 0) {
    int err = rv_out_errno(&o) ? rv_out_errno(&o) : EIO;
    rv_out_abort(&o);
    return rv_error(ctx, RV_ERR_IO, "%s: write failed (%s)", path, strerror(err));
  }
  return rv_out_close(&o, ctx);
}

double rv_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void draw(rv_progress *p, int final) {
  double el = rv_now() - p->t0;
  int width = 30;
  double frac = p->total > 0 ? (double)p->done / (double)p->total : 0;
  if (frac > 1) frac = 1;
  int fill = (int)(frac * width);
  char bar[64];
  for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
  bar[width] = 0;
  double rate = el > 0 ? (double)p->done / el : 0;
  double eta = (rate > 0 && p->total > p->done) ? (double)(p->total - p->done) / rate : 0;
  fprintf(stderr, "\r%s [%s] %ld/%ld %.2f/s elapsed %.0fs eta %.0fs   ", p->label, bar, p->done,
          p->total, rate, el, eta);
  if (final) fputc('\n', stderr);
  fflush(stderr);
}

void rv_progress_start(rv_progress *p, const char *label, long total) {
  memset(p, 0, sizeof *p);
  p->label = label;
  p->total = total;
  p->t0 = rv_now();
  p->enabled = !rv_cli.quiet && isatty(2);
  if (p->enabled) draw(p, 0);
}

void rv_progress_step(rv_progress *p, long n) {
  p->done += n;
  if (!p->enabled) return;
  double t = rv_now();
  if (t - p->last_draw < 0.1 && p->done < p->total) return;
  p->last_draw = t;
  draw(p, 0);
}

void rv_progress_end(rv_progress *p) {
  if (p->enabled) draw(p, 1);
  p->enabled = 0;
}

const char *rv_progress_break(const rv_progress *p) { return p->enabled ? "\n" : ""; }
