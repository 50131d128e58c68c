/* FCN mask head (mmdet 2.11 FCNMaskHead: convs 3x3 + ReLU, 2x2 deconv + ReLU, 1x1 logits);
 * the paste of its masks is heads/mask_paste.c. */
#include "heads/det.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

rv_status rv_mask_head_load(rv_mask_head *h, rv_params *p, const char *prefix,
                            rv_ctx *ctx) {
  memset(h, 0, sizeof *h);
  char key[256];
  rv_status st = RV_OK;
  for (int i = 0; i < 8; i++) {
    snprintf(key, sizeof key, "%s.convs.%d.conv.weight", prefix, i);
    if (!rv_param_find(p, key)) break;
    snprintf(key, sizeof key, "%s.convs.%d", prefix, i);
    if ((st = rv_layer_load_convmodule(&h->convs[i], p, key, 3, ctx)) != RV_OK) goto fail;
    h->convs[i].algo = RV_CONV_AUTO_FAST; /* RoI stack; fixture errors with F(4x4) here: kernels/conv.c */
    h->num_convs = i + 1;
  }
  snprintf(key, sizeof key, "%s.upsample", prefix);
  if ((st = rv_layer_load(&h->upsample, p, key, -2, ctx)) != RV_OK) goto fail;
  snprintf(key, sizeof key, "%s.conv_logits", prefix);
  if ((st = rv_layer_load(&h->logits, p, key, 1, ctx)) != RV_OK) goto fail;
  h->in_channels = h->num_convs ? h->convs[0].cin : h->upsample.cin;
  int c = h->in_channels;
  for (int i = 0; i < h->num_convs; i++) {
    if (h->convs[i].cin != c) {
      st = rv_error(ctx, RV_ERR_MODEL, "weights: %s.convs.%d input channels mismatch", prefix, i);
      goto fail;
    }
    c = h->convs[i].cout;
  }
  if (h->upsample.cin != c || h->logits.cin != h->upsample.cout) {
    st = rv_error(ctx, RV_ERR_MODEL, "weights: %s.upsample/conv_logits channels mismatch", prefix);
    goto fail;
  }
  h->roi_size = 14;
  h->num_classes = h->logits.cout;
  return RV_OK;
fail:
  rv_mask_head_free(h);
  return st;
}

void rv_mask_head_free(rv_mask_head *h) {
  for (int i = 0; i < 8; i++) rv_layer_free(&h->convs[i]);
  rv_layer_free(&h->upsample);
  rv_layer_free(&h->logits);
}

