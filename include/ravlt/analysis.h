/* ravlt public API: evaluation that explains its numbers. The analysis behind
 * `ravlt eval coco|ade20k --report FILE.html --report-json FILE` as JSON text (the contract of
 * docs/evaluation.md), and the self-contained HTML report made from it.
 *
 *   rv_analysis_params p = rv_analysis_default_params();
 *   char *json = NULL;
 *   if (rv_coco_analyze(&json, gt, &res, RV_IOU_BBOX, NULL, NULL, NULL, NULL, "val2017", &p, ctx) == RV_OK) {
 *     const char *parts[1] = {json};
 *     rv_analysis_write_html("report.html", parts, 1, "my detector", ctx);
 *   }
 *   free(json);
 *
 * COCO (bbox or segm): the 12 stats, per-category AP / AP50 / AP75 / AP small, medium, large /
 * AR@maxDets, the precision array of accumulate() (area all, last maxDets), TIDE's error
 * breakdown (dbolya/tide 1.0.1), mmdetection 2.x's confusion matrix, precision / recall / F1
 * against the score threshold at IoU 0.5 with the best-F1 threshold, the worst images (most false
 * positives + false negatives at the confusion matrix's rule, with thumbnails when images_dir is
 * given) and, with a second results set, the comparison. ADE20K: aAcc, mIoU, mAcc, per-class
 * IoU / Acc, mmsegmentation 0.x's confusion matrix and the worst images (lowest per-image mIoU).
 * NaN is written as null. */
#ifndef RAVLT_ANALYSIS_H
#define RAVLT_ANALYSIS_H

#include <ravlt/core.h>
#include <ravlt/eval.h>
#include <ravlt/image.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  double conf_score_thr; /* confusion matrix and worst images: detections with score >= this (0.3) */
  double conf_iou_thr;   /* ... overlapping a gt with IoU >= this (0.5) */
  double tide_pos_thr;   /* TIDE foreground IoU (0.5) */
  double tide_bg_thr;    /* TIDE background IoU (0.1) */
  int n_worst;           /* worst images listed (16) */
  int thumb_size;        /* longest side of a thumbnail in pixels (320) */
  int threads;           /* OpenMP threads, 0 = default */
} rv_analysis_params;

RV_API rv_analysis_params rv_analysis_default_params(void);

/* COCO analysis of res (loaded for t) against gt, as JSON text (*json malloc'd; free()).
 * ev: an evaluation of exactly gt / res / t already made (rv_coco_evaluate, accumulated), or
 * NULL: evaluated here with eval_params (NULL: pycocotools' defaults). other (may be NULL): a
 * second results set on the same gt (loaded for t), other_name its label. images_dir (may be
 * NULL): the folder of the gt images' file_name, for the worst images' thumbnails. name: a label
 * of the evaluation (the annotation file), may be NULL. */
RV_API rv_status rv_coco_analyze(char **json, const rv_coco *gt, const rv_coco_results *res, rv_iou_type t,
                                 const rv_cocoeval *ev, const rv_cocoeval_params *eval_params,
                                 const rv_coco_results *other, const char *other_name, const char *images_dir,
                                 const char *name, const rv_analysis_params *p, rv_ctx *ctx);

/* ADE20K-style semantic segmentation analysis, image by image. num_classes C (<= 254, the
 * annotation PNG convention: label k = class k-1, 0 ignored, 255 ignored); names: C class names
 * or NULL (ADE20K's when C is 150, else indices). */
typedef struct rv_seg_analysis rv_seg_analysis;
RV_API rv_status rv_seg_analysis_create(rv_seg_analysis **out, int num_classes, const char *const *names,
                                        const rv_analysis_params *p, rv_ctx *ctx);
/* One image: label (the annotation map, h x w), the prediction as class indices (pred_i32, any
 * value outside 0..C-1 = no class) or as an annotation-convention map (pred_u8: v = class v-1,
 * 0 = no class); give one of the two. img (may be NULL): the image, for the worst images'
 * thumbnails (image | ground truth | prediction). name: the image's name. Calls may come from
 * several threads at once. */
RV_API rv_status rv_seg_analysis_add(rv_seg_analysis *a, const char *name, const rv_image *img, const uint8_t *label,
                                     const int32_t *pred_i32, const uint8_t *pred_u8, int h, int w, rv_ctx *ctx);
/* The analysis of the images added so far as JSON text (*json malloc'd). */
RV_API rv_status rv_seg_analysis_json(const rv_seg_analysis *a, char **json, rv_ctx *ctx);
RV_API void rv_seg_analysis_free(rv_seg_analysis *a);
/* Every <name>.png of gt_dir against pred_dir/<name>.png (rv_ade20k_eval_dirs' pairing and
 * formats), images in img_dir/<name>.jpg when img_dir is not NULL; images in parallel. */
RV_API rv_status rv_seg_analysis_add_dirs(rv_seg_analysis *a, const char *pred_dir, const char *gt_dir,
                                          const char *img_dir, rv_ade_pred_format fmt, size_t *n_images, rv_ctx *ctx);

/* One self-contained HTML file (inline SVG charts, inline JPEG thumbnails, no external
 * resource) from n analysis JSON texts (COCO bbox / segm, ADE20K), written to a temporary file
 * renamed into place. title may be NULL. */
RV_API rv_status rv_analysis_write_html(const char *path, const char *const *json, size_t n, const char *title,
                                        rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
