/* Naive twins (plain loops, double accumulation) of the fast kernels that had none: the
 * references tests/test_kernels.c compares them with. Never on a hot path. */
#include "core/ops.h"

#include <math.h>
#include <string.h>

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

void rv_pointwise_naive_f32(float *y, const float *w, const float *b, const float *x, int cout,
                            int cin, size_t n) {
  for (int o = 0; o < cout; o++)
    for (size_t t = 0; t < n; t++) {
      double s = b ? b[o] : 0.0;
      for (int i = 0; i < cin; i++) s += (double)w[(size_t)o * cin + i] * x[(size_t)i * n + t];
      y[(size_t)o * n + t] = (float)s;
    }
}

rv_status rv_conv3x3_upsampled_naive_f32(float *y, const float *x, const float *w,
                                         const float *b, int n, int cin, int ih, int iw,
                                         int cout, int oh, int ow, rv_act act, int accumulate,
                                         rv_arena *scratch) {
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  const size_t in_up = (size_t)cin * oh * ow, out = (size_t)cout * oh * ow;
  float *up = rv_arena_floats(scratch, in_up);
  float *conv = rv_arena_floats(scratch, out);
  if (!up || !conv) {
    rv_arena_release(scratch, mk);
    return RV_ERR_NOMEM;
  }
  rv_conv_params p = rv_conv_default_params(3, 1, 1);
  for (int i = 0; i < n; i++) {
    rv_resize_bilinear_naive_f32(up, x + (size_t)i * cin * ih * iw, cin, ih, iw, oh, ow);
    rv_conv2d_naive_f32(conv, up, w, b, 1, cin, oh, ow, cout, p);
    float *yi = y + (size_t)i * out;
    for (size_t k = 0; k < out; k++) yi[k] = accumulate ? yi[k] + conv[k] : conv[k];
    if (act != RV_ACT_NONE) rv_act_f32(yi, out, act);
  }
  rv_arena_release(scratch, mk);
  return RV_OK;
}
