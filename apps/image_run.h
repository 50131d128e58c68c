/* The image-run driver of every command that runs a model over images (segment, detect,
 * classify, eval coco / ade20k with --weights, the service's workers), and the per-image work
 * of each task, callable on its own (an image in memory -> the result -> its outputs).
 *
 * A path-list command (segment, detect, classify) is its option table plus callbacks:
 *
 *   typedef struct { rv_model_opts mo; const char *out_dir, *shard; } seg_opts;
 *   static const rv_opt OPTS[] = {RV_MODEL_OPTS(seg_opts, mo, "checkpoint ..."),
 *       {"--out-dir", NULL, RV_OPT_STR, offsetof(seg_opts, out_dir), ..., "output folder", 0, "out"},
 *       ..., RV_OPT_END};
 *   static rv_status one(void *user, rv_image_run *r, size_t k, const char *path, rv_image *img,
 *                        rv_ctx *ctx) {
 *     int32_t *labels;
 *     RV_TRY(rv_task_segment(&r->model, img, NULL, r->arena, &labels, ctx));
 *     ... write path's outputs; free(labels); return RV_OK;
 *   }
 *   seg_opts o = {0};                                  // the table's defaults are parsed in
 *   rv_cli_parse(&SPEC, &o, argc, argv, &nargs) ...;
 *   const char *suffixes[] = {".png", NULL};           // out_dir/<stem>.png per input
 *   rv_image_cmd c = {{.cmd = "segment", .user = &o, .image = one}, RV_RUN_SEGMENT, "detect",
 *                     &o.mo, argv, nargs, o.shard, o.out_dir, suffixes};
 *   return rv_image_cmd_run(&c);
 *
 * The service calls the rv_task_* functions per request with an image decoded from the
 * request body, on a model loaded once with rv_run_model_load (weights shared by the
 * workers, an arena per worker).
 *
 * rv_image_cmd_run: collect the inputs (apps/inputs.h), check every output before any work
 * (apps/outputs.h), load the model (--weights / --model / --strict / --precision, the demo
 * model when there is no --weights), prepare, run the images of the shard (progress bar,
 * SIGINT / SIGTERM / SIGHUP polled between images, a failed image named and the others run),
 * finish (the command's files), then the summary: the signal, the command's line, the failed
 * images; exit status 0, 1 (some failed), 128+N (signal N), or the error's.
 *
 * Commands whose items are not a path list (eval's datasets) use the pieces: rv_run_model_load
 * and rv_image_loop. */
#ifndef RV_APPS_IMAGE_RUN_H
#define RV_APPS_IMAGE_RUN_H

#include "apps/cli.h"
#include "apps/inputs.h"
#include "apps/model_run.h"
#include "apps/shard.h"
#include "backbone/ravlt.h"
#include "formats/image.h"
#include <ravlt/tile.h>

#include <cjson/cJSON.h>
#include <stddef.h>

/* ---- the model options: one block of every model command's table ---- */
typedef struct {
  const char *weights, *model, *precision;
  int strict;
} rv_model_opts;

#define RV_MODEL_OPT_WEIGHTS(T, f, HELP)                                                        \
  {"--weights", NULL, RV_OPT_STR, offsetof(T, f.weights), 0, 0, NULL, "W", HELP, 0}
#define RV_MODEL_OPT_MODEL(T, f)                                                                \
  {"--model", NULL, RV_OPT_STR, offsetof(T, f.model), 0, 0, NULL, "NAME",                       \
   "architecture when the checkpoint has no config (e.g. upernet-ravlt-s,\n"                    \
   "mask-rcnn-ravlt-t; 'ravlt models')", 0}
#define RV_MODEL_OPT_PRECISION(T, f) RV_CLI_PRECISION_OPT(T, f.precision)
/* --weights W (its help: what W may be for this command), --model, --precision, --strict */
#define RV_MODEL_OPTS(T, f, WEIGHTS_HELP)                                                       \
  RV_MODEL_OPT_WEIGHTS(T, f, WEIGHTS_HELP), RV_MODEL_OPT_MODEL(T, f), RV_MODEL_OPT_PRECISION(T, f), \
      RV_OPT_STRICT(T, f.strict)

