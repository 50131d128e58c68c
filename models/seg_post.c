/* Banded separable bilinear resize of score planes, fused with argmax or softmax-accumulate.
 * See seg_post.h. */
#include "models/seg_post.h"

#include "kernels/ops.h"
#include "kernels/vmath.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Output rows per band: the horizontally resampled source rows of a band are kept in scratch. */
#define BAND 16

/* Taps: rv_bilinear_tap (kernels/ops.h), the same formula as the resize kernels. */
/* One bilinear stage h x w -> oh x ow over C planes. Source row r of plane c is at
 * x + c * plane_stride + (r - row0) * w (the source may itself be a band of rows). */
typedef struct {
  const float *x;
  size_t plane_stride;
  int row0;
  int C, h, w, oh, ow;
  float sh;
  rv_lin_tap *tw;       /* [ow] column taps */
  float *hbuf;   /* [C][max_rows][ow]: l0w * x[r][i0w] + l1w * x[r][i1w] for a band's rows */
  int max_rows;
  int hlo;       /* first source row held in hbuf */
  int hid;       /* w == ow: the horizontal pass is the identity, rows are read from x */
} stage;

static void stage_rows(const stage *s, int y0, int y1, int *lo, int *hi) {
  *lo = rv_bilinear_tap(s->sh, y0, s->h).i0;
  *hi = rv_bilinear_tap(s->sh, y1 - 1, s->h).i1; /* source positions grow with the output row */
}

/* Taps and the size of hbuf for bands of `band` output rows, or for max_rows given. */
static rv_status stage_init(stage *s, int C, int h, int w, int oh, int ow, int max_rows, int bufs,
                            rv_arena *a) {
  RV_ASSERT(C > 0 && h > 0 && w > 0 && oh > 0 && ow > 0);
  memset(s, 0, sizeof *s);
  s->C = C;
  s->h = h;
  s->w = w;
  s->oh = oh;
  s->ow = ow;
  s->sh = (float)h / (float)oh;
  s->max_rows = max_rows;
  s->hid = w == ow;
  const float sw = (float)w / (float)ow;
  size_t nbuf;
  if (rv_mul_size((size_t)C * (size_t)(s->hid ? 1 : max_rows), (size_t)ow, &nbuf)) return RV_ERR_NOMEM;
  s->tw = rv_arena_alloc(a, (size_t)ow * sizeof(rv_lin_tap));
  s->hbuf = bufs ? rv_arena_floats(a, nbuf) : NULL;
  if (!s->tw || (bufs && !s->hbuf)) return RV_ERR_NOMEM;
  for (int ox = 0; ox < ow; ox++) s->tw[ox] = rv_bilinear_tap(sw, ox, w);
  return RV_OK;
}

#define INLINE static inline __attribute__((always_inline))

/* The two passes' row expressions (every path below uses these, so they all round alike):
 * a source row resampled horizontally, hr[ox] = l0 xr[i0] + l1 xr[i1] ... */
INLINE void hrow(float *hr, const float *xr, const rv_lin_tap *tw, int ow) {
  for (int ox = 0; ox < ow; ox++) hr[ox] = tw[ox].l0 * xr[tw[ox].i0] + tw[ox].l1 * xr[tw[ox].i1];
}

/* ... and two such rows blended vertically, yr = l0 h0 + l1 h1 */
INLINE void vrow(float *yr, const float *h0, const float *h1, rv_lin_tap th, int n) {
  for (int ox = 0; ox < n; ox++) yr[ox] = th.l0 * h0[ox] + th.l1 * h1[ox];
}

/* The two rows output row oy of stage s blends: from the source (src, first row row0) when
 * the horizontal pass is the identity, else from the resampled rows hb (first row hlo). */
INLINE void rows_one(const stage *s, const float *src, int row0, const float *hb, int hlo,
                     rv_lin_tap th, const float **h0, const float **h1) {
  if (s->hid) {
    *h0 = src + (size_t)(th.i0 - row0) * (size_t)s->w;
    *h1 = src + (size_t)(th.i1 - row0) * (size_t)s->w;
  } else {
    *h0 = hb + (size_t)(th.i0 - hlo) * (size_t)s->ow;
    *h1 = hb + (size_t)(th.i1 - hlo) * (size_t)s->ow;
  }
}

/* Horizontal pass over source rows [lo, lo + nr) of every plane. */
static void hpass(stage *s, int lo, int nr) {
  RV_ASSERT(nr <= s->max_rows);
  s->hlo = lo;
  if (s->hid) return; /* l0 = 1, l1 = 0 at every column: rows_for reads the source */
  const long jobs = (long)s->C * nr;
  const int ow = s->ow;
#pragma omp parallel for schedule(static) if (jobs * ow >= 16384)
  for (long j = 0; j < jobs; j++) {
    const int c = (int)(j / nr), rr = (int)(j % nr);
    hrow(s->hbuf + ((size_t)c * s->max_rows + (size_t)rr) * (size_t)ow,
         s->x + (size_t)c * s->plane_stride + (size_t)(lo + rr - s->row0) * (size_t)s->w, s->tw,
         ow);
  }
}

