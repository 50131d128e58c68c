/* Kernels against their naive twins (kernels/ref/) over sweeps of odd shapes,
 * and the AVX-512 micro-kernels against a plain micro-GEMM (tests/kernel_check.h).
 * Tolerances: element-wise kernels (resize nearest, its _add) exact; the _add forms of
 * bilinear |d| <= 1e-6 (relative to max(1, max|ref|)); reductions in float (layernorm,
 * softmax) against double: |d_i| <= 1e-5 + 1e-5 |ref_i|; GEMM-based kernels (pointwise,
 * conv of an upsampled map, micro-kernels) against double accumulation:
 * |d| <= 2e-5 * max(1, max|ref|). */
#include "test_util.h"
#include "kernels/ops.h"
#include "kernel_check.h"

static void test_layernorm_rows(void **state) {
  (void)state;
  for (int a = 0; a < KC_NSIZES; a += 2)
    for (int b = 0; b < KC_NSIZES; b++) {
      int rows = kc_sizes[a], cols = kc_sizes[b] + (b > 6 ? 64 : 0);
      size_t n = (size_t)rows * cols;
      float *x = kc_rand(n, 1 + a * 31 + b), *g = kc_rand(cols, 7), *bb = kc_rand(cols, 8);
      for (size_t i = 0; i < n; i++) x[i] = 3.0f * x[i] + 2.0f; /* a mean far from 0 */
      float *y = kc_rand(n, 2), *ref = kc_rand(n, 3);
      rv_layernorm_rows_f32(y, x, g, bb, rows, cols, 1e-6f);
      rv_layernorm_rows_naive_f32(ref, x, g, bb, rows, cols, 1e-6f);
      kc_assert_near(y, ref, n, 1e-5, 1e-5, "layernorm_rows");
      free(x), free(g), free(bb), free(y), free(ref);
    }
}

static void test_softmax(void **state) {
  (void)state;
  for (int a = 0; a < KC_NSIZES; a += 2)
    for (int b = 0; b < KC_NSIZES; b++) {
      int rows = kc_sizes[a], cols = kc_sizes[b] + (b > 7 ? 200 : 0);
      size_t n = (size_t)rows * cols;
      float *x = kc_rand(n, 11 + a * 13 + b);
      for (size_t i = 0; i < n; i++) x[i] *= 30.0f; /* large logits: the max must be taken */
      float *y = kc_rand(n, 4), *ref = kc_rand(n, 5);
      rv_softmax_rows_f32(y, x, rows, cols);
      rv_softmax_rows_naive_f32(ref, x, rows, cols);
      kc_assert_near(y, ref, n, 1e-5, 1e-6, "softmax_rows");
      /* NCHW: n = 2 images of c = cols channels over hw = rows pixels, in place */
      float *x2 = kc_rand(2 * n, 21 + b), *ref2 = kc_rand(2 * n, 6);
      for (size_t i = 0; i < 2 * n; i++) x2[i] *= 30.0f;
      rv_softmax_nchw_naive_f32(ref2, x2, 2, cols, rows);
      rv_softmax_nchw_f32(x2, x2, 2, cols, rows);
      kc_assert_near(x2, ref2, 2 * n, 1e-5, 1e-6, "softmax_nchw");
      free(x), free(y), free(ref), free(x2), free(ref2);
    }
}

static void test_resize(void **state) {
  (void)state;
  static const int s[] = {1, 2, 3, 5, 7, 13, 32};
  const int ns = (int)(sizeof s / sizeof s[0]);
  for (int a = 0; a < ns; a++)
    for (int b = 0; b < ns; b++)
      for (int c = 0; c < ns; c += 2) {
        int planes = 3, ih = s[a], iw = s[(a + 2) % ns], oh = s[b], ow = s[c];
        size_t ni = (size_t)planes * ih * iw, no = (size_t)planes * oh * ow;
        float *x = kc_rand(ni, 31 + a * 7 + b * 3 + c), *y0 = kc_rand(no, 32 + b);
        float *y = kc_rand(no, 1), *ref = kc_rand(no, 2);
        rv_resize_nearest_f32(y, x, planes, ih, iw, oh, ow);
        rv_resize_nearest_naive_f32(ref, x, planes, ih, iw, oh, ow);
        kc_assert_near(y, ref, no, 0, 0, "resize_nearest");
        /* _add forms: y0 + resize(x) */
        memcpy(y, y0, no * sizeof(float));
        rv_resize_nearest_add_f32(y, x, planes, ih, iw, oh, ow);
        for (size_t i = 0; i < no; i++) ref[i] += y0[i];
        kc_assert_near(y, ref, no, 0, 0, "resize_nearest_add");
        memcpy(y, y0, no * sizeof(float));
        rv_resize_bilinear_add_f32(y, x, planes, ih, iw, oh, ow);
        rv_resize_bilinear_naive_f32(ref, x, planes, ih, iw, oh, ow);
        for (size_t i = 0; i < no; i++) ref[i] += y0[i];
        kc_assert_close(y, ref, no, 1e-6, "resize_bilinear_add");
        free(x), free(y0), free(y), free(ref);
      }
}