/* ---- the loaded model ---- */
typedef enum { RV_RUN_SEGMENT, RV_RUN_DETECT, RV_RUN_CLASSIFY } rv_run_kind;

typedef struct {
  rv_run_kind kind;
  rv_model *m;          /* segment / detect */
  rv_ravlt *classifier; /* classify */
  const char *weights;  /* as given, or the demo model's name */
  int demo;             /* the built-in demo model (no --weights) */
  int num_classes;
  const char **names;          /* segment / detect: class names and RGB palette */
  unsigned char (*palette)[3];
} rv_run_model;

/* --model with the demo model, or no --weights where there is no demo (classify): the usage
 * error printed, 2; else 0. Called before any work. */
int rv_model_opts_check(const char *cmd, rv_run_kind kind, const rv_model_opts *mo);
/* Load what mo names for the task: mo->weights NULL: the built-in demo model of the task (a
 * notice on stderr); the checkpoint, --strict, --precision, then the task checked (use: the
 * command for the other task, named in the error). classify: a RAVLT classifier checkpoint. */
rv_status rv_run_model_load(rv_run_model *rm, const char *cmd, rv_run_kind kind, const char *use,
                            const rv_model_opts *mo, rv_ctx *ctx);
void rv_run_model_free(rv_run_model *rm);

/* ---- the per-image work (no files, no printing): what the commands and the service call ---- */
/* labels (img->h x img->w class indices, malloc'd: free()) */
rv_status rv_task_segment(const rv_run_model *rm, const rv_image *img, const rv_seg_run_opts *o, rv_arena *arena,
                          int32_t **labels, rv_ctx *ctx);
/* the same on tiles at the image's own resolution (docs/large-images.md) */
rv_status rv_task_segment_tiled(const rv_run_model *rm, const rv_image *img, const rv_tile_opts *to, rv_arena *arena,
                                int32_t **labels, rv_ctx *ctx);
/* the label PNG's image: pixel k+1 for class k (ADE20K's annotation convention, 8-bit) */
rv_status rv_task_label_image(rv_image *lab, const int32_t *labels, int h, int w, rv_ctx *ctx);
/* the overlay with its legend, drawn on img in place */
rv_status rv_task_overlay(const rv_run_model *rm, rv_image *img, const int32_t *labels, float opacity, rv_ctx *ctx);
/* detections (arrays in arena) and *order (mmdet's class order, malloc'd: free()) */
rv_status rv_task_detect(const rv_run_model *rm, const rv_image *img, rv_arena *arena, rv_detections *det,
                         int **order, rv_ctx *ctx);
/* the same on tiles (masks: whole-image RLEs), the order likewise */
rv_status rv_task_detect_tiled(const rv_run_model *rm, const rv_image *img, const rv_tile_opts *to, rv_arena *arena,
                               rv_tile_detections *det, int **order, rv_ctx *ctx);
rv_status rv_task_draw_tiled(const rv_run_model *rm, rv_image *img, const rv_tile_detections *det, float thr,
                             rv_ctx *ctx);
/* boxes, masks and tags of the detections with score >= thr, drawn on img in place */
rv_status rv_task_draw_detections(const rv_run_model *rm, rv_image *img, const rv_detections *det, float thr,
                                  rv_ctx *ctx);
/* softmax probabilities (num_classes floats) and the indices of the top classes in order[0..top-1]
 * (order holds num_classes ints); size: the crop (ImageNet eval transform) */
rv_status rv_task_classify(const rv_run_model *rm, const rv_image *img, int size, rv_arena *arena, float *prob,
                           int *order, int top, rv_ctx *ctx);
/* {"image", "top": [{"index", "label", "prob"}]} of one image (NULL: out of memory) */
cJSON *rv_task_classify_json(const rv_run_model *rm, const char *image, const float *prob, const int *order, int top);

