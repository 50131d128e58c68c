/* COCO instances / results JSON loading with pycocotools' rules (coco.py: createIndex,
 * annToRLE, loadRes). Masks are converted in parallel (OpenMP); a failing entry is then
 * re-converted serially so that the error message is deterministic (the first bad entry). */
#define _POSIX_C_SOURCE 200809L
#include "datasets/coco_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static rv_status read_all(const char *path, char **buf, size_t *len, rv_ctx *ctx) {
  FILE *f = fopen(path, "rb");
  if (!f) return rv_error(ctx, RV_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
  if (fseek(f, 0, SEEK_END) != 0) {
    fclose(f);
    return rv_error(ctx, RV_ERR_IO, "%s: cannot seek", path);
  }
  long n = ftell(f);
  if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return rv_error(ctx, RV_ERR_IO, "%s: cannot read size", path);
  }
  char *b = malloc((size_t)n + 1);
  if (!b) {
    fclose(f);
    return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory (%ld bytes)", path, n);
  }
  size_t got = fread(b, 1, (size_t)n, f);
  fclose(f);
  if (got != (size_t)n) {
    free(b);
    return rv_error(ctx, RV_ERR_IO, "%s: short read", path);
  }
  b[n] = 0;
  *buf = b;
  *len = (size_t)n;
  return RV_OK;
}

static rv_status parse_json(cJSON **out, const char *json, size_t len, const char *name, rv_ctx *ctx) {
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
  if (!root) {
    size_t off = end && end >= json ? (size_t)(end - json) : 0, line = 1, col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
      if (json[i] == '\n') {
        line++;
        col = 1;
      } else
        col++;
    }
    return rv_error(ctx, RV_ERR_FORMAT, "%s: malformed JSON near line %zu column %zu", name, line, col);
  }
  *out = root;
  return RV_OK;
}

/* integral JSON number -> int64 (ids) */
static int get_id(const cJSON *o, const char *key, int64_t *v) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(it)) return 0;
  double d = it->valuedouble;
  if (!(fabs(d) <= 9007199254740992.0) || d != floor(d)) return 0;
  *v = (int64_t)d;
  return 1;
}

static int get_num(const cJSON *o, const char *key, double *v) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(it)) return 0;
  *v = it->valuedouble;
  return 1;
}

/* [x, y, w, h]; returns 1 ok, 0 absent or empty list, -1 malformed */
static int get_bbox(const cJSON *o, double bb[4]) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, "bbox");
  if (!it) return 0;
  if (!cJSON_IsArray(it)) return -1;
  int n = cJSON_GetArraySize(it);
  if (n == 0) return 0;
  if (n != 4) return -1;
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, it) {
    if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble)) return -1;
    bb[i++] = e->valuedouble;
  }
  return 1;
}

static size_t count_items(const cJSON *arr) {
  size_t n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) n++;
  return n;
}

static rv_status poly_part(rv_rle *r, const cJSON *part, size_t idx, int as_box, uint32_t h, uint32_t w,
                           rv_ctx *ctx) {
  if (!cJSON_IsArray(part)) return rv_error(ctx, RV_ERR_FORMAT, "polygon %zu is not a list", idx);
  size_t n = count_items(part);
  if (as_box && n != 4)
    return rv_error(ctx, RV_ERR_FORMAT, "part %zu has %zu numbers but part 0 has 4 (a box list)", idx, n);
  double *xy = malloc(sizeof(double) * (n ? n : 1));
  if (!xy) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  size_t i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, part) {
    if (!cJSON_IsNumber(e)) {
      free(xy);
      return rv_error(ctx, RV_ERR_FORMAT, "polygon %zu: coordinate %zu is not a number", idx, i);
    }
    xy[i++] = e->valuedouble;
  }
  rv_status st;
  if (as_box)
    st = rv_rle_from_bbox(r, xy, h, w, ctx);
  else if (n / 2 == 0)
    st = rv_error(ctx, RV_ERR_FORMAT, "polygon %zu has %zu coordinates", idx, n);
  else
    st = rv_rle_from_poly(r, xy, n / 2, h, w, ctx);
  free(xy);
  return st;
}

