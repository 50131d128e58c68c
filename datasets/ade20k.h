/* ADE20K (ADEChallengeData2016) folders and label-map evaluation.
 *
 *   rv_seg_areas acc; rv_seg_areas_init(&acc, 150, ctx);
 *   size_t n = 0;
 *   rv_ade20k_eval_dirs(&acc, "pred/", "ADEChallengeData2016/annotations/validation",
 *                       RV_ADE_PRED_ANNOTATION, 0, &n, ctx);
 *   rv_seg_metrics m; rv_seg_metrics_compute(&m, &acc, ctx);
 *
 * Layout: <root>/images/validation/<name>.jpg and <root>/annotations/validation/<name>.png
 * (uint8: 0 = "other", ignored; k in 1..150 = class k-1; mmseg's ADE20KDataset sets
 * reduce_zero_label). Predictions are label PNGs matched by file name, either in the same
 * annotation convention (what `ravlt segment` writes: k = class k-1, 0 = no class) or as
 * class indices 0..149 (larger values = no class), the layout of the fixtures.
 */
#ifndef RV_DATASETS_ADE20K_H
#define RV_DATASETS_ADE20K_H

#include "core/rv.h"
#include "eval/segmetrics.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RV_ADE20K_CLASSES 150

typedef struct {
  char **names; /* sorted file names (no directory) */
  size_t n;
} rv_name_list;

/* Regular files in dir whose name ends with ext (".png"), sorted by strcmp. */
rv_status rv_list_files(rv_name_list *out, const char *dir, const char *ext, rv_ctx *ctx);
void rv_name_list_free(rv_name_list *l);

/* <root>/images/validation and <root>/annotations/validation (both must exist). */
rv_status rv_ade20k_layout(const char *root, char *img_dir, char *ann_dir, size_t cap, rv_ctx *ctx);

/* rv_ade_pred_format, rv_ade20k_add_pair (one prediction / annotation PNG pair; labels
 * outside 0..C and 255, and annotation-convention predictions above C, are an error naming
 * the file, value and pixel) and rv_ade20k_eval_dirs are public: <ravlt/eval.h>. */

#ifdef __cplusplus
}
#endif
#endif
