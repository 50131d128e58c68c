/* COCOeval (bbox / segm / keypoints) with pycocotools' numbers. The steps mirror cocoeval.py
 * (evaluate -> evaluateImg -> accumulate -> summarize); SEMANTICS.md "COCO evaluation"
 * lists the quirks kept here. Data layout:
 *   pairs    (category k, image i) with gt or dt, sorted by k then i (image-id order);
 *   per pair D = min(#dt, maxDets[-1]) detections sorted by score (stable), and a state
 *            byte per (area a, threshold t, detection d): TP, FP or ignored;
 *   npig     non-ignored gt count per (pair, area).
 * accumulate() pools the detections of a category over images with one stable sort and
 * derives every (area, maxDet) cell from it. The evaluation keeps each pair's objects, so
 * that rv_cocoeval_pair_detail can recompute one pair with every evalImgs field (the
 * matched ids, the IoUs) on demand instead of storing them for all pairs. */
#include "eval/cocoeval.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF /* linspace k*step+start must not be fused */
#endif

enum { ST_FP = 0, ST_TP = 1, ST_IGN = 2 };

static size_t nz(size_t n) { return n ? n : 1; } /* malloc(0) avoidance */

typedef struct {
  int64_t key;
  size_t idx;
} keyed;

struct rv_cocoeval {
  rv_cocoeval_params p;
  int64_t *imgs, *cats;
  size_t I, K;
  size_t n_pairs;
  size_t *cat_pair; /* K+1: pairs of category k are [cat_pair[k], cat_pair[k+1]) */
  size_t *dt_off;   /* n_pairs+1: offsets of each pair's kept detections */
  double *score;    /* sorted scores, dt_off[n_pairs] of them */
  uint8_t *state;   /* A*T*D per pair at dt_off[p]*A*T */
  int64_t *npig;    /* [n_pairs][A] */
  double *precision, *recall, *cat_ap;
  double *scores; /* [T][R][K][A][M] like precision: the score at each recall threshold */
  /* kept for rv_cocoeval_pair_detail (evalImgs / ious): the inputs and the pairs' objects */
  rv_cocoeval_input in;
  int has_kp;
  rv_cocoeval_kpts kp;
  int64_t *pkey;    /* n_pairs: category index * I + image index */
  keyed *gk, *dk;   /* objects by pair */
  size_t *pg, *pd;  /* n_pairs+1: each pair's start in gk / dk */
};

void rv_linspace(double *out, double start, double stop, int num) {
  if (num <= 0) return;
  if (num == 1) {
    out[0] = start;
    return;
  }
  double div = num - 1, delta = stop - start, step = delta / div;
  for (int k = 0; k < num; k++) {
    double y = (step == 0) ? ((double)k / div) * delta : (double)k * step;
    out[k] = y + start;
  }
  out[num - 1] = stop;
}

