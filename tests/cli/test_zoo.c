/* Model zoo and downloads (models/zoo.h, formats/download.h) against a tiny HTTP server on
 * 127.0.0.1 run by this test in a thread: full download + conversion, an interrupted
 * transfer resumed with Range (by a second call and by retries), a server that ignores
 * Range, cache reuse without network, offline / 404 / corrupt-file errors, and the CLI path
 * (`ravlt segment --weights <zoo name>` with RAVLT_BASE_URL pointing at the server). */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include "formats/download.h"
#include "formats/weights.h"
#include "models/model.h"
#include "models/zoo.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CKPT "e2e/semantic_fpn/checkpoint.pth"

/* ---- the loopback HTTP server ---- */
typedef struct {
  int lfd, port;
  const unsigned char *body;
  size_t len;
  atomic_long cut_after;    /* >= 0: the next cut_requests responses stop after this many body bytes */
  atomic_int cut_requests;
  atomic_int ignore_range;  /* answer 200 with the whole body even when asked for a range */
  atomic_int status;        /* 0: normal; else e.g. 404 */
  atomic_int requests;
  atomic_long last_range;   /* -1: the last request had no Range */
  char last_path[256];
  pthread_t th;
} server;

static void send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
    if (k <= 0) return;
    c += k;
    n -= (size_t)k;
  }
}

static void serve_one(server *s, int fd) {
  char req[4096];
  size_t got = 0;
  while (got + 1 < sizeof req) {
    ssize_t k = recv(fd, req + got, sizeof req - 1 - got, 0);
    if (k <= 0) break;
    got += (size_t)k;
    req[got] = 0;
    if (strstr(req, "\r\n\r\n")) break;
  }
  req[got] = 0;
  long range = -1;
  for (char *line = strstr(req, "\r\n"); line && line[2]; line = strstr(line + 2, "\r\n"))
    if (strncasecmp(line + 2, "Range: bytes=", 13) == 0) range = atol(line + 15);
  char path[256] = "";
  sscanf(req, "GET %255s", path);
  memcpy(s->last_path, path, sizeof path);
  s->last_range = range;
  char hdr[512];
  if (s->status) {
    snprintf(hdr, sizeof hdr, "HTTP/1.1 %d Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", s->status);
    s->requests++;
    send_all(fd, hdr, strlen(hdr));
    return;
  }
  size_t from = 0;
  if (range >= 0 && !s->ignore_range) {
    if ((size_t)range >= s->len) {
      snprintf(hdr, sizeof hdr, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */%zu\r\n"
               "Content-Length: 0\r\nConnection: close\r\n\r\n", s->len);
      s->requests++;
      send_all(fd, hdr, strlen(hdr));
      return;
    }
    from = (size_t)range;
    snprintf(hdr, sizeof hdr, "HTTP/1.1 206 Partial Content\r\nContent-Length: %zu\r\n"
             "Content-Range: bytes %zu-%zu/%zu\r\nConnection: close\r\n\r\n",
             s->len - from, from, s->len - 1, s->len);
  } else {
    snprintf(hdr, sizeof hdr, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", s->len);
  }
  size_t n = s->len - from;
  if (s->cut_requests > 0) {
    s->cut_requests--;
    if ((size_t)s->cut_after < n) n = (size_t)s->cut_after;
  }
  s->requests++;
  send_all(fd, hdr, strlen(hdr));
  send_all(fd, s->body + from, n);
}

static void *server_main(void *arg) {
  server *s = arg;
  for (;;) {
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0) break; /* listening socket shut down */
    serve_one(s, fd);
    shutdown(fd, SHUT_WR);
    close(fd);
  }
  return NULL;
}

static void server_start(server *s, const unsigned char *body, size_t len) {
  memset(s, 0, sizeof *s);
  s->body = body;
  s->len = len;
  s->last_range = -1;
  s->lfd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(s->lfd >= 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(s->lfd, 8), 0);
  socklen_t al = sizeof a;
  assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
  s->port = ntohs(a.sin_port);
  assert_int_equal(pthread_create(&s->th, NULL, server_main, s), 0);
}

