/* `ravlt serve`: the routes (docs/service.md), as libmicrohttpd's access handler. One
 * connection, one thread (MHD_USE_THREAD_PER_CONNECTION): a handler may wait for its answer
 * from the worker pool and a stream viewer for the next frame without holding anyone else.
 * Every error is {"error": "one line"} with its status. */
#define _GNU_SOURCE /* syscall(SYS_gettid): a thread's own priority */
#include "apps/serve.h"

#include "apps/cli.h"
#include "apps/tile_cli.h"
#include "formats/image.h"
#include <ravlt/version.h>

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

enum route {
  R_NONE,
  R_PAGE,
  R_METRICS,
  R_LIVE,
  R_READY,
  R_SERVER,
  R_MODEL_META,
  R_MODEL_READY,
  R_INFER,
  R_PREDICT,
  R_MODELS,
  R_STREAMS,
  R_MJPEG,
  R_EVENTS,
};

typedef struct {
  rv_srv *s;
  enum route route;
  int model;    /* model index, -1 none */
  int stream;   /* stream index, -1 none */
  int status;   /* an answer decided before the body (0: none) */
  char err[600];
  const char *allow; /* 405: the methods the route takes */
  /* the body */
  unsigned char *body;
  size_t len, cap;
  int too_big;  /* over --max-body: the rest is discarded, 413 */
  int pixels_checked;
  struct MHD_PostProcessor *pp;
  int multipart, got_file;
  /* bookkeeping */
  double t0;
  int code;       /* the status answered (metrics) */
  int in_flight;  /* counted in s->in_flight */
  int timed;      /* an inference route: observed in the request histogram */
  int early;      /* answered before its body was read */
  int discard;    /* the body is read and dropped (503 decided before it) */
  char line[256]; /* "METHOD URL" for the access log (--verbose) */
  int counted;    /* in the metrics (when its answer was queued) */
} req;

/* ---- answers ----------------------------------------------------------------------------- */

static void count_request(rv_srv *s, req *r);

/* Queues the answer; the request is counted in the metrics now (before a client that reads
 * it can ask /metrics), not when the connection is done with it. */
static enum MHD_Result send_resp(rv_srv *s, req *r, struct MHD_Connection *c, int status, struct MHD_Response *resp) {
  if (!resp) return MHD_NO;
  if (s->draining) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  r->code = status;
  count_request(s, r);
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, resp);
  MHD_destroy_response(resp);
  return ok;
}

static enum MHD_Result send_body(rv_srv *s, req *r, struct MHD_Connection *c, int status, char *body, size_t len,
                                 const char *ctype) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  return send_resp(s, r, c, status, resp);
}

static enum MHD_Result send_error(rv_srv *s, req *r, struct MHD_Connection *c, int status, const char *msg) {
  size_t len = 0;
  char *b = srv_error_json(msg, &len);
  if (!b) return MHD_NO;
  struct MHD_Response *resp = MHD_create_response_from_buffer(len, b, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(b);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  if (status == 503) MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
  if (status == 401) MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"ravlt\"");
  if (status == 405 && r->allow) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
  /* an answer before the body was read: the connection closes (the rest of the body is not read) */
  if (r->early) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  return send_resp(s, r, c, status, resp);
}

static enum MHD_Result send_text(rv_srv *s, req *r, struct MHD_Connection *c, int status, const char *text, const char *ctype) {
  char *b = strdup(text);
  return b ? send_body(s, r, c, status, b, strlen(b), ctype) : MHD_NO;
}

/* ---- metrics ----------------------------------------------------------------------------- */

static const double BUCKETS[SRV_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};

void srv_metrics_observe(rv_srv *s, srv_hist *h, double sec) {
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < SRV_BUCKETS; i++)
    if (sec <= BUCKETS[i]) h->count[i]++;
  h->count[SRV_BUCKETS]++;
  h->sum += sec;
  h->n++;
  pthread_mutex_unlock(&s->mu);
}

static void hist_text(srv_buf *b, const char *name, const char *help, const srv_hist *h) {
  srv_buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
  for (int i = 0; i < SRV_BUCKETS; i++) srv_buf_printf(b, "%s_bucket{le=\"%g\"} %ld\n", name, BUCKETS[i], h->count[i]);
  srv_buf_printf(b, "%s_bucket{le=\"+Inf\"} %ld\n%s_sum %.6f\n%s_count %ld\n", name, h->count[SRV_BUCKETS], name, h->sum, name, h->n);
}

static long rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, res = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
    fclose(f);
  }
  return res * sysconf(_SC_PAGESIZE);
}

