/* Normalisation: BatchNorm folding and eval-mode BatchNorm, LayerNorm (NCHW per pixel over
 * channels, and rows of a matrix). Statistics use the biased variance, as PyTorch. */
#include "kernels/ops.h"

#include "kernels/vmath.h"

#include <math.h>

#define PAR_MIN 32768

/* w [cout x per_out], b [cout]: s = gamma / sqrt(var + eps) (computed in double),
 * w' = w * s, b' = (b - mean) * s + beta. */
void rv_bn_fold(float *w, float *b, int cout, size_t per_out, const float *mean,
                const float *var, const float *gamma, const float *beta, float eps) {
  for (int o = 0; o < cout; o++) {
    double s = (double)gamma[o] / sqrt((double)var[o] + (double)eps);
    float *wo = w + (size_t)o * per_out;
    for (size_t i = 0; i < per_out; i++) wo[i] = (float)((double)wo[i] * s);
    b[o] = (float)(((double)b[o] - (double)mean[o]) * s + (double)beta[o]);
  }
}

/* y = x * a[c] + d[c] with a = gamma / sqrt(var + eps), d = beta - mean * a (the same
 * affine form PyTorch's CPU inference kernel uses). y may alias x. */
void rv_batchnorm_f32(float *y, const float *x, const float *mean, const float *var,
                      const float *gamma, const float *beta, float eps, int n, int c, int hw) {
  long planes = (long)n * c;
#pragma omp parallel for schedule(static) if ((size_t)planes * hw >= PAR_MIN)
  for (long p = 0; p < planes; p++) {
    int ci = (int)(p % c);
    double a = 1.0 / sqrt((double)var[ci] + (double)eps);
    if (gamma) a *= (double)gamma[ci];
    double d = (beta ? (double)beta[ci] : 0.0) - (double)mean[ci] * a;
    float af = (float)a, df = (float)d;
    const float *xp = x + (size_t)p * hw;
    float *yp = y + (size_t)p * hw;
    for (int i = 0; i < hw; i++) yp[i] = xp[i] * af + df;
  }
}

/* Fast: blocks of PB pixels; the channel loops run over contiguous pixel runs so they
 * vectorise. Two-pass mean/variance in float (C <= a few thousand). y may alias x. */
#define PB 128
RV_CLONES4 static void ln_block(float *yb, const float *xb, const float *g, const float *b,
                                int c, int hw, int len, float eps) {
  float m[PB], v[PB];
  for (int j = 0; j < len; j++) m[j] = v[j] = 0.0f;
  for (int ci = 0; ci < c; ci++) {
    const float *xr = xb + (size_t)ci * hw;
    for (int j = 0; j < len; j++) m[j] += xr[j];
  }
  float invc = 1.0f / (float)c;
  for (int j = 0; j < len; j++) m[j] *= invc;
  for (int ci = 0; ci < c; ci++) {
    const float *xr = xb + (size_t)ci * hw;
    for (int j = 0; j < len; j++) {
      float d = xr[j] - m[j];
      v[j] += d * d;
    }
  }
  for (int j = 0; j < len; j++) v[j] = 1.0f / sqrtf(v[j] * invc + eps);
  for (int ci = 0; ci < c; ci++) {
    const float *xr = xb + (size_t)ci * hw;
    float *yr = yb + (size_t)ci * hw;
    float gv = g ? g[ci] : 1.0f, bv = b ? b[ci] : 0.0f;
    for (int j = 0; j < len; j++) yr[j] = (xr[j] - m[j]) * v[j] * gv + bv;
  }
}

void rv_layernorm_nchw_f32(float *y, const float *x, const float *g, const float *b, int n,
                           int c, int hw, float eps) {
  long nblk = (hw + PB - 1) / PB;
  long total = (long)n * nblk;
#pragma omp parallel for schedule(static) if ((size_t)n * c * hw >= PAR_MIN)
  for (long t = 0; t < total; t++) {
    int ni = (int)(t / nblk), p0 = (int)(t % nblk) * PB;
    int len = hw - p0 < PB ? hw - p0 : PB;
    ln_block(y + (size_t)ni * c * hw + p0, x + (size_t)ni * c * hw + p0, g, b, c, hw, len, eps);
  }
}

RV_CLONES static void ln_row(float *yr, const float *xr, const float *g, const float *b,
                             int cols, float eps) {
  float m = rv_vsum(xr, cols) / (float)cols;
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int j = 0;
  for (; j + 8 <= cols; j += 8)
    for (int u = 0; u < 8; u++) acc[u] += (xr[j + u] - m) * (xr[j + u] - m);
  float v = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; j < cols; j++) v += (xr[j] - m) * (xr[j] - m);
  float rs = 1.0f / sqrtf(v / (float)cols + eps);
  for (j = 0; j < cols; j++) yr[j] = (xr[j] - m) * rs * (g ? g[j] : 1.0f) + (b ? b[j] : 0.0f);
}

/* rows x cols, normalised over cols; g, b [cols] (may be NULL). y may alias x. */
void rv_layernorm_rows_f32(float *y, const float *x, const float *g, const float *b, int rows,
                           int cols, float eps) {
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PAR_MIN)
  for (int r = 0; r < rows; r++)
    ln_row(y + (size_t)r * cols, x + (size_t)r * cols, g, b, cols, eps);
}
