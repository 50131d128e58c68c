/* `ravlt segment --weights W IMAGE...`: semantic segmentation with an mmseg checkpoint. */
#define _POSIX_C_SOURCE 200809L
#include "apps/commands.h"
#include "apps/image_run.h"
#include "apps/tile_cli.h"

#include <stddef.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  rv_model_opts mo;
  const char *out_dir, *format, *mode, *shard;
  double opacity;
  int crop, stride, aug_test;
  rv_tile_cli tile;
} segment_opts;

static const rv_opt OPTS[] = {
    RV_MODEL_OPT_WEIGHTS(segment_opts, mo,
                         "checkpoint (.pth or .safetensors), a 'ravlt models' name, or 'demo'\n"
                         "(default): the built-in demo model, 6 classes of synthetic shapes\n"
                         "('ravlt synth'; background, circle, triangle, square, hexagon,\n"
                         "ellipse), not a model of real photographs"),
    RV_MODEL_OPT_MODEL(segment_opts, mo),
    {"--out-dir", NULL, RV_OPT_STR, offsetof(segment_opts, out_dir), 0, 0, NULL, "DIR", "output folder", 0, "seg-out"},
    {"--format", NULL, RV_OPT_CHOICE, offsetof(segment_opts, format), 0, 0, "png|overlay|both", "F",
     "png (label map), overlay, or both", 0, "both"},
    {"--opacity", NULL, RV_OPT_DOUBLE, offsetof(segment_opts, opacity), 0, 1, NULL, "A", "overlay opacity 0..1", 0, "0.5"},
    {"--mode", NULL, RV_OPT_CHOICE, offsetof(segment_opts, mode), 0, 0, "whole|slide", "M",
     "whole or slide inference (default: the checkpoint's test_cfg, else whole)", 0},
    {"--crop", NULL, RV_OPT_INT, offsetof(segment_opts, crop), 1, 65536, NULL, "N", "slide window size", 0, "512"},
    {"--stride", NULL, RV_OPT_INT, offsetof(segment_opts, stride), 1, 65536, NULL, "N", "slide stride", 0, "341"},
    {"--aug-test", NULL, RV_OPT_FLAG, offsetof(segment_opts, aug_test), 0, 0, NULL, NULL,
     "multi-scale (0.5..1.75) + flip test-time augmentation", 0},
    {"--shard", NULL, RV_OPT_STR, offsetof(segment_opts, shard), 0, 0, NULL, "i/N",
     "only images k (sorted input order, from 0) with k mod N == i (the\n"
     "shards write disjoint files into the same --out-dir)", 0},
    RV_TILE_OPTS_SEG(segment_opts, tile),
    RV_MODEL_OPT_PRECISION(segment_opts, mo),
    RV_OPT_STRICT(segment_opts, mo.strict),
    RV_OPT_END};

const rv_cmd_spec rv_spec_segment = {
    "segment", "[--weights W] [options] IMAGE|DIR|GLOB...",
    "Semantic segmentation with a RAVLT Semantic FPN or UperNet checkpoint (mmseg .pth or\n"
    "its safetensors conversion). The test pipeline is mmseg's: keep-ratio resize to\n"
    "(2048, 512), normalize, whole-image inference, logits resized to the image, argmax.\n"
    "With --tile, mmseg's slide inference over the image at its own resolution (no resize),\n"
    "tiles of HxW, logits averaged where they overlap, the memory of one band of tile rows\n"
    "(docs/large-images.md).\n",
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
    "  ravlt segment --mode slide --crop 256 --stride 170 synth_seg/images/validation/\n"
    "  ravlt segment --weights upernet_ravlt_s.pth --tile 512x512 --format png orthophoto.tif\n",
    sizeof(segment_opts)};

typedef struct {
  const segment_opts *o;
  int png, overlay;
  rv_seg_run_opts ro;
  int tiled; /* --tile */
  rv_tile_opts to;
  rv_tile_cli_progress bar;
} segment_run;

