/* The dense 3x3 convs on the GEMM kernels (kernels/conv3x3.c) and the direct kernel
 * (kernels/conv3x3_direct.c, test_conv3x3_direct below) over odd shapes: cin 3, 5, 32,
 * 67; maps odd and even, smaller and larger than one panel (up to 4 x 48 pixels) and with
 * several wide panels; stride 1 and 2; cout not a multiple of 8; with and without GELU and
 * bias; 1, 2 and 3 threads. Tolerances, all relative to S = max|ref| over the output:
 *  - rv_conv3x3_f32 against rv_conv2d_naive_f32 (double sums): |d| <= 1e-5 S (float32
 *    sums over K = 9 cin <= 603 terms in order, measured max 1.2e-6 S here);
 *  - rv_conv3x3_bf16 against rv_conv3x3_bf16_naive (the same bf16 roundings, double sums):
 *    |d| <= 1e-5 S, and the sweep asserts that the unrounded float32 result is outside this
 *    tolerance (the test sees the rounding);
 *  - rv_conv3x3_bf16 against the float32 reference: |d| <= 2e-2 S (two roundings of 2^-9
 *    per product; measured max below 6e-3 S) and not bit-equal.
 * On a CPU without AVX-512F / AVX512_BF16 the parts print a message and are skipped. */
#include "test_util.h"
#include "kernel_check.h"

#include <omp.h>

typedef struct {
  int cin, h, w, cout, stride;
} shape;

