/* kernels/winograd.c: rv_conv2d_winograd_f32 (m = 2 and 4) and the dispatching rv_conv2d_f32
 * against rv_conv2d_naive_f32 (double accumulation) over sweeps of odd shapes: images 1x1 to
 * 31x37 (sizes not multiples of m: partial tiles), pads 0/1/2 (also unequal), n up to 5
 * (tiles of several images in one block), cin/cout 1..300, with and without bias, every
 * activation.
 * Tolerance: |y - ref| <= tol * S, S = the largest |b| + sum |w||x| (the naive conv of the
 * absolute values, before the activation: every rv_act has slope <= 1.13) over the output
 * plane (n, co): a tile's rounding error comes from its whole input patch, so outputs at a
 * zero-padded border, which see few inputs, are measured against the plane's scale.
 * tol = 1e-6 for m = 2 and RV_CONV_AUTO (im2col or F(2x2)), 3e-6 for m = 4 and
 * RV_CONV_AUTO_FAST. Measured worst |y - ref| / S (printed by the last test): AUTO 1.1e-7,
 * AUTO_FAST 3.9e-7, m = 2 1.9e-7, m = 4 1.5e-6 (2.3e-6 with Lavin's points +-2 for m = 4,
 * which the 3e-6 would still pass: the bound is for gross errors, the points' gain is
 * stated in kernels/winograd.c). */
#include "test_util.h"
#include "kernels/ops.h"
#include "kernel_check.h"

static double worst[5]; /* worst error / bound per algo below */
static int fused_runs, rois_runs; /* cases run through those paths (where supported) */

/* y [n][c][hw] <-> t [n][hw][c] */
static void to_nhwc(float *t, const float *y, int n, int c, size_t hw) {
  for (size_t i = 0; i < (size_t)n; i++)
    for (int ch = 0; ch < c; ch++)
      for (size_t p = 0; p < hw; p++) t[(i * hw + p) * c + ch] = y[(i * c + ch) * hw + p];
}
static void from_nhwc(float *y, const float *t, int n, int c, size_t hw) {
  for (size_t i = 0; i < (size_t)n; i++)
    for (int ch = 0; ch < c; ch++)
      for (size_t p = 0; p < hw; p++) y[(i * c + ch) * hw + p] = t[(i * hw + p) * c + ch];
}

/* algo: 0 / 1 = rv_conv2d_f32 with RV_CONV_AUTO / RV_CONV_AUTO_FAST, 2 or 4 =
 * rv_conv2d_winograd_path_f32 with that m, through the BLAS path and, where the CPU has
 * AVX-512F, the fused path (same tolerance) and the channels-last path
 * (rv_conv2d_winograd_rois_f32, for equal pads and act none / ReLU: equal to the fused
 * path's output bit for bit, in all four layouts) */
