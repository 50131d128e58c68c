/* The bf16 GEMM of kernels/gemm_bf16.c: its rounding (the scalar converter the twin uses
 * against fixed values and, where the CPU has AVX512_BF16, against the vector instruction
 * bit for bit), and rv_pointwise_bf16 against its naive twin (both operands rounded the same
 * way, double accumulation) over a sweep of odd shapes. Tolerance: |d| <= 2e-5 *
 * max(1, max|ref|), float32 accumulation as for the float32 GEMM kernels; the sweep also
 * asserts that this tolerance would catch a float32 (unrounded) computation. On a CPU
 * without AVX512_BF16 the kernel parts print a message and are skipped (cmocka skip). */
#include "test_util.h"
#include "backbone/attention.h"
#include "kernels/ops.h"
#include "kernel_check.h"

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void test_bf16_round(void **state) {
  (void)state;
  static const struct {
    uint32_t in;
    uint16_t out;
  } cases[] = {
      {0x3f800000u, 0x3f80}, /* 1 */
      {0x3f808000u, 0x3f80}, /* tie, even below: down */
      {0x3f818000u, 0x3f82}, /* tie, odd below: up */
      {0x3f808001u, 0x3f81}, /* above the tie: up */
      {0x3f807fffu, 0x3f80}, /* below the tie: down */
      {0xbf818000u, 0xbf82}, /* negative tie: up in magnitude */
      {0x7f7fffffu, 0x7f80}, /* FLT_MAX rounds to inf */
      {0x7f800000u, 0x7f80}, /* inf */
      {0xff800000u, 0xff80}, /* -inf */
      {0x80000000u, 0x8000}, /* -0 */
      {0x00000001u, 0x0000}, /* denormal: flushed */
      {0x807fffffu, 0x8000}, /* negative denormal: -0 */
      {0x00800000u, 0x0080}, /* smallest normal */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint16_t got = rv_f32_to_bf16(from_bits(cases[i].in));
    if (got != cases[i].out) fprintf(stderr, "bf16(0x%08x) = 0x%04x\n", cases[i].in, got);
    assert_int_equal(got, cases[i].out);
  }
  uint16_t nan = rv_f32_to_bf16(from_bits(0x7f800001u)); /* a NaN stays a NaN */
  assert_true((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0);
  assert_true(rv_bf16_to_f32(0x3f82) == 1.015625f);
  if (!rv_bf16_supported()) {
    printf("bf16: no AVX512_BF16 on this CPU: the vector conversion is not compared here\n");
    skip();
  }
  /* the vector instruction against the scalar twin on random bit patterns (all classes:
   * normals, denormals, NaNs, infinities) and on the fixed cases */
  enum { N = 1 << 20 };
  float *x = malloc(sizeof(float) * N);
  uint16_t *a = malloc(2 * N), *b = malloc(2 * N);
  assert_true(x && a && b);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < N; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    uint32_t u = (uint32_t)(s >> 32);
    if (i % 7 == 0) u &= 0x807fffffu;               /* denormals and zeros */
    if (i % 11 == 0) u = (u & 0xffff0000u) | 0x8000u; /* exact ties */
    x[i] = from_bits(u);
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) x[i] = from_bits(cases[i].in);
  rv_bf16_convert_vec(a, x, N - 3); /* a tail of 13 */
  for (size_t i = 0; i < N - 3; i++) {
    b[i] = rv_f32_to_bf16(x[i]);
    int both_nan = (a[i] & 0x7fff) > 0x7f80 && (b[i] & 0x7fff) > 0x7f80;
    if (a[i] != b[i] && !both_nan) {
      uint32_t u;
      memcpy(&u, &x[i], 4);
      fprintf(stderr, "bf16(0x%08x): instruction 0x%04x, twin 0x%04x\n", u, a[i], b[i]);
      fail();
    }
  }
  free(x), free(a), free(b);
}


static void add_one(float *row, size_t n) {
  for (size_t i = 0; i < n; i++) row[i] += 1.0f;
}

