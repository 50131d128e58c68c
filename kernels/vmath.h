/* Branch-free float exp / erf / GELU that GCC vectorises inside plain loops (no libm
 * calls). Internal to the kernels; any library file may include it.
 *
 *   for (size_t i = 0; i < n; i++) y[i] = rv_vexpf(x[i]);   // vectorised with -O3
 *
 * rv_vexpf: Cody-Waite range reduction x = n ln2 + r, degree-6 polynomial for e^r
 * (Cephes expf coefficients), scaled by 2^n through the exponent bits; inputs are clamped
 * to [-87.34, 88.38] (no inf/denormal results), |rel err| < 2e-7.
 * rv_verff: |z| < 0.5: z * P6(z^2); |z| >= 0.5: 1 - e^{-z^2} Q9(1 / (1 + z/2)) (weighted
 * least-squares fits to erf(z)/z on [0,1] and erfc(z) e^{z^2} on [0,6.5]; float evaluation
 * rel err < 3e-7); |abs err| < 2e-7 (tested against erf in double).
 * rv_vgeluf: x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) from the one erfc form valid for all x:
 * x < 0: 0.5 x erfc(|z|), else x - 0.5 x erfc(|z|), so the negative tail keeps relative
 * accuracy and there is no branch to blend.
 */
#ifndef RV_CORE_VMATH_H
#define RV_CORE_VMATH_H

#include <stdint.h>
#include <string.h>
#include <math.h>

/* Two GCC options change for the rest of a translation unit that includes this header:
 * - no-trapping-math: GCC will not if-convert selects whose arms hold float ops that may
 *   trap, which blocks vectorising these functions; we never read the FP exception flags.
 * - no-thread-jumps: jump threading specialises the input clamps of rv_vexpf into paths
 *   where the result is a constant, e.g. silu's x * sigmoid(-87.3) = x * 1e-38, which the
 *   vectorised loop then computes for every element and blends away; that product is
 *   denormal for |x| < 1 and costs a microcode assist per vector (silu 10x slower).
 * Results are bit-for-bit the same. (Clang needs neither.) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math", "no-thread-jumps")
#endif

/* RV_CLONES before a function definition compiles it twice, for x86-64-v3 (AVX2, 8-wide)
 * and for the build's baseline, and picks one at load time (GNU ifunc), so the portable
 * default build (-march=x86-64-v2) still runs 8-wide element-wise loops on AVX2 CPUs.
 * Define RV_NO_CLONES to turn it off. Put it on the serial loop functions, not on functions
 * that open OpenMP regions. */
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RV_NO_CLONES) && !defined(__AVX2__)
#define RV_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define RV_CLONES
#endif

/* RV_CLONES4: the same with an x86-64-v4 (AVX-512, 16-wide) clone as well, for the loops
 * that gain from it (Winograd transforms, softmax, depthwise convs, ...). GCC only, and not
 * under AddressSanitizer (there RV_CLONES). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(RV_NO_CLONES) && !defined(__AVX2__)
#define RV_CLONES4 __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RV_CLONES4 RV_CLONES
#endif

static inline float rv_vexpf(float x) {
  x = x < 88.3762626647949f ? x : 88.3762626647949f; /* 127.5 ln2: keeps 2^n finite */
  x = x > -87.3365f ? x : -87.3365f;
  /* n = round(x / ln2) by the 1.5 * 2^23 trick (round-to-nearest) */
  float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float e = p * r * r + r + 1.0f;
  int32_t bits = ((int32_t)n + 127) << 23;
  float s;
  memcpy(&s, &bits, sizeof s);
  return e * s;
}

/* e^x to bf16 accuracy, for the bf16 softmax attention (whose weights the bf16 kernel
 * rounds to bf16, relative error up to 2^-9, right after): x = (n + f) ln 2 with n =
 * round(x log2 e), f in [-1/2, 1/2], 2^f by a degree-3 minimax polynomial (relative error
 * 7.48e-5 in exact arithmetic; measured against exp in double over [-87.3, 0]: < 8e-5,
 * tests/unit/kernels/test_ops.c), scaled by 2^n through the exponent bits. x clamped to [-87.3365, 88]:
 * no denormal or infinite result. Half the operations of rv_vexpf. */
static inline float rv_vexpf_bf16(float x) {
  x = x < 88.0f ? x : 88.0f;
  x = x > -87.3365f ? x : -87.3365f;
  const float t = x * 1.44269504088896341f;
  const float n = (t + 12582912.0f) - 12582912.0f;
  const float f = t - n;
  float p = 5.5171669075e-02f;
  p = p * f + 2.4261112219e-01f;
  p = p * f + 6.9326098546e-01f;
  p = p * f + 9.9992807354e-01f;
  int32_t bits = ((int32_t)n + 127) << 23;
  float s;
  memcpy(&s, &bits, sizeof s);
  return p * s;
}

