/* Detection ops: anchors (mmdet base anchors, grid order), delta2bbox (hand values, clamp,
 * clip), NMS (strict IoU threshold, score order, ties by index, per-class batching),
 * multiclass NMS (strict score threshold, candidate order, max_num), RoIAlign (fast vs
 * naive on sweeps, exact values on linear ramps, mmcv border rules), level mapping, and the
 * mask paste (against torch.nn.functional.grid_sample output). */
#include "test_util.h"
#include "heads/det.h"

static void test_anchors(void **state) {
  (void)state;
  const float ratios[3] = {0.5f, 1.0f, 2.0f}, s8[1] = {8.0f};
  float base[12];
  assert_int_equal(rv_anchor_base_f32(base, 4, ratios, 3, s8, 1), 3);
  /* mmdet AnchorGenerator(strides=[4], ratios=[0.5,1,2], scales=[8]).base_anchors[0] */
  const float want[12] = {-22.627417f, -11.313708f, 22.627417f, 11.313708f, -16, -16, 16, 16,
                          -11.313708f, -22.627417f, 11.313708f, 22.627417f};
  for (int i = 0; i < 12; i++) assert_float_equal(base[i], want[i], 1e-5);
  /* RetinaNet: octave_base_scale 4, 3 scales per octave, stride 8: ratio-major order */
  float sc[3], rb[36];
  rv_anchor_octave_scales(sc, 4.0f, 3);
  assert_float_equal(sc[0], 4.0f, 0);
  assert_float_equal(sc[1], 5.0396842f, 1e-6);
  assert_float_equal(sc[2], 6.3496042f, 1e-6);
  assert_int_equal(rv_anchor_base_f32(rb, 8, ratios, 3, sc, 3), 9);
  assert_float_equal(rb[0], -22.627417f, 1e-5); /* ratio 0.5, scale 4 */
  assert_float_equal(rb[1], -11.313708f, 1e-5);
  assert_float_equal(rb[4 * 4 + 2], 20.158737f, 1e-4); /* ratio 1, scale 5.04: 8*5.04/2 */
  assert_float_equal(rb[8 * 4 + 3], 35.918785f, 1e-4); /* ratio 2, scale 6.35: 8*sqrt2*6.35/2 */
  /* grid: index ((y*W + x)*A + a), shift (x*stride, y*stride) */
  float g[2 * 3 * 3 * 4];
  rv_anchor_grid_f32(g, base, 3, 2, 3, 4);
  const float *a = g + ((1 * 3 + 2) * 3 + 1) * 4; /* y=1, x=2, a=1 */
  assert_float_equal(a[0], -16 + 8, 0);
  assert_float_equal(a[1], -16 + 4, 0);
  assert_float_equal(a[2], 16 + 8, 0);
  assert_float_equal(a[3], 16 + 4, 0);
}

static void test_delta2bbox(void **state) {
  (void)state;
  rv_bbox_coder c = rv_bbox_coder_default();
  const float roi[4] = {0, 0, 10, 20};
  const float d[8] = {0.1f, -0.2f, 0.69314718f, 0, 0, 0, 10, -10};
  float out[8];
  /* px=5 py=10 pw=10 ph=20: gx=6 gy=6 gw=20 gh=20 -> [-4,-4,16,16], no clipping */
  rv_delta2bbox_f32(out, roi, 4, d, 8, 1, 2, &c, 0, 0);
  assert_float_equal(out[0], -4, 1e-5);
  assert_float_equal(out[1], -4, 1e-5);
  assert_float_equal(out[2], 16, 1e-5);
  assert_float_equal(out[3], 16, 1e-5);
  /* second class: dw clamped to log(1000/16): gw = 10*62.5, dh to -log(62.5): gh = 20/62.5 */
  assert_float_equal(out[4], 5 - 312.5f, 1e-3);
  assert_float_equal(out[6], 5 + 312.5f, 1e-3);
  assert_float_equal(out[5], 10 - 0.16f, 1e-5);
  assert_float_equal(out[7], 10 + 0.16f, 1e-5);
  /* clipping: x to [0, img_w], y to [0, img_h] */
  rv_delta2bbox_f32(out, roi, 4, d, 8, 1, 2, &c, 15, 12);
  assert_float_equal(out[0], 0, 0);
  assert_float_equal(out[1], 0, 0);
  assert_float_equal(out[2], 12, 0);
  assert_float_equal(out[3], 15, 0);
  assert_float_equal(out[4], 0, 0);
  assert_float_equal(out[6], 12, 0);
  /* stds scale the deltas: dx 1 with std 0.1 moves by pw*0.1 */
  rv_bbox_coder c2 = c;
  c2.stds[0] = 0.1;
  const float d1[4] = {1, 0, 0, 0};
  rv_delta2bbox_f32(out, roi, 4, d1, 4, 1, 1, &c2, 0, 0);
  assert_float_equal(out[0], 1, 1e-6);
  assert_float_equal(out[2], 11, 1e-6);
}

