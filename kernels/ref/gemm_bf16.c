/* The naive twin of kernels/gemm_bf16.c: plain loops, double accumulation, the reference
 * tests/unit/kernels/test_kernels.c compares the fast kernel with. Never on a hot path. */
#include "kernels/ops.h"

void rv_pointwise_bf16_naive(float *y, const float *w, const float *b, const float *x,
                             int cout, int cin, size_t n) {
  for (int co = 0; co < cout; co++)
    for (size_t p = 0; p < n; p++) {
      double s = 0.0;
      for (int ci = 0; ci < cin; ci++)
        s += (double)rv_bf16_to_f32(rv_f32_to_bf16(w[(size_t)co * cin + ci])) *
             (double)rv_bf16_to_f32(rv_f32_to_bf16(x[(size_t)ci * n + p]));
      y[(size_t)co * n + p] = (float)s + (b ? b[co] : 0.0f);
    }
}
