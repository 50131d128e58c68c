/* check-fixture for the detection head fixtures (kinds cascade_mask_rcnn, mask_rcnn,
 * retinanet): runs FPN + heads on the stored backbone features feat.0..3 and compares every
 * stored intermediate (neck.out.*, rpn.*, roi.stageS.*, mask.*) and the final detections.
 *
 * Rules: tensors within 1e-4 of scale, except cascade stage 1-2 logits and deltas (2e-4:
 * refined from float32 proposals; the official code run in float32 lands 7.6e-5 away on
 * stage 2) and mask logits / merged probabilities (1e-3: they sit on the final boxes);
 * trimmed references compare their first rows. Detections: same count, labels and order,
 * boxes within 1e-2 px, scores within 1e-5 (1e-4 for the cascade, whose averaged logits
 * compound the float32 noise of three stages). Masks (first K stored): at most 0.1% of their
 * pixels differ. Near ties: rows whose reference scores are within the score tolerance of
 * each other (proposals: 1e-4; detections: the tolerance above) may come in another order
 * when each computed row matches its reference row (label, box, score), as float32 cannot
 * order them; the rows of every proposal- or detection-indexed tensor (rpn.proposals,
 * roi.stageS.*, mask.*, det.masks) are then compared in the matched order, and the number
 * of rows so matched is printed. */
#include "apps/check_fixture.h"
#include "eval/compare.h"
#include "models/detector.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensors whose rows are proposals (rpn.proposals, rpn.proposal_scores, roi.stageS.*) or
 * detections (mask.*) are kept and compared after the run, with their rows in the order
 * matched to the reference's (near ties, below). */
#define MAX_SAVED 48
typedef struct {
  char name[48];
  float *data;
  size_t n, rows;
} saved_t;

typedef struct {
  rv_check_state *s;
  saved_t sv[MAX_SAVED];
  int nsv;
} trace_ctx;

static double tensor_tol(const char *name) {
  if (!strncmp(name, "mask.stage", 10) || !strcmp(name, "mask.merged_probs")) return 1e-3;
  if ((!strncmp(name, "roi.stage1.", 11) || !strncmp(name, "roi.stage2.", 11)) &&
      !strstr(name, ".rois"))
    return 2e-4;
  return 1e-4;
}

static int row_indexed(const char *name) {
  return !strncmp(name, "rpn.proposal", 12) || !strncmp(name, "roi.stage", 9) ||
         !strncmp(name, "mask.", 5);
}

static void on_trace(void *user, const char *name, const float *data, const int *shape,
                     int ndim) {
  trace_ctx *t = user;
  if (!strncmp(name, "det.", 4)) return; /* final detections are compared after the run */
  const rv_wtensor *w = rv_weights_find(t->s->io, name);
  if (!w) return;
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  size_t rn = rv_wtensor_numel(w);
  size_t row = shape[0] > 0 ? n / (size_t)shape[0] : 0;
  int trimmed_ok = !strncmp(name, "mask.", 5) && w->ndim > 0 && (int64_t)shape[0] >= w->shape[0] &&
                   w->shape[0] > 0 && rn / (size_t)w->shape[0] == row;
  if (rn != n && !trimmed_ok) {
    rv_check_report(t->s, name, 0, "shape: %zu values computed, reference has %zu", n, rn);
    return;
  }
  if (row_indexed(name) && ndim > 0 && t->nsv < MAX_SAVED && strlen(name) < sizeof t->sv[0].name) {
    saved_t *sv = &t->sv[t->nsv];
    sv->data = malloc(sizeof(float) * (n ? n : 1));
    if (sv->data) {
      memcpy(sv->data, data, sizeof(float) * n);
      snprintf(sv->name, sizeof sv->name, "%s", name);
      sv->n = n;
      sv->rows = (size_t)shape[0];
      t->nsv++;
      return;
    }
  }
  rv_check_tensor(t->s, name, data, rn, name, tensor_tol(name));
}

