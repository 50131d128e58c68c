/* The bf16 pointwise GEMM (AVX512_BF16), float32 accumulation:
 *
 *   y[co][p] = b[co] + sum_ci bf16(w[co][ci]) bf16(x[ci][p])      (y [cout x n], x [cin x n])
 *
 * bf16(v): v rounded to the nearest bfloat16, ties to even (vcvtne2ps2bf16; input
 * denormals flushed to zero as the instruction does). The products of two bf16 values are
 * exact in float32; vdpbf16ps adds two of them (a pair of consecutive ci) to each float32
 * accumulator. The weights are packed once (rv_bf16_pack_weights, by the model when it
 * switches to bf16) as [co / 8][ci / 2][co % 8] pairs of bf16 in 32 bits, zero rows and a
 * zero ci past the ends; the activations are converted per call, one panel of up to
 * 4 x 48 pixels x all ci by the thread that multiplies it (while it is in L2), and each
 * 8 x 48 block of y gets its bias and `post` in the kernel's store.
 *
 * The functions with AVX512_BF16 instructions carry a target attribute: the file is
 * compiled for plain x86-64 and only rv_bf16_supported() CPUs may reach them (the callers
 * check; rv_pointwise_bf16 asserts). */
#include "kernels/ops.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

enum { BM = 8, BN = 48, BPANEL = 4 }; /* rows x pixels of a register block; blocks per panel */

uint16_t rv_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  if ((u & 0x7f800000u) == 0) return (uint16_t)((u >> 16) & 0x8000u);       /* DAZ: +-0 */
  u += 0x7fffu + ((u >> 16) & 1u); /* nearest, ties to even (an overflow becomes inf) */
  return (uint16_t)(u >> 16);
}

float rv_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

size_t rv_bf16_packed_words(int cout, int cin) {
  return (size_t)((cout + BM - 1) / BM * BM) * (size_t)((cin + 1) / 2);
}

void rv_bf16_pack_weights(uint32_t *wp, const float *w, int cout, int cin) {
  const int k2 = (cin + 1) / 2, coutp = (cout + BM - 1) / BM * BM;
  for (int co = 0; co < coutp; co++) {
    uint32_t *d = wp + (size_t)(co / BM) * k2 * BM + co % BM;
    const float *wr = w + (size_t)co * cin;
    for (int i = 0; i < k2; i++) {
      uint32_t lo = 0, hi = 0;
      if (co < cout) {
        lo = rv_f32_to_bf16(wr[2 * i]);
        hi = 2 * i + 1 < cin ? rv_f32_to_bf16(wr[2 * i + 1]) : 0;
      }
      d[(size_t)i * BM] = lo | hi << 16;
    }
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include "kernels/lanes16.h"

/* the hardware check alone (the kernels' precondition) */
static int cpu_bf16(void) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl"))
    return 0; /* these also say the OS saves the zmm state */
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
  return (a >> 5) & 1u; /* CPUID.(EAX=7,ECX=1):EAX[5] AVX512_BF16 */
}

int rv_bf16_supported(void) {
  const char *off = getenv("RAVLT_DISABLE_BF16"); /* tests of the refusal on any CPU */
  if (off && *off && strcmp(off, "0") != 0) return 0;
  return cpu_bf16();
}

#define BF16_TARGET __attribute__((target("avx512bf16,avx512f,avx512bw,avx512vl")))


/* 16 pixels of two rows (x1 NULL: zeros) as 16 bf16 pairs, masked past m pixels */
BF16_TARGET static inline __m512i pack16(const float *x0, const float *x1, __mmask16 m) {
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                       24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                       16, 0);
  const __m512 a = _mm512_maskz_loadu_ps(m, x0);
  const __m512 b = x1 ? _mm512_maskz_loadu_ps(m, x1) : _mm512_setzero_ps();
  const __m512bh h = _mm512_cvtne2ps_pbh(b, a); /* a in the low 16 halves, b in the high */
  return _mm512_permutexvar_epi16(idx, (__m512i)h);
}

/* vp[i][t] = pair (x[2i][p0 + t], x[2i + 1][p0 + t]) for i < k2, t < w (w a multiple of
 * 16 >= np, zeros past np) */
