/* Synthetic segmentation / detection datasets (datasets/synth.h).
 *
 * A sample: a background (procedural texture or a random crop of a photograph), then up to
 * max_shapes convex shapes placed one after another; a candidate is accepted only if every
 * earlier shape keeps >= 45% of its area (and >= 250 px) visible. ids[y*w+x] is the visible
 * shape per pixel (painter's order), from which the label PNG, the rendering and the COCO
 * polygons (Moore boundary tracing of each visible component, Douglas-Peucker simplified)
 * are derived. Polygon masks are checked against the visible mask with rv_rle_from_poly.
 */
#define _POSIX_C_SOURCE 200809L
#include "datasets/synth.h"
#include "core/fs.h"

#include "datasets/ade20k.h"
#include "eval/rle.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAXV 64        /* polygon vertices */
#define MAX_SHAPES 16
#define MIN_VISIBLE 250
#define MIN_FRAC 0.45
#define PI 3.14159265358979323846
#define POLY_OFF 0.5   /* boundary pixel (x, y) -> polygon vertex (x + off, y + off) */
#define SPECK 12       /* 8-connected visible parts under this many pixels get no polygon */

static const char *const CLASS_NAMES[RV_SYNTH_SHAPES + 1] = {
    "background", "circle", "triangle", "square", "hexagon", "ellipse"};

const char *rv_synth_class_name(int i) {
  return i >= 0 && i <= RV_SYNTH_SHAPES ? CLASS_NAMES[i] : "?";
}

void rv_synth_defaults(rv_synth_opts *o) {
  memset(o, 0, sizeof *o);
  o->task = RV_SYNTH_SEG;
  o->count = 10;
  o->seed = 0;
  o->width = 320;
  o->height = 240;
  o->min_shapes = 2;
  o->max_shapes = 6;
  o->split = "validation";
}

/* ---- random numbers (splitmix64) ---- */
typedef struct { uint64_t s; } rng;

