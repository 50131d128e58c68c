/* `ravlt serve --stream NAME[:MODEL]=INPUT`: a live video stream inside the server. The
 * pipeline of `ravlt video` (apps/video_run.c: decode, inference, drawing; --every, --drop)
 * runs in a thread of its own on the model the workers share; each drawn frame is encoded
 * once as JPEG (while someone watches) into a slot every MJPEG viewer reads from, and each
 * JSON line `ravlt video --json` writes goes into a ring every SSE viewer reads from. The
 * pipeline never waits for a viewer: a slow one gets the newest frame when it is ready for
 * one (the frames in between are skipped, counted) and the oldest events it had not read
 * are overwritten. */
#define _GNU_SOURCE /* fopencookie */
#include "apps/serve.h"

#include "apps/cli.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EV_RING 256
#define BOUNDARY "ravltframe"

typedef struct {
  unsigned char *data;
  size_t len;
  int refs; /* under the stream's mutex */
} jpeg_buf;

struct srv_stream {
  rv_srv *s;
  char name[64];
  int model;
  const char *input;
  rv_video_app *app;
  rv_video_reader *first_reader; /* opened by srv_stream_start, taken over by the first run */
  rv_ctx *ctx;
  FILE *events;                  /* the JSON lines of the pipeline (fopencookie) */
  srv_buf line;                  /* a line being written */
  pthread_t th;
  int started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  jpeg_buf *latest;
  uint64_t seq;                  /* frames published (JPEG slot) */
  char *ev[EV_RING];
  uint64_t ev_seq;               /* events published; event k is ev[k % EV_RING] */
  volatile int cancel;
  int ended;
  char fault[300];
  /* figures (under mu) */
  long frames, processed, dropped, corrupt, loops;
  long mjpeg_viewers, sse_viewers, skipped;
  long proc_written;             /* processed frames the sink has written */
  double fps, latency_s, t_last, lat_sum_prev;
  long lat_n_prev;
};

const char *srv_stream_name(const srv_stream *st) { return st->name; }

long srv_stream_frames(srv_stream *st) {
  pthread_mutex_lock(&st->mu);
  long n = st->frames;
  pthread_mutex_unlock(&st->mu);
  return n;
}

static void unref(jpeg_buf *b) { /* under mu */
  if (b && --b->refs == 0) {
    free(b->data);
    free(b);
  }
}

/* ---- the pipeline's hooks ---------------------------------------------------------------- */

static ssize_t ev_write(void *cookie, const char *buf, size_t n) {
  srv_stream *st = cookie;
  for (size_t i = 0; i < n; i++) {
    if (buf[i] != '\n') {
      srv_buf_put(&st->line, buf + i, 1);
      continue;
    }
    char *l = st->line.oom ? NULL : st->line.d;
    memset(&st->line, 0, sizeof st->line);
    if (!l) continue;
    pthread_mutex_lock(&st->mu);
    free(st->ev[st->ev_seq % EV_RING]);
    st->ev[st->ev_seq % EV_RING] = l;
    st->ev_seq++;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
  }
  return (ssize_t)n;
}

static rv_status on_frame(void *user, const rv_image *frame, const rv_vp_frame *fi, rv_ctx *ctx) {
  srv_stream *st = user;
  double t = rv_now();
  pthread_mutex_lock(&st->mu);
  st->frames++;
  if (fi->processed) st->proc_written++;
  if (st->t_last > 0) {
    double inst = t - st->t_last > 1e-6 ? 1.0 / (t - st->t_last) : 0;
    st->fps = st->fps > 0 ? 0.9 * st->fps + 0.1 * inst : inst;
  }
  st->t_last = t;
  int watched = st->mjpeg_viewers > 0;
  pthread_mutex_unlock(&st->mu);
  if (!watched) return RV_OK;
  jpeg_buf *b = calloc(1, sizeof *b);
  if (!b) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (rv_image_encode(frame, ".jpg", &b->data, &b->len, ctx) != RV_OK) {
    free(b);
    return rv_error(ctx, RV_ERR_INTERNAL, "stream %s: encoding a frame: %s", st->name, rv_ctx_errmsg(ctx));
  }
  b->refs = 1;
  pthread_mutex_lock(&st->mu);
  unref(st->latest);
  st->latest = b;
  st->seq++;
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->mu);
  return RV_OK;
}

