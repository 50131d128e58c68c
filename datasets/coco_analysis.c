/* rv_coco_analyze: the COCO analysis of `ravlt eval coco --report` as JSON (the contract of
 * docs/evaluation.md; include/ravlt/analysis.h). The parts: the evaluator's arrays
 * (per-category numbers, PR curves, the matching at IoU 0.5 for the F1 curves), TIDE
 * (eval/tide.c), the confusion matrix and the per-image false positives / negatives
 * (eval/confusion.c), the worst images with thumbnails, the comparison with a second run. */
#define _POSIX_C_SOURCE 200809L
#include "datasets/analysis_util.h"
#include "datasets/coco.h"
#include "eval/confusion.h"
#include "eval/img_iou.h"
#include "eval/tide.h"

#include <ravlt/analysis.h>

#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

rv_analysis_params rv_analysis_default_params(void) {
  rv_analysis_params p = {0.3, 0.5, 0.5, 0.1, 16, 320, 0};
  return p;
}

/* mean of precision[t][:][k][a][M-1] over t in [t0, t1) (entries > -1, numpy's mean), -1 if none */
static double cat_ap(const rv_cocoeval *ev, size_t k, int t0, int t1, int a, double *tmp) {
  const rv_cocoeval_params *p = rv_cocoeval_get_params(ev);
  const double *pr = rv_cocoeval_precision(ev);
  size_t K = rv_cocoeval_num_cats(ev), R = (size_t)p->n_rec, A = (size_t)p->n_areas, M = (size_t)p->n_max_dets, n = 0;
  for (int t = t0; t < t1; t++)
    for (size_t r = 0; r < R; r++) {
      double v = pr[((((size_t)t * R + r) * K + k) * A + (size_t)a) * M + (M - 1)];
      if (v > -1) tmp[n++] = v;
    }
  return n ? rv_np_mean(tmp, n) : -1;
}

static double cat_ar(const rv_cocoeval *ev, size_t k, double *tmp) {
  const rv_cocoeval_params *p = rv_cocoeval_get_params(ev);
  const double *rc = rv_cocoeval_recall(ev);
  size_t K = rv_cocoeval_num_cats(ev), A = (size_t)p->n_areas, M = (size_t)p->n_max_dets, n = 0;
  for (int t = 0; t < p->n_iou; t++) {
    double v = rc[(((size_t)t * K + k) * A + 0) * M + (M - 1)];
    if (v > -1) tmp[n++] = v;
  }
  return n ? rv_np_mean(tmp, n) : -1;
}

static int iou_index(const rv_cocoeval_params *p, double thr) {
  for (int t = 0; t < p->n_iou; t++)
    if (fabs(p->iou_thrs[t] - thr) < 1e-9) return t;
  return -1;
}

static const char *cat_name(const rv_coco *gt, int64_t id) {
  const rv_coco_category *c = rv_coco_find_category(gt, id);
  return c && c->name ? c->name : "";
}

static cJSON *per_category_json(const rv_cocoeval *ev, const rv_coco *gt) {
  const rv_cocoeval_params *p = rv_cocoeval_get_params(ev);
  size_t K = rv_cocoeval_num_cats(ev);
  double *tmp = malloc(sizeof(double) * (size_t)(p->n_iou * p->n_rec + 1));
  cJSON *arr = cJSON_CreateArray();
  if (!tmp || !arr) {
    free(tmp);
    cJSON_Delete(arr);
    return NULL;
  }
  int t50 = iou_index(p, 0.5), t75 = iou_index(p, 0.75);
  for (size_t k = 0; k < K; k++) {
    int64_t id = rv_cocoeval_cat_id(ev, k);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, o);
    rv_jadd_num(o, "id", (double)id);
    cJSON_AddStringToObject(o, "name", cat_name(gt, id));
    rv_jadd_num(o, "ap", rv_cocoeval_category_ap(ev, k));
    rv_jadd_num(o, "ap50", t50 >= 0 ? cat_ap(ev, k, t50, t50 + 1, 0, tmp) : -1);
    rv_jadd_num(o, "ap75", t75 >= 0 ? cat_ap(ev, k, t75, t75 + 1, 0, tmp) : -1);
    static const char *const an[3] = {"ap_small", "ap_medium", "ap_large"};
    for (int a = 1; a <= 3; a++) rv_jadd_num(o, an[a - 1], a < p->n_areas ? cat_ap(ev, k, 0, p->n_iou, a, tmp) : -1);
    rv_jadd_num(o, "ar100", cat_ar(ev, k, tmp));
  }
  free(tmp);
  return arr;
}

