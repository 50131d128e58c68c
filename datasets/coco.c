/* COCO instances JSON loading with pycocotools' rules (coco.py: createIndex, annToRLE) on the
 * streaming scanner of json_scan.h: the top-level lists are split into element spans,
 * annotations are parsed (and their masks rasterised) in parallel, and the first failing
 * element is the one reported, so messages do not depend on threads. Results files (loadRes)
 * are datasets/coco_results.c; the JSON pieces both share, datasets/coco_json.c. */
#define _POSIX_C_SOURCE 200809L
#include "datasets/coco.h"
#include "datasets/coco_json.h"

#include "core/fs.h"
#include "datasets/json_scan.h"

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

/* rv_coco.lazy: the segmentation text of annotation i is text[off[i] .. off[i + 1]) (empty:
 * the annotation has none) */
typedef struct {
  char *text;
  size_t *off;
} coco_lazy;

static void lazy_free(coco_lazy *z) {
  if (!z) return;
  free(z->text);
  free(z->off);
  free(z);
}

void rv_coco_free(rv_coco *c) {
  if (!c) return;
  lazy_free(c->lazy);
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
        if (!rv_coco_jid(c, &im->id)) return rv_jfail(c, "missing or non-integer 'id'");
        have_id = 1;
      } else if (rv_jkey_is(k, kl, "width") || rv_jkey_is(k, kl, "height")) {
        if (!rv_coco_jnumber(c, k[0] == 'w' ? &w : &h))
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
        if (!rv_coco_jid(c, &cat->id)) return rv_jfail(c, "missing or non-integer 'id'");
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
static int annotation_elem(rv_jcur *c, rv_coco_obj *o, const rv_coco *gt, int load_segm, const char **span) {
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
        if (!rv_coco_jid(c, dst)) return rv_jfail(c, "'id', 'image_id' and 'category_id' must be integers");
        if (kl == 2) have_id = 1; else if (k[0] == 'i') have_img = 1; else have_cat = 1;
      } else if (rv_jkey_is(k, kl, "area")) {
        if (!rv_coco_jnumber(c, &o->area))
          return rv_jfail(c, "missing or non-numeric 'area'");
        have_area = 1;
      } else if (rv_jkey_is(k, kl, "iscrowd")) {
        rv_jws(c);
        double v = 0;
        if (c->end - c->p >= 4 && memcmp(c->p, "true", 4) == 0) { c->p += 4; v = 1; }
        else if (c->end - c->p >= 5 && memcmp(c->p, "false", 5) == 0) { c->p += 5; v = 0; }
        else if (!rv_coco_jnumber(c, &v))
          return rv_jfail(c, "'iscrowd' must be 0 or 1");
        o->iscrowd = v != 0;
      } else if (rv_jkey_is(k, kl, "bbox")) {
        if (!rv_coco_jbbox(c, o->bbox, &o->has_bbox)) return 0;
      } else if (rv_jkey_is(k, kl, "segmentation")) {
        rv_jws(c);
        seg_at = c->p;
        if (!rv_jskip(c)) return 0;
        if (span) {
          span[0] = seg_at;
          span[1] = c->p;
        }
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

static rv_status load_mem(rv_coco **out, const char *json, size_t len, const char *name, int load_segm, int keep,
                          int threads, rv_ctx *ctx) {
  *out = NULL;
  const char **spans = NULL; /* keep: each annotation's segmentation [begin, end) */
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
  if (keep && !load_segm && !(spans = calloc(2 * (na ? na : 1), sizeof *spans))) goto nomem;
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
    if (!PARSE_ELEM(ac, sp[1], i, annotation_elem(&ac, &c->anns[i], c, load_segm, spans ? spans + 2 * i : NULL))) {
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
  if (spans) { /* the segmentations' text, copied out of json */
    coco_lazy *z = calloc(1, sizeof *z);
    if (!z || !(z->off = malloc(sizeof(size_t) * (na + 1)))) {
      lazy_free(z);
      goto nomem;
    }
    c->lazy = z;
    z->off[0] = 0;
    for (size_t i = 0; i < na; i++) z->off[i + 1] = z->off[i] + (size_t)(spans[2 * i + 1] - spans[2 * i]);
    if (!(z->text = malloc(z->off[na] ? z->off[na] : 1))) goto nomem;
    for (size_t i = 0; i < na; i++)
      if (z->off[i + 1] > z->off[i]) memcpy(z->text + z->off[i], spans[2 * i], z->off[i + 1] - z->off[i]);
    free(spans);
    spans = NULL;
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
  free(spans);
  rv_coco_free(c);
  return st;
}

rv_status rv_coco_load_mem(rv_coco **out, const char *json, size_t len, const char *name, int load_segm,
                           int threads, rv_ctx *ctx) {
  return load_mem(out, json, len, name, load_segm, 0, threads, ctx);
}

rv_status rv_coco_load_mem_lazy(rv_coco **out, const char *json, size_t len, const char *name, int threads,
                                rv_ctx *ctx) {
  return load_mem(out, json, len, name, 0, 1, threads, ctx);
}

rv_status rv_coco_load_lazy(rv_coco **out, const char *path, int threads, rv_ctx *ctx) {
  rv_mapped_file f;
  *out = NULL;
  RV_TRY(rv_file_map(&f, path, ctx));
  rv_status st = load_mem(out, f.data, f.len, path, 0, 1, threads, ctx);
  rv_file_unmap(&f);
  return st;
}

/* annotation_elem's masks, on the kept text: the same checks and messages */
rv_status rv_coco_add_masks(rv_coco *c, int threads, rv_ctx *ctx) {
  if (c->has_segm) return RV_OK;
  coco_lazy *z = c->lazy;
  if (!z) return rv_error(ctx, RV_ERR_ARG, "%s: loaded without its segmentations", c->path);
  long first_bad = -1;
  char msg[200] = "";
  int nth = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 256) num_threads(nth)
  for (long i = 0; i < (long)c->n_anns; i++) {
    rv_coco_obj *o = &c->anns[i];
    const rv_coco_image *im = rv_coco_find_image(c, o->image_id);
    if (!im || !rv_coco_find_category(c, o->category_id)) continue;
    rv_jcur sc = {z->text + z->off[i], z->text + z->off[i + 1], ""};
    char err[200];
    err[0] = 0;
    if (z->off[i + 1] == z->off[i])
      snprintf(err, sizeof err, "(id %lld): no 'segmentation'", (long long)o->id);
    else if (!rv_coco_parse_segm(&sc, &o->segm, (uint32_t)im->height, (uint32_t)im->width, 1, NULL))
      snprintf(err, sizeof err, "(id %lld): %s", (long long)o->id, sc.err);
    else
      o->has_segm = 1;
    if (err[0]) {
#pragma omp critical(rv_coco_gt_bad)
      if (first_bad < 0 || i < first_bad) {
        first_bad = i;
        snprintf(msg, sizeof msg, "%s", err);
      }
    }
  }
  if (first_bad >= 0) { /* as it was: no masks */
    for (size_t i = 0; i < c->n_anns; i++) {
      rv_rle_free(&c->anns[i].segm);
      c->anns[i].has_segm = 0;
    }
    return rv_error(ctx, RV_ERR_FORMAT, "%s: annotations[%ld]: %s", c->path, first_bad, msg);
  }
  c->has_segm = 1;
  c->lazy = NULL;
  lazy_free(z);
  return RV_OK;
}

rv_status rv_coco_load(rv_coco **out, const char *path, int load_segm, int threads, rv_ctx *ctx) {
  rv_mapped_file f;
  *out = NULL;
  RV_TRY(rv_file_map(&f, path, ctx));
  rv_status st = rv_coco_load_mem(out, f.data, f.len, path, load_segm, threads, ctx);
  rv_file_unmap(&f);
  return st;
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
