/* Class names, dataset category ids and palettes (constant data).
 *
 *   const char *name = rv_coco_classes[label];          // label 0..79 (mmdet order)
 *   int cat_id = rv_coco_category_ids[label];           // COCO json category_id 1..90
 *   const unsigned char *rgb = rv_ade20k_palette[k];    // k 0..149, mmseg PALETTE (RGB)
 *   const rv_class_set *cs = rv_class_set_find("ade20k");
 *
 * Names are spelled exactly as the official datasets (mmdet CocoDataset.CLASSES, mmseg
 * ADE20KDataset.CLASSES, including its 'bed ' with a trailing space; checkpoints carry
 * the same tuples in meta.CLASSES). The ADE20K palette is mmseg's PALETTE; COCO has no
 * official palette, rv_coco_palette is a fixed set of distinct colours.
 */
#ifndef RV_DATASETS_CLASSES_H
#define RV_DATASETS_CLASSES_H

#include <ravlt/classes.h>

#ifdef __cplusplus
extern "C" {
#endif

/* RV_*_NUM_CLASSES, rv_class_set, rv_class_set_find, rv_coco_label_of_category and
 * rv_palette_color are public: <ravlt/classes.h>. The tables themselves are internal. */

extern const char *const rv_coco_classes[RV_COCO_NUM_CLASSES];
extern const int rv_coco_category_ids[RV_COCO_NUM_CLASSES];
extern const unsigned char rv_coco_palette[RV_COCO_NUM_CLASSES][3]; /* RGB */
extern const char *const rv_ade20k_classes[RV_ADE20K_NUM_CLASSES];
extern const unsigned char rv_ade20k_palette[RV_ADE20K_NUM_CLASSES][3]; /* RGB */
/* ILSVRC-2012 synset descriptions in class-index order ("tench, Tinca tinca", ...). */
extern const char *const rv_imagenet_classes[RV_IMAGENET_NUM_CLASSES];

#ifdef __cplusplus
}
#endif
#endif