BF16_TARGET static void pack_panel(uint32_t *vp, const float *x, size_t ldx, int cin,
                                   size_t p0, int np, int w) {
  const int k2 = (cin + 1) / 2;
  for (int i = 0; i < k2; i++) {
    const float *x0 = x + (size_t)(2 * i) * ldx + p0;
    const float *x1 = 2 * i + 1 < cin ? x0 + ldx : NULL;
    for (int t = 0; t < w; t += 16) {
      _mm512_storeu_si512((void *)(vp + (size_t)i * w + t),
                          pack16(x0 + t, x1 ? x1 + t : NULL, rv_lanes_below(np - t)));
    }
  }
}

/* rv_vgeluf_bf16 (kernels/vmath.h) on 16 lanes, its operations in its order with the
 * multiply-adds GCC's vectorised loop fuses (the function's callers are compiled with
 * -ffp-contract=fast): x log2(e) + 1.5 2^23 and x log2(e) - n in e^{-a^2}, the Horner steps;
 * bit for bit the loop's results on the inputs tests/unit/backbone/test_bf16_gemm.c sweeps (where
 * e^{-a^2} underflows, |x| > 13.2, GCC folds the clamped exponential to a constant: there
 * both results are below 1e-30). */
BF16_TARGET static inline __m512 gelu16_bf16(__m512 x) {
  const __m512 a = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752440f));
  const __m512 t = _mm512_div_ps(
      _mm512_set1_ps(1.0f),
      _mm512_fmadd_ps(a, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 p = _mm512_fmadd_ps(t, _mm512_set1_ps(1.061405429f), _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  /* rv_vexpf_bf16(-(a a)): -(a a) <= 0, so only the lower clamp */
  __m512 xe = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(a, a));
  const __m512 lo = _mm512_set1_ps(-87.3365f);
  xe = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(xe, lo, _CMP_GT_OQ), lo, xe);
  const __m512 l2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(xe, l2e, _mm512_set1_ps(12582912.0f)),
                                 _mm512_set1_ps(12582912.0f));
  const __m512 f = _mm512_fmsub_ps(xe, l2e, n);
  __m512 e = _mm512_fmadd_ps(f, _mm512_set1_ps(5.5171669075e-02f),
                             _mm512_set1_ps(2.4261112219e-01f));
  e = _mm512_fmadd_ps(e, f, _mm512_set1_ps(6.9326098546e-01f));
  e = _mm512_fmadd_ps(e, f, _mm512_set1_ps(9.9992807354e-01f));
  const __m512i sb = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
  e = _mm512_mul_ps(e, _mm512_castsi512_ps(sb));
  const __m512 h =
      _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_mul_ps(_mm512_mul_ps(p, t), e));
  /* x < 0 ? h : x - h */
  return _mm512_mask_sub_ps(h, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NLT_UQ), x, h);
}

/* c[r ldc + t] = bias[r] + sum_{i < k2} dot(u[i BM + r], v[i ldv + t]) for r < rows,
 * t < nt (stores masked past nt), on NV vectors of 16 columns (NV 1 to 3, a literal) */
BF16_TARGET static inline __attribute__((always_inline)) void
kernel_nv(int NV, int ACT, float *c, size_t ldc, const uint32_t *u, const uint32_t *v,
          size_t ldv, int k2, int rows, int nt, const float *bias, int accumulate) {
  __m512 acc[BM][3];
#pragma GCC unroll 8
  for (int r = 0; r < BM; r++)
#pragma GCC unroll 3
    for (int q = 0; q < NV; q++) acc[r][q] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int i = 0; i < k2; i++) {
    const uint32_t *vi = v + (size_t)i * ldv;
    __m512bh x[3];
#pragma GCC unroll 3
    for (int q = 0; q < NV; q++)
      x[q] = (__m512bh)_mm512_loadu_si512((const void *)(vi + 16 * q));
    const uint32_t *ui = u + (size_t)i * BM;
#pragma GCC unroll 8
    for (int r = 0; r < BM; r++) {
      const __m512bh s = (__m512bh)_mm512_set1_epi32((int)ui[r]);
#pragma GCC unroll 3
      for (int q = 0; q < NV; q++) acc[r][q] = _mm512_dpbf16_ps(acc[r][q], s, x[q]);
    }
  }
  __mmask16 mk[3];
#pragma GCC unroll 3
  for (int q = 0; q < NV; q++) mk[q] = rv_lanes_below(nt - 16 * q);
  /* r runs to BM, unrolled, so that acc[r] is a register: a loop to rows indexes acc at
   * run time, which keeps the accumulators in a stack array (zeroed there first, stored
   * and read back: the 1x1 convs with cin 64 ran 1.2-1.4x slower) */
