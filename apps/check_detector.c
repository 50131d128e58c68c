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
 * pixels differ. */
#include "apps/check_fixture.h"
#include "models/detector.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  rv_check_state *s;
} trace_ctx;

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
  double tol = 1e-4;
  if (!strncmp(name, "mask.stage", 10) || !strcmp(name, "mask.merged_probs"))
    tol = 1e-3;
  else if ((!strncmp(name, "roi.stage1.", 11) || !strncmp(name, "roi.stage2.", 11)) &&
           !strstr(name, ".rois"))
    tol = 2e-4;
  rv_check_tensor(t->s, name, data, rn, name, tol);
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
    if (!w && i == 0 && arch == RV_DET_RETINANET) { /* RetinaNet's FPN starts at level 1 */
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
  trace_ctx tc = {s};
  rv_det_trace trace = {on_trace, &tc, 0};
  rv_detections d;
  if (rv_detector_forward(det, &d, feats, &meta, &trace, arena, ctx) != RV_OK) {
    rv_arena_free(arena);
    rc = 1;
    goto out;
  }
  /* final detections: det.bboxes [n,4] (or [n,5] with the score), det.scores, det.labels;
   * NMS order, or mmdet's bbox2result class order when the reference is sorted by class */
  size_t nb = 0, ns = 0, nl = 0;
  float *rb = rv_check_load_f32(s, "det.bboxes", &nb), *rs = rv_check_load_f32(s, "det.scores", &ns),
        *rl = rv_check_load_f32(s, "det.labels", &nl);
  if (rb && rl && (rs || nb == nl * 5)) {
    int nref = (int)nl, bstride = nb == nl * 5 ? 5 : 4;
    int same = d.n == nref && nb == (size_t)nref * bstride && (!rs || ns == (size_t)nref);
    rv_check_report(s, "det.count", same, "%d detections, reference %d", d.n, nref);
    if (same) {
      int *order = malloc(sizeof(int) * (size_t)(nref + 1));
      int lab_ok = 1, class_order = 0;
      for (int i = 0; i < nref; i++) order[i] = i;
      for (int i = 0; i < nref; i++)
        if (d.labels[i] != (int)rl[i]) lab_ok = 0;
      if (!lab_ok) {
        int sorted = 1;
        for (int i = 1; i < nref; i++)
          if (rl[i] < rl[i - 1]) sorted = 0;
        if (sorted && order) {
          rv_detections_class_order(order, &d);
          lab_ok = 1;
          class_order = 1;
          for (int i = 0; i < nref; i++)
            if (d.labels[order[i]] != (int)rl[i]) lab_ok = 0;
        }
      }
      double bmax = 0, smax = 0;
      for (int i = 0; i < nref; i++) {
        int j = order[i];
        for (int k = 0; k < 4; k++)
          bmax = fmax(bmax, fabs((double)d.bboxes[j * 4 + k] - rb[(size_t)i * bstride + k]));
        float ref_s = rs ? rs[i] : rb[(size_t)i * 5 + 4];
        smax = fmax(smax, fabs((double)d.scores[j] - ref_s));
      }
      free(order);
      double stol = arch == RV_DET_CASCADE_MASK_RCNN ? 1e-4 : 1e-5;
      rv_check_report(s, "det.labels", lab_ok, "labels and order %s%s",
                      lab_ok ? "identical" : "differ", class_order ? " (class order)" : "");
      rv_check_report(s, "det.bboxes", bmax <= 1e-2, "max abs %.3g px (tol 1e-2)", bmax);
      rv_check_report(s, "det.scores", smax <= stol, "max abs %.3g (tol %.0e)", smax, stol);
      const rv_wtensor *wm = rv_weights_find(s->io, "det.masks");
      if (wm && d.masks && !class_order && wm->dtype == RV_DT_U8 && wm->ndim == 3 &&
          wm->shape[1] == d.mask_h && wm->shape[2] == d.mask_w && wm->shape[0] <= d.n) {
        size_t plane = (size_t)d.mask_h * d.mask_w, tot = (size_t)wm->shape[0] * plane, diff = 0;
        const unsigned char *m = wm->data;
        for (size_t i = 0; i < tot; i++) diff += (m[i] != 0) != (d.masks[i] != 0);
        rv_check_report(s, "det.masks", diff * 1000 <= tot,
                        "%zu of %zu pixels differ (%.4f%%, tol 0.1%%) over the first %lld masks",
                        diff, tot, 100.0 * (double)diff / (double)(tot ? tot : 1),
                        (long long)wm->shape[0]);
      } else if (wm) {
        rv_check_report(s, "det.masks", 0, "masks missing or of another shape");
      }
    }
  } else {
    rv_check_report(s, "det", 0, "reference det.bboxes/det.scores/det.labels missing");
  }
  free(rb);
  free(rs);
  free(rl);
  rv_arena_free(arena);
out:
  for (int i = 0; i < 4; i++) free(owned[i]);
  rv_detector_free(det);
  return rc;
}
