/* Large images (<ravlt/tile.h>, issue 42): SAHI's tile positions, the NMS / NMM merge rules
 * on hand-made boxes, tile masks as whole-image RLEs, tiled detection with the demo detector
 * on mosaics of `ravlt synth` images (it finds the shapes a whole-image run loses: box AP
 * within 0.08 of the pieces' own AP and >= 0.3 above the untiled run's), instance masks of a
 * Mask R-CNN fixture, and native-resolution tiled segmentation: the whole-image result when
 * one tile covers the image, and mmseg's slide rule computed here naively (the whole
 * [C, H, W] sums of the model's own per-crop logits, divided by the window counts) on a
 * synthetic image at its own resolution; the memory a call adds does not grow with the
 * image's height (peak RSS of a forked child). */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include "formats/image.h"
#include "datasets/coco.h"
#include "datasets/synth.h"
#include "eval/rle.h"
#include "heads/det_ops.h"
#include "models/model.h"
#include <ravlt/pyapi.h>
#include <ravlt/tile.h>

#include <cjson/cJSON.h>
#include <sys/resource.h>
#include <unistd.h>

#define DEMO_DET RV_TEST_DATA "/../../models/demo_det.safetensors"
#define DEMO_SEG RV_TEST_DATA "/../../models/demo_seg.safetensors"

static rv_ctx *ctx;

/* ---- tile positions ------------------------------------------------------------------- */

/* sahi.slicing.get_slice_bboxes, transcribed loop for loop (the reference). */
static int sahi_slices(int *b, int cap, int H, int W, int sh, int sw, double rh, double rw) {
  int n = 0, y_max = 0, y_min = 0;
  const int y_ov = (int)(rh * sh), x_ov = (int)(rw * sw);
  while (y_max < H) {
    int x_min = 0, x_max = 0;
    y_max = y_min + sh;
    while (x_max < W) {
      x_max = x_min + sw;
      int s[4] = {x_min, y_min, x_max, y_max};
      if (y_max > H || x_max > W) {
        int xmax = W < x_max ? W : x_max, ymax = H < y_max ? H : y_max;
        s[0] = xmax - sw > 0 ? xmax - sw : 0;
        s[1] = ymax - sh > 0 ? ymax - sh : 0;
        s[2] = xmax;
        s[3] = ymax;
      }
      if (n < cap) memcpy(b + 4 * n, s, sizeof s);
      n++;
      x_min = x_max - x_ov;
    }
    y_min = y_max - y_ov;
  }
  return n;
}

static void test_tile_boxes(void **state) {
  (void)state;
  rv_tile_opts o = rv_tile_default_opts();
  int b[4 * 64];
  /* 1000 x 700, 512 tiles, overlap int(0.2 * 512) = 102: columns at 0 and 410, the third
   * clamped to the right edge (488..1000); rows at 0 and, clamped, 188..700 */
  const int want[6][4] = {{0, 0, 512, 512},   {410, 0, 922, 512},   {488, 0, 1000, 512},
                          {0, 188, 512, 700}, {410, 188, 922, 700}, {488, 188, 1000, 700}};
  assert_int_equal(rv_tile_boxes(b, 64, 700, 1000, &o), 6);
  assert_memory_equal(b, want, sizeof want);
  /* an image smaller than the tile: one tile of the image */
  assert_int_equal(rv_tile_boxes(b, 64, 100, 80, &o), 1);
  assert_int_equal(b[0], 0), assert_int_equal(b[1], 0), assert_int_equal(b[2], 80), assert_int_equal(b[3], 100);
  /* counting only (cap 0), and invalid options */
  assert_int_equal(rv_tile_boxes(NULL, 0, 700, 1000, &o), 6);
  o.overlap_w = 1.0;
  assert_int_equal(rv_tile_boxes(b, 64, 700, 1000, &o), -1);
  assert_int_equal(rv_tile_opts_check(&o, ctx), RV_ERR_ARG);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "overlap"));
  o = rv_tile_default_opts();
  o.tile_h = 0;
  assert_int_equal(rv_tile_opts_check(&o, ctx), RV_ERR_ARG);
  /* a sweep against the transcription: sizes, tiles and overlaps of all kinds */
  uint64_t seed = 42;
  int ref[4 * 4096], got[4 * 4096];
  for (int t = 0; t < 300; t++) {
    const int H = 1 + (int)((test_rand(&seed) + 1) * 700), W = 1 + (int)((test_rand(&seed) + 1) * 900);
    o = rv_tile_default_opts();
    o.tile_h = 1 + (int)((test_rand(&seed) + 1) * 300);
    o.tile_w = 1 + (int)((test_rand(&seed) + 1) * 300);
    o.overlap_h = (test_rand(&seed) + 1) * 0.45;
    o.overlap_w = t % 3 ? o.overlap_h : 0;
    const int n = sahi_slices(ref, 4096, H, W, o.tile_h, o.tile_w, o.overlap_h, o.overlap_w);
    if (n > 4096) continue;
    assert_int_equal(rv_tile_boxes(got, 4096, H, W, &o), n);
    assert_memory_equal(got, ref, sizeof(int) * 4 * (size_t)n);
  }
}

/* ---- merge rules on hand-made boxes --------------------------------------------------- */

static int merge_thr(float *ob, float *os, int *ol, int *slot, const float *b, const float *s, const int *l, int n,
                     int nmm, float thr) {
  rv_arena *a = rv_arena_create(0);
  int k = rv_merge_tile_dets(ob, os, ol, slot, b, s, l, n, nmm, thr, a);
  rv_arena_free(a);
  return k;
}

static int merge(float *ob, float *os, int *ol, int *slot, const float *b, const float *s, const int *l, int n,
                 int nmm) {
  return merge_thr(ob, os, ol, slot, b, s, l, n, nmm, 0.5f);
}

