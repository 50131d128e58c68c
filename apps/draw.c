/* Visualisations for the CLI: label overlays with a legend, detections with masks. Uses
 * the drawing primitives of formats/image.h only. */
#include "apps/draw.h"
#include "datasets/classes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sizes that scale with the image: text scale, line thickness, padding. */
typedef struct {
  double scale;
  int thick, pad;
} style;

static style style_for(const rv_image *img) {
  int m = img->h < img->w ? img->h : img->w;
  style s;
  s.scale = m / 1000.0;
  if (s.scale < 0.35) s.scale = 0.35;
  if (s.scale > 0.9) s.scale = 0.9;
  s.thick = m >= 700 ? 2 : 1;
  s.pad = m >= 500 ? 6 : 3;
  return s;
}

static rv_color color_of(const unsigned char (*palette)[3], int k) {
  unsigned char rgb[3];
  if (palette) {
    memcpy(rgb, palette[k], 3);
  } else {
    rv_palette_color(k, rgb);
  }
  return rv_rgb(rgb[0], rgb[1], rgb[2]);
}

/* Black or white, whichever reads better on c (Rec. 601 luma). */
static rv_color text_color_on(rv_color c) {
  double y = 0.299 * c.r + 0.587 * c.g + 0.114 * c.b;
  return y > 150 ? rv_rgb(0, 0, 0) : rv_rgb(255, 255, 255);
}

static void class_name(char *buf, size_t n, const char *const *names, int k) {
  if (names && names[k]) {
    /* trim the official 'bed ' trailing space */
    snprintf(buf, n, "%s", names[k]);
    size_t l = strlen(buf);
    while (l > 0 && buf[l - 1] == ' ') buf[--l] = 0;
  } else {
    snprintf(buf, n, "class %d", k);
  }
}

rv_status rv_draw_label_colors(rv_image *out, const int32_t *labels, int h, int w,
                               const unsigned char (*palette)[3], int n_classes, rv_ctx *ctx) {
  if (!labels || h <= 0 || w <= 0 || n_classes <= 0)
    return rv_error(ctx, RV_ERR_ARG, "label colours: empty label map");
  RV_TRY(rv_image_alloc(out, h, w, 3, ctx));
  size_t n = (size_t)h * (size_t)w;
  for (size_t i = 0; i < n; i++) {
    int k = labels[i];
    if (k < 0 || k >= n_classes) continue;
    rv_color c = color_of(palette, k);
    out->data[i * 3] = c.b;
    out->data[i * 3 + 1] = c.g;
    out->data[i * 3 + 2] = c.r;
  }
  return RV_OK;
}

typedef struct {
  int k;
  long count;
} class_count;

static int by_count_desc(const void *a, const void *b) {
  const class_count *x = a, *y = b;
  if (x->count != y->count) return x->count < y->count ? 1 : -1;
  return x->k - y->k;
}

/* Legend box in the top-left corner: a swatch, the name and the pixel share per class. */
static rv_status draw_legend(rv_image *img, const class_count *cc, int n_present, long total,
                             const unsigned char (*palette)[3], const char *const *names,
                             rv_ctx *ctx) {
  style s = style_for(img);
  int tw, th, bl;
  rv_text_size("Hg", s.scale, 1, &tw, &th, &bl);
  int line_h = th + bl + s.pad;
  int sw = th + bl; /* swatch side */
  int max_lines = (img->h - 2 * s.pad) / line_h;
  if (max_lines < 1) return RV_OK; /* image too small for a legend */
  int shown = n_present;
  int more = 0;
  if (shown > max_lines) {
    shown = max_lines - 1;
    more = n_present - shown;
  }
  if (shown > 20) { /* keep it readable: the 20 largest classes */
    more += shown - 20;
    shown = 20;
  }
  char text[160], nm[128];
  int box_w = 0;
  for (int i = 0; i < shown; i++) {
    class_name(nm, sizeof nm, names, cc[i].k);
    snprintf(text, sizeof text, "%s %.1f%%", nm, 100.0 * (double)cc[i].count / (double)total);
    rv_text_size(text, s.scale, 1, &tw, NULL, NULL);
    if (tw > box_w) box_w = tw;
  }
  if (more) {
    snprintf(text, sizeof text, "+%d more", more);
    rv_text_size(text, s.scale, 1, &tw, NULL, NULL);
    if (tw > box_w) box_w = tw;
  }
  int lines = shown + (more ? 1 : 0);
  int x0 = s.pad, y0 = s.pad;
  int x1 = x0 + s.pad + sw + s.pad + box_w + s.pad;
  int y1 = y0 + lines * line_h + s.pad / 2;
  RV_TRY(rv_draw_rect_filled(img, x0, y0, x1, y1, rv_rgb(0, 0, 0), 0.6f, ctx));
  for (int i = 0; i < lines; i++) {
    int ty = y0 + (i + 1) * line_h - bl - s.pad / 2; /* baseline */
    int tx = x0 + s.pad + sw + s.pad;
    if (i < shown) {
      rv_color c = color_of(palette, cc[i].k);
      int sy = ty - th;
      RV_TRY(rv_draw_rect_filled(img, x0 + s.pad, sy, x0 + s.pad + sw - 1, sy + sw - 1, c, 1.0f, ctx));
      RV_TRY(rv_draw_rect(img, x0 + s.pad, sy, x0 + s.pad + sw - 1, sy + sw - 1, rv_rgb(255, 255, 255),
                          1, ctx));
      class_name(nm, sizeof nm, names, cc[i].k);
      snprintf(text, sizeof text, "%s %.1f%%", nm, 100.0 * (double)cc[i].count / (double)total);
    } else {
      snprintf(text, sizeof text, "+%d more", more);
    }
    RV_TRY(rv_draw_text(img, text, tx, ty, s.scale, rv_rgb(255, 255, 255), 1, ctx));
  }
  return RV_OK;
}

