/* Whole models: an official checkpoint (or safetensors) -> a ready segmentor or detector
 * with its test pipeline, class names and palette.
 *
 *   rv_model *m;
 *   if (rv_model_load(&m, "upernet_ravlt_s.pth", NULL, ctx) != RV_OK) ...;
 *   rv_image img = {0}; rv_image_read("photo.jpg", &img, ctx);
 *   if (rv_model_task(m) == RV_TASK_SEGMENT) {
 *     int32_t *labels = malloc(sizeof *labels * img.h * img.w);
 *     rv_model_segment(m, labels, &img, NULL, arena, ctx);     // class index per pixel
 *   } else {
 *     rv_detections det; rv_img_meta meta;
 *     rv_model_detect(m, &det, &meta, &img, arena, ctx);       // original coordinates
 *   }
 *   rv_model_free(m);
 *
 * How the architecture is found, in order:
 *  1. the checkpoint's meta config text (mmcv Python-literal syntax, meta['config'] as
 *     mmcv saves it, carried into safetensors __metadata__["config"] by `ravlt convert`):
 *     model.type (EncoderDecoder / CascadeRCNN / MaskRCNN / RetinaNet), the GLTA backbone
 *     arguments, decode head / RoI heads, test_cfg, and the test pipeline's img_scale;
 *  2. else tensor names and shapes (backbone dims/depths/heads from the weights; the
 *     head family from its keys), with the official test settings;
 *  3. a `name` such as "upernet-ravlt-s" or "cascade-mask-rcnn-ravlt-t" overrides the
 *     family (and gives the backbone preset when the weights cannot tell).
 * Class names and palette come from meta CLASSES / PALETTE when present, else COCO (80)
 * or ADE20K (150) built in when the class count matches, else "object" (rv_model_class_name).
 */
#ifndef RV_MODELS_MODEL_H
#define RV_MODELS_MODEL_H

#include "backbone/ravlt.h"
#include "core/image.h"
#include "datasets/preprocess.h"
#include "models/detector.h"
#include "models/segmentor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rv_model rv_model;

/* path: .pth or .safetensors; name: NULL or a model name (see rv_model_names). A key the
 * model needs and the checkpoint lacks (or has with another shape or a non-float dtype) is
 * an error naming it; keys the model does not use (besides auxiliary_head.* and
 * num_batches_tracked) are listed in a warning through rv_log (an error with strict). */
rv_status rv_model_load(rv_model **out, const char *path, const char *name, rv_ctx *ctx);
/* The same from weights already open (they may be freed afterwards: parts copy). */
rv_status rv_model_from_weights(rv_model **out, const rv_weights *w, const char *name, rv_ctx *ctx);

typedef struct {
  int strict; /* 1: an unexpected (unused) checkpoint key is an error, not a warning */
} rv_model_load_opts;
/* rv_model_load / rv_model_from_weights with options (opts NULL: the defaults, all 0). */
rv_status rv_model_load_ex(rv_model **out, const char *path, const char *name,
                             const rv_model_load_opts *opts, rv_ctx *ctx);
rv_status rv_model_from_weights_ex(rv_model **out, const rv_weights *w, const char *name,
                                     const rv_model_load_opts *opts, rv_ctx *ctx);
void rv_model_free(rv_model *m);

/* Dense-prediction model names accepted as `name` (NULL-terminated). */
const char *const *rv_model_names(void);

rv_task rv_model_task(const rv_model *m);
/* "upernet", "semantic_fpn", "cascade_mask_rcnn", "mask_rcnn", "retinanet" */
const char *rv_model_arch(const rv_model *m);
/* Where the architecture came from: "meta config", "weights", "name". */
const char *rv_model_source(const rv_model *m);
int rv_model_num_classes(const rv_model *m);
/* Class i's name: from the checkpoint's meta CLASSES, else COCO's / ADE20K's when the class
 * count is theirs, else "object". */
const char *rv_model_class_name(const rv_model *m, int i);
/* 1 when the class names are real (meta CLASSES or a built-in set), 0 when they are "object". */
int rv_model_has_class_names(const rv_model *m);
void rv_model_class_color(const rv_model *m, int i, unsigned char rgb[3]);
/* COCO category id of class i (detectors with the 80 COCO classes), else i + 1. */
int rv_model_category_id(const rv_model *m, int i);
const rv_ravlt *rv_model_backbone(const rv_model *m);
const rv_detector *rv_model_detector(const rv_model *m);
const rv_seg_decoder *rv_model_seg_decoder(const rv_model *m);
/* The test pipeline (Resize/Normalize/Pad) the model's config asks for. */
rv_preprocess_params rv_model_preprocess(const rv_model *m);
/* Segmentation test config (whole / slide) from the model config; may be changed. */
rv_seg_test_cfg *rv_model_seg_test_cfg(rv_model *m);

typedef struct {
  int aug_test;          /* mmseg MultiScaleFlipAug: ratios below, flip */
  const double *ratios;  /* NULL: 0.5, 0.75, 1.0, 1.25, 1.5, 1.75 */
  int n_ratios;
  int flip;              /* 1 with aug_test */
} rv_seg_run_opts;

/* labels[img->h * img->w]: class index 0..K-1 per pixel of the original image. opts may be
 * NULL (single scale). */
rv_status rv_model_segment(const rv_model *m, int32_t *labels, const rv_image *bgr,
                           const rv_seg_run_opts *opts, rv_arena *arena, rv_ctx *ctx);

/* Detections in original coordinates; arrays from the arena. meta may be NULL. */
rv_status rv_model_detect(const rv_model *m, rv_detections *det, rv_img_meta *meta,
                          const rv_image *bgr, rv_arena *arena, rv_ctx *ctx);

/* Backbone features for an already pre-processed input (for parity checks). */
rv_status rv_model_features(const rv_model *m, rv_tensor feats[RV_RAVLT_STAGES], rv_tensor input,
                            rv_arena *arena, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
