/* The naive twin of kernels/gemm.c: plain loops, double accumulation, the reference
 * tests/unit/kernels/test_kernels.c compares the fast kernel with. Never on a hot path. */
#include "kernels/ops.h"

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
