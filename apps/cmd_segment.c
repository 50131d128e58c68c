/* `ravlt segment --weights W IMAGE...`: semantic segmentation with an mmseg checkpoint. */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "apps/draw.h"
#include "apps/inputs.h"
#include "apps/model_run.h"
#include "apps/outputs.h"
#include "core/fs.h"
#include "apps/shard.h"
#include "apps/commands.h"

#include <stddef.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *weights, *model, *out_dir, *format, *mode, *shard, *precision;
  double opacity;
  int crop, stride, aug_test, strict;
} segment_opts;

static const rv_opt OPTS[] = {
    {"--weights", NULL, RV_OPT_STR, offsetof(segment_opts, weights), 0, 0, NULL, "W",
     "checkpoint (.pth or .safetensors), a 'ravlt models' name, or 'demo'\n"
     "(default): the built-in demo model, 6 classes of synthetic shapes\n"
     "('ravlt synth'; background, circle, triangle, square, hexagon,\n"
     "ellipse), not a model of real photographs", 0},
    {"--model", NULL, RV_OPT_STR, offsetof(segment_opts, model), 0, 0, NULL, "NAME",
     "architecture when the checkpoint has no config (e.g. upernet-ravlt-s)", 0},
    {"--out-dir", NULL, RV_OPT_STR, offsetof(segment_opts, out_dir), 0, 0, NULL, "DIR", "output folder (default: seg-out)", 0},
    {"--format", NULL, RV_OPT_CHOICE, offsetof(segment_opts, format), 0, 0, "png|overlay|both", "F",
     "png (label map), overlay, or both (default both)", 0},
    {"--opacity", NULL, RV_OPT_DOUBLE, offsetof(segment_opts, opacity), 0, 1, NULL, "A", "overlay opacity 0..1 (default 0.5)", 0},
    {"--mode", NULL, RV_OPT_CHOICE, offsetof(segment_opts, mode), 0, 0, "whole|slide", "M",
     "whole or slide inference (default: the checkpoint's test_cfg, else whole)", 0},
    {"--crop", NULL, RV_OPT_INT, offsetof(segment_opts, crop), 1, 65536, NULL, "N", "slide window size (default 512)", 0},
    {"--stride", NULL, RV_OPT_INT, offsetof(segment_opts, stride), 1, 65536, NULL, "N", "slide stride (default 341)", 0},
    {"--aug-test", NULL, RV_OPT_FLAG, offsetof(segment_opts, aug_test), 0, 0, NULL, NULL,
     "multi-scale (0.5..1.75) + flip test-time augmentation", 0},
    {"--shard", NULL, RV_OPT_STR, offsetof(segment_opts, shard), 0, 0, NULL, "i/N",
     "only images k (sorted input order, from 0) with k mod N == i (the\n"
     "shards write disjoint files into the same --out-dir)", 0},
    RV_CLI_PRECISION_OPT(segment_opts, precision),
    RV_OPT_STRICT(segment_opts, strict),
    RV_OPT_END};

const rv_cmd_spec rv_spec_segment = {
    "segment", "[--weights W] [options] IMAGE|DIR|GLOB...",
    "Semantic segmentation with a RAVLT Semantic FPN or UperNet checkpoint (mmseg .pth or\n"
    "its safetensors conversion). The test pipeline is mmseg's: keep-ratio resize to\n"
    "(2048, 512), normalize, whole-image inference, logits resized to the image, argmax.\n",
    OPTS, -1,
    "Label PNGs follow the ADE20K annotation convention: pixel value k+1 for class k (0..149),\n"
    "0 reserved for 'other/ignore' (never written by the model). Overlays: <name>_overlay.png\n"
    "with a legend of the classes present. Label maps: <name>.png (8-bit; 16-bit is not used,\n"
    "so at most 254 classes).\n"
    "\n"
    "Outputs: every output path is checked before the first image (folder writable, no output\n"
    "over an input); two inputs with the same file name in different folders would write the\n"
    "same output and are refused, listing the clashes (nothing is written). Each file is written\n"
    "to a temporary beside it and renamed (a symlink is written through, a device in place).\n"
    "Exit status: 0 done; 1 some images failed (the others' outputs are kept; each failed\n"
    "image is named); 2 usage; 128+N stopped by signal N (SIGINT, SIGTERM, SIGHUP: the images\n"
    "done are kept, the current one is finished or discarded; a second signal exits at once).\n",
    "  ravlt segment --weights upernet_ravlt_s.pth --out-dir out photos/\n"
    "  ravlt segment --weights upernet_ravlt_s.pth --aug-test --format png img.jpg\n"
    "  ravlt segment --mode slide --crop 256 --stride 170 synth_seg/images/validation/\n",
    sizeof(segment_opts)};

