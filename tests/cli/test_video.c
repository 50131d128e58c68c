/* `ravlt video` and its pipeline (models/video_pipeline.h).
 * Pipeline unit tests with synthetic sources: frame order with --every (pass-through frames
 * carry the last result), max frames, files never drop, live sources drop when inference
 * is slow, read errors (ended early), corrupt (wrong size) frames, stalls, cancel, infer /
 * sink errors; results freed exactly once.
 * CLI tests on Debian opencv-doc videos with the e2e fixture checkpoints: a segmentor on
 * vtest.avi and a detector on Megamind.avi (--every, --json, --size), output frame counts
 * read back with OpenCV, JSON lines parsed with cJSON, a truncated file (exit 3, output
 * finalised), a file:// URL as a live source with --drop, Ctrl-C, bad arguments; frame
 * ranges (first_index), rv_video_seek against a sequential decode, several inputs with
 * --out-dir. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include "formats/image.h"
#include "video_test_util.h"
#include "eval/rle.h"
#include "models/video_pipeline.h"
#include <cjson/cJSON.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SAMPLES "/usr/share/doc/opencv-doc/examples/data"

/* ---- synthetic pipeline ------------------------------------------------------------------- */
typedef struct {
  long n;           /* frames available */
  long next;
  long fail_at;     /* read error at this frame (-1: none) */
  long bad_at;      /* wrong-size frame at this position (-1) */
  long stall_at;    /* sleep stall_s before this frame (-1) */
  double stall_s;
  double read_s;    /* per-read delay */
} src_t;

typedef struct {
  double infer_s;
  long infer_fail_at, sink_fail_at; /* -1: none */
  long seen[256];     /* frame index per sink call */
  int proc[256];
  long res[256];      /* result value seen */
  long nseen;
  int finish_calls;
  long mismatch;      /* frames whose pixels do not carry fi->index */
  rv_status finish_status;
  long allocated, freed;
  long cancel_after;  /* cancel once the sink saw this many frames (-1: never) */
  pthread_mutex_t mu;
} sink_t;

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

static rv_status syn_read(void *u, rv_image *frame, int *got, rv_ctx *ctx) {
  src_t *s = u;
  *got = 0;
  if (s->next == s->fail_at) return rv_error(ctx, RV_ERR_FORMAT, "synthetic: broken at frame %ld", s->next);
  if (s->next >= s->n) return RV_OK;
  if (s->next == s->stall_at) sleep_s(s->stall_s);
  if (s->read_s > 0) sleep_s(s->read_s);
  int w = s->next == s->bad_at ? 10 : 8;
  if (rv_image_alloc(frame, 6, w, 3, ctx) != RV_OK) return RV_ERR_NOMEM;
  long v = s->next++;
  memcpy(frame->data, &v, sizeof v);
  *got = 1;
  return RV_OK;
}

static rv_status syn_infer(void *u, void **res, const rv_image *frame, const rv_vp_frame *fi, rv_ctx *ctx) {
  sink_t *k = u;
  if (fi->index == k->infer_fail_at) return rv_error(ctx, RV_ERR_MODEL, "synthetic: model failed on %ld", fi->index);
  if (k->infer_s > 0) sleep_s(k->infer_s);
  long *r = malloc(sizeof *r);
  if (!r) return RV_ERR_NOMEM;
  memcpy(r, frame->data, sizeof *r);
  pthread_mutex_lock(&k->mu);
  k->allocated++;
  pthread_mutex_unlock(&k->mu);
  *res = r;
  return RV_OK;
}

static rv_status syn_sink(void *u, rv_image *frame, const rv_vp_frame *fi, const void *res, rv_ctx *ctx) {
  sink_t *k = u;
  if (fi->index == k->sink_fail_at) return rv_error(ctx, RV_ERR_IO, "synthetic: disk full at %ld", fi->index);
  long v;
  memcpy(&v, frame->data, sizeof v);
  pthread_mutex_lock(&k->mu);
  if (v != fi->index) k->mismatch++; /* checked by the test thread (no cmocka asserts here) */
  if (k->nseen < 256) {
    k->seen[k->nseen] = fi->index;
    k->proc[k->nseen] = fi->processed;
    k->res[k->nseen] = res ? *(const long *)res : -1;
    k->nseen++;
  }
  pthread_mutex_unlock(&k->mu);
  return RV_OK;
}

static void syn_free(void *u, void *r) {
  sink_t *k = u;
  pthread_mutex_lock(&k->mu);
  k->freed++;
  pthread_mutex_unlock(&k->mu);
  free(r);
}

static rv_status syn_finish(void *u, rv_status prior, rv_ctx *ctx) {
  sink_t *k = u;
  k->finish_calls++;
  k->finish_status = prior;
  return RV_OK;
}

