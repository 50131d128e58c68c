/* One model shared by threads, the per-call thread rule and cancellation (core/rv.h "Calls",
 * <ravlt/core.h> rv_ctx_set_threads / rv_ctx_cancel):
 *  - concurrent calls on one model (threads with default contexts) give outputs identical to
 *    single-thread calls: labels, or boxes / scores / labels / masks, bit for bit (the
 *    demo segmentor and detector, the e2e Mask R-CNN fixture);
 *  - the outputs do not depend on the thread count (1 and 3 threads);
 *  - a call on a model with k calls in flight runs on max(1, T / (k + 1)) threads, T the
 *    context's budget or the caller's OpenMP default; the caller's OpenMP setting is restored
 *    afterwards and OpenBLAS's own thread count is never touched (it never threads);
 *  - rv_ctx_cancel from another thread stops a long aug-test call with RV_ERR_CANCELLED, and
 *    the next call on the same context and model runs normally; a cancel made before a call
 *    cancels that call only. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include "models/model.h"

#include <cblas.h>
#include <omp.h>
#include <pthread.h>
#include <time.h>

#define DEMO_SEG RV_TEST_DATA "/../../models/demo_seg.safetensors"
#define DEMO_DET RV_TEST_DATA "/../../models/demo_det.safetensors"

typedef struct {
  int n, mask_bytes;
  float *boxes, *scores;
  int *labels;
  unsigned char *masks;
} dets;

typedef struct {
  const rv_model *m;
  const rv_image *img;
  int threads;      /* rv_ctx_set_threads (0: default) */
  int calls;        /* calls one after another */
  int32_t *labels;  /* segmentors: the last call's */
  dets det;         /* detectors: the last call's */
  rv_status st;
  int used;         /* rv_ctx_last_call_threads of the last call */
  pthread_barrier_t *start;
} job;

static void dets_free(dets *d) {
  free(d->boxes);
  free(d->scores);
  free(d->labels);
  free(d->masks);
  memset(d, 0, sizeof *d);
}

static void run(job *j) {
  rv_ctx *ctx = rv_ctx_create();
  rv_arena *arena = rv_arena_create(0);
  assert_non_null(ctx);
  assert_non_null(arena);
  rv_ctx_set_threads(ctx, j->threads);
  j->st = RV_OK;
  for (int c = 0; c < j->calls && j->st == RV_OK; c++) {
    rv_arena_reset(arena);
    if (rv_model_task(j->m) == RV_TASK_SEGMENT) {
      j->st = rv_model_segment(j->m, j->labels, j->img, NULL, arena, ctx);
    } else {
      rv_detections d;
      j->st = rv_model_detect(j->m, &d, NULL, j->img, arena, ctx);
      if (j->st != RV_OK) break;
      dets_free(&j->det);
      dets *o = &j->det;
      o->n = d.n;
      o->mask_bytes = d.masks ? d.n * d.mask_h * d.mask_w : 0;
      o->boxes = malloc(sizeof(float) * 4 * (size_t)(d.n + 1));
      o->scores = malloc(sizeof(float) * (size_t)(d.n + 1));
      o->labels = malloc(sizeof(int) * (size_t)(d.n + 1));
      o->masks = malloc((size_t)o->mask_bytes + 1);
      memcpy(o->boxes, d.bboxes, sizeof(float) * 4 * (size_t)d.n);
      memcpy(o->scores, d.scores, sizeof(float) * (size_t)d.n);
      memcpy(o->labels, d.labels, sizeof(int) * (size_t)d.n);
      if (o->mask_bytes) memcpy(o->masks, d.masks, (size_t)o->mask_bytes);
    }
  }
  if (j->st != RV_OK) fprintf(stderr, "call failed: %s\n", rv_ctx_errmsg(ctx));
  j->used = rv_ctx_last_call_threads(ctx);
  rv_arena_free(arena);
  rv_ctx_free(ctx);
}

static void *thread_main(void *arg) {
  job *j = arg;
  if (j->start) pthread_barrier_wait(j->start);
  run(j);
  return NULL;
}