static uint64_t rnext(rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
static double runi(rng *r) { return (double)(rnext(r) >> 11) * (1.0 / 9007199254740992.0); }
static double rrange(rng *r, double lo, double hi) { return lo + (hi - lo) * runi(r); }
static int rint_(rng *r, int lo, int hi) { return lo + (int)(rnext(r) % (uint64_t)(hi - lo + 1)); }

/* HSV (h in [0,6), s, v in [0,1]) -> BGR bytes */
static void hsv_bgr(double h, double s, double v, unsigned char bgr[3]) {
  int i = (int)h % 6;
  double f = h - floor(h), p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  double r, g, b;
  switch (i) {
    case 0: r = v; g = t; b = p; break;
    case 1: r = q; g = v; b = p; break;
    case 2: r = p; g = v; b = t; break;
    case 3: r = p; g = q; b = v; break;
    case 4: r = t; g = p; b = v; break;
    default: r = v; g = p; b = q; break;
  }
  bgr[0] = (unsigned char)lrint(b * 255);
  bgr[1] = (unsigned char)lrint(g * 255);
  bgr[2] = (unsigned char)lrint(r * 255);
}

/* pixel (x, y) */
static unsigned char *at(const rv_image *img, int x, int y) { return rv_image_px(img, y, x); }

static unsigned char clamp_u8(double v) { return v <= 0 ? 0 : v >= 255 ? 255 : (unsigned char)lrint(v); }

/* ---- shapes ---- */
typedef struct {
  int cls, n;
  double xy[2 * MAXV];
  double cx, cy, r;
  /* paint */
  unsigned char c1[3], c2[3];
  int pattern;
  double dx, dy, period;
} shape;

/* Convex polygon with increasing angle (interior: every cross product >= 0). */
static void make_shape(shape *sh, int cls, double cx, double cy, double r, double rot, double aspect) {
  static const int NV[RV_SYNTH_SHAPES] = {48, 3, 4, 6, 48};
  sh->cls = cls;
  sh->n = NV[cls];
  sh->cx = cx;
  sh->cy = cy;
  sh->r = r;
  double a = r, b = cls == 4 ? r / aspect : r;
  for (int i = 0; i < sh->n; i++) {
    double t = 2 * PI * i / sh->n;
    double x = a * cos(t), y = b * sin(t);
    sh->xy[2 * i] = cx + x * cos(rot) - y * sin(rot);
    sh->xy[2 * i + 1] = cy + x * sin(rot) + y * cos(rot);
  }
}

static int inside(const shape *sh, double px, double py) {
  for (int i = 0; i < sh->n; i++) {
    int j = (i + 1) % sh->n;
    double ex = sh->xy[2 * j] - sh->xy[2 * i], ey = sh->xy[2 * j + 1] - sh->xy[2 * i + 1];
    double qx = px - sh->xy[2 * i], qy = py - sh->xy[2 * i + 1];
    if (ex * qy - ey * qx < 0) return 0;
  }
  return 1;
}

static void shape_bbox(const shape *sh, int w, int h, int *x0, int *y0, int *x1, int *y1) {
  double a = 1e9, b = 1e9, c = -1e9, d = -1e9;
  for (int i = 0; i < sh->n; i++) {
    a = fmin(a, sh->xy[2 * i]);
    b = fmin(b, sh->xy[2 * i + 1]);
    c = fmax(c, sh->xy[2 * i]);
    d = fmax(d, sh->xy[2 * i + 1]);
  }
  *x0 = a < 0 ? 0 : (int)floor(a);
  *y0 = b < 0 ? 0 : (int)floor(b);
  *x1 = c > w - 1 ? w - 1 : (int)ceil(c);
  *y1 = d > h - 1 ? h - 1 : (int)ceil(d);
}

/* Colour families: class c's hues lie within HUE_BAND of c * 6 / RV_SYNTH_SHAPES (HSV hue in
 * [0, 6): circle red, triangle yellow-green, square green-cyan, hexagon blue, ellipse
 * magenta-purple), saturated (s >= 0.55); the second colour of a pattern is a darker shade of
 * the same family. Backgrounds stay below saturation BG_SAT. */
#define HUE_BAND 0.3
#define BG_SAT 0.3
#define PHOTO_SAT 0.4 /* photographs' chroma scaled by this */

static double class_hue(int cls, rng *r) {
  return fmod(cls * 6.0 / RV_SYNTH_SHAPES + rrange(r, -HUE_BAND, HUE_BAND) + 6, 6);
}

static void paint_shape(shape *sh, rng *r) {
  /* the draws one at a time, in this order (never two in one call's arguments, whose order
     C leaves to the compiler: GCC's and clang's images differed) */
  double v = rrange(r, 0.5, 1);
  double s1 = rrange(r, 0.55, 1), h1 = class_hue(sh->cls, r);
  hsv_bgr(h1, s1, v, sh->c1);
  double v2 = v * rrange(r, 0.4, 0.75), s2 = rrange(r, 0.55, 1), h2 = class_hue(sh->cls, r);
  hsv_bgr(h2, s2, v2, sh->c2);
  sh->pattern = rint_(r, 0, 3);
  double ang = rrange(r, 0, PI);
  sh->dx = cos(ang);
  sh->dy = sin(ang);
  sh->period = rrange(r, 5, 14);
}

static void shade(const shape *sh, int x, int y, rng *r, unsigned char *px) {
  double t = 0;
  switch (sh->pattern) {
    case 1: { /* stripes */
      double u = (x * sh->dx + y * sh->dy) / sh->period;
      t = u - floor(u) < 0.5 ? 0 : 1;
      break;
    }
    case 2: /* linear gradient across the shape */
      t = ((x - sh->cx) * sh->dx + (y - sh->cy) * sh->dy) / (2 * sh->r) + 0.5;
      t = t < 0 ? 0 : t > 1 ? 1 : t;
      break;
    case 3: { /* checks */
      int a = (int)floor(x / sh->period), b = (int)floor(y / sh->period);
      t = ((a + b) & 1) ? 1 : 0;
      break;
    }
    default: t = 0;
  }
  for (int c = 0; c < 3; c++)
    px[c] = clamp_u8(sh->c1[c] * (1 - t) + sh->c2[c] * t + rrange(r, -10, 10));
}

/* ---- backgrounds ---- */
static void bg_texture(rv_image *img, rng *r) {
  int w = img->w, h = img->h;
  int kind = rint_(r, 0, 2);
  unsigned char a[3], b[3];
  double hue = rrange(r, 0, 6);
  double va = rrange(r, 0.2, 0.9), sa = rrange(r, 0, BG_SAT);
  hsv_bgr(hue, sa, va, a);
  double vb = rrange(r, 0.2, 0.9), sb = rrange(r, 0, BG_SAT), hb = fmod(hue + rrange(r, 0.5, 3), 6);
  hsv_bgr(hb, sb, vb, b);
  if (kind == 0) { /* waves */
    double f1x = rrange(r, -0.15, 0.15), f1y = rrange(r, -0.15, 0.15), p1 = rrange(r, 0, 6.3);
    double f2x = rrange(r, -0.05, 0.05), f2y = rrange(r, -0.05, 0.05), p2 = rrange(r, 0, 6.3);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        double t = 0.5 + 0.3 * sin(f1x * x + f1y * y + p1) + 0.2 * sin(f2x * x + f2y * y + p2);
        unsigned char *p = at(img, x, y);
        for (int c = 0; c < 3; c++) p[c] = clamp_u8(a[c] * (1 - t) + b[c] * t + rrange(r, -8, 8));
      }
  } else if (kind == 1) { /* checkerboard */
    int cell = rint_(r, 8, 32);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        const unsigned char *s = ((x / cell + y / cell) & 1) ? a : b;
        unsigned char *p = at(img, x, y);
        for (int c = 0; c < 3; c++) p[c] = clamp_u8(s[c] + rrange(r, -12, 12));
      }
  } else { /* value noise on a coarse grid, bilinear */
    int g = rint_(r, 8, 24);
    int gw = w / g + 2, gh = h / g + 2;
    double *v = malloc(sizeof *v * (size_t)gw * (size_t)gh);
    if (!v) return;
    for (int i = 0; i < gw * gh; i++) v[i] = runi(r);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        double fx = (double)x / g, fy = (double)y / g;
        int ix = (int)fx, iy = (int)fy;
        double tx = fx - ix, ty = fy - iy;
        double t = v[iy * gw + ix] * (1 - tx) * (1 - ty) + v[iy * gw + ix + 1] * tx * (1 - ty) +
                   v[(iy + 1) * gw + ix] * (1 - tx) * ty + v[(iy + 1) * gw + ix + 1] * tx * ty;
        unsigned char *p = at(img, x, y);
        for (int c = 0; c < 3; c++) p[c] = clamp_u8(a[c] * (1 - t) + b[c] * t + rrange(r, -6, 6));
      }
    free(v);
  }
}

