/* Kernel micro-benchmarks (not a test). Build by hand against the library:
 *   cmake -S . -B build-ops -DCMAKE_BUILD_TYPE=Release && cmake --build build-ops -j2
 *   gcc -O2 -fopenmp -I. -I/usr/include/x86_64-linux-gnu/openblas-openmp bench/bench_ops.c \
 *       build-ops/libravlt.a -L/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -lm \
 *       -o build-ops/bench_ops
 *   OMP_NUM_THREADS=2 build-ops/bench_ops [reps] [-c]   (-c: CPU time instead of wall time)
 *   OMP_NUM_THREADS=2 build-ops/bench_ops wino [reps]   (3x3 convs: im2col vs Winograd)
 *   OMP_NUM_THREADS=2 build-ops/bench_ops paths [reps]  (Winograd BLAS / fused / channels-last
 *                                      paths and the 1x1 kernel vs BLAS, alternating calls)
 *   OMP_NUM_THREADS=2 build-ops/bench_ops upconv [reps] (UperNet's conv of an upsampled level:
 *                                      resize + conv vs rv_conv3x3_upsampled_f32, alternating)
 *   OMP_NUM_THREADS=2 build-ops/bench_ops conv3x3 [reps] (the RAVLT-S stem and downsample convs
 *                                      at 512x512: rv_conv2d_f32 vs rv_conv3x3_f32 vs
 *                                      rv_conv3x3_bf16, alternating calls, min of reps)
 * Prints GFLOP/s (2 flops per multiply-add) or GB/s-equivalent times per kernel. */
#define _POSIX_C_SOURCE 200809L
#include "kernels/ops.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static float *buf(size_t n) {
  float *p = rv_malloc(n * sizeof(float));
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  uint64_t s = n;
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    p[i] = (float)((s >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
  }
  return p;
}

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int reps = 5;
/* Use process CPU time instead of wall time (-c): robust on a loaded machine when run with
 * OMP_NUM_THREADS=1; with more threads it is the sum over threads. */
static int use_cpu = 0;

/* best-of-reps seconds of one call */
#define TIME(expr, out)                                   \
  do {                                                    \
    expr;                                                 \
    double best_ = 1e30;                                  \
    for (int r_ = 0; r_ < reps; r_++) {                   \
      double t0_ = use_cpu ? cpu_now() : now();           \
      expr;                                               \
      double dt_ = (use_cpu ? cpu_now() : now()) - t0_;   \
      if (dt_ < best_) best_ = dt_;                       \
    }                                                     \
    out = best_;                                          \
  } while (0)

static void bench_conv(rv_arena *ar, const char *name, int n, int cin, int h, int w, int cout,
                       int k, int s, int groups) {
  rv_conv_params p = rv_conv_default_params(k, s, k / 2);
  p.groups = groups;
  int oh = rv_conv_out_size(h, k, s, k / 2, 1), ow = rv_conv_out_size(w, k, s, k / 2, 1);
  float *x = buf((size_t)n * cin * h * w), *wt = buf((size_t)cout * cin / groups * k * k);
  float *b = buf((size_t)cout), *y = buf((size_t)n * cout * oh * ow);
  double t;
  TIME(rv_conv2d_f32(y, x, wt, b, n, cin, h, w, cout, p, ar), t);
  double fl = 2.0 * n * cout * oh * ow * (double)(cin / groups) * k * k;
  printf("%-34s %8.2f ms %8.1f GFLOP/s  (scratch peak %.1f MB)\n", name, t * 1e3, fl / t * 1e-9,
         rv_arena_peak(ar) / 1048576.0);
  rv_free(x), rv_free(wt), rv_free(b), rv_free(y);
}

static void bench_dw(const char *name, int c, int h, int w, int k, int s) {
  int pad = k / 2, oh = (h + 2 * pad - k) / s + 1, ow = (w + 2 * pad - k) / s + 1;
  float *x = buf((size_t)c * h * w), *wt = buf((size_t)c * k * k), *b = buf((size_t)c);
  float *y = buf((size_t)c * oh * ow);
  double t;
  TIME(rv_dwconv2d_f32(y, x, wt, b, NULL, 1, c, h, w, k, s, pad), t);
  double fl = 2.0 * c * oh * ow * k * k;
  printf("%-34s %8.2f ms %8.1f GFLOP/s\n", name, t * 1e3, fl / t * 1e-9);
  rv_free(x), rv_free(wt), rv_free(b), rv_free(y);
}

