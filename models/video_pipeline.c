/* Three-stage video pipeline (see video_pipeline.h): decode pthread -> inference in the
 * calling thread -> sink pthread, two bounded FIFO queues guarded by one mutex. */
#define _POSIX_C_SOURCE 200809L
#include "models/video_pipeline.h"

#include <errno.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
  int end;            /* end-of-stream marker */
  rv_image img;
  rv_vp_frame fi;
  double t_read;      /* when decoding finished */
  void *result;       /* processed frames: the new result (ownership moves to the sink) */
} item;

/* Bounded FIFO ring; the pipeline's mutex guards it. */
typedef struct {
  item *buf;
  int cap, head, n;
  pthread_cond_t not_empty, not_full;
} queue;

typedef struct {
  const rv_vp_config *cfg;
  pthread_mutex_t mu;
  queue q_in, q_out;
  int stop;              /* set on error, stall or cancel: decode ends, waits give up */
  rv_vp_stats st;        /* counters (under mu) */
  double t0;
  rv_status sink_status; /* first sink / finish error */
  char sink_err[1024];
  double *lat;           /* latencies of processed frames (sink thread) */
  size_t nlat, caplat;
  long nlat_seen; /* processed frames written (the running mean of the snapshots) */
  int width, height;
} pipe_t;

static int q_init(queue *q, int cap) {
  q->buf = calloc((size_t)cap, sizeof *q->buf);
  q->cap = cap;
  q->head = q->n = 0;
  if (!q->buf) return -1;
  pthread_cond_init(&q->not_empty, NULL);
  pthread_cond_init(&q->not_full, NULL);
  return 0;
}

static void q_destroy(queue *q) {
  if (!q->buf) return;
  free(q->buf);
  pthread_cond_destroy(&q->not_empty);
  pthread_cond_destroy(&q->not_full);
}

/* Under mu. */
static void q_push_locked(queue *q, item *it) {
  q->buf[(q->head + q->n) % q->cap] = *it;
  q->n++;
  pthread_cond_signal(&q->not_empty);
}

static item q_pop_locked(queue *q) {
  item it = q->buf[q->head];
  q->head = (q->head + 1) % q->cap;
  q->n--;
  pthread_cond_signal(&q->not_full);
  return it;
}

static void free_item(pipe_t *p, item *it) {
  rv_image_free(&it->img);
  if (it->result && p->cfg->free_result) p->cfg->free_result(p->cfg->user, it->result);
  it->result = NULL;
}

static rv_ctx *helper_ctx(const rv_vp_config *c) {
  rv_ctx *ctx = rv_ctx_create();
  if (ctx && c->log) {
    rv_ctx_set_log(ctx, c->log, c->log_user);
    rv_ctx_set_log_level(ctx, c->log_level);
  }
  return ctx;
}

static int is_cancelled(const rv_vp_config *c) { return c->cancelled && c->cancelled(c->cancel_user); }

static void abs_deadline(struct timespec *ts, double seconds) {
  clock_gettime(CLOCK_REALTIME, ts);
  double s = (double)ts->tv_sec + 1e-9 * (double)ts->tv_nsec + seconds;
  ts->tv_sec = (time_t)s;
  ts->tv_nsec = (long)((s - (double)ts->tv_sec) * 1e9);
  if (ts->tv_nsec >= 1000000000L) { ts->tv_sec++; ts->tv_nsec -= 1000000000L; }
}