static void test_nms(void **state) {
  (void)state;
  rv_arena *a = rv_arena_create(0);
  /* 0 and 1: IoU exactly 0.5 (kept, strict >); 2 overlaps 0 by 90/110 (suppressed);
   * 3 is far; 4 ties 3's score with a lower index -> comes first */
  const float boxes[] = {0, 0, 10, 10, 0, 0, 10, 5, 1, 0, 11, 10, 50, 50, 60, 60,
                         30, 30, 31, 31};
  const float scores[] = {0.9f, 0.8f, 0.85f, 0.3f, 0.3f};
  int keep[5];
  int k = rv_nms(keep, boxes, scores, 5, 0.5f, a);
  assert_int_equal(k, 4);
  assert_int_equal(keep[0], 0);
  assert_int_equal(keep[1], 1);
  assert_int_equal(keep[2], 3);
  assert_int_equal(keep[3], 4);
  /* threshold just below 0.5 suppresses box 1 too */
  k = rv_nms(keep, boxes, scores, 5, 0.49f, a);
  assert_int_equal(k, 3);
  /* per-class: box 2 in another class survives, order stays by score */
  const int idx[] = {0, 0, 1, 0, 0};
  k = rv_batched_nms(keep, boxes, scores, idx, 5, 0.5f, a);
  assert_int_equal(k, 5);
  const int want[] = {0, 2, 1, 3, 4};
  for (int i = 0; i < 5; i++) assert_int_equal(keep[i], want[i]);
  /* degenerate (zero-area) boxes: IoU 0/0 is not > thr, both kept */
  const float z[] = {5, 5, 5, 5, 5, 5, 5, 5};
  const float zs[] = {0.5f, 0.4f};
  assert_int_equal(rv_nms(keep, z, zs, 2, 0.5f, a), 2);
  assert_int_equal(rv_arena_used(a), 0); /* scratch released */
  rv_arena_free(a);
}

static void test_nms_vs_bruteforce(void **state) {
  (void)state;
  /* random boxes: greedy NMS == reference O(n^2) written independently */
  rv_arena *a = rv_arena_create(0);
  uint64_t seed = 7;
  enum { N = 300 };
  float b[N * 4], s[N];
  int idx[N];
  for (int i = 0; i < N; i++) {
    float x = (test_rand(&seed) + 1) * 50, y = (test_rand(&seed) + 1) * 50;
    float w = (test_rand(&seed) + 1.2f) * 10, h = (test_rand(&seed) + 1.2f) * 10;
    b[i * 4] = x;
    b[i * 4 + 1] = y;
    b[i * 4 + 2] = x + w;
    b[i * 4 + 3] = y + h;
    s[i] = (float)((int)((test_rand(&seed) + 1) * 20)) / 40; /* many ties */
    idx[i] = (int)((test_rand(&seed) + 1) * 2);
  }
  int keep[N], ref[N];
  int k = rv_batched_nms(keep, b, s, idx, N, 0.3f, a);
  /* reference: stable order by (score desc, index asc), suppress by any earlier kept box of
   * the same class with IoU > thr */
  int order[N];
  assert_int_equal(rv_argsort_desc(order, s, N, a), 0);
  for (int i = 1; i < N; i++) {
    assert_true(s[order[i - 1]] >= s[order[i]]);
    if (s[order[i - 1]] == s[order[i]]) assert_true(order[i - 1] < order[i]);
  }
  int nr = 0;
  for (int t = 0; t < N; t++) {
    int i = order[t], ok = 1;
    for (int q = 0; q < nr && ok; q++) {
      int j = ref[q];
      if (idx[j] != idx[i]) continue;
      double iw = fmin(b[i * 4 + 2], b[j * 4 + 2]) - fmax(b[i * 4], b[j * 4]);
      double ih = fmin(b[i * 4 + 3], b[j * 4 + 3]) - fmax(b[i * 4 + 1], b[j * 4 + 1]);
      if (iw < 0) iw = 0;
      if (ih < 0) ih = 0;
      double ai = ((double)b[i * 4 + 2] - b[i * 4]) * ((double)b[i * 4 + 3] - b[i * 4 + 1]);
      double aj = ((double)b[j * 4 + 2] - b[j * 4]) * ((double)b[j * 4 + 3] - b[j * 4 + 1]);
      if (iw * ih / (ai + aj - iw * ih) > 0.3) ok = 0;
    }
    if (ok) ref[nr++] = i;
  }
  assert_int_equal(k, nr);
  for (int i = 0; i < k; i++) assert_int_equal(keep[i], ref[i]);
  rv_arena_free(a);
}

