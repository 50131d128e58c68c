/* Shared by `ravlt eval` and `ravlt merge`: evaluate and print COCO / ADE20K results in the
 * same format, write the --json summaries, and name the files next to a results file.
 *
 *   rv_cli_coco_report(gt, &res, RV_IOU_BBOX, &opts, "stats.json", ctx);  // 12 lines + table
 *   rv_cli_ade_report(&areas, n_images, "miou.json", ctx);
 */
#ifndef RV_APPS_EVAL_REPORT_H
#define RV_APPS_EVAL_REPORT_H

#include "apps/outputs.h" /* rv_cli_sibling_path */
#include "core/fs.h"      /* rv_out_file */
#include "datasets/coco.h"
#include "eval/segmetrics.h"

#include <stdio.h>

typedef struct {
  rv_coco_area_mode area_mode;
  int mmdet_maxdets;
  int threads;
  int header; /* print "iou_type: bbox" before the summary (runs that evaluate both) */
  rv_cocoeval **keep_ev; /* not NULL: gets the evaluation (the caller frees it) instead of it being freed */
  int tables_stderr;     /* the tables on stderr (stdout carries --report-json -) */
} rv_coco_report_opts;

/* Evaluate + accumulate res (already prepared for t) against gt, print pycocotools' 12 lines
 * and the per-category AP table on stdout; json (may be NULL): {"iou_type", "stats",
 * "per_category", "max_dets", "area_mode"} written atomically. stats (may be NULL) gets the 12. */
rv_status rv_cli_coco_report(const rv_coco *gt, const rv_coco_results *res, rv_iou_type t,
                             const rv_coco_report_opts *o, const char *json, double stats[12],
                             rv_ctx *ctx);
/* mmseg's per-class table and summary from accumulated areas; names: the C class names, or
 * NULL: ADE20K's when C is 150, else the class indices (as mmseg prints a dataset without
 * CLASSES). json (may be NULL): {"aAcc", "mIoU", "mAcc", "IoU": [C], "Acc": [C], "images"}
 * with null for NaN. */
rv_status rv_cli_ade_report(const rv_seg_areas *acc, size_t n_images, const char *const *names, const char *json,
                            rv_ctx *ctx);
/* The same with the tables on stderr when tables_stderr (stdout carries --report-json -). */
rv_status rv_cli_ade_report_to(const rv_seg_areas *acc, size_t n_images, const char *const *names, const char *json,
                               int tables_stderr, rv_ctx *ctx);

#endif