/* ---- decode thread ------------------------------------------------------------------------ */
static void *decode_main(void *arg) {
  pipe_t *p = arg;
  const rv_vp_config *c = p->cfg;
  omp_set_num_threads(1);
  rv_ctx *ctx = helper_ctx(c);
  long index = 0;
  int live_drop = c->live && c->drop;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    int stop = p->stop;
    long nread = p->st.read;
    pthread_mutex_unlock(&p->mu);
    if (stop) break;
    if (is_cancelled(c)) {
      pthread_mutex_lock(&p->mu);
      p->st.interrupted = 1;
      pthread_mutex_unlock(&p->mu);
      break;
    }
    if (c->max_frames > 0 && nread >= c->max_frames) break;
    item it = {0};
    int got = 0;
    double tr = now_s();
    rv_status s = ctx ? c->read(c->read_user, &it.img, &got, ctx) : RV_ERR_NOMEM;
    tr = now_s() - tr;
    pthread_mutex_lock(&p->mu);
    p->st.read_s += tr;
    pthread_mutex_unlock(&p->mu);
    if (s != RV_OK) {
      rv_image_free(&it.img);
      pthread_mutex_lock(&p->mu);
      if (!p->stop) {
        p->st.ended_early = 1;
        snprintf(p->st.fault, sizeof p->st.fault, "%s", ctx ? rv_ctx_errmsg(ctx) : "out of memory");
      }
      pthread_mutex_unlock(&p->mu);
      break;
    }
    if (!got) {
      rv_image_free(&it.img);
      break;
    }
    it.t_read = now_s();
    pthread_mutex_lock(&p->mu);
    p->st.read++;
    if (p->width == 0) { p->width = it.img.w; p->height = it.img.h; }
    int bad = it.img.w != p->width || it.img.h != p->height || it.img.c != 3;
    if (bad) p->st.corrupt++;
    pthread_mutex_unlock(&p->mu);
    if (bad) {
      rv_log(ctx, RV_LOG_WARN, "frame %ld: %dx%dx%d instead of %dx%dx3: skipped as corrupt", c->first_index + nread, it.img.w,
             it.img.h, it.img.c, p->width, p->height);
      rv_image_free(&it.img);
      continue;
    }
    it.fi.index = c->first_index + index++;
    it.fi.time = (!c->live && c->fps > 0) ? (double)it.fi.index / c->fps : it.t_read - p->t0;
    pthread_mutex_lock(&p->mu);
    if (live_drop && p->q_in.n == p->q_in.cap) {
      item old = q_pop_locked(&p->q_in);
      p->st.dropped++;
      pthread_mutex_unlock(&p->mu);
      free_item(p, &old);
      pthread_mutex_lock(&p->mu);
    }
    while (p->q_in.n == p->q_in.cap && !p->stop) pthread_cond_wait(&p->q_in.not_full, &p->mu);
    if (p->stop) {
      pthread_mutex_unlock(&p->mu);
      free_item(p, &it);
      break;
    }
    q_push_locked(&p->q_in, &it);
    pthread_mutex_unlock(&p->mu);
  }
  /* end marker: always delivered (the inference stage may already be gone when stopped) */
  pthread_mutex_lock(&p->mu);
  while (p->q_in.n == p->q_in.cap && !p->stop) pthread_cond_wait(&p->q_in.not_full, &p->mu);
  if (p->q_in.n < p->q_in.cap) {
    item end = {0};
    end.end = 1;
    q_push_locked(&p->q_in, &end);
  }
  pthread_mutex_unlock(&p->mu);
  rv_ctx_free(ctx);
  return NULL;
}

/* ---- sink thread -------------------------------------------------------------------------- */
static void sink_fail(pipe_t *p, rv_status s, rv_ctx *ctx) {
  pthread_mutex_lock(&p->mu);
  if (p->sink_status == RV_OK) {
    p->sink_status = s;
    snprintf(p->sink_err, sizeof p->sink_err, "%s", ctx ? rv_ctx_errmsg(ctx) : "out of memory");
  }
  p->stop = 1;
  pthread_cond_broadcast(&p->q_in.not_full);
  pthread_cond_broadcast(&p->q_in.not_empty);
  pthread_mutex_unlock(&p->mu);
}

typedef struct {
  pipe_t *p;
  rv_status infer_status; /* set by the inference stage before the end marker */
} sink_arg;

