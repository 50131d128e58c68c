/* `ravlt eval`: COCO box/mask AP (pycocotools' numbers) and ADE20K mIoU (mmseg's numbers).
 *
 *   ravlt eval coco --ann GT.json --results DT.json --iou-type bbox|segm [--json OUT]
 *                   [--area-mode box|mask] [--mmdet-maxdets]
 *   ravlt eval ade20k --pred-dir P (--gt-dir G | --root ADEChallengeData2016)
 *                     [--pred-zero-based] [--json OUT]
 *
 * The model-driven modes (--weights: run a detector / segmentor over the images, then
 * evaluate) plug in at coco_results_from_model() and ade20k_preds_from_model() below. */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "datasets/ade20k.h"
#include "datasets/classes.h"
#include "datasets/coco.h"
#include "eval/cocoeval.h"
#include "eval/segmetrics.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const COCO_USAGE =
    "usage: ravlt eval coco --ann GT.json --results DT.json --iou-type bbox|segm [options]\n"
    "       ravlt eval coco --ann GT.json --images DIR --weights W [--out results.json]  (model mode)\n"
    "\n"
    "COCO detection evaluation with the numbers pycocotools' COCOeval prints (12 stats, bit for\n"
    "bit), followed by a per-category AP table (IoU=0.50:0.95, area=all, last maxDets).\n"
    "\n"
    "options:\n"
    "  --ann FILE          COCO instances JSON (images, annotations, categories)\n"
    "  --results FILE      COCO results JSON: [{image_id, category_id, score, bbox, segmentation}]\n"
    "  --iou-type T        bbox or segm (default bbox)\n"
    "  --json OUT          write {\"iou_type\", \"stats\": [12], \"per_category\": {id: AP}}\n"
    "  --area-mode M       box (default): pycocotools' loadRes rule - when the first result has a\n"
    "                      bbox, detection areas are w*h even for segm (what mmdet 2.x and the\n"
    "                      published mask APs used); mask: mask pixel count for results with masks\n"
    "  --mmdet-maxdets     maxDets 100/300/1000 as mmdet's CocoDataset.evaluate (default 1/10/100)\n"
    "  --images DIR, --weights W, --out FILE\n"
    "                      run a detector first (not available in this build: use --results)\n";

static const char *const ADE_USAGE =
    "usage: ravlt eval ade20k --pred-dir P (--gt-dir G | --root ADEChallengeData2016) [options]\n"
    "       ravlt eval ade20k --root ADEChallengeData2016 --weights W [--aug-test]  (model mode)\n"
    "\n"
    "ADE20K semantic segmentation metrics as mmsegmentation 0.x computes them (aAcc, mIoU, mAcc,\n"
    "per-class IoU/Acc; 150 classes, annotation 0 ignored, reduce_zero_label). Label PNGs are\n"
    "matched by file name: every G/<name>.png needs P/<name>.png.\n"
    "\n"
    "options:\n"
    "  --pred-dir P        predicted label PNGs (8-bit grey)\n"
    "  --gt-dir G          annotation PNGs (default with --root: ROOT/annotations/validation)\n"
    "  --root R            the ADEChallengeData2016 folder\n"
    "  --pred-zero-based   predictions hold class indices 0..149 (values >= 150: no class);\n"
    "                      default: the annotation convention `ravlt segment` writes (k = class\n"
    "                      k-1, 0 = no class)\n"
    "  --json OUT          write {\"aAcc\", \"mIoU\", \"mAcc\", \"IoU\": [150], \"Acc\": [150]} (null = NaN)\n"
    "  --weights W, --aug-test\n"
    "                      run a segmentor first (not available in this build: use --pred-dir)\n";

static const char *const EVAL_USAGE =
    "usage: ravlt eval coco ...     COCO box / mask AP from a results JSON\n"
    "       ravlt eval ade20k ...   ADE20K mIoU from label PNGs\n"
    "'ravlt eval coco --help' and 'ravlt eval ade20k --help' describe the options.\n";

