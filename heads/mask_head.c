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
    h->convs[i].algo = RV_CONV_AUTO_FAST; /* RoI stack; fixture errors with F(4x4) here: core/conv.c */
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