static int syn_cancel(void *u) {
  sink_t *k = u;
  pthread_mutex_lock(&k->mu);
  int c = k->cancel_after >= 0 && k->nseen >= k->cancel_after;
  pthread_mutex_unlock(&k->mu);
  return c;
}

static void syn_init(src_t *s, sink_t *k, long n) {
  memset(s, 0, sizeof *s);
  s->n = n;
  s->fail_at = s->bad_at = s->stall_at = -1;
  memset(k, 0, sizeof *k);
  k->infer_fail_at = k->sink_fail_at = k->cancel_after = -1;
  pthread_mutex_init(&k->mu, NULL);
}

static rv_vp_config syn_config(src_t *s, sink_t *k) {
  rv_vp_config c = rv_vp_default_config();
  c.read = syn_read;
  c.read_user = s;
  c.infer = syn_infer;
  c.sink = syn_sink;
  c.free_result = syn_free;
  c.finish = syn_finish;
  c.user = k;
  c.cancelled = syn_cancel;
  c.cancel_user = k;
  c.width = 8;
  c.height = 6;
  c.fps = 25;
  c.queue = 2;
  c.infer_threads = 1;
  return c;
}

/* Every result allocated was freed once, finish ran once. */
static void check_common(sink_t *k) {
  assert_int_equal(k->allocated, k->freed);
  assert_int_equal(k->finish_calls, 1);
  assert_int_equal(k->mismatch, 0);
  pthread_mutex_destroy(&k->mu);
}

static void test_order_every(void **state) {
  (void)state;
  src_t s;
  sink_t k;
  syn_init(&s, &k, 20);
  rv_vp_config c = syn_config(&s, &k);
  c.every = 3;
  rv_vp_stats st;
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_OK);
  assert_int_equal(st.read, 20);
  assert_int_equal(st.processed, 7);
  assert_int_equal(st.written, 20);
  assert_int_equal(st.dropped + st.corrupt + st.ended_early + st.stalled + st.interrupted, 0);
  assert_int_equal(k.nseen, 20);
  for (long i = 0; i < 20; i++) {
    assert_int_equal(k.seen[i], i);
    assert_int_equal(k.proc[i], i % 3 == 0);
    assert_int_equal(k.res[i], i - i % 3); /* pass-through frames carry the last result */
  }
  assert_int_equal(k.finish_status, RV_OK);
  assert_true(st.latency_mean_s > 0 && st.latency_p95_s > 0 && st.fps > 0 && st.wall_s > 0);
  check_common(&k);
  rv_ctx_free(ctx);
}

/* A range of a split file: indices start at first_index and --every counts from there, so
 * a range starting off the every-grid has no result until its first processed frame. */
static void test_first_index(void **state) {
  (void)state;
  src_t s;
  sink_t k;
  syn_init(&s, &k, 20);
  s.next = 7; /* the source is positioned at frame 7, as rv_video_seek does */
  rv_vp_config c = syn_config(&s, &k);
  c.every = 3;
  c.first_index = 7;
  c.max_frames = 10;
  rv_vp_stats st;
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_OK);
  assert_int_equal(st.read, 10);
  assert_int_equal(st.processed, 3); /* 9, 12, 15 */
  assert_int_equal(k.nseen, 10);
  for (long i = 0; i < 10; i++) {
    long f = 7 + i;
    assert_int_equal(k.seen[i], f); /* the pixels carry the source position: mismatch counts */
    assert_int_equal(k.proc[i], f % 3 == 0);
    assert_int_equal(k.res[i], f < 9 ? -1 : f - f % 3);
  }
  check_common(&k);
  c.first_index = -1;
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_ERR_ARG);
  rv_ctx_free(ctx);
}

static void test_max_frames(void **state) {
  (void)state;
  src_t s;
  sink_t k;
  syn_init(&s, &k, 20);
  rv_vp_config c = syn_config(&s, &k);
  c.max_frames = 5;
  rv_vp_stats st;
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_OK);
  assert_int_equal(st.read, 5);
  assert_int_equal(st.written, 5);
  assert_int_equal(st.processed, 5);
  assert_int_equal(k.nseen, 5);
  check_common(&k);
  rv_ctx_free(ctx);
}

static void test_file_never_drops(void **state) {
  (void)state;
  src_t s;
  sink_t k;
  syn_init(&s, &k, 12);
  rv_vp_config c = syn_config(&s, &k);
  c.drop = 1; /* ignored: not live */
  c.queue = 1;
  k.infer_s = 0.01;
  rv_vp_stats st;
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_OK);
  assert_int_equal(st.dropped, 0);
  assert_int_equal(st.written, 12);
  for (long i = 0; i < 12; i++) assert_int_equal(k.seen[i], i);
  check_common(&k);
  rv_ctx_free(ctx);
}