static void test_pointwise_bf16(void **state) {
  (void)state;
  if (!rv_bf16_supported()) {
    printf("rv_pointwise_bf16: no AVX512_BF16 on this CPU, not tested here\n");
    skip();
  }
  static const int couts[] = {1, 3, 8, 9, 17, 64, 67};
  static const int cins[] = {1, 2, 3, 7, 31, 64, 129};
  static const size_t ns[] = {1, 5, 47, 48, 49, 191, 193, 385, 1000, 4099};
  rv_arena *scratch = rv_arena_create(0);
  int checked_discrimination = 0;
  for (int a = 0; a < 7; a++)
    for (int c = 0; c < 7; c++)
      for (int d = 0; d < 10; d++) {
        const int cout = couts[a], cin = cins[c];
        const size_t n = ns[d];
        if ((size_t)cout * cin * n > 8000000) continue;
        float *w = kc_rand((size_t)cout * cin, 1 + a * 7 + c);
        float *x = kc_rand((size_t)cin * n, 100 + c * 11 + d);
        float *bias = kc_rand((size_t)cout, 5);
        float *y = kc_rand((size_t)cout * n, 6), *ref = kc_rand((size_t)cout * n, 7);
        uint32_t *wp = malloc(sizeof(uint32_t) * rv_bf16_packed_words(cout, cin));
        assert_non_null(wp);
        rv_bf16_pack_weights(wp, w, cout, cin);
        const int withb = (a + c + d) % 2, withpost = (a + d) % 3 == 0;
        assert_int_equal(rv_pointwise_bf16(y, wp, withb ? bias : NULL, x, cout, cin, n,
                                           withpost ? add_one : NULL, scratch),
                         RV_OK);
        rv_pointwise_bf16_naive(ref, w, withb ? bias : NULL, x, cout, cin, n);
        if (withpost)
          for (size_t i = 0; i < (size_t)cout * n; i++) ref[i] += 1.0f;
        char what[96];
        snprintf(what, sizeof what, "pointwise_bf16 cout %d cin %d n %zu", cout, cin, n);
        kc_assert_close(y, ref, (size_t)cout * n, 2e-5, what);
        assert_int_equal(rv_arena_used(scratch), 0); /* workspace released */
        if (!withpost) { /* the context post: z += 3 y at the same offsets, y unchanged */
          float *y2 = kc_rand((size_t)cout * n, 9), *z = kc_rand((size_t)cout * n, 10);
          float *z0 = malloc(sizeof(float) * (size_t)cout * n);
          assert_non_null(z0);
          memcpy(z0, z, sizeof(float) * (size_t)cout * n);
          kc_post_arg pa = {z, 0};
          assert_int_equal(rv_pointwise_bf16_ctx(y2, wp, withb ? bias : NULL, x, cout, cin, n,
                                                 kc_add_three_times, &pa, scratch),
                           RV_OK);
          assert_int_equal(pa.calls, (size_t)cout * n);
          assert_memory_equal(y2, y, sizeof(float) * (size_t)cout * n);
          for (size_t i = 0; i < (size_t)cout * n; i++)
            if (z[i] != z0[i] + 3.0f * y[i]) fail_msg("%s: ctx post, z element %zu", what, i);
          free(y2), free(z), free(z0);
        }
        if (cin >= 64 && n >= 48 && !checked_discrimination) {
          /* the float32 product is outside the tolerance: the test sees the rounding */
          float *f = kc_rand((size_t)cout * n, 8);
          rv_pointwise_naive_f32(f, w, withb ? bias : NULL, x, cout, cin, n);
          if (withpost)
            for (size_t i = 0; i < (size_t)cout * n; i++) f[i] += 1.0f;
          size_t worst;
          double scale = max_abs(ref, (size_t)cout * n);
          assert_false(kc_within(f, ref, (size_t)cout * n, 0.0, 2e-5 * (scale < 1 ? 1 : scale),
                                 &worst));
          free(f);
          checked_discrimination = 1;
        }
        free(w), free(x), free(bias), free(y), free(ref), free(wp);
      }
  assert_true(checked_discrimination);
  rv_arena_free(scratch);
}

/* rv_pointwise_bf16_gelu: the GELU in the kernel's registers against rv_pointwise_bf16 with
 * rv_gelu_bf16_serial_f32 (the loop GCC vectorises from the same formula) as its post, bit
 * for bit (but for outputs below 1e-30, see below), over shapes with row and column tails;
 * then the GELU alone over a sweep of values (cin 1 with zero weights: the outputs are the
 * biases), bit for bit where |x| <= 13 and within 1e-30 beyond (there e^{-x^2/2} underflows
 * and GCC folds its clamped value to a constant). Clang contracts the loop's products into
 * other multiply-adds: there within 4e-6 relative (measured 2.3e-7). */
#if defined(__clang__)
#define GELU_REL 4e-6f
#else
#define GELU_REL 0.0f
#endif
static int gelu_same(float v, float ref) {
  return memcmp(&v, &ref, sizeof v) == 0 || fabsf(v - ref) <= GELU_REL * fabsf(ref) ||
         (fabsf(ref) < 1e-30f && fabsf(v - ref) <= 1e-30f);
}
static void test_pointwise_bf16_gelu(void **state) {
  (void)state;
  if (!rv_bf16_supported()) {
    printf("rv_pointwise_bf16_gelu: no AVX512_BF16 on this CPU, not tested here\n");
    skip();
  }
  rv_arena *scratch = rv_arena_create(0);
  static const int shapes[][3] = {{8, 64, 4096}, {17, 31, 193}, {224, 64, 1000}, {3, 7, 47}};
  for (int s = 0; s < 4; s++) {
    const int cout = shapes[s][0], cin = shapes[s][1];
    const size_t n = (size_t)shapes[s][2];
    float *w = kc_rand((size_t)cout * cin, 40 + s), *x = kc_rand((size_t)cin * n, 50 + s);
    float *bias = kc_rand((size_t)cout, 60 + s);
    for (size_t i = 0; i < (size_t)cin * n; i++) x[i] *= 4.0f; /* GELU's whole range */
    float *y = kc_rand((size_t)cout * n, 1), *ref = kc_rand((size_t)cout * n, 2);
    uint32_t *wp = malloc(sizeof(uint32_t) * rv_bf16_packed_words(cout, cin));
    assert_non_null(wp);
    rv_bf16_pack_weights(wp, w, cout, cin);
    assert_int_equal(rv_pointwise_bf16_gelu(y, wp, bias, x, cout, cin, n, scratch), RV_OK);
    assert_int_equal(rv_pointwise_bf16(ref, wp, bias, x, cout, cin, n, rv_gelu_bf16_serial_f32,
                                       scratch),
                     RV_OK);
    for (size_t i = 0; i < (size_t)cout * n; i++)
      if (!gelu_same(y[i], ref[i]))
        fail_msg("pointwise_bf16_gelu %dx%dx%zu: element %zu %.9g, post %.9g", cout, cin, n, i,
                 y[i], ref[i]);
    assert_int_equal(rv_arena_used(scratch), 0);
    free(w), free(x), free(bias), free(y), free(ref), free(wp);
  }
  enum { M = 70001, NP = 16 };
  float *b = malloc(sizeof(float) * M), *zero = calloc(NP, sizeof(float));
  float *y = malloc(sizeof(float) * (size_t)M * NP);
  uint32_t *wp = malloc(sizeof(uint32_t) * rv_bf16_packed_words(M, 1));
  float *w0 = calloc(M, sizeof(float));
  assert_true(b && zero && y && wp && w0);
  for (int i = 0; i < M - 6; i++) b[i] = -16.0f + 32.0f * (float)i / (float)(M - 7);
  const float special[6] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-3f, -7.5f};
  for (int i = 0; i < 6; i++) b[M - 6 + i] = special[i];
  rv_bf16_pack_weights(wp, w0, M, 1);
  assert_int_equal(rv_pointwise_bf16_gelu(y, wp, b, zero, M, 1, NP, scratch), RV_OK);
  float *g = malloc(sizeof(float) * M);
  assert_non_null(g);
  memcpy(g, b, sizeof(float) * M);
  rv_gelu_bf16_serial_f32(g, M);
  for (int i = 0; i < M; i++)
    for (int p = 0; p < NP; p++) {
      const float v = y[(size_t)i * NP + p];
      if (fabsf(b[i]) <= 13.0f ? !gelu_same(v, g[i]) : fabsf(v - g[i]) > 1e-30f)
        fail_msg("bf16 GELU of %.9g: kernel %.9g, loop %.9g", b[i], v, g[i]);
    }
  free(b), free(zero), free(y), free(wp), free(w0), free(g);
  rv_arena_free(scratch);
}

