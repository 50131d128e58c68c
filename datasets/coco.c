/* COCO instances / results JSON loading with pycocotools' rules (coco.py: createIndex,
 * annToRLE, loadRes) on the streaming scanner of json_scan.h: the top-level lists are split
 * into element spans, annotations are parsed (and their masks rasterised) in parallel, and
 * the first failing element is the one reported, so messages do not depend on threads. */
#define _POSIX_C_SOURCE 200809L
#include "datasets/coco_internal.h"

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
    rv_status st = rv_rle_from_string_into(out, buf, s, len, h, w, "segmentation", NULL);
    rv_coco_pool_trim(pool, buf, len, st == RV_OK ? out->m : 0);
    if (st == RV_OK) return 1;
  } else if (rv_rle_from_string_n(out, s, len, h, w, "segmentation", NULL) == RV_OK)
    return 1;
  rv_ctx *tctx = rv_ctx_create();
  rv_rle tmp = {0};
  rv_rle_from_string_n(&tmp, s, len, h, w, "segmentation", tctx);
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
      rv_status st = rv_rle_from_counts(out, cnt, (size_t)n, rh, rw, "segmentation (uncompressed RLE)", tctx);
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

/* Re-issue the message in ctx with a "file: section[i]: " prefix. */
static rv_status prefix_error(rv_ctx *ctx, rv_status st, const char *name, const char *section, size_t i) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", rv_ctx_errmsg(ctx));
  return rv_error(ctx, st, "%s: %s[%zu]: %s", name, section, i, msg);
}

typedef struct {
  int64_t id;
  size_t idx;
} id_idx;