/* A Prometheus label value: \, " and newline escaped. */
static void label_value(srv_buf *b, const char *v) {
  for (; *v; v++) {
    if (*v == '\\' || *v == '"') srv_buf_printf(b, "\\%c", *v);
    else if (*v == '\n') srv_buf_str(b, "\\n");
    else srv_buf_put(b, v, 1);
  }
}

static char *metrics_text(rv_srv *s, size_t *len) {
  srv_buf b = {0};
  srv_buf_str(&b, "# HELP ravlt_requests_total Requests answered, by model (empty: no model route) and status.\n"
                  "# TYPE ravlt_requests_total counter\n");
  pthread_mutex_lock(&s->mu);
  for (int m = 0; m <= s->n_models; m++)
    for (int code = 100; code < 600; code++) {
      long n = s->req_count[m * 600 + code];
      if (!n) continue;
      srv_buf_str(&b, "ravlt_requests_total{model=\"");
      if (m < s->n_models) label_value(&b, s->models[m].name);
      srv_buf_printf(&b, "\",code=\"%d\"} %ld\n", code, n);
    }
  srv_hist rh = s->req_hist, ih = s->infer_hist;
  pthread_mutex_unlock(&s->mu);
  hist_text(&b, "ravlt_request_duration_seconds", "Time from the request's headers to its answer (predict and infer routes).", &rh);
  hist_text(&b, "ravlt_inference_duration_seconds", "Time in the model (forward pass and post-processing) per image.", &ih);
  int waiting, busy;
  srv_pool_counts(s->pool, &waiting, &busy);
  srv_buf_printf(&b, "# HELP ravlt_queue_depth Requests waiting for a worker (not those being worked on).\n"
                     "# TYPE ravlt_queue_depth gauge\nravlt_queue_depth %d\n", waiting);
  srv_buf_printf(&b, "# HELP ravlt_requests_in_progress Requests being worked on.\n"
                     "# TYPE ravlt_requests_in_progress gauge\nravlt_requests_in_progress %d\n", busy);
  srv_buf_str(&b, "# HELP ravlt_stream_frames_total Frames a live stream has delivered.\n# TYPE ravlt_stream_frames_total counter\n");
  for (int i = 0; i < s->n_streams; i++) {
    srv_buf_str(&b, "ravlt_stream_frames_total{stream=\"");
    label_value(&b, srv_stream_name(s->streams[i]));
    srv_buf_printf(&b, "\"} %ld\n", srv_stream_frames(s->streams[i]));
  }
  srv_buf_printf(&b, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                     "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %ld\n", rss_bytes());
  srv_buf_printf(&b, "# HELP process_start_time_seconds Start time of the process since the epoch, in seconds.\n"
                     "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.3f\n", s->t_start);
  if (b.oom) {
    free(b.d);
    return NULL;
  }
  *len = b.n;
  return b.d;
}

/* ---- routing ----------------------------------------------------------------------------- */

static int find_model(const rv_srv *s, const char *name, size_t n) {
  for (int i = 0; i < s->n_models; i++)
    if (strlen(s->models[i].name) == n && !strncmp(s->models[i].name, name, n)) return i;
  return -1;
}

static int find_stream(const rv_srv *s, const char *name, size_t n) {
  for (int i = 0; i < s->n_streams; i++) {
    const char *sn = srv_stream_name(s->streams[i]);
    if (strlen(sn) == n && !strncmp(sn, name, n)) return i;
  }
  return -1;
}

static int is(const char *method, const char *m) { return !strcmp(method, m); }