static void test_live_drops(void **state) {
  (void)state;
  src_t s;
  sink_t k;
  syn_init(&s, &k, 40);
  rv_vp_config c = syn_config(&s, &k);
  c.live = 1;
  c.drop = 1;
  c.queue = 2;
  s.read_s = 0.002;  /* 500 fps camera */
  k.infer_s = 0.05;  /* 20 fps model: at most ~(40 x read time) / 50 ms frames can be kept */
  rv_vp_stats st;
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_OK);
  assert_int_equal(st.read, 40);
  assert_true(st.dropped > 10);
  assert_int_equal(st.written + st.dropped, 40);
  assert_int_equal(k.nseen, st.written);
  for (long i = 1; i < k.nseen; i++) assert_true(k.seen[i] > k.seen[i - 1]); /* in order */
  assert_int_equal(k.seen[k.nseen - 1], 39); /* the freshest frame is kept */
  check_common(&k);

  /* same source without --drop: back-pressure, nothing dropped */
  syn_init(&s, &k, 20);
  c = syn_config(&s, &k);
  c.live = 1;
  s.read_s = 0.002;
  k.infer_s = 0.01;
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_OK);
  assert_int_equal(st.dropped, 0);
  assert_int_equal(st.written, 20);
  check_common(&k);
  rv_ctx_free(ctx);
}

static void test_read_error(void **state) {
  (void)state;
  src_t s;
  sink_t k;
  syn_init(&s, &k, 20);
  s.fail_at = 5;
  rv_vp_config c = syn_config(&s, &k);
  rv_vp_stats st;
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_OK);
  assert_int_equal(st.ended_early, 1);
  assert_non_null(strstr(st.fault, "broken at frame 5"));
  assert_int_equal(st.read, 5);
  assert_int_equal(st.written, 5);
  assert_int_equal(k.finish_status, RV_OK);
  check_common(&k);
  rv_ctx_free(ctx);
}

/* The pipeline does not count corrupt frames in its indices: number pixels the same way. */
static rv_status syn_read_bad_index(void *u, rv_image *frame, int *got, rv_ctx *ctx) {
  src_t *s = u;
  rv_status st = syn_read(u, frame, got, ctx);
  if (st == RV_OK && *got) {
    long v = s->next - 1 - (s->next - 1 > s->bad_at); /* indices stay contiguous */
    memcpy(frame->data, &v, sizeof v);
  }
  return st;
}

static void test_corrupt_frame(void **state) {
  (void)state;
  src_t s;
  sink_t k;
  syn_init(&s, &k, 10);
  s.bad_at = 3;
  rv_vp_config c = syn_config(&s, &k);
  c.read = syn_read_bad_index;
  rv_vp_stats st;
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_OK);
  assert_int_equal(st.read, 10);
  assert_int_equal(st.corrupt, 1);
  assert_int_equal(st.written, 9);
  assert_int_equal(st.ended_early, 0);
  check_common(&k);
  rv_ctx_free(ctx);
}

/* Corrupt frames are checked against the first frame's size when none is given. */
static void test_corrupt_first_size(void **state) {
  (void)state;
  src_t s;
  sink_t k;
  syn_init(&s, &k, 6);
  s.bad_at = 2;
  rv_vp_config c = syn_config(&s, &k);
  c.read = syn_read_bad_index;
  c.width = c.height = 0;
  rv_vp_stats st;
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_OK);
  assert_int_equal(st.corrupt, 1);
  assert_int_equal(st.written, 5);
  for (long i = 0; i < 5; i++) assert_int_equal(k.seen[i], i);
  check_common(&k);
  rv_ctx_free(ctx);
}

static void test_stall(void **state) {
  (void)state;
  src_t s;
  sink_t k;
  syn_init(&s, &k, 10);
  s.stall_at = 4;
  s.stall_s = 1.2;
  rv_vp_config c = syn_config(&s, &k);
  c.live = 1;
  c.stall_s = 0.2;
  rv_vp_stats st;
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_OK);
  assert_int_equal(st.stalled, 1);
  assert_non_null(strstr(st.fault, "no frame for 0.2 s"));
  assert_int_equal(st.written, 4);
  assert_true(st.wall_s < 1.0); /* outputs finished before the blocked read returned */
  check_common(&k);
  rv_ctx_free(ctx);
}

