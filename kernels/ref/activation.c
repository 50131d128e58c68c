/* The naive twins of kernels/activation.c: plain loops, double accumulation, the references
 * tests/unit/kernels/test_kernels.c compares the fast kernels with. Never on a hot path. */
#include "kernels/ops.h"

#include <math.h>

/* softmax of n values at stride s */
static void softmax_strided(float *y, const float *x, int n, size_t s) {
  double m = -INFINITY, sum = 0;
  for (int j = 0; j < n; j++) m = fmax(m, x[j * s]);
  for (int j = 0; j < n; j++) sum += exp((double)x[j * s] - m);
  for (int j = 0; j < n; j++) y[j * s] = (float)(exp((double)x[j * s] - m) / sum);
}

void rv_softmax_rows_naive_f32(float *y, const float *x, int rows, int cols) {
  for (int r = 0; r < rows; r++)
    softmax_strided(y + (size_t)r * cols, x + (size_t)r * cols, cols, 1);
}

void rv_softmax_nchw_naive_f32(float *y, const float *x, int n, int c, int hw) {
  for (int i = 0; i < n; i++)
    for (int p = 0; p < hw; p++) {
      size_t o = (size_t)i * c * hw + (size_t)p;
      softmax_strided(y + o, x + o, c, (size_t)hw);
    }
}
