/* One model shared by N threads (not a test): N inferences one after another on the calling
 * thread, then the same N inferences from N threads at once (each thread with its own
 * context and arena, DEFAULT settings: no thread count set), on one rv_model. Each of the
 * 2N slots keeps its context and arena between rounds, as a worker thread would (all
 * warmed up first); the concurrent threads are created for each round. Prints the
 * two wall times, their ratio (concurrent / sequential) and whether every concurrent output
 * equals the sequential one (labels, or boxes / scores / labels / masks), one JSON line per
 * N, with the CPU time (user + system) of each phase: on a machine loaded by other work the
 * wall times wander, the CPU spent says how much work each way costs. Only the public API (<ravlt/ravlt.h>), so the same source builds against any version of
 * the library (bench/bench_shared.sh builds it against main and the working tree and runs
 * both in one run).
 *
 *   cc -O2 -I include -I BUILD/include bench/bench_shared.c BUILD/libravlt.so -lpthread -o bs
 *   bs CHECKPOINT [--name NAME] [--size HxW] [--threads 2,4,8] [--rounds R] [--aug-test]
 *
 * CHECKPOINT: a .pth / .safetensors (the demo models: models/demo_seg.safetensors,
 * models/demo_det.safetensors). --size: the random BGR test image (default 512x512; the
 * model's own test pipeline resizes it). --rounds: each measurement R times, alternating
 * sequential and concurrent; the minimum of each is reported (default 3). */
#define _POSIX_C_SOURCE 200809L
#include <ravlt/ravlt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct {
  int n;
  float *boxes, *scores;
  int *labels;
  unsigned char *masks;
  size_t mask_bytes;
} det_copy;

typedef struct {
  const rv_model *m;
  const rv_image *img;
  rv_seg_run_opts opts;
  int32_t *labels; /* segmentors: h * w */
  det_copy det;    /* detectors */
  rv_status st;
  char err[256];
  pthread_barrier_t *start;
  rv_ctx *ctx;     /* a worker's: created on its first call, default settings */
  rv_arena *arena; /* reset before each call, kept between calls (as a worker keeps it) */
} job;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double cpu_now(void) { /* user + system CPU time of the process */
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_sec +
         1e-6 * (double)u.ru_stime.tv_usec;
}

static void det_free(det_copy *d) {
  free(d->boxes);
  free(d->scores);
  free(d->labels);
  free(d->masks);
  memset(d, 0, sizeof *d);
}

static void run_one(job *j) {
  if (!j->ctx) j->ctx = rv_ctx_create();
  if (!j->arena) j->arena = rv_arena_create(0);
  rv_ctx *ctx = j->ctx;
  rv_arena *arena = j->arena;
  if (!ctx || !arena) {
    j->st = RV_ERR_NOMEM;
    return;
  }
  rv_arena_reset(arena);
  if (rv_model_task(j->m) == RV_TASK_SEGMENT) {
    j->st = rv_model_segment(j->m, j->labels, j->img, &j->opts, arena, ctx);
  } else {
    rv_detections d;
    j->st = rv_model_detect(j->m, &d, NULL, j->img, arena, ctx);
    det_free(&j->det);
    if (j->st == RV_OK) {
      det_copy *c = &j->det;
      c->n = d.n;
      c->boxes = malloc(sizeof(float) * 4 * (size_t)(d.n + 1));
      c->scores = malloc(sizeof(float) * (size_t)(d.n + 1));
      c->labels = malloc(sizeof(int) * (size_t)(d.n + 1));
      c->mask_bytes = d.masks ? (size_t)d.n * d.mask_h * d.mask_w : 0;
      c->masks = malloc(c->mask_bytes + 1);
      if (c->boxes && c->scores && c->labels && c->masks) {
        memcpy(c->boxes, d.bboxes, sizeof(float) * 4 * (size_t)d.n);
        memcpy(c->scores, d.scores, sizeof(float) * (size_t)d.n);
        memcpy(c->labels, d.labels, sizeof(int) * (size_t)d.n);
        if (c->mask_bytes) memcpy(c->masks, d.masks, c->mask_bytes);
      } else {
        j->st = RV_ERR_NOMEM;
      }
    }
  }
  if (j->st != RV_OK) snprintf(j->err, sizeof j->err, "%s", rv_ctx_errmsg(ctx));
}

static void *thread_main(void *arg) {
  job *j = arg;
  pthread_barrier_wait(j->start);
  run_one(j);
  return NULL;
}

static int same(const job *a, const job *b, size_t npix) {
  if (a->labels) return memcmp(a->labels, b->labels, npix * sizeof(int32_t)) == 0;
  const det_copy *x = &a->det, *y = &b->det;
  return x->n == y->n && x->mask_bytes == y->mask_bytes &&
         !memcmp(x->boxes, y->boxes, sizeof(float) * 4 * (size_t)x->n) &&
         !memcmp(x->scores, y->scores, sizeof(float) * (size_t)x->n) &&
         !memcmp(x->labels, y->labels, sizeof(int) * (size_t)x->n) &&
         (!x->mask_bytes || !memcmp(x->masks, y->masks, x->mask_bytes));
}

