#define _POSIX_C_SOURCE 200809L
/* rv_check_e2e: check-fixture for whole models (kinds "e2e_*"): DIR/checkpoint.pth (the
 * architecture read from its meta config, as for an official checkpoint), DIR/image.jpg
 * through the real test pipeline, compared with the official outputs in io.safetensors.
 *
 * Rules (the fixtures' recommended tolerances, config.json "tolerances"):
 *  - decode: image_bgr identical; resize: resized_bgr identical (cv2 INTER_LINEAR);
 *  - backbone features feat.i: |got - ref| <= 2e-4 + 1e-3 |ref| element-wise;
 *  - segmentation: label_map identical wherever label_margin > 1e-3;
 *  - detection: detections in mmdet's bbox2result order (class-major); each reference
 *    detection matched to a computed one with the same label, score within 1e-4 and
 *    coordinates within 0.05 px (eval/compare.h's matcher: same position first, else the
 *    closest elsewhere, as the reference's unstable sort orders tied scores arbitrarily);
 *    unmatched detections on either side only
 *    within 1e-4 of the 0.05 score threshold; masks (rows det_masks_index) IoU >= 0.99
 *    with the reference; matched mask areas within 1% (+2 px) of det_mask_areas.
 */
#include "apps/check_fixture.h"
#include "datasets/det_json.h"
#include "eval/compare.h"
#include "eval/rle.h"
#include "models/model.h"

#include <math.h>
#include <unistd.h>
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
  rv_cmp c = rv_compare_f32_mixed(f.data, ref, n, FEAT_ABS, FEAT_REL);
  rv_check_report(s, label, c.rel <= 1.0, "[%d,%d,%d,%d] max_abs %.3g, worst |err|/(%.0e + %.0e|ref|) = %.3g",
                  f.n, f.c, f.h, f.w, c.max_abs, FEAT_ABS, FEAT_REL, c.rel);
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
  rv_label_cmp c = rv_compare_labels(labels, ref, margin, LABEL_MARGIN, n);
  rv_check_report(s, "label map", c.bad == 0,
                  "%zu of %zu pixels with margin > %.0e differ (%zu low-margin pixels differ, not counted)", c.bad,
                  c.counted, LABEL_MARGIN, c.differ - c.bad);
out:
  free(labels);
  free(ref);
  free(margin);
}


static cJSON *read_json(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)(n > 0 ? n : 0) + 1);
  cJSON *j = NULL;
  if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
    buf[n] = 0;
    j = cJSON_Parse(buf);
  }
  free(buf);
  fclose(f);
  return j;
}

/* The COCO results JSON that `ravlt detect --json` writes (datasets/det_json.c) against
 * mmdet's results2json files: reference entry i against our entry match[i]; same
 * category, bbox within 0.05 px, score within 1e-4, RLE strings identical (or, for masks
 * differing at boundary pixels, IoU >= 0.99). */
