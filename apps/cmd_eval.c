/* `ravlt eval`: COCO box/mask AP (pycocotools' numbers) and ADE20K mIoU (mmseg's numbers),
 * from result files or by running a model over the dataset first.
 *
 *   ravlt eval coco --ann GT.json --results DT.json --iou-type bbox|segm [--json OUT]
 *                   [--area-mode box|mask] [--mmdet-maxdets]
 *   ravlt eval coco --ann GT.json --images DIR --weights W [--output R.json] [--shard i/N]
 *   ravlt eval ade20k --pred-dir P (--gt-dir G | --root ADEChallengeData2016)
 *                     [--pred-zero-based] [--json OUT]
 *   ravlt eval ade20k --root ADEChallengeData2016 --weights W [--aug-test] [--mode slide]
 *                     [--out-dir DIR] [--output PART.json] [--shard i/N]
 *
 * Model modes keep everything in memory: detections become rv_coco_obj exactly as they would
 * read back from `ravlt detect --json` (bbox = float64 differences of the float32 corners,
 * score = the float32 score, per image in mmdet's class order), so both paths give the same
 * stats; label maps are accumulated into int64 areas without writing PNGs. With --shard the
 * run writes a part (see apps/shard.h) for `ravlt merge` instead of evaluating. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700
#include "apps/cli.h"
#include "apps/eval_analysis.h"
#include "apps/eval_report.h"
#include "apps/model_run.h"
#include "core/fs.h"
#include "apps/mpi_run.h"
#include "apps/outputs.h"
#include "apps/shard.h"
#include "datasets/ade20k.h"
#include "datasets/classes.h"
#include "datasets/coco.h"
#include "datasets/det_json.h"
#include "datasets/seg_analysis.h"
#include "eval/cocoeval.h"
#include "eval/segmetrics.h"
#include "apps/commands.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const EVAL_USAGE =
    "usage: ravlt eval coco ...     COCO box / mask AP from a results JSON or a detector\n"
    "       ravlt eval ade20k ...   ADE20K mIoU from label PNGs or a segmentor\n"
    "'ravlt eval coco --help' and 'ravlt eval ade20k --help' describe the options.\n";

/* ---- coco ---- */
typedef struct {
  const char *ann, *results, *json, *images, *weights, *out, *model, *shard_spec, *iou_type, *area_mode_s;
  const char *precision;
  rv_iou_type iou;
  rv_coco_area_mode area_mode;
  int mmdet_maxdets, resume, strict;
  rv_shard shard;
  rv_cli_report_opts rep; /* --report, --report-json, --compare, --conf-* */
} coco_opts;

static const rv_opt COCO_OPTS[] = {
    {"--ann", NULL, RV_OPT_STR, offsetof(coco_opts, ann), 0, 0, NULL, "FILE", "COCO instances JSON (images, annotations, categories)", 0},
    {"--results", NULL, RV_OPT_STR, offsetof(coco_opts, results), 0, 0, NULL, "FILE",
     "COCO results JSON: [{image_id, category_id, score, bbox, segmentation}]", 0},
    {"--iou-type", NULL, RV_OPT_CHOICE, offsetof(coco_opts, iou_type), 0, 0, "bbox|segm", "T", "bbox or segm (default bbox)", 0},
    {"--json", NULL, RV_OPT_STR, offsetof(coco_opts, json), 0, 0, NULL, "FILE",
     "write {\"iou_type\", \"stats\": [12], \"per_category\": {id: AP}} to FILE\n"
     "('-': stdout, the tables then go to stderr; model mode: bbox in FILE,\n"
     "segm in FILE with .segm.json, so '-' only for a model without masks)", 0},
    {"--report", NULL, RV_OPT_STR, offsetof(coco_opts, rep.html), 0, 0, NULL, "FILE.html",
     "also write the error analysis as one self-contained HTML report: per-\n"
     "category AP, PR curves, TIDE's error breakdown, the confusion matrix,\n"
     "P/R/F1 against the score threshold, the worst images (docs/evaluation.md)", 0},
    {"--report-json", NULL, RV_OPT_STR, offsetof(coco_opts, rep.json), 0, 0, NULL, "FILE",
     "the analysis as JSON ('-': stdout, the tables then go to stderr;\n"
     "model mode: segm in FILE with .segm.json)", 0},
    {"--compare", NULL, RV_OPT_STR, offsetof(coco_opts, rep.compare), 0, 0, NULL, "OTHER.json",
     "report: a second results file on the same gt: per-category AP deltas\n"
     "and both TIDE breakdowns", 0},
    {"--conf-score-thr", NULL, RV_OPT_DOUBLE, offsetof(coco_opts, rep.conf_score_thr), 0, 1, NULL, "X",
     "report: the confusion matrix counts detections with score >= X\n(default 0.3, mmdet's)", 0},
    {"--conf-iou-thr", NULL, RV_OPT_DOUBLE, offsetof(coco_opts, rep.conf_iou_thr), 0, 1, NULL, "X",
     "report: ... that overlap a gt with IoU >= X (default 0.5)", RV_OPT_OPEN_LO},
    {"--area-mode", NULL, RV_OPT_CHOICE, offsetof(coco_opts, area_mode_s), 0, 0, "box|mask", "M",
     "box (default): pycocotools' loadRes rule - when the first result has a\n"
     "bbox, detection areas are w*h even for segm (what mmdet 2.x and the\n"
     "published mask APs used); mask: mask pixel count for results with masks", 0},
    {"--mmdet-maxdets", NULL, RV_OPT_FLAG, offsetof(coco_opts, mmdet_maxdets), 0, 0, NULL, NULL,
     "maxDets 100/300/1000 as mmdet's CocoDataset.evaluate (default 1/10/100)", 0},
    {"--images", NULL, RV_OPT_STR, offsetof(coco_opts, images), 0, 0, NULL, "DIR",
     "model mode: the folder holding every image's file_name (image ids: those\n"
     "of --ann, by file_name); results mode with a report: the images for the\n"
     "worst images' thumbnails", 0},
    {"--weights", NULL, RV_OPT_STR, offsetof(coco_opts, weights), 0, 0, NULL, "W",
     "model mode: detector checkpoint (.pth / .safetensors); --model NAME if it\n"
     "has no config; 'demo-det': the built-in demo detector (on `ravlt synth\n"
     "--task det` sets)", 0},
    {"--model", NULL, RV_OPT_STR, offsetof(coco_opts, model), 0, 0, NULL, "NAME", "model mode: architecture when the checkpoint has no config", 0},
    {"--output", "--out", RV_OPT_STR, offsetof(coco_opts, out), 0, 0, NULL, "R.json",
     "model mode: also write the results as `ravlt detect --json` does\n"
     "(R.json: bbox, R.segm.json: masks), atomically", 0},
    {"--shard", NULL, RV_OPT_STR, offsetof(coco_opts, shard_spec), 0, 0, NULL, "i/N",
     "model mode: run only images k with k mod N == i (0 <= i < N) and write a\n"
     "part for `ravlt merge` (needs --output: R.json, R.segm.json,\n"
     "R.shard.json) instead of evaluating", 0},
    {"--resume", NULL, RV_OPT_FLAG, offsetof(coco_opts, resume), 0, 0, NULL, NULL,
     "model mode, with --output: the images R.shard.json lists as done (an\n"
     "earlier run that failed on some images or was stopped by a signal) are\n"
     "not run again; their results are read from R.json", 0},
    RV_CLI_PRECISION_OPT(coco_opts, precision),
    RV_OPT_STRICT(coco_opts, strict),
    RV_OPT_END};

