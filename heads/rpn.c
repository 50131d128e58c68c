/* RPN head (mmdet 2.11 RPNHead): shared 3x3 conv + ReLU, 1x1 objectness (sigmoid) and
 * 1x1 deltas per level; proposals by per-level top-k, decode, per-level NMS, top max_per_img. */
#include "heads/det.h"
#include "nn/conv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

rv_rpn_cfg rv_rpn_cfg_default(void) {
  rv_rpn_cfg c = {1000, 1000, 0.7f, 0.0f};
  return c;
}

rv_status rv_rpn_head_load(rv_rpn_head *h, rv_params *p, const char *prefix,
                           rv_ctx *ctx) {
  memset(h, 0, sizeof *h);
  rv_layer cls = {0}, reg = {0}; /* stacked into h->clsreg below, then freed */
  char key[256];
  rv_status st;
  snprintf(key, sizeof key, "%s.rpn_conv", prefix);
  if ((st = rv_layer_load(&h->conv, p, key, 3, ctx)) != RV_OK) goto fail;
  snprintf(key, sizeof key, "%s.rpn_cls", prefix);
  if ((st = rv_layer_load(&cls, p, key, 1, ctx)) != RV_OK) goto fail;
  snprintf(key, sizeof key, "%s.rpn_reg", prefix);
  if ((st = rv_layer_load(&reg, p, key, 1, ctx)) != RV_OK) goto fail;
  h->ratios[0] = 0.5f;
  h->ratios[1] = 1.0f;
  h->ratios[2] = 2.0f;
  h->scales[0] = 8.0f;
  h->nr = 3;
  h->ns = 1;
  h->num_anchors = 3;
  if (cls.cin != h->conv.cout || reg.cin != h->conv.cout || h->conv.cin != h->conv.cout) {
    st = rv_error(ctx, RV_ERR_MODEL, "weights: %s.rpn_* channel counts do not match", prefix);
    goto fail;
  }
  if (cls.cout != h->num_anchors || reg.cout != 4 * h->num_anchors) {
    st = rv_error(ctx, RV_ERR_UNSUPPORTED,
                  "weights: %s.rpn_cls has %d outputs (reg %d); only 3 sigmoid anchors "
                  "(ratios 0.5/1/2, scale 8) are supported",
                  prefix, cls.cout, reg.cout);
    goto fail;
  }
  /* both 1x1 heads read the same map: one GEMM with their rows stacked, which reads the
   * map once */
  h->clsreg.cin = cls.cin;
  h->clsreg.cout = cls.cout + reg.cout;
  h->clsreg.k = 1;
  h->clsreg.algo = RV_CONV_AUTO;
  h->clsreg.w = rv_malloc(sizeof(float) * (size_t)h->clsreg.cout * h->clsreg.cin);
  h->clsreg.b = rv_malloc(sizeof(float) * (size_t)h->clsreg.cout);
  if (!h->clsreg.w || !h->clsreg.b) {
    st = rv_error(ctx, RV_ERR_NOMEM, "weights: out of memory for %s.rpn_cls", prefix);
    goto fail;
  }
  const size_t ncls = (size_t)cls.cout * cls.cin;
  memcpy(h->clsreg.w, cls.w, sizeof(float) * ncls);
  memcpy(h->clsreg.w + ncls, reg.w, sizeof(float) * (size_t)reg.cout * reg.cin);
  memcpy(h->clsreg.b, cls.b, sizeof(float) * (size_t)cls.cout);
  memcpy(h->clsreg.b + cls.cout, reg.b, sizeof(float) * (size_t)reg.cout);
  rv_layer_free(&cls);
  rv_layer_free(&reg);
  return RV_OK;
fail:
  rv_layer_free(&cls);
  rv_layer_free(&reg);
  rv_rpn_head_free(h);
  return st;
}

void rv_rpn_head_free(rv_rpn_head *h) {
  rv_layer_free(&h->conv);
  rv_layer_free(&h->clsreg);
}

rv_status rv_rpn_forward_level(rv_tensor *cls, rv_tensor *reg, const rv_rpn_head *h,
                               rv_tensor feat, rv_arena *arena, rv_ctx *ctx) {
  if (feat.c != h->conv.cin || feat.n != 1)
    return rv_error(ctx, RV_ERR_SHAPE, "rpn: feature has %d channels (batch %d), expected %d",
                    feat.c, feat.n, h->conv.cin);
  /* cls rows (A) then reg rows (4A) of one [5A, h, w] output */
  const size_t hw = (size_t)feat.h * feat.w;
  const int A = h->num_anchors;
  float *both = rv_arena_floats(arena, (size_t)h->clsreg.cout * hw);
  if (!both) return rv_error(ctx, RV_ERR_NOMEM, "rpn: out of memory");
  *cls = (rv_tensor){both, 1, A, feat.h, feat.w};
  *reg = (rv_tensor){both + (size_t)A * hw, 1, 4 * A, feat.h, feat.w};
  rv_arena_mark mk = rv_arena_get_mark(arena);
  float *t = rv_arena_floats(arena, (size_t)h->conv.cout * hw);
  if (!t) return rv_error(ctx, RV_ERR_NOMEM, "rpn: out of memory");
  rv_status st = rv_layer_conv(t, &h->conv, feat.data, 1, feat.h, feat.w, RV_ACT_RELU, arena);
  if (st == RV_OK)
    st = rv_layer_conv(both, &h->clsreg, t, 1, feat.h, feat.w, RV_ACT_NONE, arena);
  rv_arena_release(arena, mk);
  if (st != RV_OK) return rv_error(ctx, st, "rpn: convolution failed (out of scratch memory)");
  return RV_OK;
}

