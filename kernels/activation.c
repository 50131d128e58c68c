/* Element-wise activations and softmax.
 *
 * Formulas (PyTorch defaults): relu max(x,0); gelu 0.5 x (1 + erf(x / sqrt 2)) (exact erf
 * form, nn.GELU()); silu x * sigmoid(x); sigmoid 1 / (1 + e^-x); elu x > 0 ? x : a (e^x - 1)
 * (computed as exp(x) - 1, as PyTorch's vectorised CPU kernel).
 * exp and erf come from kernels/vmath.h (branch-free polynomials, vectorised by the compiler;
 * accuracy stated there and tested in tests/unit/kernels/test_ops.c against double precision).
 * The *_serial variants never open an OpenMP region (for use inside callers' parallel
 * loops); the plain ones split large arrays over the OpenMP team.
 */
#include "kernels/ops.h"

#include "kernels/vmath.h"

#include <math.h>
#include <string.h>

#define PAR_MIN 32768 /* below this many elements, stay on one thread */
#define CHUNK 16384

RV_CLONES void rv_relu_serial_f32(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : (x[i] != x[i] ? x[i] : 0.0f);
}

RV_CLONES4 void rv_gelu_serial_f32(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = rv_vgeluf(x[i]);
}

/* a static clone behind a plain function: clang 14 emits no symbol under a target_clones
 * function's own name, so other files (the tests) could not call it */
RV_CLONES4 static void gelu_bf16_loop(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = rv_vgeluf_bf16(x[i]);
}
void rv_gelu_bf16_serial_f32(float *x, size_t n) { gelu_bf16_loop(x, n); }

RV_CLONES void rv_sigmoid_serial_f32(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = rv_vsigmoidf(x[i]);
}

RV_CLONES void rv_silu_serial_f32(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = x[i] * rv_vsigmoidf(x[i]);
}

void rv_act_rows_serial_f32(float *x, size_t ld, int rows, size_t n, rv_act act) {
  for (int r = 0; r < rows; r++) rv_act_serial_f32(x + (size_t)r * ld, n, act);
}

void rv_act_serial_f32(float *x, size_t n, rv_act act) {
  switch (act) {
    case RV_ACT_NONE: break;
    case RV_ACT_RELU: rv_relu_serial_f32(x, n); break;
    case RV_ACT_GELU: rv_gelu_serial_f32(x, n); break;
    case RV_ACT_SILU: rv_silu_serial_f32(x, n); break;
    case RV_ACT_SIGMOID: rv_sigmoid_serial_f32(x, n); break;
    default: RV_ASSERT(!"unknown activation");
  }
}

void rv_act_f32(float *x, size_t n, rv_act act) {
  if (act == RV_ACT_NONE || n == 0) return;
  if (n < PAR_MIN) {
    rv_act_serial_f32(x, n, act);
    return;
  }
  long nchunks = (long)((n + CHUNK - 1) / CHUNK);
#pragma omp parallel for schedule(static)
  for (long c = 0; c < nchunks; c++) {
    size_t lo = (size_t)c * CHUNK, len = n - lo < CHUNK ? n - lo : CHUNK;
    rv_act_serial_f32(x + lo, len, act);
  }
}

void rv_gelu_f32(float *x, size_t n) { rv_act_f32(x, n, RV_ACT_GELU); }
void rv_relu_f32(float *x, size_t n) { rv_act_f32(x, n, RV_ACT_RELU); }
void rv_silu_f32(float *x, size_t n) { rv_act_f32(x, n, RV_ACT_SILU); }
void rv_sigmoid_f32(float *x, size_t n) { rv_act_f32(x, n, RV_ACT_SIGMOID); }

RV_CLONES static void elu_serial(float *x, size_t n, float alpha) {
  for (size_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : alpha * (rv_vexpf(x[i]) - 1.0f);
}

void rv_elu_f32(float *x, size_t n, float alpha) {
  long nchunks = (long)((n + CHUNK - 1) / CHUNK);
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
  for (long c = 0; c < nchunks; c++) {
    size_t lo = (size_t)c * CHUNK, len = n - lo < CHUNK ? n - lo : CHUNK;
    elu_serial(x + lo, len, alpha);
  }
}

void rv_bias_act_f32(float *y, const float *b, int n, int c, size_t hw, rv_act act) {
  long planes = (long)n * c;
#pragma omp parallel for schedule(static) if ((size_t)planes * hw >= PAR_MIN)
  for (long p = 0; p < planes; p++) {
    float *yp = y + (size_t)p * hw;
    if (b) {
      float bv = b[p % c];
      for (size_t i = 0; i < hw; i++) yp[i] += bv;
    }
    rv_act_serial_f32(yp, hw, act);
  }
}

/* One row: y = exp(x - max) / sum. y may alias x. */
RV_CLONES static void softmax_row(float *y, const float *x, int cols) {
  float mx = rv_vmax(x, cols);
  for (int j = 0; j < cols; j++) y[j] = rv_vexpf(x[j] - mx);
  float inv = 1.0f / rv_vsum(y, cols);
  for (int j = 0; j < cols; j++) y[j] *= inv;
}

void rv_softmax_rows_f32(float *y, const float *x, int rows, int cols) {
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PAR_MIN)
  for (int r = 0; r < rows; r++) softmax_row(y + (size_t)r * cols, x + (size_t)r * cols, cols);
}

/* Softmax over channels per pixel: pixels are processed in blocks of PB so that the
 * channel loops run over contiguous pixel runs (vectorisable). */
#define PB 256
RV_CLONES static void softmax_block(float *yb, const float *xb, int c, int hw, int len) {
  float mx[PB], s[PB];
  for (int j = 0; j < len; j++) { mx[j] = -INFINITY; s[j] = 0.0f; }
  for (int ci = 0; ci < c; ci++) {
    const float *xr = xb + (size_t)ci * hw;
    for (int j = 0; j < len; j++) mx[j] = xr[j] > mx[j] ? xr[j] : mx[j];
  }
  for (int ci = 0; ci < c; ci++) {
    const float *xr = xb + (size_t)ci * hw;
    float *yr = yb + (size_t)ci * hw;
    for (int j = 0; j < len; j++) {
      float e = rv_vexpf(xr[j] - mx[j]);
      yr[j] = e;
      s[j] += e;
    }
  }
  for (int j = 0; j < len; j++) s[j] = 1.0f / s[j];
  for (int ci = 0; ci < c; ci++) {
    float *yr = yb + (size_t)ci * hw;
    for (int j = 0; j < len; j++) yr[j] *= s[j];
  }
}

void rv_softmax_nchw_f32(float *y, const float *x, int n, int c, int hw) {
  long nblk = (hw + PB - 1) / PB;
  long total = (long)n * nblk;
#pragma omp parallel for schedule(static) if ((size_t)n * c * hw >= PAR_MIN)
  for (long t = 0; t < total; t++) {
    int ni = (int)(t / nblk), p0 = (int)(t % nblk) * PB;
    int len = hw - p0 < PB ? hw - p0 : PB;
    softmax_block(y + (size_t)ni * c * hw + p0, x + (size_t)ni * c * hw + p0, c, hw, len);
  }
}
