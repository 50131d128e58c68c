/* Output pre-checks and signal handling of the CLI (apps/outputs.h). */
#define _POSIX_C_SOURCE 200809L
#include "apps/outputs.h"

#include "apps/mpi_run.h"
#include "core/fs.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t g_sig, g_count, g_limit;
static struct sigaction g_old[3];
static const int SIGS[3] = {SIGINT, SIGTERM, SIGHUP};
static int g_installed;

static void on_signal(int sig) {
  if (g_count == 0) g_sig = sig;
  g_count++;
  if (g_count >= g_limit) _exit(128 + g_sig);
}

void rv_cli_signals_install(int extra) {
  g_sig = 0;
  g_count = 0;
  g_limit = 1 + (extra > 0 ? extra : 1);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; i++) sigaction(SIGS[i], &sa, &g_old[i]);
  g_installed = 1;
}

void rv_cli_signals_restore(void) {
  if (!g_installed) return;
  for (int i = 0; i < 3; i++) sigaction(SIGS[i], &g_old[i], NULL);
  g_installed = 0;
}

int rv_cli_stop_signal(void) { return g_sig; }

int rv_cli_signal_exit_code(int rc) { return g_sig ? 128 + g_sig : rc; }

typedef struct {
  const char *out, *from;
} pair;

static int cmp_pair(const void *a, const void *b) {
  const pair *x = a, *y = b;
  int c = strcmp(x->out, y->out);
  return c ? c : (x < y ? -1 : x > y);
}

static void folder_of(char *dir, size_t n, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, n, ".");
  else if (slash == path) snprintf(dir, n, "/");
  else snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

rv_status rv_cli_outputs_check(const char *const *outs, const char *const *from, int n,
                               const char *const *inputs, int nin, rv_ctx *ctx) {
  /* an output over an input */
  struct stat *ins = calloc((size_t)(nin > 0 ? nin : 1), sizeof *ins);
  if (!ins) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  int *have = calloc((size_t)(nin > 0 ? nin : 1), sizeof *have);
  if (!have) {
    free(ins);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; i < nin; i++) have[i] = inputs[i] && stat(inputs[i], &ins[i]) == 0;
  rv_status st = RV_OK;
  char last_dir[4096] = "";
  for (int k = 0; k < n && st == RV_OK; k++) {
    if (!outs[k] || !strcmp(outs[k], "-")) continue;
    struct stat so;
    if (stat(outs[k], &so) == 0) {
      for (int i = 0; i < nin; i++) {
        if (have[i] && ins[i].st_dev == so.st_dev && ins[i].st_ino == so.st_ino && S_ISREG(so.st_mode)) {
          st = rv_error(ctx, RV_ERR_ARG, "%s is the input %s: refusing to write over an input", outs[k], inputs[i]);
          break;
        }
      }
    }
    if (st == RV_OK) st = rv_out_check(outs[k], ctx);
    char target[4096], dir[4096];
    if (st == RV_OK && rv_out_target(target, sizeof target, outs[k]) == 0) {
      folder_of(dir, sizeof dir, target);
      /* temporaries of killed runs; not under mpirun: a rank on another node is "not running" here */
      if (strcmp(dir, last_dir) != 0 && rv_mpi_size() <= 1) {
        rv_out_sweep(dir);
        snprintf(last_dir, sizeof last_dir, "%s", dir);
      }
    }
  }
  free(ins);
  free(have);
  if (st != RV_OK || !from || n < 2) return st;
  /* two inputs, one output name */
  pair *p = malloc(sizeof *p * (size_t)n);
  if (!p) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  int m = 0;
  for (int k = 0; k < n; k++)
    if (outs[k] && strcmp(outs[k], "-")) p[m++] = (pair){outs[k], from[k]};
  qsort(p, (size_t)m, sizeof *p, cmp_pair);
  char msg[900] = "";
  size_t len = 0;
  int clashes = 0;
  for (int k = 1; k < m; k++) {
    if (strcmp(p[k].out, p[k - 1].out) || !strcmp(p[k].from, p[k - 1].from)) continue;
    if (clashes++ < 4 && len < sizeof msg)
      len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s and %s would both write %s", clashes > 1 ? "; " : "",
                              p[k - 1].from, p[k].from, p[k].out);
  }
  free(p);
  if (clashes)
    return rv_error(ctx, RV_ERR_ARG, "%d output name clash(es), nothing written: %s%s (give inputs distinct file names, "
                    "or run them into different output folders)", clashes, msg, clashes > 4 ? "; ..." : "");
  return RV_OK;
}
