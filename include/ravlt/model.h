/* ravlt public API: whole models. An official checkpoint (mmseg / mmdet .pth, or its
 * safetensors conversion) becomes a ready segmentor or detector with its test pipeline,
 * class names and palette.
 *
 *   rv_model *m;
 *   if (rv_model_load(&m, "upernet_ravlt_s.pth", NULL, ctx) != RV_OK) ...;
 *   rv_image img = {0}; rv_image_read("photo.jpg", &img, ctx);
 *   if (rv_model_task(m) == RV_TASK_SEGMENT) {
 *     int32_t *labels = malloc(sizeof *labels * img.h * img.w);
 *     rv_model_segment(m, labels, &img, NULL, arena, ctx);     // class index per pixel
 *   } else {
 *     rv_detections det;
 *     rv_model_detect(m, &det, NULL, &img, arena, ctx);        // original coordinates
 *     for (int i = 0; i < det.n; i++)
 *       printf("%s %.3f\n", rv_model_class_name(m, det.labels[i]), det.scores[i]);
 *   }
 *   rv_model_free(m);
 *
 * How the architecture is found, in order: the checkpoint's meta config text (mmcv saves
 * it; `ravlt convert` carries it into safetensors metadata); else tensor names and shapes,
 * with the official test settings; a `name` such as "upernet-ravlt-s" or
 * "cascade-mask-rcnn-ravlt-t" (rv_model_names) overrides the family. Class names and
 * palette come from meta CLASSES / PALETTE when present, else COCO (80) or ADE20K (150)
 * built in when the class count matches.
 *
 * A model is immutable after loading and may be shared by threads, each with its own
 * arena and context.
 */
#ifndef RAVLT_MODEL_H
#define RAVLT_MODEL_H

#include <ravlt/core.h>
#include <ravlt/image.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { RV_TASK_SEGMENT = 0, RV_TASK_DETECT } rv_task;

typedef struct rv_model rv_model;

/* Final detections of one image (arrays from the arena passed to rv_model_detect: valid
 * until it is reset or freed). In NMS order (score descending). */
typedef struct {
  int n;
  float *bboxes;          /* [n, 4] x1, y1, x2, y2 in original-image coordinates */
  float *scores;          /* [n] */
  int *labels;            /* [n] class index 0..K-1 */
  unsigned char *masks;   /* [n, mask_h, mask_w] 0/1 (row-major, original size) or NULL */
  int mask_h, mask_w;
} rv_detections;

typedef struct {
  int aug_test;          /* mmseg MultiScaleFlipAug: ratios below, flip */
  const double *ratios;  /* NULL: 0.5, 0.75, 1.0, 1.25, 1.5, 1.75 */
  int n_ratios;
  int flip;              /* 1 with aug_test */
} rv_seg_run_opts;

/* path: .pth or .safetensors; name: NULL or a model name (see rv_model_names). A key the
 * model needs and the checkpoint lacks (or has with another shape or a non-float dtype) is
 * an error naming it; keys the model does not use (besides auxiliary_head.* and
 * num_batches_tracked) are listed in a warning through the log hook (an error with strict). */
RV_API rv_status rv_model_load(rv_model **out, const char *path, const char *name, rv_ctx *ctx);

typedef struct {
  int strict; /* 1: an unexpected (unused) checkpoint key is an error, not a warning */
} rv_model_load_opts;
/* rv_model_load with options (opts NULL: the defaults, all 0). */
RV_API rv_status rv_model_load_ex(rv_model **out, const char *path, const char *name,
                                  const rv_model_load_opts *opts, rv_ctx *ctx);
RV_API void rv_model_free(rv_model *m);

/* Dense-prediction model names accepted as `name` (NULL-terminated). */
RV_API const char *const *rv_model_names(void);

RV_API rv_task rv_model_task(const rv_model *m);
/* "upernet", "semantic_fpn", "cascade_mask_rcnn", "mask_rcnn", "retinanet" */
RV_API const char *rv_model_arch(const rv_model *m);
/* Where the architecture came from: "meta config", "weights", "name". */
RV_API const char *rv_model_source(const rv_model *m);
/* The checkpoint's meta config text (the mmcv Config text mmdet / mmseg save in
 * meta['config'], or the safetensors metadata `ravlt convert` carries it in), or NULL when
 * the checkpoint has none. Owned by m. */
