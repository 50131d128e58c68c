/* rv_check_e2e: check-fixture for whole models (kinds "e2e_*"): DIR/checkpoint.pth (the
 * architecture read from its meta config, as for an official checkpoint), DIR/image.jpg
 * through the real test pipeline, compared with the official outputs in io.safetensors.
 *
 * Rules (the fixtures' recommended tolerances, config.json "tolerances"):
 *  - decode: image_bgr identical; resize: resized_bgr identical (cv2 INTER_LINEAR);
 *  - backbone features feat.i: |got - ref| <= 2e-4 + 1e-3 |ref| element-wise;
 *  - segmentation: label_map identical wherever label_margin > 1e-3;
 *  - detection: detections in mmdet's bbox2result order (class-major), the same count and
 *    labels, coordinates within 0.05 px, scores within 1e-4; masks (rows det_masks_index)
 *    IoU >= 0.99 with the reference; every mask area within 1% (+2 px) of det_mask_areas.
 */
#include "apps/check_fixture.h"
#include "models/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FEAT_ABS 2e-4
#define FEAT_REL 1e-3
#define LABEL_MARGIN 1e-3
#define BOX_TOL 0.05
#define SCORE_TOL 1e-4
#define MASK_IOU 0.99

static void check_u8(rv_check_state *s, const char *label, const rv_image *img, const char *ref_name) {
  const rv_wtensor *t = rv_weights_find(s->io, ref_name);
  if (!t) return; /* optional */
  size_t n = (size_t)img->h * img->w * img->c;
  if (t->dtype != RV_DT_U8 || rv_wtensor_numel(t) != n || t->ndim != 3 || t->shape[0] != img->h ||
      t->shape[1] != img->w) {
    rv_check_report(s, label, 0, "%dx%dx%d computed, reference %s has another shape", img->h, img->w, img->c, ref_name);
    return;
  }
  const unsigned char *r = t->data;
  size_t diff = 0;
  int maxd = 0;
  for (size_t i = 0; i < n; i++) {
    int d = abs((int)img->data[i] - (int)r[i]);
    if (d) diff++;
    if (d > maxd) maxd = d;
  }
  rv_check_report(s, label, diff == 0, "%dx%d, %zu values differ (max %d)", img->h, img->w, diff, maxd);
}

static void check_feature(rv_check_state *s, int i, rv_tensor f) {
  char name[16], label[32];
  snprintf(name, sizeof name, "feat.%d", i);
  snprintf(label, sizeof label, "backbone %s", name);
  size_t n = 0;
  float *ref = rv_check_load_f32(s, name, &n);
  if (!ref) return; /* trimmed from the fixture */
  if (n != rv_tensor_numel(f)) {
    rv_check_report(s, label, 0, "%zu values computed, reference has %zu", rv_tensor_numel(f), n);
    free(ref);
    return;
  }
  double worst = 0, max_abs = 0;
  for (size_t k = 0; k < n; k++) {
    double d = fabs((double)f.data[k] - ref[k]);
    double allowed = FEAT_ABS + FEAT_REL * fabs(ref[k]);
    if (d / allowed > worst || d != d) worst = d != d ? INFINITY : d / allowed;
    if (d > max_abs) max_abs = d;
  }
  rv_check_report(s, label, worst <= 1.0, "[%d,%d,%d,%d] max_abs %.3g, worst |err|/(%.0e + %.0e|ref|) = %.3g",
                  f.n, f.c, f.h, f.w, max_abs, FEAT_ABS, FEAT_REL, worst);
  free(ref);
}

static void check_segmentation(rv_check_state *s, const rv_model *m, const rv_image *img, rv_arena *a) {
  size_t n = (size_t)img->h * img->w;
  int32_t *labels = malloc(n * sizeof *labels);
  size_t nl = 0, nm = 0;
  float *ref = rv_check_load_f32(s, "label_map", &nl);
  float *margin = rv_check_load_f32(s, "label_margin", &nm);
  if (!labels || !ref || nl != n || (margin && nm != n)) {
    rv_check_report(s, "label map", 0, "reference label_map missing or of another size");
    goto out;
  }
  rv_status st = rv_model_segment(m, labels, img, NULL, a, s->ctx);
  if (st != RV_OK) {
    rv_check_report(s, "label map", 0, "segmentation failed: %s", rv_ctx_errmsg(s->ctx));
    goto out;
  }
  size_t counted = 0, wrong = 0, flips_low = 0;
  for (size_t i = 0; i < n; i++) {
    int same = labels[i] == (int32_t)ref[i];
    if (!margin || margin[i] > LABEL_MARGIN) {
      counted++;
      wrong += !same;
    } else {
      flips_low += !same;
    }
  }
  rv_check_report(s, "label map", wrong == 0,
                  "%zu of %zu pixels with margin > %.0e differ (%zu low-margin pixels differ, not counted)", wrong,
                  counted, LABEL_MARGIN, flips_low);
out:
  free(labels);
  free(ref);
  free(margin);
}