/* 3x3 stride-1 pad-1 conv through each path of rv_conv2d_f32 (im2col, Winograd F(2x2) and
 * F(4x4), and the automatic choice); GMAC/s counts the nominal 9 cin cout oh ow MACs. */
static void bench_conv3x3_algos(rv_arena *ar, const char *name, int n, int cin, int h, int w,
                                int cout) {
  float *x = buf((size_t)n * cin * h * w), *wt = buf((size_t)cout * cin * 9);
  float *b = buf((size_t)cout), *y = buf((size_t)n * cout * h * w);
  double gmac = 9.0 * n * cout * h * w * (double)cin * 1e-9, t[4];
  static const rv_conv_algo algos[4] = {RV_CONV_IM2COL, RV_CONV_WINOGRAD2, RV_CONV_WINOGRAD4,
                                        RV_CONV_AUTO};
  for (int i = 0; i < 4; i++) {
    rv_conv_params p = rv_conv_default_params(3, 1, 1);
    p.act = RV_ACT_RELU;
    p.algo = algos[i];
    TIME(rv_conv2d_f32(y, x, wt, b, n, cin, h, w, cout, p, ar), t[i]);
  }
  printf("%-30s %6.2f GMAC | im2col %8.1f ms %5.1f | F2 %8.1f ms %5.1f %4.2fx | F4 %8.1f ms "
         "%5.1f %4.2fx | auto %4.2fx\n", name, gmac, t[0] * 1e3, gmac / t[0], t[1] * 1e3,
         gmac / t[1], t[0] / t[1], t[2] * 1e3, gmac / t[2], t[0] / t[2], t[0] / t[3]);
  rv_free(x), rv_free(wt), rv_free(b), rv_free(y);
}