/* rv_linear_bf16 (the RoI heads' fc layers: y[n x cout] += x[n x cin] W^T) against the
 * naive twin on the transposes (rv_pointwise_bf16_naive: both operands rounded the same
 * way, double sums), over odd shapes and inputs past one block of 1024 (the float32
 * accumulation of y across blocks); tolerance 2e-5 * max(1, max|ref|) as above. */
static void test_linear_bf16(void **state) {
  (void)state;
  if (!rv_bf16_supported()) {
    printf("rv_linear_bf16: no AVX512_BF16 on this CPU, not tested here\n");
    skip();
  }
  static const int shapes[][3] = {{1, 1, 1},    {5, 3, 7},     {8, 48, 64},  {9, 49, 65},
                                  {37, 81, 1024}, {100, 130, 1025}, {17, 1024, 2051},
                                  {203, 96, 3000}, {64, 47, 4096}};
  rv_arena *scratch = rv_arena_create(0);
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    const int n = shapes[c][0], cout = shapes[c][1], cin = shapes[c][2];
    float *w = kc_rand((size_t)cout * cin, 3 + c), *x = kc_rand((size_t)n * cin, 50 + c);
    float *bias = kc_rand((size_t)cout, 9), *y = malloc(sizeof(float) * n * cout);
    float *wt = malloc(sizeof(float) * cin * n), *reft = malloc(sizeof(float) * cout * n);
    float *ref = malloc(sizeof(float) * n * cout);
    uint32_t *wq = malloc(sizeof(uint32_t) * rv_bf16_linear_words(cout, cin));
    assert_true(y && wt && reft && ref && wq);
    rv_bf16_linear_pack(wq, w, cout, cin);
    for (int r = 0; r < n; r++) memcpy(y + (size_t)r * cout, bias, sizeof(float) * cout);
    assert_int_equal(rv_linear_bf16(y, wq, x, n, cout, cin, scratch), RV_OK);
    assert_int_equal(rv_arena_used(scratch), 0);
    for (int r = 0; r < n; r++) /* x^T [cin x n] */
      for (int i = 0; i < cin; i++) wt[(size_t)i * n + r] = x[(size_t)r * cin + i];
    rv_pointwise_bf16_naive(reft, w, bias, wt, cout, cin, (size_t)n);
    for (int r = 0; r < n; r++)
      for (int o = 0; o < cout; o++) ref[(size_t)r * cout + o] = reft[(size_t)o * n + r];
    char what[96];
    snprintf(what, sizeof what, "linear_bf16 n %d cout %d cin %d", n, cout, cin);
    kc_assert_close(y, ref, (size_t)n * cout, 2e-5, what);
    free(w), free(x), free(bias), free(y), free(wt), free(reft), free(ref), free(wq);
  }
  rv_arena_free(scratch);
}

/* rv_conv2d_winograd_bf16 (F(4x4, 3x3), the a^2 GEMMs on the bf16 kernel) and the RoI
 * stacks' channels-last rv_conv2d_winograd_rois_bf16 over odd shapes, pads, ReLU,
 * accumulate and batches of small images (the batched transforms). Reference: the naive
 * conv in double of the float32 operands. Tolerance |d| <= 4e-2 * max(1, max|ref|): the
 * rounding of U and V to bf16 (2^-9 relative each) carried through the output transform
 * (entries up to 8 per dimension) amplifies: measured worst 1.1e-2-2.6e-2 of max|ref|, ten
 * times the direct conv's (test_upsampled_bf16); a wrong tap, tile or channel is off by
 * O(max|ref|). The float32 Winograd of the same conv
 * must be further from the bf16 result than 1e-5 * max|ref| somewhere (the test sees the
 * rounding), and the channels-last path must equal the NCHW bf16 path within 1e-5 relative
 * (the same rounded operands; sums in a different order of the same products). */
