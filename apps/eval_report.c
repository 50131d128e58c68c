/* Evaluation reports shared by `ravlt eval` and `ravlt merge` (see eval_report.h). */
#define _POSIX_C_SOURCE 200809L
#include "apps/eval_report.h"
#include "apps/cli.h"
#include "datasets/ade20k.h"
#include "datasets/classes.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rv_json_num(FILE *f, double v) {
  if (isnan(v) || isinf(v))
    fputs("null", f);
  else
    fprintf(f, "%.17g", v);
}

void rv_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
    else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
    else fputc(*c, f);
  }
  fputc('"', f);
}

void rv_cli_sibling_path(char *out, size_t n, const char *path, const char *suffix) {
  size_t l = strlen(path);
  if (l > 5 && !strcmp(path + l - 5, ".json")) snprintf(out, n, "%.*s%s", (int)(l - 5), path, suffix);
  else snprintf(out, n, "%s%s", path, suffix);
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
  rv_status st = RV_OK;
  if (json) {
    rv_out_file of = {0};
    if (rv_cli_json_stdout(json)) of.f = stdout;
    else st = rv_out_open(&of, json, ctx);
    if (st == RV_OK) {
      fprintf(of.f, "{\"iou_type\": \"%s\", \"stats\": [", tn);
      for (int i = 0; i < 12; i++) {
        if (i) fputs(", ", of.f);
        rv_json_num(of.f, stats[i]);
      }
      fputs("], \"per_category\": {", of.f);
      for (size_t k = 0; k < K; k++) {
        fprintf(of.f, "%s\"%lld\": ", k ? ", " : "", (long long)rv_cocoeval_cat_id(ev, k));
        rv_json_num(of.f, rv_cocoeval_category_ap(ev, k));
      }
      fprintf(of.f, "}, \"max_dets\": [%d, %d, %d], \"area_mode\": \"%s\"}\n", prm.max_dets[0], prm.max_dets[1],
              prm.max_dets[2], o->area_mode == RV_COCO_AREA_BOX ? "box" : "mask");
      if (of.f == stdout) st = fflush(stdout) == 0 ? RV_OK : rv_error(ctx, RV_ERR_IO, "stdout: write failed");
      else st = rv_out_close(&of, ctx);
    }
  }
  if (o->keep_ev && st == RV_OK) *o->keep_ev = ev;
  else rv_cocoeval_free(ev);
  return st;
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
  rv_status st = RV_OK;
  if (json) {
    rv_out_file of = {0};
    if (rv_cli_json_stdout(json)) of.f = stdout;
    else st = rv_out_open(&of, json, ctx);
    if (st == RV_OK) {
      fputs("{\"aAcc\": ", of.f);
      rv_json_num(of.f, m.aAcc);
      fputs(", \"mIoU\": ", of.f);
      rv_json_num(of.f, m.mIoU);
      fputs(", \"mAcc\": ", of.f);
      rv_json_num(of.f, m.mAcc);
      const double *arr[2] = {m.iou, m.acc};
      const char *nm[2] = {"IoU", "Acc"};
      for (int j = 0; j < 2; j++) {
        fprintf(of.f, ", \"%s\": [", nm[j]);
        for (int k = 0; k < C; k++) {
          if (k) fputs(", ", of.f);
          rv_json_num(of.f, arr[j][k]);
        }
        fputs("]", of.f);
      }
      fprintf(of.f, ", \"images\": %zu}\n", n);
      if (of.f == stdout) st = fflush(stdout) == 0 ? RV_OK : rv_error(ctx, RV_ERR_IO, "stdout: write failed");
      else st = rv_out_close(&of, ctx);
    }
  }
  rv_seg_metrics_free(&m);
  return st;
}