static void on_stats(void *user, const rv_vp_stats *s) {
  srv_stream *st = user;
  pthread_mutex_lock(&st->mu);
  st->processed = s->processed;
  st->dropped = s->dropped;
  st->corrupt = s->corrupt;
  /* the latency of the frames since the last figures, from the running mean */
  double sum = s->latency_mean_s * (double)st->proc_written;
  if (st->proc_written > st->lat_n_prev) {
    double lat = (sum - st->lat_sum_prev) / (double)(st->proc_written - st->lat_n_prev);
    st->latency_s = st->latency_s > 0 ? 0.8 * st->latency_s + 0.2 * lat : lat;
    st->lat_sum_prev = sum;
    st->lat_n_prev = st->proc_written;
  }
  pthread_mutex_unlock(&st->mu);
}

static int is_cancelled(void *user) { return ((srv_stream *)user)->cancel; }

static void *stream_main(void *arg) {
  srv_stream *st = arg;
  int live = rv_video_is_live(st->input);
  for (;;) {
    rv_video_job j = {0};
    j.input = st->input;
    j.reader = st->first_reader;
    st->first_reader = NULL;
    j.json_stream = st->events;
    j.quiet = 1;
    j.on_frame = on_frame;
    j.on_stats = on_stats;
    j.cancelled = is_cancelled;
    j.hook_user = st;
    pthread_mutex_lock(&st->mu);
    st->proc_written = st->lat_n_prev = 0;
    st->lat_sum_prev = 0;
    pthread_mutex_unlock(&st->mu);
    rv_status rc = rv_video_run(st->app, &j, st->ctx);
    if (rc != RV_OK) {
      snprintf(st->fault, sizeof st->fault, "%s", rv_ctx_errmsg(st->ctx));
      rv_log(st->ctx, RV_LOG_WARN, "stream %s: %s", st->name, st->fault);
      break;
    }
    if (j.stats.ended_early || j.stats.stalled) {
      snprintf(st->fault, sizeof st->fault, "%s", j.stats.fault);
      rv_log(st->ctx, RV_LOG_WARN, "stream %s: input %s: %s", st->name, j.stats.stalled ? "stalled" : "ended early", st->fault);
      break;
    }
    if (st->cancel || live || !st->s->loop || j.stats.read == 0) break;
    pthread_mutex_lock(&st->mu);
    st->loops++;
    pthread_mutex_unlock(&st->mu);
  }
  pthread_mutex_lock(&st->mu);
  st->ended = 1;
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->mu);
  if (!st->cancel) rv_log(st->ctx, RV_LOG_INFO, "stream %s: %s ended after %ld frame(s)", st->name, st->input, st->frames);
  return NULL;
}

/* ---- life -------------------------------------------------------------------------------- */

int srv_stream_parse(srv_stream **out, const char *spec, rv_srv *s, char *err, size_t cap) {
  *out = NULL;
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec || !eq[1]) {
    snprintf(err, cap, "--stream must be NAME[:MODEL]=INPUT, not '%s'", spec);
    return -1;
  }
  const char *colon = memchr(spec, ':', (size_t)(eq - spec));
  size_t nl = (size_t)((colon ? colon : eq) - spec);
  for (size_t i = 0; i < nl; i++) {
    char ch = spec[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')) {
      snprintf(err, cap, "--stream %s: the name may hold letters, digits, '_' and '-' only", spec);
      return -1;
    }
  }
  if (nl >= 64) {
    snprintf(err, cap, "--stream %s: the name is longer than 63 characters", spec);
    return -1;
  }
  int model = 0;
  if (colon) {
    size_t ml = (size_t)(eq - colon - 1);
    model = -1;
    for (int i = 0; i < s->n_models; i++)
      if (strlen(s->models[i].name) == ml && !strncmp(s->models[i].name, colon + 1, ml)) model = i;
    if (model < 0) {
      snprintf(err, cap, "--stream %s: no model '%.*s' among the --weights", spec, (int)ml, colon + 1);
      return -1;
    }
  }
  for (int i = 0; i < s->n_streams; i++)
    if (strlen(s->streams[i]->name) == nl && !strncmp(s->streams[i]->name, spec, nl)) {
      snprintf(err, cap, "--stream %s: a second stream named '%.*s'", spec, (int)nl, spec);
      return -1;
    }
  srv_stream *st = calloc(1, sizeof *st);
  if (!st) {
    snprintf(err, cap, "out of memory");
    return -1;
  }
  st->s = s;
  memcpy(st->name, spec, nl);
  st->model = model;
  st->input = eq + 1;
  pthread_mutex_init(&st->mu, NULL);
  pthread_cond_init(&st->cv, NULL);
  *out = st;
  return 0;
}