static void test_merge_rules(void **state) {
  (void)state;
  float ob[4 * 8], os[8];
  int ol[8], slot[8];
  /* an object at x 450..600 cut by the right border of a tile ending at 512: that tile sees
   * its left part (score 0.9), the next tile (from 410) all of it (0.7). NMS (IoU 0.41)
   * keeps both; NMM (IoS 1) makes one detection, the union with the higher score. The same
   * boxes of another class are merged apart (class-wise). */
  const float cut[4 * 4] = {450, 100, 512, 160, 450, 100, 600, 160, 450, 100, 512, 160, 450, 100, 600, 160};
  const float cs[4] = {0.9f, 0.7f, 0.6f, 0.8f};
  const int cl[4] = {0, 0, 3, 3};
  assert_int_equal(merge(ob, os, ol, slot, cut, cs, cl, 2, 0), 2);
  assert_int_equal(merge(ob, os, ol, slot, cut, cs, cl, 4, 1), 2);
  const float one[4] = {450, 100, 600, 160};
  assert_memory_equal(ob, one, sizeof one); /* by score: class 0 (0.9), then class 3 (0.8) */
  assert_memory_equal(ob + 4, one, sizeof one);
  assert_true(os[0] == 0.9f && os[1] == 0.8f);
  assert_int_equal(ol[0], 0);
  assert_int_equal(ol[1], 3);
  assert_int_equal(slot[0], 0), assert_int_equal(slot[1], 0), assert_int_equal(slot[2], 1), assert_int_equal(slot[3], 1);
  /* NMS suppresses at IoU >= 0.5 (SAHI's rule): [0,0,10,5] in [0,0,10,10] has IoU 0.5 */
  const float half[8] = {0, 0, 10, 10, 0, 0, 10, 5};
  const float hs[2] = {0.9f, 0.8f};
  const int hl[2] = {1, 1};
  assert_int_equal(merge(ob, os, ol, slot, half, hs, hl, 2, 0), 1);
  assert_int_equal(slot[1], -1);
  /* NMM re-checks each match against the merged box, strictly (> 0.5): K [0,0,10,10] 0.9
   * matches M1 [0,0,10,30] (IoS 1) and M2 [4,0,24,10] (IoS 60/100 = 0.6); merged with M1
   * first (higher score) the box is [0,0,10,30], whose IoS with M2 is 60/200 = 0.3: M2 is
   * dropped. Without M1, M2 joins K. */
  const float grow[12] = {0, 0, 10, 10, 0, 0, 10, 30, 4, 0, 24, 10};
  const float gs[3] = {0.9f, 0.8f, 0.7f};
  const int gl[3] = {2, 2, 2};
  assert_int_equal(merge(ob, os, ol, slot, grow, gs, gl, 3, 1), 1);
  const float g1[4] = {0, 0, 10, 30};
  assert_memory_equal(ob, g1, sizeof g1);
  assert_int_equal(slot[0], 0), assert_int_equal(slot[1], 0), assert_int_equal(slot[2], -1);
  const float km2[8] = {0, 0, 10, 10, 4, 0, 24, 10};
  const float ks[2] = {0.9f, 0.7f};
  assert_int_equal(merge(ob, os, ol, slot, km2, ks, gl, 2, 1), 1);
  const float g2[4] = {0, 0, 24, 10};
  assert_memory_equal(ob, g2, sizeof g2);
  /* a chain is not transitive: the kept box's own overlap decides who is matched. A [0..10],
   * B [6..16] (IoS 0.4 with A) stays apart even though C [3..13] matches both */
  const float chain[12] = {0, 0, 10, 10, 6, 0, 16, 10, 3, 0, 13, 10};
  const float chs[3] = {0.9f, 0.8f, 0.7f};
  assert_int_equal(merge(ob, os, ol, slot, chain, chs, gl, 3, 1), 2);
  assert_int_equal(slot[2], 0);
  const float c1[4] = {0, 0, 13, 10};
  assert_memory_equal(ob, c1, sizeof c1);
  /* equal scores: SAHI keeps the box with the smaller x1 (then y1, x2, y2) first, not the
   * first index. A [4..14] and B [0..10] (IoS 0.6), both 0.9, C [8..18] 0.5 (IoS 0.6 with
   * A, 0.2 with B): B is kept, takes A, and C stays apart (kept first, A would take B and
   * C: one box 0..18) */
  const float tie[12] = {4, 0, 14, 10, 0, 0, 10, 10, 8, 0, 18, 10};
  const float ts[3] = {0.9f, 0.9f, 0.5f};
  assert_int_equal(merge(ob, os, ol, slot, tie, ts, gl, 3, 1), 2);
  const float t1[8] = {0, 0, 14, 10, 8, 0, 18, 10};
  assert_memory_equal(ob, t1, sizeof t1);
  assert_int_equal(slot[0], 0), assert_int_equal(slot[1], 0), assert_int_equal(slot[2], 1);
  /* zero-area boxes match nothing; ties in score and box keep the lower index first */
  const float flat[8] = {5, 5, 5, 9, 5, 5, 5, 9};
  const float fs[2] = {0.5f, 0.5f};
  assert_int_equal(merge(ob, os, ol, slot, flat, fs, hl, 2, 1), 2);
  assert_int_equal(slot[0], 0), assert_int_equal(slot[1], 1);
}

/* SAHI's postprocess transcribed for a reference: per class, the best box left in the pool
 * (score descending, ties: lower index) is kept and takes out of the pool every box whose
 * IoU (NMS) / IoS (NMM) with it is >= thr; NMM then merges those into it in pool order when
 * the IoS with the merged box is > thr. Results sorted by score (ties: kept index). */
static double ref_overlap(const float *a, const float *b, int ios) {
  double iw = fmin(a[2], b[2]) - fmax(a[0], b[0]), ih = fmin(a[3], b[3]) - fmax(a[1], b[1]);
  double inter = (iw > 0 ? iw : 0) * (ih > 0 ? ih : 0);
  double aa = ((double)a[2] - a[0]) * ((double)a[3] - a[1]), ab = ((double)b[2] - b[0]) * ((double)b[3] - b[1]);
  double den = ios ? fmin(aa, ab) : aa + ab - inter;
  return den > 0 ? inter / den : 0;
}

/* SAHI's order of a class's detections (sahi/postprocess/_numpy_backend.py,
 * _score_tiebreak_order): score descending, ties by x1, y1, x2, y2 ascending, then index */
static int sahi_before(const float *b, const float *s, int u, int v) {
  if (s[u] != s[v]) return s[u] > s[v];
  for (int c = 0; c < 4; c++)
    if (b[4 * u + c] != b[4 * v + c]) return b[4 * u + c] < b[4 * v + c];
  return u < v;
}

static int ref_merge(float *ob, float *os, int *ol, const float *b, const float *s, const int *l, int n, int nmm,
                     float thr) {
  int *pool = malloc(sizeof *pool * (size_t)n), *key = malloc(sizeof *key * (size_t)n), k = 0;
  for (int c = 0; c < 8; c++) {
    int m = 0;
    for (int i = 0; i < n; i++)
      if (l[i] == c) pool[m++] = i;
    for (int i = 1; i < m; i++) /* insertion sort (stable): np.lexsort((y2, x2, y1, x1, -scores)) */
      for (int j = i; j > 0 && sahi_before(b, s, pool[j], pool[j - 1]); j--) {
        int t = pool[j];
        pool[j] = pool[j - 1], pool[j - 1] = t;
      }
    while (m > 0) {
      const int S = pool[0];
      float box[4] = {b[4 * S], b[4 * S + 1], b[4 * S + 2], b[4 * S + 3]}, sc = s[S];
      int rest = 0;
      for (int j = 1; j < m; j++) {
        const int u = pool[j];
        if (ref_overlap(b + 4 * S, b + 4 * u, nmm) >= thr) {
          if (nmm && ref_overlap(box, b + 4 * u, 1) > thr) {
            box[0] = fminf(box[0], b[4 * u]), box[1] = fminf(box[1], b[4 * u + 1]);
            box[2] = fmaxf(box[2], b[4 * u + 2]), box[3] = fmaxf(box[3], b[4 * u + 3]);
            sc = fmaxf(sc, s[u]);
          }
        } else {
          pool[rest++] = u;
        }
      }
      m = rest;
      memcpy(ob + 4 * k, box, sizeof box);
      os[k] = sc, ol[k] = c, key[k] = S;
      k++;
    }
  }
  for (int i = 1; i < k; i++) /* by score, ties by the kept index */
    for (int j = i; j > 0 && (os[j] > os[j - 1] || (os[j] == os[j - 1] && key[j] < key[j - 1])); j--) {
      float tb[4], ts = os[j];
      int tl = ol[j], tk = key[j];
      memcpy(tb, ob + 4 * j, sizeof tb);
      memcpy(ob + 4 * j, ob + 4 * (j - 1), sizeof tb), os[j] = os[j - 1], ol[j] = ol[j - 1], key[j] = key[j - 1];
      memcpy(ob + 4 * (j - 1), tb, sizeof tb), os[j - 1] = ts, ol[j - 1] = tl, key[j - 1] = tk;
    }
  free(pool);
  free(key);
  return k;
}

/* Random boxes of every size (tiles' detections, big whole-image ones, duplicates, equal
 * scores, zero areas): the merge equals the transcription. */