static void test_multiclass_nms(void **state) {
  (void)state;
  rv_arena *a = rv_arena_create(0);
  /* 3 rois x 2 classes (+ background column), class-specific boxes */
  const float scores[] = {0.05f, 0.6f, 0.35f,   /* roi 0: class 0 at thr (dropped) */
                          0.7f, 0.2f, 0.1f,     /* roi 1 */
                          0.65f, 0.3f, 0.05f};  /* roi 2: overlaps roi 1 in class 0 */
  const float boxes[] = {0, 0, 10, 10, 0, 0, 10, 10,  1, 1, 11, 11, 40, 40, 50, 50,
                         1, 1, 11, 11.5f, 60, 60, 70, 70};
  float ob[6 * 4], os[6];
  int ol[6], orow[6];
  assert_int_equal(rv_multiclass_nms_candidates(scores, 3, 3, 2, 0.05f), 5);
  int n = rv_multiclass_nms(ob, os, ol, orow, boxes, 1, scores, 3, 3, 2, 0.05f, 0.5f, 0, a);
  /* candidates: (0,1) .6, (1,0) .7, (1,1) .2, (2,0) .65 [suppressed by (1,0)], (2,1) .3 */
  assert_int_equal(n, 4);
  assert_float_equal(os[0], 0.7f, 0);
  assert_int_equal(ol[0], 0);
  assert_int_equal(orow[0], 1);
  assert_float_equal(os[1], 0.6f, 0);
  assert_int_equal(ol[1], 1);
  assert_int_equal(orow[1], 0);
  assert_float_equal(os[2], 0.3f, 0);
  assert_int_equal(orow[2], 2);
  assert_float_equal(ob[2 * 4], 60, 0);
  assert_float_equal(os[3], 0.2f, 0);
  /* max_num */
  n = rv_multiclass_nms(ob, os, ol, NULL, boxes, 1, scores, 3, 3, 2, 0.05f, 0.5f, 2, a);
  assert_int_equal(n, 2);
  /* nothing above threshold */
  assert_int_equal(rv_multiclass_nms(ob, os, ol, NULL, boxes, 1, scores, 3, 3, 2, 0.9f, 0.5f,
                                     0, a), 0);
  rv_arena_free(a);
}