int main(int argc, char **argv) {
  const char *ckpt = NULL, *name = NULL, *list = "2,4,8";
  int h = 512, w = 512, rounds = 3, aug = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--name") && i + 1 < argc) name = argv[++i];
    else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
      if (sscanf(argv[++i], "%dx%d", &h, &w) != 2 || h < 1 || w < 1) return fprintf(stderr, "bad --size\n"), 2;
    } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) list = argv[++i];
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--aug-test")) aug = 1;
    else if (argv[i][0] != '-' && !ckpt) ckpt = argv[i];
    else return fprintf(stderr, "usage: %s CHECKPOINT [--name NAME] [--size HxW] [--threads 2,4,8] [--rounds R] [--aug-test]\n", argv[0]), 2;
  }
  if (!ckpt || rounds < 1) return fprintf(stderr, "usage: %s CHECKPOINT [options]\n", argv[0]), 2;
  rv_blas_init();
  rv_ctx *ctx = rv_ctx_create();
  rv_model *m = NULL;
  if (rv_model_load(&m, ckpt, name, ctx) != RV_OK) return fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx)), 1;
  rv_image img = {0};
  if (rv_image_alloc(&img, h, w, 3, ctx) != RV_OK) return fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx)), 1;
  uint64_t s = 88172645463325252ULL;
  for (size_t i = 0; i < (size_t)h * w * 3; i++) { /* smooth blobs + noise: a few classes / boxes */
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    size_t p = i / 3, y = p / (size_t)w, x = p % (size_t)w;
    int v = (int)((((x / 64) * 37 + (y / 48) * 91 + (i % 3) * 53) % 200) + (s >> 59));
    img.data[i] = (unsigned char)v;
  }
  const size_t npix = (size_t)h * w;
  const int seg = rv_model_task(m) == RV_TASK_SEGMENT;
  int nmax = 0;
  for (const char *p = list; *p;) {
    int n = atoi(p);
    if (n > nmax) nmax = n;
    p = strchr(p, ',');
    if (!p) break;
    p++;
  }
  if (nmax < 1) return fprintf(stderr, "bad --threads\n"), 2;
  job *seq = calloc((size_t)nmax, sizeof *seq), *con = calloc((size_t)nmax, sizeof *con);
  pthread_t *tid = calloc((size_t)nmax, sizeof *tid);
  for (int i = 0; i < nmax; i++) {
    job *js[2] = {&seq[i], &con[i]};
    for (int k = 0; k < 2; k++) {
      js[k]->m = m;
      js[k]->img = &img;
      js[k]->opts.aug_test = aug;
      js[k]->opts.flip = aug;
      if (seg && !(js[k]->labels = malloc(npix * sizeof(int32_t)))) return 1;
    }
  }
  for (int i = 0; i < nmax; i++) { /* warm-up: every slot's arena grown, OpenBLAS buffers */
    run_one(&seq[i]);
    run_one(&con[i]);
    if (seq[i].st != RV_OK || con[i].st != RV_OK) return fprintf(stderr, "%s%s\n", seq[i].err, con[i].err), 1;
  }
  for (const char *p = list; *p;) {
    int n = atoi(p);
    double tseq = 1e30, tcon = 1e30, cseq = 1e30, ccon = 1e30;
    int ok = 1;
    for (int r = 0; r < rounds; r++) {
      double c0 = cpu_now(), t0 = now();
      for (int i = 0; i < n; i++) run_one(&seq[i]);
      double t1 = now(), c1 = cpu_now();
      if (t1 - t0 < tseq) tseq = t1 - t0;
      if (c1 - c0 < cseq) cseq = c1 - c0;
      pthread_barrier_t bar;
      pthread_barrier_init(&bar, NULL, (unsigned)n + 1);
      double c2 = cpu_now();
      for (int i = 0; i < n; i++) {
        con[i].start = &bar;
        if (pthread_create(&tid[i], NULL, thread_main, &con[i]) != 0) return fprintf(stderr, "pthread_create\n"), 1;
      }
      pthread_barrier_wait(&bar);
      double t2 = now();
      for (int i = 0; i < n; i++) pthread_join(tid[i], NULL);
      double t3 = now(), c3 = cpu_now();
      pthread_barrier_destroy(&bar);
      if (t3 - t2 < tcon) tcon = t3 - t2;
      if (c3 - c2 < ccon) ccon = c3 - c2;
      for (int i = 0; i < n; i++) {
        if (seq[i].st != RV_OK || con[i].st != RV_OK)
          return fprintf(stderr, "inference failed: %s%s\n", seq[i].err, con[i].err), 1;
        ok &= same(&seq[0], &seq[i], npix) && same(&seq[0], &con[i], npix);
      }
    }
    printf("{\"checkpoint\": \"%s\", \"size\": \"%dx%d\", \"aug_test\": %d, \"n\": %d, \"sequential_s\": %.3f, "
           "\"concurrent_s\": %.3f, \"ratio\": %.3f, \"sequential_cpu_s\": %.3f, \"concurrent_cpu_s\": %.3f, "
           "\"cpu_ratio\": %.3f, \"identical\": %s}\n",
           ckpt, h, w, aug, n, tseq, tcon, tcon / tseq, cseq, ccon, ccon / cseq, ok ? "true" : "false");
    fflush(stdout);
    p = strchr(p, ',');
    if (!p) break;
    p++;
  }
  for (int i = 0; i < nmax; i++) {
    free(seq[i].labels);
    free(con[i].labels);
    det_free(&seq[i].det);
    det_free(&con[i].det);
    rv_arena_free(seq[i].arena);
    rv_arena_free(con[i].arena);
    rv_ctx_free(seq[i].ctx);
    rv_ctx_free(con[i].ctx);
  }
  free(seq);
  free(con);
  free(tid);
  rv_image_free(&img);
  rv_model_free(m);
  rv_ctx_free(ctx);
  return 0;
}
