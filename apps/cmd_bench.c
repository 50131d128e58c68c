/* `ravlt bench MODEL [--size HxW] [--runs N] [--random-weights] [--json FILE|-]`:
 * times the RAVLT forward pass (warm-up, then N timed runs). */
#include "apps/bench_models.h"
#include "apps/cli.h"
#include "apps/model_args.h"
#include "apps/image_run.h"
#include "apps/model_run.h"
#include "backbone/ravlt.h"
#include "kernels/ops.h"
#include "models/model.h"
#include "models/seg_post.h"
#include "apps/commands.h"

#include <cblas.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
  rv_model_opts mo; /* --weights, --name (bench's spelling of --model), --precision, --strict */
  const char *json;
  int size[2];
  int runs, warmup, random, backbone;
} bench_opts;

static const rv_opt OPTS[] = {
    RV_MODEL_OPT_WEIGHTS(bench_opts, mo, "a whole dense model (segmentor or detector) instead of MODEL"),
    {"--name", NULL, RV_OPT_STR, offsetof(bench_opts, mo.model), 0, 0, NULL, "NAME",
     "with --weights: architecture when the checkpoint has no config", 0},
    {"--size", NULL, RV_OPT_SIZE, offsetof(bench_opts, size), 1, 65536, NULL, "HxW",
     "input size, height first (default 224x224; --weights: the official\n"
     "test scale, 512x2048 for segmentors, 800x1333 for detectors)", 0},
    {"--runs", NULL, RV_OPT_INT, offsetof(bench_opts, runs), 1, 100000, NULL, "N", "timed runs", 0, "5"},
    {"--warmup", NULL, RV_OPT_INT, offsetof(bench_opts, warmup), 0, 100000, NULL, "N", "untimed runs first", 0, "1"},
    {"--random-weights", NULL, RV_OPT_FLAG, offsetof(bench_opts, random), 0, 0, NULL, NULL, "build a preset without a checkpoint", 0},
    {"--backbone", NULL, RV_OPT_FLAG, offsetof(bench_opts, backbone), 0, 0, NULL, NULL,
     "run the backbone (4 outputs) of a classifier preset/checkpoint", 0},
    {"--json", NULL, RV_OPT_STR, offsetof(bench_opts, json), 0, 0, NULL, "FILE",
     "write {\"median_ms\", \"min_ms\", \"max_ms\", \"gmacs_per_s\", \"peak_rss_mb\",\n"
     "\"start_rss_mb\" (before the model: the shared libraries), \"cpu_ms\"\n"
     "(median process CPU time per run), ...} to FILE ('-': stdout,\n"
     "instead of the text line)", 0},
    RV_MODEL_OPT_PRECISION(bench_opts, mo),
    RV_OPT_STRICT(bench_opts, mo.strict),
    RV_OPT_END};

