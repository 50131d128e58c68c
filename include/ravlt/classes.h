/* ravlt public API: the built-in class sets (names exactly as the official datasets spell
 * them: mmdet CocoDataset.CLASSES, mmseg ADE20KDataset.CLASSES, ILSVRC-2012).
 *
 *   const rv_class_set *ade = rv_class_set_find("ade20k");
 *   for (int k = 0; k < ade->n; k++) printf("%d %s\n", k, ade->classes[k]);
 *   int label = rv_coco_label_of_category(18);          // COCO category id -> 0..79
 *
 * A loaded model's own names: rv_model_class_name (<ravlt/model.h>).
 */
#ifndef RAVLT_CLASSES_H
#define RAVLT_CLASSES_H

#include <ravlt/core.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RV_COCO_NUM_CLASSES 80
#define RV_ADE20K_NUM_CLASSES 150
#define RV_IMAGENET_NUM_CLASSES 1000

typedef struct {
  const char *name;                    /* "coco", "ade20k", "imagenet" */
  int n;
  const char *const *classes;
  const unsigned char (*palette)[3];   /* RGB, n entries */
} rv_class_set;

/* "coco" | "ade20k" | "imagenet" (case-insensitive); NULL if unknown. */
RV_API const rv_class_set *rv_class_set_find(const char *name);
/* label (0..79) of a COCO category id, or -1. */
RV_API int rv_coco_label_of_category(int category_id);
/* A deterministic distinct colour for any index (for class sets without a palette). */
RV_API void rv_palette_color(int index, unsigned char rgb[3]);

#ifdef __cplusplus
}
#endif
#endif