int srv_stream_start(srv_stream *st, rv_ctx *ctx) {
  rv_srv *s = st->s;
  const srv_model *M = &s->models[st->model];
  rv_video_opts o = {0};
  o.shared_model = M->m;
  o.thr = s->stream_thr;
  o.opacity = 0.5;
  o.every = s->every;
  o.drop = s->drop;
  o.queue = 4;
  o.stall = 10;
  o.threads = rv_ctx_threads(ctx); /* a worker's (0: as `ravlt video`, the cores but one) */
  o.realtime = 1;
  o.out_ext = "none";
  if (!(st->ctx = rv_cli_ctx())) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_ctx_set_max_pixels(st->ctx, s->max_pixels);
  cookie_io_functions_t io = {NULL, ev_write, NULL, NULL};
  if (!(st->events = fopencookie(st, "w", io))) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  RV_TRY(rv_video_app_open(&st->app, &o, ctx));
  rv_status rc = rv_video_open(&st->first_reader, st->input, ctx);
  if (rc != RV_OK) {
    char msg[600];
    snprintf(msg, sizeof msg, "%s", rv_ctx_errmsg(ctx)); /* not the buffer rv_error writes */
    return rv_error(ctx, rc, "--stream %s: %s", st->name, msg);
  }
  if (pthread_create(&st->th, NULL, stream_main, st)) return rv_error(ctx, RV_ERR_INTERNAL, "--stream %s: no thread", st->name);
  st->started = 1;
  return RV_OK;
}

void srv_stream_stop(srv_stream *st) {
  if (!st) return;
  st->cancel = 1;
  if (st->started) pthread_join(st->th, NULL);
  st->started = 0;
  pthread_mutex_lock(&st->mu);
  st->ended = 1;
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->mu);
}

void srv_stream_free(srv_stream *st) {
  if (!st) return;
  srv_stream_stop(st);
  rv_video_close(st->first_reader);
  rv_video_app_free(st->app);
  if (st->events) fclose(st->events);
  free(st->line.d);
  for (int i = 0; i < EV_RING; i++) free(st->ev[i]);
  unref(st->latest);
  rv_ctx_free(st->ctx);
  pthread_cond_destroy(&st->cv);
  pthread_mutex_destroy(&st->mu);
  free(st);
}

char *srv_stream_json(srv_stream *st) {
  srv_buf b = {0};
  srv_buf_str(&b, "{\"name\": ");
  srv_buf_json_str(&b, st->name);
  srv_buf_str(&b, ", \"model\": ");
  srv_buf_json_str(&b, st->s->models[st->model].name);
  pthread_mutex_lock(&st->mu);
  srv_buf_printf(&b, ", \"state\": \"%s\", \"frames\": %ld, \"processed\": %ld, \"dropped\": %ld, \"corrupt\": %ld, "
                     "\"fps\": %.2f, \"latency_ms\": %.1f, \"viewers\": %ld, \"viewer_skips\": %ld, \"loops\": %ld, \"fault\": ",
                 st->ended ? "ended" : "running", st->frames, st->processed, st->dropped, st->corrupt, st->fps,
                 st->latency_s * 1e3, st->mjpeg_viewers + st->sse_viewers, st->skipped, st->loops);
  srv_buf_json_str(&b, st->fault);
  pthread_mutex_unlock(&st->mu);
  srv_buf_str(&b, "}");
  if (b.oom) {
    free(b.d);
    return NULL;
  }
  return b.d;
}

/* ---- viewers ----------------------------------------------------------------------------- */

typedef struct {
  srv_stream *st;
  int sse;
  jpeg_buf *cur;     /* the frame being sent (a reference) */
  uint64_t seen;     /* the last frame / next event taken */
  char *pend;        /* bytes to send: the part header or an event */
  size_t pend_len, off, body_off;
  int stage;         /* MJPEG: 0 header, 1 JPEG, 2 CRLF */
} viewer;

/* Waits (under mu) up to 1 s for news; 0 on news or the end. */
static void wait_news(srv_stream *st, double sec) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += (time_t)sec;
  pthread_cond_timedwait(&st->cv, &st->mu, &ts);
}