/* The route of url and method: r->route, r->model, or an answer in r->status / r->err. */
static void route(rv_srv *s, req *r, const char *url, const char *method) {
  int get = is(method, "GET") || is(method, "HEAD"), post = is(method, "POST");
  r->model = r->stream = -1;
  const char *want = "GET, HEAD";
  if (!strcmp(url, "/") || !strcmp(url, "/index.html")) r->route = R_PAGE;
  else if (!strcmp(url, "/metrics")) r->route = R_METRICS;
  else if (!strcmp(url, "/v2/health/live")) r->route = R_LIVE;
  else if (!strcmp(url, "/v2/health/ready")) r->route = R_READY;
  else if (!strcmp(url, "/v2")) r->route = R_SERVER;
  else if (!strcmp(url, "/v1/models")) r->route = R_MODELS;
  else if (!strcmp(url, "/streams")) r->route = R_STREAMS;
  else if (!strncmp(url, "/v2/models/", 11) || !strncmp(url, "/v1/models/", 11)) {
    const char *name = url + 11, *slash = strchr(name, '/');
    size_t n = slash ? (size_t)(slash - name) : strlen(name);
    const char *rest = slash ? slash : "";
    int v2 = url[2] == '2';
    if (v2 && !strncmp(rest, "/versions/", 10)) { /* /v2/models/M/versions/V/...: one version */
      const char *vs = strchr(rest + 10, '/');
      rest = vs ? vs : "";
    }
    if (v2 && !*rest) r->route = R_MODEL_META;
    else if (v2 && !strcmp(rest, "/ready")) r->route = R_MODEL_READY;
    else if (v2 && !strcmp(rest, "/infer")) r->route = R_INFER, want = "POST";
    else if (!v2 && !strcmp(rest, "/predict")) r->route = R_PREDICT, want = "POST";
    if (r->route != R_NONE) {
      r->model = find_model(s, name, n);
      if (r->model < 0) {
        r->status = 404;
        snprintf(r->err, sizeof r->err, "no model '%.*s' (served: see GET /v1/models)", (int)(n < 200 ? n : 200), name);
        return;
      }
    }
  } else if (!strncmp(url, "/streams/", 9)) {
    const char *name = url + 9;
    size_t n = strlen(name);
    if (n > 5 && !strcmp(name + n - 5, ".mjpg")) r->route = R_MJPEG, n -= 5;
    else if (n > 7 && !strcmp(name + n - 7, "/events")) r->route = R_EVENTS, n -= 7;
    if (r->route != R_NONE && (r->stream = find_stream(s, name, n)) < 0) {
      r->status = 404;
      snprintf(r->err, sizeof r->err, "no stream '%.*s'", (int)(n < 200 ? n : 200), name);
      return;
    }
  }
  if (r->route == R_NONE) {
    r->status = 404;
    snprintf(r->err, sizeof r->err, "no route %.200s (see GET / or docs/service.md)", url);
    return;
  }
  int ok = !strcmp(want, "POST") ? post : get;
  if (!ok) {
    r->status = 405;
    r->allow = want;
    snprintf(r->err, sizeof r->err, "method %.20s not allowed on %.200s (allowed: %s)", method, url, want);
  }
}

/* Constant-time comparison of the Authorization header with "Bearer <token>". */
static int authorized(const rv_srv *s, struct MHD_Connection *c) {
  const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  if (!h || strncasecmp(h, "Bearer ", 7) != 0) return 0;
  h += 7;
  while (*h == ' ') h++;
  size_t n = strlen(h);
  unsigned diff = (unsigned)(n ^ s->token_len);
  for (size_t i = 0; i < s->token_len; i++) diff |= (unsigned char)s->token[i] ^ (unsigned char)(i < n ? h[i] : 0);
  return diff == 0;
}

/* The media type of a Content-Type value, lower case, without parameters. */
static void media_type(char *out, size_t cap, const char *v) {
  size_t n = 0;
  while (v && *v == ' ') v++;
  for (; v && *v && *v != ';' && *v != ' ' && n + 1 < cap; v++) out[n++] = (char)tolower((unsigned char)*v);
  out[n] = 0;
}

static const char *const IMAGE_TYPES[] = {"image/jpeg", "image/png", "image/webp", "image/bmp", "application/octet-stream", NULL};

/* ---- the body ---------------------------------------------------------------------------- */

static void body_add(rv_srv *s, req *r, const char *data, size_t n) {
  if (r->too_big) return;
  if (r->len + n > s->max_body) {
    r->too_big = 1;
    free(r->body);
    r->body = NULL;
    r->len = r->cap = 0;
    return;
  }
  if (r->len + n > r->cap) {
    size_t nc = r->cap ? r->cap : 65536;
    while (nc < r->len + n) nc *= 2;
    if (nc > s->max_body) nc = s->max_body;
    unsigned char *d = realloc(r->body, nc);
    if (!d) {
      r->too_big = 1; /* cannot hold it: refused the same way */
      free(r->body);
      r->body = NULL;
      r->len = r->cap = 0;
      return;
    }
    r->body = d;
    r->cap = nc;
  }
  memcpy(r->body + r->len, data, n);
  r->len += n;
}

static enum MHD_Result post_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                                  const char *content_type, const char *transfer_encoding, const char *data,
                                  uint64_t off, size_t size) {
  (void)kind, (void)filename, (void)content_type, (void)transfer_encoding, (void)off;
  req *r = cls;
  if (!strcmp(key, "file")) {
    r->got_file = 1;
    body_add(r->s, r, data, size);
  }
  return MHD_YES;
}