static void test_cancel(void **state) {
  (void)state;
  src_t s;
  sink_t k;
  syn_init(&s, &k, 200);
  s.read_s = 0.001;
  k.infer_s = 0.002;
  k.cancel_after = 3;
  rv_vp_config c = syn_config(&s, &k);
  rv_vp_stats st;
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_OK);
  assert_int_equal(st.interrupted, 1);
  assert_true(st.written >= 3 && st.written < 200);
  for (long i = 0; i < k.nseen; i++) assert_int_equal(k.seen[i], i);
  check_common(&k);
  rv_ctx_free(ctx);
}

static void test_infer_and_sink_errors(void **state) {
  (void)state;
  src_t s;
  sink_t k;
  rv_vp_stats st;
  rv_ctx *ctx = rv_ctx_create();
  syn_init(&s, &k, 30);
  k.infer_fail_at = 4;
  rv_vp_config c = syn_config(&s, &k);
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_ERR_MODEL);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "model failed on 4"));
  assert_int_equal(st.written, 4);
  assert_int_equal(k.finish_status, RV_ERR_MODEL);
  check_common(&k);

  syn_init(&s, &k, 30);
  k.sink_fail_at = 2;
  c = syn_config(&s, &k);
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_ERR_IO);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "disk full at 2"));
  assert_int_equal(st.written, 2);
  assert_int_equal(k.finish_status, RV_ERR_IO);
  check_common(&k);

  c.every = 0;
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_ERR_ARG);
  c.every = 1;
  c.infer = NULL;
  assert_int_equal(rv_vp_run(&c, &st, ctx), RV_ERR_ARG);
  rv_ctx_free(ctx);
}

/* ---- CLI ------------------------------------------------------------------------------------ */
static char tmpdir[256];

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/rv_video_XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  test_run("rm -rf '%s'", tmpdir);
  return 0;
}

/* Parse JSON lines; returns the count, each line's object passed to check(). */
static long json_lines(const char *path, void (*check)(const cJSON *o, long i, void *u), void *u) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char *line = NULL;
  size_t cap = 0;
  long n = 0;
  while (getline(&line, &cap, f) > 0) {
    cJSON *o = cJSON_Parse(line);
    assert_non_null(o);
    check(o, n++, u);
    cJSON_Delete(o);
  }
  free(line);
  fclose(f);
  return n;
}

static void check_seg_line(const cJSON *o, long i, void *u) {
  const int *wh = u;
  assert_int_equal(cJSON_GetObjectItem(o, "frame")->valueint, i);
  assert_true(fabs(cJSON_GetObjectItem(o, "time")->valuedouble - (double)i / 10.0) < 1e-6); /* vtest: 10 fps */
  const cJSON *px = cJSON_GetObjectItem(o, "pixels");
  assert_true(cJSON_IsObject(px));
  double sum = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, px) {
    int cls = atoi(e->string);
    assert_true(cls >= 0 && cls < 150);
    assert_true(e->valuedouble > 0);
    sum += e->valuedouble;
  }
  assert_true(sum == (double)wh[0] * wh[1]);
}

static void test_cli_segment_vtest(void **state) {
  (void)state;
  int rc = test_run("'%s' --quiet video --weights '%s' " SAMPLES "/vtest.avi --max-frames 8 --size 120x160 "
               "--output %s/seg.mp4 --json %s/seg.jsonl",
               RV_BIN, fixture_path("e2e/semantic_fpn/checkpoint.pth"), tmpdir, tmpdir);
  assert_int_equal(rc, 0);
  char p[512];
  int w = 0, h = 0;
  snprintf(p, sizeof p, "%s/seg.mp4", tmpdir);
  assert_int_equal(test_video_frames(p, &w, &h), 8);
  assert_int_equal(w, 768);
  assert_int_equal(h, 576);
  int wh[2] = {768, 576};
  snprintf(p, sizeof p, "%s/seg.jsonl", tmpdir);
  assert_int_equal(json_lines(p, check_seg_line, wh), 8);
  /* no temporary files left */
  assert_int_equal(test_run("ls -a %s | grep -q ravlt-tmp", tmpdir), 1);
}

