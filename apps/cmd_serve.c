/* `ravlt serve [--weights [NAME=]W ...] [options]`: an HTTP inference service (apps/serve.h,
 * docs/service.md). This file: the options, start-up (models, streams, workers, the socket,
 * libmicrohttpd), the signals and the shutdown with its grace period. */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "apps/commands.h"
#include "apps/model_run.h"
#include "apps/serve.h"
#include "models/zoo.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <omp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  rv_opt_list weights, streams;
  const char *host, *token_file, *tls_cert, *tls_key, *precision;
  int port, workers, queue, loop, drop, strict, max_conn, max_per_ip;
  long every, max_body;
  double timeout, grace, idle, thr;
} serve_opts;

static const rv_opt OPTS[] = {
    {"--weights", NULL, RV_OPT_LIST, offsetof(serve_opts, weights), 0, 0, NULL, "[NAME=]W",
     "a model to serve (repeatable): a checkpoint (.pth or .safetensors), a\n"
     "'ravlt models' name, 'demo' or 'demo-det'; NAME (in the routes) defaults\n"
     "to the zoo name, the file name without its extension, or demo / demo-det\n"
     "(none given: both demo models)", 0, NULL},
    {"--host", NULL, RV_OPT_STR, offsetof(serve_opts, host), 0, 0, NULL, "H",
     "address to listen on (0.0.0.0 or :: for every interface: give a\n"
     "--token-file then)", 0, "127.0.0.1"},
    {"--port", NULL, RV_OPT_INT, offsetof(serve_opts, port), 0, 65535, NULL, "P",
     "TCP port (0: a free port, printed when listening)", 0, "8080"},
    {"--workers", NULL, RV_OPT_INT, offsetof(serve_opts, workers), 1, 256, NULL, "N",
     "inference workers sharing the models' weights; the calls in flight on a\n"
     "model share its threads (--threads, default the cores)", 0, "1"},
    {"--queue", NULL, RV_OPT_INT, offsetof(serve_opts, queue), 0, 65536, NULL, "N",
     "requests waiting for a worker at most, besides those being worked on;\n"
     "beyond, 503 with Retry-After at once", 0, "16"},
    {"--timeout", NULL, RV_OPT_DOUBLE, offsetof(serve_opts, timeout), 0, 86400, NULL, "S",
     "a request still waiting for a worker after S seconds gets 504", RV_OPT_OPEN_LO, "60"},
    {"--max-body", NULL, RV_OPT_LONG, offsetof(serve_opts, max_body), 1, 4294967296.0, NULL, "BYTES",
     "largest request body (64 MiB); larger: 413", 0, "67108864"},
    {"--max-connections", NULL, RV_OPT_INT, offsetof(serve_opts, max_conn), 1, 65536, NULL, "N",
     "open connections at most; more are refused", 0, "256"},
    {"--max-connections-per-ip", NULL, RV_OPT_INT, offsetof(serve_opts, max_per_ip), 0, 65536, NULL, "N",
     "open connections from one address at most (0: no limit; behind a\n"
     "reverse proxy, every client has the proxy's address)", 0, "64"},
    {"--idle-timeout", NULL, RV_OPT_DOUBLE, offsetof(serve_opts, idle), 1, 86400, NULL, "S",
     "close a connection idle (nothing received or sent) for S seconds: a\n"
     "stalled client cannot keep its connection", 0, "15"},
    {"--token-file", NULL, RV_OPT_STR, offsetof(serve_opts, token_file), 0, 0, NULL, "F",
     "every route but /v2/health/* needs 'Authorization: Bearer TOKEN', TOKEN\n"
     "the file's content without trailing white space", 0, NULL},
    {"--tls-cert", NULL, RV_OPT_STR, offsetof(serve_opts, tls_cert), 0, 0, NULL, "F", "serve HTTPS with this PEM certificate (and --tls-key)", 0, NULL},
    {"--tls-key", NULL, RV_OPT_STR, offsetof(serve_opts, tls_key), 0, 0, NULL, "F", "the PEM private key of --tls-cert", 0, NULL},
    {"--grace", NULL, RV_OPT_DOUBLE, offsetof(serve_opts, grace), 0, 86400, NULL, "S",
     "on SIGTERM / SIGINT: seconds to answer the requests already received;\n"
     "exit 0, or 128 + the signal when time ran out", 0, "30"},
    {"--stream", NULL, RV_OPT_LIST, offsetof(serve_opts, streams), 0, 0, NULL, "NAME[:MODEL]=INPUT",
     "a live stream (repeatable): INPUT a video file, camera index or URL as\n"
     "'ravlt video' takes it, run with MODEL (default: the first --weights);\n"
     "GET /streams/NAME.mjpg and /streams/NAME/events", 0, NULL},
    {"--loop", NULL, RV_OPT_FLAG, offsetof(serve_opts, loop), 0, 0, NULL, NULL,
     "streams of files start again at their end (default: they end: 410)", 0, NULL},
    {"--every", NULL, RV_OPT_LONG, offsetof(serve_opts, every), 1, 1000000, NULL, "N",
     "streams: run the model on every Nth frame (the others are drawn with\n"
     "the last result and get no event)", 0, "1"},
    {"--drop", NULL, RV_OPT_FLAG, offsetof(serve_opts, drop), 0, 0, NULL, NULL,
     "streams from cameras and URLs: drop the frames inference cannot keep up\n"
     "with (counted); files are read at their frame rate and never drop", 0, NULL},
    {"--score-thr", NULL, RV_OPT_DOUBLE, offsetof(serve_opts, thr), 0, 1, NULL, "T",
     "streams: detections drawn and sent with score >= T", 0, "0.3"},
    RV_CLI_PRECISION_OPT(serve_opts, precision),
    RV_OPT_STRICT(serve_opts, strict),
    RV_OPT_END};