static void test_roi_align_ramp(void **state) {
  (void)state;
  /* f(y, x) = x + 100 y is linear, so inside the map each bin average equals f at the bin
   * centre: x1*s - 0.5 + (p + 0.5) * roi_w / 7 (aligned) */
  enum { H = 40, W = 50 };
  static float f[H * W];
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) f[y * W + x] = (float)x + 100.0f * y;
  const float rois[5] = {0, 20.4f, 16.2f, 120.8f, 90.0f}; /* stride 4: 5.1..30.2, 4.05..22.5 */
  float out[49];
  rv_arena *A = rv_arena_create(0);
  /* one channel: [H, W, 1] is also the NCHW layout */
  assert_int_equal(rv_roi_align_f32(out, f, 1, H, W, rois, 1, NULL, 0.25f, 7, 7, 0, 1, A), RV_OK);
  for (int py = 0; py < 7; py++)
    for (int px = 0; px < 7; px++) {
      double cx = 20.4 * 0.25 - 0.5 + (px + 0.5) * (120.8 - 20.4) * 0.25 / 7;
      double cy = 16.2 * 0.25 - 0.5 + (py + 0.5) * (90.0 - 16.2) * 0.25 / 7;
      assert_float_equal(out[py * 7 + px], cx + 100 * cy, 2e-3);
    }
  /* a roi far outside the map: all samples beyond -1 -> zeros */
  const float far[5] = {0, -400, -400, -100, -100};
  assert_int_equal(rv_roi_align_f32(out, f, 1, H, W, far, 1, NULL, 0.25f, 7, 7, 0, 1, A), RV_OK);
  for (int i = 0; i < 49; i++) assert_float_equal(out[i], 0, 0);
  /* samples in (-1, 0) clamp to row/col 0; beyond the last row/col they repeat it */
  const float edge[5] = {0, -2, -2, 2, 2}; /* scale 1: start -2.5, 1 sample/bin at -2.5+k/7*4.. */
  float o1[1];
  assert_int_equal(rv_roi_align_f32(o1, f, 1, H, W, edge, 1, NULL, 1.0f, 1, 1, 1, 1, A), RV_OK);
  /* single sample at (-0.5, -0.5) -> clamped to (0, 0) -> f = 0 */
  assert_float_equal(o1[0], 0, 0);
  const float edge2[5] = {0, 48, 38, 51, 41}; /* sample at (39, 49) = last row/col */
  assert_int_equal(rv_roi_align_f32(o1, f, 1, H, W, edge2, 1, NULL, 1.0f, 1, 1, 1, 1, A), RV_OK);
  assert_float_equal(o1[0], 49 + 100 * 39, 0);
  const float edge3[5] = {0, 52, 42, 52.4f, 42.4f}; /* sample at (41.7, 51.7): > H -> 0 */
  assert_int_equal(rv_roi_align_f32(o1, f, 1, H, W, edge3, 1, NULL, 1.0f, 1, 1, 1, 1, A), RV_OK);
  assert_float_equal(o1[0], 0, 0);
  assert_int_equal(rv_arena_used(A), 0);
  rv_arena_free(A);
}