/* numpy pairwise_sum for float64 (loops/arithmetic: n < 8 plain, <= 128 eight lanes). */
static double pairwise_sum(const double *a, size_t n) {
  if (n < 8) {
    double res = 0.;
    for (size_t i = 0; i < n; i++) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; j++) r[j] = a[j];
    size_t i;
    for (i = 8; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; j++) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

double rv_np_sum(const double *v, size_t n) {
  double total = 0.0;
  for (size_t b = 0; b < n; b += 8192) total += pairwise_sum(v + b, n - b < 8192 ? n - b : 8192);
  return total;
}

double rv_np_mean(const double *v, size_t n) {
  if (n == 0) return NAN;
  return rv_np_sum(v, n) / (double)n;
}

rv_cocoeval_params rv_cocoeval_default_params(rv_iou_type t) {
  rv_cocoeval_params p;
  memset(&p, 0, sizeof p);
  p.iou_type = t;
  p.n_iou = 10;
  rv_linspace(p.iou_thrs, .5, 0.95, 10);
  p.n_rec = 101;
  rv_linspace(p.rec_thrs, .0, 1.00, 101);
  p.n_max_dets = 3;
  p.max_dets[0] = 1;
  p.max_dets[1] = 10;
  p.max_dets[2] = 100;
  p.n_areas = 4;
  static const char *const lbl[4] = {"all", "small", "medium", "large"};
  const double rng[4][2] = {{0, 1e5 * 1e5}, {0, 32 * 32}, {32 * 32, 96 * 96}, {96 * 96, 1e5 * 1e5}};
  for (int a = 0; a < 4; a++) {
    p.area_rng[a][0] = rng[a][0];
    p.area_rng[a][1] = rng[a][1];
    p.area_lbl[a] = lbl[a];
  }
  return p;
}

void rv_cocoeval_params_mmdet(rv_cocoeval_params *p) {
  p->n_max_dets = 3;
  p->max_dets[0] = 100;
  p->max_dets[1] = 300;
  p->max_dets[2] = 1000;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static size_t sort_unique(int64_t *v, size_t n) {
  if (n == 0) return 0;
  qsort(v, n, sizeof *v, cmp_i64);
  size_t m = 1;
  for (size_t i = 1; i < n; i++)
    if (v[i] != v[m - 1]) v[m++] = v[i];
  return m;
}

static long find_i64(const int64_t *v, size_t n, int64_t x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (lo < n && v[lo] == x) ? (long)lo : -1;
}

static int cmp_keyed(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Stable descending sort by score: ties keep their position (np.argsort(-s, 'mergesort')).
 * (score, pos) with distinct positions is a strict total order (NaN scores are rejected), so
 * any correct sort gives the same permutation. */
typedef struct {
  double s;
  size_t pos;
} scored;

static int cmp_scored(const void *a, const void *b) {
  const scored *x = a, *y = b;
  if (x->s > y->s) return -1;
  if (x->s < y->s) return 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int before(const scored *x, const scored *y) { return x->s > y->s || (x->s == y->s && x->pos < y->pos); }

/* Merge sort, insertion sort on runs of 16; tmp holds n entries. Inputs that are already
 * sorted runs (a category's detections, each image sorted) cost one compare per element
 * and merge level. */
static void sort_scored(scored *a, size_t n, scored *tmp) {
  const size_t RUN = 16;
  for (size_t lo = 0; lo < n; lo += RUN) {
    size_t hi = lo + RUN < n ? lo + RUN : n;
    for (size_t i = lo + 1; i < hi; i++) {
      scored x = a[i];
      size_t j = i;
      while (j > lo && before(&x, &a[j - 1])) {
        a[j] = a[j - 1];
        j--;
      }
      a[j] = x;
    }
  }
  scored *src = a, *dst = tmp;
  for (size_t w = RUN; w < n; w *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * w) {
      size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      size_t i = lo, j = mid, k = lo;
      if (mid < hi && !before(&src[mid], &src[mid - 1])) { /* already in order */
        memcpy(dst + lo, src + lo, (hi - lo) * sizeof *src);
        continue;
      }
      while (i < mid && j < hi) dst[k++] = before(&src[j], &src[i]) ? src[j++] : src[i++];
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    scored *t = src;
    src = dst;
    dst = t;
  }
  if (src != a) memcpy(a, src, n * sizeof *a);
}

/* The objects inside img_ids x cat_ids keyed by pair (category-major) and sorted by (key,
 * index): a counting sort over the pairs when there are not many more pairs than objects
 * (stable, so indices stay in file order), qsort otherwise. */
static rv_status key_objects(keyed **out, size_t *n_out, const rv_coco_obj *o, size_t n,
                             const rv_cocoeval *ev, rv_ctx *ctx) {
  keyed *k = malloc(sizeof *k * (n ? n : 1));
  if (!k) return rv_error(ctx, RV_ERR_NOMEM, "cocoeval: out of memory");
  size_t m = 0;
  for (size_t j = 0; j < n; j++) {
    long i = find_i64(ev->imgs, ev->I, o[j].image_id);
    long c = find_i64(ev->cats, ev->K, o[j].category_id);
    if (i < 0 || c < 0) continue;
    k[m].key = (int64_t)c * (int64_t)ev->I + i;
    k[m].idx = j;
    m++;
  }
  size_t nkeys = ev->I * ev->K;
  /* up to 16 pairs per object (COCO val: 5,000 images x 80 categories = 400k pairs for ~36k
   * gt, cheaper than qsort's ~m log m callbacks) */
  size_t *count = ev->K && nkeys / ev->K == ev->I && nkeys <= 16 * m + 65536 ? calloc(nkeys + 1, sizeof *count) : NULL;
  keyed *sorted = count ? malloc(sizeof *sorted * (m ? m : 1)) : NULL;
  if (count && sorted) {
    for (size_t j = 0; j < m; j++) count[k[j].key + 1]++;
    for (size_t q = 0; q < nkeys; q++) count[q + 1] += count[q];
    for (size_t j = 0; j < m; j++) sorted[count[k[j].key]++] = k[j];
    free(k);
    k = sorted;
  } else {
    free(sorted);
    qsort(k, m, sizeof *k, cmp_keyed);
  }
  free(count);
  *out = k;
  *n_out = m;
  return RV_OK;
}

/* Scratch memory of one thread for eval_pair, grown as needed and reused across pairs. */
typedef struct {
  unsigned char *buf;
  size_t cap, used;
} scratch;

static int scratch_reserve(scratch *w, size_t bytes) {
  w->used = 0;
  if (bytes <= w->cap) return 1;
  size_t nc = w->cap ? w->cap : 4096;
  while (nc < bytes) nc *= 2;
  unsigned char *nb = realloc(w->buf, nc);
  if (!nb) return 0;
  w->buf = nb;
  w->cap = nc;
  return 1;
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* a block of the reserved space (scratch_reserve was given the sum of the align16 sizes) */
static void *scratch_take(scratch *w, size_t bytes) {
  void *p = w->buf + w->used;
  w->used += align16(bytes);
  return p;
}

/* computeOks for one pair: rows = the D score-sorted detections, columns = the G gt in file
 * order. Per keypoint e = (dx^2 + dy^2) / (2 sigma)^2 / (area + eps) / 2 over the gt's visible
 * keypoints (or, with none visible, the distances outside the gt box doubled on each side, over
 * every keypoint); OKS = sum(exp(-e)) / count, the sum in numpy's pairwise order. The exps go
 * through kp->vexp when given (a host's vectorised exp, so that OKS equal numpy's bit for bit),
 * else libm's exp. buf holds D*G*n_kpts doubles, cnt D*G. */
static void compute_oks(double *ious, const rv_cocoeval_kpts *kp, const double *sig, const rv_coco_obj *const *dto,
                        const size_t *dti, size_t D, const rv_coco_obj *const *gto, const size_t *gti, size_t G,
                        double *buf, size_t *cnt) {
  const int nk = kp->n_kpts;
  size_t used = 0;
  for (size_t g = 0; g < G; g++) {
    const double *gp = kp->gt_kpts + gti[g] * 3 * (size_t)nk;
    int k1 = 0;
    for (int k = 0; k < nk; k++) k1 += gp[3 * k + 2] > 0;
    const double *bb = gto[g]->bbox;
    double x0 = bb[0] - bb[2], x1 = bb[0] + bb[2] * 2, y0 = bb[1] - bb[3], y1 = bb[1] + bb[3] * 2;
    double den = gto[g]->area + DBL_EPSILON;
    for (size_t d = 0; d < D; d++) {
      const double *dp = kp->dt_kpts + dti[d] * 3 * (size_t)nk;
      size_t n = 0;
      for (int k = 0; k < nk; k++) {
        double dx, dy;
        if (k1 > 0) {
          if (!(gp[3 * k + 2] > 0)) continue;
          dx = dp[3 * k] - gp[3 * k];
          dy = dp[3 * k + 1] - gp[3 * k + 1];
        } else { /* np.max((0, v)) keeps a NaN */
          double a = x0 - dp[3 * k], b = dp[3 * k] - x1, c = y0 - dp[3 * k + 1], e = dp[3 * k + 1] - y1;
          a = a != a ? a : a > 0 ? a : 0;
          b = b != b ? b : b > 0 ? b : 0;
          c = c != c ? c : c > 0 ? c : 0;
          e = e != e ? e : e > 0 ? e : 0;
          dx = a + b;
          dy = c + e;
        }
        double s2 = sig[k] * 2, var = s2 * s2;
        double e = (dx * dx + dy * dy) / var / den / 2;
        buf[used + n++] = -e;
      }
      cnt[d * G + g] = n;
      used += n;
    }
  }
  if (kp->vexp)
    kp->vexp(buf, used, kp->vexp_user);
  else
    for (size_t i = 0; i < used; i++) buf[i] = exp(buf[i]);
  used = 0;
  for (size_t g = 0; g < G; g++)
    for (size_t d = 0; d < D; d++) {
      size_t n = cnt[d * G + g];
      ious[d * G + g] = rv_np_sum(buf + used, n) / (double)n;
      used += n;
    }
}

/* Where eval_pair writes: the evaluator's arrays, and optionally every evalImgs field. */
typedef struct {
  double *score;   /* D sorted scores */
  uint8_t *state;  /* A*T*D */
  int64_t *npig;   /* A */
  rv_cocoeval_detail *det;
} pair_out;

/* evaluateImg for one (image, category) pair and every area range. */
static int eval_pair(const rv_cocoeval *ev, const rv_cocoeval_input *in, const keyed *gk, size_t G,
                     const keyed *dk, size_t nd, size_t pidx, const pair_out *out, scratch *ws) {
  const rv_cocoeval_params *p = &ev->p;
  const int T = p->n_iou, A = p->n_areas, kps = ev->has_kp, segm = !kps && p->iou_type != RV_IOU_BBOX;
  const size_t D = ev->dt_off[pidx + 1] - ev->dt_off[pidx];
  const size_t nk = kps ? (size_t)ev->kp.n_kpts : 0;
  const size_t sz_ord = sizeof(scored) * nz(nd), sz_dto = sizeof(rv_coco_obj *) * nz(D),
               sz_gto = sizeof(rv_coco_obj *) * nz(G), sz_iou = sizeof(double) * nz(D * G),
               sz_gtind = sizeof(size_t) * nz(G), sz_gtm = sizeof(int64_t) * nz((size_t)T * G),
               sz_dtm = sizeof(int64_t) * nz((size_t)T * D), sz_max = sizeof(double) * nz(D), sz_dtig = nz((size_t)T * D), sz_g = nz(G),
               sz_bbd = segm || kps ? 0 : sizeof(double) * 4 * nz(D), sz_bbg = segm || kps ? 0 : sizeof(double) * 4 * nz(G),
               sz_rd = segm ? sizeof(rv_rle) * nz(D) : 0, sz_rg = segm ? sizeof(rv_rle) * nz(G) : 0,
               sz_id = segm ? sizeof(rv_rle_info) * nz(D) : 0, sz_ig = segm ? sizeof(rv_rle_info) * nz(G) : 0,
               sz_kb = kps ? sizeof(double) * nz(D * G * nk) : 0, sz_kc = kps ? sizeof(size_t) * nz(D * G) : 0,
               sz_ix = kps ? sizeof(size_t) * nz(D) + sizeof(size_t) * nz(G) : 0;
  size_t total = align16(sz_ord) * 2 + align16(sz_dto) + align16(sz_gto) + align16(sz_iou) + align16(sz_gtind) +
                 align16(sz_gtm) + align16(sz_dtm) + align16(sz_max) + align16(sz_dtig) + 2 * align16(sz_g) + align16(sz_bbd) +
                 align16(sz_bbg) + align16(sz_rd) + align16(sz_rg) + align16(sz_id) + align16(sz_ig) + align16(sz_kb) +
                 align16(sz_kc) + align16(sz_ix) + 16;
  if (!scratch_reserve(ws, total)) return 0;
  scored *ord = scratch_take(ws, sz_ord), *ord_tmp = scratch_take(ws, sz_ord);
  const rv_coco_obj **dto = scratch_take(ws, sz_dto), **gto = scratch_take(ws, sz_gto);
  double *ious = scratch_take(ws, sz_iou);
  size_t *gtind = scratch_take(ws, sz_gtind);
  int64_t *gtm = scratch_take(ws, sz_gtm), *dtm = scratch_take(ws, sz_dtm);
  double *maxiou = scratch_take(ws, sz_max);
  uint8_t *dtig = scratch_take(ws, sz_dtig), *gig = scratch_take(ws, sz_g), *crowd = scratch_take(ws, sz_g);
  for (size_t j = 0; j < nd; j++) {
    ord[j].s = in->dt[dk[j].idx].score;
    ord[j].pos = j;
  }
  sort_scored(ord, nd, ord_tmp);
  for (size_t d = 0; d < D; d++) dto[d] = &in->dt[dk[ord[d].pos].idx];
  for (size_t g = 0; g < G; g++) {
    gto[g] = &in->gt[gk[g].idx];
    crowd[g] = gto[g]->iscrowd != 0;
  }
  /* computeIoU / computeOks: rows = score-sorted dt (first D), columns = gt in file order */
  int have_ious = D && G && !(kps && ev->kp.no_oks);
  if (have_ious) {
    if (kps) {
      double *kb = scratch_take(ws, sz_kb);
      size_t *kc = scratch_take(ws, sz_kc), *dti = scratch_take(ws, sizeof(size_t) * nz(D)), *gti = dti + nz(D);
      for (size_t d = 0; d < D; d++) dti[d] = dk[ord[d].pos].idx;
      for (size_t g = 0; g < G; g++) gti[g] = gk[g].idx;
      size_t k = (size_t)(ev->pkey[pidx] / (int64_t)ev->I);
      const double *sig = ev->kp.per_cat_sigmas ? ev->kp.sigmas + k * nk : ev->kp.sigmas;
      compute_oks(ious, &ev->kp, sig, dto, dti, D, gto, gti, G, kb, kc);
    } else if (!segm) {
      double *bbd = scratch_take(ws, sz_bbd), *bbg = scratch_take(ws, sz_bbg);
      for (size_t d = 0; d < D; d++) memcpy(bbd + 4 * d, dto[d]->bbox, sizeof(double) * 4);
      for (size_t g = 0; g < G; g++) memcpy(bbg + 4 * g, gto[g]->bbox, sizeof(double) * 4);
      rv_bbox_iou(ious, bbd, D, bbg, G, crowd);
    } else {
      rv_rle *rd = scratch_take(ws, sz_rd), *rg = scratch_take(ws, sz_rg);
      rv_rle_info *id = scratch_take(ws, sz_id), *ig = scratch_take(ws, sz_ig);
      for (size_t d = 0; d < D; d++) {
#if defined(__GNUC__)
        if (d + 2 < D) { /* the next masks' runs are far away in memory: fetch them early (-5%) */
          const char *nx = (const char *)dto[d + 2]->segm.cnts;
          if (nx) {
            __builtin_prefetch(nx);
            __builtin_prefetch(nx + 64);
            __builtin_prefetch(nx + 128);
          }
        }
#endif
        rd[d] = dto[d]->segm;
        rv_rle_info_get(&id[d], &rd[d]);
      }
      for (size_t g = 0; g < G; g++) {
        rg[g] = gto[g]->segm;
        rv_rle_info_get(&ig[g], &rg[g]);
      }
      rv_rle_iou_info(ious, rd, id, D, rg, ig, G, crowd);
    }
  }
  rv_cocoeval_detail *det = out->det;
  if (det) {
    det->has_ious = have_ious;
    for (size_t d = 0; d < D; d++) det->dt_ids[d] = dto[d]->id;
    for (size_t g = 0; g < G; g++) det->gt_ids[g] = gto[g]->id;
    if (have_ious) memcpy(det->ious, ious, sizeof(double) * D * G);
  }
  /* the best IoU of each detection: below a threshold, the matching loop cannot match it
   * (its skips only remove gt). A NaN IoU (non-finite boxes) would match anything there, so it
   * counts as +inf. */
  for (size_t d = 0; d < D; d++) {
    double mx = -INFINITY;
    if (have_ious)
      for (size_t g = 0; g < G; g++) {
        double v = ious[d * G + g];
        if (v != v) v = INFINITY;
        if (v > mx) mx = v;
      }
    maxiou[d] = mx;
  }
  double *sc = out->score;
  for (size_t d = 0; d < D; d++) sc[d] = ord[d].s;
  uint8_t *st = out->state;
  const uint8_t *noig = kps ? ev->kp.gt_ignore : NULL; /* keypoints: num_keypoints == 0 */
  for (int a = 0; a < A; a++) {
    double lo = p->area_rng[a][0], hi = p->area_rng[a][1];
    /* gt _ignore and the stable sort that puts ignored gt last */
    size_t ng = 0;
    for (size_t g = 0; g < G; g++) {
      const rv_coco_obj *o = gto[g];
      gig[g] = (o->iscrowd != 0) || (noig && noig[gk[g].idx]) || o->area < lo || o->area > hi;
      if (!gig[g]) gtind[ng++] = g;
    }
    out->npig[a] = (int64_t)ng;
    size_t q = ng;
    for (size_t g = 0; g < G; g++)
      if (gig[g]) gtind[q++] = g;
    memset(gtm, 0, sizeof(int64_t) * T * G);
    memset(dtm, 0, sizeof(int64_t) * T * D);
    memset(dtig, 0, (size_t)T * D);
    if (have_ious) {
      for (int t = 0; t < T; t++) {
        double thr = p->iou_thrs[t];
        for (size_t d = 0; d < D; d++) {
          double iou = thr < 1 - 1e-10 ? thr : 1 - 1e-10;
          if (maxiou[d] < iou) continue; /* no gt reaches the threshold: unmatched */
          long m = -1;
          for (size_t gi = 0; gi < G; gi++) {
            size_t g = gtind[gi];
            if (gtm[t * G + gi] > 0 && !crowd[g]) continue;
            if (m > -1 && gig[gtind[m]] == 0 && gig[g] == 1) break;
            double v = ious[d * G + g];
            if (v < iou) continue;
            iou = v;
            m = (long)gi;
          }
          if (m == -1) continue;
          dtig[t * D + d] = gig[gtind[m]];
          dtm[t * D + d] = gto[gtind[m]]->id;
          gtm[t * G + (size_t)m] = dto[d]->id;
        }
      }
    }
    for (size_t d = 0; d < D; d++) {
      double ar = dto[d]->area;
      int outside = ar < lo || ar > hi;
      for (int t = 0; t < T; t++) {
        int ig = dtig[t * D + d] || (dtm[t * D + d] == 0 && outside);
        st[((size_t)a * T + t) * D + d] = ig ? ST_IGN : (dtm[t * D + d] != 0 ? ST_TP : ST_FP);
        if (det) det->dt_ignore[((size_t)a * T + t) * D + d] = (uint8_t)ig;
      }
    }
    if (det) {
      for (size_t g = 0; g < G; g++) {
        det->gt_order[(size_t)a * G + g] = (int64_t)gtind[g];
        det->gt_ignore[(size_t)a * G + g] = gig[gtind[g]];
      }
      memcpy(det->dt_matches + (size_t)a * T * D, dtm, sizeof(int64_t) * T * D);
      memcpy(det->gt_matches + (size_t)a * T * G, gtm, sizeof(int64_t) * T * G);
    }
  }
  return 1;
}

static rv_status evaluate_impl(rv_cocoeval **out, const rv_cocoeval_params *p, const rv_cocoeval_input *in,
                               const rv_cocoeval_kpts *kp, rv_ctx *ctx) {
  *out = NULL;
  if (p->n_iou < 1 || p->n_iou > RV_COCO_MAX_IOU || p->n_rec < 1 || p->n_rec > RV_COCO_MAX_REC ||
      p->n_max_dets < 1 || p->n_max_dets > RV_COCO_MAX_DETS || p->n_areas < 1 ||
      p->n_areas > RV_COCO_MAX_AREAS)
    return rv_error(ctx, RV_ERR_ARG, "cocoeval: parameter counts out of range");
  for (int m = 0; m < p->n_max_dets; m++)
    if (p->max_dets[m] < 0 || (m && p->max_dets[m] < p->max_dets[m - 1]))
      return rv_error(ctx, RV_ERR_ARG, "cocoeval: maxDets must be ascending and >= 0");
  for (size_t j = 0; j < in->n_dt; j++)
    if (isnan(in->dt[j].score))
      return rv_error(ctx, RV_ERR_ARG, "cocoeval: detection %zu has a NaN score", j);
  rv_cocoeval *ev = calloc(1, sizeof *ev);
  if (!ev) return rv_error(ctx, RV_ERR_NOMEM, "cocoeval: out of memory");
  ev->p = *p;
  ev->in = *in;
  if (kp) {
    ev->has_kp = 1;
    ev->kp = *kp;
  }
  rv_status st = RV_OK;
  keyed *gk = NULL, *dk = NULL;
  size_t ngk = 0, ndk = 0;
  size_t *pg = NULL, *pd = NULL; /* per pair: start in gk / dk */
  ev->imgs = malloc(sizeof(int64_t) * (in->n_imgs ? in->n_imgs : 1));
  ev->cats = malloc(sizeof(int64_t) * (in->n_cats ? in->n_cats : 1));
  if (!ev->imgs || !ev->cats) goto nomem;
  if (in->n_imgs) memcpy(ev->imgs, in->img_ids, sizeof(int64_t) * in->n_imgs);
  if (in->n_cats) memcpy(ev->cats, in->cat_ids, sizeof(int64_t) * in->n_cats);
  ev->I = sort_unique(ev->imgs, in->n_imgs);
  ev->K = sort_unique(ev->cats, in->n_cats);
  if ((st = key_objects(&gk, &ngk, in->gt, in->n_gt, ev, ctx)) != RV_OK) goto fail;
  if ((st = key_objects(&dk, &ndk, in->dt, in->n_dt, ev, ctx)) != RV_OK) goto fail;
  /* pairs: union of the keys */
  size_t cap = ngk + ndk + 1;
  int64_t *pkey = ev->pkey = malloc(sizeof(int64_t) * cap);
  ev->gk = gk;
  ev->dk = dk;
  gk = dk = NULL;
  pg = ev->pg = malloc(sizeof(size_t) * (cap + 1));
  pd = ev->pd = malloc(sizeof(size_t) * (cap + 1));
  ev->cat_pair = calloc(ev->K + 1, sizeof(size_t));
  if (!pkey || !pg || !pd || !ev->cat_pair) goto nomem;
  gk = ev->gk;
  dk = ev->dk;
  size_t np = 0, a = 0, b = 0;
  while (a < ngk || b < ndk) {
    int64_t k = INT64_MAX;
    if (a < ngk) k = gk[a].key;
    if (b < ndk && dk[b].key < k) k = dk[b].key;
    pkey[np] = k;
    pg[np] = a;
    pd[np] = b;
    while (a < ngk && gk[a].key == k) a++;
    while (b < ndk && dk[b].key == k) b++;
    np++;
  }
  pg[np] = a;
  pd[np] = b;
  ev->n_pairs = np;
  for (size_t q = 0; q < np; q++) ev->cat_pair[pkey[q] / (int64_t)ev->I + 1]++;
  for (size_t k = 0; k < ev->K; k++) ev->cat_pair[k + 1] += ev->cat_pair[k];
  const size_t maxdet = (size_t)p->max_dets[p->n_max_dets - 1];
  ev->dt_off = malloc(sizeof(size_t) * (np + 1));
  ev->npig = malloc(sizeof(int64_t) * (np ? np : 1) * p->n_areas);
  if (!ev->dt_off || !ev->npig) goto nomem;
  ev->dt_off[0] = 0;
  for (size_t q = 0; q < np; q++) {
    size_t nd = pd[q + 1] - pd[q];
    ev->dt_off[q + 1] = ev->dt_off[q] + (nd < maxdet ? nd : maxdet);
  }
  size_t totd = ev->dt_off[np];
  ev->score = malloc(sizeof(double) * (totd ? totd : 1));
  ev->state = malloc((totd ? totd : 1) * (size_t)p->n_areas * p->n_iou);
  if (!ev->score || !ev->state) goto nomem;
  int failed = 0;
  int nth = p->threads > 0 ? p->threads : omp_get_max_threads();
#pragma omp parallel num_threads(nth) reduction(| : failed)
  {
    scratch ws = {NULL, 0, 0};
#pragma omp for schedule(dynamic, 16)
    for (long q = 0; q < (long)np; q++) {
      pair_out po = {ev->score + ev->dt_off[q], ev->state + ev->dt_off[q] * (size_t)p->n_areas * p->n_iou,
                     ev->npig + (size_t)q * p->n_areas, NULL};
      if (!failed && !eval_pair(ev, in, gk + pg[q], pg[q + 1] - pg[q], dk + pd[q], pd[q + 1] - pd[q], (size_t)q, &po,
                                &ws))
        failed = 1;
    }
    free(ws.buf);
  }
  if (failed) goto nomem;
  *out = ev;
  return RV_OK;
nomem:
  st = rv_error(ctx, RV_ERR_NOMEM, "cocoeval: out of memory");
fail:
  if (gk != ev->gk) free(gk);
  if (dk != ev->dk) free(dk);
  rv_cocoeval_free(ev);
  return st;
}

rv_status rv_cocoeval_evaluate(rv_cocoeval **out, const rv_cocoeval_params *p, const rv_cocoeval_input *in,
                               rv_ctx *ctx) {
  if (p->iou_type == RV_IOU_KEYPOINTS) {
    *out = NULL;
    return rv_error(ctx, RV_ERR_ARG, "cocoeval: keypoints need rv_cocoeval_evaluate_kpts (the keypoints and sigmas)");
  }
  return evaluate_impl(out, p, in, NULL, ctx);
}

rv_status rv_cocoeval_evaluate_kpts(rv_cocoeval **out, const rv_cocoeval_params *p, const rv_cocoeval_input *in,
                                    const rv_cocoeval_kpts *kp, rv_ctx *ctx) {
  *out = NULL;
  if (!kp || kp->n_kpts < 1 || !kp->sigmas || (in->n_gt && !kp->gt_kpts) || (in->n_dt && !kp->dt_kpts))
    return rv_error(ctx, RV_ERR_ARG, "cocoeval: keypoints evaluation needs n_kpts >= 1, sigmas and the keypoints");
  if (kp->per_cat_sigmas && in->n_cats == 0)
    return rv_error(ctx, RV_ERR_ARG, "cocoeval: per-category sigmas without categories");
  rv_cocoeval_params q = *p;
  q.iou_type = RV_IOU_KEYPOINTS;
  return evaluate_impl(out, &q, in, kp, ctx);
}

size_t rv_cocoeval_num_pairs(const rv_cocoeval *ev) { return ev->n_pairs; }

void rv_cocoeval_pair_info(const rv_cocoeval *ev, size_t q, size_t *img_idx, size_t *cat_idx, size_t *n_dt,
                           size_t *n_gt) {
  *img_idx = (size_t)(ev->pkey[q] % (int64_t)ev->I);
  *cat_idx = (size_t)(ev->pkey[q] / (int64_t)ev->I);
  *n_dt = ev->dt_off[q + 1] - ev->dt_off[q];
  *n_gt = ev->pg[q + 1] - ev->pg[q];
}

int64_t rv_cocoeval_img_id(const rv_cocoeval *ev, size_t i) { return ev->imgs[i]; }
size_t rv_cocoeval_num_imgs(const rv_cocoeval *ev) { return ev->I; }

rv_status rv_cocoeval_pair_detail(const rv_cocoeval *ev, size_t q, rv_cocoeval_detail *det, rv_ctx *ctx) {
  if (q >= ev->n_pairs) return rv_error(ctx, RV_ERR_ARG, "cocoeval: pair %zu of %zu", q, ev->n_pairs);
  const rv_cocoeval_params *p = &ev->p;
  size_t D = ev->dt_off[q + 1] - ev->dt_off[q];
  size_t A = (size_t)p->n_areas, T = (size_t)p->n_iou;
  double *score = malloc(sizeof(double) * nz(D));
  uint8_t *state = malloc(nz(A * T * D));
  int64_t npig[RV_COCO_MAX_AREAS];
  scratch ws = {NULL, 0, 0};
  int ok = score && state;
  if (ok) {
    pair_out po = {score, state, npig, det};
    ok = eval_pair(ev, &ev->in, ev->gk + ev->pg[q], ev->pg[q + 1] - ev->pg[q], ev->dk + ev->pd[q],
                   ev->pd[q + 1] - ev->pd[q], q, &po, &ws);
  }
  if (ok) memcpy(det->dt_scores, score, sizeof(double) * D);
  free(ws.buf);
  free(score);
  free(state);
  return ok ? RV_OK : rv_error(ctx, RV_ERR_NOMEM, "cocoeval: out of memory");
}

/* Non-ignored gt of pairs p0..p1-1 in area range a. */
static int64_t cat_npig(const rv_cocoeval *ev, size_t p0, size_t p1, int a) {
  int64_t npig = 0;
  for (size_t q = p0; q < p1; q++) npig += ev->npig[q * (size_t)ev->p.n_areas + (size_t)a];
  return npig;
}

/* The kept detections of pairs p0..p1-1 in pooled order (pair by pair): score and position,
 * and for each the pair (relative to p0) and, when det_of is given, its rank in the pair. */
static void pool_scores(const rv_cocoeval *ev, size_t p0, size_t p1, scored *e, uint32_t *pair_of, uint32_t *det_of) {
  size_t j = 0;
  for (size_t q = p0; q < p1; q++)
    for (size_t d = 0; d < ev->dt_off[q + 1] - ev->dt_off[q]; d++, j++) {
      e[j].s = ev->score[ev->dt_off[q] + d];
      e[j].pos = j;
      pair_of[j] = (uint32_t)(q - p0);
      if (det_of) det_of[j] = (uint32_t)d;
    }
}

/* accumulate() for one category: pool the kept detections of all its pairs (image order),
 * one stable sort by score, then every (area, maxDet, threshold) cell.
 *
 * Per cell, cocoeval.py builds the cumulative tp/fp curves, rc = tp/npig and
 * pr = tp/((fp+tp)+eps), takes the right-to-left running max of pr and reads it at
 * searchsorted(rc, recThrs). Only two kinds of positions can matter: rc grows only at true
 * positives, so every lower_bound lands on position 0 or on a TP; and pr at an FP or ignored
 * position is <= pr one position before (same tp, larger or equal denominator, and rounding is
 * monotone), so the running max from position i is the max of pr[i] and the pr of the TPs
 * after i. The walk below therefore divides only at TPs (and at position 0), and the max is
 * taken over the same doubles, so every number is the one the full arrays give. */
static int accumulate_cat(rv_cocoeval *ev, size_t k) {
  const rv_cocoeval_params *p = &ev->p;
  const int T = p->n_iou, R = p->n_rec, A = p->n_areas, M = p->n_max_dets;
  const size_t K = ev->K, AT = (size_t)A * T;
  size_t p0 = ev->cat_pair[k], p1 = ev->cat_pair[k + 1];
  if (p0 == p1) return 1; /* no evalImgs: stays -1 */
  size_t n = ev->dt_off[p1] - ev->dt_off[p0], nn = nz(n);
  scored *e = malloc(sizeof *e * nn * 2);
  uint32_t *det_of = malloc(sizeof(uint32_t) * nn), *sel = malloc(sizeof(uint32_t) * nn);
  uint32_t *tp_at = malloc(sizeof(uint32_t) * nn); /* the TPs of a cell: positions */
  double *tp_pr = malloc(sizeof(double) * nn);     /* their pr, then the running max */
  uint8_t *ss = malloc(AT * nn);                   /* states in sorted order, [a][t][i] */
  long *hit = malloc(sizeof(long) * (size_t)R);    /* per recall threshold: TP index, -1 = position 0, -2 = none */
  if (!e || !det_of || !sel || !tp_at || !tp_pr || !ss || !hit) {
    free(e); free(det_of); free(sel); free(tp_at); free(tp_pr); free(ss); free(hit);
    return 0;
  }
  uint32_t *pair_of = sel; /* sel is free until the cells */
  pool_scores(ev, p0, p1, e, pair_of, NULL);
  sort_scored(e, n, e + nn);
  /* gather the states of each detection into sorted order */
  {
    for (size_t i = 0; i < n; i++) {
      size_t pos = e[i].pos, q = p0 + pair_of[pos], D = ev->dt_off[q + 1] - ev->dt_off[q];
      size_t d = pos - (ev->dt_off[q] - ev->dt_off[p0]);
      det_of[i] = (uint32_t)d;
      const uint8_t *src = ev->state + ev->dt_off[q] * AT + d;
      for (size_t at = 0; at < AT; at++) ss[at * n + i] = src[at * D];
    }
  }
  uint32_t max_d = 0;
  for (size_t i = 0; i < n; i++)
    if (det_of[i] + 1 > max_d) max_d = det_of[i] + 1;
  for (int a = 0; a < A; a++) {
    int64_t npig = cat_npig(ev, p0, p1, a);
    if (npig == 0) continue;
    size_t prev_nd = SIZE_MAX;
    for (int m = 0; m < M; m++) {
      size_t maxdet = (size_t)p->max_dets[m], nd = 0;
      int all = maxdet >= max_d; /* every pooled detection is within maxDet */
      if (all)
        nd = n;
      else
        for (size_t i = 0; i < n; i++)
          if (det_of[i] < maxdet) sel[nd++] = (uint32_t)i;
      if (nd == prev_nd) {
        /* the detections within maxDets[m] and within maxDets[m-1] are nested sets: the same
         * count is the same detections, so the same curves (typically maxDets 10 and 100 when
         * no image has more than 10 detections of the category) */
        for (int t = 0; t < T; t++) {
          size_t q = (((size_t)t * K + k) * A + a) * M + m;
          ev->recall[q] = ev->recall[q - 1];
          for (int r = 0; r < R; r++) {
            size_t o = ((((size_t)t * R + r) * K + k) * A + a) * M + m;
            ev->precision[o] = ev->precision[o - 1];
            ev->scores[o] = ev->scores[o - 1];
          }
        }
        continue;
      }
      prev_nd = nd;
      for (int t = 0; t < T; t++) {
        const uint8_t *S = ss + ((size_t)a * T + t) * n;
        double tp = 0, fp = 0, pr0 = 0;
        size_t ntp = 0;
        int r = 0;
        for (size_t i = 0; i < nd; i++) {
          uint8_t s = S[all ? i : sel[i]];
          if (s == ST_TP) tp += 1;
          else if (s == ST_FP) fp += 1;
          if (s == ST_TP || i == 0) {
            double rc = tp / (double)npig, pr = tp / ((fp + tp) + DBL_EPSILON);
            if (s == ST_TP) {
              tp_at[ntp] = (uint32_t)i;
              tp_pr[ntp++] = pr;
            } else
              pr0 = pr;
            while (r < R && !(rc < p->rec_thrs[r])) hit[r++] = s == ST_TP ? (long)ntp - 1 : -1;
          }
        }
        for (; r < R; r++) hit[r] = -2;
        ev->recall[(((size_t)t * K + k) * A + a) * M + m] = nd ? tp / (double)npig : 0;
        for (size_t i = ntp; i-- > 1;) /* running max, right to left */
          if (tp_pr[i] > tp_pr[i - 1]) tp_pr[i - 1] = tp_pr[i];
        for (r = 0; r < R; r++) {
          double v = 0, sc = 0; /* past the end: the bare except leaves 0 */
          if (hit[r] >= 0) {
            v = tp_pr[hit[r]];
            size_t i = tp_at[hit[r]];
            sc = e[all ? i : sel[i]].s;
          } else if (hit[r] == -1) { /* position 0, not a TP: max(pr[0], the TPs after it) */
            v = pr0;
            if (ntp && tp_pr[0] > v) v = tp_pr[0];
            sc = e[all ? 0 : sel[0]].s;
          }
          ev->precision[((((size_t)t * R + r) * K + k) * A + a) * M + m] = v;
          ev->scores[((((size_t)t * R + r) * K + k) * A + a) * M + m] = sc;
        }
      }
    }
  }
  free(e); free(det_of); free(sel); free(tp_at); free(tp_pr); free(ss); free(hit);
  return 1;
}

/* The reference for accumulate_cat (params.naive): cocoeval.py's arrays literally, the full
 * tp/fp curves, rc and pr at every position, the envelope and searchsorted, qsort. */
static int accumulate_cat_naive(rv_cocoeval *ev, size_t k) {
  const rv_cocoeval_params *p = &ev->p;
  const int T = p->n_iou, R = p->n_rec, A = p->n_areas, M = p->n_max_dets;
  const size_t K = ev->K;
  size_t p0 = ev->cat_pair[k], p1 = ev->cat_pair[k + 1];
  if (p0 == p1) return 1; /* no evalImgs: stays -1 */
  size_t n = ev->dt_off[p1] - ev->dt_off[p0];
  scored *e = malloc(sizeof *e * (n ? n : 1));
  uint32_t *pair_of = malloc(sizeof(uint32_t) * (n ? n : 1)), *det_of = malloc(sizeof(uint32_t) * (n ? n : 1));
  size_t *sel = malloc(sizeof(size_t) * (n ? n : 1));
  double *rc = malloc(sizeof(double) * (n ? n : 1)), *pr = malloc(sizeof(double) * (n ? n : 1));
  double *dss = malloc(sizeof(double) * (n ? n : 1)); /* dtScoresSorted of the cell */
  if (!e || !pair_of || !det_of || !sel || !rc || !pr || !dss) {
    free(e); free(pair_of); free(det_of); free(sel); free(rc); free(pr); free(dss);
    return 0;
  }
  pool_scores(ev, p0, p1, e, pair_of, det_of);
  qsort(e, n, sizeof *e, cmp_scored);
  for (int a = 0; a < A; a++) {
    int64_t npig = cat_npig(ev, p0, p1, a);
    if (npig == 0) continue;
    for (int m = 0; m < M; m++) {
      size_t maxdet = (size_t)p->max_dets[m], nd = 0;
      for (size_t i = 0; i < n; i++)
        if (det_of[e[i].pos] < maxdet) {
          dss[nd] = e[i].s;
          sel[nd++] = e[i].pos;
        }
      for (int t = 0; t < T; t++) {
        double tp = 0, fp = 0;
        for (size_t i = 0; i < nd; i++) {
          size_t q = p0 + pair_of[sel[i]];
          size_t D = ev->dt_off[q + 1] - ev->dt_off[q];
          uint8_t s = ev->state[ev->dt_off[q] * (size_t)A * T + ((size_t)a * T + t) * D + det_of[sel[i]]];
          if (s == ST_TP) tp += 1;
          else if (s == ST_FP) fp += 1;
          rc[i] = tp / (double)npig;
          pr[i] = tp / ((fp + tp) + DBL_EPSILON);
        }
        ev->recall[(((size_t)t * K + k) * A + a) * M + m] = nd ? rc[nd - 1] : 0;
        for (size_t i = nd; i-- > 1;)
          if (pr[i] > pr[i - 1]) pr[i - 1] = pr[i];
        size_t ii = 0;
        for (int r = 0; r < R; r++) {
          double thr = p->rec_thrs[r];
          while (ii < nd && rc[ii] < thr) ii++; /* searchsorted side='left' */
          double v = 0;
          if (ii < nd) v = pr[ii];
          else { /* the bare except: this and every later threshold stay 0 */
            for (; r < R; r++) {
              ev->precision[((((size_t)t * R + r) * K + k) * A + a) * M + m] = 0;
              ev->scores[((((size_t)t * R + r) * K + k) * A + a) * M + m] = 0;
            }
            break;
          }
          ev->precision[((((size_t)t * R + r) * K + k) * A + a) * M + m] = v;
          ev->scores[((((size_t)t * R + r) * K + k) * A + a) * M + m] = dss[ii];
        }
      }
    }
  }
  free(e); free(pair_of); free(det_of); free(sel); free(rc); free(pr); free(dss);
  return 1;
}

rv_status rv_cocoeval_accumulate(rv_cocoeval *ev, rv_ctx *ctx) {
  const rv_cocoeval_params *p = &ev->p;
  size_t K = ev->K, T = (size_t)p->n_iou, R = (size_t)p->n_rec, A = (size_t)p->n_areas,
         M = (size_t)p->n_max_dets;
  free(ev->precision);
  free(ev->recall);
  free(ev->cat_ap);
  free(ev->scores);
  ev->scores = malloc(sizeof(double) * nz(T * R * K * A * M));
  ev->precision = malloc(sizeof(double) * nz(T * R * K * A * M));
  ev->recall = malloc(sizeof(double) * nz(T * K * A * M));
  ev->cat_ap = malloc(sizeof(double) * (K ? K : 1));
  double *tmp = malloc(sizeof(double) * T * R);
  if (!ev->precision || !ev->recall || !ev->cat_ap || !ev->scores || !tmp) {
    free(tmp);
    return rv_error(ctx, RV_ERR_NOMEM, "cocoeval accumulate: out of memory");
  }
  for (size_t i = 0; i < T * R * K * A * M; i++) ev->precision[i] = ev->scores[i] = -1;
  for (size_t i = 0; i < T * K * A * M; i++) ev->recall[i] = -1;
  int failed = 0;
  int nth = p->threads > 0 ? p->threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth) reduction(| : failed)
  for (long k = 0; k < (long)K; k++)
    if (!(p->naive ? accumulate_cat_naive(ev, (size_t)k) : accumulate_cat(ev, (size_t)k))) failed = 1;
  if (failed) {
    free(tmp);
    return rv_error(ctx, RV_ERR_NOMEM, "cocoeval accumulate: out of memory");
  }
  for (size_t k = 0; k < K; k++) {
    size_t n = 0;
    for (size_t t = 0; t < T; t++)
      for (size_t r = 0; r < R; r++) {
        double v = ev->precision[(((t * R + r) * K + k) * A + 0) * M + (M - 1)];
        if (v > -1) tmp[n++] = v;
      }
    ev->cat_ap[k] = n ? rv_np_mean(tmp, n) : -1;
  }
  free(tmp);
  return RV_OK;
}

/* _summarize(ap, iouThr, areaRng, maxDets): mean of the entries > -1 in C order. */
static double summarize_one(const rv_cocoeval *ev, int ap, double iou_thr, int use_thr,
                            const char *area, int max_det) {
  const rv_cocoeval_params *p = &ev->p;
  size_t K = ev->K, T = (size_t)p->n_iou, R = (size_t)p->n_rec, A = (size_t)p->n_areas,
         M = (size_t)p->n_max_dets;
  long ai = -1, mi = -1;
  for (size_t a = 0; a < A; a++)
    if (strcmp(p->area_lbl[a], area) == 0) { ai = (long)a; break; }
  for (size_t m = 0; m < M; m++)
    if (p->max_dets[m] == max_det) { mi = (long)m; break; }
  if (ai < 0 || mi < 0 || !ev->precision) return -1;
  size_t cap = ap ? T * R * K : T * K;
  double *v = malloc(sizeof(double) * (cap ? cap : 1));
  if (!v) return NAN;
  size_t n = 0;
  for (size_t t = 0; t < T; t++) {
    if (use_thr && p->iou_thrs[t] != iou_thr) continue;
    if (ap) {
      for (size_t r = 0; r < R; r++)
        for (size_t k = 0; k < K; k++) {
          double x = ev->precision[(((t * R + r) * K + k) * A + (size_t)ai) * M + (size_t)mi];
          if (x > -1) v[n++] = x;
        }
    } else {
      for (size_t k = 0; k < K; k++) {
        double x = ev->recall[((t * K + k) * A + (size_t)ai) * M + (size_t)mi];
        if (x > -1) v[n++] = x;
      }
    }
  }
  double mean = n ? rv_np_mean(v, n) : -1;
  free(v);
  return mean;
}

typedef struct {
  int ap;
  double thr;
  int use_thr;
  const char *area;
  int mdi; /* index into max_dets */
} summ_spec;

static const summ_spec SPECS[12] = {
    {1, 0, 0, "all", 2},   {1, .5, 1, "all", 2},  {1, .75, 1, "all", 2}, {1, 0, 0, "small", 2},
    {1, 0, 0, "medium", 2}, {1, 0, 0, "large", 2}, {0, 0, 0, "all", 0},   {0, 0, 0, "all", 1},
    {0, 0, 0, "all", 2},   {0, 0, 0, "small", 2}, {0, 0, 0, "medium", 2}, {0, 0, 0, "large", 2},
};

/* _summarizeKps: every line at maxDets=20 literally (mdi unused) */
static const summ_spec SPECS_KPS[10] = {
    {1, 0, 0, "all", 0},    {1, .5, 1, "all", 0}, {1, .75, 1, "all", 0}, {1, 0, 0, "medium", 0},
    {1, 0, 0, "large", 0},  {0, 0, 0, "all", 0},  {0, .5, 1, "all", 0},  {0, .75, 1, "all", 0},
    {0, 0, 0, "medium", 0}, {0, 0, 0, "large", 0},
};

static int spec_maxdet(const rv_cocoeval_params *p, int mdi) {
  if (mdi < p->n_max_dets) return p->max_dets[mdi];
  return -1;
}

int rv_cocoeval_num_stats(const rv_cocoeval *ev) { return ev->p.iou_type == RV_IOU_KEYPOINTS ? 10 : 12; }

/* line i of the summary: its spec and maxDets */
static const summ_spec *line_spec(const rv_cocoeval *ev, int i, int *md) {
  if (ev->p.iou_type == RV_IOU_KEYPOINTS) {
    *md = 20;
    return &SPECS_KPS[i];
  }
  /* stats[0] uses maxDets=100 literally (the _summarize default), the rest maxDets[i] */
  *md = i == 0 ? 100 : spec_maxdet(&ev->p, SPECS[i].mdi);
  return &SPECS[i];
}

void rv_cocoeval_summarize(const rv_cocoeval *ev, double stats[12]) {
  int n = rv_cocoeval_num_stats(ev), md;
  for (int i = 0; i < 12; i++) stats[i] = 0;
  for (int i = 0; i < n; i++) {
    const summ_spec *s = line_spec(ev, i, &md);
    stats[i] = summarize_one(ev, s->ap, s->thr, s->use_thr, s->area, md);
  }
}

int rv_cocoeval_summary_text(const rv_cocoeval *ev, char *buf, size_t size) {
  double stats[12];
  rv_cocoeval_summarize(ev, stats);
  const rv_cocoeval_params *p = &ev->p;
  int len = 0, n = rv_cocoeval_num_stats(ev);
  for (int i = 0; i < n; i++) {
    int md;
    const summ_spec *s = line_spec(ev, i, &md);
    char iou[32];
    if (s->use_thr)
      snprintf(iou, sizeof iou, "%0.2f", s->thr);
    else
      snprintf(iou, sizeof iou, "%0.2f:%0.2f", p->iou_thrs[0], p->iou_thrs[p->n_iou - 1]);
    int room = buf && (size_t)len < size;
    int w = snprintf(room ? buf + len : NULL, room ? size - (size_t)len : 0,
                     " %-18s %s @[ IoU=%-9s | area=%6s | maxDets=%3d ] = %0.3f\n",
                     s->ap ? "Average Precision" : "Average Recall", s->ap ? "(AP)" : "(AR)", iou,
                     s->area, md, stats[i]);
    if (w < 0) return w;
    len += w;
  }
  return len;
}

size_t rv_cocoeval_num_cats(const rv_cocoeval *ev) { return ev->K; }
int64_t rv_cocoeval_cat_id(const rv_cocoeval *ev, size_t k) { return ev->cats[k]; }
double rv_cocoeval_category_ap(const rv_cocoeval *ev, size_t k) { return ev->cat_ap ? ev->cat_ap[k] : -1; }
const double *rv_cocoeval_precision(const rv_cocoeval *ev) { return ev->precision; }
const double *rv_cocoeval_recall(const rv_cocoeval *ev) { return ev->recall; }
const double *rv_cocoeval_scores(const rv_cocoeval *ev) { return ev->scores; }
const rv_cocoeval_params *rv_cocoeval_get_params(const rv_cocoeval *ev) { return &ev->p; }

void rv_cocoeval_free(rv_cocoeval *ev) {
  if (!ev) return;
  free(ev->imgs);
  free(ev->cats);
  free(ev->cat_pair);
  free(ev->dt_off);
  free(ev->score);
  free(ev->state);
  free(ev->npig);
  free(ev->precision);
  free(ev->recall);
  free(ev->cat_ap);
  free(ev->scores);
  free(ev->pkey);
  free(ev->gk);
  free(ev->dk);
  free(ev->pg);
  free(ev->pd);
  free(ev);
}

size_t rv_cocoeval_cat_dets(const rv_cocoeval *ev, size_t k, int a, int t, int max_det, double *score, uint8_t *state,
                            int64_t *npig) {
  const int A = ev->p.n_areas, T = ev->p.n_iou;
  size_t p0 = ev->cat_pair[k], p1 = ev->cat_pair[k + 1], n = 0;
  if (npig) *npig = cat_npig(ev, p0, p1, a);
  for (size_t q = p0; q < p1; q++) {
    size_t D = ev->dt_off[q + 1] - ev->dt_off[q], m = D < (size_t)max_det ? D : (size_t)max_det;
    const uint8_t *st = ev->state + ev->dt_off[q] * (size_t)A * T + ((size_t)a * T + t) * D;
    for (size_t d = 0; d < m; d++, n++) {
      if (score) score[n] = ev->score[ev->dt_off[q] + d];
      if (state) state[n] = st[d] == ST_TP ? 1 : st[d] == ST_FP ? 0 : 2;
    }
  }
  return n;
}
