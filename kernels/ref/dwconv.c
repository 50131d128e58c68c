/* The naive twin of kernels/dwconv.c: plain loops, double accumulation, the reference
 * tests/unit/kernels/test_kernels.c compares the fast kernel with. Never on a hot path. */
#include "kernels/ops.h"

void rv_dwconv2d_naive_f32(float *y, const float *x, const float *w, const float *b,
                           const float *residual, int n, int c, int h, int wd, int k,
                           int stride, int pad) {
  int oh = (h + 2 * pad - k) / stride + 1, ow = (wd + 2 * pad - k) / stride + 1;
  for (int ni = 0; ni < n; ni++)
    for (int ci = 0; ci < c; ci++) {
      const float *xp = x + ((size_t)ni * c + ci) * h * wd;
      size_t yo = ((size_t)ni * c + ci) * oh * ow;
      for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++) {
          double s = b ? b[ci] : 0.0;
          for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
              int iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
              s += (double)w[((size_t)ci * k + ky) * k + kx] * xp[(size_t)iy * wd + ix];
            }
          size_t o = yo + (size_t)oy * ow + ox;
          if (residual) s += residual[o];
          y[o] = (float)s;
        }
    }
}