RV_API const char *rv_model_config_text(const rv_model *m);
RV_API int rv_model_num_classes(const rv_model *m);
/* Class i's name: from the checkpoint's meta CLASSES, else COCO's / ADE20K's when the class
 * count is theirs, else "object". */
RV_API const char *rv_model_class_name(const rv_model *m, int i);
/* 1 when the class names are real (meta CLASSES or a built-in set), 0 when they are "object". */
RV_API int rv_model_has_class_names(const rv_model *m);
RV_API void rv_model_class_color(const rv_model *m, int i, unsigned char rgb[3]);
/* COCO category id of class i (detectors with the 80 COCO classes), else i + 1. */
RV_API int rv_model_category_id(const rv_model *m, int i);

/* labels[img->h * img->w]: class index 0..K-1 per pixel of the original image (bgr: a
 * 3-channel BGR image, as rv_image_read gives). opts may be NULL (single scale). */
RV_API rv_status rv_model_segment(const rv_model *m, int32_t *labels, const rv_image *bgr,
                                  const rv_seg_run_opts *opts, rv_arena *arena, rv_ctx *ctx);

/* Detections in original coordinates; arrays from the arena. meta may be NULL. */
RV_API rv_status rv_model_detect(const rv_model *m, rv_detections *det, rv_img_meta *meta,
                                 const rv_image *bgr, rv_arena *arena, rv_ctx *ctx);

/* Arithmetic of the GEMM-heavy layers. RV_PRECISION_F32 (the default) is the parity
 * reference; RV_PRECISION_BF16 rounds both operands of those layers to bfloat16 and sums
 * in float32 (AVX512_BF16 vdpbf16ps): the backbone's 1x1 convs (qkvo, proj, fc1, fc2) and
 * attention products (RALA's, the softmax attention's); the necks' and heads' 1x1 convs,
 * their 3x3 convs where the float32 rule runs Winograd F(4x4) (segmentation and RetinaNet
 * heads at large sizes; the detection FPN's and RPN's run F(2x2) and stay float32), the
 * RoI heads' conv stacks and shared fc layers, the mask heads' 2x2 deconv (on CPUs with
 * AVX-512, where it is fused with the label's logits), UperNet's convs of upsampled maps. The stem
 * and downsampling convs, depthwise convs, norms, softmax, GELU, residual sums, the
 * classifiers (conv_seg, fc_cls, fc_reg, rpn_cls / rpn_reg, retina_cls / retina_reg,
 * conv_logits), box decoding and NMS stay float32 (the backbone FFN's GELU and the
 * attention softmax's exponentials to bf16 accuracy, 8e-5 relative: their outputs are
 * rounded to bf16 next). README "bf16": the measured agreement. */
typedef enum { RV_PRECISION_F32 = 0, RV_PRECISION_BF16 } rv_precision;
/* 1 when this CPU can run RV_PRECISION_BF16 (AVX-512F/BW/VL and AVX512_BF16). */
RV_API int rv_cpu_has_bf16(void);
/* Switches m to precision p (bf16: the weights are converted once, here). Call before the
 * model is shared between threads. RV_ERR_UNSUPPORTED with a one-line message where the CPU
 * lacks AVX512_BF16 (m unchanged); RV_ERR_ARG for an unknown p. */
RV_API rv_status rv_model_set_precision(rv_model *m, rv_precision p, rv_ctx *ctx);
RV_API rv_precision rv_model_precision(const rv_model *m);
/* "f32" / "bf16" -> *p; RV_ERR_ARG (message naming the value) for anything else. */
RV_API rv_status rv_precision_parse(const char *name, rv_precision *p, rv_ctx *ctx);

/* order[0..n) = detection indices sorted by label, NMS order within a label (mmdet
 * bbox2result / results2json order). */
RV_API void rv_detections_class_order(int *order, const rv_detections *det);

#ifdef __cplusplus
}
#endif
#endif
