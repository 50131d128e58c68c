/* A 3x3 convolution (pad 1, stride 1) of a bilinearly upsampled map, without the map.
 *
 * UperNet's fpn_bottleneck convolves the concatenation of the pyramid levels, each resized
 * to the finest level's size; as a sum over levels (necks/uper.c) that is, for a coarse
 * level, conv3x3(up(F)) with up = bilinear (align_corners=False). Both are linear, so with
 * W_t the [cout x cin] weight of tap t = (ky, kx) and up(.) acting on each channel plane,
 *
 *   conv3x3(up(F))[co](p) = sum_t [p + t inside] up(G_t[co])(p + t),   G_t = W_t F,
 *
 * where G_t is a 1x1 conv at the coarse resolution: 9 cin cout ih iw multiply-adds in
 * one GEMM per chunk of output channels (rows (t, co), the 1x1 kernel of kernels/ukernel.c
 * reading F in place), against 9 cin cout oh ow for the direct conv of up(F) (2.25 per
 * output for F(4x4) Winograd, 4x less at a 2x upsampling, 16x less at 4x). Then each G_t
 * plane is resized and shifted by its tap into y, in two separable passes: for every coarse
 * row r and ky, R_ky[r][X] = sum_kx [0 <= X+kx-1 < ow] hresize(G_(ky,kx)[co][r])(X+kx-1)
 * (the bilinear taps of rv_bilinear_tap, the same as rv_resize_bilinear_f32's), and for
 * every output row Y, conv[Y] = sum_ky [0 <= Y+ky-1 < oh] vresize(R_ky)(Y+ky-1). The sum is
 * the same in real arithmetic as rv_resize_bilinear_f32 followed by rv_conv2d_f32; only
 * the rounding differs (float sums in another order; tests/unit/kernels/test_upconv.c states the
 * tolerance against that pair computed in double).
 */
#include "kernels/ops.h"

#include "kernels/vmath.h"

#include <omp.h>
#include <string.h>

#define G_BYTES ((size_t)12 << 20) /* bytes of a chunk's G planes (nine per output channel), at most */

typedef struct {
  int *i0, *i1;
  float *l0, *l1;
} htaps;

/* R[X] = sum over the three horizontal taps kx of the shifted resize of g[kx] (a coarse row
 * of iw floats) at X + kx - 1, the taps outside [0, ow) left out. */
RV_CLONES static void hrow3(float *restrict R, const float *g0, const float *g1,
                            const float *g2, htaps t, int ow) {
  const int *i0 = t.i0, *i1 = t.i1;
  const float *l0 = t.l0, *l1 = t.l1;
  if (ow == 1) {
    R[0] = l0[0] * g1[i0[0]] + l1[0] * g1[i1[0]];
    return;
  }
  R[0] = (l0[0] * g1[i0[0]] + l1[0] * g1[i1[0]]) + (l0[1] * g2[i0[1]] + l1[1] * g2[i1[1]]);
  for (int X = 1; X < ow - 1; X++)
    R[X] = (l0[X - 1] * g0[i0[X - 1]] + l1[X - 1] * g0[i1[X - 1]]) +
           (l0[X] * g1[i0[X]] + l1[X] * g1[i1[X]]) +
           (l0[X + 1] * g2[i0[X + 1]] + l1[X + 1] * g2[i1[X + 1]]);
  const int e = ow - 1;
  R[e] = (l0[e - 1] * g0[i0[e - 1]] + l1[e - 1] * g0[i1[e - 1]]) +
         (l0[e] * g1[i0[e]] + l1[e] * g1[i1[e]]);
}

RV_CLONES static void axpy_row(float *restrict s, const float *r, float a, int n, int first) {
  if (first)
    for (int X = 0; X < n; X++) s[X] = a * r[X];
  else
    for (int X = 0; X < n; X++) s[X] += a * r[X];
}

/* (not "store_row": clang gives the ifunc resolvers of static clones global names, and
 * winograd.c has one) */
RV_CLONES static void store_out_row(float *restrict y, const float *s, float b, int n,
                                    int accumulate, int relu) {
  if (accumulate)
    for (int X = 0; X < n; X++) y[X] = y[X] + (b + s[X]);
  else
    for (int X = 0; X < n; X++) y[X] = b + s[X];
  if (relu)
    for (int X = 0; X < n; X++) y[X] = y[X] > 0.0f ? y[X] : 0.0f;
}

/* The second pass for one output channel: g[t] its nine coarse G planes, y its output plane,
 * cache 6 ow + ow floats (two cached R rows per ky and a sum row). */