/* `bench_ops wino [reps]`: the 3x3 convs of the necks and heads (GMAC/s nominal) */
static void bench_wino(rv_arena *ar) {
  static const struct {
    const char *name;
    int n, cin, h, w, cout;
  } shapes[] = {{"upernet bottleneck 2048->512 16x512", 1, 2048, 16, 512, 512},
                {"upernet fpn 512->512 32x128", 1, 512, 32, 128, 512},
                {"upernet fpn 512->512 16x64", 1, 512, 16, 64, 512},
                {"fpn/rpn 256->256 200x336", 1, 256, 200, 336, 256},
                {"fpn/rpn 256->256 100x168", 1, 256, 100, 168, 256},
                {"fpn/rpn 256->256 50x84", 1, 256, 50, 84, 256},
                {"fpn/rpn 256->256 25x42", 1, 256, 25, 42, 256},
                {"fpn/rpn 256->256 13x21", 1, 256, 13, 21, 256},
                {"roi 256->256 14x14 n=100", 100, 256, 14, 14, 256},
                {"roi 256->256 7x7 n=500", 500, 256, 7, 7, 256},
                {"fpn-t 128->128 64x128", 1, 128, 64, 128, 128},
                {"small 64->64 64x64", 1, 64, 64, 64, 64},
                {"small 32->32 64x64", 1, 32, 64, 64, 32}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    bench_conv3x3_algos(ar, shapes[i].name, shapes[i].n, shapes[i].cin, shapes[i].h, shapes[i].w,
                        shapes[i].cout);
}

/* `bench_ops paths [reps]`: the implementations of one computation in alternating calls
 * (best of reps each), and whether their outputs are the same bits: Winograd through BLAS,
 * the fused path and (RoI batches) the channels-last path; 1x1 convs through the AVX-512
 * kernel (rv_pointwise_f32) and BLAS. */
static double max_diff(const float *a, const float *b, size_t n) {
  double d = 0;
  for (size_t i = 0; i < n; i++) d = fabs((double)a[i] - b[i]) > d ? fabs((double)a[i] - b[i]) : d;
  return d;
}

static void bench_paths(rv_arena *ar) {
  if (!rv_ukernel_supported()) {
    printf("no AVX-512F: only the BLAS paths exist here\n");
    return;
  }
  static const struct {
    const char *name;
    int n, c, h, w, m;
  } wc[] = {{"F2 256->256 200x336", 1, 256, 200, 336, 2}, {"F2 256->256 100x168", 1, 256, 100, 168, 2},
            {"F2 32->32 256x256", 1, 32, 256, 256, 2},    {"F2 64->64 128x128", 1, 64, 128, 128, 2},
            {"F4 128->128 64x128", 1, 128, 64, 128, 4},   {"F4 256->256 7x7 n=1000", 1000, 256, 7, 7, 4},
            {"F4 256->256 14x14 n=100", 100, 256, 14, 14, 4}};
  printf("%-26s %10s %10s %10s  same bits\n", "winograd (ms, best)", "blas", "fused", "rois");
  for (size_t i = 0; i < sizeof wc / sizeof wc[0]; i++) {
    const int n = wc[i].n, c = wc[i].c, h = wc[i].h, w = wc[i].w, m = wc[i].m;
    const size_t sz = (size_t)n * c * h * w;
    float *x = buf(sz), *wt = buf((size_t)c * c * 9), *b = buf((size_t)c);
    float *y[3] = {buf(sz), buf(sz), buf(sz)};
    for (size_t j = 0; j < (size_t)c * c * 9; j++) wt[j] *= 0.05f;
    rv_conv_params p = rv_conv_default_params(3, 1, 1);
    p.act = RV_ACT_RELU;
    const int rois = n >= 4 && h < 32 && w < 32;
    double best[3] = {1e30, 1e30, 1e30};
    for (int r = 0; r <= reps; r++)
      for (int k = 0; k < 2 + rois; k++) {
        double t0 = now();
        if (k < 2)
          rv_conv2d_winograd_path_f32(y[k], x, wt, b, n, c, h, w, c, p, m,
                                      k ? RV_WINO_FUSED : RV_WINO_BLAS, ar);
        else
          rv_conv2d_winograd_rois_f32(y[k], x, wt, b, n, c, h, w, c, 1, RV_ACT_RELU, m,
                                      RV_ROIS_IN_NCHW | RV_ROIS_OUT_NCHW, ar);
        double dt = now() - t0;
        if (r > 0 && dt < best[k]) best[k] = dt; /* the first round warms up */
      }
    int same = !memcmp(y[0], y[1], sz * sizeof(float)) && (!rois || !memcmp(y[0], y[2], sz * sizeof(float)));
    printf("%-26s %10.1f %10.1f ", wc[i].name, best[0] * 1e3, best[1] * 1e3);
    if (rois) printf("%10.1f", best[2] * 1e3); else printf("%10s", "-");
    printf("  %s (max diff %.2g)\n", same ? "yes" : "no", max_diff(y[0], y[1], sz));
    rv_free(x), rv_free(wt), rv_free(b), rv_free(y[0]), rv_free(y[1]), rv_free(y[2]);
  }
  static const int pc[][3] = {{256, 64, 67200}, {256, 64, 16384}, {64, 192, 67200},
                              {512, 128, 8192}, {960, 320, 8400}};
  printf("%-26s %10s %10s  max diff\n", "1x1 conv (GMAC/s, best)", "blas", "kernel");
  for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++) {
    const int co = pc[i][0], ci = pc[i][1];
    const size_t n = (size_t)pc[i][2];
    float *w = buf((size_t)co * ci), *x = buf((size_t)ci * n), *b = buf((size_t)co);
    float *y[2] = {buf((size_t)co * n), buf((size_t)co * n)};
    double best[2] = {1e30, 1e30};
    for (int r = 0; r <= reps; r++)
      for (int k = 0; k < 2; k++) {
        double t0 = now();
        if (k) {
          rv_pointwise_f32(y[1], w, b, x, co, ci, n, ar);
        } else {
          for (int o = 0; o < co; o++)
            for (size_t l = 0; l < n; l++) y[0][(size_t)o * n + l] = b[o];
          rv_gemm_f32(0, 0, co, (int)n, ci, 1.0f, w, ci, x, (int)n, 1.0f, y[0], (int)n);
        }
        double dt = now() - t0;
        if (r > 0 && dt < best[k]) best[k] = dt;
      }
    char name[64];
    snprintf(name, sizeof name, "%dx%d n=%zu", co, ci, n);
    const double mac = (double)co * ci * n * 1e-9;
    printf("%-26s %10.1f %10.1f  %.2g\n", name, mac / best[0], mac / best[1],
           max_diff(y[0], y[1], (size_t)co * n));
    rv_free(w), rv_free(x), rv_free(b), rv_free(y[0]), rv_free(y[1]);
  }
}