static void test_pointwise(void **state) {
  (void)state;
  rv_arena *scratch = rv_arena_create(0);
  static const int couts[] = {1, 7, 33, 64}, cins[] = {1, 5, 17, 64};
  static const size_t ns[] = {1, 17, 49, 4096 + 47}; /* the last takes the kernel path */
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++)
      for (int c = 0; c < 4; c++) {
        int cout = couts[a], cin = cins[b];
        size_t n = ns[c];
        float *w = kc_rand((size_t)cout * cin, 41 + a), *bias = kc_rand(cout, 42 + b);
        float *x = kc_rand((size_t)cin * n, 43 + c), *y = kc_rand((size_t)cout * n, 1),
              *ref = kc_rand((size_t)cout * n, 2);
        assert_int_equal(rv_pointwise_f32(y, w, c % 2 ? bias : NULL, x, cout, cin, n, scratch), RV_OK);
        rv_pointwise_naive_f32(ref, w, c % 2 ? bias : NULL, x, cout, cin, n);
        kc_assert_close(y, ref, (size_t)cout * n, 2e-5, "pointwise");
        free(w), free(bias), free(x), free(y), free(ref);
      }
  rv_arena_free(scratch);
}

static void test_upconv(void **state) {
  (void)state;
  rv_arena *scratch = rv_arena_create(0);
  static const int cins[] = {1, 3, 32}, couts[] = {1, 5, 33};
  static const int in_hw[][2] = {{1, 1}, {2, 3}, {5, 4}, {7, 13}};
  static const int up[][2] = {{2, 2}, {4, 3}, {11, 9}};
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 4; b++)
      for (int c = 0; c < 3; c++) {
        int cin = cins[a], cout = couts[(a + c) % 3], ih = in_hw[b][0], iw = in_hw[b][1];
        int oh = ih * up[c][0] - (c == 2), ow = iw * up[c][1] + (c == 1);
        size_t no = (size_t)2 * cout * oh * ow;
        float *x = kc_rand((size_t)2 * cin * ih * iw, 51 + a * 5 + b), *w = kc_rand((size_t)cout * cin * 9, 52 + c);
        float *bias = kc_rand(cout, 53), *y0 = kc_rand(no, 54);
        float *y = kc_rand(no, 1), *ref = kc_rand(no, 2);
        int acc = (a + b) % 2;
        rv_act act = c % 2 ? RV_ACT_RELU : RV_ACT_NONE;
        memcpy(y, y0, no * sizeof(float));
        memcpy(ref, y0, no * sizeof(float));
        assert_int_equal(rv_conv3x3_upsampled_f32(y, x, w, bias, 2, cin, ih, iw, cout, oh, ow, act, acc, scratch),
                         RV_OK);
        assert_int_equal(rv_conv3x3_upsampled_naive_f32(ref, x, w, bias, 2, cin, ih, iw, cout, oh, ow, act, acc,
                                                        scratch),
                         RV_OK);
        kc_assert_close(y, ref, no, 2e-5, "conv3x3_upsampled");
        free(x), free(w), free(bias), free(y0), free(y), free(ref);
      }
  rv_arena_free(scratch);
}

/* The micro-kernels of kernels/ukernel.c on their packed operands against a plain micro-GEMM. */
static void test_ukernels(void **state) {
  (void)state;
  if (!rv_ukernel_supported()) {
    printf("rv_ukernel_*: not supported on this CPU (AVX-512F), not tested here\n");
    skip();
  }
  static const int ks[] = {1, 3, 17, 64, 257};
  for (int a = 0; a < 5; a++) {
    const int k = ks[a];
    /* rv_ukernel_f32: c[r][t] = bias[r] + sum_i u[i][r] v[i][t], r < UK_MR, t < nt */
    for (int nt = 1; nt <= UK_NT; nt += 7) {
      const size_t ldv = (size_t)nt + 3, ldc = (size_t)nt + 1;
      float *u = kc_rand((size_t)k * UK_MR, 61 + a), *v = kc_rand((size_t)k * ldv, 62 + nt);
      float *bias = kc_rand(UK_MR, 63), *c = kc_rand(UK_MR * ldc, 1), *ref = kc_rand(UK_MR * ldc, 2);
      for (int withb = 0; withb < 2; withb++) {
        for (int r = 0; r < UK_MR; r++)
          for (int t = 0; t < nt; t++) {
            double s = withb ? bias[r] : 0.0;
            for (int i = 0; i < k; i++) s += (double)u[(size_t)i * UK_MR + r] * v[(size_t)i * ldv + t];
            ref[r * ldc + t] = (float)s;
          }
        rv_ukernel_f32(c, ldc, u, v, ldv, k, nt, withb ? bias : NULL);
        for (int r = 0; r < UK_MR; r++) kc_assert_close(c + r * ldc, ref + r * ldc, (size_t)nt, 2e-5, "ukernel");
      }
      free(u), free(v), free(bias), free(c), free(ref);
    }
    /* rv_ukernel_rows_f32: c[r][j] = sum_i a[r][i] b[i][j], r < UK_RR, j < UK_RC */
    const size_t lda = (size_t)k + 2, ldc = UK_RC + 3;
    float *A = kc_rand(UK_RR * lda, 71 + a), *B = kc_rand((size_t)k * UK_RC, 72 + a);
    float *c = kc_rand(UK_RR * ldc, 1), *ref = kc_rand(UK_RR * ldc, 2);
    for (int r = 0; r < UK_RR; r++)
      for (int j = 0; j < UK_RC; j++) {
        double s = 0;
        for (int i = 0; i < k; i++) s += (double)A[r * lda + i] * B[(size_t)i * UK_RC + j];
        ref[r * ldc + j] = (float)s;
      }
    rv_ukernel_rows_f32(c, ldc, A, lda, B, k);
    for (int r = 0; r < UK_RR; r++) kc_assert_close(c + r * ldc, ref + r * ldc, UK_RC, 2e-5, "ukernel_rows");
    free(A), free(B), free(c), free(ref);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layernorm_rows), cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_resize),         cmocka_unit_test(test_pointwise),
      cmocka_unit_test(test_upconv),         cmocka_unit_test(test_ukernels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
