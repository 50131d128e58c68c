/* Whole semantic segmentation model benchmark (not a test): RAVLT backbone + UperNet or
 * Semantic FPN decoder with random weights (official widths: UperNet channels 512; FPN neck
 * 256, FPNHead 128; 150 classes), whole-mode simple test on an HxW input: backbone, decoder,
 * then the fused resize to the input + rescale to ori (= input size) + argmax. Build by hand
 * against the library (bench/bench_seg.sh does it):
 *   gcc -O2 -fopenmp -I. -I/usr/include/x86_64-linux-gnu/openblas-openmp bench/bench_seg.c \
 *       build/libravlt.a $(pkg-config --libs opencv4 libcjson libzip) \
 *       -L/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -lstdc++ -lm -o build/bench_seg
 *   OMP_NUM_THREADS=2 build/bench_seg upernet-s [HxW] [runs] [--json]
 */
#define _POSIX_C_SOURCE 200809L
#include "backbone/ravlt.h"
#include "models/segmentor.h"

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

static uint64_t rng = 88172645463325252ULL;
static float frand(void) { /* [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}

/* conv weights ~ U(-1,1)/sqrt(fan_in); vectors uniform in [lo, hi] */
static void add(rv_weights *w, const char *name, int ndim, const int64_t *shape, float lo, float hi) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  float *x = rv_malloc(n * sizeof(float));
  float s = ndim == 4 ? 1.0f / sqrtf((float)(shape[1] * shape[2] * shape[3])) : 0.0f;
  for (size_t i = 0; i < n; i++)
    x[i] = ndim == 4 ? frand() * s : lo + (hi - lo) * 0.5f * (frand() + 1.0f);
  if (rv_weights_add(w, name, RV_DT_F32, ndim, shape, x, n * sizeof(float), 1, NULL) != RV_OK) abort();
}

/* ConvModule at prefix: conv [bias] [+ BN] */
static void convmod(rv_weights *w, const char *prefix, int cin, int cout, int k, int bn) {
  char name[256];
  int64_t s4[4] = {cout, cin, k, k}, s1[1] = {cout};
  snprintf(name, sizeof name, "%s.conv.weight", prefix);
  add(w, name, 4, s4, 0, 0);
  if (!bn) {
    snprintf(name, sizeof name, "%s.conv.bias", prefix);
    add(w, name, 1, s1, -0.1f, 0.1f);
    return;
  }
  static const char *const sfx[4] = {"weight", "bias", "running_mean", "running_var"};
  static const float lo[4] = {0.5f, -0.1f, -0.1f, 0.5f}, hi[4] = {1.5f, 0.1f, 0.1f, 1.5f};
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "%s.bn.%s", prefix, sfx[i]);
    add(w, name, 1, s1, lo[i], hi[i]);
  }
}

