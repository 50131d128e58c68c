/* Winograd F(m x m, 3 x 3) convolution, stride 1, dilation 1, groups 1, any zero padding:
 *
 *   y[n,co,oy,ox] = act(b[co] + sum_{ci,ky,kx} w[co,ci,ky,kx] * x[n,ci,oy - ph + ky, ox - pw + kx])
 *
 * The output is cut into m x m tiles (partial tiles at the right/bottom edges are computed
 * whole and clipped); tile t reads the a x a input patch (a = m + 2) at (ty*m - ph, tx*m - pw),
 * zero outside the image. With the transforms of the Toom-Cook construction (points 0, +-1,
 * 1/2, -2 and infinity for m = 4; 0, +-1, infinity for m = 2):
 *
 *   U = G g G^T            [a x a] per (co, ci)        (weights, once per call, in double)
 *   V = B^T d B            [a x a] per (ci, tile)      (input patches)
 *   M[k] = U[k] V[k]       for each of the a^2 positions k: [cout x cin] x [cin x tiles] GEMM
 *   y_tile = A^T M A       [m x m] per (co, tile), then + b[co] and act
 *
 * so a tile costs a^2 multiplies per (co, ci) instead of 9 m^2: 2.25x fewer for m = 2,
 * 4x fewer for m = 4 (nominally; the clipped parts of edge tiles are wasted work).
 * Rounding: the transforms have entries up to 8 (A^T, m = 4) and 1/30 (G), so the float32
 * error is larger than a direct conv's: tests/unit/kernels/test_winograd.c states the measured bounds.
 * For m = 4 the points 1/2, -2 replace Lavin's +-2 (rows of B^T and G scaled by powers of two
 * to integer B^T entries, which changes no rounding), because they give the smaller float32
 * error (tools/winograd_points.py; the figures: bench/RESULTS.md, "Measurements behind the
 * code's rules").
 *
 * Layout: U [a^2][cout][cin], V [a^2][cin][T], M [a^2][cout][T] for a block of T tiles
 * numbered over (image, tile row, tile column). Transforms are separable: 1-D passes over
 * rows of tiles, contiguous in the tile index (vectorisable); the input's 1-D pass along
 * image rows runs over the whole row segment. Batches of small images (n >= 4, under 8 x 8
 * tiles each: RoI heads) instead number a block's tiles (tile position, image) and run the
 * transforms with up to 64 images as lanes (each channel staged in a [row][col][image]
 * buffer): the row-of-tiles passes would have 2-4 lanes there (faster for 7x7 and 14x14
 * RoIs: bench/RESULTS.md, "Measurements behind the code's rules"). OpenMP over
 * channels for the transforms; the a^2 GEMMs go through rv_gemm_f32 (blocks among the team) outside
 * every parallel region.
 * Three implementations of the same arithmetic (the transforms are the same functions and
 * every GEMM sums over ci in order with FMA, as OpenBLAS's kernel does: on this machine all
 * three give the same bits): the BLAS path (below: each of the a^2 GEMMs over a block of up
 * to 4096 tiles), the fused path (a thread transforms, multiplies and inverts 48 tiles at
 * a time with U packed once, AVX-512 kernel; taken where U fits in FUSED_U_MAX) and the
 * channels-last path for RoI batches (rv_conv2d_winograd_rois_f32, the end of this file).
 * Workspace (scratch arena, released on return): U (a^2 cout cin floats: (a/3)^2 times the
 * weights; above U_BUDGET the output channels are processed in chunks, each redoing the input
 * transform; UperNet's 2048-channel fpn_bottleneck is run as 4 convs of 512 channels for this
 * reason, necks/uper.c), V + M for T tiles (T
 * from BLOCK_BUDGET, at least MIN_TILES, at most MAX_TILES), and small per-thread
 * buffers: at most ~128 MB plus MIN_TILES blocks for very wide convs, independent of the
 * image size. Blocks are 64 MB: wider GEMMs re-pack U less often. */
#include "kernels/ops.h"
#include "kernels/vmath.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_BUDGET ((size_t)16 << 20) /* floats of V + M per block (64 MB) */
#define U_BUDGET ((size_t)16 << 20)     /* floats of transformed weights at a time (64 MB) */
#define MIN_TILES 64                   /* at least this many tiles per block (GEMM width) */
#define MAX_TILES 4096 /* at most: binds for few channels (the backbone stem's 32 -> 32 3x3
                        * convs), where BLOCK_BUDGET alone gives blocks too wide for a GEMM
                        * of K = 32 */
#define SEG 64                         /* tiles per transform segment (per-thread buffers) */


/* ---- 1-D transforms over n lanes: lane t reads d[t*step + r*ds] (r < a), writes o[k*os + t] */

/* no dependences between the lanes (the 12 row pointers below would take more run-time
 * alias checks than GCC makes) */
#if defined(__clang__)
#define IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define IVDEP _Pragma("GCC ivdep")
#else
#define IVDEP
#endif

/* B^T d for one lane of taps d0..d5 (m = 4) or d0..d3 (m = 2), outputs o[k os + t] */
#define BT4(o, os, t, d0, d1, d2, d3, d4, d5)                                                 \
  do {                                                                                       \
    float p31_ = (d3) - (d1), q42_ = (d4) - (d2); /* B^T rows in these and d2 +- d3 */       \
    (o)[t] = 2.0f * ((d0) - (d2) + q42_) + 3.0f * p31_;                                      \
    (o)[(os) + (t)] = 2.0f * (p31_ + q42_) + 3.0f * ((d2) + (d3));                           \
    (o)[2 * (os) + (t)] = 2.0f * (q42_ - p31_) + 3.0f * ((d3) - (d2));                       \
    (o)[3 * (os) + (t)] = 2.0f * p31_ + q42_;                                                \
    (o)[4 * (os) + (t)] = 2.0f * q42_ - p31_;                                                \
    (o)[5 * (os) + (t)] = 2.0f * ((d5) - (d3) - p31_) + 3.0f * q42_;                         \
  } while (0)
#define BT2(o, os, t, d0, d1, d2, d3)                                                         \
  do {                                                                                       \
    (o)[t] = (d0) - (d2);                                                                    \
    (o)[(os) + (t)] = (d1) + (d2);                                                           \
    (o)[2 * (os) + (t)] = (d2) - (d1);                                                       \
    (o)[3 * (os) + (t)] = (d1) - (d3);                                                       \
  } while (0)

/* Lane t reads d[t*step + r*ds] (r < a), writes o[k*os + t]. Contiguous lanes (step 1: the
 * channels-last path, the batched columns) have their own loops, which GCC vectorises (with
 * the lane stride a variable it kept the scalar loop). */
RV_CLONES4 static void bt_1d(int m, float *restrict o, size_t os, const float *restrict d,
                            size_t ds, int step, int n) {
  if (m == 4 && step == 1) {
    const float *d0 = d, *d1 = d + ds, *d2 = d + 2 * ds, *d3 = d + 3 * ds, *d4 = d + 4 * ds,
                *d5 = d + 5 * ds;
    IVDEP
    for (int t = 0; t < n; t++) BT4(o, os, t, d0[t], d1[t], d2[t], d3[t], d4[t], d5[t]);
  } else if (m == 4) {
    for (int t = 0; t < n; t++) {
      const float *p = d + (size_t)t * step;
      BT4(o, os, t, p[0], p[ds], p[2 * ds], p[3 * ds], p[4 * ds], p[5 * ds]);
    }
  } else if (step == 1) {
    for (int t = 0; t < n; t++) BT2(o, os, t, d[t], d[ds + t], d[2 * ds + t], d[3 * ds + t]);
  } else {
    for (int t = 0; t < n; t++) {
      const float *p = d + (size_t)t * step;
      BT2(o, os, t, p[0], p[ds], p[2 * ds], p[3 * ds]);
    }
  }
}

