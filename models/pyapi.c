/* The flat C entry points of the Python package (models/pyapi.h). */
#include "models/pyapi.h"

#include "formats/image.h"
#include "kernels/ops.h"
#include "formats/pyconfig.h"
#include "core/tensor.h"
#include "eval/cocoeval.h"
#include "eval/rle.h"
#include "eval/segmetrics.h"
#include "models/zoo.h"
#include <ravlt/tile.h>

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int rv_py_abi(void) { return RV_PY_ABI; }

const char *rv_py_init(void) { return rv_blas_init(); }

rv_ctx *rv_py_ctx_new(int threads) {
  rv_ctx *ctx = rv_ctx_create();
  if (ctx && threads > 0) rv_ctx_set_threads(ctx, threads);
  return ctx;
}
void rv_py_ctx_free(rv_ctx *ctx) { rv_ctx_free(ctx); }
const char *rv_py_errmsg(const rv_ctx *ctx) { return rv_ctx_errmsg(ctx); }
void rv_py_free(void *p) { free(p); }

/* ---- COCO ---- */

rv_status rv_py_coco_load(rv_coco **out, const char *path, const char *json, size_t len, const char *name,
                          int load_segm, rv_ctx *ctx) {
  *out = NULL;
  if (path) return rv_coco_load(out, path, load_segm, 0, ctx);
  return rv_coco_load_mem(out, json, len, name ? name : "dataset", load_segm, 0, ctx);
}

void rv_py_coco_free(rv_coco *c) { rv_coco_free(c); }

void rv_py_coco_counts(const rv_coco *c, size_t counts[3], int *has_segm) {
  counts[0] = c->n_images;
  counts[1] = c->n_cats;
  counts[2] = c->n_anns;
  if (has_segm) *has_segm = c->has_segm;
}

void rv_py_coco_ids(const rv_coco *c, int64_t *img_ids, int64_t *cat_ids) {
  for (size_t i = 0; img_ids && i < c->n_images; i++) img_ids[i] = c->images[i].id;
  for (size_t i = 0; cat_ids && i < c->n_cats; i++) cat_ids[i] = c->cats[i].id;
}

rv_status rv_py_results_load(rv_coco_results **out, const rv_coco *gt, const char *path, const char *json,
                             size_t len, const char *name, int iou_type, rv_ctx *ctx) {
  *out = NULL;
  rv_coco_results *r = calloc(1, sizeof *r);
  if (!r) return rv_error(ctx, RV_ERR_NOMEM, "loadRes: out of memory");
  rv_status st = path ? rv_coco_load_results(r, gt, path, (rv_iou_type)iou_type, RV_COCO_AREA_BOX, 0, ctx)
                      : rv_coco_load_results_mem(r, gt, json, len, name ? name : "results", (rv_iou_type)iou_type,
                                                 RV_COCO_AREA_BOX, 0, ctx);
  if (st != RV_OK) {
    free(r);
    return st;
  }
  *out = r;
  return RV_OK;
}

rv_status rv_py_results_from_arrays(rv_coco_results **out, const rv_coco *gt, size_t n, const int64_t *image_id,
                                    const int64_t *category_id, const double *score, const double *bbox,
                                    int iou_type, const char *name, rv_ctx *ctx) {
  *out = NULL;
  rv_coco_results *r = calloc(1, sizeof *r);
  if (!r || !(r->dets = calloc(n ? n : 1, sizeof *r->dets))) {
    free(r);
    return rv_error(ctx, RV_ERR_NOMEM, "loadRes: out of memory");
  }
  r->n = n;
  for (size_t i = 0; i < n; i++) {
    rv_coco_obj *d = &r->dets[i];
    d->image_id = image_id[i];
    d->category_id = category_id[i];
    d->score = score[i];
    memcpy(d->bbox, bbox + 4 * i, sizeof d->bbox);
    d->has_bbox = 1;
  }
  rv_status st = rv_coco_results_prepare(r, gt, (rv_iou_type)iou_type, RV_COCO_AREA_BOX, name ? name : "results", ctx);
  if (st != RV_OK) {
    rv_coco_results_free(r);
    free(r);
    return st;
  }
  *out = r;
  return RV_OK;
}

void rv_py_results_free(rv_coco_results *r) {
  if (!r) return;
  rv_coco_results_free(r);
  free(r);
}

size_t rv_py_results_count(const rv_coco_results *r) { return r->n; }

int rv_py_results_all_segm(const rv_coco_results *r) {
  for (size_t i = 0; i < r->n; i++)
    if (!r->dets[i].has_segm) return 0;
  return 1;
}

void rv_py_results_copy(const rv_coco_results *r, int64_t *id, int64_t *image_id, int64_t *category_id,
                        double *bbox, double *area, double *score) {
  for (size_t i = 0; i < r->n; i++) {
    const rv_coco_obj *d = &r->dets[i];
    if (id) id[i] = d->id;
    if (image_id) image_id[i] = d->image_id;
    if (category_id) category_id[i] = d->category_id;
    if (bbox) memcpy(bbox + 4 * i, d->bbox, sizeof d->bbox);
    if (area) area[i] = d->area;
    if (score) score[i] = d->score;
  }
}