#pragma GCC unroll 8
  for (int r = 0; r < BM; r++) {
    if (r >= rows) break;
#pragma GCC unroll 3
    for (int q = 0; q < NV; q++) {
      float *cr = c + (size_t)r * ldc + 16 * q;
      const __m512 add = accumulate ? _mm512_maskz_loadu_ps(mk[q], cr)
                                    : _mm512_set1_ps(bias ? bias[r] : 0.0f);
      const __m512 o = _mm512_add_ps(acc[r][q], add);
      _mm512_mask_storeu_ps(cr, mk[q], ACT ? gelu16_bf16(o) : o);
    }
  }
}

/* kernel_nv on as many vectors as nt needs: a tail of 16 or 32 columns skips the third
 * vector's dot products (a 512-query attention tile is 10 blocks of 48 and one of 32) */
BF16_TARGET static void kernel(float *c, size_t ldc, const uint32_t *u, const uint32_t *v,
                               size_t ldv, int k2, int rows, int nt, const float *bias,
                               int accumulate) {
  if (nt > 32)
    kernel_nv(3, 0, c, ldc, u, v, ldv, k2, rows, nt, bias, accumulate);
  else if (nt > 16)
    kernel_nv(2, 0, c, ldc, u, v, ldv, k2, rows, nt, bias, accumulate);
  else
    kernel_nv(1, 0, c, ldc, u, v, ldv, k2, rows, nt, bias, accumulate);
}

/* kernel with rv_vgeluf_bf16 on each output before its store (rv_pointwise_bf16_gelu) */
BF16_TARGET static void kernel_gelu(float *c, size_t ldc, const uint32_t *u, const uint32_t *v,
                                    size_t ldv, int k2, int rows, int nt, const float *bias) {
  if (nt > 32)
    kernel_nv(3, 1, c, ldc, u, v, ldv, k2, rows, nt, bias, 0);
  else if (nt > 16)
    kernel_nv(2, 1, c, ldc, u, v, ldv, k2, rows, nt, bias, 0);
  else
    kernel_nv(1, 1, c, ldc, u, v, ldv, k2, rows, nt, bias, 0);
}


rv_status rv_pointwise_bf16(float *y, const uint32_t *wp, const float *b, const float *x,
                            int cout, int cin, size_t n, rv_row_fn post, rv_arena *scratch) {
  rv_row_post pp = {post};
  return rv_pointwise_bf16_ctx(y, wp, b, x, cout, cin, n, post ? rv_row_post_block : NULL, &pp,
                               scratch);
}

static rv_status pointwise_bf16(float *y, const uint32_t *wp, const float *b, const float *x,
                                int cout, int cin, size_t n, rv_block_fn post, void *arg,
                                int gelu, rv_arena *scratch) {
  RV_ASSERT(cout > 0 && cin > 0 && wp && scratch != NULL);
  RV_ASSERT(cpu_bf16());
  if (n == 0) return RV_OK;
  const int k2 = (cin + 1) / 2, nth = omp_get_max_threads();
  /* panels of BPANEL blocks, or of one block where that leaves threads idle */
  int pw = BN * BPANEL;
  if ((n + pw - 1) / pw < (size_t)2 * nth) pw = BN;
  const size_t panels = (n + pw - 1) / pw;
  rv_arena_mark mark = rv_arena_get_mark(scratch);
  uint32_t *vbuf = (uint32_t *)rv_arena_floats(scratch, (size_t)k2 * pw * nth);
  if (!vbuf) {
    rv_arena_release(scratch, mark);
    return RV_ERR_NOMEM;
  }
#pragma omp parallel if (panels > 1 && (size_t)cout * cin * n >= 1000000)
  {
    uint32_t *vp = vbuf + (size_t)k2 * pw * omp_get_thread_num();
#pragma omp for schedule(static)
    for (size_t pi = 0; pi < panels; pi++) {
      const size_t p0 = pi * pw;
      const int np = (int)(n - p0 < (size_t)pw ? n - p0 : (size_t)pw);
      const int w = (np + BN - 1) / BN * BN;
      pack_panel(vp, x, n, cin, p0, np, w);
      for (int co = 0; co < cout; co += BM) {
        const int rows = cout - co < BM ? cout - co : BM;
        const uint32_t *u = wp + (size_t)(co / BM) * k2 * BM;
        for (int t = 0; t < np; t += BN) {
          const int nt = np - t < BN ? np - t : BN;
          float *yc = y + (size_t)co * n + p0 + t;
          if (gelu)
            kernel_gelu(yc, n, u, vp + t, (size_t)w, k2, rows, nt, b ? b + co : NULL);
          else
            kernel(yc, n, u, vp + t, (size_t)w, k2, rows, nt, b ? b + co : NULL, 0);
          if (post) post(arg, yc, n, co, rows, p0 + t, (size_t)nt);
        }
      }
    }
  }
  rv_arena_release(scratch, mark);
  return RV_OK;
}