/* precision[:, :, :, 0, -1] as [T][R][K] */
static cJSON *pr_json(const rv_cocoeval *ev) {
  const rv_cocoeval_params *p = rv_cocoeval_get_params(ev);
  const double *pr = rv_cocoeval_precision(ev);
  size_t K = rv_cocoeval_num_cats(ev), R = (size_t)p->n_rec, A = (size_t)p->n_areas, M = (size_t)p->n_max_dets;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "iou_thrs", rv_jarr_num(p->iou_thrs, (size_t)p->n_iou));
  cJSON_AddItemToObject(o, "rec_thrs", rv_jarr_num(p->rec_thrs, R));
  int64_t *ids = malloc(sizeof *ids * (K + 1));
  if (ids) {
    for (size_t k = 0; k < K; k++) ids[k] = rv_cocoeval_cat_id(ev, k);
    cJSON_AddItemToObject(o, "cat_ids", rv_jarr_i64(ids, K));
    rv_jadd_num(o, "max_dets", p->max_dets[M - 1]);
    double *dense = malloc(sizeof *dense * ((size_t)p->n_iou * R * K + 1));
    if (dense) {
      for (size_t t = 0; t < (size_t)p->n_iou; t++)
        for (size_t r = 0; r < R; r++)
          for (size_t k = 0; k < K; k++) dense[(t * R + r) * K + k] = pr[(((t * R + r) * K + k) * A + 0) * M + (M - 1)];
      const size_t dims[3] = {(size_t)p->n_iou, R, K};
      char *txt = rv_jtext_num(dense, dims, 3);
      if (txt) cJSON_AddRawToObject(o, "precision", txt);
      free(txt);
      free(dense);
    }
    /* the per-area curves of the report: mean over IoU and categories of the defined cells */
    cJSON *pa = cJSON_AddArrayToObject(o, "area_mean");
    for (int a = 0; pa && a < p->n_areas; a++) {
      double *cur = malloc(sizeof(double) * R);
      if (!cur) break;
      for (size_t r = 0; r < R; r++) {
        double s = 0;
        size_t n = 0;
        for (int t = 0; t < p->n_iou; t++)
          for (size_t k = 0; k < K; k++) {
            double v = pr[((((size_t)t * R + r) * K + k) * A + (size_t)a) * M + (M - 1)];
            if (v > -1) {
              s += v;
              n++;
            }
          }
        cur[r] = n ? s / (double)n : -1;
      }
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "area", p->area_lbl[a]);
      cJSON_AddItemToObject(e, "precision", rv_jarr_num(cur, R));
      cJSON_AddItemToArray(pa, e);
      free(cur);
    }
  }
  free(ids);
  return o;
}

/* ---- precision / recall / F1 against the score threshold ---- */
typedef struct {
  double s;
  uint8_t tp;
} sd;

/* by score, descending (merge sort over tmp; the input comes in runs already in order: an
 * image's detections, a category's) */
static void sort_sd(sd *a, size_t n, sd *tmp) {
  if (n < 2) return;
  if (n <= 16) {
    for (size_t i = 1; i < n; i++) {
      sd x = a[i];
      size_t j = i;
      while (j > 0 && a[j - 1].s < x.s) {
        a[j] = a[j - 1];
        j--;
      }
      a[j] = x;
    }
    return;
  }
  size_t h = n / 2;
  sort_sd(a, h, tmp);
  sort_sd(a + h, n - h, tmp);
  if (!(a[h].s > a[h - 1].s)) return;
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = a[j].s > a[i].s ? a[j++] : a[i++];
  while (i < h) tmp[k++] = a[i++];
  while (j < n) tmp[k++] = a[j++];
  memcpy(a, tmp, n * sizeof *a);
}

#define N_THR 101

typedef struct {
  double prec[N_THR], rec[N_THR], f1[N_THR];
  double best_thr, best_p, best_r, best_f1;
} f1_curve;

static double f1_of(double p, double r) {
  if (isnan(p) || isnan(r)) return NAN;
  return p + r > 0 ? 2 * p * r / (p + r) : 0;
}