static void server_stop(server *s) {
  shutdown(s->lfd, SHUT_RDWR);
  pthread_join(s->th, NULL);
  close(s->lfd);
}

/* ---- helpers ---- */
static long fsize(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

static void make_tmp(char *dir, size_t cap) {
  snprintf(dir, cap, "/tmp/ravlt_test_zoo_XXXXXX");
  assert_non_null(mkdtemp(dir));
}

static void rm_rf(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

typedef struct {
  int64_t first, last, total;
  int calls;
} prog;

static int on_prog(void *user, int64_t done, int64_t total) {
  prog *p = user;
  if (p->calls == 0) p->first = done;
  p->calls++;
  if (done > p->last) p->last = done;
  if (total > 0) p->total = total;
  return 0;
}

typedef struct {
  unsigned char *ckpt;
  size_t len;
  server srv;
  char dir[256];
  rv_ctx *ctx;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  f->ckpt = (unsigned char *)test_read_file(fixture_path(CKPT), &f->len);
  if (!f->ckpt) {
    fprintf(stderr, "missing fixture %s\n", fixture_path(CKPT));
    free(f);
    return -1;
  }
  server_start(&f->srv, f->ckpt, f->len);
  make_tmp(f->dir, sizeof f->dir);
  f->ctx = rv_ctx_create();
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  server_stop(&f->srv);
  rm_rf(f->dir);
  rv_ctx_free(f->ctx);
  free(f->ckpt);
  free(f);
  return 0;
}

static void url_of(char *url, size_t cap, const fixture *f, const char *file) {
  snprintf(url, cap, "http://127.0.0.1:%d/%s", f->srv.port, file);
}

static void assert_same_file(const char *path, const unsigned char *data, size_t len) {
  size_t n = 0;
  unsigned char *b = (unsigned char *)test_read_file(path, &n);
  assert_non_null(b);
  assert_int_equal(n, len);
  assert_memory_equal(b, data, len);
  free(b);
}

/* Interrupted after 300000 bytes: the call fails and keeps a .part; the next call resumes
 * with Range: bytes=300000- and ends with the exact file, converted to safetensors. */
static void test_interrupted_then_resumed(void **state) {
  fixture *f = *state;
  char url[512], pth[512], part[600], out[4096];
  url_of(url, sizeof url, f, "fpn_s_1x.pth");
  snprintf(pth, sizeof pth, "%s/fpn_s_1x.pth", f->dir);
  snprintf(part, sizeof part, "%s.part", pth);
  f->srv.cut_after = 300000;
  f->srv.cut_requests = 1;
  rv_download_opts o = {0};
  prog p = {0};
  o.progress = on_prog;
  o.user = &p;
  rv_status st = rv_checkpoint_fetch(out, sizeof out, url, f->dir, "fpn_s_1x.pth", &o, f->ctx);
  assert_int_equal(st, RV_ERR_IO);
  const char *msg = rv_ctx_errmsg(f->ctx);
  assert_non_null(strstr(msg, "interrupted after 300000 bytes"));
  assert_non_null(strstr(msg, url));
  assert_non_null(strstr(msg, part));
  assert_int_equal(fsize(part), 300000);
  assert_int_equal(fsize(pth), -1);
  assert_int_equal(f->srv.last_range, -1);

  memset(&p, 0, sizeof p);
  st = rv_checkpoint_fetch(out, sizeof out, url, f->dir, "fpn_s_1x.pth", &o, f->ctx);
  assert_int_equal(st, RV_OK);
  assert_int_equal(f->srv.last_range, 300000);
  assert_int_equal(f->srv.requests, 2);
  assert_string_equal(f->srv.last_path, "/fpn_s_1x.pth");
  assert_same_file(pth, f->ckpt, f->len);
  assert_int_equal(fsize(part), -1);
  /* progress counts the resumed part: starts at >= 300000 and ends at the file size */
  assert_true(p.calls > 0);
  assert_true(p.first >= 300000);
  assert_int_equal(p.last, (int64_t)f->len);
  assert_int_equal(p.total, (int64_t)f->len);
  char want[512];
  snprintf(want, sizeof want, "%s/fpn_s_1x.safetensors", f->dir);
  assert_string_equal(out, want);
  rv_weights *a = NULL, *b = NULL;
  assert_int_equal(rv_weights_open(&a, out, f->ctx), RV_OK);
  assert_int_equal(rv_weights_open(&b, fixture_path("e2e/semantic_fpn/checkpoint.pth"), f->ctx), RV_OK);
  assert_int_equal(rv_weights_count(a), rv_weights_count(b));
  for (int i = 0; i < rv_weights_count(b); i++) {
    const rv_wtensor *tb = rv_weights_get(b, i), *ta = rv_weights_find(a, tb->name);
    assert_non_null(ta);
    assert_int_equal(ta->nbytes, tb->nbytes);
    assert_memory_equal(ta->data, tb->data, tb->nbytes);
  }
  if (rv_weights_meta(b, "config")) assert_string_equal(rv_weights_meta(a, "config"), rv_weights_meta(b, "config"));
  rv_weights_free(a);
  rv_weights_free(b);
  /* the converted model loads */
  rv_model *m = NULL;
  assert_int_equal(rv_model_load(&m, out, NULL, f->ctx), RV_OK);
  assert_string_equal(rv_model_arch(m), "semantic_fpn");
  rv_model_free(m);

  /* cache reuse: no request at all, even with the server refusing everything */
  f->srv.status = 500;
  int before = f->srv.requests;
  st = rv_checkpoint_fetch(out, sizeof out, url, f->dir, "fpn_s_1x.pth", &o, f->ctx);
  assert_int_equal(st, RV_OK);
  assert_int_equal(f->srv.requests, before);
  /* a .pth present without its safetensors is converted without a request */
  assert_int_equal(remove(out), 0);
  st = rv_checkpoint_fetch(out, sizeof out, url, f->dir, "fpn_s_1x.pth", &o, f->ctx);
  assert_int_equal(st, RV_OK);
  assert_int_equal(f->srv.requests, before);
  assert_true(fsize(out) > 0);
}

/* Two cuts, three attempts allowed: one call ends with the whole file. */
static void test_retries_resume_in_one_call(void **state) {
  fixture *f = *state;
  char url[512], dest[512];
  url_of(url, sizeof url, f, "x.pth");
  snprintf(dest, sizeof dest, "%s/x.pth", f->dir);
  f->srv.cut_after = 100000;
  f->srv.cut_requests = 2;
  rv_download_opts o = {0};
  o.retries = 3;
  assert_int_equal(rv_download(url, dest, &o, f->ctx), RV_OK);
  assert_int_equal(f->srv.requests, 3);
  assert_int_equal(f->srv.last_range, 200000);
  assert_same_file(dest, f->ckpt, f->len);
}

/* A server that ignores Range: the part is discarded and the download restarts at 0. */
static void test_server_without_ranges(void **state) {
  fixture *f = *state;
  char url[512], dest[512], part[600];
  url_of(url, sizeof url, f, "y.pth");
  snprintf(dest, sizeof dest, "%s/y.pth", f->dir);
  snprintf(part, sizeof part, "%s.part", dest);
  FILE *p = fopen(part, "wb");
  assert_non_null(p);
  assert_int_equal(fwrite(f->ckpt, 1, 5000, p), 5000);
  fclose(p);
  f->srv.ignore_range = 1;
  assert_int_equal(rv_download(url, dest, NULL, f->ctx), RV_OK);
  assert_same_file(dest, f->ckpt, f->len);
  assert_int_equal(f->srv.requests, 2); /* the refused resume, then from zero */
  assert_int_equal(f->srv.last_range, -1);
  /* a complete .part (416 to its range) is also started again */
  f->srv.ignore_range = 0;
  p = fopen(part, "wb");
  assert_non_null(p);
  assert_int_equal(fwrite(f->ckpt, 1, f->len, p), f->len);
  fclose(p);
  remove(dest);
  assert_int_equal(rv_download(url, dest, NULL, f->ctx), RV_OK);
  assert_same_file(dest, f->ckpt, f->len);
}

/* A file that is not a checkpoint is rejected with a clear message and deleted. */
static void test_corrupt_file_rejected(void **state) {
  fixture *f = *state;
  unsigned char junk[4096];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 37 + 11);
  f->srv.body = junk;
  f->srv.len = sizeof junk;
  char url[512], out[4096], pth[512];
  url_of(url, sizeof url, f, "bad.pth");
  snprintf(pth, sizeof pth, "%s/bad.pth", f->dir);
  rv_status st = rv_checkpoint_fetch(out, sizeof out, url, f->dir, "bad.pth", NULL, f->ctx);
  assert_int_equal(st, RV_ERR_FORMAT);
  const char *msg = rv_ctx_errmsg(f->ctx);
  assert_non_null(strstr(msg, "not a valid checkpoint"));
  assert_non_null(strstr(msg, pth));
  assert_non_null(strstr(msg, url));
  assert_int_equal(fsize(pth), -1);
  /* a truncated real checkpoint (the server announces only part of it) too */
  f->srv.body = f->ckpt;
  f->srv.len = f->len / 2;
  st = rv_checkpoint_fetch(out, sizeof out, url, f->dir, "bad.pth", NULL, f->ctx);
  assert_int_equal(st, RV_ERR_FORMAT);
  assert_int_equal(fsize(pth), -1);
  f->srv.len = f->len;
}

/* Offline and HTTP errors name the URL and where to put the file by hand. */
static void test_offline_and_http_errors(void **state) {
  fixture *f = *state;
  /* a port nobody listens on */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t al = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &al);
  close(fd);
  char url[512], dest[512], out[4096];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/fpn_t_1x.pth", ntohs(a.sin_port));
  snprintf(dest, sizeof dest, "%s/fpn_t_1x.pth", f->dir);
  rv_status st = rv_checkpoint_fetch(out, sizeof out, url, f->dir, "fpn_t_1x.pth", NULL, f->ctx);
  assert_int_equal(st, RV_ERR_IO);
  const char *msg = rv_ctx_errmsg(f->ctx);
  assert_non_null(strstr(msg, url));
  assert_non_null(strstr(msg, "fetch it by hand and put it at"));
  assert_non_null(strstr(msg, dest));
  assert_int_equal(fsize(dest), -1);
  /* offline mode never connects */
  rv_download_opts o = {0};
  o.offline = 1;
  url_of(url, sizeof url, f, "fpn_t_1x.pth");
  st = rv_checkpoint_fetch(out, sizeof out, url, f->dir, "fpn_t_1x.pth", &o, f->ctx);
  assert_int_equal(st, RV_ERR_IO);
  assert_non_null(strstr(rv_ctx_errmsg(f->ctx), "offline"));
  assert_non_null(strstr(rv_ctx_errmsg(f->ctx), dest));
  assert_int_equal(f->srv.requests, 0);
  /* 404 */
  f->srv.status = 404;
  st = rv_checkpoint_fetch(out, sizeof out, url, f->dir, "fpn_t_1x.pth", NULL, f->ctx);
  assert_int_equal(st, RV_ERR_NOTFOUND);
  assert_non_null(strstr(rv_ctx_errmsg(f->ctx), "HTTP 404"));
  assert_int_equal(fsize(dest), -1);
  char part[600];
  snprintf(part, sizeof part, "%s.part", dest);
  assert_int_equal(fsize(part), -1);
  f->srv.status = 0;
}