static void test_merge_random(void **state) {
  (void)state;
  uint64_t seed = 99;
  enum { N = 400 };
  float *b = malloc(sizeof *b * 4 * N), s[N], ob[4 * N], os[N], rb[4 * N], rs[N];
  int l[N], ol[N], rl[N], slot[N];
  long merged = 0, total = 0;
  for (int t = 0; t < 60; t++) {
    const int n = 1 + (int)((test_rand(&seed) + 1) * 0.5 * N) % N, nmm = t & 1;
    const float thr = t % 3 == 0 ? 0.5f : 0.2f + 0.3f * (test_rand(&seed) + 1);
    for (int i = 0; i < n; i++) {
      const float big = test_rand(&seed) > 0.9f ? 400 : 60;
      float x = 250 + 250 * test_rand(&seed), y = 250 + 250 * test_rand(&seed);
      float w = big * (test_rand(&seed) + 1) * 0.5f, h = big * (test_rand(&seed) + 1) * 0.5f;
      if (i % 17 == 5) w = 0; /* no area */
      if (i % 13 == 7 && i > 0) { x = b[4 * (i - 1)], y = b[4 * (i - 1) + 1], w = b[4 * (i - 1) + 2] - x, h = b[4 * (i - 1) + 3] - y; }
      b[4 * i] = x, b[4 * i + 1] = y, b[4 * i + 2] = x + w, b[4 * i + 3] = y + h;
      s[i] = i % 11 == 3 ? 0.5f : 0.05f + 0.95f * (test_rand(&seed) + 1) * 0.5f;
      l[i] = (int)((test_rand(&seed) + 1) * 1.5f) % 3;
    }
    const int k = merge_thr(ob, os, ol, slot, b, s, l, n, nmm, thr), rk = ref_merge(rb, rs, rl, b, s, l, n, nmm, thr);
    assert_int_equal(k, rk);
    assert_memory_equal(ob, rb, sizeof(float) * 4 * (size_t)k);
    assert_memory_equal(os, rs, sizeof(float) * (size_t)k);
    assert_memory_equal(ol, rl, sizeof(int) * (size_t)k);
    merged += k, total += n;
  }
  printf("60 random sets: %ld detections merged into %ld, as the transcription\n", total, merged);
  free(b);
}

/* ---- masks --------------------------------------------------------------------------- */

static void test_rle_window(void **state) {
  (void)state;
  uint64_t seed = 7;
  const int H = 37, W = 23;
  uint8_t *full = malloc(H * W), *win = malloc(H * W);
  for (int t = 0; t < 200; t++) {
    const int mh = 1 + (int)((test_rand(&seed) + 1) * 0.5 * H) % H, mw = 1 + (int)((test_rand(&seed) + 1) * 0.5 * W) % W;
    const int y0 = (int)((test_rand(&seed) + 1) * 0.5 * (H - mh + 1)) % (H - mh + 1);
    const int x0 = (int)((test_rand(&seed) + 1) * 0.5 * (W - mw + 1)) % (W - mw + 1);
    const int kind = t % 4; /* random, all ones, all zeros, sparse */
    memset(full, 0, H * W);
    for (int i = 0; i < mh * mw; i++) {
      const float r = test_rand(&seed);
      win[i] = kind == 1 ? 1 : kind == 2 ? 0 : kind == 3 ? r > 0.8f : r > 0;
      full[(y0 + i / mw) * W + x0 + i % mw] = win[i];
    }
    rv_rle a = {0}, b = {0};
    assert_int_equal(rv_rle_encode_rowmajor(&a, full, H, W, ctx), RV_OK);
    assert_int_equal(rv_rle_encode_window(&b, win, mh, mw, y0, x0, H, W, ctx), RV_OK);
    assert_int_equal(a.m, b.m);
    assert_memory_equal(a.cnts, b.cnts, a.m * sizeof *a.cnts);
    rv_rle_free(&a);
    rv_rle_free(&b);
  }
  rv_rle c = {0};
  assert_int_equal(rv_rle_encode_window(&c, win, 5, 5, 35, 0, H, W, ctx), RV_ERR_ARG);
  free(full);
  free(win);
}

/* ---- tiled detection on mosaics -------------------------------------------------------- */

typedef struct {
  rv_coco *gt;
  rv_coco_obj *dt;
  size_t n, cap;
} evalset;

static void add_dets(evalset *e, int64_t image_id, const float *boxes, const float *scores, const int *labels, int n) {
  if (e->n + n > e->cap) {
    e->cap = (e->n + n) * 2 + 16;
    e->dt = realloc(e->dt, e->cap * sizeof *e->dt);
    assert_non_null(e->dt);
  }
  for (int i = 0; i < n; i++) {
    rv_coco_obj *d = &e->dt[e->n++];
    memset(d, 0, sizeof *d);
    d->image_id = image_id;
    d->category_id = labels[i] + 1;
    d->score = scores[i];
    d->bbox[0] = boxes[4 * i];
    d->bbox[1] = boxes[4 * i + 1];
    d->bbox[2] = (double)boxes[4 * i + 2] - boxes[4 * i];
    d->bbox[3] = (double)boxes[4 * i + 3] - boxes[4 * i + 1];
    d->has_bbox = 1;
  }
}

/* box AP (stats[0]); frees the detections */
static double box_ap(evalset *e) {
  rv_coco_results r = {e->dt, e->n, 0, NULL};
  assert_int_equal(rv_coco_results_prepare(&r, e->gt, RV_IOU_BBOX, RV_COCO_AREA_BOX, "test", ctx), RV_OK);
  rv_cocoeval_params p = rv_cocoeval_default_params(RV_IOU_BBOX);
  rv_cocoeval *ev = NULL;
  assert_int_equal(rv_coco_evaluate(&ev, e->gt, &r, &p, ctx), RV_OK);
  double st[12];
  rv_cocoeval_summarize(ev, st);
  rv_cocoeval_free(ev);
  rv_coco_results_free(&r);
  e->dt = NULL;
  e->n = e->cap = 0;
  return st[0];
}

typedef struct {
  uint64_t seed;
  int ph, pw;    /* piece size (ravlt synth --size) */
  int rows, cols;
  int th, tw;    /* tiles */
  double overlap;
  int nmm, full;
  float score_thr;
  int cli; /* also through the CLI: eval coco --weights --tile, detect --tile + eval coco --results */
} mosaic_case;

/* Pieces written by `ravlt synth --task det`, laid out rows x cols into one image with its
 * ground truth (the pieces' boxes shifted); the pieces' AP, the tiled and the whole-image
 * AP on the mosaic. */
