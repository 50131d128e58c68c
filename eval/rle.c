/* RLE mask API with pycocotools semantics. Written from the behaviour of cocoapi's
 * common/maskApi.c; every rounding, clamp and quirk that changes a bit of output is kept
 * (see tests/fixtures/SEMANTICS.md, COCO quirks 12-15). */
#include "eval/rle.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF /* a*b+c must round twice, as in the reference build */
#endif

void rv_rle_free(rv_rle *r) {
  if (!r) return;
  if (!r->borrowed) free(r->cnts);
  r->cnts = NULL;
  r->m = 0;
  r->borrowed = 0;
}

static rv_status rle_set(rv_rle *r, uint32_t h, uint32_t w, const uint32_t *cnts, size_t m,
                         rv_ctx *ctx) {
  uint32_t *c = NULL;
  if (m) {
    c = malloc(m * sizeof *c);
    if (!c) return rv_error(ctx, RV_ERR_NOMEM, "rle: out of memory (%zu runs)", m);
    if (cnts) memcpy(c, cnts, m * sizeof *c);
  }
  r->h = h;
  r->w = w;
  r->m = m;
  r->cnts = c;
  r->borrowed = 0;
  return RV_OK;
}

rv_status rv_rle_copy(rv_rle *dst, const rv_rle *src, rv_ctx *ctx) {
  return rle_set(dst, src->h, src->w, src->cnts, src->m, ctx);
}

static rv_status encode_impl(rv_rle *r, const uint8_t *M, uint32_t h, uint32_t w, int rowmajor,
                             rv_ctx *ctx) {
  size_t a = (size_t)h * w;
  uint32_t *cnts = malloc((a + 1) * sizeof *cnts);
  if (!cnts) return rv_error(ctx, RV_ERR_NOMEM, "rle encode: out of memory (%ux%u)", h, w);
  size_t k = 0;
  uint32_t c = 0;
  uint8_t p = 0;
  for (uint32_t x = 0; x < w; x++)
    for (uint32_t y = 0; y < h; y++) {
      uint8_t v = (rowmajor ? M[(size_t)y * w + x] : M[(size_t)x * h + y]) != 0;
      if (v != p) {
        cnts[k++] = c;
        c = 0;
        p = v;
      }
      c++;
    }
  cnts[k++] = c;
  rv_status st = rle_set(r, h, w, cnts, k, ctx);
  free(cnts);
  return st;
}

rv_status rv_rle_encode(rv_rle *r, const uint8_t *M, uint32_t h, uint32_t w, rv_ctx *ctx) {
  return encode_impl(r, M, h, w, 0, ctx);
}

typedef struct {
  uint32_t *cnts;
  size_t k;
  uint64_t c;
  uint8_t p;
} run_writer;

/* len pixels of value v: a new run when v differs from the current one */
static inline void run_push(run_writer *rw, uint8_t v, uint64_t len) {
  if (!len) return;
  if (v != rw->p) {
    rw->cnts[rw->k++] = (uint32_t)rw->c;
    rw->c = 0;
    rw->p = v;
  }
  rw->c += len;
}

rv_status rv_rle_encode_window(rv_rle *r, const uint8_t *M, uint32_t mh, uint32_t mw, uint32_t y0,
                               uint32_t x0, uint32_t h, uint32_t w, rv_ctx *ctx) {
  if ((uint64_t)y0 + mh > h || (uint64_t)x0 + mw > w || (uint64_t)h * w > UINT32_MAX || !h || !w)
    return rv_error(ctx, RV_ERR_ARG, "rle: a %ux%u window at (%u, %u) does not fit a %ux%u mask", mw, mh, x0, y0, w, h);
  run_writer rw = {malloc(((size_t)mh + 2) * mw * sizeof(uint32_t) + 3 * sizeof(uint32_t)), 0, 0, 0};
  if (!rw.cnts) return rv_error(ctx, RV_ERR_NOMEM, "rle encode: out of memory (%ux%u)", mh, mw);
  run_push(&rw, 0, (uint64_t)x0 * h);
  for (uint32_t x = 0; x < mw; x++) {
    run_push(&rw, 0, y0);
    for (uint32_t y = 0; y < mh; y++) run_push(&rw, M[(size_t)y * mw + x] != 0, 1);
    run_push(&rw, 0, h - y0 - mh);
  }
  run_push(&rw, 0, (uint64_t)(w - x0 - mw) * h);
  rw.cnts[rw.k++] = (uint32_t)rw.c;
  rv_status st = rle_set(r, h, w, rw.cnts, rw.k, ctx);
  free(rw.cnts);
  return st;
}

rv_status rv_rle_encode_rowmajor(rv_rle *r, const uint8_t *M, uint32_t h, uint32_t w, rv_ctx *ctx) {
  return encode_impl(r, M, h, w, 1, ctx);
}

void rv_rle_decode(const rv_rle *r, uint8_t *M) {
  uint8_t v = 0;
  for (size_t j = 0; j < r->m; j++) {
    memset(M, v, r->cnts[j]);
    M += r->cnts[j];
    v = !v;
  }
}

char *rv_rle_to_string(const rv_rle *r) {
  /* at most 7 chars per count (32 bits + sign in 5-bit groups) */
  char *s = malloc(r->m * 8 + 1);
  if (!s) return NULL;
  size_t p = 0;
  for (size_t i = 0; i < r->m; i++) {
    int64_t x = (int64_t)r->cnts[i];
    if (i > 2) x -= (int64_t)r->cnts[i - 2];
    int more = 1;
    while (more) {
      int c = (int)(x & 0x1f);
      x >>= 5; /* arithmetic shift of a negative value, as in the reference (long) */
      more = (c & 0x10) ? x != -1 : x != 0;
      if (more) c |= 0x20;
      s[p++] = (char)(c + 48);
    }
  }
  s[p] = 0;
  return s;
}