RV_CLONES4 static void at_1d(int m, float *restrict o, size_t os, const float *restrict d, size_t ds,
                            int n) {
  if (m == 4) {
    for (int t = 0; t < n; t++) {
      float d0 = d[t], d1 = d[ds + t], d2 = d[2 * ds + t], d3 = d[3 * ds + t],
            d4 = d[4 * ds + t], d5 = d[5 * ds + t];
      float s12 = d1 + d2, m12 = d1 - d2;
      o[t] = d0 + s12 + d3 + d4;
      o[os + t] = m12 + 0.5f * d3 - 2.0f * d4;
      o[2 * os + t] = s12 + 0.25f * d3 + 4.0f * d4;
      o[3 * os + t] = m12 + 0.125f * d3 - 8.0f * d4 + d5;
    }
  } else {
    for (int t = 0; t < n; t++) {
      float d0 = d[t], d1 = d[ds + t], d2 = d[2 * ds + t], d3 = d[3 * ds + t];
      o[t] = d0 + d1 + d2;
      o[os + t] = d1 - d2 - d3;
    }
  }
}

/* u[k*us + j] (k < a) = G g_j for the 3 taps g[j], g[gs + j], g[2 gs + j] of lanes j < n,
 * in double (the same expression per lane as one tap triple at a time: vectorising over
 * the lanes changes no rounding) */
static inline __attribute__((always_inline)) void g_1d(int m, double *restrict u, int us,
                                                      const double *restrict g, int gs,
                                                      int n) {
  for (int j = 0; j < n; j++) {
    double g0 = g[j], g1 = g[gs + j], g2 = g[2 * gs + j];
    if (m == 4) {
      u[j] = 0.5 * g0;
      u[us + j] = (g0 + g1 + g2) / 6.0;
      u[2 * us + j] = (g0 - g1 + g2) / -6.0;
      u[3 * us + j] = (16.0 * g0 + 8.0 * g1 + 4.0 * g2) / -15.0;
      u[4 * us + j] = (g0 - 2.0 * g1 + 4.0 * g2) / 30.0;
      u[5 * us + j] = 0.5 * g2;
    } else {
      u[j] = g0;
      u[us + j] = 0.5 * (g0 + g1 + g2);
      u[2 * us + j] = 0.5 * (g0 - g1 + g2);
      u[3 * us + j] = g2;
    }
  }
}

/* U[k][co][ci] = (G w[co,ci] G^T)[k / a][k % a] for ci in [0, cin) of one co, computed in
 * double and rounded once, 64 ci at a time as lanes: the taps transposed to [tap][ci], the
 * columns then the rows transformed for all lanes, and the a^2 output streams (a power of
 * two apart when cout cin is) written as runs of 64 */
RV_CLONES4 static void weight_transform_row(float *u, size_t plane, size_t cs, const float *w,
                                           int cin, int m) {
  enum { L = 64 };
  const int a = m + 2;
  double g[9 * L], tmp[6 * 3 * L], uu[6 * 6 * L];
  for (int c0 = 0; c0 < cin; c0 += L) {
    const int nc = cin - c0 < L ? cin - c0 : L;
    const float *wc = w + (size_t)c0 * 9;
    for (int j = 0; j < nc; j++)
      for (int i = 0; i < 9; i++) g[i * L + j] = wc[(size_t)j * 9 + i];
    /* columns c of the 3x3 taps -> tmp[r][c][lane] (r < a); then rows -> uu[r][k][lane] */
    if (m == 4) { /* literal m: the lane loops unroll per row of G */
      for (int c = 0; c < 3; c++) g_1d(4, tmp + c * L, 3 * L, g + c * L, 3 * L, nc);
      for (int r = 0; r < 6; r++) g_1d(4, uu + r * 6 * L, L, tmp + r * 3 * L, L, nc);
    } else {
      for (int c = 0; c < 3; c++) g_1d(2, tmp + c * L, 3 * L, g + c * L, 3 * L, nc);
      for (int r = 0; r < 4; r++) g_1d(2, uu + r * 4 * L, L, tmp + r * 3 * L, L, nc);
    }
    for (int k = 0; k < a * a; k++) {
      float *uk = u + (size_t)k * plane + (size_t)c0 * cs;
      for (int j = 0; j < nc; j++) uk[(size_t)j * cs] = (float)uu[k * L + j];
    }
  }
}

static void weight_transform(float *u, const float *w, int cout, int cin, int m) {
  size_t plane = (size_t)cout * cin;
#pragma omp parallel for schedule(static) if (plane >= 4096)
  for (int co = 0; co < cout; co++)
    weight_transform_row(u + (size_t)co * cin, plane, 1, w + (size_t)co * cin * 9, cin, m);
}

typedef struct {
  int m, a, ph, pw, h, wd, oh, ow, th, tw; /* tile grid th x tw per image */
  int cin, cout;
} wino_geom;

/* The geometry of a conv of h x wd images with pads ph, pw; 0 when the output is empty. */
static int make_geom(wino_geom *g, int m, int ph, int pw, int h, int wd, int cin, int cout) {
  g->m = m, g->a = m + 2, g->ph = ph, g->pw = pw, g->h = h, g->wd = wd;
  g->oh = rv_conv_out_size(h, 3, 1, ph, 1);
  g->ow = rv_conv_out_size(wd, 3, 1, pw, 1);
  g->cin = cin, g->cout = cout;
  if (g->oh <= 0 || g->ow <= 0) return 0;
  g->th = (g->oh + m - 1) / m, g->tw = (g->ow + m - 1) / m;
  return 1;
}

/* Batches of small images (tile rows under 8 tiles: RoI heads), run with the images as the
 * transforms' lanes (the batched functions below) */
static int small_images(const wino_geom *g, int n) { return n >= 4 && g->tw < 8 && g->th < 8; }

/* Tile t -> image, tile row, tile column. */
static void tile_pos(const wino_geom *g, size_t t, int *ni, int *ty, int *tx) {
  size_t per = (size_t)g->th * g->tw;
  *ni = (int)(t / per);
  *ty = (int)(t % per / (size_t)g->tw);
  *tx = (int)(t % (size_t)g->tw);
}

/* V[k][c][t - t0] for tiles [t0, t0 + nt) of channel c; buf: 2 a (SEG m + 2) floats. */
static void input_transform_channel(float *v, size_t ld, size_t ks, const float *x,
                                    const wino_geom *g, int c, size_t t0, int nt, float *buf) {
  int m = g->m, a = g->a, L = SEG * m + 2;
  float *rows = buf, *col = buf + (size_t)a * L;
  for (int done = 0; done < nt;) {
    int ni, ty, tx;
    tile_pos(g, t0 + (size_t)done, &ni, &ty, &tx);
    int seg = g->tw - tx; /* tiles left in this tile row */
    if (seg > nt - done) seg = nt - done;
    if (seg > SEG) seg = SEG;
    int len = seg * m + 2, iy0 = ty * m - g->ph, ix0 = tx * m - g->pw;
    const float *xp = x + ((size_t)ni * g->cin + c) * g->h * g->wd;
    int lo = ix0 < 0 ? -ix0 : 0, hi = g->wd - ix0 < len ? g->wd - ix0 : len;
    if (lo == 0 && hi == len && iy0 >= 0 && iy0 + a <= g->h) {
      /* the patch rows lie inside the image: transformed straight from x, no staging */
      bt_1d(m, col, L, xp + (size_t)iy0 * g->wd + ix0, (size_t)g->wd, 1, len);
    } else {
      for (int r = 0; r < a; r++) { /* staged with the zero padding */
        float *d = rows + (size_t)r * L;
        int iy = iy0 + r;
        if (iy < 0 || iy >= g->h || lo >= hi) {
          memset(d, 0, sizeof(float) * len);
          continue;
        }
        for (int i = 0; i < lo; i++) d[i] = 0.0f;
        memcpy(d + lo, xp + (size_t)iy * g->wd + ix0 + lo, sizeof(float) * (size_t)(hi - lo));
        for (int i = hi; i < len; i++) d[i] = 0.0f;
      }
      bt_1d(m, col, L, rows, L, 1, len); /* along columns: a rows -> a transformed rows */
    }
    float *vo = v + (size_t)c * ld + (size_t)done;
    for (int i = 0; i < a; i++)      /* along rows: positions k = i*a + j */
      bt_1d(m, vo + (size_t)i * a * ks, ks, col + (size_t)i * L, 1, m, seg);
    done += seg;
  }
}