const rv_cmd_spec rv_spec_eval_coco = {
    "eval coco", "--ann GT.json --results DT.json [--iou-type bbox|segm] [options]\n"
    "--ann GT.json --images DIR --weights W [--output R.json] [--shard i/N]",
    "COCO detection evaluation with the numbers pycocotools' COCOeval prints (12 stats, bit for\n"
    "bit), followed by a per-category AP table (IoU=0.50:0.95, area=all, last maxDets).\n"
    "Model mode (--weights): run a detector over the gt's images, sorted by image id, then\n"
    "evaluate bbox and, when the model has masks, segm.\n",
    COCO_OPTS, 0,
    "mpirun -np N ravlt eval coco ... (a -DRAVLT_MPI=ON build): rank r runs images k with\n"
    "k mod N == r, rank 0 gathers the detections and prints the one-run stats.\n"
    "\n"
    "An image that fails (unreadable, wrong size) is named and the others run (with --shard the\n"
    "part is all or nothing: the run stops); no stats are printed then (they would be computed\n"
    "without it): with --output, R.json keeps the results of the images done and R.shard.json\n"
    "lists them, so that --resume runs only the missing ones. SIGINT, SIGTERM, SIGHUP: the\n"
    "same with the images done so far, exit 128+N.\n",
    "  ravlt eval coco --ann instances_val2017.json --results dets.json\n"
    "  ravlt eval coco --ann instances_val2017.json --results dets.segm.json --iou-type segm --json -\n"
    "  ravlt eval coco --ann instances_val2017.json --images val2017 --weights cascade_ravlt_s.pth --output dets.json\n"
    "  ravlt eval coco --ann instances_val2017.json --results dets.json --images val2017 --report report.html\n",
    sizeof(coco_opts)};

static rv_status push_obj(rv_coco_results *r, size_t *cap, const rv_coco_obj *o, rv_ctx *ctx) {
  if (r->n == *cap) {
    size_t nc = *cap ? *cap * 2 : 1024;
    rv_coco_obj *nd = realloc(r->dets, sizeof *nd * nc);
    if (!nd) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    r->dets = nd;
    *cap = nc;
  }
  r->dets[r->n++] = *o;
  return RV_OK;
}

/* Detections of one image appended as `ravlt detect --json` writes them (mmdet's
 * results2json): classes in index order, NMS order within a class; bbox = float64
 * differences of the float32 corners; score = the float32 score. seg (may be NULL) gets the
 * same entries with their masks (RLE of the pasted mask at the original size). */
static rv_status append_dets(rv_coco_results *box, size_t *box_cap, rv_coco_results *seg, size_t *seg_cap,
                             const rv_model *m, int64_t image_id, const rv_detections *det, const int *order,
                             rv_ctx *ctx) {
  for (int i = 0; i < det->n; i++) {
    int k = order[i];
    const float *b = det->bboxes + 4 * (size_t)k;
    rv_coco_obj o;
    memset(&o, 0, sizeof o);
    o.image_id = image_id;
    o.category_id = rv_model_category_id(m, det->labels[k]);
    o.score = (double)det->scores[k];
    double x1 = b[0], y1 = b[1], x2 = b[2], y2 = b[3];
    o.bbox[0] = x1;
    o.bbox[1] = y1;
    o.bbox[2] = x2 - x1;
    o.bbox[3] = y2 - y1;
    o.has_bbox = 1;
    RV_TRY(push_obj(box, box_cap, &o, ctx));
    if (seg && det->masks) {
      const unsigned char *mk = det->masks + (size_t)k * det->mask_h * det->mask_w;
      RV_TRY(rv_rle_encode_rowmajor(&o.segm, mk, (uint32_t)det->mask_h, (uint32_t)det->mask_w, ctx));
      o.has_segm = 1;
      rv_status st = push_obj(seg, seg_cap, &o, ctx);
      if (st != RV_OK) {
        rv_rle_free(&o.segm);
        return st;
      }
    }
  }
  return RV_OK;
}

/* Model mode: run the detector over the gt's images (sorted by id; only the shard's), fill
 * box (and seg when the model has masks), the results JSON writer dj (may be NULL) and the
 * image list of the part. */
