/* Fast COCO results reader: a results file is a flat JSON list of small objects (485k for a
 * val2017 run, ~140 MB with masks), so it is parsed without building a tree (json_scan.h): a
 * serial pass splits the list into element spans, then the elements are parsed in parallel
 * straight into rv_coco_obj, RLE strings decoded in place into per-thread pool blocks. Errors name the file and element
 * ("dt.json: results[12]: ..."). */
#define _POSIX_C_SOURCE 200809L
#include "datasets/coco_json.h"
#include "datasets/coco.h"

#include "core/fs.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One element: {image_id, category_id, score, bbox?, segmentation?, anything else}. The
 * segmentation is decoded where it stands when image_id came before it (polygons need the
 * image size), otherwise after the object. */
static int element(rv_jcur *c, rv_coco_obj *d, const rv_coco *gt, int want_segm, rv_coco_pool *pool) {
  int have_img = 0, have_cat = 0, have_score = 0;
  const char *seg_at = NULL;
  const rv_coco_image *seg_im = NULL; /* the image the mask was decoded for */
  if (!rv_jexpect(c, '{')) return rv_jfail(c, "not an object");
  if (!rv_jpeek(c, '}'))
    for (;;) {
      char k[32];
      size_t kl;
      if (!rv_jkey(c, k, sizeof k, &kl)) return 0;
      if (rv_jkey_is(k, kl, "image_id") || rv_jkey_is(k, kl, "category_id")) {
        int img = k[0] == 'i';
        if (!rv_coco_jid(c, img ? &d->image_id : &d->category_id))
          return rv_jfail(c, "'image_id' and 'category_id' must be integers");
        if (img) have_img = 1; else have_cat = 1;
      } else if (rv_jkey_is(k, kl, "score")) {
        if (!rv_coco_jnumber(c, &d->score) || !isfinite(d->score))
          return rv_jfail(c, "missing or non-finite 'score'");
        have_score = 1;
      } else if (rv_jkey_is(k, kl, "bbox")) {
        if (!rv_coco_jbbox(c, d->bbox, &d->has_bbox)) return 0;
      } else if (rv_jkey_is(k, kl, "segmentation")) {
        rv_jws(c);
        seg_at = c->p;
        if (d->has_segm) { /* a repeated key: the last one counts */
          rv_rle_free(&d->segm);
          d->has_segm = 0;
        }
        /* decoded right away when image_id came first (mmdet's key order), else after the object */
        seg_im = want_segm && have_img ? rv_coco_find_image(gt, d->image_id) : NULL;
        if (!rv_coco_parse_segm(c, seg_im ? &d->segm : NULL, seg_im ? (uint32_t)seg_im->height : 0,
                                seg_im ? (uint32_t)seg_im->width : 0, seg_im != NULL, pool))
          return 0;
        d->has_segm = seg_im != NULL;
      } else if (!rv_jskip(c))
        return 0;
      int r = rv_jnext(c, '}');
      if (r < 0) return 0;
      if (r == 0) break;
    }
  else
    c->p++;
  if (!have_img || !have_cat) return rv_jfail(c, "'image_id' and 'category_id' must be integers");
  if (!have_score) return rv_jfail(c, "missing or non-finite 'score'");
  rv_jws(c);
  if (c->p != c->end) return rv_jfail(c, "expected ',' or ']' after the object");
  if (seg_at && want_segm) {
    const rv_coco_image *im = rv_coco_find_image(gt, d->image_id);
    if (!im) return rv_jfail(c, "image_id %lld is not in the ground truth", (long long)d->image_id);
    if (im == seg_im) return 1;
    if (d->has_segm) { /* image_id changed after the mask (a repeated key) */
      rv_rle_free(&d->segm);
      d->has_segm = 0;
    }
    rv_jcur sc = {seg_at, c->end, ""};
    if (!rv_coco_parse_segm(&sc, &d->segm, (uint32_t)im->height, (uint32_t)im->width, 1, pool))
      return rv_jfail(c, "%s", sc.err);
    d->has_segm = 1;
  }
  return 1;
}

/* Parse a results list into r->dets (no loadRes rules yet: rv_coco_results_prepare). Masks are
 * decoded when the evaluation needs them (segm, mask area mode, or a first result without a
 * bbox). */
static rv_status parse_results(rv_coco_results *r, const rv_coco *gt, const char *json, size_t len, const char *name,
                               rv_iou_type t, rv_coco_area_mode mode, int threads, rv_ctx *ctx) {
  memset(r, 0, sizeof *r);
  rv_jcur c = {json, json + len, ""};
  if (rv_jpeek(&c, '{')) return rv_error(ctx, RV_ERR_FORMAT, "%s: results must be a JSON list of detections", name);
  const char **starts = NULL;
  size_t n = 0;
  const double t0 = rv_coco_mono_s();
  if (!rv_jsplit_list(&c, &starts, &n)) return rv_jsyntax_error(ctx, name, json, c.p, c.err);
  rv_log(ctx, RV_LOG_DEBUG, "%s: %zu list elements found in %.3f s (one thread)", name, n, rv_coco_mono_s() - t0);
  rv_jws(&c);
  if (c.p < c.end && *c.p) {
    free(starts);
    return rv_jsyntax_error(ctx, name, json, c.p, "data after the list");
  }
  r->dets = calloc(n ? n : 1, sizeof *r->dets);
  if (!r->dets) {
    free(starts);
    return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name);
  }
  r->n = n;
  long first_bad = -1;
  char msg[200] = "";
  /* element 0 first: without a bbox it selects loadRes' mask branch, where masks matter */
  int want = t == RV_IOU_SEGM || mode == RV_COCO_AREA_MASK;
  /* compressed masks go to per-thread pools, joined into r->pool */
  rv_coco_pool all = {NULL};
  if (n) {
    rv_jcur e = {starts[0], starts[1] - 1, ""};
    if (!element(&e, &r->dets[0], gt, 1, &all)) {
      first_bad = 0;
      snprintf(msg, sizeof msg, "%s", e.err);
    }
    if (!r->dets[0].has_bbox) want = 1;
  }
  if (first_bad < 0) {
    int nth = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel num_threads(nth)
    {
      rv_coco_pool mine = {NULL};
#pragma omp for schedule(dynamic, 256)
      for (long i = 1; i < (long)n; i++) {
        rv_jcur e = {starts[i], starts[i + 1] - 1, ""};
        if (!element(&e, &r->dets[i], gt, want, &mine)) {
#pragma omp critical(rv_results_bad)
          if (first_bad < 0 || i < first_bad) {
            first_bad = i;
            snprintf(msg, sizeof msg, "%s", e.err);
          }
        }
      }
#pragma omp critical(rv_results_pool)
      rv_coco_pool_join(&all, &mine);
    }
  }
  r->pool = all.head;
  free(starts);
  if (first_bad >= 0) {
    rv_coco_results_free(r);
    return rv_error(ctx, RV_ERR_FORMAT, "%s: results[%ld]: %s", name, first_bad, msg);
  }
  return RV_OK;
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
        if (st != RV_OK) return rv_coco_prefix_error(ctx, st, what, "results", i);
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
  RV_TRY(parse_results(r, gt, json, len, name, t, mode, threads, ctx));
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