static int cmp_id_idx(const void *a, const void *b) {
  const id_idx *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* sorted lookup table of the int64 id at the start of each record; returns the index of a
 * duplicated id, -1 if none, -2 on allocation failure */
static long build_index(int64_t **ids, size_t **idx, size_t stride_bytes, const void *base, size_t n) {
  id_idx *t = malloc(sizeof *t * (n ? n : 1));
  *ids = malloc(sizeof(int64_t) * (n ? n : 1));
  *idx = malloc(sizeof(size_t) * (n ? n : 1));
  if (!t || !*ids || !*idx) {
    free(t);
    return -2;
  }
  for (size_t i = 0; i < n; i++) {
    t[i].id = *(const int64_t *)((const char *)base + i * stride_bytes);
    t[i].idx = i;
  }
  qsort(t, n, sizeof *t, cmp_id_idx);
  long dup = -1;
  for (size_t i = 0; i < n; i++) {
    (*ids)[i] = t[i].id;
    (*idx)[i] = t[i].idx;
    if (i && t[i].id == t[i - 1].id && dup < 0) dup = (long)t[i].idx;
  }
  free(t);
  return dup;
}

static long lookup(const int64_t *ids, const size_t *idx, size_t n, int64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ids[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (lo < n && ids[lo] == id) ? (long)idx[lo] : -1;
}

const rv_coco_image *rv_coco_find_image(const rv_coco *c, int64_t id) {
  long i = lookup(c->img_ids_sorted, c->img_idx_sorted, c->n_images, id);
  return i < 0 ? NULL : &c->images[i];
}

const rv_coco_category *rv_coco_find_category(const rv_coco *c, int64_t id) {
  long i = lookup(c->cat_ids_sorted, c->cat_idx_sorted, c->n_cats, id);
  return i < 0 ? NULL : &c->cats[i];
}

void rv_coco_free(rv_coco *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n_images; i++) free(c->images[i].file_name);
  for (size_t i = 0; i < c->n_cats; i++) free(c->cats[i].name);
  for (size_t i = 0; i < c->n_anns; i++) rv_rle_free(&c->anns[i].segm);
  free(c->images);
  free(c->cats);
  free(c->anns);
  free(c->path);
  free(c->img_ids_sorted);
  free(c->img_idx_sorted);
  free(c->cat_ids_sorted);
  free(c->cat_idx_sorted);
  free(c);
}

static int int_id(double v, int64_t *out) {
  if (!(fabs(v) <= 9007199254740992.0) || v != floor(v)) return 0;
  *out = (int64_t)v;
  return 1;
}

/* number that must be an integer id */
static int id_value(rv_jcur *c, int64_t *out) {
  double v;
  rv_jws(c);
  if (!(c->p < c->end && (*c->p == '-' || isdigit((unsigned char)*c->p)))) return 0;
  return rv_jnumber(c, &v) && int_id(v, out);
}

static char *string_value(rv_jcur *c) {
  rv_jcur probe = *c;
  size_t n = 0;
  if (!rv_jstring(&probe, NULL, 0, &n)) return NULL;
  char *s = malloc(n + 1);
  if (s && !rv_jstring(c, s, n + 1, NULL)) {
    free(s);
    return NULL;
  }
  return s;
}

/* images[i]: {id, width, height, file_name?} */
static int image_elem(rv_jcur *c, rv_coco_image *im) {
  int have_id = 0;
  double w = -1, h = -1;
  if (!rv_jexpect(c, '{')) return rv_jfail(c, "not an object");
  if (!rv_jpeek(c, '}'))
    for (;;) {
      char k[32];
      size_t kl;
      if (!rv_jkey(c, k, sizeof k, &kl)) return 0;
      if (rv_jkey_is(k, kl, "id")) {
        if (!id_value(c, &im->id)) return rv_jfail(c, "missing or non-integer 'id'");
        have_id = 1;
      } else if (rv_jkey_is(k, kl, "width") || rv_jkey_is(k, kl, "height")) {
        rv_jws(c);
        if (!(c->p < c->end && (*c->p == '-' || isdigit((unsigned char)*c->p))) || !rv_jnumber(c, k[0] == 'w' ? &w : &h))
          return rv_jfail(c, "'width'/'height' missing or invalid");
      } else if (rv_jkey_is(k, kl, "file_name") && rv_jpeek(c, '"')) {
        free(im->file_name);
        if (!(im->file_name = string_value(c))) return rv_jfail(c, "bad 'file_name'");
      } else if (!rv_jskip(c))
        return 0;
      int r = rv_jnext(c, '}');
      if (r < 0) return 0;
      if (r == 0) break;
    }
  else
    c->p++;
  if (!have_id) return rv_jfail(c, "missing or non-integer 'id'");
  if (!(w >= 1 && h >= 1 && w <= 1e6 && h <= 1e6) || w != floor(w) || h != floor(h) || w * h >= 4294967296.0)
    return rv_jfail(c, "(id %lld): 'width'/'height' missing or invalid", (long long)im->id);
  im->width = (int32_t)w;
  im->height = (int32_t)h;
  return 1;
}

static int category_elem(rv_jcur *c, rv_coco_category *cat) {
  int have_id = 0;
  if (!rv_jexpect(c, '{')) return rv_jfail(c, "not an object");
  if (!rv_jpeek(c, '}'))
    for (;;) {
      char k[32];
      size_t kl;
      if (!rv_jkey(c, k, sizeof k, &kl)) return 0;
      if (rv_jkey_is(k, kl, "id")) {
        if (!id_value(c, &cat->id)) return rv_jfail(c, "missing or non-integer 'id'");
        have_id = 1;
      } else if (rv_jkey_is(k, kl, "name") && rv_jpeek(c, '"')) {
        free(cat->name);
        if (!(cat->name = string_value(c))) return rv_jfail(c, "bad 'name'");
      } else if (!rv_jskip(c))
        return 0;
      int r = rv_jnext(c, '}');
      if (r < 0) return 0;
      if (r == 0) break;
    }
  else
    c->p++;
  return have_id ? 1 : rv_jfail(c, "missing or non-integer 'id'");
}

/* annotations[i]; the segmentation is read after the object (it may precede image_id). */
static int annotation_elem(rv_jcur *c, rv_coco_obj *o, const rv_coco *gt, int load_segm) {
  int have_id = 0, have_img = 0, have_cat = 0, have_area = 0;
  const char *seg_at = NULL;
  if (!rv_jexpect(c, '{')) return rv_jfail(c, "not an object");
  if (!rv_jpeek(c, '}'))
    for (;;) {
      char k[32];
      size_t kl;
      if (!rv_jkey(c, k, sizeof k, &kl)) return 0;
      if (rv_jkey_is(k, kl, "id") || rv_jkey_is(k, kl, "image_id") || rv_jkey_is(k, kl, "category_id")) {
        int64_t *dst = kl == 2 ? &o->id : k[0] == 'i' ? &o->image_id : &o->category_id;
        if (!id_value(c, dst)) return rv_jfail(c, "'id', 'image_id' and 'category_id' must be integers");
        if (kl == 2) have_id = 1; else if (k[0] == 'i') have_img = 1; else have_cat = 1;
      } else if (rv_jkey_is(k, kl, "area")) {
        rv_jws(c);
        if (!(c->p < c->end && (*c->p == '-' || isdigit((unsigned char)*c->p))) || !rv_jnumber(c, &o->area))
          return rv_jfail(c, "missing or non-numeric 'area'");
        have_area = 1;
      } else if (rv_jkey_is(k, kl, "iscrowd")) {
        rv_jws(c);
        double v = 0;
        if (c->end - c->p >= 4 && memcmp(c->p, "true", 4) == 0) { c->p += 4; v = 1; }
        else if (c->end - c->p >= 5 && memcmp(c->p, "false", 5) == 0) { c->p += 5; v = 0; }
        else if (!(c->p < c->end && (*c->p == '-' || isdigit((unsigned char)*c->p))) || !rv_jnumber(c, &v))
          return rv_jfail(c, "'iscrowd' must be 0 or 1");
        o->iscrowd = v != 0;
      } else if (rv_jkey_is(k, kl, "bbox")) {
        if (!rv_jexpect(c, '[')) return rv_jfail(c, "'bbox' must be 4 numbers");
        if (rv_jpeek(c, ']')) {
          c->p++;
        } else {
          for (int i = 0; i < 4; i++)
            if ((i && !rv_jexpect(c, ',')) || !rv_jnumber(c, &o->bbox[i]) || !isfinite(o->bbox[i]))
              return rv_jfail(c, "'bbox' must be 4 numbers");
          if (!rv_jexpect(c, ']')) return rv_jfail(c, "'bbox' must be 4 numbers");
          o->has_bbox = 1;
        }
      } else if (rv_jkey_is(k, kl, "segmentation")) {
        rv_jws(c);
        seg_at = c->p;
        if (!rv_jskip(c)) return 0;
      } else if (!rv_jskip(c))
        return 0;
      int r = rv_jnext(c, '}');
      if (r < 0) return 0;
      if (r == 0) break;
    }
  else
    c->p++;
  if (!have_id || !have_img || !have_cat) return rv_jfail(c, "'id', 'image_id' and 'category_id' must be integers");
  if (!have_area || isnan(o->area)) return rv_jfail(c, "(id %lld): missing or non-numeric 'area'", (long long)o->id);
  if (!o->has_bbox && !load_segm) return rv_jfail(c, "(id %lld): 'bbox' must be 4 numbers", (long long)o->id);
  const rv_coco_image *im = rv_coco_find_image(gt, o->image_id);
  if (load_segm && im && rv_coco_find_category(gt, o->category_id)) {
    if (!seg_at) return rv_jfail(c, "(id %lld): no 'segmentation'", (long long)o->id);
    rv_jcur sc = {seg_at, c->end, ""};
    if (!rv_coco_parse_segm(&sc, &o->segm, (uint32_t)im->height, (uint32_t)im->width, 1, NULL))
      return rv_jfail(c, "(id %lld): %s", (long long)o->id, sc.err);
    o->has_segm = 1;
  }
  return 1;
}

/* parse element i of a split list with fn; 1 ok (the whole span consumed) */
#define PARSE_ELEM(c, starts, i, call)                                         \
  (((c).p = (starts)[i], (c).end = (starts)[(i) + 1] - 1, (c).err[0] = 0),   \
   (call) && (rv_jws(&(c)), (c).p == (c).end ? 1 : rv_jfail(&(c), "unexpected data after the object")))

rv_status rv_coco_load_mem(rv_coco **out, const char *json, size_t len, const char *name, int load_segm,
                           int threads, rv_ctx *ctx) {
  *out = NULL;
  rv_status st = RV_OK;
  const char **sp[3] = {NULL, NULL, NULL};
  size_t sn[3] = {0, 0, 0};
  int seen[3] = {0, 0, 0};
  static const char *const lists[3] = {"images", "annotations", "categories"};
  rv_coco *c = calloc(1, sizeof *c);
  if (!c) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name);
  c->path = strdup(name);
  rv_jcur cur = {json, json + len, ""};
  if (rv_jpeek(&cur, '[')) {
    st = rv_error(ctx, RV_ERR_FORMAT, "%s: the top level must be an object with images/annotations/categories", name);
    goto fail;
  }
  if (!rv_jexpect(&cur, '{')) goto syntax;
  if (rv_jpeek(&cur, '}'))
    cur.p++;
  else
    for (;;) {
      char k[32];
      size_t kl;
      if (!rv_jkey(&cur, k, sizeof k, &kl)) goto syntax;
      int which = -1;
      for (int i = 0; i < 3; i++)
        if (rv_jkey_is(k, kl, lists[i])) which = i;
      if (which >= 0 && rv_jpeek(&cur, '[')) {
        free(sp[which]);
        if (!rv_jsplit_list(&cur, &sp[which], &sn[which])) goto syntax;
        seen[which] = 1;
      } else if (which >= 0) {
        st = rv_error(ctx, RV_ERR_FORMAT, "%s: '%s' is not a list", name, lists[which]);
        goto fail;
      } else if (!rv_jskip(&cur))
        goto syntax;
      int r = rv_jnext(&cur, '}');
      if (r < 0) goto syntax;
      if (r == 0) break;
    }
  rv_jws(&cur);
  if (cur.p < cur.end && *cur.p) {
    rv_jfail(&cur, "data after the top-level object");
    goto syntax;
  }
  if (!seen[0]) { st = rv_error(ctx, RV_ERR_FORMAT, "%s: no 'images' list", name); goto fail; }
  if (!seen[2]) { st = rv_error(ctx, RV_ERR_FORMAT, "%s: no 'categories' list", name); goto fail; }
  size_t ni = sn[0], na = sn[1], nc = sn[2];
  c->images = calloc(ni ? ni : 1, sizeof *c->images);
  c->cats = calloc(nc ? nc : 1, sizeof *c->cats);
  c->anns = calloc(na ? na : 1, sizeof *c->anns);
  if (!c->images || !c->cats || !c->anns) goto nomem;
  c->n_images = ni;
  c->n_cats = nc;
  rv_jcur ec = {json, json, ""};
  for (size_t i = 0; i < ni; i++)
    if (!PARSE_ELEM(ec, sp[0], i, image_elem(&ec, &c->images[i]))) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: images[%zu]: %s", name, i, ec.err);
      goto fail;
    }
  for (size_t i = 0; i < nc; i++)
    if (!PARSE_ELEM(ec, sp[2], i, category_elem(&ec, &c->cats[i]))) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: categories[%zu]: %s", name, i, ec.err);
      goto fail;
    }
  long dup = build_index(&c->img_ids_sorted, &c->img_idx_sorted, sizeof(rv_coco_image), c->images, ni);
  if (dup == -2) goto nomem;
  if (dup >= 0) {
    st = rv_error(ctx, RV_ERR_FORMAT, "%s: images[%ld]: duplicate image id %lld", name, dup, (long long)c->images[dup].id);
    goto fail;
  }
  dup = build_index(&c->cat_ids_sorted, &c->cat_idx_sorted, sizeof(rv_coco_category), c->cats, nc);
  if (dup == -2) goto nomem;
  if (dup >= 0) {
    st = rv_error(ctx, RV_ERR_FORMAT, "%s: categories[%ld]: duplicate category id %lld", name, dup,
                  (long long)c->cats[dup].id);
    goto fail;
  }
  /* annotations in parallel; the first failing one is reported */
  long first_bad = -1;
  char msg[200] = "";
  int nth = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 256) num_threads(nth)
  for (long i = 0; i < (long)na; i++) {
    rv_jcur ac = {json, json, ""};
    if (!PARSE_ELEM(ac, sp[1], i, annotation_elem(&ac, &c->anns[i], c, load_segm))) {
#pragma omp critical(rv_coco_gt_bad)
      if (first_bad < 0 || i < first_bad) {
        first_bad = i;
        snprintf(msg, sizeof msg, "%s", ac.err);
      }
    }
  }
  c->n_anns = na;
  if (first_bad >= 0) {
    st = rv_error(ctx, RV_ERR_FORMAT, "%s: annotations[%ld]: %s", name, first_bad, msg);
    goto fail;
  }
  {
    int64_t *ids = NULL;
    size_t *idx = NULL;
    dup = build_index(&ids, &idx, sizeof(rv_coco_obj), c->anns, na);
    free(ids);
    free(idx);
    if (dup == -2) goto nomem;
    if (dup >= 0) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: annotations[%ld]: duplicate annotation id %lld", name, dup,
                    (long long)c->anns[dup].id);
      goto fail;
    }
  }
  c->has_segm = load_segm != 0;
  for (int i = 0; i < 3; i++) free(sp[i]);
  *out = c;
  return RV_OK;
