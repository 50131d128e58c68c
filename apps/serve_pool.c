/* `ravlt serve`: a fixed pool of workers and the bounded queue in front of it. Each worker
 * owns its run state (a context with its thread count and pixel limit, an arena) and reads
 * the models' weights, which nobody writes once they are loaded. A request waits in the queue
 * (at most `cap` of them besides those being worked on: beyond, 503 at once) and leaves it
 * with 504 when no worker took it within the timeout. Memory does not grow with the load:
 * the queue is bounded, a worker's arena is reset after every image. */
#define _POSIX_C_SOURCE 200809L
#include "apps/serve.h"

#include "apps/cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { QUEUED, RUNNING, DONE, DROPPED };

typedef struct job {
  const srv_input *in;
  srv_output *out;
  int state;
  pthread_cond_t done;
  struct job *next;
} job;

typedef struct {
  srv_pool *p;
  pthread_t th;
  rv_ctx *ctx;
  rv_arena *arena;
  int started;
} worker;

struct srv_pool {
  rv_srv *s;
  pthread_mutex_t mu;
  pthread_cond_t work;
  job *head, *tail;
  int waiting, busy, cap, n;
  int stop;
  int threads;
  worker *w;
};

static void *worker_main(void *arg) {
  worker *w = arg;
  srv_pool *p = w->p;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->head && !p->stop) pthread_cond_wait(&p->work, &p->mu);
    if (!p->head) break;
    job *j = p->head;
    p->head = j->next;
    if (!p->head) p->tail = NULL;
    p->waiting--;
    p->busy++;
    j->state = RUNNING;
    pthread_mutex_unlock(&p->mu);
    srv_predict(p->s, j->in, j->out, w->ctx, w->arena);
    rv_ctx_clear_error(w->ctx);
    pthread_mutex_lock(&p->mu);
    p->busy--;
    j->state = DONE;
    pthread_cond_signal(&j->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

int srv_pool_create(srv_pool **out, rv_srv *s, int workers, int queue_cap, int threads, long long max_pixels) {
  *out = NULL;
  srv_pool *p = calloc(1, sizeof *p);
  if (!p) return -1;
  p->s = s;
  p->cap = queue_cap;
  p->n = workers;
  p->threads = threads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work, NULL);
  p->w = calloc((size_t)workers, sizeof *p->w);
  int ok = p->w != NULL;
  for (int i = 0; ok && i < workers; i++) {
    worker *w = &p->w[i];
    w->p = p;
    w->ctx = rv_cli_ctx();
    w->arena = rv_arena_create(0);
    if (!w->ctx || !w->arena) ok = 0;
    if (ok) {
      rv_ctx_set_threads(w->ctx, threads); /* 0: the cores, shared by the calls in flight on a model */
      /* a client's odd image (a truncated JPEG) is not the operator's warning: --verbose */
      if (!rv_cli.verbose) rv_ctx_set_log_level(w->ctx, RV_LOG_ERROR);
      rv_ctx_set_max_pixels(w->ctx, max_pixels);
      ok = pthread_create(&w->th, NULL, worker_main, w) == 0;
      w->started = ok;
    }
  }
  if (!ok) {
    srv_pool_free(p);
    return -1;
  }
  *out = p;
  return 0;
}

static int full_locked(const srv_pool *p) { return p->stop || p->waiting + p->busy >= p->cap + p->n; }

int srv_pool_full(srv_pool *p) {
  pthread_mutex_lock(&p->mu);
  int f = full_locked(p);
  pthread_mutex_unlock(&p->mu);
  return f;
}

void srv_pool_counts(srv_pool *p, int *waiting, int *busy) {
  pthread_mutex_lock(&p->mu);
  *waiting = p->waiting;
  *busy = p->busy;
  pthread_mutex_unlock(&p->mu);
}

int srv_pool_run(srv_pool *p, const srv_input *in, srv_output *out, double timeout_s) {
  job j = {in, out, QUEUED, PTHREAD_COND_INITIALIZER, NULL};
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&j.done, &ca);
  pthread_condattr_destroy(&ca);
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  double whole = floor(timeout_s);
  dl.tv_sec += (time_t)whole;
  dl.tv_nsec += (long)((timeout_s - whole) * 1e9);
  if (dl.tv_nsec >= 1000000000L) {
    dl.tv_sec++;
    dl.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&p->mu);
  if (full_locked(p)) {
    pthread_mutex_unlock(&p->mu);
    pthread_cond_destroy(&j.done);
    return 503;
  }
  if (p->tail) p->tail->next = &j;
  else p->head = &j;
  p->tail = &j;
  p->waiting++;
  pthread_cond_signal(&p->work);
  int rc = 0;
  while (j.state != DONE) {
    if (j.state == DROPPED) {
      rc = 503;
      break;
    }
    int e = j.state == QUEUED ? pthread_cond_timedwait(&j.done, &p->mu, &dl) : pthread_cond_wait(&j.done, &p->mu);
    if (e == ETIMEDOUT && j.state == QUEUED) { /* still waiting for a worker: leave the queue */
      job **pp = &p->head;
      while (*pp && *pp != &j) pp = &(*pp)->next;
      if (*pp) *pp = j.next;
      p->tail = NULL;
      for (job *q = p->head; q; q = q->next) p->tail = q;
      p->waiting--;
      rc = 504;
      break;
    }
  }
  pthread_mutex_unlock(&p->mu);
  pthread_cond_destroy(&j.done);
  return rc;
}

void srv_pool_abandon(srv_pool *p) {
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  for (int i = 0; p->w && i < p->n; i++) /* the images in work stop at their next check */
    if (p->w[i].ctx) rv_ctx_cancel(p->w[i].ctx);
  for (job *q = p->head; q; q = q->next) {
    q->state = DROPPED;
    pthread_cond_signal(&q->done);
  }
  p->head = p->tail = NULL;
  p->waiting = 0;
  pthread_cond_broadcast(&p->work);
  pthread_mutex_unlock(&p->mu);
}

void srv_pool_free(srv_pool *p) {
  if (!p) return;
  srv_pool_abandon(p);
  for (int i = 0; p->w && i < p->n; i++) {
    worker *w = &p->w[i];
    if (w->started) pthread_join(w->th, NULL);
    rv_arena_free(w->arena);
    rv_ctx_free(w->ctx);
  }
  free(p->w);
  pthread_cond_destroy(&p->work);
  pthread_mutex_destroy(&p->mu);
  free(p);
}
