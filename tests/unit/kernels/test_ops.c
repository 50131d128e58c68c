/* kernels/ops: every fast kernel against its naive twin over sweeps of odd shapes, plus
 * hand-checked values. Expected values marked "torch" were computed once with PyTorch
 * 1.13 (CPU, float32 unless noted) by the script quoted in the comment and hard-coded.
 * Tolerances: fast vs naive (double accumulation) |diff| <= 2e-5 * max(1, max|ref|) for
 * GEMM-based kernels, 2e-6 for direct kernels; torch values 2e-6 relative. */
#include "test_util.h"
#include "kernels/ops.h"
#include "kernel_check.h"
#include "kernels/vmath.h"

#include <dlfcn.h>
#include <omp.h>

/* values against a hard-coded list, relative tolerance per element */
static void assert_values(const float *a, const double *want, size_t n, double rtol,
                          const char *what) {
  for (size_t i = 0; i < n; i++) {
    double tol = rtol * (fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0);
    if (!(fabs((double)a[i] - want[i]) <= tol)) {
      fprintf(stderr, "%s[%zu]: got %.9g want %.9g\n", what, i, a[i], want[i]);
      fail();
    }
  }
}

/* ---- GEMM ---- */
static void test_gemm(void **state) {
  (void)state;
  int ms[] = {1, 3, 17, 64}, ns[] = {1, 5, 33, 70}, ks[] = {1, 7, 31, 129};
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      for (int im = 0; im < 4; im++)
        for (int in = 0; in < 4; in++)
          for (int ik = 0; ik < 4; ik++) {
            int m = ms[im], n = ns[in], k = ks[ik];
            int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
            float *a = kc_rand((size_t)(ta ? k : m) * lda, 1 + im);
            float *b = kc_rand((size_t)(tb ? n : k) * ldb, 2 + in);
            float *c1 = kc_rand((size_t)m * ldc, 3), *c2 = kc_rand((size_t)m * ldc, 3);
            float alpha = 0.75f, beta = (ik & 1) ? 0.5f : 0.0f;
            rv_gemm_f32(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c1, ldc);
            rv_gemm_naive_f32(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c2, ldc);
            kc_assert_close(c1, c2, (size_t)m * ldc, 2e-5 * sqrt((double)k), "gemm");
            free(a), free(b), free(c1), free(c2);
          }
  /* k == 0: C = beta * C */
  float c[4] = {1, 2, 3, 4}, dummy = 0;
  rv_gemm_f32(0, 0, 2, 2, 0, 1.0f, &dummy, 1, &dummy, 2, 0.5f, c, 2);
  assert_true(c[0] == 0.5f && c[3] == 2.0f);
}

/* The GEMMs that rv_gemm_f32 splits into ranges (kernels/gemm.c: over 2^20 multiply-adds, the
 * larger of C's dimensions cut into ranges set by the shape and the CPU count), and some it
 * does not, with transposes, strides and beta: equal to the naive twin within float32
 * rounding, and bit for bit the same with 1, 2 and 3 threads and from inside a parallel
 * region (the split never follows the thread count). */
static void test_gemm_blocks(void **state) {
  (void)state;
  static const int shapes[][3] = {{64, 1000, 40}, {7, 4099, 64}, {300, 100, 50}, {33, 64, 900},
                                  {150, 777, 31}};
  const int saved = omp_get_max_threads();
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        const int lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 3;
        float *a = kc_rand((size_t)(ta ? k : m) * lda, 11 + s);
        float *b = kc_rand((size_t)(tb ? n : k) * ldb, 12 + s);
        float *c0 = kc_rand((size_t)m * ldc, 13), *ref = kc_rand((size_t)m * ldc, 13);
        float *c = malloc(sizeof(float) * (size_t)m * ldc);
        const float beta = (ta + tb) & 1 ? 0.5f : 0.0f;
        rv_gemm_naive_f32(ta, tb, m, n, k, 1.25f, a, lda, b, ldb, beta, ref, ldc);
        float *first = NULL;
        for (int t = 1; t <= 4; t++) { /* 4: one thread of a team of 2 runs it */
          memcpy(c, c0, sizeof(float) * (size_t)m * ldc);
          if (t < 4) {
            omp_set_num_threads(t);
            rv_gemm_f32(ta, tb, m, n, k, 1.25f, a, lda, b, ldb, beta, c, ldc);
          } else {
            omp_set_num_threads(2);
#pragma omp parallel num_threads(2)
            if (omp_get_thread_num() == 1)
              rv_gemm_f32(ta, tb, m, n, k, 1.25f, a, lda, b, ldb, beta, c, ldc);
          }
          if (!first) {
            kc_assert_close(c, ref, (size_t)m * ldc, 2e-5 * sqrt((double)k), "gemm blocks");
            first = malloc(sizeof(float) * (size_t)m * ldc);
            memcpy(first, c, sizeof(float) * (size_t)m * ldc);
          } else {
            assert_memory_equal(c, first, sizeof(float) * (size_t)m * ldc);
          }
        }
        free(a), free(b), free(c0), free(ref), free(c), free(first);
      }
  omp_set_num_threads(saved);
}

/* ---- convolution ---- */
static void conv_case(rv_arena *ar, int n, int cin, int h, int wd, int cout, rv_conv_params p,
                      double tol) {
  int oh = rv_conv_out_size(h, p.kh, p.sh, p.ph, p.dh);
  int ow = rv_conv_out_size(wd, p.kw, p.sw, p.pw, p.dw);
  if (oh <= 0 || ow <= 0) {
    float dummy = 0;
    assert_int_equal(rv_conv2d_f32(&dummy, &dummy, &dummy, NULL, n, cin, h, wd, cout, p, ar),
                     RV_ERR_SHAPE);
    return;
  }
  size_t ny = (size_t)n * cout * oh * ow;
  float *x = kc_rand((size_t)n * cin * h * wd, (uint64_t)h * 31 + wd);
  float *w = kc_rand((size_t)cout * (cin / p.groups) * p.kh * p.kw, (uint64_t)cout * 7 + p.kh);
  float *b = kc_rand((size_t)cout, 99);
  float *y1 = kc_rand(ny, 5), *y2 = kc_rand(ny, 6);
  const float *bias = (h + cout + p.kh + p.sh) % 3 == 0 ? NULL : b; /* some cases without bias */
  assert_int_equal(rv_conv2d_f32(y1, x, w, bias, n, cin, h, wd, cout, p, ar), RV_OK);
  rv_conv2d_naive_f32(y2, x, w, bias, n, cin, h, wd, cout, p);
  char what[160];
  snprintf(what, sizeof what, "conv n%d ci%d %dx%d co%d k%dx%d s%d,%d p%d,%d d%d g%d act%d", n,
           cin, h, wd, cout, p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.dh, p.groups, (int)p.act);
  kc_assert_close(y1, y2, ny, tol, what);
  assert_int_equal(rv_arena_used(ar), 0); /* workspace released */
  free(x), free(w), free(b), free(y1), free(y2);
}

