/* The model families ravlt runs: one row each, the one place an architecture is spelled.
 *
 *   const rv_family *f = rv_family_by_arch("mask_rcnn");      // or "maskrcnn"
 *   f->task == RV_TASK_DETECT; f->mmcv_type == "MaskRCNN"; f->name_prefix == "mask-rcnn-"
 *
 * Every other spelling derives from the table: the family ids (and the rv_det_arch /
 * rv_seg_arch values, which are family ids), model-name prefixes (rv_model_names),
 * the mmdet/mmseg config types read from a checkpoint's meta config, the key that tells a
 * family from a bare state_dict, the task, and the loader and forward the detector and the
 * segmentor dispatch through. A new detection head: one row here, its file in heads/, and
 * its rv_family_ops (load, forward, free) in models/detector.c; a new segmentation head: one
 * row, its file in heads/, and its rv_seg_family_ops in models/segmentor.c. Neither
 * assembly has other per-family code.
 */
#ifndef RV_MODELS_FAMILY_H
#define RV_MODELS_FAMILY_H

#include "core/weights.h"
#include <ravlt/model.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rv_task (RV_TASK_SEGMENT, RV_TASK_DETECT): <ravlt/model.h>. */

/* X(ID, arch, alias, title, name prefix, mmcv model.type, mmcv decode_head.type, sniff key,
 *   task, det_ops, seg_ops): det_ops / seg_ops are the family's loader, forward and free
 * (rv_family_ops_ID, models/detector.h; rv_seg_family_ops_ID, models/segmentor.h; NULL for
 * the other task), defined next to their assembly (models/detector.c, models/segmentor.c).
 * Each column is expanded where its ops are defined (detector.c's and segmentor.c's
 * FAMILY_OPS), not in rv_family: the table stays below the assemblies (no call cycle
 * family <-> detector / segmentor). Sniffing tries the rows in this order. */
#define RV_MODEL_FAMILIES(X)                                                                       \
  X(SEMANTIC_FPN, "semantic_fpn", NULL, "Semantic FPN", "semantic-fpn-", "EncoderDecoder",         \
    "FPNHead", "decode_head.scale_heads.0.0.conv.weight", RV_TASK_SEGMENT, NULL,                   \
    &rv_seg_family_ops_SEMANTIC_FPN)                                                               \
  X(UPERNET, "upernet", NULL, "UperNet", "upernet-", "EncoderDecoder", "UPerHead",                 \
    "decode_head.psp_modules.0.1.conv.weight", RV_TASK_SEGMENT, NULL, &rv_seg_family_ops_UPERNET)  \
  X(RETINANET, "retinanet", "retina", "RetinaNet", "retinanet-", "RetinaNet", NULL,                \
    "bbox_head.retina_cls.weight", RV_TASK_DETECT, &rv_family_ops_RETINANET, NULL)                 \
  X(CASCADE_MASK_RCNN, "cascade_mask_rcnn", "cascade", "Cascade Mask R-CNN", "cascade-mask-rcnn-", \
    "CascadeRCNN", NULL, "roi_head.bbox_head.2.fc_cls.weight", RV_TASK_DETECT,                     \
    &rv_family_ops_CASCADE_MASK_RCNN, NULL)                                                        \
  X(MASK_RCNN, "mask_rcnn", "maskrcnn", "Mask R-CNN", "mask-rcnn-", "MaskRCNN", NULL,              \
    "roi_head.bbox_head.fc_cls.weight", RV_TASK_DETECT, &rv_family_ops_MASK_RCNN, NULL)


/* The ops columns as array initialisers indexed by family id, for the files that define the
 * ops: {RV_MODEL_FAMILIES(RV_FAMILY_DET_OPS)} (detector.c), RV_FAMILY_SEG_OPS (segmentor.c). */
#define RV_FAMILY_DET_OPS(id, arch, alias, title, prefix, type, head, sniff, task, det, seg) det,
#define RV_FAMILY_SEG_OPS(id, arch, alias, title, prefix, type, head, sniff, task, det, seg) seg,

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