static void test_roi_align_vs_naive(void **state) {
  (void)state;
  uint64_t seed = 11;
  const int C = 19, H = 23, W = 31, N = 60; /* C: vector lanes and a remainder */
  float *f = malloc(sizeof(float) * C * H * W), *fh = malloc(sizeof(float) * C * H * W), rois[60 * 5];
  fill_rand(f, (size_t)C * H * W, 3);
  rv_nchw_to_hwc_f32(fh, f, C, H, W);
  for (int c = 0; c < C; c++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        assert_float_equal(fh[((size_t)y * W + x) * C + c], f[((size_t)c * H + y) * W + x], 0);
  rv_arena *A = rv_arena_create(0);
  for (int i = 0; i < N; i++) {
    float x1 = (test_rand(&seed) + 0.8f) * 70, y1 = (test_rand(&seed) + 0.8f) * 50;
    float w = (test_rand(&seed) + 1.0f) * (i % 3 == 0 ? 5 : 60);
    float h = (test_rand(&seed) + 1.0f) * (i % 4 == 0 ? 3 : 45);
    rois[i * 5] = 0;
    rois[i * 5 + 1] = x1;
    rois[i * 5 + 2] = y1;
    rois[i * 5 + 3] = x1 + w;
    rois[i * 5 + 4] = y1 + h;
  }
  /* a huge roi: > 64 samples per bin */
  const float huge[5] = {0, -100, -60, 2000, 1900};
  memcpy(rois + 5 * 5, huge, sizeof huge);
  float *o1 = malloc(sizeof(float) * N * C * 49), *o2 = malloc(sizeof(float) * N * C * 49);
  for (int aligned = 0; aligned < 2; aligned++)
    for (int sr = 0; sr < 3; sr++) {
      assert_int_equal(rv_roi_align_f32(o1, fh, C, H, W, rois, N, NULL, 0.25f, 7, 7, sr, aligned, A), RV_OK);
      rv_roi_align_naive_f32(o2, f, C, H, W, rois, N, 0.25f, 7, 7, sr, aligned);
      assert_true(max_abs_diff(o1, o2, (size_t)N * C * 49) < 1e-5);
    }
  /* selection mask: unselected rows untouched */
  unsigned char sel[60];
  for (int i = 0; i < N; i++) sel[i] = i & 1;
  for (size_t i = 0; i < (size_t)N * C * 49; i++) o1[i] = 42;
  assert_int_equal(rv_roi_align_f32(o1, fh, C, H, W, rois, N, sel, 0.25f, 7, 7, 0, 1, A), RV_OK);
  assert_float_equal(o1[0], 42, 0);
  assert_true(max_abs_diff(o1 + C * 49, o2 + C * 49, (size_t)C * 49) < 1e-5);
  assert_int_equal(rv_arena_used(A), 0);
  rv_arena_free(A);
  free(fh);
  free(f);
  free(o1);
  free(o2);
}

static void test_roi_levels(void **state) {
  (void)state;
  const float rois[] = {0, 0, 0, 56, 56,   0, 0, 0, 112, 112,  0, 0, 0, 111.9f, 112,
                        0, 0, 0, 224, 224, 0, 0, 0, 448, 448,  0, 0, 0, 1000, 1000,
                        0, 5, 5, 5, 5};
  int lvl[7];
  rv_roi_map_levels(lvl, rois, 7, 4, 56.0);
  const int want[7] = {0, 1, 0, 2, 3, 3, 0};
  for (int i = 0; i < 7; i++) assert_int_equal(lvl[i], want[i]);
}

static void test_paste_mask(void **state) {
  (void)state;
  /* expected from torch.nn.functional.grid_sample as mmdet's _do_paste_mask calls it */
  const float prob[16] = {0.1f, 0.6f, 0.7f,  0.2f, 0.4f, 0.9f, 0.8f,  0.3f,
                          0.2f, 0.55f, 0.65f, 0.1f, 0.0f, 0.3f, 0.45f, 0.05f};
  const float box[4] = {2.3f, 1.7f, 8.6f, 7.9f};
  unsigned char m[10 * 12];
  rv_paste_mask_u8(m, 10, 12, prob, 4, 4, box, 0.5f);
  const char *want[10] = {"000000000000", "000000000000", "000011100000", "000011100000",
                          "000011100000", "000011100000", "000000000000", "000000000000",
                          "000000000000", "000000000000"};
  for (int y = 0; y < 10; y++)
    for (int x = 0; x < 12; x++) assert_int_equal(m[y * 12 + x], want[y][x] - '0');
  /* threshold is >=: prob 0.4293 at (3, 3) passes 0.42 but not 0.43 */
  rv_paste_mask_u8(m, 10, 12, prob, 4, 4, box, 0.42f);
  assert_int_equal(m[3 * 12 + 3], 1);
  rv_paste_mask_u8(m, 10, 12, prob, 4, 4, box, 0.43f);
  assert_int_equal(m[3 * 12 + 3], 0);
  /* box outside the image: empty */
  const float out_box[4] = {20, 20, 30, 30};
  rv_paste_mask_u8(m, 10, 12, prob, 4, 4, out_box, 0.5f);
  for (int i = 0; i < 120; i++) assert_int_equal(m[i], 0);
}

/* rv_argsort_topk_desc gives rv_argsort_desc's first k: random scores with many ties and
 * NaNs, ascending / descending / constant inputs, k from 1 to past n */
static void test_argsort_topk(void **state) {
  (void)state;
  rv_arena *a = rv_arena_create(0);
  uint64_t seed = 77;
  static const int ns[] = {1, 2, 7, 100, 1000, 20011};
  for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++)
    for (int kind = 0; kind < 4; kind++) {
      const int n = ns[c];
      float *s = malloc(sizeof(float) * n);
      int *full = malloc(sizeof(int) * n), *top = malloc(sizeof(int) * n);
      for (int i = 0; i < n; i++) {
        const float r = test_rand(&seed);
        s[i] = kind == 0   ? (float)(int)(r * 10) / 10 /* ties */
               : kind == 1 ? (float)i                  /* ascending */
               : kind == 2 ? (float)-i                 /* descending */
                           : 0.5f;                     /* all equal */
        if (kind == 0 && i % 37 == 5) s[i] = NAN;
      }
      assert_int_equal(rv_argsort_desc(full, s, n, a), 0);
      const int ks[] = {1, 2, n / 2, n - 1, n, n + 5};
      for (int q = 0; q < 6; q++) {
        if (ks[q] < 1) continue;
        const int want = ks[q] < n ? ks[q] : n;
        assert_int_equal(rv_argsort_topk_desc(top, s, n, ks[q], a), want);
        assert_int_equal(rv_arena_used(a), 0);
        for (int i = 0; i < want; i++)
          if (top[i] != full[i]) fail_msg("n %d kind %d k %d: order[%d] %d, full sort %d", n, kind,
                                          ks[q], i, top[i], full[i]);
      }
      free(s), free(full), free(top);
    }
  rv_arena_free(a);
}

