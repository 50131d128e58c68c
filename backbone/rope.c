/* 2-D rotary position embedding of RAVLT (RoPE + theta_shift in the official RALA.py).
 * Tables are separable: row angles for the first half of a head's channels, column angles
 * for the second half. */
#include "backbone/attention.h"

#include <math.h>

rv_status rv_rope_init(rv_rope *r, rv_arena *arena, const float *angle, int d2, int h, int w) {
  RV_ASSERT(r && angle && d2 > 0 && h > 0 && w > 0);
  float *th = rv_arena_floats(arena, (size_t)2 * h * d2);
  float *tw = rv_arena_floats(arena, (size_t)2 * w * d2);
  if (!th || !tw) return RV_ERR_NOMEM;
  float *sh = th, *ch = th + (size_t)h * d2, *sw = tw, *cw = tw + (size_t)w * d2;
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
    }
  r->sin_h = sh; r->cos_h = ch; r->sin_w = sw; r->cos_w = cw;
  r->d2 = d2; r->h = h; r->w = w;
  return RV_OK;
}

/* Channel pair (2i, 2i+1) of one head: rows a and b of length N. For pairs in the first
 * half the angle depends on the row y only (constant along x); in the second half on the
 * column x only (a vector along x, the same for every y). */
static void rope_pair(float *a, float *b, int j, const rv_rope *r) {
  const int h = r->h, w = r->w, d2 = r->d2;
  if (j < d2) {
    for (int y = 0; y < h; y++) {
      const float ca = r->cos_h[(size_t)y * d2 + j], sa = r->sin_h[(size_t)y * d2 + j];
      const float cb = r->cos_h[(size_t)y * d2 + j + 1], sb = r->sin_h[(size_t)y * d2 + j + 1];
      float *pa = a + (size_t)y * w, *pb = b + (size_t)y * w;
      for (int x = 0; x < w; x++) {
        const float xa = pa[x], xb = pb[x];
        pa[x] = xa * ca - xb * sa;
        pb[x] = xb * cb + xa * sb;
      }
    }
  } else {
    const int jj = j - d2;
    for (int y = 0; y < h; y++) {
      float *pa = a + (size_t)y * w, *pb = b + (size_t)y * w;
      for (int x = 0; x < w; x++) {
        const float ca = r->cos_w[(size_t)x * d2 + jj], sa = r->sin_w[(size_t)x * d2 + jj];
        const float cb = r->cos_w[(size_t)x * d2 + jj + 1], sb = r->sin_w[(size_t)x * d2 + jj + 1];
        const float xa = pa[x], xb = pb[x];
        pa[x] = xa * ca - xb * sa;
        pb[x] = xb * cb + xa * sb;
      }
    }
  }
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
