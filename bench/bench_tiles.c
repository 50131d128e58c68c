/* Large images (issue 42): helpers and in-process timings for bench/bench_tiles.sh.
 *
 *   bench_tiles mosaic OUT H W SEED               an H x W mosaic of `ravlt synth --task det`
 *                                                 pieces (240 x 320, in memory) written to OUT
 *   bench_tiles cut IMG TH TW OVERLAP DIR          the SAHI tiles of IMG (rv_tile_boxes) as PNGs
 *   bench_tiles detect IMG TH TW OVERLAP ROUNDS    rv_model_detect_tiled on IMG against plain
 *                                                 rv_model_detect runs on the same tiles cut
 *                                                 beforehand, alternating, same model and arena
 *   bench_tiles segment H W TH TW ROUNDS           rv_model_segment_tiled on an H x W synthetic
 *                                                 image against as many runs on a TH x TW image
 *                                                 (one crop covering it: a plain native run)
 *   bench_tiles segbig H W TH TW                  rv_model_segment_tiled of an H x W image of
 *                                                 synthetic pieces: time and peak RSS
 *   bench_tiles rss CMD ARGS...                   runs CMD, prints its wall time and peak RSS
 *
 * The demo models are read from models/ (run from the repository root). Not a test. */
#define _DEFAULT_SOURCE /* wait4 */
#include "formats/image.h"
#include "datasets/synth.h"
#include "models/model.h"
#include <ravlt/tile.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static rv_ctx *ctx;