/* ---- COCOeval ---- */

struct rv_py_eval {
  rv_cocoeval *ev;
  char lbl[RV_COCO_MAX_AREAS][32]; /* the area labels ev's params point to */
  rv_coco_obj *pool_gt, *pool_dt;  /* useCats = 0: shallow copies with category -1 */
  uint8_t *pool_ignore;            /* useCats = 0, keypoints: gt_ignore of pool_gt */
};

/* useCats = 0: the objects whose category is in cats, ordered by the category's position in
 * cats (then file order), as copies with category_id -1 (masks shared, never freed here). */
static rv_status pool_objects(rv_coco_obj **out, size_t *n_out, const rv_coco_obj *o, size_t n,
                              const int64_t *cats, size_t nc, const uint8_t *flag, uint8_t **pooled_flag,
                              rv_ctx *ctx) {
  size_t *pos = malloc(sizeof(size_t) * (n ? n : 1)), *cnt = calloc(nc + 1, sizeof(size_t));
  rv_coco_obj *p = malloc(sizeof *p * (n ? n : 1));
  if (!pos || !cnt || !p) {
    free(pos);
    free(cnt);
    free(p);
    return rv_error(ctx, RV_ERR_NOMEM, "cocoeval: out of memory");
  }
  /* sorted (id, first position) for the lookup */
  for (size_t j = 0; j < n; j++) {
    pos[j] = nc;
    for (size_t k = 0; k < nc; k++)
      if (cats[k] == o[j].category_id) {
        pos[j] = k;
        break;
      }
    if (pos[j] < nc) cnt[pos[j] + 1]++;
  }
  for (size_t k = 0; k < nc; k++) cnt[k + 1] += cnt[k];
  size_t m = cnt[nc];
  uint8_t *pf = flag ? malloc(m ? m : 1) : NULL;
  if (flag && !pf) {
    free(pos);
    free(cnt);
    free(p);
    return rv_error(ctx, RV_ERR_NOMEM, "cocoeval: out of memory");
  }
  for (size_t j = 0; j < n; j++)
    if (pos[j] < nc) {
      size_t at = cnt[pos[j]]++;
      rv_coco_obj *d = &p[at];
      *d = o[j];
      d->category_id = -1;
      d->segm.borrowed = 1;
      if (pf) pf[at] = flag[j];
    }
  if (pooled_flag) *pooled_flag = pf;
  free(pos);
  free(cnt);
  *out = p;
  *n_out = m;
  return RV_OK;
}

