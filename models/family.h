/* The model families ravlt runs: one row each, the one place an architecture is spelled.
 *
 *   const rv_family *f = rv_family_by_arch("mask_rcnn");      // or "maskrcnn"
 *   f->task == RV_TASK_DETECT; f->mmcv_type == "MaskRCNN"; f->name_prefix == "mask-rcnn-"
 *
 * Every other spelling derives from the table: the family ids (and the rv_det_arch /
 * rv_seg_arch values, which are family ids), model-name prefixes (rv_model_names),
 * the mmdet/mmseg config types read from a checkpoint's meta config, the key that tells a
 * family from a bare state_dict, the task, and the loader and forward the detector dispatches
 * through. A new detection head: one row here, its file in heads/, and its rv_family_ops
 * (load, forward, free) in models/detector.c; the detector has no other per-family code.
 */
#ifndef RV_MODELS_FAMILY_H
#define RV_MODELS_FAMILY_H

#include "core/weights.h"
#include <ravlt/model.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rv_task (RV_TASK_SEGMENT, RV_TASK_DETECT): <ravlt/model.h>. */

/* X(ID, arch, alias, name prefix, mmcv model.type, mmcv decode_head.type, sniff key, task,
 *   ops): ops is the family's loader and forward, rv_family_ops_ID, defined next to its
 * assembly (models/detector.c for detection families; NULL: the segmentor builds it from
 * the checkpoint's keys, models/segmentor.c). The ops column is expanded where the ops are
 * defined (detector.c's FAMILY_OPS), not in rv_family: the table stays below the detector
 * (no call cycle family <-> detector). Sniffing tries the rows in this order. */
#define RV_MODEL_FAMILIES(X)                                                                       \
  X(SEMANTIC_FPN, "semantic_fpn", NULL, "semantic-fpn-", "EncoderDecoder", "FPNHead",             \
    "decode_head.scale_heads.0.0.conv.weight", RV_TASK_SEGMENT, NULL)                              \
  X(UPERNET, "upernet", NULL, "upernet-", "EncoderDecoder", "UPerHead",                          \
    "decode_head.psp_modules.0.1.conv.weight", RV_TASK_SEGMENT, NULL)                              \
  X(RETINANET, "retinanet", "retina", "retinanet-", "RetinaNet", NULL,                             \
    "bbox_head.retina_cls.weight", RV_TASK_DETECT, &rv_family_ops_RETINANET)                       \
  X(CASCADE_MASK_RCNN, "cascade_mask_rcnn", "cascade", "cascade-mask-rcnn-", "CascadeRCNN", NULL,  \
    "roi_head.bbox_head.2.fc_cls.weight", RV_TASK_DETECT, &rv_family_ops_CASCADE_MASK_RCNN)        \
  X(MASK_RCNN, "mask_rcnn", "maskrcnn", "mask-rcnn-", "MaskRCNN", NULL,                            \
    "roi_head.bbox_head.fc_cls.weight", RV_TASK_DETECT, &rv_family_ops_MASK_RCNN)


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
  const char *name_prefix; /* model names are this + a backbone ("cascade-mask-rcnn-ravlt-s") */
  const char *mmcv_type;   /* the config's model.type */
  const char *mmcv_head;   /* model.decode_head.type (EncoderDecoder families), else NULL */
  const char *sniff_key;   /* a state_dict key only this family has */
  rv_task task;
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

#ifdef __cplusplus
}
#endif
#endif
