/* The Python package's entry points of the error analysis and the HTML report
 * (<ravlt/pyapi.h> "Analysis"; python/ravlt/analysis.py): flat arguments over
 * <ravlt/analysis.h>. */
#include "models/pyapi.h"

#include <ravlt/analysis.h>

#include <stdlib.h>

static rv_analysis_params params(double conf_score_thr, double conf_iou_thr, int n_worst, int threads) {
  rv_analysis_params p = rv_analysis_default_params();
  p.conf_score_thr = conf_score_thr;
  p.conf_iou_thr = conf_iou_thr;
  if (n_worst >= 0) p.n_worst = n_worst;
  p.threads = threads;
  return p;
}

rv_status rv_py_coco_analyze(char **json, const rv_coco *gt, const rv_coco_results *dt, int iou_type,
                             const rv_coco_results *other, const char *other_name, const char *images_dir,
                             const char *name, double conf_score_thr, double conf_iou_thr, int n_worst, int threads,
                             rv_ctx *ctx) {
  rv_analysis_params p = params(conf_score_thr, conf_iou_thr, n_worst, threads);
  if (iou_type != RV_IOU_BBOX && iou_type != RV_IOU_SEGM) return rv_error(ctx, RV_ERR_ARG, "iou_type must be bbox or segm");
  return rv_coco_analyze(json, gt, dt, (rv_iou_type)iou_type, NULL, NULL, other, other_name, images_dir, name, &p, ctx);
}

rv_status rv_py_seg_analysis_new(rv_seg_analysis **out, int num_classes, const char *const *names, int n_worst,
                                 int threads, rv_ctx *ctx) {
  rv_analysis_params p = params(0.3, 0.5, n_worst, threads);
  return rv_seg_analysis_create(out, num_classes, names, &p, ctx);
}

rv_status rv_py_seg_analysis_add(rv_seg_analysis *a, const char *name, const uint8_t *bgr, const uint8_t *label,
                                 const int32_t *pred, int h, int w, rv_ctx *ctx) {
  rv_image img = {(unsigned char *)bgr, h, w, 3};
  return rv_seg_analysis_add(a, name, bgr ? &img : NULL, label, pred, NULL, h, w, ctx);
}

rv_status rv_py_seg_analysis_add_dirs(rv_seg_analysis *a, const char *pred_dir, const char *gt_dir, const char *img_dir,
                                      int zero_based, size_t *n_images, rv_ctx *ctx) {
  return rv_seg_analysis_add_dirs(a, pred_dir, gt_dir, img_dir, zero_based ? RV_ADE_PRED_ZERO_BASED : RV_ADE_PRED_ANNOTATION,
                                  n_images, ctx);
}

rv_status rv_py_seg_analysis_json(const rv_seg_analysis *a, char **json, rv_ctx *ctx) {
  return rv_seg_analysis_json(a, json, ctx);
}

void rv_py_seg_analysis_free(rv_seg_analysis *a) { rv_seg_analysis_free(a); }

rv_status rv_py_write_report(const char *path, const char *const *json, size_t n, const char *title, rv_ctx *ctx) {
  return rv_analysis_write_html(path, json, n, title, ctx);
}