const rv_cmd_spec rv_spec_bench = {
    "bench", "MODEL [--size HxW] [--runs N] [--warmup N] [--random-weights] [--backbone] [--json FILE|-]\n"
    "NAME --random-weights [--size HxW] [--runs N] [--warmup N] [--json FILE|-]\n"
    "--weights W [--name NAME] [--size HxW] [--runs N] [--warmup N] [--json FILE|-]",
    "Times the RAVLT forward pass on a random input: warm-up runs, then N timed runs;\n"
    "prints median/min/max, GMAC/s (MACs with attention matmuls, see 'ravlt info') and the\n"
    "peak resident memory. MODEL is a checkpoint, or a preset with --random-weights\n"
    "(ravlt-t/s/b/l: classifiers; ravlt-t/s/b/l-backbone or --backbone: the backbone), or a\n"
    "whole model name with --random-weights (below).\n"
    "'ravlt bench sgemm --size N' measures the SGEMM rate (N x N x N) for reference.\n"
    "\n"
    "--weights: a whole dense model (segmentor or detector, models/model.h) end to end on a\n"
    "random BGR image of --size, with the per-stage breakdown of the median run: preprocess,\n"
    "backbone, then neck+head and post (resize + argmax) for segmentors, or neck, rpn, roi,\n"
    "mask and post (the rest: box/mask post-processing) for detectors. Threads: the common\n"
    "--threads N (default all cores).\n"
    "\n"
    "NAME --random-weights, NAME a whole model of 'ravlt models' (semantic-fpn-ravlt-t/s/b/l,\n"
    "upernet-ravlt-s/b/l, retinanet-ravlt-t/s/b/l, mask-rcnn-ravlt-t/s/b/l,\n"
    "cascade-mask-rcnn-ravlt-s/b/l): the same end-to-end run and breakdown without a\n"
    "checkpoint: the backbone preset and the official neck/heads (UperNet 512 channels,\n"
    "Semantic FPN 256/128, 150 classes; FPN 256, RPN, RoI fcs 1024, 80 classes) with random\n"
    "weights (fixed seed), at the official test size by default (segmentors 512x2048;\n"
    "detectors 800x1333, padded to 800x1344 as mmdet does); --size HxW: the image and the\n"
    "network input (no resize; detectors pad to multiples of 32). Detection counts are set to a\n"
    "trained model's on a busy photograph, since random weights give 0 or thousands: Mask\n"
    "R-CNN / Cascade keep their RPN test_cfg (1000 proposals per image) with rcnn score_thr\n"
    "0, so 100 detections, each with its mask pasted; RetinaNet keeps its test_cfg (score_thr\n"
    "0.05, 100 per image) with retina_cls's bias at mmdet's prior 0.01 except one class at\n"
    "0.1, whose 1000 best anchors per level pass: 100 detections. The JSON adds \"model\", \"network_input\" (after resize and pad), \"proposals\" and\n"
    "\"detections\".\n",
    OPTS, 1,
    "If OpenBLAS fell back to its SSE3 kernels on an AVX-512/AVX2 CPU it does not know, its\n"
    "AVX-512/AVX2 kernels are selected (rv_blas_init; set OPENBLAS_CORETYPE to override).\n",
    "  ravlt bench ravlt-s-backbone --random-weights --size 512x512 --threads 8 --runs 5\n"
    "  ravlt bench --weights upernet_ravlt_s.pth --json bench.json\n"
    "  ravlt bench cascade-mask-rcnn-ravlt-s --random-weights --threads 2 --runs 3 --json -\n"
    "  ravlt bench sgemm --size 2048 --json -\n",
    sizeof(bench_opts)};

/* CPU time of the process (all threads): on a loaded machine, cpu_ms / threads is a
 * steadier estimate of the unloaded wall time than the wall time itself. */
static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
         1e-6 * ru.ru_stime.tv_usec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* `ravlt bench sgemm --size N`: the machine's SGEMM rate (rv_gemm_f32, N x N x N), the
 * reference for "percent of SGEMM peak". */
static int bench_sgemm(int n, int threads, int runs, const char *json) {
#ifdef _OPENMP
  if (threads > 0) omp_set_num_threads(threads);
  int nt = omp_get_max_threads();
#else
  int nt = 1;
#endif
  size_t sz = (size_t)n * n;
  float *a = malloc(sizeof(float) * sz), *b = malloc(sizeof(float) * sz), *c = malloc(sizeof(float) * sz);
  if (!a || !b || !c) { free(a); free(b); free(c); fprintf(stderr, "ravlt bench: out of memory\n"); return 1; }
  for (size_t i = 0; i < sz; i++) { a[i] = (float)(i % 17) * 0.01f; b[i] = (float)(i % 13) * 0.02f; }
  rv_gemm_f32(0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  double best = 1e30;
  for (int r = 0; r < runs; r++) {
    double t0 = rv_now();
    rv_gemm_f32(0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    double dt = rv_now() - t0;
    if (dt < best) best = dt;
  }
  double g = (double)n * n * n / best / 1e9;
  int rc = 0;
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "sgemm_n", n);
    cJSON_AddNumberToObject(o, "threads", nt);
    cJSON_AddNumberToObject(o, "gmacs_per_s", round(g * 100) / 100); /* 2 decimals, as printed */
    cJSON_AddStringToObject(o, "blas_core", openblas_get_corename());
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    rv_ctx *ctx = rv_cli_ctx();
    rv_status st = ctx && t ? rv_cli_json_write(json, t, ctx) : RV_ERR_NOMEM;
    free(t);
    if (st != RV_OK) rc = ctx ? rv_cli_fail(ctx, "bench", st) : 1;
    rv_ctx_free(ctx);
  }
  if (!rv_cli_json_stdout(json)) printf("sgemm %dx%dx%d, %d thread%s: %.1f GMAC/s (best of %d), OpenBLAS %s\n", n, n, n, nt, nt == 1 ? "" : "s", g, runs, openblas_get_corename());
  free(a);
  free(b);
  free(c);
  return rc;
}

