/* Whole detector benchmark (not a test): RAVLT backbone + FPN (256, max-pool P6) + RPN +
 * Cascade RoI head (3 x ConvFC 4conv1fc, 1024) or Mask R-CNN RoI head (Shared2FC) + FCN mask
 * heads, or RetinaNet (FPN from stage 2 with extra convs, RetinaHead), random weights, 80
 * classes, on a padded HxW input (800x1344 = the 1333x800 test scale of a 4:3 photograph).
 * score_thr 0 by default keeps max_per_img (100) detections and their pasted masks: the
 * worst case (RetinaNet: its config's 0.05 by default). Build by hand against the library (bench/bench_det.sh does it):
 *   gcc -O2 -fopenmp -I. -I/usr/include/x86_64-linux-gnu/openblas-openmp bench/bench_det.c \
 *       build/libravlt.a $(pkg-config --libs opencv4 libcjson libzip) \
 *       -L/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -lstdc++ -lm -o build/bench_det
 *   OMP_NUM_THREADS=2 build/bench_det cascade-s [HxW] [runs] [score_thr] [--json]
 */
#define _POSIX_C_SOURCE 200809L
#include "backbone/ravlt.h"
#include "models/detector.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Trace hook: the time of the last traced tensor of each head family (neck, rpn, roi, mask:
 * they come in that order), as 'ravlt bench --weights' splits a detector run. */
typedef struct {
  double last[4];
} det_clock;

static void det_trace(void *user, const char *name, const float *data, const int *shape,
                      int ndim) {
  (void)data;
  (void)shape;
  (void)ndim;
  static const char *const pre[4] = {"neck.", "rpn.", "roi.", "mask."};
  det_clock *c = user;
  for (int s = 0; s < 4; s++)
    if (strncmp(name, pre[s], strlen(pre[s])) == 0) c->last[s] = now();
  if (strncmp(name, "retina.", 7) == 0) c->last[1] = now(); /* RetinaNet's head: the rpn slot */
}

static uint64_t rng = 88172645463325252ULL;
static float frand(void) { /* [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}

/* weights ~ U(-1,1)/sqrt(fan_in); vectors uniform in [lo, hi] */
static void add(rv_weights *w, const char *name, int ndim, const int64_t *shape, float lo,
                float hi) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  float *x = rv_malloc(n * sizeof(float));
  size_t fan = n / (size_t)shape[0];
  float s = ndim >= 2 ? 1.0f / sqrtf((float)fan) : 0.0f;
  for (size_t i = 0; i < n; i++)
    x[i] = ndim >= 2 ? frand() * s : lo + (hi - lo) * 0.5f * (frand() + 1.0f);
  if (rv_weights_add(w, name, RV_DT_F32, ndim, shape, x, n * sizeof(float), 1, NULL) != RV_OK)
    abort();
}

static void conv(rv_weights *w, const char *name, int cin, int cout, int k, int bias) {
  char n[256];
  int64_t s4[4] = {cout, cin, k, k}, s1[1] = {cout};
  snprintf(n, sizeof n, "%s.weight", name);
  add(w, n, 4, s4, 0, 0);
  if (bias) {
    snprintf(n, sizeof n, "%s.bias", name);
    add(w, n, 1, s1, -0.1f, 0.1f);
  }
}

static void linear(rv_weights *w, const char *name, int cin, int cout) {
  char n[256];
  int64_t s2[2] = {cout, cin}, s1[1] = {cout};
  snprintf(n, sizeof n, "%s.weight", name);
  add(w, n, 2, s2, 0, 0);
  snprintf(n, sizeof n, "%s.bias", name);
  add(w, n, 1, s1, -0.1f, 0.1f);
}

static void bn(rv_weights *w, const char *prefix, int c) {
  static const char *const sfx[4] = {"weight", "bias", "running_mean", "running_var"};
  static const float lo[4] = {0.5f, -0.1f, -0.1f, 0.5f}, hi[4] = {1.5f, 0.1f, 0.1f, 1.5f};
  char n[256];
  int64_t s1[1] = {c};
  for (int i = 0; i < 4; i++) {
    snprintf(n, sizeof n, "%s.bn.%s", prefix, sfx[i]);
    add(w, n, 1, s1, lo[i], hi[i]);
  }
}

/* RetinaNet (RALA_retinanet.py): FPN from stage 2 with two extra 3x3 stride-2 convs (the
 * first on the last backbone output), 4 + 4 head convs, 9 anchors; retina_cls's bias at
 * mmdet's init (prior 0.01), so that few scores pass score_thr 0.05 as with trained weights */
