/* Banded separable bilinear resize of score planes, fused with argmax or softmax-accumulate.
 * See seg_post.h. */
#include "models/seg_post.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Output rows per band: the horizontally resampled input rows of a band are kept in scratch. */
#define BAND 32

/* Bilinear tap, the formula of core/resize.c (PyTorch CPU upsample_bilinear2d, float scale). */
typedef struct {
  int i0, i1;
  float l0, l1;
} tap;

static tap make_tap(float scale, int dst, int in) {
  float src = (float)((double)scale * ((double)dst + 0.5) - 0.5);
  if (src < 0.0f) src = 0.0f;
  tap t;
  t.i0 = (int)src;
  if (t.i0 > in - 1) t.i0 = in - 1;
  t.i1 = t.i0 + (t.i0 < in - 1 ? 1 : 0);
  t.l1 = src - (float)t.i0;
  if (t.l1 > 1.0f) t.l1 = 1.0f;
  t.l0 = 1.0f - t.l1;
  return t;
}

typedef struct {
  const float *x;
  int C, h, w, oh, ow;
  float sh;
  tap *tw;       /* [ow] column taps */
  float *hbuf;   /* [C][max_rows][ow]: l0w * x[r][i0w] + l1w * x[r][i1w] for a band's rows */
  int max_rows;
} resampler;

static void band_rows(const resampler *r, int y0, int y1, int *lo, int *hi) {
  *lo = make_tap(r->sh, y0, r->h).i0;
  *hi = make_tap(r->sh, y1 - 1, r->h).i1; /* source positions grow with the output row */
}

static rv_status resampler_init(resampler *r, const float *x, int C, int h, int w, int oh, int ow,
                                rv_arena *a) {
  RV_ASSERT(x && C > 0 && h > 0 && w > 0 && oh > 0 && ow > 0);
  r->x = x;
  r->C = C;
  r->h = h;
  r->w = w;
  r->oh = oh;
  r->ow = ow;
  r->sh = (float)h / (float)oh;
  const float sw = (float)w / (float)ow;
  r->max_rows = 1;
  for (int y0 = 0; y0 < oh; y0 += BAND) {
    int lo, hi;
    band_rows(r, y0, y0 + BAND < oh ? y0 + BAND : oh, &lo, &hi);
    if (hi - lo + 1 > r->max_rows) r->max_rows = hi - lo + 1;
  }
  size_t nbuf;
  if (rv_mul_size((size_t)C * (size_t)r->max_rows, (size_t)ow, &nbuf)) return RV_ERR_NOMEM;
  r->tw = rv_arena_alloc(a, (size_t)ow * sizeof(tap));
  r->hbuf = rv_arena_floats(a, nbuf);
  if (!r->tw || !r->hbuf) return RV_ERR_NOMEM;
  for (int ox = 0; ox < ow; ox++) r->tw[ox] = make_tap(sw, ox, w);
  return RV_OK;
}

/* Horizontal pass over input rows [lo, lo + nr) of every plane. */
static void hpass(const resampler *r, int lo, int nr) {
  const long jobs = (long)r->C * nr;
  const int ow = r->ow;
#pragma omp parallel for schedule(static) if (jobs * ow >= 16384)
  for (long j = 0; j < jobs; j++) {
    const int c = (int)(j / nr), rr = (int)(j % nr);
    const float *xr = r->x + ((size_t)c * r->h + (size_t)(lo + rr)) * (size_t)r->w;
    float *hr = r->hbuf + ((size_t)c * r->max_rows + (size_t)rr) * (size_t)ow;
    const tap *tw = r->tw;
    for (int ox = 0; ox < ow; ox++) hr[ox] = tw[ox].l0 * xr[tw[ox].i0] + tw[ox].l1 * xr[tw[ox].i1];
  }
}