static void test_winograd_bf16(void **state) {
  (void)state;
  if (!rv_bf16_supported()) {
    printf("rv_conv2d_winograd_bf16: no AVX512_BF16 on this CPU, not tested here\n");
    skip();
  }
  static const int shapes[][7] = {/* n, cin, cout, h, w, pad, flags (1 relu, 2 accumulate) */
                                  {1, 16, 24, 13, 17, 1, 0}, {2, 33, 9, 20, 30, 1, 1},
                                  {1, 64, 64, 50, 50, 1, 2}, {1, 7, 5, 9, 4, 0, 1},
                                  {9, 32, 40, 7, 7, 1, 1},   {5, 64, 64, 14, 14, 1, 0},
                                  {1, 128, 72, 24, 40, 1, 3}};
  rv_arena *A = rv_arena_create(0);
  int seen = 0;
  double worst_seen = 0;
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    const int n = shapes[c][0], cin = shapes[c][1], cout = shapes[c][2], h = shapes[c][3];
    const int w = shapes[c][4], pad = shapes[c][5], relu = shapes[c][6] & 1;
    const int acc = (shapes[c][6] & 2) != 0;
    const int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    const size_t ny = (size_t)n * cout * oh * ow;
    float *x = kc_rand((size_t)n * cin * h * w, 61 + c), *wt = kc_rand((size_t)cout * cin * 9, 71 + c);
    float *b = kc_rand((size_t)cout, 81 + c), *y0 = kc_rand(ny, 91 + c);
    float *y = malloc(sizeof(float) * ny), *ref = malloc(sizeof(float) * ny);
    float *f32 = malloc(sizeof(float) * ny);
    uint32_t *wp = malloc(sizeof(uint32_t) * rv_winograd_bf16_words(cout, cin));
    assert_true(y && ref && f32 && wp);
    assert_int_equal(rv_winograd_bf16_pack(wp, wt, cout, cin), RV_OK);
    rv_conv_params p = rv_conv_default_params(3, 1, pad);
    p.act = relu ? RV_ACT_RELU : RV_ACT_NONE;
    p.accumulate = acc;
    memcpy(y, y0, sizeof(float) * ny), memcpy(ref, y0, sizeof(float) * ny);
    memcpy(f32, y0, sizeof(float) * ny);
    assert_int_equal(rv_conv2d_winograd_bf16(y, x, wp, b, n, cin, h, w, cout, p, A), RV_OK);
    assert_int_equal(rv_arena_used(A), 0);
    rv_conv2d_naive_f32(ref, x, wt, b, n, cin, h, w, cout, p);
    assert_int_equal(rv_conv2d_winograd_f32(f32, x, wt, b, n, cin, h, w, cout, p, 4, A), RV_OK);
    char what[128];
    snprintf(what, sizeof what, "winograd_bf16 n %d cin %d cout %d %dx%d pad %d", n, cin, cout,
             h, w, pad);
    if (getenv("RV_TEST_VERBOSE")) {
      double e = 0;
      for (size_t i = 0; i < ny; i++) e = fmax(e, fabs(y[i] - ref[i]));
      fprintf(stderr, "%s: |bf16 - exact| %.3g of max|ref| %.3g\n", what, e, max_abs(ref, ny));
    }
    kc_assert_close(y, ref, ny, 4e-2, what);
    const double scale = fmax(1.0, max_abs(ref, ny));
    double d = 0;
    for (size_t i = 0; i < ny; i++) d = fmax(d, fabs(y[i] - f32[i]));
    if (d > 1e-5 * scale) seen = 1;
    worst_seen = fmax(worst_seen, d / scale);
    if (!acc && pad == 1 && cin % 2 == 0) { /* the RoI stacks' path: NCHW in and out */
      uint32_t *wr = malloc(sizeof(uint32_t) * rv_winograd_rois_bf16_words(cout, cin));
      float *yr = malloc(sizeof(float) * ny);
      assert_true(wr && yr);
      assert_int_equal(rv_winograd_rois_bf16_pack(wr, wt, cout, cin), RV_OK);
      assert_int_equal(rv_conv2d_winograd_rois_bf16(yr, x, wr, b, n, cin, h, w, cout, 1, p.act,
                                                    RV_ROIS_IN_NCHW | RV_ROIS_OUT_NCHW, A),
                       RV_OK);
      assert_int_equal(rv_arena_used(A), 0);
      snprintf(what, sizeof what, "winograd_rois_bf16 n %d cin %d cout %d %dx%d", n, cin, cout,
               h, w);
      kc_assert_close(yr, y, ny, 1e-5, what);
      free(wr), free(yr);
    }
    free(x), free(wt), free(b), free(y0), free(y), free(ref), free(f32), free(wp);
  }
  if (getenv("RV_TEST_VERBOSE")) fprintf(stderr, "winograd_bf16: |bf16 - f32| up to %.3g\n", worst_seen);
  assert_true(seen);
  rv_arena_free(A);
}

static double bf(float v) { return (double)rv_bf16_to_f32(rv_f32_to_bf16(v)); }

/* The twin of rv_conv2d_winograd_bf16_m with m = 2: U = G g G^T in double (the code's
 * expressions) rounded to float32 then bf16; V = B^T d B in float32 in the code's order
 * (columns, then rows) then bf16; M summed in double; Y = A^T M A in double, + b, [+ y],
 * act. It differs from the kernel only by M's float32 sums (and rare double-vs-float
 * rounding flips of U's last bit): a tap, tile, pair or channel misplaced is O(max|y|). */
