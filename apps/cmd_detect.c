/* `ravlt detect [--weights W] IMAGE...`: object detection / instance segmentation with an
 * mmdet checkpoint (Cascade Mask R-CNN, Mask R-CNN, RetinaNet); without --weights the
 * built-in demo detector (synthetic shapes). */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "apps/draw.h"
#include "apps/inputs.h"
#include "apps/model_run.h"
#include "apps/outputs.h"
#include "core/fs.h"
#include "apps/shard.h"
#include "datasets/coco.h"
#include "datasets/det_json.h"
#include "apps/commands.h"

#include <stddef.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *weights, *model, *out_dir, *json, *shard, *ann, *precision;
  double thr;
  int no_draw, strict;
} detect_opts;

static const rv_opt OPTS[] = {
    {"--weights", NULL, RV_OPT_STR, offsetof(detect_opts, weights), 0, 0, NULL, "W",
     "checkpoint (.pth or .safetensors), a 'ravlt models' name, or 'demo-det'\n"
     "(default): the built-in demo detector, a RetinaNet for the 5 classes\n"
     "of synthetic shapes (`ravlt synth --task det`)", 0},
    {"--model", NULL, RV_OPT_STR, offsetof(detect_opts, model), 0, 0, NULL, "NAME",
     "architecture when the checkpoint has no config (e.g. mask-rcnn-ravlt-t)", 0},
    {"--out-dir", NULL, RV_OPT_STR, offsetof(detect_opts, out_dir), 0, 0, NULL, "DIR",
     "folder for drawings <name>_det.jpg (default: det-out)", 0},
    {"--score-thr", NULL, RV_OPT_DOUBLE, offsetof(detect_opts, thr), 0, 1, NULL, "T",
     "draw detections with score >= T, 0..1 (default 0.3; the JSON keeps all)", 0},
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
    RV_CLI_PRECISION_OPT(detect_opts, precision),
    RV_OPT_STRICT(detect_opts, strict),
    RV_OPT_END};

