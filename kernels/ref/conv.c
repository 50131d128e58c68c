/* The naive twin of kernels/conv.c: plain loops, double accumulation, the references
 * tests/unit/kernels/test_kernels.c compares the fast kernels with. Never on a hot path. */
#include "kernels/ops.h"

static void check_params(const rv_conv_params *p, int cin, int cout) {
  RV_ASSERT(p->kh > 0 && p->kw > 0 && p->sh > 0 && p->sw > 0 && p->ph >= 0 && p->pw >= 0);
  RV_ASSERT(p->dh > 0 && p->dw > 0 && p->groups > 0);
  RV_ASSERT(cin % p->groups == 0 && cout % p->groups == 0);
}

void rv_conv2d_naive_f32(float *y, const float *x, const float *w, const float *b, int n,
                         int cin, int h, int wd, int cout, rv_conv_params p) {
  check_params(&p, cin, cout);
  int oh = rv_conv_out_size(h, p.kh, p.sh, p.ph, p.dh);
  int ow = rv_conv_out_size(wd, p.kw, p.sw, p.pw, p.dw);
  int cig = cin / p.groups, cog = cout / p.groups;
  for (int ni = 0; ni < n; ni++)
    for (int co = 0; co < cout; co++) {
      int g = co / cog;
      float *yp = y + ((size_t)ni * cout + co) * oh * ow;
      for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++) {
          double s = b ? b[co] : 0.0;
          for (int ci = 0; ci < cig; ci++) {
            const float *xp = x + ((size_t)ni * cin + (size_t)g * cig + ci) * h * wd;
            const float *wp = w + ((size_t)co * cig + ci) * p.kh * p.kw;
            for (int ky = 0; ky < p.kh; ky++) {
              int iy = oy * p.sh - p.ph + ky * p.dh;
              if (iy < 0 || iy >= h) continue;
              for (int kx = 0; kx < p.kw; kx++) {
                int ix = ox * p.sw - p.pw + kx * p.dw;
                if (ix < 0 || ix >= wd) continue;
                s += (double)wp[ky * p.kw + kx] * xp[(size_t)iy * wd + ix];
              }
            }
          }
          if (p.accumulate) s += yp[(size_t)oy * ow + ox];
          yp[(size_t)oy * ow + ox] = (float)s;
        }
      rv_act_serial_f32(yp, (size_t)oh * ow, p.act);
    }
}