static rv_layer rand_layer(int cin, int cout, int k, uint64_t seed) {
  rv_layer l = {0};
  size_t n = (size_t)cout * cin * (k ? k * k : 1);
  l.w = rv_malloc(n * sizeof(float));
  l.b = rv_malloc((size_t)cout * sizeof(float));
  fill_rand(l.w, n, seed);
  for (size_t i = 0; i < n; i++) l.w[i] *= 0.2f;
  fill_rand(l.b, (size_t)cout, seed + 1);
  l.cin = cin;
  l.cout = cout;
  l.k = k;
  return l;
}

/* The batched RoI conv stack (one rv_conv2d_f32 per layer over all rois: Winograd F(4x4) on
 * these 64/80/48-channel 14x14 layers) equals per-roi naive convolutions + ReLU, across
 * channel changes (a middle layer wider than the last). */
static void test_conv_stack_rois(void **state) {
  (void)state;
  const int n = 50, s = 14, c0 = 64;
  rv_layer L[3] = {rand_layer(c0, 80, 3, 1), rand_layer(80, 48, 3, 2), rand_layer(48, 48, 3, 3)};
  for (int i = 0; i < 3; i++) L[i].algo = RV_CONV_AUTO_FAST; /* as the box and mask heads load them */
  float *x = malloc(sizeof(float) * n * c0 * s * s), *y = malloc(sizeof(float) * n * 80 * s * s);
  float *r0 = malloc(sizeof(float) * n * 80 * s * s), *r1 = malloc(sizeof(float) * n * 80 * s * s);
  fill_rand(x, (size_t)n * c0 * s * s, 9);
  rv_arena *a = rv_arena_create(0);
  assert_int_equal(rv_det_conv_stack_rois(y, L, 3, x, n, s, a), RV_OK);
  assert_int_equal(rv_arena_used(a), 0);
  const float *in = x;
  float *bufs[2] = {r0, r1};
  for (int i = 0; i < 3; i++) {
    rv_conv_params p = rv_conv_default_params(3, 1, 1);
    p.act = RV_ACT_RELU;
    rv_conv2d_naive_f32(bufs[i & 1], in, L[i].w, L[i].b, n, L[i].cin, s, s, L[i].cout, p);
    in = bufs[i & 1];
  }
  double e = max_abs_diff(y, in, (size_t)n * 48 * s * s), sc = max_abs(in, (size_t)n * 48 * s * s);
  assert_true(sc > 0.1);
  assert_true(e <= 1e-5 * sc);
  /* linear layer over rows == naive dot products */
  rv_layer fc = rand_layer(37, 11, 0, 5);
  float out[7 * 11], xin[7 * 37];
  fill_rand(xin, 7 * 37, 6);
  rv_layer_linear(out, &fc, xin, 7, RV_ACT_RELU);
  for (int r = 0; r < 7; r++)
    for (int o = 0; o < 11; o++) {
      double acc = fc.b[o];
      for (int i = 0; i < 37; i++) acc += (double)xin[r * 37 + i] * fc.w[o * 37 + i];
      assert_float_equal(out[r * 11 + o], acc > 0 ? acc : 0, 1e-5);
    }
  rv_layer_free(&fc);
  for (int i = 0; i < 3; i++) rv_layer_free(&L[i]);
  free(x);
  free(y);
  free(r0);
  free(r1);
  rv_arena_free(a);
}

/* One width through the stack (the box and mask heads: 256 channels): with AVX-512 the stack
 * runs channels-last (rv_conv2d_winograd_rois_f32), NCHW only at its ends. Stacks of 1-4
 * layers (the ping-pong between the scratch buffer and y) on 7x7 and 14x14 rois equal
 * per-roi naive convs + ReLU within 1e-5 of the scale, and equal the layer-by-layer NCHW
 * convs (rv_layer_conv) bit for bit where the channels-last path runs. */