syntax:
  st = rv_jsyntax_error(ctx, name, json, cur.p, cur.err[0] ? cur.err : "unexpected input");
  goto fail;
nomem:
  st = rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name);
fail:
  for (int i = 0; i < 3; i++) free(sp[i]);
  rv_coco_free(c);
  return st;
}

rv_status rv_coco_load(rv_coco **out, const char *path, int load_segm, int threads, rv_ctx *ctx) {
  rv_mapped_file f;
  *out = NULL;
  RV_TRY(rv_file_map(&f, path, ctx));
  rv_status st = rv_coco_load_mem(out, f.data, f.len, path, load_segm, threads, ctx);
  rv_file_unmap(&f);
  return st;
}

void rv_coco_results_free(rv_coco_results *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) rv_rle_free(&r->dets[i].segm);
  free(r->dets);
  r->dets = NULL;
  r->n = 0;
  rv_coco_pool pool = {r->pool};
  rv_coco_pool_free(&pool);
  r->pool = NULL;
}

void rv_coco_results_take_memory(rv_coco_results *dst, rv_coco_results *src) {
  rv_coco_pool d = {dst->pool}, s = {src->pool};
  rv_coco_pool_join(&d, &s);
  dst->pool = d.head;
  src->pool = NULL;
}

rv_status rv_coco_results_prepare(rv_coco_results *r, const rv_coco *gt, rv_iou_type t, rv_coco_area_mode mode,
                                  const char *what, rv_ctx *ctx) {
  if (!what) what = "results";
  r->n_unknown_category = 0;
  if (r->n == 0) return RV_OK;
  int box_branch = r->dets[0].has_bbox;
  for (size_t i = 0; i < r->n; i++) {
    rv_coco_obj *d = &r->dets[i];
    const rv_coco_image *im = rv_coco_find_image(gt, d->image_id);
    if (!im)
      return rv_error(ctx, RV_ERR_FORMAT, "%s: results[%zu]: image_id %lld is not in the ground truth %s", what, i,
                      (long long)d->image_id, gt->path ? gt->path : "");
    if (!rv_coco_find_category(gt, d->category_id)) r->n_unknown_category++;
    if (!isfinite(d->score))
      return rv_error(ctx, RV_ERR_FORMAT, "%s: results[%zu]: score is not a finite number", what, i);
    if (d->has_segm && (d->segm.h != (uint32_t)im->height || d->segm.w != (uint32_t)im->width))
      return rv_error(ctx, RV_ERR_SHAPE, "%s: results[%zu]: mask size %ux%u differs from image %lld (%dx%d)", what, i,
                      d->segm.h, d->segm.w, (long long)d->image_id, im->height, im->width);
    d->id = (int64_t)i + 1;
    d->iscrowd = 0;
    if (box_branch) {
      if (!d->has_bbox)
        return rv_error(ctx, RV_ERR_FORMAT,
                        "%s: results[%zu]: no 'bbox' although results[0] has one (pycocotools' loadRes needs it)",
                        what, i);
      if (t == RV_IOU_SEGM && !d->has_segm) {
        double x1 = d->bbox[0], y1 = d->bbox[1], x2 = d->bbox[0] + d->bbox[2], y2 = d->bbox[1] + d->bbox[3];
        double xy[8] = {x1, y1, x1, y2, x2, y2, x2, y1};
        rv_status st = rv_rle_from_poly(&d->segm, xy, 4, (uint32_t)im->height, (uint32_t)im->width, ctx);
        if (st != RV_OK) return prefix_error(ctx, st, what, "results", i);
        d->has_segm = 1;
      }
      d->area = d->bbox[2] * d->bbox[3];
      if (mode == RV_COCO_AREA_MASK && d->has_segm) d->area = (double)rv_rle_area(&d->segm);
    } else {
      if (!d->has_segm)
        return rv_error(ctx, RV_ERR_FORMAT,
                        "%s: results[%zu]: no 'segmentation' although results[0] has no bbox (pycocotools' "
                        "loadRes needs it)",
                        what, i);
      rv_rle_info in; /* area and toBbox from one pass over the runs */
      rv_rle_info_get(&in, &d->segm);
      d->area = (double)in.area;
      if (!d->has_bbox) {
        memcpy(d->bbox, in.bb, sizeof in.bb);
        d->has_bbox = 1;
      }
    }
  }
  return RV_OK;
}

