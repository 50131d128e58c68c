/* Depthwise convolution: y[n,c,oy,ox] = residual[n,c,oy,ox] + b[c] +
 *   sum_{ky,kx} w[c,0,ky,kx] * x[n,c,oy*s - pad + ky, ox*s - pad + kx]   (zero padding)
 * x [n,c,h,wd], w [c,1,k,k], y [n,c,oh,ow] with oh = (h + 2 pad - k)/s + 1.
 * The fast version runs OpenMP over the n*c planes. Stride 1, k <= 7: bands of input rows
 * are copied into a zero-padded stack buffer, then each output row is one pass summing all
 * k*k taps per pixel (K a literal, so the tap loops unroll and the pixel loop vectorises);
 * rows too wide for the buffer (> ~2300 for k = 7) take a per-row variant with
 * bounds-checked border columns. Stride 1, k = 5 or 7 on AVX-512 CPUs: register blocks of
 * 4 rows x 32 columns read the input in place (dw_plane_avx512), with the same sums. Other
 * strides: for each tap a shifted input row segment is added to the output row over the
 * columns whose input is in range. */
#include "kernels/ops.h"
#include "kernels/vmath.h"

#include <string.h>

/* Output indices o in [*lo, *hi) for which i = o * s + off lies in [0, in). */
static void valid_range(int out, int in, int s, int off, int *lo, int *hi) {
  int l = off >= 0 ? 0 : (-off + s - 1) / s;
  int h = in - off <= 0 ? 0 : (in - off + s - 1) / s;
  if (h > out) h = out;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

#define ZROW 4096
static const float zero_row[ZROW]; /* read-only zeros for rows outside the image */

/* Stride-1 interior of one output row: yr[ox] += sum_{ky,kx} wk[ky*K+kx] * xr[ky][ox+kx-pad]
 * for ox in [lo, hi), where every tap is inside the row. K is a literal at each call site,
 * so the tap loops unroll and the ox loop vectorises. */
static inline void dw_interior(float *restrict yr, const float *const *xr, const float *wk,
                               int lo, int hi, int pad, const int K) {
  for (int ox = lo; ox < hi; ox++) {
    float a = yr[ox];
    for (int ky = 0; ky < K; ky++) {
      const float *restrict r = xr[ky] + ox - pad;
      for (int kx = 0; kx < K; kx++) a += wk[ky * K + kx] * r[kx];
    }
    yr[ox] = a;
  }
}

/* One plane, stride 1, k <= 7, pad < k, rows of any width: single pass per output row with
 * bounds-checked border columns (used when a padded band would not fit dw_plane_band). */
RV_CLONES4 static void dw_plane_rows(float *yp, const float *xp, const float *wp, float bv,
                                  const float *rp, const float *gp, int h, int wd, int k,
                                  int pad, int oh, int ow) {
  const float *xr[7];
  float wk[49];
  int lo = pad < ow ? pad : ow;
  int hi = wd - k + 1 + pad;
  if (hi > ow) hi = ow;
  if (hi < lo) hi = lo;
  for (int oy = 0; oy < oh; oy++) {
    float *yr = yp + (size_t)oy * ow;
    if (rp) {
      const float *rr = rp + (size_t)oy * ow;
      for (int ox = 0; ox < ow; ox++) yr[ox] = rr[ox] + bv;
    } else {
      for (int ox = 0; ox < ow; ox++) yr[ox] = bv;
    }
    for (int ky = 0; ky < k; ky++) {
      int iy = oy - pad + ky;
      int in = iy >= 0 && iy < h;
      xr[ky] = in ? xp + (size_t)iy * wd : zero_row;
      /* zero weights as well: zero_row is only ZROW wide (wider rows then read row 0) */
      if (!in && wd > ZROW) xr[ky] = xp;
      for (int kx = 0; kx < k; kx++) wk[ky * k + kx] = in ? wp[ky * k + kx] : 0.0f;
    }
    switch (k) {
      case 3: dw_interior(yr, xr, wk, lo, hi, pad, 3); break;
      case 5: dw_interior(yr, xr, wk, lo, hi, pad, 5); break;
      case 7: dw_interior(yr, xr, wk, lo, hi, pad, 7); break;
      default: dw_interior(yr, xr, wk, lo, hi, pad, k); break;
    }
    /* border columns: bounds-checked taps */
    for (int ox = 0; ox < ow; ox++) {
      if (ox == lo && hi > lo) ox = hi;
      if (ox >= ow) break;
      float a = yr[ox];
      for (int ky = 0; ky < k; ky++)
        for (int kx = 0; kx < k; kx++) {
          int ix = ox - pad + kx;
          if (ix >= 0 && ix < wd) a += wk[ky * k + kx] * xr[ky][ix];
        }
      yr[ox] = a;
    }
    if (gp) {
      const float *gr = gp + (size_t)oy * ow;
      for (int ox = 0; ox < ow; ox++) yr[ox] *= gr[ox];
    }
  }
}

#define DWBUF 16384 /* floats of stack per thread for a zero-padded band of input rows */

/* output rows of a band of dw_plane_band (< 1: rows too wide for its buffer) */
static int dw_band_rows(int wd, int k, int pad) { return DWBUF / (wd + 2 * pad) - (k - 1); }

int rv_dwconv2d_inplace_ok(int wd, int k) {
  return k >= 1 && k <= 7 && k % 2 == 1 && wd >= 1 && dw_band_rows(wd, k, k / 2) >= 1;
}

/* One plane, stride 1, k <= 7, pad < k: bands of output rows; the band's input rows are
 * copied into a zero-padded buffer of width wd + 2 pad, so every output pixel takes all
 * k*k taps from valid memory and each output row is one vectorised pass (no border code,
 * weights fixed for the plane). The k - 1 input rows two bands share are carried in the
 * buffer, not copied again: so the input is read before its rows are written, and yp may be
 * xp (in place). Returns 0 if the rows are too wide for the buffer (dw_band_rows). */
RV_CLONES4 static int dw_plane_band(float *yp, const float *xp, const float *wp, float bv,
                                   const float *rp, const float *gp, int h, int wd, int k,
                                   int pad, int oh, int ow) {
  float buf[DWBUF];
  const int pw = wd + 2 * pad, band = dw_band_rows(wd, k, pad);
  if (band < 1) return 0;
  const float *xr[7];
  for (int oy0 = 0; oy0 < oh; oy0 += band) {
    int rows = oh - oy0 < band ? oh - oy0 : band, t0 = 0;
    if (oy0 > 0 && k > 1) { /* the previous band's last k - 1 input rows */
      memmove(buf, buf + (size_t)band * pw, sizeof(float) * (size_t)(k - 1) * pw);
      t0 = k - 1;
    }
    for (int t = t0; t < rows + k - 1; t++) {
      float *d = buf + (size_t)t * pw;
      int iy = oy0 - pad + t;
      if (iy < 0 || iy >= h) {
        memset(d, 0, sizeof(float) * (size_t)pw);
        continue;
      }
      for (int j = 0; j < pad; j++) d[j] = d[pad + wd + j] = 0.0f;
      memcpy(d + pad, xp + (size_t)iy * wd, sizeof(float) * (size_t)wd);
    }
    for (int r = 0; r < rows; r++) {
      float *yr = yp + (size_t)(oy0 + r) * ow;
      if (rp) {
        const float *rr = rp + (size_t)(oy0 + r) * ow;
        for (int ox = 0; ox < ow; ox++) yr[ox] = rr[ox] + bv;
      } else {
        for (int ox = 0; ox < ow; ox++) yr[ox] = bv;
      }
      for (int ky = 0; ky < k; ky++) xr[ky] = buf + (size_t)(r + ky) * pw;
      switch (k) {
        case 3: dw_interior(yr, xr, wp, 0, ow, 0, 3); break;
        case 5: dw_interior(yr, xr, wp, 0, ow, 0, 5); break;
        case 7: dw_interior(yr, xr, wp, 0, ow, 0, 7); break;
        default: dw_interior(yr, xr, wp, 0, ow, 0, k); break;
      }
      if (gp) {
        const float *gr = gp + (size_t)(oy0 + r) * ow;
        for (int ox = 0; ox < ow; ox++) yr[ox] *= gr[ox];
      }
    }
  }
  return 1;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "kernels/lanes16.h"
#define DW_AVX512 1

enum { DW_R = 4 }; /* output rows of a register block */

/* A column block's masks: om[q] the output lanes of vector q inside the row, lm[kx][q] the
 * lanes of tap column kx's load inside the input row (and the output row). */
typedef struct {
  __mmask16 om[2], lm[7][2];
} dw_masks;

enum { DW_MAXB = 128 }; /* column blocks of 32 a call's masks are computed for (ow <= 4096) */

static void dw_masks_init(dw_masks *m, int k, int pad, int wd, int ow) {
  for (int x0 = 0, bi = 0; x0 < ow; x0 += 32, bi++)
    for (int q = 0; q < 2; q++) {
      m[bi].om[q] = rv_lanes_below((long long)ow - (x0 + 16 * q));
      for (int kx = 0; kx < k; kx++)
        m[bi].lm[kx][q] =
            (__mmask16)(rv_cols_mask((long long)x0 + 16 * q - pad + kx, wd) & m[bi].om[q]);
    }
}

/* One register block of dw_plane_k: output rows [oy0, oy0 + rows) x columns [x0, x0 + 16 NQ).
 * FULL (a literal): every tap row inside the plane and every load and store inside its row,
 * so no masks (masked loads and stores cost more than plain ones on the Zen 5 measured). */
__attribute__((target("avx512f,fma"))) static inline __attribute__((always_inline)) void
dw_block(const int K, const int FULL, const int NQ, float *yp, const float *xp,
         const float *wp, float bv, const float *rp, const float *gp, int h, int wd, int pad,
         int ow, int oy0, int rows, int x0, const dw_masks *m) {
  const __mmask16 *om = m->om;
  const __mmask16(*lm)[2] = m->lm;
  const __m512 b = _mm512_set1_ps(bv);
  __m512 acc[DW_R][2];
#pragma GCC unroll 4
  for (int i = 0; i < DW_R; i++)
#pragma GCC unroll 2
    for (int q = 0; q < NQ; q++) {
      acc[i][q] = b;
      if (rp && (FULL || i < rows)) {
        const float *rr = rp + (size_t)(oy0 + i) * ow + x0 + 16 * q;
        acc[i][q] =
            _mm512_add_ps(FULL ? _mm512_loadu_ps(rr) : _mm512_maskz_loadu_ps(om[q], rr), b);
      }
    }
#pragma GCC unroll 16
  for (int t = 0; t < DW_R + K - 1; t++) {
    /* a row outside the plane: loads of nothing (zeros), as the band path's zero rows */
    const int iy = oy0 - pad + t, in = FULL || (iy >= 0 && iy < h);
    const float *row = xp + (size_t)(in ? iy : 0) * wd + x0 - pad;
    const __mmask16 rm = in ? (__mmask16)0xffff : (__mmask16)0;
#pragma GCC unroll 7
    for (int kx = 0; kx < K; kx++)
#pragma GCC unroll 2
      for (int q = 0; q < NQ; q++) {
        __m512 v = FULL ? _mm512_loadu_ps(row + kx + 16 * q)
                        : _mm512_maskz_loadu_ps(lm[kx][q] & rm, row + kx + 16 * q);
        /* one load for the up to K FMAs (GCC would fold it into each, as a memory operand) */
        __asm__("" : "+v"(v));
#pragma GCC unroll 4
        for (int i = 0; i < DW_R; i++) {
          const int ky = t - i;
          if (ky >= 0 && ky < K)
            acc[i][q] = _mm512_fmadd_ps(_mm512_set1_ps(wp[ky * K + kx]), v, acc[i][q]);
        }
      }
  }
#pragma GCC unroll 4
  for (int i = 0; i < DW_R; i++) {
    if (!FULL && i >= rows) break;
#pragma GCC unroll 2
    for (int q = 0; q < NQ; q++) {
      const size_t o = (size_t)(oy0 + i) * ow + x0 + 16 * q;
      __m512 a = acc[i][q];
      if (gp)
        a = _mm512_mul_ps(a, FULL ? _mm512_loadu_ps(gp + o) : _mm512_maskz_loadu_ps(om[q], gp + o));
      if (FULL)
        _mm512_storeu_ps(yp + o, a);
      else
        _mm512_mask_storeu_ps(yp + o, om[q], a);
    }
  }
}

/* One plane, stride 1, pad < K, on AVX-512 (K = 5, 7: RAVLT's LePE): register blocks of
 * DW_R output rows x 32 columns (8 accumulators); each input row of a block is loaded once
 * per tap column and feeds the up to K output rows it is a tap row of (masked where the
 * window crosses the plane's border; rows outside it load zeros). Each output takes its taps
 * in the order of dw_interior (ky, then kx, FMA onto residual + b) with the padding's zeros
 * included, so the outputs are those of dw_plane_band's AVX-512 clone (GCC's; clang builds
 * have no such clone) bit for bit. The band path copies every row into its stack buffer
 * and runs one 25-FMA chain per vector: this is 1.16-2.1x faster on the LePE's planes with
 * the input just written, as in the model (16x16: 0.8-1.0x, left on the band path). For
 * K = 3 it was 1.0x there (both move the map at the memory's rate), so 3x3 stays on the
 * band path, which can also run in place (bench/RESULTS.md). */
__attribute__((target("avx512f,fma"))) static inline __attribute__((always_inline)) void
dw_plane_k(const int K, float *yp, const float *xp, const float *wp, float bv, const float *rp,
           const float *gp, int h, int wd, int pad, int oh, int ow, const dw_masks *m) {
  for (int oy0 = 0; oy0 < oh; oy0 += DW_R) {
    const int rows = oh - oy0 < DW_R ? oh - oy0 : DW_R;
    const int rows_in = rows == DW_R && oy0 - pad >= 0 && oy0 - pad + DW_R + K - 1 <= h;
    for (int x0 = 0; x0 < ow; x0 += 32) {
      /* the rows that two blocks down read first: each row is a short stream of its own */
      for (int j = 0; j < DW_R; j++) {
        const int iy = oy0 + 2 * DW_R - pad + K - 1 + j, oy = oy0 + 2 * DW_R + j;
        if (iy < h) {
          _mm_prefetch((const char *)(xp + (size_t)iy * wd + x0), _MM_HINT_T0);
          _mm_prefetch((const char *)(xp + (size_t)iy * wd + x0) + 64, _MM_HINT_T0);
        }
        if (oy < oh && rp && rp != xp) {
          _mm_prefetch((const char *)(rp + (size_t)oy * ow + x0), _MM_HINT_T0);
          _mm_prefetch((const char *)(rp + (size_t)oy * ow + x0) + 64, _MM_HINT_T0);
        }
        if (oy < oh && gp) {
          _mm_prefetch((const char *)(gp + (size_t)oy * ow + x0), _MM_HINT_T0);
          _mm_prefetch((const char *)(gp + (size_t)oy * ow + x0) + 64, _MM_HINT_T0);
        }
      }
      if (ow - x0 <= 16)
        dw_block(K, 0, 1, yp, xp, wp, bv, rp, gp, h, wd, pad, ow, oy0, rows, x0, m + x0 / 32);
      else if (rows_in && x0 - pad >= 0 && x0 + 32 - pad + K - 1 <= wd && x0 + 32 <= ow)
        dw_block(K, 1, 2, yp, xp, wp, bv, rp, gp, h, wd, pad, ow, oy0, rows, x0, m + x0 / 32);
      else
        dw_block(K, 0, 2, yp, xp, wp, bv, rp, gp, h, wd, pad, ow, oy0, rows, x0, m + x0 / 32);
    }
  }
}

__attribute__((target("avx512f,fma"))) static void dw_plane_avx512(
    float *yp, const float *xp, const float *wp, float bv, const float *rp, const float *gp,
    int h, int wd, int k, int pad, int oh, int ow, const dw_masks *m) {
  switch (k) {
    case 5: dw_plane_k(5, yp, xp, wp, bv, rp, gp, h, wd, pad, oh, ow, m); break;
    case 7: dw_plane_k(7, yp, xp, wp, bv, rp, gp, h, wd, pad, oh, ow, m); break;
  }
}
#else
#define DW_AVX512 0
#endif

void rv_dwconv2d_f32(float *y, const float *x, const float *w, const float *b,
                     const float *residual, int n, int c, int h, int wd, int k, int stride,
                     int pad) {
  rv_dwconv2d_gate_f32(y, x, w, b, residual, NULL, n, c, h, wd, k, stride, pad);
}

void rv_dwconv2d_gate_f32(float *y, const float *x, const float *w, const float *b,
                          const float *residual, const float *gate, int n, int c, int h,
                          int wd, int k, int stride, int pad) {
  RV_ASSERT(k > 0 && stride > 0 && pad >= 0);
  int oh = (h + 2 * pad - k) / stride + 1, ow = (wd + 2 * pad - k) / stride + 1;
  RV_ASSERT(oh > 0 && ow > 0);
  /* in place: only through the band path, which reads each input row before writing it */
  const int inplace = y == x;
  RV_ASSERT(!inplace || (stride == 1 && 2 * pad == k - 1 && rv_dwconv2d_inplace_ok(wd, k)));
  long planes = (long)n * c;
#if DW_AVX512
  dw_masks masks[DW_MAXB];
  /* rows of 16 or fewer columns (RAVLT's stage 4 at 512x512): the band path (0.8-1.0x) */
  const int fast = !inplace && stride == 1 && (k == 5 || k == 7) && pad < k && ow > 16 &&
                   ow <= 32 * DW_MAXB && rv_ukernel_supported();
  if (fast) dw_masks_init(masks, k, pad, wd, ow);
#endif
#pragma omp parallel for schedule(static) if ((size_t)planes * oh * ow * k * k >= 65536)
  for (long p = 0; p < planes; p++) {
    int ci = (int)(p % c);
    const float *xp = x + (size_t)p * h * wd;
    const float *wp = w + (size_t)ci * k * k;
    const float *rp = residual ? residual + (size_t)p * oh * ow : NULL;
    const float *gp = gate ? gate + (size_t)p * oh * ow : NULL;
    float *yp = y + (size_t)p * oh * ow;
    float bv = b ? b[ci] : 0.0f;
    if (stride == 1 && k <= 7 && pad < k) {
#if DW_AVX512
      if (fast) {
        dw_plane_avx512(yp, xp, wp, bv, rp, gp, h, wd, k, pad, oh, ow, masks);
        continue;
      }
#endif
      if (!dw_plane_band(yp, xp, wp, bv, rp, gp, h, wd, k, pad, oh, ow))
        dw_plane_rows(yp, xp, wp, bv, rp, gp, h, wd, k, pad, oh, ow);
      continue;
    }
    for (int oy = 0; oy < oh; oy++) {
      float *yr = yp + (size_t)oy * ow;
      if (rp) {
        const float *rr = rp + (size_t)oy * ow;
        for (int ox = 0; ox < ow; ox++) yr[ox] = rr[ox] + bv;
      } else {
        for (int ox = 0; ox < ow; ox++) yr[ox] = bv;
      }
      for (int ky = 0; ky < k; ky++) {
        int iy = oy * stride - pad + ky;
        if (iy < 0 || iy >= h) continue;
        const float *xr = xp + (size_t)iy * wd;
        for (int kx = 0; kx < k; kx++) {
          int off = kx - pad, lo, hi;
          valid_range(ow, wd, stride, off, &lo, &hi);
          float wv = wp[ky * k + kx];
          if (stride == 1) {
            const float *xs = xr + off;
            for (int ox = lo; ox < hi; ox++) yr[ox] += wv * xs[ox];
          } else {
            for (int ox = lo; ox < hi; ox++) yr[ox] += wv * xr[ox * stride + off];
          }
        }
      }
      if (gp) {
        const float *gr = gp + (size_t)oy * ow;
        for (int ox = 0; ox < ow; ox++) yr[ox] *= gr[ox];
      }
    }
  }
}
