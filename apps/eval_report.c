/* Evaluation reports shared by `ravlt eval` and `ravlt merge` (see eval_report.h). */
#define _POSIX_C_SOURCE 200809L
#include "apps/eval_report.h"
#include "apps/cli.h"
#include "apps/json_writer.h"
#include "datasets/ade20k.h"
#include "datasets/classes.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A summary JSON to path ('-': stdout), written by body(w, arg), atomically to a file. */
static rv_status write_summary(const char *path, void (*body)(rv_jw *w, const void *arg), const void *arg, rv_ctx *ctx) {
  rv_out_file of = {0};
  if (rv_cli_json_stdout(path)) of.f = stdout;
  else RV_TRY(rv_out_open(&of, path, ctx));
  rv_jw w;
  rv_jw_init(&w, of.f);
  body(&w, arg);
  rv_jw_raw(&w, "\n");
  if (of.f == stdout) {
    errno = 0;
    if (fflush(stdout) == 0 && rv_jw_ok(&w)) return RV_OK;
    return rv_error(ctx, RV_ERR_IO, "standard output: write failed (%s)", strerror(errno ? errno : EIO));
  }
  return rv_out_close(&of, ctx);
}

typedef struct {
  const char *iou_type;
  const double *stats;
  const rv_cocoeval *ev;
  const rv_cocoeval_params *prm;
  rv_coco_area_mode area_mode;
} coco_summary;

/* {"iou_type", "stats": [12], "per_category": {"id": AP}, "max_dets": [3], "area_mode"} */
static void coco_summary_json(rv_jw *w, const void *arg) {
  const coco_summary *c = arg;
  rv_jw_obj(w);
  rv_jw_key(w, "iou_type");
  rv_jw_str(w, c->iou_type);
  rv_jw_key(w, "stats");
  rv_jw_arr(w);
  for (int i = 0; i < 12; i++) rv_jw_num(w, c->stats[i]);
  rv_jw_end(w);
  rv_jw_key(w, "per_category");
  rv_jw_obj(w);
  for (size_t k = 0; k < rv_cocoeval_num_cats(c->ev); k++) {
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)rv_cocoeval_cat_id(c->ev, k));
    rv_jw_key(w, id);
    rv_jw_num(w, rv_cocoeval_category_ap(c->ev, k));
  }
  rv_jw_end(w);
  rv_jw_key(w, "max_dets");
  rv_jw_arr(w);
  for (int i = 0; i < 3; i++) rv_jw_int(w, c->prm->max_dets[i]);
  rv_jw_end(w);
  rv_jw_key(w, "area_mode");
  rv_jw_str(w, c->area_mode == RV_COCO_AREA_BOX ? "box" : "mask");
  rv_jw_end(w);
}

rv_status rv_cli_coco_report(const rv_coco *gt, const rv_coco_results *res, rv_iou_type t,
                             const rv_coco_report_opts *o, const char *json, double stats_out[12],
                             rv_ctx *ctx) {
  const char *tn = t == RV_IOU_BBOX ? "bbox" : "segm";
  if (res->n == 0) rv_log(ctx, RV_LOG_WARN, "no detections (pycocotools would fail on an empty results list)");
  if (res->n_unknown_category)
    rv_log(ctx, RV_LOG_WARN, "%zu detections have a category_id that is not in %s; ignored (as pycocotools does)",
           res->n_unknown_category, gt->path ? gt->path : "the ground truth");
  rv_cocoeval_params prm = rv_cocoeval_default_params(t);
  if (o->mmdet_maxdets) rv_cocoeval_params_mmdet(&prm);
  prm.threads = o->threads;
  rv_cocoeval *ev = NULL;
  double t0 = rv_now();
  RV_TRY(rv_coco_evaluate(&ev, gt, res, &prm, ctx));
  rv_log(ctx, RV_LOG_INFO, "evaluate + accumulate (%s): %.2f s", tn, rv_now() - t0);
  char text[4096];
  rv_cocoeval_summary_text(ev, text, sizeof text);
  FILE *tf = rv_cli_json_stdout(json) || o->tables_stderr ? stderr : stdout; /* --json -: the JSON alone on stdout */
  if (o->header) fprintf(tf, "iou_type: %s\n", tn);
  fputs(text, tf);
  double stats[12];
  rv_cocoeval_summarize(ev, stats);
  if (stats_out) memcpy(stats_out, stats, sizeof stats);
  size_t K = rv_cocoeval_num_cats(ev);
  fprintf(tf, "\nper-category AP (IoU=0.50:0.95 | area=all | maxDets=%d):\n", prm.max_dets[prm.n_max_dets - 1]);
  fprintf(tf, "  %8s  %-24s %7s\n", "id", "name", "AP");
  for (size_t k = 0; k < K; k++) {
    int64_t id = rv_cocoeval_cat_id(ev, k);
    const rv_coco_category *c = rv_coco_find_category(gt, id);
    double ap = rv_cocoeval_category_ap(ev, k);
    fprintf(tf, "  %8lld  %-24.24s %7.3f\n", (long long)id, c && c->name ? c->name : "", ap);
  }
  coco_summary sum = {tn, stats, ev, &prm, o->area_mode};
  rv_status st = json ? write_summary(json, coco_summary_json, &sum, ctx) : RV_OK;
  if (o->keep_ev && st == RV_OK) *o->keep_ev = ev;
  else rv_cocoeval_free(ev);
  return st;
}

