/* Dense 3x3 convolutions, pad 1, stride 1 or 2, groups 1, one NCHW image, on our GEMM
 * kernels (the RAVLT stem and PatchMerging convs):
 *
 *   y[co][p] = act(b[co] + sum_{k < 9 cin} w[co][k] col[k][p]),   k = 9 ci + 3 ky + kx,
 *   col[k][p] = x[ci][oy s - 1 + ky][ox s - 1 + kx] (0 outside),  p = oy ow + ox
 *
 * No column matrix of the image: the output pixels are cut into panels of up to PBMAX blocks
 * of 48, and a thread gathers its panel's column rows from x KC rows at a time (by a table
 * of the nine taps' offsets: consecutive loads at stride 1, deinterleaving ones at stride 2,
 * index gathers at the borders and row changes; zeros in the padding and past the map), each
 * 48-pixel block's rows contiguous, and multiplies them with the weights packed once by the
 * caller: float32 by rv_ukernel_f32 / rv_ukernel_acc_f32 (AVX-512F; the weights in chunks of
 * KC rows by rv_conv3x3_pack_f32), bf16 by the bf16 kernel (AVX512_BF16; the weights by
 * rv_bf16_pack_weights(wp, w, cout, 9 cin), the panel rounded to bf16 pairs as
 * rv_pointwise_bf16 rounds x). The first chunk stores bias + sum, the next ones add theirs;
 * after the last, the block gets its activation while in cache. So the sums run over k in
 * order within a chunk of KC, the chunks added in order. Threads: the cells (48 pixels x 8
 * channels) ordered by panel, pixel block, channel block, split in equal shares (a thread
 * gathers each of its panels once; small maps still give both threads work: the 320->512
 * downsample of RAVLT-S at 512x512 has 6 blocks of pixels and 64 of channels). */
#include "kernels/ops.h"

#include <omp.h>
#include <string.h>

/* BN x BM: the kernels' register block; PBMAX blocks of pixels per panel; KC panel rows
 * (bf16: pairs) gathered at a time: one block's KC rows (27 KB) stay in L1 while the
 * 8-channel blocks take them in turn, the panel's chunk (KC x 384: 221 KB) in L2 */
enum { BN = 48, BM = 8, PBMAX = 8, KC = 144 };

size_t rv_conv3x3_packed_floats(int cout, int cin) {
  return (size_t)((cout + BM - 1) / BM * BM) * 9 * (size_t)cin;
}

/* up: K in chunks of KC rows (the last shorter), chunk by chunk; in a chunk the BM-channel
 * blocks one after another, each [k][co % BM] (the weights a chunk of the panel meets are one
 * stream) */