/* post function for rv_pointwise_post_f32: applied once to every element, so y = 2 z + 1 */
static void twice_plus_one(float *row, size_t n) {
  for (size_t i = 0; i < n; i++) row[i] = 2.0f * row[i] + 1.0f;
}


/* rv_pointwise_f32 (the AVX-512 kernel reading x in place, or BLAS): output rows past a
 * multiple of 8 (cout 1..40), masked pixel tails (n not a multiple of 48), cin 1..300, with
 * and without bias, against rv_gemm_naive_f32 (double); where the kernel runs, also against
 * the BLAS path (bias-filled y, beta 1) within 1e-6 of the scale; rv_pointwise_post_f32
 * applies its function to every output exactly once. */
static void test_pointwise(void **state) {
  (void)state;
  rv_arena *ar = rv_arena_create(0);
  /* the kernel takes rows of 4096 pixels and more (kernels/ukernel.c), BLAS the others */
  static const int cs[][3] = {{8, 16, 8208},  {1, 1, 1},       {21, 37, 4230}, {13, 300, 97},
                              {64, 24, 4096}, {5, 3, 8209},    {256, 64, 481}, {17, 9, 4100},
                              {3, 300, 9000}, {40, 7, 12345}};
  for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++)
    for (int with_b = 0; with_b <= 1; with_b++) {
      const int co = cs[c][0], ci = cs[c][1];
      const size_t n = (size_t)cs[c][2];
      float *w = kc_rand((size_t)co * ci, 10 + c), *x = kc_rand((size_t)ci * n, 20 + c);
      float *b = kc_rand((size_t)co, 30 + c), *y = kc_rand((size_t)co * n, 1);
      float *ref = kc_rand((size_t)co * n, 2);
      float *yb = kc_rand((size_t)co * n, 3);
      const float *bias = with_b ? b : NULL;
      assert_int_equal(rv_pointwise_f32(y, w, bias, x, co, ci, n, ar), RV_OK);
      assert_int_equal(rv_arena_used(ar), 0);
      for (int o = 0; o < co; o++)
        for (size_t l = 0; l < n; l++) ref[(size_t)o * n + l] = bias ? bias[o] : 0.0f;
      rv_gemm_naive_f32(0, 0, co, (int)n, ci, 1.0f, w, ci, x, (int)n, 1.0f, ref, (int)n);
      kc_assert_close(y, ref, (size_t)co * n, 2e-5, "pointwise vs naive");
      /* with a post function: exactly post(y) (each element once, also in tail blocks) */
      assert_int_equal(rv_pointwise_post_f32(yb, w, bias, x, co, ci, n, twice_plus_one, ar), RV_OK);
      for (size_t i = 0; i < (size_t)co * n; i++)
        if (yb[i] != 2.0f * y[i] + 1.0f) fail_msg("pointwise post: element %zu", i);
      /* with a context post: y unchanged, post once per element at its place */
      float *z = kc_rand((size_t)co * n, 4), *z0 = malloc(sizeof(float) * (size_t)co * n);
      assert_non_null(z0);
      memcpy(z0, z, sizeof(float) * (size_t)co * n);
      kc_post_arg pa = {z, 0};
      assert_int_equal(rv_pointwise_ctx_f32(yb, w, bias, x, co, ci, n, kc_add_three_times, &pa, ar),
                       RV_OK);
      assert_int_equal(pa.calls, (size_t)co * n);
      for (size_t i = 0; i < (size_t)co * n; i++) {
        if (yb[i] != y[i]) fail_msg("pointwise ctx post: y element %zu", i);
        if (z[i] != z0[i] + 3.0f * y[i]) fail_msg("pointwise ctx post: z element %zu", i);
      }
      free(z), free(z0);
      if (rv_ukernel_supported()) {
        for (int o = 0; o < co; o++)
          for (size_t l = 0; l < n; l++) yb[(size_t)o * n + l] = bias ? bias[o] : 0.0f;
        rv_gemm_f32(0, 0, co, (int)n, ci, 1.0f, w, ci, x, (int)n, 1.0f, yb, (int)n);
        kc_assert_close(y, yb, (size_t)co * n, 1e-6, "pointwise vs BLAS");
      }
      free(w), free(x), free(b), free(y), free(ref), free(yb);
    }
  rv_arena_free(ar);
}

static void test_conv_sweep(void **state) {
  (void)state;
  rv_arena *ar = rv_arena_create(0);
  int hs[] = {1, 2, 5, 7, 13, 31};
  int ks[] = {1, 3, 5, 7};
  int cases = 0;
  for (int ih = 0; ih < 6; ih++)
    for (int ik = 0; ik < 4; ik++)
      for (int s = 1; s <= 2; s++)
        for (int pad = 0; pad <= 2; pad++)
          for (int g = 1; g <= 3; g += 2)
            for (int d = 1; d <= 2; d++) {
              if (ks[ik] == 1 && d == 2) continue;
              rv_conv_params p = rv_conv_default_params(ks[ik], s, pad);
              p.groups = g;
              p.dh = p.dw = d;
              p.act = (rv_act)((ih + ik + pad) % 5);
              /* n = 2 takes the batched small-output path, n = 1 the row-tiled one */
              conv_case(ar, 1 + (s + pad + d) % 2, 3 * g, hs[ih], hs[(ih + 3) % 6], 5 * g, p,
                        2e-5);
              cases++;
            }
  assert_true(cases > 400);
  /* rectangular kernels, unequal strides/pads */
  rv_conv_params p = rv_conv_default_params(3, 1, 1);
  p.kh = 1, p.kw = 5, p.ph = 0, p.pw = 2, p.sh = 2;
  conv_case(ar, 1, 5, 9, 11, 7, p, 2e-5);
  /* depthwise through rv_conv2d_f32 (dispatches to the depthwise kernel) */
  p = rv_conv_default_params(5, 1, 2);
  p.groups = 6, p.act = RV_ACT_GELU;
  conv_case(ar, 2, 6, 13, 7, 6, p, 2e-6);
  p = rv_conv_default_params(3, 2, 1);
  p.groups = 6;
  conv_case(ar, 1, 6, 14, 9, 6, p, 2e-6);
  /* pointwise with many channels (direct GEMM) */
  p = rv_conv_default_params(1, 1, 0);
  p.act = RV_ACT_RELU;
  conv_case(ar, 2, 67, 9, 13, 129, p, 2e-5);
  /* batched small outputs over several GEMM blocks (16384 columns / 196 = 83 images) */
  p = rv_conv_default_params(3, 1, 1);
  p.act = RV_ACT_RELU;
  conv_case(ar, 100, 16, 14, 14, 8, p, 2e-5);
  p = rv_conv_default_params(1, 1, 0);
  conv_case(ar, 9, 33, 7, 7, 17, p, 2e-5);
  /* several small images whose column matrices are too large to batch (K = 18432): per
   * image, row-tiled */
  p = rv_conv_default_params(3, 1, 1);
  conv_case(ar, 2, 2048, 13, 13, 4, p, 2e-5);
  /* tiled im2col: K = 2304, ow = 336 -> several row tiles */
  p = rv_conv_default_params(3, 1, 1);
  conv_case(ar, 1, 256, 20, 336, 3, p, 2e-5);
  rv_arena_free(ar);
}

