/* `ravlt detect [--weights W] IMAGE...`: object detection / instance segmentation with an
 * mmdet checkpoint (Cascade Mask R-CNN, Mask R-CNN, RetinaNet); without --weights the
 * built-in demo detector (synthetic shapes). */
#define _POSIX_C_SOURCE 200809L
#include "apps/eval_report.h"
#include "apps/image_run.h"
#include "apps/tile_cli.h"
#include "datasets/coco.h"
#include "datasets/det_json.h"
#include "apps/commands.h"

#include <stddef.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  rv_model_opts mo;
  const char *out_dir, *json, *shard, *ann;
  double thr;
  int no_draw;
  rv_tile_cli tile;
} detect_opts;

static const rv_opt OPTS[] = {
    RV_MODEL_OPT_WEIGHTS(detect_opts, mo,
                         "checkpoint (.pth or .safetensors), a 'ravlt models' name, or 'demo-det'\n"
                         "(default): the built-in demo detector, a RetinaNet for the 5 classes\n"
                         "of synthetic shapes (`ravlt synth --task det`)"),
    RV_MODEL_OPT_MODEL(detect_opts, mo),
    {"--out-dir", NULL, RV_OPT_STR, offsetof(detect_opts, out_dir), 0, 0, NULL, "DIR",
     "folder for drawings <name>_det.jpg", 0, "det-out"},
    {"--score-thr", NULL, RV_OPT_DOUBLE, offsetof(detect_opts, thr), 0, 1, NULL, "T",
     "draw detections with score >= T, 0..1 (the JSON keeps all)", 0, "0.3"},
    {"--json", NULL, RV_OPT_STR, offsetof(detect_opts, json), 0, 0, NULL, "FILE",
     "COCO results JSON (bbox; masks go to FILE with .segm.json when the\n"
     "model has masks; '-': stdout, for a model without masks); category\n"
     "ids of COCO when the model has its 80 classes; image ids: see below", 0},
    {"--ann", NULL, RV_OPT_STR, offsetof(detect_opts, ann), 0, 0, NULL, "GT.json",
     "COCO annotation file: each image's id is the id of the image of the\n"
     "same file_name there (as mmdet's test.py numbers them)", 0},
    {"--no-draw", NULL, RV_OPT_FLAG, offsetof(detect_opts, no_draw), 0, 0, NULL, NULL, "do not write drawings", 0},
    {"--shard", NULL, RV_OPT_STR, offsetof(detect_opts, shard), 0, 0, NULL, "i/N",
     "only images k (sorted input order, from 0) with k mod N == i; with --json\n"
     "image ids stay those of the whole list and FILE.shard.json describes the\n"
     "part for `ravlt merge`", 0},
    RV_TILE_OPTS_DET(detect_opts, tile),
    RV_MODEL_OPT_PRECISION(detect_opts, mo),
    RV_OPT_STRICT(detect_opts, mo.strict),
    RV_OPT_END};