static saved_t *find_saved(trace_ctx *t, const char *name) {
  for (int i = 0; i < t->nsv; i++)
    if (!strcmp(t->sv[i].name, name)) return &t->sv[i];
  return NULL;
}

/* Near ties: float32 cannot order two rows whose scores differ by less than its own error,
 * so a row i of the reference may be matched to a computed row order[j] a few places away
 * (WINDOW) when (a) the reference scores of rows i and j are within tie_tol of each other,
 * and (b) the computed row agrees with reference row i (label, box within box_tol, score
 * within tie_tol): eval/compare.h's matcher. order[] comes in as the base order (identity,
 * or class order) and leaves with the matched one (an unmatched row keeps its base place);
 * returns the number of rows matched away from their base place. */
static int match_near_ties(int *order, int n, const float *rbox, int rstride, const float *rscore,
                           const float *rlabel, const float *box, const float *score,
                           const int *label, double box_tol, double tie_tol) {
  enum { WINDOW = 16 };
  int *base = malloc(sizeof(int) * (size_t)(n + 1)), *match = malloc(sizeof(int) * (size_t)(n + 1));
  int *match_got = malloc(sizeof(int) * (size_t)(n + 1));
  int moved = 0;
  if (base && match && match_got) {
    memcpy(base, order, sizeof(int) * (size_t)n);
    const rv_det_list ref = {n, rbox, rstride, rscore, 1, NULL, rlabel, NULL};
    const rv_det_list got = {n, box, 4, score, 1, label, NULL, base};
    const rv_det_match_opts o = {tie_tol, box_tol, 0, 0, 1, 1, WINDOW, tie_tol};
    moved = rv_match_detections(match, match_got, &ref, &got, &o).moved;
    for (int i = 0; i < n; i++) order[i] = base[match[i] >= 0 ? match[i] : i];
  }
  free(base);
  free(match);
  free(match_got);
  return moved;
}

/* The saved tensors with the given name prefix, rows permuted: reference row i against the
 * computed row order[i] (the reference may hold only the first rows). */
static void check_saved(trace_ctx *t, const char *prefix, const int *order, int n_order) {
  for (int i = 0; i < t->nsv; i++) {
    saved_t *sv = &t->sv[i];
    if (strncmp(sv->name, prefix, strlen(prefix))) continue;
    const rv_wtensor *w = rv_weights_find(t->s->io, sv->name);
    size_t rn = w ? rv_wtensor_numel(w) : 0, row = sv->rows ? sv->n / sv->rows : 0;
    size_t rrows = row ? rn / row : 0;
    float *p = malloc(sizeof(float) * (rn ? rn : 1));
    if (!p) continue;
    for (size_t r = 0; r < rrows; r++) {
      size_t src = order && (int)r < n_order && (size_t)order[r] < sv->rows ? (size_t)order[r] : r;
      memcpy(p + r * row, sv->data + src * row, sizeof(float) * row);
    }
    rv_check_tensor(t->s, sv->name, p, rn, sv->name, tensor_tol(sv->name));
    free(p);
  }
}

static int meta_from_json(rv_img_meta *m, cJSON *j) {
  cJSON *o = cJSON_GetObjectItem(j, "ori_shape"), *i = cJSON_GetObjectItem(j, "img_shape"),
        *p = cJSON_GetObjectItem(j, "pad_shape"), *s = cJSON_GetObjectItem(j, "scale_factor");
  if (!cJSON_IsArray(o) || !cJSON_IsArray(i) || !cJSON_IsArray(s) || cJSON_GetArraySize(o) < 2 ||
      cJSON_GetArraySize(i) < 2 || cJSON_GetArraySize(s) < 4)
    return -1;
  m->ori_h = cJSON_GetArrayItem(o, 0)->valueint;
  m->ori_w = cJSON_GetArrayItem(o, 1)->valueint;
  m->img_h = cJSON_GetArrayItem(i, 0)->valueint;
  m->img_w = cJSON_GetArrayItem(i, 1)->valueint;
  m->pad_h = cJSON_IsArray(p) ? cJSON_GetArrayItem(p, 0)->valueint : m->img_h;
  m->pad_w = cJSON_IsArray(p) ? cJSON_GetArrayItem(p, 1)->valueint : m->img_w;
  for (int k = 0; k < 4; k++) m->scale_factor[k] = (float)cJSON_GetArrayItem(s, k)->valuedouble;
  return 0;
}