/* The two horizontally resampled rows that output row oy blends, for plane c. */
static inline void rows_for(const stage *s, int c, rv_lin_tap th, const float **h0, const float **h1) {
  rows_one(s, s->x + (size_t)c * s->plane_stride, s->row0,
           s->hbuf + (size_t)c * s->max_rows * (size_t)s->ow, s->hlo, th, h0, h1);
}

/* Output rows [y0, y1) of stage s into y (plane stride ystride, row y0 at offset 0). */
static void blend_rows(const stage *s, float *y, size_t ystride, int y0, int y1) {
  const int nb = y1 - y0, ow = s->ow;
  const long jobs = (long)s->C * nb;
#pragma omp parallel for schedule(static) if (jobs * ow >= 16384)
  for (long j = 0; j < jobs; j++) {
    const int c = (int)(j / nb), oy = y0 + (int)(j % nb);
    const rv_lin_tap th = rv_bilinear_tap(s->sh, oy, s->h);
    const float *h0, *h1;
    rows_for(s, c, th, &h0, &h1);
    vrow(y + (size_t)c * ystride + (size_t)(oy - y0) * (size_t)ow, h0, h1, th, ow);
  }
}

/* A chain of one or two bilinear stages, evaluated band by band without materialising the
 * intermediate size: before consuming output rows [y0, y1), chain_band() leaves the final
 * stage's horizontally resampled rows in its hbuf. A stage whose output size equals its
 * input size is the identity (l0 = 1, l1 = 0) and is skipped. */
typedef struct {
  int two;          /* 1: x -> mid -> out */
  stage s1, s2;     /* s2 is the last stage; s1 feeds it when two */
  float *mid;       /* [C][mid_rows][mw]: rows of the intermediate image for one band */
  int mid_rows;
} chain;

static rv_status chain_init(chain *ch, const float *x, int bufs, int C, int h, int w, int mh,
                            int mw, int oh, int ow, rv_arena *a) {
  memset(ch, 0, sizeof *ch);
  if (mh == oh && mw == ow) mh = mw = 0;            /* second stage is the identity */
  if (mh > 0 && mh == h && mw == w) mh = mw = 0;     /* first stage is the identity */
  ch->two = mh > 0;
  const int sh = ch->two ? mh : h, sw = ch->two ? mw : w;
  /* rows of the last stage's source per band */
  stage probe;
  probe.sh = (float)sh / (float)oh;
  probe.h = sh;
  int max2 = 1, max1 = 1;
  const float s1h = ch->two ? (float)h / (float)mh : 0.0f;
  for (int y0 = 0; y0 < oh; y0 += BAND) {
    int lo, hi;
    stage_rows(&probe, y0, y0 + BAND < oh ? y0 + BAND : oh, &lo, &hi);
    if (hi - lo + 1 > max2) max2 = hi - lo + 1;
    if (ch->two) {
      int lo1 = rv_bilinear_tap(s1h, lo, h).i0, hi1 = rv_bilinear_tap(s1h, hi, h).i1;
      if (hi1 - lo1 + 1 > max1) max1 = hi1 - lo1 + 1;
    }
  }
  RV_TRY(stage_init(&ch->s2, C, sh, sw, oh, ow, max2, bufs, a));
  if (!ch->two) {
    ch->s2.x = x;
    ch->s2.plane_stride = (size_t)h * (size_t)w;
    ch->s2.row0 = 0;
    return RV_OK;
  }
  RV_TRY(stage_init(&ch->s1, C, h, w, mh, mw, max1, bufs, a));
  ch->s1.x = x;
  ch->s1.plane_stride = (size_t)h * (size_t)w;
  ch->mid_rows = max2;
  size_t n;
  if (bufs &&
      (rv_mul_size((size_t)C * (size_t)max2, (size_t)mw, &n) || !(ch->mid = rv_arena_floats(a, n))))
    return RV_ERR_NOMEM;
  ch->s2.x = ch->mid;
  ch->s2.plane_stride = (size_t)max2 * (size_t)mw;
  return RV_OK;
}