void rv_conv3x3_pack_f32(float *up, const float *w, int cout, int cin) {
  const int K = 9 * cin, coutp = (cout + BM - 1) / BM * BM;
  for (int k0 = 0; k0 < K; k0 += KC) {
    const int kn = K - k0 < KC ? K - k0 : KC;
    for (int co = 0; co < coutp; co++) {
      float *uc = up + (size_t)k0 * coutp + (size_t)(co / BM) * kn * BM + co % BM;
      for (int k = 0; k < kn; k++)
        uc[(size_t)k * BM] = co < cout ? w[(size_t)co * K + k0 + k] : 0.0f;
    }
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

int rv_conv3x3_f32_supported(void) { return rv_ukernel_supported(); }

/* The geometry of one call and the work split. */
typedef struct {
  const float *x;
  int cin, h, wd, ow, stride, cout, K;
  size_t npix, hw;
  int w;          /* panel width: pb blocks of BN pixels */
  size_t panels;  /* of w pixels (the last may be shorter) */
  int cb;         /* blocks of BM output channels */
  int kc;         /* panel rows gathered and multiplied at a time (float32 rows; bf16: pairs) */
} geom;

/* How a 16-pixel chunk of one tap's row is read: gathered by index (borders, row changes),
 * loaded as 16 consecutive floats (stride 1), or as 32 deinterleaved (stride 2). */
enum { CH_GATHER = 0, CH_CONTIG = 1, CH_STRIDE2 = 2 };

/* off[tap][t] = plane offset of tap (ky, kx) of pixel p0 + t, -1 in the padding or past
 * np; mode[tap][t / 16] how its chunk is read (CH_*). */
static void panel_offsets(int32_t *off, uint8_t *mode, const geom *g, size_t p0, int np) {
  const int w = g->w, s = g->stride, nc = w / 16;
  int iy0[PBMAX * BN], ix0[PBMAX * BN];
  int oy = (int)(p0 / (size_t)g->ow), ox = (int)(p0 % (size_t)g->ow);
  for (int t = 0; t < w; t++) {
    if (t < np) {
      iy0[t] = oy * s - 1, ix0[t] = ox * s - 1;
      if (++ox == g->ow) ox = 0, oy++;
    } else {
      iy0[t] = -8, ix0[t] = -8; /* outside for every tap */
    }
  }
  for (int tap = 0; tap < 9; tap++) {
    const int ky = tap / 3, kx = tap % 3;
    int32_t *o = off + (size_t)tap * w;
    for (int t = 0; t < w; t++) {
      const int iy = iy0[t] + ky, ix = ix0[t] + kx;
      o[t] = (unsigned)iy < (unsigned)g->h && (unsigned)ix < (unsigned)g->wd ? iy * g->wd + ix
                                                                               : -1;
    }
    for (int c = 0; c < nc; c++) {
      const int32_t *oc = o + 16 * c;
      int contig = 1, str2 = 1;
      for (int j = 1; j < 16; j++) {
        contig &= oc[j] - oc[0] == j;
        str2 &= oc[j] - oc[0] == 2 * j;
      }
      mode[tap * nc + c] = oc[0] < 0 || oc[15] < 0 ? CH_GATHER
                           : contig               ? CH_CONTIG
                           : str2                 ? CH_STRIDE2
                                                  : CH_GATHER;
    }
  }
}

/* 16 pixels of a panel row from the plane pl: offsets o, read as md says */
__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) __m512
chunk(const float *pl, const int32_t *o, int md) {
  if (md == CH_CONTIG) return _mm512_loadu_ps(pl + o[0]);
  if (md == CH_STRIDE2) {
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const float *s = pl + o[0]; /* 31 floats read: the last is s[30] (the 16th pixel) */
    return _mm512_permutex2var_ps(_mm512_loadu_ps(s), ev,
                                  _mm512_maskz_loadu_ps((__mmask16)0x7fff, s + 16));
  }
  const __m512i idx = _mm512_loadu_si512((const void *)o);
  const __mmask16 m = _mm512_cmpge_epi32_mask(idx, _mm512_setzero_si512());
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, pl, 4);
}

/* Row k (< K) of the panel: its plane, offsets and modes. */
static inline void row_src(const geom *g, const int32_t *off, const uint8_t *mode, int k,
                           const float **pl, const int32_t **o, const uint8_t **md) {
  const int ci = k / 9, tap = k % 9;
  *pl = g->x + (size_t)ci * g->hw;
  *o = off + (size_t)tap * g->w;
  *md = mode + tap * (g->w / 16);
}

/* Rows [k0, k1) of the float32 panel, block-major: pixels [48 j, 48 j + 48) of row k at
 * v + (j (k1 - k0) + k - k0) 48 (each block's rows contiguous, 48 floats apart). */
__attribute__((target("avx512f"))) static void gather_f32(float *v, const geom *g,
                                                          const int32_t *off,
                                                          const uint8_t *mode, int k0, int k1) {
  const int nc = g->w / 16;
  for (int k = k0; k < k1; k++) {
    const float *pl;
    const int32_t *o;
    const uint8_t *md;
    row_src(g, off, mode, k, &pl, &o, &md);
    float *d = v + (size_t)(k - k0) * BN;
    for (int c = 0; c < nc; c++)
      _mm512_storeu_ps(d + (size_t)(c / 3) * (k1 - k0) * BN + 16 * (c % 3),
                       chunk(pl, o + 16 * c, md[c]));
  }
}

/* The work as cells (a block of BN pixels x BM channels: one kernel call per chunk of K),
 * ordered by panel, then pixel block, then channel block; thread t of nt takes cells
 * [c0, c1), an equal share (panel i's cells start at i pb cb: all but the last are full). */
static void my_cells(const geom *g, size_t *c0, size_t *c1) {
  const size_t C = (g->npix + BN - 1) / BN * (size_t)g->cb;
  const size_t nt = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
  *c0 = C * t / nt;
  *c1 = C * (t + 1) / nt;
}

static void post_act(float *yc, size_t ldy, int rows, int nt, rv_act act) {
  if (act == RV_ACT_NONE) return;
  rv_act_rows_serial_f32(yc, ldy, rows, (size_t)nt, act);
}

/* The geometry of a call. */
static rv_status setup(geom *g, const float *x, int cin, int h, int wd, int cout, int stride) {
  if (cin < 1 || cout < 1 || h < 1 || wd < 1 || (stride != 1 && stride != 2))
    return RV_ERR_ARG;
  const int oh = rv_conv_out_size(h, 3, stride, 1, 1), ow = rv_conv_out_size(wd, 3, stride, 1, 1);
  g->x = x;
  g->cin = cin, g->h = h, g->wd = wd, g->ow = ow, g->stride = stride, g->cout = cout;
  g->K = 9 * cin;
  g->npix = (size_t)oh * ow;
  g->hw = (size_t)h * wd;
  g->cb = (cout + BM - 1) / BM;
  g->kc = KC;
  const size_t nblk = (g->npix + BN - 1) / BN;
  g->w = (int)(nblk < PBMAX ? nblk : PBMAX) * BN;
  g->panels = (g->npix + g->w - 1) / g->w;
  return RV_OK;
}