/* COCO.annToRLE: polygons (frPyObjects + merge), uncompressed RLE or compressed RLE. */
rv_status rv_coco_seg_to_rle(rv_rle *out, const cJSON *seg, uint32_t h, uint32_t w, rv_ctx *ctx) {
  if (cJSON_IsArray(seg)) {
    size_t n = count_items(seg);
    if (n == 0) return rv_error(ctx, RV_ERR_FORMAT, "'segmentation' is an empty list");
    const cJSON *first = seg->child;
    if (!cJSON_IsArray(first)) return rv_error(ctx, RV_ERR_FORMAT, "'segmentation' must be a list of polygons");
    size_t n0 = count_items(first);
    if (n0 < 4)
      return rv_error(ctx, RV_ERR_FORMAT, "polygon 0 has %zu coordinates (pycocotools needs 4 for a box or more)",
                      n0);
    int as_box = n0 == 4;
    rv_rle *parts = calloc(n, sizeof *parts);
    if (!parts) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    rv_status st = RV_OK;
    size_t i = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, seg) {
      st = poly_part(&parts[i], part, i, as_box, h, w, ctx);
      if (st != RV_OK) break;
      i++;
    }
    if (st == RV_OK) st = rv_rle_merge(out, parts, n, 0, ctx);
    for (size_t j = 0; j < n; j++) rv_rle_free(&parts[j]);
    free(parts);
    return st;
  }
  if (!cJSON_IsObject(seg)) return rv_error(ctx, RV_ERR_FORMAT, "'segmentation' must be polygons or an RLE object");
  const cJSON *size = cJSON_GetObjectItemCaseSensitive(seg, "size");
  const cJSON *counts = cJSON_GetObjectItemCaseSensitive(seg, "counts");
  if (!cJSON_IsArray(size) || cJSON_GetArraySize(size) != 2 || !cJSON_IsNumber(size->child) ||
      !cJSON_IsNumber(size->child->next))
    return rv_error(ctx, RV_ERR_FORMAT, "RLE 'size' must be [height, width]");
  double dh = size->child->valuedouble, dw = size->child->next->valuedouble;
  if (!(dh >= 0 && dw >= 0 && dh == floor(dh) && dw == floor(dw) && dh * dw < 4294967296.0))
    return rv_error(ctx, RV_ERR_FORMAT, "RLE 'size' [%g, %g] is not a valid mask size", dh, dw);
  uint32_t rh = (uint32_t)dh, rw = (uint32_t)dw;
  if (cJSON_IsString(counts)) return rv_rle_from_string(out, counts->valuestring, rh, rw, "segmentation", ctx);
  if (cJSON_IsArray(counts)) {
    size_t n = count_items(counts), i = 0;
    uint32_t *c = malloc(sizeof(uint32_t) * (n ? n : 1));
    if (!c) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    const cJSON *e;
    cJSON_ArrayForEach(e, counts) {
      double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
      if (!(v >= 0 && v <= 4294967295.0 && v == floor(v))) {
        free(c);
        return rv_error(ctx, RV_ERR_FORMAT, "uncompressed RLE count %zu is not a non-negative integer", i);
      }
      c[i++] = (uint32_t)v;
    }
    rv_status st = rv_rle_from_counts(out, c, n, rh, rw, "segmentation (uncompressed RLE)", ctx);
    free(c);
    return st;
  }
  return rv_error(ctx, RV_ERR_FORMAT, "RLE 'counts' must be a string or a list of integers");
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

/* sorted lookup table; returns the index of a duplicated id or -1 */
static long build_index(int64_t **ids, size_t **idx, const int64_t *src, size_t stride_bytes, const void *base,
                        size_t n) {
  id_idx *t = malloc(sizeof *t * (n ? n : 1));
  *ids = malloc(sizeof(int64_t) * (n ? n : 1));
  *idx = malloc(sizeof(size_t) * (n ? n : 1));
  if (!t || !*ids || !*idx) {
    free(t);
    return -2;
  }
  (void)src;
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

static char *dup_str(const cJSON *o, const char *key) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(it)) return NULL;
  return strdup(it->valuestring);
}