rv_status rv_pointwise_bf16_ctx(float *y, const uint32_t *wp, const float *b, const float *x,
                                int cout, int cin, size_t n, rv_block_fn post, void *arg,
                                rv_arena *scratch) {
  return pointwise_bf16(y, wp, b, x, cout, cin, n, post, arg, 0, scratch);
}

rv_status rv_pointwise_bf16_gelu(float *y, const uint32_t *wp, const float *b, const float *x,
                                 int cout, int cin, size_t n, rv_arena *scratch) {
  return pointwise_bf16(y, wp, b, x, cout, cin, n, NULL, NULL, 1, scratch);
}

/* ---- serial pieces for GEMMs whose both operands change per call (softmax attention) ---- */

BF16_TARGET static inline __m512i pair_words(__m512 lo16, __m512 hi16) {
  /* bf16 of 32 consecutive floats: as 32-bit words, pairs (x[2i], x[2i + 1]) in order */
  return (__m512i)_mm512_cvtne2ps_pbh(hi16, lo16);
}

/* bf16(sc x[j]) for j < min(rem, 32), zeros past rem, as 16 pairs (words of pair_words) */
BF16_TARGET static inline __m512i pairs32(const float *x, int rem, __m512 sc) {
  return pair_words(_mm512_mul_ps(_mm512_maskz_loadu_ps(rv_lanes_below(rem), x), sc),
                    _mm512_mul_ps(_mm512_maskz_loadu_ps(rv_lanes_below(rem - 16), x + 16), sc));
}

BF16_TARGET void rv_bf16_pack_rows(uint32_t *wp, size_t group_words, const float *a,
                                   size_t lda, int m, int k, float scale) {
  const int k2 = (k + 1) / 2;
  const __m512 sc = _mm512_set1_ps(scale);
  uint32_t tmp[16];
  for (int r = 0; r < (m + BM - 1) / BM * BM; r++) {
    uint32_t *d = wp + (size_t)(r / BM) * group_words + r % BM;
    if (r >= m) {
      for (int i = 0; i < k2; i++) d[(size_t)i * BM] = 0;
      continue;
    }
    const float *ar = a + (size_t)r * lda;
    for (int c = 0; c < k; c += 32) {
      const int rem = k - c;
      _mm512_storeu_si512((void *)tmp, pairs32(ar + c, rem, sc));
      const int nw = (rem + 1) / 2 < 16 ? (rem + 1) / 2 : 16;
      for (int i = 0; i < nw; i++) d[(size_t)(c / 2 + i) * BM] = tmp[i];
    }
  }
}

BF16_TARGET void rv_bf16_pack_cols(uint32_t *wp, size_t group_words, const float *a,
                                   size_t lda, int m, int k, float scale) {
  const int k2 = (k + 1) / 2, mp = (m + BM - 1) / BM * BM;
  const __m512 sc = _mm512_set1_ps(scale);
  for (int r0 = 0; r0 < mp; r0 += 16) {
    const __mmask16 msk = rv_lanes_below(m - r0);
    uint32_t *g0 = wp + (size_t)(r0 / BM) * group_words;
    uint32_t *g1 = r0 + BM < mp ? g0 + group_words : NULL;
    for (int i = 0; i < k2; i++) {
      const float *x0 = a + (size_t)(2 * i) * lda + r0;
      const __m512 lo = _mm512_mul_ps(_mm512_maskz_loadu_ps(msk, x0), sc);
      const __m512 hi = 2 * i + 1 < k
                            ? _mm512_mul_ps(_mm512_maskz_loadu_ps(msk, x0 + lda), sc)
                            : _mm512_setzero_ps();
      /* bf16 of lo in the low halves of the words, hi in the high halves */
      const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25,
                                           9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2,
                                           17, 1, 16, 0);
      const __m512i w = _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
      _mm256_storeu_si256((__m256i *)(g0 + (size_t)i * BM), _mm512_castsi512_si256(w));
      if (g1) _mm256_storeu_si256((__m256i *)(g1 + (size_t)i * BM), _mm512_extracti64x4_epi64(w, 1));
    }
  }
}