static void run_mosaic(const rv_model *m, const mosaic_case *mc, double ap[3]) {
  char dir[64], p[512];
  snprintf(dir, sizeof dir, "/tmp/ravlt_test_tiles_XXXXXX");
  assert_non_null(mkdtemp(dir));
  const int np = mc->rows * mc->cols;
  assert_int_equal(test_run("'%s' -q synth --task det --out-dir '%s/s' --count %d --seed %llu --size %dx%d", RV_BIN, dir,
                            np, (unsigned long long)mc->seed, mc->ph, mc->pw),
                   0);
  snprintf(p, sizeof p, "%s/s/annotations/instances.json", dir);
  rv_coco *pieces = NULL;
  assert_int_equal(rv_coco_load(&pieces, p, 0, 0, ctx), RV_OK);
  assert_int_equal(pieces->n_images, (size_t)np);
  /* the mosaic and its ground truth */
  rv_image mosaic = {0};
  const int H = mc->rows * mc->ph, W = mc->cols * mc->pw;
  assert_int_equal(rv_image_alloc(&mosaic, H, W, 3, ctx), RV_OK);
  cJSON *root = cJSON_CreateObject(), *imgs = cJSON_AddArrayToObject(root, "images");
  cJSON *anns = cJSON_AddArrayToObject(root, "annotations"), *cats = cJSON_AddArrayToObject(root, "categories");
  cJSON *im = cJSON_CreateObject();
  cJSON_AddNumberToObject(im, "id", 1);
  cJSON_AddNumberToObject(im, "width", W);
  cJSON_AddNumberToObject(im, "height", H);
  cJSON_AddItemToArray(imgs, im);
  for (int c = 1; c <= RV_SYNTH_SHAPES; c++) {
    cJSON *cat = cJSON_CreateObject();
    cJSON_AddNumberToObject(cat, "id", c);
    cJSON_AddItemToArray(cats, cat);
  }
  rv_arena *arena = rv_arena_create(0);
  evalset e = {pieces, NULL, 0, 0};
  for (size_t i = 0; i < pieces->n_images; i++) {
    const rv_coco_image *pi = &pieces->images[i];
    const int r = (int)i / mc->cols, c = (int)i % mc->cols, x0 = c * mc->pw, y0 = r * mc->ph;
    rv_image img = {0};
    snprintf(p, sizeof p, "%s/s/images/%s", dir, pi->file_name);
    assert_int_equal(rv_image_read(p, &img, ctx), RV_OK);
    for (int y = 0; y < img.h; y++) memcpy(rv_image_px(&mosaic, y0 + y, x0), rv_image_px(&img, y, 0), (size_t)img.w * 3);
    rv_detections d;
    assert_int_equal(rv_model_detect(m, &d, NULL, &img, arena, ctx), RV_OK);
    add_dets(&e, pi->id, d.bboxes, d.scores, d.labels, d.n);
    rv_arena_reset(arena);
    rv_image_free(&img);
    for (size_t k = 0; k < pieces->n_anns; k++) {
      const rv_coco_obj *g = &pieces->anns[k];
      if (g->image_id != pi->id) continue;
      cJSON *a = cJSON_CreateObject();
      const double bb[4] = {g->bbox[0] + x0, g->bbox[1] + y0, g->bbox[2], g->bbox[3]};
      cJSON_AddNumberToObject(a, "id", (double)cJSON_GetArraySize(anns) + 1);
      cJSON_AddNumberToObject(a, "image_id", 1);
      cJSON_AddNumberToObject(a, "category_id", (double)g->category_id);
      cJSON_AddItemToObject(a, "bbox", cJSON_CreateDoubleArray(bb, 4));
      cJSON_AddNumberToObject(a, "area", g->area);
      cJSON_AddNumberToObject(a, "iscrowd", 0);
      cJSON_AddItemToArray(anns, a);
    }
  }
  ap[0] = box_ap(&e);
  cJSON_AddStringToObject(im, "file_name", "mosaic.png");
  char *txt = cJSON_PrintUnformatted(root);
  rv_coco *gt = NULL;
  assert_int_equal(rv_coco_load_mem(&gt, txt, strlen(txt), "mosaic", 0, 0, ctx), RV_OK);
  if (mc->cli) {
    FILE *f;
    snprintf(p, sizeof p, "%s/gt.json", dir);
    assert_non_null(f = fopen(p, "w"));
    fputs(txt, f);
    fclose(f);
    snprintf(p, sizeof p, "%s/m/mosaic.png", dir);
    char md[600];
    snprintf(md, sizeof md, "%s/m", dir);
    assert_int_equal(mkdir(md, 0755), 0);
    assert_int_equal(rv_image_write(p, &mosaic, ctx), RV_OK); /* lossless: the same pixels */
  }
  free(txt);
  cJSON_Delete(root);
  e.gt = gt;
  rv_tile_opts o = rv_tile_default_opts();
  o.tile_h = mc->th, o.tile_w = mc->tw;
  o.overlap_h = o.overlap_w = mc->overlap;
  o.merge = mc->nmm ? RV_TILE_MERGE_NMM : RV_TILE_MERGE_NMS;
  o.full = mc->full;
  o.score_thr = mc->score_thr;
  rv_tile_detections td;
  assert_int_equal(rv_model_detect_tiled(m, &td, &mosaic, &o, arena, ctx), RV_OK);
  assert_int_equal(td.runs, rv_tile_boxes(NULL, 0, H, W, &o) + (mc->full ? 1 : 0));
  assert_null(td.masks); /* RetinaNet */
  for (int i = 0; i < td.n; i++) {
    assert_true(td.bboxes[4 * i] >= 0 && td.bboxes[4 * i + 2] <= W && td.bboxes[4 * i + 1] >= 0 && td.bboxes[4 * i + 3] <= H);
    if (i) assert_true(td.scores[i] <= td.scores[i - 1]);
  }
  add_dets(&e, 1, td.bboxes, td.scores, td.labels, td.n);
  ap[1] = box_ap(&e);
  rv_arena_reset(arena);
  rv_detections d;
  assert_int_equal(rv_model_detect(m, &d, NULL, &mosaic, arena, ctx), RV_OK);
  add_dets(&e, 1, d.bboxes, d.scores, d.labels, d.n);
  ap[2] = box_ap(&e);
  printf("mosaic %dx%d of %dx%d pieces (seed %llu), tiles %dx%d overlap %.2f %s%s, score >= %.2f: box AP pieces %.3f, "
         "tiled %.3f (%d runs, %d detections), whole image %.3f\n",
         mc->rows, mc->cols, mc->ph, mc->pw, (unsigned long long)mc->seed, mc->th, mc->tw, mc->overlap,
         mc->nmm ? "NMM" : "NMS", mc->full ? " + full" : "", mc->score_thr, ap[0], ap[1], td.runs, td.n, ap[2]);
  if (mc->cli) { /* the same numbers through the CLI (the demo detector built into it) */
    const char *merge = mc->nmm ? "nmm" : "nms";
    assert_int_equal(test_run("'%s' -q eval coco --ann '%s/gt.json' --images '%s/m' --weights demo-det --tile %dx%d "
                              "--tile-overlap %g --tile-merge %s%s --json '%s/ap1.json' > /dev/null",
                              RV_BIN, dir, dir, mc->th, mc->tw, mc->overlap, merge, mc->full ? " --tile-full" : "", dir),
                     0);
    assert_int_equal(test_run("'%s' -q detect --no-draw --tile %dx%d --tile-overlap %g --tile-merge %s%s --json '%s/d.json' "
                              "'%s/m/mosaic.png' && '%s' -q eval coco --ann '%s/gt.json' --results '%s/d.json' "
                              "--json '%s/ap2.json' > /dev/null",
                              RV_BIN, mc->th, mc->tw, mc->overlap, merge, mc->full ? " --tile-full" : "", dir, dir, RV_BIN,
                              dir, dir, dir),
                     0);
    for (int k = 1; k <= 2; k++) {
      snprintf(p, sizeof p, "%s/ap%d.json", dir, k);
      char *t = test_read_text(p);
      assert_non_null(t);
      cJSON *j = cJSON_Parse(t);
      const double cli_ap = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "stats"), 0)->valuedouble;
      printf("  CLI (%s): box AP %.6f\n", k == 1 ? "eval coco --weights --tile" : "detect --tile, eval coco --results", cli_ap);
      assert_true(fabs(cli_ap - ap[1]) < 1e-12);
      cJSON_Delete(j);
      free(t);
    }
  }
  rv_arena_free(arena);
  rv_coco_free(gt);
  rv_coco_free(pieces);
  rv_image_free(&mosaic);
  snprintf(p, sizeof p, "rm -rf '%s'", dir);
  assert_int_equal(system(p), 0);
}

/* Mosaics far larger than the demo detector's 320 x 240 scale: a whole-image run shrinks the
 * shapes below what it sees; tiles at or near that scale (docs/large-images.md), not aligned
 * with the pieces (shapes are cut by tile borders everywhere), recover them. The default merge (NMS): box AP within 0.08
 * of the pieces' own and >= 0.3 above the whole-image run's; NMM (which also unites
 * same-class shapes occluding each other, so it trails NMS on these sets) with SAHI's
 * confidence threshold of 0.3: >= 0.3 above the whole-image run's. */