rv_status rv_rpn_get_proposals(float **props, float **scores, int *n, const rv_rpn_head *h,
                               const rv_tensor *cls, const rv_tensor *reg, const int *strides,
                               int levels, const rv_img_meta *meta, const rv_rpn_cfg *cfg,
                               rv_arena *arena, rv_ctx *ctx) {
  const int A = h->num_anchors;
  size_t total = 0;
  for (int l = 0; l < levels; l++) {
    size_t m = (size_t)cls[l].h * cls[l].w * A;
    if (cfg->nms_pre > 0 && m > (size_t)cfg->nms_pre) m = (size_t)cfg->nms_pre;
    total += m;
  }
  /* outputs first (they survive), then scratch released at the end */
  int cap = cfg->max_per_img > 0 && (size_t)cfg->max_per_img < total ? cfg->max_per_img
                                                                       : (int)total;
  *props = rv_arena_floats(arena, (size_t)(cap > 0 ? cap : 1) * 4);
  *scores = rv_arena_floats(arena, (size_t)(cap > 0 ? cap : 1));
  if (!*props || !*scores) return rv_error(ctx, RV_ERR_NOMEM, "rpn: out of memory");
  rv_arena_mark mk = rv_arena_get_mark(arena);
  float *boxes = rv_arena_floats(arena, total * 4 + 1);
  float *logit = rv_arena_floats(arena, total + 1);
  int *ids = rv_arena_alloc(arena, (total + 1) * sizeof(int));
  int *keep = rv_arena_alloc(arena, (total + 1) * sizeof(int));
  if (!boxes || !logit || !ids || !keep) {
    rv_arena_release(arena, mk);
    return rv_error(ctx, RV_ERR_NOMEM, "rpn: out of memory");
  }
  rv_bbox_coder coder = rv_bbox_coder_default();
  size_t off = 0;
  for (int l = 0; l < levels; l++) {
    int H = cls[l].h, W = cls[l].w;
    int m = H * W * A;
    rv_arena_mark ml = rv_arena_get_mark(arena);
    float *lg = rv_arena_floats(arena, (size_t)m);
    int *order = rv_arena_alloc(arena, (size_t)m * sizeof(int));
    float *anchors = rv_arena_floats(arena, (size_t)m * 4);
    float *sel_a = rv_arena_floats(arena, (size_t)m * 4);
    float *sel_d = rv_arena_floats(arena, (size_t)m * 4);
    if (!lg || !order || !anchors || !sel_a || !sel_d) {
      rv_arena_release(arena, mk);
      return rv_error(ctx, RV_ERR_NOMEM, "rpn: out of memory");
    }
    /* permute(0,2,3,1): index (y*W + x)*A + a */
    for (int a = 0; a < A; a++)
      for (int p = 0; p < H * W; p++) lg[(size_t)p * A + a] = cls[l].data[(size_t)a * H * W + p];
    float base[4 * 16];
    rv_anchor_base_f32(base, (float)strides[l], h->ratios, h->nr, h->scales, h->ns);
    rv_anchor_grid_f32(anchors, base, A, H, W, strides[l]);
    /* sigmoid is monotonic: ranking the logits ranks the scores without float32 ties of
     * saturated sigmoids; only the nms_pre first are sorted (201,600 anchors on the 200x336
     * level) */
    const int k = rv_argsort_topk_desc(order, lg, m, cfg->nms_pre > 0 ? cfg->nms_pre : m, arena);
    if (k < 0) {
      rv_arena_release(arena, mk);
      return rv_error(ctx, RV_ERR_NOMEM, "rpn: out of memory");
    }
    for (int t = 0; t < k; t++) {
      int i = order[t];
      int p = i / A, a = i % A;
      memcpy(sel_a + (size_t)t * 4, anchors + (size_t)i * 4, 4 * sizeof(float));
      for (int c = 0; c < 4; c++)
        sel_d[(size_t)t * 4 + c] = reg[l].data[((size_t)a * 4 + c) * H * W + p];
      logit[off + t] = lg[i];
      ids[off + t] = l;
    }
    rv_delta2bbox_f32(boxes + off * 4, sel_a, 4, sel_d, 4, k, 1, &coder, meta->img_h,
                      meta->img_w);
    off += (size_t)k;
    rv_arena_release(arena, ml);
  }
  int m = (int)off;
  if (cfg->min_bbox_size > 0) {
    int j = 0;
    for (int i = 0; i < m; i++) {
      float *b = boxes + (size_t)i * 4;
      if (b[2] - b[0] >= cfg->min_bbox_size && b[3] - b[1] >= cfg->min_bbox_size) {
        if (j != i) {
          memmove(boxes + (size_t)j * 4, b, 4 * sizeof(float));
          logit[j] = logit[i];
          ids[j] = ids[i];
        }
        j++;
      }
    }
    m = j;
  }
  int nk = rv_batched_nms(keep, boxes, logit, ids, m, cfg->iou_thr, arena);
  if (nk < 0) {
    rv_arena_release(arena, mk);
    return rv_error(ctx, RV_ERR_NOMEM, "rpn: out of memory in NMS");
  }
  if (nk > cap) nk = cap;
  for (int t = 0; t < nk; t++) {
    memcpy(*props + (size_t)t * 4, boxes + (size_t)keep[t] * 4, 4 * sizeof(float));
    (*scores)[t] = (float)(1.0 / (1.0 + exp(-(double)logit[keep[t]])));
  }
  *n = nk;
  rv_arena_release(arena, mk);
  return RV_OK;
}

rv_status rv_rpn_head_set_bf16(rv_rpn_head *h, int on, rv_ctx *ctx) {
  return rv_convmod_set_bf16(&h->conv, on, ctx); /* rpn_cls / rpn_reg stay float32 */
}
