/* RoI heads at test time: mmdet 2.11 CascadeRoIHead.simple_test (3 stages, logits averaged,
 * box refinement by the argmax class, masks averaged over the stages' sigmoid) and
 * StandardRoIHead.simple_test (Mask R-CNN: one bbox head, one mask head). */
#include "heads/det.h"
#include "nn/conv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const double cascade_stds[3][4] = {
    {0.1, 0.1, 0.2, 0.2}, {0.05, 0.05, 0.1, 0.1}, {0.033, 0.033, 0.067, 0.067}};
static const double single_stds[1][4] = {{0.1, 0.1, 0.2, 0.2}};

rv_rcnn_cfg rv_rcnn_cfg_default(void) {
  rv_rcnn_cfg c = {0.05f, 0.5f, 100, 0.5f};
  return c;
}

rv_status rv_roi_head_load(rv_roi_head *h, rv_params *p, const char *prefix,
                           int num_stages, const double (*stds)[4], rv_ctx *ctx) {
  memset(h, 0, sizeof *h);
  if (num_stages < 1 || num_stages > 4)
    return rv_error(ctx, RV_ERR_ARG, "roi head: %d stages (1..4 supported)", num_stages);
  if (!stds) {
    if (num_stages != 1 && num_stages != 3)
      return rv_error(ctx, RV_ERR_ARG, "roi head: no default stds for %d stages", num_stages);
    stds = num_stages == 3 ? cascade_stds : single_stds;
  }
  h->num_stages = num_stages;
  char key[256], probe[300];
  rv_status st = RV_OK;
  for (int i = 0; i < num_stages; i++) {
    if (num_stages == 1)
      snprintf(key, sizeof key, "%s.bbox_head", prefix);
    else
      snprintf(key, sizeof key, "%s.bbox_head.%d", prefix, i);
    if ((st = rv_bbox_head_load(&h->bbox[i], p, key, stds[i], ctx)) != RV_OK) goto fail;
    if (i > 0 && (h->bbox[i].num_classes != h->bbox[0].num_classes ||
                  h->bbox[i].in_channels != h->bbox[0].in_channels)) {
      st = rv_error(ctx, RV_ERR_MODEL, "weights: %s disagrees with stage 0 on classes/channels",
                    key);
      goto fail;
    }
  }
  h->num_classes = h->bbox[0].num_classes;
  for (int i = 0; i < num_stages; i++) {
    if (num_stages == 1)
      snprintf(key, sizeof key, "%s.mask_head", prefix);
    else
      snprintf(key, sizeof key, "%s.mask_head.%d", prefix, i);
    snprintf(probe, sizeof probe, "%s.conv_logits.weight", key);
    if (!rv_param_find(p, probe)) break;
    if ((st = rv_mask_head_load(&h->mask[i], p, key, ctx)) != RV_OK) goto fail;
    h->num_mask_heads = i + 1;
    if (h->mask[i].num_classes != h->num_classes ||
        h->mask[i].in_channels != h->bbox[0].in_channels) {
      st = rv_error(ctx, RV_ERR_MODEL, "weights: %s has %d classes / %d channels, box head %d/%d",
                    key, h->mask[i].num_classes, h->mask[i].in_channels, h->num_classes,
                    h->bbox[0].in_channels);
      goto fail;
    }
  }
  if (h->num_mask_heads && h->num_mask_heads != num_stages) {
    st = rv_error(ctx, RV_ERR_MODEL, "weights: %s has %d mask heads for %d stages", prefix,
                  h->num_mask_heads, num_stages);
    goto fail;
  }
  return RV_OK;
fail:
  rv_roi_head_free(h);
  return st;
}

void rv_roi_head_free(rv_roi_head *h) {
  for (int i = 0; i < 4; i++) {
    rv_bbox_head_free(&h->bbox[i]);
    rv_mask_head_free(&h->mask[i]);
  }
  h->num_stages = h->num_mask_heads = 0;
}

static void trace2(const rv_det_trace *t, const char *name, const float *d, int a, int b) {
  if (!t || !t->fn) return;
  int shape[2] = {a, b};
  t->fn(t->user, name, d, shape, 2);
}
static void trace4(const rv_det_trace *t, const char *name, const float *d, int a, int b, int c,
                   int e) {
  if (!t || !t->fn) return;
  int shape[4] = {a, b, c, e};
  t->fn(t->user, name, d, shape, 4);
}

static const int roi_strides[4] = {4, 8, 16, 32};