static void check_det_line(const cJSON *o, long i, void *u) {
  long *ndet = u;
  assert_int_equal(cJSON_GetObjectItem(o, "frame")->valueint, 3 * i); /* --every 3 */
  assert_true(fabs(cJSON_GetObjectItem(o, "time")->valuedouble - 3.0 * (double)i * 1001.0 / 24000.0) < 1e-5); /* 23.976 fps */
  const cJSON *dets = cJSON_GetObjectItem(o, "detections");
  assert_true(cJSON_IsArray(dets));
  const cJSON *d;
  cJSON_ArrayForEach(d, dets) {
    const cJSON *bb = cJSON_GetObjectItem(d, "bbox");
    assert_int_equal(cJSON_GetArraySize(bb), 4);
    assert_true(cJSON_GetArrayItem(bb, 2)->valuedouble >= 0 && cJSON_GetArrayItem(bb, 3)->valuedouble >= 0);
    double sc = cJSON_GetObjectItem(d, "score")->valuedouble;
    assert_true(sc >= 0.05 && sc <= 1);
    int label = cJSON_GetObjectItem(d, "label")->valueint;
    assert_true(label >= 0 && label < 80);
    assert_true(cJSON_GetObjectItem(d, "category_id")->valueint >= 1);
    assert_true(cJSON_IsString(cJSON_GetObjectItem(d, "name")));
    const cJSON *seg = cJSON_GetObjectItem(d, "segmentation");
    assert_non_null(seg);
    const cJSON *sz = cJSON_GetObjectItem(seg, "size");
    assert_int_equal(cJSON_GetArrayItem(sz, 0)->valueint, 528);
    assert_int_equal(cJSON_GetArrayItem(sz, 1)->valueint, 720);
    rv_rle r = {0};
    assert_int_equal(rv_rle_from_string(&r, cJSON_GetObjectItem(seg, "counts")->valuestring, 528, 720, "test", NULL), RV_OK);
    rv_rle_free(&r);
    (*ndet)++;
  }
}

static void test_cli_detect_megamind_every(void **state) {
  (void)state;
  int rc = test_run("'%s' --quiet video --weights '%s' " SAMPLES "/Megamind.avi --max-frames 9 --every 3 --size 240x320 "
               "--score-thr 0.05 --output %s/det.avi --json %s/det.jsonl",
               RV_BIN, fixture_path("e2e/mask_rcnn/checkpoint.pth"), tmpdir, tmpdir);
  assert_int_equal(rc, 0);
  char p[512];
  int w = 0, h = 0;
  snprintf(p, sizeof p, "%s/det.avi", tmpdir);
  assert_int_equal(test_video_frames(p, &w, &h), 9); /* every frame written, 3 inferred */
  assert_int_equal(w, 720);
  assert_int_equal(h, 528);
  long ndet = 0;
  snprintf(p, sizeof p, "%s/det.jsonl", tmpdir);
  assert_int_equal(json_lines(p, check_det_line, &ndet), 3);
  assert_true(ndet > 0);
}

static void check_any_line(const cJSON *o, long i, void *u) {
  (void)u;
  assert_int_equal(cJSON_GetObjectItem(o, "frame")->valueint, i);
  assert_true(cJSON_IsArray(cJSON_GetObjectItem(o, "detections")));
}

static void test_cli_truncated(void **state) {
  (void)state;
  assert_int_equal(test_run("head -c 50000 " SAMPLES "/Megamind.avi > %s/trunc.avi", tmpdir), 0);
  int rc = test_run("'%s' --quiet video --weights '%s' %s/trunc.avi --size 96x128 --output %s/tr.mp4 --json %s/tr.jsonl "
               "2> %s/tr.err",
               RV_BIN, fixture_path("e2e/retinanet/checkpoint.pth"), tmpdir, tmpdir, tmpdir, tmpdir);
  assert_int_equal(rc, 3); /* documented: the stream ended early, outputs finalised */
  assert_int_equal(test_run("grep -q 'ended early' %s/tr.err", tmpdir), 0);
  char p[512];
  int w = 0, h = 0;
  snprintf(p, sizeof p, "%s/tr.mp4", tmpdir);
  long n = test_video_frames(p, &w, &h);
  assert_true(n > 0);
  snprintf(p, sizeof p, "%s/tr.jsonl", tmpdir);
  assert_int_equal(json_lines(p, check_any_line, NULL), n);
}

static void check_live_line(const cJSON *o, long i, void *u) {
  double *last_t = u;
  assert_true(cJSON_GetObjectItem(o, "frame")->valueint >= i);
  double t = cJSON_GetObjectItem(o, "time")->valuedouble; /* live: wall time, increasing */
  assert_true(t >= *last_t);
  *last_t = t;
  assert_true(cJSON_IsObject(cJSON_GetObjectItem(o, "pixels")));
}

/* A URL is a live source: with --drop, frames that arrive while inference is busy are
 * dropped (a file:// URL decodes far faster than the model runs), counted, and the
 * output holds the frames that were processed. */