static void wino_case(rv_arena *ar, int algo, int n, int cin, int h, int wd, int cout, int ph,
                      int pw, int with_bias, rv_act act) {
  rv_conv_params p = rv_conv_default_params(3, 1, ph);
  p.pw = pw;
  p.act = act;
  p.algo = algo == 1 ? RV_CONV_AUTO_FAST : RV_CONV_AUTO;
  int oh = rv_conv_out_size(h, 3, 1, ph, 1), ow = rv_conv_out_size(wd, 3, 1, pw, 1);
  if (oh <= 0 || ow <= 0) {
    float dummy = 0;
    if (algo >= 2)
      assert_int_equal(rv_conv2d_winograd_f32(&dummy, &dummy, &dummy, NULL, n, cin, h, wd, cout,
                                              p, algo, ar),
                       RV_ERR_SHAPE);
    return;
  }
  size_t nx = (size_t)n * cin * h * wd, nw = (size_t)cout * cin * 9, ny = (size_t)n * cout * oh * ow;
  float *x = kc_rand(nx, (uint64_t)h * 131 + wd * 7 + cin), *w = kc_rand(nw, (uint64_t)cout * 3 + cin);
  float *b = kc_rand((size_t)cout, 17), *ref = kc_rand(ny, 6), *bound = kc_rand(ny, 7);
  float *ys[2] = {kc_rand(ny, 5), kc_rand(ny, 8)}; /* BLAS (or dispatch) and fused outputs */
  const float *bias = with_bias ? b : NULL;
  int paths = 1;
  if (algo >= 2) {
    assert_int_equal(rv_conv2d_winograd_path_f32(ys[0], x, w, bias, n, cin, h, wd, cout, p, algo,
                                                 RV_WINO_BLAS, ar),
                     RV_OK);
    rv_status st = rv_conv2d_winograd_path_f32(ys[1], x, w, bias, n, cin, h, wd, cout, p, algo,
                                               RV_WINO_FUSED, ar);
    assert_int_equal(st, rv_winograd_rois_supported() ? RV_OK : RV_ERR_UNSUPPORTED);
    if (st == RV_OK) paths = 2, fused_runs++;
  } else {
    assert_int_equal(rv_conv2d_f32(ys[0], x, w, bias, n, cin, h, wd, cout, p, ar), RV_OK);
  }
  assert_int_equal(rv_arena_used(ar), 0); /* workspace released */
  if (paths == 2 && ph == pw && (act == RV_ACT_NONE || act == RV_ACT_RELU)) {
    /* channels-last path: NCHW in / out, and NHWC on either side */
    const size_t ihw = (size_t)h * wd, ohw = (size_t)oh * ow;
    float *xt = kc_rand(nx, 1), *yt = kc_rand(ny, 2), *yc = kc_rand(ny, 3);
    to_nhwc(xt, x, n, cin, ihw);
    for (int layout = 0; layout < 4; layout++) {
      const float *in = layout & RV_ROIS_IN_NCHW ? x : xt;
      float *out = layout & RV_ROIS_OUT_NCHW ? yc : yt;
      assert_int_equal(rv_conv2d_winograd_rois_f32(out, in, w, bias, n, cin, h, wd, cout, ph, act,
                                                   algo, layout, ar),
                       RV_OK);
      assert_int_equal(rv_arena_used(ar), 0);
      if (!(layout & RV_ROIS_OUT_NCHW)) from_nhwc(yc, yt, n, cout, ohw);
      if (memcmp(yc, ys[1], ny * sizeof(float)) != 0)
        fail_msg("channels-last m%d n%d ci%d %dx%d co%d pad %d layout %d differs from fused", algo,
                 n, cin, h, wd, cout, ph, layout);
    }
    rois_runs++;
    free(xt), free(yt), free(yc);
  }
  rv_conv2d_naive_f32(ref, x, w, bias, n, cin, h, wd, cout, p);
  /* bound = |b| + sum |w||x|: the naive conv of the absolute values */
  for (size_t i = 0; i < nx; i++) x[i] = fabsf(x[i]);
  for (size_t i = 0; i < nw; i++) w[i] = fabsf(w[i]);
  for (int i = 0; i < cout; i++) b[i] = fabsf(b[i]);
  p.act = RV_ACT_NONE;
  rv_conv2d_naive_f32(bound, x, w, bias, n, cin, h, wd, cout, p);
  /* the scale of output plane (n, co): its largest bound (edge outputs see fewer inputs,
   * but a tile's rounding error comes from its whole input patch) */
  size_t ohw = (size_t)oh * ow;
  for (size_t pl = 0; pl < (size_t)n * cout; pl++) {
    float mx = 1e-30f;
    for (size_t i = 0; i < ohw; i++) mx = bound[pl * ohw + i] > mx ? bound[pl * ohw + i] : mx;
    for (size_t i = 0; i < ohw; i++) bound[pl * ohw + i] = mx;
  }
  double tol = algo == 4 || algo == 1 ? 3e-6 : 1e-6, ratio = 0;
  for (int k = 0; k < paths; k++) {
    const float *y = ys[k];
    for (size_t i = 0; i < ny; i++) {
      double d = fabs((double)y[i] - ref[i]), sc = bound[i];
      if (!(d <= tol * sc)) {
        fprintf(stderr, "winograd m%d (%s) n%d ci%d %dx%d co%d pad %d,%d bias %d act %d: "
                "y[%zu] %.9g ref %.9g, |diff| %g > %g * %g\n", algo, k ? "fused" : "blas", n,
                cin, h, wd, cout, ph, pw, with_bias, (int)act, i, y[i], ref[i], d, tol, sc);
        fail();
      }
      if (d / sc > ratio) ratio = d / sc;
    }
  }
  if (ratio > worst[algo]) worst[algo] = ratio;
  free(x), free(w), free(b), free(ys[0]), free(ys[1]), free(ref), free(bound);
}

/* p.accumulate (y = act(y + b + conv)) on every path of rv_conv2d_f32: im2col, F(2x2),
 * F(4x4), pointwise GEMM, batched small images (im2col and Winograd), depthwise, strided;
 * against the naive conv with accumulate (one case without: plain batched Winograd). Tolerance 4e-6 of the largest |y0| + |b| + sum |w||x| of the call. */