static void test_conv_stack_rois_one_width(void **state) {
  (void)state;
  const int c = 40;
  rv_arena *a = rv_arena_create(0);
  for (int s = 7; s <= 14; s += 7)
    for (int nl = 1; nl <= 4; nl++) {
      const int n = s == 7 ? 61 : 13; /* n s s >= 2048: F(4x4) under AUTO_FAST */
      const size_t sz = (size_t)n * c * s * s;
      rv_layer L[4];
      for (int i = 0; i < nl; i++) {
        L[i] = rand_layer(c, c, 3, 20 + i);
        L[i].algo = RV_CONV_AUTO_FAST;
      }
      float *x = malloc(sizeof(float) * sz), *y = malloc(sizeof(float) * sz);
      float *r[2] = {malloc(sizeof(float) * sz), malloc(sizeof(float) * sz)};
      float *q[2] = {malloc(sizeof(float) * sz), malloc(sizeof(float) * sz)};
      fill_rand(x, sz, 30 + nl);
      assert_int_equal(rv_det_conv_stack_rois(y, L, nl, x, n, s, a), RV_OK);
      assert_int_equal(rv_arena_used(a), 0);
      const float *in = x, *inq = x;
      for (int i = 0; i < nl; i++) {
        rv_conv_params p = rv_conv_default_params(3, 1, 1);
        p.act = RV_ACT_RELU;
        rv_conv2d_naive_f32(r[i & 1], in, L[i].w, L[i].b, n, c, s, s, c, p);
        assert_int_equal(rv_layer_conv(q[i & 1], &L[i], inq, n, s, s, RV_ACT_RELU, a), RV_OK);
        in = r[i & 1], inq = q[i & 1];
      }
      double e = max_abs_diff(y, in, sz), sc = max_abs(in, sz);
      assert_true(sc > 0.1);
      if (!(e <= 1e-5 * sc)) fail_msg("stack of %d on %dx%d: err %g scale %g", nl, s, s, e, sc);
      if (rv_winograd_rois_supported() && memcmp(y, inq, sizeof(float) * sz) != 0)
        fail_msg("stack of %d on %dx%d differs from the layer-by-layer convs", nl, s, s);
      for (int i = 0; i < nl; i++) rv_layer_free(&L[i]);
      free(x), free(y), free(r[0]), free(r[1]), free(q[0]), free(q[1]);
    }
  rv_arena_free(a);
}

/* Mask head: computing only each roi's label channel gives that channel of the full logits. */
static void test_mask_head_label_channel(void **state) {
  (void)state;
  rv_mask_head h;
  memset(&h, 0, sizeof h);
  h.num_convs = 2;
  h.convs[0] = rand_layer(8, 8, 3, 11);
  h.convs[1] = rand_layer(8, 8, 3, 12);
  h.upsample = rand_layer(8, 6, 2, 13); /* [cin, cout, 2, 2] layout: same element count */
  h.upsample.cin = 8;
  h.upsample.cout = 6;
  h.logits = rand_layer(6, 5, 1, 14);
  h.in_channels = 8;
  h.roi_size = 14;
  h.num_classes = 5;
  const int n = 3;
  float *x = malloc(sizeof(float) * n * 8 * 196), *full = malloc(sizeof(float) * n * 5 * 784);
  float *one = malloc(sizeof(float) * n * 784);
  fill_rand(x, (size_t)n * 8 * 196, 15);
  rv_arena *a = rv_arena_create(0);
  rv_ctx *ctx = rv_ctx_create();
  const int labels[3] = {4, 0, 2};
  assert_int_equal(rv_mask_head_forward(full, &h, x, n, NULL, a, ctx), RV_OK);
  assert_int_equal(rv_mask_head_forward(one, &h, x, n, labels, a, ctx), RV_OK);
  for (int i = 0; i < n; i++)
    assert_true(max_abs_diff(one + (size_t)i * 784, full + ((size_t)i * 5 + labels[i]) * 784, 784) <
                1e-5);
  rv_mask_head_free(&h);
  rv_arena_free(a);
  rv_ctx_free(ctx);
  free(x);
  free(full);
  free(one);
}