static void *sink_main(void *arg) {
  sink_arg *sa = arg;
  pipe_t *p = sa->p;
  const rv_vp_config *c = p->cfg;
  omp_set_num_threads(1);
  rv_ctx *ctx = helper_ctx(c);
  void *last = NULL;
  int failed = 0;
  if (!ctx) { sink_fail(p, RV_ERR_NOMEM, NULL); failed = 1; }
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (p->q_out.n == 0) pthread_cond_wait(&p->q_out.not_empty, &p->mu);
    item it = q_pop_locked(&p->q_out);
    pthread_mutex_unlock(&p->mu);
    if (it.end) break;
    if (it.result) {
      if (last && c->free_result) c->free_result(c->user, last);
      last = it.result;
      it.result = NULL;
    }
    if (!failed && c->sink) {
      double ts = now_s();
      rv_status s = c->sink(c->user, &it.img, &it.fi, last, ctx);
      ts = now_s() - ts;
      pthread_mutex_lock(&p->mu);
      p->st.sink_s += ts;
      pthread_mutex_unlock(&p->mu);
      if (s != RV_OK) { sink_fail(p, s, ctx); failed = 1; }
    }
    if (!failed) {
      double lat = now_s() - it.t_read;
      if (it.fi.processed) {
        if (p->nlat == p->caplat) {
          size_t nc = p->caplat ? 2 * p->caplat : 256;
          double *nl = realloc(p->lat, nc * sizeof *nl);
          if (nl) { p->lat = nl; p->caplat = nc; }
        }
        if (p->nlat < p->caplat) p->lat[p->nlat++] = lat;
      }
      pthread_mutex_lock(&p->mu);
      if (it.fi.processed) { /* the running mean in the progress snapshots */
        p->nlat_seen++;
        p->st.latency_mean_s += (lat - p->st.latency_mean_s) / (double)p->nlat_seen;
      }
      p->st.written++;
      p->st.wall_s = now_s() - p->t0;
      rv_vp_stats snap = p->st;
      pthread_mutex_unlock(&p->mu);
      if (c->progress) c->progress(c->progress_user, &snap);
    }
    rv_image_free(&it.img);
  }
  if (last && c->free_result) c->free_result(c->user, last);
  if (c->finish) {
    pthread_mutex_lock(&p->mu);
    rv_status prior = p->sink_status != RV_OK ? p->sink_status : sa->infer_status;
    pthread_mutex_unlock(&p->mu);
    rv_status s = ctx ? c->finish(c->user, prior, ctx) : RV_ERR_NOMEM;
    if (s != RV_OK) sink_fail(p, s, ctx);
  }
  pthread_mutex_lock(&p->mu);
  p->st.wall_s = now_s() - p->t0;
  pthread_mutex_unlock(&p->mu);
  rv_ctx_free(ctx);
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

rv_vp_config rv_vp_default_config(void) {
  rv_vp_config c;
  memset(&c, 0, sizeof c);
  c.every = 1;
  c.queue = 4;
  c.stall_s = 10.0;
  c.log_level = RV_LOG_INFO;
  return c;
}

rv_status rv_vp_read_video(void *reader, rv_image *frame, int *got, rv_ctx *ctx) {
  return rv_video_read((rv_video_reader *)reader, frame, got, ctx);
}