const rv_cmd_spec rv_spec_detect = {
    "detect", "[--weights W] [options] IMAGE|DIR|GLOB...",
    "Detection and instance segmentation with a RAVLT Cascade Mask R-CNN, Mask R-CNN or\n"
    "RetinaNet checkpoint (mmdet .pth or its safetensors conversion). The test pipeline is\n"
    "mmdet's: keep-ratio resize to the checkpoint's img_scale ((1333, 800) for the official\n"
    "ones, (320, 240) for the demo detector), normalize, pad to 32, the checkpoint's test_cfg\n"
    "(score > 0.05, NMS, at most 100 per image). With --tile, the image is cut into\n"
    "overlapping tiles of its own resolution, each run through that pipeline, and their\n"
    "detections merged class by class (SAHI; docs/large-images.md).\n",
    OPTS, -1,
    "COCO image ids of the --json results: with --ann, the id of the image of the same file\n"
    "name in GT.json (an input missing there is an error); without --ann, when every input's\n"
    "file stem is all digits (COCO's 000000397133.jpg), that number; else the position of the\n"
    "image in the sorted input list + 1.\n"
    "\n"
    "Every output is checked before the first image (folders writable, no output over an\n"
    "input, no two inputs drawing to the same file name: clashes are listed and nothing is\n"
    "written). Files are written to a temporary beside them and renamed (a symlink is written\n"
    "through, a device in place). Exit status: 0 done; 1 some images failed (each is named;\n"
    "the JSON holds the others' results); 2 usage; 128+N stopped by signal N (SIGINT, SIGTERM,\n"
    "SIGHUP: the JSON holds the images done; a second signal exits at once).\n",
    "  ravlt detect --weights cascade_ravlt_s.pth --out-dir out photo.jpg\n"
    "  ravlt detect --weights cascade_ravlt_s.pth --ann instances_val2017.json --json dets.json --no-draw val2017/\n"
    "  ravlt eval coco --ann instances_val2017.json --results dets.json\n"
    "  ravlt detect --json dets.json synth_det/images/      # the built-in demo detector\n"
    "  ravlt detect --weights cascade_ravlt_s.pth --tile 800x1333 --tile-merge nmm drone.jpg\n",
    sizeof(detect_opts)};

/* Stem of a path (file name without folder and extension) when it is all digits: its number. */
static int digit_stem(const char *path, int64_t *id) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  const char *dot = strrchr(b, '.');
  size_t n = dot ? (size_t)(dot - b) : strlen(b);
  if (n == 0 || n > 18) return 0;
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (b[i] < '0' || b[i] > '9') return 0;
    v = v * 10 + (b[i] - '0');
  }
  *id = v;
  return 1;
}

/* The COCO image id of each input (see the epilog of --help); ids[] of list.n entries. */
static rv_status image_ids(int64_t *ids, const rv_input_list *list, const char *ann, rv_ctx *ctx) {
  if (ann) {
    rv_coco *gt = NULL;
    RV_TRY(rv_coco_load(&gt, ann, 0, rv_cli.threads, ctx));
    rv_status st = RV_OK;
    for (int i = 0; i < list->n && st == RV_OK; i++) {
      const char *b = strrchr(list->paths[i], '/');
      b = b ? b + 1 : list->paths[i];
      int found = 0;
      for (size_t k = 0; k < gt->n_images && !found; k++) {
        const char *f = gt->images[k].file_name;
        if (!f) continue;
        const char *fb = strrchr(f, '/');
        fb = fb ? fb + 1 : f;
        if (!strcmp(fb, b)) { ids[i] = gt->images[k].id; found = 1; }
      }
      if (!found) st = rv_error(ctx, RV_ERR_NOTFOUND, "%s: no image with file_name '%s' in %s", list->paths[i], b, ann);
    }
    rv_coco_free(gt);
    return st;
  }
  int digits = list->n > 0;
  for (int i = 0; i < list->n && digits; i++) digits = digit_stem(list->paths[i], &ids[i]);
  for (int i = 0; i < list->n && digits; i++)
    for (int k = 0; k < i; k++)
      if (ids[k] == ids[i]) digits = 0; /* 1.jpg and 001.png: not ids */
  if (!digits)
    for (int i = 0; i < list->n; i++) ids[i] = i + 1;
  return RV_OK;
}

typedef struct {
  const detect_opts *o;
  char segm[4096], side[4096]; /* FILE.segm.json, FILE.shard.json */
  int masks;
  int64_t *ids;       /* the COCO image id of each input */
  int *cat_ids;       /* of each class */
  rv_det_json *res;   /* --json */
  rv_part_image *part; /* --shard with --json: the images done */
  size_t n_part;
  long total;         /* detections */
  int tiled;          /* --tile */
  rv_tile_opts to;
  rv_tile_cli_progress bar;
} detect_run;

