/* Whole dense models with random weights for `ravlt bench NAME --random-weights`: the
 * backbone preset of the name ("upernet-ravlt-s" -> ravlt-s-backbone) with random weights,
 * and the neck/heads of the family (models/family.h) built from random tensors with the
 * official checkpoints' key names and widths (UperNet 512, Semantic FPN 256/128, 150
 * classes; FPN 256, RPN, RoI heads with 1024-wide fcs, 80 classes).
 *
 * Detection counts are forced to realistic values (random weights otherwise give 0 or
 * thousands of boxes):
 *   - Mask R-CNN / Cascade: the RPN keeps its test_cfg (nms_pre 1000 per level, NMS 0.7,
 *     1000 proposals per image: random scores fill them); rcnn score_thr 0, so the RoI head
 *     keeps max_per_img = 100 detections, each with its mask pasted at image size.
 *   - RetinaNet: test_cfg unchanged (nms_pre 1000, score_thr 0.05, 100 per image);
 *     retina_cls's bias at mmdet's prior 0.01 except for one class at 0.1, so that this
 *     class's 1000 best anchors per level pass 0.05 (~4700 candidates into NMS at 800x1344;
 *     mmdet's init alone lets none pass with random weights): 100 detections.
 */
#ifndef RV_APPS_BENCH_MODELS_H
#define RV_APPS_BENCH_MODELS_H

#include "backbone/ravlt.h"
#include "datasets/preprocess.h"
#include "models/detector.h"
#include "models/segmentor.h"

typedef struct {
  const char *name;            /* the model name ("cascade-mask-rcnn-ravlt-s") */
  const char *arch;            /* family arch ("cascade_mask_rcnn") */
  rv_task task;
  rv_ravlt *backbone;
  rv_seg_decoder *decoder;     /* segmentors */
  rv_seg_test_cfg seg_test;
  rv_detector *detector;       /* detectors */
  rv_preprocess_params pre;
} rv_bench_model;

/* --precision for a random model: the backbone (rv_cli_set_backbone_precision), then for
 * bf16 the neck and heads, as rv_model_set_precision switches a loaded model. */
rv_status rv_bench_model_set_precision(rv_bench_model *m, const char *precision, rv_ctx *ctx);
/* 1 when name is one of rv_model_names(). */
int rv_bench_is_model_name(const char *name);
/* The names, comma-separated, into buf (truncated to cap). */
void rv_bench_model_list(char *buf, size_t cap);
/* Builds the random model (seed: deterministic weights). RV_ERR_ARG for an unknown name,
 * the message listing the model names. */
rv_status rv_bench_model_create(rv_bench_model *m, const char *name, uint64_t seed, rv_ctx *ctx);
void rv_bench_model_free(rv_bench_model *m);

#endif