static const shape shapes[] = {
    {3, 1, 1, 1, 1},    {3, 2, 2, 5, 2},    {3, 7, 9, 13, 2},   {3, 61, 64, 32, 1},
    {3, 66, 97, 17, 2}, {5, 5, 4, 8, 1},    {5, 13, 50, 9, 1},  {5, 29, 31, 3, 2},
    {32, 8, 8, 32, 1},  {32, 15, 17, 20, 2}, {32, 33, 64, 13, 1}, {32, 64, 61, 40, 2},
    {67, 9, 9, 67, 2},  {67, 16, 11, 8, 1}, {67, 31, 30, 24, 2}, {32, 70, 70, 16, 1},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* The float32 convs of this file: y from x, w ([cout][cin][3][3]) and b. */
typedef rv_status (*conv_fn)(float *y, const float *x, const float *w, const float *b, shape S,
                             rv_act act, rv_arena *scratch);

static rv_status run_gather(float *y, const float *x, const float *w, const float *b, shape S,
                            rv_act act, rv_arena *scratch) {
  float *up = malloc(sizeof(float) * rv_conv3x3_packed_floats(S.cout, S.cin));
  assert_non_null(up);
  rv_conv3x3_pack_f32(up, w, S.cout, S.cin);
  rv_status st = rv_conv3x3_f32(y, x, up, b, S.cin, S.h, S.w, S.cout, S.stride, act, scratch);
  free(up);
  return st;
}

static rv_status run_direct(float *y, const float *x, const float *w, const float *b, shape S,
                            rv_act act, rv_arena *scratch) {
  return rv_conv3x3_direct_f32(y, x, w, b, S.cin, S.h, S.w, S.cout, S.stride, act, scratch);
}

/* fn over the shapes, with and without bias, GELU on every other one, 1-3 threads, every
 * output written (y filled with NaN first), the scratch arena given back: |d| <= 1e-5 S
 * against rv_conv2d_naive_f32; returns the largest |d| / S */
static double sweep_f32(const char *name, conv_fn fn, const shape *list, int count, int seed,
                        rv_arena *scratch) {
  const int threads0 = omp_get_max_threads();
  double worst = 0;
  for (int s = 0; s < count; s++) {
    const shape S = list[s];
    const int oh = rv_conv_out_size(S.h, 3, S.stride, 1, 1);
    const int ow = rv_conv_out_size(S.w, 3, S.stride, 1, 1);
    const size_t ny = (size_t)S.cout * oh * ow;
    float *x = kc_rand((size_t)S.cin * S.h * S.w, seed + s);
    float *w = kc_rand((size_t)S.cout * S.cin * 9, seed + 30 + s);
    float *b = kc_rand((size_t)S.cout, seed + 60 + s);
    float *y = kc_rand(ny, 1), *ref = kc_rand(ny, 2);
    for (int v = 0; v < 2; v++) {
      const rv_act act = (s + v) % 2 ? RV_ACT_GELU : RV_ACT_NONE;
      const float *bias = v ? b : NULL;
      rv_conv_params p = rv_conv_default_params(3, S.stride, 1);
      p.act = act;
      rv_conv2d_naive_f32(ref, x, w, bias, 1, S.cin, S.h, S.w, S.cout, p);
      const double scale = max_abs(ref, ny);
      for (int th = 1; th <= 3; th++) {
        omp_set_num_threads(th);
        memset(y, 0xff, sizeof(float) * ny); /* NaN: every output must be written */
        assert_int_equal(fn(y, x, w, bias, S, act, scratch), RV_OK);
        assert_int_equal(rv_arena_used(scratch), 0);
        char what[128];
        snprintf(what, sizeof what, "%s cin %d %dx%d cout %d s%d act %d bias %d th %d", name,
                 S.cin, S.h, S.w, S.cout, S.stride, (int)act, v, th);
        kc_assert_near(y, ref, ny, 0.0, 1e-5 * scale, what);
        const double d = max_abs_diff(y, ref, ny) / scale;
        worst = d > worst ? d : worst;
      }
    }
    omp_set_num_threads(threads0);
    free(x), free(w), free(b), free(y), free(ref);
  }
  return worst;
}

static void test_conv3x3_f32(void **state) {
  (void)state;
  if (!rv_conv3x3_f32_supported()) {
    printf("rv_conv3x3_f32: no AVX-512F on this CPU, not tested here\n");
    skip();
  }
  rv_arena *scratch = rv_arena_create(0);
  const double worst = sweep_f32("conv3x3_f32", run_gather, shapes, NSHAPES, 10, scratch);
  printf("rv_conv3x3_f32: max |d| / max|y| against the naive conv: %.3g\n", worst);
  /* a stride the kernel does not take */
  float one = 1.0f, out[4];
  float upk[8 * 9] = {0};
  assert_int_equal(rv_conv3x3_f32(out, &one, upk, NULL, 1, 1, 1, 1, 3, RV_ACT_NONE, scratch),
                   RV_ERR_ARG);
  rv_arena_free(scratch);
}

/* rv_conv3x3_direct_f32 (kernels/conv3x3_direct.c) against the naive conv: the shapes above
 * and wider rows, so that each of the kernel's variants runs (2 and 3 vectors a cell, cells
 * inside the row with unmasked loads and cells at its borders, strides 1 and 2, cout not a
 * multiple of 8, 1x1 maps); |d| <= 1e-5 S as rv_conv3x3_f32 (the same sums over 9 cin terms
 * in order) */
static const shape wide[] = {
    {5, 13, 200, 9, 1}, {3, 10, 300, 8, 2}, {32, 9, 96, 16, 1}, {4, 7, 192, 16, 2},
    {32, 6, 130, 33, 1}, {48, 5, 101, 24, 2}, {2, 1, 1, 3, 2},
};

static void test_conv3x3_direct(void **state) {
  (void)state;
  if (!rv_conv3x3_direct_supported()) {
    printf("rv_conv3x3_direct_f32: no AVX-512F on this CPU, not tested here\n");
    skip();
  }
  rv_arena *scratch = rv_arena_create(0);
  double worst = sweep_f32("conv3x3_direct", run_direct, shapes, NSHAPES, 110, scratch);
  const double w2 = sweep_f32("conv3x3_direct", run_direct, wide,
                              (int)(sizeof wide / sizeof wide[0]), 210, scratch);
  worst = w2 > worst ? w2 : worst;
  printf("rv_conv3x3_direct_f32: max |d| / max|y| against the naive conv: %.3g\n", worst);
  float one = 1.0f, out[4], w1[9] = {0};
  assert_int_equal(rv_conv3x3_direct_f32(out, &one, w1, NULL, 1, 1, 1, 1, 3, RV_ACT_NONE, scratch),
                   RV_ERR_ARG);
  rv_arena_free(scratch);
}

static void test_conv3x3_bf16(void **state) {
  (void)state;
  if (!rv_bf16_supported()) {
    printf("rv_conv3x3_bf16: no AVX512_BF16 on this CPU, not tested here\n");
    skip();
  }
  rv_arena *scratch = rv_arena_create(0);
  const int threads0 = omp_get_max_threads();
  double worst_twin = 0, worst_f32 = 0;
  int discriminated = 0;
  for (int s = 0; s < NSHAPES; s++) {
    const shape S = shapes[s];
    const int oh = rv_conv_out_size(S.h, 3, S.stride, 1, 1);
    const int ow = rv_conv_out_size(S.w, 3, S.stride, 1, 1);
    const size_t ny = (size_t)S.cout * oh * ow;
    float *x = kc_rand((size_t)S.cin * S.h * S.w, 110 + s);
    float *w = kc_rand((size_t)S.cout * S.cin * 9, 140 + s);
    float *b = kc_rand((size_t)S.cout, 170 + s);
    float *y = kc_rand(ny, 1), *ref = kc_rand(ny, 2), *f = kc_rand(ny, 3);
    uint32_t *wp = malloc(sizeof(uint32_t) * rv_bf16_packed_words(S.cout, 9 * S.cin));
    assert_non_null(wp);
    rv_bf16_pack_weights(wp, w, S.cout, 9 * S.cin);
    for (int v = 0; v < 2; v++) {
      const rv_act act = (s + v) % 2 ? RV_ACT_GELU : RV_ACT_NONE;
      const float *bias = v ? b : NULL;
      rv_conv3x3_bf16_naive(ref, x, w, bias, S.cin, S.h, S.w, S.cout, S.stride, act);
      rv_conv_params p = rv_conv_default_params(3, S.stride, 1);
      p.act = act;
      rv_conv2d_naive_f32(f, x, w, bias, 1, S.cin, S.h, S.w, S.cout, p);
      const double scale = max_abs(ref, ny);
      for (int th = 1; th <= 3; th++) {
        omp_set_num_threads(th);
        memset(y, 0xff, sizeof(float) * ny);
        assert_int_equal(rv_conv3x3_bf16(y, x, wp, bias, S.cin, S.h, S.w, S.cout, S.stride,
                                         act, scratch),
                         RV_OK);
        assert_int_equal(rv_arena_used(scratch), 0);
        char what[128];
        snprintf(what, sizeof what, "conv3x3_bf16 cin %d %dx%d cout %d s%d act %d bias %d th %d",
                 S.cin, S.h, S.w, S.cout, S.stride, (int)act, v, th);
        kc_assert_near(y, ref, ny, 0.0, 1e-5 * scale, what);
        double d = max_abs_diff(y, ref, ny) / scale;
        worst_twin = d > worst_twin ? d : worst_twin;
        /* against float32: a loose bound, and not the float32 result */
        const double fs = max_abs(f, ny);
        snprintf(what, sizeof what, "conv3x3_bf16 vs f32 cin %d %dx%d cout %d s%d", S.cin, S.h,
                 S.w, S.cout, S.stride);
        kc_assert_near(y, f, ny, 0.0, 2e-2 * fs, what);
        d = max_abs_diff(y, f, ny) / fs;
        worst_f32 = d > worst_f32 ? d : worst_f32;
        if (ny >= 64) assert_true(memcmp(y, f, sizeof(float) * ny) != 0);
        size_t wi;
        if (ny >= 64 && !kc_within(f, ref, ny, 0.0, 1e-5 * scale, &wi)) discriminated++;
      }
    }
    omp_set_num_threads(threads0);
    free(x), free(w), free(b), free(y), free(ref), free(f), free(wp);
  }
  printf("rv_conv3x3_bf16: max |d| / max|y|: %.3g against the bf16 twin, %.3g against "
         "float32\n",
         worst_twin, worst_f32);
  assert_true(discriminated > 0);
  rv_arena_free(scratch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv3x3_f32),
      cmocka_unit_test(test_conv3x3_direct),
      cmocka_unit_test(test_conv3x3_bf16),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