/* ---- the routes' answers ----------------------------------------------------------------- */

static enum MHD_Result model_meta(rv_srv *s, req *r, struct MHD_Connection *c) {
  const srv_model *M = &s->models[r->model];
  srv_buf b = {0};
  srv_buf_str(&b, "{\"name\": ");
  srv_buf_json_str(&b, M->name);
  srv_buf_str(&b, ", \"versions\": [\"1\"], \"platform\": \"ravlt\", \"inputs\": [{\"name\": \"image\", \"datatype\": \"BYTES\", "
                  "\"shape\": [1]}], \"outputs\": [");
  if (M->task == RV_TASK_DETECT) {
    srv_buf_str(&b, "{\"name\": \"boxes\", \"datatype\": \"FP32\", \"shape\": [-1, 4]}, {\"name\": \"scores\", \"datatype\": "
                    "\"FP32\", \"shape\": [-1]}, {\"name\": \"labels\", \"datatype\": \"INT32\", \"shape\": [-1]}");
    if (M->masks) srv_buf_str(&b, ", {\"name\": \"masks\", \"datatype\": \"BYTES\", \"shape\": [-1]}");
  } else {
    srv_buf_str(&b, "{\"name\": \"label_map\", \"datatype\": \"INT32\", \"shape\": [-1, -1]}");
  }
  srv_buf_printf(&b, "], \"parameters\": {\"task\": \"%s\", \"architecture\": ", M->task == RV_TASK_DETECT ? "detection" : "segmentation");
  srv_buf_json_str(&b, rv_model_arch(M->m));
  srv_buf_printf(&b, ", \"num_classes\": %d, \"classes\": [", M->n_classes);
  for (int k = 0; k < M->n_classes; k++) {
    if (k) srv_buf_str(&b, ", ");
    srv_buf_json_str(&b, M->names[k]);
  }
  srv_buf_str(&b, "]}}\n");
  if (b.oom) {
    free(b.d);
    return send_error(s, r, c, 500, "out of memory");
  }
  return send_body(s, r, c, 200, b.d, b.n, "application/json");
}

static enum MHD_Result models_list(rv_srv *s, req *r, struct MHD_Connection *c) {
  srv_buf b = {0};
  srv_buf_str(&b, "{\"models\": [");
  for (int i = 0; i < s->n_models; i++) {
    const srv_model *M = &s->models[i];
    srv_buf_str(&b, i ? ", {\"name\": " : "{\"name\": ");
    srv_buf_json_str(&b, M->name);
    srv_buf_printf(&b, ", \"task\": \"%s\", \"architecture\": ", M->task == RV_TASK_DETECT ? "detection" : "segmentation");
    srv_buf_json_str(&b, rv_model_arch(M->m));
    srv_buf_printf(&b, ", \"num_classes\": %d, \"masks\": %s}", M->n_classes, M->masks ? "true" : "false");
  }
  srv_buf_str(&b, "]}\n");
  if (b.oom) {
    free(b.d);
    return send_error(s, r, c, 500, "out of memory");
  }
  return send_body(s, r, c, 200, b.d, b.n, "application/json");
}

static enum MHD_Result streams_list(rv_srv *s, req *r, struct MHD_Connection *c) {
  srv_buf b = {0};
  srv_buf_str(&b, "{\"streams\": [");
  for (int i = 0; i < s->n_streams; i++) {
    char *j = srv_stream_json(s->streams[i]);
    if (!j) b.oom = 1;
    else srv_buf_str(&b, j);
    if (i + 1 < s->n_streams) srv_buf_str(&b, ", ");
    free(j);
  }
  srv_buf_str(&b, "]}\n");
  if (b.oom) {
    free(b.d);
    return send_error(s, r, c, 500, "out of memory");
  }
  return send_body(s, r, c, 200, b.d, b.n, "application/json");
}

/* Runs the request on the pool and answers. An image over --max-pixels is refused from its
 * header here, before it takes a place in the queue (the worker checks again: srv_predict). */