static rv_status check_sum(const uint32_t *cnts, size_t m, uint32_t h, uint32_t w, const char *what,
                           rv_ctx *ctx) {
  uint64_t sum = 0;
  for (size_t i = 0; i < m; i++) sum += cnts[i];
  if (sum != (uint64_t)h * w)
    return rv_error(ctx, RV_ERR_FORMAT, "%s: RLE counts sum to %llu, expected h*w = %u*%u = %llu",
                    what ? what : "rle", (unsigned long long)sum, h, w,
                    (unsigned long long)((uint64_t)h * w));
  return RV_OK;
}

/* The careful decoder: every check at its character, so the first problem in the string is
 * the one reported. */
static rv_status decode_checked(uint32_t *cnts, size_t *m_out, const char *s, size_t len, const char *what,
                                rv_ctx *ctx) {
  size_t m = 0, p = 0;
  while (p < len) {
    int64_t x = 0;
    int k = 0, more = 1;
    while (more) {
      if (p >= len)
        return rv_error(ctx, RV_ERR_FORMAT, "%s: corrupt RLE string (truncated at character %zu)", what, p);
      int c = (unsigned char)s[p] - 48;
      if (c < 0 || c > 63)
        return rv_error(ctx, RV_ERR_FORMAT, "%s: corrupt RLE string (character '%c' at %zu)", what, s[p], p);
      if (k >= 8) return rv_error(ctx, RV_ERR_FORMAT, "%s: corrupt RLE string (count too long at %zu)", what, p);
      x |= (int64_t)(c & 0x1f) << (5 * k);
      more = c & 0x20;
      p++;
      k++;
      if (!more && (c & 0x10)) x |= -((int64_t)1 << (5 * k));
    }
    if (m > 2) x += (int64_t)cnts[m - 2];
    if (x < 0 || x > (int64_t)UINT32_MAX)
      return rv_error(ctx, RV_ERR_FORMAT, "%s: corrupt RLE string (count %zu decodes to %lld)", what, m,
                      (long long)x);
    cnts[m++] = (uint32_t)x;
  }
  *m_out = m;
  return RV_OK;
}

size_t rv_rle_string_max_counts(const char *s, size_t len) {
  size_t m = 0; /* one count ends at each character without the continuation bit */
  for (size_t p = 0; p < len; p++) m += !(((unsigned)(unsigned char)s[p] - 48u) & 0x20);
  return m;
}

static rv_status parse_into(rv_rle *r, uint32_t *cnts, const char *s, size_t len, uint32_t h, uint32_t w,
                            int sum_check, const char *what, rv_ctx *ctx) {
  if (!what) what = "rle";
  /* One pass that trusts the characters; any problem (a character outside '0'..'o', a count
   * over 8 characters or outside 0..2^32-1) sends the string to the careful decoder, which
   * reports the first one. With the last character ending a count (no continuation bit) no
   * count can run past the end, whatever the characters before it. */
  size_t m = 0, p = 0;
  int fast = 0;          /* decoded to the end without a problem */
  unsigned seen = 0;     /* OR of every character - 48: above 63 if one is outside '0'..'o' */
  int64_t prev2 = 0, prev1 = 0; /* cnts[m-2], cnts[m-1], kept in registers */
  if (len && !(((unsigned char)s[len - 1] - 48u) & 0x20)) {
    for (;;) {
      if (p == len) {
        fast = seen <= 63;
        break;
      }
      int64_t x = 0;
      int k = 0;
      unsigned c;
      do {
        c = (unsigned char)s[p++] - 48u;
        seen |= c;
        x |= (int64_t)(c & 0x1f) << (5 * k);
        k++;
      } while ((c & 0x20) && k < 8);
      if (c & 0x20) break; /* a ninth character */
      if (c & 0x10) x |= -((int64_t)1 << (5 * k));
      if (m > 2) x += prev2;
      if (x < 0 || x > (int64_t)UINT32_MAX) break;
      cnts[m++] = (uint32_t)x;
      prev2 = prev1;
      prev1 = x;
    }
  } else if (!len) {
    fast = 1;
  }
  rv_status st = fast ? RV_OK : decode_checked(cnts, &m, s, len, what, ctx);
  if (st == RV_OK && sum_check) st = check_sum(cnts, m, h, w, what, ctx);
  if (st != RV_OK) return st;
  r->h = h;
  r->w = w;
  r->m = m;
  r->cnts = m ? cnts : NULL;
  r->borrowed = 1;
  return RV_OK;
}

rv_status rv_rle_from_string_into(rv_rle *r, uint32_t *cnts, const char *s, size_t len, uint32_t h, uint32_t w,
                                  const char *what, rv_ctx *ctx) {
  return parse_into(r, cnts, s, len, h, w, 1, what, ctx);
}

rv_status rv_rle_from_string_any_into(rv_rle *r, uint32_t *cnts, const char *s, size_t len, uint32_t h, uint32_t w,
                                      const char *what, rv_ctx *ctx) {
  return parse_into(r, cnts, s, len, h, w, 0, what, ctx);
}

