/* The model families ravlt runs: one row each, the one place an architecture is spelled,
 * and the one ops shape every family has, whatever its task.
 *
 *   const rv_family *f = rv_family_by_arch("mask_rcnn");      // or "maskrcnn"
 *   f->task == RV_TASK_DETECT; f->mmcv_type == "MaskRCNN"; f->name_prefix == "mask-rcnn-"
 *
 *   // a whole model (models/model.c): the row's ops, the same calls for both tasks
 *   void *head; rv_family_load L = {f, model_json, config_json, &seg_test};
 *   ops->load(&head, &L, params, ctx);                        // neck + heads from the weights
 *   rv_family_run r = {img, &meta, features, backbone, ...};  // + the output asked for
 *   ops->forward(head, &r, arena, ctx);                        // calls r.features(img)
 *   ops->set_precision(head, RV_PRECISION_BF16, ctx);
 *   ops->free(head);
 *
 * Every other spelling derives from the table: the family ids (and the rv_det_arch /
 * rv_seg_arch values, which are family ids), model-name prefixes (rv_model_names),
 * the mmdet/mmseg config types read from a checkpoint's meta config, the key that tells a
 * family from a bare state_dict, the task, the built-in class set, and the family's ops.
 *
 * The ops (rv_family_ops) are one shape for both tasks: load (the part after the backbone,
 * and the family's test settings from the meta config), forward (one pre-processed input
 * -> the task's output), set_precision, free. A whole model runs its backbone and then the
 * family's forward the same way for every family; models/model.c has no per-task or
 * per-family branch: what differs lives behind the ops, in the family's implementation
 * (models/detector.c, models/segmentor.c).
 *
 * Why forward takes a "features of this input" function (rv_features_fn) rather than the
 * features of the whole input: mmseg's slide mode runs the backbone once per crop window,
 * never on the whole input, and both the windows and whether there are any are the
 * segmentation family's test_cfg. Handing the family precomputed features would cost slide
 * mode a whole-input backbone pass it never uses (the dominant cost, and memory), and
 * letting the model cut the crops would put mmseg's slide rule (and a task branch) in the
 * model. With the function, the model gives every family the same thing (its backbone on
 * any input tensor), a detector or a whole-mode segmentor calls it once on the input, a
 * slide-mode segmentor once per window, and the model keeps only pre-processing: one input
 * per forward (an aug-test is the model's list of (scale, flip) inputs, pre-processed and
 * passed one forward each, their probabilities summed by the family). Tests drive the same
 * forward with a function that counts its calls (tests/unit/models/test_family.c).
 *
 * A new detection head: one row here (ops: &rv_detector_family_ops), its file in heads/,
 * and its part in models/detector.c (rv_det_head_ops: FPN config, load, forward, test_cfg,
 * bf16, free, in the detector's HEADS list); a new segmentation head: one row (ops:
 * &rv_segmentor_family_ops), its file in heads/, its rv_seg_head_ops in models/segmentor.c.
 */
#ifndef RV_MODELS_FAMILY_H
#define RV_MODELS_FAMILY_H

#include "formats/weights.h"
#include "datasets/preprocess.h"
#include "heads/det.h"
#include "nn/param.h"
#include <ravlt/model.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rv_task (RV_TASK_SEGMENT, RV_TASK_DETECT): <ravlt/model.h>. */

/* X(ID, arch, alias, title, name prefix, mmcv model.type, mmcv decode_head.type, sniff key,
 *   task, built-in class set, ops): the class set ("coco", "ade20k": datasets/classes.h)
 * names the classes a checkpoint without meta CLASSES has when its class count matches;
 * ops is the family's rv_family_ops (below). The ops column is expanded where it is used
 * (models/model.c: RV_FAMILY_OPS), not in rv_family: the table stays below the
 * implementations (no call cycle family <-> detector / segmentor). Sniffing tries the
 * rows in this order. */
#define RV_MODEL_FAMILIES(X)                                                                       \
  X(SEMANTIC_FPN, "semantic_fpn", NULL, "Semantic FPN", "semantic-fpn-", "EncoderDecoder",         \
    "FPNHead", "decode_head.scale_heads.0.0.conv.weight", RV_TASK_SEGMENT, "ade20k",               \
    &rv_segmentor_family_ops)                                                                      \
  X(UPERNET, "upernet", NULL, "UperNet", "upernet-", "EncoderDecoder", "UPerHead",                 \
    "decode_head.psp_modules.0.1.conv.weight", RV_TASK_SEGMENT, "ade20k", &rv_segmentor_family_ops) \
  X(RETINANET, "retinanet", "retina", "RetinaNet", "retinanet-", "RetinaNet", NULL,                \
    "bbox_head.retina_cls.weight", RV_TASK_DETECT, "coco", &rv_detector_family_ops)                \
  X(CASCADE_MASK_RCNN, "cascade_mask_rcnn", "cascade", "Cascade Mask R-CNN", "cascade-mask-rcnn-", \
    "CascadeRCNN", NULL, "roi_head.bbox_head.2.fc_cls.weight", RV_TASK_DETECT, "coco",             \
    &rv_detector_family_ops)                                                                       \
  X(MASK_RCNN, "mask_rcnn", "maskrcnn", "Mask R-CNN", "mask-rcnn-", "MaskRCNN", NULL,              \
    "roi_head.bbox_head.fc_cls.weight", RV_TASK_DETECT, "coco", &rv_detector_family_ops)

/* The ops column as an array initialiser indexed by family id:
 * {RV_MODEL_FAMILIES(RV_FAMILY_OPS)} (models/model.c). */