/* ---- whole dense models (--weights W) ------------------------------------------------ */

enum { ST_PRE, ST_BACKBONE, ST_NECK, ST_RPN, ST_ROI, ST_MASK, ST_HEAD, ST_POST, ST_N };
static const char *const STAGE_NAMES[ST_N] = {"preprocess", "backbone", "neck", "rpn",
                                              "roi", "mask", "head", "post"};

/* Detector trace hook: the time of the last traced tensor of each head family; stage i ends
 * at its last event (the events come in neck, rpn, roi, mask order). */
typedef struct {
  double last[ST_N];
} det_clock;

static void det_trace(void *user, const char *name, const float *data, const int *shape, int ndim) {
  (void)data;
  (void)shape;
  (void)ndim;
  det_clock *c = user;
  int s = -1;
  if (strncmp(name, "neck.", 5) == 0) s = ST_NECK;
  else if (strncmp(name, "rpn.", 4) == 0 || strncmp(name, "retina.", 7) == 0) s = ST_RPN;
  else if (strncmp(name, "roi.", 4) == 0) s = ST_ROI;
  else if (strncmp(name, "mask.", 5) == 0) s = ST_MASK;
  if (s >= 0) c->last[s] = rv_now();
}

/* A whole dense model's parts, from a checkpoint (rv_model) or random (bench_models.h). */
typedef struct {
  rv_task task;
  const char *arch;
  const rv_ravlt *backbone;
  const rv_seg_decoder *decoder;
  rv_seg_test_cfg seg_test;
  const rv_detector *detector;
  rv_preprocess_params pre;
} dense_model;

/* Detector trace hook: stage times (det_trace) and the number of RPN proposals. */
typedef struct {
  det_clock clock;
  int proposals;
} det_watch;

static void det_watch_trace(void *user, const char *name, const float *data, const int *shape, int ndim) {
  det_watch *dw = user;
  det_trace(&dw->clock, name, data, shape, ndim);
  if (strcmp(name, "rpn.proposals") == 0 && ndim >= 1) dw->proposals = shape[0];
}

/* One run of a whole model; st_ms[ST_N] receives the stage times (0 = not present), counts[4]
 * the RPN proposals and final detections (detectors; -1 when not applicable) and the
 * network's input size (after resize and pad). */
static rv_status dense_run(const dense_model *m, const rv_image *img, int32_t *labels, rv_arena *arena,
                           double *st_ms, int *counts, rv_ctx *ctx) {
  for (int i = 0; i < ST_N; i++) st_ms[i] = 0;
  counts[0] = counts[1] = counts[2] = counts[3] = -1;
  rv_arena_mark mark = rv_arena_get_mark(arena);
  rv_tensor x, feats[RV_RAVLT_STAGES];
  rv_img_meta meta;
  rv_status st;
  double t0 = rv_now();
  if ((st = rv_preprocess(&x, &meta, img, &m->pre, arena, ctx)) != RV_OK) goto out;
  double t1 = rv_now();
  st_ms[ST_PRE] = (t1 - t0) * 1e3;
  counts[2] = x.h;
  counts[3] = x.w;
  if (m->task == RV_TASK_SEGMENT) {
    if (m->seg_test.mode != RV_SEG_MODE_WHOLE) { /* slide: windows interleave backbone and head */
      rv_segmentor seg = {m->decoder, rv_seg_ravlt_backbone, (void *)m->backbone, m->seg_test};
      st = rv_seg_simple_test(&seg, labels, x, img->h, img->w, arena, ctx);
      st_ms[ST_HEAD] = (rv_now() - t1) * 1e3;
      goto out;
    }
    int nf = rv_seg_decoder_num_inputs(m->decoder);
    if ((st = rv_seg_ravlt_backbone((void *)m->backbone, feats, nf, x, arena, ctx)) != RV_OK) goto out;
    double t2 = rv_now();
    rv_tensor logits;
    if ((st = rv_seg_decoder_forward(m->decoder, &logits, feats, nf, NULL, arena, ctx)) != RV_OK) goto out;
    double t3 = rv_now();
    if (rv_seg_resize2_argmax(labels, logits.data, logits.c, logits.h, logits.w, x.h, x.w, img->h,
                              img->w, arena) != RV_OK) {
      st = rv_error(ctx, RV_ERR_NOMEM, "out of memory resizing the score planes");
      goto out;
    }
    double t4 = rv_now();
    st_ms[ST_BACKBONE] = (t2 - t1) * 1e3;
    st_ms[ST_HEAD] = (t3 - t2) * 1e3;
    st_ms[ST_POST] = (t4 - t3) * 1e3;
  } else {
    if ((st = rv_ravlt_forward(m->backbone, arena, x, feats, ctx)) != RV_OK) goto out;
    double t2 = rv_now();
    det_watch c = {{{0}}, -1};
    rv_det_trace tr = {det_watch_trace, &c, 1};
    rv_detections det;
    if ((st = rv_detector_forward(m->detector, &det, feats, &meta, &tr, arena, ctx)) != RV_OK) goto out;
    double t3 = rv_now();
    counts[0] = c.proposals;
    counts[1] = det.n;
    st_ms[ST_BACKBONE] = (t2 - t1) * 1e3;
    double prev = t2;
    for (int s = ST_NECK; s <= ST_MASK; s++)
      if (c.clock.last[s] > 0) {
        st_ms[s] = (c.clock.last[s] - prev) * 1e3;
        prev = c.clock.last[s];
      }
    st_ms[ST_POST] = (t3 - prev) * 1e3;
  }
out:
  rv_arena_release(arena, mark);
  return st;
}