rv_status rv_vp_run(const rv_vp_config *cfg, rv_vp_stats *stats, rv_ctx *ctx) {
  memset(stats, 0, sizeof *stats);
  if (!cfg->read || !cfg->infer)
    return rv_error(ctx, RV_ERR_ARG, "video pipeline: read and infer callbacks are required");
  if (cfg->every < 1 || cfg->queue < 1 || cfg->max_frames < 0 || cfg->first_index < 0 || cfg->stall_s < 0 || cfg->width < 0 || cfg->height < 0)
    return rv_error(ctx, RV_ERR_ARG,
                    "video pipeline: every %d, queue %d, max_frames %ld, first_index %ld, stall %g s, size %dx%d: "
                    "out of range",
                    cfg->every, cfg->queue, cfg->max_frames, cfg->first_index, cfg->stall_s, cfg->width, cfg->height);
  pipe_t p;
  memset(&p, 0, sizeof p);
  p.cfg = cfg;
  p.width = cfg->width;
  p.height = cfg->height;
  if (q_init(&p.q_in, cfg->queue) || q_init(&p.q_out, cfg->queue)) {
    q_destroy(&p.q_in);
    q_destroy(&p.q_out);
    return rv_error(ctx, RV_ERR_NOMEM, "video pipeline: out of memory for the queues");
  }
  pthread_mutex_init(&p.mu, NULL);
  if (cfg->infer_threads > 0) omp_set_num_threads(cfg->infer_threads);
  p.t0 = now_s();
  sink_arg sa = {&p, RV_OK};
  pthread_t dec, snk;
  int have_dec = 0, have_snk = 0;
  rv_status st = RV_OK;
  if (pthread_create(&snk, NULL, sink_main, &sa) == 0) have_snk = 1;
  else st = rv_error(ctx, RV_ERR_INTERNAL, "video pipeline: cannot start the encode thread");
  if (st == RV_OK) {
    if (pthread_create(&dec, NULL, decode_main, &p) == 0) have_dec = 1;
    else st = rv_error(ctx, RV_ERR_INTERNAL, "video pipeline: cannot start the decode thread");
  }
  long arrived = 0;
  while (st == RV_OK && have_dec) {
    double tw = now_s();
    pthread_mutex_lock(&p.mu);
    int timed_out = 0;
    if (cfg->stall_s > 0) {
      struct timespec dl;
      abs_deadline(&dl, cfg->stall_s);
      while (p.q_in.n == 0 && !p.stop && !timed_out)
        if (pthread_cond_timedwait(&p.q_in.not_empty, &p.mu, &dl) == ETIMEDOUT) timed_out = p.q_in.n == 0;
    } else {
      while (p.q_in.n == 0 && !p.stop) pthread_cond_wait(&p.q_in.not_empty, &p.mu);
    }
    if (timed_out) {
      p.st.stalled = 1;
      snprintf(p.st.fault, sizeof p.st.fault, "no frame for %.1f s", cfg->stall_s);
      pthread_mutex_unlock(&p.mu);
      break;
    }
    if (p.stop && p.q_in.n == 0) { pthread_mutex_unlock(&p.mu); break; }
    item it = q_pop_locked(&p.q_in);
    int stop = p.stop;
    p.st.wait_in_s += now_s() - tw;
    pthread_mutex_unlock(&p.mu);
    if (it.end) break;
    if (stop) { free_item(&p, &it); break; }
    if (is_cancelled(cfg)) {
      pthread_mutex_lock(&p.mu);
      p.st.interrupted = 1;
      pthread_mutex_unlock(&p.mu);
      free_item(&p, &it);
      break;
    }
    it.fi.processed = (cfg->first_index + arrived++) % cfg->every == 0;
    if (it.fi.processed) {
      double t = now_s();
      st = cfg->infer(cfg->user, &it.result, &it.img, &it.fi, ctx);
      double dt = now_s() - t;
      pthread_mutex_lock(&p.mu);
      p.st.infer_s += dt;
      if (st == RV_OK) p.st.processed++;
      pthread_mutex_unlock(&p.mu);
      if (st != RV_OK) { free_item(&p, &it); break; }
    }
    tw = now_s();
    pthread_mutex_lock(&p.mu);
    while (p.q_out.n == p.q_out.cap) pthread_cond_wait(&p.q_out.not_full, &p.mu);
    q_push_locked(&p.q_out, &it);
    p.st.wait_out_s += now_s() - tw;
    pthread_mutex_unlock(&p.mu);
  }
  /* stop the decoder (it may be blocked on a full queue), then end the sink */
  pthread_mutex_lock(&p.mu);
  p.stop = 1;
  pthread_cond_broadcast(&p.q_in.not_full);
  sa.infer_status = st;
  if (have_snk) {
    while (p.q_out.n == p.q_out.cap) pthread_cond_wait(&p.q_out.not_full, &p.mu);
    item end = {0};
    end.end = 1;
    q_push_locked(&p.q_out, &end);
  }
  pthread_mutex_unlock(&p.mu);
  if (have_snk) pthread_join(snk, NULL);
  if (have_dec) pthread_join(dec, NULL);
  /* frames the decoder queued after inference ended */
  while (p.q_in.n > 0) {
    item it = q_pop_locked(&p.q_in);
    free_item(&p, &it);
  }
  if (st == RV_OK && p.sink_status != RV_OK) st = rv_error(ctx, p.sink_status, "%s", p.sink_err);
  *stats = p.st;
  if (p.nlat) {
    double sum = 0;
    for (size_t i = 0; i < p.nlat; i++) sum += p.lat[i];
    stats->latency_mean_s = sum / (double)p.nlat;
    qsort(p.lat, p.nlat, sizeof *p.lat, cmp_double);
    size_t k = (size_t)(0.95 * (double)(p.nlat - 1) + 0.5);
    stats->latency_p95_s = p.lat[k];
  }
  stats->fps = stats->wall_s > 0 ? (double)stats->written / stats->wall_s : 0;
  free(p.lat);
  q_destroy(&p.q_in);
  q_destroy(&p.q_out);
  pthread_mutex_destroy(&p.mu);
  return st;
}