size_t rv_bf16_panel_words(int k, int n) {
  return (size_t)((k + 1) / 2) * (size_t)((n + BN - 1) / BN * BN);
}

BF16_TARGET void rv_bf16_pack_panel(uint32_t *vp, const float *b, size_t ldb, int k, int n) {
  pack_panel(vp, b, ldb, k, 0, n, (n + BN - 1) / BN * BN);
}

/* Rows [r, r1) of column c of the panel (w words a row) from bt's row br (k floats): 32
 * floats become 16 pairs, stored one per panel row */
BF16_TARGET static void panel_t_column(uint32_t *vp, int w, const float *br, int k, int r,
                                       int r1, int c) {
  uint32_t tmp[16];
  for (; r < r1; r += 32) {
    const int rem = k - r;
    _mm512_storeu_si512((void *)tmp, pairs32(br + r, rem, _mm512_set1_ps(1.0f)));
    const int nw = (rem + 1) / 2 < 16 ? (rem + 1) / 2 : 16;
    for (int i = 0; i < nw; i++) vp[(size_t)(r / 2 + i) * w + c] = tmp[i];
  }
}

/* t[i][j] = r[j][i]: a 16 x 16 transpose of 32-bit words (pairs within 128-bit lanes, then
 * pairs of pairs, then the 4 x 4 transpose of the lanes) */
BF16_TARGET static void transpose16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int j = 0; j < 16; j += 2) {
    t[j] = _mm512_unpacklo_epi32(r[j], r[j + 1]);
    t[j + 1] = _mm512_unpackhi_epi32(r[j], r[j + 1]);
  }
  for (int j = 0; j < 16; j += 4) { /* u[4g + m], lane L: rows 4g.. 4g+3 of word 4L + m */
    u[j] = _mm512_unpacklo_epi64(t[j], t[j + 2]);
    u[j + 1] = _mm512_unpackhi_epi64(t[j], t[j + 2]);
    u[j + 2] = _mm512_unpacklo_epi64(t[j + 1], t[j + 3]);
    u[j + 3] = _mm512_unpackhi_epi64(t[j + 1], t[j + 3]);
  }
  for (int m = 0; m < 4; m++) {
    const __m512i x0 = _mm512_shuffle_i32x4(u[m], u[4 + m], 0x44);
    const __m512i x1 = _mm512_shuffle_i32x4(u[m], u[4 + m], 0xEE);
    const __m512i x2 = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0x44);
    const __m512i x3 = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0xEE);
    r[m] = _mm512_shuffle_i32x4(x0, x2, 0x88);
    r[4 + m] = _mm512_shuffle_i32x4(x0, x2, 0xDD);
    r[8 + m] = _mm512_shuffle_i32x4(x1, x3, 0x88);
    r[12 + m] = _mm512_shuffle_i32x4(x1, x3, 0xDD);
  }
}

/* the panel of B [k x n] given transposed: B[r][c] = bt[c ldb + r] (a row of bt is a
 * column of B: 32 of its floats become 16 pairs, one per panel row); columns [c0, c1) of
 * the panel (c1 up to n rounded up to BN; zeros past n). 16 columns x 32 rows at a time
 * through a transpose in registers (the 16 pairs of a column stored one word per panel
 * row cost a quarter of RALA's bf16 time at stage 1), the rest column by column. */
BF16_TARGET void rv_bf16_pack_panel_t(uint32_t *vp, const float *bt, size_t ldb, int k, int n,
                                      int c0, int c1) {
  const int w = (n + BN - 1) / BN * BN;
  RV_ASSERT(c0 >= 0 && c1 <= w);
  /* 64 panel rows (128 of k) at a time, all the columns: their cache lines stay in L1 while
   * the columns' words land in them */
  for (int r0 = 0; r0 < k; r0 += 128) {
    const int r1 = r0 + 128 < k ? r0 + 128 : k;
    int c = c0;
    for (; c + 16 <= c1 && c + 16 <= n; c += 16) {
      int r = r0;
      for (; r + 32 <= r1; r += 32) {
        __m512i x[16];
        for (int j = 0; j < 16; j++) {
          const float *br = bt + (size_t)(c + j) * ldb + r;
          x[j] = pair_words(_mm512_loadu_ps(br), _mm512_loadu_ps(br + 16));
        }
        transpose16(x);
        for (int i = 0; i < 16; i++)
          _mm512_storeu_si512((void *)(vp + (size_t)(r / 2 + i) * w + c), x[i]);
      }
      if (r < r1)
        for (int j = 0; j < 16; j++)
          panel_t_column(vp, w, bt + (size_t)(c + j) * ldb, k, r, r1, c + j);
    }
    for (; c < c1 && c < n; c++) panel_t_column(vp, w, bt + (size_t)c * ldb, k, r0, r1, c);
    if (c < c1) /* the columns past n: zeros, row by row */
      for (int i = r0 / 2; i < (r1 + 1) / 2; i++)
        memset(vp + (size_t)i * w + c, 0, sizeof(uint32_t) * (size_t)(c1 - c));
  }
}

