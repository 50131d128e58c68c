/* `ravlt eval coco|ade20k --report FILE.html --report-json FILE|-`: the options, and a collector
 * of the analyses of one run (COCO bbox, segm; ADE20K) written as one HTML report at the end
 * (<ravlt/analysis.h> computes them; docs/evaluation.md).
 *
 *   rv_cli_report rep;
 *   rv_cli_report_init(&rep, &opts);
 *   rv_cli_report_coco(&rep, gt, &res, RV_IOU_BBOX, ev, &params, area_mode, 0, ctx);  // + --report-json
 *   rv_cli_report_finish(&rep, "eval coco", ctx);                                    // the HTML
 *   rv_cli_report_free(&rep);
 */
#ifndef RV_APPS_EVAL_ANALYSIS_H
#define RV_APPS_EVAL_ANALYSIS_H

#include "core/rv.h"

#include <ravlt/analysis.h>

/* The options of both `eval` subcommands (their rv_opt tables point at these fields). */
typedef struct {
  const char *html;       /* --report */
  const char *json;       /* --report-json (FILE or "-") */
  const char *compare;    /* --compare OTHER.json (COCO) */
  const char *images;     /* the images for thumbnails (COCO: --images; ADE20K: --root or --images) */
  double conf_score_thr;  /* --conf-score-thr (NaN: not given) */
  double conf_iou_thr;    /* --conf-iou-thr */
} rv_cli_report_opts;

typedef struct {
  rv_cli_report_opts o;
  rv_analysis_params p;
  char *parts[4];
  size_t n;
} rv_cli_report;

/* 1 when --report or --report-json was given. */
int rv_cli_report_wanted(const rv_cli_report_opts *o);
/* A usage error message for inconsistent report options (NULL: fine): thresholds out of range,
 * --compare or the thresholds without a report, ... */
const char *rv_cli_report_usage(const rv_cli_report_opts *o, int coco);
void rv_cli_report_init(rv_cli_report *r, const rv_cli_report_opts *o, int threads);
/* The COCO analysis of res (t) and --report-json (FILE; segm with second = 1 goes to the FILE's
 * .segm.json sibling, as --json). ev: the run's evaluation (may be NULL); --compare is loaded
 * here with area_mode. */
rv_status rv_cli_report_coco(rv_cli_report *r, const rv_coco *gt, const rv_coco_results *res, rv_iou_type t,
                             const rv_cocoeval *ev, const rv_cocoeval_params *ep, rv_coco_area_mode area_mode,
                             int second, rv_ctx *ctx);
/* The segmentation analysis a and --report-json. */
rv_status rv_cli_report_seg(rv_cli_report *r, const rv_seg_analysis *a, rv_ctx *ctx);
/* The HTML file, when --report was given (title: the command and its inputs). */
rv_status rv_cli_report_finish(rv_cli_report *r, const char *title, rv_ctx *ctx);
void rv_cli_report_free(rv_cli_report *r);

#endif