static void test_cli_live_drop(void **state) {
  (void)state;
  int rc = test_run("'%s' video --weights '%s' file://" SAMPLES "/vtest.avi --max-frames 40 --size 64x96 --drop --queue 2 "
               "--output %s/drop.avi --json %s/drop.jsonl 2> %s/drop.err",
               RV_BIN, fixture_path("e2e/semantic_fpn/checkpoint.pth"), tmpdir, tmpdir, tmpdir);
  assert_int_equal(rc, 0);
  char p[512], line[1024];
  snprintf(p, sizeof p, "%s/drop.err", tmpdir);
  FILE *f = fopen(p, "r");
  assert_non_null(f);
  long rd = -1, proc = -1, wr = -1, dr = -1;
  while (fgets(line, sizeof line, f)) {
    const char *q = strstr(line, "ravlt video: ");
    if (q && strstr(q, "frame(s) read"))
      assert_int_equal(sscanf(q, "ravlt video: %ld frame(s) read, %ld processed, %ld written, %ld dropped", &rd, &proc, &wr, &dr), 4);
  }
  fclose(f);
  assert_int_equal(rd, 40);
  assert_true(dr > 0);
  assert_int_equal(wr + dr, 40);
  assert_int_equal(proc, wr);
  int w = 0, h = 0;
  snprintf(p, sizeof p, "%s/drop.avi", tmpdir);
  assert_int_equal(test_video_frames(p, &w, &h), wr);
  double last_t = 0;
  snprintf(p, sizeof p, "%s/drop.jsonl", tmpdir);
  assert_int_equal(json_lines(p, check_live_line, &last_t), wr);
}

/* Ctrl-C: SIGINT once a few frames are written; exit 130, both outputs finalised with the
 * same frame count (every frame processed). */
static void test_cli_sigint(void **state) {
  (void)state;
  int rc = test_run("'%s' --quiet video --weights '%s' " SAMPLES "/vtest.avi --size 64x96 --queue 2 --output %s/int.avi "
               "--json %s/int.jsonl 2> %s/int.err & pid=$!; "
               "for i in $(seq 1 600); do [ -n \"$(cat %s/.int.jsonl.ravlt-tmp* 2>/dev/null)\" ] && break; sleep 0.1; done; "
               "kill -INT $pid; wait $pid; exit $?",
               RV_BIN, fixture_path("e2e/semantic_fpn/checkpoint.pth"), tmpdir, tmpdir, tmpdir, tmpdir);
  assert_int_equal(rc, 130);
  assert_int_equal(test_run("grep -q interrupted %s/int.err", tmpdir), 0);
  char p[512];
  int w = 0, h = 0;
  snprintf(p, sizeof p, "%s/int.avi", tmpdir);
  long n = test_video_frames(p, &w, &h);
  assert_true(n > 0 && n < 795);
  int wh[2] = {768, 576};
  snprintf(p, sizeof p, "%s/int.jsonl", tmpdir);
  assert_int_equal(json_lines(p, check_seg_line, wh), n);
  assert_int_equal(test_run("ls -a %s | grep -q ravlt-tmp", tmpdir), 1);
}

/* The test's own frame fingerprint (FNV-1a over the pixels), written apart from
 * rv_video_frame_hash in apps/cmd_video.c on purpose: the seek checks below compare decoder
 * output and must not rest on the CLI code that the MPI seam check uses. */
static uint64_t fnv(const rv_image *f) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < (size_t)f->h * f->w * f->c; i++) h = (h ^ f->data[i]) * 1099511628211ULL;
  return h;
}

/* rv_video_seek, both ways, against a sequential decode: the 3 frames read after seeking to
 * frame s are frames s, s+1, s+2 (pixel hashes), for a sweep of s on an AVI MPEG-4 file, an
 * AVI of another frame rate and an MP4 H.264 file written here. */
static void check_seek(const char *path, long n) {
  rv_ctx *ctx = rv_ctx_create();
  rv_video_reader *r;
  rv_image f = {0};
  int got = 0;
  uint64_t *seq = calloc((size_t)n, sizeof *seq);
  assert_non_null(seq);
  assert_int_equal(rv_video_open(&r, path, ctx), RV_OK);
  for (long i = 0; i < n; i++) {
    assert_int_equal(rv_video_read(r, &f, &got, ctx), RV_OK);
    assert_int_equal(got, 1);
    seq[i] = fnv(&f);
  }
  assert_int_equal(rv_video_seek(r, 5, 0, ctx), RV_ERR_ARG); /* after reading */
  rv_video_close(r);
  static const long starts[] = {0, 1, 2, 3, 5, 11, 12, 13, 24, 31, 37, 38};
  for (int exact = 0; exact < 2; exact++)
    for (size_t k = 0; k < sizeof starts / sizeof *starts; k++) {
      long s = starts[k] % (n - 3);
      assert_int_equal(rv_video_open(&r, path, ctx), RV_OK);
      assert_int_equal(rv_video_seek(r, s, exact, ctx), RV_OK);
      for (long i = s; i < s + 3; i++) {
        assert_int_equal(rv_video_read(r, &f, &got, ctx), RV_OK);
        assert_int_equal(got, 1);
        if (fnv(&f) != seq[i]) fail_msg("%s: seek (exact %d) to %ld: frame %ld differs", path, exact, s, i);
      }
      assert_int_equal(rv_video_frames_read(r), s + 3);
      rv_video_close(r);
    }
  assert_int_equal(rv_video_open(&r, path, ctx), RV_OK);
  assert_int_equal(rv_video_seek(r, rv_video_get_info(r).frame_count + 5, 0, ctx), RV_ERR_FORMAT);
  rv_video_close(r);
  rv_image_free(&f);
  free(seq);
  rv_ctx_free(ctx);
}