static void die(const char *what) {
  fprintf(stderr, "bench_tiles: %s: %s\n", what, rv_ctx_errmsg(ctx));
  exit(1);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int mosaic(const char *out, int H, int W, unsigned long long seed) {
  rv_synth_opts o;
  rv_synth_defaults(&o);
  o.task = RV_SYNTH_DET;
  o.seed = seed;
  rv_image m = {0};
  if (rv_image_alloc(&m, H, W, 3, ctx) != RV_OK) die("mosaic");
  const int rows = (H + o.height - 1) / o.height, cols = (W + o.width - 1) / o.width;
  for (int i = 0; i < rows * cols; i++) {
    rv_synth_sample s;
    if (rv_synth_generate(&s, &o, i, ctx) != RV_OK) die("synth");
    const int y0 = i / cols * o.height, x0 = i % cols * o.width, w = x0 + o.width <= W ? o.width : W - x0;
    for (int y = 0; y < o.height && y0 + y < H; y++) memcpy(rv_image_px(&m, y0 + y, x0), rv_image_px(&s.image, y, 0), (size_t)w * 3);
    rv_synth_sample_free(&s);
  }
  if (rv_image_write(out, &m, ctx) != RV_OK) die(out);
  printf("%s: %dx%d mosaic of %d synthetic pieces of %dx%d\n", out, m.w, m.h, rows * cols, o.width, o.height);
  rv_image_free(&m);
  return 0;
}

static rv_tile_opts tile_opts(int th, int tw, double ov) {
  rv_tile_opts o = rv_tile_default_opts();
  o.tile_h = th, o.tile_w = tw;
  o.overlap_h = o.overlap_w = ov;
  return o;
}

/* the tiles of img as images of their own */
static rv_image *cut_tiles(const rv_image *img, const rv_tile_opts *o, long *n) {
  *n = rv_tile_boxes(NULL, 0, img->h, img->w, o);
  int *b = malloc(sizeof *b * 4 * (size_t)*n);
  rv_image *t = calloc((size_t)*n, sizeof *t);
  rv_tile_boxes(b, *n, img->h, img->w, o);
  for (long i = 0; i < *n; i++) {
    const int x0 = b[4 * i], y0 = b[4 * i + 1], w = b[4 * i + 2] - x0, h = b[4 * i + 3] - y0;
    if (rv_image_alloc(&t[i], h, w, 3, ctx) != RV_OK) die("cut");
    for (int y = 0; y < h; y++) memcpy(rv_image_px(&t[i], y, 0), rv_image_px(img, y0 + y, x0), (size_t)w * 3);
  }
  free(b);
  return t;
}

static int cut(const char *path, int th, int tw, double ov, const char *dir) {
  rv_image img = {0};
  if (rv_image_read(path, &img, ctx) != RV_OK) die(path);
  rv_tile_opts o = tile_opts(th, tw, ov);
  long n;
  rv_image *t = cut_tiles(&img, &o, &n);
  for (long i = 0; i < n; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/tile_%05ld.png", dir, i);
    if (rv_image_write(p, &t[i], ctx) != RV_OK) die(p);
    rv_image_free(&t[i]);
  }
  printf("%ld tiles of %dx%d (overlap %.2f) written to %s\n", n, tw, th, ov, dir);
  free(t);
  rv_image_free(&img);
  return 0;
}

/* per-tile times of a tiled run, from its progress callback */
typedef struct {
  double last, *dt;
  int n;
} tile_clock;

static int on_tile(void *user, int done, int total) {
  tile_clock *c = user;
  const double t = now();
  if (done - 1 < total) c->dt[c->n++] = t - c->last;
  c->last = t;
  return 0;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n ? v[n / 2] : 0;
}

static int detect(const char *path, int th, int tw, double ov, int rounds) {
  rv_model *m = NULL;
  if (rv_model_load(&m, "models/demo_det.safetensors", NULL, ctx) != RV_OK) die("models/demo_det.safetensors");
  rv_image img = {0};
  if (rv_image_read(path, &img, ctx) != RV_OK) die(path);
  rv_tile_opts o = tile_opts(th, tw, ov);
  long n;
  rv_image *t = cut_tiles(&img, &o, &n);
  rv_arena *a = rv_arena_create(0);
  double *tiled = calloc((size_t)rounds, sizeof *tiled), *plain = calloc((size_t)rounds, sizeof *plain);
  double *merge = calloc((size_t)rounds, sizeof *merge);
  double *ttile = calloc((size_t)(rounds * n), sizeof *ttile), *ptile = calloc((size_t)(rounds * n), sizeof *ptile);
  tile_clock clock = {0, ttile, 0};
  o.progress = on_tile, o.progress_user = &clock;
  int nd = 0, np = 0;
  for (int r = -1; r < rounds; r++) { /* round -1 warms up */
    const int n0 = clock.n;
    double t0 = now();
    clock.last = t0;
    rv_tile_detections d;
    if (rv_model_detect_tiled(m, &d, &img, &o, a, ctx) != RV_OK) die("tiled");
    nd = d.n;
    double t1 = now();
    if (r < 0) clock.n = n0; /* the warm-up's tiles are not counted */
    rv_arena_reset(a);
    for (long i = 0; i < n; i++) {
      const double p0 = now();
      rv_detections pd;
      if (rv_model_detect(m, &pd, NULL, &t[i], a, ctx) != RV_OK) die("plain");
      rv_arena_reset(a);
      if (r >= 0) ptile[np++] = now() - p0;
    }
    double t2 = now();
    if (r >= 0) tiled[r] = t1 - t0, plain[r] = t2 - t1, merge[r] = t1 - clock.last;
  }
  const double mt = median(tiled, rounds), mp = median(plain, rounds), mm = median(merge, rounds);
  const double tt = median(ttile, clock.n), pt = median(ptile, np);
  printf("detect %dx%d, %ld tiles of %dx%d (overlap %.2f), threads %d, medians of %d rounds:\n"
         "  rv_model_detect_tiled %.3f s (%.2f ms a tile; the merge of the tiles' detections into %d: %.1f ms)\n"
         "  rv_model_detect on the same tiles cut beforehand %.3f s (%.2f ms a tile)\n"
         "  tiled / plain: %.3f in total; %.3f per tile (median tile %.2f / %.2f ms: cut, run, shift)\n",
         img.w, img.h, n, tw, th, ov, rv_ctx_threads(ctx), rounds, mt, 1e3 * mt / n, nd, 1e3 * mm, mp, 1e3 * mp / n,
         mt / mp, tt / pt, 1e3 * tt, 1e3 * pt);
  for (long i = 0; i < n; i++) rv_image_free(&t[i]);
  free(t);
  free(tiled);
  free(plain);
  free(merge);
  free(ttile);
  free(ptile);
  rv_arena_free(a);
  rv_image_free(&img);
  rv_model_free(m);
  return 0;
}

static int segment(int H, int W, int th, int tw, int rounds) {
  rv_model *m = NULL;
  if (rv_model_load(&m, "models/demo_seg.safetensors", NULL, ctx) != RV_OK) die("models/demo_seg.safetensors");
  rv_synth_opts so;
  rv_synth_defaults(&so);
  so.width = W, so.height = H;
  rv_synth_sample s;
  if (rv_synth_generate(&s, &so, 0, ctx) != RV_OK) die("synth");
  rv_tile_opts o = tile_opts(th, tw, 0.2);
  /* the crops of mmseg's grid (stride = tile - int(0.2 tile)) */
  const int sh = th - (int)(0.2 * th), sw = tw - (int)(0.2 * tw);
  const int gh = (H - th + sh - 1 > 0 ? H - th + sh - 1 : 0) / sh + 1, gw = (W - tw + sw - 1 > 0 ? W - tw + sw - 1 : 0) / sw + 1;
  rv_image crop = {0};
  if (rv_image_alloc(&crop, th, tw, 3, ctx) != RV_OK) die("crop");
  for (int y = 0; y < th; y++) memcpy(rv_image_px(&crop, y, 0), rv_image_px(&s.image, y, 0), (size_t)tw * 3);
  int32_t *lab = malloc(sizeof *lab * (size_t)H * W), *cl = malloc(sizeof *cl * (size_t)th * tw);
  rv_arena *a = rv_arena_create(0);
  double *tiled = calloc((size_t)rounds, sizeof *tiled), *plain = calloc((size_t)rounds, sizeof *plain);
  for (int r = -1; r < rounds; r++) {
    double t0 = now();
    if (rv_model_segment_tiled(m, lab, &s.image, &o, a, ctx) != RV_OK) die("tiled");
    double t1 = now();
    for (int k = 0; k < gh * gw; k++)
      if (rv_model_segment_tiled(m, cl, &crop, &o, a, ctx) != RV_OK) die("plain");
    double t2 = now();
    if (r >= 0) tiled[r] = t1 - t0, plain[r] = t2 - t1;
  }
  qsort(tiled, (size_t)rounds, sizeof *tiled, cmp_double);
  qsort(plain, (size_t)rounds, sizeof *plain, cmp_double);
  const double mt = tiled[rounds / 2], mp = plain[rounds / 2];
  printf("segment %dx%d, %d crops of %dx%d (overlap 0.2), threads %d, median of %d rounds:\n"
         "  rv_model_segment_tiled %.3f s (%.2f ms a crop)\n"
         "  the same number of one-crop runs on a %dx%d image %.3f s (%.2f ms a crop)\n"
         "  tiled / plain per crop: %.3f\n",
         W, H, gh * gw, tw, th, rv_ctx_threads(ctx), rounds, mt, 1e3 * mt / (gh * gw), tw, th, mp,
         1e3 * mp / (gh * gw), mt / mp);
  free(tiled);
  free(plain);
  free(lab);
  free(cl);
  rv_arena_free(a);
  rv_image_free(&crop);
  rv_synth_sample_free(&s);
  rv_model_free(m);
  return 0;
}

/* An H x W image of synthetic segmentation pieces (240 x 320, repeated), its tiled
 * segmentation; the time, and the process's peak RSS with what it holds (the model, the
 * image, the labels). */
static int segbig(int H, int W, int th, int tw) {
  rv_model *m = NULL;
  if (rv_model_load(&m, "models/demo_seg.safetensors", NULL, ctx) != RV_OK) die("models/demo_seg.safetensors");
  rv_synth_opts so;
  rv_synth_defaults(&so);
  rv_image img = {0};
  if (rv_image_alloc(&img, H, W, 3, ctx) != RV_OK) die("image");
  for (int k = 0; k < 16; k++) {
    rv_synth_sample s;
    if (rv_synth_generate(&s, &so, k, ctx) != RV_OK) die("synth");
    for (int y0 = (k / 4) * so.height; y0 < H; y0 += 4 * so.height)
      for (int x0 = (k % 4) * so.width; x0 < W; x0 += 4 * so.width)
        for (int y = 0; y < so.height && y0 + y < H; y++)
          memcpy(rv_image_px(&img, y0 + y, x0), rv_image_px(&s.image, y, 0),
                 (size_t)(x0 + so.width <= W ? so.width : W - x0) * 3);
    rv_synth_sample_free(&s);
  }
  int32_t *lab = malloc(sizeof *lab * (size_t)H * W);
  if (!lab) die("labels");
  memset(lab, 0, sizeof *lab * (size_t)H * W);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const long before = ru.ru_maxrss;
  rv_arena *a = rv_arena_create(0);
  rv_tile_opts o = tile_opts(th, tw, 0.2);
  double t0 = now();
  if (rv_model_segment_tiled(m, lab, &img, &o, a, ctx) != RV_OK) die("tiled");
  double t1 = now();
  getrusage(RUSAGE_SELF, &ru);
  long hist[8] = {0};
  for (size_t i = 0; i < (size_t)H * W; i++) hist[lab[i] & 7]++;
  printf("segment %dx%d in tiles of %dx%d (overlap 0.2), threads %d: %.1f s; peak RSS %.0f MB (%.0f MB before the "
         "call: model, image %.0f MB, labels %.0f MB); arena peak %.0f MB; background %.1f%%\n",
         W, H, tw, th, rv_ctx_threads(ctx), t1 - t0, ru.ru_maxrss / 1024.0, before / 1024.0, H * (double)W * 3 / 1048576,
         H * (double)W * 4 / 1048576, rv_arena_peak(a) / 1048576.0, 100.0 * hist[0] / ((double)H * W));
  rv_arena_free(a);
  free(lab);
  rv_image_free(&img);
  rv_model_free(m);
  return 0;
}

static int rss(char **argv) {
  double t0 = now();
  pid_t pid = fork();
  if (pid == 0) {
    execvp(argv[0], argv);
    perror(argv[0]);
    _exit(127);
  }
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) != pid) return 1;
  printf("%s: exit %d, %.2f s, peak RSS %.0f MB\n", argv[0], WIFEXITED(status) ? WEXITSTATUS(status) : -1,
         now() - t0, ru.ru_maxrss / 1024.0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv) {
  ctx = rv_ctx_create();
  rv_blas_init();
  if (getenv("OMP_NUM_THREADS")) rv_ctx_set_threads(ctx, atoi(getenv("OMP_NUM_THREADS")));
  if (argc == 6 && !strcmp(argv[1], "mosaic")) return mosaic(argv[2], atoi(argv[3]), atoi(argv[4]), strtoull(argv[5], 0, 10));
  if (argc == 7 && !strcmp(argv[1], "cut")) return cut(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[5]), argv[6]);
  if (argc == 7 && !strcmp(argv[1], "detect")) return detect(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[5]), atoi(argv[6]));
  if (argc == 7 && !strcmp(argv[1], "segment"))
    return segment(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
  if (argc == 6 && !strcmp(argv[1], "segbig")) return segbig(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
  if (argc >= 3 && !strcmp(argv[1], "rss")) return rss(argv + 2);
  fprintf(stderr, "usage: see bench/bench_tiles.c\n");
  return 2;
}