static void chain_band(chain *ch, int y0, int y1) {
  int lo, hi;
  stage_rows(&ch->s2, y0, y1, &lo, &hi);
  if (ch->two) {
    int lo1, hi1;
    stage_rows(&ch->s1, lo, hi + 1, &lo1, &hi1);
    hpass(&ch->s1, lo1, hi1 - lo1 + 1);
    blend_rows(&ch->s1, ch->mid, (size_t)ch->mid_rows * (size_t)ch->s1.ow, lo, hi + 1);
    ch->s2.row0 = lo;
  }
  hpass(&ch->s2, lo, hi - lo + 1);
}

rv_status rv_seg_resize_planes(float *y, const float *x, int num_planes, int h, int w, int oh,
                               int ow, rv_arena *scratch) {
  rv_arena_mark m = rv_arena_get_mark(scratch);
  chain ch;
  rv_status st = chain_init(&ch, x, 1, num_planes, h, w, 0, 0, oh, ow, scratch);
  for (int y0 = 0; y0 < oh && st == RV_OK; y0 += BAND) {
    const int y1 = y0 + BAND < oh ? y0 + BAND : oh;
    chain_band(&ch, y0, y1);
    blend_rows(&ch.s2, y + (size_t)y0 * ow, (size_t)oh * (size_t)ow, y0, y1);
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

/* ---- argmax band by band, class by class ----
 * rv_seg_resize2_argmax below: each thread takes whole bands of output rows and runs the
 * chain for one class at a time, so the class's resampled rows stay in its cache (the
 * multi-plane chain above holds every class's rows of a band: megabytes at 150 classes).
 * The same taps and row helpers (hrow, vrow) as chain_band / blend_rows: the same bits. */
typedef struct {
  float *h1;   /* [max1][mw]: stage 1's horizontal pass of one class */
  float *mid;  /* [mid_rows][mw]: stage 1's output rows = stage 2's source rows */
  float *h2;   /* [mid_rows][ow]: stage 2's horizontal pass */
  float *best; /* [BAND][ow] */
} class_bufs;

/* Source rows [lo, lo + nr) of one plane (src, first row row0) resampled horizontally into hb */
INLINE void hpass_one(const stage *s, const float *src, int row0, int lo, int nr, float *hb) {
  for (int rr = 0; rr < nr; rr++)
    hrow(hb + (size_t)rr * (size_t)s->ow, src + (size_t)(lo + rr - row0) * (size_t)s->w, s->tw,
         s->ow);
}

/* Class c's rows [lo, hi] of the last stage's source, horizontally resampled into b->h2
 * (or left in place: *src, *row0). */
INLINE void class_rows(const chain *ch, int c, int lo, int hi, class_bufs *b, const float **src,
                       int *row0) {
  const stage *s2 = &ch->s2;
  if (ch->two) {
    const stage *s1 = &ch->s1;
    const float *x1 = s1->x + (size_t)c * s1->plane_stride;
    int lo1, hi1;
    stage_rows(s1, lo, hi + 1, &lo1, &hi1);
    if (!s1->hid) hpass_one(s1, x1, 0, lo1, hi1 - lo1 + 1, b->h1);
    for (int oy = lo; oy <= hi; oy++) {
      const rv_lin_tap th = rv_bilinear_tap(s1->sh, oy, s1->h);
      const float *h0, *h1;
      rows_one(s1, x1, 0, b->h1, lo1, th, &h0, &h1);
      vrow(b->mid + (size_t)(oy - lo) * (size_t)s1->ow, h0, h1, th, s1->ow);
    }
    *src = b->mid;
    *row0 = lo;
  } else {
    *src = s2->x + (size_t)c * s2->plane_stride;
    *row0 = 0;
  }
  if (!s2->hid) hpass_one(s2, *src, *row0, lo, hi - lo + 1, b->h2);
}

/* compiled for AVX-512, AVX2 and the baseline (kernels/vmath.h: -std=c11 keeps a * b + c as
 * two roundings in every clone, so the bits do not depend on the CPU) */
RV_CLONES4 static void argmax_band(const chain *ch, int num_classes, int y0, int y1,
                                   class_bufs *b, int32_t *labels) {
  const stage *s = &ch->s2;
  const int ow = s->ow;
  int lo, hi;
  stage_rows(s, y0, y1, &lo, &hi);
  for (int c = 0; c < num_classes; c++) {
    const float *src;
    int row0;
    class_rows(ch, c, lo, hi, b, &src, &row0);
    for (int oy = y0; oy < y1; oy++) {
      const rv_lin_tap th = rv_bilinear_tap(s->sh, oy, s->h);
      const float *h0, *h1;
      rows_one(s, src, row0, b->h2, lo, th, &h0, &h1);
      float *bb = b->best + (size_t)(oy - y0) * (size_t)ow;
      int32_t *lab = labels + (size_t)oy * (size_t)ow;
      if (c == 0) {
        vrow(bb, h0, h1, th, ow);
        memset(lab, 0, (size_t)ow * sizeof *lab);
        continue;
      }
      for (int ox = 0; ox < ow; ox++) {
        const float v = th.l0 * h0[ox] + th.l1 * h1[ox];
        const int gt = v > bb[ox];
        lab[ox] = gt ? c : lab[ox];
        bb[ox] = gt ? v : bb[ox];
      }
    }
  }
}

rv_status rv_seg_resize2_argmax(int32_t *labels, const float *x, int num_classes, int h, int w,
                                int mh, int mw, int oh, int ow, rv_arena *scratch) {
  rv_arena_mark m = rv_arena_get_mark(scratch);
  chain ch;
  rv_status st = chain_init(&ch, x, 0, num_classes, h, w, mh, mw, oh, ow, scratch);
  const int nbands = (oh + BAND - 1) / BAND;
  const int nt = nbands > 1 && (long)oh * ow * num_classes >= 65536 ? max_threads() : 1;
  const size_t n1 = ch.two ? (size_t)ch.s1.max_rows * (size_t)ch.s1.ow : 0;
  const size_t nm = ch.two ? (size_t)ch.mid_rows * (size_t)ch.s1.ow : 0;
  const size_t n2 = (size_t)ch.s2.max_rows * (size_t)ow, nb = (size_t)BAND * (size_t)ow;
  const size_t per = n1 + nm + n2 + nb;
  float *tb = NULL;
  if (st == RV_OK) {
    size_t n;
    if (rv_mul_size(per, (size_t)nt, &n) || !(tb = rv_arena_floats(scratch, n))) st = RV_ERR_NOMEM;
  }
  if (st == RV_OK) {
    /* no num_threads(nt) clause: with LLVM's runtime a num_threads(1) region under a false
     * `if` left the count pushed for the next region, OpenBLAS's, which then waited for a
     * thread it never got (the clang build's test_seg_heads hung) */
#pragma omp parallel if (nt > 1)
    {
      float *t = tb + per * (size_t)thread_id();
      class_bufs b = {t, t + n1, t + n1 + nm, t + n1 + nm + n2};
#pragma omp for schedule(static)
      for (int k = 0; k < nbands; k++) {
        const int y0 = k * BAND, y1 = y0 + BAND < oh ? y0 + BAND : oh;
        argmax_band(&ch, num_classes, y0, y1, &b, labels);
      }
    }
  }
  rv_arena_release(scratch, m);
  return st;
}

rv_status rv_seg_resize_argmax(int32_t *labels, const float *x, int num_classes, int h, int w,
                               int oh, int ow, rv_arena *scratch) {
  return rv_seg_resize2_argmax(labels, x, num_classes, h, w, 0, 0, oh, ow, scratch);
}

rv_status rv_seg_resize2_softmax_add(float *acc, const float *x, int num_classes, int h, int w,
                                     int mh, int mw, int oh, int ow, int flip, rv_arena *scratch) {
  rv_arena_mark m = rv_arena_get_mark(scratch);
  chain ch;
  rv_status st = chain_init(&ch, x, 1, num_classes, h, w, mh, mw, oh, ow, scratch);
  const int nt = max_threads();
  const size_t per_thread = ((size_t)num_classes + 2) * (size_t)ow; /* e[C][ow], max, sum */
  float *tbuf = NULL;
  if (st == RV_OK) {
    size_t n;
    if (rv_mul_size(per_thread, (size_t)nt, &n) || !(tbuf = rv_arena_floats(scratch, n))) st = RV_ERR_NOMEM;
  }
  const size_t oplane = (size_t)oh * (size_t)ow;
  const stage *s = &ch.s2;
  for (int y0 = 0; y0 < oh && st == RV_OK; y0 += BAND) {
    const int y1 = y0 + BAND < oh ? y0 + BAND : oh;
    chain_band(&ch, y0, y1);
#pragma omp parallel for schedule(static) if ((long)(y1 - y0) * ow * num_classes >= 16384)
    for (int oy = y0; oy < y1; oy++) {
      const rv_lin_tap th = rv_bilinear_tap(s->sh, oy, s->h);
      float *e = tbuf + (size_t)thread_id() * per_thread;
      float *mx = e + (size_t)num_classes * ow, *sum = mx + ow;
      for (int c = 0; c < num_classes; c++) {
        const float *h0, *h1;
        rows_for(s, c, th, &h0, &h1);
        float *ec = e + (size_t)c * ow;
        vrow(ec, h0, h1, th, ow);
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

rv_status rv_seg_resize_softmax_add(float *acc, const float *x, int num_classes, int h, int w,
                                    int oh, int ow, int flip, rv_arena *scratch) {
  return rv_seg_resize2_softmax_add(acc, x, num_classes, h, w, 0, 0, oh, ow, flip, scratch);
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