static int id_done(const int64_t *done, size_t n, int64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (done[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && done[lo] == id;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static rv_status coco_results_from_model(const coco_opts *o, const rv_coco *gt, const rv_model *m,
                                         rv_coco_results *box, rv_coco_results *seg, rv_det_json *dj,
                                         rv_part_image *imgs, size_t *n_imgs, const int64_t *skip, size_t n_skip,
                                         size_t *failed, rv_ctx *ctx) {
  /* under mpirun every rank must agree, and a --shard part is all or nothing: stop at the first */
  const int keep_going = rv_mpi_size() <= 1 && !o->shard_spec;
  rv_arena *arena = rv_arena_create(0);
  if (!arena) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  int K = rv_model_num_classes(m);
  int *cat_ids = malloc(sizeof *cat_ids * (size_t)(K > 0 ? K : 1));
  if (!cat_ids) {
    rv_arena_free(arena);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; i < K; i++) cat_ids[i] = rv_model_category_id(m, i);
  size_t box_cap = 0, seg_cap = 0, mine = rv_shard_size(&o->shard, gt->n_images), done = 0;
  *n_imgs = 0;
  rv_progress prog;
  rv_progress_start(&prog, "eval coco", (long)mine);
  rv_status st = RV_OK;
  double t_model = 0, t0 = rv_now();
  *failed = 0;
  for (size_t k = 0; k < gt->n_images && st == RV_OK && !rv_cli_stop_signal(); k++) {
    if (!rv_shard_has(&o->shard, k)) continue;
    const rv_coco_image *im = &gt->images[gt->img_idx_sorted[k]];
    if (n_skip && id_done(skip, n_skip, im->id)) {
      rv_progress_step(&prog, 1);
      continue;
    }
    if (!im->file_name || !im->file_name[0]) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: image %lld has no file_name", o->ann, (long long)im->id);
      break;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", o->images, im->file_name);
    rv_image img = {0};
    rv_detections det = {0};
    int *order = NULL;
    double t1 = rv_now();
    st = rv_image_read(path, &img, ctx);
    if (st == RV_OK && (img.h != im->height || img.w != im->width))
      st = rv_error(ctx, RV_ERR_SHAPE, "%s is %dx%d but %s says %dx%d for image %lld (width x height)", path, img.w,
                    img.h, o->ann, im->width, im->height, (long long)im->id);
    if (st == RV_OK) st = rv_model_detect(m, &det, NULL, &img, arena, ctx);
    t_model += rv_now() - t1;
    if (st == RV_OK && !(order = malloc(sizeof *order * (size_t)(det.n + 1))))
      st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    if (st == RV_OK) {
      rv_detections_class_order(order, &det);
      st = append_dets(box, &box_cap, seg, &seg_cap, m, im->id, &det, order, ctx);
    }
    if (st == RV_OK && dj) st = rv_det_json_add(dj, im->id, &det, order, cat_ids, ctx);
    if (st == RV_OK) {
      rv_log(ctx, RV_LOG_DEBUG, "image %lld (%s): %d detections", (long long)im->id, im->file_name, det.n);
      imgs[*n_imgs].id = im->id;
      imgs[*n_imgs].width = im->width;
      imgs[*n_imgs].height = im->height;
      imgs[*n_imgs].file_name = im->file_name;
      (*n_imgs)++;
    } else if (st != RV_ERR_NOMEM) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", rv_ctx_errmsg(ctx));
      st = rv_error(ctx, st, "image %lld (%s): %s", (long long)im->id, im->file_name, msg);
      if (keep_going) {
        fprintf(stderr, "%sravlt eval coco: %s\n", rv_progress_break(&prog), rv_ctx_errmsg(ctx));
        (*failed)++;
        st = RV_OK;
      }
    }
    free(order);
    rv_image_free(&img);
    rv_arena_reset(arena);
    rv_progress_step(&prog, 1);
    done++;
  }
  rv_progress_end(&prog);
  if (st == RV_OK)
    rv_log(ctx, RV_LOG_INFO, "%zu images run, %zu detections: %.2f s (%.2f s in the model, %.3f images/s)", done,
           box->n, rv_now() - t0, t_model, t_model > 0 ? (double)done / t_model : 0.0);
  free(cat_ids);
  rv_arena_free(arena);
  return st;
}

static int cmd_coco_model(const coco_opts *o) {
  const char *cmd = "eval coco";
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  rv_model *m = NULL;
  rv_coco *gt = NULL;
  rv_coco_results box = {0}, seg = {0};
  rv_det_json *dj = NULL;
  rv_part_image *imgs = NULL;
  size_t n_imgs = 0, n_failed = 0, n_skip = 0;
  int64_t *skip = NULL;
  rv_coco_results prev_box = {0}, prev_seg = {0};
  rv_cocoeval *ev = NULL;
  rv_cli_report rep = {0};
  int rc = 0, threads = rv_cli.threads, masks = 0, sig = 0, prepared = 0;
  /* under mpirun (apps/mpi_run.h) every rank reaches the gather, failed or not */
  const int mpi = rv_mpi_size() > 1;
  rv_status st = RV_OK;
  if (!mpi) rv_cli_signals_install(1); /* a signal while loading: stops before the first image */
  { /* every output checked before the model loads: writable, not an input */
    char sp[4096] = "", side[4096] = "", js[4096] = "", rjs[4096] = "";
    if (o->out) rv_cli_sibling_path(sp, sizeof sp, o->out, ".segm.json");
    if (o->out) rv_cli_sibling_path(side, sizeof side, o->out, ".shard.json");
    if (o->json) rv_cli_sibling_path(js, sizeof js, o->json, ".segm.json");
    if (o->rep.json) rv_cli_sibling_path(rjs, sizeof rjs, o->rep.json, ".segm.json");
    const char *outs[8] = {o->out, o->out ? sp : NULL, o->out ? side : NULL, o->json, o->json ? js : NULL,
                           o->rep.html, o->rep.json, o->rep.json ? rjs : NULL};
    const char *ins[2] = {o->ann, rv_cli_is_demo(o->weights) ? NULL : o->weights};
    st = rv_cli_outputs_check(outs, NULL, 8, ins, 2, ctx);
  }
  rv_part_run run = {"", -1, -1};
  rv_part_run_id(&run, o->weights, o->model ? o->model : "", o->ann, NULL);
  if (st == RV_OK) st = rv_cli_load_model_ex(&m, o->weights, o->model, &(rv_model_load_opts){o->strict}, ctx);
  if (st == RV_OK) st = rv_cli_set_precision(m, o->precision, ctx);
  if (st == RV_OK) st = rv_cli_check_task(m, RV_TASK_DETECT, o->weights, "eval ade20k", ctx);
  if (st != RV_OK) goto ran;
  masks = rv_detector_has_masks(rv_model_detector(m));
  if (masks && rv_cli_json_stdout(o->json)) {
    st = rv_error(ctx, RV_ERR_ARG, "--json -: this model has masks, whose summary is a second file: give --json FILE");
    goto ran;
  }
  if (masks && rv_cli_json_stdout(o->rep.json)) {
    st = rv_error(ctx, RV_ERR_ARG, "--report-json -: this model has masks, whose analysis is a second file: give --report-json FILE");
    goto ran;
  }
  double t0 = rv_now();
  if ((st = rv_coco_load(&gt, o->ann, masks, threads, ctx)) != RV_OK) goto ran;
  rv_log(ctx, RV_LOG_INFO, "%s: %zu images, %zu categories, %zu annotations (%.2f s)", o->ann, gt->n_images,
         gt->n_cats, gt->n_anns, rv_now() - t0);
  if (gt->n_images == 0) {
    st = rv_error(ctx, RV_ERR_FORMAT, "%s: no images", o->ann);
    goto ran;
  }
  if (o->out && !mpi && !(dj = rv_det_json_create(masks))) {
    st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    goto ran;
  }
  if (!(imgs = calloc(gt->n_images, sizeof *imgs))) {
    st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    goto ran;
  }
  if (o->resume && !mpi) { /* the images an earlier run finished: their results are read back */
    char side[4096];
    rv_cli_sibling_path(side, sizeof side, o->out, ".shard.json");
    rv_part prev;
    if ((st = rv_part_read(&prev, side, ctx)) != RV_OK) goto ran;
    if (strcmp(prev.run, run.id) != 0) {
      st = rv_error(ctx, RV_ERR_ARG, "--resume: %s comes from another run (weights, --model or %s differ): rerun without --resume",
                    side, o->ann);
      rv_part_free(&prev);
      goto ran;
    }
    if (prev.total != gt->n_images) {
      st = rv_error(ctx, RV_ERR_ARG, "--resume: %s lists a run over %zu images, %s has %zu", side, prev.total, o->ann, gt->n_images);
      rv_part_free(&prev);
      goto ran;
    }
    skip = malloc(sizeof *skip * (prev.n + 1));
    for (size_t i = 0; skip && i < prev.n; i++) {
      skip[i] = prev.ids[i];
      imgs[n_imgs].id = prev.ids[i];
      imgs[n_imgs].width = prev.widths[i];
      imgs[n_imgs].height = prev.heights[i];
      const rv_coco_image *im = rv_coco_find_image(gt, prev.ids[i]);
      if (!im) {
        st = rv_error(ctx, RV_ERR_ARG, "--resume: %s lists image %lld, not one of %s", side, (long long)prev.ids[i], o->ann);
        break;
      }
      imgs[n_imgs].file_name = im->file_name;
      n_imgs++;
    }
    n_skip = skip ? n_imgs : 0;
    rv_part_free(&prev);
    if (st != RV_OK) goto ran;
    if (!skip) { st = rv_error(ctx, RV_ERR_NOMEM, "out of memory"); goto ran; }
    qsort(skip, n_skip, sizeof *skip, cmp_i64);
    if ((st = rv_coco_load_results(&prev_box, gt, o->out, RV_IOU_BBOX, o->area_mode, threads, ctx)) != RV_OK) goto ran;
    if (masks) {
      char sp[4096];
      rv_cli_sibling_path(sp, sizeof sp, o->out, ".segm.json");
      if ((st = rv_coco_load_results(&prev_seg, gt, sp, RV_IOU_SEGM, o->area_mode, threads, ctx)) != RV_OK) goto ran;
    }
    if (!rv_cli.quiet)
      fprintf(stderr, "ravlt eval coco: resuming: %zu image(s) done (%zu detections in %s), %zu to run\n", n_skip, prev_box.n,
              o->out, gt->n_images - n_skip);
  }
  {
    size_t n_run = 0;
    st = coco_results_from_model(o, gt, m, &box, masks ? &seg : NULL, n_skip ? NULL : dj, imgs + n_imgs, &n_run, skip, n_skip,
                                 &n_failed, ctx);
    n_imgs += n_run;
    sig = rv_cli_stop_signal();
    rv_cli_signals_restore();
  }
  if (st == RV_OK && n_skip) { /* one results file: the earlier run's detections, then this run's */
    rv_coco_results all = {0}, all_seg = {0};
    size_t cap = 0, cap2 = 0;
    for (size_t i = 0; st == RV_OK && i < prev_box.n; i++) st = push_obj(&all, &cap, &prev_box.dets[i], ctx);
    for (size_t i = 0; st == RV_OK && i < box.n; i++) st = push_obj(&all, &cap, &box.dets[i], ctx);
    if (st == RV_OK) st = rv_coco_results_write(o->out, all.dets, all.n, 0, ctx);
    if (masks) {
      char sp[4096];
      rv_cli_sibling_path(sp, sizeof sp, o->out, ".segm.json");
      for (size_t i = 0; st == RV_OK && i < prev_seg.n; i++) st = push_obj(&all_seg, &cap2, &prev_seg.dets[i], ctx);
      for (size_t i = 0; st == RV_OK && i < seg.n; i++) st = push_obj(&all_seg, &cap2, &seg.dets[i], ctx);
      if (st == RV_OK) st = rv_coco_results_write(sp, all_seg.dets, all_seg.n, 1, ctx);
    }
    free(all.dets); /* the objects (and their masks) belong to prev_*, box and seg */
    free(all_seg.dets);
    /* evaluated as --results reads them, the path that gives the one-run numbers */
    rv_coco_results_free(&box);
    rv_coco_results_free(&seg);
    if (st == RV_OK) st = rv_coco_load_results(&box, gt, o->out, RV_IOU_BBOX, o->area_mode, threads, ctx);
    if (st == RV_OK && masks) {
      char sp[4096];
      rv_cli_sibling_path(sp, sizeof sp, o->out, ".segm.json");
      st = rv_coco_load_results(&seg, gt, sp, RV_IOU_SEGM, o->area_mode, threads, ctx);
    }
    prepared = 1;
  }
  if (st == RV_OK && !mpi && (n_failed || sig)) { /* keep what succeeded, no stats */
    if (o->out) {
      char side[4096], sp[4096], abs_ann[4096];
      rv_cli_sibling_path(side, sizeof side, o->out, ".shard.json");
      rv_cli_sibling_path(sp, sizeof sp, o->out, ".segm.json");
      const char *ann = realpath(o->ann, abs_ann) ? abs_ann : o->ann;
      rv_shard whole = {0, 1};
      if (!n_skip) st = rv_det_json_write(dj, o->out, masks ? sp : NULL, ctx);
      run.detections = (long long)box.n;
      run.segm_detections = masks ? (long long)seg.n : -1;
      if (st == RV_OK) st = rv_part_write_coco(side, &whole, gt->n_images, ann, o->out, masks ? sp : NULL, imgs, n_imgs, &run, ctx);
    }
    if (st == RV_OK) {
      if (sig) fprintf(stderr, "ravlt eval coco: stopped by signal %d after %zu of %zu images\n", sig, n_imgs, gt->n_images);
      if (n_failed) fprintf(stderr, "ravlt eval coco: %zu image(s) failed (named above)\n", n_failed);
      if (o->out)
        fprintf(stderr, "ravlt eval coco: no stats (they would miss %zu image(s)); %s holds the results of the %zu done; rerun with "
                "--resume to run only the missing ones\n", gt->n_images - n_imgs, o->out, n_imgs);
      else
        fprintf(stderr, "ravlt eval coco: no stats (they would miss %zu image(s)); with --output R.json the results of the images done "
                "are kept and --resume runs only the missing ones\n", gt->n_images - n_imgs);
      rc = sig ? 128 + sig : 1;
      goto done;
    }
  }
ran:
  if (mpi) { /* rank 0 gets every detection in the one-process order, writes and evaluates */
    double tw = rv_now();
    st = rv_mpi_agree(st, ctx);
    double tg = rv_now();
    if (st == RV_OK) st = rv_mpi_gather_coco(&box, masks ? &seg : NULL, gt, ctx);
    if (st == RV_OK && rv_mpi_rank() == 0)
      rv_log(ctx, RV_LOG_INFO, "MPI: %d ranks: waited %.3f s for the others, gathered %zu detections in %.3f s",
             rv_mpi_size(), tg - tw, box.n, rv_now() - tg);
    if (st == RV_OK && rv_mpi_rank() != 0) goto done;
  }
  if (st != RV_OK) goto fail;
  char segm_out[4096];
  if (o->out && mpi) {
    rv_cli_sibling_path(segm_out, sizeof segm_out, o->out, ".segm.json");
    if ((st = rv_coco_results_write(o->out, box.dets, box.n, 0, ctx)) != RV_OK) goto fail;
    if (masks && (st = rv_coco_results_write(segm_out, seg.dets, seg.n, 1, ctx)) != RV_OK) goto fail;
  } else if (o->out) {
    rv_cli_sibling_path(segm_out, sizeof segm_out, o->out, ".segm.json");
    if (!n_skip && (st = rv_det_json_write(dj, o->out, masks ? segm_out : NULL, ctx)) != RV_OK) goto fail;
    if (!o->shard_spec) { /* a complete run: an earlier run's list of done images is stale */
      char side[4096];
      rv_cli_sibling_path(side, sizeof side, o->out, ".shard.json");
      if (n_skip) unlink(side);
    }
  }
  if (o->shard_spec) { /* a part: the sidecar last, so that a part that exists is complete */
    char side[4096], abs_ann[4096];
    rv_cli_sibling_path(side, sizeof side, o->out, ".shard.json");
    const char *ann = realpath(o->ann, abs_ann) ? abs_ann : o->ann;
    run.detections = (long long)box.n;
    run.segm_detections = masks ? (long long)seg.n : -1;
    if ((st = rv_part_write_coco(side, &o->shard, gt->n_images, ann, o->out, masks ? segm_out : NULL, imgs, n_imgs,
                                 &run, ctx)) != RV_OK)
      goto fail;
    if (!rv_cli.quiet) fprintf(stderr, "ravlt eval coco: shard %d/%d: %zu of %zu images, %zu detections -> %s (merge the parts with "
                    "'ravlt merge')\n",
            o->shard.index, o->shard.count, n_imgs, gt->n_images, box.n, side);
    goto done;
  }
  rv_coco_report_opts ro = {o->area_mode, o->mmdet_maxdets, threads, masks, rv_cli_report_wanted(&o->rep) ? &ev : NULL,
                            rv_cli_json_stdout(o->rep.json)};
  rv_cli_report_init(&rep, &o->rep, threads);
  rep.o.images = o->images;
  if (!prepared && (st = rv_coco_results_prepare(&box, gt, RV_IOU_BBOX, o->area_mode, o->weights, ctx)) != RV_OK) goto fail;
  if ((st = rv_cli_coco_report(gt, &box, RV_IOU_BBOX, &ro, o->json, NULL, ctx)) != RV_OK) goto fail;
  if (ev && (st = rv_cli_report_coco(&rep, gt, &box, RV_IOU_BBOX, ev, rv_cocoeval_get_params(ev), o->area_mode, 0, ctx)) != RV_OK)
    goto fail;
  rv_cocoeval_free(ev);
  ev = NULL;
  if (masks) {
    char segm_json[4096];
    if (o->json) rv_cli_sibling_path(segm_json, sizeof segm_json, o->json, ".segm.json");
    if (!prepared && (st = rv_coco_results_prepare(&seg, gt, RV_IOU_SEGM, o->area_mode, o->weights, ctx)) != RV_OK) goto fail;
    printf("\n");
    if ((st = rv_cli_coco_report(gt, &seg, RV_IOU_SEGM, &ro, o->json ? segm_json : NULL, NULL, ctx)) != RV_OK)
      goto fail;
    if (ev && (st = rv_cli_report_coco(&rep, gt, &seg, RV_IOU_SEGM, ev, rv_cocoeval_get_params(ev), o->area_mode, 1, ctx)) != RV_OK)
      goto fail;
  }
  if ((st = rv_cli_report_finish(&rep, o->weights, ctx)) != RV_OK) goto fail;
  goto done;
fail:
  rc = rv_cli_fail_once(ctx, cmd, st);
done:
  rv_cocoeval_free(ev);
  rv_cli_report_free(&rep);
  rv_cli_signals_restore();
  free(skip);
  rv_coco_results_free(&prev_box);
  rv_coco_results_free(&prev_seg);
  free(imgs);
  rv_det_json_free(dj);
  rv_coco_results_free(&box);
  rv_coco_results_free(&seg);
  rv_coco_free(gt);
  rv_model_free(m);
  rv_ctx_free(ctx);
  return rc;
}

static int cmd_coco(int argc, char **argv) {
  const char *cmd = "eval coco";
  coco_opts o;
  memset(&o, 0, sizeof o);
  o.rep.conf_score_thr = o.rep.conf_iou_thr = NAN; /* not given */
  int npos;
  int prc = rv_cli_parse(&rv_spec_eval_coco, &o, argc, argv, &npos);
  if (prc >= 0) return prc;
  const char *rmsg = rv_cli_report_usage(&o.rep, 1);
  if (rmsg) return rv_cli_usage_error(cmd, "%s", rmsg);
  if (rv_cli_json_stdout(o.json) && rv_cli_json_stdout(o.rep.json))
    return rv_cli_usage_error(cmd, "--json - and --report-json -: only one of them can go to stdout");
  if (rv_cli_report_wanted(&o.rep) && (o.shard_spec || rv_mpi_size() > 1 || o.resume))
    return rv_cli_usage_error(cmd, "--report / --report-json need one run over every image (not with --shard, --resume or mpirun)");
  int iou_given = o.iou_type != NULL;
  o.iou = iou_given && !strcmp(o.iou_type, "segm") ? RV_IOU_SEGM : RV_IOU_BBOX;
  o.area_mode = o.area_mode_s && !strcmp(o.area_mode_s, "mask") ? RV_COCO_AREA_MASK : RV_COCO_AREA_BOX;
  if (!o.ann) return rv_cli_usage_error(cmd, "--ann GT.json is required");
  if (o.resume && (!o.weights || !o.out || o.shard_spec || rv_mpi_size() > 1))
    return rv_cli_usage_error(cmd, "--resume needs --weights and --output R.json (one process, no --shard)");
  if (!o.results && !o.weights) return rv_cli_usage_error(cmd, "needs --results DT.json (or --weights with --images)");
  if (o.results && o.weights) return rv_cli_usage_error(cmd, "--results and --weights exclude each other");
  if (o.shard_spec && rv_shard_parse(&o.shard, o.shard_spec))
    return rv_cli_usage_error(cmd, "--shard must be i/N with 0 <= i < N, not '%s'", o.shard_spec);
  if (o.weights) {
    if (!o.images) return rv_cli_usage_error(cmd, "--weights needs --images DIR (the folder of the gt's file_name)");
    if (rv_cli_check_model_opt(cmd, o.weights, o.model)) return 2;
    if (iou_given) return rv_cli_usage_error(cmd, "--iou-type is for --results (model mode evaluates bbox and segm)");
    if (o.shard_spec && !o.out) return rv_cli_usage_error(cmd, "--shard needs --output PART.json (the part to merge)");
    if (o.shard_spec && o.json) return rv_cli_usage_error(cmd, "--json with --shard: give it to 'ravlt merge'");
    if (rv_mpi_size() > 1) { /* rank r of N runs shard r/N; rank 0 evaluates the whole set */
      if (o.shard_spec) return rv_cli_usage_error(cmd, "--shard and mpirun exclude each other (the ranks are the shards)");
      o.shard.index = rv_mpi_rank();
      o.shard.count = rv_mpi_size();
    }
    return cmd_coco_model(&o);
  }
  if (o.shard_spec || o.out || o.model || (o.images && !rv_cli_report_wanted(&o.rep)))
    return rv_cli_usage_error(cmd, "--images (without a report), --model, --output and --shard are for the model mode (--weights)");
  if (rv_mpi_size() > 1) return rv_cli_usage_error(cmd, "under mpirun, eval runs a model (--weights); --results needs no ranks");
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  int threads = rv_cli.threads;
  rv_coco *gt = NULL;
  rv_coco_results res = {0};
  rv_status st;
  int rc = 0;
  { /* the outputs writable and none of them an input, before any work */
    const char *outs[3] = {rv_cli_json_stdout(o.json) ? NULL : o.json, o.rep.html,
                           rv_cli_json_stdout(o.rep.json) ? NULL : o.rep.json};
    const char *ins[3] = {o.ann, o.results, o.rep.compare};
    if ((st = rv_cli_outputs_check(outs, NULL, 3, ins, 3, ctx)) != RV_OK) goto fail;
  }
  double t0 = rv_now();
  if ((st = rv_coco_load(&gt, o.ann, o.iou == RV_IOU_SEGM, threads, ctx)) != RV_OK) goto fail;
  rv_log(ctx, RV_LOG_INFO, "%s: %zu images, %zu categories, %zu annotations (%.2f s)", o.ann, gt->n_images,
         gt->n_cats, gt->n_anns, rv_now() - t0);
  t0 = rv_now();
  if ((st = rv_coco_load_results(&res, gt, o.results, o.iou, o.area_mode, threads, ctx)) != RV_OK) goto fail;
  rv_log(ctx, RV_LOG_INFO, "%s: %zu detections (%.2f s)", o.results, res.n, rv_now() - t0);
  rv_cocoeval *ev = NULL;
  rv_cli_report rep;
  rv_cli_report_init(&rep, &o.rep, threads);
  rep.o.images = o.images;
  rv_coco_report_opts ro = {o.area_mode, o.mmdet_maxdets, threads, 0, rv_cli_report_wanted(&o.rep) ? &ev : NULL,
                            rv_cli_json_stdout(o.rep.json)};
  if ((st = rv_cli_coco_report(gt, &res, o.iou, &ro, o.json, NULL, ctx)) == RV_OK && ev)
    st = rv_cli_report_coco(&rep, gt, &res, o.iou, ev, rv_cocoeval_get_params(ev), o.area_mode, 0, ctx);
  if (st == RV_OK) st = rv_cli_report_finish(&rep, o.results, ctx);
  rv_cocoeval_free(ev);
  rv_cli_report_free(&rep);
  if (st != RV_OK) goto fail;
  goto done;
fail:
  rc = rv_cli_fail(ctx, cmd, st);
done:
  rv_coco_results_free(&res);
  rv_coco_free(gt);
  rv_ctx_free(ctx);
  return rc;
}

/* A missing --pred-dir / --gt-dir folder named as such (exit 1). */
static int missing_dir(const char *opt, const char *dir) {
  fprintf(stderr, "ravlt eval ade20k: %s %s: %s\n", opt, dir, access(dir, F_OK) == 0 ? "not a folder" : "no such folder");
  return 1;
}

/* ---- ade20k ---- */
typedef struct {
  const char *pred_dir, *gt_dir, *root, *json, *weights, *model, *mode, *pred_out, *out, *shard_spec;
  const char *precision;
  int zero_based, aug_test, crop, stride, resume, strict;
  rv_shard shard;
  rv_cli_report_opts rep; /* --report, --report-json, --images */
} ade_opts;

static const rv_opt ADE_OPTS[] = {
    {"--pred-dir", NULL, RV_OPT_STR, offsetof(ade_opts, pred_dir), 0, 0, NULL, "P", "predicted label PNGs (8-bit grey)", 0},
    {"--gt-dir", NULL, RV_OPT_STR, offsetof(ade_opts, gt_dir), 0, 0, NULL, "G", "annotation PNGs (default with --root: ROOT/annotations/validation)", 0},
    {"--root", NULL, RV_OPT_STR, offsetof(ade_opts, root), 0, 0, NULL, "R", "the ADEChallengeData2016 folder", 0},
    {"--pred-zero-based", NULL, RV_OPT_FLAG, offsetof(ade_opts, zero_based), 0, 0, NULL, NULL,
     "predictions hold class indices 0..149 (values >= 150: no class);\n"
     "default: the annotation convention `ravlt segment` writes (k = class\n"
     "k-1, 0 = no class)", 0},
    {"--json", NULL, RV_OPT_STR, offsetof(ade_opts, json), 0, 0, NULL, "FILE",
     "write {\"aAcc\", \"mIoU\", \"mAcc\", \"IoU\": [150], \"Acc\": [150]} (null = NaN)\n"
     "to FILE ('-': stdout, the table then goes to stderr)", 0},
    {"--report", NULL, RV_OPT_STR, offsetof(ade_opts, rep.html), 0, 0, NULL, "FILE.html",
     "also write the analysis as one self-contained HTML report: per-class\n"
     "IoU / Acc, mmseg's confusion matrix, the worst images (docs/evaluation.md)", 0},
    {"--report-json", NULL, RV_OPT_STR, offsetof(ade_opts, rep.json), 0, 0, NULL, "FILE",
     "the analysis as JSON ('-': stdout, the table then goes to stderr)", 0},
    {"--images", NULL, RV_OPT_STR, offsetof(ade_opts, rep.images), 0, 0, NULL, "DIR",
     "report with --pred-dir: the images (<name>.jpg) for the worst images'\n"
     "thumbnails (default with --root: ROOT/images/validation)", 0},
    {"--weights", NULL, RV_OPT_STR, offsetof(ade_opts, weights), 0, 0, NULL, "W",
     "model mode: segmentor checkpoint; --model NAME if it has no config; 'demo':\n"
     "the built-in demo model (on `ravlt synth --task seg` sets). The metrics run\n"
     "over the model's classes (150 for ADE20K checkpoints)", 0},
    {"--model", NULL, RV_OPT_STR, offsetof(ade_opts, model), 0, 0, NULL, "NAME", "model mode: architecture when the checkpoint has no config", 0},
    {"--aug-test", NULL, RV_OPT_FLAG, offsetof(ade_opts, aug_test), 0, 0, NULL, NULL, "model mode: multi-scale (0.5..1.75) + flip test-time augmentation", 0},
    {"--mode", NULL, RV_OPT_CHOICE, offsetof(ade_opts, mode), 0, 0, "whole|slide", "M", "model mode: whole or slide inference (default: the checkpoint's test_cfg)", 0},
    {"--crop", NULL, RV_OPT_INT, offsetof(ade_opts, crop), 1, 65536, NULL, "N", "model mode: slide window size", 0},
    {"--stride", NULL, RV_OPT_INT, offsetof(ade_opts, stride), 1, 65536, NULL, "N", "model mode: slide stride", 0},
    {"--out-dir", "--pred-out", RV_OPT_STR, offsetof(ade_opts, pred_out), 0, 0, NULL, "DIR",
     "model mode: also write label PNGs (annotation convention) into DIR", 0},
    {"--output", "--out", RV_OPT_STR, offsetof(ade_opts, out), 0, 0, NULL, "PART.json",
     "model mode: write the int64 per-class areas and the image list (a part\n"
     "for `ravlt merge`), atomically", 0},
    {"--shard", NULL, RV_OPT_STR, offsetof(ade_opts, shard_spec), 0, 0, NULL, "i/N",
     "model mode: run only images k with k mod N == i (0 <= i < N); needs\n"
     "--output, and prints no table (merge the parts)", 0},
    {"--resume", NULL, RV_OPT_FLAG, offsetof(ade_opts, resume), 0, 0, NULL, NULL,
     "model mode, with --output: the images PART.json lists as done (an earlier\n"
     "run that failed on some images or was stopped by a signal) are not run again", 0},
    RV_CLI_PRECISION_OPT(ade_opts, precision),
    RV_OPT_STRICT(ade_opts, strict),
    RV_OPT_END};

const rv_cmd_spec rv_spec_eval_ade20k = {
    "eval ade20k", "--pred-dir P (--gt-dir G | --root ADEChallengeData2016) [options]\n"
    "--root ADEChallengeData2016 --weights W [--aug-test] [--mode slide]",
    "ADE20K semantic segmentation metrics as mmsegmentation 0.x computes them (aAcc, mIoU, mAcc,\n"
    "per-class IoU/Acc; 150 classes, annotation 0 ignored, reduce_zero_label). Label PNGs are\n"
    "matched by file name: every G/<name>.png needs P/<name>.png. Model mode (--weights): run\n"
    "a segmentor over ROOT/images/validation/*.jpg, sorted by name; the annotation of\n"
    "<name>.jpg is ROOT/annotations/validation/<name>.png.\n",
    ADE_OPTS, 0,
    "mpirun -np N ravlt eval ade20k ... (a -DRAVLT_MPI=ON build): rank r runs images k with\n"
    "k mod N == r, rank 0 sums the int64 areas and prints the one-run table.\n"
    "\n"
    "An image that fails is named and the others run (with --shard the run stops); no metrics\n"
    "are printed then: --output keeps the areas of the images done for --resume. SIGINT,\n"
    "SIGTERM, SIGHUP: the same with the images done so far, exit 128+N.\n",
    "  ravlt eval ade20k --pred-dir out --gt-dir ADEChallengeData2016/annotations/validation\n"
    "  ravlt eval ade20k --root ADEChallengeData2016 --weights upernet_ravlt_s.pth --json miou.json\n"
    "  ravlt eval ade20k --root synth_seg --weights demo --json -\n"
    "  ravlt eval ade20k --root ADEChallengeData2016 --pred-dir out --report seg.html\n",
    sizeof(ade_opts)};

/* Model mode: segment every ROOT/images/validation/<name>.jpg of the shard and add it to
 * acc against annotations/validation/<name>.png; names of the images done in *done. */
static int cmp_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static rv_status ade20k_preds_from_model(const ade_opts *o, rv_model *m, const char *img_dir, const char *ann_dir,
                                         rv_seg_areas *acc, rv_name_list *list, char **done, size_t *n_done,
                                         const char *const *skip, size_t n_skip, size_t *failed, rv_seg_analysis *an,
                                         rv_ctx *ctx) {
  const int C = acc->num_classes;
  /* under mpirun every rank must agree, and a --shard part is all or nothing: stop at the first */
  const int keep_going = rv_mpi_size() <= 1 && !o->shard_spec;
  *failed = 0;
  rv_arena *arena = rv_arena_create(0);
  if (!arena) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_seg_run_opts ro = {0};
  ro.aug_test = o->aug_test;
  ro.flip = 1;
  rv_progress prog;
  rv_progress_start(&prog, "eval ade20k", (long)rv_shard_size(&o->shard, list->n));
  rv_status st = RV_OK;
  double t_model = 0, t0 = rv_now();
  for (size_t k = 0; k < list->n && st == RV_OK && !rv_cli_stop_signal(); k++) {
    if (!rv_shard_has(&o->shard, k)) continue;
    const char *name = list->names[k];
    if (n_skip && bsearch(&name, skip, n_skip, sizeof *skip, cmp_name)) {
      rv_progress_step(&prog, 1);
      continue;
    }
    size_t stem = strlen(name) - 4; /* ".jpg" */
    char ip[4096], ap[4096];
    rv_image img = {0}, g = {0}, lab = {0};
    int32_t *labels = NULL;
    double t1 = rv_now();
    if (snprintf(ip, sizeof ip, "%s/%s", img_dir, name) >= (int)sizeof ip ||
        snprintf(ap, sizeof ap, "%s/%.*s.png", ann_dir, (int)stem, name) >= (int)sizeof ap)
      st = rv_error(ctx, RV_ERR_ARG, "%s/%s: path too long", img_dir, name);
    if (st == RV_OK) st = rv_image_read(ip, &img, ctx);
    if (st == RV_OK) st = rv_image_read_gray(ap, &g, ctx);
    if (st == RV_OK && (g.h != img.h || g.w != img.w))
      st = rv_error(ctx, RV_ERR_SHAPE, "%s is %dx%d but %s is %dx%d (width x height)", ap, g.w, g.h, ip, img.w, img.h);
    size_t n = (size_t)img.h * img.w;
    for (size_t i = 0; st == RV_OK && i < n; i++)
      if (!(g.data[i] <= C || g.data[i] == 255))
        st = rv_error(ctx, RV_ERR_FORMAT, "%s: label %d at x=%zu y=%zu (ADE20K labels are 0..%d or 255)", ap, g.data[i],
                      i % (size_t)g.w, i / (size_t)g.w, C);
    if (st == RV_OK && !(labels = malloc(sizeof *labels * (n ? n : 1)))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    if (st == RV_OK) st = rv_model_segment(m, labels, &img, &ro, arena, ctx);
    t_model += rv_now() - t1;
    if (st == RV_OK) rv_seg_areas_add_i32(acc, labels, g.data, n, 1, 255);
    if (st == RV_OK && an) {
      char stem_name[1024];
      snprintf(stem_name, sizeof stem_name, "%.*s", (int)stem, name);
      st = rv_seg_analysis_add(an, stem_name, &img, g.data, labels, NULL, img.h, img.w, ctx);
    }
    if (st == RV_OK && o->pred_out) {
      char out[4096];
      if (snprintf(out, sizeof out, "%s/%.*s.png", o->pred_out, (int)stem, name) >= (int)sizeof out)
        st = rv_error(ctx, RV_ERR_ARG, "%s: path too long", o->pred_out);
      if (st == RV_OK) st = rv_image_alloc(&lab, img.h, img.w, 1, ctx);
      for (size_t p = 0; st == RV_OK && p < n; p++) lab.data[p] = (unsigned char)(labels[p] + 1);
      if (st == RV_OK) st = rv_image_write(out, &lab, ctx);
    }
    if (st == RV_OK) done[(*n_done)++] = list->names[k];
    else if (keep_going && st != RV_ERR_NOMEM) {
      fprintf(stderr, "%sravlt eval ade20k: %s\n", rv_progress_break(&prog), rv_ctx_errmsg(ctx));
      (*failed)++;
      st = RV_OK;
    }
    free(labels);
    rv_image_free(&img);
    rv_image_free(&g);
    rv_image_free(&lab);
    rv_arena_reset(arena);
    rv_progress_step(&prog, 1);
  }
  rv_progress_end(&prog);
  if (st == RV_OK)
    rv_log(ctx, RV_LOG_INFO, "%zu images: %.2f s (%.2f s in the model, %.3f images/s)", *n_done - n_skip, rv_now() - t0,
           t_model, t_model > 0 ? (double)(*n_done - n_skip) / t_model : 0.0);
  rv_arena_free(arena);
  return st;
}

static int cmd_ade20k_model(const ade_opts *o) {
  const char *cmd = "eval ade20k";
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  rv_model *m = NULL;
  rv_name_list list = {0};
  rv_seg_areas acc = {0};
  rv_seg_analysis *an = NULL;
  rv_cli_report rep = {0};
  char **done = NULL;
  const char **names = NULL; /* the model's class names for the table (NULL: indices) */
  size_t n_done = 0;
  int rc = 0;
  char img_dir[4096], ann_dir[4096];
  rv_status st = rv_ade20k_layout(o->root, img_dir, ann_dir, sizeof ann_dir, ctx);
  if (st == RV_OK && o->gt_dir) snprintf(ann_dir, sizeof ann_dir, "%s", o->gt_dir);
  if (st == RV_OK) st = rv_list_files(&list, img_dir, ".jpg", ctx);
  if (st == RV_OK && list.n == 0) st = rv_error(ctx, RV_ERR_NOTFOUND, "%s: no .jpg images", img_dir);
  if (st == RV_OK) st = rv_cli_load_model_ex(&m, o->weights, o->model, &(rv_model_load_opts){o->strict}, ctx);
  if (st == RV_OK) st = rv_cli_set_precision(m, o->precision, ctx);
  if (st == RV_OK) st = rv_cli_check_task(m, RV_TASK_SEGMENT, o->weights, "eval coco", ctx);
  /* ADE20K's 150 classes, or another dataset in its layout (`ravlt synth`, the demo model):
   * the metrics run over the model's classes, annotations 1..C. */
  if (st == RV_OK && rv_model_num_classes(m) > 254)
    st = rv_error(ctx, RV_ERR_MODEL, "%s: %d classes do not fit 8-bit ADE20K-style annotations", o->weights,
                  rv_model_num_classes(m));
  if (st == RV_OK && rv_model_num_classes(m) != RV_ADE20K_CLASSES)
    rv_log(ctx, RV_LOG_INFO, "%s: %d classes (not ADE20K's %d): metrics over those", o->weights,
           rv_model_num_classes(m), RV_ADE20K_CLASSES);
  if (st == RV_OK && o->pred_out) st = rv_mkdirs(o->pred_out, ctx);
  if (st == RV_OK) st = rv_seg_areas_init(&acc, rv_model_num_classes(m), ctx);
  if (st == RV_OK && !(done = calloc(list.n, sizeof *done))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_cli_report_init(&rep, &o->rep, rv_cli.threads);
  if (st == RV_OK && rv_cli_report_wanted(&o->rep)) {
    const int C = rv_model_num_classes(m);
    const char **nm = rv_model_has_class_names(m) ? malloc(sizeof *nm * (size_t)C) : NULL;
    for (int k = 0; nm && k < C; k++) nm[k] = rv_model_class_name(m, k);
    st = rv_seg_analysis_create(&an, C, nm, &rep.p, ctx);
    free(nm);
  }
  if (st == RV_OK && o->mode) {
    rv_seg_test_cfg *t = rv_model_seg_test_cfg(m);
    t->mode = !strcmp(o->mode, "slide") ? RV_SEG_MODE_SLIDE : RV_SEG_MODE_WHOLE;
    if (o->crop) t->crop_h = t->crop_w = o->crop;
    if (o->stride) t->stride_h = t->stride_w = o->stride;
    if (t->crop_h <= 0 || t->stride_h <= 0) {
      t->crop_h = t->crop_w = 512;
      t->stride_h = t->stride_w = 341;
    }
  }
  rv_part_run run = {"", -1, -1};
  {
    char opts[512];
    snprintf(opts, sizeof opts, "model=%s aug=%d mode=%s crop=%d stride=%d gt=%s", o->model ? o->model : "", o->aug_test,
             o->mode ? o->mode : "", o->crop, o->stride, o->gt_dir ? o->gt_dir : "");
    rv_digest items;
    rv_digest_init(&items);
    for (size_t k = 0; k < list.n; k++) rv_digest_str(&items, list.names[k]);
    rv_part_run_id(&run, o->weights, opts, NULL, &items);
  }
  size_t n_failed = 0, n_skip = 0;
  int sig = 0;
  if (st == RV_OK && o->resume) { /* the images an earlier run finished: their areas are read back */
    rv_part prev;
    if ((st = rv_part_read(&prev, o->out, ctx)) == RV_OK) {
      if (prev.kind != RV_PART_ADE20K || strcmp(prev.run, run.id) != 0 || prev.total != list.n ||
          prev.areas.num_classes != acc.num_classes)
        st = rv_error(ctx, RV_ERR_ARG, "--resume: %s comes from another run (weights, options or images differ): rerun without --resume", o->out);
      for (size_t i = 0; st == RV_OK && i < prev.n; i++) {
        const char *nm = prev.names[i];
        char **hit = bsearch(&nm, list.names, list.n, sizeof *list.names, cmp_name);
        if (!hit) st = rv_error(ctx, RV_ERR_ARG, "--resume: %s lists %s, not one of the images", o->out, nm);
        else done[n_done++] = *hit;
      }
      if (st == RV_OK) {
        int64_t *dst[4] = {acc.intersect, acc.union_, acc.pred, acc.label};
        const int64_t *src[4] = {prev.areas.intersect, prev.areas.union_, prev.areas.pred, prev.areas.label};
        for (int a = 0; a < 4; a++) memcpy(dst[a], src[a], sizeof *dst[a] * (size_t)acc.num_classes);
        n_skip = n_done;
        qsort(done, n_done, sizeof *done, cmp_name);
        if (!rv_cli.quiet)
          fprintf(stderr, "ravlt eval ade20k: resuming: %zu image(s) done, %zu to run\n", n_skip, list.n - n_skip);
      }
      rv_part_free(&prev);
    }
  }
  if (!(rv_mpi_size() > 1)) rv_cli_signals_install(1);
  if (st == RV_OK)
    st = ade20k_preds_from_model(o, m, img_dir, ann_dir, &acc, &list, done, &n_done, (const char *const *)done, n_skip,
                                 &n_failed, an, ctx); /* appends to done[n_skip...] */
  sig = rv_cli_stop_signal();
  rv_cli_signals_restore();
  if (st == RV_OK && rv_mpi_size() <= 1 && (n_failed || sig)) { /* keep what succeeded, no metrics */
    rv_shard whole = {0, 1};
    if (o->out && !o->shard_spec) st = rv_part_write_ade(o->out, &whole, list.n, done, n_done, &acc, &run, ctx);
    if (st == RV_OK) {
      if (sig) fprintf(stderr, "ravlt eval ade20k: stopped by signal %d after %zu of %zu images\n", sig, n_done, list.n);
      if (n_failed) fprintf(stderr, "ravlt eval ade20k: %zu image(s) failed (named above)\n", n_failed);
      fprintf(stderr, "ravlt eval ade20k: no metrics (they would miss %zu image(s)); %s\n", list.n - n_done,
              o->out && !o->shard_spec ? "--output holds the areas of the images done: rerun with --resume to run only the missing ones"
                                       : "with --output PART.json the images done are kept and --resume runs only the missing ones");
      rc = sig ? 128 + sig : 1;
      goto done;
    }
  }
  if (rv_mpi_size() > 1) { /* every rank gets here: rank 0 sums the int64 areas */
    double tw = rv_now();
    st = rv_mpi_agree(st, ctx);
    double tg = rv_now();
    if (st == RV_OK) st = rv_mpi_sum_areas(&acc, &n_done, ctx);
    if (st == RV_OK && rv_mpi_rank() == 0)
      rv_log(ctx, RV_LOG_INFO, "MPI: %d ranks: waited %.3f s for the others, summed the areas in %.3f s",
             rv_mpi_size(), tg - tw, rv_now() - tg);
    if (st == RV_OK && rv_mpi_rank() != 0) goto done;
    if (st == RV_OK && n_done != list.n)
      st = rv_error(ctx, RV_ERR_INTERNAL, "MPI: the ranks did %zu of %zu images", n_done, list.n);
    for (size_t k = 0; st == RV_OK && k < list.n; k++) done[k] = list.names[k]; /* the one-run list */
  }
  if (st != RV_OK) goto fail;
  if (o->out) {
    rv_shard whole = {0, 1};
    if ((st = rv_part_write_ade(o->out, o->shard_spec ? &o->shard : &whole, list.n, done, n_done, &acc, &run, ctx)) != RV_OK)
      goto fail;
  }
  if (o->shard_spec) {
    if (!rv_cli.quiet) fprintf(stderr, "ravlt eval ade20k: shard %d/%d: %zu of %zu images -> %s (merge the parts with 'ravlt merge')\n",
            o->shard.index, o->shard.count, n_done, list.n, o->out);
    goto done;
  }
  if (rv_model_has_class_names(m)) {
    const int C = rv_model_num_classes(m);
    if (!(names = malloc(sizeof *names * (size_t)C))) {
      st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
      goto fail;
    }
    for (int k = 0; k < C; k++) names[k] = rv_model_class_name(m, k);
  }
  if ((st = rv_cli_ade_report_to(&acc, n_done, names, o->json, rv_cli_json_stdout(o->rep.json), ctx)) != RV_OK) goto fail;
  if (an && ((st = rv_cli_report_seg(&rep, an, ctx)) != RV_OK || (st = rv_cli_report_finish(&rep, o->weights, ctx)) != RV_OK))
    goto fail;
  goto done;
fail:
  rc = rv_cli_fail_once(ctx, cmd, st);
done:
  rv_seg_analysis_free(an);
  rv_cli_report_free(&rep);
  free(names);
  free(done);
  rv_seg_areas_free(&acc);
  rv_name_list_free(&list);
  rv_model_free(m);
  rv_ctx_free(ctx);
  return rc;
}

static int cmd_ade20k(int argc, char **argv) {
  const char *cmd = "eval ade20k";
  ade_opts o;
  memset(&o, 0, sizeof o);
  o.rep.conf_score_thr = o.rep.conf_iou_thr = NAN; /* not options of eval ade20k */
  int npos;
  int prc = rv_cli_parse(&rv_spec_eval_ade20k, &o, argc, argv, &npos);
  if (prc >= 0) return prc;
  const char *rmsg = rv_cli_report_usage(&o.rep, 0);
  if (rmsg) return rv_cli_usage_error(cmd, "%s", rmsg);
  if (o.rep.images && !rv_cli_report_wanted(&o.rep)) return rv_cli_usage_error(cmd, "--images is for the report (--report / --report-json)");
  if (rv_cli_json_stdout(o.json) && rv_cli_json_stdout(o.rep.json))
    return rv_cli_usage_error(cmd, "--json - and --report-json -: only one of them can go to stdout");
  if (rv_cli_report_wanted(&o.rep) && (o.shard_spec || rv_mpi_size() > 1 || o.resume))
    return rv_cli_usage_error(cmd, "--report / --report-json need one run over every image (not with --shard, --resume or mpirun)");
  if (o.resume && (!o.weights || !o.out || o.shard_spec || rv_mpi_size() > 1))
    return rv_cli_usage_error(cmd, "--resume needs --weights and --output PART.json (one process, no --shard)");
  if (!o.gt_dir && !o.root) return rv_cli_usage_error(cmd, "needs --gt-dir G or --root ADEChallengeData2016");
  if (!o.pred_dir && !o.weights) return rv_cli_usage_error(cmd, "needs --pred-dir P (or --weights with --root)");
  if (o.pred_dir && o.weights) return rv_cli_usage_error(cmd, "--pred-dir and --weights exclude each other");
  if (o.shard_spec && rv_shard_parse(&o.shard, o.shard_spec))
    return rv_cli_usage_error(cmd, "--shard must be i/N with 0 <= i < N, not '%s'", o.shard_spec);
  if (o.weights) {
    if (!o.root) return rv_cli_usage_error(cmd, "--weights needs --root ADEChallengeData2016 (images/validation)");
    if (rv_cli_check_model_opt(cmd, o.weights, o.model)) return 2;
    if (o.zero_based) return rv_cli_usage_error(cmd, "--pred-zero-based is for --pred-dir");
    if (o.shard_spec && !o.out) return rv_cli_usage_error(cmd, "--shard needs --output PART.json (the part to merge)");
    if (o.shard_spec && o.json) return rv_cli_usage_error(cmd, "--json with --shard: give it to 'ravlt merge'");
    if (rv_mpi_size() > 1) { /* rank r of N runs shard r/N; rank 0 reports the whole set */
      if (o.shard_spec) return rv_cli_usage_error(cmd, "--shard and mpirun exclude each other (the ranks are the shards)");
      o.shard.index = rv_mpi_rank();
      o.shard.count = rv_mpi_size();
    }
    return cmd_ade20k_model(&o);
  }
  if (rv_mpi_size() > 1) return rv_cli_usage_error(cmd, "under mpirun, eval runs a model (--weights); --pred-dir needs no ranks");
  if (o.aug_test || o.mode || o.pred_out || o.out || o.shard_spec || o.model || o.crop || o.stride)
    return rv_cli_usage_error(cmd, "--aug-test, --mode, --crop, --stride, --model, --out-dir, --output and --shard are "
                                   "for the model mode (--weights)");
  struct stat sb;
  if (stat(o.pred_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return missing_dir("--pred-dir", o.pred_dir);
  if (o.gt_dir && (stat(o.gt_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))) return missing_dir("--gt-dir", o.gt_dir);
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  rv_status st = RV_OK;
  int rc = 0;
  char img_dir[4096], ann_dir[4096];
  rv_seg_areas acc = {0};
  rv_seg_analysis *an = NULL;
  rv_cli_report rep = {0};
  const char *gt_dir = o.gt_dir;
  { /* the outputs writable, before any work */
    const char *outs[3] = {rv_cli_json_stdout(o.json) ? NULL : o.json, o.rep.html,
                           rv_cli_json_stdout(o.rep.json) ? NULL : o.rep.json};
    if ((st = rv_cli_outputs_check(outs, NULL, 3, NULL, 0, ctx)) != RV_OK) goto fail;
  }
  if (o.root && !gt_dir) {
    if ((st = rv_ade20k_layout(o.root, img_dir, ann_dir, sizeof ann_dir, ctx)) != RV_OK) goto fail;
    gt_dir = ann_dir;
  }
  if ((st = rv_seg_areas_init(&acc, RV_ADE20K_CLASSES, ctx)) != RV_OK) goto fail;
  size_t n = 0;
  double t0 = rv_now();
  rv_ade_pred_format fmt = o.zero_based ? RV_ADE_PRED_ZERO_BASED : RV_ADE_PRED_ANNOTATION;
  char root_imgs[4096], root_anns[4096];
  if (rv_cli_report_wanted(&o.rep)) { /* the analysis reads the label maps once and has mmseg's areas too */
    rv_cli_report_init(&rep, &o.rep, rv_cli.threads);
    if (!rep.o.images && o.root && rv_ade20k_layout(o.root, root_imgs, root_anns, sizeof root_anns, NULL) == RV_OK)
      rep.o.images = root_imgs;
    if ((st = rv_seg_analysis_create(&an, RV_ADE20K_CLASSES, NULL, &rep.p, ctx)) != RV_OK ||
        (st = rv_seg_analysis_add_dirs(an, o.pred_dir, gt_dir, rep.o.images, fmt, &n, ctx)) != RV_OK)
      goto fail;
    rv_seg_areas_merge(&acc, rv_seg_analysis_areas(an));
  } else if ((st = rv_ade20k_eval_dirs(&acc, o.pred_dir, gt_dir, fmt, rv_cli.threads, &n, ctx)) != RV_OK)
    goto fail;
  rv_log(ctx, RV_LOG_INFO, "%zu label maps from %s (%.2f s)", n, gt_dir, rv_now() - t0);
  if ((st = rv_cli_ade_report_to(&acc, n, NULL, o.json, rv_cli_json_stdout(o.rep.json), ctx)) != RV_OK) goto fail;
  if (an && ((st = rv_cli_report_seg(&rep, an, ctx)) != RV_OK || (st = rv_cli_report_finish(&rep, o.pred_dir, ctx)) != RV_OK))
    goto fail;
  goto done;
fail:
  rc = rv_cli_fail(ctx, cmd, st);
done:
  rv_seg_analysis_free(an);
  rv_cli_report_free(&rep);
  rv_seg_areas_free(&acc);
  rv_ctx_free(ctx);
  return rc;
}

/* Global options between `eval` and the dataset (ravlt eval -q coco ...): no options of its own. */
static const rv_cmd_spec EVAL_GLOBALS = {"eval", "", NULL, (const rv_opt[]){RV_OPT_END}, 0, NULL, NULL, 0};

int rv_cmd_eval(int argc, char **argv) {
  int k = rv_opts_globals_end(argc, argv, 1); /* argv[k]: the dataset */
  for (int j = 1; j < k; j += rv_opts_global_span(argc, argv, j))
    if (rv_cli_is_help(argv[j])) {
      fputs(EVAL_USAGE, stdout);
      return 0;
    }
  int npos;
  if (k > 1 && rv_cli_parse(&EVAL_GLOBALS, NULL, k, argv, &npos) >= 0) return 2; /* a usage error, printed */
  if (k >= argc) {
    fputs(EVAL_USAGE, stderr);
    return 2;
  }
  if (rv_cli_is_help(argv[k])) {
    fputs(EVAL_USAGE, stdout);
    return 0;
  }
  if (strcmp(argv[k], "coco") == 0) return cmd_coco(argc - k, argv + k);
  if (strcmp(argv[k], "ade20k") == 0) return cmd_ade20k(argc - k, argv + k);
  return rv_cli_usage_error("eval", "unknown dataset '%s' (coco or ade20k)", argv[k]);
}
