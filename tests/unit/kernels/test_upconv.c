/* kernels/upconv.c: rv_conv3x3_upsampled_f32 against its definition, rv_resize_bilinear_naive_f32
 * then a 3x3 pad-1 conv summed in double, over upsamplings by 2 and 4, sizes that do not
 * divide (13x21 from 3x5), a 1x1 source, the same size, downsampling, 1x1 and 1-wide
 * outputs, batches, chunks of output channels with a short last one (G planes over 12 MB),
 * both GEMM paths (coarse maps under and over 4096 pixels), with and without bias,
 * accumulate, ReLU.
 * Tolerance: |y - ref| <= 1e-6 S, S = the plane's largest |b| + sum |w||up(x)| (the scale
 * of the sum: the rounding of a sum of products is relative to it). Measured worst
 * |y - ref| / S is printed (1-2e-7 here). */
#include "test_util.h"
#include "kernels/ops.h"

static double worst;

static void upconv_case(rv_arena *ar, int n, int cin, int ih, int iw, int cout, int oh, int ow,
                        int with_bias, int accumulate, rv_act act, uint64_t seed) {
  const size_t ihw = (size_t)ih * iw, ohw = (size_t)oh * ow;
  float *x = malloc(sizeof(float) * n * cin * ihw), *w = malloc(sizeof(float) * cout * cin * 9);
  float *b = malloc(sizeof(float) * cout), *y = malloc(sizeof(float) * n * cout * ohw);
  float *y0 = malloc(sizeof(float) * n * cout * ohw), *up = malloc(sizeof(float) * cin * ohw);
  assert_true(x && w && b && y && y0 && up);
  fill_rand(x, (size_t)n * cin * ihw, seed);
  fill_rand(w, (size_t)cout * cin * 9, seed + 1);
  fill_rand(b, (size_t)cout, seed + 2);
  fill_rand(y0, (size_t)n * cout * ohw, seed + 3);
  memcpy(y, y0, sizeof(float) * n * cout * ohw);
  assert_int_equal(rv_conv3x3_upsampled_f32(y, x, w, with_bias ? b : NULL, n, cin, ih, iw, cout,
                                            oh, ow, act, accumulate, ar),
                   RV_OK);
  for (int bi = 0; bi < n; bi++) {
    rv_resize_bilinear_naive_f32(up, x + (size_t)bi * cin * ihw, cin, ih, iw, oh, ow);
    for (int co = 0; co < cout; co++) {
      double scale = 0, err = 0;
      const size_t plane = ((size_t)bi * cout + co) * ohw;
      for (int Y = 0; Y < oh; Y++)
        for (int X = 0; X < ow; X++) {
          double s = with_bias ? b[co] : 0, a = with_bias ? fabs(b[co]) : 0;
          for (int ci = 0; ci < cin; ci++)
            for (int ky = 0; ky < 3; ky++)
              for (int kx = 0; kx < 3; kx++) {
                const int p = Y + ky - 1, q = X + kx - 1;
                if (p < 0 || p >= oh || q < 0 || q >= ow) continue;
                const double wv = w[((size_t)co * cin + ci) * 9 + ky * 3 + kx];
                const double u = up[(size_t)ci * ohw + (size_t)p * ow + q];
                s += wv * u, a += fabs(wv * u);
              }
          if (accumulate) s += y0[plane + (size_t)Y * ow + X];
          if (act == RV_ACT_RELU && s < 0) s = 0;
          const double d = fabs(s - y[plane + (size_t)Y * ow + X]);
          if (d > err || d != d) err = d != d ? INFINITY : d;
          if (a > scale) scale = a;
        }
      if (accumulate) scale += 1.0; /* y0 in [-1, 1): its rounding in the final add */
      const double r = err / scale;
      if (r > worst) worst = r;
      if (!(err <= 1e-6 * scale))
        fail_msg("n %d cin %d %dx%d -> %dx%d cout %d (item %d channel %d): |y - ref| %.3g > 1e-6 x %.3g",
                 n, cin, ih, iw, oh, ow, cout, bi, co, err, scale);
    }
  }
  free(x), free(w), free(b), free(y), free(y0), free(up);
}

static void test_upconv_shapes(void **state) {
  (void)state;
  rv_arena *ar = rv_arena_create(0);
  /* n, cin, ih, iw, cout, oh, ow */
  static const int shapes[][7] = {
      {1, 5, 4, 6, 7, 8, 12},    {2, 16, 3, 5, 9, 13, 21}, {1, 33, 1, 1, 10, 5, 4},
      {1, 8, 7, 9, 24, 7, 9},    {1, 4, 10, 12, 5, 4, 5},  {1, 3, 5, 5, 8, 1, 1},
      {1, 6, 4, 1, 3, 9, 1},     {1, 1, 2, 3, 1, 6, 9},    {1, 64, 16, 24, 40, 64, 96},
      {1, 24, 64, 80, 16, 128, 160}, /* coarse map 5120 px: the AVX-512 kernel's GEMM */
      {1, 3, 150, 150, 20, 300, 300}, /* 9 x 8 G planes of 22500 px > 12 MB: chunks 8, 8, 4 */
  };
  int k = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int v = 0; v < 2; v++, k++)
      upconv_case(ar, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], shapes[i][4],
                  shapes[i][5], shapes[i][6], (k % 3) != 0, v, (k % 4) < 2 ? RV_ACT_RELU : RV_ACT_NONE,
                  1000 + 17 * (uint64_t)k);
  rv_arena_free(ar);
  printf("upconv worst |y - ref| / plane max(|b| + sum |w||up(x)|): %.3g\n", worst);
  assert_true(worst > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_upconv_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
