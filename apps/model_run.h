/* Shared by `ravlt segment`, `detect` (and `eval` with --weights): loading a whole model
 * from --weights/--model, output file naming, class tables for drawing. */
#ifndef RV_APPS_MODEL_RUN_H
#define RV_APPS_MODEL_RUN_H

#include "apps/demo_model.h"
#include "models/model.h"

/* --weights W: an existing file is used as it is; else W may be a model-zoo name
 * (models/zoo.h, `ravlt models`): its checkpoint is downloaded into the cache (progress bar
 * on stderr), converted once to safetensors, and out receives that path; *model (if
 * non-NULL) the entry's rv_model_load name (NULL for a plain file). */
rv_status rv_cli_resolve_weights(char *out, size_t cap, const char *weights, const char **model,
                                 rv_ctx *ctx);
/* Load (weights: a file or a zoo name) with a log line "model: ... (architecture from ...)"; errors in ctx. */
rv_status rv_cli_load_model(rv_model **m, const char *weights, const char *name, rv_ctx *ctx);
/* The same with load options (opts->strict from a command's --strict; NULL: defaults). */
rv_status rv_cli_load_model_ex(rv_model **m, const char *weights, const char *name,
                               const rv_model_load_opts *opts, rv_ctx *ctx);
/* The debug log line "model: ARCH segmentor|detector, N classes (architecture from ...)". */
void rv_cli_log_model(const rv_model *m, rv_ctx *ctx);
/* The demo models (apps/demo_model.h): rv_cli_load_model loads them for the names RV_CLI_DEMO
 * and RV_CLI_DEMO_DET unless a file of that name exists; the commands run without --weights
 * load them with rv_cli_load_demo whatever files exist. */
/* det 0: the segmentation model (RV_CLI_DEMO), 1: the detector (RV_CLI_DEMO_DET). */
rv_status rv_cli_load_demo(rv_model **m, int det, rv_ctx *ctx);
/* --model NAME with the built-in demo model (weights NULL: none given, or 'demo' / 'demo-det'
 * naming no file), which has its own architecture and would ignore it: the command's usage
 * error (returns 2, the message on stderr); 0 when --model is absent or goes with a
 * checkpoint. Called before any work. */
int rv_cli_check_model_opt(const char *cmd, const char *weights, const char *model);
/* The one-line notice on stderr (not with --quiet; rank 0 only under mpirun) of a command run
 * without --weights. */
void rv_cli_demo_notice(const char *cmd, const rv_model *m);
/* RV_OK when m does the task want, else RV_ERR_MODEL "W: this checkpoint is a ARCH detector,
 * not a segmentor: use 'ravlt USE'" (USE: the command for the model's task, e.g. "detect" or
 * "eval coco"), naming the demo model of task want when weights is the other demo name. */
rv_status rv_cli_check_task(const rv_model *m, rv_task want, const char *weights, const char *use, rv_ctx *ctx);
/* --precision P of the inference commands (the option row: RV_CLI_PRECISION_OPT(struct,
 * field)); rv_cli_set_precision applies it to a loaded model (NULL or "f32": nothing to do;
 * "bf16": rv_model_set_precision, refused with one line on a CPU without AVX512_BF16). */
#define RV_CLI_PRECISION_OPT(T, f)                                                              \
  {"--precision", NULL, RV_OPT_CHOICE, offsetof(T, f), 0, 0, "f32|bf16", "P",                   \
   "arithmetic of the GEMM-heavy layers: f32 (the reference) or bf16\n"                         \
   "(AVX512_BF16 CPUs: faster, results differ slightly; README 'bf16')", 0, "f32"}
rv_status rv_cli_set_precision(rv_model *m, const char *precision, rv_ctx *ctx);
/* The same for a bare backbone (classifier presets and checkpoints, random models of bench). */
rv_status rv_cli_set_backbone_precision(rv_ravlt *b, const char *precision, rv_ctx *ctx);
/* Class names and RGB palette arrays of the model (malloc'd; free with free()). */
int rv_cli_class_tables(const rv_model *m, const char ***names, unsigned char (**palette)[3]);
/* out = dir + "/" + basename(path) without extension + suffix. */
void rv_cli_out_name(char *out, size_t n, const char *dir, const char *path, const char *suffix);

#endif