static void test_detect_tiled_mosaics(void **state) {
  (void)state;
  rv_model *m = NULL;
  assert_int_equal(rv_model_load(&m, DEMO_DET, NULL, ctx), RV_OK);
  const mosaic_case cases[] = {
      {6021, 240, 320, 3, 4, 240, 320, 0.2, 0, 0, 0, 1},
      {6022, 240, 320, 4, 3, 240, 320, 0.3, 0, 1, 0, 0},
      {6023, 240, 320, 3, 3, 256, 300, 0.25, 1, 0, 0.3f, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    double ap[3];
    run_mosaic(m, &cases[c], ap);
    if (!cases[c].nmm) assert_true(ap[1] >= ap[0] - 0.08);
    assert_true(ap[1] >= ap[2] + 0.3);
  }
  rv_model_free(m);
}

/* The merged result is not cut to the model's 100 per image; max_dets keeps its best. */
static void test_detect_tiled_caps(void **state) {
  (void)state;
  rv_model *m = NULL;
  assert_int_equal(rv_model_load(&m, DEMO_DET, NULL, ctx), RV_OK);
  rv_synth_opts so;
  rv_synth_defaults(&so);
  so.task = RV_SYNTH_DET;
  so.seed = 31;
  so.width = 960, so.height = 720, so.min_shapes = so.max_shapes = 16;
  rv_synth_sample s;
  assert_int_equal(rv_synth_generate(&s, &so, 0, ctx), RV_OK);
  rv_arena *arena = rv_arena_create(0);
  rv_tile_opts o = rv_tile_default_opts();
  o.tile_h = 160, o.tile_w = 200;
  rv_tile_detections all, top;
  assert_int_equal(rv_model_detect_tiled(m, &all, &s.image, &o, arena, ctx), RV_OK);
  printf("%d tiles, %d detections merged\n", all.runs, all.n);
  assert_true(all.n > 100);
  o.max_dets = 30;
  assert_int_equal(rv_model_detect_tiled(m, &top, &s.image, &o, arena, ctx), RV_OK);
  assert_int_equal(top.n, 30);
  assert_memory_equal(top.bboxes, all.bboxes, 30 * 4 * sizeof(float));
  assert_memory_equal(top.scores, all.scores, 30 * sizeof(float));
  rv_arena_free(arena);
  rv_synth_sample_free(&s);
  rv_model_free(m);
}

static int count_progress(void *user, int done, int total) {
  int *c = user;
  c[0]++;
  c[1] = total;
  return c[2] && done >= c[2];
}

static void test_progress_and_errors(void **state) {
  (void)state;
  rv_model *m = NULL, *seg = NULL;
  assert_int_equal(rv_model_load(&m, DEMO_DET, NULL, ctx), RV_OK);
  assert_int_equal(rv_model_load(&seg, DEMO_SEG, NULL, ctx), RV_OK);
  rv_image img = {0};
  assert_int_equal(rv_image_alloc(&img, 300, 500, 3, ctx), RV_OK);
  rv_arena *arena = rv_arena_create(0);
  rv_tile_opts o = rv_tile_default_opts();
  o.tile_h = o.tile_w = 200;
  int c[3] = {0, 0, 0};
  o.progress = count_progress, o.progress_user = c;
  rv_tile_detections d;
  assert_int_equal(rv_model_detect_tiled(m, &d, &img, &o, arena, ctx), RV_OK);
  assert_int_equal(c[0], rv_tile_boxes(NULL, 0, 300, 500, &o));
  assert_int_equal(c[1], c[0]);
  c[0] = 0, c[2] = 2;
  assert_int_equal(rv_model_detect_tiled(m, &d, &img, &o, arena, ctx), RV_ERR_INTERRUPTED);
  assert_int_equal(c[0], 2);
  assert_int_equal(d.n, 0);
  int32_t *lab = malloc(sizeof *lab * 300 * 500);
  c[0] = 0, c[2] = 1;
  assert_int_equal(rv_model_segment_tiled(seg, lab, &img, &o, arena, ctx), RV_ERR_INTERRUPTED);
  assert_int_equal(c[0], 1);
  o.progress = NULL;
  /* the wrong task, and the pixel limit of the context */
  assert_int_equal(rv_model_segment_tiled(m, lab, &img, &o, arena, ctx), RV_ERR_MODEL);
  assert_int_equal(rv_model_detect_tiled(seg, &d, &img, &o, arena, ctx), RV_ERR_MODEL);
  rv_ctx_set_max_pixels(ctx, 300 * 500 - 1);
  assert_int_equal(rv_model_detect_tiled(m, &d, &img, &o, arena, ctx), RV_ERR_UNSUPPORTED);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "over the limit"));
  assert_int_equal(rv_model_segment_tiled(seg, lab, &img, &o, arena, ctx), RV_ERR_UNSUPPORTED);
  rv_ctx_set_max_pixels(ctx, 0);
  free(lab);
  rv_arena_free(arena);
  rv_image_free(&img);
  rv_model_free(m);
  rv_model_free(seg);
}

/* Instance masks (the Mask R-CNN e2e fixture, random weights): one tile over the image gives
 * the plain run's detections and masks as RLEs; on smaller tiles every mask is a whole-image
 * RLE inside its (merged) box. */
static void test_detect_tiled_masks(void **state) {
  (void)state;
  rv_model *m = NULL;
  assert_int_equal(rv_model_load(&m, fixture_path("e2e/mask_rcnn/checkpoint.pth"), NULL, ctx), RV_OK);
  rv_image img = {0};
  assert_int_equal(rv_image_read(fixture_path("e2e/mask_rcnn/image.jpg"), &img, ctx), RV_OK);
  rv_arena *arena = rv_arena_create(0), *a2 = rv_arena_create(0);
  rv_detections d;
  assert_int_equal(rv_model_detect(m, &d, NULL, &img, a2, ctx), RV_OK);
  rv_tile_opts o = rv_tile_default_opts();
  o.tile_h = img.h, o.tile_w = img.w;
  rv_tile_detections t;
  assert_int_equal(rv_model_detect_tiled(m, &t, &img, &o, arena, ctx), RV_OK);
  assert_int_equal(t.runs, 1);
  assert_non_null(t.masks);
  printf("mask_rcnn fixture %dx%d: %d detections, tiled over one tile %d\n", img.w, img.h, d.n, t.n);
  assert_true(t.n <= d.n && t.n > 0);
  int *order = malloc(sizeof *order * (size_t)d.n);
  assert_int_equal(rv_argsort_desc(order, d.scores, d.n, a2), 0);
  for (int i = 0, j = 0; i < t.n; i++, j++) {
    /* the plain run in score order; NMS here drops only pairs at exactly IoU 0.5 */
    while (j < d.n && memcmp(t.bboxes + 4 * i, d.bboxes + 4 * order[j], 4 * sizeof(float))) j++;
    assert_true(j < d.n);
    assert_true(t.scores[i] == d.scores[order[j]]);
    rv_rle r = {0};
    assert_int_equal(rv_rle_encode_rowmajor(&r, d.masks + (size_t)order[j] * img.h * img.w, img.h, img.w, ctx), RV_OK);
    assert_int_equal(r.m, t.masks[i].m);
    assert_memory_equal(r.cnts, t.masks[i].cnts, r.m * sizeof *r.cnts);
    rv_rle_free(&r);
  }
  free(order);
  for (int nmm = 0; nmm < 2; nmm++) {
    o.tile_h = img.h / 2 + 7, o.tile_w = img.w / 2 + 3;
    o.merge = nmm ? RV_TILE_MERGE_NMM : RV_TILE_MERGE_NMS;
    assert_int_equal(rv_model_detect_tiled(m, &t, &img, &o, arena, ctx), RV_OK);
    assert_true(t.runs >= 4);
    for (int i = 0; i < t.n; i++) {
      assert_int_equal(t.masks[i].h, img.h);
      assert_int_equal(t.masks[i].w, img.w);
      uint64_t sum = 0;
      for (size_t k = 0; k < t.masks[i].m; k++) sum += t.masks[i].cnts[k];
      assert_int_equal(sum, (uint64_t)img.h * img.w);
      double bb[4];
      rv_rle_to_bbox(&t.masks[i], bb);
      if (rv_rle_area(&t.masks[i]) == 0) continue;
      assert_true(bb[0] >= floor(t.bboxes[4 * i]) - 1 && bb[1] >= floor(t.bboxes[4 * i + 1]) - 1);
      assert_true(bb[0] + bb[2] <= ceil(t.bboxes[4 * i + 2]) + 1 && bb[1] + bb[3] <= ceil(t.bboxes[4 * i + 3]) + 1);
    }
    printf("  tiles %dx%d %s: %d runs, %d detections\n", o.tile_h, o.tile_w, nmm ? "NMM" : "NMS", t.runs, t.n);
    rv_arena_reset(arena);
  }
  /* the drawings (masks from the RLEs): one tile over the image draws the plain run's picture
   * byte for byte; nothing is drawn at --score-thr 1, so the equality is not an empty one */
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/ravlt_test_tiles_XXXXXX");
  assert_non_null(mkdtemp(dir));
  const char *const runs[3] = {"--score-thr 0", "--score-thr 0 --tile %dx%d", "--score-thr 1"};
  for (int k = 0; k < 3; k++) {
    char extra[64];
    snprintf(extra, sizeof extra, runs[k], img.h, img.w);
    assert_int_equal(test_run("'%s' -q detect --weights '%s' %s --out-dir '%s/%d' '%s'", RV_BIN,
                              fixture_path("e2e/mask_rcnn/checkpoint.pth"), extra, dir, k, fixture_path("e2e/mask_rcnn/image.jpg")),
                     0);
  }
  assert_int_equal(test_run("cmp -s '%s/0/image_det.jpg' '%s/1/image_det.jpg'", dir, dir), 0);
  assert_int_equal(test_run("cmp -s '%s/0/image_det.jpg' '%s/2/image_det.jpg'", dir, dir), 1);
  assert_int_equal(test_run("rm -rf '%s'", dir), 0);
  rv_arena_free(arena);
  rv_arena_free(a2);
  rv_image_free(&img);
  rv_model_free(m);
}