BF16_TARGET void rv_bf16_gemm_panel(float *y, size_t ldy, const uint32_t *ap,
                                    size_t group_words, const uint32_t *vp, int m, int k, int n,
                                    int accumulate) {
  RV_ASSERT(cpu_bf16());
  const int k2 = (k + 1) / 2, w = (n + BN - 1) / BN * BN;
  for (int t = 0; t < n; t += BN) {
    const int nt = n - t < BN ? n - t : BN;
    for (int r = 0; r < m; r += BM)
      kernel(y + (size_t)r * ldy + t, ldy, ap + (size_t)(r / BM) * group_words, vp + t,
             (size_t)w, k2, m - r < BM ? m - r : BM, nt, NULL, accumulate);
  }
}

/* The conversion the kernel applies to activations, exposed for the tests:
 * out[i] = bf16(x[i]) for i < n, by the vector instruction. */
BF16_TARGET void rv_bf16_convert_vec(uint16_t *out, const float *x, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = rv_lanes_below((long long)(n - i));
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i));
    _mm256_mask_storeu_epi16((void *)(out + i), m, (__m256i)h);
  }
}
/* ---- linear layers: y[n x cout] = x[n x cin] W^T (+ y), W packed once ------------------
 * W as panels of BN output features: wq[s][i][t] = pair (W[BN s + t][2i], W[BN s + t][2i+1])
 * (zeros past cout / cin); x's rows packed per call, a block of LKC pairs of inputs at a
 * time, as rv_bf16_pack_rows lays them out; y accumulated block by block (float32). */
enum { LKC = 512 }; /* pairs of inputs per block: a panel block is LKC x BN words (96 KB) */

size_t rv_bf16_linear_words(int cout, int cin) {
  return (size_t)((cout + BN - 1) / BN) * BN * (size_t)((cin + 1) / 2);
}

void rv_bf16_linear_pack(uint32_t *wq, const float *w, int cout, int cin) {
  const int k2 = (cin + 1) / 2, strips = (cout + BN - 1) / BN;
  for (int s = 0; s < strips; s++)
    for (int i = 0; i < k2; i++)
      for (int t = 0; t < BN; t++) {
        const int co = s * BN + t;
        uint32_t lo = 0, hi = 0;
        if (co < cout) {
          lo = rv_f32_to_bf16(w[(size_t)co * cin + 2 * i]);
          hi = 2 * i + 1 < cin ? rv_f32_to_bf16(w[(size_t)co * cin + 2 * i + 1]) : 0;
        }
        wq[((size_t)s * k2 + i) * BN + t] = lo | hi << 16;
      }
}

rv_status rv_linear_bf16(float *y, const uint32_t *wq, const float *x, int n, int cout,
                         int cin, rv_arena *scratch) {
  RV_ASSERT(n >= 0 && cout > 0 && cin > 0 && wq && scratch != NULL);
  RV_ASSERT(cpu_bf16());
  if (n == 0) return RV_OK;
  const int k2 = (cin + 1) / 2, strips = (cout + BN - 1) / BN, groups = (n + BM - 1) / BM;
  const int kc = k2 < LKC ? k2 : LKC;
  rv_arena_mark mark = rv_arena_get_mark(scratch);
  uint32_t *xa = (uint32_t *)rv_arena_floats(scratch, (size_t)groups * BM * kc);
  if (!xa) {
    rv_arena_release(scratch, mark);
    return RV_ERR_NOMEM;
  }
  const int par = (size_t)n * cout * cin >= 1000000;
#pragma omp parallel if (par)
  for (int i0 = 0; i0 < k2; i0 += kc) {
    const int kb = k2 - i0 < kc ? k2 - i0 : kc;      /* pairs in this block */
    const int kcols = 2 * i0 + 2 * kb > cin ? cin - 2 * i0 : 2 * kb; /* inputs */
#pragma omp for schedule(static)
    for (int g = 0; g < groups; g++) {
      const int r0 = g * BM, rows = n - r0 < BM ? n - r0 : BM;
      rv_bf16_pack_rows(xa + (size_t)g * BM * kb, (size_t)BM * kb, x + (size_t)r0 * cin + 2 * i0,
                        (size_t)cin, rows, kcols, 1.0f);
    }
#pragma omp for schedule(static)
    for (int s = 0; s < strips; s++) {
      const uint32_t *v = wq + ((size_t)s * k2 + i0) * BN;
      const int nt = cout - s * BN < BN ? cout - s * BN : BN;
      for (int g = 0; g < groups; g++) {
        const int r0 = g * BM, rows = n - r0 < BM ? n - r0 : BM;
        kernel(y + (size_t)r0 * cout + s * BN, (size_t)cout, xa + (size_t)g * BM * kb, v, BN, kb,
               rows, nt, NULL, 1);
      }
    }
  }
  rv_arena_release(scratch, mark);
  return RV_OK;
}