static rv_status prepare(void *user, rv_image_run *r, rv_ctx *ctx) {
  detect_run *u = user;
  const rv_run_model *rm = &r->model;
  u->masks = rv_detector_has_masks(rv_model_detector(rm->m));
  if (!(u->ids = malloc(sizeof *u->ids * (r->n + 1)))) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  RV_TRY(image_ids(u->ids, &r->list, u->o->ann, ctx));
  if (rv_cli_json_stdout(u->o->json) && u->masks)
    return rv_error(ctx, RV_ERR_ARG, "--json -: this model has masks, whose results go to a second file: give --json FILE");
  if (!u->o->json) return RV_OK;
  if (!(u->cat_ids = malloc(sizeof *u->cat_ids * (size_t)rm->num_classes)) || !(u->res = rv_det_json_create(u->masks)))
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (int i = 0; i < rm->num_classes; i++) u->cat_ids[i] = rv_model_category_id(rm->m, i);
  if (u->o->shard && !(u->part = calloc(r->n + 1, sizeof *u->part))) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  return RV_OK;
}

/* One tiled image: its drawing, then its results. */
static rv_status one_tiled(detect_run *u, rv_image_run *r, size_t k, const char *path, rv_image *img, rv_ctx *ctx) {
  rv_tile_detections det = {0};
  int *order = NULL;
  const int w = img->w, h = img->h;
  rv_status st = rv_task_detect_tiled(&r->model, img, &u->to, r->arena, &det, &order, ctx);
  if (st == RV_OK && !u->o->no_draw) {
    char out[4096];
    rv_cli_out_name(out, sizeof out, u->o->out_dir, path, "_det.jpg");
    st = rv_task_draw_tiled(&r->model, img, &det, (float)u->o->thr, ctx);
    if (st == RV_OK) st = rv_image_write(out, img, ctx);
  }
  if (st == RV_OK && u->res)
    st = rv_det_json_add_rle(u->res, u->ids[k], det.n, det.bboxes, det.scores, det.labels, det.masks, order, u->cat_ids, ctx);
  if (st == RV_OK && u->part) u->part[u->n_part++] = (rv_part_image){u->ids[k], w, h, r->list.paths[k]};
  if (st == RV_OK) {
    int shown = 0;
    for (int i = 0; i < det.n; i++) shown += det.scores[i] >= u->o->thr;
    u->total += det.n;
    rv_log(ctx, RV_LOG_DEBUG, "%s: %d tiles, %d detections merged (%d >= %.2f)", path, det.runs, det.n, shown, u->o->thr);
  }
  free(order);
  return st;
}

/* One image: its drawing, then its results. */
static rv_status one(void *user, rv_image_run *r, size_t k, const char *path, rv_image *img, rv_ctx *ctx) {
  detect_run *u = user;
  if (u->tiled) return one_tiled(u, r, k, path, img, ctx);
  rv_detections det = {0};
  int *order = NULL;
  const int w = img->w, h = img->h;
  rv_status st = rv_task_detect(&r->model, img, r->arena, &det, &order, ctx);
  if (st == RV_OK && u->o->tile.max_dets > 0 && det.n > u->o->tile.max_dets) { /* the best N (det is by score) */
    det.n = u->o->tile.max_dets;
    rv_detections_class_order(order, &det);
  }
  if (st == RV_OK && !u->o->no_draw) {
    char out[4096];
    rv_cli_out_name(out, sizeof out, u->o->out_dir, path, "_det.jpg");
    st = rv_task_draw_detections(&r->model, img, &det, (float)u->o->thr, ctx);
    if (st == RV_OK) st = rv_image_write(out, img, ctx);
  }
  if (st == RV_OK && u->res) st = rv_det_json_add(u->res, u->ids[k], &det, order, u->cat_ids, ctx);
  if (st == RV_OK && u->part) u->part[u->n_part++] = (rv_part_image){u->ids[k], w, h, r->list.paths[k]};
  if (st == RV_OK) {
    int shown = 0;
    for (int i = 0; i < det.n; i++) shown += det.scores[i] >= u->o->thr;
    u->total += det.n;
    rv_log(ctx, RV_LOG_DEBUG, "%s: %d detections (%d >= %.2f)", path, det.n, shown, u->o->thr);
  }
  free(order);
  return st;
}