/* torch: x = (arange(32)/8 - 2).reshape(1,2,4,4), w = ((arange(36) % 7) - 3).reshape(2,2,3,3)/4,
 * b = [0.5, -1], F.conv2d in float64. All values are exact in binary. */
static void test_conv_values(void **state) {
  (void)state;
  float x[32], w[36], b[2] = {0.5f, -1.0f}, y[32];
  for (int i = 0; i < 32; i++) x[i] = (float)i / 8.0f - 2.0f;
  for (int i = 0; i < 36; i++) w[i] = (float)(i % 7 - 3) / 4.0f;
  rv_arena *ar = rv_arena_create(0);
  static const double s2p1[] = {0.65625, -0.8125, 1.15625, 1.1875, -0.65625, 1.09375, -2.875, -1.5};
  static const double s1p0[] = {2.125, 1.9375, 1.375, 1.1875, -1.96875, -1.875, -1.59375, -1.5};
  static const double d2p2[] = {-0.1875, -0.28125, -0.75, -0.65625, -0.5625, -0.65625, -0.375,
                                -0.28125, 1.1875, 1.21875, 4.125, 4.125, 1.3125, 1.34375, 4.125,
                                4.125, -0.3125, -0.28125, 2.625, 2.625, -0.1875, -0.15625, 2.625,
                                2.625, -2.4375, -2.5, -1.6875, -1.78125, -2.6875, -2.75, -2.0625,
                                -2.15625};
  rv_conv_params p = rv_conv_default_params(3, 2, 1);
  assert_int_equal(rv_conv_out_size(4, 3, 2, 1, 1), 2);
  assert_int_equal(rv_conv2d_f32(y, x, w, b, 1, 2, 4, 4, 2, p, ar), RV_OK);
  assert_values(y, s2p1, 8, 1e-6, "conv s2p1");
  p = rv_conv_default_params(3, 1, 0);
  assert_int_equal(rv_conv2d_f32(y, x, w, b, 1, 2, 4, 4, 2, p, ar), RV_OK);
  assert_values(y, s1p0, 8, 1e-6, "conv s1p0");
  p = rv_conv_default_params(3, 1, 2);
  p.dh = p.dw = 2;
  assert_int_equal(rv_conv2d_f32(y, x, w, b, 1, 2, 4, 4, 2, p, ar), RV_OK);
  assert_values(y, d2p2, 32, 1e-6, "conv d2p2");
  /* ReLU epilogue on the same case */
  p = rv_conv_default_params(3, 2, 1);
  p.act = RV_ACT_RELU;
  assert_int_equal(rv_conv2d_f32(y, x, w, b, 1, 2, 4, 4, 2, p, ar), RV_OK);
  for (int i = 0; i < 8; i++) assert_true(y[i] == (float)(s2p1[i] > 0 ? s2p1[i] : 0.0));
  /* output size: floor formula, kernel larger than padded input */
  assert_int_equal(rv_conv_out_size(7, 3, 2, 1, 1), 4);
  assert_int_equal(rv_conv_out_size(2, 5, 2, 0, 1), 0);
  assert_int_equal(rv_conv_out_size(1, 3, 2, 1, 2), 0); /* dilated kernel spans 5 > 3 */
  assert_int_equal(rv_conv_out_size(1, 3, 2, 1, 1), 1);
  rv_arena_free(ar);
}