/* One 8 x 48 block (the kernel itself) for GEMMs laid out by their caller (Winograd). */
BF16_TARGET void rv_bf16_block(float *c, size_t ldc, const uint32_t *u, const uint32_t *v,
                               size_t ldv, int k2, int rows, int nt, const float *bias,
                               int accumulate) {
  kernel(c, ldc, u, v, ldv, k2, rows, nt, bias, accumulate);
}

/* c[r ldc + j] = sum_{i < k2} dot(a[r lda + i], b[i 64 + j]) for r < 6, j < 64: rows of
 * pairs broadcast, b packed in panels of 64 columns (the channels-last Winograd GEMM) */
BF16_TARGET void rv_bf16_rows_block(float *c, size_t ldc, const uint32_t *a, size_t lda,
                                    const uint32_t *b, int k2) {
  __m512 acc[6][4];
#pragma GCC unroll 6
  for (int r = 0; r < 6; r++)
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) acc[r][q] = _mm512_setzero_ps();
  for (int i = 0; i < k2; i++) {
    const uint32_t *bi = b + (size_t)i * 64;
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void *)bi);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512((const void *)(bi + 16));
    const __m512bh b2 = (__m512bh)_mm512_loadu_si512((const void *)(bi + 32));
    const __m512bh b3 = (__m512bh)_mm512_loadu_si512((const void *)(bi + 48));
#pragma GCC unroll 6
    for (int r = 0; r < 6; r++) {
      const __m512bh s = (__m512bh)_mm512_set1_epi32((int)a[(size_t)r * lda + i]);
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], s, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], s, b1);
      acc[r][2] = _mm512_dpbf16_ps(acc[r][2], s, b2);
      acc[r][3] = _mm512_dpbf16_ps(acc[r][3], s, b3);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < 6; r++)
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) _mm512_storeu_ps(c + (size_t)r * ldc + 16 * q, acc[r][q]);
}

/* vp[i ldv + t] = pair (x[2i ldx + t], x[(2i + 1) ldx + t]) for i < (k + 1) / 2, t < n
 * (n a multiple of 16; x rows past k read as zeros) */
