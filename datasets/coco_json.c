/* The JSON pieces both COCO readers share (datasets/coco_json.h): the mask memory pool, the
 * "segmentation" value on the scanner (COCO.annToRLE), error prefixes, the debug clock. The
 * annotation loader is datasets/coco.c, the results reader datasets/coco_results.c. */
#define _POSIX_C_SOURCE 200809L
#include "datasets/coco_json.h"

#include "core/fs.h"
#include "datasets/json_scan.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

double rv_coco_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- segmentation (COCO.annToRLE) on the scanner ---- */

/* ---- the mask memory pool ---- */

struct rv_coco_block {
  rv_coco_block *next;
  size_t cap, used; /* in uint32 */
  uint32_t data[];
};

enum { POOL_BLOCK = 2 << 20 }; /* bytes (huge pages on request were slower here: zeroed at fault time) */

uint32_t *rv_coco_pool_counts(rv_coco_pool *pool, size_t n) {
  rv_coco_block *b = pool->head;
  if (!b || b->cap - b->used < n) {
    size_t hdr = offsetof(rv_coco_block, data), bytes = POOL_BLOCK;
    if (n > (bytes - hdr) / sizeof(uint32_t)) {
      if (n > (SIZE_MAX - hdr) / sizeof(uint32_t)) return NULL;
      bytes = hdr + n * sizeof(uint32_t);
    }
    b = malloc(bytes);
    if (!b) return NULL;
    b->cap = (bytes - hdr) / sizeof(uint32_t);
    b->used = 0;
    /* a big single block goes behind the current one, which keeps its free space */
    if (pool->head && b->cap == n) {
      b->next = pool->head->next;
      pool->head->next = b;
    } else {
      b->next = pool->head;
      pool->head = b;
    }
  }
  uint32_t *p = b->data + b->used;
  b->used += n;
  return p;
}

void rv_coco_pool_trim(rv_coco_pool *pool, const uint32_t *p, size_t n, size_t keep) {
  rv_coco_block *b = pool->head;
  if (b && p + n == b->data + b->used) b->used -= n - keep; /* the block's last allocation */
}

void rv_coco_pool_join(rv_coco_pool *dst, rv_coco_pool *src) {
  if (!src->head) return;
  rv_coco_block *t = src->head;
  while (t->next) t = t->next;
  t->next = dst->head;
  dst->head = src->head;
  src->head = NULL;
}

void rv_coco_pool_free(rv_coco_pool *pool) {
  for (rv_coco_block *b = pool->head, *n; b; b = n) {
    n = b->next;
    free(b);
  }
  pool->head = NULL;
}

/* RLE from a compressed string of len characters (into pool when given); on failure the
 * message goes to c->err. */
static int rle_string(rv_jcur *c, rv_rle *out, const char *s, size_t len, uint32_t h, uint32_t w,
                      rv_coco_pool *pool) {
  if (pool) { /* room for len counts (at most one per character), the unused tail given back */
    uint32_t *buf = rv_coco_pool_counts(pool, len);
    if (!buf) return rv_jfail(c, "out of memory");
    rv_status st = rv_rle_from_string_any_into(out, buf, s, len, h, w, "segmentation", NULL);
    rv_coco_pool_trim(pool, buf, len, st == RV_OK ? out->m : 0);
    if (st == RV_OK) return 1;
  } else if (rv_rle_from_string_any(out, s, len, h, w, "segmentation", NULL) == RV_OK)
    return 1;
  rv_ctx *tctx = rv_ctx_create();
  rv_rle tmp = {0};
  rv_rle_from_string_any(&tmp, s, len, h, w, "segmentation", tctx);
  rv_jfail(c, "%s", tctx ? rv_ctx_errmsg(tctx) : "corrupt RLE");
  rv_rle_free(&tmp);
  rv_ctx_free(tctx);
  return 0;
}

static int status_msg(rv_jcur *c, rv_status st, const char *fallback) {
  if (st == RV_OK) return 1;
  return rv_jfail(c, "%s", fallback);
}

