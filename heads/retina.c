/* RetinaNet head (mmdet 2.11 RetinaHead + AnchorHead._get_bboxes): 4 conv3x3+ReLU towers,
 * 3x3 retina_cls (A*K sigmoid) and retina_reg (A*4); 9 octave anchors per position; per level
 * top nms_pre by max class score; decode; rescale; multiclass NMS. */
#include "heads/det.h"
#include "nn/conv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

rv_retina_cfg rv_retina_cfg_default(void) {
  rv_retina_cfg c = {1000, 0.05f, 0.5f, 100};
  return c;
}

rv_status rv_retina_head_load(rv_retina_head *h, rv_params *p, const char *prefix,
                              rv_ctx *ctx) {
  memset(h, 0, sizeof *h);
  char key[256];
  rv_status st = RV_OK;
  for (int i = 0; i < 8; i++) {
    snprintf(key, sizeof key, "%s.cls_convs.%d.conv.weight", prefix, i);
    if (!rv_param_find(p, key)) break;
    snprintf(key, sizeof key, "%s.cls_convs.%d", prefix, i);
    if ((st = rv_layer_load_convmodule(&h->cls_convs[i], p, key, 3, ctx)) != RV_OK) goto fail;
    snprintf(key, sizeof key, "%s.reg_convs.%d", prefix, i);
    if ((st = rv_layer_load_convmodule(&h->reg_convs[i], p, key, 3, ctx)) != RV_OK) goto fail;
    h->stacked_convs = i + 1;
  }
  snprintf(key, sizeof key, "%s.retina_cls", prefix);
  if ((st = rv_layer_load(&h->cls, p, key, 3, ctx)) != RV_OK) goto fail;
  snprintf(key, sizeof key, "%s.retina_reg", prefix);
  if ((st = rv_layer_load(&h->reg, p, key, 3, ctx)) != RV_OK) goto fail;
  /* F(4x4) where the size rule allows (kernels/conv.c): the scores come straight from these
   * convs, no RoI in between to amplify their rounding, and the fixture errors stay well
   * within tolerance (bench/RESULTS.md, "Measurements behind the code's rules") */
  for (int i = 0; i < h->stacked_convs; i++)
    h->cls_convs[i].algo = h->reg_convs[i].algo = RV_CONV_AUTO_FAST;
  h->cls.algo = h->reg.algo = RV_CONV_AUTO_FAST;
  h->num_anchors = 9;
  if (h->reg.cout != 4 * h->num_anchors || h->cls.cout % h->num_anchors) {
    st = rv_error(ctx, RV_ERR_UNSUPPORTED, "weights: %s.retina_reg has %d outputs; only 9 "
                  "anchors (3 octave scales x 3 ratios) are supported", prefix, h->reg.cout);
    goto fail;
  }
  h->num_classes = h->cls.cout / h->num_anchors;
  int c = h->stacked_convs ? h->cls_convs[0].cin : h->cls.cin;
  for (int i = 0; i < h->stacked_convs; i++)
    if (h->cls_convs[i].cin != c || h->reg_convs[i].cin != c || h->cls_convs[i].cout != c ||
        h->reg_convs[i].cout != c) {
      st = rv_error(ctx, RV_ERR_MODEL, "weights: %s conv tower %d channel mismatch", prefix, i);
      goto fail;
    }
  if (h->cls.cin != c || h->reg.cin != c) {
    st = rv_error(ctx, RV_ERR_MODEL, "weights: %s.retina_cls/reg channel mismatch", prefix);
    goto fail;
  }
  h->ratios[0] = 0.5f;
  h->ratios[1] = 1.0f;
  h->ratios[2] = 2.0f;
  rv_anchor_octave_scales(h->scales, 4.0f, 3);
  return RV_OK;
fail:
  rv_retina_head_free(h);
  return st;
}

