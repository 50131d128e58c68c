/* The naive twins of kernels/resize.c: plain loops, double accumulation, the references
 * tests/unit/kernels/test_kernels.c compares the fast kernels with. Never on a hot path. */
#include "kernels/ops.h"

#include <math.h>

/* Reference: the same formula written directly, no tap struct, double blend. */
void rv_resize_bilinear_naive_f32(float *y, const float *x, int planes, int ih, int iw, int oh,
                                  int ow) {
  float sh = (float)ih / (float)oh, sw = (float)iw / (float)ow;
  for (int p = 0; p < planes; p++)
    for (int oy = 0; oy < oh; oy++) {
      float fy = (float)(sh * (oy + 0.5) - 0.5);
      if (fy < 0) fy = 0;
      int y0 = (int)fy, y1 = y0 < ih - 1 ? y0 + 1 : y0;
      float ly = fy - y0;
      for (int ox = 0; ox < ow; ox++) {
        float fx = (float)(sw * (ox + 0.5) - 0.5);
        if (fx < 0) fx = 0;
        int x0 = (int)fx, x1 = x0 < iw - 1 ? x0 + 1 : x0;
        float lx = fx - x0;
        const float *xp = x + (size_t)p * ih * iw;
        double top = (1.0 - lx) * xp[y0 * iw + x0] + (double)lx * xp[y0 * iw + x1];
        double bot = (1.0 - lx) * xp[y1 * iw + x0] + (double)lx * xp[y1 * iw + x1];
        y[((size_t)p * oh + oy) * ow + ox] = (float)((1.0 - ly) * top + ly * bot);
      }
    }
}

void rv_resize_nearest_naive_f32(float *y, const float *x, int planes, int ih, int iw, int oh,
                                 int ow) {
  for (int p = 0; p < planes; p++)
    for (int i = 0; i < oh; i++) {
      int si = (int)floor((double)i * ih / oh);
      if (si > ih - 1) si = ih - 1;
      for (int j = 0; j < ow; j++) {
        int sj = (int)floor((double)j * iw / ow);
        if (sj > iw - 1) sj = iw - 1;
        y[((size_t)p * oh + i) * ow + j] = x[((size_t)p * ih + si) * iw + sj];
      }
    }
}
