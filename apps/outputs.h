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

#include "core/rv.h"

/* SIGINT, SIGTERM and SIGHUP set a flag the command polls between inputs (frames); the
 * command then finalises its outputs and exits 128 + the signal. Signal number `1 + extra`
 * ends the process at once (_exit(128 + the first signal)): temporaries may stay (never a
 * half-written file under a final name), rv_out_sweep removes them on the next run. */
void rv_cli_signals_install(int extra);
void rv_cli_signals_restore(void);
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

#endif
