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
#include "apps/image_run.h"
#include "apps/tile_cli.h"
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

/* ---- shared by the model modes (--weights) of coco and ade20k ---- */

/* The usage rules of the model mode, after the mode's own: --resume, --shard (parsed into
 * *shard; under mpirun the ranks are the shards), --json. 2 (printed) or 0. */
static int model_usage(const char *cmd, const rv_model_opts *mo, int resume, const char *out, const char *shard_spec,
                       const char *json, rv_shard *shard) {
  if (resume && (!out || shard_spec || rv_mpi_size() > 1))
    return rv_cli_usage_error(cmd, "--resume needs --weights and --output (one process, no --shard)");
  if (shard_spec && rv_shard_parse(shard, shard_spec))
    return rv_cli_usage_error(cmd, "--shard must be i/N with 0 <= i < N, not '%s'", shard_spec);
  if (rv_cli_check_model_opt(cmd, mo->weights, mo->model)) return 2;
  if (shard_spec && !out) return rv_cli_usage_error(cmd, "--shard needs --output PART.json (the part to merge)");
  if (shard_spec && json) return rv_cli_usage_error(cmd, "--json with --shard: give it to 'ravlt merge'");
  if (rv_mpi_size() > 1) { /* rank r of N runs shard r/N; rank 0 reports the whole set */
    if (shard_spec) return rv_cli_usage_error(cmd, "--shard and mpirun exclude each other (the ranks are the shards)");
    shard->index = rv_mpi_rank();
    shard->count = rv_mpi_size();
  }
  return 0;
}

/* A run that missed images (some failed, or a signal came): no numbers. what: "stats";
 * kept: what --output holds. Returns the exit status. */
static int missed_images(const rv_image_run *r, const char *what, size_t missing, const char *kept) {
  rv_image_run_report(r, NULL, NULL);
  fprintf(stderr, "ravlt %s: no %s (they would miss %zu image(s)); %s\n", r->cmd, what, missing, kept);
  return r->signal ? 128 + r->signal : 1;
}

/* Under mpirun, after the loop: every rank agrees on st (rank 0's message names a failing
 * rank), then gather() brings rank 0 every rank's results and says what it did in what. */
static rv_status mpi_gather(rv_status st, rv_status (*gather)(void *arg, char *what, size_t cap, rv_ctx *ctx), void *arg,
                            rv_ctx *ctx) {
  double tw = rv_now();
  st = rv_mpi_agree(st, ctx);
  double tg = rv_now();
  char what[128] = "";
  if (st == RV_OK) st = gather(arg, what, sizeof what, ctx);
  if (st == RV_OK && rv_mpi_rank() == 0)
    rv_log(ctx, RV_LOG_INFO, "MPI: %d ranks: waited %.3f s for the others, %s in %.3f s", rv_mpi_size(), tg - tw, what,
           rv_now() - tg);
  return st;
}

/* The loop over a dataset's n items (apps/image_run.h), timed: its seconds in *secs. */
static rv_status dataset_loop(rv_image_run *r, size_t n, void *user,
                              rv_status (*path)(void *, rv_image_run *, size_t, char *, size_t, rv_ctx *),
                              int (*skip)(void *, size_t), void (*name)(void *, rv_image_run *, size_t, const char *, char *, size_t),
                              rv_status (*image)(void *, rv_image_run *, size_t, const char *, rv_image *, rv_ctx *),
                              double *secs, rv_ctx *ctx) {
  r->n = n;
  r->user = user;
  r->path = path;
  r->skip = skip;
  r->name = name;
  r->image = image;
  double t0 = rv_now();
  rv_status st = rv_image_loop(r, ctx);
  *secs = rv_now() - t0;
  return st;
}

/* ---- coco ---- */
typedef struct {
  rv_model_opts mo;
  const char *ann, *results, *json, *images, *out, *shard_spec, *iou_type, *area_mode_s;
  rv_iou_type iou;
  rv_coco_area_mode area_mode;
  int mmdet_maxdets, resume;
  rv_shard shard;
  rv_cli_report_opts rep; /* --report, --report-json, --compare, --conf-* */
  rv_tile_cli tile;
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
    RV_MODEL_OPT_WEIGHTS(coco_opts, mo,
                         "model mode: detector checkpoint (.pth / .safetensors); --model NAME if it\n"
                         "has no config; 'demo-det': the built-in demo detector (on `ravlt synth\n"
                         "--task det` sets)"),
    RV_MODEL_OPT_MODEL(coco_opts, mo),
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
    RV_TILE_OPTS_DET(coco_opts, tile),
    RV_MODEL_OPT_PRECISION(coco_opts, mo),
    RV_OPT_STRICT(coco_opts, mo.strict),
    RV_OPT_END};

