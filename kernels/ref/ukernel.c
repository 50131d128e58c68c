/* The naive twin of kernels/ukernel.c: plain loops, double accumulation, the reference
 * tests/unit/kernels/test_kernels.c compares the fast kernel with. Never on a hot path. */
#include "kernels/ops.h"

void rv_pointwise_naive_f32(float *y, const float *w, const float *b, const float *x, int cout,
                            int cin, size_t n) {
  for (int o = 0; o < cout; o++)
    for (size_t t = 0; t < n; t++) {
      double s = b ? b[o] : 0.0;
      for (int i = 0; i < cin; i++) s += (double)w[(size_t)o * cin + i] * x[(size_t)i * n + t];
      y[(size_t)o * n + t] = (float)s;
    }
}