static const cJSON **item_array(const cJSON *arr, size_t n) {
  const cJSON **v = malloc(sizeof *v * (n ? n : 1));
  if (!v) return NULL;
  size_t i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) v[i++] = e;
  return v;
}

/* Convert segmentations in parallel: items[i] -> objs[i].segm for the flagged entries. On
 * failure the first failing entry is redone serially to produce its message. */
static rv_status convert_masks(rv_coco_obj *objs, const cJSON **items, const uint8_t *todo, const uint32_t *hw,
                               size_t n, int threads, const char *name, const char *section, rv_ctx *ctx) {
  long first_bad = -1;
  int nth = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 64) num_threads(nth)
  for (long i = 0; i < (long)n; i++) {
    if (!todo[i]) continue;
    const cJSON *seg = cJSON_GetObjectItemCaseSensitive(items[i], "segmentation");
    if (rv_coco_seg_to_rle(&objs[i].segm, seg, hw[2 * i], hw[2 * i + 1], NULL) != RV_OK) {
#pragma omp critical(rv_coco_bad)
      if (first_bad < 0 || i < first_bad) first_bad = i;
    } else
      objs[i].has_segm = 1;
  }
  if (first_bad >= 0) {
    rv_rle tmp = {0};
    const cJSON *seg = cJSON_GetObjectItemCaseSensitive(items[first_bad], "segmentation");
    rv_status st = rv_coco_seg_to_rle(&tmp, seg, hw[2 * first_bad], hw[2 * first_bad + 1], ctx);
    rv_rle_free(&tmp);
    if (st == RV_OK) st = rv_error(ctx, RV_ERR_INTERNAL, "mask conversion failed");
    return prefix_error(ctx, st, name, section, (size_t)first_bad);
  }
  return RV_OK;
}