/* v: n (score, tp) sorted by score descending (ignored detections left out), npig gt */
static void f1_compute(f1_curve *c, const sd *v, size_t n, int64_t npig) {
  size_t i = 0;
  int64_t tp = 0, fp = 0;
  for (int k = N_THR - 1; k >= 0; k--) { /* thresholds 1.00 down to 0.00: counts only grow */
    double thr = k / 100.0;
    while (i < n && v[i].s >= thr) {
      if (v[i].tp) tp++;
      else fp++;
      i++;
    }
    c->prec[k] = tp + fp ? (double)tp / (double)(tp + fp) : NAN;
    c->rec[k] = npig ? (double)tp / (double)npig : NAN;
    c->f1[k] = f1_of(c->prec[k], c->rec[k]);
  }
  c->best_thr = c->best_p = c->best_r = c->best_f1 = NAN;
  tp = fp = 0;
  for (i = 0; i < n && npig;) {
    size_t j = i;
    while (j < n && v[j].s == v[i].s) {
      if (v[j].tp) tp++;
      else fp++;
      j++;
    }
    double p = (double)tp / (double)(tp + fp), r = (double)tp / (double)npig, f = f1_of(p, r);
    if (isnan(c->best_f1) || f > c->best_f1) {
      c->best_f1 = f;
      c->best_thr = v[i].s;
      c->best_p = p;
      c->best_r = r;
    }
    i = j;
  }
}

static void f1_json_into(cJSON *o, const f1_curve *c, int curves) {
  rv_jadd_num(o, "threshold", c->best_thr);
  rv_jadd_num(o, "precision", c->best_p);
  rv_jadd_num(o, "recall", c->best_r);
  rv_jadd_num(o, "f1", c->best_f1);
  if (curves) {
    cJSON_AddItemToObject(o, "precision_curve", rv_jarr_num(c->prec, N_THR));
    cJSON_AddItemToObject(o, "recall_curve", rv_jarr_num(c->rec, N_THR));
    cJSON_AddItemToObject(o, "f1_curve", rv_jarr_num(c->f1, N_THR));
  }
}

/* faster-coco-eval's extended_metrics (the interpolated-curve variant, macro over the categories):
 * at IoU .50, area all, the last maxDets, F1[r][k] = 2 p r / (p + r) from accumulate()'s precision
 * p (NaN where -1) at each recall threshold r; the recall threshold of the largest nanmean over
 * the categories (numpy's argmax: the first maximum, or the first NaN), and there the nanmean of
 * the precisions and each category's precision and score (eval['scores']). */
static cJSON *f1_macro_json(const rv_cocoeval *ev, int t50) {
  const rv_cocoeval_params *p = rv_cocoeval_get_params(ev);
  const double *P = rv_cocoeval_precision(ev), *S = rv_cocoeval_scores(ev);
  size_t K = rv_cocoeval_num_cats(ev), R = (size_t)p->n_rec, A = (size_t)p->n_areas, M = (size_t)p->n_max_dets;
  double *f1m = malloc(sizeof(double) * (R + 1)), *pk = malloc(sizeof(double) * (K + 1)), *sk = malloc(sizeof(double) * (K + 1));
  cJSON *o = NULL;
  if (!f1m || !pk || !sk || !S) goto done;
#define CELL(arr, r, k) arr[(((size_t)t50 * R + (r)) * K + (k)) * A * M + (M - 1)]
  for (size_t r = 0; r < R; r++) {
    double s = 0, rc = p->rec_thrs[r];
    size_t n = 0;
    for (size_t k = 0; k < K; k++) {
      double pr = CELL(P, r, k);
      if (pr < 0) continue;
      double f = 2 * pr * rc / (pr + rc);
      if (f != f) continue; /* 0 / 0 */
      s += f;
      n++;
    }
    f1m[r] = n ? s / (double)n : NAN;
  }
  size_t best = 0;
  for (size_t r = 0; r < R; r++) {
    if (f1m[r] != f1m[r]) { /* np.argmax stops at the first NaN */
      best = r;
      break;
    }
    if (f1m[r] > f1m[best]) best = r;
  }
  double ps = 0;
  size_t pn = 0;
  for (size_t k = 0; k < K; k++) {
    double pr = CELL(P, best, k);
    pk[k] = pr < 0 ? NAN : pr;
    sk[k] = pr < 0 ? NAN : CELL(S, best, k);
    if (pr >= 0) {
      ps += pr;
      pn++;
    }
  }
#undef CELL
  o = cJSON_CreateObject();
  rv_jadd_num(o, "recall", R ? p->rec_thrs[best] : NAN);
  rv_jadd_num(o, "precision", pn ? ps / (double)pn : NAN);
  rv_jadd_num(o, "f1", R ? f1m[best] : NAN);
  cJSON_AddItemToObject(o, "per_category_precision", rv_jarr_num(pk, K));
  cJSON_AddItemToObject(o, "per_category_score", rv_jarr_num(sk, K));
done:
  free(f1m);
  free(pk);
  free(sk);
  return o;
}

