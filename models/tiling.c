/* Large images (<ravlt/tile.h>): SAHI's tiled detection and mmseg's slide inference at the
 * original resolution with one band of tile rows of logits. */
#include "models/model.h"

#include "eval/rle.h"
#include <ravlt/tile.h>

#include <stdlib.h>
#include <string.h>

rv_tile_opts rv_tile_default_opts(void) {
  rv_tile_opts o;
  memset(&o, 0, sizeof o);
  o.tile_h = o.tile_w = 512;
  o.overlap_h = o.overlap_w = 0.2;
  o.merge = RV_TILE_MERGE_NMS;
  o.merge_thr = 0.5f;
  return o;
}

rv_status rv_tile_opts_check(const rv_tile_opts *o, rv_ctx *ctx) {
  if (!o) return rv_error(ctx, RV_ERR_ARG, "tiling: no options");
  if (o->tile_h < 1 || o->tile_w < 1 || o->tile_h > (1 << 16) || o->tile_w > (1 << 16))
    return rv_error(ctx, RV_ERR_ARG, "tiling: tile size %dx%d outside 1..65536 (height x width)", o->tile_h, o->tile_w);
  if (!(o->overlap_h >= 0 && o->overlap_h < 1) || !(o->overlap_w >= 0 && o->overlap_w < 1))
    return rv_error(ctx, RV_ERR_ARG, "tiling: overlap ratio %g x %g outside [0, 1)", o->overlap_h, o->overlap_w);
  if (o->merge != RV_TILE_MERGE_NMS && o->merge != RV_TILE_MERGE_NMM)
    return rv_error(ctx, RV_ERR_ARG, "tiling: unknown merge %d (NMS or NMM)", (int)o->merge);
  if (!(o->score_thr >= 0 && o->score_thr <= 1))
    return rv_error(ctx, RV_ERR_ARG, "tiling: score threshold %g outside [0, 1]", (double)o->score_thr);
  if (!(o->merge_thr > 0 && o->merge_thr <= 1))
    return rv_error(ctx, RV_ERR_ARG, "tiling: merge threshold %g outside (0, 1]", (double)o->merge_thr);
  return RV_OK;
}

/* SAHI's tiles along one side of n pixels: tiles of t every t - ov; their count. */
static long side_count(int n, int t, int ov) {
  if (n <= t) return 1;
  const long step = t - ov;
  return (n - t + step - 1) / step + 1;
}

long rv_tile_boxes(int *xyxy, long cap, int img_h, int img_w, const rv_tile_opts *o) {
  if (!o || img_h < 1 || img_w < 1 || rv_tile_opts_check(o, NULL) != RV_OK) return -1;
  const int th = o->tile_h, tw = o->tile_w;
  const int oy = (int)(o->overlap_h * th), ox = (int)(o->overlap_w * tw);
  const long rows = side_count(img_h, th, oy), cols = side_count(img_w, tw, ox);
  long n = 0;
  /* sahi get_slice_bboxes: rows from y_min = 0, each next one at the previous (unclamped)
   * bottom minus the overlap; a slice crossing the bottom or right edge is clamped to it
   * and moved back by its size (not past 0) */
  long y_min = 0;
  for (long r = 0; r < rows; r++) {
    const long y_max = y_min + th;
    long x_min = 0;
    for (long c = 0; c < cols; c++) {
      const long x_max = x_min + tw;
      long b[4] = {x_min, y_min, x_max, y_max};
      if (y_max > img_h || x_max > img_w) {
        b[2] = x_max < img_w ? x_max : img_w;
        b[3] = y_max < img_h ? y_max : img_h;
        b[0] = b[2] - tw > 0 ? b[2] - tw : 0;
        b[1] = b[3] - th > 0 ? b[3] - th : 0;
      }
      if (n < cap && xyxy)
        for (int k = 0; k < 4; k++) xyxy[4 * n + k] = (int)b[k];
      n++;
      x_min = x_max - ox;
    }
    y_min = y_max - oy;
  }
  return n;
}

