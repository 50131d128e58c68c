/* `ravlt`: the command-line front end. Global options, then a subcommand (apps/commands.c). */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "apps/commands.h"
#include "apps/mpi_run.h"
#include "apps/outputs.h"
#include "formats/image.h"
#include "kernels/ops.h"

#include <ravlt/version.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* libgomp spins its idle threads (OMP_WAIT_POLICY unset): on a shared or oversubscribed
 * machine the spinning steals the cores the other threads and processes need. libgomp reads
 * the variable when the program starts, before main, so it is set here and the program
 * re-executed once; OMP_WAIT_POLICY set by the user, or RAVLT_OMP_SPIN=1, keeps the default. */
static void omp_passive(char **argv, char **envp) {
  /* envp, not getenv / setenv: this runs before libc has set up environ (early) */
  enum { MAX_ENV = 8192 };
  static char *env[MAX_ENV + 2];
  static char policy[] = "OMP_WAIT_POLICY=passive";
  int n = 0;
  for (; envp && envp[n]; n++) {
    if (!strncmp(envp[n], "OMP_WAIT_POLICY=", 16) || !strncmp(envp[n], "RAVLT_OMP_SPIN=", 15)) return;
    if (n >= MAX_ENV) return;
    env[n] = envp[n];
  }
  env[n] = policy;
  env[n + 1] = NULL;
  /* a stop signal during the exec stays pending (the mask and pending signals survive
   * execve) until the new image has its handlers: 128 + N, never the default action */
  sigset_t stop, old;
  rv_cli_stop_signals(&stop);
  sigprocmask(SIG_BLOCK, &stop, &old);
  execve("/proc/self/exe", argv, env); /* returns only on failure: run on with the default */
  sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Runs before the shared libraries' initialisers (.preinit_array: right after the dynamic
 * loader has mapped them), so that from then on SIGINT, SIGTERM and SIGHUP exit 128 + N
 * (nothing is written yet; a command that writes installs its own, finalising handlers),
 * SIGPIPE is ignored (a closed standard output is a failed write: exit 1 with a message,
 * the other outputs finalised), and the OpenMP re-exec happens before OpenBLAS, OpenCV and
 * libgomp start their threads in an image that is about to be replaced. */
static void early(int argc, char **argv, char **envp) {
  (void)argc;
  rv_cli_signals_startup();
  omp_passive(argv, envp);
}
__attribute__((section(".preinit_array"), used)) static void (*const rv_preinit)(int, char **, char **) = early;

/* 1 if standard output is a pipe or socket whose reader is gone (poll's POLLERR on the
 * write end): the reason of a write that failed earlier, whose errno is long overwritten */
static int stdout_reader_gone(void) {
  struct stat sb;
  if (fstat(STDOUT_FILENO, &sb) != 0 || !(S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode))) return 0;
  struct pollfd p = {.fd = STDOUT_FILENO, .events = POLLOUT};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

/* Standard output is checked at exit: a full disk or a closed descriptor is an error. A
 * command that failed on it already said so (rc != 0 with the error flag set before). */
static int stdout_done(int rc) {
  int earlier = ferror(stdout) != 0;
  errno = 0;
  int bad = fflush(stdout) != 0 || ferror(stdout);
  int err = errno;
  if (!bad && fclose(stdout) != 0 && errno != EBADF) bad = 1, err = errno;
  if (bad && !err && stdout_reader_gone()) err = EPIPE;
  if (!bad || (earlier && rc)) return rc;
  fprintf(stderr, "ravlt: standard output: write failed (%s)\n", err ? strerror(err) : "an earlier write failed");
  return rc ? rc : 1;
}