/* ---- JSON output: written to a temporary file, then renamed ---- */
typedef struct {
  FILE *f;
  char *tmp;
  const char *path;
} out_file;

static rv_status out_open(out_file *o, const char *path, rv_ctx *ctx) {
  o->path = path;
  size_t n = strlen(path) + 32;
  o->tmp = malloc(n);
  if (!o->tmp) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  snprintf(o->tmp, n, "%s.tmp.%ld", path, (long)getpid());
  o->f = fopen(o->tmp, "w");
  if (!o->f) {
    rv_status st = rv_error(ctx, RV_ERR_IO, "%s: cannot write (%s)", o->tmp, strerror(errno));
    free(o->tmp);
    return st;
  }
  return RV_OK;
}

static rv_status out_close(out_file *o, rv_ctx *ctx) {
  int bad = ferror(o->f) != 0;
  bad |= fclose(o->f) != 0;
  if (bad || rename(o->tmp, o->path) != 0) {
    remove(o->tmp);
    free(o->tmp);
    return rv_error(ctx, RV_ERR_IO, "%s: write failed", o->path);
  }
  free(o->tmp);
  return RV_OK;
}

static void json_num(FILE *f, double v) {
  if (isnan(v) || isinf(v))
    fputs("null", f);
  else
    fprintf(f, "%.17g", v);
}

/* ---- coco ---- */
typedef struct {
  const char *ann, *results, *json, *images, *weights, *out;
  rv_iou_type iou;
  rv_coco_area_mode area_mode;
  int mmdet_maxdets;
} coco_opts;

/* Model mode hook: run the detector over opts->images and fill *res (rv_coco_obj with
 * image_id, category_id, score, bbox, segm, has_bbox/has_segm), then the caller applies
 * rv_coco_results_prepare and writes --out with rv_coco_results_write. */
static rv_status coco_results_from_model(const coco_opts *o, const rv_coco *gt, rv_coco_results *res,
                                         rv_ctx *ctx) {
  (void)gt;
  (void)res;
  return rv_error(ctx, RV_ERR_UNSUPPORTED,
                  "--weights %s: running a detector is not part of this build; evaluate a results file: "
                  "eval coco needs --results",
                  o->weights);
}

static int need_arg(int i, int argc, const char *cmd, const char *opt) {
  if (i + 1 >= argc) {
    rv_cli_usage_error(cmd, "%s needs a value", opt);
    return 0;
  }
  return 1;
}

