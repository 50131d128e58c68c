/* Shared pieces of the `ravlt` command line: the context with a stderr log hook, a
 * progress bar, option helpers. Only apps/ prints. */
#ifndef RV_APPS_CLI_H
#define RV_APPS_CLI_H

#include "apps/opts.h"
#include "core/rv.h"
#include <stdio.h>

/* Global CLI flags (--quiet, --verbose, --threads): parsed by main before the command and by
 * the command's rv_cli_parse after it (apps/opts.h). */
typedef rv_opts_globals rv_cli_opts;

extern rv_cli_opts rv_cli; /* set by main() and rv_cli_parse before a command runs */

/* A context whose log hook prints to stderr ("ravlt: warning: ..."), honouring --quiet
 * and --verbose and --threads. */
rv_ctx *rv_cli_ctx(void);
/* Exit status of every command: 0 done, 1 error, 2 usage error (RV_ERR_ARG); `video` adds 3
 * (the stream ended early or stalled) and 130 (Ctrl-C). Under mpirun every rank exits with
 * the same status. */
int rv_cli_exit_code(rv_status st); /* 1, or 2 for RV_ERR_ARG */
/* Print "ravlt <cmd>: <errmsg>" on stderr and return rv_cli_exit_code(st). */
int rv_cli_fail(rv_ctx *ctx, const char *cmd, rv_status st);
/* rv_cli_fail for a status every rank holds (after rv_mpi_agree, whose message on rank 0
 * names the failing rank): printed once, by rank 0; every rank returns the same code. */
int rv_cli_fail_once(rv_ctx *ctx, const char *cmd, rv_status st);
/* Print a one-line usage error and return 2. */
int rv_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 if argv[i] is -h or --help. */
int rv_cli_is_help(const char *arg);
/* Where a command writes its --json FILE: "-" is stdout. rv_cli_json_write writes text
 * (plus a newline) to stdout for "-", else atomically to the file (rv_out_open). */
int rv_cli_json_stdout(const char *path);
rv_status rv_cli_json_write(const char *path, const char *text, rv_ctx *ctx);

/* Progress bar on stderr, drawn only when stderr is a TTY and not --quiet.
 *   rv_progress p; rv_progress_start(&p, "images", total);
 *   for (...) { ...; rv_progress_step(&p, 1); }
 *   rv_progress_end(&p); */
typedef struct {
  const char *label;
  long total, done;
  double t0, last_draw;
  int enabled;
} rv_progress;
void rv_progress_start(rv_progress *p, const char *label, long total);
void rv_progress_step(rv_progress *p, long n);
void rv_progress_end(rv_progress *p);
/* "\n" while a bar is on the terminal line (a message printed mid-run starts with it), else
 * "": no blank line when stderr is not a terminal. */
const char *rv_progress_break(const rv_progress *p);

double rv_now(void); /* monotonic seconds */

#endif
