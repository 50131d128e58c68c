/* Detector assembly: FPN + RPN + cascade/standard RoI heads, or FPN + RetinaNet head. */
#include "models/detector.h"

#include "necks/fpn.h"

#include <omp.h>

#include <stdio.h>
#include <string.h>

struct rv_detector {
  rv_detector_config cfg;
  const rv_family_ops *ops;
  rv_fpn *fpn;
  void *head;        /* the family's head state (ops->load, ops->free) */
  int head_channels; /* the channels the head takes (the FPN's must match) */
  int num_classes;
};

static void trace_tensor(const rv_det_trace *t, const char *name, rv_tensor x) {
  if (!t || !t->fn) return;
  int shape[4] = {x.n, x.c, x.h, x.w};
  t->fn(t->user, name, x.data, shape, 4);
}

/* ---- RetinaNet: one dense head on 5 levels (strides 8..128) -------------------------- */

static rv_fpn_config retina_fpn(void) { return rv_fpn_retinanet_config(); }

static rv_status retina_load(rv_detector *d, rv_params *p, rv_ctx *ctx) {
  rv_retina_head *h = rv_calloc(1, sizeof *h);
  if (!h) return rv_error(ctx, RV_ERR_NOMEM, "detector: out of memory");
  d->head = h;
  RV_TRY(rv_retina_head_load(h, p, "bbox_head", ctx));
  d->num_classes = h->num_classes;
  d->head_channels = h->cls.cin;
  return RV_OK;
}

static void retina_free(rv_detector *d) {
  if (d->head) rv_retina_head_free(d->head);
  rv_free(d->head);
}

static int no_masks(const rv_detector *d) {
  (void)d;
  return 0;
}

static rv_status retina_forward(const rv_detector *d, rv_detections *out, const rv_tensor *p,
                                const rv_img_meta *meta, const rv_det_trace *trace,
                                rv_arena *arena, rv_ctx *ctx) {
  const rv_retina_head *h = d->head;
  static const int strides[5] = {8, 16, 32, 64, 128};
  const int L = 5;
  rv_tensor cls[5], reg[5];
  char name[64];
  for (int l = 0; l < L; l++) {
    RV_TRY(rv_ctx_check(ctx));
    RV_TRY(rv_retina_forward_level(&cls[l], &reg[l], h, p[l], arena, ctx));
    snprintf(name, sizeof name, "retina.cls_score.%d", l);
    trace_tensor(trace, name, cls[l]);
    snprintf(name, sizeof name, "retina.bbox_pred.%d", l);
    trace_tensor(trace, name, reg[l]);
    snprintf(name, sizeof name, "cls_score.%d", l); /* mmdet's own names */
    trace_tensor(trace, name, cls[l]);
    snprintf(name, sizeof name, "bbox_pred.%d", l);
    trace_tensor(trace, name, reg[l]);
  }
  RV_TRY(rv_ctx_check(ctx));
  RV_TRY(rv_retina_get_bboxes(out, h, cls, reg, strides, L, meta, &d->cfg.retina, arena, ctx));
  if (trace && trace->fn) {
    int s2[2] = {out->n, 4};
    trace->fn(trace->user, "det.bboxes", out->bboxes, s2, 2);
    s2[1] = 1;
    trace->fn(trace->user, "det.scores", out->scores, s2, 2);
  }
  return RV_OK;
}

static const rv_family_ops rv_family_ops_RETINANET = {0, 1, retina_fpn, retina_load, retina_free,
                                               retina_forward, no_masks};

/* ---- two-stage: RPN + RoI heads (Mask R-CNN: 1 stage, Cascade Mask R-CNN: 3) --------- */

typedef struct {
  rv_rpn_head rpn;
  rv_roi_head roi;
} two_stage;

static rv_fpn_config two_stage_fpn(void) {
  rv_fpn_config fc = rv_fpn_default_config();
  fc.num_outs = 5;
  return fc;
}

static rv_status two_stage_load(rv_detector *d, rv_params *p, int stages, rv_ctx *ctx) {
  two_stage *h = rv_calloc(1, sizeof *h);
  if (!h) return rv_error(ctx, RV_ERR_NOMEM, "detector: out of memory");
  d->head = h;
  RV_TRY(rv_rpn_head_load(&h->rpn, p, "rpn_head", ctx));
  RV_TRY(rv_roi_head_load(&h->roi, p, "roi_head", stages, (const double(*)[4])d->cfg.rcnn_stds, ctx));
  if (!d->cfg.with_masks) {
    for (int i = 0; i < 4; i++) rv_mask_head_free(&h->roi.mask[i]);
    h->roi.num_mask_heads = 0;
  }
  d->num_classes = h->roi.num_classes;
  d->head_channels = h->rpn.conv.cin;
  if (h->roi.bbox[0].in_channels != h->rpn.conv.cin)
    return rv_error(ctx, RV_ERR_MODEL, "%s: the RPN takes %d channels, the RoI head %d",
                    rv_params_path(p), h->rpn.conv.cin, h->roi.bbox[0].in_channels);
  return RV_OK;
}

static rv_status cascade_load(rv_detector *d, rv_params *p, rv_ctx *ctx) {
  return two_stage_load(d, p, 3, ctx);
}

static rv_status mask_rcnn_load(rv_detector *d, rv_params *p, rv_ctx *ctx) {
  return two_stage_load(d, p, 1, ctx);
}

static void two_stage_free(rv_detector *d) {
  two_stage *h = d->head;
  if (h) {
    rv_rpn_head_free(&h->rpn);
    rv_roi_head_free(&h->roi);
  }
  rv_free(h);
}

