/* The naive twins of kernels/norm.c: plain loops, double accumulation, the references
 * tests/unit/kernels/test_kernels.c compares the fast kernels with. Never on a hot path. */
#include "kernels/ops.h"

#include <math.h>

/* Reference: per pixel, double accumulation, two passes. */
void rv_layernorm_nchw_naive_f32(float *y, const float *x, const float *g, const float *b,
                                 int n, int c, int hw, float eps) {
  for (int ni = 0; ni < n; ni++) {
    const float *xn = x + (size_t)ni * c * hw;
    float *yn = y + (size_t)ni * c * hw;
    for (int j = 0; j < hw; j++) {
      double m = 0, v = 0;
      for (int ci = 0; ci < c; ci++) m += xn[(size_t)ci * hw + j];
      m /= c;
      for (int ci = 0; ci < c; ci++) {
        double d = xn[(size_t)ci * hw + j] - m;
        v += d * d;
      }
      v /= c;
      double r = 1.0 / sqrt(v + eps);
      for (int ci = 0; ci < c; ci++) {
        double t = (xn[(size_t)ci * hw + j] - m) * r;
        yn[(size_t)ci * hw + j] = (float)(t * (g ? g[ci] : 1.0) + (b ? b[ci] : 0.0));
      }
    }
  }
}

void rv_layernorm_rows_naive_f32(float *y, const float *x, const float *g, const float *b,
                                 int rows, int cols, float eps) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * cols;
    double mean = 0, var = 0;
    for (int j = 0; j < cols; j++) mean += xr[j];
    mean /= cols;
    for (int j = 0; j < cols; j++) var += (xr[j] - mean) * (xr[j] - mean);
    var /= cols;
    double inv = 1.0 / sqrt(var + (double)eps);
    for (int j = 0; j < cols; j++)
      y[(size_t)r * cols + j] = (float)((xr[j] - mean) * inv * g[j] + b[j]);
  }
}