static rv_status eval_run(rv_py_eval **out, const rv_coco *gt, const rv_coco_results *dt, int iou_type,
                         const int64_t *img_ids, size_t n_imgs, const int64_t *cat_ids, size_t n_cats,
                         const double *iou_thrs, int n_iou, const double *rec_thrs, int n_rec, const int *max_dets,
                         int n_max_dets, const double *area_rng, const char *const *area_lbl, int n_areas,
                         int use_cats, int threads, rv_cocoeval_kpts *kp, rv_ctx *ctx) {
  *out = NULL;
  if (n_iou < 1 || n_iou > RV_COCO_MAX_IOU)
    return rv_error(ctx, RV_ERR_ARG, "cocoeval: %d iouThrs (1..%d supported)", n_iou, RV_COCO_MAX_IOU);
  if (n_rec < 1 || n_rec > RV_COCO_MAX_REC)
    return rv_error(ctx, RV_ERR_ARG, "cocoeval: %d recThrs (1..%d supported)", n_rec, RV_COCO_MAX_REC);
  if (n_max_dets < 1 || n_max_dets > RV_COCO_MAX_DETS)
    return rv_error(ctx, RV_ERR_ARG, "cocoeval: %d maxDets (1..%d supported)", n_max_dets, RV_COCO_MAX_DETS);
  if (n_areas < 1 || n_areas > RV_COCO_MAX_AREAS)
    return rv_error(ctx, RV_ERR_ARG, "cocoeval: %d areaRng (1..%d supported)", n_areas, RV_COCO_MAX_AREAS);
  if (iou_type == RV_IOU_SEGM) {
    if (!gt->has_segm) return rv_error(ctx, RV_ERR_ARG, "cocoeval: segm evaluation needs the gt loaded with masks");
    for (size_t i = 0; i < dt->n; i++)
      if (!dt->dets[i].has_segm)
        return rv_error(ctx, RV_ERR_ARG, "cocoeval: results[%zu] has no segmentation", i);
  }
  rv_py_eval *e = calloc(1, sizeof *e);
  if (!e) return rv_error(ctx, RV_ERR_NOMEM, "cocoeval: out of memory");
  rv_cocoeval_params p = rv_cocoeval_default_params((rv_iou_type)iou_type);
  p.n_iou = n_iou;
  memcpy(p.iou_thrs, iou_thrs, sizeof(double) * (size_t)n_iou);
  p.n_rec = n_rec;
  memcpy(p.rec_thrs, rec_thrs, sizeof(double) * (size_t)n_rec);
  p.n_max_dets = n_max_dets;
  for (int m = 0; m < n_max_dets; m++) { /* sorted(p.maxDets) */
    int v = max_dets[m], j = m;
    if (v < 0) {
      free(e);
      return rv_error(ctx, RV_ERR_ARG, "cocoeval: maxDets must be >= 0");
    }
    while (j > 0 && p.max_dets[j - 1] > v) {
      p.max_dets[j] = p.max_dets[j - 1];
      j--;
    }
    p.max_dets[j] = v;
  }
  p.n_areas = n_areas;
  for (int a = 0; a < n_areas; a++) {
    p.area_rng[a][0] = area_rng[2 * a];
    p.area_rng[a][1] = area_rng[2 * a + 1];
    snprintf(e->lbl[a], sizeof e->lbl[a], "%s", area_lbl && area_lbl[a] ? area_lbl[a] : "");
    p.area_lbl[a] = e->lbl[a];
  }
  p.threads = threads;
  rv_cocoeval_input in = {img_ids, n_imgs, cat_ids, n_cats, gt->anns, gt->n_anns, dt->dets, dt->n};
  static const int64_t pooled_cat = -1;
  rv_status st = RV_OK;
  if (!use_cats) {
    size_t ng = 0, nd = 0;
    const uint8_t *gign = kp ? kp->gt_ignore : NULL;
    if ((st = pool_objects(&e->pool_gt, &ng, gt->anns, gt->n_anns, cat_ids, n_cats, gign, &e->pool_ignore, ctx)) !=
            RV_OK ||
        (st = pool_objects(&e->pool_dt, &nd, dt->dets, dt->n, cat_ids, n_cats, NULL, NULL, ctx)) != RV_OK) {
      rv_py_eval_free(e);
      return st;
    }
    in.cat_ids = &pooled_cat;
    in.n_cats = 1;
    in.gt = e->pool_gt;
    in.n_gt = ng;
    in.dt = e->pool_dt;
    in.n_dt = nd;
  }
  if (kp) {
    kp->no_oks = !use_cats; /* pycocotools' computeOks reads _gts[img, -1]: nothing */
    if (!use_cats) kp->gt_ignore = e->pool_ignore;
    st = rv_cocoeval_evaluate_kpts(&e->ev, &p, &in, kp, ctx);
  } else
    st = rv_cocoeval_evaluate(&e->ev, &p, &in, ctx);
  if (st != RV_OK) {
    rv_py_eval_free(e);
    return st;
  }
  *out = e;
  return RV_OK;
}

rv_status rv_py_eval_run(rv_py_eval **out, const rv_coco *gt, const rv_coco_results *dt, int iou_type,
                         const int64_t *img_ids, size_t n_imgs, const int64_t *cat_ids, size_t n_cats,
                         const double *iou_thrs, int n_iou, const double *rec_thrs, int n_rec, const int *max_dets,
                         int n_max_dets, const double *area_rng, const char *const *area_lbl, int n_areas,
                         int use_cats, int threads, rv_ctx *ctx) {
  if (iou_type == RV_IOU_KEYPOINTS) {
    *out = NULL;
    return rv_error(ctx, RV_ERR_ARG, "cocoeval: keypoints go through rv_py_eval_run_kpts");
  }
  return eval_run(out, gt, dt, iou_type, img_ids, n_imgs, cat_ids, n_cats, iou_thrs, n_iou, rec_thrs, n_rec,
                  max_dets, n_max_dets, area_rng, area_lbl, n_areas, use_cats, threads, NULL, ctx);
}

rv_status rv_py_eval_run_kpts(rv_py_eval **out, const rv_coco *gt, const rv_coco_results *dt, const int64_t *img_ids,
                              size_t n_imgs, const int64_t *cat_ids, size_t n_cats, const double *iou_thrs, int n_iou,
                              const double *rec_thrs, int n_rec, const int *max_dets, int n_max_dets,
                              const double *area_rng, const char *const *area_lbl, int n_areas, int use_cats,
                              int n_kpts, const double *gt_kpts, const uint8_t *gt_ignore, const double *dt_kpts,
                              const double *sigmas, int per_cat_sigmas,
                              void (*vexp)(double *v, size_t n, void *user), int threads, rv_ctx *ctx) {
  rv_cocoeval_kpts kp = {n_kpts, gt_kpts, gt_ignore, dt_kpts, sigmas, per_cat_sigmas, 0, vexp, NULL};
  return eval_run(out, gt, dt, RV_IOU_KEYPOINTS, img_ids, n_imgs, cat_ids, n_cats, iou_thrs, n_iou, rec_thrs, n_rec,
                  max_dets, n_max_dets, area_rng, area_lbl, n_areas, use_cats, threads, &kp, ctx);
}

int rv_py_eval_num_stats(const rv_py_eval *e) { return rv_cocoeval_num_stats(e->ev); }

size_t rv_py_eval_num_pairs(const rv_py_eval *e) { return rv_cocoeval_num_pairs(e->ev); }