/* act over one output row: ReLU and none inline (RoI maps have rows of 7 or 14) */
static inline void finish_row(float *yr, size_t n, rv_act act) {
  if (act == RV_ACT_RELU)
    for (size_t i = 0; i < n; i++) yr[i] = yr[i] > 0.0f ? yr[i] : 0.0f;
  else if (act != RV_ACT_NONE)
    rv_act_serial_f32(yr, n, act);
}

/* yr[t m + q] = op[q SEG + t] + bias (+ yr's contents if acc) for t m + q < cols: the m
 * outputs of a tile row written together (literal m: interleaved vector stores; one loop
 * per q with stride-m stores stayed scalar), the clipped last tile one by one */
RV_CLONES4 static void store_row(float *restrict yr, const float *restrict op, int m, int cols,
                                float bias, int acc) {
  const int full = cols / m;
  const float *o0 = op, *o1 = op + SEG, *o2 = m == 4 ? op + 2 * SEG : op;
  const float *o3 = m == 4 ? op + 3 * SEG : op; /* rows 2, 3 exist for m = 4 only */
  if (m == 4 && !acc) {
    for (int t = 0; t < full; t++) {
      yr[4 * t] = o0[t] + bias, yr[4 * t + 1] = o1[t] + bias;
      yr[4 * t + 2] = o2[t] + bias, yr[4 * t + 3] = o3[t] + bias;
    }
  } else if (m == 4) {
    for (int t = 0; t < full; t++) {
      yr[4 * t] += o0[t] + bias, yr[4 * t + 1] += o1[t] + bias;
      yr[4 * t + 2] += o2[t] + bias, yr[4 * t + 3] += o3[t] + bias;
    }
  } else if (!acc) {
    for (int t = 0; t < full; t++) yr[2 * t] = o0[t] + bias, yr[2 * t + 1] = o1[t] + bias;
  } else {
    for (int t = 0; t < full; t++) yr[2 * t] += o0[t] + bias, yr[2 * t + 1] += o1[t] + bias;
  }
  for (int c = full * m; c < cols; c++) {
    const float v = op[(size_t)(c % m) * SEG + c / m] + bias;
    yr[c] = acc ? yr[c] + v : v;
  }
}

/* y tiles of channel co for tiles [t0, t0 + nt) from mrow[k*ks + t - t0] (channel co's row
 * of M, positions k ks apart), + bias (+ y's contents if acc), act; buf: (a m + m m) SEG
 * floats. */
static void output_transform_channel(float *y, const float *mrow, size_t ks, const wino_geom *g,
                                     int co, float bias, rv_act act, int acc, size_t t0,
                                     int nt, float *buf) {
  int m = g->m, a = g->a;
  float *hor = buf, *out = buf + (size_t)a * m * SEG;
  for (int done = 0; done < nt;) {
    int ni, ty, tx;
    tile_pos(g, t0 + (size_t)done, &ni, &ty, &tx);
    int seg = g->tw - tx;
    if (seg > nt - done) seg = nt - done;
    if (seg > SEG) seg = SEG;
    const float *mp = mrow + (size_t)done;
    for (int i = 0; i < a; i++) /* along rows: hor[i][q][t] */
      at_1d(m, hor + (size_t)i * m * SEG, SEG, mp + (size_t)i * a * ks, ks, seg);
    for (int q = 0; q < m; q++) /* along columns: out[p][q][t] */
      at_1d(m, out + (size_t)q * SEG, (size_t)m * SEG, hor + (size_t)q * SEG, (size_t)m * SEG, seg);
    int oy0 = ty * m, ox0 = tx * m;
    int rows = g->oh - oy0 < m ? g->oh - oy0 : m;
    int cols = g->ow - ox0 < seg * m ? g->ow - ox0 : seg * m;
    float *yp = y + ((size_t)ni * g->cout + co) * g->oh * g->ow + (size_t)oy0 * g->ow + ox0;
    for (int p = 0; p < rows; p++) {
      float *yr = yp + (size_t)p * g->ow;
      store_row(yr, out + (size_t)p * m * SEG, m, cols, bias, acc);
      finish_row(yr, (size_t)cols, act);
    }
    done += seg;
  }
}

/* ---- small images in batches (RoI heads: hundreds of 7x7 or 14x14 maps) ----------------
 * With few tiles per tile row the transforms above run on 2-4 lanes. Here a block holds nb
 * whole images and its tiles are numbered t = pos * nb + j (pos = ty * tw + tx, j the image
 * in the block), so the transforms run with the block's images as lanes: one channel of up
 * to LANES images is staged as [padded row][padded column][image] (every image has the
 * same borders), each a x a patch is then a strided view of it, transformed along its
 * columns for all (column, image) lanes at once, then along its rows. */
#define LANES 64

/* Padded size of a batched image: PH x PW (th m + 2 by tw m + 2). */
static size_t pad_rows(const wino_geom *g) { return (size_t)g->th * g->m + 2; }
static size_t pad_cols(const wino_geom *g) { return (size_t)g->tw * g->m + 2; }

/* V[k][c][pos * nb + j] for images j < nb of the block starting at image n0. Per chunk of
 * up to LANES images, channel c of each is written into pad [PH][PW][lane] (zero borders),
 * from which every patch is a strided view: no per-patch gather. buf: PH PW LANES + a^2
 * LANES floats. */
static void input_transform_batched(float *v, size_t ld, size_t ks, const float *x,
                                    const wino_geom *g, int c, int n0, int nb, float *buf) {
  const int m = g->m, a = g->a, h = g->h, w = g->wd;
  const size_t img = (size_t)g->cin * h * w;
  const size_t PH = pad_rows(g), PW = pad_cols(g);
  float *pad = buf, *tr = buf + PH * PW * LANES;
  for (int j0 = 0; j0 < nb; j0 += LANES) {
    const int nl = nb - j0 < LANES ? nb - j0 : LANES;
    const size_t rl = PW * nl; /* floats per padded row */
    /* zero borders: rows above/below the image, columns left/right of it */
    for (size_t r = 0; r < PH; r++) {
      float *pr = pad + r * rl;
      if (r < (size_t)g->ph || r >= (size_t)g->ph + h) {
        memset(pr, 0, sizeof(float) * rl);
        continue;
      }
      memset(pr, 0, sizeof(float) * (size_t)g->pw * nl);
      memset(pr + ((size_t)g->pw + w) * nl, 0, sizeof(float) * (PW - g->pw - w) * nl);
    }
    for (int j = 0; j < nl; j++) {
      const float *xp = x + ((size_t)n0 + j0 + j) * img + (size_t)c * h * w;
      for (int iy = 0; iy < h; iy++) {
        float *pr = pad + ((size_t)(iy + g->ph) * PW + g->pw) * nl + j;
        for (int ix = 0; ix < w; ix++) pr[(size_t)ix * nl] = xp[(size_t)iy * w + ix];
      }
    }
    for (int ty = 0; ty < g->th; ty++)
      for (int tx = 0; tx < g->tw; tx++) {
        const int pos = ty * g->tw + tx;
        /* along columns of the patch: lanes (col, j) contiguous, taps r one padded row apart */
        bt_1d(m, tr, (size_t)a * nl, pad + ((size_t)ty * m * PW + (size_t)tx * m) * nl, rl, 1,
              a * nl);
        /* along rows: for each transformed row i, lanes j, taps col */
        float *vo = v + (size_t)c * ld + (size_t)pos * nb + j0;
        for (int i = 0; i < a; i++)
          bt_1d(m, vo + (size_t)i * a * ks, ks, tr + (size_t)i * a * nl, (size_t)nl, 1, nl);
      }
  }
}

