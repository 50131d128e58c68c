/* Detector assembly: FPN + RPN + cascade/standard RoI heads, or FPN + RetinaNet head. */
#include "models/detector.h"

#include "necks/fpn.h"

#include <omp.h>

#include <stdio.h>
#include <string.h>

struct rv_detector {
  rv_detector_config cfg;
  rv_fpn *fpn;
  rv_rpn_head rpn;
  rv_roi_head roi;
  rv_retina_head retina;
  int num_classes;
};

const char *rv_det_arch_name(rv_det_arch a) {
  const rv_family *f = rv_family_get((int)a);
  return f && f->task == RV_TASK_DETECT ? f->arch : "unknown";
}

int rv_det_arch_parse(const char *s, rv_det_arch *out) {
  const rv_family *f = rv_family_by_arch(s);
  if (!f || f->task != RV_TASK_DETECT) return -1;
  *out = (rv_det_arch)f->id;
  return 0;
}

rv_detector_config rv_detector_default_config(rv_det_arch arch) {
  rv_detector_config c;
  memset(&c, 0, sizeof c);
  c.arch = arch;
  c.rpn = rv_rpn_cfg_default();
  c.rcnn = rv_rcnn_cfg_default();
  c.retina = rv_retina_cfg_default();
  c.with_masks = 1;
  static const double stds[3][4] = {
      {0.1, 0.1, 0.2, 0.2}, {0.05, 0.05, 0.1, 0.1}, {0.033, 0.033, 0.067, 0.067}};
  memcpy(c.rcnn_stds, stds, sizeof stds);
  return c;
}

rv_status rv_detector_guess_arch(rv_det_arch *arch, const rv_weights *w, rv_ctx *ctx) {
  const rv_family *f = rv_family_sniff(w, RV_TASK_DETECT);
  if (!f)
    return rv_error(ctx, RV_ERR_MODEL, "%s: not a detector checkpoint (no roi_head.bbox_head "
                    "or bbox_head.retina_cls tensors)", rv_weights_path(w));
  *arch = (rv_det_arch)f->id;
  return RV_OK;
}

void rv_detector_free(rv_detector *d) {
  if (!d) return;
  rv_fpn_free(d->fpn);
  rv_rpn_head_free(&d->rpn);
  rv_roi_head_free(&d->roi);
  rv_retina_head_free(&d->retina);
  rv_free(d);
}

rv_status rv_detector_load(rv_detector **out, const rv_detector_config *cfg,
                           const rv_weights *w, rv_ctx *ctx) {
  rv_params p = rv_params_view(w);
  return rv_detector_load_params(out, cfg, &p, ctx);
}

rv_status rv_detector_load_params(rv_detector **out, const rv_detector_config *cfg,
                                  rv_params *p, rv_ctx *ctx) {
  *out = NULL;
  const rv_weights *w = p->w;
  rv_det_arch found = cfg->arch;
  if (rv_detector_guess_arch(&found, w, NULL) == RV_OK && found != cfg->arch)
    return rv_error(ctx, RV_ERR_MODEL, "%s: the checkpoint is a %s, not a %s", rv_weights_path(w),
                    rv_det_arch_name(found), rv_det_arch_name(cfg->arch));
  rv_detector *d = rv_calloc(1, sizeof *d);
  if (!d) return rv_error(ctx, RV_ERR_NOMEM, "detector: out of memory");
  d->cfg = *cfg;
  rv_status st;
  rv_fpn_config fc;
  if (cfg->arch == RV_DET_RETINANET) {
    fc = rv_fpn_retinanet_config();
  } else {
    fc = rv_fpn_default_config();
    fc.num_outs = 5;
  }
  if ((st = rv_fpn_load(&d->fpn, &fc, p, "neck.", ctx)) != RV_OK) goto fail;
  if (cfg->arch == RV_DET_RETINANET) {
    if ((st = rv_retina_head_load(&d->retina, p, "bbox_head", ctx)) != RV_OK) goto fail;
    d->num_classes = d->retina.num_classes;
  } else {
    if ((st = rv_rpn_head_load(&d->rpn, p, "rpn_head", ctx)) != RV_OK) goto fail;
    int stages = cfg->arch == RV_DET_CASCADE_MASK_RCNN ? 3 : 1;
    if ((st = rv_roi_head_load(&d->roi, p, "roi_head", stages,
                               (const double(*)[4])cfg->rcnn_stds, ctx)) != RV_OK)
      goto fail;
    if (!cfg->with_masks) {
      for (int i = 0; i < 4; i++) rv_mask_head_free(&d->roi.mask[i]);
      d->roi.num_mask_heads = 0;
    }
    d->num_classes = d->roi.num_classes;
  }
  const rv_fpn_config *rc = rv_fpn_config_of(d->fpn);
  int head_c = cfg->arch == RV_DET_RETINANET ? d->retina.cls.cin : d->rpn.conv.cin;
  if (rc->out_channels != head_c) {
    st = rv_error(ctx, RV_ERR_MODEL, "%s: FPN gives %d channels, the head takes %d",
                  rv_weights_path(w), rc->out_channels, head_c);
    goto fail;
  }
  if (cfg->arch != RV_DET_RETINANET && d->roi.bbox[0].in_channels != head_c) {
    st = rv_error(ctx, RV_ERR_MODEL, "%s: FPN gives %d channels, the RoI head takes %d",
                  rv_weights_path(w), rc->out_channels, d->roi.bbox[0].in_channels);
    goto fail;
  }
  *out = d;
  return RV_OK;
fail:
  rv_detector_free(d);
  return st;
}

