/* `ravlt serve` (apps/cmd_serve.c): an HTTP inference service on libmicrohttpd, in pieces:
 *   apps/serve_http.c    the routes: the access handler, authentication, JSON errors, metrics
 *   apps/serve_pool.c    the fixed pool of workers and the bounded queue in front of it
 *   apps/serve_predict.c one image through a model into the answer of a route (JSON, PNG)
 *   apps/serve_stream.c  live video streams (the pipeline of `ravlt video`), MJPEG and SSE
 *   apps/serve_page.c    the web page (apps/serve_page.html, compiled into the binary)
 * docs/service.md describes the routes, limits and lifecycle.
 */
#ifndef RV_APPS_SERVE_H
#define RV_APPS_SERVE_H

#include "apps/image_run.h"
#include "apps/opts.h"
#include "apps/video_run.h"
#include "models/model.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* ---- models ------------------------------------------------------------------------------ */
typedef struct {
  char name[128];           /* as it appears in routes */
  const char *weights;      /* --weights value (W of NAME=W) */
  rv_model *m;              /* immutable once loaded: shared by the workers and streams */
  rv_task task;
  int n_classes, masks;     /* masks: a detector with a mask head */
  const char **names;       /* class names and palette (rv_cli_class_tables) */
  unsigned char (*palette)[3];
  int *cat_ids;             /* category id of each class (detectors) */
  rv_run_model rm;          /* the same model for the per-image work of the CLI (apps/image_run.h:
                               rv_task_*); its pointers are the fields above (not freed twice) */
} srv_model;

/* ---- one inference request --------------------------------------------------------------- */
typedef enum { SRV_JSON, SRV_PNG, SRV_OVERLAY, SRV_V2 } srv_format;

typedef struct {
  int model;               /* index into srv->models */
  srv_format fmt;
  double thr;              /* score_thr (detectors); < 0: not given */
  int tiled;               /* tile=HxW given: the model on tiles of the image (docs/large-images.md) */
  rv_tile_opts to;         /* then: as `detect --tile` / `segment --tile` (apps/tile_cli.h) */
  const unsigned char *data; /* the encoded image (owned by the request) */
  size_t len;
  const char *v2_id;       /* v2: the request's "id" (NULL: none) */
  unsigned v2_outputs;     /* v2: bit k set: output k requested (0: all) */
  double t_queued;         /* rv_now() when it was queued */
} srv_input;

typedef struct {
  int status;              /* HTTP status */
  char *body;              /* malloc'd */
  size_t len;
  const char *ctype;       /* static string */
  double decode_s, infer_s, encode_s;
} srv_output;

/* Runs one request on a worker's state: decode, the model, the answer's body. Never fails
 * without an answer: errors become {"error": ...} with their status. */
typedef struct rv_srv rv_srv;
void srv_predict(rv_srv *s, const srv_input *in, srv_output *out, rv_ctx *ctx, rv_arena *arena);

/* ---- the pool ---------------------------------------------------------------------------- */
typedef struct srv_pool srv_pool;
/* n workers, each with a context (threads: the budget of a call, 0 the cores, shared by the
 * calls in flight on a model; max_pixels) and an arena of its own. */
int srv_pool_create(srv_pool **out, rv_srv *s, int workers, int queue_cap, int threads, long long max_pixels);
/* Queue a request and wait for its answer: 0 done (out filled), 503 queue full (or the pool
 * stopping), 504 still queued after timeout_s. */
int srv_pool_run(srv_pool *p, const srv_input *in, srv_output *out, double timeout_s);
void srv_pool_counts(srv_pool *p, int *waiting, int *busy); /* both at one instant */
int srv_pool_full(srv_pool *p);           /* 1 when a request would be refused now */
/* Stop: queued requests are answered 503 at once; running ones are finished. Joins. */
void srv_pool_free(srv_pool *p);
/* Wake every waiter with 503 now (the grace period ran out); the images in work are cancelled
 * (rv_ctx_cancel: their model call stops at its next check) and answered 503. */