/* ---- depthwise ---- */
static void test_dwconv_sweep(void **state) {
  (void)state;
  int hs[] = {1, 2, 5, 7, 13, 31};
  for (int ih = 0; ih < 6; ih++)
    for (int k = 1; k <= 7; k += 2)
      for (int s = 1; s <= 2; s++)
        for (int pi = 0; pi < 2; pi++)
          for (int res = 0; res < 3; res++) {
            int h = hs[ih], wd = hs[(ih + 2) % 6], c = 7, n = 2, pad = pi ? k / 2 : 0;
            int oh = (h + 2 * pad - k) / s + 1, ow = (wd + 2 * pad - k) / s + 1;
            if (h + 2 * pad < k || wd + 2 * pad < k) continue;
            size_t ny = (size_t)n * c * oh * ow;
            float *x = kc_rand((size_t)n * c * h * wd, 11 + ih), *w = kc_rand((size_t)c * k * k, k);
            float *b = kc_rand((size_t)c, 3), *r = kc_rand(ny, 4);
            float *y1 = kc_rand(ny, 5), *y2 = kc_rand(ny, 6);
            rv_dwconv2d_naive_f32(y2, x, w, b, res ? r : NULL, n, c, h, wd, k, s, pad);
            if (res == 2) { /* y aliases residual */
              memcpy(y1, r, ny * sizeof(float));
              rv_dwconv2d_f32(y1, x, w, b, y1, n, c, h, wd, k, s, pad);
            } else {
              rv_dwconv2d_f32(y1, x, w, res ? b : b, res ? r : NULL, n, c, h, wd, k, s, pad);
            }
            char what[96];
            snprintf(what, sizeof what, "dwconv %dx%d k%d s%d p%d res%d", h, wd, k, s, pad, res);
            kc_assert_close(y1, y2, ny, 2e-6, what);
            /* with a gate: the same outputs times the gate, bit for bit (y aliasing the
             * residual as RAVLT's LePE does) */
            float *g = kc_rand(ny, 7), *y3 = kc_rand(ny, 8);
            if (res) memcpy(y3, r, ny * sizeof(float));
            rv_dwconv2d_gate_f32(y3, x, w, b, res ? y3 : NULL, g, n, c, h, wd, k, s, pad);
            for (size_t i = 0; i < ny; i++)
              if (y3[i] != y1[i] * g[i]) fail_msg("%s gate: element %zu", what, i);
            /* in place (y = x + conv(x), as RAVLT's CPE and FFN convs): the naive result
             * with x as the residual; for 3x3 bit for bit the out-of-place call's (the
             * same band path; 5x5 and 7x7 out of place run on the AVX-512 blocks where the
             * CPU has them, whose tap sums a clang build's band path need not share) */
            if (s == 1 && 2 * pad == k - 1 && res == 1) {
              assert_true(rv_dwconv2d_inplace_ok(wd, k));
              size_t nx = (size_t)n * c * h * wd;
              float *xi = malloc(nx * sizeof(float)), *yo = kc_rand(nx, 9);
              memcpy(xi, x, nx * sizeof(float));
              rv_dwconv2d_f32(yo, x, w, b, x, n, c, h, wd, k, s, pad);
              rv_dwconv2d_f32(xi, xi, w, b, xi, n, c, h, wd, k, s, pad);
              rv_dwconv2d_naive_f32(y2, x, w, b, x, n, c, h, wd, k, s, pad);
              kc_assert_close(xi, y2, nx, 2e-6, what);
              for (size_t i = 0; k == 3 && i < nx; i++)
                if (xi[i] != yo[i]) fail_msg("%s in place: element %zu", what, i);
              free(xi), free(yo);
            }
            free(g), free(y3);
            free(x), free(w), free(b), free(r), free(y1), free(y2);
          }
  /* several row bands (wd 1000: 12 rows per band for k = 5), and rows too wide for the
   * band buffer (k = 7, wd 2400: per-row path with bounds-checked borders); on AVX-512 CPUs
   * k = 5, 7 run on register blocks of 4 rows x 32 columns: blocks inside the plane, blocks
   * at each border, a last block of 16 or fewer columns, a last row block of 1-3 rows */
  {
    /* h, wd, k, pad, whether in place is possible (the band buffer holds k rows) */
    int cases[8][5] = {{31, 1000, 5, 2, 1}, {9, 2400, 7, 3, 0}, {9, 2400, 5, 2, 1},
                       {37, 70, 5, 2, 1},   {23, 113, 7, 3, 1}, {18, 48, 5, 2, 1},
                       {6, 4100, 5, 2, 0},  {40, 1000, 3, 1, 1}};
    for (int t = 0; t < 8; t++) {
      int h = cases[t][0], wd = cases[t][1], k = cases[t][2], pad = cases[t][3], c = 2;
      size_t nx = (size_t)c * h * wd;
      float *x = kc_rand(nx, 31), *w = kc_rand((size_t)c * k * k, 32), *b = kc_rand((size_t)c, 33);
      float *r = kc_rand(nx, 34), *y1 = kc_rand(nx, 35), *y2 = kc_rand(nx, 36);
      rv_dwconv2d_f32(y1, x, w, b, r, 1, c, h, wd, k, 1, pad);
      rv_dwconv2d_naive_f32(y2, x, w, b, r, 1, c, h, wd, k, 1, pad);
      kc_assert_close(y1, y2, nx, 2e-6, "dwconv wide");
      float *g = kc_rand(nx, 37);
      rv_dwconv2d_gate_f32(y2, x, w, b, r, g, 1, c, h, wd, k, 1, pad);
      for (size_t i = 0; i < nx; i++)
        if (y2[i] != y1[i] * g[i]) fail_msg("dwconv wide gate: element %zu", i);
      /* in place across several bands (the k - 1 rows two bands share carried in the
       * buffer, read before the first band writes them); rows too wide for the buffer
       * cannot be done in place */
      assert_int_equal(rv_dwconv2d_inplace_ok(wd, k), cases[t][4]);
      if (cases[t][4]) { /* bit for bit for 3x3 (the same band path), as above */
        rv_dwconv2d_f32(y1, x, w, b, x, 1, c, h, wd, k, 1, pad);
        memcpy(y2, x, nx * sizeof(float));
        rv_dwconv2d_f32(y2, y2, w, b, y2, 1, c, h, wd, k, 1, pad);
        kc_assert_close(y2, y1, nx, 2e-6, "dwconv wide in place");
        for (size_t i = 0; k == 3 && i < nx; i++)
          if (y2[i] != y1[i]) fail_msg("dwconv wide in place: element %zu", i);
      }
      free(g);
      free(x), free(w), free(b), free(r), free(y1), free(y2);
    }
  }
  /* zero padding is zero: an inf in the top row must not leak into the bottom rows through
   * the padded taps (0 * inf) */
  {
    float xi[63], wi[9], yi[63];
    fill_rand(xi, 63, 5);
    fill_rand(wi, 9, 6);
    xi[8] = INFINITY; /* row 0, last column of a 7x9 plane */
    rv_dwconv2d_f32(yi, xi, wi, NULL, NULL, 1, 1, 7, 9, 3, 1, 1);
    for (int i = 54; i < 63; i++) assert_true(isfinite(yi[i]));
  }
  /* hand check: 3x3 box filter of ones on a 3x3 ones image, pad 1: corner 4, edge 6, centre 9 */
  float x[9], w[9], y[9];
  for (int i = 0; i < 9; i++) x[i] = w[i] = 1.0f;
  rv_dwconv2d_f32(y, x, w, NULL, NULL, 1, 1, 3, 3, 3, 1, 1);
  static const double want[] = {4, 6, 4, 6, 9, 6, 4, 6, 4};
  assert_values(y, want, 9, 0, "dwconv box");
}

/* ---- transposed conv ---- */
static void test_deconv(void **state) {
  (void)state;
  int sizes[][2] = {{1, 1}, {2, 3}, {7, 5}, {14, 14}, {50, 48}}; /* last: direct path */
  for (int si = 0; si < 5; si++)
    for (int a = 0; a < 3; a++) {
      int h = sizes[si][0], wd = sizes[si][1], n = 2, cin = 9, cout = 6;
      size_t ny = (size_t)n * cout * 4 * h * wd;
      float *x = kc_rand((size_t)n * cin * h * wd, si), *w = kc_rand((size_t)cin * cout * 4, 7);
      float *b = kc_rand((size_t)cout, 8), *y1 = kc_rand(ny, 1), *y2 = kc_rand(ny, 2);
      rv_act act = a == 0 ? RV_ACT_NONE : a == 1 ? RV_ACT_RELU : RV_ACT_SIGMOID;
      rv_deconv2x2_f32(y1, x, w, a == 2 ? NULL : b, n, cin, h, wd, cout, act);
      rv_deconv2x2_naive_f32(y2, x, w, a == 2 ? NULL : b, n, cin, h, wd, cout, act);
      kc_assert_close(y1, y2, ny, 2e-5, "deconv");
      free(x), free(w), free(b), free(y1), free(y2);
    }
  /* hand check: one input pixel 2, cin 1, cout 1, w = [1 2; 3 4], b = 1 -> [3 5; 7 9] */
  float x = 2.0f, w[4] = {1, 2, 3, 4}, b = 1.0f, y[4];
  rv_deconv2x2_f32(y, &x, w, &b, 1, 1, 1, 1, 1, RV_ACT_NONE);
  static const double want[] = {3, 5, 7, 9};
  assert_values(y, want, 4, 0, "deconv hand");
}