static enum MHD_Result run_job(rv_srv *s, req *r, struct MHD_Connection *c, srv_input *in) {
  long long w = 0, h = 0, cap = s->max_pixels;
  if (srv_over_limit(in->data, in->len, cap, &w, &h)) {
    char msg[200];
    snprintf(msg, sizeof msg, "image: %lldx%lld = %.0f pixels, over the limit of %lld (--max-pixels)", w, h, (double)w * (double)h, cap);
    return send_error(s, r, c, 413, msg);
  }
  srv_output out = {0};
  in->t_queued = rv_now();
  int rc = srv_pool_run(s->pool, in, &out, s->timeout_s);
  if (rc == 503) {
    free(out.body);
    return send_error(s, r, c, 503, s->draining ? "the server is shutting down" : "the queue is full: retry later");
  }
  if (rc == 504) {
    free(out.body);
    char msg[160];
    snprintf(msg, sizeof msg, "no worker was free within %g s (--timeout)", s->timeout_s);
    return send_error(s, r, c, 504, msg);
  }
  if (out.status == 200) srv_metrics_observe(s, &s->infer_hist, out.infer_s);
  if (!out.body) return send_error(s, r, c, 500, "out of memory");
  return send_body(s, r, c, out.status, out.body, out.len, out.ctype);
}

static int parse_thr(const char *v, double *thr) {
  char *end;
  double x = strtod(v, &end);
  if (!*v || *end || !(x >= 0 && x <= 1)) return -1;
  *thr = x;
  return 0;
}

/* The tiling query of predict (tile=HxW or N, tile_overlap, tile_merge=nms|nmm, tile_merge_thr,
 * tile_full=0|1, tile_score_thr, max_dets): the CLI's --tile options (apps/tile_cli.h), turned
 * into in->to the same way. NULL, or the 400 message. */
static const char *parse_tiling(struct MHD_Connection *c, const srv_model *M, srv_input *in) {
  static const char *const names[] = {"tile", "tile_overlap", "tile_merge", "tile_merge_thr", "tile_full",
                                      "tile_score_thr", "max_dets"};
  const char *v[7];
  int any = 0;
  for (int i = 0; i < 7; i++) any |= (v[i] = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, names[i])) != NULL;
  if (!any) return NULL;
  rv_tile_cli t = {{0, 0}, 0.2, "nms", 0.5, 0, 0, 0};
  if (!v[0]) return "tile_overlap, tile_merge, tile_merge_thr, tile_full, tile_score_thr and max_dets need tile=HxW";
  if (rv_opts_parse_size(v[0], 1, 65536, t.tile)) return "tile must be HxW (height first) or N, sides 1..65536";
  if (v[1] && rv_opts_parse_double(v[1], 0, 1, RV_OPT_OPEN_HI, &t.overlap)) return "tile_overlap must be a number in [0, 1)";
  int det = M->task == RV_TASK_DETECT;
  if (!det && (v[2] || v[3] || v[4] || v[5] || v[6]))
    return "tile_merge, tile_merge_thr, tile_full, tile_score_thr and max_dets are for detectors";
  if (v[2] && strcmp(v[2], "nms") && strcmp(v[2], "nmm")) return "tile_merge must be nms or nmm";
  if (v[2]) t.merge = v[2];
  if (v[3] && rv_opts_parse_double(v[3], 0, 1, RV_OPT_OPEN_LO, &t.merge_thr)) return "tile_merge_thr must be a number in (0, 1]";
  if (v[4] && strcmp(v[4], "0") && strcmp(v[4], "1") && strcmp(v[4], "true") && strcmp(v[4], "false"))
    return "tile_full must be 0, 1, true or false";
  t.full = v[4] && (!strcmp(v[4], "1") || !strcmp(v[4], "true"));
  if (v[5] && rv_opts_parse_double(v[5], 0, 1, 0, &t.score_thr)) return "tile_score_thr must be a number in [0, 1]";
  long md = 0;
  if (v[6] && rv_opts_parse_long(v[6], 1, 1000000, &md)) return "max_dets must be an integer in 1..1000000";
  t.max_dets = (int)md;
  in->tiled = rv_tile_cli_opts(&t, &in->to);
  return NULL;
}

static enum MHD_Result predict(rv_srv *s, req *r, struct MHD_Connection *c) {
  srv_input in = {0};
  in.model = r->model;
  in.thr = -1;
  const char *f = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
  const char *t = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "score_thr");
  if (!f || !strcmp(f, "json")) in.fmt = SRV_JSON;
  else if (!strcmp(f, "png")) in.fmt = SRV_PNG;
  else if (!strcmp(f, "overlay")) in.fmt = SRV_OVERLAY;
  else return send_error(s, r, c, 400, "format must be json, png or overlay");
  if (t && parse_thr(t, &in.thr)) return send_error(s, r, c, 400, "score_thr must be a number in [0, 1]");
  const srv_model *M = &s->models[r->model];
  const char *terr = parse_tiling(c, M, &in);
  if (terr) return send_error(s, r, c, 400, terr);
  if (in.fmt == SRV_PNG && M->task == RV_TASK_DETECT) {
    char msg[300];
    snprintf(msg, sizeof msg, "format=png is the label map of a segmentation model; '%s' is a detector (format=json or overlay)", M->name);
    return send_error(s, r, c, 400, msg);
  }
  if (r->multipart && !r->got_file) return send_error(s, r, c, 400, "multipart/form-data without a 'file' field");
  if (!r->len) return send_error(s, r, c, 400, "empty body: send the encoded image (or multipart/form-data with a 'file' field)");
  in.data = r->body;
  in.len = r->len;
  return run_job(s, r, c, &in);
}