static void check_results_json(rv_check_state *s, const rv_model *m, const rv_detections *det, const int *order,
                               const int *match, int nref) {
  char ref_bbox[2048], ref_segm[2048];
  snprintf(ref_bbox, sizeof ref_bbox, "%s/results.bbox.json", s->dir);
  snprintf(ref_segm, sizeof ref_segm, "%s/results.segm.json", s->dir);
  if (access(ref_bbox, R_OK) != 0) return;
  int with_masks = det->masks && access(ref_segm, R_OK) == 0;
  int k = rv_model_num_classes(m);
  int *cat = malloc(sizeof(int) * (size_t)k);
  rv_det_json *dj = rv_det_json_create(with_masks);
  char tmpl[] = "/tmp/ravlt_e2e_XXXXXX";
  int fd = mkstemp(tmpl);
  if (!cat || !dj || fd < 0) {
    rv_check_report(s, "results JSON", 0, "out of memory or no temporary file");
    goto out;
  }
  close(fd);
  char ours_bbox[64], ours_segm[64];
  snprintf(ours_bbox, sizeof ours_bbox, "%s.bbox", tmpl);
  snprintf(ours_segm, sizeof ours_segm, "%s.segm", tmpl);
  for (int i = 0; i < k; i++) cat[i] = rv_model_category_id(m, i);
  if (rv_det_json_add(dj, 1, det, order, cat, s->ctx) != RV_OK ||
      rv_det_json_write(dj, ours_bbox, with_masks ? ours_segm : NULL, s->ctx) != RV_OK) {
    rv_check_report(s, "results JSON", 0, "writing failed: %s", rv_ctx_errmsg(s->ctx));
    goto out;
  }
  for (int pass = 0; pass < 1 + with_masks; pass++) {
    cJSON *a = read_json(pass ? ours_segm : ours_bbox), *b = read_json(pass ? ref_segm : ref_bbox);
    int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b), bad = 0, same_rle = 0, boundary = 0;
    double worst_iou = 1;
    if (!cJSON_IsArray(a) || !cJSON_IsArray(b) || nb != nref) bad = -1;
    for (int i = 0; bad >= 0 && i < nb; i++) {
      if (match[i] < 0) continue;
      const cJSON *x = cJSON_GetArrayItem(a, match[i]), *y = cJSON_GetArrayItem(b, i);
      if (!x || !y) { bad++; continue; }
      int ok = cJSON_GetObjectItem(x, "category_id")->valueint == cJSON_GetObjectItem(y, "category_id")->valueint &&
               fabs(cJSON_GetObjectItem(x, "score")->valuedouble - cJSON_GetObjectItem(y, "score")->valuedouble) <= SCORE_TOL;
      for (int c = 0; c < 4; c++)
        ok = ok && fabs(cJSON_GetArrayItem(cJSON_GetObjectItem(x, "bbox"), c)->valuedouble -
                        cJSON_GetArrayItem(cJSON_GetObjectItem(y, "bbox"), c)->valuedouble) <= BOX_TOL;
      if (pass) {
        const cJSON *sx = cJSON_GetObjectItem(x, "segmentation"), *sy = cJSON_GetObjectItem(y, "segmentation");
        const char *cx = cJSON_GetStringValue(cJSON_GetObjectItem(sx, "counts"));
        const char *cy = cJSON_GetStringValue(cJSON_GetObjectItem(sy, "counts"));
        if (!cx || !cy) ok = 0;
        else if (strcmp(cx, cy) == 0) same_rle++;
        else {
          rv_rle rx = {0}, ry = {0};
          uint32_t h = (uint32_t)det->mask_h, w = (uint32_t)det->mask_w;
          if (rv_rle_from_string(&rx, cx, h, w, "ours", s->ctx) == RV_OK &&
              rv_rle_from_string(&ry, cy, h, w, "mmdet", s->ctx) == RV_OK) {
            double iou = rv_rle_iou_pair(&rx, &ry, 0);
            if (iou < worst_iou) worst_iou = iou;
            if (iou < MASK_IOU) ok = 0;
            boundary++;
          } else {
            ok = 0;
          }
          rv_rle_free(&rx);
          rv_rle_free(&ry);
        }
      }
      bad += !ok;
    }
    if (pass)
      rv_check_report(s, "results.segm.json", bad == 0, "%d entries (mmdet %d): %d RLE strings identical, %d differ at boundary pixels (min IoU %.5f), %d bad",
                      na, nb, same_rle, boundary, worst_iou, bad);
    else
      rv_check_report(s, "results.bbox.json", bad == 0, "%d entries (mmdet %d), %d outside the tolerances", na, nb, bad);
    cJSON_Delete(a);
    cJSON_Delete(b);
  }
  unlink(ours_bbox);
  unlink(ours_segm);
  unlink(tmpl);