/* ---- normalisation ---- */
static void test_norms(void **state) {
  (void)state;
  int n = 2, c = 19, hw = 301;
  size_t nt = (size_t)n * c * hw;
  float *x = kc_rand(nt, 1), *g = kc_rand((size_t)c, 2), *b = kc_rand((size_t)c, 3);
  float *y1 = malloc(nt * sizeof(float)), *y2 = malloc(nt * sizeof(float));
  assert_non_null(y1);
  assert_non_null(y2);
  /* LayerNorm NCHW fast vs naive; also in place */
  rv_layernorm_nchw_f32(y1, x, g, b, n, c, hw, 1e-6f);
  rv_layernorm_nchw_naive_f32(y2, x, g, b, n, c, hw, 1e-6f);
  kc_assert_close(y1, y2, nt, 2e-6, "layernorm nchw");
  memcpy(y1, x, nt * sizeof(float));
  rv_layernorm_nchw_f32(y1, y1, g, b, n, c, hw, 1e-6f);
  kc_assert_close(y1, y2, nt, 2e-6, "layernorm nchw in place");
  /* LayerNorm rows on the transposed tensor equals LayerNorm NCHW */
  float *xt = malloc(nt * sizeof(float)), *yt = malloc(nt * sizeof(float));
  assert_non_null(xt);
  assert_non_null(yt);
  for (int ni = 0; ni < n; ni++)
    for (int ci = 0; ci < c; ci++)
      for (int j = 0; j < hw; j++)
        xt[((size_t)ni * hw + j) * c + ci] = x[((size_t)ni * c + ci) * hw + j];
  rv_layernorm_rows_f32(yt, xt, g, b, n * hw, c, 1e-6f);
  for (int ni = 0; ni < n; ni++)
    for (int ci = 0; ci < c; ci++)
      for (int j = 0; j < hw; j++)
        y1[((size_t)ni * c + ci) * hw + j] = yt[((size_t)ni * hw + j) * c + ci];
  kc_assert_close(y1, y2, nt, 2e-6, "layernorm rows");
  /* BatchNorm vs the formula in double */
  float *mean = kc_rand((size_t)c, 4), *var = kc_rand((size_t)c, 5);
  for (int i = 0; i < c; i++) var[i] = fabsf(var[i]) + 0.1f;
  rv_batchnorm_f32(y1, x, mean, var, g, b, 1e-5f, n, c, hw);
  for (size_t i = 0; i < nt; i++) {
    int ci = (int)((i / hw) % c);
    y2[i] = (float)(((double)x[i] - mean[ci]) / sqrt((double)var[ci] + 1e-5) * g[ci] + b[ci]);
  }
  kc_assert_close(y1, y2, nt, 2e-6, "batchnorm");
  /* BN fold: conv(x; fold(w), fold(b)) == bn(conv(x; w, b)) */
  rv_arena *ar = rv_arena_create(0);
  int cin = 5, h = 9, wd = 8;
  rv_conv_params p = rv_conv_default_params(3, 1, 1);
  float *cx = kc_rand((size_t)cin * h * wd, 9), *cw = kc_rand((size_t)c * cin * 9, 10);
  float *cb = calloc((size_t)c, sizeof(float)), *cy1 = malloc((size_t)c * h * wd * 4);
  float *cy2 = malloc((size_t)c * h * wd * 4);
  assert_int_equal(rv_conv2d_f32(cy1, cx, cw, NULL, 1, cin, h, wd, c, p, ar), RV_OK);
  rv_batchnorm_f32(cy1, cy1, mean, var, g, b, 1e-5f, 1, c, h * wd);
  rv_bn_fold(cw, cb, c, (size_t)cin * 9, mean, var, g, b, 1e-5f);
  assert_int_equal(rv_conv2d_f32(cy2, cx, cw, cb, 1, cin, h, wd, c, p, ar), RV_OK);
  kc_assert_close(cy2, cy1, (size_t)c * h * wd, 1e-5, "bn fold");
  rv_arena_free(ar);
  free(cx), free(cw), free(cb), free(cy1), free(cy2), free(mean), free(var);
  free(x), free(g), free(b), free(y1), free(y2), free(xt), free(yt);
}

/* ---- vectorisable math (kernels/vmath.h) against double precision on dense grids ---- */
static void test_vmath(void **state) {
  (void)state;
  double ee = 0, ef = 0, eg = 0;
  for (double v = -87.0; v <= 88.3; v += 1.7e-4) { /* exp: relative error */
    float f = (float)v;
    double ref = exp((double)f);
    double d = fabs(rv_vexpf(f) - ref) / ref;
    if (d > ee) ee = d;
  }
  /* erf: absolute error; gelu: relative above 1e-6 (below, float rounding of x / sqrt 2
   * limits e^{-x^2/2} to ~1e-6 relative, i.e. < 1e-12 absolute) */
  for (double v = -10.0; v <= 10.0; v += 2.3e-5) {
    float f = (float)v;
    double d = fabs(rv_verff(f) - erf((double)f));
    if (d > ef) ef = d;
    double g = 0.5 * f * erfc(-(double)f / sqrt(2.0));
    double dg = fabs(rv_vgeluf(f) - g) / (fabs(g) + 1e-6);
    if (dg > eg) eg = dg;
  }
  fprintf(stderr, "vmath: exp rel %.3g, erf abs %.3g, gelu rel(+1e-6) %.3g\n", ee, ef, eg);
  assert_true(ee < 2e-7);
  assert_true(ef < 2e-7);
  assert_true(eg < 5e-7);
  assert_true(rv_vexpf(-1000.0f) < 1e-37f && rv_vexpf(-1000.0f) >= 0.0f);
  /* the bf16 softmax's exp: relative error below bf16's rounding (2^-9) with a margin, over
   * the range it gets (s - max <= 0; to the clamp) */
  double eb = 0, ebf = 0; /* against exp in double, and against libm's expf */
  for (double v = -87.3; v <= 0.0; v += 1.3e-5) {
    float f = (float)v;
    double d = fabs(rv_vexpf_bf16(f) - exp((double)f)) / exp((double)f);
    if (d > eb) eb = d;
    d = fabs((double)rv_vexpf_bf16(f) - (double)expf(f)) / (double)expf(f);
    if (d > ebf) ebf = d;
  }
  fprintf(stderr, "vmath: exp_bf16 rel %.3g, against expf %.3g (bf16 rounding 2^-9 = %.3g)\n",
          eb, ebf, 1.0 / 512);
  assert_true(eb < 1e-4 && ebf < 1e-4);
  assert_true(rv_vexpf_bf16(0.0f) > 0.9999f && rv_vexpf_bf16(0.0f) < 1.0001f);
  assert_true(rv_vexpf_bf16(-1000.0f) < 1.2e-38f && rv_vexpf_bf16(-1000.0f) > 0.0f);
  assert_true(isfinite(rv_vexpf_bf16(1000.0f)));
  assert_true(rv_vgeluf(-30.0f) == 0.0f || fabsf(rv_vgeluf(-30.0f)) < 1e-30f);
  assert_true(rv_vgeluf(30.0f) == 30.0f);
  /* bf16 mode's GELU: relative to |GELU(x)| + 1e-3 |x| (its absolute error is that of
   * erfc, ~1e-7 |x|, where GELU(x) -> 0 for x << 0), far below bf16's 2^-9 */
  double gb = 0, ga = 0;
  for (double v = -12.0; v <= 12.0; v += 1.1e-5) {
    float f = (float)v;
    double g = 0.5 * f * erfc(-(double)f / sqrt(2.0));
    double d = fabs((double)rv_vgeluf_bf16(f) - g);
    if (d > ga) ga = d;
    d /= fabs(g) + 1e-3 * fabs((double)f) + 1e-30;
    if (d > gb) gb = d;
  }
  fprintf(stderr, "vmath: gelu_bf16 rel(|g| + 1e-3|x|) %.3g, abs %.3g\n", gb, ga);
  assert_true(gb < 2e-4 && ga < 3e-5);
  assert_true(rv_vgeluf_bf16(0.0f) == 0.0f);
  assert_true(fabsf(rv_vgeluf_bf16(-30.0f)) < 1e-30f && rv_vgeluf_bf16(30.0f) == 30.0f);
  assert_true(rv_vgeluf_bf16(-1e30f) == 0.0f && rv_vgeluf_bf16(1e30f) == 1e30f);
}