static void assert_same(const job *a, const job *b, size_t npix) {
  if (a->labels) {
    assert_memory_equal(a->labels, b->labels, npix * sizeof(int32_t));
    return;
  }
  const dets *x = &a->det, *y = &b->det;
  assert_int_equal(x->n, y->n);
  assert_int_equal(x->mask_bytes, y->mask_bytes);
  if (x->n == 0) return;
  assert_memory_equal(x->boxes, y->boxes, sizeof(float) * 4 * (size_t)x->n);
  assert_memory_equal(x->scores, y->scores, sizeof(float) * (size_t)x->n);
  assert_memory_equal(x->labels, y->labels, sizeof(int) * (size_t)x->n);
  if (x->mask_bytes) assert_memory_equal(x->masks, y->masks, (size_t)x->mask_bytes);
}

static void load(rv_model **m, const char *path, const char *name) {
  rv_ctx *ctx = rv_ctx_create();
  rv_status st = rv_model_load(m, path, name, ctx);
  if (st != RV_OK) fprintf(stderr, "%s: %s\n", path, rv_ctx_errmsg(ctx));
  assert_int_equal(st, RV_OK);
  rv_ctx_free(ctx);
}

static void read_image(rv_image *img, const char *path) {
  rv_ctx *ctx = rv_ctx_create();
  rv_status st = rv_image_read(path, img, ctx);
  if (st != RV_OK) fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx));
  assert_int_equal(st, RV_OK);
  rv_ctx_free(ctx);
}

enum { NT = 4 };

/* A single-thread call, the same at 3 threads; then NT threads with default contexts, `calls`
 * calls each, all at once: every output equal to the single-thread one. */
static void check_model(const char *path, const char *name, const char *image, int calls) {
  rv_model *m;
  load(&m, path, name);
  rv_image img = {0};
  read_image(&img, image);
  const size_t npix = (size_t)img.h * img.w;
  const int seg = rv_model_task(m) == RV_TASK_SEGMENT;
  job ref = {m, &img, 1, 1, seg ? malloc(npix * sizeof(int32_t)) : NULL, {0}, RV_OK, 0, NULL};
  run(&ref);
  assert_int_equal(ref.st, RV_OK);
  assert_int_equal(ref.used, 1);
  if (!seg) assert_true(ref.det.n > 0); /* something to compare */
  {
    const int t = 3;
    job j = {m, &img, t, 1, seg ? malloc(npix * sizeof(int32_t)) : NULL, {0}, RV_OK, 0, NULL};
    run(&j);
    assert_int_equal(j.st, RV_OK);
    assert_int_equal(j.used, t);
    assert_same(&ref, &j, npix);
    free(j.labels);
    dets_free(&j.det);
  }
  job jobs[NT];
  pthread_t tid[NT];
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, NT);
  for (int i = 0; i < NT; i++) {
    jobs[i] = (job){m, &img, 0, calls, seg ? malloc(npix * sizeof(int32_t)) : NULL, {0}, RV_OK, 0, &bar};
    assert_int_equal(pthread_create(&tid[i], NULL, thread_main, &jobs[i]), 0);
  }
  for (int i = 0; i < NT; i++) pthread_join(tid[i], NULL);
  pthread_barrier_destroy(&bar);
  for (int i = 0; i < NT; i++) {
    assert_int_equal(jobs[i].st, RV_OK);
    assert_same(&ref, &jobs[i], npix);
    free(jobs[i].labels);
    dets_free(&jobs[i].det);
  }
  assert_int_equal(rv_model_share(m)->inflight, 0); /* every call counted out */
  free(ref.labels);
  dets_free(&ref.det);
  rv_image_free(&img);
  rv_model_free(m);
}

static void test_concurrent_segmentor(void **state) {
  (void)state;
  check_model(DEMO_SEG, NULL, fixture_path("e2e/upernet/image.jpg"), 2);
}

static void test_concurrent_detector(void **state) {
  (void)state;
  check_model(DEMO_DET, NULL, fixture_path("e2e/retinanet/image.jpg"), 2);
}

static void test_concurrent_mask_rcnn(void **state) {
  (void)state;
  check_model(fixture_path("e2e/mask_rcnn/checkpoint.pth"), NULL, fixture_path("e2e/mask_rcnn/image.jpg"), 1);
}

/* The rule, with k calls held in flight on the model: the call runs on max(1, T / (k + 1))
 * threads; the caller's OpenMP setting comes back; OpenBLAS's thread count stays as it was
 * (a GEMM threaded by OpenBLAS would set it to the caller's count). */