/* The Python package's flat entry point (<ravlt/pyapi.h>): one tile over the image gives
 * rv_py_detect's detections and masks (mmdet's class order, whole-image masks decoded from
 * the RLEs); smaller tiles give whole-image masks of the same size. */
static void test_pyapi_detect_tiled(void **state) {
  (void)state;
  rv_model *m = NULL;
  assert_int_equal(rv_py_model_load(&m, fixture_path("e2e/mask_rcnn/checkpoint.pth"), NULL, ctx), RV_OK);
  rv_image img = {0};
  assert_int_equal(rv_image_read(fixture_path("e2e/mask_rcnn/image.jpg"), &img, ctx), RV_OK);
  rv_py_dets *a = NULL, *b = NULL;
  assert_int_equal(rv_py_detect(m, &a, img.data, img.h, img.w, ctx), RV_OK);
  assert_int_equal(rv_py_detect_tiled(m, &b, img.data, img.h, img.w, img.h, img.w, 0.2, 0.2, 0, 0.5f, 0, 0, 0, ctx), RV_OK);
  int da[3], db[3];
  rv_py_dets_dims(a, da);
  rv_py_dets_dims(b, db);
  assert_int_equal(da[0], db[0]);
  assert_int_equal(da[1], img.h), assert_int_equal(db[1], img.h);
  assert_int_equal(da[2], img.w), assert_int_equal(db[2], img.w);
  const size_t n = (size_t)da[0], plane = (size_t)img.h * img.w;
  float *ba = malloc(sizeof(float) * 5 * n + 1), *bb = malloc(sizeof(float) * 5 * n + 1);
  int32_t *la = malloc(sizeof(int32_t) * n + 1), *lb = malloc(sizeof(int32_t) * n + 1);
  uint8_t *ma = malloc(plane * n + 1), *mb = malloc(plane * n + 1);
  rv_py_dets_copy(a, ba, la, ma);
  rv_py_dets_copy(b, bb, lb, mb);
  assert_memory_equal(ba, bb, sizeof(float) * 5 * n);
  assert_memory_equal(la, lb, sizeof(int32_t) * n);
  assert_memory_equal(ma, mb, plane * n);
  rv_py_dets_free(b);
  assert_int_equal(rv_py_detect_tiled(m, &b, img.data, img.h, img.w, 200, 300, 0.25, 0.25, 1, 0.5f, 1, 7, 0, ctx), RV_OK);
  rv_py_dets_dims(b, db);
  assert_true(db[0] > 0 && db[0] <= 7);
  assert_int_equal(db[1], img.h), assert_int_equal(db[2], img.w);
  rv_py_dets_free(b);
  assert_int_equal(rv_py_detect_tiled(m, &b, img.data, img.h, img.w, 0, 300, 0.25, 0.25, 1, 0.5f, 1, 7, 0, ctx), RV_ERR_ARG);
  assert_null(b);
  free(ba), free(bb), free(la), free(lb), free(ma), free(mb);
  rv_py_dets_free(a);
  rv_image_free(&img);
  rv_py_model_free(m);
}

/* `ravlt video --tile`: a frame's JSON line is the library's tiled detection of that frame.
 * A 480x640 frame of four synthetic detection images (MJPG .avi), read back with the video
 * reader, detected in 240x320 tiles; the CLI's line (score >= 0.3) has the same boxes,
 * scores and labels. */
static void test_video_tiled(void **state) {
  (void)state;
  char dir[64], p[256];
  snprintf(dir, sizeof dir, "/tmp/ravlt_test_tiles_XXXXXX");
  assert_non_null(mkdtemp(dir));
  rv_image frame = {0};
  assert_int_equal(rv_image_alloc(&frame, 480, 640, 3, ctx), RV_OK);
  rv_synth_opts so;
  rv_synth_defaults(&so);
  so.task = RV_SYNTH_DET, so.seed = 4321;
  for (int k = 0; k < 4; k++) {
    rv_synth_sample s;
    assert_int_equal(rv_synth_generate(&s, &so, k, ctx), RV_OK);
    for (int y = 0; y < 240; y++)
      memcpy(rv_image_px(&frame, 240 * (k / 2) + y, 320 * (k % 2)), rv_image_px(&s.image, y, 0), 320 * 3);
    rv_synth_sample_free(&s);
  }
  snprintf(p, sizeof p, "%s/v.avi", dir);
  rv_video_writer *vw = NULL;
  assert_int_equal(rv_video_writer_open(&vw, p, 5, 640, 480, NULL, ctx), RV_OK);
  assert_int_equal(rv_video_write(vw, &frame, ctx), RV_OK);
  assert_int_equal(rv_video_write(vw, &frame, ctx), RV_OK);
  assert_int_equal(rv_video_writer_close(vw, ctx), RV_OK);
  rv_image_free(&frame);
  rv_video_reader *vr = NULL;
  int got = 0;
  assert_int_equal(rv_video_open(&vr, p, ctx), RV_OK);
  assert_int_equal(rv_video_read(vr, &frame, &got, ctx), RV_OK);
  assert_true(got);
  rv_video_close(vr);
  rv_model *m = NULL;
  assert_int_equal(rv_model_load(&m, DEMO_DET, NULL, ctx), RV_OK);
  rv_arena *arena = rv_arena_create(0);
  rv_tile_opts o = rv_tile_default_opts();
  o.tile_h = 240, o.tile_w = 320;
  rv_tile_detections t;
  assert_int_equal(rv_model_detect_tiled(m, &t, &frame, &o, arena, ctx), RV_OK);
  assert_int_equal(t.runs, 9); /* rows at 0, 192, 240; columns at 0, 256, 320 */
  assert_int_equal(test_run("'%s' -q video --weights demo-det --tile 240x320 --max-frames 1 --score-thr 0.3 "
                            "--json '%s/v.jsonl' '%s'",
                            RV_BIN, dir, p),
                   0);
  snprintf(p, sizeof p, "%s/v.jsonl", dir);
  char *text = test_read_text(p);
  assert_non_null(text);
  cJSON *j = cJSON_Parse(text);
  assert_non_null(j);
  const cJSON *dets = cJSON_GetObjectItem(j, "detections");
  assert_true(cJSON_IsArray(dets));
  int want = 0;
  for (int i = 0; i < t.n; i++) want += t.scores[i] >= 0.3f;
  printf("video --tile 240x320, frame 0: %d detections >= 0.3 (library %d)\n", cJSON_GetArraySize(dets), want);
  assert_true(want >= 4);
  assert_int_equal(cJSON_GetArraySize(dets), want);
  int i = 0;
  const cJSON *d;
  cJSON_ArrayForEach(d, dets) {
    while (t.scores[i] < 0.3f) i++;
    const cJSON *bb = cJSON_GetObjectItem(d, "bbox");
    const double b[4] = {t.bboxes[4 * i], t.bboxes[4 * i + 1], (double)t.bboxes[4 * i + 2] - t.bboxes[4 * i],
                         (double)t.bboxes[4 * i + 3] - t.bboxes[4 * i + 1]};
    for (int c = 0; c < 4; c++) assert_true(fabs(cJSON_GetArrayItem(bb, c)->valuedouble - b[c]) < 0.05);
    assert_true(fabs(cJSON_GetObjectItem(d, "score")->valuedouble - t.scores[i]) < 1e-3);
    assert_int_equal(cJSON_GetObjectItem(d, "label")->valueint, t.labels[i]);
    i++;
  }
  cJSON_Delete(j);
  free(text);
  rv_arena_free(arena);
  rv_model_free(m);
  rv_image_free(&frame);
  snprintf(p, sizeof p, "rm -rf '%s'", dir);
  assert_int_equal(system(p), 0);
}