#define RV_FAMILY_OPS(id, arch, alias, title, prefix, type, head, sniff, task, classes, ops) ops,

typedef enum {
#define RV_FAMILY_ENUM_(id, ...) RV_FAMILY_##id,
  RV_MODEL_FAMILIES(RV_FAMILY_ENUM_)
#undef RV_FAMILY_ENUM_
  RV_FAMILY_COUNT
} rv_family_id;

typedef struct {
  rv_family_id id;
  const char *arch;        /* "cascade_mask_rcnn": rv_model_arch, a fixture's "kind" */
  const char *alias;       /* another spelling rv_family_by_arch accepts ("cascade"), or NULL */
  const char *title;       /* for messages: "Cascade Mask R-CNN" */
  const char *name_prefix; /* model names are this + a backbone ("cascade-mask-rcnn-ravlt-s") */
  const char *mmcv_type;   /* the config's model.type */
  const char *mmcv_head;   /* model.decode_head.type (EncoderDecoder families), else NULL */
  const char *sniff_key;   /* a state_dict key only this family has */
  rv_task task;
  const char *classes;     /* the built-in class set ("coco", "ade20k") of the family's data */
} rv_family;

/* Row id (RV_FAMILY_COUNT rows), NULL when out of range. */
const rv_family *rv_family_get(int id);
/* By arch or alias; NULL if none. */
const rv_family *rv_family_by_arch(const char *arch);
/* By model-name prefix; *backbone (may be NULL) receives the rest of the name. */
const rv_family *rv_family_by_name(const char *name, const char **backbone);
/* By the config's model.type and decode_head.type (NULL when absent). */
const rv_family *rv_family_by_mmcv(const char *type, const char *head_type);
/* The first family of `task` (or of any task when task < 0) whose sniff key w has. */
const rv_family *rv_family_sniff(const rv_weights *w, int task);


/* ---- the family ops: one shape for both tasks ------------------------------------------- */

/* The features of one input: the backbone on img ([1, 3, H, W], any size), num_feats maps
 * in stage order (strides 4, 8, 16, 32), allocated from the arena. The model gives every
 * family the same function (its backbone); see the top of this file for why a function. */
typedef rv_status (*rv_features_fn)(void *user, rv_tensor *feats, int num_feats, rv_tensor img,
                                    rv_arena *a, rv_ctx *ctx);

struct cJSON;
struct rv_seg_test_cfg; /* models/segmentor.h */
struct rv_detector;     /* models/detector.h */
struct rv_seg_decoder;  /* models/segmentor.h */

/* What load is given, and what the family reports back. */
typedef struct {
  const rv_family *family;
  const struct cJSON *model;    /* the meta config's model dict, NULL when there is none */
  const struct cJSON *config;   /* the whole meta config (older ones keep test_cfg there) */
  struct rv_seg_test_cfg *seg_test; /* the model's whole / slide settings: a segmentation
                                     * family sets them (default + the config's test_cfg) */
  /* out */
  int num_classes;
  int has_masks;                /* instance masks (detectors with a mask branch) */
  rv_preprocess_params pre;     /* the family's test pipeline (mmdet's, mmseg's) */
  /* the loaded parts, for the parts' own APIs (checks, benchmarks); NULL where not one */
  const struct rv_detector *detector;
  const struct rv_seg_decoder *decoder;
} rv_family_load;

/* One forward: one pre-processed input and the output asked for; a family fills the
 * output its task gives and fails with RV_ERR_MODEL on the other. */
typedef struct {
  rv_tensor img;                /* pre-processed [1, 3, H, W] */
  const rv_img_meta *meta;      /* its meta (ori / img / pad shape, scale factor) */
  rv_features_fn features;      /* the backbone: features(features_user, ...) */
  void *features_user;
  const struct rv_seg_test_cfg *seg_test; /* segmentation: whole / slide */
  /* detection: detections in original image coordinates (from the arena) */
  rv_detections *det;
  const rv_det_trace *trace;    /* may be NULL */
  /* segmentation: labels[ori_h * ori_w] (simple test), or probs[C, ori_h, ori_w] +=
   * the softmax of this input, mirrored back when flipped (one aug-test input) */
  int32_t *labels;
  float *probs;
  int flipped, ori_h, ori_w;
} rv_family_run;

typedef struct rv_family_ops rv_family_ops;
struct rv_family_ops {
  /* the part after the backbone (neck and heads) from p, and the family's test settings
   * from L->model / L->config (the official ones where absent): *head its state */
  rv_status (*load)(void **head, rv_family_load *L, rv_params *p, rv_ctx *ctx);
  /* one input -> the task's output (r->features runs the backbone); head is immutable */
  rv_status (*forward)(const void *head, const rv_family_run *r, rv_arena *a, rv_ctx *ctx);
  /* bf16 / f32 for the neck and heads (their classifiers stay float32); on failure the
   * head is float32 again */
  rv_status (*set_precision)(void *head, rv_precision p, rv_ctx *ctx);
  void (*free)(void *head);
};

/* The two implementations (models/detector.c, models/segmentor.c). */
extern const rv_family_ops rv_detector_family_ops;
extern const rv_family_ops rv_segmentor_family_ops;

/* The features of a RAVLT backbone (user: const rv_ravlt *, backbone/ravlt.h): the outputs
 * of its out_indices in stage order; RV_ERR_MODEL unless there are num_feats of them. */
rv_status rv_family_ravlt_features(void *user, rv_tensor *feats, int num_feats, rv_tensor img,
                                   rv_arena *a, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