rv_status rv_coco_load_results_mem(rv_coco_results *r, const rv_coco *gt, const char *json, size_t len,
                                   const char *name, rv_iou_type t, rv_coco_area_mode mode, int threads,
                                   rv_ctx *ctx) {
  double t0 = rv_coco_mono_s();
  RV_TRY(rv_coco_parse_results(r, gt, json, len, name, t, mode, threads, ctx));
  double t1 = rv_coco_mono_s();
  rv_status st = rv_coco_results_prepare(r, gt, t, mode, name, ctx);
  if (st != RV_OK) rv_coco_results_free(r);
  else
    rv_log(ctx, RV_LOG_DEBUG, "%s: parse and decode %.3f s, loadRes rules %.3f s", name, t1 - t0, rv_coco_mono_s() - t1);
  return st;
}

rv_status rv_coco_load_results(rv_coco_results *r, const rv_coco *gt, const char *path, rv_iou_type t,
                               rv_coco_area_mode mode, int threads, rv_ctx *ctx) {
  rv_mapped_file f;
  memset(r, 0, sizeof *r);
  RV_TRY(rv_file_map(&f, path, ctx));
  rv_status st = rv_coco_load_results_mem(r, gt, f.data, f.len, path, t, mode, threads, ctx);
  rv_file_unmap(&f);
  return st;
}