/* y for channel co of the block's images from M[k][co][pos * nb + j] (row mrow, positions
 * ks apart), + bias (+ y if acc), act. Per chunk of up to LANES images the tiles go to
 * out [th m][tw m][lane], then each image's plane is written row by row. buf: (th m tw m +
 * a m) LANES floats. */
static void output_transform_batched(float *y, const float *mrow, size_t ks, const wino_geom *g,
                                     int co, float bias, rv_act act, int acc, int n0, int nb,
                                     float *buf) {
  const int m = g->m, a = g->a, oh = g->oh, ow = g->ow;
  const size_t img = (size_t)g->cout * oh * ow, OW = (size_t)g->tw * m;
  float *out = buf, *hor = buf + (size_t)g->th * m * OW * LANES;
  for (int j0 = 0; j0 < nb; j0 += LANES) {
    const int nl = nb - j0 < LANES ? nb - j0 : LANES;
    for (int ty = 0; ty < g->th; ty++)
      for (int tx = 0; tx < g->tw; tx++) {
        const float *mp = mrow + ((size_t)ty * g->tw + tx) * nb + j0;
        for (int i = 0; i < a; i++) /* along rows: hor[i][q][j] */
          at_1d(m, hor + (size_t)i * m * nl, (size_t)nl, mp + (size_t)i * a * ks, ks, nl);
        /* along columns, lanes (q, j): output row p of the tile into out */
        at_1d(m, out + ((size_t)ty * m * OW + (size_t)tx * m) * nl, OW * nl, hor, (size_t)m * nl,
              m * nl);
      }
    for (int j = 0; j < nl; j++) {
      float *yc = y + ((size_t)n0 + j0 + j) * img + (size_t)co * oh * ow;
      for (int oy = 0; oy < oh; oy++) {
        float *yr = yc + (size_t)oy * ow;
        const float *op = out + (size_t)oy * OW * nl + j;
        if (acc)
          for (int ox = 0; ox < ow; ox++) yr[ox] += op[(size_t)ox * nl] + bias;
        else
          for (int ox = 0; ox < ow; ox++) yr[ox] = op[(size_t)ox * nl] + bias;
        finish_row(yr, (size_t)ow, act);
      }
    }
  }
}

/* ---- fused blocks: one thread transforms, multiplies and inverts TB tiles at a time ------
 * The BLAS path above runs each of the a^2 GEMMs over a block of up to 4096 tiles: V and M
 * (up to 64 MB) leave the caches between the transforms and the GEMMs, and BLAS re-packs U
 * per block and zeroes M (sgemm_beta). Here each thread takes TB = 48 tiles at a time (V and
 * M ~1.8 MB each for 256 channels with F(4x4), in L2/L3), U is packed once per call as
 * [k][co / MR][ci][co % MR] (cout padded to MR with zero rows), and the AVX-512 kernel of
 * kernels/ukernel.c writes MR x TB of M per call, 8 x 3 vectors accumulated over ci in fixed
 * order (the result does not depend on the thread count). Used where U fits in the
 * last-level cache (FUSED_U_MAX) on CPUs with AVX-512F, because keeping V and M in cache
 * is faster there; elsewhere the BLAS path. Outputs bit-identical to the BLAS path. */
#define MR UK_MR       /* output channels per kernel call (rows of packed U): 8 */
#define TB UK_NT       /* tiles per fused block: three 16-float vectors per row of M: 48 */
#define VKS(rows) ((size_t)(rows) * TB + 16) /* floats between positions k of v, mm */
#define FUSED_U_MAX ((size_t)3 << 20) /* floats of packed U (12 MB; the L3 is 32 MB) */

/* M rows of one packed U panel: the shared kernel (kernels/ukernel.c: 8 x 3 vectors, the
 * fastest shape measured) */
static inline void fused_kernel(float *c, const float *u, const float *v, int k) {
  rv_ukernel_f32(c, TB, u, v, TB, k, TB, NULL);
}

/* U packed in panels of pw output channels: up[k][co / pw][ci][co % pw] (pw = MR for the
 * fused path's kernel, NC for the channels-last one), rows cout..coutp zero */
static void weight_transform_panels(float *up, const float *w, int cout, int coutp, int cin,
                                    int m, int pw) {
  const size_t plane = (size_t)coutp * cin, a2 = (size_t)(m + 2) * (m + 2);
#pragma omp parallel for schedule(static) if (plane >= 4096)
  for (int co = 0; co < coutp; co++) {
    float *uc = up + (size_t)(co / pw) * cin * pw + co % pw;
    if (co < cout) {
      weight_transform_row(uc, plane, (size_t)pw, w + (size_t)co * cin * 9, cin, m);
    } else {
      for (size_t k = 0; k < a2; k++)
        for (int ci = 0; ci < cin; ci++) uc[k * plane + (size_t)ci * pw] = 0.0f;
    }
  }
}

/* Every output channel of one block from its products mm (VKS(coutp) apart per point):
 * inverse transform, bias, act (the float32 and bf16 blocks' common tail). */
static void output_transform_block(float *y, const float *mm, const float *b, const wino_geom *g,
                                   rv_conv_params p, int coutp, int batched, size_t t0, int cnt,
                                   int n0, int nb, float *buf) {
  const size_t ks = VKS(coutp);
  for (int co = 0; co < g->cout; co++) {
    const float bias = b ? b[co] : 0.0f;
    if (batched)
      output_transform_batched(y, mm + (size_t)co * TB, ks, g, co, bias, p.act, p.accumulate,
                               n0, nb, buf);
    else
      output_transform_channel(y, mm + (size_t)co * TB, ks, g, co, bias, p.act, p.accumulate,
                               t0, cnt, buf);
  }
}

/* One block: tiles [t0, t0 + cnt) (or, batched, images [n0, n0 + nb)) transformed into v
 * [a^2][cin][TB], multiplied into mm [a^2][coutp][TB], inverted into y. */
static void fused_block(float *y, const float *x, const float *up, const float *b,
                        const wino_geom *g, rv_conv_params p, int coutp, int batched, size_t t0,
                        int cnt, int n0, int nb, float *v, float *mm, float *buf) {
  const size_t a2 = (size_t)g->a * g->a;
  for (int c = 0; c < g->cin; c++) {
    if (batched)
      input_transform_batched(v, TB, VKS(g->cin), x, g, c, n0, nb, buf);
    else
      input_transform_channel(v, TB, VKS(g->cin), x, g, c, t0, cnt, buf);
  }
  for (size_t k = 0; k < a2; k++)
    for (int cb = 0; cb < coutp; cb += MR)
      fused_kernel(mm + k * VKS(coutp) + (size_t)cb * TB, up + (k * coutp + cb) * g->cin,
                   v + k * VKS(g->cin), g->cin);
  output_transform_block(y, mm, b, g, p, coutp, batched, t0, cnt, n0, nb, buf);
}