void rv_retina_head_free(rv_retina_head *h) {
  for (int i = 0; i < 8; i++) {
    rv_layer_free(&h->cls_convs[i]);
    rv_layer_free(&h->reg_convs[i]);
  }
  rv_layer_free(&h->cls);
  rv_layer_free(&h->reg);
}

static rv_status tower(float *out, const rv_layer *convs, int nconv, const rv_layer *last,
                       const float *x, int h, int w, rv_arena *arena) {
  int c = last->cin;
  rv_arena_mark mk = rv_arena_get_mark(arena);
  float *a = rv_arena_floats(arena, (size_t)c * h * w);
  float *b = rv_arena_floats(arena, (size_t)c * h * w);
  if (!a || !b) return RV_ERR_NOMEM;
  rv_status st = RV_OK;
  for (int i = 0; i < nconv && st == RV_OK; i++) {
    float *y = (i & 1) ? b : a;
    st = rv_layer_conv(y, &convs[i], x, 1, h, w, RV_ACT_RELU, arena);
    x = y;
  }
  if (st == RV_OK) st = rv_layer_conv(out, last, x, 1, h, w, RV_ACT_NONE, arena);
  rv_arena_release(arena, mk);
  return st;
}

rv_status rv_retina_forward_level(rv_tensor *cls, rv_tensor *reg, const rv_retina_head *h,
                                  rv_tensor feat, rv_arena *arena, rv_ctx *ctx) {
  if (feat.c != h->cls.cin || feat.n != 1)
    return rv_error(ctx, RV_ERR_SHAPE, "retina: feature has %d channels (batch %d), expected %d",
                    feat.c, feat.n, h->cls.cin);
  *cls = rv_tensor_new(arena, 1, h->cls.cout, feat.h, feat.w);
  *reg = rv_tensor_new(arena, 1, h->reg.cout, feat.h, feat.w);
  if (!cls->data || !reg->data) return rv_error(ctx, RV_ERR_NOMEM, "retina: out of memory");
  rv_status st = tower(cls->data, h->cls_convs, h->stacked_convs, &h->cls, feat.data, feat.h,
                       feat.w, arena);
  if (st == RV_OK)
    st = tower(reg->data, h->reg_convs, h->stacked_convs, &h->reg, feat.data, feat.h, feat.w,
               arena);
  if (st != RV_OK) return rv_error(ctx, st, "retina: head convolutions failed (out of memory)");
  return RV_OK;
}