/* A random crop of a photograph, resized to the image size. 0 if it could not be used. */
static int bg_photo(rv_image *img, const char *path, rng *r, rv_ctx *ctx) {
  rv_image ph = {0}, crop = {0}, res = {0};
  int ok = 0;
  if (rv_image_read(path, &ph, ctx) != RV_OK || ph.w < 64 || ph.h < 64) goto done;
  double ar = (double)img->w / img->h;
  int cw = ph.w, ch = (int)(ph.w / ar);
  if (ch > ph.h) { ch = ph.h; cw = (int)(ph.h * ar); }
  double s = rrange(r, 0.5, 1.0);
  cw = (int)(cw * s);
  ch = (int)(ch * s);
  if (cw < 16 || ch < 16) goto done;
  int ox = rint_(r, 0, ph.w - cw), oy = rint_(r, 0, ph.h - ch);
  if (rv_image_alloc(&crop, ch, cw, 3, ctx) != RV_OK) goto done;
  for (int y = 0; y < ch; y++) memcpy(at(&crop, 0, y), at(&ph, ox, oy + y), (size_t)cw * 3);
  if (rv_image_resize(&res, &crop, img->w, img->h, RV_INTERP_LINEAR, ctx) != RV_OK) goto done;
  memcpy(img->data, res.data, (size_t)img->w * img->h * 3);
  for (size_t i = 0; i < (size_t)img->w * img->h; i++) { /* towards grey: shapes' colours stay distinct */
    unsigned char *p = img->data + 3 * i;
    double grey = 0.114 * p[0] + 0.587 * p[1] + 0.299 * p[2];
    for (int c = 0; c < 3; c++) p[c] = clamp_u8(grey + PHOTO_SAT * (p[c] - grey));
  }
  ok = 1;
done:
  rv_image_free(&ph);
  rv_image_free(&crop);
  rv_image_free(&res);
  rv_ctx_clear_error(ctx);
  return ok;
}

/* ---- one sample ---- */

/* 1 if shape j, once the candidate (cmask) covers part of it, has a hole: a pixel of another
 * shape or the background inside its box (grown by 1) that a 4-connected walk from the
 * box's border cannot reach without crossing j. COCO polygons cannot express holes. */