/* per-thread buffer of the transforms (see each function) */
static size_t transform_buf(const wino_geom *g, int batched) {
  const size_t a2 = (size_t)g->a * g->a;
  const int m = g->m;
  size_t in_buf = batched ? (pad_rows(g) * pad_cols(g) + a2) * LANES
                          : (size_t)2 * g->a * (SEG * m + 2);
  size_t out_buf = batched ? ((size_t)g->th * m * g->tw * m + (size_t)g->a * m) * LANES
                           : (size_t)(g->a * m + m * m) * SEG;
  return in_buf > out_buf ? in_buf : out_buf;
}

static rv_status winograd_fused(float *y, const float *x, const float *w, const float *b, int n,
                                const wino_geom *g, rv_conv_params p, rv_arena *scratch) {
  const size_t a2 = (size_t)g->a * g->a, tpi = (size_t)g->th * g->tw;
  const size_t total = (size_t)n * tpi;
  const int coutp = (g->cout + MR - 1) / MR * MR;
  /* RoI batches: whole images per block, images as the transforms' lanes */
  const int batched = small_images(g, n) && tpi <= TB;
  const int nbi = batched ? (int)(TB / tpi) : 0; /* images per block */
  const size_t blocks = batched ? ((size_t)n + nbi - 1) / nbi : (total + TB - 1) / TB;
  const int nth = omp_get_max_threads();
  const size_t per_thread = transform_buf(g, batched) + a2 * (VKS(g->cin) + VKS(coutp));
  rv_arena_mark mark = rv_arena_get_mark(scratch);
  float *up = rv_arena_floats(scratch, a2 * coutp * g->cin);
  float *tb = rv_arena_floats(scratch, per_thread * nth);
  if (!up || !tb) {
    rv_arena_release(scratch, mark);
    return RV_ERR_NOMEM;
  }
  weight_transform_panels(up, w, g->cout, coutp, g->cin, g->m, MR);
#pragma omp parallel if (blocks > 1)
  {
    float *v = tb + per_thread * (size_t)omp_get_thread_num();
    float *mm = v + a2 * VKS(g->cin), *buf = mm + a2 * VKS(coutp);
    /* the columns of a partial block are left from earlier blocks: finite after this */
    memset(v, 0, sizeof(float) * a2 * VKS(g->cin));
#pragma omp for schedule(dynamic)
    for (size_t i = 0; i < blocks; i++) {
      if (batched) {
        const int n0 = (int)i * nbi, nb = n - n0 < nbi ? n - n0 : nbi;
        fused_block(y, x, up, b, g, p, coutp, 1, 0, 0, n0, nb, v, mm, buf);
      } else {
        const size_t t0 = i * TB;
        const int cnt = (int)(total - t0 < TB ? total - t0 : TB);
        fused_block(y, x, up, b, g, p, coutp, 0, t0, cnt, 0, 0, v, mm, buf);
      }
    }
  }
  rv_arena_release(scratch, mark);
  return RV_OK;
}

rv_status rv_conv2d_winograd_path_f32(float *y, const float *x, const float *w, const float *b,
                                      int n, int cin, int h, int wd, int cout, rv_conv_params p,
                                      int m, rv_wino_path path, rv_arena *scratch) {
  RV_ASSERT(p.kh == 3 && p.kw == 3 && p.sh == 1 && p.sw == 1 && p.dh == 1 && p.dw == 1);
  RV_ASSERT(p.groups == 1 && p.ph >= 0 && p.pw >= 0 && (m == 2 || m == 4));
  RV_ASSERT(n >= 0 && cin > 0 && cout > 0 && scratch != NULL);
  wino_geom g;
  if (!make_geom(&g, m, p.ph, p.pw, h, wd, cin, cout)) return RV_ERR_SHAPE;
  if (n == 0) return RV_OK;
  size_t a2 = (size_t)g.a * g.a, total = (size_t)n * g.th * g.tw;
  if (path != RV_WINO_BLAS) {
    const int fits = a2 * (size_t)((cout + MR - 1) / MR * MR) * cin <= FUSED_U_MAX;
    if (path == RV_WINO_FUSED && !rv_ukernel_supported()) return RV_ERR_UNSUPPORTED;
    if (path == RV_WINO_FUSED || (fits && rv_ukernel_supported()))
      return winograd_fused(y, x, w, b, n, &g, p, scratch);
  }
  /* output channels in chunks of cc so that U stays within U_BUDGET (the input transform
   * is redone per chunk) */
  int chunks = (int)((a2 * cout * cin + U_BUDGET - 1) / U_BUDGET);
  int cc = (cout + chunks - 1) / chunks;
  size_t nt = BLOCK_BUDGET / (a2 * ((size_t)cin + cc));
  if (nt < MIN_TILES) nt = MIN_TILES;
  if (nt > MAX_TILES) nt = MAX_TILES;
  if (nt > total) nt = total;
  /* small images in batches of whole images, images as lanes */
  const size_t tpi = (size_t)g.th * g.tw; /* tiles per image */
  const int batched = small_images(&g, n);
  int nbi = 1; /* images per block when batched */
  if (batched) {
    nbi = (int)(nt / tpi > 0 ? nt / tpi : 1);
    if (nbi > n) nbi = n;
    nt = (size_t)nbi * tpi;
  }
  int nth = omp_get_max_threads();
  size_t per_thread = transform_buf(&g, batched);

  rv_arena_mark mark = rv_arena_get_mark(scratch);
  float *u = rv_arena_floats(scratch, a2 * cc * cin);
  float *v = rv_arena_floats(scratch, a2 * cin * nt);
  float *mm = rv_arena_floats(scratch, a2 * cc * nt);
  float *tb = rv_arena_floats(scratch, per_thread * nth);
  if (!u || !v || !mm || !tb) {
    rv_arena_release(scratch, mark);
    return RV_ERR_NOMEM;
  }
  for (int co0 = 0; co0 < cout; co0 += cc) {
    int nc = cout - co0 < cc ? cout - co0 : cc;
    weight_transform(u, w + (size_t)co0 * cin * 9, nc, cin, m);
    for (size_t t0 = 0; t0 < total; t0 += nt) {
      int cnt = (int)(total - t0 < nt ? total - t0 : nt);
      const int n0 = (int)(t0 / tpi), nb = (int)(cnt / tpi); /* batched: whole images */
      size_t work = (size_t)cnt * cin * a2;
#pragma omp parallel for schedule(static) if (work >= 65536)
      for (int c = 0; c < cin; c++) {
        float *buf = tb + per_thread * (size_t)omp_get_thread_num();
        if (batched)
          input_transform_batched(v, (size_t)cnt, (size_t)cin * cnt, x, &g, c, n0, nb, buf);
        else
          input_transform_channel(v, (size_t)cnt, (size_t)cin * cnt, x, &g, c, t0, cnt, buf);
      }
      for (size_t k = 0; k < a2; k++)
        rv_gemm_f32(0, 0, nc, cnt, cin, 1.0f, u + k * nc * cin, cin, v + k * cin * cnt, cnt, 0.0f,
                    mm + k * nc * cnt, cnt);
      work = (size_t)cnt * nc * a2;
#pragma omp parallel for schedule(static) if (work >= 65536)
      for (int j = 0; j < nc; j++) {
        float *buf = tb + per_thread * (size_t)omp_get_thread_num();
        const float bias = b ? b[co0 + j] : 0.0f;
        if (batched)
          output_transform_batched(y, mm + (size_t)j * cnt, (size_t)nc * cnt, &g, co0 + j, bias,
                                   p.act, p.accumulate, n0, nb, buf);
        else
          output_transform_channel(y, mm + (size_t)j * cnt, (size_t)nc * cnt, &g, co0 + j, bias,
                                   p.act, p.accumulate, t0, cnt, buf);
      }
    }
  }
  rv_arena_release(scratch, mark);
  return RV_OK;
}