static ssize_t mjpeg_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  viewer *v = cls;
  srv_stream *st = v->st;
  size_t n = 0;
  while (n < max) {
    if (!v->cur) {
      if (n) break; /* send what we have before waiting */
      pthread_mutex_lock(&st->mu);
      while (!st->ended && st->seq == v->seen && !st->s->draining) wait_news(st, 1);
      if (st->ended || st->s->draining || !st->latest) {
        int end = st->ended || st->s->draining;
        pthread_mutex_unlock(&st->mu);
        if (end) return MHD_CONTENT_READER_END_OF_STREAM;
        continue;
      }
      if (v->seen && st->seq > v->seen + 1) st->skipped += (long)(st->seq - v->seen - 1);
      v->cur = st->latest;
      v->cur->refs++;
      v->seen = st->seq;
      pthread_mutex_unlock(&st->mu);
      char head[160];
      int hl = snprintf(head, sizeof head, "--" BOUNDARY "\r\nContent-Type: image/jpeg\r\nContent-Length: %zu\r\n\r\n", v->cur->len);
      memcpy(v->pend, head, (size_t)hl);
      v->pend_len = (size_t)hl;
      v->off = v->body_off = 0;
      v->stage = 0;
    }
    if (v->stage == 0) {
      size_t k = v->pend_len - v->off < max - n ? v->pend_len - v->off : max - n;
      memcpy(buf + n, v->pend + v->off, k);
      n += k;
      v->off += k;
      if (v->off == v->pend_len) v->stage = 1;
    } else if (v->stage == 1) {
      size_t k = v->cur->len - v->body_off < max - n ? v->cur->len - v->body_off : max - n;
      memcpy(buf + n, v->cur->data + v->body_off, k);
      n += k;
      v->body_off += k;
      if (v->body_off == v->cur->len) {
        v->stage = 2;
        v->off = 0;
      }
    } else {
      static const char crlf[] = "\r\n";
      size_t k = 2 - v->off < max - n ? 2 - v->off : max - n;
      memcpy(buf + n, crlf + v->off, k);
      n += k;
      v->off += k;
      if (v->off == 2) {
        pthread_mutex_lock(&st->mu);
        unref(v->cur);
        pthread_mutex_unlock(&st->mu);
        v->cur = NULL;
      }
    }
  }
  return (ssize_t)n;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  viewer *v = cls;
  srv_stream *st = v->st;
  if (v->off == v->pend_len) {
    free(v->pend);
    v->pend = NULL;
    v->pend_len = v->off = 0;
    pthread_mutex_lock(&st->mu);
    double t0 = rv_now();
    while (!st->ended && st->ev_seq == v->seen && !st->s->draining && rv_now() - t0 < 15) wait_news(st, 1);
    srv_buf b = {0};
    if (st->ev_seq > v->seen) {
      if (st->ev_seq - v->seen > EV_RING) { /* overwritten before this viewer read them */
        st->skipped += (long)(st->ev_seq - v->seen - EV_RING);
        v->seen = st->ev_seq - EV_RING;
      }
      for (int k = 0; k < 8 && v->seen < st->ev_seq; k++, v->seen++) {
        srv_buf_str(&b, "data: ");
        srv_buf_str(&b, st->ev[v->seen % EV_RING]);
        srv_buf_str(&b, "\n\n");
      }
    } else if (st->ended || st->s->draining) {
      pthread_mutex_unlock(&st->mu);
      return MHD_CONTENT_READER_END_OF_STREAM;
    } else {
      srv_buf_str(&b, ": keep-alive\n\n");
    }
    pthread_mutex_unlock(&st->mu);
    if (b.oom) {
      free(b.d);
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    v->pend = b.d;
    v->pend_len = b.n;
  }
  size_t k = v->pend_len - v->off < max ? v->pend_len - v->off : max;
  memcpy(buf, v->pend + v->off, k);
  v->off += k;
  return (ssize_t)k;
}

static void viewer_free(void *cls) {
  viewer *v = cls;
  srv_stream *st = v->st;
  pthread_mutex_lock(&st->mu);
  unref(v->cur);
  if (v->sse) st->sse_viewers--;
  else st->mjpeg_viewers--;
  pthread_mutex_unlock(&st->mu);
  free(v->pend);
  free(v);
}

static struct MHD_Response *viewer_open(srv_stream *st, int sse, int *status) {
  viewer *v = calloc(1, sizeof *v);
  if (v && !sse && !(v->pend = malloc(160))) {
    free(v);
    v = NULL;
  }
  if (!v) {
    *status = 500;
    return NULL;
  }
  v->st = st;
  v->sse = sse;
  pthread_mutex_lock(&st->mu);
  if (st->ended) {
    pthread_mutex_unlock(&st->mu);
    free(v->pend);
    free(v);
    *status = 410;
    return NULL;
  }
  v->seen = sse ? st->ev_seq : st->seq;
  if (sse) st->sse_viewers++;
  else st->mjpeg_viewers++;
  pthread_mutex_unlock(&st->mu);
  struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, sse ? sse_read : mjpeg_read, v, viewer_free);
  if (!r) {
    viewer_free(v);
    *status = 500;
    return NULL;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, sse ? "text/event-stream" : "multipart/x-mixed-replace; boundary=" BOUNDARY);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, no-store");
  MHD_add_response_header(r, "X-Accel-Buffering", "no");
  return r;
}

struct MHD_Response *srv_stream_mjpeg(srv_stream *st, int *status) { return viewer_open(st, 0, status); }
struct MHD_Response *srv_stream_events(srv_stream *st, int *status) { return viewer_open(st, 1, status); }