/* ---- tiled segmentation ------------------------------------------------------------------ */

static rv_image synth_seg_image(uint64_t seed, int h, int w) {
  rv_synth_opts so;
  rv_synth_defaults(&so);
  so.seed = seed;
  so.width = w, so.height = h;
  rv_synth_sample s;
  assert_int_equal(rv_synth_generate(&s, &so, 0, ctx), RV_OK);
  rv_image img = s.image;
  s.image.data = NULL;
  rv_synth_sample_free(&s);
  return img;
}

/* One tile covering a 240 x 320 image (the demo model's own scale: its Resize is the
 * identity) is the whole-image result. */
static void test_segment_tile_covers_image(void **state) {
  (void)state;
  rv_model *m = NULL;
  assert_int_equal(rv_model_load(&m, DEMO_SEG, NULL, ctx), RV_OK);
  rv_image img = synth_seg_image(77, 240, 320);
  int32_t *a = malloc(sizeof *a * 240 * 320), *b = malloc(sizeof *b * 240 * 320);
  rv_arena *arena = rv_arena_create(0);
  assert_int_equal(rv_model_segment(m, a, &img, NULL, arena, ctx), RV_OK);
  rv_tile_opts o = rv_tile_default_opts();
  for (int k = 0; k < 2; k++) {
    o.tile_h = k ? 240 : 512, o.tile_w = k ? 320 : 999;
    memset(b, 0xff, sizeof *b * 240 * 320);
    assert_int_equal(rv_model_segment_tiled(m, b, &img, &o, arena, ctx), RV_OK);
    assert_memory_equal(a, b, sizeof *a * 240 * 320);
  }
  int classes[8] = {0};
  for (int i = 0; i < 240 * 320; i++) classes[a[i] & 7]++;
  assert_true(classes[0] > 0 && classes[0] < 240 * 320); /* background and shapes */
  free(a);
  free(b);
  rv_arena_free(arena);
  rv_image_free(&img);
  rv_model_free(m);
}

/* mmseg 0.x slide_inference, naively, at the image's own resolution: the whole image
 * normalised (no resize), crops on mmseg's grid, each crop's logits (the model's own
 * encode_decode) added into [C, H, W] sums with a count per pixel, sums / counts, argmax. */
static void naive_slide(int32_t *labels, const rv_model *m, const rv_image *img, int ch, int cw, int sh, int sw,
                        rv_arena *a) {
  const int H = img->h, W = img->w, C = rv_model_num_classes(m);
  rv_preprocess_params p = rv_model_preprocess(m);
  p.scale_w = p.scale_h = 0; /* no Resize */
  p.size_divisor = 0;
  rv_tensor x;
  rv_img_meta meta;
  assert_int_equal(rv_preprocess(&x, &meta, img, &p, a, ctx), RV_OK);
  assert_int_equal(x.h, H);
  assert_int_equal(x.w, W);
  float *sum = calloc((size_t)C * H * W, sizeof *sum), *cnt = calloc((size_t)H * W, sizeof *cnt);
  const int h_crop = ch < H ? ch : H, w_crop = cw < W ? cw : W;
  const int h_grids = (H - h_crop + sh - 1 > 0 ? H - h_crop + sh - 1 : 0) / sh + 1;
  const int w_grids = (W - w_crop + sw - 1 > 0 ? W - w_crop + sw - 1 : 0) / sw + 1;
  for (int hi = 0; hi < h_grids; hi++)
    for (int wi = 0; wi < w_grids; wi++) {
      int y1 = hi * sh, x1 = wi * sw;
      const int y2 = y1 + h_crop < H ? y1 + h_crop : H, x2 = x1 + w_crop < W ? x1 + w_crop : W;
      y1 = y2 - h_crop > 0 ? y2 - h_crop : 0;
      x1 = x2 - w_crop > 0 ? x2 - w_crop : 0;
      rv_arena_mark mk = rv_arena_get_mark(a);
      rv_tensor crop = rv_tensor_new(a, 1, 3, y2 - y1, x2 - x1), cl;
      for (int c = 0; c < 3; c++)
        for (int y = y1; y < y2; y++)
          for (int xx = x1; xx < x2; xx++) crop.data[((size_t)c * crop.h + y - y1) * crop.w + xx - x1] = x.data[((size_t)c * H + y) * W + xx];
      const rv_segmentor sg = {rv_model_seg_decoder(m), rv_seg_ravlt_backbone, (void *)rv_model_backbone(m),
                               rv_seg_default_test_cfg()};
      assert_int_equal(rv_seg_encode_decode(&sg, &cl, crop, a, ctx), RV_OK);
      for (int c = 0; c < C; c++)
        for (int y = y1; y < y2; y++)
          for (int xx = x1; xx < x2; xx++) sum[((size_t)c * H + y) * W + xx] += cl.data[((size_t)c * crop.h + y - y1) * crop.w + xx - x1];
      for (int y = y1; y < y2; y++)
        for (int xx = x1; xx < x2; xx++) cnt[(size_t)y * W + xx] += 1;
      rv_arena_release(a, mk);
    }
  for (size_t i = 0; i < (size_t)H * W; i++) {
    assert_true(cnt[i] > 0);
    int best = 0;
    for (int c = 0; c < C; c++) sum[(size_t)c * H * W + i] /= cnt[i];
    for (int c = 1; c < C; c++)
      if (sum[(size_t)c * H * W + i] > sum[(size_t)best * H * W + i]) best = c;
    labels[i] = best;
  }
  free(sum);
  free(cnt);
}

static void test_segment_tiled_slide_rule(void **state) {
  (void)state;
  rv_model *m = NULL;
  assert_int_equal(rv_model_load(&m, DEMO_SEG, NULL, ctx), RV_OK);
  const struct { int H, W, th, tw; double ov; } cases[] = {
      {300, 500, 128, 160, 0.25}, {173, 411, 96, 200, 0.5}, {260, 130, 300, 64, 0.0}, {200, 300, 90, 90, 0.2}};
  rv_arena *arena = rv_arena_create(0);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const int H = cases[k].H, W = cases[k].W;
    rv_image img = synth_seg_image(90 + k, H, W);
    int32_t *ref = malloc(sizeof *ref * H * W), *got = malloc(sizeof *got * H * W);
    rv_tile_opts o = rv_tile_default_opts();
    o.tile_h = cases[k].th, o.tile_w = cases[k].tw;
    o.overlap_h = o.overlap_w = cases[k].ov;
    const int sh = o.tile_h - (int)(o.overlap_h * o.tile_h), sw = o.tile_w - (int)(o.overlap_w * o.tile_w);
    naive_slide(ref, m, &img, o.tile_h, o.tile_w, sh, sw, arena);
    assert_int_equal(rv_model_segment_tiled(m, got, &img, &o, arena, ctx), RV_OK);
    long diff = 0;
    for (int i = 0; i < H * W; i++) diff += ref[i] != got[i];
    printf("%dx%d, tiles %dx%d overlap %.2f (stride %dx%d): %ld of %d labels differ from the naive slide\n", W, H,
           o.tile_w, o.tile_h, o.overlap_h, sw, sh, diff, H * W);
    assert_int_equal(diff, 0);
    free(ref);
    free(got);
    rv_image_free(&img);
  }
  rv_arena_free(arena);
  rv_model_free(m);
}

