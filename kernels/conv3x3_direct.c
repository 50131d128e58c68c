/* Direct dense 3x3 convolutions, pad 1, stride 1 or 2, groups 1, one NCHW image, for maps
 * with few input channels (the RAVLT stem: 3 -> 32 -> 32 -> 32 -> 64 at half the input's
 * resolution):
 *
 *   y[co][oy][ox] = act(b[co] + sum w[co][ci][ky][kx] x[ci][s oy - 1 + ky][s ox - 1 + kx])
 *
 * the sum over ci, ky, kx (k = 9 ci + 3 ky + kx) in order with FMA (taps in the padding
 * skipped: they add zero), then + b: the order of im2col + a GEMM that does not split k.
 *
 * No column matrix, no transform: a register block of 8 output channels x 2 or 3 vectors
 * of 16 pixels of one output row reads its input rows in place (the three taps of a row are
 * loads shifted by one float at stride 1; at stride 2, 32 floats deinterleaved by one
 * permute), masked where a load would cross the map's left or right border; the weights are
 * packed per call as [co / 8][ci][tap][co % 8] (cout cin 9 floats). Where cin is small the
 * im2col path spends its time writing and reading the column matrix (K = 9 cin rows) and
 * Winograd F(2x2) its time in the transforms (at 32 channels both move more bytes than
 * they multiply; the measurements: bench/RESULTS.md). Threads take (output row,
 * 16 NV-pixel chunk, 8-channel block) cells in equal contiguous shares. */
#include "kernels/ops.h"

#include <omp.h>

enum { DR = 8 }; /* output channels per register block */