rv_status rv_draw_label_overlay(rv_image *img, const int32_t *labels, const unsigned char (*palette)[3],
                                const char *const *names, int n_classes, float opacity,
                                int legend, rv_ctx *ctx) {
  if (!img || !img->data || img->c != 3)
    return rv_error(ctx, RV_ERR_ARG, "label overlay: expected a 3-channel image");
  if (!labels || n_classes <= 0) return rv_error(ctx, RV_ERR_ARG, "label overlay: no labels");
  if (!(opacity >= 0.0f && opacity <= 1.0f))
    return rv_error(ctx, RV_ERR_ARG, "label overlay: opacity %g outside [0, 1]", (double)opacity);
  class_count *cc = calloc((size_t)n_classes, sizeof *cc);
  if (!cc) return rv_error(ctx, RV_ERR_NOMEM, "label overlay: out of memory");
  size_t n = (size_t)img->h * (size_t)img->w;
  double op = opacity;
  long total = 0;
  for (size_t i = 0; i < n; i++) {
    int k = labels[i];
    if (k < 0 || k >= n_classes) continue;
    cc[k].count++;
    total++;
    rv_color c = color_of(palette, k);
    unsigned char *p = img->data + i * 3;
    /* mmseg show_result: (img * (1 - opacity) + color_seg * opacity).astype(uint8) */
    p[0] = (unsigned char)((double)p[0] * (1.0 - op) + (double)c.b * op);
    p[1] = (unsigned char)((double)p[1] * (1.0 - op) + (double)c.g * op);
    p[2] = (unsigned char)((double)p[2] * (1.0 - op) + (double)c.r * op);
  }
  rv_status st = RV_OK;
  if (legend && total > 0) {
    int n_present = 0;
    for (int k = 0; k < n_classes; k++) {
      cc[k].k = k;
      if (cc[k].count) cc[n_present++] = (class_count){k, cc[k].count};
    }
    if (n_present > 1) qsort(cc, (size_t)n_present, sizeof *cc, by_count_desc);
    st = draw_legend(img, cc, n_present, total, palette, names, ctx);
  }
  free(cc);
  return st;
}

/* ---- detections ------------------------------------------------------------------------- */

typedef struct {
  float score;
  int i;
} order_item;

static int by_score_asc(const void *a, const void *b) {
  const order_item *x = a, *y = b;
  if (x->score != y->score) return x->score < y->score ? -1 : 1;
  return y->i - x->i; /* ties: earlier detection drawn last (on top) */
}

/* Translucent fill of mask pixels and a solid 1-2 px contour (mask pixels with a
 * 4-neighbour outside the mask). The mask is the mw x mh window at x0, y0 of the image
 * (row-major); pixels outside it are outside the mask. */
static void draw_mask(rv_image *img, const unsigned char *mask, int x0, int y0, int mw, int mh, rv_color c,
                      int thick) {
  const float a = 0.45f;
#define IN_MASK(X, Y) ((X) >= 0 && (Y) >= 0 && (X) < mw && (Y) < mh && mask[(size_t)(Y) * mw + (X)])
  for (int y = 0; y < mh; y++) {
    if (y0 + y < 0 || y0 + y >= img->h) continue;
    for (int x = 0; x < mw; x++) {
      if (!mask[(size_t)y * mw + x] || x0 + x < 0 || x0 + x >= img->w) continue;
      const int ix = x0 + x, iy = y0 + y;
      int edge = 0;
      for (int d = 1; d <= thick && !edge; d++)
        edge = ix < d || iy < d || ix >= img->w - d || iy >= img->h - d || !IN_MASK(x - d, y) || !IN_MASK(x + d, y) ||
               !IN_MASK(x, y - d) || !IN_MASK(x, y + d);
      unsigned char *p = rv_image_px(img, iy, ix);
      if (edge) {
        p[0] = c.b;
        p[1] = c.g;
        p[2] = c.r;
      } else {
        p[0] = (unsigned char)((float)p[0] * (1 - a) + (float)c.b * a + 0.5f);
        p[1] = (unsigned char)((float)p[1] * (1 - a) + (float)c.g * a + 0.5f);
        p[2] = (unsigned char)((float)p[2] * (1 - a) + (float)c.r * a + 0.5f);
      }
    }
  }
#undef IN_MASK
}