static rv_status parse_n(rv_rle *r, const char *s, size_t len, uint32_t h, uint32_t w, int sum_check,
                         const char *what, rv_ctx *ctx) {
  size_t m_max = rv_rle_string_max_counts(s, len);
  uint32_t *cnts = malloc((m_max ? m_max : 1) * sizeof *cnts);
  if (!cnts) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", what ? what : "rle");
  rv_rle t = {0};
  rv_status st = parse_into(&t, cnts, s, len, h, w, sum_check, what, ctx);
  if (st != RV_OK || !t.m) {
    free(cnts);
    t.cnts = NULL;
  }
  if (st == RV_OK) {
    t.borrowed = 0;
    *r = t;
  }
  return st;
}

rv_status rv_rle_from_string_n(rv_rle *r, const char *s, size_t len, uint32_t h, uint32_t w,
                               const char *what, rv_ctx *ctx) {
  return parse_n(r, s, len, h, w, 1, what, ctx);
}

rv_status rv_rle_from_string_any(rv_rle *r, const char *s, size_t len, uint32_t h, uint32_t w, const char *what,
                                 rv_ctx *ctx) {
  return parse_n(r, s, len, h, w, 0, what, ctx);
}

rv_status rv_rle_from_string(rv_rle *r, const char *s, uint32_t h, uint32_t w, const char *what,
                             rv_ctx *ctx) {
  return rv_rle_from_string_n(r, s, strlen(s), h, w, what, ctx);
}

rv_status rv_rle_from_counts(rv_rle *r, const uint32_t *counts, size_t m, uint32_t h, uint32_t w,
                             const char *what, rv_ctx *ctx) {
  RV_TRY(check_sum(counts, m, h, w, what ? what : "rle", ctx));
  return rle_set(r, h, w, counts, m, ctx);
}

rv_status rv_rle_from_counts_any(rv_rle *r, const uint32_t *counts, size_t m, uint32_t h, uint32_t w, rv_ctx *ctx) {
  return rle_set(r, h, w, counts, m, ctx);
}

uint64_t rv_rle_sum(const rv_rle *r) {
  uint64_t s = 0;
  for (size_t j = 0; j < r->m; j++) s += r->cnts[j];
  return s;
}

int rv_rle_decode_checked(const rv_rle *r, uint8_t *M) {
  uint64_t s = rv_rle_sum(r), hw = (uint64_t)r->h * r->w;
  if (s > hw) return 0;
  rv_rle_decode(r, M);
  if (s < hw) memset(M + s, 0, (size_t)(hw - s));
  return 1;
}

static uint32_t umin32(uint32_t a, uint32_t b) { return a < b ? a : b; }
static uint32_t umax32(uint32_t a, uint32_t b) { return a > b ? a : b; }

rv_status rv_rle_merge(rv_rle *out, const rv_rle *R, size_t n, int intersect, rv_ctx *ctx) {
  if (n == 0) return rle_set(out, 0, 0, NULL, 0, ctx);
  uint32_t h = R[0].h, w = R[0].w;
  size_t m = R[0].m;
  if (n == 1) return rle_set(out, h, w, R[0].cnts, m, ctx);
  size_t cap = (size_t)h * w + 1; /* valid RLEs: at most one run per pixel + 1 */
  for (size_t i = 0; i < n; i++) /* any RLEs: at most one output run per input run boundary */
    if (R[i].h == h && R[i].w == w) cap += R[i].m;
  uint32_t *cnts = malloc(cap * sizeof *cnts), *A = malloc(cap * sizeof *A);
  if (!cnts || !A) {
    free(cnts);
    free(A);
    return rv_error(ctx, RV_ERR_NOMEM, "rle merge: out of memory (%ux%u)", h, w);
  }
  if (m) memcpy(cnts, R[0].cnts, m * sizeof *cnts);
  for (size_t i = 1; i < n; i++) {
    const rv_rle *B = &R[i];
    if (B->h != h || B->w != w) {
      h = w = 0;
      m = 0;
      break;
    }
    size_t am = m;
    if (am) memcpy(A, cnts, am * sizeof *A);
    if (am == 0 || B->m == 0) { /* degenerate input (only an empty 0-pixel mask) */
      m = 0;
      continue;
    }
    uint32_t ca = A[0], cb = B->cnts[0], cc = 0, ct = 1, c;
    int v = 0, va = 0, vb = 0, vp;
    size_t a = 1, b = 1;
    m = 0;
    while (ct > 0) {
      c = umin32(ca, cb);
      cc += c;
      ct = 0;
      ca -= c;
      if (!ca && a < am) {
        ca = A[a++];
        va = !va;
      }
      ct += ca;
      cb -= c;
      if (!cb && b < B->m) {
        cb = B->cnts[b++];
        vb = !vb;
      }
      ct += cb;
      vp = v;
      v = intersect ? (va && vb) : (va || vb);
      if (v != vp || ct == 0) {
        cnts[m++] = cc;
        cc = 0;
      }
    }
  }
  rv_status st = rle_set(out, h, w, cnts, m, ctx);
  free(cnts);
  free(A);
  return st;
}

uint32_t rv_rle_area(const rv_rle *r) {
  uint32_t a = 0;
  for (size_t j = 1; j < r->m; j += 2) a += r->cnts[j];
  return a;
}

/* maskApi rleToBbox (pycocotools 2.0.x) literally: for every non-empty foreground run, the
 * column and row of its first and last pixel, one division each; a run across columns spans
 * every row. uint32 arithmetic as the reference (the pixel index wraps past 2^32 and a mask
 * without a non-empty foreground run gives w - 0 + 1 wrapped widths), except that h == 0 (a
 * division by zero there) gives a zero box. The reference for rv_rle_info. */