rv_status rv_conv2d_winograd_f32(float *y, const float *x, const float *w, const float *b,
                                 int n, int cin, int h, int wd, int cout, rv_conv_params p, int m,
                                 rv_arena *scratch) {
  return rv_conv2d_winograd_path_f32(y, x, w, b, n, cin, h, wd, cout, p, m, RV_WINO_AUTO,
                                     scratch);
}

/* ---- channels-last RoI batches ----------------------------------------------------------
 * rv_conv2d_winograd_rois_f32 (kernels/ops.h): the same convolution on batches of small images
 * with the channels contiguous, so that every transform runs with the channels as lanes
 * (256 lanes for the RoI heads, where the NCHW path has 2-64) and needs no staging beyond
 * one zero-padded copy per image. A thread takes a block of whole images (at most RB_TILES
 * tiles, rows t = image * tiles + tile position), transforms them into vt [k][t][ci],
 * multiplies vt[k] by the packed U^T (kernels/ukernel.c's rows kernel: NR tiles x NC output
 * channels per call, accumulated over ci in order, as BLAS does: the results equal the NCHW
 * paths' bit for bit) into mt [k][t][co], and inverts each tile into y. The input can be
 * read from NCHW and the output written to NCHW (the first and last layers of a stack), the
 * transpose folded into the padded copy and the final store. Used for the RoI heads'
 * stacks because it is faster there than the NCHW BLAS path (bench/RESULTS.md,
 * "Measurements behind the code's rules"). */
#define NR UK_RR    /* tiles per kernel call: 6 */
#define NC UK_RC    /* output channels per kernel call, four vectors: 64 */
#define RB_TILES 48 /* tiles per block at most (3 images of 14x14 with F(4x4)) */
#define RB_AIM 36   /* and preferably (9 images of 7x7) */

/* the shared kernel (kernels/ukernel.c), 6 x 4 vectors (the fastest shape measured) */
static inline void nhwc_kernel(float *c, size_t ldc, const float *a, size_t lda, const float *b,
                               int k) {
  rv_ukernel_rows_f32(c, ldc, a, lda, b, k);
}

typedef struct {
  wino_geom g;
  int coutp, tpi, nbi, tbp; /* tiles per image, images per block, rows of vt / mt */
  size_t ksv, ksm;          /* floats between positions k of vt and mt */
  const float *up, *b;
  rv_act act;
  int in_nchw, out_nchw;
  const uint32_t *upb; /* bf16 (rv_conv2d_winograd_rois_bf16): U as pairs, else NULL */
  size_t ksvb;         /* words between positions k of the bf16 vt */
} rois_plan;

/* image j's padded copy [PH][PW][cin] with zero borders */
static void rois_pad(float *pad, const float *x, const rois_plan *P, int j) {
  const wino_geom *g = &P->g;
  const size_t PW = pad_cols(g), PH = pad_rows(g), cin = (size_t)g->cin;
  const size_t hw = (size_t)g->h * g->wd;
  const float *xi = x + (size_t)j * cin * hw;
  for (size_t r = 0; r < PH; r++) {
    float *pr = pad + r * PW * cin;
    if (r < (size_t)g->ph || r >= (size_t)g->ph + g->h) {
      memset(pr, 0, sizeof(float) * PW * cin);
      continue;
    }
    memset(pr, 0, sizeof(float) * g->pw * cin);
    memset(pr + ((size_t)g->pw + g->wd) * cin, 0, sizeof(float) * (PW - g->pw - g->wd) * cin);
    float *row = pr + (size_t)g->pw * cin;
    const size_t iy = r - g->ph;
    if (!P->in_nchw) {
      memcpy(row, xi + iy * g->wd * cin, sizeof(float) * g->wd * cin);
    } else {
      for (int ix = 0; ix < g->wd; ix++) {
        const float *xp = xi + iy * g->wd + ix;
        float *o = row + (size_t)ix * cin;
        for (size_t c = 0; c < cin; c++) o[c] = xp[c * hw];
      }
    }
  }
}

/* one block: images [n0, n0 + nb) */
static void rois_block(float *y, const float *x, const rois_plan *P, int n0, int nb, float *vt,
                       float *mt, float *pad, float *tmp, uint32_t *vtb) {
  const wino_geom *g = &P->g;
  const int m = g->m, a = g->a, cin = g->cin, cout = g->cout;
  const size_t PW = pad_cols(g), a2 = (size_t)a * a;
  for (int j = 0; j < nb; j++) {
    rois_pad(pad, x, P, n0 + j);
    for (int ty = 0; ty < g->th; ty++)
      for (int tx = 0; tx < g->tw; tx++) {
        const size_t t = (size_t)j * P->tpi + (size_t)ty * g->tw + tx;
        const float *base = pad + ((size_t)ty * m * PW + (size_t)tx * m) * cin;
        for (int c = 0; c < a; c++) /* along columns: tmp[i][c][ci] */
          bt_1d(m, tmp + (size_t)c * cin, (size_t)a * cin, base + (size_t)c * cin, PW * cin, 1,
                cin);
        for (int i = 0; i < a; i++) /* along rows: vt[i a + jj][t][ci] */
          bt_1d(m, vt + (size_t)i * a * P->ksv + t * cin, P->ksv, tmp + (size_t)i * a * cin,
                (size_t)cin, 1, cin);
      }
  }
  const int rows = (nb * P->tpi + NR - 1) / NR * NR;
  if (P->upb) { /* bf16: vt rounded (rows of pairs of channels), the bf16 kernel */
    const int k2 = cin / 2;
    for (size_t k = 0; k < a2; k++) {
      rv_bf16_convert_vec((uint16_t *)(vtb + k * P->ksvb), vt + k * P->ksv, (size_t)rows * cin);
      for (int cb = 0; cb < P->coutp; cb += NC)
        for (int t0 = 0; t0 < rows; t0 += NR)
          rv_bf16_rows_block(mt + k * P->ksm + (size_t)t0 * P->coutp + cb, (size_t)P->coutp,
                             vtb + k * P->ksvb + (size_t)t0 * k2, (size_t)k2,
                             P->upb + (k * P->coutp + cb) * k2, k2);
    }
  } else
  for (size_t k = 0; k < a2; k++)
    for (int cb = 0; cb < P->coutp; cb += NC)
      for (int t0 = 0; t0 < rows; t0 += NR)
        nhwc_kernel(mt + k * P->ksm + (size_t)t0 * P->coutp + cb, (size_t)P->coutp,
                    vt + k * P->ksv + (size_t)t0 * cin, (size_t)cin,
                    P->up + (k * P->coutp + cb) * cin, cin);
  float *hor = tmp, *out = tmp + (size_t)a * m * cout;
  const size_t ohw = (size_t)g->oh * g->ow;
  for (int j = 0; j < nb; j++)
    for (int ty = 0; ty < g->th; ty++)
      for (int tx = 0; tx < g->tw; tx++) {
        const size_t t = (size_t)j * P->tpi + (size_t)ty * g->tw + tx;
        for (int i = 0; i < a; i++) /* along rows: hor[i][q][co] */
          at_1d(m, hor + (size_t)i * m * cout, (size_t)cout,
                mt + (size_t)i * a * P->ksm + t * P->coutp, P->ksm, cout);
        for (int q = 0; q < m; q++) /* along columns: out[p][q][co] */
          at_1d(m, out + (size_t)q * cout, (size_t)m * cout, hor + (size_t)q * cout,
                (size_t)m * cout, cout);
        const int oy0 = ty * m, ox0 = tx * m;
        const int nr = g->oh - oy0 < m ? g->oh - oy0 : m, nc = g->ow - ox0 < m ? g->ow - ox0 : m;
        for (int p = 0; p < nr; p++)
          for (int q = 0; q < nc; q++) {
            const float *op = out + ((size_t)p * m + q) * cout;
            const size_t pix = (size_t)(oy0 + p) * g->ow + ox0 + q;
            if (P->out_nchw) {
              float *yp = y + (size_t)(n0 + j) * cout * ohw + pix;
              for (int co = 0; co < cout; co++) {
                float v = op[co] + (P->b ? P->b[co] : 0.0f);
                yp[co * ohw] = P->act == RV_ACT_RELU ? (v > 0.0f ? v : 0.0f) : v;
              }
            } else {
              float *yp = y + ((size_t)(n0 + j) * ohw + pix) * cout;
              for (int co = 0; co < cout; co++) {
                float v = op[co] + (P->b ? P->b[co] : 0.0f);
                yp[co] = P->act == RV_ACT_RELU ? (v > 0.0f ? v : 0.0f) : v;
              }
            }
          }
      }
}