static void test_seek(void **state) {
  (void)state;
  check_seek(SAMPLES "/vtest.avi", 48);
  check_seek(SAMPLES "/Megamind.avi", 48);
  char p[512];
  snprintf(p, sizeof p, "%s/seek.mp4", tmpdir);
  rv_ctx *ctx = rv_ctx_create();
  rv_video_reader *r;
  rv_video_writer *w;
  rv_image f = {0};
  int got = 0;
  assert_int_equal(rv_video_open(&r, SAMPLES "/vtest.avi", ctx), RV_OK);
  assert_int_equal(rv_video_writer_open(&w, p, 10, 768, 576, NULL, ctx), RV_OK);
  for (int i = 0; i < 60 && rv_video_read(r, &f, &got, ctx) == RV_OK && got; i++)
    assert_int_equal(rv_video_write(w, &f, ctx), RV_OK);
  assert_int_equal(rv_video_writer_close(w, ctx), RV_OK);
  rv_video_close(r);
  rv_image_free(&f);
  /* the renamed video has the mode fopen gives a new file (0666 & umask: the temporary is
   * created so, not chmod-ed after), and no temporary is left beside it */
  char ref[512];
  snprintf(ref, sizeof ref, "%s/mode_ref", tmpdir);
  FILE *rf = fopen(ref, "w");
  assert_non_null(rf);
  fclose(rf);
  struct stat sv, sr;
  assert_int_equal(stat(p, &sv), 0);
  assert_int_equal(stat(ref, &sr), 0);
  assert_int_equal(sv.st_mode & 0777, sr.st_mode & 0777);
  assert_int_equal(test_run("ls -a %s | grep -q 'seek.mp4.ravlt-tmp'", tmpdir) == 0, 0);
  check_seek(p, 48);
  /* exact positioning past the end of a file that announces more frames than it has */
  assert_int_equal(test_run("head -c 200000 " SAMPLES "/Megamind.avi > %s/short.avi", tmpdir), 0);
  snprintf(p, sizeof p, "%s/short.avi", tmpdir);
  assert_int_equal(rv_video_open(&r, p, ctx), RV_OK);
  assert_int_equal(rv_video_seek(r, 200, 1, ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "short.avi"));
  rv_video_close(r);
  rv_ctx_free(ctx);
}

/* Several inputs (one process): sorted, each into DIR/STEM.jsonl and DIR/STEM.EXT, the same
 * JSON lines as a run on that file alone; a failing input leaves its outputs unwritten and
 * the others complete (exit 1); naming conflicts and missing --out-dir are usage errors. */