/* The evaluator's matching at IoU 0.5, area all, the last maxDets: per category and pooled. */
static cJSON *f1_json(const rv_cocoeval *ev, const rv_coco *gt, int threads) {
  const rv_cocoeval_params *p = rv_cocoeval_get_params(ev);
  size_t K = rv_cocoeval_num_cats(ev);
  int t50 = iou_index(p, 0.5);
  if (t50 < 0) return cJSON_CreateNull();
  int md = p->max_dets[p->n_max_dets - 1];
  size_t *off = calloc(K + 1, sizeof *off);
  int64_t *npig = calloc(K + 1, sizeof *npig);
  f1_curve *cc = calloc(K + 1, sizeof *cc);
  if (!off || !npig || !cc) goto fail;
  for (size_t k = 0; k < K; k++) off[k + 1] = off[k] + rv_cocoeval_cat_dets(ev, k, 0, t50, md, NULL, NULL, NULL);
  size_t N = off[K];
  sd *all = malloc(sizeof *all * (N + 1));
  double *sc = malloc(sizeof *sc * (N + 1));
  uint8_t *st = malloc(N + 1);
  if (!all || !sc || !st) {
    free(all);
    free(sc);
    free(st);
    goto fail;
  }
  size_t *kept = calloc(K + 1, sizeof *kept);
  int nth = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth)
  for (long k = 0; k < (long)K; k++) {
    size_t n = rv_cocoeval_cat_dets(ev, (size_t)k, 0, t50, md, sc + off[k], st + off[k], &npig[k]), m = 0;
    sd *v = all + off[k], *tmp = (sd *)malloc(sizeof *tmp * (n + 1));
    for (size_t i = 0; i < n; i++)
      if (st[off[k] + i] != 2) v[m++] = (sd){sc[off[k] + i], st[off[k] + i]};
    if (tmp) sort_sd(v, m, tmp);
    else m = 0; /* out of memory: an empty curve */
    free(tmp);
    if (kept) kept[k] = m;
    f1_compute(&cc[k], v, m, npig[k]);
  }
  cJSON *o = cJSON_CreateObject();
  rv_jadd_num(o, "iou_thr", 0.5);
  double thr[N_THR];
  for (int k = 0; k < N_THR; k++) thr[k] = k / 100.0;
  cJSON_AddItemToObject(o, "thresholds", rv_jarr_num(thr, N_THR));
  cJSON_AddItemToObject(o, "macro", f1_macro_json(ev, t50));
  if (kept) { /* pooled over the categories: a K-way merge of their sorted lists (a heap of heads) */
    size_t m = 0, nh = 0;
    int64_t tot = 0;
    for (size_t k = 0; k < K; k++) {
      m += kept[k];
      tot += npig[k];
    }
    sd *merged = malloc(sizeof *merged * (m + 1));
    size_t *heap = malloc(sizeof *heap * (K + 1)), *pos = calloc(K + 1, sizeof *pos);
    if (!merged || !heap || !pos) m = 0;
#define HEAD(k) all[off[k] + pos[k]].s
    for (size_t k = 0; m && k < K; k++) {
      if (!kept[k]) continue;
      size_t i = nh++; /* sift up: the highest head score on top */
      while (i > 0 && HEAD(heap[(i - 1) / 2]) < HEAD(k)) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
      }
      heap[i] = k;
    }
    for (size_t j = 0; m && nh; j++) {
      size_t k = heap[0];
      merged[j] = all[off[k] + pos[k]];
      if (++pos[k] == kept[k]) k = heap[--nh]; /* exhausted: the last leaf replaces it */
      size_t i = 0; /* sift down k from the root */
      for (;;) {
        size_t c = 2 * i + 1;
        if (c >= nh) break;
        if (c + 1 < nh && HEAD(heap[c + 1]) > HEAD(heap[c])) c++;
        if (!(HEAD(heap[c]) > HEAD(k))) break;
        heap[i] = heap[c];
        i = c;
      }
      if (nh) heap[i] = k;
    }