static const char *const V2_DET[] = {"boxes", "scores", "labels", "masks", NULL};
static const char *const V2_SEG[] = {"label_map", NULL};

static enum MHD_Result infer(rv_srv *s, req *r, struct MHD_Connection *c) {
  const srv_model *M = &s->models[r->model];
  if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Inference-Header-Content-Length"))
    return send_error(s, r, c, 400, "the binary data extension is not supported: send JSON with base64 BYTES");
  cJSON *j = cJSON_ParseWithLength((const char *)r->body, r->len);
  if (!j || !cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return send_error(s, r, c, 400, "the body is not a JSON object");
  }
  srv_input in = {0};
  in.model = r->model;
  in.thr = -1;
  in.fmt = SRV_V2;
  const char *err = NULL;
  cJSON *inputs = cJSON_GetObjectItemCaseSensitive(j, "inputs"), *input = NULL;
  if (!cJSON_IsArray(inputs) || cJSON_GetArraySize(inputs) < 1) err = "\"inputs\" must be a non-empty array";
  for (cJSON *i = cJSON_IsArray(inputs) ? inputs->child : NULL; i && !input; i = i->next) {
    cJSON *nm = cJSON_GetObjectItemCaseSensitive(i, "name");
    if (cJSON_IsString(nm) && !strcmp(nm->valuestring, "image")) input = i;
  }
  if (!err && !input) err = "no input named \"image\"";
  cJSON *dt = input ? cJSON_GetObjectItemCaseSensitive(input, "datatype") : NULL;
  cJSON *data = input ? cJSON_GetObjectItemCaseSensitive(input, "data") : NULL;
  if (!err && (!cJSON_IsString(dt) || strcmp(dt->valuestring, "BYTES"))) err = "input \"image\": datatype must be \"BYTES\"";
  while (!err && cJSON_IsArray(data) && cJSON_GetArraySize(data) == 1) data = data->child; /* [["..."]] too */
  if (!err && !cJSON_IsString(data)) err = "input \"image\": data must hold one base64 string (the encoded image)";
  cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
  if (cJSON_IsString(id)) in.v2_id = id->valuestring;
  cJSON *params = cJSON_GetObjectItemCaseSensitive(j, "parameters");
  cJSON *thr = cJSON_IsObject(params) ? cJSON_GetObjectItemCaseSensitive(params, "score_thr") : NULL;
  if (!err && thr && (!cJSON_IsNumber(thr) || !(thr->valuedouble >= 0 && thr->valuedouble <= 1)))
    err = "parameters.score_thr must be a number in [0, 1]";
  if (thr && !err) in.thr = thr->valuedouble;
  cJSON *outs = cJSON_GetObjectItemCaseSensitive(j, "outputs");
  const char *const *names = M->task == RV_TASK_DETECT ? V2_DET : V2_SEG;
  static __thread char bad[300];
  for (cJSON *o = cJSON_IsArray(outs) ? outs->child : NULL; o && !err; o = o->next) {
    cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
    int k = 0;
    while (cJSON_IsString(nm) && names[k] && (strcmp(names[k], nm->valuestring) || (k == 3 && !M->masks))) k++;
    if (!cJSON_IsString(nm) || !names[k]) {
      snprintf(bad, sizeof bad, "outputs: no output '%.100s' (GET /v2/models/%.60s lists them)",
               cJSON_IsString(nm) ? nm->valuestring : "?", M->name);
      err = bad;
    } else {
      in.v2_outputs |= 1u << k;
    }
  }
  enum MHD_Result ok;
  unsigned char *img = NULL;
  long n = 0;
  if (!err) {
    size_t sl = strlen(data->valuestring);
    img = malloc(sl / 4 * 3 + 3);
    if (!img) err = "out of memory";
    else if ((n = srv_base64_decode(img, data->valuestring, sl)) <= 0) err = "input \"image\": data is not base64 of an image";
  }
  if (err) {
    ok = send_error(s, r, c, 400, err);
  } else {
    in.data = img;
    in.len = (size_t)n;
    ok = run_job(s, r, c, &in);
  }
  free(img);
  cJSON_Delete(j);
  return ok;
}