/* Softmax over rows in double. */
static void softmax_rows(float *y, const double *x, int n, int c) {
  for (int r = 0; r < n; r++) {
    const double *xr = x + (size_t)r * c;
    double mx = xr[0], sum = 0;
    for (int k = 1; k < c; k++)
      if (xr[k] > mx) mx = xr[k];
    for (int k = 0; k < c; k++) sum += exp(xr[k] - mx);
    for (int k = 0; k < c; k++) y[(size_t)r * c + k] = (float)(exp(xr[k] - mx) / sum);
  }
}

rv_status rv_rcnn_get_bboxes(rv_detections *det, const rv_bbox_head *bh, const float *rois,
                             const double *logits, const float *reg, int n, int cap,
                             const rv_img_meta *meta, const rv_rcnn_cfg *cfg, rv_arena *arena,
                             rv_ctx *ctx) {
  const int K = bh->num_classes, K1 = K + 1, ncls = bh->class_agnostic ? 1 : K;
  det->n = 0;
  if (n <= 0) return RV_OK;
  rv_arena_mark mk = rv_arena_get_mark(arena);
  float *scores = rv_arena_floats(arena, (size_t)n * K1);
  float *boxes = rv_arena_floats(arena, (size_t)n * ncls * 4);
  if (!scores || !boxes) {
    rv_arena_release(arena, mk);
    return rv_error(ctx, RV_ERR_NOMEM, "roi head: out of memory for %d rois", n);
  }
  softmax_rows(scores, logits, n, K1);
  /* rois: [batch, x1..y2] rows of 5 */
  rv_delta2bbox_f32(boxes, rois + 1, 5, reg, 4 * ncls, n, ncls, &bh->coder, meta->img_h,
                    meta->img_w);
  /* rescale before NMS: divide by the float32 scale factor */
  for (size_t i = 0; i < (size_t)n * ncls; i++)
    for (int k = 0; k < 4; k++)
      boxes[i * 4 + k] = (float)((double)boxes[i * 4 + k] / (double)meta->scale_factor[k]);
  int nd = rv_multiclass_nms(det->bboxes, det->scores, det->labels, NULL, boxes,
                             !bh->class_agnostic, scores, K1, n, K, cfg->score_thr, cfg->iou_thr,
                             cap, arena);
  rv_arena_release(arena, mk);
  if (nd < 0) return rv_error(ctx, RV_ERR_NOMEM, "roi head: out of memory in NMS");
  det->n = nd;
  return RV_OK;
}

/* mmdet's simple_test_bboxes (cascade: all stages): the stages' box heads on the proposals,
 * logits averaged, rois refined between stages; get_bboxes into det (capacity cap). The
 * stages' scratch is released on return. */
static rv_status simple_test_bboxes(rv_detections *det, const rv_roi_head *h,
                                    const rv_roi_feats *rf, const float *proposals, int n, int cap,
                                    const rv_img_meta *meta, const rv_rcnn_cfg *cfg,
                                    const rv_det_trace *trace, rv_arena *arena, rv_ctx *ctx) {
  const int K = h->num_classes, K1 = K + 1, S = h->num_stages;
  const int C = h->bbox[0].in_channels;
  rv_arena_mark mk = rv_arena_get_mark(arena);
  rv_status st = RV_OK;
  const int reg_w = h->bbox[0].class_agnostic ? 4 : 4 * K;
  float *rois = rv_arena_floats(arena, (size_t)n * 5);
  float *feat7 = rv_arena_floats(arena, (size_t)n * C * 49);
  float *cls = rv_arena_floats(arena, (size_t)n * K1);
  float *reg = rv_arena_floats(arena, (size_t)n * reg_w);
  double *cls_sum = rv_arena_alloc(arena, (size_t)n * K1 * sizeof(double));
  if (!rois || !feat7 || !cls || !reg || !cls_sum) {
    st = rv_error(ctx, RV_ERR_NOMEM, "roi head: out of memory for %d rois", n);
    goto done;
  }
  for (int r = 0; r < n; r++) {
    rois[r * 5] = 0.0f;
    memcpy(rois + (size_t)r * 5 + 1, proposals + (size_t)r * 4, 4 * sizeof(float));
  }
  memset(cls_sum, 0, (size_t)n * K1 * sizeof(double));
  char name[64];
  for (int s = 0; s < S; s++) {
    const rv_bbox_head *bh = &h->bbox[s];
    if ((st = rv_ctx_check(ctx)) != RV_OK) goto done; /* cancelled; the threads of the call */
    snprintf(name, sizeof name, "roi.stage%d.rois", s);
    trace2(trace, name, rois, n, 5);
    if ((st = rv_roi_extract(feat7, rf, roi_strides, rois, n, 7, arena, ctx)) != RV_OK)
      goto done;
    if ((st = rv_bbox_head_forward(cls, reg, bh, feat7, n, arena, ctx)) != RV_OK) goto done;
    if (S == 1) {
      /* StandardRoIHead.simple_test_bboxes "removes padding": rois whose y2 is exactly 0
       * get all-zero logits and deltas (a real proposal clipped to y2 = 0 included) */
      for (int r = 0; r < n; r++)
        if (rois[(size_t)r * 5 + 4] == 0.0f) {
          memset(cls + (size_t)r * K1, 0, (size_t)K1 * sizeof(float));
          memset(reg + (size_t)r * reg_w, 0, (size_t)reg_w * sizeof(float));
        }
    }
    snprintf(name, sizeof name, "roi.stage%d.cls_score", s);
    trace2(trace, name, cls, n, K1);
    snprintf(name, sizeof name, "roi.stage%d.bbox_pred", s);
    trace2(trace, name, reg, n, reg_w);
    for (size_t i = 0; i < (size_t)n * K1; i++) cls_sum[i] += cls[i];
    if (s < S - 1) {
      /* regress_by_class with label = argmax over the foreground logits (first max) */
      for (int r = 0; r < n; r++) {
        const float *c = cls + (size_t)r * K1;
        int best = 0;
        for (int k = 1; k < K; k++)
          if (c[k] > c[best]) best = k;
        const float *d = reg + (size_t)r * reg_w + (bh->class_agnostic ? 0 : best * 4);
        float nb[4];
        rv_delta2bbox_f32(nb, rois + (size_t)r * 5 + 1, 4, d, 4, 1, 1, &bh->coder, meta->img_h,
                          meta->img_w);
        memcpy(rois + (size_t)r * 5 + 1, nb, sizeof nb);
      }
    }
  }
  /* final: mean logits -> softmax; last stage's deltas on the last stage's rois */
  for (size_t i = 0; i < (size_t)n * K1; i++) cls_sum[i] /= (double)S;
  st = rv_rcnn_get_bboxes(det, &h->bbox[S - 1], rois, cls_sum, reg, n, cap, meta, cfg, arena,
                          ctx);
done:
  rv_arena_release(arena, mk);
  return st;
}