/* A list of numbers into a growing buffer; returns the count or -1. */
static long numbers(rv_jcur *c, double **buf, size_t *cap, size_t at) {
  if (!rv_jexpect(c, '[')) return -1;
  size_t n = 0;
  if (rv_jpeek(c, ']')) {
    c->p++;
    return 0;
  }
  for (;;) {
    if (at + n == *cap) {
      size_t nc = *cap ? 2 * *cap : 64;
      double *nb = realloc(*buf, nc * sizeof *nb);
      if (!nb) return rv_jfail(c, "out of memory"), -1;
      *buf = nb;
      *cap = nc;
    }
    if (!rv_jnumber(c, *buf + at + n)) return -1;
    n++;
    int r = rv_jnext(c, ']');
    if (r < 0) return -1;
    if (r == 0) return (long)n;
  }
}

int rv_coco_parse_segm(rv_jcur *c, rv_rle *out, uint32_t h, uint32_t w, int want, rv_coco_pool *pool) {
  if (!want) return rv_jskip(c);
  if (rv_jpeek(c, '[')) { /* polygons: frPyObjects (a first part of 4 numbers = boxes) + merge */
    c->p++;
    double *xy = NULL;
    size_t cap = 0, used = 0, np = 0, pcap = 0;
    size_t *off = NULL;
    int ok = 1;
    if (rv_jpeek(c, ']')) {
      c->p++;
      return rv_jfail(c, "'segmentation' is an empty list");
    }
    for (;;) {
      if (np + 1 >= pcap) {
        size_t nc = pcap ? 2 * pcap : 8;
        size_t *no = realloc(off, nc * sizeof *no);
        if (!no) { ok = rv_jfail(c, "out of memory"); break; }
        off = no;
        pcap = nc;
      }
      if (!rv_jpeek(c, '[')) { ok = rv_jfail(c, "'segmentation' must be a list of polygons"); break; }
      long k = numbers(c, &xy, &cap, used);
      if (k < 0) { ok = 0; break; }
      off[np++] = used;
      used += (size_t)k;
      off[np] = used;
      int r = rv_jnext(c, ']');
      if (r < 0) { ok = 0; break; }
      if (r == 0) break;
    }
    if (ok) {
      size_t n0 = off[1] - off[0];
      if (n0 < 4) ok = rv_jfail(c, "polygon 0 has %zu coordinates (pycocotools needs 4 for a box or more)", n0);
    }
    rv_rle *parts = ok ? calloc(np, sizeof *parts) : NULL;
    if (ok && !parts) ok = rv_jfail(c, "out of memory");
    if (ok) {
      int as_box = off[1] - off[0] == 4;
      for (size_t i = 0; i < np && ok; i++) {
        size_t n = off[i + 1] - off[i];
        if (as_box && n != 4) ok = rv_jfail(c, "part %zu has %zu numbers but part 0 has 4 (a box list)", i, n);
        else if (!as_box && n / 2 == 0) ok = rv_jfail(c, "polygon %zu has %zu coordinates", i, n);
        else {
          rv_ctx *tctx = rv_ctx_create();
          rv_status st = as_box ? rv_rle_from_bbox(&parts[i], xy + off[i], h, w, tctx)
                                : rv_rle_from_poly(&parts[i], xy + off[i], n / 2, h, w, tctx);
          if (st != RV_OK) rv_jfail(c, "polygon %zu: %s", i, tctx ? rv_ctx_errmsg(tctx) : "invalid");
          ok = st == RV_OK;
          rv_ctx_free(tctx);
        }
      }
      if (ok) ok = status_msg(c, rv_rle_merge(out, parts, np, 0, NULL), "out of memory");
      for (size_t i = 0; i < np; i++) rv_rle_free(&parts[i]);
    }
    free(parts);
    free(xy);
    free(off);
    return ok;
  }
  if (!rv_jpeek(c, '{')) return rv_jfail(c, "'segmentation' must be polygons or an RLE object");
  c->p++;
  double size[2] = {-1, -1};
  int have_size = 0, have_counts = 0, ok = 1;
  const char *counts_at = NULL, *counts_end = NULL;
  for (;;) {
    char k[32];
    size_t kl;
    if (!rv_jkey(c, k, sizeof k, &kl)) return 0;
    if (rv_jkey_is(k, kl, "size")) {
      if (!rv_jexpect(c, '[') || !rv_jnumber(c, &size[0]) || !rv_jexpect(c, ',') || !rv_jnumber(c, &size[1]) ||
          !rv_jexpect(c, ']'))
        return rv_jfail(c, "RLE 'size' must be [height, width]");
      have_size = 1;
    } else if (rv_jkey_is(k, kl, "counts")) {
      rv_jws(c);
      counts_at = c->p;
      if (!rv_jskip(c)) return 0;
      counts_end = c->p;
      have_counts = 1;
    } else if (!rv_jskip(c))
      return 0;
    int r = rv_jnext(c, '}');
    if (r < 0) return 0;
    if (r == 0) break;
  }
  if (!have_size || !have_counts) return rv_jfail(c, "'segmentation' must have 'size' and 'counts'");
  if (!(size[0] >= 0 && size[1] >= 0 && size[0] == floor(size[0]) && size[1] == floor(size[1]) &&
        size[0] * size[1] < 4294967296.0))
    return rv_jfail(c, "RLE 'size' [%g, %g] is not a valid mask size", size[0], size[1]);
  uint32_t rh = (uint32_t)size[0], rw = (uint32_t)size[1];
  rv_jcur sub = {counts_at, c->end, ""};
  if (*counts_at == '"') { /* unescaped into a buffer the size of the raw text (quotes included) */
    size_t raw = (size_t)(counts_end - counts_at), got = 0;
    char stack[2048], *str = raw <= sizeof stack ? stack : malloc(raw);
    if (!str) return rv_jfail(c, "out of memory");
    ok = rv_jstring(&sub, str, raw, &got);
    if (ok && memchr(str, 0, got)) ok = rv_jfail(c, "NUL character in RLE counts");
    if (ok) ok = rle_string(c, out, str, got, rh, rw, pool);
    if (str != stack) free(str);
    return ok;
  }
  if (*counts_at == '[') { /* uncompressed RLE (frUncompressedRLE, its own size) */
    double *v = NULL;
    size_t cap = 0;
    long n = numbers(&sub, &v, &cap, 0);
    if (n < 0) {
      free(v);
      return rv_jfail(c, "%s", sub.err);
    }
    uint32_t *cnt = malloc(sizeof *cnt * (size_t)(n ? n : 1));
    if (!cnt) ok = rv_jfail(c, "out of memory");
    for (long i = 0; ok && i < n; i++) {
      if (!(v[i] >= 0 && v[i] <= 4294967295.0 && v[i] == floor(v[i])))
        ok = rv_jfail(c, "uncompressed RLE count %ld is not a non-negative integer", i);
      else
        cnt[i] = (uint32_t)v[i];
    }
    if (ok) {
      rv_ctx *tctx = rv_ctx_create();
      /* any counts, as frUncompressedRLE (a sum other than h*w is pycocotools' business) */
      rv_status st = rv_rle_from_counts_any(out, cnt, (size_t)n, rh, rw, tctx);
      if (st != RV_OK) rv_jfail(c, "%s", tctx ? rv_ctx_errmsg(tctx) : "invalid RLE");
      ok = st == RV_OK;
      rv_ctx_free(tctx);
    }
    free(cnt);
    free(v);
    return ok;
  }
  return rv_jfail(c, "RLE 'counts' must be a string or a list of integers");
}

