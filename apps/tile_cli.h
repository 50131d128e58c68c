/* The tiling options of the commands that run a model over images (docs/large-images.md):
 * one block in each option table, turned into the library's rv_tile_opts (<ravlt/tile.h>).
 *
 *   typedef struct { ...; rv_tile_cli tile; } det_opts;
 *   static const rv_opt OPTS[] = {..., RV_TILE_OPTS_DET(det_opts, tile), RV_OPT_END};
 *   if (rv_tile_cli_check("detect", &o.tile, 1)) return 2;      // usage errors, printed
 *   rv_tile_opts to;
 *   if (rv_tile_cli_opts(&o.tile, &to)) ... tiled ... else ... whole image ...;
 *   rv_tile_cli_progress pr; rv_tile_cli_progress_attach(&pr, &to, "detect");  // bar + signals
 */
#ifndef RV_APPS_TILE_CLI_H
#define RV_APPS_TILE_CLI_H

#include "apps/cli.h"
#include "apps/opts.h"
#include <ravlt/tile.h>

#include <stddef.h>

typedef struct {
  int tile[2];        /* --tile HxW; {0, 0}: whole images */
  double overlap;     /* --tile-overlap R */
  const char *merge;  /* --tile-merge nms|nmm */
  double merge_thr;   /* --tile-merge-thr T */
  int full;           /* --tile-full */
  double score_thr;   /* --tile-score-thr T */
  int max_dets;       /* --max-dets N (0: no cap) */
} rv_tile_cli;

#define RV_TILE_OPT_TILE(T, f)                                                                  \
  {"--tile", NULL, RV_OPT_SIZE, offsetof(T, f.tile), 1, 65536, NULL, "HxW",                     \
   "run the model on tiles of HxW pixels of the original image (height\n"                       \
   "first, or N for NxN) and merge the results: large images at their own\n"                    \
   "resolution (docs/large-images.md)", 0, NULL},                                                \
  {"--tile-overlap", NULL, RV_OPT_DOUBLE, offsetof(T, f.overlap), 0, 1, NULL, "R",              \
   "overlap ratio of neighbouring tiles, 0 <= R < 1: tiles start every\n"                       \
   "tile - int(R * tile) pixels", RV_OPT_OPEN_HI, "0.2"}
/* segment: the tile size and overlap */
#define RV_TILE_OPTS_SEG(T, f) RV_TILE_OPT_TILE(T, f)
/* detect, video, eval coco: also how the tiles' detections are merged */
#define RV_TILE_OPTS_DET(T, f)                                                                  \
  RV_TILE_OPT_TILE(T, f),                                                                       \
  {"--tile-merge", NULL, RV_OPT_CHOICE, offsetof(T, f.merge), 0, 0, "nms|nmm", "M",            \
   "merge of the tiles' detections, class by class: nms (IoU) or nmm\n"                         \
   "(SAHI's greedy merging on the intersection over the smaller box: an\n"                      \
   "object cut by a tile border becomes one detection)", 0, "nms"},                             \
  {"--tile-merge-thr", NULL, RV_OPT_DOUBLE, offsetof(T, f.merge_thr), 0, 1, NULL, "T",          \
   "the merge's IoU (nms) or IoS (nmm) threshold", RV_OPT_OPEN_LO, "0.5"},                      \
  {"--tile-full", NULL, RV_OPT_FLAG, offsetof(T, f.full), 0, 0, NULL, NULL,                    \
   "also detect on the whole image at the model's scale, merged with the\n"                     \
   "tiles (SAHI's standard prediction)", 0, NULL},                                              \
  {"--tile-score-thr", NULL, RV_OPT_DOUBLE, offsetof(T, f.score_thr), 0, 1, NULL, "T",          \
   "drop the tiles' detections under T before merging (SAHI's confidence\n"                     \
   "threshold, 0.3 there; default: the model's own)", 0, NULL},                                 \
  {"--max-dets", NULL, RV_OPT_INT, offsetof(T, f.max_dets), 1, 1000000, NULL, "N",             \
   "keep the best N detections of an image (the merged result of a tiled\n"                     \
   "run is not cut to the model's 100 per image; default: all)", 0, NULL}

/* Usage errors of the block (printed as "ravlt CMD: ..."; returns 2, else 0): a --tile-*
 * option without --tile. */
int rv_tile_cli_check(const char *cmd, const rv_tile_cli *c);
/* 1 when --tile was given, with *o filled (progress unset); else 0. */
int rv_tile_cli_opts(const rv_tile_cli *c, rv_tile_opts *o);

/* buf = model (or "") plus, with --tile or --max-dets, the options that change the results:
 * what identifies a run's parts (--shard, --resume) besides the weights. */
void rv_tile_cli_key(char *buf, size_t cap, const char *model, const rv_tile_cli *c);

/* A tile progress bar on stderr (a terminal, not --quiet), and a stop at SIGINT / SIGTERM /
 * SIGHUP (the image fails as interrupted; the command then stops). */
typedef struct {
  rv_progress bar;
  const char *label;
  int started;
} rv_tile_cli_progress;
void rv_tile_cli_progress_attach(rv_tile_cli_progress *p, rv_tile_opts *o, const char *label);

#endif