static void check_detection(rv_check_state *s, const rv_model *m, const rv_image *img, rv_arena *a) {
  rv_detections det;
  rv_status st = rv_model_detect(m, &det, NULL, img, a, s->ctx);
  if (st != RV_OK) {
    rv_check_report(s, "detections", 0, "detection failed: %s", rv_ctx_errmsg(s->ctx));
    return;
  }
  size_t nb = 0, nlab = 0;
  float *rb = rv_check_load_f32(s, "det_bboxes", &nb);
  float *rl = rv_check_load_f32(s, "det_labels", &nlab);
  int *order = malloc(sizeof(int) * (size_t)(det.n ? det.n : 1));
  if (!rb || !rl || !order || nb != nlab * 5) {
    rv_check_report(s, "detections", 0, "reference det_bboxes/det_labels missing or inconsistent");
    goto out;
  }
  int nref = (int)nlab;
  rv_detections_class_order(order, &det);
  int same_count = det.n == nref;
  rv_check_report(s, "detection count", same_count, "%d computed, %d reference", det.n, nref);
  int nn = det.n < nref ? det.n : nref, label_bad = 0;
  double box_err = 0, score_err = 0;
  for (int i = 0; i < nn; i++) {
    int k = order[i];
    if (det.labels[k] != (int)rl[i]) label_bad++;
    for (int c = 0; c < 4; c++) {
      double d = fabs((double)det.bboxes[4 * k + c] - rb[5 * i + c]);
      if (d > box_err) box_err = d;
    }
    double d = fabs((double)det.scores[k] - rb[5 * i + 4]);
    if (d > score_err) score_err = d;
  }
  rv_check_report(s, "detection labels", label_bad == 0 && same_count, "%d of %d differ", label_bad, nn);
  rv_check_report(s, "detection boxes", box_err <= BOX_TOL, "max coordinate error %.3g px (tolerance %.2g)", box_err,
                  BOX_TOL);
  rv_check_report(s, "detection scores", score_err <= SCORE_TOL, "max score error %.3g (tolerance %.0e)", score_err,
                  SCORE_TOL);
  /* masks */
  const rv_wtensor *rm = rv_weights_find(s->io, "det_masks");
  size_t nidx = 0, nareas = 0;
  float *idx = rv_check_load_f32(s, "det_masks_index", &nidx);
  float *areas = rv_check_load_f32(s, "det_mask_areas", &nareas);
  if (rm && det.masks && same_count) {
    size_t plane = (size_t)det.mask_h * det.mask_w;
    int nm = (int)rm->shape[0];
    double worst_iou = 1.0;
    int bad = 0;
    for (int j = 0; j < nm; j++) {
      int row = idx ? (int)idx[j] : j;
      if (row < 0 || row >= det.n || (size_t)rm->shape[1] * rm->shape[2] != plane) { bad++; continue; }
      const unsigned char *g = det.masks + (size_t)order[row] * plane;
      const unsigned char *r = (const unsigned char *)rm->data + (size_t)j * plane;
      size_t inter = 0, uni = 0;
      for (size_t p = 0; p < plane; p++) {
        inter += g[p] && r[p];
        uni += g[p] || r[p];
      }
      double iou = uni ? (double)inter / (double)uni : 1.0;
      if (iou < worst_iou) worst_iou = iou;
    }
    rv_check_report(s, "detection masks", bad == 0 && worst_iou >= MASK_IOU, "%d masks, min IoU %.5f (rule >= %.2f)", nm,
                    worst_iou, MASK_IOU);
    if (areas && (int)nareas == det.n) {
      int area_bad = 0;
      for (int i = 0; i < det.n; i++) {
        const unsigned char *g = det.masks + (size_t)order[i] * plane;
        size_t a_ = 0;
        for (size_t p = 0; p < plane; p++) a_ += g[p] != 0;
        if (fabs((double)a_ - areas[i]) > 2 + 0.01 * areas[i]) area_bad++;
      }
      rv_check_report(s, "mask areas", area_bad == 0, "%d of %d areas off by more than 1%% + 2 px", area_bad, det.n);
    }
  } else if (rm) {
    rv_check_report(s, "detection masks", 0, "the model produced no masks or a different count");
  }
  free(idx);
  free(areas);
out:
  free(order);
  free(rb);
  free(rl);
}

int rv_check_e2e(rv_check_state *s) {
  rv_ctx *ctx = s->ctx;
  char path[2048];
  snprintf(path, sizeof path, "%s/checkpoint.pth", s->dir);
  rv_model *m = NULL;
  rv_status st = rv_model_load(&m, path, NULL, ctx);
  if (st != RV_OK) return st;
  printf("  model: %s (%s, architecture from %s), %d classes\n", rv_model_arch(m),
         rv_model_task(m) == RV_TASK_SEGMENT ? "segmentor" : "detector", rv_model_source(m), rv_model_num_classes(m));
  snprintf(path, sizeof path, "%s/image.jpg", s->dir);
  rv_image img = {0}, resized = {0};
  st = rv_image_read(path, &img, ctx);
  if (st != RV_OK) {
    rv_model_free(m);
    return st;
  }
  check_u8(s, "decoded image", &img, "image_bgr");
  rv_preprocess_params pp = rv_model_preprocess(m);
  rv_img_meta meta;
  st = rv_preprocess_resize(&resized, &meta, &img, &pp, ctx);
  rv_arena *a = rv_arena_create(0);
  if (st == RV_OK && a) {
    check_u8(s, "resized image", &resized, "resized_bgr");
    rv_tensor x = rv_tensor_new(a, 1, 3, meta.pad_h, meta.pad_w);
    if (!x.data) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    else {
      rv_preprocess_normalize(x.data, meta.pad_h, meta.pad_w, &resized, &pp);
      rv_tensor feats[RV_RAVLT_STAGES];
      st = rv_model_features(m, feats, x, a, ctx);
      for (int i = 0; st == RV_OK && i < RV_RAVLT_STAGES; i++)
        if (feats[i].data) check_feature(s, i, feats[i]);
    }
    rv_arena_reset(a);
    if (st == RV_OK) {
      if (rv_model_task(m) == RV_TASK_SEGMENT) check_segmentation(s, m, &img, a);
      else check_detection(s, m, &img, a);
    }
  } else if (!a) {
    st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  rv_arena_free(a);
  rv_image_free(&img);
  rv_image_free(&resized);
  rv_model_free(m);
  return st;
}