static void test_thread_rule(void **state) {
  (void)state;
  rv_model *m;
  load(&m, DEMO_SEG, NULL);
  rv_image img = {0};
  read_image(&img, fixture_path("e2e/upernet/image.jpg"));
  int32_t *labels = malloc(sizeof(int32_t) * (size_t)img.h * img.w);
  rv_ctx *ctx = rv_ctx_create();
  rv_arena *arena = rv_arena_create(0);
  const int blas0 = openblas_get_num_threads();
  const int saved = omp_get_max_threads();
  static const struct { int budget, omp, held, expect; } cases[] = {
      {8, 5, 0, 8}, {8, 5, 1, 4}, {8, 5, 2, 2}, {8, 5, 3, 2}, {8, 5, 9, 1},
      {0, 6, 0, 6}, {0, 6, 1, 3}, {0, 6, 5, 1}, {0, 3, 0, 3}, {1, 6, 0, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rv_ctx_set_threads(ctx, cases[i].budget);
    omp_set_num_threads(cases[i].omp);
    rv_share *sh = rv_model_share(m);
    __atomic_add_fetch(&sh->inflight, cases[i].held, __ATOMIC_SEQ_CST);
    rv_arena_reset(arena);
    assert_int_equal(rv_model_segment(m, labels, &img, NULL, arena, ctx), RV_OK);
    __atomic_sub_fetch(&sh->inflight, cases[i].held, __ATOMIC_SEQ_CST);
    assert_int_equal(rv_ctx_last_call_threads(ctx), cases[i].expect);
    assert_int_equal(omp_get_max_threads(), cases[i].omp); /* the caller's, restored */
    assert_int_equal(sh->inflight, 0);
  }
  assert_int_equal(openblas_get_num_threads(), blas0);
  omp_set_num_threads(saved);
  rv_arena_free(arena);
  rv_ctx_free(ctx);
  free(labels);
  rv_image_free(&img);
  rv_model_free(m);
}

/* Calls made from inside the application's own OpenMP region (each thread of a team of 2 with
 * its own context and arena): the library's regions nest inactive there (one thread each);
 * outputs as a call made alone, and cancellation still stops a call. */
static void test_calls_inside_a_region(void **state) {
  (void)state;
  rv_model *m;
  load(&m, DEMO_SEG, NULL);
  rv_image img = {0};
  read_image(&img, fixture_path("e2e/upernet/image.jpg"));
  const size_t npix = (size_t)img.h * img.w;
  job ref = {m, &img, 1, 1, malloc(npix * sizeof(int32_t)), {0}, RV_OK, 0, NULL};
  run(&ref);
  assert_int_equal(ref.st, RV_OK);
  int32_t *out[2] = {malloc(npix * sizeof(int32_t)), malloc(npix * sizeof(int32_t))};
  rv_status st[2][2];
  int team = 0;
#pragma omp parallel num_threads(2)
  {
    const int t = omp_get_thread_num();
    rv_ctx *ctx = rv_ctx_create();
    rv_arena *arena = rv_arena_create(0);
    st[t][0] = rv_model_segment(m, out[t], &img, NULL, arena, ctx);
    rv_ctx_cancel(ctx);
    rv_arena_reset(arena);
    st[t][1] = rv_model_segment(m, out[t], &img, NULL, arena, ctx);
    if (t == 0) team = omp_get_num_threads();
    rv_arena_free(arena);
    rv_ctx_free(ctx);
  }
  assert_int_equal(team, 2);
  for (int t = 0; t < 2; t++) {
    assert_int_equal(st[t][0], RV_OK);
    assert_int_equal(st[t][1], RV_ERR_CANCELLED);
    assert_memory_equal(out[t], ref.labels, npix * sizeof(int32_t)); /* the first call's */
  }
  assert_int_equal(rv_model_share(m)->inflight, 0);
  free(out[0]);
  free(out[1]);
  free(ref.labels);
  rv_image_free(&img);
  rv_model_free(m);
}

/* ---- cancellation ---- */

typedef struct {
  const rv_model *m;
  const rv_image *img;
  rv_ctx *ctx;
  rv_arena *arena;
  int32_t *labels;
  rv_status st;
  int started;
} long_call;

static const double MANY_RATIOS[] = {1.0, 1.25, 1.5, 1.75, 2.0, 1.0, 1.25, 1.5, 1.75, 2.0,
                                     1.0, 1.25, 1.5, 1.75, 2.0, 1.0, 1.25, 1.5, 1.75, 2.0,
                                     1.0, 1.25, 1.5, 1.75, 2.0, 1.0, 1.25, 1.5, 1.75, 2.0};

static void *long_main(void *arg) {
  long_call *c = arg;
  rv_seg_run_opts o = {1, MANY_RATIOS, (int)(sizeof MANY_RATIOS / sizeof MANY_RATIOS[0]), 1};
  __atomic_store_n(&c->started, 1, __ATOMIC_SEQ_CST);
  c->st = rv_model_segment(c->m, c->labels, c->img, &o, c->arena, c->ctx);
  return NULL;
}

static void test_cancel(void **state) {
  (void)state;
  assert_string_equal(rv_status_str(RV_ERR_CANCELLED), "cancelled");
  rv_model *m;
  load(&m, DEMO_SEG, NULL);
  rv_image img = {0};
  read_image(&img, fixture_path("e2e/upernet/image.jpg"));
  const size_t npix = (size_t)img.h * img.w;
  int32_t *ref = malloc(sizeof(int32_t) * npix), *labels = malloc(sizeof(int32_t) * npix);
  rv_ctx *ctx = rv_ctx_create();
  rv_arena *arena = rv_arena_create(0);
  assert_int_equal(rv_model_segment(m, ref, &img, NULL, arena, ctx), RV_OK);

  /* from another thread, during a 60-pass aug-test call */
  long_call c = {m, &img, ctx, arena, labels, RV_OK, 0};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, long_main, &c), 0);
  while (!__atomic_load_n(&c.started, __ATOMIC_SEQ_CST)) sched_yield();
  nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
  rv_ctx_cancel(ctx);
  pthread_join(t, NULL);
  assert_int_equal(c.st, RV_ERR_CANCELLED);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "cancelled"));
  assert_int_equal(rv_model_share(m)->inflight, 0);

  /* the next call on the same context and model: normal, the same labels */
  rv_arena_reset(arena);
  memset(labels, 0xff, sizeof(int32_t) * npix);
  assert_int_equal(rv_model_segment(m, labels, &img, NULL, arena, ctx), RV_OK);
  assert_memory_equal(labels, ref, sizeof(int32_t) * npix);

  /* cancelled before the call: that call stops at its first check, the next one runs */
  rv_ctx_cancel(ctx);
  rv_arena_reset(arena);
  assert_int_equal(rv_model_segment(m, labels, &img, NULL, arena, ctx), RV_ERR_CANCELLED);
  rv_arena_reset(arena);
  assert_int_equal(rv_model_segment(m, labels, &img, NULL, arena, ctx), RV_OK);
  assert_memory_equal(labels, ref, sizeof(int32_t) * npix);
  rv_arena_free(arena);
  rv_ctx_free(ctx);
  free(ref);
  free(labels);
  rv_image_free(&img);
  rv_model_free(m);
}