/* A body follows the headers (Content-Length > 0 or Transfer-Encoding). */
static int has_body(struct MHD_Connection *c) {
  const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  return (cl && strtoull(cl, NULL, 10) > 0) || MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

/* ---- the handler ------------------------------------------------------------------------- */

static void count_request(rv_srv *s, req *r) {
  if (r->counted) return;
  r->counted = 1;
  if (r->timed) srv_metrics_observe(s, &s->req_hist, rv_now() - r->t0);
  int m = r->model >= 0 ? r->model : s->n_models;
  int code = r->code >= 100 && r->code < 600 ? r->code : 500;
  pthread_mutex_lock(&s->mu);
  s->req_count[m * 600 + code]++;
  pthread_mutex_unlock(&s->mu);
}

static void leave(rv_srv *s, req *r) {
  if (!r->in_flight) return;
  r->in_flight = 0;
  pthread_mutex_lock(&s->mu);
  if (--s->in_flight == 0) pthread_cond_broadcast(&s->idle);
  pthread_mutex_unlock(&s->mu);
}

void srv_completed(void *cls, struct MHD_Connection *c, void **req_cls, int toe) {
  rv_srv *s = cls;
  req *r = *req_cls;
  if (!r) return;
  double dt = rv_now() - r->t0;
  if (rv_cli.verbose) { /* the access log */
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char host[64] = "?";
    if (ci && ci->client_addr) {
      const struct sockaddr *sa = ci->client_addr;
      if (sa->sa_family == AF_INET) inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof host);
      else if (sa->sa_family == AF_INET6) inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof host);
    }
    fprintf(stderr, "ravlt serve: %s %s %d %.1f ms%s\n", host, r->line, r->code, dt * 1e3, toe ? " (closed early)" : "");
  }
  if (r->pp) MHD_destroy_post_processor(r->pp);
  leave(s, r);
  free(r->body);
  free(r);
  *req_cls = NULL;
}