static void winograd2_bf16_twin(float *y, const float *x, const float *w, const float *b, int n,
                                int cin, int h, int wd, int cout, int pad, int relu, int acc) {
  const int oh = h + 2 * pad - 2, ow = wd + 2 * pad - 2, th = (oh + 1) / 2, tw = (ow + 1) / 2;
  double *U = malloc(sizeof(double) * (size_t)cout * cin * 16);
  double *V = malloc(sizeof(double) * (size_t)cin * 16);
  assert_true(U && V);
  for (int co = 0; co < cout; co++)
    for (int ci = 0; ci < cin; ci++) {
      const float *g = w + ((size_t)co * cin + ci) * 9;
      double t[4][3], u[16];
      for (int c = 0; c < 3; c++) {
        const double g0 = g[c], g1 = g[3 + c], g2 = g[6 + c];
        t[0][c] = g0, t[1][c] = 0.5 * (g0 + g1 + g2), t[2][c] = 0.5 * (g0 - g1 + g2), t[3][c] = g2;
      }
      for (int r = 0; r < 4; r++) {
        const double g0 = t[r][0], g1 = t[r][1], g2 = t[r][2];
        u[r * 4] = g0, u[r * 4 + 1] = 0.5 * (g0 + g1 + g2), u[r * 4 + 2] = 0.5 * (g0 - g1 + g2);
        u[r * 4 + 3] = g2;
      }
      for (int k = 0; k < 16; k++) U[((size_t)co * cin + ci) * 16 + k] = bf((float)u[k]);
    }
  for (int ni = 0; ni < n; ni++)
    for (int ty = 0; ty < th; ty++)
      for (int tx = 0; tx < tw; tx++) {
        for (int ci = 0; ci < cin; ci++) {
          float d[4][4], c[4][4];
          for (int r = 0; r < 4; r++)
            for (int q = 0; q < 4; q++) {
              const int iy = 2 * ty - pad + r, ix = 2 * tx - pad + q;
              d[r][q] = iy >= 0 && iy < h && ix >= 0 && ix < wd
                            ? x[(((size_t)ni * cin + ci) * h + iy) * wd + ix]
                            : 0.0f;
            }
          for (int q = 0; q < 4; q++) { /* along columns */
            c[0][q] = d[0][q] - d[2][q], c[1][q] = d[1][q] + d[2][q];
            c[2][q] = d[2][q] - d[1][q], c[3][q] = d[1][q] - d[3][q];
          }
          for (int i = 0; i < 4; i++) { /* along rows */
            float *r = c[i], o[4] = {r[0] - r[2], r[1] + r[2], r[2] - r[1], r[1] - r[3]};
            for (int j = 0; j < 4; j++) V[(size_t)ci * 16 + i * 4 + j] = bf(o[j]);
          }
        }
        for (int co = 0; co < cout; co++) {
          double M[16] = {0}, hor[4][2], out[2][2];
          for (int ci = 0; ci < cin; ci++)
            for (int k = 0; k < 16; k++)
              M[k] += U[((size_t)co * cin + ci) * 16 + k] * V[(size_t)ci * 16 + k];
          for (int i = 0; i < 4; i++) /* A^T along rows */
            hor[i][0] = M[i * 4] + M[i * 4 + 1] + M[i * 4 + 2],
            hor[i][1] = M[i * 4 + 1] - M[i * 4 + 2] - M[i * 4 + 3];
          for (int q = 0; q < 2; q++)
            out[0][q] = hor[0][q] + hor[1][q] + hor[2][q],
            out[1][q] = hor[1][q] - hor[2][q] - hor[3][q];
          for (int p = 0; p < 2; p++)
            for (int q = 0; q < 2; q++) {
              const int oy = 2 * ty + p, ox = 2 * tx + q;
              if (oy >= oh || ox >= ow) continue;
              float *yp = y + (((size_t)ni * cout + co) * oh + oy) * ow + ox;
              float v = (float)out[p][q] + (b ? b[co] : 0.0f);
              if (acc) v += *yp;
              *yp = relu && v < 0.0f ? 0.0f : v;
            }
        }
      }
  free(U), free(V);
}

/* rv_conv2d_winograd_bf16_m with m = 2 (F(2x2, 3x3): the detection FPN's and RPN's 3x3
 * convs in bf16) over odd shapes, pads 0-2, ReLU, accumulate, batches of small images (the
 * batched transforms) and a cin that is odd (the last bf16 pair half zero):
 *  - against the exact conv (rv_conv2d_naive_f32, double sums of the float32 operands):
 *    |d| <= 1.5e-2 max(1, max|y|). F(2x2)'s transforms have entries 0, +-1 (1/2 in G), so
 *    the bf16 rounding of U and V (2^-9 relative each) is amplified little: measured worst
 *    3.3e-3-7.5e-3 of max|y| per shape (7.5e-3: cin 7), against 1.1e-2-2.6e-2 for F(4x4)
 *    (test_winograd_bf16) and 1.4e-3-2.4e-3 for a direct bf16 conv (test_upsampled_bf16);
 *  - against the naive bf16 twin above (the same rounded operands, double sums):
 *    |d| <= 1e-5 max(1, max|y|) (measured up to 2.3e-7);
 *  - not equal to float32 F(2x2): further than 1e-5 max|y| from rv_conv2d_winograd_f32
 *    somewhere (the test sees the rounding);
 *  - the F(4x4) weights give the F(4x4) conv (rv_conv2d_winograd_bf16 = _m with m = 4). */
