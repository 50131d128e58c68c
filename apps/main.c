/* `ravlt`: the command-line front end. Global options, then a subcommand. */
#include "apps/cli.h"
#include "apps/commands.h"
#include "apps/mpi_run.h"
#include "core/image.h"
#include "core/ops.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *name;
  rv_cmd_fn fn;
  const char *summary;
} command;

static const command *commands(int *n) {
  static command tab[] = {
      {"segment", NULL, "semantic segmentation of images (label PNGs, overlays)"},
      {"detect", NULL, "object detection and instance segmentation of images"},
      {"video", NULL, "segment or detect in video files, cameras and streams"},
      {"eval", NULL, "COCO box/mask AP and ADE20K mIoU, from results or by running a model"},
      {"classify", NULL, "ImageNet top-5 classification"},
      {"convert", NULL, "convert a PyTorch .pth checkpoint to safetensors"},
      {"info", NULL, "parameters and multiply-accumulates of a model"},
      {"bench", NULL, "time a model"},
      {"check-fixture", NULL, "compare the model against a golden fixture folder"},
      {"rank", NULL, "rank of RALA KV buffers and attention outputs per block"},
      {"models", NULL, "list the official checkpoints"},
      {"synth", NULL, "generate a synthetic dataset"},
      {"merge", NULL, "merge sharded evaluation results"},
  };
  tab[0].fn = rv_cmd_segment;
  tab[1].fn = rv_cmd_detect;
  tab[2].fn = rv_cmd_video;
  tab[3].fn = rv_cmd_eval;
  tab[4].fn = rv_cmd_classify;
  tab[5].fn = rv_cmd_convert;
  tab[6].fn = rv_cmd_info;
  tab[7].fn = rv_cmd_bench;
  tab[8].fn = rv_cmd_check_fixture;
  tab[9].fn = rv_cmd_rank;
  tab[10].fn = rv_cmd_models;
  tab[11].fn = rv_cmd_synth;
  tab[12].fn = rv_cmd_merge;
  *n = (int)(sizeof tab / sizeof tab[0]);
  return tab;
}

static void usage(FILE *f) {
  int n;
  const command *tab = commands(&n);
  fprintf(f, "usage: ravlt [--quiet] [--verbose] [--threads N] COMMAND [ARGS...]\n\n"
             "RAVLT (rank-augmented vision linear transformer) dense prediction on CPUs.\n\n"
             "commands:\n");
  for (int i = 0; i < n; i++)
    if (tab[i].fn) fprintf(f, "  %-14s %s\n", tab[i].name, tab[i].summary);
  fprintf(f, "\n'ravlt COMMAND --help' describes a command. Exit status: 0 done, 1 error, 2 usage error\n"
             "(`video` adds 3 and 130, see its --help); under mpirun every rank exits with the same status.\n");
}

int main(int argc, char **argv) {
  /* OpenBLAS 0.3.21 falls back to generic kernels on CPUs newer than its table (5-6x slower
   * SGEMM); pick the kernels the CPU supports unless OPENBLAS_CORETYPE is set (core/ops.h) */
  rv_blas_init();
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (rv_cli_is_help(argv[i])) { usage(stdout); return 0; }
    else if (strcmp(argv[i], "--version") == 0) { printf("ravlt 0.1.0%s\n", rv_mpi_built() ? " (MPI)" : ""); return 0; }
    else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) rv_cli.quiet = 1;
    else if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0) rv_cli.verbose = 1;
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      char *end;
      long t = strtol(argv[++i], &end, 10);
      if (*end || t < 0 || t > 4096) { fprintf(stderr, "ravlt: --threads needs a count >= 0\n"); return 2; }
      rv_cli.threads = (int)t;
    } else { fprintf(stderr, "ravlt: unknown option '%s' (see 'ravlt --help')\n", argv[i]); return 2; }
  }
  if (i >= argc) { usage(stderr); return 2; }
  /* under mpirun/srun only (apps/mpi_run.h): MPI_Init, threads per rank */
  if (rv_mpi_start(&argc, &argv)) return 2;
  if (rv_mpi_size() > 1 && strcmp(argv[i], "eval") != 0 && strcmp(argv[i], "video") != 0) {
    if (rv_mpi_rank() == 0)
      fprintf(stderr, "ravlt: only 'ravlt eval' and 'ravlt video' run across MPI ranks, not '%s'\n", argv[i]);
    rv_mpi_end();
    return 2;
  }
  /* OpenCV's own process-wide settings: its backend warnings only with --verbose */
  rv_image_set_opencv_log_level(rv_cli.verbose ? 1 : 0);
  if (rv_cli.threads > 0) rv_image_set_opencv_threads(rv_cli.threads);
  int n;
  const command *tab = commands(&n);
  for (int k = 0; k < n; k++) {
    if (strcmp(argv[i], tab[k].name) != 0) continue;
    if (!tab[k].fn) {
      fprintf(stderr, "ravlt: command '%s' is not part of this build\n", tab[k].name);
      return 2;
    }
    int rc = tab[k].fn(argc - i, argv + i);
    rv_mpi_end();
    return rc;
  }
  fprintf(stderr, "ravlt: unknown command '%s' (see 'ravlt --help')\n", argv[i]);
  rv_mpi_end();
  return 2;
}
