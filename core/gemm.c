/* GEMM: row-major C = alpha * op(A) * op(B) + beta * C via OpenBLAS, and a naive twin.
 * op(A) is [m x k] (A stored [m x k], lda >= k, or transposed: stored [k x m], lda >= m);
 * op(B) is [k x n] likewise. Never called from inside an OpenMP parallel region. */
#include "core/ops.h"

#include <cblas.h>

void rv_gemm_f32(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc) {
  RV_ASSERT(m >= 0 && n >= 0 && k >= 0);
  if (m == 0 || n == 0) return;
  if (k == 0) { /* C = beta * C (BLAS implementations differ on k == 0) */
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) c[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[(size_t)i * ldc + j];
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* Reference: plain triple loop, double accumulation. beta == 0 ignores C's old contents
 * (as BLAS does, so NaN garbage in C does not propagate). */
void rv_gemm_naive_f32(int trans_a, int trans_b, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc) {
  RV_ASSERT(m >= 0 && n >= 0 && k >= 0);
  for (int i = 0; i < m; i++) {
    for (int j = 0; j < n; j++) {
      double s = 0.0;
      for (int p = 0; p < k; p++) {
        float av = trans_a ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
        float bv = trans_b ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
        s += (double)av * (double)bv;
      }
      float *cp = &c[(size_t)i * ldc + j];
      *cp = (float)(alpha * s + (beta == 0.0f ? 0.0 : (double)beta * (double)*cp));
    }
  }
}