static int cmd_coco(int argc, char **argv) {
  const char *cmd = "eval coco";
  coco_opts o = {0};
  o.iou = RV_IOU_BBOX;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (rv_cli_is_help(a)) {
      fputs(COCO_USAGE, stdout);
      return 0;
    }
    const char **dst = NULL;
    if (strcmp(a, "--ann") == 0) dst = &o.ann;
    else if (strcmp(a, "--results") == 0) dst = &o.results;
    else if (strcmp(a, "--json") == 0) dst = &o.json;
    else if (strcmp(a, "--images") == 0) dst = &o.images;
    else if (strcmp(a, "--weights") == 0) dst = &o.weights;
    else if (strcmp(a, "--out") == 0) dst = &o.out;
    if (dst) {
      if (!need_arg(i, argc, cmd, a)) return 2;
      *dst = argv[++i];
    } else if (strcmp(a, "--iou-type") == 0) {
      if (!need_arg(i, argc, cmd, a)) return 2;
      const char *v = argv[++i];
      if (strcmp(v, "bbox") == 0) o.iou = RV_IOU_BBOX;
      else if (strcmp(v, "segm") == 0) o.iou = RV_IOU_SEGM;
      else return rv_cli_usage_error(cmd, "--iou-type must be bbox or segm, not '%s'", v);
    } else if (strcmp(a, "--area-mode") == 0) {
      if (!need_arg(i, argc, cmd, a)) return 2;
      const char *v = argv[++i];
      if (strcmp(v, "box") == 0) o.area_mode = RV_COCO_AREA_BOX;
      else if (strcmp(v, "mask") == 0) o.area_mode = RV_COCO_AREA_MASK;
      else return rv_cli_usage_error(cmd, "--area-mode must be box or mask, not '%s'", v);
    } else if (strcmp(a, "--mmdet-maxdets") == 0) {
      o.mmdet_maxdets = 1;
    } else
      return rv_cli_usage_error(cmd, "unknown option '%s'", a);
  }
  if (!o.ann) return rv_cli_usage_error(cmd, "--ann GT.json is required");
  if (!o.results && !o.weights) return rv_cli_usage_error(cmd, "needs --results DT.json (or --weights with --images)");
  if (o.results && o.weights) return rv_cli_usage_error(cmd, "--results and --weights exclude each other");
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  int threads = rv_cli.threads;
  rv_coco *gt = NULL;
  rv_coco_results res = {0};
  rv_cocoeval *ev = NULL;
  rv_status st;
  int rc = 0;
  double t0 = rv_now();
  if ((st = rv_coco_load(&gt, o.ann, o.iou == RV_IOU_SEGM, threads, ctx)) != RV_OK) goto fail;
  rv_log(ctx, RV_LOG_INFO, "%s: %zu images, %zu categories, %zu annotations (%.2f s)", o.ann, gt->n_images,
         gt->n_cats, gt->n_anns, rv_now() - t0);
  t0 = rv_now();
  if (o.results) {
    st = rv_coco_load_results(&res, gt, o.results, o.iou, o.area_mode, threads, ctx);
  } else {
    st = coco_results_from_model(&o, gt, &res, ctx);
    if (st == RV_OK) st = rv_coco_results_prepare(&res, gt, o.iou, o.area_mode, o.weights, ctx);
    if (st == RV_OK && o.out) st = rv_coco_results_write(o.out, res.dets, res.n, o.iou == RV_IOU_SEGM, ctx);
  }
  if (st != RV_OK) goto fail;
  rv_log(ctx, RV_LOG_INFO, "%s: %zu detections (%.2f s)", o.results ? o.results : "model", res.n, rv_now() - t0);
  if (res.n == 0) rv_log(ctx, RV_LOG_WARN, "no detections (pycocotools would fail on an empty results list)");
  if (res.n_unknown_category)
    rv_log(ctx, RV_LOG_WARN, "%zu detections have a category_id that is not in %s; ignored (as pycocotools does)",
           res.n_unknown_category, o.ann);
  rv_cocoeval_params prm = rv_cocoeval_default_params(o.iou);
  if (o.mmdet_maxdets) rv_cocoeval_params_mmdet(&prm);
  prm.threads = threads;
  t0 = rv_now();
  if ((st = rv_coco_evaluate(&ev, gt, &res, &prm, ctx)) != RV_OK) goto fail;
  rv_log(ctx, RV_LOG_INFO, "evaluate + accumulate (%s): %.2f s", o.iou == RV_IOU_BBOX ? "bbox" : "segm",
         rv_now() - t0);
  char text[4096];
  rv_cocoeval_summary_text(ev, text, sizeof text);
  fputs(text, stdout);
  double stats[12];
  rv_cocoeval_summarize(ev, stats);
  size_t K = rv_cocoeval_num_cats(ev);
  printf("\nper-category AP (IoU=0.50:0.95 | area=all | maxDets=%d):\n", prm.max_dets[prm.n_max_dets - 1]);
  printf("  %8s  %-24s %7s\n", "id", "name", "AP");
  for (size_t k = 0; k < K; k++) {
    int64_t id = rv_cocoeval_cat_id(ev, k);
    const rv_coco_category *c = rv_coco_find_category(gt, id);
    double ap = rv_cocoeval_category_ap(ev, k);
    printf("  %8lld  %-24.24s %7.3f\n", (long long)id, c && c->name ? c->name : "", ap);
  }
  if (o.json) {
    out_file of;
    if ((st = out_open(&of, o.json, ctx)) != RV_OK) goto fail;
    fprintf(of.f, "{\"iou_type\": \"%s\", \"stats\": [", o.iou == RV_IOU_BBOX ? "bbox" : "segm");
    for (int i = 0; i < 12; i++) {
      if (i) fputs(", ", of.f);
      json_num(of.f, stats[i]);
    }
    fputs("], \"per_category\": {", of.f);
    for (size_t k = 0; k < K; k++) {
      fprintf(of.f, "%s\"%lld\": ", k ? ", " : "", (long long)rv_cocoeval_cat_id(ev, k));
      json_num(of.f, rv_cocoeval_category_ap(ev, k));
    }
    fprintf(of.f, "}, \"max_dets\": [%d, %d, %d], \"area_mode\": \"%s\"}\n", prm.max_dets[0], prm.max_dets[1],
            prm.max_dets[2], o.area_mode == RV_COCO_AREA_BOX ? "box" : "mask");
    if ((st = out_close(&of, ctx)) != RV_OK) goto fail;
  }
  goto done;