size_t rv_conv3x3_direct_packed_floats(int cout, int cin) {
  return (size_t)((cout + DR - 1) / DR * DR) * (size_t)cin * 9;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "kernels/lanes16.h"

/* up[((co / 8) cin + ci) 9 + tap][co % 8] = w[co][ci][tap], zero rows past cout */
static void pack(float *up, const float *w, int cout, int cin) {
  const int coutp = (cout + DR - 1) / DR * DR;
  for (int co = 0; co < coutp; co++)
    for (int ci = 0; ci < cin; ci++)
      for (int t = 0; t < 9; t++)
        up[(((size_t)(co / DR) * cin + ci) * 9 + t) * DR + co % DR] =
            co < cout ? w[((size_t)co * cin + ci) * 9 + t] : 0.0f;
}

/* One cell: rows [ky0, ky1) of the taps, NV vectors of 16 output pixels from column ox0 of
 * output row oy; xr = x + (oy S - 1) wd + ox0 S (the tap (0, 0) row's column of pixel ox0,
 * before the kx - 1 shift), m[kx][q] (S 2: m[kx][2q], m[kx][2q + 1] for the two halves) the
 * load masks (full: all lanes valid, unmasked loads). */
__attribute__((target("avx512f,fma"))) static inline __attribute__((always_inline)) void
cell(int S, int NV, int full, float *y, size_t ldy, int rows, __mmask16 sm[3], const float *u,
     const float *xr, size_t hw, int wd, int cin, int ky0, int ky1, const __mmask16 m[3][6],
     const float *bias) {
  const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  __m512 acc[DR][3];
#pragma GCC unroll 8
  for (int r = 0; r < DR; r++)
#pragma GCC unroll 3
    for (int q = 0; q < NV; q++) acc[r][q] = _mm512_setzero_ps();
  for (int ci = 0; ci < cin; ci++) {
    const float *xc = xr + (size_t)ci * hw;
    const float *uc = u + (size_t)ci * 9 * DR;
    for (int ky = ky0; ky < ky1; ky++) {
      const float *row = xc + (size_t)ky * wd;
#pragma GCC unroll 3
      for (int kx = 0; kx < 3; kx++) {
        const float *src = row + kx - 1;
        __m512 v[3];
#pragma GCC unroll 3
        for (int q = 0; q < NV; q++) {
          if (S == 1) {
            v[q] = full ? _mm512_loadu_ps(src + 16 * q)
                        : _mm512_maskz_loadu_ps(m[kx][q], src + 16 * q);
          } else {
            const float *s2 = src + 32 * q;
            const __m512 lo = full ? _mm512_loadu_ps(s2) : _mm512_maskz_loadu_ps(m[kx][2 * q], s2);
            const __m512 hi = full ? _mm512_loadu_ps(s2 + 16)
                                   : _mm512_maskz_loadu_ps(m[kx][2 * q + 1], s2 + 16);
            v[q] = _mm512_permutex2var_ps(lo, ev, hi);
          }
        }
        const float *ut = uc + (size_t)(3 * ky + kx) * DR;
#pragma GCC unroll 8
        for (int r = 0; r < DR; r++) {
          const __m512 wv = _mm512_set1_ps(ut[r]);
#pragma GCC unroll 3
          for (int q = 0; q < NV; q++) acc[r][q] = _mm512_fmadd_ps(wv, v[q], acc[r][q]);
        }
      }
    }
  }
  /* to DR, unrolled: a loop to rows would index acc at run time (a stack array) */
#pragma GCC unroll 8
  for (int r = 0; r < DR; r++) {
    if (r >= rows) break;
    const __m512 br = _mm512_set1_ps(bias ? bias[r] : 0.0f);
#pragma GCC unroll 3
    for (int q = 0; q < NV; q++)
      _mm512_mask_storeu_ps(y + (size_t)r * ldy + 16 * q, sm[q], _mm512_add_ps(acc[r][q], br));
  }
}

/* the geometry of a call */
typedef struct {
  const float *x, *up, *b;
  float *y;
  int cin, h, wd, cout, oh, ow, nv, chunks, cb;
  rv_act act;
} dgeom;

/* cell t of oh x chunks x cb (row, chunk, channel block) */
__attribute__((target("avx512f,fma"))) static void run_cell(int S, const dgeom *g, size_t t) {
  const int c = (int)(t % (size_t)g->cb);
  const size_t rc = t / (size_t)g->cb;
  const int oy = (int)(rc / (size_t)g->chunks), ch = (int)(rc % (size_t)g->chunks);
  const int NV = g->nv, ox0 = ch * 16 * NV;
  const int co = c * DR, rows = g->cout - co < DR ? g->cout - co : DR;
  const int iy0 = oy * S - 1;
  const int ky0 = iy0 < 0 ? -iy0 : 0, ky1 = iy0 + 3 > g->h ? g->h - iy0 : 3;
  __mmask16 m[3][6], sm[3];
  int full = 1;
  for (int q = 0; q < NV; q++) sm[q] = rv_lanes_below((long)g->ow - (ox0 + 16 * q));
  for (int kx = 0; kx < 3; kx++)
    for (int q = 0; q < NV * S; q++) {
      m[kx][q] = rv_cols_mask((long)ox0 * S + kx - 1 + 16 * q, g->wd);
      full &= m[kx][q] == (__mmask16)0xffff;
    }
  /* a full cell may still read past the row's end in the lanes not stored (stride 2: the
   * 32nd float of a pair of loads) only where the mask says valid: full means every lane of
   * every load is inside the row */
  const float *xr = g->x + (long)iy0 * g->wd + (long)ox0 * S;
  float *y = g->y + (size_t)co * g->oh * g->ow + (size_t)oy * g->ow + ox0;
  const size_t ldy = (size_t)g->oh * g->ow, hw = (size_t)g->h * g->wd;
  const float *u = g->up + (size_t)c * g->cin * 9 * DR, *bias = g->b ? g->b + co : NULL;
#define CELL(S_, NV_, F_)                                                                   \
  cell(S_, NV_, F_, y, ldy, rows, sm, u, xr, hw, g->wd, g->cin, ky0, ky1,                   \
       (const __mmask16(*)[6])m, bias)
  if (S == 1) {
    if (NV == 3) {
      if (full) CELL(1, 3, 1); else CELL(1, 3, 0);
    } else {
      if (full) CELL(1, 2, 1); else CELL(1, 2, 0);
    }
  } else {
    if (NV == 3) {
      if (full) CELL(2, 3, 1); else CELL(2, 3, 0);
    } else {
      if (full) CELL(2, 2, 1); else CELL(2, 2, 0);
    }
  }
#undef CELL
  if (g->act != RV_ACT_NONE) {
    const int nt = g->ow - ox0 < 16 * NV ? g->ow - ox0 : 16 * NV;
    rv_act_rows_serial_f32(y, ldy, rows, (size_t)nt, g->act);
  }
}

int rv_conv3x3_direct_supported(void) { return rv_ukernel_supported(); }

rv_status rv_conv3x3_direct_f32(float *y, const float *x, const float *w, const float *b,
                                int cin, int h, int wd, int cout, int stride, rv_act act,
                                rv_arena *scratch) {
  RV_ASSERT(y && x && w && scratch);
  if (cin < 1 || cout < 1 || h < 1 || wd < 1 || (stride != 1 && stride != 2))
    return RV_ERR_ARG;
  if (!rv_ukernel_supported()) return RV_ERR_UNSUPPORTED;
  dgeom g = {.x = x, .b = b, .y = y, .cin = cin, .h = h, .wd = wd, .cout = cout, .act = act};
  g.oh = rv_conv_out_size(h, 3, stride, 1, 1);
  g.ow = rv_conv_out_size(wd, 3, stride, 1, 1);
  /* 2 or 3 vectors a cell, whichever pads the row less (3 on a tie: fewer cells) */
  const int pad3 = (g.ow + 47) / 48 * 48, pad2 = (g.ow + 31) / 32 * 32;
  g.nv = pad2 < pad3 ? 2 : 3;
  g.chunks = (g.ow + 16 * g.nv - 1) / (16 * g.nv);
  g.cb = (cout + DR - 1) / DR;
  rv_arena_mark mark = rv_arena_get_mark(scratch);
  float *up = rv_arena_floats(scratch, rv_conv3x3_direct_packed_floats(cout, cin));
  if (!up) return RV_ERR_NOMEM;
  pack(up, w, cout, cin);
  g.up = up;
  const size_t cells = (size_t)g.oh * g.chunks * g.cb;
  const int S = stride;
  const size_t macs = (size_t)cout * cin * 9 * g.oh * g.ow;
#pragma omp parallel for schedule(static) if (cells > 1 && macs >= 1000000)
  for (size_t t = 0; t < cells; t++) run_cell(S, &g, t);
  rv_arena_release(scratch, mark);
  return RV_OK;
}
#else
int rv_conv3x3_direct_supported(void) { return 0; }
rv_status rv_conv3x3_direct_f32(float *y, const float *x, const float *w, const float *b,
                                int cin, int h, int wd, int cout, int stride, rv_act act,
                                rv_arena *scratch) {
  (void)y, (void)x, (void)w, (void)b, (void)cin, (void)h, (void)wd, (void)cout, (void)stride;
  (void)act, (void)scratch;
  return RV_ERR_UNSUPPORTED;
}
#endif
