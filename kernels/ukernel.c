/* The register-blocked AVX-512 GEMM kernels of the fused and channels-last Winograd paths
 * (kernels/winograd.c) and of the pointwise convolution below, and the pointwise convolution
 *
 *   y[co][p] = b[co] + sum_ci w[co][ci] x[ci][p]      (y [cout x n], x [cin x n], rows n apart)
 *
 * that replaces a BLAS call where the CPU has AVX-512F and the rows are long: the weights
 * are packed once per call as [co / 8][ci][co % 8] (cout x cin floats: 1 / n of the
 * multiply-adds' worth of traffic), and the kernel reads x in place, 48 pixels of each of
 * the cin rows, so nothing of x is copied (OpenBLAS packs both operands: 8% of the RAVLT-S
 * backbone at 512x512 was sgemm_itcopy / oncopy / incopy) and the bias is added in the
 * kernel's store instead of a pass that fills y first. Each output sums over ci in order
 * with FMA and then adds b, as OpenBLAS's kernel does with beta 1 over a y filled with b:
 * the same bits on this machine where OpenBLAS does not split the sum over ci
 * (tests/unit/kernels/test_ops.c compares with the BLAS path to a tolerance, not bits). Threads take
 * (48-pixel column, 64-channel group) tasks. */
#include "kernels/ops.h"

#include <omp.h>
#include <string.h>

/* rows shorter than this go to BLAS: with few pixels the per-call packing of W and its
 * re-reading per 48-pixel column cost more than OpenBLAS's packing of x (the crossover
 * measured: bench/RESULTS.md, "Measurements behind the code's rules"). */
#define UK_MIN_PIXELS 4096

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "kernels/lanes16.h"

/* The register block of both kernels: R rows x NV vectors of 16 accumulators,
 *   c[r ldc + t] = (bias ? bias[r] : 0) + sum_{i < k} s[r sr + i si] v[i ldv + t]
 * for r < R, t < nt <= 16 NV (masked loads and stores past nt unless full): s broadcast,
 * v loaded as vectors. R and NV are literals at the call sites (the arrays below are
 * scalarised into registers: 24 accumulators). */
#define MAXR 8
#define MAXV 4
__attribute__((target("avx512f,fma"))) static inline __attribute__((always_inline)) void
block_body(int R, int NV, float *restrict c, size_t ldc, const float *restrict s, size_t sr,
           size_t si, const float *restrict v, size_t ldv, int k, int nt, const float *bias,
           int full, int accumulate) {
  __mmask16 mk[MAXV];
#pragma GCC unroll 4
  for (int q = 0; q < NV; q++) {
    const int rem = nt - 16 * q;
    mk[q] = full ? (__mmask16)0xffff : rv_lanes_below(rem);
  }
  __m512 acc[MAXR][MAXV];
#pragma GCC unroll 16
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int q = 0; q < NV; q++) acc[r][q] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int i = 0; i < k; i++) {
    __m512 x[MAXV];
    const float *vi = v + (size_t)i * ldv;
#pragma GCC unroll 4
    for (int q = 0; q < NV; q++)
      x[q] = full ? _mm512_loadu_ps(vi + 16 * q) : _mm512_maskz_loadu_ps(mk[q], vi + 16 * q);
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
      const __m512 b = _mm512_set1_ps(s[(size_t)r * sr + (size_t)i * si]);
#pragma GCC unroll 4
      for (int q = 0; q < NV; q++) acc[r][q] = _mm512_fmadd_ps(b, x[q], acc[r][q]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; r++) {
    const __m512 br = _mm512_set1_ps(bias ? bias[r] : 0.0f);
#pragma GCC unroll 4
    for (int q = 0; q < NV; q++) {
      float *cq = c + (size_t)r * ldc + 16 * q;
      const __m512 cv = full ? _mm512_loadu_ps(cq) : _mm512_maskz_loadu_ps(mk[q], cq);
      const __m512 o = accumulate ? _mm512_add_ps(acc[r][q], cv)
                       : bias     ? _mm512_add_ps(acc[r][q], br)
                                  : acc[r][q];
      if (full)
        _mm512_storeu_ps(c + (size_t)r * ldc + 16 * q, o);
      else
        _mm512_mask_storeu_ps(c + (size_t)r * ldc + 16 * q, mk[q], o);
    }
  }
}

