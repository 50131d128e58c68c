/* RoIAlign (mmcv 1.7 CPU kernel semantics: avg pooling, aligned, adaptive sampling) and the
 * SingleRoIExtractor level mapping of mmdet 2.11. */
#include "heads/det.h"
#include "kernels/vmath.h"

#include <math.h>
#include <omp.h>
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

/* One roi on a channels-last map f [h, w, c]: out [c, oh, ow] (channel stride oh ow), each
 * bin the mean of its gh x gw samples, summed per channel in the sample order of mmcv's
 * kernel (rows iy, then columns ix), 4 taps each; acc: c floats of scratch. */
RV_CLONES static void roi_one(float *out, const float *f, int c, int h, int w, const float *roi,
                              float spatial_scale, int oh, int ow, int sampling_ratio,
                              int aligned, float *restrict acc) {
  roi_geom g = geom(roi, spatial_scale, oh, ow, sampling_ratio, aligned);
  int cnt = g.gw * g.gh;
  float inv = 1.0f / (float)(cnt > 1 ? cnt : 1);
  const size_t row = (size_t)w * c, plane = (size_t)oh * ow;
  for (int py = 0; py < oh; py++)
    for (int px = 0; px < ow; px++) {
      for (int ch = 0; ch < c; ch++) acc[ch] = 0.0f;
      for (int iy = 0; iy < g.gh; iy++) {
        const tap a = make_tap(g.sy + py * g.bh + (iy + 0.5) * g.bh / g.gh, h);
        if (a.wl == 0.0f && a.wh == 0.0f) continue;
        const float *rl = f + (size_t)a.lo * row, *rh = f + (size_t)a.hi * row;
        for (int ix = 0; ix < g.gw; ix++) {
          const tap b = make_tap(g.sx + px * g.bw + (ix + 0.5) * g.bw / g.gw, w);
          const float *restrict p00 = rl + (size_t)b.lo * c, *restrict p01 = rl + (size_t)b.hi * c;
          const float *restrict p10 = rh + (size_t)b.lo * c, *restrict p11 = rh + (size_t)b.hi * c;
          const float awl = a.wl, awh = a.wh, bwl = b.wl, bwh = b.wh;
          for (int ch = 0; ch < c; ch++)
            acc[ch] += awl * (bwl * p00[ch] + bwh * p01[ch]) + awh * (bwl * p10[ch] + bwh * p11[ch]);
        }
      }
      float *o = out + (size_t)py * ow + px;
      for (int ch = 0; ch < c; ch++) o[(size_t)ch * plane] = acc[ch] * inv;
    }
}

rv_status rv_roi_align_f32(float *out, const float *feat_hwc, int c, int h, int w,
                           const float *rois, int n, const unsigned char *sel,
                           float spatial_scale, int oh, int ow, int sampling_ratio, int aligned,
                           rv_arena *scratch) {
  int nth = omp_get_max_threads();
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  float *acc = rv_arena_floats(scratch, (size_t)nth * (size_t)c);
  if (!acc) return RV_ERR_NOMEM;
#pragma omp parallel for schedule(dynamic, 4)
  for (int r = 0; r < n; r++) {
    if (sel && !sel[r]) continue;
    roi_one(out + (size_t)r * c * oh * ow, feat_hwc, c, h, w, rois + (size_t)r * 5, spatial_scale,
            oh, ow, sampling_ratio, aligned, acc + (size_t)omp_get_thread_num() * c);
  }
  rv_arena_release(scratch, mk);
  return RV_OK;
}

void rv_nchw_to_hwc_f32(float *dst, const float *src, int c, int h, int w) {
  const size_t hw = (size_t)h * w;
  enum { TB = 32 };
#pragma omp parallel for schedule(static) if ((size_t)c * hw >= 65536)
  for (long p0 = 0; p0 < (long)hw; p0 += TB)
    for (int c0 = 0; c0 < c; c0 += TB) {
      const size_t pe = (size_t)p0 + TB < hw ? (size_t)p0 + TB : hw;
      const int ce = c0 + TB < c ? c0 + TB : c;
      for (size_t p = (size_t)p0; p < pe; p++)
        for (int ch = c0; ch < ce; ch++) dst[p * c + ch] = src[(size_t)ch * hw + p];
    }
}

rv_status rv_roi_feats_prepare(rv_roi_feats *rf, const rv_tensor *feats, int num_levels,
                               int c, rv_arena *a, rv_ctx *ctx) {
  memset(rf, 0, sizeof *rf);
  if (num_levels < 1 || num_levels > RV_ROI_MAX_LEVELS)
    return rv_error(ctx, RV_ERR_ARG, "roi extractor: %d levels (1..%d allowed)", num_levels,
                    RV_ROI_MAX_LEVELS);
  rf->c = c;
  rf->num_levels = num_levels;
  for (int l = 0; l < num_levels; l++) {
    if (feats[l].c != c || feats[l].n != 1 || !feats[l].data)
      return rv_error(ctx, RV_ERR_SHAPE, "roi extractor: level %d has %d channels (batch %d), "
                      "the weights expect %d (batch 1)", l, feats[l].c, feats[l].n, c);
    float *d = rv_arena_floats(a, rv_tensor_numel(feats[l]));
    if (!d) return rv_error(ctx, RV_ERR_NOMEM, "roi extractor: out of memory (level %d)", l);
    rv_nchw_to_hwc_f32(d, feats[l].data, rf->c, feats[l].h, feats[l].w);
    rf->data[l] = d;
    rf->h[l] = feats[l].h;
    rf->w[l] = feats[l].w;
  }
  return RV_OK;
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

rv_status rv_roi_extract(float *out, const rv_roi_feats *rf, const int *strides,
                         const float *rois, int n, int s, rv_arena *scratch, rv_ctx *ctx) {
  if (n <= 0) return RV_OK;
  const int num_levels = rf->num_levels, c = rf->c;
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  int *lvl = rv_arena_alloc(scratch, (size_t)n * sizeof(int));
  unsigned char *sel = rv_arena_alloc(scratch, (size_t)n);
  if (!lvl || !sel) {
    rv_arena_release(scratch, mk);
    return rv_error(ctx, RV_ERR_NOMEM, "roi extractor: out of memory for %d rois", n);
  }
  rv_roi_map_levels(lvl, rois, n, num_levels, 56.0);
  rv_status st = RV_OK;
  for (int l = 0; l < num_levels && st == RV_OK; l++) {
    int any = 0;
    for (int r = 0; r < n; r++) {
      sel[r] = lvl[r] == l;
      any |= sel[r];
    }
    if (!any) continue;
    st = rv_roi_align_f32(out, rf->data[l], c, rf->h[l], rf->w[l], rois, n, sel,
                          1.0f / (float)strides[l], s, s, 0, 1, scratch);
    if (st != RV_OK) st = rv_error(ctx, st, "roi extractor: out of memory for %d rois", n);
  }
  rv_arena_release(scratch, mk);
  return st;
}