/* ---- the loop ---- */
typedef struct rv_image_run rv_image_run;
struct rv_image_run {
  /* set by the command */
  const char *cmd;  /* "segment": "ravlt segment: ..." and the progress bar's label */
  size_t n;         /* items 0..n-1 */
  rv_shard shard;   /* only the shard's items run ({0, 1}: all) */
  int keep_going;   /* a failed item is named on stderr and the others run; 0: the first failure ends the loop */
  int list_failed;  /* the summary lists the failed items' paths */
  void *user;
  /* item k's image file into buf; an error: the item fails */
  rv_status (*path)(void *user, rv_image_run *r, size_t k, char *buf, size_t cap, rv_ctx *ctx);
  /* 1: item k was done by an earlier run (counted by the progress bar, not run); may be NULL */
  int (*skip)(void *user, size_t k);
  /* the name of item k in its error ("image 3 (a.jpg)"; the message becomes "NAME: ERROR");
   * NULL: the message stands as it is */
  void (*name)(void *user, rv_image_run *r, size_t k, const char *path, char *buf, size_t cap);
  /* the work on item k's image (read by the driver, the command's to change); arena reset after */
  rv_status (*image)(void *user, rv_image_run *r, size_t k, const char *path, rv_image *img, rv_ctx *ctx);
  /* set by the driver */
  rv_run_model model; /* rv_image_cmd_run loads it; the pieces' users may fill it */
  rv_input_list list; /* rv_image_cmd_run: the inputs */
  rv_arena *arena;
  size_t done, failed;
  char **failed_paths; /* list_failed: the paths of the failed items */
  int signal;          /* the signal that stopped the loop, or 0 */
  double t_model;      /* seconds in reading + the image callback */
};

/* Run the items of r->shard (the loop): RV_OK when it ran to its end, or was stopped by a
 * signal (r->signal), failed items named and counted (keep_going); else the error that ended
 * it (out of memory always does). Creates r->arena if NULL. */
rv_status rv_image_loop(rv_image_run *r, rv_ctx *ctx);
/* On stderr: "ravlt CMD: stopped by signal N after K image(s)..." when a signal came, then
 * "ravlt CMD: SUMMARY" (if non-NULL; not with --quiet unless some failed), then the failed
 * items: "ravlt CMD: N image(s) failed[ NOTE]: paths" (list_failed) or "... (named above)". */
void rv_image_run_report(const rv_image_run *r, const char *summary, const char *failed_note);
void rv_image_run_free(rv_image_run *r); /* the arena, the failed list, the inputs, the model */

/* ---- a path-list command ---- */
typedef struct {
  rv_image_run run; /* cmd, user and image set; the rest filled by rv_image_cmd_run */
  rv_run_kind kind;
  const char *use;         /* the command for the other task (the wrong-task error) */
  const rv_model_opts *mo;
  char **args;             /* IMAGE|DIR|GLOB... */
  int nargs;
  const char *shard;       /* --shard i/N, or NULL */
  const char *out_dir;     /* the folder of per-image outputs (checked, created), or NULL */
  const char *const *suffixes; /* per-image outputs: out_dir/<stem><suffix>, NULL-terminated */
  const char *const *outs; /* other outputs (NULL entries skipped), named "--json" if they clash */
  int n_outs;
  const char *extra_in;    /* another input no output may overwrite (--ann), or NULL */
  /* after the model loads, before the first image (the run's model and list are set) */
  rv_status (*prepare)(void *user, rv_image_run *r, rv_ctx *ctx);
  /* after the loop (also after a signal): the command's files */
  rv_status (*finish)(void *user, rv_image_run *r, rv_ctx *ctx);
  /* the summary line (without "ravlt CMD: "), printed unless --quiet (always when some failed) */
  void (*summary)(void *user, const rv_image_run *r, char *buf, size_t cap);
  const char *failed_note; /* "(not in the results)" */
} rv_image_cmd;

/* The whole command; returns its exit status. */
int rv_image_cmd_run(rv_image_cmd *c);

#endif