#undef HEAD
    f1_curve ov;
    f1_compute(&ov, merged ? merged : all, m, tot);
    free(merged);
    free(heap);
    free(pos);
    cJSON *oo = cJSON_AddObjectToObject(o, "overall");
    f1_json_into(oo, &ov, 1);
  }
  cJSON *pc = cJSON_AddArrayToObject(o, "per_category");
  for (size_t k = 0; k < K; k++) {
    cJSON *e = cJSON_CreateObject();
    int64_t id = rv_cocoeval_cat_id(ev, k);
    rv_jadd_num(e, "id", (double)id);
    cJSON_AddStringToObject(e, "name", cat_name(gt, id));
    f1_json_into(e, &cc[k], 1);
    cJSON_AddItemToArray(pc, e);
  }
  free(kept);
  free(all);
  free(sc);
  free(st);
  free(off);
  free(npig);
  free(cc);
  return o;
fail:
  free(off);
  free(npig);
  free(cc);
  return NULL;
}

static cJSON *tide_json(const rv_tide_result *r, const rv_tide_params *p) {
  cJSON *o = cJSON_CreateObject();
  rv_jadd_num(o, "ap50", r->ap);
  cJSON *m = cJSON_AddObjectToObject(o, "main"), *s = cJSON_AddObjectToObject(o, "special"),
        *c = cJSON_AddObjectToObject(o, "counts");
  for (int k = 0; k < RV_TIDE_N_MAIN; k++) {
    rv_jadd_num(m, rv_tide_main_names[k], r->main[k]);
    rv_jadd_num(c, rv_tide_main_names[k], (double)r->counts[k]);
  }
  for (int k = 0; k < RV_TIDE_N_SPECIAL; k++) rv_jadd_num(s, rv_tide_special_names[k], r->special[k]);
  rv_jadd_num(o, "pos_thr", p->pos_thr);
  rv_jadd_num(o, "bg_thr", p->bg_thr);
  return o;
}

static rv_status run_tide(rv_tide_result *r, const rv_tide_params *tp, const rv_coco *gt, const rv_coco_results *res,
                          rv_iou_type t, rv_ctx *ctx) {
  int64_t *ids = malloc(sizeof *ids * (gt->n_images + 1));
  if (!ids) return rv_error(ctx, RV_ERR_NOMEM, "analysis: out of memory");
  for (size_t i = 0; i < gt->n_images; i++) ids[i] = gt->images[i].id;
  rv_status st = rv_tide_run(r, tp, t, ids, gt->n_images, gt->anns, gt->n_anns, res->dets, res->n, ctx);
  free(ids);
  return st;
}

