/* RoIAlign (mmcv 1.7 CPU kernel semantics: avg pooling, aligned, adaptive sampling) and the
 * SingleRoIExtractor level mapping of mmdet 2.11. */
#include "heads/det.h"

#include <math.h>
#include <string.h>

/* One sample coordinate along an axis of length `len`: indices and weights with mmcv's
 * border rules (zero outside [-1, len], clamp below 0, top row/col duplicated). */
typedef struct {
  int lo, hi;
  float wl, wh; /* weights of lo and hi (0 when the sample is outside) */
} tap;

static tap make_tap(double v, int len) {
  tap t = {0, 0, 0.0f, 0.0f};
  if (!(v >= -1.0 && v <= (double)len)) return t; /* outside, or NaN */
  if (v <= 0) v = 0;
  int lo = (int)v, hi;
  if (lo >= len - 1) {
    hi = lo = len - 1;
    v = (double)lo;
  } else {
    hi = lo + 1;
  }
  double l = v - lo;
  t.lo = lo;
  t.hi = hi;
  t.wh = (float)l;
  t.wl = (float)(1.0 - l);
  return t;
}

/* Geometry of one roi: start, bin size and samples per bin along each axis. */
typedef struct {
  double sx, sy, bw, bh;
  int gw, gh;
} roi_geom;

/* ceil(bin size) samples per bin; 0 for empty, negative or NaN sizes. Bins wider than
 * MAX_GRID samples (only for rois far larger than any feature map) are capped. */
#define MAX_GRID 4096
static int grid_count(double bin) {
  if (!(bin > 0)) return 0;
  double c = ceil(bin);
  return c > MAX_GRID ? MAX_GRID : (int)c;
}

static roi_geom geom(const float *roi, float spatial_scale, int oh, int ow, int sampling_ratio,
                     int aligned) {
  roi_geom g;
  double off = aligned ? 0.5 : 0.0;
  double x1 = (double)roi[1] * spatial_scale - off, y1 = (double)roi[2] * spatial_scale - off;
  double x2 = (double)roi[3] * spatial_scale - off, y2 = (double)roi[4] * spatial_scale - off;
  double rw = x2 - x1, rh = y2 - y1;
  if (!aligned) {
    if (rw < 1) rw = 1;
    if (rh < 1) rh = 1;
  }
  g.sx = x1;
  g.sy = y1;
  g.bw = rw / ow;
  g.bh = rh / oh;
  g.gw = sampling_ratio > 0 ? sampling_ratio : grid_count(rw / ow);
  g.gh = sampling_ratio > 0 ? sampling_ratio : grid_count(rh / oh);
  return g;
}

static void roi_one(float *out, const float *feat, int c, int h, int w, const float *roi,
                    float spatial_scale, int oh, int ow, int sampling_ratio, int aligned,
                    tap *ty, tap *tx) {
  roi_geom g = geom(roi, spatial_scale, oh, ow, sampling_ratio, aligned);
  int cnt = g.gw * g.gh;
  float inv = 1.0f / (float)(cnt > 1 ? cnt : 1);
  for (int p = 0; p < oh; p++)
    for (int i = 0; i < g.gh; i++)
      ty[p * g.gh + i] = make_tap(g.sy + p * g.bh + (i + 0.5) * g.bh / g.gh, h);
  for (int p = 0; p < ow; p++)
    for (int i = 0; i < g.gw; i++)
      tx[p * g.gw + i] = make_tap(g.sx + p * g.bw + (i + 0.5) * g.bw / g.gw, w);
  for (int ch = 0; ch < c; ch++) {
    const float *f = feat + (size_t)ch * h * w;
    float *o = out + (size_t)ch * oh * ow;
    for (int py = 0; py < oh; py++) {
      const tap *yy = ty + py * g.gh;
      for (int px = 0; px < ow; px++) {
        const tap *xx = tx + px * g.gw;
        float acc = 0.0f;
        for (int iy = 0; iy < g.gh; iy++) {
          const tap a = yy[iy];
          if (a.wl == 0.0f && a.wh == 0.0f) continue;
          const float *rl = f + (size_t)a.lo * w, *rh = f + (size_t)a.hi * w;
          for (int ix = 0; ix < g.gw; ix++) {
            const tap b = xx[ix];
            acc += a.wl * (b.wl * rl[b.lo] + b.wh * rl[b.hi]) +
                   a.wh * (b.wl * rh[b.lo] + b.wh * rh[b.hi]);
          }
        }
        o[py * ow + px] = acc * inv;
      }
    }
  }
}

/* taps per axis held on the stack: output size x samples per bin (7 x 64 or 14 x 32);
 * rois needing more (bins over 64 / 32 feature pixels) take the plain per-sample path */
#define MAX_TAPS 896

