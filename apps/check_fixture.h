/* `ravlt check-fixture DIR`: runs a golden fixture folder (config.json + weights + io
 * tensors, layout of tests/fixtures/README.md) and compares every expected output.
 *
 * apps/cmd_check_fixture.c reads config.json, looks at "kind" and calls the checker for
 * that kind; each checker lives in its own file (apps/check_<family>.c).
 *
 * Comparison rule for float tensors (rv_check_tensor): with ref scale s = max(1, max|ref|),
 * PASS iff max|got - ref| <= tol * s (tol = 1e-4 unless the kind says otherwise). Prints
 *   "  <name> [shape]: max_abs 1.2e-06 max_rel 3.4e-07 scale 4.1 PASS"
 * where max_rel = max|got-ref| / s.
 */
#ifndef RV_APPS_CHECK_FIXTURE_H
#define RV_APPS_CHECK_FIXTURE_H

#include "formats/weights.h"
#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct {
  const char *dir;        /* fixture folder */
  cJSON *config;          /* parsed config.json */
  rv_weights *weights;    /* weights.safetensors, or checkpoint.pth with --pth */
  rv_weights *io;         /* io.safetensors */
  rv_ctx *ctx;
  int verbose;
  int failures;           /* incremented by rv_check_* on FAIL */
  int checked;            /* number of comparisons made */
} rv_check_state;

/* Compare n floats against the io tensor `ref_name` (shape printed from it). Missing
 * reference -> counted as failure with a message. Returns 1 on PASS. */
int rv_check_tensor(rv_check_state *s, const char *label, const float *got, size_t n,
                    const char *ref_name, double tol);
/* Compare with an explicit reference array (for derived quantities). */
int rv_check_values(rv_check_state *s, const char *label, const float *got, const float *ref,
                    size_t n, double tol);
/* Print a PASS/FAIL line for a non-tensor check (counts, labels, masks). */
int rv_check_report(rv_check_state *s, const char *label, int pass, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Load io tensor as float32 (arena-free malloc'd copy, caller frees with free()); NULL if
 * absent. *numel receives its element count. */
float *rv_check_load_f32(rv_check_state *s, const char *name, size_t *numel);

/* Per-family checkers: return 0 when they ran (failures counted in s), non-zero status on
 * an error that prevented running (message in s->ctx). */
#define RV_CHECKER(fn) int fn(rv_check_state *s)
RV_CHECKER(rv_check_backbone);       /* kind "backbone" */
RV_CHECKER(rv_check_segmentor_head); /* kinds "upernet", "semantic_fpn" */
RV_CHECKER(rv_check_detector_head);  /* kinds "cascade_mask_rcnn", "mask_rcnn", "retinanet" */
RV_CHECKER(rv_check_e2e);            /* kinds "e2e_*" */
#undef RV_CHECKER

#endif