static int has_hole(const int *ids, const unsigned char *cmask, int j, const int bb[4], int w, int h,
                    unsigned char *seen, int *queue) {
  int x0 = bb[0] - 1, y0 = bb[1] - 1, x1 = bb[2] + 1, y1 = bb[3] + 1;
  int bw = x1 - x0 + 1, bh = y1 - y0 + 1;
  memset(seen, 0, (size_t)bw * bh);
#define IS_J(x, y) ((x) >= 0 && (y) >= 0 && (x) < w && (y) < h && !cmask[(y) * w + (x)] && ids[(y) * w + (x)] == j)
  int qt = 0, qh = 0;
  for (int y = y0; y <= y1; y++)
    for (int x = x0; x <= x1; x++)
      if ((y == y0 || y == y1 || x == x0 || x == x1) && !IS_J(x, y)) {
        seen[(y - y0) * bw + (x - x0)] = 1;
        queue[qt++] = (y - y0) * bw + (x - x0);
      }
  while (qh < qt) {
    int p = queue[qh++], px = p % bw, py = p / bw;
    static const int D4[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
    for (int k = 0; k < 4; k++) {
      int nx = px + D4[k][0], ny = py + D4[k][1];
      if (nx < 0 || ny < 0 || nx >= bw || ny >= bh || seen[ny * bw + nx]) continue;
      if (IS_J(nx + x0, ny + y0)) continue;
      seen[ny * bw + nx] = 1;
      queue[qt++] = ny * bw + nx;
    }
  }
  for (int y = 0; y < bh; y++)
    for (int x = 0; x < bw; x++)
      if (!seen[y * bw + x] && !IS_J(x + x0, y + y0)) return 1;
#undef IS_J
  return 0;
}
typedef struct {
  const rv_synth_opts *o;
  rv_name_list photos; /* full paths */
} gen_ctx;

static rv_status generate(rv_synth_sample *s, const gen_ctx *g, int index, rv_ctx *ctx) {
  const rv_synth_opts *o = g->o;
  int w = o->width, h = o->height;
  memset(s, 0, sizeof *s);
  rng r = {o->seed * 0xD1B54A32D192ED03ULL + (uint64_t)index * 0x9E3779B97F4A7C15ULL + 0x1234567ULL};
  rnext(&r);
  rv_status st = rv_image_alloc(&s->image, h, w, 3, ctx);
  if (st == RV_OK) st = rv_image_alloc(&s->label, h, w, 1, ctx);
  s->ids = malloc(sizeof *s->ids * (size_t)w * (size_t)h);
  if (st == RV_OK && !s->ids) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (st != RV_OK) {
    rv_synth_sample_free(s);
    return st;
  }
  for (int i = 0; i < w * h; i++) s->ids[i] = -1;
  if (g->photos.n > 0 && runi(&r) < 0.5) {
    size_t k = (size_t)(rnext(&r) % g->photos.n);
    if (!bg_photo(&s->image, g->photos.names[k], &r, ctx)) bg_texture(&s->image, &r);
  } else {
    bg_texture(&s->image, &r);
  }
  shape shapes[MAX_SHAPES];
  int vis[MAX_SHAPES], full[MAX_SHAPES];
  int want = rint_(&r, o->min_shapes, o->max_shapes), n = 0;
  int mind = w < h ? w : h;
  int bbs[MAX_SHAPES][4];
  int *cand = malloc(sizeof *cand * (size_t)w * (size_t)h);
  size_t grown = (size_t)(w + 2) * (size_t)(h + 2); /* a shape box grown by 1 pixel */
  int *queue = malloc(sizeof *queue * grown);
  unsigned char *cmask = calloc((size_t)w * (size_t)h, 1), *seen = malloc(grown);
  if (!cand || !queue || !cmask || !seen) {
    free(cand);
    free(queue);
    free(cmask);
    free(seen);
    rv_synth_sample_free(s);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  for (int k = 0; k < want && n < MAX_SHAPES; k++) {
    for (int tries = 0; tries < 40; tries++) {
      shape sh;
      int cls = rint_(&r, 0, RV_SYNTH_SHAPES - 1);
      double rad = rrange(&r, 0.09, 0.24) * mind;
      double cx = rrange(&r, rad * 0.8, w - rad * 0.8), cy = rrange(&r, rad * 0.8, h - rad * 0.8);
      double elong = rrange(&r, 1.8, 2.6), rot = rrange(&r, 0, 2 * PI);
      make_shape(&sh, cls, cx, cy, rad, rot, elong);
      int x0, y0, x1, y1, area = 0;
      shape_bbox(&sh, w, h, &x0, &y0, &x1, &y1);
      for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++)
          if (inside(&sh, x + 0.5, y + 0.5)) cand[area++] = y * w + x;
      if (area < MIN_VISIBLE * 2) continue;
      int lost[MAX_SHAPES] = {0};
      for (int i = 0; i < area; i++)
        if (s->ids[cand[i]] >= 0) lost[s->ids[cand[i]]]++;
      int ok = 1;
      for (int j = 0; j < n && ok; j++)
        if (vis[j] - lost[j] < MIN_VISIBLE || vis[j] - lost[j] < MIN_FRAC * full[j]) ok = 0;
      for (int i = 0; i < area; i++) cmask[cand[i]] = 1;
      for (int j = 0; j < n && ok; j++)
        if (lost[j] && has_hole(s->ids, cmask, j, bbs[j], w, h, seen, queue)) ok = 0;
      for (int i = 0; i < area; i++) cmask[cand[i]] = 0;
      if (!ok) continue;
      bbs[n][0] = x0; bbs[n][1] = y0; bbs[n][2] = x1; bbs[n][3] = y1;
      for (int j = 0; j < n; j++) vis[j] -= lost[j];
      for (int i = 0; i < area; i++) s->ids[cand[i]] = n;
      paint_shape(&sh, &r);
      shapes[n] = sh;
      vis[n] = full[n] = area;
      s->cls[n] = cls;
      n++;
      break;
    }
  }
  free(cand);
  free(queue);
  free(cmask);
  free(seen);
  s->n = n;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int id = s->ids[y * w + x];
      s->label.data[y * w + x] = (unsigned char)(id < 0 ? 1 : s->cls[id] + 2);
      if (id >= 0) shade(&shapes[id], x, y, &r, at(&s->image, x, y));
    }
  return RV_OK;
}