/* The table: every dense model name has an entry; URLs; base URL override; cache folder. */
static void test_zoo_table(void **state) {
  fixture *f = *state;
  for (const char *const *n = rv_model_names(); *n; n++) {
    const rv_zoo_entry *e = rv_zoo_find(*n);
    assert_non_null(e);
    assert_string_equal(e->model, *n);
  }
  int count = 0;
  const rv_zoo_entry *es = rv_zoo_entries(&count);
  assert_int_equal(count, 25);
  int with_file = 0;
  for (int i = 0; i < count; i++) {
    assert_non_null(es[i].name);
    if (es[i].file) {
      with_file++;
      assert_true(es[i].params_m > 0 && es[i].flops_g > 0 && es[i].value > 0);
    }
  }
  assert_int_equal(with_file, 21);
  assert_null(rv_zoo_find("no-such-model"));
  const rv_zoo_entry *e = rv_zoo_find("mask-rcnn-ravlt-s-3x");
  assert_non_null(e);
  assert_string_equal(e->model, "mask-rcnn-ravlt-s");
  assert_true(fabs(e->value - 51.4) < 1e-9 && fabs(e->mask_ap - 45.5) < 1e-9);
  char url[4096];
  unsetenv("RAVLT_BASE_URL");
  assert_int_equal(rv_zoo_url(url, sizeof url, rv_zoo_find("ravlt-s"), NULL, f->ctx), RV_OK);
  assert_string_equal(url, "https://huggingface.co/aldjalkdf/RAVLT/resolve/main/RAVLT_S.pth");
  setenv("RAVLT_BASE_URL", "http://mirror.example/ravlt/", 1);
  assert_int_equal(rv_zoo_url(url, sizeof url, e, NULL, f->ctx), RV_OK);
  assert_string_equal(url, "http://mirror.example/ravlt/maskrcnn_s_3x_36_epoch.pth");
  assert_int_equal(rv_zoo_url(url, sizeof url, e, "http://x", f->ctx), RV_OK);
  assert_string_equal(url, "http://x/maskrcnn_s_3x_36_epoch.pth");
  unsetenv("RAVLT_BASE_URL");
  assert_int_equal(rv_zoo_url(url, sizeof url, rv_zoo_find("upernet-ravlt-s"), NULL, f->ctx), RV_ERR_NOTFOUND);
  assert_non_null(strstr(rv_ctx_errmsg(f->ctx), "publishes no checkpoint"));
  /* cache folder: XDG_CACHE_HOME, else HOME/.cache */
  char cache[4096], want[600];
  setenv("XDG_CACHE_HOME", f->dir, 1);
  assert_int_equal(rv_cache_dir(cache, sizeof cache, f->ctx), RV_OK);
  snprintf(want, sizeof want, "%s/ravlt", f->dir);
  assert_string_equal(cache, want);
  unsetenv("XDG_CACHE_HOME");
  char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", f->dir, 1);
  assert_int_equal(rv_cache_dir(cache, sizeof cache, f->ctx), RV_OK);
  snprintf(want, sizeof want, "%s/.cache/ravlt", f->dir);
  assert_string_equal(cache, want);
  assert_true(path_exists(want));
  if (home) setenv("HOME", home, 1);
  free(home);
  /* rv_zoo_fetch through a base URL */
  char base[128], out[4096];
  snprintf(base, sizeof base, "http://127.0.0.1:%d/mirror", f->srv.port);
  assert_int_equal(rv_zoo_fetch(out, sizeof out, rv_zoo_find("semantic-fpn-ravlt-t"), base, f->dir, NULL, f->ctx), RV_OK);
  assert_string_equal(f->srv.last_path, "/mirror/fpn_t_1x.pth");
  snprintf(want, sizeof want, "%s/fpn_t_1x.safetensors", f->dir);
  assert_string_equal(out, want);
}