/* mmdet's simple_test_mask (cascade: masks averaged over the stages' sigmoid): det's boxes ->
 * det->masks at the original size (from the arena, kept); the scratch is released. */
static rv_status simple_test_mask(rv_detections *det, const rv_roi_head *h, const rv_roi_feats *rf,
                                  const rv_img_meta *meta, const rv_rcnn_cfg *cfg,
                                  const rv_det_trace *trace, rv_arena *arena, rv_ctx *ctx) {
  const int K = h->num_classes, S = h->num_stages;
  const int C = h->bbox[0].in_channels;
  const int nd = det->n, M = 28 * 28;
  /* all K channels only when someone looks at them */
  const int full = trace && trace->fn && !trace->times_only;
  det->mask_h = meta->ori_h;
  det->mask_w = meta->ori_w;
  det->masks = rv_arena_alloc(arena, (size_t)nd * meta->ori_h * meta->ori_w);
  if (!det->masks) return rv_error(ctx, RV_ERR_NOMEM, "roi head: out of memory for masks");
  rv_arena_mark mk = rv_arena_get_mark(arena);
  rv_status st = RV_OK;
  char name[64];
  float *mrois = rv_arena_floats(arena, (size_t)nd * 5);
  float *feat14 = rv_arena_floats(arena, (size_t)nd * C * 196);
  int kc = full ? K : 1;
  float *logit = rv_arena_floats(arena, (size_t)nd * kc * M);
  float *prob = rv_arena_floats(arena, (size_t)nd * kc * M);
  float *pbox = rv_arena_floats(arena, (size_t)nd * 4);
  float *pbox_r = rv_arena_floats(arena, (size_t)nd * 4);
  if (!mrois || !feat14 || !logit || !prob || !pbox || !pbox_r) {
    st = rv_error(ctx, RV_ERR_NOMEM, "roi head: out of memory for %d masks", nd);
    goto done;
  }
  for (int r = 0; r < nd; r++) {
    mrois[r * 5] = 0.0f;
    for (int k = 0; k < 4; k++)
      mrois[r * 5 + 1 + k] = det->bboxes[r * 4 + k] * meta->scale_factor[k];
    for (int k = 0; k < 4; k++)
      pbox[r * 4 + k] = (float)((double)mrois[r * 5 + 1 + k] / (double)meta->scale_factor[k]);
  }
  trace2(trace, "mask.rois", mrois, nd, 5);
  if ((st = rv_roi_extract(feat14, rf, roi_strides, mrois, nd, 14, arena, ctx)) != RV_OK)
    goto done;
  memset(prob, 0, (size_t)nd * kc * M * sizeof(float));
  for (int s = 0; s < h->num_mask_heads; s++) {
    if ((st = rv_mask_head_forward(logit, &h->mask[s], feat14, nd, full ? NULL : det->labels,
                                   arena, ctx)) != RV_OK)
      goto done;
    snprintf(name, sizeof name, "mask.stage%d.mask_pred", s);
    trace4(trace, name, logit, nd, kc, 28, 28);
    for (size_t i = 0; i < (size_t)nd * kc * M; i++)
      prob[i] += (float)(1.0 / (1.0 + exp(-(double)logit[i])));
  }
  if (h->num_mask_heads > 1)
    for (size_t i = 0; i < (size_t)nd * kc * M; i++) prob[i] /= (float)h->num_mask_heads;
  trace4(trace, "mask.merged_probs", prob, nd, kc, 28, 28);
  for (int r = 0; r < nd; r++) memcpy(pbox_r + (size_t)r * 4, mrois + (size_t)r * 5 + 1, 16);
  trace2(trace, "mask.paste_bboxes", pbox_r, nd, 4);
  const size_t plane = (size_t)meta->ori_h * meta->ori_w;
#pragma omp parallel for schedule(dynamic, 1)
  for (int r = 0; r < nd; r++) {
    const float *p = prob + ((size_t)r * kc + (full ? det->labels[r] : 0)) * M;
    if (S == 1 && mrois[(size_t)r * 5 + 4] == 0.0f) {
      /* simple_test_mask drops rois with y2 == 0 (its padding rule): no mask */
      memset(det->masks + (size_t)r * plane, 0, plane);
      continue;
    }
    rv_paste_mask_u8(det->masks + (size_t)r * plane, meta->ori_h, meta->ori_w, p, 28, 28,
                     pbox + (size_t)r * 4, cfg->mask_thr);
  }
done:
  rv_arena_release(arena, mk);
  return st;
}

