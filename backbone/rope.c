/* 2-D rotary position embedding of RAVLT (RoPE + theta_shift in the official RALA.py).
 * Tables are separable: row angles for the first half of a head's channels, column angles
 * for the second half. */
#include "backbone/attention.h"
#include "kernels/vmath.h"

#include <math.h>

rv_status rv_rope_init(rv_rope *r, rv_arena *arena, const float *angle, int d2, int h, int w) {
  RV_ASSERT(r && angle && d2 > 0 && h > 0 && w > 0);
  float *th = rv_arena_floats(arena, (size_t)2 * h * d2);
  float *tw = rv_arena_floats(arena, (size_t)4 * w * d2);
  if (!th || !tw) return RV_ERR_NOMEM;
  float *sh = th, *ch = th + (size_t)h * d2, *sw = tw, *cw = tw + (size_t)w * d2;
  float *swt = tw + (size_t)2 * w * d2, *cwt = tw + (size_t)3 * w * d2;
  for (int y = 0; y < h; y++)
    for (int j = 0; j < d2; j++) {
      double a = (double)y * (double)angle[j];
      sh[(size_t)y * d2 + j] = (float)sin(a);
      ch[(size_t)y * d2 + j] = (float)cos(a);
    }
  for (int x = 0; x < w; x++)
    for (int j = 0; j < d2; j++) {
      double a = (double)x * (double)angle[j];
      sw[(size_t)x * d2 + j] = (float)sin(a);
      cw[(size_t)x * d2 + j] = (float)cos(a);
      swt[(size_t)j * w + x] = sw[(size_t)x * d2 + j];
      cwt[(size_t)j * w + x] = cw[(size_t)x * d2 + j];
    }
  r->sin_h = sh; r->cos_h = ch; r->sin_w = sw; r->cos_w = cw;
  r->sin_wt = swt; r->cos_wt = cwt;
  r->d2 = d2; r->h = h; r->w = w;
  return RV_OK;
}

/* One run of tokens along x: coefficients by x (ca, sa, cb, sb vectors) or, with step 0,
 * the same for the whole run (the row's angle); then times z when z is not NULL. */
static inline void rot_run(float *restrict pa, float *restrict pb, const float *restrict ca,
                           const float *restrict sa, const float *restrict cb,
                           const float *restrict sb, int step, const float *restrict z,
                           int run) {
  if (step == 0) {
    const float c0 = *ca, s0 = *sa, c1 = *cb, s1 = *sb;
    if (z)
      for (int x = 0; x < run; x++) {
        const float xa = pa[x], xb = pb[x];
        const float ya = xa * c0 - xb * s0, yb = xb * c1 + xa * s1;
        pa[x] = ya * z[x];
        pb[x] = yb * z[x];
      }
    else
      for (int x = 0; x < run; x++) {
        const float xa = pa[x], xb = pb[x];
        pa[x] = xa * c0 - xb * s0;
        pb[x] = xb * c1 + xa * s1;
      }
  } else if (z) {
    for (int x = 0; x < run; x++) {
      const float xa = pa[x], xb = pb[x];
      const float ya = xa * ca[x] - xb * sa[x], yb = xb * cb[x] + xa * sb[x];
      pa[x] = ya * z[x];
      pb[x] = yb * z[x];
    }
  } else {
    for (int x = 0; x < run; x++) {
      const float xa = pa[x], xb = pb[x];
      pa[x] = xa * ca[x] - xb * sa[x];
      pb[x] = xb * cb[x] + xa * sb[x];
    }
  }
}

/* Channel pair (j, j+1) of one head, tokens [l0, l0 + m), in runs along x within one row
 * y. For pairs in the first half the angle depends on the row y only (constant along the
 * run); in the second half on the column x only (the transposed tables, contiguous along
 * x). */
RV_CLONES4 static void pair_range(float *a, float *b, int j, const rv_rope *r, int l0, int m,
                                  const float *z) {
  const int w = r->w, d2 = r->d2, end = l0 + m;
  for (int l = l0; l < end;) {
    const int y = l / w, x0 = l - y * w, run = w - x0 < end - l ? w - x0 : end - l;
    float *pa = a + (l - l0), *pb = b + (l - l0);
    const float *zr = z ? z + (l - l0) : NULL;
    if (j < d2) {
      const size_t o = (size_t)y * d2 + j;
      rot_run(pa, pb, r->cos_h + o, r->sin_h + o, r->cos_h + o + 1, r->sin_h + o + 1, 0, zr,
              run);
    } else {
      const size_t o = (size_t)(j - d2) * w + x0;
      rot_run(pa, pb, r->cos_wt + o, r->sin_wt + o, r->cos_wt + o + w, r->sin_wt + o + w, 1,
              zr, run);
    }
    l += run;
  }
}

/* Not cloned itself: clang's clones are only callable from their own file. */
void rv_rope_pair_range_f32(float *a, float *b, int j, const rv_rope *r, int l0, int m,
                            const float *z) {
  pair_range(a, b, j, r, l0, m, z);
}

static void rope_pair(float *a, float *b, int j, const rv_rope *r) {
  pair_range(a, b, j, r, 0, r->h * r->w, NULL);
}

void rv_rope_apply_f32(float *x, int ld, const rv_rope *r) {
  const int d = 2 * r->d2;
#pragma omp parallel for schedule(static) if ((size_t)d * r->h * r->w >= 32768)
  for (int i = 0; i < d; i += 2) rope_pair(x + (size_t)i * ld, x + (size_t)(i + 1) * ld, i, r);
}

void rv_rope_apply_rows_f32(float *x, int ld, int rows, const rv_rope *r) {
  const int d = 2 * r->d2;
  RV_ASSERT(rows % d == 0);
#pragma omp parallel for schedule(static) if ((size_t)rows * r->h * r->w >= 32768)
  for (int i = 0; i < rows; i += 2)
    rope_pair(x + (size_t)i * ld, x + (size_t)(i + 1) * ld, i % d, r);
}

void rv_rope_apply_naive_f32(float *x, int ld, const rv_rope *r) {
  const int d = 2 * r->d2, n = r->h * r->w;
  for (int l = 0; l < n; l++) {
    const int y = l / r->w, xx = l % r->w;
    for (int i = 0; i < d; i += 2) {
      double s[2], c[2];
      for (int t = 0; t < 2; t++) {
        int j = i + t;
        if (j < r->d2) { s[t] = r->sin_h[(size_t)y * r->d2 + j]; c[t] = r->cos_h[(size_t)y * r->d2 + j]; }
        else { s[t] = r->sin_w[(size_t)xx * r->d2 + j - r->d2]; c[t] = r->cos_w[(size_t)xx * r->d2 + j - r->d2]; }
      }
      double a = x[(size_t)i * ld + l], b = x[(size_t)(i + 1) * ld + l];
      x[(size_t)i * ld + l] = (float)(a * c[0] - b * s[0]);
      x[(size_t)(i + 1) * ld + l] = (float)(b * c[1] + a * s[1]);
    }
  }
}
