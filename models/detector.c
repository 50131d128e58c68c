/* Detector assembly: FPN + RPN + cascade/standard RoI heads, or FPN + RetinaNet head. */
#include "models/detector.h"

#include "necks/fpn.h"

#include <cjson/cJSON.h>
#include <omp.h>

#include <stdio.h>
#include <string.h>

struct rv_detector {
  rv_detector_config cfg;
  const rv_det_head_ops *ops;
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

static const cJSON *get(const cJSON *o, const char *key) {
  return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static int get_num(const cJSON *o, const char *key, double *v) {
  const cJSON *x = get(o, key);
  if (!cJSON_IsNumber(x)) return 0;
  *v = x->valuedouble;
  return 1;
}

/* nms=dict(iou_threshold=...) (mmdet >= 2.4) or nms_thr=... (older configs). */
static void get_nms_iou(const cJSON *o, float *iou) {
  double v;
  if (get_num(get(o, "nms"), "iou_threshold", &v) || get_num(o, "nms_thr", &v)) *iou = (float)v;
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

static rv_status retina_set_bf16(rv_detector *d, int on, rv_ctx *ctx) {
  return d->head ? rv_retina_head_set_bf16(d->head, on, ctx) : RV_OK;
}

static void retina_test_cfg(rv_detector_config *c, const cJSON *tc) {
  double v;
  if (get_num(tc, "nms_pre", &v)) c->retina.nms_pre = (int)v;
  if (get_num(tc, "score_thr", &v)) c->retina.score_thr = (float)v;
  if (get_num(tc, "max_per_img", &v)) c->retina.max_per_img = (int)v;
  get_nms_iou(tc, &c->retina.iou_thr);
}

static const rv_det_head_ops RETINANET_HEAD = {1, retina_fpn, retina_load, retina_free, retina_forward,
                                               no_masks, retina_set_bf16, retina_test_cfg};

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

static rv_status two_stage_set_bf16(rv_detector *d, int on, rv_ctx *ctx) {
  two_stage *h = d->head;
  if (!h) return RV_OK;
  rv_status st = rv_rpn_head_set_bf16(&h->rpn, on, ctx);
  if (st == RV_OK) st = rv_roi_head_set_bf16(&h->roi, on, ctx);
  if (st != RV_OK && on) {
    rv_rpn_head_set_bf16(&h->rpn, 0, ctx);
    rv_roi_head_set_bf16(&h->roi, 0, ctx);
  }
  return st;
}

static void two_stage_test_cfg(rv_detector_config *c, const cJSON *tc) {
  const cJSON *rpn = get(tc, "rpn"), *rcnn = get(tc, "rcnn");
  double v;
  if (get_num(rpn, "nms_pre", &v)) c->rpn.nms_pre = (int)v;
  if (get_num(rpn, "max_per_img", &v) || get_num(rpn, "max_num", &v)) c->rpn.max_per_img = (int)v;
  if (get_num(rpn, "min_bbox_size", &v)) c->rpn.min_bbox_size = (float)v;
  get_nms_iou(rpn, &c->rpn.iou_thr);
  if (get_num(rcnn, "score_thr", &v)) c->rcnn.score_thr = (float)v;
  if (get_num(rcnn, "max_per_img", &v)) c->rcnn.max_per_img = (int)v;
  if (get_num(rcnn, "mask_thr_binary", &v)) c->rcnn.mask_thr = (float)v;
  get_nms_iou(rcnn, &c->rcnn.iou_thr);
}

static const rv_det_head_ops CASCADE_MASK_RCNN_HEAD = {0, two_stage_fpn, cascade_load, two_stage_free,
                                                       two_stage_forward, two_stage_masks, two_stage_set_bf16,
                                                       two_stage_test_cfg};
static const rv_det_head_ops MASK_RCNN_HEAD = {0, two_stage_fpn, mask_rcnn_load, two_stage_free,
                                               two_stage_forward, two_stage_masks, two_stage_set_bf16,
                                               two_stage_test_cfg};

/* ---- the detector: FPN + the family's head -------------------------------------------- */

/* each detection family's head part, by family id (the rows of models/family.h whose ops
 * are rv_detector_family_ops) */
static const rv_det_head_ops *const HEADS[RV_FAMILY_COUNT] = {
    [RV_FAMILY_RETINANET] = &RETINANET_HEAD,
    [RV_FAMILY_CASCADE_MASK_RCNN] = &CASCADE_MASK_RCNN_HEAD,
    [RV_FAMILY_MASK_RCNN] = &MASK_RCNN_HEAD,
};

const rv_det_head_ops *rv_det_arch_ops(rv_det_arch a) {
  const rv_family *f = rv_family_get((int)a);
  return f && f->task == RV_TASK_DETECT ? HEADS[f->id] : NULL;
}

void rv_detector_config_from_meta(rv_detector_config *cfg, const cJSON *model, const cJSON *config) {
  const cJSON *tc = get(model, "test_cfg");
  if (!tc) tc = get(config, "test_cfg");
  const rv_det_head_ops *ops = rv_det_arch_ops(cfg->arch);
  if (tc && ops) ops->test_cfg(cfg, tc);
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
  const rv_det_head_ops *ops = rv_det_arch_ops(cfg->arch);
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
  if (st == RV_OK) st = d->ops->set_bf16(d, on, ctx);
  if (st != RV_OK && on) rv_detector_set_bf16(d, 0, ctx);
  return st;
}

/* ---- the family ops (models/family.h) of every detection family ------------------------ */

static rv_status family_load(void **head, rv_family_load *L, rv_params *p, rv_ctx *ctx) {
  rv_detector_config dc = rv_detector_default_config((rv_det_arch)L->family->id);
  rv_detector_config_from_meta(&dc, L->model, L->config);
  rv_detector *d = NULL;
  RV_TRY(rv_detector_load_params(&d, &dc, p, ctx));
  *head = d;
  L->num_classes = d->num_classes;
  L->has_masks = rv_detector_has_masks(d);
  L->pre = rv_preprocess_mmdet_params();
  L->detector = d;
  return RV_OK;
}

static rv_status family_forward(const void *head, const rv_family_run *r, rv_arena *a, rv_ctx *ctx) {
  const rv_detector *d = head;
  if (!r->det)
    return rv_error(ctx, RV_ERR_MODEL, "this checkpoint is a %s detector, not a segmentor: use 'ravlt detect'",
                    rv_det_arch_name(d->cfg.arch));
  rv_tensor feats[4];
  RV_TRY(r->features(r->features_user, feats, 4, r->img, a, ctx));
  return rv_detector_forward(d, r->det, feats, r->meta, r->trace, a, ctx);
}

static rv_status family_set_precision(void *head, rv_precision p, rv_ctx *ctx) {
  return rv_detector_set_bf16(head, p == RV_PRECISION_BF16, ctx);
}

static void family_free(void *head) { rv_detector_free(head); }

const rv_family_ops rv_detector_family_ops = {family_load, family_forward, family_set_precision, family_free};
