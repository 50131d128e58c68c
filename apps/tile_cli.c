/* The tiling options of the commands (apps/tile_cli.h). */
#define _POSIX_C_SOURCE 200809L /* sigset_t (apps/outputs.h) */
#include "apps/tile_cli.h"

#include "apps/cli.h"
#include "apps/outputs.h"

#include <stdio.h>
#include <string.h>

int rv_tile_cli_check(const char *cmd, const rv_tile_cli *c) {
  if (c->tile[0] > 0) {
    /* SAHI's get_sliced_prediction switches GREEDYNMM to NMS when the model's confidence
     * threshold is under 0.1 (LOW_MODEL_CONFIDENCE); here the merge asked for is done, with
     * a word on it */
    if (c->merge && !strcmp(c->merge, "nmm") && c->score_thr < 0.1 && !rv_cli.quiet)
      fprintf(stderr,
              "ravlt %s: warning: --tile-merge nmm over the tiles' low-confidence detections (no --tile-score-thr "
              ">= 0.1) also unites distinct objects they touch; SAHI uses nms there: add --tile-score-thr 0.3\n",
              cmd);
    return 0;
  }
  const char *given = c->full ? "--tile-full" : c->score_thr > 0 ? "--tile-score-thr" : NULL;
  if (!given && c->merge && strcmp(c->merge, "nms")) given = "--tile-merge";
  if (!given && c->merge_thr > 0 && c->merge_thr != 0.5) given = "--tile-merge-thr";
  if (!given && c->overlap != 0.2) given = "--tile-overlap";
  if (given) return rv_cli_usage_error(cmd, "%s goes with --tile HxW", given);
  return 0;
}

int rv_tile_cli_opts(const rv_tile_cli *c, rv_tile_opts *o) {
  *o = rv_tile_default_opts();
  if (c->tile[0] <= 0) return 0;
  o->tile_h = c->tile[0], o->tile_w = c->tile[1];
  o->overlap_h = o->overlap_w = c->overlap;
  o->merge = c->merge && !strcmp(c->merge, "nmm") ? RV_TILE_MERGE_NMM : RV_TILE_MERGE_NMS;
  if (c->merge_thr > 0) o->merge_thr = (float)c->merge_thr;
  o->full = c->full;
  o->score_thr = (float)c->score_thr;
  o->max_dets = c->max_dets;
  return 1;
}

void rv_tile_cli_key(char *buf, size_t cap, const char *model, const rv_tile_cli *c) {
  if (c->tile[0] <= 0 && c->max_dets <= 0) {
    snprintf(buf, cap, "%s", model ? model : "");
    return;
  }
  snprintf(buf, cap, "%s|tile %dx%d overlap %.17g merge %s %.17g full %d score %.17g max %d", model ? model : "",
           c->tile[0], c->tile[1], c->overlap, c->merge ? c->merge : "nms", c->merge_thr, c->full, c->score_thr,
           c->max_dets);
}

static int on_tile(void *user, int done, int total) {
  rv_tile_cli_progress *p = user;
  if (!p->started) {
    rv_progress_start(&p->bar, p->label, total);
    p->started = 1;
  }
  rv_progress_step(&p->bar, 1);
  if (done == total) p->started = 0; /* the next image starts a bar of its own; the images' bar redraws the line */
  return rv_cli_stop_signal() != 0;
}

void rv_tile_cli_progress_attach(rv_tile_cli_progress *p, rv_tile_opts *o, const char *label) {
  memset(p, 0, sizeof *p);
  p->label = label;
  o->progress = on_tile;
  o->progress_user = p;
}