rv_status rv_roi_head_simple_test(rv_detections *det, const rv_roi_head *h,
                                  const rv_tensor *feats, const float *proposals, int n,
                                  const rv_img_meta *meta, const rv_rcnn_cfg *cfg,
                                  const rv_det_trace *trace, rv_arena *arena, rv_ctx *ctx) {
  memset(det, 0, sizeof *det);
  const int K = h->num_classes;
  int cap = cfg->max_per_img > 0 ? cfg->max_per_img : n * K;
  if (cap < 1) cap = 1;
  det->bboxes = rv_arena_floats(arena, (size_t)cap * 4);
  det->scores = rv_arena_floats(arena, (size_t)cap);
  det->labels = rv_arena_alloc(arena, (size_t)cap * sizeof(int));
  if (!det->bboxes || !det->scores || !det->labels)
    return rv_error(ctx, RV_ERR_NOMEM, "roi head: out of memory");
  if (n <= 0) return RV_OK;
  /* channels-last copies of the levels for every RoIAlign below (checked against the box
   * head's input channels); they stay in the arena with the detections (the box stages'
   * scratch is released before the masks are made) */
  rv_roi_feats rf;
  RV_TRY(rv_roi_feats_prepare(&rf, feats, 4, h->bbox[0].in_channels, arena, ctx));
  RV_TRY(simple_test_bboxes(det, h, &rf, proposals, n, cap, meta, cfg, trace, arena, ctx));
  trace2(trace, "det.bboxes", det->bboxes, det->n, 4);
  trace2(trace, "det.scores", det->scores, det->n, 1);
  if (!h->num_mask_heads || det->n == 0) return RV_OK;
  RV_TRY(rv_ctx_check(ctx));
  return simple_test_mask(det, h, &rf, meta, cfg, trace, arena, ctx);
}

rv_status rv_roi_head_set_bf16(rv_roi_head *h, int on, rv_ctx *ctx) {
  /* the shared convs and fcs of the box heads, the mask heads' convs (and with them, on the
   * labelled AVX-512 path of heads/mask_head.c, the mask upsample's GEMM); fc_cls, fc_reg and
   * the mask logits' dot products stay float32 */
  rv_status st = RV_OK;
  for (int s = 0; s < 4 && st == RV_OK; s++) {
    st = rv_convmods_set_bf16_rois(h->bbox[s].convs, 8, on, ctx);
    if (st == RV_OK) st = rv_convmods_set_bf16(h->bbox[s].fcs, 4, on, ctx);
    if (st == RV_OK) st = rv_convmods_set_bf16_rois(h->mask[s].convs, 8, on, ctx);
  }
  if (st != RV_OK && on) rv_roi_head_set_bf16(h, 0, ctx);
  return st;
}