static int two_stage_masks(const rv_detector *d) {
  return ((const two_stage *)d->head)->roi.num_mask_heads > 0;
}

static rv_status two_stage_forward(const rv_detector *d, rv_detections *out, const rv_tensor *p,
                                   const rv_img_meta *meta, const rv_det_trace *trace,
                                   rv_arena *arena, rv_ctx *ctx) {
  const two_stage *h = d->head;
  static const int strides[5] = {4, 8, 16, 32, 64};
  const int L = 5;
  rv_tensor cls[5], reg[5];
  char name[64];
  for (int l = 0; l < L; l++) {
    RV_TRY(rv_ctx_check(ctx));
    RV_TRY(rv_rpn_forward_level(&cls[l], &reg[l], &h->rpn, p[l], arena, ctx));
    snprintf(name, sizeof name, "rpn.cls_score.%d", l);
    trace_tensor(trace, name, cls[l]);
    snprintf(name, sizeof name, "rpn.bbox_pred.%d", l);
    trace_tensor(trace, name, reg[l]);
  }
  float *props = NULL, *pscores = NULL;
  int np = 0;
  RV_TRY(rv_rpn_get_proposals(&props, &pscores, &np, &h->rpn, cls, reg, strides, L, meta,
                              &d->cfg.rpn, arena, ctx));
  if (trace && trace->fn) {
    int s2[2] = {np, 4};
    trace->fn(trace->user, "rpn.proposals", props, s2, 2);
    s2[1] = 1;
    trace->fn(trace->user, "rpn.proposal_scores", pscores, s2, 2);
  }
  RV_TRY(rv_ctx_check(ctx));
  return rv_roi_head_simple_test(out, &h->roi, p, props, np, meta, &d->cfg.rcnn, trace, arena,
                                 ctx);
}

static const rv_family_ops rv_family_ops_CASCADE_MASK_RCNN = {1, 0, two_stage_fpn, cascade_load, two_stage_free,
                                                       two_stage_forward, two_stage_masks};
static const rv_family_ops rv_family_ops_MASK_RCNN = {1, 0, two_stage_fpn, mask_rcnn_load, two_stage_free,
                                               two_stage_forward, two_stage_masks};

/* ---- the detector: FPN + the family's head -------------------------------------------- */

/* the table's det_ops column (models/family.h), indexed by family id */
static const rv_family_ops *const FAMILY_OPS[RV_FAMILY_COUNT] = {
    RV_MODEL_FAMILIES(RV_FAMILY_DET_OPS)};

const rv_family_ops *rv_det_arch_ops(rv_det_arch a) {
  const rv_family *f = rv_family_get((int)a);
  return f && f->task == RV_TASK_DETECT ? FAMILY_OPS[f->id] : NULL;
}

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
  if (d->ops) d->ops->free(d);
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
  const rv_family_ops *ops = rv_det_arch_ops(cfg->arch);
  if (!ops) return rv_error(ctx, RV_ERR_ARG, "detector: %d is not a detection family", (int)cfg->arch);
  rv_detector *d = rv_calloc(1, sizeof *d);
  if (!d) return rv_error(ctx, RV_ERR_NOMEM, "detector: out of memory");
  d->cfg = *cfg;
  d->ops = ops;
  rv_status st;
  rv_fpn_config fc = ops->fpn_config();
  if ((st = rv_fpn_load(&d->fpn, &fc, p, "neck.", ctx)) != RV_OK) goto fail;
  if ((st = ops->load(d, p, ctx)) != RV_OK) goto fail;
  const rv_fpn_config *rc = rv_fpn_config_of(d->fpn);
  if (rc->out_channels != d->head_channels) {
    st = rv_error(ctx, RV_ERR_MODEL, "%s: FPN gives %d channels, the head takes %d",
                  rv_weights_path(w), rc->out_channels, d->head_channels);
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
int rv_detector_has_masks(const rv_detector *d) { return d->ops->has_masks(d); }

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
  rv_ctx_apply_threads(ctx);
  rv_tensor p[5];
  /* The pyramid and head outputs stay in the arena until the caller resets it; the
   * detections are allocated after them. */
  RV_TRY(rv_ctx_check(ctx));
  RV_TRY(rv_fpn_forward(d->fpn, p, feats, 4, arena, ctx));
  char name[64];
  for (int l = 0; l < 5; l++) {
    snprintf(name, sizeof name, "neck.out.%d", l);
    trace_tensor(trace, name, p[l]);
  }
  return d->ops->forward(d, out, p, meta, trace, arena, ctx);
}

void rv_detections_class_order(int *order, const rv_detections *det) {
  int k = 0, maxl = -1;
  for (int i = 0; i < det->n; i++)
    if (det->labels[i] > maxl) maxl = det->labels[i];
  for (int c = 0; c <= maxl; c++)
    for (int i = 0; i < det->n; i++)
      if (det->labels[i] == c) order[k++] = i;
}

rv_status rv_detector_set_bf16(rv_detector *d, int on, rv_ctx *ctx) {
  rv_status st = d->fpn ? rv_fpn_set_bf16(d->fpn, on, ctx) : RV_OK;
  if (st == RV_OK && d->head && d->ops->two_stage) {
    two_stage *h = d->head;
    st = rv_rpn_head_set_bf16(&h->rpn, on, ctx);
    if (st == RV_OK) st = rv_roi_head_set_bf16(&h->roi, on, ctx);
  } else if (st == RV_OK && d->head) {
    st = rv_retina_head_set_bf16(d->head, on, ctx);
  }
  if (st != RV_OK && on) rv_detector_set_bf16(d, 0, ctx);
  return st;
}