rv_status rv_coco_load_mem(rv_coco **out, const char *json, size_t len, const char *name, int load_segm,
                           int threads, rv_ctx *ctx) {
  *out = NULL;
  cJSON *root = NULL;
  RV_TRY(parse_json(&root, json, len, name, ctx));
  rv_status st = RV_OK;
  const cJSON **items = NULL;
  uint8_t *todo = NULL;
  uint32_t *hw = NULL;
  rv_coco *c = calloc(1, sizeof *c);
  if (!c) {
    cJSON_Delete(root);
    return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name);
  }
  c->path = strdup(name);
  if (!cJSON_IsObject(root)) {
    st = rv_error(ctx, RV_ERR_FORMAT, "%s: the top level must be an object with images/annotations/categories", name);
    goto fail;
  }
  const cJSON *jimgs = cJSON_GetObjectItemCaseSensitive(root, "images");
  const cJSON *janns = cJSON_GetObjectItemCaseSensitive(root, "annotations");
  const cJSON *jcats = cJSON_GetObjectItemCaseSensitive(root, "categories");
  if (!cJSON_IsArray(jimgs)) { st = rv_error(ctx, RV_ERR_FORMAT, "%s: no 'images' list", name); goto fail; }
  if (!cJSON_IsArray(jcats)) { st = rv_error(ctx, RV_ERR_FORMAT, "%s: no 'categories' list", name); goto fail; }
  if (janns && !cJSON_IsArray(janns)) { st = rv_error(ctx, RV_ERR_FORMAT, "%s: 'annotations' is not a list", name); goto fail; }
  size_t ni = count_items(jimgs), nc = count_items(jcats), na = janns ? count_items(janns) : 0;
  c->images = calloc(ni ? ni : 1, sizeof *c->images);
  c->cats = calloc(nc ? nc : 1, sizeof *c->cats);
  c->anns = calloc(na ? na : 1, sizeof *c->anns);
  if (!c->images || !c->cats || !c->anns) goto nomem;
  size_t i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, jimgs) {
    rv_coco_image *im = &c->images[i];
    double w, h;
    if (!cJSON_IsObject(e) || !get_id(e, "id", &im->id)) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: images[%zu]: missing or non-integer 'id'", name, i);
      goto fail;
    }
    if (!get_num(e, "width", &w) || !get_num(e, "height", &h) || !(w >= 1 && h >= 1 && w <= 1e6 && h <= 1e6) ||
        w != floor(w) || h != floor(h) || w * h >= 4294967296.0) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: images[%zu] (id %lld): 'width'/'height' missing or invalid", name, i,
                    (long long)im->id);
      goto fail;
    }
    im->width = (int32_t)w;
    im->height = (int32_t)h;
    im->file_name = dup_str(e, "file_name");
    i++;
  }
  c->n_images = ni;
  i = 0;
  cJSON_ArrayForEach(e, jcats) {
    if (!cJSON_IsObject(e) || !get_id(e, "id", &c->cats[i].id)) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: categories[%zu]: missing or non-integer 'id'", name, i);
      goto fail;
    }
    c->cats[i].name = dup_str(e, "name");
    i++;
  }
  c->n_cats = nc;
  long dup = build_index(&c->img_ids_sorted, &c->img_idx_sorted, NULL, sizeof(rv_coco_image), c->images, ni);
  if (dup == -2) goto nomem;
  if (dup >= 0) {
    st = rv_error(ctx, RV_ERR_FORMAT, "%s: images[%ld]: duplicate image id %lld", name, dup,
                  (long long)c->images[dup].id);
    goto fail;
  }
  dup = build_index(&c->cat_ids_sorted, &c->cat_idx_sorted, NULL, sizeof(rv_coco_category), c->cats, nc);
  if (dup == -2) goto nomem;
  if (dup >= 0) {
    st = rv_error(ctx, RV_ERR_FORMAT, "%s: categories[%ld]: duplicate category id %lld", name, dup,
                  (long long)c->cats[dup].id);
    goto fail;
  }
  items = janns ? item_array(janns, na) : NULL;
  todo = calloc(na ? na : 1, 1);
  hw = calloc(na ? 2 * na : 2, sizeof *hw);
  if ((na && !items) || !todo || !hw) goto nomem;
  for (i = 0; i < na; i++) {
    const cJSON *a = items[i];
    rv_coco_obj *o = &c->anns[i];
    if (!cJSON_IsObject(a)) { st = rv_error(ctx, RV_ERR_FORMAT, "%s: annotations[%zu]: not an object", name, i); goto fail; }
    if (!get_id(a, "id", &o->id) || !get_id(a, "image_id", &o->image_id) || !get_id(a, "category_id", &o->category_id)) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: annotations[%zu]: 'id', 'image_id' and 'category_id' must be integers",
                    name, i);
      goto fail;
    }
    if (!get_num(a, "area", &o->area) || isnan(o->area)) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: annotations[%zu] (id %lld): missing or non-numeric 'area'", name, i,
                    (long long)o->id);
      goto fail;
    }
    const cJSON *cr = cJSON_GetObjectItemCaseSensitive(a, "iscrowd");
    if (cr && !cJSON_IsNumber(cr) && !cJSON_IsBool(cr)) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: annotations[%zu] (id %lld): 'iscrowd' must be 0 or 1", name, i,
                    (long long)o->id);
      goto fail;
    }
    o->iscrowd = cr ? (cJSON_IsBool(cr) ? cJSON_IsTrue(cr) : cr->valuedouble != 0) : 0;
    int bb = get_bbox(a, o->bbox);
    if (bb < 0 || (bb == 0 && !load_segm)) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: annotations[%zu] (id %lld): 'bbox' must be 4 numbers", name, i,
                    (long long)o->id);
      goto fail;
    }
    o->has_bbox = bb > 0;
    const rv_coco_image *im = rv_coco_find_image(c, o->image_id);
    if (load_segm && im && rv_coco_find_category(c, o->category_id)) {
      if (!cJSON_GetObjectItemCaseSensitive(a, "segmentation")) {
        st = rv_error(ctx, RV_ERR_FORMAT, "%s: annotations[%zu] (id %lld): no 'segmentation'", name, i,
                      (long long)o->id);
        goto fail;
      }
      todo[i] = 1;
      hw[2 * i] = (uint32_t)im->height;
      hw[2 * i + 1] = (uint32_t)im->width;
    }
  }
  c->n_anns = na;
  {
    int64_t *ids = NULL;
    size_t *idx = NULL;
    dup = build_index(&ids, &idx, NULL, sizeof(rv_coco_obj), c->anns, na);
    free(ids);
    free(idx);
    if (dup == -2) goto nomem;
    if (dup >= 0) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: annotations[%ld]: duplicate annotation id %lld", name, dup,
                    (long long)c->anns[dup].id);
      goto fail;
    }
  }
  if (load_segm) {
    st = convert_masks(c->anns, items, todo, hw, na, threads, name, "annotations", ctx);
    if (st != RV_OK) goto fail;
    c->has_segm = 1;
  }
  free(items);
  free(todo);
  free(hw);
  cJSON_Delete(root);
  *out = c;
  return RV_OK;