static rv_status list_photos(rv_name_list *out, const char *dir, rv_ctx *ctx);

rv_status rv_synth_generate(rv_synth_sample *s, const rv_synth_opts *o, int index, rv_ctx *ctx) {
  gen_ctx g = {o, {0}};
  if (o->bg_dir) RV_TRY(list_photos(&g.photos, o->bg_dir, ctx));
  rv_status st = generate(s, &g, index, ctx);
  rv_name_list_free(&g.photos);
  return st;
}

void rv_synth_sample_free(rv_synth_sample *s) {
  rv_image_free(&s->image);
  rv_image_free(&s->label);
  free(s->ids);
  memset(s, 0, sizeof *s);
}

/* ---- polygons of a visible mask ---- */
static const int DX[8] = {1, 1, 0, -1, -1, -1, 0, 1}; /* E SE S SW W NW N NE (clockwise, y down) */
static const int DY[8] = {0, 1, 1, 1, 0, -1, -1, -1};

/* Moore-neighbour tracing of the outer boundary of the 8-connected component of comp == cid
 * whose first pixel in raster order is (sx, sy). Appends pixel coordinates to pts. */
static int trace(const int *comp, int cid, int w, int h, int sx, int sy, int *pts, int cap) {
  int n = 0, x = sx, y = sy, d = 0, first = -1;
  pts[n++] = x;
  pts[n++] = y;
  for (int steps = 0; steps < 4 * w * h; steps++) {
    int nd = -1;
    for (int k = 0; k < 8; k++) {
      int dd = (d + 5 + k) % 8, nx = x + DX[dd], ny = y + DY[dd];
      if (nx >= 0 && ny >= 0 && nx < w && ny < h && comp[ny * w + nx] == cid) { nd = dd; break; }
    }
    if (nd < 0) break; /* isolated pixel */
    if (x == sx && y == sy) {
      if (first < 0) first = nd;
      else if (nd == first) break; /* Jacob's stopping criterion */
    }
    x += DX[nd];
    y += DY[nd];
    d = nd;
    if (x == sx && y == sy) {
      /* decide at the start pixel on the next iteration */
    } else if (n + 2 <= cap) {
      pts[n++] = x;
      pts[n++] = y;
    }
  }
  return n / 2;
}

static double seg_dist(const double *p, const double *a, const double *b) {
  double vx = b[0] - a[0], vy = b[1] - a[1], wx = p[0] - a[0], wy = p[1] - a[1];
  double l2 = vx * vx + vy * vy;
  double t = l2 > 0 ? (wx * vx + wy * vy) / l2 : 0;
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  double dx = wx - t * vx, dy = wy - t * vy;
  return sqrt(dx * dx + dy * dy);
}

/* Douglas-Peucker on the closed polyline p[0..n-1] (p[n] = p[0]); keep[i] set for kept
 * points. stack: 2n ints. */
static void simplify(const double *p, int n, double eps, unsigned char *keep, int *stack) {
  memset(keep, 0, (size_t)n);
  int far = 0;
  double best = -1;
  for (int i = 1; i < n; i++) {
    double d = hypot(p[2 * i] - p[0], p[2 * i + 1] - p[1]);
    if (d > best) { best = d; far = i; }
  }
  keep[0] = keep[far] = 1;
  int sp = 0;
  stack[sp++] = 0; stack[sp++] = far;
  stack[sp++] = far; stack[sp++] = n;
  while (sp > 0) {
    int b = stack[--sp], a = stack[--sp];
    const double *pb = &p[2 * (b % n)];
    double dm = -1;
    int im = -1;
    for (int i = a + 1; i < b; i++) {
      double d = seg_dist(&p[2 * i], &p[2 * a], pb);
      if (d > dm) { dm = d; im = i; }
    }
    if (im >= 0 && dm > eps) {
      keep[im] = 1;
      stack[sp++] = a; stack[sp++] = im;
      stack[sp++] = im; stack[sp++] = b;
    }
  }
}