rv_status rv_coco_results_write(const char *path, const rv_coco_obj *dets, size_t n, int with_segm, rv_ctx *ctx) {
  rv_out_file o;
  RV_TRY(rv_out_open(&o, path, ctx));
  FILE *f = o.f;
  int bad = fputc('[', f) == EOF;
  for (size_t i = 0; i < n && !bad; i++) {
    const rv_coco_obj *d = &dets[i];
    bad |= fprintf(f, "%s{\"image_id\": %lld, \"bbox\": [%.17g, %.17g, %.17g, %.17g], \"score\": %.17g, "
                      "\"category_id\": %lld",
                   i ? ", " : "", (long long)d->image_id, d->bbox[0], d->bbox[1], d->bbox[2], d->bbox[3], d->score,
                   (long long)d->category_id) < 0;
    if (with_segm && d->has_segm) {
      char *s = rv_rle_to_string(&d->segm);
      if (!s) {
        rv_out_abort(&o);
        return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", path);
      }
      /* the alphabet '0'..'o' includes '\\' (92), which JSON must escape */
      bad |= fprintf(f, ", \"segmentation\": {\"size\": [%u, %u], \"counts\": \"", d->segm.h, d->segm.w) < 0;
      for (const char *c = s; *c && !bad; c++) {
        if (*c == '\\') bad |= fputc('\\', f) == EOF;
        bad |= fputc(*c, f) == EOF;
      }
      bad |= fputs("\"}", f) == EOF;
      free(s);
    }
    bad |= fputc('}', f) == EOF;
  }
  fputs("]\n", f);
  return rv_out_close(&o, ctx); /* checks the stream's error flag: "write failed" */
}