out:
  rv_det_json_free(dj);
  free(cat);
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
  /* Match reference detections to computed ones (eval/compare.h): the same position when it
   * agrees, else the closest unmatched detection of the same label within the score and box
   * tolerances (tied scores are ordered arbitrarily by the reference's unstable sort).
   * Unmatched detections are allowed only next to the score threshold. */
  int *match = malloc(sizeof(int) * (size_t)(nref + 1));
  int *match_got = malloc(sizeof(int) * (size_t)(det.n + 1));
  if (!match || !match_got) {
    free(match);
    free(match_got);
    rv_check_report(s, "detections", 0, "out of memory");
    goto out;
  }
  const rv_det_list rlist = {nref, rb, 5, rb + 4, 5, NULL, rl, NULL};
  const rv_det_list glist = {det.n, det.bboxes, 4, det.scores, 1, det.labels, NULL, order};
  const rv_det_match_opts mo = {SCORE_TOL, BOX_TOL, 0, 0, 1, 1, -1, -1};
  const rv_det_match dm = rv_match_detections(match, match_got, &rlist, &glist, &mo);
  const double box_err = dm.max_box_err, score_err = dm.max_score_err;
  const int unmatched_ref = dm.unmatched_ref, extra = dm.unmatched_got, reordered = dm.moved;
  int unmatched_near = 0, extra_near = 0;
  for (int i = 0; i < nref; i++)
    if (match[i] < 0) unmatched_near += fabs(rb[5 * i + 4] - 0.05) < SCORE_TOL;
  for (int j = 0; j < det.n; j++)
    if (match_got[j] < 0) extra_near += fabs((double)det.scores[order[j]] - 0.05) < SCORE_TOL;
  rv_check_report(s, "detections", unmatched_ref == unmatched_near && extra == extra_near,
                  "%d computed, %d reference; %d matched (%d among tied scores in another order), %d reference and %d "
                  "computed unmatched (%d and %d next to the 0.05 threshold, allowed)",
                  det.n, nref, nref - unmatched_ref, reordered, unmatched_ref, extra, unmatched_near, extra_near);
  rv_check_report(s, "detection boxes", box_err <= BOX_TOL, "matched: max coordinate error %.3g px (tolerance %.2g)",
                  box_err, BOX_TOL);
  rv_check_report(s, "detection scores", score_err <= SCORE_TOL, "matched: max score error %.3g (tolerance %.0e)",
                  score_err, SCORE_TOL);
  /* masks */
  const rv_wtensor *rm = rv_weights_find(s->io, "det_masks");
  size_t nidx = 0, nareas = 0;
  float *idx = rv_check_load_f32(s, "det_masks_index", &nidx);
  float *areas = rv_check_load_f32(s, "det_mask_areas", &nareas);
  if (rm && det.masks) {
    size_t plane = (size_t)det.mask_h * det.mask_w;
    int nm = (int)rm->shape[0];
    double worst_iou = 1.0;
    int bad = 0;
    for (int j = 0; j < nm; j++) {
      int row = idx ? (int)idx[j] : j;
      if (row < 0 || row >= nref || (size_t)rm->shape[1] * rm->shape[2] != plane) { bad++; continue; }
      if (match[row] < 0) continue; /* an allowed near-threshold miss */
      const unsigned char *g = det.masks + (size_t)order[match[row]] * plane;
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
    if (areas && (int)nareas == nref) {
      int area_bad = 0;
      for (int i = 0; i < nref; i++) {
        if (match[i] < 0) continue;
        const unsigned char *g = det.masks + (size_t)order[match[i]] * plane;
        size_t a_ = 0;
        for (size_t p = 0; p < plane; p++) a_ += g[p] != 0;
        if (fabs((double)a_ - areas[i]) > 2 + 0.01 * areas[i]) area_bad++;
      }
      rv_check_report(s, "mask areas", area_bad == 0, "%d of %d areas off by more than 1%% + 2 px", area_bad, nref);
    }
  } else if (rm) {
    rv_check_report(s, "detection masks", 0, "the model produced no masks or a different count");
  }
  check_results_json(s, m, &det, order, match, nref);
  free(idx);
  free(areas);
  free(match);
  free(match_got);
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