/* UperNet-S at 512x2048: fpn_bottleneck's 512 -> 512 slice over level i (64x256, 32x128,
 * 16x64) resized to 128x512, accumulated: rv_resize_bilinear_f32 + rv_conv2d_f32
 * (RV_CONV_AUTO_FAST: F(4x4)) against rv_conv3x3_upsampled_f32. */
static void bench_upconv(rv_arena *ar) {
  const int c = 512, oh = 128, ow = 512;
  static const int lv[][2] = {{64, 256}, {32, 128}, {16, 64}};
  printf("%-30s %12s %12s  max diff / max |y|\n", "512->512 to 128x512 (ms, best)", "resize+conv",
         "upsampled");
  for (size_t i = 0; i < sizeof lv / sizeof lv[0]; i++) {
    const int ih = lv[i][0], iw = lv[i][1];
    const size_t ny = (size_t)c * oh * ow;
    float *x = buf((size_t)c * ih * iw), *wt = buf((size_t)c * c * 9), *up = buf(ny);
    float *y[2] = {buf(ny), buf(ny)};
    for (size_t j = 0; j < (size_t)c * c * 9; j++) wt[j] *= 0.02f;
    rv_conv_params p = rv_conv_default_params(3, 1, 1);
    p.algo = RV_CONV_AUTO_FAST;
    p.accumulate = 1;
    double best[2] = {1e30, 1e30};
    for (int r = 0; r <= reps; r++)
      for (int k = 0; k < 2; k++) {
        memset(y[k], 0, ny * sizeof(float));
        double t0 = now();
        if (k) {
          rv_conv3x3_upsampled_f32(y[1], x, wt, NULL, 1, c, ih, iw, c, oh, ow, RV_ACT_NONE, 1, ar);
        } else {
          rv_resize_bilinear_f32(up, x, c, ih, iw, oh, ow);
          rv_conv2d_f32(y[0], up, wt, NULL, 1, c, oh, ow, c, p, ar);
        }
        double dt = now() - t0;
        if (r > 0 && dt < best[k]) best[k] = dt;
      }
    char name[64];
    snprintf(name, sizeof name, "from %dx%d", ih, iw);
    double mx = 0;
    for (size_t j = 0; j < ny; j++) mx = fabs(y[0][j]) > mx ? fabs(y[0][j]) : mx;
    printf("%-30s %12.1f %12.1f  %.2g\n", name, best[0] * 1e3, best[1] * 1e3,
           max_diff(y[0], y[1], ny) / mx);
    rv_free(x), rv_free(wt), rv_free(up), rv_free(y[0]), rv_free(y[1]);
  }
}

/* The backbone's dense 3x3 convs: rv_conv2d_f32 (RV_CONV_AUTO) against the panel kernels
 * of kernels/conv3x3.c, float32 and bf16, alternating call by call, best of reps. */