static void test_winograd2_bf16(void **state) {
  (void)state;
  if (!rv_bf16_supported()) {
    printf("rv_conv2d_winograd_bf16_m: no AVX512_BF16 on this CPU, not tested here\n");
    skip();
  }
  static const int shapes[][7] = {/* n, cin, cout, h, w, pad, flags (1 relu, 2 accumulate) */
                                  {1, 16, 24, 13, 17, 1, 0}, {2, 33, 9, 20, 30, 1, 1},
                                  {1, 64, 64, 50, 50, 1, 2}, {1, 7, 5, 9, 4, 0, 1},
                                  {9, 32, 40, 7, 7, 1, 1},   {5, 64, 64, 14, 14, 1, 0},
                                  {1, 128, 72, 25, 42, 1, 3}, {1, 40, 16, 11, 8, 2, 0},
                                  {1, 256, 256, 13, 21, 1, 1}};
  rv_arena *A = rv_arena_create(0);
  int seen = 0;
  double worst_exact = 0, worst_twin = 0;
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    const int n = shapes[c][0], cin = shapes[c][1], cout = shapes[c][2], h = shapes[c][3];
    const int w = shapes[c][4], pad = shapes[c][5], relu = shapes[c][6] & 1;
    const int acc = (shapes[c][6] & 2) != 0;
    const int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    const size_t ny = (size_t)n * cout * oh * ow;
    float *x = kc_rand((size_t)n * cin * h * w, 161 + c), *wt = kc_rand((size_t)cout * cin * 9, 171 + c);
    float *b = kc_rand((size_t)cout, 181 + c), *y0 = kc_rand(ny, 191 + c);
    float *y = malloc(sizeof(float) * ny), *ref = malloc(sizeof(float) * ny);
    float *f32 = malloc(sizeof(float) * ny), *twin = malloc(sizeof(float) * ny);
    uint32_t *wp = malloc(sizeof(uint32_t) * rv_winograd_bf16_words_m(cout, cin, 2));
    assert_true(y && ref && f32 && twin && wp);
    assert_int_equal(rv_winograd_bf16_pack_m(wp, wt, cout, cin, 2), RV_OK);
    rv_conv_params p = rv_conv_default_params(3, 1, pad);
    p.act = relu ? RV_ACT_RELU : RV_ACT_NONE;
    p.accumulate = acc;
    memcpy(y, y0, sizeof(float) * ny), memcpy(ref, y0, sizeof(float) * ny);
    memcpy(f32, y0, sizeof(float) * ny), memcpy(twin, y0, sizeof(float) * ny);
    assert_int_equal(rv_conv2d_winograd_bf16_m(y, x, wp, b, n, cin, h, w, cout, p, 2, A), RV_OK);
    assert_int_equal(rv_arena_used(A), 0);
    rv_conv2d_naive_f32(ref, x, wt, b, n, cin, h, w, cout, p);
    winograd2_bf16_twin(twin, x, wt, b, n, cin, h, w, cout, pad, relu, acc);
    assert_int_equal(rv_conv2d_winograd_f32(f32, x, wt, b, n, cin, h, w, cout, p, 2, A), RV_OK);
    const double scale = fmax(1.0, max_abs(ref, ny));
    double de = 0, dt = 0, d = 0;
    for (size_t i = 0; i < ny; i++) {
      de = fmax(de, fabs(y[i] - ref[i])), dt = fmax(dt, fabs(y[i] - twin[i]));
      d = fmax(d, fabs(y[i] - f32[i]));
    }
    worst_exact = fmax(worst_exact, de / scale), worst_twin = fmax(worst_twin, dt / scale);
    char what[128];
    snprintf(what, sizeof what, "winograd2_bf16 n %d cin %d cout %d %dx%d pad %d", n, cin, cout,
             h, w, pad);
    if (getenv("RV_TEST_VERBOSE"))
      fprintf(stderr, "%s: |bf16 - exact| %.3g, |bf16 - twin| %.3g of max|ref| %.3g\n", what,
              de, dt, max_abs(ref, ny));
    kc_assert_close(y, ref, ny, 1.5e-2, what);
    kc_assert_close(y, twin, ny, 1e-5, what);
    if (d > 1e-5 * scale) seen = 1;
    if (c == 2) { /* the m = 4 entry points are _m with m = 4 */
      uint32_t *w4 = malloc(sizeof(uint32_t) * rv_winograd_bf16_words(cout, cin));
      uint32_t *w4m = malloc(sizeof(uint32_t) * rv_winograd_bf16_words_m(cout, cin, 4));
      float *y4 = malloc(sizeof(float) * ny), *y4m = malloc(sizeof(float) * ny);
      assert_true(w4 && w4m && y4 && y4m);
      assert_int_equal(rv_winograd_bf16_words(cout, cin), rv_winograd_bf16_words_m(cout, cin, 4));
      assert_int_equal(rv_winograd_bf16_pack(w4, wt, cout, cin), RV_OK);
      assert_int_equal(rv_winograd_bf16_pack_m(w4m, wt, cout, cin, 4), RV_OK);
      assert_memory_equal(w4, w4m, sizeof(uint32_t) * rv_winograd_bf16_words(cout, cin));
      memcpy(y4, y0, sizeof(float) * ny), memcpy(y4m, y0, sizeof(float) * ny);
      assert_int_equal(rv_conv2d_winograd_bf16(y4, x, w4, b, n, cin, h, w, cout, p, A), RV_OK);
      assert_int_equal(rv_conv2d_winograd_bf16_m(y4m, x, w4m, b, n, cin, h, w, cout, p, 4, A),
                       RV_OK);
      assert_memory_equal(y4, y4m, sizeof(float) * ny);
      double d24 = 0;
      for (size_t i = 0; i < ny; i++) d24 = fmax(d24, fabs(y4[i] - y[i]));
      assert_true(d24 > 1e-5 * scale); /* F(4x4) is another rounding of the same conv */
      free(w4), free(w4m), free(y4), free(y4m);
    }
    free(x), free(wt), free(b), free(y0), free(y), free(ref), free(f32), free(twin), free(wp);
  }
  if (getenv("RV_TEST_VERBOSE"))
    fprintf(stderr, "winograd2_bf16: worst |bf16 - exact| %.3g, |bf16 - twin| %.3g of max|ref|\n",
            worst_exact, worst_twin);
  assert_true(seen);
  rv_arena_free(A);
}

/* rv_conv3x3_upsampled_bf16_packed (the tap weights packed once, UperNet's bf16 mode) gives
 * the bits of rv_conv3x3_upsampled_bf16 (packed per call, chunk by chunk) over odd sizes,
 * cout not a multiple of 8, ReLU, accumulate, and a coarse map big enough for several
 * chunks of output channels (the packed matrix read from the chunk's offset). */
static void test_upsampled_bf16_packed(void **state) {
  (void)state;
  if (!rv_bf16_supported()) {
    printf("rv_conv3x3_upsampled_bf16_packed: no AVX512_BF16 on this CPU, not tested here\n");
    skip();
  }
  static const int shapes[][8] = {/* n, cin, cout, ih, iw, oh, ow, flags (1 relu, 2 acc) */
                                  {1, 16, 24, 5, 7, 10, 14, 0}, {2, 33, 9, 8, 6, 31, 25, 1},
                                  {1, 3, 5, 3, 3, 7, 5, 2},    {1, 24, 44, 300, 200, 301, 203, 3}};
  rv_arena *A = rv_arena_create(0);
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    const int n = shapes[c][0], cin = shapes[c][1], cout = shapes[c][2], ih = shapes[c][3];
    const int iw = shapes[c][4], oh = shapes[c][5], ow = shapes[c][6];
    const rv_act act = shapes[c][7] & 1 ? RV_ACT_RELU : RV_ACT_NONE;
    const int acc = (shapes[c][7] & 2) != 0;
    const size_t ny = (size_t)n * cout * oh * ow;
    float *x = kc_rand((size_t)n * cin * ih * iw, 213 + c), *w = kc_rand((size_t)cout * cin * 9, 217 + c);
    float *b = kc_rand((size_t)cout, 219 + c), *y0 = kc_rand(ny, 229 + c);
    float *y = malloc(sizeof(float) * ny), *yp = malloc(sizeof(float) * ny);
    uint32_t *wp = malloc(sizeof(uint32_t) * rv_conv3x3_upsampled_bf16_words(cout, cin));
    assert_true(y && yp && wp);
    assert_int_equal(rv_conv3x3_upsampled_bf16_pack(wp, w, cout, cin), RV_OK);
    memcpy(y, y0, sizeof(float) * ny), memcpy(yp, y0, sizeof(float) * ny);
    assert_int_equal(rv_conv3x3_upsampled_bf16(y, x, w, b, n, cin, ih, iw, cout, oh, ow, act,
                                               acc, A), RV_OK);
    assert_int_equal(rv_conv3x3_upsampled_bf16_packed(yp, x, wp, b, n, cin, ih, iw, cout, oh,
                                                      ow, act, acc, A), RV_OK);
    assert_int_equal(rv_arena_used(A), 0);
    assert_memory_equal(y, yp, sizeof(float) * ny);
    free(x), free(w), free(b), free(y0), free(y), free(yp), free(wp);
  }
  rv_arena_free(A);
}