static rv_status check_image(const rv_image *bgr, const char *what, rv_ctx *ctx) {
  if (!bgr || !bgr->data || bgr->h < 1 || bgr->w < 1 || bgr->c != 3)
    return rv_error(ctx, RV_ERR_ARG, "%s: the image must be a non-empty 3-channel BGR image", what);
  const long long px = (long long)bgr->h * bgr->w, cap = rv_ctx_max_pixels(ctx);
  if (px > cap)
    return rv_error(ctx, RV_ERR_UNSUPPORTED, "%s: %dx%d = %lld pixels, over the limit of %lld (rv_ctx_set_max_pixels, ravlt --max-pixels)",
                    what, bgr->w, bgr->h, px, cap);
  return RV_OK;
}

/* dst = the x0, y0, w x h window of src (rows copied), data from the arena */
static int crop_image(rv_image *dst, const rv_image *src, int x0, int y0, int w, int h, rv_arena *a) {
  dst->data = rv_arena_alloc(a, (size_t)w * h * 3);
  if (!dst->data) return -1;
  dst->w = w, dst->h = h, dst->c = 3;
  for (int y = 0; y < h; y++)
    memcpy(dst->data + (size_t)y * w * 3, rv_image_px(src, y0 + y, x0), (size_t)w * 3);
  return 0;
}

static int stop_requested(const rv_tile_opts *o, int done, int total) {
  return o->progress && o->progress(o->progress_user, done, total) != 0;
}

/* ---- detection ---------------------------------------------------------------------------- */

/* Detections of every run, in image coordinates (malloc'd: the arena is released between
 * tiles). */
typedef struct {
  float *boxes, *scores;
  int *labels;
  rv_rle *masks; /* NULL without masks */
  size_t n, cap;
} det_acc;

static void acc_free(det_acc *a) {
  for (size_t i = 0; a->masks && i < a->n; i++) rv_rle_free(&a->masks[i]);
  free(a->boxes);
  free(a->scores);
  free(a->labels);
  free(a->masks);
  memset(a, 0, sizeof *a);
}

static int acc_reserve(det_acc *a, size_t more, int masks) {
  if (a->n + more <= a->cap) return 0;
  size_t cap = a->cap ? a->cap : 256;
  while (cap < a->n + more) cap *= 2;
  float *b = realloc(a->boxes, cap * 4 * sizeof *b);
  if (b) a->boxes = b;
  float *s = realloc(a->scores, cap * sizeof *s);
  if (s) a->scores = s;
  int *l = realloc(a->labels, cap * sizeof *l);
  if (l) a->labels = l;
  rv_rle *m = masks ? realloc(a->masks, cap * sizeof *m) : NULL;
  if (m) a->masks = m;
  if (!b || !s || !l || (masks && !m)) return -1;
  a->cap = cap;
  return 0;
}

/* d (a run on the window at x0, y0) shifted into a; masks become whole-image RLEs */
static rv_status acc_add(det_acc *a, const rv_detections *d, int x0, int y0, int img_h, int img_w,
                         int masks, float score_thr, rv_ctx *ctx) {
  if (acc_reserve(a, (size_t)d->n, masks)) return rv_error(ctx, RV_ERR_NOMEM, "tiling: out of memory for %zu detections", a->n + d->n);
  for (int i = 0; i < d->n; i++) {
    if (d->scores[i] < score_thr) continue;
    const size_t k = a->n;
    const float *b = d->bboxes + 4 * (size_t)i;
    a->boxes[4 * k] = b[0] + (float)x0;
    a->boxes[4 * k + 1] = b[1] + (float)y0;
    a->boxes[4 * k + 2] = b[2] + (float)x0;
    a->boxes[4 * k + 3] = b[3] + (float)y0;
    a->scores[k] = d->scores[i];
    a->labels[k] = d->labels[i];
    if (masks) {
      memset(&a->masks[k], 0, sizeof a->masks[k]);
      if (!d->masks)
        return rv_error(ctx, RV_ERR_INTERNAL, "tiling: a run of a model with masks gave none");
      RV_TRY(rv_rle_encode_window(&a->masks[k], d->masks + (size_t)i * d->mask_h * d->mask_w,
                                  (uint32_t)d->mask_h, (uint32_t)d->mask_w, (uint32_t)y0, (uint32_t)x0,
                                  (uint32_t)img_h, (uint32_t)img_w, ctx));
    }
    a->n++;
  }
  return RV_OK;
}

/* dst = a copy of r with its runs in the arena (borrowed) */
static int rle_to_arena(rv_rle *dst, const rv_rle *r, rv_arena *arena) {
  *dst = *r;
  dst->borrowed = 1;
  dst->cnts = NULL;
  if (!r->m) return 0;
  dst->cnts = rv_arena_alloc(arena, r->m * sizeof *dst->cnts);
  if (!dst->cnts) return -1;
  memcpy(dst->cnts, r->cnts, r->m * sizeof *dst->cnts);
  return 0;
}