const rv_cmd_spec rv_spec_detect = {
    "detect", "[--weights W] [options] IMAGE|DIR|GLOB...",
    "Detection and instance segmentation with a RAVLT Cascade Mask R-CNN, Mask R-CNN or\n"
    "RetinaNet checkpoint (mmdet .pth or its safetensors conversion). The test pipeline is\n"
    "mmdet's: keep-ratio resize to the checkpoint's img_scale ((1333, 800) for the official\n"
    "ones, (320, 240) for the demo detector), normalize, pad to 32, the checkpoint's test_cfg\n"
    "(score > 0.05, NMS, at most 100 per image).\n",
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
    "  ravlt detect --json dets.json synth_det/images/      # the built-in demo detector\n",
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

int rv_cmd_detect(int argc, char **argv) {
  detect_opts o = {NULL, NULL, "det-out", NULL, NULL, NULL, NULL, 0.3, 0, 0};
  int ninputs;
  int prc = rv_cli_parse(&rv_spec_detect, &o, argc, argv, &ninputs);
  if (prc >= 0) return prc;
  char **inputs = argv;
  const char *weights = o.weights, *name = o.model, *out_dir = o.out_dir, *json = o.json, *shard_spec = o.shard;
  rv_shard shard = {0, 1};
  double thr = o.thr;
  int draw = !o.no_draw;
  int demo = !weights;
  if (demo) weights = RV_CLI_DEMO_DET;
  if (!ninputs) return rv_cli_usage_error("detect", "no input images");
  if (rv_cli_check_model_opt("detect", demo ? NULL : weights, name)) return 2;
  if (shard_spec && rv_shard_parse(&shard, shard_spec)) return rv_cli_usage_error("detect", "--shard must be i/N with 0 <= i < N, not '%s'", shard_spec);
  if (rv_cli_json_stdout(json) && shard_spec) return rv_cli_usage_error("detect", "--json - (stdout) with --shard: give the part a file name");
  if (o.ann && !json) return rv_cli_usage_error("detect", "--ann numbers the images of --json FILE: give --json too");

  rv_ctx *ctx = rv_cli_ctx();
  rv_input_list list = {0};
  rv_model *m = NULL;
  rv_arena *arena = NULL;
  rv_det_json *res = NULL;
  const char **names = NULL;
  unsigned char (*palette)[3] = NULL;
  int *cat_ids = NULL, rc = 0;
  rv_part_image *part = NULL;
  size_t n_part = 0;
  int64_t *ids = NULL;
  char **outs = NULL, segm[4096] = "", side[4096] = "";
  const char **from = NULL;
  int nouts = 0;
  rv_status st = rv_inputs_collect(&list, inputs, ninputs, 0, ctx);
  if (json) {
    size_t n = strlen(json);
    int ext = n > 5 && !strcmp(json + n - 5, ".json");
    snprintf(segm, sizeof segm, "%.*s.segm.json", (int)(ext ? n - 5 : n), json);
    snprintf(side, sizeof side, "%.*s.shard.json", (int)(ext ? n - 5 : n), json);
  }
  /* every output checked before the model loads: folders, no output over an input, no clash */
  if (st == RV_OK && draw) st = rv_out_check_dir(out_dir, ctx);
  if (st == RV_OK && (!(outs = calloc((size_t)list.n + 4, sizeof *outs)) || !(from = calloc((size_t)list.n + 4, sizeof *from))))
    st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (int i = 0; st == RV_OK && draw && i < list.n; i++) {
    if (!rv_shard_has(&shard, (size_t)i)) continue;
    char out[4096];
    rv_cli_out_name(out, sizeof out, out_dir, list.paths[i], "_det.jpg");
    from[nouts] = list.paths[i];
    if (!(outs[nouts++] = strdup(out))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  if (st == RV_OK && json) {
    const char *extra[3] = {json, rv_cli_json_stdout(json) ? NULL : segm, shard_spec ? side : NULL};
    for (int k = 0; k < 3 && st == RV_OK; k++) {
      if (!extra[k]) continue;
      from[nouts] = "--json";
      if (!(outs[nouts++] = strdup(extra[k]))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    }
  }
  if (st == RV_OK) {
    const char **ins = calloc((size_t)list.n + 2, sizeof *ins);
    if (!ins) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    for (int i = 0; ins && i < list.n; i++) ins[i] = list.paths[i];
    if (ins) ins[list.n] = o.ann;
    if (ins) st = rv_cli_outputs_check((const char *const *)outs, from, nouts, ins, list.n + 1, ctx);
    free(ins);
  }
  if (st == RV_OK && !(ids = malloc(sizeof *ids * (size_t)(list.n + 1)))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (st == RV_OK) st = image_ids(ids, &list, o.ann, ctx);
  if (st == RV_OK) st = demo ? rv_cli_load_demo(&m, 1, ctx) : rv_cli_load_model_ex(&m, weights, name, &(rv_model_load_opts){o.strict}, ctx);
  if (st == RV_OK) st = rv_cli_set_precision(m, o.precision, ctx);
  if (st == RV_OK && demo) rv_cli_demo_notice("detect", m);
  if (st == RV_OK) st = rv_cli_check_task(m, RV_TASK_DETECT, weights, "segment", ctx);
  if (st == RV_OK && !(arena = rv_arena_create(0))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (st == RV_OK && rv_cli_class_tables(m, &names, &palette)) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (st == RV_OK && rv_cli_json_stdout(json) && rv_detector_has_masks(rv_model_detector(m)))
    st = rv_error(ctx, RV_ERR_ARG, "--json -: this model has masks, whose results go to a second file: give --json FILE");
  if (st == RV_OK && json) {
    int k = rv_model_num_classes(m);
    cat_ids = malloc(sizeof *cat_ids * (size_t)k);
    res = rv_det_json_create(rv_detector_has_masks(rv_model_detector(m)));
    if (!cat_ids || !res) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    for (int i = 0; cat_ids && i < k; i++) cat_ids[i] = rv_model_category_id(m, i);
  }
  if (st == RV_OK && shard_spec && !(part = calloc((size_t)list.n, sizeof *part))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (st != RV_OK) { rc = rv_cli_fail(ctx, "detect", st); goto out; }

  rv_progress prog;
  rv_progress_start(&prog, "detect", (long)rv_shard_size(&shard, (size_t)list.n));
  int failed = 0, done = 0;
  long total = 0;
  const char **failed_names = calloc((size_t)list.n + 1, sizeof *failed_names);
  if (!failed_names) { rc = rv_cli_fail(ctx, "detect", rv_error(ctx, RV_ERR_NOMEM, "out of memory")); goto out; }
  rv_cli_signals_install(1);
  for (int i = 0; i < list.n && !rv_cli_stop_signal(); i++) {
    if (!rv_shard_has(&shard, (size_t)i)) continue;
    const char *path = list.paths[i];
    rv_image img = {0};
    rv_detections det = {0};
    int *order = NULL;
    rv_draw_det *dd = NULL;
    double t0 = rv_now();
    st = rv_image_read(path, &img, ctx);
    if (st == RV_OK) st = rv_model_detect(m, &det, NULL, &img, arena, ctx);
    if (st == RV_OK) {
      order = malloc(sizeof *order * (size_t)(det.n + 1));
      if (!order) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
      else rv_detections_class_order(order, &det);
    }
    if (st == RV_OK && res) st = rv_det_json_add(res, ids[i], &det, order, cat_ids, ctx);
    if (st == RV_OK && part) part[n_part++] = (rv_part_image){ids[i], img.w, img.h, path};
    if (st == RV_OK && draw) {
      dd = calloc((size_t)det.n + 1, sizeof *dd);
      if (!dd) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
      for (int k = 0; dd && k < det.n; k++) {
        dd[k].x1 = det.bboxes[4 * k];
        dd[k].y1 = det.bboxes[4 * k + 1];
        dd[k].x2 = det.bboxes[4 * k + 2];
        dd[k].y2 = det.bboxes[4 * k + 3];
        dd[k].score = det.scores[k];
        dd[k].label = det.labels[k];
        dd[k].mask = det.masks ? det.masks + (size_t)k * det.mask_h * det.mask_w : NULL;
      }
      if (st == RV_OK)
        st = rv_draw_detections(&img, dd, det.n, names, (const unsigned char (*)[3])palette, rv_model_num_classes(m), (float)thr, ctx);
      char out[4096];
      rv_cli_out_name(out, sizeof out, out_dir, path, "_det.jpg");
      if (st == RV_OK) st = rv_image_write(out, &img, ctx);
    }
    if (st != RV_OK) {
      fprintf(stderr, "%sravlt detect: %s: %s\n", rv_progress_break(&prog), path, rv_ctx_errmsg(ctx));
      failed_names[failed++] = path;
    } else {
      int shown = 0;
      for (int k = 0; k < det.n; k++) shown += det.scores[k] >= thr;
      total += det.n;
      done++;
      rv_log(ctx, RV_LOG_DEBUG, "%s: %d detections (%d >= %.2f) in %.3f s", path, det.n, shown, thr, rv_now() - t0);
    }
    free(dd);
    free(order);
    rv_image_free(&img);
    rv_arena_reset(arena);
    rv_progress_step(&prog, 1);
  }
  rv_progress_end(&prog);
  int sig = rv_cli_stop_signal();
  if (res) { /* the results of every image that succeeded (and ran, after a signal) */
    int masks = rv_detector_has_masks(rv_model_detector(m));
    st = rv_cli_json_stdout(json) ? rv_det_json_fwrite(res, stdout, 0, ctx) : rv_det_json_write(res, json, masks ? segm : NULL, ctx);
    if (st == RV_OK && part) {
      rv_part_run run = {"", (long long)rv_det_json_count(res), -1};
      rv_digest items;
      rv_digest_init(&items);
      for (int i = 0; i < list.n; i++) rv_digest_str(&items, list.paths[i]);
      rv_part_run_id(&run, weights, name ? name : "", o.ann, &items);
      st = rv_part_write_coco(side, &shard, (size_t)list.n, NULL, json, masks ? segm : NULL, part, n_part, &run, ctx);
    }
    if (st != RV_OK) { rv_cli_signals_restore(); free(failed_names); rc = rv_cli_fail(ctx, "detect", st); goto out; }
  }
  rv_cli_signals_restore();
  if (sig) fprintf(stderr, "ravlt detect: stopped by signal %d; the outputs hold the images done before it\n", sig);
  if (!rv_cli.quiet || failed)
    fprintf(stderr, "ravlt detect: %d image(s), %ld detections%s%s%s%s\n", done, total, draw ? ", drawings in " : "", draw ? out_dir : "",
            res && !rv_cli_json_stdout(json) ? ", results in " : "", res && !rv_cli_json_stdout(json) ? json : "");
  if (failed) {
    fprintf(stderr, "ravlt detect: %d image(s) failed (not in the results):", failed);
    for (int k = 0; k < failed; k++) fprintf(stderr, " %s", failed_names[k]);
    fputc('\n', stderr);
  }
  free(failed_names);
  rc = rv_cli_signal_exit_code(failed ? 1 : 0);
out:
  for (int k = 0; outs && k < nouts; k++) free(outs[k]);
  free(outs);
  free(from);
  free(ids);
  free(part);
  free(cat_ids);
  rv_det_json_free(res);
  free(names);
  free(palette);
  rv_arena_free(arena);
  rv_model_free(m);
  rv_input_list_free(&list);
  rv_ctx_free(ctx);
  return rc;
}
