/* Shared by `ravlt segment`, `detect` (and `eval` with --weights): loading a whole model
 * from --weights/--model, output file naming, class tables for drawing. */
#ifndef RV_APPS_MODEL_RUN_H
#define RV_APPS_MODEL_RUN_H

#include "models/model.h"

/* --weights W: an existing file is used as it is; else W may be a model-zoo name
 * (models/zoo.h, `ravlt models`): its checkpoint is downloaded into the cache (progress bar
 * on stderr), converted once to safetensors, and out receives that path; *model (if
 * non-NULL) the entry's rv_model_load name (NULL for a plain file). */
rv_status rv_cli_resolve_weights(char *out, size_t cap, const char *weights, const char **model,
                                 rv_ctx *ctx);
/* Load (weights: a file or a zoo name) with a log line "model: ... (architecture from ...)"; errors in ctx. */
rv_status rv_cli_load_model(rv_model **m, const char *weights, const char *name, rv_ctx *ctx);
/* The offline demo model (tools/train_demo.py; models/demo_seg.safetensors, demo_det for
 * detection) used when no --weights is given: looked up in $RAVLT_DEMO_DIR, <binary>/../models
 * (a build folder inside the source tree), <binary>/../share/ravlt, ./models. 0 and the path
 * in out if found, else -1. */
int rv_cli_demo_weights(char *out, size_t cap, rv_task task);
/* Class names and RGB palette arrays of the model (malloc'd; free with free()). */
int rv_cli_class_tables(const rv_model *m, const char ***names, unsigned char (**palette)[3]);
/* out = dir + "/" + basename(path) without extension + suffix. */
void rv_cli_out_name(char *out, size_t n, const char *dir, const char *path, const char *suffix);

#endif