rv_status rv_retina_get_bboxes(rv_detections *det, const rv_retina_head *h,
                               const rv_tensor *cls, const rv_tensor *reg, const int *strides,
                               int levels, const rv_img_meta *meta, const rv_retina_cfg *cfg,
                               rv_arena *arena, rv_ctx *ctx) {
  memset(det, 0, sizeof *det);
  const int A = h->num_anchors, K = h->num_classes;
  size_t total = 0;
  for (int l = 0; l < levels; l++) {
    size_t m = (size_t)cls[l].h * cls[l].w * A;
    if (cfg->nms_pre > 0 && m > (size_t)cfg->nms_pre) m = (size_t)cfg->nms_pre;
    total += m;
  }
  int cap = cfg->max_per_img > 0 ? cfg->max_per_img : (int)(total * K);
  if (cap < 1) cap = 1;
  det->bboxes = rv_arena_floats(arena, (size_t)cap * 4);
  det->scores = rv_arena_floats(arena, (size_t)cap);
  det->labels = rv_arena_alloc(arena, (size_t)cap * sizeof(int));
  if (!det->bboxes || !det->scores || !det->labels)
    return rv_error(ctx, RV_ERR_NOMEM, "retina: out of memory");
  rv_arena_mark mk = rv_arena_get_mark(arena);
  float *boxes = rv_arena_floats(arena, total * 4 + 1);
  float *scores = rv_arena_floats(arena, total * K + 1);
  if (!boxes || !scores) {
    rv_arena_release(arena, mk);
    return rv_error(ctx, RV_ERR_NOMEM, "retina: out of memory");
  }
  rv_bbox_coder coder = rv_bbox_coder_default();
  size_t off = 0;
  for (int l = 0; l < levels; l++) {
    const int H = cls[l].h, W = cls[l].w, HW = H * W, m = HW * A;
    rv_arena_mark ml = rv_arena_get_mark(arena);
    float *mx = rv_arena_floats(arena, (size_t)m);
    int *order = rv_arena_alloc(arena, (size_t)m * sizeof(int));
    float *anchors = rv_arena_floats(arena, (size_t)m * 4);
    float *sa = rv_arena_floats(arena, (size_t)m * 4);
    float *sd = rv_arena_floats(arena, (size_t)m * 4);
    if (!mx || !order || !anchors || !sa || !sd) {
      rv_arena_release(arena, mk);
      return rv_error(ctx, RV_ERR_NOMEM, "retina: out of memory");
    }
    /* max class logit per anchor (sigmoid is monotonic); index (y*W+x)*A + a,
     * channel a*K + k */
    for (int p = 0; p < HW; p++)
      for (int a = 0; a < A; a++) {
        const float *c = cls[l].data + (size_t)a * K * HW + p;
        float best = c[0];
        for (int k = 1; k < K; k++)
          if (c[(size_t)k * HW] > best) best = c[(size_t)k * HW];
        mx[(size_t)p * A + a] = best;
      }
    float base[9 * 4];
    rv_anchor_base_f32(base, (float)strides[l], h->ratios, 3, h->scales, 3);
    rv_anchor_grid_f32(anchors, base, A, H, W, strides[l]);
    int k = m;
    if (cfg->nms_pre > 0 && k > cfg->nms_pre) {
      if (rv_argsort_topk_desc(order, mx, m, cfg->nms_pre, arena) < 0) {
        rv_arena_release(arena, mk);
        return rv_error(ctx, RV_ERR_NOMEM, "retina: out of memory");
      }
      k = cfg->nms_pre;
    } else {
      for (int i = 0; i < m; i++) order[i] = i;
    }
    for (int t = 0; t < k; t++) {
      int i = order[t], p = i / A, a = i % A;
      memcpy(sa + (size_t)t * 4, anchors + (size_t)i * 4, 16);
      for (int c = 0; c < 4; c++)
        sd[(size_t)t * 4 + c] = reg[l].data[((size_t)a * 4 + c) * HW + p];
      float *s = scores + (off + t) * K;
      for (int c = 0; c < K; c++)
        s[c] = (float)(1.0 / (1.0 + exp(-(double)cls[l].data[((size_t)a * K + c) * HW + p])));
    }
    rv_delta2bbox_f32(boxes + off * 4, sa, 4, sd, 4, k, 1, &coder, meta->img_h, meta->img_w);
    off += (size_t)k;
    rv_arena_release(arena, ml);
  }
  for (size_t i = 0; i < off; i++)
    for (int k = 0; k < 4; k++)
      boxes[i * 4 + k] = (float)((double)boxes[i * 4 + k] / (double)meta->scale_factor[k]);
  int nd = rv_multiclass_nms(det->bboxes, det->scores, det->labels, NULL, boxes, 0, scores, K,
                             (int)off, K, cfg->score_thr, cfg->iou_thr, cap, arena);
  rv_arena_release(arena, mk);
  if (nd < 0) return rv_error(ctx, RV_ERR_NOMEM, "retina: out of memory in NMS");
  det->n = nd;
  return RV_OK;
}

rv_status rv_retina_head_set_bf16(rv_retina_head *h, int on, rv_ctx *ctx) {
  rv_status st = rv_convmods_set_bf16(h->cls_convs, 8, on, ctx); /* retina_cls / reg: float32 */
  if (st == RV_OK) st = rv_convmods_set_bf16(h->reg_convs, 8, on, ctx);
  if (st != RV_OK && on) rv_convmods_set_bf16(h->cls_convs, 8, 0, ctx);
  return st;
}
