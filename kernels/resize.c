/* Resampling and pooling over planes (planes = n*c, each ih x iw, contiguous).
 *
 * Bilinear (align_corners=False), as PyTorch's CPU upsample_bilinear2d: the scale is a
 * float, in/out (explicit size) or 1/s (scale_factor s); the source coordinate is
 * src = (float)(scale * (dst + 0.5) - 0.5) clamped at 0, i0 = (int)src, i1 = i0 + (i0 < in-1),
 * l1 = src - i0, l0 = 1 - l1, and
 *   y = l0h * (l0w * x[i0h][i0w] + l1w * x[i0h][i1w])
 *     + l1h * (l0w * x[i1h][i0w] + l1w * x[i1h][i1w]).
 * Nearest: src = min(floor(dst * (float)(in/out)), in - 1) (float arithmetic, as PyTorch).
 * Adaptive avg pool: bin i = [floor(i*in/out), ceil((i+1)*in/out)), sum / kh / kw.
 * Max pool: -inf padding, out = floor((in + 2 pad - k) / stride) + 1, NaN propagates.
 */
#include "kernels/ops.h"

#include "kernels/vmath.h"

#include <math.h>

#define PAR_MIN 32768

#define TAPS 2048 /* output columns per tap table / row buffer (stack) */
#define RB 32      /* output rows per parallel work unit */

/* Horizontal pass of one input row: h[j] = l0[j] * xr[i0[j]] + l1[j] * xr[i1[j]]. */
RV_CLONES static void hrow(float *h, const float *xr, const int *i0, const int *i1, const float *l0,
                 const float *l1, int cn) {
  for (int j = 0; j < cn; j++) h[j] = l0[j] * xr[i0[j]] + l1[j] * xr[i1[j]];
}

RV_CLONES static void vblend(float *yr, const float *ha, const float *hb, float a, float b,
                             int cn, int add) {
  if (add) /* the blend rounded to float, then added: resize followed by an add, bit for bit */
    for (int j = 0; j < cn; j++) yr[j] += a * ha[j] + b * hb[j];
  else
    for (int j = 0; j < cn; j++) yr[j] = a * ha[j] + b * hb[j];
}

/* Separable evaluation of the formula above (same operations, same rounding): each needed
 * input row is interpolated horizontally once into a two-row cache, then output rows are
 * vertical blends (vectorised). Work units are (plane, block of RB output rows). */
static void bilinear(float *y, const float *x, int planes, int ih, int iw, int oh, int ow,
                     float sh, float sw, int add) {
  int i0[TAPS], i1[TAPS];
  float l0[TAPS], l1[TAPS];
  long nblk = (oh + RB - 1) / RB, units = (long)planes * nblk;
  for (int c0 = 0; c0 < ow; c0 += TAPS) { /* column chunks; taps computed once per chunk */
    int cn = ow - c0 < TAPS ? ow - c0 : TAPS;
    for (int j = 0; j < cn; j++) {
      rv_lin_tap t = rv_bilinear_tap(sw, c0 + j, iw);
      i0[j] = t.i0, i1[j] = t.i1, l0[j] = t.l0, l1[j] = t.l1;
    }
#pragma omp parallel for schedule(static) if ((size_t)planes * oh * cn >= PAR_MIN)
    for (long u = 0; u < units; u++) {
      int p = (int)(u / nblk), r0 = (int)(u % nblk) * RB;
      int r1 = oh - r0 < RB ? oh : r0 + RB;
      float buf[2][TAPS];
      int tag[2] = {-1, -1};
      const float *xp = x + (size_t)p * ih * iw;
      for (int oy = r0; oy < r1; oy++) {
        rv_lin_tap th = rv_bilinear_tap(sh, oy, ih);
        const float *h[2];
        int need[2] = {th.i0, th.i1};
        for (int q = 0; q < 2; q++) {
          int row = need[q], other = need[1 - q];
          if (tag[0] == row) { h[q] = buf[0]; continue; }
          if (tag[1] == row) { h[q] = buf[1]; continue; }
          int slot = tag[0] == other ? 1 : 0;
          hrow(buf[slot], xp + (size_t)row * iw, i0, i1, l0, l1, cn);
          tag[slot] = row;
          h[q] = buf[slot];
        }
        float *yr = y + ((size_t)p * oh + oy) * ow + c0;
        const float *ha = h[0], *hb = h[1];
        vblend(yr, ha, hb, th.l0, th.l1, cn, add);
      }
    }
  }
}

void rv_resize_bilinear_f32(float *y, const float *x, int planes, int ih, int iw, int oh,
                            int ow) {
  RV_ASSERT(ih > 0 && iw > 0 && oh > 0 && ow > 0);
  bilinear(y, x, planes, ih, iw, oh, ow, (float)ih / (float)oh, (float)iw / (float)ow, 0);
}

/* y += x where no resize is needed (also skips the 0 * x[i1] taps, which would turn an
 * infinite neighbour into NaN) */
static void add_same(float *y, const float *x, size_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
  for (size_t i = 0; i < n; i++) y[i] += x[i];
}