/* A whole-image RLE drawn through its box's window only (a tiled run's masks: the image may be
 * far too large for a full mask per detection). */
static rv_status draw_rle(rv_image *img, const rv_rle *r, rv_color c, int thick, rv_ctx *ctx) {
  if (r->h != (uint32_t)img->h || r->w != (uint32_t)img->w)
    return rv_error(ctx, RV_ERR_ARG, "draw detections: a %ux%u mask on a %dx%d image", r->w, r->h, img->w, img->h);
  double bb[4];
  rv_rle_to_bbox(r, bb);
  if (bb[2] <= 0 || bb[3] <= 0) return RV_OK;
  const int x0 = (int)bb[0], y0 = (int)bb[1], mw = (int)bb[2], mh = (int)bb[3];
  unsigned char *win = calloc((size_t)mw * mh, 1);
  if (!win) return rv_error(ctx, RV_ERR_NOMEM, "draw detections: out of memory for a %dx%d mask", mw, mh);
  uint64_t p = 0;
  for (size_t k = 0; k < r->m; p += r->cnts[k], k++) {
    if (!(k & 1)) continue; /* background run */
    for (uint64_t q = p; q < p + r->cnts[k]; q++) {
      const int x = (int)(q / r->h) - x0, y = (int)(q % r->h) - y0;
      if (x >= 0 && y >= 0 && x < mw && y < mh) win[(size_t)y * mw + x] = 1;
    }
  }
  draw_mask(img, win, x0, y0, mw, mh, c, thick);
  free(win);
  return RV_OK;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

rv_status rv_draw_detections(rv_image *img, const rv_draw_det *dets, int n,
                             const char *const *names, const unsigned char (*palette)[3],
                             int n_classes, float score_thr, rv_ctx *ctx) {
  if (!img || !img->data || img->c != 3)
    return rv_error(ctx, RV_ERR_ARG, "draw detections: expected a 3-channel image");
  if (n < 0 || (n > 0 && !dets)) return rv_error(ctx, RV_ERR_ARG, "draw detections: no detections");
  if (n == 0) return RV_OK;
  order_item *ord = malloc(sizeof *ord * (size_t)n);
  if (!ord) return rv_error(ctx, RV_ERR_NOMEM, "draw detections: out of memory");
  int m = 0;
  for (int i = 0; i < n; i++)
    if (dets[i].score >= score_thr && dets[i].label >= 0 && (n_classes <= 0 || dets[i].label < n_classes))
      ord[m++] = (order_item){dets[i].score, i};
  if (m > 1) qsort(ord, (size_t)m, sizeof *ord, by_score_asc);
  style s = style_for(img);
  rv_status st = RV_OK;
  if (n_classes <= 0) palette = NULL; /* unknown bounds: generated colours */
  /* masks first (all of them), then boxes and tags on top so no fill hides a label */
  for (int j = 0; j < m; j++) {
    const rv_draw_det *d = &dets[ord[j].i];
    if (d->mask) draw_mask(img, d->mask, 0, 0, img->w, img->h, color_of(palette, d->label), s.thick);
    else if (d->rle && st == RV_OK) st = draw_rle(img, d->rle, color_of(palette, d->label), s.thick, ctx);
  }
  char text[160], nm[128];
  for (int j = 0; j < m && st == RV_OK; j++) {
    const rv_draw_det *d = &dets[ord[j].i];
    rv_color c = color_of(palette, d->label);
    if (!(isfinite(d->x1) && isfinite(d->y1) && isfinite(d->x2) && isfinite(d->y2))) continue;
    int x1 = clampi((int)lrintf(d->x1), -1, img->w), y1 = clampi((int)lrintf(d->y1), -1, img->h);
    int x2 = clampi((int)lrintf(d->x2), -1, img->w), y2 = clampi((int)lrintf(d->y2), -1, img->h);
    st = rv_draw_rect(img, x1, y1, x2, y2, c, s.thick + 1, ctx);
    if (st != RV_OK) break;
    class_name(nm, sizeof nm, (n_classes > 0) ? names : NULL, d->label);
    snprintf(text, sizeof text, "%s %.2f", nm, (double)d->score);
    int tw, th, bl;
    rv_text_size(text, s.scale, 1, &tw, &th, &bl);
    int tag_h = th + bl + 4;
    /* tag above the box if it fits, else inside its top edge */
    int ty0 = y1 - tag_h >= 0 ? y1 - tag_h : clampi(y1, 0, img->h - 1);
    int tx0 = clampi(x1, 0, img->w - 1);
    if (tx0 + tw + 4 > img->w) tx0 = img->w - tw - 4 > 0 ? img->w - tw - 4 : 0;
    st = rv_draw_rect_filled(img, tx0, ty0, tx0 + tw + 4, ty0 + tag_h - 1, c, 0.85f, ctx);
    if (st == RV_OK)
      st = rv_draw_text(img, text, tx0 + 2, ty0 + th + 2, s.scale, text_color_on(c), 1, ctx);
  }
  free(ord);
  return st;
}