/* Mask head, the labelled path on the AVX-512 kernels (deconv and the label's channel of
 * conv_logits fused over the conv stack's channels-last output): 32 channels, convs under
 * AUTO_FAST (the stack's channels-last F(4x4) path), 13 rois (2548 pixel rows: the last block
 * of 6 ragged), labels on every class. Float32: equal to the label channel of the full NCHW
 * path within 1e-5 of the logits' scale (the same sums but the dot over co in 16 lanes).
 * bf16 mode (the convs packed by rv_convmods_set_bf16_rois, the deconv following them):
 * within 3e-2 of the scale of the float32 result and not equal to it. Where the CPU lacks
 * AVX-512 the labelled call takes the NCHW path and the float32 check still holds. */
static void test_mask_head_labelled_fused(void **state) {
  (void)state;
  const int c = 32, cu = 32, K = 7, n = 13, s = 14;
  rv_mask_head h;
  memset(&h, 0, sizeof h);
  h.num_convs = 2;
  for (int i = 0; i < 2; i++) {
    h.convs[i] = rand_layer(c, c, 3, 31 + i);
    h.convs[i].algo = RV_CONV_AUTO_FAST;
    h.convs[i].stride = 1, h.convs[i].pad = 1; /* a ConvModule 3x3 (bf16 packing checks) */
  }
  h.upsample = rand_layer(c, cu, 2, 33);
  h.logits = rand_layer(cu, K, 1, 34);
  h.in_channels = c;
  h.roi_size = s;
  h.num_classes = K;
  float *x = malloc(sizeof(float) * n * c * 196), *full = malloc(sizeof(float) * n * K * 784);
  float *one = malloc(sizeof(float) * n * 784), *half = malloc(sizeof(float) * n * 784);
  fill_rand(x, (size_t)n * c * 196, 35);
  int labels[13];
  for (int i = 0; i < n; i++) labels[i] = (i * 3) % K;
  rv_arena *a = rv_arena_create(0);
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_mask_head_forward(full, &h, x, n, NULL, a, ctx), RV_OK);
  assert_int_equal(rv_mask_head_forward(one, &h, x, n, labels, a, ctx), RV_OK);
  assert_int_equal(rv_arena_used(a), 0);
  double sc = 0, e = 0;
  for (int i = 0; i < n; i++) {
    const float *f = full + ((size_t)i * K + labels[i]) * 784;
    const double si = max_abs(f, 784), ei = max_abs_diff(one + (size_t)i * 784, f, 784);
    sc = si > sc ? si : sc;
    e = ei > e ? ei : e;
  }
  assert_true(sc > 0.1);
  if (!(e <= 1e-5 * sc)) fail_msg("labelled path: err %g, scale %g", e, sc);
  if (rv_bf16_supported() && rv_winograd_rois_supported()) {
    assert_int_equal(rv_convmods_set_bf16_rois(h.convs, 2, 1, ctx), RV_OK);
    assert_int_equal(rv_mask_head_forward(half, &h, x, n, labels, a, ctx), RV_OK);
    assert_int_equal(rv_arena_used(a), 0);
    const double eb = max_abs_diff(half, one, (size_t)n * 784);
    printf("mask head labelled path: float32 %.3g, bf16 %.3g of the scale %.3g\n", e / sc,
           eb / sc, sc);
    assert_true(eb > 0);
    assert_true(eb <= 3e-2 * sc);
  } else {
    printf("mask head labelled path: bf16 not tested (no AVX512_BF16)\n");
  }
  rv_mask_head_free(&h);
  rv_arena_free(a);
  rv_ctx_free(ctx);
  free(x), free(full), free(one), free(half);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_anchors),          cmocka_unit_test(test_delta2bbox),
      cmocka_unit_test(test_nms),              cmocka_unit_test(test_nms_vs_bruteforce),
      cmocka_unit_test(test_multiclass_nms),   cmocka_unit_test(test_roi_align_ramp),
      cmocka_unit_test(test_roi_align_vs_naive), cmocka_unit_test(test_roi_levels),
      cmocka_unit_test(test_paste_mask),       cmocka_unit_test(test_conv_stack_rois),
      cmocka_unit_test(test_conv_stack_rois_one_width),
      cmocka_unit_test(test_mask_head_labelled_fused),
      cmocka_unit_test(test_argsort_topk),
      cmocka_unit_test(test_mask_head_label_channel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