void rv_resize_bilinear_add_f32(float *y, const float *x, int planes, int ih, int iw, int oh,
                                int ow) {
  RV_ASSERT(ih > 0 && iw > 0 && oh > 0 && ow > 0);
  if (ih == oh && iw == ow)
    add_same(y, x, (size_t)planes * oh * ow);
  else
    bilinear(y, x, planes, ih, iw, oh, ow, (float)ih / (float)oh, (float)iw / (float)ow, 1);
}

/* scale_h/scale_w are 1/s for F.interpolate(scale_factor=s); <= 0 means in/out. */
void rv_resize_bilinear_scale_f32(float *y, const float *x, int planes, int ih, int iw, int oh,
                                  int ow, double scale_h, double scale_w) {
  RV_ASSERT(ih > 0 && iw > 0 && oh > 0 && ow > 0);
  float sh = scale_h > 0 ? (float)scale_h : (float)ih / (float)oh;
  float sw = scale_w > 0 ? (float)scale_w : (float)iw / (float)ow;
  bilinear(y, x, planes, ih, iw, oh, ow, sh, sw, 0);
}

static int nearest_src(int dst, int in, int out) {
  if (in == out) return dst;
  if (out == 2 * in) return dst >> 1;
  float scale = (float)in / (float)out;
  int s = (int)floorf((float)dst * scale);
  return s < in - 1 ? s : in - 1;
}

RV_CLONES static void gather_row(float *yr, const float *xr, const int *idx, int cn, int add) {
  if (add)
    for (int j = 0; j < cn; j++) yr[j] += xr[idx[j]];
  else
    for (int j = 0; j < cn; j++) yr[j] = xr[idx[j]];
}

static void nearest(float *y, const float *x, int planes, int ih, int iw, int oh, int ow, int add) {
  RV_ASSERT(ih > 0 && iw > 0 && oh > 0 && ow > 0);
  int idx[TAPS];
  long rows = (long)planes * oh;
  for (int c0 = 0; c0 < ow; c0 += TAPS) {
    int cn = ow - c0 < TAPS ? ow - c0 : TAPS;
    for (int j = 0; j < cn; j++) idx[j] = nearest_src(c0 + j, iw, ow);
#pragma omp parallel for schedule(static) if ((size_t)rows * cn >= PAR_MIN)
    for (long r = 0; r < rows; r++) {
      int p = (int)(r / oh), oy = (int)(r % oh);
      gather_row(y + (size_t)r * ow + c0, x + ((size_t)p * ih + nearest_src(oy, ih, oh)) * iw,
                 idx, cn, add);
    }
  }
}

void rv_resize_nearest_f32(float *y, const float *x, int planes, int ih, int iw, int oh, int ow) {
  nearest(y, x, planes, ih, iw, oh, ow, 0);
}

void rv_resize_nearest_add_f32(float *y, const float *x, int planes, int ih, int iw, int oh,
                               int ow) {
  if (ih == oh && iw == ow)
    add_same(y, x, (size_t)planes * oh * ow);
  else
    nearest(y, x, planes, ih, iw, oh, ow, 1);
}

void rv_adaptive_avgpool_f32(float *y, const float *x, int planes, int ih, int iw, int oh,
                             int ow) {
  RV_ASSERT(ih > 0 && iw > 0 && oh > 0 && ow > 0);
#pragma omp parallel for schedule(static) if ((size_t)planes * ih * iw >= PAR_MIN)
  for (int p = 0; p < planes; p++) {
    const float *xp = x + (size_t)p * ih * iw;
    for (int oy = 0; oy < oh; oy++) {
      int y0 = (int)(((long)oy * ih) / oh), y1 = (int)(((long)(oy + 1) * ih + oh - 1) / oh);
      for (int ox = 0; ox < ow; ox++) {
        int x0 = (int)(((long)ox * iw) / ow), x1 = (int)(((long)(ox + 1) * iw + ow - 1) / ow);
        float s = 0.0f;
        for (int yy = y0; yy < y1; yy++)
          for (int xx = x0; xx < x1; xx++) s += xp[(size_t)yy * iw + xx];
        y[((size_t)p * oh + oy) * ow + ox] = s / (float)(y1 - y0) / (float)(x1 - x0);
      }
    }
  }
}

void rv_maxpool2d_f32(float *y, const float *x, int planes, int ih, int iw, int k, int stride,
                      int pad) {
  RV_ASSERT(k > 0 && stride > 0 && pad >= 0);
  int oh = (ih + 2 * pad - k) / stride + 1, ow = (iw + 2 * pad - k) / stride + 1;
  RV_ASSERT(oh > 0 && ow > 0);
#pragma omp parallel for schedule(static) if ((size_t)planes * oh * ow * k * k >= PAR_MIN)
  for (int p = 0; p < planes; p++) {
    const float *xp = x + (size_t)p * ih * iw;
    for (int oy = 0; oy < oh; oy++)
      for (int ox = 0; ox < ow; ox++) {
        float m = -INFINITY;
        for (int ky = 0; ky < k; ky++) {
          int iy = oy * stride - pad + ky;
          if (iy < 0 || iy >= ih) continue;
          for (int kx = 0; kx < k; kx++) {
            int ix = ox * stride - pad + kx;
            if (ix < 0 || ix >= iw) continue;
            float v = xp[(size_t)iy * iw + ix];
            if (v > m || v != v) m = v;
            if (m != m) break;
          }
        }
        y[((size_t)p * oh + oy) * ow + ox] = m;
      }
  }
}