static void bench_conv3x3_panel(rv_arena *ar) {
  static const struct {
    const char *name;
    int cin, h, w, cout, s, gelu;
  } sh[] = {{"stem 3->32 s2 512x512", 3, 512, 512, 32, 2, 1},
            {"stem 32->32 s1 256x256", 32, 256, 256, 32, 1, 1},
            {"stem 32->64 s2 256x256", 32, 256, 256, 64, 2, 0},
            {"down 64->128 s2 128x128", 64, 128, 128, 128, 2, 0},
            {"down 128->320 s2 64x64", 128, 64, 64, 320, 2, 0},
            {"down 320->512 s2 32x32", 320, 32, 32, 512, 2, 0}};
  const int bf = rv_bf16_supported();
  printf("%-26s %9s %9s %9s  (ms, best of %d; GMAC/s)  max|d|/max|y| f32, bf16\n", "", "conv2d",
         "panel", bf ? "bf16" : "-", reps);
  for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
    const int cin = sh[i].cin, h = sh[i].h, w = sh[i].w, cout = sh[i].cout, s = sh[i].s;
    const int oh = rv_conv_out_size(h, 3, s, 1, 1), ow = rv_conv_out_size(w, 3, s, 1, 1);
    const size_t ny = (size_t)cout * oh * ow;
    const rv_act act = sh[i].gelu ? RV_ACT_GELU : RV_ACT_NONE;
    float *x = buf((size_t)cin * h * w), *wt = buf((size_t)cout * cin * 9), *b = buf(cout);
    float *y[3] = {buf(ny), buf(ny), buf(ny)};
    float *up = buf(rv_conv3x3_packed_floats(cout, cin));
    uint32_t *wp = rv_malloc(sizeof(uint32_t) * rv_bf16_packed_words(cout, 9 * cin));
    rv_conv3x3_pack_f32(up, wt, cout, cin);
    if (bf) rv_bf16_pack_weights(wp, wt, cout, 9 * cin);
    rv_conv_params p = rv_conv_default_params(3, s, 1);
    p.act = act;
    double best[3] = {1e30, 1e30, 1e30};
    for (int r = 0; r <= reps; r++)
      for (int k = 0; k < (bf ? 3 : 2); k++) {
        double t0 = use_cpu ? cpu_now() : now();
        if (k == 0) rv_conv2d_f32(y[0], x, wt, b, 1, cin, h, w, cout, p, ar);
        if (k == 1) rv_conv3x3_f32(y[1], x, up, b, cin, h, w, cout, s, act, ar);
        if (k == 2) rv_conv3x3_bf16(y[2], x, wp, b, cin, h, w, cout, s, act, ar);
        double dt = (use_cpu ? cpu_now() : now()) - t0;
        if (r > 0 && dt < best[k]) best[k] = dt;
      }
    const double macs = (double)ny * cin * 9;
    double mx = 0;
    for (size_t j = 0; j < ny; j++) mx = fabs(y[0][j]) > mx ? fabs(y[0][j]) : mx;
    printf("%-26s %9.2f %9.2f %9.2f  (%5.0f %5.0f %5.0f)  %.2g %.2g\n", sh[i].name, best[0] * 1e3,
           best[1] * 1e3, bf ? best[2] * 1e3 : 0.0, macs / best[0] * 1e-9, macs / best[1] * 1e-9,
           bf ? macs / best[2] * 1e-9 : 0.0, max_diff(y[0], y[1], ny) / mx,
           bf ? max_diff(y[0], y[2], ny) / mx : 0.0);
    rv_free(x), rv_free(wt), rv_free(b), rv_free(y[0]), rv_free(y[1]), rv_free(y[2]);
    rv_free(up), rv_free(wp);
  }
}