static void usage(FILE *f) {
  int n;
  const rv_cli_command *tab = rv_cli_commands(&n);
  fprintf(f, "usage: ravlt [--quiet] [--verbose] [--threads N] COMMAND [ARGS...]\n\n"
             "RAVLT (rank-augmented vision linear transformer) dense prediction on CPUs.\n\n"
             "commands:\n");
  for (int i = 0; i < n; i++) fprintf(f, "  %-14s %s\n", tab[i].name, tab[i].summary);
  fprintf(f, "\ncommon options (before or after the command):\n");
  rv_opts_help_globals(f);
  fprintf(f, "  --version             print the version\n");
  fprintf(f, "\n'ravlt COMMAND --help' describes a command. Exit status: 0 done, 1 error (a failed write to\n"
             "standard output included), 2 usage error, 3 (`video`) the stream ended early or stalled,\n"
             "128+N stopped by signal N (SIGINT 130, SIGTERM 143, SIGHUP 129) after finalising the\n"
             "outputs; under mpirun every rank exits with the same status.\n");
}

/* The global options before the command: the same table and rules as after it. */
static const rv_cmd_spec MAIN_SPEC = {"", "", NULL, (const rv_opt[]){RV_OPT_END}, 0, NULL, NULL, 0};

static int run(int argc, char **argv);

int main(int argc, char **argv) {
  int rc = run(argc, argv); /* early() ran first */
  /* a stop signal that interrupted a blocking call (opening a FIFO without a reader) made
   * that call fail: the status is still the signal's */
  return stdout_done(rv_cli_signal_exit_code(rc));
}

static int run(int argc, char **argv) {
  /* OpenBLAS 0.3.21 falls back to generic kernels on CPUs newer than its table (5-6x slower
   * SGEMM); pick the kernels the CPU supports unless OPENBLAS_CORETYPE is set (kernels/ops.h) */
  rv_blas_init();
  int i = 1; /* the options before the command: their extent from the globals' table */
  for (; i < argc && rv_opts_is_option(argv[i]); i += rv_opts_global_span(argc, argv, i)) {
    if (rv_cli_is_help(argv[i])) { usage(stdout); return 0; }
    if (strcmp(argv[i], "--version") == 0) { printf("ravlt %s%s\n", rv_version(), rv_mpi_built() ? " (MPI)" : ""); return 0; }
  }
  rv_opts_result r;
  /* argv[0 .. i-1] only options and their values: the parser moves no positional */
  if (rv_opts_parse(&MAIN_SPEC, NULL, &rv_cli, i, argv, &r)) { fprintf(stderr, "ravlt: %s (see 'ravlt --help')\n", r.err); return 2; }
  if (i < argc && !strcmp(argv[i], "--")) i++;
  if (i >= argc) { usage(stderr); return 2; }
  /* under mpirun/srun only (apps/mpi_run.h): MPI_Init, threads per rank */
  if (rv_mpi_start(&argc, &argv, &rv_cli)) return 2;
  if (rv_mpi_size() > 1 && strcmp(argv[i], "eval") != 0 && strcmp(argv[i], "video") != 0) {
    if (rv_mpi_rank() == 0)
      fprintf(stderr, "ravlt: only 'ravlt eval' and 'ravlt video' run across MPI ranks, not '%s'\n", argv[i]);
    rv_mpi_end();
    return 2;
  }
  /* OpenCV's own process-wide settings: its backend warnings only with --verbose (again
   * after the command's own options, rv_cli_parse) */
  rv_image_set_opencv_log_level(rv_cli.verbose ? 1 : 0);
  if (rv_cli.threads > 0) rv_image_set_opencv_threads(rv_cli.threads);
  int n;
  const rv_cli_command *tab = rv_cli_commands(&n);
  for (int k = 0; k < n; k++) {
    if (strcmp(argv[i], tab[k].name) != 0) continue;
    int rc = tab[k].fn(argc - i, argv + i);
    rv_mpi_end();
    return rc;
  }
  fprintf(stderr, "ravlt: unknown command '%s' (see 'ravlt --help')\n", argv[i]);
  rv_mpi_end();
  return 2;
}