void rv_py_eval_pair_dims(const rv_py_eval *e, int64_t *dims) {
  size_t n = rv_cocoeval_num_pairs(e->ev);
  for (size_t q = 0; q < n; q++) {
    size_t i, k, d, g;
    rv_cocoeval_pair_info(e->ev, q, &i, &k, &d, &g);
    dims[4 * q] = (int64_t)i;
    dims[4 * q + 1] = (int64_t)k;
    dims[4 * q + 2] = (int64_t)d;
    dims[4 * q + 3] = (int64_t)g;
  }
}

rv_status rv_py_eval_details(const rv_py_eval *e, int64_t *dt_ids, double *dt_scores, int64_t *gt_ids, double *ious,
                             int64_t *gt_order, uint8_t *gt_ignore, int64_t *dt_matches, int64_t *gt_matches,
                             uint8_t *dt_ignore, uint8_t *has_ious, int threads, rv_ctx *ctx) {
  const rv_cocoeval_params *p = rv_cocoeval_get_params(e->ev);
  size_t n = rv_cocoeval_num_pairs(e->ev), A = (size_t)p->n_areas, T = (size_t)p->n_iou;
  size_t *od = malloc(sizeof(size_t) * (n + 1)), *og = malloc(sizeof(size_t) * (n + 1)),
         *oi = malloc(sizeof(size_t) * (n + 1));
  if (!od || !og || !oi) {
    free(od);
    free(og);
    free(oi);
    return rv_error(ctx, RV_ERR_NOMEM, "cocoeval: out of memory");
  }
  od[0] = og[0] = oi[0] = 0;
  for (size_t q = 0; q < n; q++) {
    size_t i, k, d, g;
    rv_cocoeval_pair_info(e->ev, q, &i, &k, &d, &g);
    od[q + 1] = od[q] + d;
    og[q + 1] = og[q] + g;
    oi[q + 1] = oi[q] + d * g;
  }
  long bad = -1;
  int nth = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 16) num_threads(nth)
  for (long q = 0; q < (long)n; q++) {
    rv_cocoeval_detail det = {dt_ids + od[q], dt_scores + od[q], gt_ids + og[q], ious + oi[q],
                              gt_order + A * og[q], gt_ignore + A * og[q], dt_matches + A * T * od[q],
                              gt_matches + A * T * og[q], dt_ignore + A * T * od[q], 0};
    if (rv_cocoeval_pair_detail(e->ev, (size_t)q, &det, NULL) != RV_OK) {
#pragma omp critical(rv_py_details)
      bad = q;
    }
    has_ious[q] = (uint8_t)det.has_ious;
  }
  free(od);
  free(og);
  free(oi);
  return bad < 0 ? RV_OK : rv_error(ctx, RV_ERR_NOMEM, "cocoeval: out of memory (evalImgs)");
}

rv_status rv_py_eval_accumulate(rv_py_eval *e, rv_ctx *ctx) { return rv_cocoeval_accumulate(e->ev, ctx); }

void rv_py_eval_dims(const rv_py_eval *e, size_t dims[5]) {
  const rv_cocoeval_params *p = rv_cocoeval_get_params(e->ev);
  dims[0] = (size_t)p->n_iou;
  dims[1] = (size_t)p->n_rec;
  dims[2] = rv_cocoeval_num_cats(e->ev);
  dims[3] = (size_t)p->n_areas;
  dims[4] = (size_t)p->n_max_dets;
}

int rv_py_eval_copy(const rv_py_eval *e, double *precision, double *recall, double *scores) {
  if (!rv_cocoeval_precision(e->ev)) return 0;
  size_t d[5];
  rv_py_eval_dims(e, d);
  size_t np = d[0] * d[1] * d[2] * d[3] * d[4], nr = d[0] * d[2] * d[3] * d[4];
  if (precision) memcpy(precision, rv_cocoeval_precision(e->ev), sizeof(double) * np);
  if (recall) memcpy(recall, rv_cocoeval_recall(e->ev), sizeof(double) * nr);
  if (scores) memcpy(scores, rv_cocoeval_scores(e->ev), sizeof(double) * np);
  return 1;
}

void rv_py_eval_summarize(const rv_py_eval *e, double stats[12]) { rv_cocoeval_summarize(e->ev, stats); }

int rv_py_eval_summary_text(const rv_py_eval *e, char *buf, size_t size) {
  return rv_cocoeval_summary_text(e->ev, buf, size);
}

void rv_py_eval_free(rv_py_eval *e) {
  if (!e) return;
  rv_cocoeval_free(e->ev);
  free(e->pool_gt);
  free(e->pool_dt);
  free(e->pool_ignore);
  free(e);
}

/* ---- Masks ---- */

static rv_status rle_string(char **out, rv_rle *r, rv_ctx *ctx) {
  *out = rv_rle_to_string(r);
  rv_rle_free(r);
  return *out ? RV_OK : rv_error(ctx, RV_ERR_NOMEM, "mask: out of memory");
}

/* maskApi rleEncode literally: a run ends wherever the byte value changes (so 0/1 masks, and
 * 0/255 ones, give the usual RLE; adjacent different non-zero values split a foreground run as
 * pycocotools does). */