/* Peak resident memory so far, MB: at the start of the command it is what the process
 * needed before any model (the shared libraries: ~80 MB, OpenCV's dependency tree). */
static double max_rss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

/* What every timed run shares: the input size, threads, runs and the JSON / text outputs. */
typedef struct {
  int h, w, size_given, threads, nthreads, runs, warmup;
  const char *json, *precision;
  double start_mb; /* peak RSS before the model: the shared libraries */
} bench_args;

/* The timing keys of --json: "threads", "runs", "median_ms", "min_ms", "max_ms", "cpu_ms". */
static void timing_json(cJSON *o, const bench_args *a, double med, double lo, double hi, double cpu_med) {
  cJSON_AddNumberToObject(o, "threads", a->nthreads);
  cJSON_AddNumberToObject(o, "runs", a->runs);
  cJSON_AddNumberToObject(o, "median_ms", med);
  cJSON_AddNumberToObject(o, "min_ms", lo);
  cJSON_AddNumberToObject(o, "max_ms", hi);
  cJSON_AddNumberToObject(o, "cpu_ms", cpu_med);
}

/* The memory keys ("peak_rss_mb", "start_rss_mb", "arena_peak_mb"), "blas_core", and o
 * written to --json (o deleted). */
static rv_status memory_json_write(cJSON *o, const bench_args *a, double rss_mb, const rv_arena *arena, rv_ctx *ctx) {
  cJSON_AddNumberToObject(o, "peak_rss_mb", rss_mb);
  cJSON_AddNumberToObject(o, "start_rss_mb", a->start_mb);
  cJSON_AddNumberToObject(o, "arena_peak_mb", rv_arena_peak(arena) / 1048576.0);
  cJSON_AddStringToObject(o, "blas_core", openblas_get_corename());
  char *t = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  rv_status st = t ? rv_cli_json_write(a->json, t, ctx) : rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  free(t);
  return st;
}