void rv_roi_align_f32(float *out, const float *feat, int c, int h, int w, const float *rois,
                      int n, const unsigned char *sel, float spatial_scale, int oh, int ow,
                      int sampling_ratio, int aligned) {
#pragma omp parallel for schedule(dynamic, 4)
  for (int r = 0; r < n; r++) {
    if (sel && !sel[r]) continue;
    const float *roi = rois + (size_t)r * 5;
    float *o = out + (size_t)r * c * oh * ow;
    roi_geom g = geom(roi, spatial_scale, oh, ow, sampling_ratio, aligned);
    if ((size_t)g.gh * oh > MAX_TAPS || (size_t)g.gw * ow > MAX_TAPS) {
      rv_roi_align_naive_f32(o, feat, c, h, w, roi, 1, spatial_scale, oh, ow, sampling_ratio,
                             aligned);
      continue;
    }
    tap ty[MAX_TAPS], tx[MAX_TAPS];
    roi_one(o, feat, c, h, w, roi, spatial_scale, oh, ow, sampling_ratio, aligned, ty, tx);
  }
}

/* mmcv bilinear_interpolate, literally */
static float bilinear(const float *f, int h, int w, double y, double x) {
  if (!(y >= -1.0 && y <= h && x >= -1.0 && x <= w)) return 0.0f;
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int yl = (int)y, xl = (int)x, yh, xh;
  if (yl >= h - 1) {
    yh = yl = h - 1;
    y = yl;
  } else {
    yh = yl + 1;
  }
  if (xl >= w - 1) {
    xh = xl = w - 1;
    x = xl;
  } else {
    xh = xl + 1;
  }
  double ly = y - yl, lx = x - xl, hy = 1 - ly, hx = 1 - lx;
  return (float)(hy * hx * f[yl * w + xl] + hy * lx * f[yl * w + xh] + ly * hx * f[yh * w + xl] +
                 ly * lx * f[yh * w + xh]);
}

void rv_roi_align_naive_f32(float *out, const float *feat, int c, int h, int w,
                            const float *rois, int n, float spatial_scale, int oh, int ow,
                            int sampling_ratio, int aligned) {
  for (int r = 0; r < n; r++) {
    roi_geom g = geom(rois + (size_t)r * 5, spatial_scale, oh, ow, sampling_ratio, aligned);
    int cnt = g.gw * g.gh;
    if (cnt < 1) cnt = 1;
    for (int ch = 0; ch < c; ch++)
      for (int py = 0; py < oh; py++)
        for (int px = 0; px < ow; px++) {
          double acc = 0;
          for (int iy = 0; iy < g.gh; iy++) {
            double y = g.sy + py * g.bh + (iy + 0.5) * g.bh / g.gh;
            for (int ix = 0; ix < g.gw; ix++) {
              double x = g.sx + px * g.bw + (ix + 0.5) * g.bw / g.gw;
              acc += bilinear(feat + (size_t)ch * h * w, h, w, y, x);
            }
          }
          out[(((size_t)r * c + ch) * oh + py) * ow + px] = (float)(acc / cnt);
        }
  }
}

void rv_roi_map_levels(int *lvl, const float *rois, int n, int num_levels, double finest_scale) {
  for (int r = 0; r < n; r++) {
    const float *b = rois + (size_t)r * 5;
    double scale = sqrt(((double)b[3] - b[1]) * ((double)b[4] - b[2]));
    double l = floor(log2(scale / finest_scale + 1e-6));
    if (!(l >= 0)) l = 0; /* also NaN (degenerate) -> level 0 */
    if (l > num_levels - 1) l = num_levels - 1;
    lvl[r] = (int)l;
  }
}

rv_status rv_roi_extract(float *out, const rv_tensor *feats, const int *strides,
                         int num_levels, const float *rois, int n, int s, rv_arena *scratch,
                         rv_ctx *ctx) {
  if (n <= 0) return RV_OK;
  int c = feats[0].c;
  for (int l = 1; l < num_levels; l++)
    if (feats[l].c != c)
      return rv_error(ctx, RV_ERR_SHAPE, "roi extractor: level %d has %d channels, expected %d",
                      l, feats[l].c, c);
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  int *lvl = rv_arena_alloc(scratch, (size_t)n * sizeof(int));
  unsigned char *sel = rv_arena_alloc(scratch, (size_t)n);
  if (!lvl || !sel) {
    rv_arena_release(scratch, mk);
    return rv_error(ctx, RV_ERR_NOMEM, "roi extractor: out of memory for %d rois", n);
  }
  rv_roi_map_levels(lvl, rois, n, num_levels, 56.0);
  for (int l = 0; l < num_levels; l++) {
    int any = 0;
    for (int r = 0; r < n; r++) {
      sel[r] = lvl[r] == l;
      any |= sel[r];
    }
    if (!any) continue;
    rv_roi_align_f32(out, feats[l].data, c, feats[l].h, feats[l].w, rois, n, sel,
                     1.0f / (float)strides[l], s, s, 0, 1);
  }
  rv_arena_release(scratch, mk);
  return RV_OK;
}