rv_status rv_coco_evaluate(rv_cocoeval **ev, const rv_coco *gt, const rv_coco_results *res,
                           const rv_cocoeval_params *p, rv_ctx *ctx) {
  *ev = NULL;
  if (p->iou_type == RV_IOU_SEGM && !gt->has_segm)
    return rv_error(ctx, RV_ERR_ARG, "%s: segm evaluation needs the gt loaded with masks", gt->path);
  int64_t *img = malloc(sizeof(int64_t) * (gt->n_images ? gt->n_images : 1));
  int64_t *cat = malloc(sizeof(int64_t) * (gt->n_cats ? gt->n_cats : 1));
  if (!img || !cat) {
    free(img);
    free(cat);
    return rv_error(ctx, RV_ERR_NOMEM, "cocoeval: out of memory");
  }
  for (size_t i = 0; i < gt->n_images; i++) img[i] = gt->images[i].id;
  for (size_t i = 0; i < gt->n_cats; i++) cat[i] = gt->cats[i].id;
  rv_cocoeval_input in = {img, gt->n_images, cat, gt->n_cats, gt->anns, gt->n_anns, res->dets, res->n};
  double t0 = rv_coco_mono_s();
  rv_status st = rv_cocoeval_evaluate(ev, p, &in, ctx);
  double t1 = rv_coco_mono_s();
  if (st == RV_OK) st = rv_cocoeval_accumulate(*ev, ctx);
  if (st == RV_OK)
    rv_log(ctx, RV_LOG_DEBUG, "cocoeval %s: evaluate %.3f s, accumulate %.3f s", p->iou_type == RV_IOU_BBOX ? "bbox" : "segm",
           t1 - t0, rv_coco_mono_s() - t1);
  if (st != RV_OK) {
    rv_cocoeval_free(*ev);
    *ev = NULL;
  }
  free(img);
  free(cat);
  return st;
}