typedef struct {
  const rv_seg_metrics *m;
  int num_classes;
  size_t images;
} ade_summary;

/* {"aAcc", "mIoU", "mAcc", "IoU": [C], "Acc": [C], "images"} */
static void ade_summary_json(rv_jw *w, const void *arg) {
  const ade_summary *a = arg;
  const rv_seg_metrics *m = a->m;
  rv_jw_obj(w);
  const char *names[3] = {"aAcc", "mIoU", "mAcc"};
  const double v[3] = {m->aAcc, m->mIoU, m->mAcc};
  for (int j = 0; j < 3; j++) {
    rv_jw_key(w, names[j]);
    rv_jw_num(w, v[j]);
  }
  const char *list_names[2] = {"IoU", "Acc"};
  const double *lists[2] = {m->iou, m->acc};
  for (int j = 0; j < 2; j++) {
    rv_jw_key(w, list_names[j]);
    rv_jw_arr(w);
    for (int k = 0; k < a->num_classes; k++) rv_jw_num(w, lists[j][k]);
    rv_jw_end(w);
  }
  rv_jw_key(w, "images");
  rv_jw_int(w, (long long)a->images);
  rv_jw_end(w);
}

rv_status rv_cli_ade_report(const rv_seg_areas *acc, size_t n, const char *const *names, const char *json, rv_ctx *ctx) {
  return rv_cli_ade_report_to(acc, n, names, json, 0, ctx);
}

rv_status rv_cli_ade_report_to(const rv_seg_areas *acc, size_t n, const char *const *names, const char *json,
                               int tables_stderr, rv_ctx *ctx) {
  rv_seg_metrics m = {0};
  RV_TRY(rv_seg_metrics_compute(&m, acc, ctx));
  int C = acc->num_classes;
  /* mmseg's tables: values x 100 rounded to 2 decimals */
  FILE *tf = rv_cli_json_stdout(json) || tables_stderr ? stderr : stdout; /* --json -: the JSON alone on stdout */
  fprintf(tf, "per class results:\n");
  fprintf(tf, "  %-3s %-20s %7s %7s\n", "k", "Class", "IoU", "Acc");
  for (int k = 0; k < C; k++) {
    char iou[16], accs[16];
    if (isnan(m.iou[k])) snprintf(iou, sizeof iou, "nan"); else snprintf(iou, sizeof iou, "%.2f", rv_mmseg_round(m.iou[k]) * 100);
    if (isnan(m.acc[k])) snprintf(accs, sizeof accs, "nan"); else snprintf(accs, sizeof accs, "%.2f", rv_mmseg_round(m.acc[k]) * 100);
    char idx[16];
    snprintf(idx, sizeof idx, "%d", k);
    const char *name = names ? names[k] : C == RV_ADE20K_CLASSES ? rv_ade20k_classes[k] : idx;
    fprintf(tf, "  %-3d %-20s %7s %7s\n", k, name, iou, accs);
  }
  fprintf(tf, "Summary:\n  aAcc %.2f  mIoU %.2f  mAcc %.2f   (%zu images)\n", rv_mmseg_round(m.aAcc) * 100,
         rv_mmseg_round(m.mIoU) * 100, rv_mmseg_round(m.mAcc) * 100, n);
  fprintf(tf, "  full precision: aAcc %.17g mIoU %.17g mAcc %.17g\n", m.aAcc, m.mIoU, m.mAcc);
  ade_summary sum = {&m, C, n};
  rv_status st = json ? write_summary(json, ade_summary_json, &sum, ctx) : RV_OK;
  rv_seg_metrics_free(&m);
  return st;
}