int rv_winograd_rois_supported(void) { return rv_ukernel_supported(); }

/* the float32 path (w, upb NULL) or the bf16 one (upb: rv_winograd_rois_bf16_pack's U) */
static rv_status rois_run(float *y, const float *x, const float *w, const uint32_t *upb,
                          const float *b, int n, int cin, int h, int wd, int cout, int pad,
                          rv_act act, int m, int layout, rv_arena *scratch) {
  RV_ASSERT((m == 2 || m == 4) && pad >= 0 && n >= 0 && cin > 0 && cout > 0 && scratch);
  RV_ASSERT(act == RV_ACT_NONE || act == RV_ACT_RELU);
  if (!rv_ukernel_supported()) return RV_ERR_UNSUPPORTED;
  rois_plan P;
  wino_geom *g = &P.g;
  if (!make_geom(g, m, pad, pad, h, wd, cin, cout)) return RV_ERR_SHAPE;
  if (n == 0) return RV_OK;
  const size_t a2 = (size_t)g->a * g->a;
  P.coutp = (cout + NC - 1) / NC * NC;
  P.tpi = g->th * g->tw;
  /* images per block: at most RB_TILES tiles (one image at least), the count whose tiles
   * leave the smallest share of the block's NR-row groups empty (empty rows are wasted
   * kernel work), on ties the one nearest RB_AIM tiles */
  P.nbi = 1;
  for (int k = 1, be = 1, br = 1; k <= n && (k == 1 || k * P.tpi <= RB_TILES); k++) {
    const int t = k * P.tpi, r = (t + NR - 1) / NR * NR; /* r - t of r rows empty */
    const int tb = P.nbi * P.tpi, d = abs(t - RB_AIM), db = abs(tb - RB_AIM);
    if (k == 1 || (r - t) * br < be * r || ((r - t) * br == be * r && d < db))
      be = r - t, br = r, P.nbi = k;
  }
  P.tbp = (P.nbi * P.tpi + NR - 1) / NR * NR;
  P.ksv = (size_t)P.tbp * cin + 16, P.ksm = (size_t)P.tbp * P.coutp + 16;
  P.upb = upb, P.ksvb = upb ? (size_t)P.tbp * (cin / 2) + 16 : 0;
  P.b = b, P.act = act;
  P.in_nchw = (layout & RV_ROIS_IN_NCHW) != 0, P.out_nchw = (layout & RV_ROIS_OUT_NCHW) != 0;
  const size_t pad_f = pad_rows(g) * pad_cols(g) * cin;
  /* tmp: the input transform's [a][a][cin], then the output's [a][m][cout] + [m][m][cout] */
  const size_t tmp_in = a2 * cin, tmp_out = ((size_t)g->a * m + (size_t)m * m) * cout;
  const size_t tmp_f = tmp_in > tmp_out ? tmp_in : tmp_out;
  const size_t per_thread = a2 * (P.ksv + P.ksm + P.ksvb) + pad_f + tmp_f;
  const size_t blocks = ((size_t)n + P.nbi - 1) / P.nbi;
  const int nth = omp_get_max_threads();
  rv_arena_mark mark = rv_arena_get_mark(scratch);
  float *up = upb ? NULL : rv_arena_floats(scratch, a2 * P.coutp * cin);
  float *tb = rv_arena_floats(scratch, per_thread * nth);
  if ((!upb && !up) || !tb) {
    rv_arena_release(scratch, mark);
    return RV_ERR_NOMEM;
  }
  if (!upb) weight_transform_panels(up, w, cout, P.coutp, cin, m, NC);
  P.up = up;
#pragma omp parallel if (blocks > 1)
  {
    float *vt = tb + per_thread * (size_t)omp_get_thread_num();
    float *mt = vt + a2 * P.ksv, *padb = mt + a2 * P.ksm, *tmp = padb + pad_f;
    uint32_t *vtb = upb ? (uint32_t *)(tmp + tmp_f) : NULL;
    memset(vt, 0, sizeof(float) * a2 * P.ksv); /* rows of a partial block: finite */
#pragma omp for schedule(dynamic)
    for (size_t i = 0; i < blocks; i++) {
      const int n0 = (int)i * P.nbi, nb = n - n0 < P.nbi ? n - n0 : P.nbi;
      rois_block(y, x, &P, n0, nb, vt, mt, padb, tmp, vtb);
    }
  }
  rv_arena_release(scratch, mark);
  return RV_OK;
}

rv_status rv_conv2d_winograd_rois_f32(float *y, const float *x, const float *w, const float *b,
                                      int n, int cin, int h, int wd, int cout, int pad,
                                      rv_act act, int m, int layout, rv_arena *scratch) {
  return rois_run(y, x, w, NULL, b, n, cin, h, wd, cout, pad, act, m, layout, scratch);
}

/* bf16: U as [k][co / 64][ci / 2][co % 64] pairs (cin even), F(4x4) */
size_t rv_winograd_rois_bf16_words(int cout, int cin) {
  return (size_t)36 * (size_t)((cout + NC - 1) / NC * NC) * (size_t)(cin / 2);
}

rv_status rv_winograd_rois_bf16_pack(uint32_t *wp, const float *w, int cout, int cin) {
  RV_ASSERT(cin % 2 == 0);
  const int coutp = (cout + NC - 1) / NC * NC, k2 = cin / 2;
  float *up = rv_malloc(sizeof(float) * 36 * coutp * cin);
  if (!up) return RV_ERR_NOMEM;
  weight_transform_panels(up, w, cout, coutp, cin, 4, NC); /* [k][co/64][ci][co%64] */
  for (size_t k = 0; k < 36; k++)
    for (int g = 0; g < coutp / NC; g++) {
      const float *s = up + (k * coutp + (size_t)g * NC) * cin;
      uint32_t *d = wp + (k * coutp + (size_t)g * NC) * k2;
      for (int i = 0; i < k2; i++)
        for (int j = 0; j < NC; j++)
          d[(size_t)i * NC + j] = (uint32_t)rv_f32_to_bf16(s[(size_t)(2 * i) * NC + j]) |
                                  (uint32_t)rv_f32_to_bf16(s[(size_t)(2 * i + 1) * NC + j]) << 16;
    }
  rv_free(up);
  return RV_OK;
}