static rv_status detect_tiled(const rv_model *m, rv_tile_detections *out, const rv_image *bgr,
                              const rv_tile_opts *opts, rv_arena *arena, rv_ctx *ctx) {
  memset(out, 0, sizeof *out);
  if (rv_model_task(m) != RV_TASK_DETECT)
    return rv_error(ctx, RV_ERR_MODEL, "this checkpoint is a %s segmentor, not a detector: use 'ravlt segment'", rv_model_arch(m));
  RV_TRY(rv_tile_opts_check(opts, ctx));
  RV_TRY(check_image(bgr, "tiled detection", ctx));
  const int H = bgr->h, W = bgr->w, masks = rv_detector_has_masks(rv_model_detector(m));
  const long nt = rv_tile_boxes(NULL, 0, H, W, opts);
  if (nt < 1 || nt > (1L << 24))
    return rv_error(ctx, RV_ERR_ARG, "tiling: %ld tiles of %dx%d over a %dx%d image (overlap %g x %g): too many", nt,
                    opts->tile_h, opts->tile_w, W, H, opts->overlap_h, opts->overlap_w);
  int *tiles = malloc((size_t)nt * 4 * sizeof *tiles);
  if (!tiles) return rv_error(ctx, RV_ERR_NOMEM, "tiling: out of memory for %ld tiles", nt);
  rv_tile_boxes(tiles, nt, H, W, opts);
  const int runs = (int)nt + (opts->full && nt > 1);
  det_acc acc = {0};
  rv_status st = RV_OK;
  const rv_arena_mark mark = rv_arena_get_mark(arena);
  for (int t = 0; t < runs && st == RV_OK; t++) {
    /* the tiles back to back through the same model and arena: each run's activations are
     * released before the next one (nothing else is made again) */
    rv_image crop;
    int x0 = 0, y0 = 0;
    if (t < nt) {
      x0 = tiles[4 * t], y0 = tiles[4 * t + 1];
      if (crop_image(&crop, bgr, x0, y0, tiles[4 * t + 2] - x0, tiles[4 * t + 3] - y0, arena))
        st = rv_error(ctx, RV_ERR_NOMEM, "tiling: out of memory for a tile");
    } else {
      crop = *bgr; /* SAHI's standard prediction: the whole image at the model's scale */
    }
    rv_detections d;
    if (st == RV_OK) st = rv_model_detect(m, &d, NULL, &crop, arena, ctx);
    if (st == RV_OK) st = acc_add(&acc, &d, x0, y0, H, W, masks, opts->score_thr, ctx);
    rv_arena_release(arena, mark);
    if (st == RV_OK && stop_requested(opts, t + 1, runs))
      st = rv_error(ctx, RV_ERR_INTERRUPTED, "tiled detection stopped after %d of %d tiles", t + 1, runs);
  }
  free(tiles);
  /* the merge, class by class, into arrays from the arena */
  const int n = (int)acc.n;
  float *ob = NULL, *os = NULL;
  int *ol = NULL, *slot = NULL, k = 0;
  if (st == RV_OK && n > 0) {
    ob = rv_arena_floats(arena, (size_t)n * 4);
    os = rv_arena_floats(arena, (size_t)n);
    ol = rv_arena_alloc(arena, (size_t)n * sizeof *ol);
    slot = malloc((size_t)n * sizeof *slot);
    if (!ob || !os || !ol || !slot) st = rv_error(ctx, RV_ERR_NOMEM, "tiling: out of memory merging %d detections", n);
  }
  if (st == RV_OK && n > 0) {
    k = rv_merge_tile_dets(ob, os, ol, slot, acc.boxes, acc.scores, acc.labels, n, opts->merge == RV_TILE_MERGE_NMM,
                           opts->merge_thr, arena);
    if (k < 0) st = rv_error(ctx, RV_ERR_NOMEM, "tiling: out of memory merging %d detections", n);
  }
  if (st == RV_OK && opts->max_dets > 0 && k > opts->max_dets) k = opts->max_dets;
  rv_rle *om = NULL;
  if (st == RV_OK && masks && k > 0) {
    om = rv_arena_alloc(arena, (size_t)k * sizeof *om);
    int *first = malloc((size_t)k * sizeof *first), *count = calloc((size_t)k, sizeof *count);
    rv_rle *group = malloc((size_t)n * sizeof *group);
    if (!om || !first || !count || !group) st = rv_error(ctx, RV_ERR_NOMEM, "tiling: out of memory for masks");
    /* each result's mask: the union of the masks of the detections it holds */
    for (int i = 0; st == RV_OK && i < n; i++)
      if (slot[i] >= 0 && slot[i] < k && count[slot[i]]++ == 0) first[slot[i]] = i;
    for (int r = 0; st == RV_OK && r < k; r++) {
      if (count[r] == 1) {
        if (rle_to_arena(&om[r], &acc.masks[first[r]], arena)) st = rv_error(ctx, RV_ERR_NOMEM, "tiling: out of memory for masks");
        continue;
      }
      int g = 0;
      for (int i = first[r]; i < n && g < count[r]; i++)
        if (slot[i] == r) group[g++] = acc.masks[i];
      rv_rle u = {0};
      st = rv_rle_merge(&u, group, (size_t)g, 0, ctx);
      if (st == RV_OK && rle_to_arena(&om[r], &u, arena)) st = rv_error(ctx, RV_ERR_NOMEM, "tiling: out of memory for masks");
      rv_rle_free(&u);
    }
    free(first);
    free(count);
    free(group);
  }
  free(slot);
  acc_free(&acc);
  if (st != RV_OK) {
    rv_arena_release(arena, mark);
    return st;
  }
  out->n = k;
  out->bboxes = ob;
  out->scores = os;
  out->labels = ol;
  out->masks = om;
  out->img_h = H;
  out->img_w = W;
  out->runs = runs;
  return RV_OK;
}