/* block_body on UK_MR rows and as many vectors as nt needs: a tail of 16 or 32 columns on
 * 1 or 2 vectors (masked loads of the third still cost its FMAs: a 256-token attention is
 * 5 blocks of 48 and one of 16) */
__attribute__((target("avx512f,fma"))) static inline __attribute__((always_inline)) void
block_cols(float *c, size_t ldc, const float *u, const float *v, size_t ldv, int k, int nt,
           const float *bias, int accumulate) {
  if (nt == UK_NT)
    block_body(UK_MR, UK_NT / 16, c, ldc, u, 1, UK_MR, v, ldv, k, UK_NT, bias, 1, accumulate);
  else if (nt <= 16)
    block_body(UK_MR, 1, c, ldc, u, 1, UK_MR, v, ldv, k, nt, bias, 0, accumulate);
  else if (nt <= 32)
    block_body(UK_MR, 2, c, ldc, u, 1, UK_MR, v, ldv, k, nt, bias, 0, accumulate);
  else
    block_body(UK_MR, UK_NT / 16, c, ldc, u, 1, UK_MR, v, ldv, k, nt, bias, 0, accumulate);
}

__attribute__((target("avx512f,fma"))) void rv_ukernel_f32(float *c, size_t ldc, const float *u,
                                                          const float *v, size_t ldv, int k,
                                                          int nt, const float *bias) {
  block_cols(c, ldc, u, v, ldv, k, nt, bias, 0);
}

__attribute__((target("avx512f,fma"))) void rv_ukernel_acc_f32(float *c, size_t ldc,
                                                              const float *u, const float *v,
                                                              size_t ldv, int k, int nt) {
  block_cols(c, ldc, u, v, ldv, k, nt, NULL, 1);
}

__attribute__((target("avx512f,fma"))) void rv_ukernel_rows_f32(float *c, size_t ldc,
                                                               const float *a, size_t lda,
                                                               const float *b, int k) {
  block_body(UK_RR, UK_RC / 16, c, ldc, a, lda, 1, b, UK_RC, k, UK_RC, NULL, 1, 0);
}

int rv_ukernel_supported(void) { return __builtin_cpu_supports("avx512f"); }
#else
void rv_ukernel_f32(float *c, size_t ldc, const float *u, const float *v, size_t ldv, int k,
                    int nt, const float *bias) {
  (void)c, (void)ldc, (void)u, (void)v, (void)ldv, (void)k, (void)nt, (void)bias;
  RV_ASSERT(0 && "rv_ukernel_f32 without AVX-512");
}
void rv_ukernel_acc_f32(float *c, size_t ldc, const float *u, const float *v, size_t ldv, int k,
                        int nt) {
  (void)c, (void)ldc, (void)u, (void)v, (void)ldv, (void)k, (void)nt;
  RV_ASSERT(0 && "rv_ukernel_acc_f32 without AVX-512");
}
void rv_ukernel_rows_f32(float *c, size_t ldc, const float *a, size_t lda, const float *b,
                         int k) {
  (void)c, (void)ldc, (void)a, (void)lda, (void)b, (void)k;
  RV_ASSERT(0 && "rv_ukernel_rows_f32 without AVX-512");
}
int rv_ukernel_supported(void) { return 0; }
#endif

/* up[co / UK_MR][ci][co % UK_MR] = w[co][ci], cout rounded up to UK_MR with zero rows */
static void pack_weights(float *up, const float *w, int cout, int cin) {
  const int coutp = (cout + UK_MR - 1) / UK_MR * UK_MR;
  for (int co = 0; co < coutp; co++) {
    float *uc = up + (size_t)(co / UK_MR) * cin * UK_MR + co % UK_MR;
    const float *wr = w + (size_t)co * cin;
    for (int ci = 0; ci < cin; ci++) uc[(size_t)ci * UK_MR] = co < cout ? wr[ci] : 0.0f;
  }
}

rv_status rv_pointwise_f32(float *y, const float *w, const float *b, const float *x, int cout,
                           int cin, size_t n, rv_arena *scratch) {
  return rv_pointwise_post_f32(y, w, b, x, cout, cin, n, NULL, scratch);
}