static rv_weights *decoder_weights(int upernet, const int *dims, int classes) {
  rv_weights *w = rv_weights_new("random");
  char p[128];
  int ch;
  if (upernet) {
    ch = 512;
    for (int i = 0; i < 4; i++) {
      snprintf(p, sizeof p, "decode_head.psp_modules.%d.1", i);
      convmod(w, p, dims[3], ch, 1, 1);
    }
    convmod(w, "decode_head.bottleneck", dims[3] + 4 * ch, ch, 3, 1);
    for (int i = 0; i < 3; i++) {
      snprintf(p, sizeof p, "decode_head.lateral_convs.%d", i);
      convmod(w, p, dims[i], ch, 1, 1);
      snprintf(p, sizeof p, "decode_head.fpn_convs.%d", i);
      convmod(w, p, ch, ch, 3, 1);
    }
    convmod(w, "decode_head.fpn_bottleneck", 4 * ch, ch, 3, 1);
  } else {
    const int oc = 256;
    ch = 128;
    for (int i = 0; i < 4; i++) {
      snprintf(p, sizeof p, "neck.lateral_convs.%d", i);
      convmod(w, p, dims[i], oc, 1, 0);
      snprintf(p, sizeof p, "neck.fpn_convs.%d", i);
      convmod(w, p, oc, oc, 3, 0);
      for (int k = 0; k < (i > 1 ? i : 1); k++) {
        snprintf(p, sizeof p, "decode_head.scale_heads.%d.%d", i, i ? 2 * k : 0);
        convmod(w, p, k ? ch : oc, ch, 3, 1);
      }
    }
  }
  int64_t sw[4] = {classes, ch, 1, 1}, sb[1] = {classes};
  add(w, "decode_head.conv_seg.weight", 4, sw, 0, 0);
  add(w, "decode_head.conv_seg.bias", 1, sb, -0.1f, 0.1f);
  return w;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_seg upernet-t|s|b|l|fpn-t|s|b|l [HxW] [runs] [--json]\n");
    return 2;
  }
  const char *model = argv[1];
  int H = 512, W = 2048, runs = 3, json = 0;
  if (argc > 2 && sscanf(argv[2], "%dx%d", &H, &W) != 2) return 2;
  if (argc > 3) runs = atoi(argv[3]);
  for (int i = 1; i < argc; i++) json |= strcmp(argv[i], "--json") == 0;
  const char *dash = strchr(model, '-');
  if (!dash || runs < 1) return 2;
  int upernet = strncmp(model, "upernet", 7) == 0;
  char preset[64];
  snprintf(preset, sizeof preset, "ravlt-%s-backbone", dash + 1);
  rv_ctx *ctx = rv_ctx_create();
  rv_ravlt_config bc;
  rv_ravlt *bb = NULL;
  rv_seg_decoder *dec = NULL;
  if (rv_ravlt_preset(&bc, preset, ctx) || rv_ravlt_create_random(&bb, &bc, 1, ctx)) {
    fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx));
    return 1;
  }
  rv_weights *w = decoder_weights(upernet, bc.embed_dims, 150);
  rv_seg_decoder_config dc = rv_seg_decoder_default_config();
  if (rv_seg_decoder_load(&dec, &dc, w, ctx)) {
    fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx));
    return 1;
  }
  rv_weights_free(w);
  rv_arena *a = rv_arena_create(0);
  rv_tensor x = rv_tensor_new(a, 1, 3, H, W);
  for (size_t i = 0; i < rv_tensor_numel(x); i++) x.data[i] = frand();
  int32_t *labels = malloc((size_t)H * W * sizeof *labels);
  double best = 1e30, tb = 0, td = 0, tp = 0, *times = calloc((size_t)runs + 1, sizeof(double));
  for (int r = 0; r <= runs; r++) { /* run 0 is the warm-up */
    rv_arena_mark m = rv_arena_get_mark(a);
    rv_tensor feats[4], logits;
    double t0 = now();
    if (rv_seg_ravlt_backbone(bb, feats, 4, x, a, ctx)) break;
    double t1 = now();
    if (rv_seg_decoder_forward(dec, &logits, feats, 4, NULL, a, ctx)) break;
    double t2 = now();
    if (rv_seg_resize2_argmax(labels, logits.data, logits.c, logits.h, logits.w, H, W, H, W, a)) break;
    double t3 = now();
    rv_arena_release(a, m);
    if (r == 0) continue;
    times[r - 1] = (t3 - t0) * 1e3;
    if (times[r - 1] < best) {
      best = times[r - 1];
      tb = (t1 - t0) * 1e3;
      td = (t2 - t1) * 1e3;
      tp = (t3 - t2) * 1e3;
    }
  }
  if (rv_ctx_errmsg(ctx)[0]) {
    fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx));
    return 1;
  }
  /* median */
  for (int i = 0; i < runs; i++)
    for (int j = i + 1; j < runs; j++)
      if (times[j] < times[i]) {
        double t = times[i];
        times[i] = times[j];
        times[j] = t;
      }
  /* the median as Python's statistics.median takes it (tools/seg_torch.py): the mean of the
   * middle two for an even count */
  const double med = runs % 2 ? times[runs / 2] : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  if (json)
    printf("{\"model\":\"%s\",\"size\":\"%dx%d\",\"median_ms\":%.1f,\"min_ms\":%.1f,\"backbone_ms\":%.1f,"
           "\"head_ms\":%.1f,\"post_ms\":%.1f,\"peak_rss_mb\":%.0f}\n",
           model, H, W, med, best, tb, td, tp, ru.ru_maxrss / 1024.0);
  else
    printf("%s %dx%d: median %.0f ms, best %.0f ms (backbone %.0f, head %.0f, resize+argmax %.0f), peak RSS %.0f MB\n",
           model, H, W, med, best, tb, td, tp, ru.ru_maxrss / 1024.0);
  free(times);
  free(labels);
  rv_arena_free(a);
  rv_seg_decoder_free(dec);
  rv_ravlt_free(bb);
  rv_ctx_free(ctx);
  return 0;
}