/* The peak RSS (KiB) a tiled segmentation of an H x W image adds to a process that holds the
 * model, the image and the labels; -1 on failure. Run in a fresh process (this program with
 * --added-rss: a forked child of a process whose OpenMP threads ran would hang in libgomp). */
static long added_rss_here(int H, int W, int th, int tw) {
  rv_model *m = NULL;
  long out = -1;
  if (rv_model_load(&m, DEMO_SEG, NULL, ctx) != RV_OK) return -1;
  rv_image img = {0};
  int32_t *lab = malloc(sizeof *lab * (size_t)H * W);
  rv_arena *arena = rv_arena_create(0);
  if (lab && arena && rv_image_alloc(&img, H, W, 3, ctx) == RV_OK) {
    for (size_t i = 0; i < (size_t)H * W * 3; i++) img.data[i] = (unsigned char)(i * 2654435761u >> 24);
    memset(lab, 1, sizeof *lab * (size_t)H * W);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const long before = ru.ru_maxrss;
    rv_tile_opts o = rv_tile_default_opts();
    o.tile_h = th, o.tile_w = tw;
    if (rv_model_segment_tiled(m, lab, &img, &o, arena, ctx) == RV_OK) {
      getrusage(RUSAGE_SELF, &ru);
      out = ru.ru_maxrss - before;
    }
  }
  rv_arena_free(arena);
  free(lab);
  rv_image_free(&img);
  rv_model_free(m);
  return out;
}

static long added_rss(int H, int W, int th, int tw) {
  char self[1024], cmd[1200];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  assert_true(n > 0);
  self[n] = 0;
  /* a sanitizer build's allocator keeps freed blocks in quarantine (its RSS grows with the
   * tiles run): without it, the measure is the library's */
  snprintf(cmd, sizeof cmd,
           "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:thread_local_quarantine_size_kb=0\" "
           "'%s' --added-rss %d %d %d %d", self, H, W, th, tw);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  long v = -1;
  assert_int_equal(fscanf(f, "%ld", &v), 1);
  assert_int_equal(pclose(f), 0);
  return v;
}

/* The memory a tiled segmentation adds is one band of tile rows and one tile's activations:
 * 32 times the height adds nothing (the logits of the 6 classes over the image would add 4
 * bytes each a pixel: 73 MB here). */
static void test_segment_tiled_memory(void **state) {
  (void)state;
  const int W = 192, th = 256, tw = 192;
  const long small = added_rss(2 * th, W, th, tw), tall = added_rss(64 * th, W, th, tw);
  const double full_mb = 6.0 * 4 * (64 - 2) * th * W / 1e6;
  printf("added peak RSS: %.1f MB at %dx%d, %.1f MB at %dx%d (all the logits would add %.0f MB more)\n",
         small / 1024.0, W, 2 * th, tall / 1024.0, W, 64 * th, full_mb);
  assert_true(small >= 0 && tall >= 0);
  assert_true(tall - small < 8 * 1024); /* KiB */
}

/* The CLI's tiling options: usage errors, and segment --tile over one tile = segment. */
static void test_cli_options(void **state) {
  (void)state;
  char dir[64], p[256];
  snprintf(dir, sizeof dir, "/tmp/ravlt_test_tiles_XXXXXX");
  assert_non_null(mkdtemp(dir));
  rv_image img = synth_seg_image(5, 240, 320);
  snprintf(p, sizeof p, "%s/a.png", dir);
  assert_int_equal(rv_image_write(p, &img, ctx), RV_OK);
  rv_image_free(&img);
  static const char *const usage[] = {
      "detect --tile-full", "detect --tile-merge nmm", "detect --tile-overlap 0.3", "detect --tile 0x10",
      "detect --tile 64 --tile-overlap 1", "detect --tile 64 --tile-merge-thr 0", "segment --tile 64 --aug-test",
      "segment --tile 64 --mode slide", "video --tile 64 --size 240x320", "detect --tile 64 --max-dets 0"};
  for (size_t i = 0; i < sizeof usage / sizeof usage[0]; i++)
    assert_int_equal(test_run("'%s' -q %s '%s/a.png' 2> /dev/null", RV_BIN, usage[i], dir), 2);
  assert_int_equal(test_run("'%s' -q eval coco --ann x.json --results y.json --tile 64 2> /dev/null", RV_BIN), 2);
  /* nmm over low-confidence detections: a warning (SAHI switches to nms there), none with
   * --tile-score-thr >= 0.1 or --quiet */
  assert_int_equal(test_run("'%s' detect --weights demo-det --tile 64 --tile-merge nmm '%s/none.png' 2> '%s/w0'", RV_BIN, dir, dir), 1);
  assert_int_equal(test_run("grep -q 'warning: --tile-merge nmm.*--tile-score-thr 0.3' '%s/w0'", dir), 0);
  assert_int_equal(test_run("'%s' detect --weights demo-det --tile 64 --tile-merge nmm --tile-score-thr 0.3 '%s/none.png' 2> '%s/w1'",
                            RV_BIN, dir, dir), 1);
  assert_int_equal(test_run("grep -q warning '%s/w1'", dir), 1);
  assert_int_equal(test_run("'%s' -q segment --format png --out-dir '%s/w' '%s/a.png'", RV_BIN, dir, dir), 0);
  assert_int_equal(test_run("'%s' -q segment --format png --tile 300x400 --out-dir '%s/t' '%s/a.png'", RV_BIN, dir, dir), 0);
  assert_int_equal(test_run("cmp '%s/w/a.png' '%s/t/a.png'", dir, dir), 0);
  assert_int_equal(test_run("'%s' -q segment --format png --tile 100x150 --out-dir '%s/s' '%s/a.png'", RV_BIN, dir, dir), 0);
  /* --max-pixels binds tiled runs too (checked from the header): 76800 pixels over 50000
   * fail with a message naming the file; raised explicitly, the same run works */
  for (int k = 0; k < 2; k++) {
    const char *cmd = k ? "segment --tile 120x160 --format png --out-dir" : "detect --weights demo-det --tile 120x160 --no-draw --json";
    assert_int_equal(test_run("'%s' --max-pixels 50000 %s '%s/m%d' '%s/a.png' 2> '%s/err'", RV_BIN, cmd, dir, k, dir, dir), 1);
    assert_int_equal(test_run("grep -q 'a.png.*over the limit of 50000' '%s/err'", dir), 0);
    assert_int_equal(test_run("'%s' -q --max-pixels 76800 %s '%s/o%d' '%s/a.png'", RV_BIN, cmd, dir, k, dir), 0);
  }
  snprintf(p, sizeof p, "rm -rf '%s'", dir);
  assert_int_equal(system(p), 0);
}

static int setup(void **state) {
  (void)state;
  ctx = rv_ctx_create();
  return ctx ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  rv_ctx_free(ctx);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 6 && !strcmp(argv[1], "--added-rss")) { /* test_segment_tiled_memory's child */
    ctx = rv_ctx_create();
    const long v = added_rss_here(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    rv_ctx_free(ctx);
    printf("%ld\n", v);
    return v < 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tile_boxes),
      cmocka_unit_test(test_merge_rules),
      cmocka_unit_test(test_merge_random),
      cmocka_unit_test(test_rle_window),
      cmocka_unit_test(test_progress_and_errors),
      cmocka_unit_test(test_detect_tiled_caps),
      cmocka_unit_test(test_detect_tiled_masks),
      cmocka_unit_test(test_pyapi_detect_tiled),
      cmocka_unit_test(test_video_tiled),
      cmocka_unit_test(test_segment_tile_covers_image),
      cmocka_unit_test(test_segment_tiled_slide_rule),
      cmocka_unit_test(test_segment_tiled_memory),
      cmocka_unit_test(test_cli_options),
      cmocka_unit_test(test_detect_tiled_mosaics),
  };
  if (getenv("RV_TEST_FILTER")) cmocka_set_test_filter(getenv("RV_TEST_FILTER")); /* e.g. "*mosaic*" */
  return cmocka_run_group_tests(tests, setup, teardown);
}
