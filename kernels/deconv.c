/* ConvTranspose2d, kernel 2, stride 2, no padding:
 *   y[n, co, 2i+a, 2j+b] = act(bias[co] + sum_ci x[n, ci, i, j] * w[ci, co, a, b])
 * x [n, cin, h, wd], w [cin, cout, 2, 2] (PyTorch layout), y [n, cout, 2h, 2wd].
 * Fast path: per image one GEMM T[cout*4 x h*wd] = W^T[cout*4 x cin] * X[cin x h*wd] written
 * into y's own storage (same size), then each channel's 4*h*wd block is interleaved in
 * place through a stack buffer (OpenMP over channels). Planes larger than the buffer use
 * direct loops. */
#include "kernels/ops.h"

#include <string.h>


#define TMAX 8192 
static void deconv_direct(float *y, const float *x, const float *w, const float *b, int n,
                          int cin, int h, int wd, int cout, rv_act act) {
  int ow = 2 * wd;
  long planes = (long)n * cout;
#pragma omp parallel for schedule(static)
  for (long p = 0; p < planes; p++) {
    int ni = (int)(p / cout), co = (int)(p % cout);
    float *yp = y + (size_t)p * 4 * h * wd;
    float bv = b ? b[co] : 0.0f;
    for (size_t i = 0; i < (size_t)4 * h * wd; i++) yp[i] = bv;
    for (int ci = 0; ci < cin; ci++) {
      const float *xp = x + ((size_t)ni * cin + ci) * h * wd;
      const float *wk = w + ((size_t)ci * cout + co) * 4;
      for (int i = 0; i < h; i++) {
        float *y0 = yp + (size_t)(2 * i) * ow, *y1 = y0 + ow;
        const float *xr = xp + (size_t)i * wd;
        for (int j = 0; j < wd; j++) {
          float v = xr[j];
          y0[2 * j] += wk[0] * v;
          y0[2 * j + 1] += wk[1] * v;
          y1[2 * j] += wk[2] * v;
          y1[2 * j + 1] += wk[3] * v;
        }
      }
    }
    rv_act_serial_f32(yp, (size_t)4 * h * wd, act);
  }
}

void rv_deconv2x2_f32(float *y, const float *x, const float *w, const float *b, int n, int cin,
                      int h, int wd, int cout, rv_act act) {
  RV_ASSERT(n >= 0 && cin > 0 && h > 0 && wd > 0 && cout > 0);
  int hw = h * wd;
  if (4 * hw > TMAX) {
    deconv_direct(y, x, w, b, n, cin, h, wd, cout, act);
    return;
  }
  for (int ni = 0; ni < n; ni++) {
    float *yn = y + (size_t)ni * cout * 4 * hw;
    /* T[(co*4 + a*2 + b), p] = sum_ci w[ci, (co,a,b)] * x[ci, p] */
    rv_gemm_f32(1, 0, cout * 4, hw, cin, 1.0f, w, cout * 4, x + (size_t)ni * cin * hw, hw, 0.0f,
                yn, hw);
#pragma omp parallel for schedule(static) if ((size_t)cout * hw >= 4096)
    for (int co = 0; co < cout; co++) {
      float t[TMAX];
      float *blk = yn + (size_t)co * 4 * hw;
      memcpy(t, blk, sizeof(float) * 4 * hw);
      float bv = b ? b[co] : 0.0f;
      int ow = 2 * wd;
      for (int a = 0; a < 2; a++)
        for (int bb = 0; bb < 2; bb++) {
          const float *tk = t + (size_t)(a * 2 + bb) * hw;
          for (int i = 0; i < h; i++) {
            float *yr = blk + (size_t)(2 * i + a) * ow + bb;
            const float *tr = tk + (size_t)i * wd;
            for (int j = 0; j < wd; j++) yr[2 * j] = tr[j] + bv;
          }
        }
      rv_act_serial_f32(blk, (size_t)4 * hw, act);
    }
  }
}