rv_status rv_model_detect_tiled(const rv_model *m, rv_tile_detections *out, const rv_image *bgr,
                                const rv_tile_opts *opts, rv_arena *arena, rv_ctx *ctx) {
  /* one call on the model (core/rv.h "Calls"): the tiles' runs inside it count once */
  rv_call_begin(ctx, rv_model_share(m));
  return rv_call_end(ctx, detect_tiled(m, out, bgr, opts, arena, ctx));
}

/* ---- segmentation ------------------------------------------------------------------------- */

/* mmseg's slide grid along one side: crop c (<= n), stride s: the start of window i */
static int slide_start(int i, int n, int c, int s) {
  const int y2 = i * s + c < n ? i * s + c : n;
  return y2 - c > 0 ? y2 - c : 0;
}

static rv_status segment_tiled(const rv_model *m, int32_t *labels, const rv_image *bgr,
                               const rv_tile_opts *opts, rv_arena *arena, rv_ctx *ctx) {
  if (rv_model_task(m) != RV_TASK_SEGMENT || !rv_model_seg_decoder(m))
    return rv_error(ctx, RV_ERR_MODEL, "this checkpoint is a %s detector, not a segmentor: use 'ravlt detect'", rv_model_arch(m));
  /* encode_decode of a crop: the model's backbone and decoder (the test mode is not used) */
  const rv_segmentor sg = {rv_model_seg_decoder(m), rv_seg_ravlt_backbone, (void *)rv_model_backbone(m),
                           rv_seg_default_test_cfg()};
  const rv_segmentor *seg = &sg;
  RV_TRY(rv_tile_opts_check(opts, ctx));
  RV_TRY(check_image(bgr, "tiled segmentation", ctx));
  const int H = bgr->h, W = bgr->w, C = rv_model_num_classes(m);
  const int ch = opts->tile_h < H ? opts->tile_h : H, cw = opts->tile_w < W ? opts->tile_w : W;
  const int sh = opts->tile_h - (int)(opts->overlap_h * opts->tile_h);
  const int sw = opts->tile_w - (int)(opts->overlap_w * opts->tile_w);
  /* mmseg: h_grids = max(H - crop + stride - 1, 0) // stride + 1 */
  const int gh = (H - ch + sh - 1 > 0 ? H - ch + sh - 1 : 0) / sh + 1;
  const int gw = (W - cw + sw - 1 > 0 ? W - cw + sw - 1 : 0) / sw + 1;
  const rv_preprocess_params pre = rv_model_preprocess(m);
  /* the band: summed logits of the rows of one tile row, row y in slot y % ch, [ch][C][W];
   * windows per row / column (their product divides the sums); one row of averages */
  const size_t band_n = (size_t)ch * C * W;
  float *band = calloc(band_n, sizeof *band), *avg = malloc((size_t)C * W * sizeof *avg);
  int *cy = calloc((size_t)H, sizeof *cy), *cx = calloc((size_t)W, sizeof *cx);
  if (!band || !avg || !cy || !cx) {
    free(band);
    free(avg);
    free(cy);
    free(cx);
    return rv_error(ctx, RV_ERR_NOMEM, "tiled segmentation: out of memory for a band of %d x %d x %d logits (%.0f MB)",
                    C, ch, W, band_n * 4.0 / 1e6);
  }
  for (int i = 0; i < gh; i++)
    for (int y = slide_start(i, H, ch, sh), e = y + ch; y < e; y++) cy[y]++;
  for (int j = 0; j < gw; j++)
    for (int x = slide_start(j, W, cw, sw), e = x + cw; x < e; x++) cx[x]++;
  rv_status st = RV_OK;
  const rv_arena_mark mark = rv_arena_get_mark(arena);
  int done_rows = 0;
  for (int i = 0; i < gh && st == RV_OK; i++) {
    const int y1 = slide_start(i, H, ch, sh);
    for (int j = 0; j < gw && st == RV_OK; j++) {
      const int x1 = slide_start(j, W, cw, sw);
      rv_image crop;
      rv_tensor x = {0}, cl;
      st = rv_ctx_check(ctx); /* cancelled; the call's threads (core/rv.h) */
      if (st != RV_OK) break;
      if (crop_image(&crop, bgr, x1, y1, cw, ch, arena) == 0) x = rv_tensor_new(arena, 1, 3, ch, cw);
      if (!x.data) st = rv_error(ctx, RV_ERR_NOMEM, "tiled segmentation: out of memory for a %dx%d tile", cw, ch);
      if (st == RV_OK) {
        rv_preprocess_normalize(x.data, ch, cw, &crop, &pre); /* Normalize, no Resize, no Pad */
        st = rv_seg_encode_decode(seg, &cl, x, arena, ctx);
      }
      if (st == RV_OK && (cl.c != C || cl.h != ch || cl.w != cw))
        st = rv_error(ctx, RV_ERR_INTERNAL, "tiled segmentation: logits of %dx%dx%d for a %dx%d tile", cl.c, cl.h, cl.w, cw, ch);
      if (st == RV_OK) {
#pragma omp parallel for schedule(static)
        for (int y = 0; y < ch; y++)
          for (int c = 0; c < C; c++) {
            float *dst = band + ((size_t)((y1 + y) % ch) * C + c) * W + x1;
            const float *src = cl.data + ((size_t)c * ch + y) * cw;
            for (int k = 0; k < cw; k++) dst[k] += src[k];
          }
      }
      rv_arena_release(arena, mark);
      if (st == RV_OK && stop_requested(opts, i * gw + j + 1, gh * gw))
        st = rv_error(ctx, RV_ERR_INTERRUPTED, "tiled segmentation stopped after %d of %d tiles", i * gw + j + 1, gh * gw);
    }
    /* rows no later window covers are final: average, argmax, and their slots cleared */
    const int upto = i + 1 < gh ? slide_start(i + 1, H, ch, sh) : H;
    for (int y = done_rows; y < upto && st == RV_OK; y++) {
      float *row = band + (size_t)(y % ch) * C * W;
#pragma omp parallel for schedule(static)
      for (int c = 0; c < C; c++)
        for (int k = 0; k < W; k++) avg[(size_t)c * W + k] = row[(size_t)c * W + k] / (float)(cy[y] * cx[k]);
      rv_seg_argmax(labels + (size_t)y * W, avg, C, (size_t)W);
      memset(row, 0, (size_t)C * W * sizeof *row);
    }
    if (upto > done_rows) done_rows = upto;
  }
  free(band);
  free(avg);
  free(cy);
  free(cx);
  return st;
}

rv_status rv_model_segment_tiled(const rv_model *m, int32_t *labels, const rv_image *bgr,
                                 const rv_tile_opts *opts, rv_arena *arena, rv_ctx *ctx) {
  rv_call_begin(ctx, rv_model_share(m));
  return rv_call_end(ctx, segment_tiled(m, labels, bgr, opts, arena, ctx));
}