int rv_cmd_segment(int argc, char **argv) {
  segment_opts o = {NULL, NULL, "seg-out", "both", NULL, NULL, NULL, 0.5, 512, 341, 0, 0};
  int ninputs;
  int prc = rv_cli_parse(&rv_spec_segment, &o, argc, argv, &ninputs);
  if (prc >= 0) return prc;
  char **inputs = argv;
  const char *weights = o.weights, *name = o.model, *out_dir = o.out_dir, *mode = o.mode;
  rv_shard shard = {0, 1};
  double opacity = o.opacity;
  int crop = o.crop, stride = o.stride, aug = o.aug_test;
  int want_png = !strcmp(o.format, "png") || !strcmp(o.format, "both");
  int want_overlay = !strcmp(o.format, "overlay") || !strcmp(o.format, "both");
  if (!ninputs) return rv_cli_usage_error("segment", "no input images");
  if (rv_cli_check_model_opt("segment", weights, name)) return 2;
  if (o.shard && rv_shard_parse(&shard, o.shard)) return rv_cli_usage_error("segment", "--shard must be i/N with 0 <= i < N, not '%s'", o.shard);

  rv_ctx *ctx = rv_cli_ctx();
  rv_input_list list = {0};
  rv_model *m = NULL;
  rv_arena *arena = NULL;
  const char **names = NULL;
  unsigned char (*palette)[3] = NULL;
  int rc = 0;
  char **outs = NULL;
  const char **from = NULL;
  int nouts = 0;
  rv_status st = rv_inputs_collect(&list, inputs, ninputs, 0, ctx);
  /* every output checked before the model loads: folder, no output over an input, no clash */
  if (st == RV_OK) st = rv_out_check_dir(out_dir, ctx);
  if (st == RV_OK && (!(outs = calloc((size_t)list.n * 2 + 1, sizeof *outs)) || !(from = calloc((size_t)list.n * 2 + 1, sizeof *from))))
    st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (int i = 0; st == RV_OK && i < list.n; i++) {
    if (!rv_shard_has(&shard, (size_t)i)) continue;
    for (int k = 0; k < 2 && st == RV_OK; k++) {
      if (!(k == 0 ? want_png : want_overlay)) continue;
      char out[4096];
      rv_cli_out_name(out, sizeof out, out_dir, list.paths[i], k == 0 ? ".png" : "_overlay.png");
      from[nouts] = list.paths[i];
      if (!(outs[nouts++] = strdup(out))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    }
  }
  if (st == RV_OK) st = rv_cli_outputs_check((const char *const *)outs, from, nouts, (const char *const *)list.paths, list.n, ctx);
  int demo = !weights;
  if (demo) weights = RV_CLI_DEMO;
  if (st == RV_OK) st = demo ? rv_cli_load_demo(&m, 0, ctx) : rv_cli_load_model_ex(&m, weights, name, &(rv_model_load_opts){o.strict}, ctx);
  if (st == RV_OK) st = rv_cli_set_precision(m, o.precision, ctx);
  if (st == RV_OK && demo) rv_cli_demo_notice("segment", m);
  if (st == RV_OK) st = rv_cli_check_task(m, RV_TASK_SEGMENT, weights, "detect", ctx);
  if (st == RV_OK && rv_model_num_classes(m) > 254 && want_png)
    st = rv_error(ctx, RV_ERR_MODEL, "%s: %d classes do not fit an 8-bit label PNG", weights, rv_model_num_classes(m));
  if (st == RV_OK && !(arena = rv_arena_create(0))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (st == RV_OK && rv_cli_class_tables(m, &names, &palette)) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (st != RV_OK) { rc = rv_cli_fail(ctx, "segment", st); goto out; }
  if (mode) {
    rv_seg_test_cfg *t = rv_model_seg_test_cfg(m);
    t->mode = !strcmp(mode, "slide") ? RV_SEG_MODE_SLIDE : RV_SEG_MODE_WHOLE;
    t->crop_h = t->crop_w = crop;
    t->stride_h = t->stride_w = stride;
  }
  rv_seg_run_opts opts = {0};
  opts.aug_test = aug;
  opts.flip = 1;
  rv_progress prog;
  rv_progress_start(&prog, "segment", (long)rv_shard_size(&shard, (size_t)list.n));
  int failed = 0, done = 0;
  const char **failed_names = calloc((size_t)list.n + 1, sizeof *failed_names);
  if (!failed_names) { rc = rv_cli_fail(ctx, "segment", rv_error(ctx, RV_ERR_NOMEM, "out of memory")); goto out; }
  rv_cli_signals_install(1);
  for (int i = 0; i < list.n && !rv_cli_stop_signal(); i++) {
    if (!rv_shard_has(&shard, (size_t)i)) continue;
    const char *path = list.paths[i];
    rv_image img = {0}, lab = {0};
    int32_t *labels = NULL;
    double t0 = rv_now();
    st = rv_image_read(path, &img, ctx);
    if (st == RV_OK && !(labels = malloc(sizeof *labels * (size_t)img.h * img.w))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    if (st == RV_OK) st = rv_model_segment(m, labels, &img, &opts, arena, ctx);
    char out[4096];
    if (st == RV_OK && want_png) {
      st = rv_image_alloc(&lab, img.h, img.w, 1, ctx);
      for (size_t p = 0; st == RV_OK && p < (size_t)img.h * img.w; p++) lab.data[p] = (unsigned char)(labels[p] + 1);
      rv_cli_out_name(out, sizeof out, out_dir, path, ".png");
      if (st == RV_OK) st = rv_image_write(out, &lab, ctx);
    }
    if (st == RV_OK && want_overlay) {
      st = rv_draw_label_overlay(&img, labels, (const unsigned char (*)[3])palette, names, rv_model_num_classes(m), (float)opacity, 1, ctx);
      rv_cli_out_name(out, sizeof out, out_dir, path, "_overlay.png");
      if (st == RV_OK) st = rv_image_write(out, &img, ctx);
    }
    if (st != RV_OK) {
      fprintf(stderr, "%sravlt segment: %s: %s\n", rv_progress_break(&prog), path, rv_ctx_errmsg(ctx));
      failed_names[failed++] = path;
    } else {
      done++;
      rv_log(ctx, RV_LOG_DEBUG, "%s: %dx%d in %.3f s", path, img.w, img.h, rv_now() - t0);
    }
    free(labels);
    rv_image_free(&img);
    rv_image_free(&lab);
    rv_arena_reset(arena);
    rv_progress_step(&prog, 1);
  }
  rv_progress_end(&prog);
  int sig = rv_cli_stop_signal();
  rv_cli_signals_restore();
  if (sig) fprintf(stderr, "ravlt segment: stopped by signal %d after %d image(s); their outputs are complete\n", sig, done + failed);
  if (!rv_cli.quiet || failed) fprintf(stderr, "ravlt segment: %d image(s) written to %s/\n", done, out_dir);
  if (failed) {
    fprintf(stderr, "ravlt segment: %d image(s) failed:", failed);
    for (int k = 0; k < failed; k++) fprintf(stderr, " %s", failed_names[k]);
    fputc('\n', stderr);
  }
  free(failed_names);
  rc = rv_cli_signal_exit_code(failed ? 1 : 0);
out:
  for (int k = 0; outs && k < nouts; k++) free(outs[k]);
  free(outs);
  free(from);
  free(names);
  free(palette);
  rv_arena_free(arena);
  rv_model_free(m);
  rv_input_list_free(&list);
  rv_ctx_free(ctx);
  return rc;
}