const rv_cmd_spec rv_spec_eval_coco = {
    "eval coco", "--ann GT.json --results DT.json [--iou-type bbox|segm] [options]\n"
    "--ann GT.json --images DIR --weights W [--output R.json] [--shard i/N]",
    "COCO detection evaluation with the numbers pycocotools' COCOeval prints (12 stats, bit for\n"
    "bit), followed by a per-category AP table (IoU=0.50:0.95, area=all, last maxDets).\n"
    "Model mode (--weights): run a detector over the gt's images, sorted by image id, then\n"
    "evaluate bbox and, when the model has masks, segm; --tile runs it on tiles of each image\n"
    "as `ravlt detect --tile` does (docs/large-images.md).\n",
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
/* n detections (bboxes, scores, labels; masks as n row-major mask_h x mask_w planes, or as
 * RLEs, or none) in mmdet's class order, appended as COCO results. */
static rv_status append_dets(rv_coco_results *box, size_t *box_cap, rv_coco_results *seg, size_t *seg_cap,
                             const rv_model *m, int64_t image_id, int n, const float *bboxes, const float *scores,
                             const int *labels, const unsigned char *masks, int mask_h, int mask_w, const rv_rle *rles,
                             const int *order, rv_ctx *ctx) {
  for (int i = 0; i < n; i++) {
    int k = order[i];
    const float *b = bboxes + 4 * (size_t)k;
    rv_coco_obj o;
    memset(&o, 0, sizeof o);
    o.image_id = image_id;
    o.category_id = rv_model_category_id(m, labels[k]);
    o.score = (double)scores[k];
    double x1 = b[0], y1 = b[1], x2 = b[2], y2 = b[3];
    o.bbox[0] = x1;
    o.bbox[1] = y1;
    o.bbox[2] = x2 - x1;
    o.bbox[3] = y2 - y1;
    o.has_bbox = 1;
    RV_TRY(push_obj(box, box_cap, &o, ctx));
    if (seg && (masks || rles)) {
      if (masks)
        RV_TRY(rv_rle_encode_rowmajor(&o.segm, masks + (size_t)k * mask_h * mask_w, (uint32_t)mask_h, (uint32_t)mask_w, ctx));
      else
        RV_TRY(rv_rle_copy(&o.segm, &rles[k], ctx));
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

/* Model mode: the detector over the gt's images (sorted by id; only the shard's, not those an
 * earlier run did). The state of a run; the loop (apps/image_run.h) calls coco_image with it. */
typedef struct {
  const coco_opts *o;
  int mpi;   /* under mpirun (apps/mpi_run.h): every rank reaches the gather, failed or not */
  int masks; /* the model has masks: segm results too */
  char segm[4096], side[4096]; /* --output R.json's R.segm.json and R.shard.json */
  rv_coco *gt;
  rv_coco_results box, seg;           /* the detections, as --results would read them */
  size_t box_cap, seg_cap;
  rv_coco_results prev_box, prev_seg; /* --resume: those of the earlier run */
  int prepared;                       /* box and seg read back whole (--resume): prepared */
  rv_det_json *dj;                    /* --output's writer (a run without --resume) */
  int *cat_ids;
  rv_part_image *imgs; /* the images done, the earlier run's first */
  size_t n_imgs;
  int64_t *skip;       /* --resume: the ids of the images done before, sorted */
  size_t n_skip;
  rv_part_run run;
  int tiled;           /* --tile */
  rv_tile_opts to;
  rv_tile_cli_progress bar;
} coco_run;

static const rv_coco_image *coco_item(const coco_run *u, size_t k) { return &u->gt->images[u->gt->img_idx_sorted[k]]; }

static int coco_skip(void *user, size_t k) {
  const coco_run *u = user;
  return u->n_skip && id_done(u->skip, u->n_skip, coco_item(u, k)->id);
}

static rv_status coco_path(void *user, rv_image_run *r, size_t k, char *buf, size_t cap, rv_ctx *ctx) {
  const coco_run *u = user;
  if (snprintf(buf, cap, "%s/%s", u->o->images, coco_item(u, k)->file_name) >= (int)cap)
    return rv_error(ctx, RV_ERR_ARG, "%s/%s: path too long", u->o->images, coco_item(u, k)->file_name);
  return RV_OK;
}

static void coco_name(void *user, rv_image_run *r, size_t k, const char *path, char *buf, size_t cap) {
  const rv_coco_image *im = coco_item(user, k);
  snprintf(buf, cap, "image %lld (%s)", (long long)im->id, im->file_name);
}

static rv_status coco_image(void *user, rv_image_run *r, size_t k, const char *path, rv_image *img, rv_ctx *ctx) {
  coco_run *u = user;
  const rv_coco_image *im = coco_item(u, k);
  if (img->h != im->height || img->w != im->width)
    return rv_error(ctx, RV_ERR_SHAPE, "%s is %dx%d but %s says %dx%d for image %lld (width x height)", path, img->w,
                    img->h, u->o->ann, im->width, im->height, (long long)im->id);
  int *order = NULL, n = 0;
  rv_status st;
  if (u->tiled) {
    rv_tile_detections td = {0};
    st = rv_task_detect_tiled(&r->model, img, &u->to, r->arena, &td, &order, ctx);
    if (st == RV_OK)
      st = append_dets(&u->box, &u->box_cap, u->masks ? &u->seg : NULL, &u->seg_cap, r->model.m, im->id, td.n, td.bboxes,
                       td.scores, td.labels, NULL, 0, 0, td.masks, order, ctx);
    if (st == RV_OK && u->dj && !u->n_skip)
      st = rv_det_json_add_rle(u->dj, im->id, td.n, td.bboxes, td.scores, td.labels, td.masks, order, u->cat_ids, ctx);
    n = td.n;
  } else {
    rv_detections det = {0};
    st = rv_task_detect(&r->model, img, r->arena, &det, &order, ctx);
    if (st == RV_OK && u->o->tile.max_dets > 0 && det.n > u->o->tile.max_dets) { /* the best N (det is by score) */
      det.n = u->o->tile.max_dets;
      rv_detections_class_order(order, &det);
    }
    if (st == RV_OK)
      st = append_dets(&u->box, &u->box_cap, u->masks ? &u->seg : NULL, &u->seg_cap, r->model.m, im->id, det.n, det.bboxes,
                       det.scores, det.labels, det.masks, det.mask_h, det.mask_w, NULL, order, ctx);
    if (st == RV_OK && u->dj && !u->n_skip) st = rv_det_json_add(u->dj, im->id, &det, order, u->cat_ids, ctx);
    n = det.n;
  }
  if (st == RV_OK) {
    rv_log(ctx, RV_LOG_DEBUG, "image %lld (%s): %d detections", (long long)im->id, im->file_name, n);
    u->imgs[u->n_imgs++] = (rv_part_image){im->id, im->width, im->height, im->file_name};
  }
  free(order);
  return st;
}

static rv_status coco_results_from_model(rv_image_run *r, coco_run *u, rv_ctx *ctx) {
  const rv_coco *gt = u->gt;
  for (size_t k = 0; k < gt->n_images; k++) /* every image of the shard has a file */
    if (rv_shard_has(&r->shard, k) && (!coco_item(u, k)->file_name || !coco_item(u, k)->file_name[0]))
      return rv_error(ctx, RV_ERR_FORMAT, "%s: image %lld has no file_name", u->o->ann, (long long)coco_item(u, k)->id);
  const int K = r->model.num_classes;
  if (!(u->cat_ids = malloc(sizeof *u->cat_ids * (size_t)(K > 0 ? K : 1)))) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (int i = 0; i < K; i++) u->cat_ids[i] = rv_model_category_id(r->model.m, i);
  double secs;
  rv_status st = dataset_loop(r, gt->n_images, u, coco_path, coco_skip, coco_name, coco_image, &secs, ctx);
  size_t ran = r->done + r->failed;
  if (st == RV_OK)
    rv_log(ctx, RV_LOG_INFO, "%zu images run, %zu detections: %.2f s (%.2f s in the model, %.3f images/s)", ran,
           u->box.n, secs, r->t_model, r->t_model > 0 ? (double)ran / r->t_model : 0.0);
  return st;
}

/* Before the first image: every output checked (writable, not an input), the model, the gt. */
static rv_status coco_open(coco_run *u, rv_image_run *r, rv_ctx *ctx) {
  const coco_opts *o = u->o;
  char js[4096] = "", rjs[4096] = "";
  if (o->out) rv_cli_sibling_path(u->segm, sizeof u->segm, o->out, ".segm.json");
  if (o->out) rv_cli_sibling_path(u->side, sizeof u->side, o->out, ".shard.json");
  if (o->json) rv_cli_sibling_path(js, sizeof js, o->json, ".segm.json");
  if (o->rep.json) rv_cli_sibling_path(rjs, sizeof rjs, o->rep.json, ".segm.json");
  const char *outs[8] = {o->out, o->out ? u->segm : NULL, o->out ? u->side : NULL, o->json, o->json ? js : NULL,
                         o->rep.html, rv_cli_json_stdout(o->rep.json) ? NULL : o->rep.json, o->rep.json ? rjs : NULL};
  const char *ins[2] = {o->ann, rv_cli_is_demo(o->mo.weights) ? NULL : o->mo.weights};
  RV_TRY(rv_cli_outputs_check(outs, NULL, 8, ins, 2, ctx));
  RV_TRY(rv_run_model_load(&r->model, r->cmd, RV_RUN_DETECT, "eval ade20k", &o->mo, ctx));
  u->masks = rv_detector_has_masks(rv_model_detector(r->model.m));
  if (u->masks && rv_cli_json_stdout(o->json))
    return rv_error(ctx, RV_ERR_ARG, "--json -: this model has masks, whose summary is a second file: give --json FILE");
  if (u->masks && rv_cli_json_stdout(o->rep.json))
    return rv_error(ctx, RV_ERR_ARG,
                    "--report-json -: this model has masks, whose analysis is a second file: give --report-json FILE");
  double t0 = rv_now();
  RV_TRY(rv_coco_load(&u->gt, o->ann, u->masks, rv_cli.threads, ctx));
  rv_log(ctx, RV_LOG_INFO, "%s: %zu images, %zu categories, %zu annotations (%.2f s)", o->ann, u->gt->n_images,
         u->gt->n_cats, u->gt->n_anns, rv_now() - t0);
  if (u->gt->n_images == 0) return rv_error(ctx, RV_ERR_FORMAT, "%s: no images", o->ann);
  if ((o->out && !u->mpi && !(u->dj = rv_det_json_create(u->masks))) || !(u->imgs = calloc(u->gt->n_images, sizeof *u->imgs)))
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  return RV_OK;
}

/* --resume: the images R.shard.json lists as done are not run again; their results are read
 * back from R.json (and R.segm.json). */
static rv_status coco_resume(coco_run *u, rv_ctx *ctx) {
  const coco_opts *o = u->o;
  const rv_coco *gt = u->gt;
  rv_part prev;
  RV_TRY(rv_part_read(&prev, u->side, ctx));
  rv_status st = RV_OK;
  if (strcmp(prev.run, u->run.id) != 0)
    st = rv_error(ctx, RV_ERR_ARG, "--resume: %s comes from another run (weights, --model or %s differ): rerun without --resume",
                  u->side, o->ann);
  else if (prev.total != gt->n_images)
    st = rv_error(ctx, RV_ERR_ARG, "--resume: %s lists a run over %zu images, %s has %zu", u->side, prev.total, o->ann,
                  gt->n_images);
  else if (!(u->skip = malloc(sizeof *u->skip * (prev.n + 1))))
    st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (size_t i = 0; st == RV_OK && i < prev.n; i++) {
    const rv_coco_image *im = rv_coco_find_image(gt, prev.ids[i]);
    if (!im) st = rv_error(ctx, RV_ERR_ARG, "--resume: %s lists image %lld, not one of %s", u->side, (long long)prev.ids[i], o->ann);
    else u->imgs[u->n_imgs++] = (rv_part_image){prev.ids[i], prev.widths[i], prev.heights[i], im->file_name};
    if (st == RV_OK) u->skip[i] = prev.ids[i];
  }
  rv_part_free(&prev);
  RV_TRY(st);
  u->n_skip = u->n_imgs;
  qsort(u->skip, u->n_skip, sizeof *u->skip, cmp_i64);
  RV_TRY(rv_coco_load_results(&u->prev_box, gt, o->out, RV_IOU_BBOX, o->area_mode, rv_cli.threads, ctx));
  if (u->masks) RV_TRY(rv_coco_load_results(&u->prev_seg, gt, u->segm, RV_IOU_SEGM, o->area_mode, rv_cli.threads, ctx));
  if (!rv_cli.quiet)
    fprintf(stderr, "ravlt eval coco: resuming: %zu image(s) done (%zu detections in %s), %zu to run\n", u->n_skip,
            u->prev_box.n, o->out, gt->n_images - u->n_skip);
  return RV_OK;
}

/* --resume: one results file at path, the earlier run's detections then this run's, read back
 * into cur as --results reads it (the path that gives the one-run numbers). */
static rv_status coco_join(coco_run *u, rv_coco_results *cur, const rv_coco_results *prev, const char *path, rv_iou_type t,
                           rv_ctx *ctx) {
  rv_coco_results all = {0};
  size_t cap = 0;
  rv_status st = RV_OK;
  for (size_t i = 0; st == RV_OK && i < prev->n; i++) st = push_obj(&all, &cap, &prev->dets[i], ctx);
  for (size_t i = 0; st == RV_OK && i < cur->n; i++) st = push_obj(&all, &cap, &cur->dets[i], ctx);
  if (st == RV_OK) st = rv_coco_results_write(path, all.dets, all.n, t == RV_IOU_SEGM, ctx);
  free(all.dets); /* the objects (and their masks) belong to prev and cur */
  rv_coco_results_free(cur);
  if (st == RV_OK) st = rv_coco_load_results(cur, u->gt, path, t, u->o->area_mode, rv_cli.threads, ctx);
  return st;
}

/* R.shard.json: the images done (for --resume, or a part for merge), written last. */
static rv_status coco_sidecar(coco_run *u, const rv_shard *shard, rv_ctx *ctx) {
  char abs_ann[4096];
  const char *ann = realpath(u->o->ann, abs_ann) ? abs_ann : u->o->ann;
  u->run.detections = (long long)u->box.n;
  u->run.segm_detections = u->masks ? (long long)u->seg.n : -1;
  return rv_part_write_coco(u->side, shard, u->gt->n_images, ann, u->o->out, u->masks ? u->segm : NULL, u->imgs,
                            u->n_imgs, &u->run, ctx);
}

/* Some images failed, or a signal came: with --output the results of the images done and
 * the sidecar listing them (for --resume); no stats. The exit status. */
static int coco_partial(coco_run *u, const rv_image_run *r, rv_ctx *ctx) {
  const coco_opts *o = u->o;
  char kept[4400] = "with --output R.json the results of the images done are kept and --resume runs only the missing ones";
  if (o->out) {
    rv_shard whole = {0, 1};
    rv_status st = u->n_skip ? RV_OK : rv_det_json_write(u->dj, o->out, u->masks ? u->segm : NULL, ctx);
    if (st == RV_OK) st = coco_sidecar(u, &whole, ctx);
    if (st != RV_OK) return rv_cli_fail(ctx, r->cmd, st);
    snprintf(kept, sizeof kept, "%s holds the results of the %zu done; rerun with --resume to run only the missing ones",
             o->out, u->n_imgs);
  }
  return missed_images(r, "stats", u->gt->n_images - u->n_imgs, kept);
}

/* A complete run's --output (rank 0's under mpirun): R.json (R.segm.json); a part's sidecar last. */
static rv_status coco_write(coco_run *u, rv_ctx *ctx) {
  const coco_opts *o = u->o;
  if (!o->out) return RV_OK;
  if (u->mpi) {
    RV_TRY(rv_coco_results_write(o->out, u->box.dets, u->box.n, 0, ctx));
    if (u->masks) RV_TRY(rv_coco_results_write(u->segm, u->seg.dets, u->seg.n, 1, ctx));
  } else if (!u->n_skip) {
    RV_TRY(rv_det_json_write(u->dj, o->out, u->masks ? u->segm : NULL, ctx));
  }
  if (o->shard_spec) return coco_sidecar(u, &o->shard, ctx);
  if (u->n_skip) unlink(u->side); /* a complete run: an earlier run's list of done images is stale */
  return RV_OK;
}

/* pycocotools' stats and the per-category table: bbox, then segm when the model has masks. */
static rv_status coco_evaluate(coco_run *u, rv_ctx *ctx) {
  const coco_opts *o = u->o;
  rv_cocoeval *ev = NULL;
  rv_coco_report_opts ro = {o->area_mode, o->mmdet_maxdets, rv_cli.threads, u->masks,
                            rv_cli_report_wanted(&o->rep) ? &ev : NULL, rv_cli_json_stdout(o->rep.json)};
  rv_cli_report rep;
  rv_cli_report_init(&rep, &o->rep, rv_cli.threads);
  rep.o.images = o->images; /* the model mode's images: thumbnails of the worst */
  rv_status st = RV_OK;
  for (int t = 0; t <= u->masks && st == RV_OK; t++) {
    const rv_iou_type iou = t ? RV_IOU_SEGM : RV_IOU_BBOX;
    rv_coco_results *res = t ? &u->seg : &u->box;
    char json[4096] = "";
    if (o->json && t) rv_cli_sibling_path(json, sizeof json, o->json, ".segm.json");
    if (!u->prepared) st = rv_coco_results_prepare(res, u->gt, iou, o->area_mode, o->mo.weights, ctx);
    if (st != RV_OK) break;
    if (t) printf("\n");
    st = rv_cli_coco_report(u->gt, res, iou, &ro, !o->json ? NULL : t ? json : o->json, NULL, ctx);
    if (st == RV_OK && ev) st = rv_cli_report_coco(&rep, u->gt, res, iou, ev, rv_cocoeval_get_params(ev), o->area_mode, t, ctx);
    rv_cocoeval_free(ev);
    ev = NULL;
  }
  if (st == RV_OK) st = rv_cli_report_finish(&rep, o->mo.weights, ctx);
  rv_cli_report_free(&rep);
  return st;
}

typedef struct {
  rv_coco_results *box, *seg;
  const rv_coco *gt;
} coco_gathered;
static rv_status coco_gather(void *arg, char *what, size_t cap, rv_ctx *ctx) {
  coco_gathered *g = arg;
  RV_TRY(rv_mpi_gather_coco(g->box, g->seg, g->gt, ctx));
  snprintf(what, cap, "gathered %zu detections", g->box->n);
  return RV_OK;
}

static int cmd_coco_model(const coco_opts *o) {
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  rv_image_run r = {.cmd = "eval coco", .shard = o->shard};
  coco_run u = {.o = o, .mpi = rv_mpi_size() > 1, .run = {"", -1, -1}};
  char model_key[512]; /* the run's identity (--resume, parts): tiling changes the results */
  rv_tile_cli_key(model_key, sizeof model_key, o->mo.model, &o->tile);
  rv_part_run_id(&u.run, o->mo.weights, model_key, o->ann, NULL);
  if ((u.tiled = rv_tile_cli_opts(&o->tile, &u.to))) rv_tile_cli_progress_attach(&u.bar, &u.to, "eval coco tiles");
  if (!u.mpi) rv_cli_signals_install(1); /* a signal while loading: stops before the first image */
  rv_status st = coco_open(&u, &r, ctx);
  if (st == RV_OK && o->resume) st = coco_resume(&u, ctx);
  /* under mpirun every rank must agree, and a --shard part is all or nothing: stop at the first */
  r.keep_going = !u.mpi && !o->shard_spec;
  if (st == RV_OK) st = coco_results_from_model(&r, &u, ctx);
  rv_cli_signals_restore();
  if (st == RV_OK && u.n_skip) {
    st = coco_join(&u, &u.box, &u.prev_box, o->out, RV_IOU_BBOX, ctx);
    if (st == RV_OK && u.masks) st = coco_join(&u, &u.seg, &u.prev_seg, u.segm, RV_IOU_SEGM, ctx);
    u.prepared = 1;
  }
  int rc = 0;
  if (st == RV_OK && !u.mpi && (r.failed || r.signal)) {
    rc = coco_partial(&u, &r, ctx);
  } else {
    if (u.mpi) { /* rank 0 gets every detection in the one-process order, writes and evaluates */
      coco_gathered g = {&u.box, u.masks ? &u.seg : NULL, u.gt};
      st = mpi_gather(st, coco_gather, &g, ctx);
    }
    const int writer = !u.mpi || rv_mpi_rank() == 0;
    if (st == RV_OK && writer) st = coco_write(&u, ctx);
    if (st == RV_OK && writer && o->shard_spec) {
      if (!rv_cli.quiet)
        fprintf(stderr, "ravlt eval coco: shard %d/%d: %zu of %zu images, %zu detections -> %s (merge the parts with "
                        "'ravlt merge')\n", o->shard.index, o->shard.count, u.n_imgs, u.gt->n_images, u.box.n, u.side);
    } else if (st == RV_OK && writer) {
      st = coco_evaluate(&u, ctx);
    }
    if (st != RV_OK) rc = rv_cli_fail_once(ctx, r.cmd, st);
  }
  free(u.skip);
  free(u.cat_ids);
  rv_coco_results_free(&u.prev_box);
  rv_coco_results_free(&u.prev_seg);
  free(u.imgs);
  rv_det_json_free(u.dj);
  rv_coco_results_free(&u.box);
  rv_coco_results_free(&u.seg);
  rv_coco_free(u.gt);
  rv_image_run_free(&r);
  rv_ctx_free(ctx);
  return rc;
}

static int cmd_coco(int argc, char **argv) {
  const char *cmd = "eval coco";
  coco_opts o = {0};
  o.rep.conf_score_thr = o.rep.conf_iou_thr = NAN; /* not given */
  int npos, prc = rv_cli_parse(&rv_spec_eval_coco, &o, argc, argv, &npos);
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
  if (!o.results && !o.mo.weights) return rv_cli_usage_error(cmd, "needs --results DT.json (or --weights with --images)");
  if (o.results && o.mo.weights) return rv_cli_usage_error(cmd, "--results and --weights exclude each other");
  if (o.mo.weights) {
    if (!o.images) return rv_cli_usage_error(cmd, "--weights needs --images DIR (the folder of the gt's file_name)");
    if (iou_given) return rv_cli_usage_error(cmd, "--iou-type is for --results (model mode evaluates bbox and segm)");
    if (rv_tile_cli_check(cmd, &o.tile)) return 2;
    if (model_usage(cmd, &o.mo, o.resume, o.out, o.shard_spec, o.json, &o.shard)) return 2;
    return cmd_coco_model(&o);
  }
  if (o.resume || o.shard_spec || o.out || (o.images && !rv_cli_report_wanted(&o.rep)) || o.mo.model)
    return rv_cli_usage_error(cmd, "--images (without a report), --model, --output, --shard and --resume are for the "
                                   "model mode (--weights)");
  if (o.tile.tile[0] > 0 || o.tile.max_dets > 0)
    return rv_cli_usage_error(cmd, "--tile and --max-dets are for the model mode (--weights)");
  if (rv_mpi_size() > 1) return rv_cli_usage_error(cmd, "under mpirun, eval runs a model (--weights); --results needs no ranks");
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  int threads = rv_cli.threads;
  rv_coco *gt = NULL;
  rv_coco_results res = {0};
  rv_cocoeval *ev = NULL;
  rv_cli_report rep;
  rv_cli_report_init(&rep, &o.rep, threads);
  rep.o.images = o.images;
  /* the outputs writable and none of them an input, before any work */
  const char *outs[3] = {rv_cli_json_stdout(o.json) ? NULL : o.json, o.rep.html,
                         rv_cli_json_stdout(o.rep.json) ? NULL : o.rep.json};
  const char *ins[3] = {o.ann, o.results, o.rep.compare};
  double t0 = rv_now();
  rv_status st = rv_cli_outputs_check(outs, NULL, 3, ins, 3, ctx);
  if (st == RV_OK) st = rv_coco_load(&gt, o.ann, o.iou == RV_IOU_SEGM, threads, ctx);
  if (st == RV_OK) {
    rv_log(ctx, RV_LOG_INFO, "%s: %zu images, %zu categories, %zu annotations (%.2f s)", o.ann, gt->n_images,
           gt->n_cats, gt->n_anns, rv_now() - t0);
    t0 = rv_now();
    st = rv_coco_load_results(&res, gt, o.results, o.iou, o.area_mode, threads, ctx);
  }
  if (st == RV_OK) {
    rv_log(ctx, RV_LOG_INFO, "%s: %zu detections (%.2f s)", o.results, res.n, rv_now() - t0);
    rv_coco_report_opts ro = {o.area_mode, o.mmdet_maxdets, threads, 0, rv_cli_report_wanted(&o.rep) ? &ev : NULL,
                              rv_cli_json_stdout(o.rep.json)};
    st = rv_cli_coco_report(gt, &res, o.iou, &ro, o.json, NULL, ctx);
  }
  if (st == RV_OK && ev) st = rv_cli_report_coco(&rep, gt, &res, o.iou, ev, rv_cocoeval_get_params(ev), o.area_mode, 0, ctx);
  if (st == RV_OK) st = rv_cli_report_finish(&rep, o.results, ctx);
  rv_cocoeval_free(ev);
  rv_cli_report_free(&rep);
  int rc = st == RV_OK ? 0 : rv_cli_fail(ctx, cmd, st);
  rv_coco_results_free(&res);
  rv_coco_free(gt);
  rv_ctx_free(ctx);
  return rc;
}


/* ---- ade20k ---- */
typedef struct {
  rv_model_opts mo;
  const char *pred_dir, *gt_dir, *root, *json, *mode, *pred_out, *out, *shard_spec;
  int zero_based, aug_test, crop, stride, resume;
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
    RV_MODEL_OPT_WEIGHTS(ade_opts, mo,
                         "model mode: segmentor checkpoint; --model NAME if it has no config; 'demo':\n"
                         "the built-in demo model (on `ravlt synth --task seg` sets). The metrics run\n"
                         "over the model's classes (150 for ADE20K checkpoints)"),
    RV_MODEL_OPT_MODEL(ade_opts, mo),
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
    RV_MODEL_OPT_PRECISION(ade_opts, mo),
    RV_OPT_STRICT(ade_opts, mo.strict),
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

static int cmp_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Model mode: segment every ROOT/images/validation/<name>.jpg of the shard (not those an
 * earlier run did) and add it to the areas against annotations/validation/<name>.png. The
 * state of a run; the loop (apps/image_run.h) calls ade_image with it. */
typedef struct {
  const ade_opts *o;
  char img_dir[4096], ann_dir[4096];
  rv_name_list list;
  rv_seg_areas acc;
  char **done;   /* the names of the images done: done[0 .. n_skip-1] by an earlier run, sorted */
  size_t n_done, n_skip;
  rv_seg_run_opts ro;
  rv_part_run run;
  rv_seg_analysis *an; /* --report: the analysis, image by image */
} ade_run;

static int ade_skip(void *user, size_t k) {
  const ade_run *u = user;
  const char *name = u->list.names[k];
  return u->n_skip && bsearch(&name, u->done, u->n_skip, sizeof *u->done, cmp_name);
}

static rv_status ade_path(void *user, rv_image_run *r, size_t k, char *buf, size_t cap, rv_ctx *ctx) {
  const ade_run *u = user;
  if (snprintf(buf, cap, "%s/%s", u->img_dir, u->list.names[k]) >= (int)cap)
    return rv_error(ctx, RV_ERR_ARG, "%s/%s: path too long", u->img_dir, u->list.names[k]);
  return RV_OK;
}

/* One image: its areas against its annotation, and its label PNG with --out-dir. */
static rv_status ade_image(void *user, rv_image_run *r, size_t k, const char *path, rv_image *img, rv_ctx *ctx) {
  ade_run *u = user;
  const int C = u->acc.num_classes;
  const char *name = u->list.names[k];
  size_t stem = strlen(name) - 4; /* ".jpg" */
  char ap[4096], out[4096];
  rv_image g = {0}, lab = {0};
  int32_t *labels = NULL;
  rv_status st = RV_OK;
  if (snprintf(ap, sizeof ap, "%s/%.*s.png", u->ann_dir, (int)stem, name) >= (int)sizeof ap)
    st = rv_error(ctx, RV_ERR_ARG, "%s/%s: path too long", u->img_dir, name);
  if (st == RV_OK) st = rv_image_read_gray(ap, &g, ctx);
  if (st == RV_OK && (g.h != img->h || g.w != img->w))
    st = rv_error(ctx, RV_ERR_SHAPE, "%s is %dx%d but %s is %dx%d (width x height)", ap, g.w, g.h, path, img->w, img->h);
  size_t n = (size_t)img->h * img->w;
  for (size_t i = 0; st == RV_OK && i < n; i++)
    if (!(g.data[i] <= C || g.data[i] == 255))
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: label %d at x=%zu y=%zu (ADE20K labels are 0..%d or 255)", ap, g.data[i],
                    i % (size_t)g.w, i / (size_t)g.w, C);
  if (st == RV_OK) st = rv_task_segment(&r->model, img, &u->ro, r->arena, &labels, ctx);
  if (st == RV_OK) rv_seg_areas_add_i32(&u->acc, labels, g.data, n, 1, 255);
  if (st == RV_OK && u->an) {
    char stem_name[1024];
    snprintf(stem_name, sizeof stem_name, "%.*s", (int)stem, name);
    st = rv_seg_analysis_add(u->an, stem_name, img, g.data, labels, NULL, img->h, img->w, ctx);
  }
  if (st == RV_OK && u->o->pred_out) {
    if (snprintf(out, sizeof out, "%s/%.*s.png", u->o->pred_out, (int)stem, name) >= (int)sizeof out)
      st = rv_error(ctx, RV_ERR_ARG, "%s: path too long", u->o->pred_out);
    if (st == RV_OK) st = rv_task_label_image(&lab, labels, img->h, img->w, ctx);
    if (st == RV_OK) st = rv_image_write(out, &lab, ctx);
  }
  if (st == RV_OK) u->done[u->n_done++] = u->list.names[k];
  free(labels);
  rv_image_free(&g);
  rv_image_free(&lab);
  return st;
}

static rv_status ade20k_preds_from_model(rv_image_run *r, ade_run *u, rv_ctx *ctx) {
  u->ro.aug_test = u->o->aug_test;
  u->ro.flip = 1;
  double secs;
  rv_status st = dataset_loop(r, u->list.n, u, ade_path, ade_skip, NULL, ade_image, &secs, ctx);
  size_t ran = u->n_done - u->n_skip;
  if (st == RV_OK)
    rv_log(ctx, RV_LOG_INFO, "%zu images: %.2f s (%.2f s in the model, %.3f images/s)", ran, secs, r->t_model,
           r->t_model > 0 ? (double)ran / r->t_model : 0.0);
  return st;
}

/* Before the first image: the images, the model (its classes: the metrics'), the test mode. */
static rv_status ade_open(ade_run *u, rv_image_run *r, rv_ctx *ctx) {
  const ade_opts *o = u->o;
  RV_TRY(rv_ade20k_layout(o->root, u->img_dir, u->ann_dir, sizeof u->ann_dir, ctx));
  if (o->gt_dir) snprintf(u->ann_dir, sizeof u->ann_dir, "%s", o->gt_dir);
  if (o->pred_out && rv_same_file(o->pred_out, u->ann_dir)) /* NAME.png over NAME.png */
    return rv_error(ctx, RV_ERR_ARG, "--out-dir %s is the annotation folder %s: refusing to write over an input", o->pred_out,
                    u->ann_dir);
  RV_TRY(rv_list_files(&u->list, u->img_dir, ".jpg", ctx));
  if (u->list.n == 0) return rv_error(ctx, RV_ERR_NOTFOUND, "%s: no .jpg images", u->img_dir);
  RV_TRY(rv_run_model_load(&r->model, r->cmd, RV_RUN_SEGMENT, "eval coco", &o->mo, ctx));
  /* ADE20K's 150 classes, or another dataset in its layout (`ravlt synth`, the demo model):
   * the metrics run over the model's classes, annotations 1..C. */
  const int C = r->model.num_classes;
  if (C > 254) return rv_error(ctx, RV_ERR_MODEL, "%s: %d classes do not fit 8-bit ADE20K-style annotations", o->mo.weights, C);
  if (C != RV_ADE20K_CLASSES)
    rv_log(ctx, RV_LOG_INFO, "%s: %d classes (not ADE20K's %d): metrics over those", o->mo.weights, C, RV_ADE20K_CLASSES);
  if (o->pred_out) RV_TRY(rv_mkdirs(o->pred_out, ctx));
  RV_TRY(rv_seg_areas_init(&u->acc, C, ctx));
  if (!(u->done = calloc(u->list.n, sizeof *u->done))) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (rv_cli_report_wanted(&o->rep)) {
    rv_cli_report rep;
    rv_cli_report_init(&rep, &o->rep, rv_cli.threads);
    RV_TRY(rv_seg_analysis_create(&u->an, C, rv_model_has_class_names(r->model.m) ? r->model.names : NULL, &rep.p, ctx));
  }
  if (o->mode) {
    rv_seg_test_cfg *t = rv_model_seg_test_cfg(r->model.m);
    t->mode = !strcmp(o->mode, "slide") ? RV_SEG_MODE_SLIDE : RV_SEG_MODE_WHOLE;
    if (o->crop) t->crop_h = t->crop_w = o->crop;
    if (o->stride) t->stride_h = t->stride_w = o->stride;
    if (t->crop_h <= 0 || t->stride_h <= 0) { /* mmseg's ADE20K slide window when the checkpoint has none */
      t->crop_h = t->crop_w = 512;
      t->stride_h = t->stride_w = 341;
    }
  }
  char opts[512];
  snprintf(opts, sizeof opts, "model=%s aug=%d mode=%s crop=%d stride=%d gt=%s", o->mo.model ? o->mo.model : "", o->aug_test,
           o->mode ? o->mode : "", o->crop, o->stride, o->gt_dir ? o->gt_dir : "");
  rv_digest items;
  rv_digest_init(&items);
  for (size_t k = 0; k < u->list.n; k++) rv_digest_str(&items, u->list.names[k]);
  rv_part_run_id(&u->run, o->mo.weights, opts, NULL, &items);
  return RV_OK;
}

/* --resume: the images PART.json lists as done are not run again; their areas are read back. */
static rv_status ade_resume(ade_run *u, rv_ctx *ctx) {
  const char *out = u->o->out;
  rv_part prev;
  RV_TRY(rv_part_read(&prev, out, ctx));
  rv_status st = RV_OK;
  if (prev.kind != RV_PART_ADE20K || strcmp(prev.run, u->run.id) != 0 || prev.total != u->list.n ||
      prev.areas.num_classes != u->acc.num_classes)
    st = rv_error(ctx, RV_ERR_ARG, "--resume: %s comes from another run (weights, options or images differ): rerun without --resume", out);
  for (size_t i = 0; st == RV_OK && i < prev.n; i++) {
    const char *nm = prev.names[i];
    char **hit = bsearch(&nm, u->list.names, u->list.n, sizeof *u->list.names, cmp_name);
    if (!hit) st = rv_error(ctx, RV_ERR_ARG, "--resume: %s lists %s, not one of the images", out, nm);
    else u->done[u->n_done++] = *hit;
  }
  if (st == RV_OK) {
    int64_t *dst[4] = {u->acc.intersect, u->acc.union_, u->acc.pred, u->acc.label};
    const int64_t *src[4] = {prev.areas.intersect, prev.areas.union_, prev.areas.pred, prev.areas.label};
    for (int a = 0; a < 4; a++) memcpy(dst[a], src[a], sizeof *dst[a] * (size_t)u->acc.num_classes);
    u->n_skip = u->n_done;
    qsort(u->done, u->n_done, sizeof *u->done, cmp_name);
    if (!rv_cli.quiet)
      fprintf(stderr, "ravlt eval ade20k: resuming: %zu image(s) done, %zu to run\n", u->n_skip, u->list.n - u->n_skip);
  }
  rv_part_free(&prev);
  return st;
}

/* PART.json: the areas and the images done; shard: the run's shard (whole: {0, 1}). */
static rv_status ade_write(ade_run *u, const rv_shard *shard, rv_ctx *ctx) {
  return rv_part_write_ade(u->o->out, shard, u->list.n, u->done, u->n_done, &u->acc, &u->run, ctx);
}

typedef struct {
  rv_seg_areas *acc;
  size_t *n_done;
} ade_summed;
static rv_status ade_sum(void *arg, char *what, size_t cap, rv_ctx *ctx) {
  ade_summed *g = arg;
  snprintf(what, cap, "summed the areas");
  return rv_mpi_sum_areas(g->acc, g->n_done, ctx);
}

static int cmd_ade20k_model(const ade_opts *o) {
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  rv_image_run r = {.cmd = "eval ade20k", .shard = o->shard};
  ade_run u = {.o = o, .run = {"", -1, -1}};
  const int mpi = rv_mpi_size() > 1;
  const rv_shard whole = {0, 1};
  rv_status st = ade_open(&u, &r, ctx);
  if (st == RV_OK && o->resume) st = ade_resume(&u, ctx);
  if (!mpi) rv_cli_signals_install(1);
  /* under mpirun every rank must agree, and a --shard part is all or nothing: stop at the first */
  r.keep_going = !mpi && !o->shard_spec;
  if (st == RV_OK) st = ade20k_preds_from_model(&r, &u, ctx);
  rv_cli_signals_restore();
  int rc = 0;
  if (st == RV_OK && !mpi && (r.failed || r.signal)) { /* keep what succeeded, no metrics */
    const int keep = o->out && !o->shard_spec;
    if (keep) st = ade_write(&u, &whole, ctx);
    rc = st != RV_OK ? rv_cli_fail(ctx, r.cmd, st)
         : missed_images(&r, "metrics", u.list.n - u.n_done,
                         keep ? "--output holds the areas of the images done: rerun with --resume to run only the missing ones"
                              : "with --output PART.json the images done are kept and --resume runs only the missing ones");
  } else {
    if (mpi) { /* every rank gets here: rank 0 sums the int64 areas */
      ade_summed g = {&u.acc, &u.n_done};
      st = mpi_gather(st, ade_sum, &g, ctx);
      if (st == RV_OK && rv_mpi_rank() == 0 && u.n_done != u.list.n)
        st = rv_error(ctx, RV_ERR_INTERNAL, "MPI: the ranks did %zu of %zu images", u.n_done, u.list.n);
      for (size_t k = 0; st == RV_OK && k < u.list.n; k++) u.done[k] = u.list.names[k]; /* the one-run list */
    }
    const int writer = !mpi || rv_mpi_rank() == 0;
    if (st == RV_OK && writer && o->out) st = ade_write(&u, o->shard_spec ? &o->shard : &whole, ctx);
    if (st == RV_OK && writer && o->shard_spec) {
      if (!rv_cli.quiet)
        fprintf(stderr, "ravlt eval ade20k: shard %d/%d: %zu of %zu images -> %s (merge the parts with 'ravlt merge')\n",
                o->shard.index, o->shard.count, u.n_done, u.list.n, o->out);
    } else if (st == RV_OK && writer) {
      st = rv_cli_ade_report_to(&u.acc, u.n_done, rv_model_has_class_names(r.model.m) ? r.model.names : NULL, o->json,
                                rv_cli_json_stdout(o->rep.json), ctx);
      if (st == RV_OK && u.an) {
        rv_cli_report rep;
        rv_cli_report_init(&rep, &o->rep, rv_cli.threads);
        st = rv_cli_report_seg(&rep, u.an, ctx);
        if (st == RV_OK) st = rv_cli_report_finish(&rep, o->mo.weights, ctx);
        rv_cli_report_free(&rep);
      }
    }
    if (st != RV_OK) rc = rv_cli_fail_once(ctx, r.cmd, st);
  }
  rv_seg_analysis_free(u.an);
  free(u.done);
  rv_seg_areas_free(&u.acc);
  rv_name_list_free(&u.list);
  rv_image_run_free(&r);
  rv_ctx_free(ctx);
  return rc;
}

/* A missing --pred-dir / --gt-dir folder named as such (exit 1). */
static int missing_dir(const char *opt, const char *dir) {
  fprintf(stderr, "ravlt eval ade20k: %s %s: %s\n", opt, dir, access(dir, F_OK) == 0 ? "not a folder" : "no such folder");
  return 1;
}

static int cmd_ade20k(int argc, char **argv) {
  const char *cmd = "eval ade20k";
  ade_opts o = {0};
  o.rep.conf_score_thr = o.rep.conf_iou_thr = NAN; /* not options of eval ade20k */
  int npos, prc = rv_cli_parse(&rv_spec_eval_ade20k, &o, argc, argv, &npos);
  if (prc >= 0) return prc;
  const char *rmsg = rv_cli_report_usage(&o.rep, 0);
  if (rmsg) return rv_cli_usage_error(cmd, "%s", rmsg);
  if (o.rep.images && !rv_cli_report_wanted(&o.rep)) return rv_cli_usage_error(cmd, "--images is for the report (--report / --report-json)");
  if (rv_cli_json_stdout(o.json) && rv_cli_json_stdout(o.rep.json))
    return rv_cli_usage_error(cmd, "--json - and --report-json -: only one of them can go to stdout");
  if (rv_cli_report_wanted(&o.rep) && (o.shard_spec || rv_mpi_size() > 1 || o.resume))
    return rv_cli_usage_error(cmd, "--report / --report-json need one run over every image (not with --shard, --resume or mpirun)");
  if (!o.gt_dir && !o.root) return rv_cli_usage_error(cmd, "needs --gt-dir G or --root ADEChallengeData2016");
  if (!o.pred_dir && !o.mo.weights) return rv_cli_usage_error(cmd, "needs --pred-dir P (or --weights with --root)");
  if (o.pred_dir && o.mo.weights) return rv_cli_usage_error(cmd, "--pred-dir and --weights exclude each other");
  if (o.mo.weights) {
    if (!o.root) return rv_cli_usage_error(cmd, "--weights needs --root ADEChallengeData2016 (images/validation)");
    if (o.zero_based) return rv_cli_usage_error(cmd, "--pred-zero-based is for --pred-dir");
    if (model_usage(cmd, &o.mo, o.resume, o.out, o.shard_spec, o.json, &o.shard)) return 2;
    return cmd_ade20k_model(&o);
  }
  if (rv_mpi_size() > 1) return rv_cli_usage_error(cmd, "under mpirun, eval runs a model (--weights); --pred-dir needs no ranks");
  if (o.aug_test || o.mode || o.pred_out || o.out || o.shard_spec || o.mo.model || o.crop || o.stride || o.resume)
    return rv_cli_usage_error(cmd, "--aug-test, --mode, --crop, --stride, --model, --out-dir, --output, --shard and "
                                   "--resume are for the model mode (--weights)");
  struct stat sb;
  if (stat(o.pred_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return missing_dir("--pred-dir", o.pred_dir);
  if (o.gt_dir && (stat(o.gt_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))) return missing_dir("--gt-dir", o.gt_dir);
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  char img_dir[4096], ann_dir[4096], root_imgs[4096], root_anns[4096];
  rv_seg_areas acc = {0};
  rv_seg_analysis *an = NULL;
  rv_cli_report rep;
  rv_cli_report_init(&rep, &o.rep, rv_cli.threads);
  const char *gt_dir = o.gt_dir;
  /* the outputs writable, before any work */
  const char *outs[3] = {rv_cli_json_stdout(o.json) ? NULL : o.json, o.rep.html, rv_cli_json_stdout(o.rep.json) ? NULL : o.rep.json};
  rv_status st = rv_cli_outputs_check(outs, NULL, 3, NULL, 0, ctx);
  if (st == RV_OK && o.root && !gt_dir && (st = rv_ade20k_layout(o.root, img_dir, ann_dir, sizeof ann_dir, ctx)) == RV_OK)
    gt_dir = ann_dir;
  if (st == RV_OK) st = rv_seg_areas_init(&acc, RV_ADE20K_CLASSES, ctx);
  size_t n = 0;
  double t0 = rv_now();
  const rv_ade_pred_format fmt = o.zero_based ? RV_ADE_PRED_ZERO_BASED : RV_ADE_PRED_ANNOTATION;
  if (st == RV_OK && rv_cli_report_wanted(&o.rep)) { /* the analysis reads the label maps once, mmseg's areas too */
    if (!rep.o.images && o.root && rv_ade20k_layout(o.root, root_imgs, root_anns, sizeof root_anns, NULL) == RV_OK)
      rep.o.images = root_imgs;
    st = rv_seg_analysis_create(&an, RV_ADE20K_CLASSES, NULL, &rep.p, ctx);
    if (st == RV_OK) st = rv_seg_analysis_add_dirs(an, o.pred_dir, gt_dir, rep.o.images, fmt, &n, ctx);
    if (st == RV_OK) rv_seg_areas_merge(&acc, rv_seg_analysis_areas(an));
  } else if (st == RV_OK)
    st = rv_ade20k_eval_dirs(&acc, o.pred_dir, gt_dir, fmt, rv_cli.threads, &n, ctx);
  if (st == RV_OK) {
    rv_log(ctx, RV_LOG_INFO, "%zu label maps from %s (%.2f s)", n, gt_dir, rv_now() - t0);
    st = rv_cli_ade_report_to(&acc, n, NULL, o.json, rv_cli_json_stdout(o.rep.json), ctx);
  }
  if (st == RV_OK && an) st = rv_cli_report_seg(&rep, an, ctx);
  if (st == RV_OK && an) st = rv_cli_report_finish(&rep, o.pred_dir, ctx);
  int rc = st == RV_OK ? 0 : rv_cli_fail(ctx, cmd, st);
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