/* e^{-s x^2} for s a power of two, without the rounding error of x*x in the exponent
 * (which would cost ~1e-6 relative at x^2 ~ 20): x = xh + xl with xh holding the top 12
 * significand bits, so xh*xh is exact, and the small rest d = s*xl*(xh + x) enters as
 * e^{-d} ~ 1 - d + d^2/2. */
static inline float rv_vexp_negsq(float x, float s) {
  int32_t bits;
  memcpy(&bits, &x, sizeof bits);
  bits &= (int32_t)0xFFFFF000;
  float xh;
  memcpy(&xh, &bits, sizeof xh);
  float xl = x - xh;
  float d = s * xl * (xh + x);
  return rv_vexpf(-s * (xh * xh)) * (1.0f - d + 0.5f * d * d);
}

/* erfc(a) for a >= 0 as e^{-a^2} Q9(1/(1+a/2)), ea2 = e^{-a^2}; Q is held at Q(6.5) past
 * a = 6.5, where erfc < 4e-20 (relative error there ~ a/6.5 - 1, absolute < 1e-19). */
static inline float rv_verfc_tail(float a, float ea2) {
  float ac = a < 6.5f ? a : 6.5f;
  float t = 1.0f / (1.0f + 0.5f * ac);
  float q = -4.926443937e-02f;
  q = q * t + 2.315498472e-01f;
  q = q * t - 3.633619392e-01f;
  q = q * t + 1.144965888e-01f;
  q = q * t + 1.077464460e-01f;
  q = q * t + 1.316305420e-01f;
  q = q * t + 2.672511494e-01f;
  q = q * t + 2.772956753e-01f;
  q = q * t + 2.826863870e-01f;
  q = q * t - 3.033074701e-05f;
  return ea2 * q;
}

static inline float rv_verf_small(float z) {
  float z2 = z * z;
  float p = 7.971048748e-05f;
  p = p * z2 - 8.043374117e-04f;
  p = p * z2 + 5.191833311e-03f;
  p = p * z2 - 2.685550927e-02f;
  p = p * z2 + 1.128362205e-01f;
  p = p * z2 - 3.761262874e-01f;
  p = p * z2 + 1.128379166e+00f;
  return z * p;
}

static inline float rv_verff(float z) {
  float a = fabsf(z);
  float small = rv_verf_small(z);
  float tail = 1.0f - rv_verfc_tail(a, rv_vexp_negsq(a, 1.0f));
  tail = z < 0.0f ? -tail : tail;
  return a < 0.5f ? small : tail;
}

static inline float rv_vgeluf(float x) {
  /* one branch for all x: Phi(x) = erfc(-x/sqrt 2) / 2 with E = erfc(|x|/sqrt 2) */
  float a = fabsf(x) * 0.70710678118654752440f;
  float e = rv_verfc_tail(a, rv_vexp_negsq(x, 0.5f));
  float h = 0.5f * x * e;
  return x < 0.0f ? h : x - h;
}

/* GELU to bf16 accuracy, for bf16 mode's FFN (fc1's output, which fc2's kernel rounds to
 * bf16, relative error up to 2^-9, after the depthwise conv): erfc(a) = t P(t) e^{-a^2},
 * t = 1 / (1 + p a), P of degree 4 (Abramowitz & Stegun 7.1.26: absolute error <= 1.5e-7),
 * e^{-a^2} by rv_vexpf_bf16; the same erfc form as rv_vgeluf (no branch). About half of
 * rv_vgeluf's operations; error measured in tests/unit/kernels/test_ops.c (test_vmath). */
static inline float rv_vgeluf_bf16(float x) {
  const float a = fabsf(x) * 0.70710678118654752440f;
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float h = 0.5f * x * (p * t * rv_vexpf_bf16(-(a * a)));
  return x < 0.0f ? h : x - h;
}

static inline float rv_vsigmoidf(float x) { return 1.0f / (1.0f + rv_vexpf(-x)); }

/* Sum and max of n floats with 8 partial accumulators (the compilers vectorise the
 * unrolled body; a plain serial reduction would not be reordered without -ffast-math). */
static inline float rv_vsum(const float *x, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int j = 0;
  for (; j + 8 <= n; j += 8)
    for (int u = 0; u < 8; u++) acc[u] += x[j + u];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; j < n; j++) s += x[j];
  return s;
}

static inline float rv_vmax(const float *x, int n) {
  float acc[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                  -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  int j = 0;
  for (; j + 8 <= n; j += 8)
    for (int u = 0; u < 8; u++) acc[u] = x[j + u] > acc[u] ? x[j + u] : acc[u];
  float m = -INFINITY;
  for (int u = 0; u < 8; u++) m = acc[u] > m ? acc[u] : m;
  for (; j < n; j++) m = x[j] > m ? x[j] : m;
  return m;
}

#endif