/* test_cfg of config.json overrides the defaults where present */
static void cfg_from_json(rv_detector_config *c, cJSON *root) {
  cJSON *tc = cJSON_GetObjectItem(root, "test_cfg");
  if (!tc) return;
  cJSON *rpn = cJSON_GetObjectItem(tc, "rpn"), *rcnn = cJSON_GetObjectItem(tc, "rcnn");
  cJSON *x;
  if (rpn) {
    if ((x = cJSON_GetObjectItem(rpn, "nms_pre")) && cJSON_IsNumber(x)) c->rpn.nms_pre = x->valueint;
    if ((x = cJSON_GetObjectItem(rpn, "max_per_img")) && cJSON_IsNumber(x))
      c->rpn.max_per_img = x->valueint;
    if ((x = cJSON_GetObjectItem(rpn, "min_bbox_size")) && cJSON_IsNumber(x))
      c->rpn.min_bbox_size = (float)x->valuedouble;
    cJSON *nms = cJSON_GetObjectItem(rpn, "nms");
    if (nms && (x = cJSON_GetObjectItem(nms, "iou_threshold")) && cJSON_IsNumber(x))
      c->rpn.iou_thr = (float)x->valuedouble;
  }
  cJSON *r = rcnn ? rcnn : tc; /* RetinaNet: flat test_cfg */
  if ((x = cJSON_GetObjectItem(r, "score_thr")) && cJSON_IsNumber(x)) {
    c->rcnn.score_thr = (float)x->valuedouble;
    c->retina.score_thr = (float)x->valuedouble;
  }
  if ((x = cJSON_GetObjectItem(r, "max_per_img")) && cJSON_IsNumber(x)) {
    c->rcnn.max_per_img = x->valueint;
    c->retina.max_per_img = x->valueint;
  }
  if ((x = cJSON_GetObjectItem(r, "mask_thr_binary")) && cJSON_IsNumber(x))
    c->rcnn.mask_thr = (float)x->valuedouble;
  if (!rcnn && (x = cJSON_GetObjectItem(r, "nms_pre")) && cJSON_IsNumber(x))
    c->retina.nms_pre = x->valueint;
  cJSON *nms = cJSON_GetObjectItem(r, "nms");
  if (nms && (x = cJSON_GetObjectItem(nms, "iou_threshold")) && cJSON_IsNumber(x)) {
    c->rcnn.iou_thr = (float)x->valuedouble;
    c->retina.iou_thr = (float)x->valuedouble;
  }
}