/* ---- activations ---- */
static void test_activations(void **state) {
  (void)state;
  /* torch: F.gelu(tensor([-3,-1,-0.1,0,0.5,2,5], float64)) */
  float g[7] = {-3.0f, -1.0f, -0.1f, 0.0f, 0.5f, 2.0f, 5.0f};
  static const double gw[7] = {-0.0040496941, -0.15865525, -0.046017216, 0, 0.34573123,
                               1.9544997, 4.9999986};
  rv_gelu_f32(g, 7);
  assert_values(g, gw, 7, 2e-6, "gelu");
  size_t n = 100003; /* large enough for the parallel path */
  float *x = kc_rand(n, 42), *y = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
  assert_non_null(y);
  assert_non_null(ref);
  for (size_t i = 0; i < n; i++) x[i] *= 9.0f;
  for (int a = 0; a < 6; a++) {
    memcpy(y, x, n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
      double v = x[i];
      switch (a) {
        case 0: ref[i] = (float)(v > 0 ? v : 0); break;
        case 1: ref[i] = (float)(0.5 * v * (1 + erf(v / sqrt(2.0)))); break;
        case 2: ref[i] = (float)(v / (1 + exp(-v))); break;
        case 3: ref[i] = (float)(1 / (1 + exp(-v))); break;
        case 4: ref[i] = (float)(v > 0 ? v : 0.7 * expm1(v)); break;
        default: ref[i] = (float)v; break;
      }
    }
    switch (a) {
      case 0: rv_relu_f32(y, n); break;
      case 1: rv_gelu_f32(y, n); break;
      case 2: rv_silu_f32(y, n); break;
      case 3: rv_sigmoid_f32(y, n); break;
      case 4: rv_elu_f32(y, n, 0.7f); break;
      default: rv_act_f32(y, n, RV_ACT_NONE); break;
    }
    /* per element: 4 ulp-ish relative, absolute floor 1e-7 */
    for (size_t i = 0; i < n; i++) {
      double tol = 5e-7 * fabs(ref[i]) + 1e-7;
      if (!(fabs((double)y[i] - ref[i]) <= tol)) {
        fprintf(stderr, "act %d x=%.9g got %.9g want %.9g\n", a, x[i], y[i], ref[i]);
        fail();
      }
    }
  }
  /* NaN propagates through relu */
  float nanv = NAN;
  rv_relu_f32(&nanv, 1);
  assert_true(nanv != nanv);
  /* bias + act epilogue */
  float t[6] = {-1, 0, 1, 2, -3, 4}, bb[2] = {0.5f, -2.0f};
  rv_bias_act_f32(t, bb, 1, 2, 3, RV_ACT_RELU);
  static const double tw[6] = {0, 0.5, 1.5, 0, 0, 2};
  assert_values(t, tw, 6, 0, "bias_act");
  free(x), free(y), free(ref);
}

static void test_softmax(void **state) {
  (void)state;
  int rows = 37, cols = 151;
  size_t nt = (size_t)rows * cols;
  float *x = kc_rand(nt, 3), *y = malloc(nt * sizeof(float)), *ref = malloc(nt * sizeof(float));
  assert_non_null(y);
  assert_non_null(ref);
  for (size_t i = 0; i < nt; i++) x[i] *= 20.0f;
  for (int r = 0; r < rows; r++) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < cols; j++) m = fmax(m, x[(size_t)r * cols + j]);
    for (int j = 0; j < cols; j++) s += exp(x[(size_t)r * cols + j] - m);
    for (int j = 0; j < cols; j++)
      ref[(size_t)r * cols + j] = (float)(exp(x[(size_t)r * cols + j] - m) / s);
  }
  rv_softmax_rows_f32(y, x, rows, cols);
  kc_assert_close(y, ref, nt, 1e-6, "softmax rows");
  /* NCHW: n = 1, c = cols, hw = rows, on the transposed data; in place */
  float *xt = malloc(nt * sizeof(float));
  assert_non_null(xt);
  for (int r = 0; r < rows; r++)
    for (int j = 0; j < cols; j++) xt[(size_t)j * rows + r] = x[(size_t)r * cols + j];
  rv_softmax_nchw_f32(xt, xt, 1, cols, rows);
  for (int r = 0; r < rows; r++)
    for (int j = 0; j < cols; j++) y[(size_t)r * cols + j] = xt[(size_t)j * rows + r];
  kc_assert_close(y, ref, nt, 1e-6, "softmax nchw");
  free(x), free(y), free(ref), free(xt);
}