/* rv_conv3x3_upsampled_bf16 (UperNet's fusion conv of an upsampled map in bf16: the nine
 * taps' GEMM on rv_pointwise_bf16) against the float32 twin (the naive resize, then the
 * naive conv, in double) over odd sizes, ReLU and accumulate. Tolerance |d| <= 1e-2 *
 * max(1, max|ref|): the bf16 rounding of both operands (2^-9 relative each) over 9 cin
 * products per output (measured worst 1.4e-3-2.4e-3 of max|ref|); the float32 path must be further
 * from the bf16 result than 1e-5 * max|ref| somewhere (the test sees the rounding). */
static void test_upsampled_bf16(void **state) {
  (void)state;
  if (!rv_bf16_supported()) {
    printf("rv_conv3x3_upsampled_bf16: no AVX512_BF16 on this CPU, not tested here\n");
    skip();
  }
  static const int shapes[][8] = {/* n, cin, cout, ih, iw, oh, ow, flags (1 relu, 2 acc) */
                                  {1, 16, 24, 5, 7, 10, 14, 0}, {2, 33, 9, 8, 6, 31, 25, 1},
                                  {1, 64, 40, 16, 16, 64, 64, 3}, {1, 3, 5, 3, 3, 7, 5, 2}};
  rv_arena *A = rv_arena_create(0);
  int seen = 0;
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    const int n = shapes[c][0], cin = shapes[c][1], cout = shapes[c][2], ih = shapes[c][3];
    const int iw = shapes[c][4], oh = shapes[c][5], ow = shapes[c][6];
    const rv_act act = shapes[c][7] & 1 ? RV_ACT_RELU : RV_ACT_NONE;
    const int acc = (shapes[c][7] & 2) != 0;
    const size_t ny = (size_t)n * cout * oh * ow;
    float *x = kc_rand((size_t)n * cin * ih * iw, 13 + c), *w = kc_rand((size_t)cout * cin * 9, 17 + c);
    float *b = kc_rand((size_t)cout, 19 + c), *y0 = kc_rand(ny, 29 + c);
    float *y = malloc(sizeof(float) * ny), *ref = malloc(sizeof(float) * ny);
    float *f32 = malloc(sizeof(float) * ny);
    assert_true(y && ref && f32);
    memcpy(y, y0, sizeof(float) * ny), memcpy(ref, y0, sizeof(float) * ny);
    memcpy(f32, y0, sizeof(float) * ny);
    assert_int_equal(rv_conv3x3_upsampled_bf16(y, x, w, b, n, cin, ih, iw, cout, oh, ow, act,
                                               acc, A), RV_OK);
    assert_int_equal(rv_arena_used(A), 0);
    assert_int_equal(rv_conv3x3_upsampled_naive_f32(ref, x, w, b, n, cin, ih, iw, cout, oh, ow,
                                                    act, acc, A), RV_OK);
    assert_int_equal(rv_arena_used(A), 0);
    assert_int_equal(rv_conv3x3_upsampled_f32(f32, x, w, b, n, cin, ih, iw, cout, oh, ow, act,
                                              acc, A), RV_OK);
    char what[128];
    snprintf(what, sizeof what, "upsampled_bf16 n %d cin %d cout %d %dx%d -> %dx%d", n, cin,
             cout, ih, iw, oh, ow);
    if (getenv("RV_TEST_VERBOSE")) {
      double e = 0;
      for (size_t i = 0; i < ny; i++) e = fmax(e, fabs(y[i] - ref[i]));
      fprintf(stderr, "%s: |bf16 - exact| %.3g of max|ref| %.3g\n", what, e, max_abs(ref, ny));
    }
    kc_assert_close(y, ref, ny, 1e-2, what);
    double d = 0;
    for (size_t i = 0; i < ny; i++) d = fmax(d, fabs(y[i] - f32[i]));
    if (d > 1e-5 * fmax(1.0, max_abs(ref, ny))) seen = 1;
    free(x), free(w), free(b), free(y0), free(y), free(ref), free(f32);
  }
  assert_true(seen);
  rv_arena_free(A);
}


/* rv_softmax_attention_bf16 against a twin: scale k, q, v rounded to bf16 as the kernel
 * rounds them, scores and the softmax in double, probabilities rounded to bf16 (relative to
 * the final row maximum; the kernel rounds them relative to the running one and rescales in
 * float32: a difference of a bf16 rounding, 2^-9 relative, per probability). Tolerance
 * |d| <= 4e-3 * max|v|; the float32 attention (no rounding) must be further than 1e-4 from
 * the twin somewhere (the test sees the rounding) and within 3e-2 * max|v| everywhere. */