rv_status rv_conv2d_winograd_rois_bf16(float *y, const float *x, const uint32_t *wp,
                                       const float *b, int n, int cin, int h, int wd, int cout,
                                       int pad, rv_act act, int layout, rv_arena *scratch) {
  RV_ASSERT(wp != NULL && cin % 2 == 0 && rv_bf16_supported());
  return rois_run(y, x, NULL, wp, b, n, cin, h, wd, cout, pad, act, 4, layout, scratch);
}

/* ---- bf16 F(m x m, 3x3), m = 4 or 2 ---------------------------------------------------------
 * rv_conv2d_winograd_bf16_m (kernels/ops.h): the fused path above with its a^2 GEMMs on the
 * bf16 kernel (kernels/gemm_bf16.c): U transformed in double and rounded to float32 as above,
 * then to bf16 once (rv_winograd_bf16_pack_m: [k][co / 8][ci / 2][co % 8] pairs); each
 * block's V transformed in float32 and rounded to bf16 pairs [k][ci / 2][tile]; M summed in
 * float32; the output transform, bias, act and accumulate in float32. */

size_t rv_winograd_bf16_words_m(int cout, int cin, int m) {
  RV_ASSERT(m == 2 || m == 4);
  return (size_t)(m + 2) * (m + 2) * (size_t)((cout + MR - 1) / MR * MR) * (size_t)((cin + 1) / 2);
}

rv_status rv_winograd_bf16_pack_m(uint32_t *wp, const float *w, int cout, int cin, int m) {
  RV_ASSERT(m == 2 || m == 4);
  const int coutp = (cout + MR - 1) / MR * MR, k2 = (cin + 1) / 2;
  const size_t a2 = (size_t)(m + 2) * (m + 2);
  float *up = rv_malloc(sizeof(float) * a2 * coutp * cin);
  if (!up) return RV_ERR_NOMEM;
  weight_transform_panels(up, w, cout, coutp, cin, m, MR); /* [k][co/8][ci][co%8] */
  for (size_t k = 0; k < a2; k++)
    for (int g = 0; g < coutp / MR; g++) {
      const float *s = up + (k * coutp + (size_t)g * MR) * cin;
      uint32_t *d = wp + (k * coutp + (size_t)g * MR) * k2;
      for (int i = 0; i < k2; i++)
        for (int r = 0; r < MR; r++) {
          uint32_t lo = rv_f32_to_bf16(s[(size_t)(2 * i) * MR + r]);
          uint32_t hi = 2 * i + 1 < cin ? rv_f32_to_bf16(s[(size_t)(2 * i + 1) * MR + r]) : 0;
          d[(size_t)i * MR + r] = lo | hi << 16;
        }
    }
  rv_free(up);
  return RV_OK;
}

size_t rv_winograd_bf16_words(int cout, int cin) { return rv_winograd_bf16_words_m(cout, cin, 4); }

rv_status rv_winograd_bf16_pack(uint32_t *wp, const float *w, int cout, int cin) {
  return rv_winograd_bf16_pack_m(wp, w, cout, cin, 4);
}

static void fused_block_bf16(float *y, const float *x, const uint32_t *up, const float *b,
                             const wino_geom *g, rv_conv_params p, int coutp, int batched,
                             size_t t0, int cnt, int n0, int nb, float *v, uint32_t *vb,
                             float *mm, float *buf) {
  const int k2 = (g->cin + 1) / 2;
  const size_t a2 = (size_t)g->a * g->a;
  for (int c = 0; c < g->cin; c++) {
    if (batched)
      input_transform_batched(v, TB, VKS(g->cin), x, g, c, n0, nb, buf);
    else
      input_transform_channel(v, TB, VKS(g->cin), x, g, c, t0, cnt, buf);
  }
  for (size_t k = 0; k < a2; k++) {
    uint32_t *vk = vb + k * k2 * TB;
    rv_bf16_pack_pairs(vk, TB, v + k * VKS(g->cin), TB, g->cin, TB);
    for (int cb = 0; cb < coutp; cb += MR)
      rv_bf16_block(mm + k * VKS(coutp) + (size_t)cb * TB, TB, up + (k * coutp + cb) * k2, vk,
                    TB, k2, MR, TB, NULL, 0);
  }
  output_transform_block(y, mm, b, g, p, coutp, batched, t0, cnt, n0, nb, buf);
}

rv_status rv_conv2d_winograd_bf16_m(float *y, const float *x, const uint32_t *wp, const float *b,
                                    int n, int cin, int h, int wd, int cout, rv_conv_params p,
                                    int m, rv_arena *scratch) {
  RV_ASSERT(p.kh == 3 && p.kw == 3 && p.sh == 1 && p.sw == 1 && p.dh == 1 && p.dw == 1);
  RV_ASSERT(p.groups == 1 && p.ph >= 0 && p.pw >= 0 && (m == 2 || m == 4));
  RV_ASSERT(n >= 0 && cin > 0 && cout > 0 && scratch != NULL && wp != NULL);
  RV_ASSERT(rv_bf16_supported());
  wino_geom gg, *g = &gg;
  if (!make_geom(g, m, p.ph, p.pw, h, wd, cin, cout)) return RV_ERR_SHAPE;
  if (n == 0) return RV_OK;
  const size_t a2 = (size_t)g->a * g->a;
  const size_t tpi = (size_t)g->th * g->tw, total = (size_t)n * tpi;
  const int coutp = (cout + MR - 1) / MR * MR, k2 = (cin + 1) / 2;
  const int batched = small_images(g, n) && tpi <= TB;
  const int nbi = batched ? (int)(TB / tpi) : 0;
  const size_t blocks = batched ? ((size_t)n + nbi - 1) / nbi : (total + TB - 1) / TB;
  const int nth = omp_get_max_threads();
  const size_t vbw = a2 * (size_t)k2 * TB; /* words of bf16 V */
  const size_t per_thread = transform_buf(g, batched) + a2 * (VKS(cin) + VKS(coutp)) + vbw;
  rv_arena_mark mark = rv_arena_get_mark(scratch);
  float *tb = rv_arena_floats(scratch, per_thread * nth);
  if (!tb) {
    rv_arena_release(scratch, mark);
    return RV_ERR_NOMEM;
  }
#pragma omp parallel if (blocks > 1)
  {
    float *v = tb + per_thread * (size_t)omp_get_thread_num();
    float *mm = v + a2 * VKS(cin);
    uint32_t *vb = (uint32_t *)(mm + a2 * VKS(coutp));
    float *buf = (float *)(vb + vbw);
    memset(v, 0, sizeof(float) * a2 * VKS(cin));
#pragma omp for schedule(dynamic)
    for (size_t i = 0; i < blocks; i++) {
      if (batched) {
        const int n0 = (int)i * nbi, nb = n - n0 < nbi ? n - n0 : nbi;
        fused_block_bf16(y, x, wp, b, g, p, coutp, 1, 0, 0, n0, nb, v, vb, mm, buf);
      } else {
        const size_t t0 = i * TB;
        const int cnt = (int)(total - t0 < TB ? total - t0 : TB);
        fused_block_bf16(y, x, wp, b, g, p, coutp, 0, t0, cnt, 0, 0, v, vb, mm, buf);
      }
    }
  }
  rv_arena_release(scratch, mark);
  return RV_OK;
}

rv_status rv_conv2d_winograd_bf16(float *y, const float *x, const uint32_t *wp, const float *b,
                                  int n, int cin, int h, int wd, int cout, rv_conv_params p,
                                  rv_arena *scratch) {
  return rv_conv2d_winograd_bf16_m(y, x, wp, b, n, cin, h, wd, cout, p, 4, scratch);
}