void rv_row_post_block(void *arg, float *blk, size_t ldy, int c0, int rows, size_t p0,
                       size_t len) {
  (void)c0, (void)p0;
  for (int r = 0; r < rows; r++) ((const rv_row_post *)arg)->fn(blk + (size_t)r * ldy, len);
}

rv_status rv_pointwise_post_f32(float *y, const float *w, const float *b, const float *x,
                                int cout, int cin, size_t n, rv_row_fn post, rv_arena *scratch) {
  rv_row_post pp = {post};
  return rv_pointwise_ctx_f32(y, w, b, x, cout, cin, n, post ? rv_row_post_block : NULL, &pp, scratch);
}

rv_status rv_pointwise_ctx_f32(float *y, const float *w, const float *b, const float *x,
                               int cout, int cin, size_t n, rv_block_fn post, void *arg,
                               rv_arena *scratch) {
  RV_ASSERT(cout > 0 && cin > 0 && scratch != NULL);
  if (n == 0) return RV_OK;
  if (!rv_ukernel_supported() || n < UK_MIN_PIXELS) {
    if (b) {
#pragma omp parallel for schedule(static) if ((size_t)cout * n >= 65536)
      for (int o = 0; o < cout; o++)
        for (size_t l = 0; l < n; l++) y[(size_t)o * n + l] = b[o];
    }
    rv_gemm_f32(0, 0, cout, (int)n, cin, 1.0f, w, cin, x, (int)n, b ? 1.0f : 0.0f, y, (int)n);
    if (post) {
#pragma omp parallel for schedule(static) if ((size_t)cout * n >= 65536)
      for (int o = 0; o < cout; o++) post(arg, y + (size_t)o * n, n, o, 1, 0, n);
    }
    return RV_OK;
  }
  const int coutp = (cout + UK_MR - 1) / UK_MR * UK_MR;
  rv_arena_mark mark = rv_arena_get_mark(scratch);
  float *up = rv_arena_floats(scratch, (size_t)coutp * cin);
  float *tail = rv_arena_floats(scratch, (size_t)UK_MR * UK_NT * omp_get_max_threads());
  if (!up || !tail) {
    rv_arena_release(scratch, mark);
    return RV_ERR_NOMEM;
  }
  pack_weights(up, w, cout, cin);
  enum { GROUP = 64 }; /* output channels per task (8 kernel calls on one column) */
  const size_t cols = (n + UK_NT - 1) / UK_NT, groups = (size_t)(coutp + GROUP - 1) / GROUP;
  const size_t tasks = cols * groups;
#pragma omp parallel if (tasks > 1 && (size_t)cout * cin * n >= 1000000)
  {
    float *tb = tail + (size_t)UK_MR * UK_NT * omp_get_thread_num();
#pragma omp for schedule(static)
    for (size_t t = 0; t < tasks; t++) {
      const size_t col = t / groups, p0 = col * UK_NT;
      const int nt = (int)(n - p0 < UK_NT ? n - p0 : UK_NT);
      const int c0 = (int)(t % groups) * GROUP, c1 = c0 + GROUP < coutp ? c0 + GROUP : coutp;
      for (int co = c0; co < c1; co += UK_MR) {
        const float *bias = b ? b + co : NULL;
        const int rows = cout - co < UK_MR ? cout - co : UK_MR;
        if (rows == UK_MR) {
          rv_ukernel_f32(y + (size_t)co * n + p0, n, up + (size_t)co * cin, x + p0, n, cin, nt,
                         bias);
        } else { /* the last rows past cout: through a scratch tile */
          float bb[UK_MR] = {0};
          for (int r = 0; r < rows; r++) bb[r] = b ? b[co + r] : 0.0f;
          rv_ukernel_f32(tb, UK_NT, up + (size_t)co * cin, x + p0, n, cin, nt, b ? bb : NULL);
          for (int r = 0; r < rows; r++)
            memcpy(y + (size_t)(co + r) * n + p0, tb + (size_t)r * UK_NT, sizeof(float) * nt);
        }
        if (post) /* while the block is in L1 */
          post(arg, y + (size_t)co * n + p0, n, co, rows, p0, (size_t)nt);
      }
    }
  }
  rv_arena_release(scratch, mark);
  return RV_OK;
}