static void test_conv_accumulate(void **state) {
  (void)state;
  rv_arena *ar = rv_arena_create(0);
  struct {
    int n, cin, h, w, cout, k, stride, groups;
    rv_conv_algo algo;
  } cs[] = {{1, 64, 19, 23, 48, 3, 1, 1, RV_CONV_IM2COL},    {1, 64, 19, 23, 48, 3, 1, 1, RV_CONV_WINOGRAD2},
            {2, 40, 21, 18, 36, 3, 1, 1, RV_CONV_WINOGRAD4}, {1, 70, 13, 11, 33, 1, 1, 1, RV_CONV_AUTO},
            {12, 32, 7, 7, 40, 3, 1, 1, RV_CONV_IM2COL},    {2, 24, 15, 17, 24, 3, 1, 24, RV_CONV_AUTO},
            {1, 16, 20, 20, 24, 3, 2, 1, RV_CONV_AUTO},
            /* batches of small images (images as lanes), over 64 of them (lane chunks) */
            {12, 32, 7, 7, 40, 3, 1, 1, RV_CONV_WINOGRAD4},  {5, 24, 9, 11, 20, 3, 1, 1, RV_CONV_WINOGRAD2},
            {70, 8, 5, 6, 8, 3, 1, 1, RV_CONV_WINOGRAD4},    {70, 8, 7, 7, 16, 3, 1, 1, RV_CONV_WINOGRAD2},
            {67, 12, 14, 14, 9, 3, 1, 1, RV_CONV_WINOGRAD4}};
  for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
    rv_conv_params p = rv_conv_default_params(cs[c].k, cs[c].stride, cs[c].k / 2);
    p.groups = cs[c].groups;
    p.algo = cs[c].algo;
    p.act = c % 3 == 2 ? RV_ACT_GELU : RV_ACT_RELU;
    p.accumulate = c != 9; /* one batched case without, the others with accumulate */
    int oh = rv_conv_out_size(cs[c].h, cs[c].k, cs[c].stride, cs[c].k / 2, 1);
    int ow = rv_conv_out_size(cs[c].w, cs[c].k, cs[c].stride, cs[c].k / 2, 1);
    size_t nx = (size_t)cs[c].n * cs[c].cin * cs[c].h * cs[c].w;
    size_t nw = (size_t)cs[c].cout * (cs[c].cin / cs[c].groups) * cs[c].k * cs[c].k;
    size_t ny = (size_t)cs[c].n * cs[c].cout * oh * ow;
    float *x = kc_rand(nx, 100 + c), *w = kc_rand(nw, 200 + c), *b = kc_rand((size_t)cs[c].cout, 300 + c);
    float *y = kc_rand(ny, 400 + c), *ref = malloc(ny * sizeof(float)), *bound = malloc(ny * sizeof(float));
    assert_non_null(ref);
    assert_non_null(bound);
    memcpy(ref, y, ny * sizeof(float));
    for (size_t i = 0; i < ny; i++) bound[i] = fabsf(y[i]);
    /* a forced Winograd algo is taken by rv_conv2d_f32 for these 3x3 stride-1 convs */
    assert_int_equal(rv_conv2d_f32(y, x, w, b, cs[c].n, cs[c].cin, cs[c].h, cs[c].w, cs[c].cout, p, ar),
                     RV_OK);
    assert_int_equal(rv_arena_used(ar), 0);
    rv_conv2d_naive_f32(ref, x, w, b, cs[c].n, cs[c].cin, cs[c].h, cs[c].w, cs[c].cout, p);
    for (size_t i = 0; i < nx; i++) x[i] = fabsf(x[i]);
    for (size_t i = 0; i < nw; i++) w[i] = fabsf(w[i]);
    for (int i = 0; i < cs[c].cout; i++) b[i] = fabsf(b[i]);
    p.act = RV_ACT_NONE;
    rv_conv2d_naive_f32(bound, x, w, b, cs[c].n, cs[c].cin, cs[c].h, cs[c].w, cs[c].cout, p);
    double scale = 0, err = 0;
    for (size_t i = 0; i < ny; i++) {
      scale = bound[i] > scale ? bound[i] : scale;
      double d = fabs((double)y[i] - ref[i]);
      err = d > err ? d : err;
    }
    if (!(err <= 4e-6 * scale)) fail_msg("accumulate case %zu: err %g, scale %g", c, err, scale);
    free(x), free(w), free(b), free(y), free(ref), free(bound);
  }
  rv_arena_free(ar);
}