BF16_TARGET void rv_bf16_pack_pairs(uint32_t *vp, size_t ldv, const float *x, size_t ldx, int k,
                                    int n) {
  for (int i = 0; i < (k + 1) / 2; i++) {
    const float *x0 = x + (size_t)(2 * i) * ldx;
    const float *x1 = 2 * i + 1 < k ? x0 + ldx : NULL;
    for (int t = 0; t < n; t += 16)
      _mm512_storeu_si512((void *)(vp + (size_t)i * ldv + t),
                          pack16(x0 + t, x1 ? x1 + t : NULL, (__mmask16)0xffff));
  }
}
#else
int rv_bf16_supported(void) { return 0; }
void rv_bf16_pack_rows(uint32_t *wp, size_t group_words, const float *a, size_t lda, int m,
                       int k, float scale) {
  (void)wp, (void)group_words, (void)a, (void)lda, (void)m, (void)k, (void)scale;
  RV_ASSERT(0 && "bf16 without AVX512_BF16");
}
void rv_bf16_pack_cols(uint32_t *wp, size_t group_words, const float *a, size_t lda, int m,
                       int k, float scale) {
  (void)wp, (void)group_words, (void)a, (void)lda, (void)m, (void)k, (void)scale;
  RV_ASSERT(0 && "bf16 without AVX512_BF16");
}
size_t rv_bf16_panel_words(int k, int n) { return (size_t)((k + 1) / 2) * (size_t)n; }
void rv_bf16_pack_panel(uint32_t *vp, const float *b, size_t ldb, int k, int n) {
  (void)vp, (void)b, (void)ldb, (void)k, (void)n;
  RV_ASSERT(0 && "bf16 without AVX512_BF16");
}
void rv_bf16_pack_panel_t(uint32_t *vp, const float *bt, size_t ldb, int k, int n, int c0,
                          int c1) {
  (void)vp, (void)bt, (void)ldb, (void)k, (void)n, (void)c0, (void)c1;
  RV_ASSERT(0 && "bf16 without AVX512_BF16");
}
void rv_bf16_gemm_panel(float *y, size_t ldy, const uint32_t *ap, size_t group_words,
                        const uint32_t *vp, int m, int k, int n, int accumulate) {
  (void)y, (void)ldy, (void)ap, (void)group_words, (void)vp, (void)m, (void)k, (void)n;
  (void)accumulate;
  RV_ASSERT(0 && "bf16 without AVX512_BF16");
}
rv_status rv_pointwise_bf16(float *y, const uint32_t *wp, const float *b, const float *x,
                            int cout, int cin, size_t n, rv_row_fn post, rv_arena *scratch) {
  (void)y, (void)wp, (void)b, (void)x, (void)cout, (void)cin, (void)n, (void)post;
  (void)scratch;
  RV_ASSERT(0 && "rv_pointwise_bf16 without AVX512_BF16");
  return RV_ERR_UNSUPPORTED;
}
rv_status rv_pointwise_bf16_ctx(float *y, const uint32_t *wp, const float *b, const float *x,
                                int cout, int cin, size_t n, rv_block_fn post, void *arg,
                                rv_arena *scratch) {
  (void)y, (void)wp, (void)b, (void)x, (void)cout, (void)cin, (void)n, (void)post, (void)arg;
  (void)scratch;
  RV_ASSERT(0 && "rv_pointwise_bf16_ctx without AVX512_BF16");
  return RV_ERR_UNSUPPORTED;
}
rv_status rv_pointwise_bf16_gelu(float *y, const uint32_t *wp, const float *b, const float *x,
                                 int cout, int cin, size_t n, rv_arena *scratch) {
  (void)y, (void)wp, (void)b, (void)x, (void)cout, (void)cin, (void)n, (void)scratch;
  RV_ASSERT(0 && "rv_pointwise_bf16_gelu without AVX512_BF16");
  return RV_ERR_UNSUPPORTED;
}
void rv_bf16_convert_vec(uint16_t *out, const float *x, size_t n) {
  (void)out, (void)x, (void)n;
  RV_ASSERT(0 && "rv_bf16_convert_vec without AVX512_BF16");
}
size_t rv_bf16_linear_words(int cout, int cin) {
  return (size_t)((cout + 47) / 48) * 48 * (size_t)((cin + 1) / 2);
}
void rv_bf16_linear_pack(uint32_t *wq, const float *w, int cout, int cin) {
  (void)wq, (void)w, (void)cout, (void)cin;
  RV_ASSERT(0 && "bf16 without AVX512_BF16");
}
rv_status rv_linear_bf16(float *y, const uint32_t *wq, const float *x, int n, int cout,
                         int cin, rv_arena *scratch) {
  (void)y, (void)wq, (void)x, (void)n, (void)cout, (void)cin, (void)scratch;
  RV_ASSERT(0 && "rv_linear_bf16 without AVX512_BF16");
  return RV_ERR_UNSUPPORTED;
}
void rv_bf16_block(float *c, size_t ldc, const uint32_t *u, const uint32_t *v, size_t ldv,
                   int k2, int rows, int nt, const float *bias, int accumulate) {
  (void)c, (void)ldc, (void)u, (void)v, (void)ldv, (void)k2, (void)rows, (void)nt;
  (void)bias, (void)accumulate;
  RV_ASSERT(0 && "bf16 without AVX512_BF16");
}
void rv_bf16_pack_pairs(uint32_t *vp, size_t ldv, const float *x, size_t ldx, int k, int n) {
  (void)vp, (void)ldv, (void)x, (void)ldx, (void)k, (void)n;
  RV_ASSERT(0 && "bf16 without AVX512_BF16");
}
void rv_bf16_rows_block(float *c, size_t ldc, const uint32_t *a, size_t lda, const uint32_t *b,
                        int k2) {
  (void)c, (void)ldc, (void)a, (void)lda, (void)b, (void)k2;
  RV_ASSERT(0 && "bf16 without AVX512_BF16");
}
#endif