rv_status rv_synth_polygons(const rv_synth_sample *s, int j, double **xy_out, int **parts_out,
                            int *n_parts, rv_ctx *ctx) {
  int w = s->image.w, h = s->image.h;
  size_t npx = (size_t)w * h;
  int *comp = malloc(sizeof *comp * npx), *queue = malloc(sizeof *queue * npx);
  int *pts = malloc(sizeof *pts * 2 * npx);
  double *fp = malloc(sizeof *fp * 2 * npx), *xy = NULL;
  int *stack = malloc(sizeof *stack * 2 * npx), *parts = NULL;
  unsigned char *keep = malloc(npx);
  int np = 0, nxy = 0;
  rv_status st = RV_OK;
  if (!comp || !queue || !pts || !fp || !stack || !keep) { st = rv_error(ctx, RV_ERR_NOMEM, "out of memory"); goto done; }
  for (size_t i = 0; i < npx; i++) comp[i] = s->ids[i] == j ? 0 : -1;
  int cid = 0;
  for (int sy = 0; sy < h; sy++)
    for (int sx = 0; sx < w; sx++) {
      if (comp[sy * w + sx] != 0) continue;
      /* label the component (8-connected BFS) */
      cid++;
      int qh = 0, qt = 0, size = 0;
      queue[qt++] = sy * w + sx;
      comp[sy * w + sx] = cid;
      while (qh < qt) {
        int p = queue[qh++], px = p % w, py = p / w;
        size++;
        for (int k = 0; k < 8; k++) {
          int nx = px + DX[k], ny = py + DY[k];
          if (nx >= 0 && ny >= 0 && nx < w && ny < h && comp[ny * w + nx] == 0) {
            comp[ny * w + nx] = cid;
            queue[qt++] = ny * w + nx;
          }
        }
      }
      if (size < SPECK) continue; /* specks */
      int n = trace(comp, cid, w, h, sx, sy, pts, (int)(2 * npx));
      if (n < 3) continue;
      for (int i = 0; i < 2 * n; i++) fp[i] = pts[i] + POLY_OFF;
      simplify(fp, n, 0.75, keep, stack);
      int kept = 0;
      for (int i = 0; i < n; i++) kept += keep[i];
      if (kept < 3) continue;
      double *nxy2 = realloc(xy, sizeof *xy * (size_t)(nxy + 2 * kept));
      int *np2 = realloc(parts, sizeof *parts * (size_t)(np + 1));
      if (nxy2) xy = nxy2;
      if (np2) parts = np2;
      if (!nxy2 || !np2) { st = rv_error(ctx, RV_ERR_NOMEM, "out of memory"); goto done; }
      for (int i = 0; i < n; i++)
        if (keep[i]) { xy[nxy++] = fp[2 * i]; xy[nxy++] = fp[2 * i + 1]; }
      parts[np++] = kept;
    }
done:
  free(comp);
  free(queue);
  free(pts);
  free(fp);
  free(stack);
  free(keep);
  if (st != RV_OK) {
    free(xy);
    free(parts);
    xy = NULL;
    parts = NULL;
    np = 0;
  }
  *xy_out = xy;
  *parts_out = parts;
  *n_parts = np;
  return st;
}

/* ---- writing ---- */
static rv_status list_photos(rv_name_list *out, const char *dir, rv_ctx *ctx) {
  rv_name_list a = {0}, b = {0};
  RV_TRY(rv_list_files(&a, dir, ".jpg", ctx));
  rv_status st = rv_list_files(&b, dir, ".png", ctx);
  if (st != RV_OK) { rv_name_list_free(&a); return st; }
  out->n = 0;
  out->names = calloc(a.n + b.n + 1, sizeof *out->names);
  if (!out->names) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (size_t i = 0; st == RV_OK && i < a.n + b.n; i++) {
    const char *nm = i < a.n ? a.names[i] : b.names[i - a.n];
    size_t len = strlen(dir) + strlen(nm) + 2;
    char *p = malloc(len);
    if (!p) { st = rv_error(ctx, RV_ERR_NOMEM, "out of memory"); break; }
    snprintf(p, len, "%s/%s", dir, nm);
    out->names[out->n++] = p;
  }
  rv_name_list_free(&a);
  rv_name_list_free(&b);
  if (st == RV_OK && out->n == 0) st = rv_error(ctx, RV_ERR_NOTFOUND, "%s: no .jpg or .png photographs", dir);
  if (st != RV_OK) rv_name_list_free(out);
  return st;
}

/* The number of pixels that break "the rasterised polygons trace the visible mask of shape
 * j": poly is their raster (column-major, as rv_rle_decode writes it). A pixel where the two
 * disagree is allowed on the mask's boundary (a mask pixel with an 8-neighbour outside it or
 * outside the image, or an outside pixel with an 8-neighbour in it) and in a speck (an
 * 8-connected part under SPECK pixels, which gets no polygon). Polygons through the boundary
 * pixels' centres cover about half of each boundary pixel, so that a thin shape traced exactly
 * keeps only 84% IoU with its mask: a fixed IoU floor (0.85) rejected such shapes (2 seeds of
 * 31 failed). queue: w*h ints of scratch. */
