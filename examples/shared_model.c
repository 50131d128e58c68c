/* One model shared by worker threads, each with its own context and arena, default thread
 * settings; Ctrl-C cancels the calls in progress (docs/embedding.md).
 *
 *   cc shared_model.c -o shared_model $(pkg-config --cflags --libs ravlt) -lpthread
 *   ./shared_model mask_rcnn_ravlt_t.pth photo.jpg 4
 *
 * Each worker detects (or segments) the image once and prints the most threads its call ran
 * on: the calls in flight on one model share the cores (a context's budget, here the default:
 * OMP_NUM_THREADS, else all cores, divided by the calls in flight, between layers), so 4
 * workers on 8 cores run about 2 threads each, not 4 x 8. */
#include <ravlt/ravlt.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAX_WORKERS = 64 };
static rv_model *model;
static rv_image img;
static rv_ctx *ctxs[MAX_WORKERS];
static int workers;

static void on_sigint(int sig) { /* rv_ctx_cancel is async-signal-safe */
  (void)sig;
  for (int i = 0; i < workers; i++) rv_ctx_cancel(ctxs[i]);
}

static void *worker(void *arg) {
  rv_ctx *ctx = arg;
  rv_arena *arena = rv_arena_create(0);
  rv_status st;
  int n = 0;
  if (rv_model_task(model) == RV_TASK_DETECT) {
    rv_detections det;
    st = rv_model_detect(model, &det, NULL, &img, arena, ctx);
    n = det.n;
  } else {
    int32_t *labels = malloc(sizeof *labels * (size_t)img.h * img.w);
    st = labels ? rv_model_segment(model, labels, &img, NULL, arena, ctx) : RV_ERR_NOMEM;
    n = labels ? labels[0] : 0;
    free(labels);
  }
  if (st == RV_OK)
    printf("result %d, threads %d\n", n, rv_ctx_last_call_threads(ctx));
  else
    fprintf(stderr, "%s: %s\n", rv_status_str(st), rv_ctx_errmsg(ctx)); /* "cancelled: ..." */
  rv_arena_free(arena);
  return NULL;
}

int main(int argc, char **argv) {
  workers = argc > 3 ? atoi(argv[3]) : 4;
  if (argc < 3 || workers < 1 || workers > MAX_WORKERS) {
    fprintf(stderr, "usage: %s CHECKPOINT IMAGE [WORKERS]\n", argv[0]);
    return 2;
  }
  rv_blas_init();
  rv_ctx *ctx = rv_ctx_create();
  if (rv_model_load(&model, argv[1], NULL, ctx) != RV_OK || rv_image_read(argv[2], &img, ctx) != RV_OK) {
    fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx));
    return 1;
  }
  for (int i = 0; i < workers; i++) ctxs[i] = rv_ctx_create(); /* default: no thread count */
  signal(SIGINT, on_sigint);
  pthread_t tid[MAX_WORKERS];
  for (int i = 0; i < workers; i++) pthread_create(&tid[i], NULL, worker, ctxs[i]);
  for (int i = 0; i < workers; i++) pthread_join(tid[i], NULL);
  signal(SIGINT, SIG_DFL);
  for (int i = 0; i < workers; i++) rv_ctx_free(ctxs[i]);
  rv_image_free(&img);
  rv_model_free(model);
  rv_ctx_free(ctx);
  return 0;
}