static rv_weights *retina_weights(const int *dims, int K) {
  const int C = 256;
  rv_weights *w = rv_weights_new("random");
  char p[160];
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "neck.lateral_convs.%d.conv", i);
    conv(w, p, dims[i + 1], C, 1, 1);
  }
  for (int i = 0; i < 5; i++) {
    snprintf(p, sizeof p, "neck.fpn_convs.%d.conv", i);
    conv(w, p, i == 3 ? dims[3] : C, C, 3, 1);
  }
  for (int i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "bbox_head.cls_convs.%d.conv", i);
    conv(w, p, C, C, 3, 1);
    snprintf(p, sizeof p, "bbox_head.reg_convs.%d.conv", i);
    conv(w, p, C, C, 3, 1);
  }
  int64_t s1[1] = {9 * K};
  conv(w, "bbox_head.retina_cls", C, 9 * K, 3, 0);
  add(w, "bbox_head.retina_cls.bias", 1, s1, -4.595f, -4.595f);
  conv(w, "bbox_head.retina_reg", C, 36, 3, 1);
  return w;
}

static rv_weights *det_weights(int cascade, const int *dims, int K) {
  const int C = 256, FC = 1024;
  rv_weights *w = rv_weights_new("random");
  char p[160];
  for (int i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "neck.lateral_convs.%d.conv", i);
    conv(w, p, dims[i], C, 1, 1);
    snprintf(p, sizeof p, "neck.fpn_convs.%d.conv", i);
    conv(w, p, C, C, 3, 1);
  }
  conv(w, "rpn_head.rpn_conv", C, C, 3, 1);
  conv(w, "rpn_head.rpn_cls", C, 3, 1, 1);
  conv(w, "rpn_head.rpn_reg", C, 12, 1, 1);
  int S = cascade ? 3 : 1;
  for (int s = 0; s < S; s++) {
    char b[64], m[64];
    if (cascade) {
      snprintf(b, sizeof b, "roi_head.bbox_head.%d", s);
      snprintf(m, sizeof m, "roi_head.mask_head.%d", s);
      for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s.shared_convs.%d.conv", b, i);
        conv(w, p, C, C, 3, 0);
        snprintf(p, sizeof p, "%s.shared_convs.%d", b, i);
        bn(w, p, C);
      }
      snprintf(p, sizeof p, "%s.shared_fcs.0", b);
      linear(w, p, C * 49, FC);
    } else {
      snprintf(b, sizeof b, "roi_head.bbox_head");
      snprintf(m, sizeof m, "roi_head.mask_head");
      snprintf(p, sizeof p, "%s.shared_fcs.0", b);
      linear(w, p, C * 49, FC);
      snprintf(p, sizeof p, "%s.shared_fcs.1", b);
      linear(w, p, FC, FC);
    }
    snprintf(p, sizeof p, "%s.fc_cls", b);
    linear(w, p, FC, K + 1);
    snprintf(p, sizeof p, "%s.fc_reg", b);
    linear(w, p, FC, 4 * K);
    for (int i = 0; i < 4; i++) {
      snprintf(p, sizeof p, "%s.convs.%d.conv", m, i);
      conv(w, p, C, C, 3, 1);
    }
    int64_t su[4] = {C, C, 2, 2}, s1[1] = {C};
    snprintf(p, sizeof p, "%s.upsample.weight", m);
    add(w, p, 4, su, 0, 0);
    snprintf(p, sizeof p, "%s.upsample.bias", m);
    add(w, p, 1, s1, -0.1f, 0.1f);
    snprintf(p, sizeof p, "%s.conv_logits", m);
    conv(w, p, C, K, 1, 1);
  }
  return w;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_det cascade-t|s|b|l|maskrcnn-t|s|b|l|retinanet-t|s|b|l [HxW] "
                    "[runs] [score_thr (default 0; RetinaNet: its config's 0.05)] [--json]\n");
    return 2;
  }
  const char *model = argv[1];
  int H = 800, W = 1344, runs = 3, json = 0;
  float thr = 0.0f;
  if (argc > 2 && sscanf(argv[2], "%dx%d", &H, &W) != 2) return 2;
  if (argc > 3) runs = atoi(argv[3]);
  if (argc > 4 && argv[4][0] != '-') thr = (float)atof(argv[4]);
  for (int i = 1; i < argc; i++) json |= strcmp(argv[i], "--json") == 0;
  const char *dash = strchr(model, '-');
  if (!dash || runs < 1) return 2;
  int cascade = strncmp(model, "cascade", 7) == 0, retina = strncmp(model, "retinanet", 9) == 0;
  char preset[64];
  snprintf(preset, sizeof preset, "ravlt-%s-backbone", dash + 1);
  rv_ctx *ctx = rv_ctx_create();
  rv_ravlt_config bc;
  rv_ravlt *bb = NULL;
  rv_detector *det = NULL;
  if (rv_ravlt_preset(&bc, preset, ctx) || rv_ravlt_create_random(&bb, &bc, 1, ctx)) {
    fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx));
    return 1;
  }
  rv_weights *w = retina ? retina_weights(bc.embed_dims, 80) : det_weights(cascade, bc.embed_dims, 80);
  rv_detector_config dc = rv_detector_default_config(
      retina ? RV_DET_RETINANET : cascade ? RV_DET_CASCADE_MASK_RCNN : RV_DET_MASK_RCNN);
  dc.rcnn.score_thr = thr; /* RetinaNet keeps its config's 0.05 unless given */
  if (retina && argc > 4 && argv[4][0] != '-') dc.retina.score_thr = thr;
  if (rv_detector_load(&det, &dc, w, ctx)) {
    fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx));
    return 1;
  }
  rv_weights_free(w);
  /* a 4:3 photograph at 3/5 of the input size, resized by 5/3 */
  rv_img_meta meta;
  memset(&meta, 0, sizeof meta);
  meta.ori_h = H * 3 / 5;
  meta.ori_w = W * 3 / 5;
  meta.img_h = meta.pad_h = H;
  meta.img_w = meta.pad_w = W;
  for (int k = 0; k < 4; k++) meta.scale_factor[k] = 5.0f / 3;
  rv_arena *a = rv_arena_create(0);
  rv_tensor x = rv_tensor_new(a, 1, 3, H, W);
  for (size_t i = 0; i < rv_tensor_numel(x); i++) x.data[i] = frand();
  double *times = calloc((size_t)runs + 1, sizeof(double)), tb = 0, th = 0, tst[5] = {0};
  int ndet = 0;
  for (int r = 0; r <= runs; r++) { /* run 0 is the warm-up */
    rv_arena_mark m = rv_arena_get_mark(a);
    rv_tensor feats[4];
    rv_detections d;
    double t0 = now();
    if (rv_ravlt_forward(bb, a, x, feats, ctx)) break;
    double t1 = now();
    det_clock c = {{0}};
    rv_det_trace tr = {det_trace, &c, 1};
    if (rv_detector_forward(det, &d, feats, &meta, &tr, a, ctx)) break;
    double t2 = now();
    ndet = d.n;
    rv_arena_release(a, m);
    if (r == 0) continue;
    times[r - 1] = (t2 - t0) * 1e3;
    tb += (t1 - t0) * 1e3 / runs;
    th += (t2 - t1) * 1e3 / runs;
    double prev = t1;
    for (int s = 0; s < 4; s++)
      if (c.last[s] > 0) {
        tst[s] += (c.last[s] - prev) * 1e3 / runs;
        prev = c.last[s];
      }
    tst[4] += (t2 - prev) * 1e3 / runs;
  }
  if (rv_ctx_errmsg(ctx)[0]) {
    fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx));
    return 1;
  }
  for (int i = 0; i < runs; i++) /* median */
    for (int j = i + 1; j < runs; j++)
      if (times[j] < times[i]) {
        double t = times[i];
        times[i] = times[j];
        times[j] = t;
      }
  double med = runs % 2 ? times[runs / 2] : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double rss = ru.ru_maxrss / 1024.0;
  if (json)
    printf("{\"model\": \"%s\", \"size\": \"%dx%d\", \"median_ms\": %.1f, \"min_ms\": %.1f, "
           "\"max_ms\": %.1f, \"backbone_ms\": %.1f, \"heads_ms\": %.1f, \"detections\": %d, "
           "\"neck_ms\": %.1f, \"rpn_ms\": %.1f, \"roi_ms\": %.1f, \"mask_ms\": %.1f, "
           "\"post_ms\": %.1f, "
           "\"arena_peak_mb\": %.1f, \"peak_rss_mb\": %.1f}\n",
           model, H, W, med, times[0], times[runs - 1], tb, th, ndet, tst[0], tst[1], tst[2],
           tst[3], tst[4], rv_arena_peak(a) / 1e6, rss);
  else
    printf("%s %dx%d: median %.0f ms (means: backbone %.0f, neck+heads %.0f = neck %.0f, rpn %.0f, "
           "roi %.0f, mask %.0f, post %.0f), %d detections, arena peak %.0f MB, peak RSS %.0f MB\n",
           model, H, W, med, tb, th, tst[0], tst[1], tst[2], tst[3], tst[4], ndet,
           rv_arena_peak(a) / 1e6, rss);
  free(times);
  rv_arena_free(a);
  rv_detector_free(det);
  rv_ravlt_free(bb);
  rv_ctx_free(ctx);
  return 0;
}
