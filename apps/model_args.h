/* Helpers shared by `ravlt info`, `bench` and `classify`: RAVLT model names and sizes. */
#ifndef RV_APPS_MODEL_ARGS_H
#define RV_APPS_MODEL_ARGS_H

#include "backbone/ravlt.h"

/* "HxW" (or "N" for a square) -> 0, else -1. */
int rv_parse_size(const char *s, int *h, int *w);
/* MODEL is a preset name (rv_ravlt_preset) or a checkpoint file (.pth / .safetensors);
 * then the architecture is read from its weights, and *weights (if non-NULL) receives the
 * opened file (caller frees). Returns RV_OK or an error with the message in ctx. */
rv_status rv_model_config(const char *model, rv_ravlt_config *cfg, rv_weights **weights,
                          rv_ctx *ctx);

/* OpenBLAS 0.3.21 (Debian 12) does not know recent Xeons (e.g. family 6 model 207) and
 * falls back to its SSE3 "Prescott" kernels, 3-5x slower than its AVX-512 ones. If that
 * happened, OPENBLAS_CORETYPE is unset and the CPU has AVX-512 (SkylakeX kernels) or
 * AVX2+FMA (Haswell kernels), set it and re-execute the process (OpenBLAS picks its
 * kernels when it is loaded) with the same command line (/proc/self/cmdline). Returns
 * only if nothing was done or the exec failed. */
void rv_cli_fix_blas_core(void);

#endif
