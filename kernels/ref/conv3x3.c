/* The naive twin of kernels/conv3x3.c: plain loops, double accumulation, the references
 * tests/unit/kernels/test_kernels.c compares the fast kernels with. Never on a hot path. */
#include "kernels/ops.h"

static float act1(float v, rv_act act) {
  rv_act_serial_f32(&v, 1, act);
  return v;
}

void rv_conv3x3_bf16_naive(float *y, const float *x, const float *w, const float *b, int cin,
                           int h, int wd, int cout, int stride, rv_act act) {
  const int oh = rv_conv_out_size(h, 3, stride, 1, 1), ow = rv_conv_out_size(wd, 3, stride, 1, 1);
  for (int co = 0; co < cout; co++)
    for (int oy = 0; oy < oh; oy++)
      for (int ox = 0; ox < ow; ox++) {
        double s = 0.0;
        for (int ci = 0; ci < cin; ci++)
          for (int ky = 0; ky < 3; ky++) {
            const int iy = oy * stride - 1 + ky;
            if (iy < 0 || iy >= h) continue;
            for (int kx = 0; kx < 3; kx++) {
              const int ix = ox * stride - 1 + kx;
              if (ix < 0 || ix >= wd) continue;
              const float wv = w[((size_t)co * cin + ci) * 9 + 3 * ky + kx];
              const float xv = x[((size_t)ci * h + iy) * wd + ix];
              s += (double)rv_bf16_to_f32(rv_f32_to_bf16(wv)) *
                   (double)rv_bf16_to_f32(rv_f32_to_bf16(xv));
            }
          }
        y[((size_t)co * oh + oy) * ow + ox] = act1((float)s + (b ? b[co] : 0.0f), act);
      }
}