static void scatter_channel(float *y, const float *const g[9], float bias, int ih, int iw, int oh,
                            int ow, float sh, htaps ht, int accumulate, int relu, float *cache) {
  float *slot[3][2], *sum = cache + 6 * (size_t)ow;
  int tag[3][2];
  for (int ky = 0; ky < 3; ky++)
    for (int q = 0; q < 2; q++) slot[ky][q] = cache + (size_t)(2 * ky + q) * ow, tag[ky][q] = -1;
  for (int Y = 0; Y < oh; Y++) {
    int first = 1;
    for (int ky = 0; ky < 3; ky++) {
      const int p = Y + ky - 1;
      if (p < 0 || p >= oh) continue;
      const rv_lin_tap tv = rv_bilinear_tap(sh, p, ih);
      const int need[2] = {tv.i0, tv.i1};
      const float *row[2];
      for (int q = 0; q < 2; q++) { /* R_ky rows, each computed once (rows only move down) */
        const int r = need[q], other = need[1 - q];
        if (tag[ky][0] == r) { row[q] = slot[ky][0]; continue; }
        if (tag[ky][1] == r) { row[q] = slot[ky][1]; continue; }
        const int s = tag[ky][0] == other ? 1 : 0;
        const size_t off = (size_t)r * iw;
        hrow3(slot[ky][s], g[3 * ky] + off, g[3 * ky + 1] + off, g[3 * ky + 2] + off, ht, ow);
        tag[ky][s] = r;
        row[q] = slot[ky][s];
      }
      axpy_row(sum, row[0], tv.l0, ow, first);
      axpy_row(sum, row[1], tv.l1, ow, 0);
      first = 0;
    }
    store_out_row(y + (size_t)Y * ow, sum, bias, ow, accumulate, relu);
  }
}

/* The chunk [c0, c0 + cn) of the bf16 tap matrix, rows (j, t) = w[c0 + j][.][t], packed by
 * rv_bf16_pack_weights into wpb: the rows 9 c0 .. 9 (c0 + cn) of the whole module's matrix
 * (rv_conv3x3_upsampled_bf16_pack), so with c0 a multiple of 8 these are the same words as
 * that pack's from word 9 c0 ((cin + 1) / 2) on. wt: 9 cn cin floats. */
static void pack_taps_bf16(uint32_t *wpb, float *wt, const float *w, int c0, int cn, int cin) {
#pragma omp parallel for schedule(static) if ((size_t)cn * cin >= 4096)
  for (int j = 0; j < cn; j++)
    for (int ci = 0; ci < cin; ci++) {
      const float *wk = w + ((size_t)(c0 + j) * cin + ci) * 9;
      for (int t = 0; t < 9; t++) wt[((size_t)j * 9 + t) * cin + ci] = wk[t];
    }
  rv_bf16_pack_weights(wpb, wt, 9 * cn, cin);
}

/* bf16: the tap GEMM on rv_pointwise_bf16, its weights wpk packed once (the module's, NULL:
 * packed here per chunk); G's planes in the order of the tap matrix's rows: (t, j) for
 * float32, (j, t) for bf16 (so that a chunk of the once-packed matrix is contiguous) */