/* Per-thread workspace: the panel chunk, a tile, offsets, modes. */
static size_t thread_floats(const geom *g) {
  return (size_t)g->kc * g->w + BM * BN + (size_t)9 * g->w + (size_t)9 * g->w / 16 / 4 + 1 + 16;
}

/* One 8-channel x nt block of y (rows < BM valid) from a chunk of K: y = bias + sum (first
 * chunk) or y += sum; a partial block (rows < BM or nt < BN) through the tile, computed on all
 * BN columns (the panel has zeros past np): the kernel's masked variant is slower. */
static void block_f32(float *yc, size_t ldy, const float *u, const float *v, size_t ldv, int kn,
                      int nt, int rows, const float *bias8, int first, float *tile) {
  if (rows == BM && nt == BN) {
    if (first)
      rv_ukernel_f32(yc, ldy, u, v, ldv, kn, nt, bias8);
    else
      rv_ukernel_acc_f32(yc, ldy, u, v, ldv, kn, nt);
    return;
  }
  rv_ukernel_f32(tile, BN, u, v, ldv, kn, BN, first ? bias8 : NULL);
  for (int r = 0; r < rows; r++) {
    float *yr = yc + (size_t)r * ldy;
    const float *tr = tile + (size_t)r * BN;
    if (first)
      memcpy(yr, tr, sizeof(float) * nt);
    else
      for (int i = 0; i < nt; i++) yr[i] += tr[i];
  }
}

/* bf16 panel rows [2 i0, 2 i1) as pairs (bf16 col[2i][t], bf16 col[2i + 1][t]) (0 past K),
 * the rounding of rv_pointwise_bf16's panels; block-major as gather_f32 (pair i of block j
 * at vp + (j (i1 - i0) + i - i0) 48). */
#define BF16_TARGET __attribute__((target("avx512bf16,avx512f,avx512bw,avx512vl")))
BF16_TARGET static void gather_bf16(uint32_t *vp, const geom *g, const int32_t *off,
                                    const uint8_t *mode, int i0, int i1) {
  const int nc = g->w / 16;
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                       24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                       16, 0);
  for (int i = i0; i < i1; i++) {
    const float *pl0, *pl1 = NULL;
    const int32_t *o0, *o1 = NULL;
    const uint8_t *md0, *md1 = NULL;
    row_src(g, off, mode, 2 * i, &pl0, &o0, &md0);
    if (2 * i + 1 < g->K) row_src(g, off, mode, 2 * i + 1, &pl1, &o1, &md1);
    uint32_t *d = vp + (size_t)(i - i0) * BN;
    for (int c = 0; c < nc; c++) {
      const __m512 lo = chunk(pl0, o0 + 16 * c, md0[c]);
      const __m512 hi = pl1 ? chunk(pl1, o1 + 16 * c, md1[c]) : _mm512_setzero_ps();
      const __m512bh hb = _mm512_cvtne2ps_pbh(hi, lo); /* lo in the low 16 halves */
      _mm512_storeu_si512((void *)(d + (size_t)(c / 3) * (i1 - i0) * BN + 16 * (c % 3)),
                          _mm512_permutexvar_epi16(idx, (__m512i)hb));
    }
  }
}

/* Both precisions: each thread's units, panel by panel, kc rows (bf16: pairs) at a time:
 * gather them, then every 8-channel block of the thread in this panel over them. */