void srv_pool_abandon(srv_pool *p);

/* ---- streams ----------------------------------------------------------------------------- */
typedef struct srv_stream srv_stream;
/* "NAME[:MODEL]=INPUT" -> a stream (not started); a usage error message in err. */
int srv_stream_parse(srv_stream **out, const char *spec, rv_srv *s, char *err, size_t cap);
int srv_stream_start(srv_stream *st, rv_ctx *ctx); /* opens the input: RV_OK or the error */
void srv_stream_stop(srv_stream *st);              /* cancel, finalise, join; viewers end */
void srv_stream_free(srv_stream *st);
const char *srv_stream_name(const srv_stream *st);
/* GET /streams/NAME.mjpg and /streams/NAME/events: a response, or NULL with *status 410
 * (ended). */
struct MHD_Response;
struct MHD_Response *srv_stream_mjpeg(srv_stream *st, int *status);
struct MHD_Response *srv_stream_events(srv_stream *st, int *status);
/* The stream's figures as a JSON object (malloc'd). */
char *srv_stream_json(srv_stream *st);
long srv_stream_frames(srv_stream *st);

/* ---- the server -------------------------------------------------------------------------- */
#define SRV_MAX_MODELS RV_OPT_LIST_MAX
#define SRV_BUCKETS 14

typedef struct {
  long count[SRV_BUCKETS + 1]; /* cumulative at the end (+Inf) */
  double sum;
  long n;
} srv_hist;

struct rv_srv {
  srv_model models[SRV_MAX_MODELS];
  int n_models;
  srv_stream *streams[SRV_MAX_MODELS];
  int n_streams;
  srv_pool *pool;
  /* limits */
  size_t max_body;
  double timeout_s;
  long long max_pixels;
  char *token;             /* NULL: no authentication */
  size_t token_len;
  int loop, every, drop;   /* streams */
  double stream_thr;
  /* state */
  volatile int ready;      /* every model loaded, not draining */
  volatile int draining;   /* SIGTERM / SIGINT received */
  pthread_mutex_t mu;      /* the counters below and in_flight */
  pthread_cond_t idle;     /* in_flight reached 0 */
  int in_flight;           /* requests whose headers were read, not yet answered (streams apart) */
  /* metrics */
  long *req_count;         /* [(n_models + 1) x 600]: model (n_models: none) x status */
  srv_hist req_hist, infer_hist;
  char *page;              /* GET / (built once) */
  size_t page_len;
  double t_start;
};

/* The routes (apps/serve_http.c): the libmicrohttpd handler and its completion callback. */
struct MHD_Connection;
enum MHD_Result srv_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload, size_t *upload_size, void **req_cls);
void srv_completed(void *cls, struct MHD_Connection *c, void **req_cls, int toe);
void srv_metrics_observe(rv_srv *s, srv_hist *h, double seconds);

/* The page (apps/serve_page.c): the HTML with the models and streams filled in (malloc'd). */
char *srv_page_build(const rv_srv *s, size_t *len);

/* Small text helpers (apps/serve_predict.c). */
typedef struct {
  char *d;
  size_t n, cap;
  int oom;
} srv_buf;
void srv_buf_put(srv_buf *b, const char *s, size_t n);
void srv_buf_str(srv_buf *b, const char *s);
void srv_buf_printf(srv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void srv_buf_json_str(srv_buf *b, const char *s); /* a JSON string literal, escaped */
/* {"error": "msg"} (malloc'd; NULL when out of memory). */
char *srv_error_json(const char *msg, size_t *len);
/* 1 when the image's header says it has more than cap pixels (or a side over cap): the check
 * the decoder makes, before any decoding; *w, *h: the header's size. */
int srv_over_limit(const unsigned char *data, size_t len, long long cap, long long *w, long long *h);
/* base64 (RFC 4648, padding optional, no white space) -> bytes; -1 when malformed. */
long srv_base64_decode(unsigned char *out, const char *in, size_t n);

#endif