/* The two horizontally resampled rows that output row oy blends, for plane c. */
static inline void rows_for(const resampler *r, int c, int lo, tap th, const float **h0, const float **h1) {
  const float *base = r->hbuf + (size_t)c * r->max_rows * (size_t)r->ow;
  *h0 = base + (size_t)(th.i0 - lo) * (size_t)r->ow;
  *h1 = base + (size_t)(th.i1 - lo) * (size_t)r->ow;
}

rv_status rv_seg_resize_planes(float *y, const float *x, int num_planes, int h, int w, int oh,
                               int ow, rv_arena *scratch) {
  rv_arena_mark m = rv_arena_get_mark(scratch);
  resampler r;
  rv_status st = resampler_init(&r, x, num_planes, h, w, oh, ow, scratch);
  for (int y0 = 0; y0 < oh && st == RV_OK; y0 += BAND) {
    const int y1 = y0 + BAND < oh ? y0 + BAND : oh, nb = y1 - y0;
    int lo, hi;
    band_rows(&r, y0, y1, &lo, &hi);
    hpass(&r, lo, hi - lo + 1);
    const long jobs = (long)num_planes * nb;
#pragma omp parallel for schedule(static) if (jobs * ow >= 16384)
    for (long j = 0; j < jobs; j++) {
      const int c = (int)(j / nb), oy = y0 + (int)(j % nb);
      const tap th = make_tap(r.sh, oy, h);
      const float *h0, *h1;
      rows_for(&r, c, lo, th, &h0, &h1);
      float *yr = y + ((size_t)c * oh + (size_t)oy) * (size_t)ow;
      for (int ox = 0; ox < ow; ox++) yr[ox] = th.l0 * h0[ox] + th.l1 * h1[ox];
    }
  }
  rv_arena_release(scratch, m);
  return st;
}

static int max_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