int main(int argc, char **argv) {
  int wino = 0, paths = 0, upconv = 0, c3 = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-c")) use_cpu = 1;
    else if (!strcmp(argv[i], "wino")) wino = 1;
    else if (!strcmp(argv[i], "paths")) paths = 1;
    else if (!strcmp(argv[i], "upconv")) upconv = 1;
    else if (!strcmp(argv[i], "conv3x3")) c3 = 1;
    else reps = atoi(argv[i]);
  }
  if (reps < 1) reps = 1;
  const char *core = rv_blas_init();
  printf("OpenBLAS core: %s, OpenMP threads: %d\n", core, omp_get_max_threads());
  rv_arena *ar = rv_arena_create(0);
  if (c3) {
    bench_conv3x3_panel(ar);
    rv_arena_free(ar);
    return 0;
  }
  if (upconv) {
    bench_upconv(ar);
    rv_arena_free(ar);
    return 0;
  }
  if (paths) {
    bench_paths(ar);
    rv_arena_free(ar);
    return 0;
  }
  if (wino) {
    bench_wino(ar);
    rv_arena_free(ar);
    return 0;
  }
  double t;
  {
    int m = 2048;
    float *a = buf((size_t)m * m), *b = buf((size_t)m * m), *c = buf((size_t)m * m);
    TIME(rv_gemm_f32(0, 0, m, m, m, 1.0f, a, m, b, m, 0.0f, c, m), t);
    printf("%-34s %8.2f ms %8.1f GFLOP/s\n", "sgemm 2048^3 (peak)", t * 1e3,
           2.0 * m * m * m / t * 1e-9);
    rv_free(a), rv_free(b), rv_free(c);
  }
  bench_conv(ar, "conv3x3 64->64 200x336", 1, 64, 200, 336, 64, 3, 1, 1);
  bench_conv(ar, "conv1x1 256->1024 50x84", 1, 256, 50, 84, 1024, 1, 1, 1);
  bench_conv(ar, "conv3x3 256->256 200x336", 1, 256, 200, 336, 256, 3, 1, 1);
  bench_conv(ar, "conv3x3 s2 64->128 200x336", 1, 64, 200, 336, 128, 3, 2, 1);
  bench_conv(ar, "conv3x3 256->256 14x14 n=64", 64, 256, 14, 14, 256, 3, 1, 1);
  bench_conv(ar, "conv7x7 s4 3->64 800x1344 (stem-ish)", 1, 3, 800, 1344, 64, 7, 4, 1);
  bench_dw("dwconv3x3 128ch 100x168", 128, 100, 168, 3, 1);
  bench_dw("dwconv5x5 64ch 200x336", 64, 200, 336, 5, 1);
  bench_dw("dwconv5x5 512ch 25x42", 512, 25, 42, 5, 1);
  bench_dw("dwconv3x3 s2 64ch 200x336", 64, 200, 336, 3, 2);
  {
    int n = 64, cin = 256, h = 14, w = 14, cout = 256;
    float *x = buf((size_t)n * cin * h * w), *wt = buf((size_t)cin * cout * 4);
    float *y = buf((size_t)n * cout * 4 * h * w), *b = buf(cout);
    TIME(rv_deconv2x2_f32(y, x, wt, b, n, cin, h, w, cout, RV_ACT_RELU), t);
    printf("%-34s %8.2f ms %8.1f GFLOP/s\n", "deconv2x2 256->256 14x14 n=64", t * 1e3,
           2.0 * n * cin * cout * 4 * h * w / t * 1e-9);
    rv_free(x), rv_free(wt), rv_free(y), rv_free(b);
  }
  {
    size_t n = (size_t)64 * 200 * 336;
    float *x = buf(n), *g = buf(64), *b = buf(64), *y = buf(n);
    /* element-wise ops work in place: time them on a fresh copy each repetition (repeated
     * application would drift into denormals) */
    for (int a = 0; a < 3; a++) {
      double best = 1e30;
      for (int r = 0; r <= reps; r++) {
        memcpy(y, x, n * sizeof(float));
        double t0 = use_cpu ? cpu_now() : now();
        if (a == 0) rv_gelu_f32(y, n);
        else if (a == 1) rv_silu_f32(y, n);
        else rv_softmax_nchw_f32(y, y, 1, 64, 200 * 336);
        double dt = (use_cpu ? cpu_now() : now()) - t0;
        if (r > 0 && dt < best) best = dt;
      }
      static const char *const names[] = {"gelu 4.3M", "silu 4.3M", "softmax nchw 64x200x336"};
      printf("%-34s %8.2f ms %8.2f Gelem/s\n", names[a], best * 1e3, n / best * 1e-9);
    }
    TIME(rv_layernorm_nchw_f32(y, x, g, b, 1, 64, 200 * 336, 1e-6f), t);
    printf("%-34s %8.2f ms %8.2f Gelem/s\n", "layernorm nchw 64x200x336", t * 1e3, n / t * 1e-9);
    TIME(rv_layernorm_rows_f32(y, x, g, b, 200 * 336, 64, 1e-6f), t);
    printf("%-34s %8.2f ms %8.2f Gelem/s\n", "layernorm rows 67200x64", t * 1e3, n / t * 1e-9);
    TIME(rv_softmax_rows_f32(y, x, 64 * 200, 336), t);
    printf("%-34s %8.2f ms %8.2f Gelem/s\n", "softmax rows 12800x336", t * 1e3, n / t * 1e-9);
    TIME(rv_resize_bilinear_f32(y, x, 64, 100, 168, 200, 336), t);
    printf("%-34s %8.2f ms %8.2f Gelem/s\n", "bilinear 64x100x168 -> 200x336", t * 1e3,
           n / t * 1e-9);
    rv_free(x), rv_free(g), rv_free(b), rv_free(y);
  }
  rv_arena_free(ar);
  return 0;
}