static void test_cli_several_inputs(void **state) {
  (void)state;
  const char *seg = fixture_path("e2e/semantic_fpn/checkpoint.pth");
  const char *args = "--max-frames 3 --size 64x96";
  assert_int_equal(test_run("'%s' --quiet --threads 1 video --weights '%s' %s " SAMPLES "/vtest.avi " SAMPLES
                            "/Megamind.avi --out-dir %s/many/sub --out-ext avi",
                            RV_BIN, seg, args, tmpdir),
                   0);
  assert_int_equal(test_run("'%s' --quiet --threads 1 video --weights '%s' %s " SAMPLES "/Megamind.avi --json %s/mm.jsonl",
                            RV_BIN, seg, args, tmpdir),
                   0);
  assert_int_equal(test_run("cmp -s %s/mm.jsonl %s/many/sub/Megamind.jsonl", tmpdir, tmpdir), 0);
  char p[512];
  int w = 0, h = 0;
  snprintf(p, sizeof p, "%s/many/sub/vtest.avi", tmpdir);
  assert_int_equal(test_video_frames(p, &w, &h), 3);
  assert_int_equal(w, 768);
  snprintf(p, sizeof p, "%s/many/sub/Megamind.avi", tmpdir);
  assert_int_equal(test_video_frames(p, &w, &h), 3);
  assert_int_equal(w, 720);
  assert_int_equal(test_run("test $(ls %s/many/sub | wc -l) -eq 4", tmpdir), 0);
  /* a missing input: reported, exit 1, the other input's outputs written (JSON only here) */
  assert_int_equal(test_run("'%s' --quiet video --weights '%s' %s %s/gone.avi " SAMPLES "/vtest.avi --out-dir %s/part "
                            "--out-ext none 2> %s/part.err",
                            RV_BIN, seg, args, tmpdir, tmpdir, tmpdir),
                   1);
  assert_int_equal(test_run("grep -q 'gone.avi: no such file' %s/part.err && test $(ls %s/part) = vtest.jsonl", tmpdir, tmpdir), 0);
  assert_int_equal(test_run("'%s' video --weights '%s' " SAMPLES "/vtest.avi " SAMPLES "/Megamind.avi 2> %s/u.err", RV_BIN,
                            seg, tmpdir),
                   2);
  assert_int_equal(test_run("grep -q 'give --out-dir' %s/u.err", tmpdir), 0);
  assert_int_equal(test_run("'%s' video --weights '%s' " SAMPLES "/vtest.avi %s/x/vtest.mp4 --out-dir %s/d 2> %s/u.err",
                            RV_BIN, seg, tmpdir, tmpdir, tmpdir),
                   2);
  assert_int_equal(test_run("grep -q 'would both write' %s/u.err", tmpdir), 0);
  assert_int_equal(test_run("'%s' video --weights '%s' " SAMPLES "/vtest.avi --out-dir %s/d --json %s/j 2> /dev/null", RV_BIN,
                            seg, tmpdir, tmpdir),
                   2);
  assert_int_equal(test_run("'%s' video --weights '%s' " SAMPLES "/vtest.avi --out-dir %s/d --out-ext gif 2> /dev/null",
                            RV_BIN, seg, tmpdir),
                   2);
}

static void test_cli_bad_inputs(void **state) {
  (void)state;
  const char *seg = fixture_path("e2e/semantic_fpn/checkpoint.pth");
  assert_int_equal(test_run("'%s' video --help > /dev/null", RV_BIN), 0);
  assert_int_equal(test_run("'%s' video 2> /dev/null", RV_BIN), 2); /* no INPUT (no --weights: the demo model) */
  assert_int_equal(test_run("'%s' video --weights '%s' 2> /dev/null", RV_BIN, seg), 2);
  assert_int_equal(test_run("'%s' video --weights '%s' --every 0 " SAMPLES "/vtest.avi 2> /dev/null", RV_BIN, seg), 2);
  assert_int_equal(test_run("'%s' video --weights '%s' --size 0x5 " SAMPLES "/vtest.avi 2> /dev/null", RV_BIN, seg), 2);
  assert_int_equal(test_run("'%s' video --weights '%s' --show " SAMPLES "/vtest.avi 2> /dev/null", RV_BIN, seg), 2);
  assert_int_equal(test_run("'%s' video --weights '%s' %s/missing.avi 2> %s/err", RV_BIN, seg, tmpdir, tmpdir), 1);
  assert_int_equal(test_run("test $(wc -l < %s/err) -eq 1", tmpdir), 0); /* one-line error */
  /* not a video */
  assert_int_equal(test_run("'%s' video --weights '%s' '%s' 2> /dev/null", RV_BIN, seg, seg), 1);
  /* unwritable output: error, nothing left behind */
  assert_int_equal(test_run("'%s' video --weights '%s' --max-frames 1 --output %s/no/such/dir/o.mp4 " SAMPLES
                       "/vtest.avi 2> /dev/null",
                       RV_BIN, seg, tmpdir),
                   1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order_every),
      cmocka_unit_test(test_first_index),
      cmocka_unit_test(test_max_frames),
      cmocka_unit_test(test_file_never_drops),
      cmocka_unit_test(test_live_drops),
      cmocka_unit_test(test_read_error),
      cmocka_unit_test(test_corrupt_frame),
      cmocka_unit_test(test_corrupt_first_size),
      cmocka_unit_test(test_stall),
      cmocka_unit_test(test_cancel),
      cmocka_unit_test(test_infer_and_sink_errors),
      cmocka_unit_test(test_cli_segment_vtest),
      cmocka_unit_test(test_cli_detect_megamind_every),
      cmocka_unit_test(test_cli_truncated),
      cmocka_unit_test(test_cli_live_drop),
      cmocka_unit_test(test_cli_sigint),
      cmocka_unit_test(test_seek),
      cmocka_unit_test(test_cli_several_inputs),
      cmocka_unit_test(test_cli_bad_inputs),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
