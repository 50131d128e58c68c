/* The per-image work of each task (apps/image_run.h): an image in memory -> the result -> the
 * images and JSON entries the commands write (and the service returns). No files, no printing. */
#include "apps/image_run.h"

#include "apps/draw.h"
#include "datasets/classes.h"
#include "datasets/preprocess.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

rv_status rv_task_segment(const rv_run_model *rm, const rv_image *img, const rv_seg_run_opts *o, rv_arena *arena,
                          int32_t **labels, rv_ctx *ctx) {
  size_t n = (size_t)img->h * (size_t)img->w;
  if (!(*labels = malloc(sizeof **labels * (n ? n : 1)))) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_status st = rv_model_segment(rm->m, *labels, img, o, arena, ctx);
  if (st != RV_OK) {
    free(*labels);
    *labels = NULL;
  }
  return st;
}

rv_status rv_task_segment_tiled(const rv_run_model *rm, const rv_image *img, const rv_tile_opts *to, rv_arena *arena,
                                int32_t **labels, rv_ctx *ctx) {
  size_t n = (size_t)img->h * (size_t)img->w;
  if (!(*labels = malloc(sizeof **labels * (n ? n : 1)))) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_status st = rv_model_segment_tiled(rm->m, *labels, img, to, arena, ctx);
  if (st != RV_OK) {
    free(*labels);
    *labels = NULL;
  }
  return st;
}

rv_status rv_task_label_image(rv_image *lab, const int32_t *labels, int h, int w, rv_ctx *ctx) {
  RV_TRY(rv_image_alloc(lab, h, w, 1, ctx));
  for (size_t p = 0; p < (size_t)h * (size_t)w; p++) lab->data[p] = (unsigned char)(labels[p] + 1);
  return RV_OK;
}

rv_status rv_task_overlay(const rv_run_model *rm, rv_image *img, const int32_t *labels, float opacity, rv_ctx *ctx) {
  return rv_draw_label_overlay(img, labels, (const unsigned char (*)[3])rm->palette, rm->names, rm->num_classes, opacity,
                               1, ctx);
}

rv_status rv_task_detect(const rv_run_model *rm, const rv_image *img, rv_arena *arena, rv_detections *det,
                         int **order, rv_ctx *ctx) {
  *order = NULL;
  RV_TRY(rv_model_detect(rm->m, det, NULL, img, arena, ctx));
  if (!(*order = malloc(sizeof **order * (size_t)(det->n + 1)))) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_detections_class_order(*order, det);
  return RV_OK;
}

rv_status rv_task_draw_detections(const rv_run_model *rm, rv_image *img, const rv_detections *det, float thr,
                                  rv_ctx *ctx) {
  rv_draw_det *dd = calloc((size_t)det->n + 1, sizeof *dd);
  if (!dd) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (int k = 0; k < det->n; k++) {
    const float *b = det->bboxes + 4 * (size_t)k;
    dd[k] = (rv_draw_det){b[0], b[1], b[2], b[3], det->scores[k], det->labels[k],
                          det->masks ? det->masks + (size_t)k * det->mask_h * det->mask_w : NULL};
  }
  rv_status st = rv_draw_detections(img, dd, det->n, rm->names, (const unsigned char (*)[3])rm->palette, rm->num_classes,
                                    thr, ctx);
  free(dd);
  return st;
}

rv_status rv_task_detect_tiled(const rv_run_model *rm, const rv_image *img, const rv_tile_opts *to, rv_arena *arena,
                               rv_tile_detections *det, int **order, rv_ctx *ctx) {
  *order = NULL;
  RV_TRY(rv_model_detect_tiled(rm->m, det, img, to, arena, ctx));
  if (!(*order = malloc(sizeof **order * (size_t)(det->n + 1)))) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  const rv_detections view = {det->n, det->bboxes, det->scores, det->labels, NULL, 0, 0};
  rv_detections_class_order(*order, &view);
  return RV_OK;
}

rv_status rv_task_draw_tiled(const rv_run_model *rm, rv_image *img, const rv_tile_detections *det, float thr,
                             rv_ctx *ctx) {
  rv_draw_det *dd = calloc((size_t)det->n + 1, sizeof *dd);
  if (!dd) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (int k = 0; k < det->n; k++) {
    const float *b = det->bboxes + 4 * (size_t)k;
    dd[k] = (rv_draw_det){b[0], b[1], b[2], b[3], det->scores[k], det->labels[k], NULL, det->masks ? &det->masks[k] : NULL};
  }
  rv_status st = rv_draw_detections(img, dd, det->n, rm->names, (const unsigned char (*)[3])rm->palette, rm->num_classes,
                                    thr, ctx);
  free(dd);
  return st;
}

rv_status rv_task_classify(const rv_run_model *rm, const rv_image *img, int size, rv_arena *arena, float *prob,
                           int *order, int top, rv_ctx *ctx) {
  rv_tensor x, logits;
  RV_TRY(rv_preprocess_imagenet(&x, img, size, arena, ctx));
  RV_TRY(rv_ravlt_classify(rm->classifier, arena, x, &logits, ctx));
  /* softmax (double accumulation) and partial selection of the top K */
  const int K = rm->num_classes;
  double mx = -INFINITY, sum = 0;
  for (int c = 0; c < K; c++)
    if (logits.data[c] > mx) mx = logits.data[c];
  for (int c = 0; c < K; c++) {
    prob[c] = (float)exp(logits.data[c] - mx);
    sum += prob[c];
  }
  for (int c = 0; c < K; c++) {
    prob[c] = (float)(prob[c] / sum);
    order[c] = c;
  }
  for (int a = 0; a < top && a < K; a++) {
    int best = a;
    for (int c = a + 1; c < K; c++)
      if (prob[order[c]] > prob[order[best]] || (prob[order[c]] == prob[order[best]] && order[c] < order[best])) best = c;
    int t = order[a];
    order[a] = order[best];
    order[best] = t;
  }
  return RV_OK;
}

cJSON *rv_task_classify_json(const rv_run_model *rm, const char *image, const float *prob, const int *order, int top) {
  const int K = rm->num_classes;
  cJSON *jo = cJSON_CreateObject(), *jt = NULL;
  if (!jo || !cJSON_AddStringToObject(jo, "image", image) || !(jt = cJSON_AddArrayToObject(jo, "top"))) goto fail;
  for (int a = 0; a < top && a < K; a++) {
    int c = order[a];
    cJSON *e = cJSON_CreateObject();
    if (!e) goto fail;
    cJSON_AddItemToArray(jt, e);
    if (!cJSON_AddNumberToObject(e, "index", c) ||
        !cJSON_AddStringToObject(e, "label", K == RV_IMAGENET_NUM_CLASSES ? rv_imagenet_classes[c] : "") ||
        !cJSON_AddNumberToObject(e, "prob", (double)prob[c]))
      goto fail;
  }
  return jo;
fail:
  cJSON_Delete(jo);
  return NULL;
}