/* The results of every image that succeeded (and ran, after a signal), then the part's sidecar. */
static rv_status finish(void *user, rv_image_run *r, rv_ctx *ctx) {
  detect_run *u = user;
  const detect_opts *o = u->o;
  if (!u->res) return RV_OK;
  RV_TRY(rv_cli_json_stdout(o->json) ? rv_det_json_fwrite(u->res, stdout, 0, ctx)
                                     : rv_det_json_write(u->res, o->json, u->masks ? u->segm : NULL, ctx));
  if (!u->part) return RV_OK;
  rv_part_run run = {"", (long long)rv_det_json_count(u->res), -1};
  rv_digest items;
  rv_digest_init(&items);
  for (size_t i = 0; i < r->n; i++) rv_digest_str(&items, r->list.paths[i]);
  char model_key[512];
  rv_tile_cli_key(model_key, sizeof model_key, o->mo.model, &o->tile);
  rv_part_run_id(&run, r->model.weights, model_key, o->ann, &items);
  return rv_part_write_coco(u->side, &r->shard, r->n, NULL, o->json, u->masks ? u->segm : NULL, u->part, u->n_part, &run,
                            ctx);
}

static void summary(void *user, const rv_image_run *r, char *buf, size_t cap) {
  const detect_run *u = user;
  const int draw = !u->o->no_draw, file = u->res && !rv_cli_json_stdout(u->o->json);
  snprintf(buf, cap, "%zu image(s), %ld detections%s%s%s%s", r->done, u->total, draw ? ", drawings in " : "",
           draw ? u->o->out_dir : "", file ? ", results in " : "", file ? u->o->json : "");
}

int rv_cmd_detect(int argc, char **argv) {
  detect_opts o = {0};
  int ninputs;
  int prc = rv_cli_parse(&rv_spec_detect, &o, argc, argv, &ninputs);
  if (prc >= 0) return prc;
  if (rv_cli_json_stdout(o.json) && o.shard) return rv_cli_usage_error("detect", "--json - (stdout) with --shard: give the part a file name");
  if (o.ann && !o.json) return rv_cli_usage_error("detect", "--ann numbers the images of --json FILE: give --json too");
  if (rv_tile_cli_check("detect", &o.tile)) return 2;
  detect_run u = {&o};
  if ((u.tiled = rv_tile_cli_opts(&o.tile, &u.to))) rv_tile_cli_progress_attach(&u.bar, &u.to, "detect tiles");
  if (o.json) {
    rv_cli_sibling_path(u.segm, sizeof u.segm, o.json, ".segm.json");
    rv_cli_sibling_path(u.side, sizeof u.side, o.json, ".shard.json");
  }
  const char *suffixes[2] = {o.no_draw ? NULL : "_det.jpg", NULL};
  const char *outs[3] = {o.json, o.json && !rv_cli_json_stdout(o.json) ? u.segm : NULL, o.json && o.shard ? u.side : NULL};
  rv_image_cmd c = {{.cmd = "detect", .user = &u, .image = one}, RV_RUN_DETECT, "segment", &o.mo, argv, ninputs,
                    o.shard, o.no_draw ? NULL : o.out_dir, suffixes, outs, 3, o.ann, prepare, finish, summary,
                    "(not in the results)"};
  int rc = rv_image_cmd_run(&c);
  free(u.ids);
  free(u.cat_ids);
  free(u.part);
  rv_det_json_free(u.res);
  return rc;
}