static int thread_id(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

rv_status rv_seg_resize_argmax(int32_t *labels, const float *x, int num_classes, int h, int w,
                               int oh, int ow, rv_arena *scratch) {
  rv_arena_mark m = rv_arena_get_mark(scratch);
  resampler r;
  rv_status st = resampler_init(&r, x, num_classes, h, w, oh, ow, scratch);
  float *best = st == RV_OK ? rv_arena_floats(scratch, (size_t)BAND * (size_t)ow) : NULL;
  if (st == RV_OK && !best) st = RV_ERR_NOMEM;
  for (int y0 = 0; y0 < oh && st == RV_OK; y0 += BAND) {
    const int y1 = y0 + BAND < oh ? y0 + BAND : oh;
    int lo, hi;
    band_rows(&r, y0, y1, &lo, &hi);
    hpass(&r, lo, hi - lo + 1);
#pragma omp parallel for schedule(static) if ((long)(y1 - y0) * ow * num_classes >= 16384)
    for (int oy = y0; oy < y1; oy++) {
      const tap th = make_tap(r.sh, oy, h);
      float *b = best + (size_t)(oy - y0) * (size_t)ow;
      int32_t *lab = labels + (size_t)oy * (size_t)ow;
      for (int c = 0; c < num_classes; c++) {
        const float *h0, *h1;
        rows_for(&r, c, lo, th, &h0, &h1);
        if (c == 0) {
          for (int ox = 0; ox < ow; ox++) {
            b[ox] = th.l0 * h0[ox] + th.l1 * h1[ox];
            lab[ox] = 0;
          }
          continue;
        }
        for (int ox = 0; ox < ow; ox++) {
          float v = th.l0 * h0[ox] + th.l1 * h1[ox];
          if (v > b[ox]) {
            b[ox] = v;
            lab[ox] = c;
          }
        }
      }
    }
  }
  rv_arena_release(scratch, m);
  return st;
}

rv_status rv_seg_resize_softmax_add(float *acc, const float *x, int num_classes, int h, int w,
                                    int oh, int ow, int flip, rv_arena *scratch) {
  rv_arena_mark m = rv_arena_get_mark(scratch);
  resampler r;
  rv_status st = resampler_init(&r, x, num_classes, h, w, oh, ow, scratch);
  const int nt = max_threads();
  const size_t per_thread = ((size_t)num_classes + 2) * (size_t)ow; /* e[C][ow], max, sum */
  float *tbuf = NULL;
  if (st == RV_OK) {
    size_t n;
    if (rv_mul_size(per_thread, (size_t)nt, &n) || !(tbuf = rv_arena_floats(scratch, n))) st = RV_ERR_NOMEM;
  }
  const size_t oplane = (size_t)oh * (size_t)ow;
  for (int y0 = 0; y0 < oh && st == RV_OK; y0 += BAND) {
    const int y1 = y0 + BAND < oh ? y0 + BAND : oh;
    int lo, hi;
    band_rows(&r, y0, y1, &lo, &hi);
    hpass(&r, lo, hi - lo + 1);
#pragma omp parallel for schedule(static) if ((long)(y1 - y0) * ow * num_classes >= 16384)
    for (int oy = y0; oy < y1; oy++) {
      const tap th = make_tap(r.sh, oy, h);
      float *e = tbuf + (size_t)thread_id() * per_thread;
      float *mx = e + (size_t)num_classes * ow, *sum = mx + ow;
      for (int c = 0; c < num_classes; c++) {
        const float *h0, *h1;
        rows_for(&r, c, lo, th, &h0, &h1);
        float *ec = e + (size_t)c * ow;
        for (int ox = 0; ox < ow; ox++) ec[ox] = th.l0 * h0[ox] + th.l1 * h1[ox];
        if (c == 0) memcpy(mx, ec, (size_t)ow * sizeof(float));
        else
          for (int ox = 0; ox < ow; ox++) mx[ox] = ec[ox] > mx[ox] ? ec[ox] : mx[ox];
      }
      memset(sum, 0, (size_t)ow * sizeof(float));
      for (int c = 0; c < num_classes; c++) {
        float *ec = e + (size_t)c * ow;
        for (int ox = 0; ox < ow; ox++) {
          ec[ox] = expf(ec[ox] - mx[ox]);
          sum[ox] += ec[ox];
        }
      }
      for (int c = 0; c < num_classes; c++) {
        const float *ec = e + (size_t)c * ow;
        float *row = acc + (size_t)c * oplane + (size_t)oy * ow;
        if (flip)
          for (int ox = 0; ox < ow; ox++) row[ow - 1 - ox] += ec[ox] / sum[ox];
        else
          for (int ox = 0; ox < ow; ox++) row[ox] += ec[ox] / sum[ox];
      }
    }
  }
  rv_arena_release(scratch, m);
  return st;
}

void rv_seg_argmax(int32_t *labels, const float *x, int num_classes, size_t hw) {
#pragma omp parallel for schedule(static) if (hw > 65536)
  for (size_t i = 0; i < hw; i++) {
    float best = x[i];
    int32_t arg = 0;
    for (int c = 1; c < num_classes; c++) {
      float v = x[(size_t)c * hw + i];
      if (v > best) {
        best = v;
        arg = c;
      }
    }
    labels[i] = arg;
  }
}

void rv_seg_top2_margin(float *margin, const float *x, int num_classes, size_t hw, int is_prob) {
#pragma omp parallel for schedule(static) if (hw > 65536)
  for (size_t i = 0; i < hw; i++) {
    double m1 = -INFINITY, m2 = -INFINITY, sum = 0;
    for (int c = 0; c < num_classes; c++) {
      double v = x[(size_t)c * hw + i];
      if (v > m1) {
        m2 = m1;
        m1 = v;
      } else if (v > m2) {
        m2 = v;
      }
    }
    if (num_classes < 2) {
      margin[i] = 1.0f;
      continue;
    }
    if (is_prob) {
      margin[i] = (float)(m1 - m2);
      continue;
    }
    for (int c = 0; c < num_classes; c++) sum += exp((double)x[(size_t)c * hw + i] - m1);
    margin[i] = (float)((1.0 - exp(m2 - m1)) / sum);
  }
}
