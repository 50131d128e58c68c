/* The report options of `ravlt eval` and the collector of a run's analyses (eval_analysis.h). */
#define _POSIX_C_SOURCE 200809L
#include "apps/eval_analysis.h"

#include "apps/cli.h"
#include "apps/eval_report.h"
#include "datasets/coco.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rv_cli_report_wanted(const rv_cli_report_opts *o) { return o->html || o->json; }

const char *rv_cli_report_usage(const rv_cli_report_opts *o, int coco) {
  int wanted = rv_cli_report_wanted(o);
  if (!wanted && o->compare) return "--compare needs --report FILE.html or --report-json FILE";
  if (!wanted && (!isnan(o->conf_score_thr) || !isnan(o->conf_iou_thr)))
    return "--conf-score-thr and --conf-iou-thr need --report FILE.html or --report-json FILE";
  if (!coco && (!isnan(o->conf_score_thr) || !isnan(o->conf_iou_thr) || o->compare))
    return "--compare, --conf-score-thr and --conf-iou-thr are for eval coco";
  if (!isnan(o->conf_iou_thr) && !(o->conf_iou_thr > 0 && o->conf_iou_thr <= 1))
    return "--conf-iou-thr must be in (0, 1]";
  if (!isnan(o->conf_score_thr) && !(o->conf_score_thr >= 0 && o->conf_score_thr <= 1))
    return "--conf-score-thr must be in [0, 1]";
  return NULL;
}

void rv_cli_report_init(rv_cli_report *r, const rv_cli_report_opts *o, int threads) {
  memset(r, 0, sizeof *r);
  r->o = *o;
  r->p = rv_analysis_default_params();
  if (!isnan(o->conf_score_thr)) r->p.conf_score_thr = o->conf_score_thr;
  if (!isnan(o->conf_iou_thr)) r->p.conf_iou_thr = o->conf_iou_thr;
  r->p.threads = threads;
}

static rv_status keep_part(rv_cli_report *r, char *json, const char *json_path, rv_ctx *ctx) {
  rv_status st = json_path ? rv_cli_json_write(json_path, json, ctx) : RV_OK;
  if (st != RV_OK || r->n == sizeof r->parts / sizeof *r->parts) {
    free(json);
    return st;
  }
  r->parts[r->n++] = json;
  return RV_OK;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

rv_status rv_cli_report_coco(rv_cli_report *r, const rv_coco *gt, const rv_coco_results *res, rv_iou_type t,
                             const rv_cocoeval *ev, const rv_cocoeval_params *ep, rv_coco_area_mode area_mode,
                             int second, rv_ctx *ctx) {
  if (!rv_cli_report_wanted(&r->o)) return RV_OK;
  rv_coco_results other = {0};
  if (r->o.compare) RV_TRY(rv_coco_load_results(&other, gt, r->o.compare, t, area_mode, r->p.threads, ctx));
  double t0 = rv_now();
  char *json = NULL;
  rv_status st = rv_coco_analyze(&json, gt, res, t, ev, ep, r->o.compare ? &other : NULL,
                                 r->o.compare ? base_name(r->o.compare) : NULL, r->o.images,
                                 gt->path ? base_name(gt->path) : NULL, &r->p, ctx);
  rv_coco_results_free(&other);
  if (st != RV_OK) return st;
  rv_log(ctx, RV_LOG_INFO, "analysis (%s): %.2f s", t == RV_IOU_BBOX ? "bbox" : "segm", rv_now() - t0);
  char sib[4096];
  const char *jp = r->o.json;
  if (jp && second) {
    rv_cli_sibling_path(sib, sizeof sib, jp, ".segm.json");
    jp = sib;
  }
  return keep_part(r, json, jp, ctx);
}

rv_status rv_cli_report_seg(rv_cli_report *r, const rv_seg_analysis *a, rv_ctx *ctx) {
  if (!rv_cli_report_wanted(&r->o)) return RV_OK;
  char *json = NULL;
  RV_TRY(rv_seg_analysis_json(a, &json, ctx));
  return keep_part(r, json, r->o.json, ctx);
}

rv_status rv_cli_report_finish(rv_cli_report *r, const char *title, rv_ctx *ctx) {
  if (!r->o.html) return RV_OK;
  double t0 = rv_now();
  RV_TRY(rv_analysis_write_html(r->o.html, (const char *const *)r->parts, r->n, title, ctx));
  rv_log(ctx, RV_LOG_INFO, "report: %s (%.2f s)", r->o.html, rv_now() - t0);
  return RV_OK;
}

void rv_cli_report_free(rv_cli_report *r) {
  for (size_t i = 0; i < r->n; i++) free(r->parts[i]);
  r->n = 0;
}