void rv_rle_to_bbox_naive(const rv_rle *r, double bb[4]) {
  uint32_t h = r->h, w = r->w, xs = w, ys = h, xe = 0, ye = 0, cc = 0;
  size_t m = (r->m / 2) * 2;
  if (m == 0 || h == 0) {
    bb[0] = bb[1] = bb[2] = bb[3] = 0;
    return;
  }
  for (size_t j = 0; j < m; j++) {
    uint32_t start = cc;
    cc += r->cnts[j];
    if (j % 2 == 0 || r->cnts[j] == 0) continue;
    uint32_t y0 = start % h, x0 = (start - y0) / h, y1 = (cc - 1) % h, x1 = (cc - 1 - y1) / h;
    xs = umin32(xs, x0);
    xe = umax32(xe, x1);
    if (x0 < x1) {
      ys = 0;
      ye = h - 1;
    } else {
      ys = umin32(ys, y0);
      ye = umax32(ye, y1);
    }
  }
  bb[0] = xs;
  bb[2] = (uint32_t)(xe - xs + 1);
  bb[1] = ys;
  bb[3] = (uint32_t)(ye - ys + 1);
}

/* rleToBbox, rleArea and the regularity flag in one pass. The pixel index cc of the walk is
 * kept as (column cx, row cy), so a run shorter than h costs a compare and a subtraction
 * instead of maskApi's division; t = cc - 1 (end of a foreground run) is the previous pixel.
 * Masks over 2^32 pixels (where maskApi's uint32 index wraps) take the literal path. */
/* (cx, cy) with cy possibly >= h -> the same pixel with cy < h: one subtraction when the run
 * was shorter than a column, a division otherwise */
static inline void carry_rows(uint32_t *cx, uint64_t *cy, uint32_t h) {
  if (*cy >= h) {
    if (*cy - h < h) {
      *cy -= h;
      (*cx)++;
    } else {
      *cx += (uint32_t)(*cy / h);
      *cy %= h;
    }
  }
}

void rv_rle_info_get(rv_rle_info *o, const rv_rle *r) {
  const uint32_t h = r->h, *cn = r->cnts;
  const size_t m = r->m, m2 = (m / 2) * 2;
  double *bb = o->bb;
  o->area = 0;
  o->irregular = 0;
  if (m2 == 0 || h == 0 || (uint64_t)h * r->w > UINT32_MAX) {
    rv_rle_to_bbox_naive(r, bb);
    o->area = rv_rle_area(r);
    for (size_t j = 1; j < m; j++) o->irregular |= cn[j] == 0;
    o->irregular |= rv_rle_sum(r) != (uint64_t)h * r->w;
    return;
  }
  uint32_t xs = r->w, ys = h, xe = 0, ye = 0, cc = 0, cx = 0, area = 0;
  uint64_t cy = 0;
  int zero = 0;
  for (size_t j = 0; j < m2; j += 2) {
    /* even j: a background run; its end t = cc is the first pixel of the next run */
    uint32_t d = cn[j], x, y;
    zero |= (j > 0) & (d == 0);
    cc += d;
    cy += d;
    carry_rows(&cx, &cy, h);
    const uint32_t xp = cx;
    xs = umin32(xs, cx);
    xe = umax32(xe, cx);
    ys = umin32(ys, (uint32_t)cy);
    ye = umax32(ye, (uint32_t)cy);
    /* odd j: a foreground run; t = cc - 1 is its last pixel */
    d = cn[j + 1];
    zero |= d == 0;
    area += d;
    cc += d;
    cy += d;
    carry_rows(&cx, &cy, h);
    if (cy) {
      x = cx;
      y = (uint32_t)cy - 1;
    } else if (cc) {
      x = cx - 1;
      y = h - 1;
    } else { /* t = 0 - 1 wraps, as in maskApi */
      uint32_t t = UINT32_MAX;
      y = t % h;
      x = (t - y) / h;
    }
    if (xp < x) {
      ys = 0;
      ye = h - 1;
    }
    xs = umin32(xs, x);
    xe = umax32(xe, x);
    ys = umin32(ys, y);
    ye = umax32(ye, y);
  }
  if (m2 < m) zero |= cn[m2] == 0; /* the trailing background run */
  o->area = area;
  /* an empty run after the first, or counts that do not cover h*w exactly: the literal box
   * (rleToBbox skips empty foreground runs) and the literal IoU walk */
  o->irregular = zero || rv_rle_sum(r) != (uint64_t)h * r->w;
  if (o->irregular) {
    rv_rle_to_bbox_naive(r, bb);
    return;
  }
  bb[0] = xs;
  bb[2] = (double)xe - xs + 1;
  bb[1] = ys;
  bb[3] = (double)ye - ys + 1;
}

void rv_rle_to_bbox(const rv_rle *r, double bb[4]) {
  rv_rle_info in;
  rv_rle_info_get(&in, r);
  memcpy(bb, in.bb, sizeof in.bb);
}

/* Ascending sort of n uint32 (tmp: n entries): insertion sort when short, else LSD radix
 * with 8-bit digits, skipping a digit that all values share. */
