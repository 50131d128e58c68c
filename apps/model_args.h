/* Helpers shared by `ravlt info`, `bench` and `classify`: RAVLT model names and sizes. */
#ifndef RV_APPS_MODEL_ARGS_H
#define RV_APPS_MODEL_ARGS_H

#include "backbone/ravlt.h"

/* MODEL is a preset name (rv_ravlt_preset) or a checkpoint file (.pth / .safetensors);
 * then the architecture is read from its weights, and *weights (if non-NULL) receives the
 * opened file (caller frees). Returns RV_OK or an error with the message in ctx. */
rv_status rv_model_config(const char *model, rv_ravlt_config *cfg, rv_weights **weights,
                          rv_ctx *ctx);


#endif
