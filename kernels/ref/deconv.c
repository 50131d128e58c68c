/* The naive twin of kernels/deconv.c: plain loops, double accumulation, the reference
 * tests/unit/kernels/test_kernels.c compares the fast kernel with. Never on a hot path. */
#include "kernels/ops.h"

/* floats of stack per thread: 4*h*wd <= TMAX uses the GEMM path */

void rv_deconv2x2_naive_f32(float *y, const float *x, const float *w, const float *b, int n,
                            int cin, int h, int wd, int cout, rv_act act) {
  int ow = 2 * wd;
  for (int ni = 0; ni < n; ni++)
    for (int co = 0; co < cout; co++) {
      float *yp = y + ((size_t)ni * cout + co) * 4 * h * wd;
      for (int oy = 0; oy < 2 * h; oy++)
        for (int ox = 0; ox < ow; ox++) {
          int i = oy / 2, a = oy % 2, j = ox / 2, bb = ox % 2;
          double s = b ? b[co] : 0.0;
          for (int ci = 0; ci < cin; ci++)
            s += (double)x[(((size_t)ni * cin + ci) * h + i) * wd + j] *
                 w[(((size_t)ci * cout + co) * 2 + a) * 2 + bb];
          yp[(size_t)oy * ow + ox] = (float)s;
        }
      rv_act_serial_f32(yp, (size_t)4 * h * wd, act);
    }
}