enum MHD_Result srv_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload, size_t *upload_size, void **req_cls) {
  (void)version;
  rv_srv *s = cls;
  req *r = *req_cls;
  if (!r) { /* the headers are read: decide what can be decided before the body */
    static __thread int niced;
    if (!niced) { /* this connection's thread yields the cores to the workers' inference: a
                     flood of requests answered 503 at once must not slow the images in work
                     (32 connection threads at nice 10 outweighed 2 inference threads) */
      niced = 1;
      setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    }
    if (!(r = calloc(1, sizeof *r))) return MHD_NO;
    *req_cls = r;
    r->s = s;
    r->t0 = rv_now();
    snprintf(r->line, sizeof r->line, "%.10s %.200s", method, url);
    pthread_mutex_lock(&s->mu);
    s->in_flight++;
    pthread_mutex_unlock(&s->mu);
    r->in_flight = 1;
    route(s, r, url, method);
    int open_route = r->route == R_LIVE || r->route == R_READY;
    if (!r->status && s->token && !open_route && !authorized(s, c)) {
      r->status = 401;
      snprintf(r->err, sizeof r->err, "missing or wrong bearer token (Authorization: Bearer <token>)");
    }
    if (!r->status && (r->route == R_PREDICT || r->route == R_INFER)) {
      r->timed = 1;
      const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
      unsigned long long len = cl ? strtoull(cl, NULL, 10) : 0;
      char mt[128];
      media_type(mt, sizeof mt, MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE));
      if (cl && len > s->max_body) {
        r->status = 413;
        snprintf(r->err, sizeof r->err, "body of %llu bytes is over the limit of %zu (--max-body)", len, s->max_body);
      } else if (r->route == R_PREDICT && !strcmp(mt, "multipart/form-data")) {
        r->multipart = 1;
      } else if (r->route == R_PREDICT && mt[0]) {
        int k = 0;
        while (IMAGE_TYPES[k] && strcmp(IMAGE_TYPES[k], mt)) k++;
        if (!IMAGE_TYPES[k]) {
          r->status = 415;
          snprintf(r->err, sizeof r->err, "Content-Type %.60s: send image/jpeg, image/png, image/webp, image/bmp, "
                   "application/octet-stream or multipart/form-data with a 'file' field", mt);
        }
      }
      if (!r->status && srv_pool_full(s->pool)) {
        /* the body is read and dropped (not kept), then 503 on a connection that stays
           open: a client retrying at once costs no new connection */
        r->status = 503;
        r->discard = 1;
        snprintf(r->err, sizeof r->err, s->draining ? "the server is shutting down" : "the queue is full: retry later");
      }
      if (!r->status && cl && len > 0 && !r->multipart) {
        size_t first = len < ((size_t)1 << 22) ? (size_t)len : (size_t)1 << 22; /* grows as the body comes */
        r->body = malloc(first);
        if (r->body) r->cap = first;
      }
    }
    /* an error before the body: answered now, and the connection closes (the body is not
       read); else the answer comes at the next call (after the body, if any) */
    if (r->status && !r->discard && (r->route == R_PREDICT || r->route == R_INFER || has_body(c))) {
      r->early = 1;
      return send_error(s, r, c, r->status, r->err);
    }
    return MHD_YES;
  }
  if (r->status && !*upload_size) return send_error(s, r, c, r->status, r->err);
  if (*upload_size) {
    size_t n = *upload_size;
    *upload_size = 0;
    if (r->discard) return MHD_YES;
    if (r->multipart) {
      if (!r->pp) {
        r->pp = MHD_create_post_processor(c, 65536, post_field, r);
        if (!r->pp) return send_error(s, r, c, 400, "malformed multipart/form-data (no boundary?)");
      }
      if (MHD_post_process(r->pp, upload, n) != MHD_YES) r->got_file = 0;
    } else {
      body_add(s, r, upload, n);
    }
    return MHD_YES;
  }
  switch (r->route) {
  case R_PAGE: {
    char *p = malloc(s->page_len);
    if (!p) return MHD_NO;
    memcpy(p, s->page, s->page_len);
    return send_body(s, r, c, 200, p, s->page_len, "text/html; charset=utf-8");
  }
  case R_METRICS: {
    size_t len = 0;
    char *m = metrics_text(s, &len);
    return m ? send_body(s, r, c, 200, m, len, "text/plain; version=0.0.4; charset=utf-8") : send_error(s, r, c, 500, "out of memory");
  }
  case R_LIVE: return send_text(s, r, c, 200, "{\"live\": true}\n", "application/json");
  case R_READY:
    return s->ready && !s->draining ? send_text(s, r, c, 200, "{\"ready\": true}\n", "application/json")
                                    : send_error(s, r, c, 503, s->draining ? "shutting down" : "models are loading");
  case R_SERVER: {
    char b[256];
    snprintf(b, sizeof b, "{\"name\": \"ravlt\", \"version\": \"%s\", \"extensions\": []}\n", RAVLT_VERSION_STRING);
    return send_text(s, r, c, 200, b, "application/json");
  }
  case R_MODELS: return models_list(s, r, c);
  case R_STREAMS: return streams_list(s, r, c);
  case R_MODEL_META: return model_meta(s, r, c);
  case R_MODEL_READY: {
    srv_buf nb = {0};
    srv_buf_str(&nb, "{\"name\": ");
    srv_buf_json_str(&nb, s->models[r->model].name);
    srv_buf_str(&nb, ", \"ready\": true}\n");
    if (nb.oom) {
      free(nb.d);
      return MHD_NO;
    }
    return s->ready ? send_body(s, r, c, 200, nb.d, nb.n, "application/json")
                    : (free(nb.d), send_error(s, r, c, 503, "the model is loading"));
  }
  case R_MJPEG:
  case R_EVENTS: {
    int status = 200;
    srv_stream *st = s->streams[r->stream];
    struct MHD_Response *resp = r->route == R_MJPEG ? srv_stream_mjpeg(st, &status) : srv_stream_events(st, &status);
    if (!resp) {
      char msg[200];
      snprintf(msg, sizeof msg, "stream '%s' has ended", srv_stream_name(st));
      return send_error(s, r, c, status, status == 410 ? msg : "out of memory");
    }
    leave(s, r); /* a viewer is not a request in flight: it ends with the stream */
    return send_resp(s, r, c, 200, resp);
  }
  case R_PREDICT:
    if (r->too_big) {
      char msg[160];
      snprintf(msg, sizeof msg, "body over the limit of %zu bytes (--max-body)", s->max_body);
      return send_error(s, r, c, 413, msg);
    }
    return predict(s, r, c);
  case R_INFER:
    if (r->too_big) {
      char msg[160];
      snprintf(msg, sizeof msg, "body over the limit of %zu bytes (--max-body)", s->max_body);
      return send_error(s, r, c, 413, msg);
    }
    return infer(s, r, c);
  case R_NONE: break;
  }
  return send_error(s, r, c, 404, "no such route");
}