const rv_cmd_spec rv_spec_serve = {
    "serve", "[--weights [NAME=]W ...] [options]",
    "An HTTP inference service: each model is loaded once and served by a fixed pool of\n"
    "workers until SIGTERM or SIGINT. Routes (docs/service.md): POST /v1/models/NAME/predict\n"
    "(the image as the body or a multipart 'file'; ?format=json|png|overlay, ?score_thr=T),\n"
    "the KServe v2 / Open Inference Protocol (/v2/health/live, /v2/health/ready,\n"
    "/v2/models/NAME, /v2/models/NAME/ready, POST /v2/models/NAME/infer), GET /metrics\n"
    "(Prometheus), GET / (a web page: upload an image, watch the streams), GET\n"
    "/streams/NAME.mjpg and /streams/NAME/events (Server-Sent Events: the JSON lines of\n"
    "'ravlt video --json'). Errors are {\"error\": \"...\"} with their status.\n",
    OPTS, 0,
    "Limits: a full queue answers 503 with Retry-After; a request waiting longer than\n"
    "--timeout 504; a body over --max-body 413 (before it is read when Content-Length says\n"
    "so; the connection closes); an image over --max-pixels 413 from its header, before\n"
    "decoding; not an image 400; another Content-Type 415; an unknown model 404; a wrong\n"
    "method 405. Nothing from a request becomes a file path.\n"
    "\n"
    "A request: curl --data-binary @photo.jpg -H 'Content-Type: image/jpeg' \\\n"
    "  localhost:8080/v1/models/upernet_ravlt_s/predict\n"
    "\n"
    "Exit status: 0 stopped by SIGTERM / SIGINT with every request answered; 128+N when the\n"
    "--grace period ran out (143 for SIGTERM); 1 a start-up failure (a model, a stream, the\n"
    "port in use: one line, before anything listens); 2 usage.\n",
    "  ravlt serve --weights upernet_ravlt_s.pth --port 8080\n"
    "  ravlt serve --weights seg=demo --weights det=demo-det --workers 2 --threads 1\n"
    "  ravlt serve --weights demo --stream cam=0 --drop --host 0.0.0.0 --token-file token.txt\n",
    sizeof(serve_opts)};

static int fail_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail_line(const char *fmt, ...) {
  fprintf(stderr, "ravlt serve: ");
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return 1;
}

static int name_ok(const char *s, size_t n) {
  if (!n || n >= 128) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      return 0;
  }
  return 1;
}

static int exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}