/* A mirror can be a local folder (file:// URL, what libcurl reads). */
static void test_file_url_mirror(void **state) {
  fixture *f = *state;
  char url[1200], out[4096];
  snprintf(url, sizeof url, "file://%s", fixture_path(CKPT));
  assert_int_equal(rv_checkpoint_fetch(out, sizeof out, url, f->dir, "fpn_b_1x.pth", NULL, f->ctx), RV_OK);
  char p[600];
  snprintf(p, sizeof p, "%s/fpn_b_1x.pth", f->dir);
  assert_same_file(p, f->ckpt, f->len);
  assert_true(fsize(out) > 0);
  snprintf(url, sizeof url, "file://%s/nope.pth", f->dir);
  assert_int_equal(rv_checkpoint_fetch(out, sizeof out, url, f->dir, "nope.pth", NULL, f->ctx), RV_ERR_NOTFOUND);
  assert_non_null(strstr(rv_ctx_errmsg(f->ctx), "put it at"));
  assert_int_equal(f->srv.requests, 0);
}

static int run_cmd(const char *cmd, char *out, size_t cap) {
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = 0;
  int rc = pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The CLI: `ravlt segment --weights semantic-fpn-ravlt-s` downloads from RAVLT_BASE_URL into
 * XDG_CACHE_HOME and segments; a second run uses the cache; `ravlt models` says cached. */
static void test_cli_by_name(void **state) {
  fixture *f = *state;
  char cmd[4096], out[16384];
  snprintf(cmd, sizeof cmd,
           "RAVLT_BASE_URL=http://127.0.0.1:%d XDG_CACHE_HOME='%s' '%s' segment --weights semantic-fpn-ravlt-s "
           "--out-dir '%s/out' '%s' 2>&1",
           f->srv.port, f->dir, RV_BIN, f->dir, fixture_path("e2e/semantic_fpn/image.jpg"));
  int rc = run_cmd(cmd, out, sizeof out);
  if (rc != 0) fprintf(stderr, "%s\n", out);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out, "fetching"));
  assert_int_equal(f->srv.requests, 1);
  char p[600];
  snprintf(p, sizeof p, "%s/ravlt/fpn_s_1x.safetensors", f->dir);
  assert_true(fsize(p) > 0);
  snprintf(p, sizeof p, "%s/out/image.png", f->dir);
  assert_true(fsize(p) > 0);
  /* again, from the cache (detect loads the model, then refuses a segmentor: quick) */
  snprintf(cmd, sizeof cmd,
           "RAVLT_BASE_URL=http://127.0.0.1:%d XDG_CACHE_HOME='%s' '%s' detect --weights semantic-fpn-ravlt-s "
           "--out-dir '%s/out' '%s' 2>&1",
           f->srv.port, f->dir, RV_BIN, f->dir, fixture_path("e2e/semantic_fpn/image.jpg"));
  rc = run_cmd(cmd, out, sizeof out);
  assert_int_equal(rc, 1);
  assert_null(strstr(out, "fetching"));
  assert_non_null(strstr(out, "not a detector"));
  assert_int_equal(f->srv.requests, 1);
  snprintf(cmd, sizeof cmd, "XDG_CACHE_HOME='%s' '%s' models 2>&1 | grep '^semantic-fpn-ravlt-s '", f->dir, RV_BIN);
  assert_int_equal(run_cmd(cmd, out, sizeof out), 0);
  assert_non_null(strstr(out, "yes"));
  /* unknown names and classifiers are clear errors */
  snprintf(cmd, sizeof cmd, "XDG_CACHE_HOME='%s' '%s' segment --weights no-such-model '%s' 2>&1", f->dir, RV_BIN,
           fixture_path("e2e/semantic_fpn/image.jpg"));
  assert_int_equal(run_cmd(cmd, out, sizeof out), 1);
  assert_non_null(strstr(out, "not a model name"));
  /* offline: the message names the URL and the path */
  snprintf(cmd, sizeof cmd, "RAVLT_OFFLINE=1 XDG_CACHE_HOME='%s' '%s' segment --weights semantic-fpn-ravlt-b '%s' 2>&1",
           f->dir, RV_BIN, fixture_path("e2e/semantic_fpn/image.jpg"));
  assert_int_equal(run_cmd(cmd, out, sizeof out), 1);
  assert_non_null(strstr(out, "https://huggingface.co/aldjalkdf/RAVLT/resolve/main/fpn_b_1x.pth"));
  assert_non_null(strstr(out, "/ravlt/fpn_b_1x.pth"));
  assert_int_equal(f->srv.requests, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_interrupted_then_resumed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_retries_resume_in_one_call, setup, teardown),
      cmocka_unit_test_setup_teardown(test_server_without_ranges, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_file_rejected, setup, teardown),
      cmocka_unit_test_setup_teardown(test_offline_and_http_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_zoo_table, setup, teardown),
      cmocka_unit_test_setup_teardown(test_file_url_mirror, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cli_by_name, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