static rv_status encode_values(rv_rle *r, const uint8_t *M, uint32_t h, uint32_t w, rv_ctx *ctx) {
  size_t a = (size_t)h * w, k = 0;
  uint32_t *cnts = malloc(sizeof(uint32_t) * (a + 1)), c = 0;
  if (!cnts) return rv_error(ctx, RV_ERR_NOMEM, "mask encode: out of memory (%ux%u)", h, w);
  uint8_t p = 0;
  for (size_t j = 0; j < a; j++) {
    if (M[j] != p) {
      cnts[k++] = c;
      c = 0;
      p = M[j];
    }
    c++;
  }
  cnts[k++] = c;
  rv_status st = rv_rle_from_counts_any(r, cnts, k, h, w, ctx);
  free(cnts);
  return st;
}

rv_status rv_py_rle_encode(const uint8_t *masks, uint32_t h, uint32_t w, size_t n, char **out_strs, rv_ctx *ctx) {
  for (size_t i = 0; i < n; i++) out_strs[i] = NULL;
  for (size_t i = 0; i < n; i++) {
    rv_rle r = {0};
    RV_TRY(encode_values(&r, masks + i * (size_t)h * w, h, w, ctx));
    RV_TRY(rle_string(&out_strs[i], &r, ctx));
  }
  return RV_OK;
}

rv_status rv_py_rle_decode(const char *const *strs, uint32_t h, uint32_t w, size_t n, uint8_t *masks, rv_ctx *ctx) {
  for (size_t i = 0; i < n; i++) {
    rv_rle r = {0};
    RV_TRY(rv_rle_from_string_any(&r, strs[i], strlen(strs[i]), h, w, "decode", ctx));
    int ok = rv_rle_decode_checked(&r, masks + i * (size_t)h * w);
    rv_rle_free(&r);
    if (!ok) return rv_error(ctx, RV_ERR_FORMAT, "decode: Invalid RLE mask representation (RLE %zu: counts pass h*w)", i);
  }
  return RV_OK;
}

rv_status rv_py_rle_area_bbox(const char *const *strs, uint32_t h, uint32_t w, size_t n, uint32_t *area,
                              double *bbox, rv_ctx *ctx) {
  for (size_t i = 0; i < n; i++) {
    rv_rle r = {0};
    RV_TRY(rv_rle_from_string_any(&r, strs[i], strlen(strs[i]), h, w, "rle", ctx));
    if (area) area[i] = rv_rle_area(&r);
    if (bbox) rv_rle_to_bbox(&r, bbox + 4 * i);
    rv_rle_free(&r);
  }
  return RV_OK;
}

static rv_status parse_many(rv_rle **out, const char *const *strs, const uint32_t *hw, size_t n, rv_ctx *ctx) {
  rv_rle *R = calloc(n ? n : 1, sizeof *R);
  if (!R) return rv_error(ctx, RV_ERR_NOMEM, "mask: out of memory");
  for (size_t i = 0; i < n; i++) {
    rv_status st = rv_rle_from_string_any(&R[i], strs[i], strlen(strs[i]), hw[2 * i], hw[2 * i + 1], "rle", ctx);
    if (st != RV_OK) {
      for (size_t j = 0; j < i; j++) rv_rle_free(&R[j]);
      free(R);
      return st;
    }
  }
  *out = R;
  return RV_OK;
}

static void free_many(rv_rle *R, size_t n) {
  for (size_t i = 0; i < n; i++) rv_rle_free(&R[i]);
  free(R);
}

rv_status rv_py_rle_merge(const char *const *strs, const uint32_t *hw, size_t n, int intersect, char **out,
                          uint32_t out_hw[2], rv_ctx *ctx) {
  *out = NULL;
  rv_rle *R = NULL, m = {0};
  RV_TRY(parse_many(&R, strs, hw, n, ctx));
  rv_status st = rv_rle_merge(&m, R, n, intersect, ctx);
  free_many(R, n);
  if (st != RV_OK) return st;
  out_hw[0] = m.h;
  out_hw[1] = m.w;
  return rle_string(out, &m, ctx);
}

rv_status rv_py_rle_iou(const char *const *dt, const uint32_t *dt_hw, size_t m, const char *const *gt,
                        const uint32_t *gt_hw, size_t n, const uint8_t *iscrowd, double *out, rv_ctx *ctx) {
  rv_rle *D = NULL, *G = NULL;
  RV_TRY(parse_many(&D, dt, dt_hw, m, ctx));
  rv_status st = parse_many(&G, gt, gt_hw, n, ctx);
  if (st == RV_OK) rv_rle_iou(out, D, m, G, n, iscrowd);
  free_many(D, m);
  if (G) free_many(G, n);
  return st;
}

rv_status rv_py_rle_from_poly(const double *xy, size_t k, uint32_t h, uint32_t w, char **out, rv_ctx *ctx) {
  rv_rle r = {0};
  *out = NULL;
  RV_TRY(rv_rle_from_poly(&r, xy, k, h, w, ctx));
  return rle_string(out, &r, ctx);
}