static rv_status upsampled_run(float *y, const float *x, const float *w, const uint32_t *wpk,
                               const float *b, int n, int cin, int ih, int iw, int cout, int oh,
                               int ow, rv_act act, int accumulate, int bf16, rv_arena *scratch) {
  RV_ASSERT(n > 0 && cin > 0 && cout > 0 && ih > 0 && iw > 0 && oh > 0 && ow > 0 && scratch);
  RV_ASSERT(act == RV_ACT_NONE || act == RV_ACT_RELU);
  const size_t ihw = (size_t)ih * (size_t)iw, ohw = (size_t)oh * (size_t)ow;
  /* chunk: output channels per GEMM, a multiple of 8 (9 cb rows fill the kernel's 8-row
   * blocks) with its 9 cb G planes in G_BYTES, at least 8 */
  size_t cbz = G_BYTES / (9 * ihw * sizeof(float)) / 8 * 8;
  if (cbz < 8) cbz = 8;
  const int cb = cbz < (size_t)cout ? (int)cbz : cout;
  const int nth = omp_get_max_threads();
  const int own_pack = bf16 && !wpk; /* bf16 without a packed matrix: per chunk, here */
  rv_arena_mark mark = rv_arena_get_mark(scratch);
  float *wp = !bf16 || own_pack ? rv_arena_floats(scratch, (size_t)9 * cb * cin) : NULL;
  float *G = rv_arena_floats(scratch, (size_t)9 * cb * ihw);
  float *cache = rv_arena_floats(scratch, (size_t)7 * ow * nth);
  int *idx = rv_arena_alloc(scratch, (size_t)2 * ow * sizeof(int));
  float *lw = rv_arena_floats(scratch, (size_t)2 * ow);
  uint32_t *wpb = own_pack ? (uint32_t *)rv_arena_floats(scratch, rv_bf16_packed_words(9 * cb, cin))
                           : NULL;
  if (((!bf16 || own_pack) && !wp) || !G || !cache || !idx || !lw || (own_pack && !wpb)) {
    rv_arena_release(scratch, mark);
    return RV_ERR_NOMEM;
  }
  const float sh = (float)ih / (float)oh, sw = (float)iw / (float)ow;
  htaps ht = {idx, idx + ow, lw, lw + ow};
  for (int X = 0; X < ow; X++) {
    rv_lin_tap t = rv_bilinear_tap(sw, X, iw);
    ht.i0[X] = t.i0, ht.i1[X] = t.i1, ht.l0[X] = t.l0, ht.l1[X] = t.l1;
  }
  rv_status st = RV_OK;
  for (int c0 = 0; c0 < cout && st == RV_OK; c0 += cb) {
    const int cn = cout - c0 < cb ? cout - c0 : cb;
    const uint32_t *wc = NULL; /* bf16: the chunk's packed rows */
    if (!bf16) {
      /* rows (t, j) of the chunk's tap matrices, once for all images:
       * wp[(t cn + j) cin + ci] = w[c0+j][ci][t] */
#pragma omp parallel for schedule(static) if ((size_t)cn * cin >= 4096)
      for (int j = 0; j < cn; j++)
        for (int ci = 0; ci < cin; ci++) {
          const float *wk = w + ((size_t)(c0 + j) * cin + ci) * 9;
          for (int t = 0; t < 9; t++) wp[((size_t)t * cn + j) * cin + ci] = wk[t];
        }
    } else if (own_pack) {
      pack_taps_bf16(wpb, wp, w, c0, cn, cin);
      wc = wpb;
    } else {
      wc = wpk + (size_t)9 * c0 * (size_t)((cin + 1) / 2);
    }
    for (int bi = 0; bi < n && st == RV_OK; bi++) {
      float *yb = y + (size_t)bi * cout * ohw;
      st = bf16 ? rv_pointwise_bf16(G, wc, NULL, x + (size_t)bi * cin * ihw, 9 * cn, cin, ihw,
                                    NULL, scratch)
                : rv_pointwise_f32(G, wp, NULL, x + (size_t)bi * cin * ihw, 9 * cn, cin, ihw,
                                   scratch);
      if (st != RV_OK) break;
#pragma omp parallel for schedule(dynamic, 1) if ((size_t)cn * ohw >= 65536)
      for (int j = 0; j < cn; j++) {
        const float *g[9];
        for (int t = 0; t < 9; t++)
          g[t] = G + (bf16 ? (size_t)j * 9 + t : (size_t)t * cn + j) * ihw;
        scatter_channel(yb + (size_t)(c0 + j) * ohw, g, b ? b[c0 + j] : 0.0f, ih, iw, oh, ow, sh,
                        ht, accumulate, act == RV_ACT_RELU, cache + (size_t)7 * ow * omp_get_thread_num());
      }
    }
  }
  rv_arena_release(scratch, mark);
  return st;
}

rv_status rv_conv3x3_upsampled_f32(float *y, const float *x, const float *w, const float *b,
                                   int n, int cin, int ih, int iw, int cout, int oh, int ow,
                                   rv_act act, int accumulate, rv_arena *scratch) {
  return upsampled_run(y, x, w, NULL, b, n, cin, ih, iw, cout, oh, ow, act, accumulate, 0,
                       scratch);
}

rv_status rv_conv3x3_upsampled_bf16(float *y, const float *x, const float *w, const float *b,
                                    int n, int cin, int ih, int iw, int cout, int oh, int ow,
                                    rv_act act, int accumulate, rv_arena *scratch) {
  RV_ASSERT(rv_bf16_supported());
  return upsampled_run(y, x, w, NULL, b, n, cin, ih, iw, cout, oh, ow, act, accumulate, 1,
                       scratch);
}

size_t rv_conv3x3_upsampled_bf16_words(int cout, int cin) {
  return rv_bf16_packed_words(9 * cout, cin);
}

/* in groups of 8 output channels (72 rows, a whole number of the pack's 8-row blocks) */
rv_status rv_conv3x3_upsampled_bf16_pack(uint32_t *wp, const float *w, int cout, int cin) {
  RV_ASSERT(wp && w && cout > 0 && cin > 0);
  float *wt = rv_malloc(sizeof(float) * 72 * (size_t)cin);
  if (!wt) return RV_ERR_NOMEM;
  for (int c0 = 0; c0 < cout; c0 += 8)
    pack_taps_bf16(wp + (size_t)9 * c0 * (size_t)((cin + 1) / 2), wt, w, c0,
                   cout - c0 < 8 ? cout - c0 : 8, cin);
  rv_free(wt);
  return RV_OK;
}

rv_status rv_conv3x3_upsampled_bf16_packed(float *y, const float *x, const uint32_t *wp,
                                           const float *b, int n, int cin, int ih, int iw,
                                           int cout, int oh, int ow, rv_act act, int accumulate,
                                           rv_arena *scratch) {
  RV_ASSERT(rv_bf16_supported() && wp);
  return upsampled_run(y, x, NULL, wp, b, n, cin, ih, iw, cout, oh, ow, act, accumulate, 1,
                       scratch);
}
