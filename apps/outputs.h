/* What every file-writing command checks before its first input, and how it stops on a
 * signal. The writing itself is core/fs.h's rv_out_* (temporary + rename, links written
 * through, devices written in place, "-" = stdout).
 *
 *   rv_cli_signals_install(1);                 // SIGINT, SIGTERM, SIGHUP only set a flag
 *   RV_TRY(rv_cli_outputs_check(outs, from, n, inputs, nin, ctx));   // before any work
 *   for (...) { if (rv_cli_stop_signal()) break; ... }                // finalise, then
 *   return rv_cli_signal_exit_code(rc);        // 128 + the signal when one came
 */
#ifndef RV_APPS_OUTPUTS_H
#define RV_APPS_OUTPUTS_H

#include "apps/opts.h"
#include "core/rv.h"

#include <signal.h>

/* SIGINT, SIGTERM and SIGHUP set a flag the command polls between inputs (frames); the
 * command then finalises its outputs and exits 128 + the signal. Signal number `1 + extra`
 * ends the process at once (_exit(128 + the first signal)): temporaries may stay (never a
 * half-written file under a final name), rv_out_sweep removes them on the next run. */
void rv_cli_signals_install(int extra);
void rv_cli_signals_restore(void);
/* At the start of main: SIGINT, SIGTERM and SIGHUP _exit(128 + N) at once (before a command
 * installs its own handlers; rv_cli_signals_restore returns to these), SIGPIPE ignored, and
 * those signals unblocked (blocked across the OpenMP re-exec: a signal then is pending, not
 * lost). rv_cli_stop_signals: the set {SIGINT, SIGTERM, SIGHUP}. */
void rv_cli_signals_startup(void);
void rv_cli_stop_signals(sigset_t *set);
/* The first signal received since install, or 0. */
int rv_cli_stop_signal(void);
/* rc, or 128 + the first signal when one came. */
int rv_cli_signal_exit_code(int rc);

/* Before any work: every output path writable (rv_out_check), none of them an input (same
 * device and inode: "OUT is the input IN"), no two inputs writing the same output (from[i],
 * may be NULL: the input that produces outs[i]; clashes are listed, RV_ERR_ARG). Errors
 * name the user's paths. Also removes the temporaries of killed runs (rv_out_sweep) in the
 * outputs' folders. */
rv_status rv_cli_outputs_check(const char *const *outs, const char *const *from, int n,
                               const char *const *inputs, int nin, rv_ctx *ctx);

/* X.json -> X<suffix> (e.g. ".segm.json", ".shard.json"); other names get the suffix appended:
 * the files written beside an output. */
void rv_cli_sibling_path(char *out, size_t n, const char *path, const char *suffix);

/* ---- what every command reads and writes: one declaration, one rule ----
 * Each command's path options and positionals are declared once, in the table of
 * apps/outputs.c (rv_cli_io_decls): an input (a file, or a folder whose files of the given
 * extensions it reads), an output file, an output folder, or not a path. rv_cli_parse runs
 * rv_cli_io_check on every command line before the command starts: an output that is one
 * of the inputs (the same device and inode: a hard link, a symbolic link, "./x", another
 * spelling; or an existing file of an input folder that the command reads) is refused,
 * RV_ERR_ARG, exit 2, naming both, before any work; then the temporaries of killed runs are
 * swept from every output's folder (rv_out_sweep). Outputs derived from the inputs (one per
 * image in --out-dir) are the command's to check, with rv_cli_outputs_check. */
typedef enum { RV_IO_NONE = 0, RV_IO_IN, RV_IO_OUT, RV_IO_OUT_DIR } rv_io_role;
typedef struct {
  const char *cmd;      /* the spec's name: "convert", "eval coco" */
  const char *arg;      /* "--json"; positionals: "#1", "#2", ... or "#*" (every other one) */
  rv_io_role role;
  const char *siblings; /* '|'-separated suffixes of files read / written with it: an output
                         * R.json with ".segm.json" also writes R.segm.json (rv_cli_sibling_path);
                         * an input P.json / P.shard.json with ".json|.shard.json" reads both */
  const char *dir_exts; /* RV_IO_IN given a folder: extensions of the files read in it
                         * (case-insensitive, '|'-separated; NULL: every file) */
} rv_io_decl;
/* The table (NULL-terminated by cmd == NULL) and its entry for (cmd, arg), or NULL. */
const rv_io_decl *rv_cli_io_decls(void);
const rv_io_decl *rv_cli_io_decl(const char *cmd, const char *arg);
/* The rule above for the parsed command line (dst: the option struct or NULL; pos: the
 * positionals). RV_OK, or RV_ERR_ARG with the message in ctx. */
rv_status rv_cli_io_check(const rv_cmd_spec *spec, const void *dst, char *const *pos, int npos, rv_ctx *ctx);

#endif