static void test_attention_bf16(void **state) {
  (void)state;
  if (!rv_bf16_supported()) {
    fprintf(stderr, "SKIP attention_bf16: this CPU has no AVX512_BF16\n");
    skip();
  }
  static const int shapes[][3] = {{1, 64, 37},  {2, 32, 530}, {2, 64, 1024},
                                  {3, 20, 515}, {2, 33, 77},  {1, 64, 1100}};
  rv_arena *A = rv_arena_create(0);
  assert_non_null(A);
  int seen_rounding = 0;
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    const int heads = shapes[c][0], d = shapes[c][1], n = shapes[c][2], ld = n + 3;
    const size_t sz = (size_t)heads * d * ld;
    float *q = kc_rand(sz, 11 + c), *k = kc_rand(sz, 23 + c), *v = kc_rand(sz, 37 + c);
    for (size_t i = 0; i < sz; i++) q[i] *= 3.0f, k[i] *= 3.0f; /* peaked softmax rows */
    float *got = kc_rand(sz, 41), *f32 = kc_rand(sz, 43), *twin = kc_rand(sz, 47);
    const float scale = 1.0f / sqrtf((float)d);
    assert_int_equal(rv_softmax_attention_bf16(got, ld, q, k, v, ld, heads, d, n, scale, A),
                     RV_OK);
    assert_int_equal(rv_arena_used(A), 0);
    assert_int_equal(rv_softmax_attention_naive_f32(f32, ld, q, k, v, ld, heads, d, n, scale),
                     RV_OK);
    double *s = malloc(sizeof(double) * n), *o = malloc(sizeof(double) * d);
    assert_non_null(s);
    assert_non_null(o);
    double worst = 0, worst_f32 = 0, maxv = 0, diff_f32 = 0;
    for (size_t i = 0; i < sz; i++) maxv = fmax(maxv, fabs(v[i]));
    for (int h = 0; h < heads; h++) {
      const size_t off = (size_t)h * d * ld;
      for (int i = 0; i < n; i++) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < n; j++) {
          double t = 0;
          for (int e = 0; e < d; e++)
            t += bf(scale * k[off + (size_t)e * ld + j]) * bf(q[off + (size_t)e * ld + i]);
          s[j] = t;
          mx = fmax(mx, t);
        }
        for (int e = 0; e < d; e++) o[e] = 0;
        for (int j = 0; j < n; j++) {
          const double p = exp(s[j] - mx);
          sum += p;
          const double pb = bf((float)p);
          for (int e = 0; e < d; e++) o[e] += pb * bf(v[off + (size_t)e * ld + j]);
        }
        for (int e = 0; e < d; e++) {
          const size_t at = off + (size_t)e * ld + i;
          const double ref = o[e] / sum;
          worst = fmax(worst, fabs(got[at] - ref));
          worst_f32 = fmax(worst_f32, fabs(got[at] - f32[at]));
          diff_f32 = fmax(diff_f32, fabs(f32[at] - ref));
          twin[at] = (float)ref;
        }
      }
    }
    if (getenv("RV_TEST_VERBOSE") || worst > 4e-3 * maxv || worst_f32 > 3e-2 * maxv)
      fprintf(stderr, "attention_bf16 heads %d d %d n %d: |got - twin| %.3g, |got - f32| %.3g "
                      "(max|v| %.3g)\n", heads, d, n, worst, worst_f32, maxv);
    assert_true(worst <= 4e-3 * maxv);
    assert_true(worst_f32 <= 3e-2 * maxv);
    if (diff_f32 > 1e-4 * maxv) seen_rounding = 1;
    free(q), free(k), free(v), free(got), free(f32), free(twin), free(s), free(o);
  }
  assert_true(seen_rounding);
  rv_arena_free(A);
}

/* rv_bf16_pack_panel_t (RALA's v^T panel: B given transposed) against rv_bf16_pack_panel
 * of B written out: the same words, over k and n with and without whole 32-row / 16-column
 * blocks (the register transpose and the column-by-column rest), column ranges that start
 * and end inside blocks, and the zero columns past n. Words outside [c0, c1) untouched. */
static void test_pack_panel_t(void **state) {
  (void)state;
  if (!rv_bf16_supported()) {
    printf("rv_bf16_pack_panel_t: no AVX512_BF16 on this CPU, not tested here\n");
    skip();
  }
  static const int shapes[][4] = {/* k, n, c0, c1 (-1: the panel's width) */
                                  {64, 64, 0, -1},   {2048, 64, 16, 32}, {300, 40, 0, -1},
                                  {31, 17, 0, -1},   {1, 1, 0, -1},      {257, 96, 5, 70},
                                  {4096, 48, 0, 48}, {160, 130, 32, -1}};
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    const int k = shapes[c][0], n = shapes[c][1], w = (n + 47) / 48 * 48;
    const int c0 = shapes[c][2], c1 = shapes[c][3] < 0 ? w : shapes[c][3];
    const size_t ldb = (size_t)k + 3, words = rv_bf16_panel_words(k, n);
    float *bt = kc_rand((size_t)n * ldb, 311 + c), *b = malloc(sizeof(float) * (size_t)k * n);
    uint32_t *ref = malloc(sizeof(uint32_t) * words), *got = malloc(sizeof(uint32_t) * words);
    assert_true(b && ref && got);
    for (int r = 0; r < k; r++)
      for (int j = 0; j < n; j++) b[(size_t)r * n + j] = bt[(size_t)j * ldb + r];
    rv_bf16_pack_panel(ref, b, (size_t)n, k, n);
    memset(got, 0xa5, sizeof(uint32_t) * words);
    rv_bf16_pack_panel_t(got, bt, ldb, k, n, c0, c1);
    for (size_t i = 0; i < words; i++) {
      const int col = (int)(i % (size_t)w);
      if (col >= c0 && col < c1) assert_int_equal(got[i], ref[i]);
      else assert_int_equal(got[i], 0xa5a5a5a5u);
    }
    free(bt), free(b), free(ref), free(got);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bf16_round),
      cmocka_unit_test(test_pointwise_bf16),
      cmocka_unit_test(test_pointwise_bf16_gelu),
      cmocka_unit_test(test_linear_bf16),
      cmocka_unit_test(test_winograd_bf16),
      cmocka_unit_test(test_upsampled_bf16),
      cmocka_unit_test(test_winograd2_bf16),
      cmocka_unit_test(test_upsampled_bf16_packed),
      cmocka_unit_test(test_attention_bf16),
      cmocka_unit_test(test_pack_panel_t),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