/* every size 1..8 and a few larger odd ones, pads 0..2, both m, small channel counts */
static void test_winograd_shapes(void **state) {
  (void)state;
  rv_arena *ar = rv_arena_create(0);
  int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 31};
  int cases = 0;
  for (int algo = 2; algo <= 4; algo += 2)
    for (int ih = 0; ih < 11; ih++)
      for (int iw = 0; iw < 11; iw += 2)
        for (int pad = 0; pad <= 2; pad++) {
          int n = 1 + (ih + iw + pad) % 3, cin = 1 + (ih * 5 + pad) % 7, cout = 1 + (iw * 3 + ih) % 6;
          wino_case(ar, algo, n, cin, sizes[ih], sizes[iw], cout, pad, pad, (ih + pad) % 4 != 0,
                    (rv_act)((ih + iw + pad) % 5));
          cases++;
        }
  assert_true(cases == 2 * 11 * 6 * 3);
  /* unequal pads, wide rows (several transform segments of 64 tiles per tile row) */
  wino_case(ar, 4, 1, 3, 5, 300, 2, 2, 0, 1, RV_ACT_RELU);
  wino_case(ar, 2, 2, 2, 11, 150, 3, 0, 1, 0, RV_ACT_SILU);
  wino_case(ar, 4, 1, 2, 37, 31, 3, 1, 2, 1, RV_ACT_NONE);
  rv_arena_free(ar);
}

/* channel counts up to 300, many small images (RoI heads: blocks span images) */
static void test_winograd_channels(void **state) {
  (void)state;
  rv_arena *ar = rv_arena_create(0);
  int chans[][2] = {{1, 300}, {300, 1}, {64, 64}, {129, 67}, {256, 31}, {17, 256}};
  for (int algo = 2; algo <= 4; algo += 2)
    for (int i = 0; i < 6; i++)
      wino_case(ar, algo, 1 + i % 2, chans[i][0], 7 + i, 9 + 2 * i, chans[i][1], 1, 1, i % 3 != 2,
                (rv_act)(i % 5));
  /* m, n, cin, h = w, cout, bias, act */
  static const int more[][7] = {
      /* 7x7 RoI features, n = 200: 800 (m = 4) / 3200 (m = 2) tiles over several blocks */
      {4, 200, 48, 7, 40, 1, RV_ACT_RELU}, {2, 200, 48, 7, 40, 1, RV_ACT_RELU},
      {4, 37, 20, 14, 24, 0, RV_ACT_GELU},
      /* transformed weights over U_BUDGET (36 * 300 * 2048 floats > 16M): two chunks of output
       * channels, each redoing the input transform */
      {4, 2, 2048, 5, 300, 1, RV_ACT_RELU}, {2, 1, 2048, 6, 520, 1, RV_ACT_NONE}};
  for (int i = 0; i < 5; i++)
    wino_case(ar, more[i][0], more[i][1], more[i][2], more[i][3], more[i][3], more[i][4], 1, 1,
              more[i][5], (rv_act)more[i][6]);
  rv_arena_free(ar);
}

/* the dispatching rv_conv2d_f32 on shapes where it picks F(2x2), F(4x4) (AUTO_FAST only) or
 * im2col (rule in kernels/conv.c); tolerance that of m = 2 for AUTO, m = 4 for AUTO_FAST */
static void test_conv_dispatch(void **state) {
  (void)state;
  rv_arena *ar = rv_arena_create(0);
  int shapes[][5] = {/* n, cin, h, w, cout */
                     {1, 256, 20, 37, 256}, {2, 256, 7, 7, 256}, {1, 128, 33, 17, 128},
                     {1, 300, 9, 13, 64}, {12, 64, 14, 14, 40}, {1, 32, 5, 6, 32},
                     {1, 48, 47, 45, 33}};
  /* P = n oh ow: 740, 98 (im2col), 561, 117 (im2col), 2352, 30 (im2col), 2115: F(2x2) from
   * 256, F(4x4) from 2048 under AUTO_FAST */
  for (int fast = 0; fast <= 1; fast++)
    for (int i = 0; i < 7; i++)
      wino_case(ar, fast, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], shapes[i][4], 1,
                1, i % 2, (rv_act)(i % 5));
  rv_arena_free(ar);
  /* the worst errors over all three tests (this test runs last), relative to the plane scale */
  printf("winograd worst |y - ref| / plane max(|b| + sum |w||x|): AUTO %.3g, AUTO_FAST %.3g, "
         "m=2 %.3g, m=4 %.3g\n", worst[0], worst[1], worst[2], worst[4]);
  assert_true(worst[2] > 0 && worst[4] > 0);
  if (rv_winograd_rois_supported()) {
    printf("winograd: %d cases also through the fused path, %d through the channels-last path\n",
           fused_runs, rois_runs);
    assert_true(fused_runs > 300 && rois_runs > 100);
  } else {
    printf("winograd: no AVX-512F here: the fused and channels-last paths are not built for "
           "this CPU (both answered RV_ERR_UNSUPPORTED)\n");
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_winograd_shapes),
      cmocka_unit_test(test_winograd_channels),
      cmocka_unit_test(test_conv_accumulate),
      cmocka_unit_test(test_conv_dispatch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