int rv_coco_jnumber(rv_jcur *c, double *v) {
  rv_jws(c);
  if (!(c->p < c->end && (*c->p == '-' || isdigit((unsigned char)*c->p)))) return 0;
  return rv_jnumber(c, v);
}

int rv_coco_jid(rv_jcur *c, int64_t *out) {
  double v;
  if (!rv_coco_jnumber(c, &v) || !(fabs(v) <= 9007199254740992.0) || v != floor(v)) return 0;
  *out = (int64_t)v;
  return 1;
}

int rv_coco_jbbox(rv_jcur *c, double b[4], int *has) {
  if (!rv_jexpect(c, '[')) return rv_jfail(c, "'bbox' must be 4 numbers");
  if (rv_jpeek(c, ']')) {
    c->p++;
    return 1;
  }
  for (int i = 0; i < 4; i++)
    if ((i && !rv_jexpect(c, ',')) || !rv_jnumber(c, &b[i]) || !isfinite(b[i]))
      return rv_jfail(c, "'bbox' must be 4 numbers");
  if (!rv_jexpect(c, ']')) return rv_jfail(c, "'bbox' must be 4 numbers");
  *has = 1;
  return 1;
}

/* Re-issue the message in ctx with a "file: section[i]: " prefix. */
rv_status rv_coco_prefix_error(rv_ctx *ctx, rv_status st, const char *name, const char *section, size_t i) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", rv_ctx_errmsg(ctx));
  return rv_error(ctx, st, "%s: %s[%zu]: %s", name, section, i, msg);
}