static rv_status conv3x3_run(float *y, const float *x, const float *up, const uint32_t *wp,
                             const float *b, int cin, int h, int wd, int cout, int stride,
                             rv_act act, rv_arena *scratch) {
  geom g;
  RV_TRY(setup(&g, x, cin, h, wd, cout, stride));
  const int bf = wp != NULL, kr = bf ? (g.K + 1) / 2 : g.K; /* rows of the packed panel */
  const size_t per = thread_floats(&g);
  const int nth = omp_get_max_threads();
  rv_arena_mark mark = rv_arena_get_mark(scratch);
  float *ws = rv_arena_floats(scratch, per * nth);
  if (!ws) {
    rv_arena_release(scratch, mark);
    return RV_ERR_NOMEM;
  }
  const size_t ldy = g.npix;
  const size_t cells = (g.npix + BN - 1) / BN * g.cb;
#pragma omp parallel if (cells > 1 && (size_t)g.cout * g.K * g.npix >= 1000000)
  {
    float *v = ws + per * omp_get_thread_num();
    float *tile = v + (size_t)g.kc * g.w;
    int32_t *off = (int32_t *)(tile + BM * BN);
    uint8_t *mode = (uint8_t *)(off + (size_t)9 * g.w);
    size_t lo, hi;
    my_cells(&g, &lo, &hi);
    const size_t pcells = (size_t)(g.w / BN) * g.cb; /* cells of a full panel */
    for (size_t pi = lo / pcells; pi < g.panels && pi * pcells < hi; pi++) {
      const size_t p0 = pi * g.w, base = pi * pcells;
      const int np = (int)(g.npix - p0 < (size_t)g.w ? g.npix - p0 : (size_t)g.w);
      const int nb = (np + BN - 1) / BN; /* blocks in this panel */
      const size_t l0 = lo > base ? lo - base : 0;
      const size_t l1 = hi - base < (size_t)nb * g.cb ? hi - base : (size_t)nb * g.cb;
      panel_offsets(off, mode, &g, p0, np);
      for (int k0 = 0; k0 < kr; k0 += g.kc) {
        const int kn = kr - k0 < g.kc ? kr - k0 : g.kc, last = k0 + kn == kr;
        if (bf)
          gather_bf16((uint32_t *)v, &g, off, mode, k0, k0 + kn);
        else
          gather_f32(v, &g, off, mode, k0, k0 + kn);
        /* pixel block outer: its chunk of the panel stays in L1 while the channel blocks
         * take it in turn (their chunks of weights from L2 after the first block) */
        for (size_t l = l0; l < l1; l++) {
          const int c = (int)(l % g.cb), t = (int)(l / g.cb) * BN;
          const int nt = np - t < BN ? np - t : BN;
          const int co = c * BM, rows = cout - co < BM ? cout - co : BM;
          float *yc = y + (size_t)co * ldy + p0 + t;
          if (bf) {
            rv_bf16_block(yc, ldy, wp + ((size_t)c * kr + k0) * BM,
                          (const uint32_t *)v + (size_t)t * kn, BN, kn, rows, nt,
                          b && k0 == 0 ? b + co : NULL, k0 > 0);
          } else {
            float bb[BM] = {0};
            for (int r = 0; r < rows; r++) bb[r] = b ? b[co + r] : 0.0f;
            block_f32(yc, ldy, up + (size_t)k0 * g.cb * BM + (size_t)c * kn * BM,
                      v + (size_t)t * kn, BN, kn, nt,
                      rows, b ? bb : NULL, k0 == 0, tile);
          }
          if (last) post_act(yc, ldy, rows, nt, act); /* while the block is in cache */
        }
      }
    }
  }
  rv_arena_release(scratch, mark);
  return RV_OK;
}

rv_status rv_conv3x3_f32(float *y, const float *x, const float *up, const float *b, int cin,
                         int h, int wd, int cout, int stride, rv_act act, rv_arena *scratch) {
  RV_ASSERT(y && x && up && scratch);
  if (!rv_ukernel_supported()) return RV_ERR_UNSUPPORTED;
  return conv3x3_run(y, x, up, NULL, b, cin, h, wd, cout, stride, act, scratch);
}

rv_status rv_conv3x3_bf16(float *y, const float *x, const uint32_t *wp, const float *b, int cin,
                          int h, int wd, int cout, int stride, rv_act act, rv_arena *scratch) {
  RV_ASSERT(y && x && wp && scratch);
  if (!rv_bf16_supported()) return RV_ERR_UNSUPPORTED;
  return conv3x3_run(y, x, NULL, wp, b, cin, h, wd, cout, stride, act, scratch);
}
#else
int rv_conv3x3_f32_supported(void) { return 0; }
rv_status rv_conv3x3_f32(float *y, const float *x, const float *up, const float *b, int cin,
                         int h, int wd, int cout, int stride, rv_act act, rv_arena *scratch) {
  (void)y, (void)x, (void)up, (void)b, (void)cin, (void)h, (void)wd, (void)cout, (void)stride;
  (void)act, (void)scratch;
  return RV_ERR_UNSUPPORTED;
}
rv_status rv_conv3x3_bf16(float *y, const float *x, const uint32_t *wp, const float *b, int cin,
                          int h, int wd, int cout, int stride, rv_act act, rv_arena *scratch) {
  (void)y, (void)x, (void)wp, (void)b, (void)cin, (void)h, (void)wd, (void)cout, (void)stride;
  (void)act, (void)scratch;
  return RV_ERR_UNSUPPORTED;
}
#endif