/* ---- resampling and pooling ---- */
static void test_resize_values(void **state) {
  (void)state;
  float y[64];
  /* torch: F.interpolate(arange(1,13).reshape(1,1,3,4), size=(5,6), mode='bilinear') */
  float x34[12];
  for (int i = 0; i < 12; i++) x34[i] = (float)(i + 1);
  static const double b34[] = {1, 1.5, 2.1666667, 2.8333335, 3.5, 4, 2.6000001, 3.1000001,
                               3.7666669, 4.4333334, 5.1000004, 5.6000004, 5, 5.5, 6.1666665,
                               6.8333335, 7.5, 8, 7.4000006, 7.9000006, 8.5666666, 9.2333336,
                               9.9000006, 10.400001, 9, 9.5, 10.166666, 10.833334, 11.5, 12};
  rv_resize_bilinear_f32(y, x34, 1, 3, 4, 5, 6);
  assert_values(y, b34, 30, 2e-7, "bilinear 3x4->5x6");
  /* torch: x7 = (arange(49)**1.5/10).reshape(1,1,7,7): size=(3,2), size=(3,3),
   * scale_factor=0.5 (output 3x3, scale 2 instead of 7/3) */
  float x7[49];
  for (int i = 0; i < 49; i++) x7[i] = (float)(pow((double)i, 1.5) / 10.0);
  static const double b732[] = {1.629941, 3.0326838, 10.496788, 13.068088, 24.032473, 27.363646};
  static const double b733[] = {1.4394463, 2.2813902, 3.3008757, 10.087079, 11.75755,
                                13.514837, 23.491735, 25.67882, 27.933002};
  static const double b7sf[] = {1.0536919, 1.6661839, 2.4308107, 7.74753, 9.0493107,
                                10.419028, 18.184866, 19.905685, 21.678177};
  rv_resize_bilinear_f32(y, x7, 1, 7, 7, 3, 2);
  assert_values(y, b732, 6, 2e-6, "bilinear 7x7->3x2");
  rv_resize_bilinear_f32(y, x7, 1, 7, 7, 3, 3);
  assert_values(y, b733, 9, 2e-6, "bilinear 7x7->3x3");
  rv_resize_bilinear_scale_f32(y, x7, 1, 7, 7, 3, 3, 1.0 / 0.5, 1.0 / 0.5);
  assert_values(y, b7sf, 9, 2e-6, "bilinear 7x7 scale_factor 0.5");
  /* torch: x35 = (arange(15)**2/7).reshape(1,1,3,5), scale_factor=2 -> 6x10 (first 2 rows,
   * last row) */
  float x35[15], y610[60];
  for (int i = 0; i < 15; i++) x35[i] = (float)(i * i) / 7.0f;
  static const double b35r0[] = {0, 0.035714287, 0.10714287, 0.25, 0.46428573, 0.75, 1.1071428,
                                 1.5357143, 2.0357144, 2.2857144, 0.89285713, 1.0178571,
                                 1.2678571, 1.5892857, 1.9821429, 2.4464285, 2.9821429,
                                 3.5892859, 4.2678571, 4.6071429};
  static const double b35r5[] = {14.285714, 15.035714, 16.535715, 18.107143, 19.75, 21.464285,
                                 23.25, 25.107143, 27.035713, 28};
  rv_resize_bilinear_scale_f32(y610, x35, 1, 3, 5, 6, 10, 0.5, 0.5);
  assert_values(y610, b35r0, 20, 2e-6, "bilinear x2 rows 0-1");
  assert_values(y610 + 50, b35r5, 10, 2e-6, "bilinear x2 row 5");
  /* scale <= 0 means in/out */
  float y2[60];
  rv_resize_bilinear_scale_f32(y2, x35, 1, 3, 5, 6, 10, 0, 0);
  kc_assert_close(y2, y610, 60, 0, "bilinear scale default");
  /* torch: F.interpolate(arange(25).reshape(1,1,5,5), size=(7,3), mode='nearest') */
  float x5[25];
  for (int i = 0; i < 25; i++) x5[i] = (float)i;
  static const double n73[] = {0,  1,  3,  0,  1,  3,  5,  6,  8,  10, 11,
                               13, 10, 11, 13, 15, 16, 18, 20, 21, 23};
  rv_resize_nearest_f32(y, x5, 1, 5, 5, 7, 3);
  assert_values(y, n73, 21, 0, "nearest 5x5->7x3");
  /* torch: F.adaptive_avg_pool2d(x7, 3): bins [0,3) [2,5) [4,7) */
  static const double a73[] = {2.7383783, 3.5732286, 4.5270095, 10.587267, 12.014187,
                               13.503803, 21.808861, 23.628012, 25.496267};
  rv_adaptive_avgpool_f32(y, x7, 1, 7, 7, 3, 3);
  assert_values(y, a73, 9, 2e-6, "adaptive 7->3");
  /* torch: F.adaptive_avg_pool2d((arange(169)**1.5/10).reshape(1,1,13,13), (6,4)):
   * rows [0,3) [2,5) [4,7) [6,9) [8,11) [10,13), cols [0,4) [3,7) [6,10) [9,13) */
  float x13[169];
  for (int i = 0; i < 169; i++) x13[i] = (float)(pow((double)i, 1.5) / 10.0);
  static const double a136[] = {6.7298102, 8.3871613, 10.253623, 12.292637, 26.449921,
                                29.341764, 32.33847,  35.436279, 54.754272, 58.453419,
                                62.234283, 66.095093, 89.408386, 93.764183, 98.189369,
                                102.68288, 129.38911, 134.31369, 139.2997,  144.34634,
                                174.05634, 179.49005, 184.97945, 190.52399};
  rv_adaptive_avgpool_f32(y, x13, 1, 13, 13, 6, 4);
  assert_values(y, a136, 24, 2e-6, "adaptive 13->(6,4)");
  /* torch: F.adaptive_avg_pool2d(x13, 6), first row and last value */
  static const double a1366[] = {6.4690137, 7.5206752, 8.6788158, 9.9242535, 11.247697, 12.64294};
  rv_adaptive_avgpool_f32(y, x13, 1, 13, 13, 6, 6);
  assert_values(y, a1366, 6, 2e-6, "adaptive 13->6");
  assert_true(fabs(y[35] - 191.45161) < 2e-6 * 191.45161);
  /* torch: xm = tensor([((i*37)%23)-11 for i in range(35)]).reshape(1,1,5,7); F.max_pool2d */
  float xm[35];
  for (int i = 0; i < 35; i++) xm[i] = (float)((i * 37) % 23 - 11);
  static const double m321[] = {9, 9, 8, 10, 9, 9, 11, 10, 7, 9, 9, 8};
  static const double m12[] = {-11, -6, -1, 4, 1, 6, 11, -7, -10, -5, 0, 5};
  static const double m22[] = {9, 8, 5, 7, 6, 11};
  rv_maxpool2d_f32(y, xm, 1, 5, 7, 3, 2, 1);
  assert_values(y, m321, 12, 0, "maxpool k3s2p1");
  rv_maxpool2d_f32(y, xm, 1, 5, 7, 1, 2, 0);
  assert_values(y, m12, 12, 0, "maxpool k1s2");
  rv_maxpool2d_f32(y, xm, 1, 5, 7, 2, 2, 0);
  assert_values(y, m22, 6, 0, "maxpool k2s2");
}