static void sort_u32(uint32_t *a, uint32_t *tmp, size_t n) {
  if (n <= 32) {
    for (size_t i = 1; i < n; i++) {
      uint32_t x = a[i];
      size_t j = i;
      for (; j > 0 && a[j - 1] > x; j--) a[j] = a[j - 1];
      a[j] = x;
    }
    return;
  }
  uint32_t *src = a, *dst = tmp;
  for (int shift = 0; shift < 32; shift += 8) {
    size_t cnt[256] = {0};
    for (size_t i = 0; i < n; i++) cnt[(src[i] >> shift) & 255]++;
    if (cnt[(src[0] >> shift) & 255] == n) continue;
    size_t sum = 0;
    for (int d = 0; d < 256; d++) {
      size_t c = cnt[d];
      cnt[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++) dst[cnt[(src[i] >> shift) & 255]++] = src[i];
    uint32_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != a) memcpy(a, src, n * sizeof *a);
}

/* Upsample x5, walk the boundary with a DDA, keep the points where x crosses a pixel
 * centre column, and turn those y-boundary points into run lengths (maskApi rleFrPoly).
 * Coordinates: (int)(5*x + .5) truncates toward zero, as in the reference. */
static rv_status from_poly_literal(rv_rle *R, const double *xy, size_t k, uint32_t h, uint32_t w, rv_ctx *ctx) {
  if (k == 0) return rv_error(ctx, RV_ERR_FORMAT, "polygon has no points");
  for (size_t j = 0; j < 2 * k; j++)
    if (!(fabs(xy[j]) < 1e6))
      return rv_error(ctx, RV_ERR_FORMAT, "polygon coordinate %zu is %g (not finite or beyond 1e6)", j,
                      xy[j]);
  const double scale = 5;
  rv_status st = RV_OK;
  int *x = malloc(sizeof(int) * (k + 1)), *y = malloc(sizeof(int) * (k + 1));
  int *u = NULL, *v = NULL, *bx = NULL, *by = NULL;
  uint32_t *a = NULL, *b = NULL;
  if (!x || !y) goto nomem;
  for (size_t j = 0; j < k; j++) x[j] = (int)(scale * xy[j * 2 + 0] + .5);
  x[k] = x[0];
  for (size_t j = 0; j < k; j++) y[j] = (int)(scale * xy[j * 2 + 1] + .5);
  y[k] = y[0];
  size_t m = 0;
  for (size_t j = 0; j < k; j++)
    m += umax32((uint32_t)abs(x[j] - x[j + 1]), (uint32_t)abs(y[j] - y[j + 1])) + 1;
  u = malloc(sizeof(int) * m);
  v = malloc(sizeof(int) * m);
  if (!u || !v) goto nomem;
  m = 0;
  for (size_t j = 0; j < k; j++) {
    int xs = x[j], xe = x[j + 1], ys = y[j], ye = y[j + 1], dx, dy, t, d, flip;
    double s;
    dx = abs(xe - xs);
    dy = abs(ys - ye);
    flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) {
      t = xs; xs = xe; xe = t;
      t = ys; ys = ye; ye = t;
    }
    s = dx >= dy ? (double)(ye - ys) / dx : (double)(xe - xs) / dy;
    if (dx == 0 && dy == 0) { /* repeated point: the reference computes (int)NaN, which is */
      u[m] = xs;              /* INT_MIN on x86; the value is never read (no x change) */
      v[m] = INT_MIN;
      m++;
    } else if (dx >= dy)
      for (d = 0; d <= dx; d++) {
        t = flip ? dx - d : d;
        u[m] = t + xs;
        double tmp = s * t;
        v[m] = (int)(ys + tmp + .5);
        m++;
      }
    else
      for (d = 0; d <= dy; d++) {
        t = flip ? dy - d : d;
        v[m] = t + ys;
        double tmp = s * t;
        u[m] = (int)(xs + tmp + .5);
        m++;
      }
  }
  /* points on the y-boundary, downsampled */
  size_t np = m;
  m = 0;
  bx = malloc(sizeof(int) * (np ? np : 1));
  by = malloc(sizeof(int) * (np ? np : 1));
  if (!bx || !by) goto nomem;
  for (size_t j = 1; j < np; j++)
    if (u[j] != u[j - 1]) {
      int xi = u[j] < u[j - 1] ? u[j] : u[j] - 1, yi = v[j] < v[j - 1] ? v[j] : v[j - 1];
      double xd = (double)xi;
      xd = (xd + .5) / scale - .5;
      if (floor(xd) != xd || xd < 0 || xd > (double)w - 1) continue;
      double yd = (double)yi;
      yd = (yd + .5) / scale - .5;
      if (yd < 0)
        yd = 0;
      else if (yd > h)
        yd = h;
      yd = ceil(yd);
      bx[m] = (int)xd;
      by[m] = (int)yd;
      m++;
    }
  /* run lengths from the sorted boundary indices */
  size_t nk = m;
  a = malloc(sizeof(uint32_t) * (nk + 1));
  b = malloc(sizeof(uint32_t) * (nk + 1));
  if (!a || !b) goto nomem;
  for (size_t j = 0; j < nk; j++) a[j] = (uint32_t)(bx[j] * (int)h + by[j]);
  a[nk++] = (uint32_t)((size_t)h * w);
  sort_u32(a, b, nk); /* b is free until the run lengths */
  uint32_t prev = 0;
  for (size_t j = 0; j < nk; j++) {
    uint32_t t = a[j];
    a[j] -= prev;
    prev = t;
  }
  size_t j = 0;
  m = 0;
  b[m++] = a[j++];
  while (j < nk)
    if (a[j] > 0)
      b[m++] = a[j++];
    else {
      j++;
      if (j < nk) b[m - 1] += a[j++];
    }
  st = rle_set(R, h, w, b, m, ctx);
  goto done;
nomem:
  st = rv_error(ctx, RV_ERR_NOMEM, "polygon to RLE: out of memory (%zu points)", k);
done:
  free(x);
  free(y);
  free(u);
  free(v);
  free(bx);
  free(by);
  free(a);
  free(b);
  return st;
}