fail:
  rc = rv_cli_fail(ctx, cmd, st);
done:
  rv_cocoeval_free(ev);
  rv_coco_results_free(&res);
  rv_coco_free(gt);
  rv_ctx_free(ctx);
  return rc;
}

/* ---- ade20k ---- */
typedef struct {
  const char *pred_dir, *gt_dir, *root, *json, *weights;
  int zero_based, aug_test;
} ade_opts;

/* Model mode hook: run the segmentor over ROOT/images/validation, write label PNGs in the
 * annotation convention into a folder and return it in pred_dir (caller frees). */
static rv_status ade20k_preds_from_model(const ade_opts *o, char **pred_dir, rv_ctx *ctx) {
  (void)pred_dir;
  return rv_error(ctx, RV_ERR_UNSUPPORTED,
                  "--weights %s: running a segmentor is not part of this build; eval ade20k needs --pred-dir",
                  o->weights);
}

static int cmd_ade20k(int argc, char **argv) {
  const char *cmd = "eval ade20k";
  ade_opts o = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (rv_cli_is_help(a)) {
      fputs(ADE_USAGE, stdout);
      return 0;
    }
    const char **dst = NULL;
    if (strcmp(a, "--pred-dir") == 0) dst = &o.pred_dir;
    else if (strcmp(a, "--gt-dir") == 0) dst = &o.gt_dir;
    else if (strcmp(a, "--root") == 0) dst = &o.root;
    else if (strcmp(a, "--json") == 0) dst = &o.json;
    else if (strcmp(a, "--weights") == 0) dst = &o.weights;
    if (dst) {
      if (!need_arg(i, argc, cmd, a)) return 2;
      *dst = argv[++i];
    } else if (strcmp(a, "--pred-zero-based") == 0)
      o.zero_based = 1;
    else if (strcmp(a, "--aug-test") == 0)
      o.aug_test = 1;
    else
      return rv_cli_usage_error(cmd, "unknown option '%s'", a);
  }
  if (!o.gt_dir && !o.root) return rv_cli_usage_error(cmd, "needs --gt-dir G or --root ADEChallengeData2016");
  if (!o.pred_dir && !o.weights) return rv_cli_usage_error(cmd, "needs --pred-dir P (or --weights with --root)");
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  rv_status st = RV_OK;
  int rc = 0;
  char img_dir[4096], ann_dir[4096];
  char *model_preds = NULL;
  rv_seg_areas acc = {0};
  rv_seg_metrics m = {0};
  const char *gt_dir = o.gt_dir;
  if (o.root && !gt_dir) {
    if ((st = rv_ade20k_layout(o.root, img_dir, ann_dir, sizeof ann_dir, ctx)) != RV_OK) goto fail;
    gt_dir = ann_dir;
  }
  const char *pred_dir = o.pred_dir;
  if (!pred_dir) {
    if ((st = ade20k_preds_from_model(&o, &model_preds, ctx)) != RV_OK) goto fail;
    pred_dir = model_preds;
  }
  if ((st = rv_seg_areas_init(&acc, RV_ADE20K_CLASSES, ctx)) != RV_OK) goto fail;
  size_t n = 0;
  double t0 = rv_now();
  st = rv_ade20k_eval_dirs(&acc, pred_dir, gt_dir, o.zero_based ? RV_ADE_PRED_ZERO_BASED : RV_ADE_PRED_ANNOTATION,
                           rv_cli.threads, &n, ctx);
  if (st != RV_OK) goto fail;
  rv_log(ctx, RV_LOG_INFO, "%zu label maps from %s (%.2f s)", n, gt_dir, rv_now() - t0);
  if ((st = rv_seg_metrics_compute(&m, &acc, ctx)) != RV_OK) goto fail;
  /* mmseg's tables: values x 100 rounded to 2 decimals */
  printf("per class results:\n");
  printf("  %-3s %-20s %7s %7s\n", "k", "Class", "IoU", "Acc");
  for (int k = 0; k < RV_ADE20K_CLASSES; k++) {
    char iou[16], accs[16];
    if (isnan(m.iou[k])) snprintf(iou, sizeof iou, "nan"); else snprintf(iou, sizeof iou, "%.2f", rv_mmseg_round(m.iou[k]) * 100);
    if (isnan(m.acc[k])) snprintf(accs, sizeof accs, "nan"); else snprintf(accs, sizeof accs, "%.2f", rv_mmseg_round(m.acc[k]) * 100);
    printf("  %-3d %-20s %7s %7s\n", k, rv_ade20k_classes[k], iou, accs);
  }
  printf("Summary:\n  aAcc %.2f  mIoU %.2f  mAcc %.2f   (%zu images)\n", rv_mmseg_round(m.aAcc) * 100,
         rv_mmseg_round(m.mIoU) * 100, rv_mmseg_round(m.mAcc) * 100, n);
  printf("  full precision: aAcc %.17g mIoU %.17g mAcc %.17g\n", m.aAcc, m.mIoU, m.mAcc);
  if (o.json) {
    out_file of;
    if ((st = out_open(&of, o.json, ctx)) != RV_OK) goto fail;
    fputs("{\"aAcc\": ", of.f);
    json_num(of.f, m.aAcc);
    fputs(", \"mIoU\": ", of.f);
    json_num(of.f, m.mIoU);
    fputs(", \"mAcc\": ", of.f);
    json_num(of.f, m.mAcc);
    const double *arr[2] = {m.iou, m.acc};
    const char *nm[2] = {"IoU", "Acc"};
    for (int j = 0; j < 2; j++) {
      fprintf(of.f, ", \"%s\": [", nm[j]);
      for (int k = 0; k < RV_ADE20K_CLASSES; k++) {
        if (k) fputs(", ", of.f);
        json_num(of.f, arr[j][k]);
      }
      fputs("]", of.f);
    }
    fprintf(of.f, ", \"images\": %zu}\n", n);
    if ((st = out_close(&of, ctx)) != RV_OK) goto fail;
  }
  goto done;
fail:
  rc = rv_cli_fail(ctx, cmd, st);
done:
  free(model_preds);
  rv_seg_metrics_free(&m);
  rv_seg_areas_free(&acc);
  rv_ctx_free(ctx);
  return rc;
}

int rv_cmd_eval(int argc, char **argv) {
  if (argc < 2) {
    fputs(EVAL_USAGE, stderr);
    return 2;
  }
  if (rv_cli_is_help(argv[1])) {
    fputs(EVAL_USAGE, stdout);
    return 0;
  }
  if (strcmp(argv[1], "coco") == 0) return cmd_coco(argc - 1, argv + 1);
  if (strcmp(argv[1], "ade20k") == 0) return cmd_ade20k(argc - 1, argv + 1);
  return rv_cli_usage_error("eval", "unknown dataset '%s' (coco or ade20k)", argv[1]);
}