rv_status rv_py_rle_from_bbox(const double *bb, size_t n, uint32_t h, uint32_t w, char **out, rv_ctx *ctx) {
  for (size_t i = 0; i < n; i++) out[i] = NULL;
  for (size_t i = 0; i < n; i++) {
    rv_rle r = {0};
    RV_TRY(rv_rle_from_bbox(&r, bb + 4 * i, h, w, ctx));
    RV_TRY(rle_string(&out[i], &r, ctx));
  }
  return RV_OK;
}

rv_status rv_py_rle_from_counts(const uint32_t *counts, size_t m, uint32_t h, uint32_t w, char **out, rv_ctx *ctx) {
  rv_rle r = {0};
  *out = NULL;
  RV_TRY(rv_rle_from_counts_any(&r, counts, m, h, w, ctx)); /* any sum, as frUncompressedRLE */
  return rle_string(out, &r, ctx);
}

/* ---- mIoU ---- */

rv_status rv_py_mean_iou(const void *const *pred, int pred_u8, const uint8_t *const *label, const size_t *npix,
                         size_t n, int num_classes, int ignore_index, int reduce_zero_label, double *iou,
                         double *acc, double *all_acc, int64_t *areas, rv_ctx *ctx) {
  rv_seg_areas a;
  RV_TRY(rv_seg_areas_init(&a, num_classes, ctx));
  for (size_t i = 0; i < n; i++) {
    if (pred_u8)
      rv_seg_areas_add_u8(&a, pred[i], label[i], npix[i], reduce_zero_label, ignore_index);
    else
      rv_seg_areas_add_i32(&a, pred[i], label[i], npix[i], reduce_zero_label, ignore_index);
  }
  rv_seg_metrics m;
  rv_status st = rv_seg_metrics_compute(&m, &a, ctx);
  if (st == RV_OK) {
    for (int k = 0; k < num_classes; k++) {
      iou[k] = m.iou[k];
      acc[k] = m.acc[k];
      if (areas) {
        areas[k] = a.intersect[k];
        areas[num_classes + k] = a.union_[k];
        areas[2 * num_classes + k] = a.pred[k];
        areas[3 * num_classes + k] = a.label[k];
      }
    }
    *all_acc = m.aAcc;
    rv_seg_metrics_free(&m);
  }
  rv_seg_areas_free(&a);
  return st;
}

/* ---- Models ---- */

rv_status rv_py_model_load(rv_model **out, const char *weights, const char *name, rv_ctx *ctx) {
  return rv_py_model_load_ex(out, weights, name, 0, ctx);
}

rv_status rv_py_model_load_ex(rv_model **out, const char *weights, const char *name, int strict,
                              rv_ctx *ctx) {
  const rv_model_load_opts lo = {strict != 0};
  *out = NULL;
  struct stat sb;
  if (stat(weights, &sb) != 0) {
    const rv_zoo_entry *e = rv_zoo_find(weights);
    if (e) {
      if (e->task == RV_ZOO_CLASSIFY)
        return rv_error(ctx, RV_ERR_ARG, "%s is an ImageNet classifier, not a segmentor or detector", weights);
      char path[4096];
      RV_TRY(rv_zoo_fetch(path, sizeof path, e, NULL, NULL, NULL, ctx));
      return rv_model_load_ex(out, path, name ? name : e->model, &lo, ctx);
    }
    if (!strchr(weights, '/') && !strchr(weights, '.'))
      return rv_error(ctx, RV_ERR_NOTFOUND, "%s: no such file and not a model name ('ravlt models' lists them)",
                      weights);
  }
  return rv_model_load_ex(out, weights, name, &lo, ctx);
}

void rv_py_model_free(rv_model *m) { rv_model_free(m); }

void rv_py_model_info(const rv_model *m, int info[3]) {
  info[0] = rv_model_task(m) == RV_TASK_DETECT;
  info[1] = rv_model_num_classes(m);
  info[2] = rv_model_has_masks(m);
}

const char *rv_py_model_arch(const rv_model *m) { return rv_model_arch(m); }
const char *rv_py_model_class_name(const rv_model *m, int i) { return rv_model_class_name(m, i); }
int rv_py_model_category_id(const rv_model *m, int i) { return rv_model_category_id(m, i); }

void rv_py_model_set_seg_mode(rv_model *m, int mode, int crop, int stride) {
  rv_seg_test_cfg *t = rv_model_seg_test_cfg(m);
  if (!t) return;
  t->mode = mode == 1 ? RV_SEG_MODE_SLIDE : RV_SEG_MODE_WHOLE;
  if (crop > 0) t->crop_h = t->crop_w = crop;
  if (stride > 0) t->stride_h = t->stride_w = stride;
}

int rv_py_model_seg_mode(const rv_model *m) {
  rv_seg_test_cfg *t = rv_model_seg_test_cfg((rv_model *)m);
  return t && t->mode == RV_SEG_MODE_SLIDE;
}