nomem:
  st = rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name);
fail:
  free(items);
  free(todo);
  free(hw);
  cJSON_Delete(root);
  rv_coco_free(c);
  return st;
}

rv_status rv_coco_load(rv_coco **out, const char *path, int load_segm, int threads, rv_ctx *ctx) {
  char *buf = NULL;
  size_t len = 0;
  *out = NULL;
  RV_TRY(read_all(path, &buf, &len, ctx));
  rv_status st = rv_coco_load_mem(out, buf, len, path, load_segm, threads, ctx);
  free(buf);
  return st;
}

void rv_coco_results_free(rv_coco_results *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) rv_rle_free(&r->dets[i].segm);
  free(r->dets);
  r->dets = NULL;
  r->n = 0;
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
      d->area = (double)rv_rle_area(&d->segm);
      if (!d->has_bbox) {
        rv_rle_to_bbox(&d->segm, d->bbox);
        d->has_bbox = 1;
      }
    }
  }
  return RV_OK;
}

rv_status rv_coco_load_results_mem(rv_coco_results *r, const rv_coco *gt, const char *json, size_t len,
                                   const char *name, rv_iou_type t, rv_coco_area_mode mode, int threads,
                                   rv_ctx *ctx) {
  RV_TRY(rv_coco_parse_results(r, gt, json, len, name, t, mode, threads, ctx));
  rv_status st = rv_coco_results_prepare(r, gt, t, mode, name, ctx);
  if (st != RV_OK) rv_coco_results_free(r);
  return st;
}

rv_status rv_coco_load_results(rv_coco_results *r, const rv_coco *gt, const char *path, rv_iou_type t,
                               rv_coco_area_mode mode, int threads, rv_ctx *ctx) {
  char *buf = NULL;
  size_t len = 0;
  memset(r, 0, sizeof *r);
  RV_TRY(read_all(path, &buf, &len, ctx));
  rv_status st = rv_coco_load_results_mem(r, gt, buf, len, path, t, mode, threads, ctx);
  free(buf);
  return st;
}

rv_status rv_coco_results_write(const char *path, const rv_coco_obj *dets, size_t n, int with_segm, rv_ctx *ctx) {
  size_t plen = strlen(path);
  char *tmp = malloc(plen + 32);
  if (!tmp) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", path);
  snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    rv_status st = rv_error(ctx, RV_ERR_IO, "%s: cannot write (%s)", tmp, strerror(errno));
    free(tmp);
    return st;
  }
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
        bad = 1;
        break;
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
  bad |= fputs("]\n", f) == EOF;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    remove(tmp);
    free(tmp);
    return rv_error(ctx, RV_ERR_IO, "%s: write failed (%s)", path, strerror(errno));
  }
  free(tmp);
  return RV_OK;
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
  rv_status st = rv_cocoeval_evaluate(ev, p, &in, ctx);
  if (st == RV_OK) st = rv_cocoeval_accumulate(*ev, ctx);
  if (st != RV_OK) {
    rv_cocoeval_free(*ev);
    *ev = NULL;
  }
  free(img);
  free(cat);
  return st;
}