static long trace_errors(const rv_synth_sample *s, int j, const uint8_t *poly, int *queue) {
  const int w = s->image.w, h = s->image.h;
  long bad = 0;
#define IN_J(x, y) ((x) >= 0 && (y) >= 0 && (x) < w && (y) < h && s->ids[(y) * w + (x)] == j)
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      const int m = s->ids[y * w + x] == j, p = poly[(size_t)x * h + y] != 0;
      if (m == p) continue;
      int edge = 0;
      for (int k = 0; k < 8 && !edge; k++) {
        const int nx = x + DX[k], ny = y + DY[k];
        edge = m ? !IN_J(nx, ny) : IN_J(nx, ny);
      }
      if (edge) continue;
      if (m) { /* an interior pixel left out: only a speck's (8-connected part < SPECK) */
        int qh = 0, qt = 0, big = 0;
        queue[qt++] = y * w + x;
        while (qh < qt && !big) {
          const int q = queue[qh++], qx = q % w, qy = q / w;
          for (int k = 0; k < 8 && !big; k++) {
            const int nx = qx + DX[k], ny = qy + DY[k];
            if (!IN_J(nx, ny)) continue;
            int seen = 0;
            for (int t = 0; t < qt && !seen; t++) seen = queue[t] == ny * w + nx;
            if (!seen) queue[qt++] = ny * w + nx;
            big = qt >= SPECK;
          }
        }
        if (!big) continue;
      }
      bad++;
    }
#undef IN_J
  return bad;
}