rv_status rv_py_segment(const rv_model *m, int32_t *labels, const uint8_t *bgr, int h, int w, int aug_test,
                        const double *ratios, int n_ratios, int flip, rv_ctx *ctx) {
  if (rv_model_task(m) != RV_TASK_SEGMENT)
    return rv_error(ctx, RV_ERR_MODEL, "this checkpoint is a %s detector, not a segmentor: use inference_detector",
                    rv_model_arch(m));
  rv_image img = {(unsigned char *)bgr, h, w, 3};
  rv_seg_run_opts o = {0};
  o.aug_test = aug_test;
  o.ratios = ratios;
  o.n_ratios = ratios ? n_ratios : 0;
  o.flip = flip;
  rv_arena *arena = rv_arena_create(0);
  if (!arena) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_status st = rv_model_segment(m, labels, &img, &o, arena, ctx);
  rv_arena_free(arena);
  return st;
}

rv_status rv_py_imread(const char *path, int gray, uint8_t **data, int hwc[3], rv_ctx *ctx) {
  rv_image img = {0};
  *data = NULL;
  RV_TRY(gray ? rv_image_read_gray(path, &img, ctx) : rv_image_read(path, &img, ctx));
  *data = img.data;
  hwc[0] = img.h;
  hwc[1] = img.w;
  hwc[2] = img.c;
  return RV_OK;
}

struct rv_py_dets {
  rv_arena *arena;
  rv_detections det;   /* masks: [n, mask_h, mask_w] row-major; NULL for a tiled run */
  const rv_rle *rles;  /* a tiled run's masks: n whole-image RLEs, or NULL */
  int *order;
};