/* the worst images' objects: one pass over the gt and the detections */
static long pos_of(const int64_t *sorted_ids, const size_t *slot, size_t m, int64_t id) {
  size_t lo = 0, hi = m;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (sorted_ids[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < m && sorted_ids[lo] == id ? (long)slot[lo] : -1;
}

typedef struct {
  size_t img;
  int64_t fp, fn;
} worst;

static int cmp_worst(const void *a, const void *b) {
  const worst *x = a, *y = b;
  int64_t ex = x->fp + x->fn, ey = y->fp + y->fn;
  if (ex != ey) return ex > ey ? -1 : 1;
  if (x->fn != y->fn) return x->fn > y->fn ? -1 : 1;
  return x->img < y->img ? -1 : x->img > y->img;
}

static const char *dt_label(int tide_kind, int conf_out) {
  if (tide_kind == RV_TIDE_TP) return "TP";
  if (tide_kind >= 0 && tide_kind < RV_TIDE_N_MAIN) return rv_tide_main_names[tide_kind];
  return conf_out == 1 ? "TP" : "FP"; /* past TIDE's 100 detections: the confusion matrix's rule */
}

/* the worst images: objects to draw (non-crowd gt, crowd gt, detections at the confusion
 * threshold) with their labels, and a thumbnail when the image is at hand */
static cJSON *worst_json(const rv_coco *gt, const rv_coco_results *res, const rv_tide_result *tr,
                         const rv_det_confusion_detail *cd, const int64_t *img_ids, const rv_analysis_params *p,
                         const char *images_dir, rv_ctx *ctx) {
  size_t n_img = gt->n_images;
  worst *w = malloc(sizeof *w * (n_img + 1));
  cJSON *arr = cJSON_CreateArray();
  if (!w || !arr) {
    free(w);
    cJSON_Delete(arr);
    return NULL;
  }
  size_t m = 0;
  for (size_t i = 0; i < n_img; i++)
    if (cd->img_fp[i] + cd->img_fn[i] > 0) w[m++] = (worst){i, cd->img_fp[i], cd->img_fn[i]};
  qsort(w, m, sizeof *w, cmp_worst);
  if (m > (size_t)(p->n_worst > 0 ? p->n_worst : 0)) m = (size_t)(p->n_worst > 0 ? p->n_worst : 0);
  char **thumbs = calloc(m + 1, sizeof *thumbs);
  if (images_dir && thumbs) {
    int nth = p->threads > 0 ? p->threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth)
    for (long q = 0; q < (long)m; q++) {
      const rv_coco_image *im = &gt->images[w[q].img];
      if (!im->file_name) continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", images_dir, im->file_name);
      rv_ctx *c2 = rv_ctx_create();
      rv_image img = {0};
      if (c2 && rv_image_read(path, &img, c2) == RV_OK) rv_thumb_data_uri(&thumbs[q], &img, p->thumb_size, c2);
      else if (c2) {
#pragma omp critical(rv_analysis_log)
        rv_log(ctx, RV_LOG_WARN, "report: no thumbnail for image %lld: %s", (long long)im->id, rv_ctx_errmsg(c2));
      }
      rv_image_free(&img);
      rv_ctx_free(c2);
    }
  }
  for (size_t q = 0; q < m; q++) {
    const rv_coco_image *im = &gt->images[w[q].img];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, o);
    rv_jadd_num(o, "image_id", (double)img_ids[w[q].img]);
    rv_jadd_num(o, "fp", (double)w[q].fp);
    rv_jadd_num(o, "fn", (double)w[q].fn);
    cJSON_AddStringToObject(o, "file_name", im->file_name ? im->file_name : "");
    rv_jadd_num(o, "width", im->width);
    rv_jadd_num(o, "height", im->height);
    if (thumbs && thumbs[q]) cJSON_AddStringToObject(o, "thumbnail", thumbs[q]);
    cJSON_AddArrayToObject(o, "objects");
  }
  { /* the objects of the listed images, in file order: gt first, then detections */
    int64_t *ids = malloc(sizeof *ids * (m + 1));
    size_t *slot = malloc(sizeof *slot * (m + 1));
    if (ids && slot) {
      for (size_t q = 0; q < m; q++) { /* insertion sort by id (m is small) */
        int64_t id = gt->images[w[q].img].id;
        size_t j = q;
        while (j > 0 && ids[j - 1] > id) {
          ids[j] = ids[j - 1];
          slot[j] = slot[j - 1];
          j--;
        }
        ids[j] = id;
        slot[j] = q;
      }
      for (size_t k = 0; k < gt->n_anns; k++) {
        const rv_coco_obj *g = &gt->anns[k];
        long q = pos_of(ids, slot, m, g->image_id);
        if (q < 0) continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "kind", "gt");
        rv_jadd_num(e, "category_id", (double)g->category_id);
        cJSON_AddItemToObject(e, "bbox", rv_jarr_num(g->bbox, 4));
        const char *lab = g->iscrowd ? "crowd" : tr->gt_kind[k] == RV_TIDE_MISS ? "Miss" : cd->gt_out[k] == 2 ? "FN" : "TP";
        cJSON_AddStringToObject(e, "label", lab);
        cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, (int)q), "objects"), e);
      }
      for (size_t k = 0; k < res->n; k++) {
        const rv_coco_obj *d = &res->dets[k];
        if (cd->dt_out[k] == 0) continue;
        long q = pos_of(ids, slot, m, d->image_id);
        if (q < 0) continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "kind", "dt");
        rv_jadd_num(e, "category_id", (double)d->category_id);
        rv_jadd_num(e, "score", d->score);
        cJSON_AddItemToObject(e, "bbox", rv_jarr_num(d->bbox, 4));
        cJSON_AddStringToObject(e, "label", tr->dt_ignored[k] ? "ignored" : dt_label(tr->dt_kind[k], cd->dt_out[k]));
        cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, (int)q), "objects"), e);
      }
    }
    free(ids);
    free(slot);
  }
  for (size_t q = 0; thumbs && q < m; q++) free(thumbs[q]);
  free(thumbs);
  free(w);
  return arr;
}

