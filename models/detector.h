/* Detector assembly (mmdet 2.11 test path): backbone features + image meta -> FPN -> RPN ->
 * RoI heads (Cascade Mask R-CNN, Mask R-CNN) or RetinaNet head -> detections in original
 * image coordinates (boxes, scores, labels, masks as U8 at the original size).
 *
 *   rv_det_arch arch;
 *   rv_detector_guess_arch(&arch, weights, ctx);           // from the state_dict names
 *   rv_detector_config cfg = rv_detector_default_config(arch);
 *   rv_detector *det;
 *   if (rv_detector_load(&det, &cfg, weights, ctx) != RV_OK) ...;
 *   rv_detections out;
 *   rv_detector_forward(det, &out, feats, &meta, NULL, arena, ctx); // feats: 4 backbone maps
 *   for (int i = 0; i < out.n; i++) ... out.bboxes[4*i], out.scores[i], out.labels[i] ...
 *   rv_detector_free(det);
 *
 * The model is immutable after loading and may be shared by threads, each with its own
 * arena and context. Detections come in NMS order (score descending);
 * rv_detections_class_order gives mmdet's bbox2result order (by class, stable).
 */
#ifndef RV_MODELS_DETECTOR_H
#define RV_MODELS_DETECTOR_H

#include "heads/det.h"
#include "models/family.h"
#include "necks/fpn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The detection families of models/family.h (the values are their family ids). */
typedef enum {
  RV_DET_CASCADE_MASK_RCNN = RV_FAMILY_CASCADE_MASK_RCNN,
  RV_DET_MASK_RCNN = RV_FAMILY_MASK_RCNN,
  RV_DET_RETINANET = RV_FAMILY_RETINANET
} rv_det_arch;

/* The family's arch: "cascade_mask_rcnn", "mask_rcnn", "retinanet". */
const char *rv_det_arch_name(rv_det_arch a);
/* A detection family's arch or alias ("cascade", "maskrcnn", "retina"); -1 if unknown. */
int rv_det_arch_parse(const char *s, rv_det_arch *out);

typedef struct {
  rv_det_arch arch;
  rv_rpn_cfg rpn;        /* two-stage: test_cfg.rpn */
  rv_rcnn_cfg rcnn;      /* two-stage: test_cfg.rcnn */
  rv_retina_cfg retina;  /* RetinaNet: test_cfg */
  int with_masks;        /* 1: run the mask branch if the weights have one (default) */
  /* target_stds of the RoI box coders per stage (config bbox_head[i].bbox_coder); defaults
   * cascade [.1,.1,.2,.2] [.05,.05,.1,.1] [.033,.033,.067,.067], Mask R-CNN [.1,.1,.2,.2] */
  double rcnn_stds[3][4];
} rv_detector_config;

/* Official test_cfg of the RALA configs for the architecture. */
rv_detector_config rv_detector_default_config(rv_det_arch arch);
/* Architecture from tensor names: the detection family whose sniff key (models/family.h) the
 * weights have. RV_ERR_MODEL if none matches. */
rv_status rv_detector_guess_arch(rv_det_arch *arch, const rv_weights *w, rv_ctx *ctx);

typedef struct rv_detector rv_detector;

/* Loads the neck and heads (keys neck.*, rpn_head.*, roi_head.*, bbox_head.*); backbone
 * channels are read from the FPN lateral weights. */
rv_status rv_detector_load(rv_detector **out, const rv_detector_config *cfg,
                           const rv_weights *w, rv_ctx *ctx);
/* The same through a parameter loader (nn/param.h): the keys consumed are marked in p. */
rv_status rv_detector_load_params(rv_detector **out, const rv_detector_config *cfg,
                                  rv_params *p, rv_ctx *ctx);
void rv_detector_free(rv_detector *d);
const rv_detector_config *rv_detector_config_of(const rv_detector *d);
int rv_detector_num_classes(const rv_detector *d);
int rv_detector_has_masks(const rv_detector *d);

/* feats: the 4 backbone outputs (strides 4, 8, 16, 32 of the padded input), batch 1.
 * Outputs (and all activations) come from the arena; the trace hook (may be NULL) sees
 * "neck.out.i", "rpn.cls_score.i", "rpn.bbox_pred.i", "rpn.proposals",
 * "rpn.proposal_scores", "roi.stageS.*", "mask.*", "retina.cls_score.i", ... */
rv_status rv_detector_forward(const rv_detector *d, rv_detections *out, const rv_tensor *feats,
                              const rv_img_meta *meta, const rv_det_trace *trace,
                              rv_arena *arena, rv_ctx *ctx);

/* rv_detections_class_order (mmdet bbox2result order): <ravlt/model.h>. */

/* A detection family's head part (the detector's own per-family code, defined in
 * models/detector.c and found by family id): the detector (load, forward, bf16, the
 * test_cfg of a meta config) dispatches every per-family step through it. The model does
 * not see it: it runs a detector through rv_detector_family_ops (models/family.h). */
typedef struct rv_det_head_ops rv_det_head_ops;
struct rv_det_head_ops {
  int fpn_first_level;     /* backbone level of the FPN's first input (RetinaNet: 1) */
  rv_fpn_config (*fpn_config)(void);
  /* the head from p (the neck is loaded before): sets d's head, classes, input channels */
  rv_status (*load)(rv_detector *d, rv_params *p, rv_ctx *ctx);
  void (*free)(rv_detector *d);
  /* pyramid (5 levels) -> detections */
  rv_status (*forward)(const rv_detector *d, rv_detections *out, const rv_tensor *pyramid,
                       const rv_img_meta *meta, const rv_det_trace *trace, rv_arena *arena,
                       rv_ctx *ctx);
  int (*has_masks)(const rv_detector *d);
  /* the head's convs in bf16 (on 1) or float32 (on 0); on failure float32 again */
  rv_status (*set_bf16)(rv_detector *d, int on, rv_ctx *ctx);
  /* the family's part of an mmdet test_cfg (cJSON dict) into cfg */
  void (*test_cfg)(rv_detector_config *cfg, const struct cJSON *test_cfg);
};
/* The head part of a detection family id; NULL when a is not one. */
const rv_det_head_ops *rv_det_arch_ops(rv_det_arch a);

/* cfg's test settings from an mmdet meta config (model: its model dict, config: the whole
 * config, either may be NULL): model.test_cfg, else the older top-level test_cfg. */
void rv_detector_config_from_meta(rv_detector_config *cfg, const struct cJSON *model,
                                  const struct cJSON *config);

/* The bf16 mode of the neck and heads (necks/fpn.h, heads/det.h: the classifiers and
 * regressors stay float32); on 0 frees it (float32 results bit for bit again). */
rv_status rv_detector_set_bf16(rv_detector *d, int on, rv_ctx *ctx);
#ifdef __cplusplus
}
#endif
#endif