const rv_detector_config *rv_detector_config_of(const rv_detector *d) { return &d->cfg; }
int rv_detector_num_classes(const rv_detector *d) { return d->num_classes; }
int rv_detector_has_masks(const rv_detector *d) {
  return d->cfg.arch != RV_DET_RETINANET && d->roi.num_mask_heads > 0;
}

static void trace_tensor(const rv_det_trace *t, const char *name, rv_tensor x) {
  if (!t || !t->fn) return;
  int shape[4] = {x.n, x.c, x.h, x.w};
  t->fn(t->user, name, x.data, shape, 4);
}

rv_status rv_detector_forward(const rv_detector *d, rv_detections *out, const rv_tensor *feats,
                              const rv_img_meta *meta, const rv_det_trace *trace,
                              rv_arena *arena, rv_ctx *ctx) {
  memset(out, 0, sizeof *out);
  if (meta->img_h <= 0 || meta->img_w <= 0 || meta->ori_h <= 0 || meta->ori_w <= 0)
    return rv_error(ctx, RV_ERR_ARG, "detector: invalid image meta (img %dx%d, ori %dx%d)",
                    meta->img_w, meta->img_h, meta->ori_w, meta->ori_h);
  for (int k = 0; k < 4; k++)
    if (!(meta->scale_factor[k] > 0))
      return rv_error(ctx, RV_ERR_ARG, "detector: invalid scale factor %g", meta->scale_factor[k]);
  int threads = rv_ctx_threads(ctx);
  if (threads > 0) omp_set_num_threads(threads);
  const int L = 5;
  rv_tensor p[5], cls[5], reg[5];
  /* The pyramid and head outputs stay in the arena until the caller resets it; the
   * detections are allocated after them. */
  RV_TRY(rv_fpn_forward(d->fpn, p, feats, 4, arena, ctx));
  char name[64];
  for (int l = 0; l < L; l++) {
    snprintf(name, sizeof name, "neck.out.%d", l);
    trace_tensor(trace, name, p[l]);
  }
  if (d->cfg.arch == RV_DET_RETINANET) {
    static const int strides[5] = {8, 16, 32, 64, 128};
    for (int l = 0; l < L; l++) {
      RV_TRY(rv_retina_forward_level(&cls[l], &reg[l], &d->retina, p[l], arena, ctx));
      snprintf(name, sizeof name, "retina.cls_score.%d", l);
      trace_tensor(trace, name, cls[l]);
      snprintf(name, sizeof name, "retina.bbox_pred.%d", l);
      trace_tensor(trace, name, reg[l]);
      snprintf(name, sizeof name, "cls_score.%d", l); /* mmdet's own names */
      trace_tensor(trace, name, cls[l]);
      snprintf(name, sizeof name, "bbox_pred.%d", l);
      trace_tensor(trace, name, reg[l]);
    }
    RV_TRY(rv_retina_get_bboxes(out, &d->retina, cls, reg, strides, L, meta, &d->cfg.retina,
                                arena, ctx));
    if (trace && trace->fn) {
      int s2[2] = {out->n, 4};
      trace->fn(trace->user, "det.bboxes", out->bboxes, s2, 2);
      s2[1] = 1;
      trace->fn(trace->user, "det.scores", out->scores, s2, 2);
    }
    return RV_OK;
  }
  static const int strides[5] = {4, 8, 16, 32, 64};
  for (int l = 0; l < L; l++) {
    RV_TRY(rv_rpn_forward_level(&cls[l], &reg[l], &d->rpn, p[l], arena, ctx));
    snprintf(name, sizeof name, "rpn.cls_score.%d", l);
    trace_tensor(trace, name, cls[l]);
    snprintf(name, sizeof name, "rpn.bbox_pred.%d", l);
    trace_tensor(trace, name, reg[l]);
  }
  float *props = NULL, *pscores = NULL;
  int np = 0;
  RV_TRY(rv_rpn_get_proposals(&props, &pscores, &np, &d->rpn, cls, reg, strides, L, meta,
                              &d->cfg.rpn, arena, ctx));
  if (trace && trace->fn) {
    int s2[2] = {np, 4};
    trace->fn(trace->user, "rpn.proposals", props, s2, 2);
    s2[1] = 1;
    trace->fn(trace->user, "rpn.proposal_scores", pscores, s2, 2);
  }
  return rv_roi_head_simple_test(out, &d->roi, p, props, np, meta, &d->cfg.rcnn, trace, arena,
                                 ctx);
}

void rv_detections_class_order(int *order, const rv_detections *det) {
  int k = 0, maxl = -1;
  for (int i = 0; i < det->n; i++)
    if (det->labels[i] > maxl) maxl = det->labels[i];
  for (int c = 0; c <= maxl; c++)
    for (int i = 0; i < det->n; i++)
      if (det->labels[i] == c) order[k++] = i;
}