int rv_check_detector_head(rv_check_state *s) {
  rv_ctx *ctx = s->ctx;
  rv_det_arch arch;
  cJSON *kind = cJSON_GetObjectItem(s->config, "kind");
  if (!cJSON_IsString(kind) || rv_det_arch_parse(kind->valuestring, &arch) != 0) {
    if (rv_detector_guess_arch(&arch, s->weights, ctx) != RV_OK) return 1;
  }
  rv_img_meta meta;
  cJSON *jm = cJSON_GetObjectItem(s->config, "img_meta");
  if (!jm || meta_from_json(&meta, jm) != 0) {
    rv_error(ctx, RV_ERR_FORMAT, "%s/config.json: no usable img_meta", s->dir);
    return 1;
  }
  rv_detector_config cfg = rv_detector_default_config(arch);
  cfg_from_json(&cfg, s->config);
  rv_detector *det = NULL;
  if (rv_detector_load(&det, &cfg, s->weights, ctx) != RV_OK) return 1;

  rv_tensor feats[4];
  float *owned[4] = {0};
  float dummy[1] = {0};
  int rc = 0;
  for (int i = 0; i < 4; i++) {
    char name[16];
    snprintf(name, sizeof name, "feat.%d", i);
    const rv_wtensor *w = rv_weights_find(s->io, name);
    if (!w && i < rv_det_arch_ops(arch)->fpn_first_level) { /* RetinaNet's FPN starts at level 1 */
      feats[0] = (rv_tensor){dummy, 1, 1, 1, 1};
      continue;
    }
    if (!w || w->ndim != 4 || w->shape[0] != 1) {
      rv_error(ctx, RV_ERR_FORMAT, "%s/io.safetensors: %s missing or not 1xCxHxW", s->dir, name);
      rc = 1;
      goto out;
    }
    size_t n;
    owned[i] = rv_check_load_f32(s, name, &n);
    if (!owned[i]) {
      rv_error(ctx, RV_ERR_NOMEM, "out of memory loading %s", name);
      rc = 1;
      goto out;
    }
    feats[i] = (rv_tensor){owned[i], 1, (int)w->shape[1], (int)w->shape[2], (int)w->shape[3]};
  }
  rv_arena *arena = rv_arena_create(0);
  if (!arena) {
    rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    rc = 1;
    goto out;
  }
  trace_ctx tc;
  memset(&tc, 0, sizeof tc);
  tc.s = s;
  rv_det_trace trace = {on_trace, &tc, 0};
  rv_detections d;
  if (rv_detector_forward(det, &d, feats, &meta, &trace, arena, ctx) != RV_OK) {
    for (int i = 0; i < tc.nsv; i++) free(tc.sv[i].data);
    rv_arena_free(arena);
    rc = 1;
    goto out;
  }
  /* proposals: rows matched across near ties of their scores, then every proposal-row
   * tensor (rpn.proposals, rpn.proposal_scores, roi.stageS.*) compared in that order */
  int *po = NULL, npo = 0;
  {
    saved_t *sp = find_saved(&tc, "rpn.proposals"), *ss = find_saved(&tc, "rpn.proposal_scores");
    size_t n1 = 0, n2 = 0;
    float *rp = rv_check_load_f32(s, "rpn.proposals", &n1);
    float *rps = rv_check_load_f32(s, "rpn.proposal_scores", &n2);
    if (sp && ss && rp && rps && sp->n == sp->rows * 4 && n1 == sp->n && ss->n == sp->rows &&
        n2 == ss->n && (po = malloc(sizeof(int) * (sp->rows + 1)))) {
      npo = (int)sp->rows;
      double scale = 1.0;
      for (size_t k = 0; k < n1; k++) scale = fmax(scale, fabs((double)rp[k]));
      for (int i = 0; i < npo; i++) po[i] = i;
      int moved = match_near_ties(po, npo, rp, 4, rps, NULL, sp->data, ss->data, NULL,
                                  1e-4 * scale, 1e-4);
      if (moved)
        rv_check_report(s, "rpn.order", 1, "%d near-tied proposals matched in another order "
                        "(reference scores within 1e-4)", moved);
    }
    free(rp);
    free(rps);
  }
  check_saved(&tc, "rpn.", po, npo);
  check_saved(&tc, "roi.", po, npo);
  free(po);
  /* final detections: det.bboxes [n,4] (or [n,5] with the score), det.scores, det.labels;
   * NMS order, or mmdet's bbox2result class order when the reference is sorted by class;
   * near-tied scores may come in another order (match_near_ties), the mask tensors and
   * masks are then compared in the matched order */
  size_t nb = 0, ns = 0, nl = 0;
  float *rb = rv_check_load_f32(s, "det.bboxes", &nb), *rs = rv_check_load_f32(s, "det.scores", &ns),
        *rl = rv_check_load_f32(s, "det.labels", &nl);
  int masks_checked = 0;
  if (rb && rl && (rs || nb == nl * 5)) {
    int nref = (int)nl, bstride = nb == nl * 5 ? 5 : 4;
    int same = d.n == nref && nb == (size_t)nref * bstride && (!rs || ns == (size_t)nref);
    rv_check_report(s, "det.count", same, "%d detections, reference %d", d.n, nref);
    int *order = same ? malloc(sizeof(int) * (size_t)(nref + 1)) : NULL;
    float *rsc = same ? malloc(sizeof(float) * (size_t)(nref + 1)) : NULL;
    if (same && order && rsc) {
      int lab_ok = 1, class_order = 0;
      for (int i = 0; i < nref; i++) {
        order[i] = i;
        rsc[i] = rs ? rs[i] : rb[(size_t)i * 5 + 4];
      }
      for (int i = 0; i < nref; i++)
        if (d.labels[i] != (int)rl[i]) lab_ok = 0;
      if (!lab_ok) {
        int sorted = 1;
        for (int i = 1; i < nref; i++)
          if (rl[i] < rl[i - 1]) sorted = 0;
        if (sorted) {
          rv_detections_class_order(order, &d);
          class_order = 1;
        }
      }
      double stol = arch == RV_DET_CASCADE_MASK_RCNN ? 1e-4 : 1e-5;
      int moved = match_near_ties(order, nref, rb, bstride, rsc, rl, d.bboxes, d.scores,
                                  d.labels, 1e-2, stol);
      lab_ok = 1;
      double bmax = 0, smax = 0;
      for (int i = 0; i < nref; i++) {
        int j = order[i];
        if (d.labels[j] != (int)rl[i]) lab_ok = 0;
        for (int k = 0; k < 4; k++)
          bmax = fmax(bmax, fabs((double)d.bboxes[j * 4 + k] - rb[(size_t)i * bstride + k]));
        smax = fmax(smax, fabs((double)d.scores[j] - rsc[i]));
      }
      char how[96] = "";
      if (moved)
        snprintf(how, sizeof how, ", %d near-tied detections in another order (reference "
                 "scores within %.0e)", moved, stol);
      rv_check_report(s, "det.labels", lab_ok, "labels and order %s%s%s",
                      lab_ok ? "identical" : "differ", class_order ? " (class order)" : "", how);
      rv_check_report(s, "det.bboxes", bmax <= 1e-2, "max abs %.3g px (tol 1e-2)", bmax);
      rv_check_report(s, "det.scores", smax <= stol, "max abs %.3g (tol %.0e)", smax, stol);
      check_saved(&tc, "mask.", order, nref);
      masks_checked = 1;
      const rv_wtensor *wm = rv_weights_find(s->io, "det.masks");
      if (wm && d.masks && wm->dtype == RV_DT_U8 && wm->ndim == 3 &&
          wm->shape[1] == d.mask_h && wm->shape[2] == d.mask_w && wm->shape[0] <= d.n) {
        size_t plane = (size_t)d.mask_h * d.mask_w, tot = (size_t)wm->shape[0] * plane, diff = 0;
        const unsigned char *m = wm->data;
        for (size_t i = 0; i < tot; i++)
          diff += (m[i] != 0) != (d.masks[(size_t)order[i / plane] * plane + i % plane] != 0);
        rv_check_report(s, "det.masks", diff * 1000 <= tot,
                        "%zu of %zu pixels differ (%.4f%%, tol 0.1%%) over the first %lld masks",
                        diff, tot, 100.0 * (double)diff / (double)(tot ? tot : 1),
                        (long long)wm->shape[0]);
      } else if (wm) {
        rv_check_report(s, "det.masks", 0, "masks missing or of another shape");
      }
    }
    free(order);
    free(rsc);
  } else {
    rv_check_report(s, "det", 0, "reference det.bboxes/det.scores/det.labels missing");
  }
  if (!masks_checked) check_saved(&tc, "mask.", NULL, 0);
  for (int i = 0; i < tc.nsv; i++) free(tc.sv[i].data);
  free(rb);
  free(rs);
  free(rl);
  rv_arena_free(arena);
out:
  for (int i = 0; i < 4; i++) free(owned[i]);
  rv_detector_free(det);
  return rc;
}