/* A detector: cancelled before the call, then a normal call with the same detections. */
static void test_cancel_detector(void **state) {
  (void)state;
  rv_model *m;
  load(&m, fixture_path("e2e/mask_rcnn/checkpoint.pth"), NULL);
  rv_image img = {0};
  read_image(&img, fixture_path("e2e/mask_rcnn/image.jpg"));
  rv_ctx *ctx = rv_ctx_create();
  rv_arena *arena = rv_arena_create(0);
  rv_detections d;
  assert_int_equal(rv_model_detect(m, &d, NULL, &img, arena, ctx), RV_OK);
  const int n = d.n;
  assert_true(n > 0);
  rv_ctx_cancel(ctx);
  rv_arena_reset(arena);
  assert_int_equal(rv_model_detect(m, &d, NULL, &img, arena, ctx), RV_ERR_CANCELLED);
  rv_arena_reset(arena);
  assert_int_equal(rv_model_detect(m, &d, NULL, &img, arena, ctx), RV_OK);
  assert_int_equal(d.n, n);
  rv_arena_free(arena);
  rv_ctx_free(ctx);
  rv_image_free(&img);
  rv_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_thread_rule),
      cmocka_unit_test(test_concurrent_segmentor),
      cmocka_unit_test(test_concurrent_detector),
      cmocka_unit_test(test_concurrent_mask_rcnn),
      cmocka_unit_test(test_calls_inside_a_region),
      cmocka_unit_test(test_cancel),
      cmocka_unit_test(test_cancel_detector),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