/* The y-boundary point a step of the upsampled walk (previous point (pu, pv), this one (u, v),
 * u != pu) contributes, with rleFrPoly's downsampling done in integers: (i + .5) / 5 - .5 is
 * (i - 2) / 5, exact when that is an integer (n + .5 is a double) and otherwise at least 1/5
 * from one, far beyond the rounding error; so xd is an integer iff xi = 2 mod 5, and ceil(yd)
 * is the ceiling of (yi - 2) / 5, clamped to [0, h] like yd. Returns 0 when the point is not
 * kept (x not a pixel centre, or outside the image). */
static inline int boundary_point(int u, int v, int pu, int pv, uint32_t h, uint32_t w, int *bx, int *by) {
  int xi = u < pu ? u : u - 1;
  if (xi < 2 || (xi - 2) % 5 != 0 || (xi - 2) / 5 > (int64_t)w - 1) return 0;
  int yi = v < pv ? v : pv;
  int64_t ya = (int64_t)yi - 2, yc = ya >= 0 ? (ya + 4) / 5 : -((-ya) / 5); /* ceil(ya / 5) */
  *bx = (xi - 2) / 5;
  *by = (int)(yc < 0 ? 0 : yc > (int64_t)h ? (int64_t)h : yc);
  return 1;
}

/* rleFrPoly without its point arrays: the same DDA walk over the x5 upsampled boundary, each
 * edge on its own (consecutive edges share their end point, so no x step happens between
 * them), keeping the y-boundary points as they come; on shallow edges (x moves every step)
 * only the steps whose x lands on a pixel centre column compute their y. Same points, in the
 * same order, as rv_rle_from_poly_naive's arrays give (tests/unit/eval/test_rle.c compares them). */
rv_status rv_rle_from_poly(rv_rle *R, const double *xy, size_t k, uint32_t h, uint32_t w, rv_ctx *ctx) {
  if (k == 0) return rv_error(ctx, RV_ERR_FORMAT, "polygon has no points");
  for (size_t j = 0; j < 2 * k; j++)
    if (!(fabs(xy[j]) < 1e6))
      return rv_error(ctx, RV_ERR_FORMAT, "polygon coordinate %zu is %g (not finite or beyond 1e6)", j,
                      xy[j]);
  const double scale = 5;
  int sx[65], sy[65]; /* small polygons on the stack */
  int *x = k < 64 ? sx : malloc(sizeof(int) * (k + 1)), *y = k < 64 ? sy : malloc(sizeof(int) * (k + 1));
  int *bx = NULL, *by = NULL;
  uint32_t *a = NULL, *b = NULL;
  rv_status st = RV_OK;
  if (!x || !y) goto nomem;
  for (size_t j = 0; j < k; j++) x[j] = (int)(scale * xy[j * 2 + 0] + .5);
  x[k] = x[0];
  for (size_t j = 0; j < k; j++) y[j] = (int)(scale * xy[j * 2 + 1] + .5);
  y[k] = y[0];
  /* at most one point per x step: |dx| inside an edge (+1 for the rounding of steep edges), one
   * where edges meet, two around a repeated point */
  size_t cap = 1;
  for (size_t j = 0; j < k; j++) cap += (size_t)abs(x[j] - x[j + 1]) + 3;
  bx = malloc(sizeof(int) * 2 * cap);
  a = malloc(sizeof(uint32_t) * 2 * (cap + 1));
  if (!bx || !a) goto nomem;
  by = bx + cap;
  b = a + cap + 1;
  size_t m = 0;
  int have = 0, pu = 0, pv = 0; /* the previous point of the walk */
#define WALK_POINT(U, V)                                                             \
  do {                                                                               \
    int u_ = (U), v_ = (V);                                                          \
    if (have && u_ != pu) m += (size_t)boundary_point(u_, v_, pu, pv, h, w, &bx[m], &by[m]); \
    pu = u_;                                                                         \
    pv = v_;                                                                         \
    have = 1;                                                                        \
  } while (0)
  for (size_t j = 0; j < k; j++) {
    int xs = x[j], xe = x[j + 1], ys = y[j], ye = y[j + 1], dx, dy, t, flip;
    double s;
    dx = abs(xe - xs);
    dy = abs(ys - ye);
    if (dx == 0 && dy == 0) { /* repeated point: the reference's (int)NaN, INT_MIN on x86 */
      WALK_POINT(xs, INT_MIN);
      continue;
    }
    flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) {
      t = xs; xs = xe; xe = t;
      t = ys; ys = ye; ye = t;
    }
    s = dx >= dy ? (double)(ye - ys) / dx : (double)(xe - xs) / dy;
    if (dx >= dy) {
      /* step d: u = t + xs with t = flip ? dx - d : d, v = (int)(ys + s*t + .5); x moves every
       * step, so only the steps onto a pixel-centre column inside the image need v */
      t = flip ? dx : 0;
      double tmp = s * t;
      WALK_POINT(t + xs, (int)(ys + tmp + .5));
      /* the step d (from point d-1 to d) has xi = min(u[d-1], u[d]); the kept ones are the xi
       * = 2 mod 5 inside the image, taken directly (the points are sorted afterwards, so their
       * order does not matter) */
      const int u0 = t + xs, dir = flip ? -1 : 1;
      int64_t lo = dir > 0 ? u0 : (int64_t)u0 - dx, hi = dir > 0 ? (int64_t)u0 + dx - 1 : (int64_t)u0 - 1;
      const int64_t xmax = 5 * ((int64_t)w - 1) + 2;
      if (lo < 2) lo = 2;
      if (hi > xmax) hi = xmax;
      if ((lo - 2) % 5) lo += 5 - (lo - 2) % 5;
      for (int64_t xi = lo; xi <= hi; xi += 5) {
        int d = (int)(dir > 0 ? xi - u0 + 1 : u0 - xi);
        int t1 = flip ? dx - d : d, t0 = flip ? dx - d + 1 : d - 1;
        double tmp1 = s * t1, tmp0 = s * t0;
        int v = (int)(ys + tmp1 + .5), pv0 = (int)(ys + tmp0 + .5);
        m += (size_t)boundary_point(t1 + xs, v, t0 + xs, pv0, h, w, &bx[m], &by[m]);
      }
      t = flip ? 0 : dx;
      tmp = s * t;
      pu = t + xs;
      pv = (int)(ys + tmp + .5);
    } else {
      for (int d = 0; d <= dy; d++) {
        t = flip ? dy - d : d;
        double tmp = s * t;
        WALK_POINT((int)(xs + tmp + .5), t + ys);
      }
    }
  }
