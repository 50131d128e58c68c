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
#include "formats/image.h"
#include "datasets/preprocess.h"
#include "models/detector.h"
#include "models/segmentor.h"
#include <ravlt/model.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rv_task, rv_model, rv_model_load_opts, rv_detections, rv_seg_run_opts and rv_model_load /
 * load_ex / free / names / task / arch / source / num_classes / class_name /
 * has_class_names / class_color / category_id / segment / detect are public:
 * <ravlt/model.h>. */

/* rv_model_load from weights already open (they may be freed afterwards: parts copy). */
rv_status rv_model_from_weights(rv_model **out, const rv_weights *w, const char *name, rv_ctx *ctx);
/* The same with options (rv_model_load_opts, <ravlt/model.h>; NULL: the defaults). */
rv_status rv_model_from_weights_ex(rv_model **out, const rv_weights *w, const char *name,
                                     const rv_model_load_opts *opts, rv_ctx *ctx);
const rv_ravlt *rv_model_backbone(const rv_model *m);
const rv_detector *rv_model_detector(const rv_model *m);
const rv_seg_decoder *rv_model_seg_decoder(const rv_model *m);
/* 1 if the model gives instance masks (a detector with a mask branch). */
int rv_model_has_masks(const rv_model *m);
/* The test pipeline (Resize/Normalize/Pad) the model's config asks for. */
rv_preprocess_params rv_model_preprocess(const rv_model *m);
/* Segmentation test config (whole / slide) from the model config; may be changed. */
rv_seg_test_cfg *rv_model_seg_test_cfg(rv_model *m);

/* The model's count of calls in flight (core/rv.h "Calls"; tests hold calls in flight with
 * it to check the thread rule). */
rv_share *rv_model_share(const rv_model *m);

/* Backbone features for an already pre-processed input (for parity checks). */
rv_status rv_model_features(const rv_model *m, rv_tensor feats[RV_RAVLT_STAGES], rv_tensor input,
                            rv_arena *arena, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