static rv_status prepare(void *user, rv_image_run *r, rv_ctx *ctx) {
  segment_run *u = user;
  const rv_run_model *rm = &r->model;
  if (rm->num_classes > 254 && u->png)
    return rv_error(ctx, RV_ERR_MODEL, "%s: %d classes do not fit an 8-bit label PNG", rm->weights, rm->num_classes);
  if (u->o->mode) {
    rv_seg_test_cfg *t = rv_model_seg_test_cfg(rm->m);
    t->mode = !strcmp(u->o->mode, "slide") ? RV_SEG_MODE_SLIDE : RV_SEG_MODE_WHOLE;
    t->crop_h = t->crop_w = u->o->crop;
    t->stride_h = t->stride_w = u->o->stride;
  }
  return RV_OK;
}

/* One image: the label PNG and / or the overlay. */
static rv_status one(void *user, rv_image_run *r, size_t k, const char *path, rv_image *img, rv_ctx *ctx) {
  (void)k;
  segment_run *u = user;
  rv_image lab = {0};
  int32_t *labels = NULL;
  char out[4096];
  rv_status st = u->tiled ? rv_task_segment_tiled(&r->model, img, &u->to, r->arena, &labels, ctx)
                         : rv_task_segment(&r->model, img, &u->ro, r->arena, &labels, ctx);
  if (st == RV_OK && u->png) {
    rv_cli_out_name(out, sizeof out, u->o->out_dir, path, ".png");
    st = rv_task_label_image(&lab, labels, img->h, img->w, ctx);
    if (st == RV_OK) st = rv_image_write(out, &lab, ctx);
    rv_image_free(&lab); /* written: not held while the overlay is drawn and encoded */
  }
  if (st == RV_OK && u->overlay) {
    rv_cli_out_name(out, sizeof out, u->o->out_dir, path, "_overlay.png");
    st = rv_task_overlay(&r->model, img, labels, (float)u->o->opacity, ctx);
    free(labels); /* drawn: not held while the overlay is encoded */
    labels = NULL;
    if (st == RV_OK) st = rv_image_write(out, img, ctx);
  }
  free(labels);
  rv_image_free(&lab);
  return st;
}

static void summary(void *user, const rv_image_run *r, char *buf, size_t cap) {
  snprintf(buf, cap, "%zu image(s) written to %s/", r->done, ((const segment_run *)user)->o->out_dir);
}

int rv_cmd_segment(int argc, char **argv) {
  segment_opts o = {0};
  int ninputs;
  int prc = rv_cli_parse(&rv_spec_segment, &o, argc, argv, &ninputs);
  if (prc >= 0) return prc;
  if (rv_tile_cli_check("segment", &o.tile)) return 2;
  if (o.tile.tile[0] > 0 && (o.mode || o.aug_test))
    return rv_cli_usage_error("segment", "--tile is its own slide inference at the image's resolution: not with %s",
                              o.mode ? "--mode" : "--aug-test");
  segment_run u = {&o, !strcmp(o.format, "png") || !strcmp(o.format, "both"),
                   !strcmp(o.format, "overlay") || !strcmp(o.format, "both"), {0}};
  if ((u.tiled = rv_tile_cli_opts(&o.tile, &u.to))) rv_tile_cli_progress_attach(&u.bar, &u.to, "segment tiles");
  u.ro.aug_test = o.aug_test;
  u.ro.flip = 1;
  const char *suffixes[3] = {u.png ? ".png" : "_overlay.png", u.png && u.overlay ? "_overlay.png" : NULL, NULL};
  rv_image_cmd c = {{.cmd = "segment", .user = &u, .image = one}, RV_RUN_SEGMENT, "detect", &o.mo, argv, ninputs,
                    o.shard, o.out_dir, suffixes, NULL, 0, NULL, prepare, NULL, summary, NULL};
  return rv_image_cmd_run(&c);
}