#undef WALK_POINT
  /* run lengths from the sorted boundary indices x*h + y: a counting sort on the column x (a
   * polygon has a few points per column), then each column's few points by y; x*h + y is
   * monotone in (x, y) for y in [0, h], so this is the sorted order of the indices */
  size_t nk = m;
  int xmin = INT_MAX, xmax = INT_MIN;
  for (size_t j = 0; j < nk; j++) {
    if (bx[j] < xmin) xmin = bx[j];
    if (bx[j] > xmax) xmax = bx[j];
  }
  size_t ncol = nk ? (size_t)((int64_t)xmax - xmin + 1) : 0;
  uint32_t cstack[513], *cnt = ncol < 512 ? cstack : (ncol <= 4 * nk + 4096 ? malloc(sizeof(uint32_t) * (ncol + 1)) : NULL);
  if (nk && cnt) {
    memset(cnt, 0, sizeof(uint32_t) * (ncol + 1));
    for (size_t j = 0; j < nk; j++) cnt[bx[j] - xmin + 1]++;
    for (size_t c = 0; c < ncol; c++) cnt[c + 1] += cnt[c];
    for (size_t j = 0; j < nk; j++) a[cnt[bx[j] - xmin]++] = (uint32_t)(bx[j] * (int)h + by[j]);
    /* cnt[c] is now the end of column c: insertion sort inside each column */
    size_t lo = 0;
    for (size_t c = 0; c < ncol; c++) {
      size_t hi = cnt[c];
      for (size_t i = lo + 1; i < hi; i++) {
        uint32_t key = a[i];
        size_t q = i;
        for (; q > lo && a[q - 1] > key; q--) a[q] = a[q - 1];
        a[q] = key;
      }
      lo = hi;
    }
    if (cnt != cstack) free(cnt);
    a[nk++] = (uint32_t)((size_t)h * w); /* the largest index */
  } else {
    for (size_t j = 0; j < nk; j++) a[j] = (uint32_t)(bx[j] * (int)h + by[j]);
    a[nk++] = (uint32_t)((size_t)h * w);
    sort_u32(a, b, nk); /* b is free until the run lengths */
  }
  uint32_t prev = 0;
  for (size_t j = 0; j < nk; j++) {
    uint32_t t = a[j];
    a[j] -= prev;
    prev = t;
  }
  size_t j = 0;
  m = 0;
  b[m++] = a[j++];
  while (j < nk)
    if (a[j] > 0)
      b[m++] = a[j++];
    else {
      j++;
      if (j < nk) b[m - 1] += a[j++];
    }
  st = rle_set(R, h, w, b, m, ctx);
  goto done;
nomem:
  st = rv_error(ctx, RV_ERR_NOMEM, "polygon to RLE: out of memory (%zu points)", k);
done:
  if (x != sx) free(x);
  if (y != sy) free(y);
  free(bx);
  free(a);
  return st;
}

rv_status rv_rle_from_poly_naive(rv_rle *R, const double *xy, size_t k, uint32_t h, uint32_t w, rv_ctx *ctx) {
  return from_poly_literal(R, xy, k, h, w, ctx);
}

rv_status rv_rle_from_bbox(rv_rle *r, const double bb[4], uint32_t h, uint32_t w, rv_ctx *ctx) {
  double xs = bb[0], xe = xs + bb[2];
  double ys = bb[1], ye = ys + bb[3];
  double xy[8] = {xs, ys, xs, ye, xe, ye, xe, ys};
  return rv_rle_from_poly(r, xy, 4, h, w, ctx);
}

/* Box IoU exactly as maskApi bbIou for one pair (returns 0 when the boxes do not overlap). */
static double bb_iou1(const double *D, const double *G, int crowd) {
  double ga = G[2] * G[3], da = D[2] * D[3];
  double w = fmin(D[2] + D[0], G[2] + G[0]) - fmax(D[0], G[0]);
  if (w <= 0) return 0;
  double h = fmin(D[3] + D[1], G[3] + G[1]) - fmax(D[1], G[1]);
  if (h <= 0) return 0;
  double i = w * h;
  double u = crowd ? da : da + ga - i;
  return i / u;
}

void rv_bbox_iou(double *o, const double *dt, size_t m, const double *gt, size_t n,
                 const uint8_t *iscrowd) {
  for (size_t d = 0; d < m; d++)
    for (size_t g = 0; g < n; g++)
      o[d * n + g] = bb_iou1(dt + d * 4, gt + g * 4, iscrowd && iscrowd[g]);
}