/* "[NAME=]W" -> name and W (W is the whole text when it names a file). */
static int split_weights(const char *spec, char *name, size_t cap, const char **w) {
  const char *eq = strchr(spec, '=');
  if (eq && !exists(spec) && name_ok(spec, (size_t)(eq - spec))) {
    snprintf(name, cap, "%.*s", (int)(eq - spec), spec);
    *w = eq + 1;
    return 0;
  }
  *w = spec;
  if (rv_cli_is_demo(spec) && !exists(spec)) snprintf(name, cap, "%s", spec);
  else if (!exists(spec) && rv_zoo_find(spec)) snprintf(name, cap, "%s", spec);
  else {
    const char *b = strrchr(spec, '/');
    b = b ? b + 1 : spec;
    const char *dot = strrchr(b, '.');
    size_t n = dot && dot != b ? (size_t)(dot - b) : strlen(b);
    snprintf(name, cap, "%.*s", (int)(n < cap - 1 ? n : cap - 1), b);
  }
  return name_ok(name, strlen(name)) ? 0 : -1;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *d = malloc(cap);
  for (size_t k; d && (k = fread(d + n, 1, cap - n - 1, f)) > 0;) {
    n += k;
    if (n + 1 == cap) {
      char *nd = cap < (1u << 24) ? realloc(d, cap * 2) : NULL;
      if (!nd) {
        free(d);
        d = NULL;
        break;
      }
      d = nd;
      cap *= 2;
    }
  }
  if (ferror(f)) {
    free(d);
    d = NULL;
  }
  fclose(f);
  if (d) d[n] = 0;
  if (len) *len = n;
  return d;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  if (!rv_cli.verbose) return; /* libmicrohttpd's notes on clients (resets, timeouts): --verbose */
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  size_t n = strlen(msg);
  while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = 0;
  fprintf(stderr, "ravlt serve: http: %s\n", msg);
}

/* The listening socket, bound before libmicrohttpd starts (a port in use is then our own
 * one-line error), its port in *port. -1 with the message printed. */
static int listen_on(const char *host, int *port) {
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  char ps[16];
  snprintf(ps, sizeof ps, "%d", *port);
  int e = getaddrinfo(host, ps, &hints, &res);
  if (e) return fail_line("--host %s: %s", host, gai_strerror(e)), -1;
  int fd = -1, err = 0;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, 128)) {
      err = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    fail_line("cannot listen on %s port %d: %s", host, *port, strerror(err));
    return -1;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (!getsockname(fd, (struct sockaddr *)&ss, &sl))
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
  return fd;
}

static int loopback(const char *host) {
  return !strcmp(host, "localhost") || !strncmp(host, "127.", 4) || !strcmp(host, "::1") || !strcmp(host, "[::1]");
}

static void free_models(rv_srv *s) {
  for (int i = 0; i < s->n_models; i++) {
    srv_model *M = &s->models[i];
    free(M->names);
    free(M->palette);
    free(M->cat_ids);
    rv_model_free(M->m);
  }
  s->n_models = 0;
}