static void test_resize_sweep(void **state) {
  (void)state;
  int hs[] = {1, 2, 5, 7, 13, 31};
  for (int a = 0; a < 6; a++)
    for (int b = 0; b < 6; b++) {
      int ih = hs[a], iw = hs[(a + 1) % 6], oh = hs[b], ow = hs[(b + 4) % 6], planes = 3;
      float *x = kc_rand((size_t)planes * ih * iw, 17), *y1 = kc_rand((size_t)planes * oh * ow, 1);
      float *y2 = kc_rand((size_t)planes * oh * ow, 2);
      rv_resize_bilinear_f32(y1, x, planes, ih, iw, oh, ow);
      rv_resize_bilinear_naive_f32(y2, x, planes, ih, iw, oh, ow);
      kc_assert_close(y1, y2, (size_t)planes * oh * ow, 1e-6, "bilinear sweep");
      free(x), free(y1), free(y2);
    }
  /* several row blocks (32 rows) and column chunks (2048 columns), up and down */
  {
    int dims[2][4] = {{9, 1000, 70, 2100}, {75, 2300, 33, 2051}};
    for (int t = 0; t < 2; t++) {
      int ih = dims[t][0], iw = dims[t][1], oh = dims[t][2], ow = dims[t][3];
      float *xs = kc_rand((size_t)2 * ih * iw, 23), *ys1 = malloc((size_t)2 * oh * ow * 4);
      float *ys2 = malloc((size_t)2 * oh * ow * 4);
      assert_non_null(ys1);
      assert_non_null(ys2);
      rv_resize_bilinear_f32(ys1, xs, 2, ih, iw, oh, ow);
      rv_resize_bilinear_naive_f32(ys2, xs, 2, ih, iw, oh, ow);
      kc_assert_close(ys1, ys2, (size_t)2 * oh * ow, 1e-6, "bilinear chunks");
      free(xs), free(ys1), free(ys2);
    }
  }
  /* nearest over several column chunks, and the exact 2x case, against the formula */
  {
    int dims[2][4] = {{3, 1000, 5, 2500}, {7, 1100, 14, 2200}};
    for (int t = 0; t < 2; t++) {
      int ih = dims[t][0], iw = dims[t][1], oh = dims[t][2], ow = dims[t][3];
      float *xs = kc_rand((size_t)ih * iw, 29), *ys = malloc((size_t)oh * ow * 4);
      assert_non_null(ys);
      rv_resize_nearest_f32(ys, xs, 1, ih, iw, oh, ow);
      for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++) {
          int sy = (int)floorf((float)oy * ((float)ih / (float)oh));
          int sx = (int)floorf((float)ox * ((float)iw / (float)ow));
          sy = sy < ih - 1 ? sy : ih - 1;
          sx = sx < iw - 1 ? sx : iw - 1;
          assert_true(ys[(size_t)oy * ow + ox] == xs[(size_t)sy * iw + sx]);
        }
      free(xs), free(ys);
    }
  }
  /* the _add variants: y + resize(x) with the same bits as resizing into a buffer, then
   * adding (the UperNet / Semantic FPN / FPN top-down sums), up, down, over chunks and at
   * equal sizes */
  {
    int dims[5][4] = {{5, 7, 13, 31}, {31, 13, 7, 5}, {9, 1000, 70, 2100}, {16, 64, 128, 512},
                      {300, 301, 300, 301}}; /* the last: equal sizes, a plain add */
    for (int t = 0; t < 5; t++) {
      int ih = dims[t][0], iw = dims[t][1], oh = dims[t][2], ow = dims[t][3];
      size_t ny = (size_t)2 * oh * ow;
      float *xs = kc_rand((size_t)2 * ih * iw, 31), *ya = kc_rand(ny, 32), *yb = kc_rand(ny, 32);
      float *r = malloc(ny * 4);
      assert_non_null(r);
      for (int kind = 0; kind < 2; kind++) {
        if (kind) {
          rv_resize_nearest_f32(r, xs, 2, ih, iw, oh, ow);
          rv_resize_nearest_add_f32(ya, xs, 2, ih, iw, oh, ow);
        } else {
          rv_resize_bilinear_f32(r, xs, 2, ih, iw, oh, ow);
          rv_resize_bilinear_add_f32(ya, xs, 2, ih, iw, oh, ow);
        }
        for (size_t j = 0; j < ny; j++) yb[j] += r[j];
        assert_memory_equal(ya, yb, ny * sizeof(float));
      }
      free(xs), free(ya), free(yb), free(r);
    }
  }
  /* large enough for the parallel path; identity resize copies */
  int planes = 4, h = 97, w = 131;
  float *x = kc_rand((size_t)planes * h * w, 5), *y = malloc((size_t)planes * h * w * 4);
  assert_non_null(y);
  rv_resize_bilinear_f32(y, x, planes, h, w, h, w);
  kc_assert_close(y, x, (size_t)planes * h * w, 0, "bilinear identity");
  rv_resize_nearest_f32(y, x, planes, h, w, h, w);
  kc_assert_close(y, x, (size_t)planes * h * w, 0, "nearest identity");
  free(x), free(y);
}

/* rv_blas_serial_begin / end (kernels/gemm.c): where libgomp (OpenBLAS's OpenMP runtime) is
 * loaded and is not this build's runtime (clang: libomp), libgomp's thread count of the
 * calling thread is 1 between them and restored after; where it is this build's runtime
 * (gcc) or not loaded, they change nothing. */
static void test_blas_serial(void **state) {
  (void)state;
  rv_blas_serial g;
  void *h = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!h) {
    rv_blas_serial_begin(&g);
    assert_null(g.set);
    rv_blas_serial_end(&g);
    printf("rv_blas_serial: libgomp not loaded, no change\n");
    return;
  }
  void (*set)(int) = (void (*)(int))(uintptr_t)dlsym(h, "omp_set_num_threads");
  int (*get)(void) = (int (*)(void))(uintptr_t)dlsym(h, "omp_get_max_threads");
  assert_non_null(set);
  assert_non_null(get);
  const int before = get();
  set(3);
  rv_blas_serial_begin(&g);
  const int one_runtime = set == omp_set_num_threads;
  if (one_runtime) {
    assert_null(g.set);
    assert_int_equal(get(), 3);
  } else {
    assert_non_null(g.set);
    assert_int_equal(get(), 1);
  }
  rv_blas_serial_end(&g);
  assert_int_equal(get(), 3);
  set(before);
  dlclose(h);
  printf("rv_blas_serial: %s\n", one_runtime ? "libgomp is this build's runtime: no change"
                                              : "libgomp's thread count 1 inside, restored");
}

int main(void) {
  /* upgrade OpenBLAS from its generic fallback kernels where the CPU allows (rv_blas_init) */
  const char *core = rv_blas_init();
  assert_non_null(core);
  fprintf(stderr, "OpenBLAS core: %s\n", core);
  assert_string_equal(rv_blas_init(), core); /* idempotent: OPENBLAS_CORETYPE is now set */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm),          cmocka_unit_test(test_pointwise),
      cmocka_unit_test(test_gemm_blocks),
      cmocka_unit_test(test_blas_serial),
      cmocka_unit_test(test_conv_sweep),
      cmocka_unit_test(test_conv_values),   cmocka_unit_test(test_dwconv_sweep),
      cmocka_unit_test(test_deconv),        cmocka_unit_test(test_norms),
      cmocka_unit_test(test_vmath),         cmocka_unit_test(test_activations),
      cmocka_unit_test(test_softmax),       cmocka_unit_test(test_resize_values),
      cmocka_unit_test(test_resize_sweep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