/* maskApi rleIou for one pair, literally: a walk over the runs of both masks counting the
 * intersection and the union. The reference for rv_rle_iou_pair; it also stands in for it
 * when a mask has an empty run after the first, where this loop can stop early (both masks
 * on an empty run at the same pixel) and only following it gives maskApi's number. */
double rv_rle_iou_pair_naive(const rv_rle *dt, const rv_rle *gt, int crowd) {
  if (dt->m == 0 || gt->m == 0) return 0;
  uint32_t ca = dt->cnts[0], cb = gt->cnts[0], c, ct = 1, i = 0, u = 0;
  size_t ka = dt->m, kb = gt->m, a = 1, b = 1;
  int va = 0, vb = 0;
  while (ct > 0) {
    c = umin32(ca, cb);
    if (c == 0 && ((ca == 0 && a >= ka && cb > 0) || (cb == 0 && b >= kb && ca > 0))) {
      /* one mask's counts end before the other's (counts that do not sum to h*w): maskApi's
       * loop never ends here; the rest of the other mask is taken against background */
      int a_done = ca == 0 && a >= ka;
      const rv_rle *o = a_done ? gt : dt;
      uint32_t co = a_done ? cb : ca;
      size_t ko = a_done ? kb : ka, oi = a_done ? b : a;
      int vo = a_done ? vb : va;
      for (;;) {
        if (vo) u += co;
        if (oi >= ko) break;
        co = o->cnts[oi++];
        vo = !vo;
      }
      break;
    }
    if (va || vb) {
      u += c;
      if (va && vb) i += c;
    }
    ct = 0;
    ca -= c;
    if (!ca && a < ka) {
      ca = dt->cnts[a++];
      va = !va;
    }
    ct += ca;
    cb -= c;
    if (!cb && b < kb) {
      cb = gt->cnts[b++];
      vb = !vb;
    }
    ct += cb;
  }
  if (i == 0)
    u = 1;
  else if (crowd)
    u = rv_rle_area(dt);
  return (double)i / (double)u;
}

/* Pixels in both masks: a merge of the foreground intervals [start, end) of the two run
 * lists (one step per interval, not per run boundary of both). uint32 like maskApi's sum. */
static uint32_t fg_intersection(const uint32_t *a, size_t ka, const uint32_t *b, size_t kb) {
  if (ka < 2 || kb < 2) return 0;
  uint64_t as = a[0], ae = as + a[1], bs = b[0], be = bs + b[1], inter = 0;
  size_t i = 1, j = 1;
  for (;;) {
    uint64_t lo = as > bs ? as : bs, hi = ae < be ? ae : be;
    if (hi > lo) inter += hi - lo;
    if (ae <= be) {
      if (i + 2 >= ka) break;
      as = ae + a[i + 1];
      ae = as + a[i + 2];
      i += 2;
    } else {
      if (j + 2 >= kb) break;
      bs = be + b[j + 1];
      be = bs + b[j + 2];
      j += 2;
    }
  }
  return (uint32_t)inter;
}

/* IoU from the intersection and the two areas: maskApi's union count is |a| + |b| - |a&b|
 * (mod 2^32, as its uint32 counter), the crowd union |dt|. */
static double iou_from(const rv_rle *dt, const rv_rle_info *di, const rv_rle *gt, const rv_rle_info *gi,
                       int crowd) {
  if (dt->m == 0 || gt->m == 0) return 0;
  if (di->irregular || gi->irregular) return rv_rle_iou_pair_naive(dt, gt, crowd);
  uint32_t i = fg_intersection(dt->cnts, dt->m, gt->cnts, gt->m);
  uint32_t u = i == 0 ? 1 : crowd ? di->area : di->area + gi->area - i;
  return (double)i / (double)u;
}

double rv_rle_iou_pair(const rv_rle *dt, const rv_rle *gt, int crowd) {
  rv_rle_info di, gi;
  rv_rle_info_get(&di, dt);
  rv_rle_info_get(&gi, gt);
  return iou_from(dt, &di, gt, &gi, crowd);
}

void rv_rle_iou_info(double *o, const rv_rle *dt, const rv_rle_info *di, size_t m, const rv_rle *gt,
                     const rv_rle_info *gi, size_t n, const uint8_t *iscrowd) {
  for (size_t d = 0; d < m; d++)
    for (size_t g = 0; g < n; g++) {
      int crowd = iscrowd && iscrowd[g];
      double v = bb_iou1(di[d].bb, gi[g].bb, crowd);
      if (v > 0) {
        if (dt[d].h != gt[g].h || dt[d].w != gt[g].w)
          v = -1;
        else
          v = iou_from(&dt[d], &di[d], &gt[g], &gi[g], crowd);
      }
      o[d * n + g] = v;
    }
}

void rv_rle_iou(double *o, const rv_rle *dt, size_t m, const rv_rle *gt, size_t n, const uint8_t *iscrowd) {
  enum { GT_BLOCK = 64 };
  rv_rle_info gi[GT_BLOCK], di;
  for (size_t g0 = 0; g0 < n; g0 += GT_BLOCK) { /* columns g0 .. g0 + k - 1 of every row */
    const size_t k = n - g0 < GT_BLOCK ? n - g0 : GT_BLOCK;
    for (size_t g = 0; g < k; g++) rv_rle_info_get(&gi[g], &gt[g0 + g]);
    for (size_t d = 0; d < m; d++) {
      rv_rle_info_get(&di, &dt[d]);
      rv_rle_iou_info(o + d * n + g0, &dt[d], &di, 1, gt + g0, gi, k, iscrowd ? iscrowd + g0 : NULL);
    }
  }
}