rv_status rv_coco_analyze(char **json, const rv_coco *gt, const rv_coco_results *res, rv_iou_type t,
                          const rv_cocoeval *ev_in, const rv_cocoeval_params *eval_params,
                          const rv_coco_results *other, const char *other_name, const char *images_dir,
                          const char *name, const rv_analysis_params *p_in, rv_ctx *ctx) {
  *json = NULL;
  rv_analysis_params p = p_in ? *p_in : rv_analysis_default_params();
  rv_cocoeval_params ep = eval_params ? *eval_params : rv_cocoeval_default_params(t);
  ep.iou_type = t;
  if (p.threads) ep.threads = p.threads;
  if (!(p.conf_score_thr == p.conf_score_thr) || !(p.conf_iou_thr >= 0 && p.conf_iou_thr <= 1))
    return rv_error(ctx, RV_ERR_ARG, "analysis: the confusion matrix thresholds must be numbers (IoU in 0..1)");
  rv_cocoeval *own = NULL, *oev = NULL;
  rv_tide_result tr = {0}, otr = {0};
  rv_img_ious ious = {0};
  rv_status st = RV_OK;
  cJSON *root = NULL;
  int64_t *counts = NULL, *img_ids = NULL, *cat_ids = NULL;
  rv_det_confusion_detail cd = {0};
  const size_t K = gt->n_cats, n_img = gt->n_images;
  const rv_cocoeval *ev = ev_in;
  double t0 = now_s();
  if (!ev) {
    if ((st = rv_coco_evaluate(&own, gt, res, &ep, ctx)) != RV_OK) goto done;
    ev = own;
  }
  rv_tide_params tp = rv_tide_default_params();
  tp.pos_thr = p.tide_pos_thr;
  tp.bg_thr = p.tide_bg_thr;
  tp.threads = p.threads;
  img_ids = malloc(sizeof *img_ids * (n_img + 1));
  if (!img_ids) goto nomem;
  for (size_t i = 0; i < n_img; i++) img_ids[i] = gt->images[i].id;
  /* one set of per-image IoU matrices for TIDE (its 100 best detections) and the confusion
   * matrix (every detection at or above its score threshold) */
  if ((st = rv_img_ious_build(&ious, t, img_ids, n_img, gt->anns, gt->n_anns, res->dets, res->n, tp.max_dets,
                              p.conf_score_thr, p.threads, ctx)) != RV_OK)
    goto done;
  double t0b = now_s();
  if ((st = rv_tide_run_ious(&tr, &tp, &ious, gt->anns, gt->n_anns, res->dets, res->n, ctx)) != RV_OK) goto done;
  double t1 = now_s();
  counts = calloc((K + 1) * (K + 1), sizeof *counts);
  cat_ids = malloc(sizeof *cat_ids * (K + 1));
  cd.dt_out = malloc(res->n + 1);
  cd.gt_out = malloc(gt->n_anns + 1);
  cd.img_fp = malloc(sizeof(int64_t) * (n_img + 1));
  cd.img_fn = malloc(sizeof(int64_t) * (n_img + 1));
  if (!counts || !cat_ids || !cd.dt_out || !cd.gt_out || !cd.img_fp || !cd.img_fn) {
    st = rv_error(ctx, RV_ERR_NOMEM, "analysis: out of memory");
    goto done;
  }
  for (size_t k = 0; k < K; k++) cat_ids[k] = gt->cats[k].id;
  rv_det_confusion_params cp = {p.conf_score_thr, p.conf_iou_thr, p.threads};
  if ((st = rv_det_confusion_ious(counts, cat_ids, K, &ious, gt->anns, gt->n_anns, res->dets, res->n, &cp, &cd, ctx)) !=
      RV_OK)
    goto done;
  rv_img_ious_free(&ious);
  double t2 = now_s();
  if (other) {
    if ((st = rv_coco_evaluate(&oev, gt, other, &ep, ctx)) != RV_OK) goto done;
    if ((st = run_tide(&otr, &tp, gt, other, t, ctx)) != RV_OK) goto done;
  }
  root = cJSON_CreateObject();
  if (!root) goto nomem;
  cJSON_AddStringToObject(root, "report", "coco");
  cJSON_AddStringToObject(root, "iou_type", t == RV_IOU_BBOX ? "bbox" : "segm");
  if (name) cJSON_AddStringToObject(root, "name", name);
  double stats[12];
  rv_cocoeval_summarize(ev, stats);
  cJSON_AddItemToObject(root, "stats", rv_jarr_num(stats, 12));
  rv_jadd_num(root, "images", (double)n_img);
  rv_jadd_num(root, "detections", (double)res->n);
  rv_jadd_num(root, "annotations", (double)gt->n_anns);
  double t3 = now_s();
  cJSON_AddItemToObject(root, "per_category", per_category_json(ev, gt));
  cJSON_AddItemToObject(root, "pr", pr_json(ev));
  double t4 = now_s();
  cJSON_AddItemToObject(root, "tide", tide_json(&tr, &tp));
  {
    cJSON *c = cJSON_AddObjectToObject(root, "confusion");
    cJSON *lab = cJSON_AddArrayToObject(c, "labels"), *names = cJSON_AddArrayToObject(c, "names");
    for (size_t k = 0; k < K; k++) {
      cJSON_AddItemToArray(lab, rv_jnum_item((double)cat_ids[k]));
      cJSON_AddItemToArray(names, cJSON_CreateString(gt->cats[k].name ? gt->cats[k].name : ""));
    }
    cJSON_AddItemToArray(lab, cJSON_CreateString("background"));
    cJSON_AddItemToArray(names, cJSON_CreateString("background"));
    cJSON *rows = cJSON_AddArrayToObject(c, "counts");
    for (size_t r = 0; rows && r <= K; r++) cJSON_AddItemToArray(rows, rv_jarr_i64(counts + r * (K + 1), K + 1));
    rv_jadd_num(c, "score_thr", p.conf_score_thr);
    rv_jadd_num(c, "iou_thr", p.conf_iou_thr);
  }
  cJSON_AddItemToObject(root, "f1", f1_json(ev, gt, p.threads));
  double t5 = now_s();
  cJSON_AddItemToObject(root, "worst_images", worst_json(gt, res, &tr, &cd, img_ids, &p, images_dir, ctx));
  double t6 = now_s();
  if (other) {
    cJSON *c = cJSON_AddObjectToObject(root, "compare");
    cJSON_AddStringToObject(c, "name", other_name ? other_name : "other");
    double os[12];
    rv_cocoeval_summarize(oev, os);
    cJSON_AddItemToObject(c, "stats", rv_jarr_num(os, 12));
    cJSON *pc = cJSON_AddArrayToObject(c, "per_category");
    for (size_t k = 0; k < rv_cocoeval_num_cats(ev); k++) {
      int64_t id = rv_cocoeval_cat_id(ev, k);
      double a = rv_cocoeval_category_ap(ev, k), b = rv_cocoeval_category_ap(oev, k);
      cJSON *e = cJSON_CreateObject();
      rv_jadd_num(e, "id", (double)id);
      cJSON_AddStringToObject(e, "name", cat_name(gt, id));
      rv_jadd_num(e, "ap", a);
      rv_jadd_num(e, "other_ap", b);
      rv_jadd_num(e, "delta", a > -1 && b > -1 ? b - a : NAN);
      cJSON_AddItemToArray(pc, e);
    }
    cJSON_AddItemToObject(c, "tide", tide_json(&otr, &tp));
  }
  double t7 = now_s();
  char *txt = cJSON_PrintUnformatted(root);
  if (!txt) goto nomem;
  *json = txt;
  rv_log(ctx, RV_LOG_INFO,
         "analysis (%s): IoUs %.2f s, TIDE %.2f s, confusion %.2f s, comparison %.2f s, tables + PR %.2f s, F1 %.2f s, worst images %.2f s, "
         "JSON %.2f s",
         t == RV_IOU_BBOX ? "bbox" : "segm", t0b - t0, t1 - t0b, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, now_s() - t7 + (t7 - t6));
  goto done;
nomem:
  st = rv_error(ctx, RV_ERR_NOMEM, "analysis: out of memory");
done:
  rv_img_ious_free(&ious);
  cJSON_Delete(root);
  rv_cocoeval_free(own);
  rv_cocoeval_free(oev);
  rv_tide_result_free(&tr);
  rv_tide_result_free(&otr);
  free(counts);
  free(img_ids);
  free(cat_ids);
  free(cd.dt_out);
  free(cd.gt_out);
  free(cd.img_fp);
  free(cd.img_fn);
  return st;
}