/* Annotations of one sample appended to arr (ids from *next_id). */
static rv_status coco_annotations(cJSON *arr, const rv_synth_sample *s, int64_t image_id, int64_t *next_id,
                                  rv_ctx *ctx) {
  int w = s->image.w, h = s->image.h;
  uint8_t *pm = malloc((size_t)w * h);
  int *queue = malloc(sizeof *queue * (size_t)w * h);
  if (!pm || !queue) {
    free(pm);
    free(queue);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  rv_status st = RV_OK;
  for (int j = 0; j < s->n && st == RV_OK; j++) {
    double *xy = NULL;
    int *parts = NULL, np = 0;
    st = rv_synth_polygons(s, j, &xy, &parts, &np, ctx);
    if (st != RV_OK) break;
    rv_rle rles[64], merged = {0};
    int nr = 0, off = 0;
    for (int p = 0; p < np && nr < 64 && st == RV_OK; p++) {
      st = rv_rle_from_poly(&rles[nr], xy + 2 * off, (size_t)parts[p], (uint32_t)h, (uint32_t)w, ctx);
      if (st == RV_OK) nr++;
      off += parts[p];
    }
    if (st == RV_OK) st = rv_rle_merge(&merged, rles, (size_t)nr, 0, ctx);
    if (st == RV_OK && nr > 0) {
      rv_rle_decode(&merged, pm);
      const long bad = trace_errors(s, j, pm, queue);
      if (bad)
        st = rv_error(ctx, RV_ERR_INTERNAL, "synth: image %lld shape %d: the polygons miss the visible mask "
                      "by %ld pixel(s) off its boundary", (long long)image_id, j, bad);
    }
    if (st == RV_OK && nr > 0) {
      double bb[4];
      rv_rle_to_bbox(&merged, bb);
      cJSON *a = cJSON_CreateObject(), *segm = cJSON_CreateArray();
      off = 0;
      for (int p = 0; p < np; p++) {
        cJSON *poly = cJSON_CreateDoubleArray(xy + 2 * off, 2 * parts[p]);
        cJSON_AddItemToArray(segm, poly);
        off += parts[p];
      }
      cJSON_AddNumberToObject(a, "id", (double)(*next_id)++);
      cJSON_AddNumberToObject(a, "image_id", (double)image_id);
      cJSON_AddNumberToObject(a, "category_id", s->cls[j] + 1);
      cJSON_AddItemToObject(a, "segmentation", segm);
      cJSON_AddNumberToObject(a, "area", (double)rv_rle_area(&merged));
      cJSON_AddItemToObject(a, "bbox", cJSON_CreateDoubleArray(bb, 4));
      cJSON_AddNumberToObject(a, "iscrowd", 0);
      cJSON_AddItemToArray(arr, a);
    }
    for (int i = 0; i < nr; i++) rv_rle_free(&rles[i]);
    rv_rle_free(&merged);
    free(xy);
    free(parts);
  }
  free(pm);
  free(queue);
  return st;
}

static rv_status write_text(const char *path, const char *text, rv_ctx *ctx) {
  rv_out_file o;
  RV_TRY(rv_out_open(&o, path, ctx));
  size_t n = strlen(text);
  if (fwrite(text, 1, n, o.f) != n) {
    int err = rv_out_errno(&o) ? rv_out_errno(&o) : EIO;
    rv_out_abort(&o);
    return rv_error(ctx, RV_ERR_IO, "%s: write failed (%s)", path, strerror(err));
  }
  return rv_out_close(&o, ctx);
}

rv_status rv_synth_write(const char *out_dir, const rv_synth_opts *o, rv_ctx *ctx) {
  if (o->count < 1) return rv_error(ctx, RV_ERR_ARG, "synth: count must be >= 1");
  if (o->width < 64 || o->height < 64 || o->width > 4096 || o->height > 4096)
    return rv_error(ctx, RV_ERR_ARG, "synth: image size %dx%d outside 64..4096", o->width, o->height);
  if (o->min_shapes < 1 || o->max_shapes < o->min_shapes || o->max_shapes > MAX_SHAPES)
    return rv_error(ctx, RV_ERR_ARG, "synth: shapes per image must be 1 <= min <= max <= %d", MAX_SHAPES);
  const char *split = o->split && o->split[0] ? o->split : "validation";
  if (strchr(split, '/')) return rv_error(ctx, RV_ERR_ARG, "synth: bad split name '%s'", split);
  gen_ctx g = {o, {0}};
  if (o->bg_dir) RV_TRY(list_photos(&g.photos, o->bg_dir, ctx));
  char img_dir[4096], ann_dir[4096], path[4400];
  if (o->task == RV_SYNTH_SEG) {
    snprintf(img_dir, sizeof img_dir, "%s/images/%s", out_dir, split);
    snprintf(ann_dir, sizeof ann_dir, "%s/annotations/%s", out_dir, split);
  } else {
    snprintf(img_dir, sizeof img_dir, "%s/images", out_dir);
    snprintf(ann_dir, sizeof ann_dir, "%s/annotations", out_dir);
  }
  rv_status st = rv_mkdirs(img_dir, ctx);
  if (st == RV_OK) st = rv_mkdirs(ann_dir, ctx);
  cJSON *root = NULL, *images = NULL, *anns = NULL;
  if (o->task == RV_SYNTH_DET) {
    root = cJSON_CreateObject();
    cJSON *info = cJSON_AddObjectToObject(root, "info");
    cJSON_AddStringToObject(info, "description", "ravlt synth: shapes with occlusion");
    cJSON_AddNumberToObject(info, "seed", (double)o->seed);
    images = cJSON_AddArrayToObject(root, "images");
    anns = cJSON_AddArrayToObject(root, "annotations");
    cJSON *cats = cJSON_AddArrayToObject(root, "categories");
    for (int c = 1; c <= RV_SYNTH_SHAPES; c++) {
      cJSON *cat = cJSON_CreateObject();
      cJSON_AddNumberToObject(cat, "id", c);
      cJSON_AddStringToObject(cat, "name", CLASS_NAMES[c]);
      cJSON_AddStringToObject(cat, "supercategory", "shape");
      cJSON_AddItemToArray(cats, cat);
    }
  }
  int64_t next_id = 1;
  for (int i = 0; i < o->count && st == RV_OK; i++) {
    rv_synth_sample s;
    st = generate(&s, &g, i, ctx);
    if (st != RV_OK) break;
    snprintf(path, sizeof path, "%s/synth_%06d.jpg", img_dir, i);
    st = rv_image_write(path, &s.image, ctx);
    if (st == RV_OK && o->task == RV_SYNTH_SEG) {
      snprintf(path, sizeof path, "%s/synth_%06d.png", ann_dir, i);
      st = rv_image_write(path, &s.label, ctx);
    } else if (st == RV_OK) {
      cJSON *im = cJSON_CreateObject();
      char name[64];
      snprintf(name, sizeof name, "synth_%06d.jpg", i);
      cJSON_AddNumberToObject(im, "id", i + 1);
      cJSON_AddStringToObject(im, "file_name", name);
      cJSON_AddNumberToObject(im, "width", o->width);
      cJSON_AddNumberToObject(im, "height", o->height);
      cJSON_AddItemToArray(images, im);
      st = coco_annotations(anns, &s, i + 1, &next_id, ctx);
    }
    rv_synth_sample_free(&s);
  }
  if (st == RV_OK && root) {
    char *txt = cJSON_PrintUnformatted(root);
    if (!txt) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    snprintf(path, sizeof path, "%s/instances.json", ann_dir);
    if (st == RV_OK) st = write_text(path, txt, ctx);
    free(txt);
  }
  cJSON_Delete(root);
  rv_name_list_free(&g.photos);
  return st;
}
