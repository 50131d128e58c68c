/* The offline demo models embedded in the binary (apps/demo_model.c): the segmentation model
 * (tools/train_demo.py, models/demo_seg.safetensors), --weights RV_CLI_DEMO, which `segment`
 * and `video` use without --weights; the detector (tools/train_det_demo.py, a RetinaNet,
 * models/demo_det.safetensors), --weights RV_CLI_DEMO_DET, which `detect` uses without
 * --weights. Loading them is apps/model_run.h's rv_cli_load_demo. */
#ifndef RV_APPS_DEMO_MODEL_H
#define RV_APPS_DEMO_MODEL_H

#include <stddef.h>

#define RV_CLI_DEMO "demo"
#define RV_CLI_DEMO_DET "demo-det"

/* 1 if weights is one of the two demo names. */
int rv_cli_is_demo(const char *weights);
/* The safetensors bytes of the demo detector (det 1) or segmentation model (det 0). */
const unsigned char *rv_cli_demo_bytes(int det, size_t *len);

#endif