rv_status rv_py_detect(const rv_model *m, rv_py_dets **out, const uint8_t *bgr, int h, int w, rv_ctx *ctx) {
  *out = NULL;
  if (rv_model_task(m) != RV_TASK_DETECT)
    return rv_error(ctx, RV_ERR_MODEL, "this checkpoint is a %s segmentor, not a detector: use inference_segmentor",
                    rv_model_arch(m));
  rv_py_dets *d = calloc(1, sizeof *d);
  if (!d || !(d->arena = rv_arena_create(0))) {
    free(d);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  rv_image img = {(unsigned char *)bgr, h, w, 3};
  rv_status st = rv_model_detect(m, &d->det, NULL, &img, d->arena, ctx);
  if (st == RV_OK && !(d->order = malloc(sizeof(int) * (size_t)(d->det.n + 1))))
    st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (st != RV_OK) {
    rv_py_dets_free(d);
    return st;
  }
  rv_detections_class_order(d->order, &d->det);
  *out = d;
  return RV_OK;
}

rv_status rv_py_detect_tiled(const rv_model *m, rv_py_dets **out, const uint8_t *bgr, int h, int w, int tile_h,
                             int tile_w, double overlap_h, double overlap_w, int nmm, float merge_thr, int full,
                             int max_dets, float score_thr, rv_ctx *ctx) {
  *out = NULL;
  if (rv_model_task(m) != RV_TASK_DETECT)
    return rv_error(ctx, RV_ERR_MODEL, "this checkpoint is a %s segmentor, not a detector: use inference_segmentor",
                    rv_model_arch(m));
  rv_tile_opts o = rv_tile_default_opts();
  o.tile_h = tile_h, o.tile_w = tile_w;
  o.overlap_h = overlap_h, o.overlap_w = overlap_w;
  o.merge = nmm ? RV_TILE_MERGE_NMM : RV_TILE_MERGE_NMS;
  o.merge_thr = merge_thr;
  o.full = full;
  o.max_dets = max_dets;
  o.score_thr = score_thr;
  rv_py_dets *d = calloc(1, sizeof *d);
  if (!d || !(d->arena = rv_arena_create(0))) {
    free(d);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  rv_image img = {(unsigned char *)bgr, h, w, 3};
  rv_tile_detections t;
  rv_status st = rv_model_detect_tiled(m, &t, &img, &o, d->arena, ctx);
  if (st == RV_OK) {
    d->det = (rv_detections){t.n, t.bboxes, t.scores, t.labels, NULL, t.masks ? t.img_h : 0, t.masks ? t.img_w : 0};
    d->rles = t.masks;
    if (!(d->order = malloc(sizeof(int) * (size_t)(t.n + 1)))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  if (st != RV_OK) {
    rv_py_dets_free(d);
    return st;
  }
  rv_detections_class_order(d->order, &d->det);
  *out = d;
  return RV_OK;
}

void rv_py_dets_dims(const rv_py_dets *d, int dims[3]) {
  const int masks = d->det.masks || d->rles;
  dims[0] = d->det.n;
  dims[1] = masks ? d->det.mask_h : 0;
  dims[2] = masks ? d->det.mask_w : 0;
}

void rv_py_dets_copy(const rv_py_dets *d, float *bboxes5, int32_t *labels, uint8_t *masks) {
  const rv_detections *t = &d->det;
  size_t msz = (size_t)t->mask_h * t->mask_w;
  for (int j = 0; j < t->n; j++) {
    int i = d->order[j];
    if (bboxes5) {
      memcpy(bboxes5 + 5 * j, t->bboxes + 4 * i, sizeof(float) * 4);
      bboxes5[5 * j + 4] = t->scores[i];
    }
    if (labels) labels[j] = t->labels[i];
    if (masks && t->masks) memcpy(masks + (size_t)j * msz, t->masks + (size_t)i * msz, msz);
    if (masks && d->rles) { /* the RLE's runs go down the columns: written transposed */
      uint8_t *o = masks + (size_t)j * msz, v = 0;
      size_t p = 0;
      for (size_t r = 0; r < d->rles[i].m; r++, v = !v)
        for (uint32_t c = 0; c < d->rles[i].cnts[r]; c++, p++)
          o[(p % (size_t)t->mask_h) * (size_t)t->mask_w + p / (size_t)t->mask_h] = v;
    }
  }
}

void rv_py_dets_free(rv_py_dets *d) {
  if (!d) return;
  rv_arena_free(d->arena);
  free(d->order);
  free(d);
}

/* ---- ABI 2 ---- */

rv_status rv_py_config_json(const char *text, const char *name, char **out, rv_ctx *ctx) {
  *out = NULL;
  cJSON *cfg = NULL;
  RV_TRY(rv_pyconfig_parse(&cfg, text, name ? name : "config", ctx));
  *out = cJSON_PrintUnformatted(cfg);
  cJSON_Delete(cfg);
  return *out ? RV_OK : rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name ? name : "config");
}

void rv_py_model_set_seg_cfg(rv_model *m, int mode, int crop_h, int crop_w, int stride_h, int stride_w) {
  rv_seg_test_cfg *t = rv_model_seg_test_cfg(m);
  if (!t) return;
  t->mode = mode == 1 ? RV_SEG_MODE_SLIDE : RV_SEG_MODE_WHOLE;
  if (crop_h > 0) t->crop_h = crop_h;
  if (crop_w > 0) t->crop_w = crop_w;
  if (stride_h > 0) t->stride_h = stride_h;
  if (stride_w > 0) t->stride_w = stride_w;
}

void rv_py_model_seg_cfg(const rv_model *m, int cfg[5]) {
  const rv_seg_test_cfg *t = rv_model_seg_test_cfg((rv_model *)m);
  if (!t) {
    memset(cfg, 0, 5 * sizeof *cfg);
    return;
  }
  cfg[0] = t->mode == RV_SEG_MODE_SLIDE;
  cfg[1] = t->crop_h;
  cfg[2] = t->crop_w;
  cfg[3] = t->stride_h;
  cfg[4] = t->stride_w;
}

static rv_status py_canvas(rv_image *im, uint8_t *img, int h, int w, int c, rv_ctx *ctx) {
  if (!img || h <= 0 || w <= 0 || (c != 1 && c != 3))
    return rv_error(ctx, RV_ERR_ARG, "draw: an h x w x 1 or 3 uint8 image is needed (got %d x %d x %d)", h, w, c);
  im->data = img;
  im->h = h;
  im->w = w;
  im->c = c;
  return RV_OK;
}

rv_status rv_py_draw_rect(uint8_t *img, int h, int w, int c, int x1, int y1, int x2, int y2, const uint8_t bgr[3],
                          int thickness, float fill_alpha, rv_ctx *ctx) {
  rv_image im;
  RV_TRY(py_canvas(&im, img, h, w, c, ctx));
  rv_color col = {bgr[0], bgr[1], bgr[2]};
  if (fill_alpha > 0) return rv_draw_rect_filled(&im, x1, y1, x2, y2, col, fill_alpha > 1 ? 1.0f : fill_alpha, ctx);
  return rv_draw_rect(&im, x1, y1, x2, y2, col, thickness > 0 ? thickness : 1, ctx);
}

rv_status rv_py_draw_text(uint8_t *img, int h, int w, int c, const char *text, int x, int y, double scale,
                          const uint8_t bgr[3], int thickness, rv_ctx *ctx) {
  rv_image im;
  RV_TRY(py_canvas(&im, img, h, w, c, ctx));
  if (!(scale > 0 && scale < 1000))
    return rv_error(ctx, RV_ERR_ARG, "draw: text scale must be in (0, 1000), not %g", scale);
  rv_color col = {bgr[0], bgr[1], bgr[2]};
  return rv_draw_text(&im, text, x, y, scale, col, thickness > 0 ? thickness : 1, ctx);
}

void rv_py_text_size(const char *text, double scale, int thickness, int size[3]) {
  rv_text_size(text, scale, thickness > 0 ? thickness : 1, &size[0], &size[1], &size[2]);
}

rv_status rv_py_imwrite(const char *path, const uint8_t *img, int h, int w, int c, rv_ctx *ctx) {
  if (!img || h <= 0 || w <= 0 || (c != 1 && c != 3 && c != 4))
    return rv_error(ctx, RV_ERR_ARG, "%s: an h x w (x 3 or 4) uint8 image is needed (got %d x %d x %d)", path, h, w, c);
  rv_image im = {(unsigned char *)img, h, w, c};
  return rv_image_write(path, &im, ctx);
}