/* ---- the labelled path on the AVX-512 kernels ---------------------------------------------
 * With each roi's label given (the test path), only one channel of conv_logits is needed:
 *   logits[r][2i + a][2j + b] = bl[k] + sum_co wl[k][co] relu(bu[co] + T[r, i, j][a, b, co]),
 *   T[r, i, j][a, b, co] = sum_ci x[r, i, j][ci] wu[ci][co][a][b]
 * with x the conv stack's output channels-last, [n s s, cin]: T is one GEMM over all rois'
 * pixels (rows) and the 4 cu columns (a, b, co), computed 6 rows at a time by the rows kernel
 * (rv_ukernel_rows_f32; bf16 mode: rv_bf16_rows_block, both operands rounded to bf16) into
 * a tile in L1 that the label's dot products read at once: the upsampled map is never
 * stored (the NCHW path below writes and reads it, cu (2s)^2 floats per roi, and its
 * deconv runs one GEMM of 196 columns per roi). The sums over ci run in order (FMA), the dot
 * over co in 16 lanes added at the end. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <omp.h>

/* sum_co wl[co] max(t[co] + bu[co], 0), cu a multiple of 16 */
__attribute__((target("avx512f"))) static float dot_relu(const float *t, const float *bu,
                                                        const float *wl, int cu) {
  __m512 acc = _mm512_setzero_ps();
  for (int c = 0; c < cu; c += 16) {
    __m512 v = _mm512_loadu_ps(t + c);
    if (bu) v = _mm512_add_ps(v, _mm512_loadu_ps(bu + c));
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(wl + c), _mm512_max_ps(v, _mm512_setzero_ps()), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

static rv_status labelled_fused(float *logits, const rv_mask_head *h, const float *x, int n,
                                const int *labels, int bf16, rv_arena *scratch) {
  const int s = h->roi_size, ss = s * s, s2 = 2 * s, oo = s2 * s2;
  const int cin = h->upsample.cin, cu = h->upsample.cout, nc = 4 * cu, np = nc / UK_RC;
  const int k2 = cin / 2;
  const float *wu = h->upsample.w, *bu = h->upsample.b;
  const size_t M = (size_t)n * ss, blocks = (M + UK_RR - 1) / UK_RR;
  const int nth = omp_get_max_threads();
  rv_arena_mark mark = rv_arena_get_mark(scratch);
  /* B: panels of 64 columns, column a 2 cu + b cu + co; float32 [panel][ci][64], bf16
   * [panel][ci / 2][64] pairs (rows 2i, 2i + 1) */
  float *bp = bf16 ? NULL : rv_arena_floats(scratch, (size_t)np * cin * UK_RC);
  uint32_t *bq = bf16 ? (uint32_t *)rv_arena_floats(scratch, (size_t)np * k2 * UK_RC) : NULL;
  /* per thread: the tile (6 rows x nc), the rows of x padded to 6 (bf16: rounded) */
  const size_t per = (size_t)UK_RR * nc + (size_t)UK_RR * cin + 16;
  float *ws = rv_arena_floats(scratch, per * nth);
  if ((!bp && !bq) || !ws) {
    rv_arena_release(scratch, mark);
    return RV_ERR_NOMEM;
  }
  for (int ci = 0; ci < cin; ci++)
    for (int col = 0; col < nc; col++) {
      const int ab = col / cu, co = col % cu;
      const float v = wu[((size_t)ci * cu + co) * 4 + ab];
      const size_t pc = (size_t)(col / UK_RC), j = (size_t)(col % UK_RC);
      if (!bf16) {
        bp[(pc * cin + ci) * UK_RC + j] = v;
      } else {
        uint32_t *d = bq + (pc * k2 + (size_t)(ci / 2)) * UK_RC + j;
        const uint32_t hv = rv_f32_to_bf16(v);
        *d = ci % 2 ? (*d & 0xffffu) | hv << 16 : hv;
      }
    }
#pragma omp parallel
  {
    float *tile = ws + per * omp_get_thread_num(), *arow = tile + (size_t)UK_RR * nc;
#pragma omp for schedule(static)
    for (size_t blk = 0; blk < blocks; blk++) {
      const size_t m0 = blk * UK_RR;
      const int rows = M - m0 < UK_RR ? (int)(M - m0) : UK_RR;
      const float *a = x + m0 * cin;
      if (bf16) {
        uint16_t *ah = (uint16_t *)arow;
        rv_bf16_convert_vec(ah, a, (size_t)rows * cin);
        memset(ah + (size_t)rows * cin, 0, sizeof(uint16_t) * (size_t)(UK_RR - rows) * cin);
        for (int pc = 0; pc < np; pc++)
          rv_bf16_rows_block(tile + (size_t)pc * UK_RC, (size_t)nc, (const uint32_t *)ah,
                             (size_t)k2, bq + (size_t)pc * k2 * UK_RC, k2);
      } else {
        if (rows < UK_RR) { /* the last block: its rows padded with zeros */
          memcpy(arow, a, sizeof(float) * (size_t)rows * cin);
          memset(arow + (size_t)rows * cin, 0, sizeof(float) * (size_t)(UK_RR - rows) * cin);
          a = arow;
        }
        for (int pc = 0; pc < np; pc++)
          rv_ukernel_rows_f32(tile + (size_t)pc * UK_RC, (size_t)nc, a, (size_t)cin,
                              bp + (size_t)pc * cin * UK_RC, cin);
      }
      for (int rr = 0; rr < rows; rr++) {
        const size_t m = m0 + (size_t)rr;
        const int r = (int)(m / (size_t)ss), p = (int)(m % (size_t)ss), i = p / s, j = p % s;
        const int k = labels[r];
        const float *wl = h->logits.w + (size_t)k * cu;
        const float bl = h->logits.b ? h->logits.b[k] : 0.0f;
        float *o = logits + (size_t)r * oo;
        for (int ab = 0; ab < 4; ab++)
          o[(2 * i + ab / 2) * s2 + 2 * j + ab % 2] =
              dot_relu(tile + (size_t)rr * nc + (size_t)ab * cu, bu, wl, cu) + bl;
      }
    }
  }
  rv_arena_release(scratch, mark);
  return RV_OK;
}

/* the labelled path where it applies: RV_ERR_UNSUPPORTED (nothing done) elsewhere */
static rv_status labelled(float *logits, const rv_mask_head *h, const float *roi_feats, int n,
                          const int *labels, rv_arena *scratch) {
  const int s = h->roi_size, ss = s * s, cu = h->upsample.cout, cf = h->upsample.cin;
  if (!labels || !h->num_convs || !rv_ukernel_supported() || cu % 16 || cf % 2 ||
      h->convs[h->num_convs - 1].cout != cf)
    return RV_ERR_UNSUPPORTED;
  /* bf16 mode (nn/conv.h) is the conv stack's: the deconv follows it */
  const int bf16 = h->convs[0].wbf16 != NULL;
  if (bf16 && !rv_bf16_supported()) return RV_ERR_UNSUPPORTED;
  for (int r = 0; r < n; r++) RV_ASSERT(labels[r] >= 0 && labels[r] < h->num_classes);
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  float *a = rv_arena_floats(scratch, (size_t)n * cf * ss);
  if (!a) return RV_ERR_NOMEM;
  rv_status st = rv_det_conv_stack_rois_hwc(a, h->convs, h->num_convs, roi_feats, n, s, scratch);
  if (st == RV_OK) st = labelled_fused(logits, h, a, n, labels, bf16, scratch);
  rv_arena_release(scratch, mk);
  return st;
}
#else
static rv_status labelled(float *logits, const rv_mask_head *h, const float *roi_feats, int n,
                          const int *labels, rv_arena *scratch) {
  (void)logits, (void)h, (void)roi_feats, (void)n, (void)labels, (void)scratch;
  return RV_ERR_UNSUPPORTED;
}
#endif

/* rois per deconv + logits pass: its 2x upsampled maps take cu (2s)^2 floats per roi
 * (25 MB for 32 rois of 256 channels at 28x28). The conv stack runs on all rois at once:
 * one weight transform per layer and the same algorithm for every roi. */
#define MASK_CHUNK 32

rv_status rv_mask_head_forward(float *logits, const rv_mask_head *h, const float *roi_feats,
                               int n, const int *labels, rv_arena *scratch, rv_ctx *ctx) {
  const int s = h->roi_size, s2 = 2 * s, ss = s * s, oo = s2 * s2;
  int maxc = h->in_channels;
  for (int i = 0; i < h->num_convs; i++)
    if (h->convs[i].cout > maxc) maxc = h->convs[i].cout;
  const int cu = h->upsample.cout, K = h->num_classes;
  if (n <= 0) return RV_OK;
  rv_status fst = labelled(logits, h, roi_feats, n, labels, scratch);
  if (fst == RV_ERR_NOMEM)
    return rv_error(ctx, fst, "mask head: out of memory for %d rois", n);
  if (fst == RV_OK) return RV_OK;
  rv_arena_mark mk0 = rv_arena_get_mark(scratch);
  const float *feats = roi_feats; /* [n, c, s, s] into the deconv */
  int cf = h->in_channels;
  if (h->num_convs) {
    float *a = rv_arena_floats(scratch, (size_t)n * maxc * ss);
    if (!a) return rv_error(ctx, RV_ERR_NOMEM, "mask head: out of memory for %d rois", n);
    if (rv_det_conv_stack_rois(a, h->convs, h->num_convs, roi_feats, n, s, scratch) != RV_OK) {
      rv_arena_release(scratch, mk0);
      return rv_error(ctx, RV_ERR_NOMEM, "mask head: out of scratch memory for convs");
    }
    feats = a;
    cf = h->convs[h->num_convs - 1].cout;
  }
  for (int r0 = 0; r0 < n; r0 += MASK_CHUNK) {
    int m = n - r0 < MASK_CHUNK ? n - r0 : MASK_CHUNK;
    rv_arena_mark mk = rv_arena_get_mark(scratch);
    float *up = rv_arena_floats(scratch, (size_t)m * cu * oo);
    if (!up) {
      rv_arena_release(scratch, mk0);
      return rv_error(ctx, RV_ERR_NOMEM, "mask head: out of memory for %d rois", m);
    }
    const float *x = feats + (size_t)r0 * cf * ss;
    rv_deconv2x2_f32(up, x, h->upsample.w, h->upsample.b, m, h->upsample.cin, s, s, cu,
                     RV_ACT_RELU);
    if (!labels) {
      rv_status st = rv_layer_conv(logits + (size_t)r0 * K * oo, &h->logits, up, m, s2, s2,
                                       RV_ACT_NONE, scratch);
      if (st != RV_OK) {
        rv_arena_release(scratch, mk0);
        return rv_error(ctx, st, "mask head: conv_logits failed (scratch memory)");
      }
    } else {
      /* only the channel of each roi's label: out[p] = b[k] + sum_c w[k, c] * up[c, p] */
      for (int i = 0; i < m; i++) {
        int k = labels[r0 + i];
        RV_ASSERT(k >= 0 && k < K);
        float *o = logits + (size_t)(r0 + i) * oo;
        const float *u = up + (size_t)i * cu * oo;
        rv_gemm_f32(0, 0, 1, oo, cu, 1.0f, h->logits.w + (size_t)k * cu, cu, u, oo, 0.0f, o, oo);
        for (int p = 0; p < oo; p++) o[p] += h->logits.b[k];
      }
    }
    rv_arena_release(scratch, mk);
  }
  rv_arena_release(scratch, mk0);
  return RV_OK;
}