static double mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int rv_cmd_serve(int argc, char **argv) {
  serve_opts o;
  memset(&o, 0, sizeof o); /* the table's defaults are stored by the parser */
  int npos;
  int prc = rv_cli_parse(&rv_spec_serve, &o, argc, argv, &npos);
  if (prc >= 0) return prc;
  if (!o.tls_cert != !o.tls_key) return rv_cli_usage_error("serve", "--tls-cert and --tls-key go together");

  rv_srv S, *s = &S;
  memset(s, 0, sizeof S);
  s->max_body = (size_t)o.max_body;
  s->timeout_s = o.timeout;
  s->max_pixels = rv_cli.max_pixels > 0 ? rv_cli.max_pixels : RV_DEFAULT_MAX_PIXELS;
  s->loop = o.loop;
  s->every = (int)o.every;
  s->drop = o.drop;
  s->stream_thr = o.thr;
  s->t_start = (double)time(NULL);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->idle, NULL);
  /* the names first: a usage error before any model loads */
  const char *w[SRV_MAX_MODELS];
  int nw = o.weights.n;
  for (int i = 0; i < nw; i++) {
    if (split_weights(o.weights.v[i], s->models[i].name, sizeof s->models[i].name, &w[i]))
      return rv_cli_usage_error("serve", "--weights %s: '%s' cannot be a model name in a route (letters, digits, '_', '-', "
                                "'.'): give NAME=W", o.weights.v[i], s->models[i].name);
    for (int k = 0; k < i; k++)
      if (!strcmp(s->models[k].name, s->models[i].name))
        return rv_cli_usage_error("serve", "two models named '%s': give NAME=W", s->models[i].name);
  }
  if (!nw) { /* no --weights: both demo models */
    snprintf(s->models[0].name, sizeof s->models[0].name, RV_CLI_DEMO);
    snprintf(s->models[1].name, sizeof s->models[1].name, RV_CLI_DEMO_DET);
    w[0] = RV_CLI_DEMO;
    w[1] = RV_CLI_DEMO_DET;
    nw = 2;
  }
  for (int i = 0; i < o.streams.n; i++) {
    char err[400];
    s->n_models = nw; /* names are known: the streams refer to them */
    if (srv_stream_parse(&s->streams[i], o.streams.v[i], s, err, sizeof err)) {
      for (int k = 0; k < i; k++) srv_stream_free(s->streams[k]);
      return rv_cli_usage_error("serve", "%s", err);
    }
    s->n_streams = i + 1;
  }
  s->n_models = 0;
  char *token = NULL;
  if (o.token_file) {
    token = slurp(o.token_file, NULL);
    if (!token) {
      for (int k = 0; k < s->n_streams; k++) srv_stream_free(s->streams[k]);
      return fail_line("--token-file %s: %s", o.token_file, strerror(errno));
    }
    size_t n = strlen(token);
    while (n && (token[n - 1] == ' ' || token[n - 1] == '\t' || token[n - 1] == '\n' || token[n - 1] == '\r')) token[--n] = 0;
    if (!n) {
      free(token);
      for (int k = 0; k < s->n_streams; k++) srv_stream_free(s->streams[k]);
      return fail_line("--token-file %s: empty (the token is the file's content)", o.token_file);
    }
    s->token = token;
    s->token_len = n;
  }
  char *cert = NULL, *key = NULL;
  int rc = 1, fd = -1;
  struct MHD_Daemon *d = NULL;
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return fail_line("out of memory");
  if (o.tls_cert) {
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
      fail_line("--tls-cert: this libmicrohttpd has no TLS");
      goto out;
    }
    if (!(cert = slurp(o.tls_cert, NULL))) {
      fail_line("--tls-cert %s: %s", o.tls_cert, strerror(errno));
      goto out;
    }
    if (!(key = slurp(o.tls_key, NULL))) {
      fail_line("--tls-key %s: %s", o.tls_key, strerror(errno));
      goto out;
    }
  }
  /* SIGINT / SIGTERM are taken by sigtimedwait below: blocked in every thread from here on */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);

  /* threads: the budget of a model's calls, shared by those in flight (docs/embedding.md): a
     request alone runs on all of them, N at once on about threads / N each; --threads, else
     OpenMP's default (OMP_NUM_THREADS or the cores), what the CLI uses */
  int cores = omp_get_max_threads();
  int threads = rv_cli.threads > 0 ? rv_cli.threads : 0;
  rv_ctx_set_threads(ctx, threads);
  for (int i = 0; i < nw; i++) {
    srv_model *M = &s->models[i];
    M->weights = w[i];
    rv_status st = rv_cli_load_model_ex(&M->m, w[i], NULL, &(rv_model_load_opts){o.strict}, ctx);
    if (st == RV_OK) s->n_models = i + 1;
    if (st == RV_OK) st = rv_cli_set_precision(M->m, o.precision, ctx);
    if (st != RV_OK) {
      fail_line("--weights %s: %s", o.weights.n ? o.weights.v[i] : w[i], rv_ctx_errmsg(ctx));
      goto out;
    }
    M->task = rv_model_task(M->m);
    M->n_classes = rv_model_num_classes(M->m);
    M->masks = M->task == RV_TASK_DETECT && rv_detector_has_masks(rv_model_detector(M->m));
    M->cat_ids = malloc(sizeof *M->cat_ids * (size_t)M->n_classes);
    if (!M->cat_ids || rv_cli_class_tables(M->m, &M->names, &M->palette)) {
      fail_line("out of memory");
      goto out;
    }
    for (int k = 0; k < M->n_classes; k++) M->cat_ids[k] = rv_model_category_id(M->m, k);
    M->rm.kind = M->task == RV_TASK_DETECT ? RV_RUN_DETECT : RV_RUN_SEGMENT;
    M->rm.m = M->m;
    M->rm.weights = M->weights;
    M->rm.demo = rv_cli_is_demo(w[i]);
    M->rm.num_classes = M->n_classes;
    M->rm.names = M->names;
    M->rm.palette = M->palette;
  }
  if (!(s->req_count = calloc((size_t)(s->n_models + 1) * 600, sizeof *s->req_count))) {
    fail_line("out of memory");
    goto out;
  }
  for (int i = 0; i < s->n_streams; i++) {
    rv_status st = srv_stream_start(s->streams[i], ctx);
    if (st != RV_OK) {
      fail_line("%s", rv_ctx_errmsg(ctx));
      goto out;
    }
  }
  if (srv_pool_create(&s->pool, s, o.workers, o.queue, threads, s->max_pixels)) {
    fail_line("cannot start %d worker(s)", o.workers);
    goto out;
  }
  if (!(s->page = srv_page_build(s, &s->page_len))) {
    fail_line("out of memory");
    goto out;
  }
  int port = o.port;
  if ((fd = listen_on(o.host, &port)) < 0) goto out;
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
  if (MHD_is_feature_supported(MHD_FEATURE_POLL) == MHD_YES) flags |= MHD_USE_POLL;
  if (cert) flags |= MHD_USE_TLS;
  struct MHD_OptionItem tls[] = {
      {cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, cert},
      {MHD_OPTION_HTTPS_MEM_KEY, 0, key},
      {MHD_OPTION_END, 0, NULL},
  };
  d = MHD_start_daemon(flags, 0, NULL, NULL, srv_handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                       MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)o.max_conn,
                       MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)o.max_per_ip,
                       MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(o.idle + 0.5), MHD_OPTION_NOTIFY_COMPLETED, srv_completed, s,
                       MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024), MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
  if (!d) {
    fail_line("libmicrohttpd did not start on %s port %d%s", o.host, port, cert ? " (a bad --tls-cert / --tls-key?)" : "");
    goto out;
  }
  s->ready = 1;
  {
    char list[1024] = "";
    for (int i = 0; i < s->n_models; i++) {
      size_t l = strlen(list);
      snprintf(list + l, sizeof list - l, "%s%s (%s)", i ? ", " : "", s->models[i].name,
               s->models[i].task == RV_TASK_DETECT ? "detection" : "segmentation");
    }
    const char *h = strchr(o.host, ':') ? "[" : "", *he = strchr(o.host, ':') ? "]" : "";
    fprintf(stderr, "ravlt serve: listening on %s://%s%s%s:%d/ (models: %s; %d worker(s) sharing %d thread(s), queue %d)\n",
            cert ? "https" : "http", h, o.host, he, port, list, o.workers, threads ? threads : cores, o.queue);
    if (!token && !loopback(o.host))
      fprintf(stderr, "ravlt serve: warning: listening on %s without --token-file: anyone who reaches this port can use "
                      "the models\n", o.host);
    fflush(stderr);
  }
  /* until SIGTERM / SIGINT */
  int sig = 0;
  while (sig <= 0) sig = sigwaitinfo(&sigs, NULL);
  s->draining = 1; /* /v2/health/ready answers 503; answers close their connection */
  if (!rv_cli.quiet) fprintf(stderr, "ravlt serve: signal %d: stopping (up to %g s for the requests in progress)\n", sig, o.grace);
  MHD_socket lfd = MHD_quiesce_daemon(d); /* no new connections */
  (void)lfd;
  for (int i = 0; i < s->n_streams; i++) srv_stream_stop(s->streams[i]);
  double deadline = mono() + o.grace;
  int timed_out = 0;
  pthread_mutex_lock(&s->mu);
  while (s->in_flight > 0) {
    double left = deadline - mono();
    if (left <= 0) {
      timed_out = 1;
      break;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double step = left < 0.2 ? left : 0.2;
    ts.tv_nsec += (long)(step * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&s->idle, &s->mu, &ts);
    pthread_mutex_unlock(&s->mu);
    struct timespec zero = {0, 0};
    if (sigtimedwait(&sigs, NULL, &zero) > 0) { /* a second signal: no more waiting */
      timed_out = 1;
      pthread_mutex_lock(&s->mu);
      break;
    }
    pthread_mutex_lock(&s->mu);
  }
  int left = s->in_flight;
  pthread_mutex_unlock(&s->mu);
  if (timed_out) {
    fprintf(stderr, "ravlt serve: %d request(s) still in progress: closing them\n", left);
    srv_pool_abandon(s->pool);
  }
  MHD_stop_daemon(d);
  d = NULL;
  rc = timed_out ? 128 + sig : 0;
  if (!rv_cli.quiet) fprintf(stderr, "ravlt serve: stopped\n");
out:
  if (d) MHD_stop_daemon(d);
  if (fd >= 0) close(fd);
  for (int i = 0; i < s->n_streams; i++) srv_stream_free(s->streams[i]);
  srv_pool_free(s->pool);
  free_models(s);
  free(s->req_count);
  free(s->page);
  free(token);
  free(cert);
  free(key);
  rv_ctx_free(ctx);
  pthread_cond_destroy(&s->idle);
  pthread_mutex_destroy(&s->mu);
  return rc;
}