/* path: a checkpoint (name: its --name), or NULL for the random model `name`. */
static int bench_dense(const bench_args *a, const char *path, const char *name, const rv_model_load_opts *lo) {
  const char *cmd = "bench", *json = a->json;
  int h = a->h, w = a->w;
  const int runs = a->runs, warmup = a->warmup, nthreads = a->nthreads;
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  rv_ctx_set_threads(ctx, a->threads);
#ifdef _OPENMP
  if (a->threads > 0) omp_set_num_threads(a->threads); /* the stages are called directly */
#endif
  int rc = 1;
  rv_model *model = NULL;
  rv_bench_model rnd = {0};
  dense_model m = {0};
  rv_arena *arena = NULL;
  rv_image img = {0};
  int32_t *labels = NULL;
  double *tot = NULL, *cpu = NULL, *stg = NULL;
  rv_status st = path ? rv_model_load_ex(&model, path, name, lo, ctx) : rv_bench_model_create(&rnd, name, 1, ctx);
  if (st == RV_OK)
    st = model ? rv_cli_set_precision(model, a->precision, ctx)
               : rv_bench_model_set_precision(&rnd, a->precision, ctx);
  if (st != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
  if (model) {
    m = (dense_model){rv_model_task(model), rv_model_arch(model), rv_model_backbone(model),
                      rv_model_seg_decoder(model), *rv_model_seg_test_cfg(model), rv_model_detector(model),
                      rv_model_preprocess(model)};
  } else {
    m = (dense_model){rnd.task, rnd.arch, rnd.backbone, rnd.decoder, rnd.seg_test, rnd.detector, rnd.pre};
  }
  /* a random model's --size is the network's input (no resize; detectors pad to 32) */
  if (!path && a->size_given) m.pre.scale_w = m.pre.scale_h = 0;
  int seg = m.task == RV_TASK_SEGMENT;
  if (!a->size_given) { h = seg ? 512 : 800; w = seg ? 2048 : 1333; }
  if ((st = rv_image_alloc(&img, h, w, 3, ctx)) != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
  uint64_t seed = 42;
  for (size_t i = 0; i < (size_t)h * w * 3; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    img.data[i] = (unsigned char)(seed >> 56);
  }
  labels = seg ? malloc(sizeof *labels * (size_t)h * w) : NULL;
  tot = malloc(sizeof(double) * (size_t)runs);
  cpu = malloc(sizeof(double) * (size_t)runs);
  stg = malloc(sizeof(double) * (size_t)runs * ST_N);
  arena = rv_arena_create(0);
  if ((seg && !labels) || !tot || !cpu || !stg || !arena) { fprintf(stderr, "ravlt %s: out of memory\n", cmd); goto done; }
  int counts[4] = {-1, -1, -1, -1};
  for (int r = 0; r < warmup + runs; r++) {
    double s_ms[ST_N];
    double c0 = cpu_seconds(), t0 = rv_now();
    st = dense_run(&m, &img, labels, arena, s_ms, counts, ctx);
    double dt = rv_now() - t0;
    if (st != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
    if (r < warmup) continue;
    tot[r - warmup] = dt * 1e3;
    cpu[r - warmup] = (cpu_seconds() - c0) * 1e3;
    memcpy(stg + (size_t)(r - warmup) * ST_N, s_ms, sizeof s_ms);
  }
  /* the median run (by total time) gives the breakdown */
  int med_i = 0;
  {
    int *idx = malloc(sizeof(int) * (size_t)runs);
    if (!idx) { fprintf(stderr, "ravlt %s: out of memory\n", cmd); goto done; }
    for (int i = 0; i < runs; i++) idx[i] = i;
    for (int i = 1; i < runs; i++)
      for (int j = i; j > 0 && tot[idx[j]] < tot[idx[j - 1]]; j--) { int t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t; }
    med_i = idx[runs / 2];
    free(idx);
  }
  double med = tot[med_i];
  double cpu_med = cpu[med_i];
  const double *bd = stg + (size_t)med_i * ST_N;
  qsort(tot, (size_t)runs, sizeof *tot, cmp_double);
  double rss_mb = max_rss_mb();
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "weights", path ? path : "random");
    if (!path) cJSON_AddStringToObject(o, "model", name);
    cJSON_AddStringToObject(o, "arch", m.arch);
    cJSON_AddItemToObject(o, "input", cJSON_CreateIntArray((const int[]){h, w}, 2));
    cJSON_AddItemToObject(o, "network_input", cJSON_CreateIntArray(counts + 2, 2)); /* resized and padded */
    if (counts[0] >= 0) cJSON_AddNumberToObject(o, "proposals", counts[0]);
    if (counts[1] >= 0) cJSON_AddNumberToObject(o, "detections", counts[1]);
    timing_json(o, a, med, tot[0], tot[runs - 1], cpu_med);
    cJSON *so = cJSON_AddObjectToObject(o, "stages_ms");
    for (int s = 0; s < ST_N; s++)
      if (bd[s] > 0) cJSON_AddNumberToObject(so, STAGE_NAMES[s], bd[s]);
    if ((st = memory_json_write(o, a, rss_mb, arena, ctx)) != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
  }
  if (!rv_cli_json_stdout(json)) {
    printf("%s %dx%d (network %dx%d), %d thread%s: median %.1f ms (min %.1f, max %.1f, %d runs), cpu %.1f ms; "
           "peak RSS %.0f MB (%.0f at start; activations %.0f MB), OpenBLAS %s\n"
           "  stages (median run):",
           path ? m.arch : name, h, w, counts[2], counts[3], nthreads, nthreads == 1 ? "" : "s", med, tot[0], tot[runs - 1],
           runs, cpu_med, rss_mb, a->start_mb, rv_arena_peak(arena) / 1048576.0,
           openblas_get_corename());
    for (int s = 0; s < ST_N; s++)
      if (bd[s] > 0) printf(" %s %.1f", STAGE_NAMES[s], bd[s]);
    printf(" ms");
    if (counts[0] >= 0) printf("; %d proposals", counts[0]);
    if (counts[1] >= 0) printf("; %d detections", counts[1]);
    printf("\n");
  }
  rc = 0;
done:
  rv_model_free(model);
  rv_bench_model_free(&rnd);
  rv_arena_free(arena);
  rv_image_free(&img);
  free(labels);
  free(tot);
  free(cpu);
  free(stg);
  rv_ctx_free(ctx);
  return rc;
}

/* A backbone or classifier (a preset with random weights, or a checkpoint) on a random input. */
static int bench_backbone(const bench_args *a, const char *model, int random, int backbone) {
  const char *cmd = "bench", *json = a->json;
  const int h = a->h, w = a->w, runs = a->runs, warmup = a->warmup, nthreads = a->nthreads;
  struct stat sb;
  int preset = 0;
  for (const char *const *pn = rv_ravlt_preset_names(); *pn; pn++) preset |= strcmp(*pn, model) == 0;
  if (random && !preset && stat(model, &sb) != 0) {
    char list[1024];
    rv_bench_model_list(list, sizeof list);
    return rv_cli_usage_error(cmd, "unknown model '%s': with --random-weights MODEL is a backbone preset (ravlt-t/s/b/l, "
                              "ravlt-t/s/b/l-backbone) or a whole model (%s)", model, list);
  }
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  rv_ctx_set_threads(ctx, a->threads);
  int rc = 1;
  rv_ravlt_config cfg;
  rv_weights *wts = NULL;
  rv_ravlt *m = NULL;
  rv_arena *arena = NULL;
  float *x = NULL;
  double *times = NULL, *cpu = NULL;
  rv_status st = rv_model_config(model, &cfg, &wts, ctx);
  if (st != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
  if (!wts && !random) {
    rc = rv_cli_usage_error(cmd, "'%s' is a preset: add --random-weights (or give a checkpoint)", model);
    goto done;
  }
  if (backbone && cfg.classifier) {
    if (wts) {
      rc = rv_cli_usage_error(cmd, "--backbone with a classifier checkpoint is not supported");
      goto done;
    }
    cfg.classifier = 0;
    cfg.num_outs = 4;
    for (int s = 0; s < 4; s++) cfg.out_indices[s] = s;
  }
  st = wts ? rv_ravlt_create(&m, &cfg, wts, NULL, ctx) : rv_ravlt_create_random(&m, &cfg, 1, ctx);
  rv_weights_free(wts);
  wts = NULL;
  if (st == RV_OK) st = rv_cli_set_backbone_precision(m, a->precision, ctx);
  if (st != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
  rv_ravlt_costs cost;
  if ((st = rv_ravlt_count(&cfg, h, w, &cost, ctx)) != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
  size_t n = (size_t)cfg.in_chans * h * w;
  x = malloc(sizeof(float) * n);
  times = malloc(sizeof(double) * (size_t)runs);
  cpu = malloc(sizeof(double) * (size_t)runs);
  arena = rv_arena_create(0);
  if (!x || !times || !cpu || !arena) { fprintf(stderr, "ravlt %s: out of memory\n", cmd); goto done; }
  uint64_t seed = 42;
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    x[i] = (float)((seed >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
  }
  rv_tensor in = {x, 1, cfg.in_chans, h, w};
  for (int r = 0; r < warmup + runs; r++) {
    rv_arena_reset(arena);
    double c0 = cpu_seconds();
    double t0 = rv_now();
    rv_tensor out[4], logits;
    st = cfg.classifier ? rv_ravlt_classify(m, arena, in, &logits, ctx)
                        : rv_ravlt_forward(m, arena, in, out, ctx);
    double dt = rv_now() - t0;
    if (st != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
    if (r >= warmup) {
      times[r - warmup] = dt * 1e3;
      cpu[r - warmup] = (cpu_seconds() - c0) * 1e3;
    }
  }
  qsort(times, (size_t)runs, sizeof *times, cmp_double);
  qsort(cpu, (size_t)runs, sizeof *cpu, cmp_double);
  double cpu_med = runs % 2 ? cpu[runs / 2] : 0.5 * (cpu[runs / 2 - 1] + cpu[runs / 2]);
  double med = runs % 2 ? times[runs / 2] : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
  double macs = (double)rv_ravlt_cost_macs(&cost.total);
  double rss_mb = max_rss_mb();
  double gmacs = macs / 1e9 / (med / 1e3);
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", model);
    cJSON_AddStringToObject(o, "variant", cfg.classifier ? "classifier" : "backbone");
    cJSON_AddItemToObject(o, "input", cJSON_CreateIntArray((const int[]){h, w}, 2));
    timing_json(o, a, med, times[0], times[runs - 1], cpu_med);
    cJSON_AddNumberToObject(o, "gmacs", macs / 1e9);
    cJSON_AddNumberToObject(o, "gmacs_per_s", gmacs);
    if ((st = memory_json_write(o, a, rss_mb, arena, ctx)) != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
  }
  if (!rv_cli_json_stdout(json)) {
    printf("%s %s %dx%d, %d thread%s: median %.1f ms (min %.1f, max %.1f, %d runs), %.3f GMACs "
           "-> %.1f GMAC/s, peak RSS %.0f MB (%.0f at start; activations %.0f MB), OpenBLAS %s\n",
           model, cfg.classifier ? "classifier" : "backbone", h, w, nthreads,
           nthreads == 1 ? "" : "s", med, times[0], times[runs - 1], runs, macs / 1e9,
           gmacs, rss_mb, a->start_mb, rv_arena_peak(arena) / 1048576.0, openblas_get_corename());
  }
  rc = 0;
done:
  rv_weights_free(wts);
  rv_ravlt_free(m);
  rv_arena_free(arena);
  free(x);
  free(times);
  free(cpu);
  rv_ctx_free(ctx);
  return rc;
}

int rv_cmd_bench(int argc, char **argv) {
  const double start_mb = max_rss_mb();
  const char *cmd = "bench";
  bench_opts bo = {0};
  int npos, prc = rv_cli_parse(&rv_spec_bench, &bo, argc, argv, &npos);
  if (prc >= 0) return prc;
  const char *model = npos ? argv[0] : NULL, *weights = bo.mo.weights, *name = bo.mo.model;
  const int size_given = bo.size[0] > 0, random = bo.random, backbone = bo.backbone;
  bench_args a = {size_given ? bo.size[0] : 224, size_given ? bo.size[1] : 224, size_given, rv_cli.threads, rv_cli.threads,
                  bo.runs, bo.warmup, bo.json, bo.mo.precision, start_mb};
#ifdef _OPENMP
  if (a.nthreads == 0) a.nthreads = omp_get_max_threads();
#endif
  if (weights) {
    if (model) return rv_cli_usage_error(cmd, "give either MODEL or --weights W, not both");
    if (random || backbone) return rv_cli_usage_error(cmd, "--random-weights/--backbone do not apply to --weights");
    rv_blas_init();
    return bench_dense(&a, weights, name, &(rv_model_load_opts){bo.mo.strict});
  }
  if (bo.mo.strict) return rv_cli_usage_error(cmd, "--strict needs --weights (a checkpoint loaded as a whole model)");
  if (name) return rv_cli_usage_error(cmd, "--name needs --weights");
  if (!model) return rv_cli_usage_error(cmd, "missing MODEL (a checkpoint, or a preset with --random-weights)");
  rv_blas_init(); /* OpenBLAS kernels for this CPU (kernels/ops.h); main may have done it */
  if (strcmp(model, "sgemm") == 0) return bench_sgemm(a.h, a.threads, a.runs, a.json);
  if (random && rv_bench_is_model_name(model)) { /* a whole dense model (bench_models.h) */
    if (backbone) return rv_cli_usage_error(cmd, "--backbone applies to classifier presets, not to '%s'", model);
    return bench_dense(&a, NULL, model, NULL);
  }
  if (rv_bench_is_model_name(model))
    return rv_cli_usage_error(cmd, "'%s' is a whole model: add --random-weights (or give its checkpoint: --weights W)", model);
  return bench_backbone(&a, model, random, backbone);
}
