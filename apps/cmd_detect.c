/* `ravlt detect [--weights W] IMAGE...`: object detection / instance segmentation with an
 * mmdet checkpoint (Cascade Mask R-CNN, Mask R-CNN, RetinaNet); without --weights the
 * built-in demo detector (synthetic shapes). */
#include "apps/cli.h"
#include "apps/draw.h"
#include "apps/inputs.h"
#include "apps/model_run.h"
#include "core/fs.h"
#include "apps/shard.h"
#include "datasets/det_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *USAGE =
    "usage: ravlt detect [--weights W] [options] IMAGE|DIR|GLOB...\n"
    "\n"
    "Detection and instance segmentation with a RAVLT Cascade Mask R-CNN, Mask R-CNN or\n"
    "RetinaNet checkpoint (mmdet .pth or its safetensors conversion). The test pipeline is\n"
    "mmdet's: keep-ratio resize to the checkpoint's img_scale ((1333, 800) for the official\n"
    "ones, (320, 240) for the demo detector), normalize, pad to 32, the checkpoint's test_cfg\n"
    "(score > 0.05, NMS, at most 100 per image).\n"
    "\n"
    "  --weights W      checkpoint (.pth or .safetensors), a 'ravlt models' name, or 'demo-det'\n"
    "                   (default): the built-in demo detector, a RetinaNet for the 5 classes\n"
    "                   of synthetic shapes (`ravlt synth --task det`)\n"
    "  --model NAME     architecture when the checkpoint has no config (e.g. mask-rcnn-ravlt-t)\n"
    "  --out-dir D      folder for drawings <name>_det.jpg (default: det-out)\n"
    "  --score-thr T    draw detections with score >= T (default 0.3; the JSON keeps all)\n"
    "  --json FILE      COCO results JSON (bbox; masks go to FILE with .segm.json when the\n"
    "                   model has masks): image_id = index of the image in the sorted input\n"
    "                   list + 1, category ids of COCO when the model has its 80 classes\n"
    "  --no-draw        do not write drawings\n"
    "  --shard i/N      only images k (sorted input order, from 0) with k mod N == i; with --json\n"
    "                   image ids stay those of the whole list and FILE.shard.json describes the\n"
    "                   part for `ravlt merge`\n";

int rv_cmd_detect(int argc, char **argv) {
  const char *weights = NULL, *name = NULL, *out_dir = "det-out", *json = NULL, *shard_spec = NULL;
  rv_shard shard = {0, 1};
  double thr = 0.3;
  int draw = 1;
  char **inputs = calloc((size_t)argc, sizeof *inputs);
  int ninputs = 0;
  if (!inputs) return 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    if (rv_cli_is_help(a)) { fputs(USAGE, stdout); free(inputs); return 0; }
    else if (!strcmp(a, "--weights") && has) weights = argv[++i];
    else if (!strcmp(a, "--model") && has) name = argv[++i];
    else if (!strcmp(a, "--out-dir") && has) out_dir = argv[++i];
    else if (!strcmp(a, "--score-thr") && has) thr = atof(argv[++i]);
    else if (!strcmp(a, "--json") && has) json = argv[++i];
    else if (!strcmp(a, "--no-draw")) draw = 0;
    else if (!strcmp(a, "--shard") && has) shard_spec = argv[++i];
    else if (a[0] == '-' && a[1]) { free(inputs); return rv_cli_usage_error("detect", "unknown or incomplete option '%s'", a); }
    else inputs[ninputs++] = argv[i];
  }
  int demo = !weights;
  if (demo) weights = RV_CLI_DEMO_DET;
  if (!ninputs) { free(inputs); return rv_cli_usage_error("detect", "no input images"); }
  if (shard_spec && rv_shard_parse(&shard, shard_spec)) { free(inputs); return rv_cli_usage_error("detect", "--shard must be i/N with 0 <= i < N, not '%s'", shard_spec); }
  if (thr < 0 || thr > 1) { free(inputs); return rv_cli_usage_error("detect", "--score-thr must be in 0..1"); }

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
  rv_status st = rv_inputs_collect(&list, inputs, ninputs, 0, ctx);
  if (st == RV_OK) st = demo ? rv_cli_load_demo(&m, 1, ctx) : rv_cli_load_model(&m, weights, name, ctx);
  if (st == RV_OK && demo) rv_cli_demo_notice("detect", m);
  if (st == RV_OK) st = rv_cli_check_task(m, RV_TASK_DETECT, weights, "segment", ctx);
  if (st == RV_OK && draw) st = rv_mkdirs(out_dir, ctx);
  if (st == RV_OK && !(arena = rv_arena_create(0))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (st == RV_OK && rv_cli_class_tables(m, &names, &palette)) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
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
  int failed = 0;
  long total = 0;
  for (int i = 0; i < list.n; i++) {
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
    if (st == RV_OK && res) st = rv_det_json_add(res, i + 1, &det, order, cat_ids, ctx);
    if (st == RV_OK && part) part[n_part++] = (rv_part_image){i + 1, img.w, img.h, path};
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
      fprintf(stderr, "%sravlt detect: %s\n", rv_progress_break(&prog), rv_ctx_errmsg(ctx));
      failed++;
    } else {
      int shown = 0;
      for (int k = 0; k < det.n; k++) shown += det.scores[k] >= thr;
      total += det.n;
      rv_log(ctx, RV_LOG_DEBUG, "%s: %d detections (%d >= %.2f) in %.3f s", path, det.n, shown, thr, rv_now() - t0);
    }
    free(dd);
    free(order);
    rv_image_free(&img);
    rv_arena_reset(arena);
    rv_progress_step(&prog, 1);
  }
  rv_progress_end(&prog);
  if (res && !failed) {
    char segm[4096];
    size_t n = strlen(json);
    if (n > 5 && !strcmp(json + n - 5, ".json")) snprintf(segm, sizeof segm, "%.*s.segm.json", (int)(n - 5), json);
    else snprintf(segm, sizeof segm, "%s.segm.json", json);
    int masks = rv_detector_has_masks(rv_model_detector(m));
    st = rv_det_json_write(res, json, segm, ctx);
    if (st == RV_OK && part) {
      char side[4096];
      snprintf(side, sizeof side, "%.*s.shard.json", (int)(n > 5 && !strcmp(json + n - 5, ".json") ? n - 5 : n), json);
      st = rv_part_write_coco(side, &shard, (size_t)list.n, NULL, json, masks ? segm : NULL, part, n_part, ctx);
    }
    if (st != RV_OK) { rc = rv_cli_fail(ctx, "detect", st); goto out; }
  } else if (res) {
    fprintf(stderr, "ravlt detect: %d image(s) failed; %s not written\n", failed, json);
  }
  if (!rv_cli.quiet)
    fprintf(stderr, "ravlt detect: %d image(s), %ld detections%s%s\n", (int)rv_shard_size(&shard, (size_t)list.n) - failed, total,
            draw ? ", drawings in " : "", draw ? out_dir : "");
  rc = failed ? 1 : 0;
out:
  free(part);
  free(cat_ids);
  rv_det_json_free(res);
  free(names);
  free(palette);
  rv_arena_free(arena);
  rv_model_free(m);
  rv_input_list_free(&list);
  rv_ctx_free(ctx);
  free(inputs);
  return rc;
}
