/* TIDE error analysis with dbolya/tide 1.0.1's numbers (see tide.h for the rules). Two passes:
 * per image (parallel): sort, IoU, matching, crowd regions, the error of each unmatched
 * detection and the outcome of each gt; per class (parallel): the AP points of the unfixed run
 * and of each fixed run in the reference's insertion order, and their APs. */
#include "eval/tide.h"

#include "eval/img_iou.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

const char *const rv_tide_main_names[RV_TIDE_N_MAIN] = {"Cls", "Loc", "Both", "Dupe", "Bkg", "Miss"};
const char *const rv_tide_special_names[RV_TIDE_N_SPECIAL] = {"FalsePos", "FalseNeg"};

rv_tide_params rv_tide_default_params(void) {
  rv_tide_params p = {0.5, 0.1, 100, 0};
  return p;
}

void rv_tide_result_free(rv_tide_result *r) {
  if (!r) return;
  free(r->dt_kind);
  free(r->dt_ignored);
  free(r->gt_kind);
  memset(r, 0, sizeof *r);
}

double rv_tide_class_ap(const uint8_t *is_true, size_t n, int64_t num_gt) {
  if (num_gt == 0) return 0;
  /* precision / recall at each point, the right-to-left running max of precision, then the
   * precision at searchsorted(recalls, x/100, 'left') for x = 0..100, summed left to right */
  double *pr = malloc(sizeof(double) * 2 * (n ? n : 1));
  if (!pr) return NAN;
  double *rc = pr + n;
  int64_t nt = 0, nf = 0;
  for (size_t i = 0; i < n; i++) {
    if (is_true[i]) nt++;
    else nf++;
    pr[i] = (double)nt / (double)(nt + nf);
    rc[i] = (double)nt / (double)num_gt;
  }
  for (size_t i = n; i-- > 1;)
    if (pr[i] > pr[i - 1]) pr[i - 1] = pr[i];
  double sum = 0;
  size_t j = 0;
  for (int x = 0; x <= 100; x++) {
    double thr = (double)x / 100.0;
    while (j < n && rc[j] < thr) j++;
    if (j < n) sum += pr[j];
  }
  free(pr);
  return sum / 101.0 * 100.0;
}

/* per detection, filled by the image pass */
typedef struct {
  uint32_t rank;   /* position in the image's sorted, cut list */
  int32_t target;  /* Cls / Loc: the gt (global index) the error points at, else -1 */
  uint8_t fix_ok;  /* Cls / Loc: fixing makes this detection a true positive */
} dt_info;

typedef struct {
  const rv_tide_params *p;
  const rv_img_ious *m;
  const rv_coco_obj *gt, *dt;
  size_t *kept; /* per image: detections evaluated */
  dt_info *di;
  rv_tide_result *r;
} tide_ctx;

typedef struct {
  unsigned char *buf;
  size_t cap;
} scratch;

static void *scratch_get(scratch *w, size_t bytes) {
  if (bytes > w->cap) {
    size_t nc = w->cap ? w->cap : 4096;
    while (nc < bytes) nc *= 2;
    unsigned char *nb = realloc(w->buf, nc);
    if (!nb) return NULL;
    w->buf = nb;
    w->cap = nc;
  }
  return w->buf;
}

static size_t al16(size_t n) { return (n + 15) & ~(size_t)15; }

/* first index of the maximum of v[i] * (keep[i] != 0) over n entries (np.argmax of a masked
 * row: masked entries are 0) and the maximum */
static size_t argmax_masked(const double *v, const uint8_t *keep, size_t n, double *best) {
  size_t bi = 0;
  double bv = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    double x = keep[i] ? v[i] : 0.0;
    if (x > bv) {
      bv = x;
      bi = i;
    }
  }
  *best = bv;
  return bi;
}

static int tide_image(tide_ctx *T, size_t im, scratch *ws) {
  const rv_tide_params *p = T->p;
  const rv_img_ious *M = T->m;
  const rv_coco_obj *gt = T->gt, *dt = T->dt;
  rv_tide_result *r = T->r;
  const size_t *gi = M->g_idx + M->g_off[im], *dsel = M->d_idx + M->d_off[im];
  const size_t ng_all = M->g_off[im + 1] - M->g_off[im], nd_all = M->d_off[im + 1] - M->d_off[im];
  const size_t D = nd_all < (size_t)p->max_dets ? nd_all : (size_t)p->max_dets;
  const double *Mi = M->iou + M->iou_off[im];
  size_t G = 0, C = 0;
  for (size_t k = 0; k < ng_all; k++) {
    if (gt[gi[k]].iscrowd) C++;
    else G++;
  }
  size_t n_ious = D * (G > C ? G : C);
  size_t need = al16(sizeof(size_t) * (ng_all + 1)) * 2 + al16(sizeof(double) * (n_ious + 1)) * 2 + al16(D + 1) * 2 +
                al16(G + 1) * 2 + al16(ng_all + 1) + al16(sizeof(double) * (G + 1)) + al16(sizeof(size_t) * (G + 1));
  unsigned char *base = scratch_get(ws, need);
  if (!base) return 0;
  size_t off = 0;
#define TAKE(type, n) ((type *)(base + (off += al16(sizeof(type) * ((n) + 1))) - al16(sizeof(type) * ((n) + 1))))
  size_t *gsel = TAKE(size_t, ng_all); /* non-crowd gt first (file order), then crowd: global indices */
  size_t *gcol = TAKE(size_t, ng_all); /* their columns in the image's IoU matrix */
  double *iou = TAKE(double, n_ious);  /* D x G */
  double *ciou = TAKE(double, n_ious); /* D x C, crowd IoU */
  uint8_t *used = TAKE(uint8_t, D);    /* 0 FP, 1 TP, 2 ignored */
  uint8_t *err = TAKE(uint8_t, D);
  uint8_t *gused = TAKE(uint8_t, G), *gusable = TAKE(uint8_t, G), *mask = TAKE(uint8_t, ng_all);
  double *best_score = TAKE(double, G);
  size_t *best_id = TAKE(size_t, G);
#undef TAKE
  for (size_t k = 0; k < nd_all; k++) {
    size_t d = dsel[k];
    if (k < D) T->di[d].rank = (uint32_t)k;
    else r->dt_kind[d] = RV_TIDE_NOT_EVALUATED;
  }
  T->kept[im] = D;
  {
    size_t a = 0, b = G;
    for (size_t k = 0; k < ng_all; k++) {
      size_t q = gt[gi[k]].iscrowd ? b++ : a++;
      gsel[q] = gi[k];
      gcol[q] = k;
    }
  }
  for (size_t k = G; k < ng_all; k++) r->gt_kind[gsel[k]] = RV_TIDE_NOT_EVALUATED;
  if (D == 0) { /* every gt missed */
    for (size_t g = 0; g < G; g++) r->gt_kind[gsel[g]] = RV_TIDE_MISS;
    return 1;
  }
  /* IoUs: detections x non-crowd gt, detections x crowd gt (crowd IoU) */
  for (size_t k = 0; k < D; k++) {
    for (size_t g = 0; g < G; g++) iou[k * G + g] = Mi[k * ng_all + gcol[g]];
    for (size_t c = 0; c < C; c++) ciou[k * C + c] = Mi[k * ng_all + gcol[G + c]];
  }
  memset(used, 0, D);
  memset(gused, 0, G);
  memset(gusable, 0, G);
  /* matching: each detection in score order takes the unused same-class gt of highest IoU
   * (first on ties) when that IoU >= pos_thr */
  for (size_t k = 0; k < D && G; k++) {
    int64_t c = dt[dsel[k]].category_id;
    for (size_t g = 0; g < G; g++) mask[g] = !gused[g] && gt[gsel[g]].category_id == c;
    double v;
    size_t g = argmax_masked(iou + k * G, mask, G, &v);
    if (v >= p->pos_thr) {
      used[k] = 1;
      gused[g] = 1;
    }
  }
  /* crowd regions: an unmatched detection of the region's class inside it is ignored */
  for (size_t c = 0; c < C; c++) {
    int64_t cls = gt[gsel[G + c]].category_id;
    for (size_t k = 0; k < D; k++)
      if (used[k] != 1 && ciou[k * C + c] > p->pos_thr && dt[dsel[k]].category_id == cls) used[k] = 2;
  }
  for (size_t g = 0; g < G; g++) best_score[g] = -1;
  /* the error of each unmatched (or ignored) detection */
  for (size_t k = 0; k < D; k++) {
    size_t d = dsel[k];
    r->dt_ignored[d] = used[k] == 2;
    T->di[d].target = -1;
    T->di[d].fix_ok = 0;
    if (used[k] == 1) {
      r->dt_kind[d] = RV_TIDE_TP;
      continue;
    }
    if (G == 0) {
      r->dt_kind[d] = RV_TIDE_BKG;
      continue;
    }
    int64_t c = dt[d].category_id;
    const double *row_iou = iou + k * G;
    double v;
    size_t g;
    int e;
    for (size_t q = 0; q < G; q++) mask[q] = gt[gsel[q]].category_id == c;
    g = argmax_masked(row_iou, mask, G, &v);
    if (p->bg_thr <= v && v <= p->pos_thr) e = RV_TIDE_LOC;
    else {
      for (size_t q = 0; q < G; q++) mask[q] = gt[gsel[q]].category_id != c;
      g = argmax_masked(row_iou, mask, G, &v);
      if (v >= p->pos_thr) e = RV_TIDE_CLS;
      else {
        for (size_t q = 0; q < G; q++) mask[q] = gused[q] && gt[gsel[q]].category_id == c;
        argmax_masked(row_iou, mask, G, &v);
        if (v >= p->pos_thr) e = RV_TIDE_DUPE;
        else {
          memset(mask, 1, G);
          argmax_masked(row_iou, mask, G, &v);
          e = v <= p->bg_thr ? RV_TIDE_BKG : RV_TIDE_BOTH;
        }
      }
    }
    r->dt_kind[d] = (int8_t)e;
    err[k] = (uint8_t)e;
    if (e == RV_TIDE_LOC || e == RV_TIDE_CLS) { /* BestGTMatch */
      T->di[d].target = (int32_t)gsel[g];
      if (!gused[g]) {
        gusable[g] = 1;
        if (best_score[g] < dt[d].score) {
          best_score[g] = dt[d].score;
          best_id[g] = d;
        }
      }
    }
  }
  for (size_t k = 0; k < D; k++) {
    size_t d = dsel[k];
    if (T->di[d].target < 0) continue;
    size_t g = 0;
    while (gsel[g] != (size_t)T->di[d].target) g++;
    T->di[d].fix_ok = !gused[g] && best_id[g] == d;
  }
  for (size_t g = 0; g < G; g++)
    r->gt_kind[gsel[g]] = gused[g] ? RV_TIDE_TP : gusable[g] ? RV_TIDE_FN_FIXABLE : RV_TIDE_MISS;
  return 1;
}

/* An AP point candidate of one class: a detection of the class (role 0) or a Cls error of
 * another class whose fix lands in this one (role 1). */
typedef struct {
  double s;
  size_t q;  /* global position: image order, then rank in the image */
  size_t d;
  int role;
} cand;

static inline int cand_before(const cand *x, const cand *y) { return x->s > y->s || (x->s == y->s && x->q < y->q); }

/* sort by (score descending, q): merge sort over tmp (n entries); the input comes as runs
 * already in order (an image's detections), which cost one comparison per merge */
static void sort_cands(cand *a, size_t n, cand *tmp) {
  if (n < 2) return;
  if (n <= 16) {
    for (size_t i = 1; i < n; i++) {
      cand x = a[i];
      size_t j = i;
      while (j > 0 && cand_before(&x, &a[j - 1])) {
        a[j] = a[j - 1];
        j--;
      }
      a[j] = x;
    }
    return;
  }
  size_t h = n / 2;
  sort_cands(a, h, tmp);
  sort_cands(a + h, n - h, tmp);
  if (!cand_before(&a[h], &a[h - 1])) return;
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = cand_before(&a[j], &a[i]) ? a[j++] : a[i++];
  while (i < h) tmp[k++] = a[i++];
  while (j < n) tmp[k++] = a[j++];
  memcpy(a, tmp, n * sizeof *a);
}

enum { SC_BASE = 0, SC_FIX0 = 1, SC_FN = SC_FIX0 + RV_TIDE_N_MAIN, SC_FP, SC_N };

/* Whether candidate c is an AP point of scenario sc: returns -1 (absent) or its value, and in
 * *group 0 for the points of the error list and 1 for the true positives added after them
 * (fix_errors' insertion order). */
static int cand_point(const cand *c, int sc, const rv_tide_result *r, const dt_info *di, int *group) {
  int kind = r->dt_kind[c->d], ign = r->dt_ignored[c->d];
  *group = 0;
  if (c->role == 1) return sc == SC_FIX0 + RV_TIDE_CLS ? 1 : -1;
  if (sc == SC_BASE) return ign ? -1 : kind == RV_TIDE_TP;
  if (kind == RV_TIDE_TP) {
    *group = 1;
    return 1;
  }
  if (sc >= SC_FIX0 && sc < SC_FIX0 + RV_TIDE_N_MAIN && kind == sc - SC_FIX0) /* fixed */
    return kind == RV_TIDE_LOC && di[c->d].fix_ok ? 1 : -1;
  return ign ? -1 : 0; /* the original, unfixed point */
}

typedef struct {
  double ap[SC_N];
  size_t n[SC_N];
  int64_t num_gt[SC_N];
} class_aps;

static int class_scenarios(class_aps *out, cand *cs, size_t n, int64_t num_gt, int64_t n_miss, int64_t n_fn,
                           const rv_tide_result *r, const dt_info *di) {
  uint8_t *seq = malloc(n ? n : 1);
  cand *tmp = malloc(sizeof *tmp * (n ? n : 1));
  if (!seq || !tmp) {
    free(seq);
    free(tmp);
    return 0;
  }
  sort_cands(cs, n, tmp);
  free(tmp);
  for (int sc = 0; sc < SC_N; sc++) {
    size_t m = 0;
    int64_t ng = num_gt - (sc == SC_FIX0 + RV_TIDE_MISS ? n_miss : 0) - (sc == SC_FN ? n_fn : 0);
    if (sc == SC_FP) { /* true positives scored 1 first, false positives scored 0 after */
      size_t nt = 0, nf = 0;
      for (size_t i = 0; i < n; i++) {
        int g, v = cand_point(&cs[i], SC_FN, r, di, &g);
        if (v == 1) nt++;
        else if (v == 0) nf++;
      }
      memset(seq, 1, nt);
      memset(seq + nt, 0, nf);
      m = nt + nf;
    } else {
      for (size_t i0 = 0; i0 < n;) {
        size_t i1 = i0 + 1;
        while (i1 < n && cs[i1].s == cs[i0].s) i1++;
        for (int pass = 0; pass < (sc == SC_BASE ? 1 : 2); pass++)
          for (size_t i = i0; i < i1; i++) {
            int g, v = cand_point(&cs[i], sc, r, di, &g);
            if (v >= 0 && (sc == SC_BASE || g == pass)) seq[m++] = (uint8_t)v;
          }
        i0 = i1;
      }
    }
    out->n[sc] = m;
    out->num_gt[sc] = ng;
    out->ap[sc] = rv_tide_class_ap(seq, m, ng);
  }
  free(seq);
  return 1;
}

static long find_i64(const int64_t *v, size_t n, int64_t x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && v[lo] == x ? (long)lo : -1;
}

rv_status rv_tide_run(rv_tide_result *r, const rv_tide_params *p, rv_iou_type t, const int64_t *img_ids,
                      size_t n_img, const rv_coco_obj *gt, size_t n_gt, const rv_coco_obj *dt, size_t n_dt,
                      rv_ctx *ctx) {
  memset(r, 0, sizeof *r);
  if (p->max_dets < 1) return rv_error(ctx, RV_ERR_ARG, "tide: max_dets must be >= 1");
  rv_img_ious m;
  RV_TRY(rv_img_ious_build(&m, t, img_ids, n_img, gt, n_gt, dt, n_dt, p->max_dets, INFINITY, p->threads, ctx));
  rv_status st = rv_tide_run_ious(r, p, &m, gt, n_gt, dt, n_dt, ctx);
  rv_img_ious_free(&m);
  return st;
}

rv_status rv_tide_run_ious(rv_tide_result *r, const rv_tide_params *p, const rv_img_ious *m, const rv_coco_obj *gt,
                           size_t n_gt, const rv_coco_obj *dt, size_t n_dt, rv_ctx *ctx) {
  memset(r, 0, sizeof *r);
  if (p->max_dets < 1) return rv_error(ctx, RV_ERR_ARG, "tide: max_dets must be >= 1");
  for (size_t i = 0; i < m->n_img; i++) {
    size_t n = m->d_off[i + 1] - m->d_off[i];
    if (m->rows[i] < (n < (size_t)p->max_dets ? n : (size_t)p->max_dets))
      return rv_error(ctx, RV_ERR_ARG, "tide: the IoU matrices have fewer than max_dets rows");
  }
  rv_status st = RV_OK;
  const size_t n_img = m->n_img;
  size_t *kept = calloc(n_img + 1, sizeof *kept), *q0 = calloc(n_img + 1, sizeof *q0);
  dt_info *di = calloc(n_dt + 1, sizeof *di);
  int64_t *cls = malloc(sizeof(int64_t) * (n_gt + n_dt + 1));
  r->dt_kind = malloc(n_dt + 1);
  r->dt_ignored = calloc(n_dt + 1, 1);
  r->gt_kind = malloc(n_gt + 1);
  r->n_dt = n_dt;
  r->n_gt = n_gt;
  size_t *c_off = NULL, *c_fill = NULL;
  cand *cands = NULL;
  class_aps *ca = NULL;
  int64_t *num_gt = NULL, *n_miss = NULL, *n_fn = NULL;
  if (!kept || !q0 || !di || !cls || !r->dt_kind || !r->dt_ignored || !r->gt_kind) goto nomem;
  memset(r->dt_kind, RV_TIDE_NOT_EVALUATED, n_dt + 1);
  memset(r->gt_kind, RV_TIDE_NOT_EVALUATED, n_gt + 1);
  tide_ctx T = {p, m, gt, dt, kept, di, r};
  int failed = 0;
  int nth = p->threads > 0 ? p->threads : omp_get_max_threads();
#pragma omp parallel num_threads(nth) reduction(| : failed)
  {
    scratch ws = {NULL, 0};
#pragma omp for schedule(dynamic, 8)
    for (long i = 0; i < (long)n_img; i++)
      if (!failed && !tide_image(&T, (size_t)i, &ws)) failed = 1;
    free(ws.buf);
  }
  if (failed) goto nomem;
  for (size_t i = 0; i < n_img; i++) q0[i + 1] = q0[i] + kept[i];
  /* the classes: of the evaluated non-crowd gt and detections */
  size_t K = 0; /* a sorted set, grown by insertion: there are few categories */
  for (size_t k = 0; k < n_gt + n_dt; k++) {
    int evaluated = k < n_gt ? r->gt_kind[k] != RV_TIDE_NOT_EVALUATED : r->dt_kind[k - n_gt] != RV_TIDE_NOT_EVALUATED;
    if (!evaluated) continue;
    int64_t c = k < n_gt ? gt[k].category_id : dt[k - n_gt].category_id;
    if (K && c == cls[K - 1]) continue;
    size_t lo = 0, hi = K;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (cls[mid] < c) lo = mid + 1;
      else hi = mid;
    }
    if (lo < K && cls[lo] == c) continue;
    memmove(cls + lo + 1, cls + lo, sizeof *cls * (K - lo));
    cls[lo] = c;
    K++;
  }
  c_off = calloc(K + 2, sizeof *c_off);
  c_fill = calloc(K + 1, sizeof *c_fill);
  num_gt = calloc(K + 1, sizeof *num_gt);
  n_miss = calloc(K + 1, sizeof *n_miss);
  n_fn = calloc(K + 1, sizeof *n_fn);
  ca = calloc(K + 1, sizeof *ca);
  if (!c_off || !c_fill || !num_gt || !n_miss || !n_fn || !ca) goto nomem;
  for (size_t k = 0; k < n_gt; k++) {
    int kind = r->gt_kind[k];
    if (kind == RV_TIDE_NOT_EVALUATED) continue;
    long c = find_i64(cls, K, gt[k].category_id);
    num_gt[c]++;
    if (kind != RV_TIDE_TP) n_fn[c]++;
    if (kind == RV_TIDE_MISS) {
      n_miss[c]++;
      r->counts[RV_TIDE_MISS]++;
    }
  }
  for (size_t k = 0; k < n_dt; k++) {
    int kind = r->dt_kind[k];
    if (kind == RV_TIDE_NOT_EVALUATED) continue;
    if (kind != RV_TIDE_TP) r->counts[kind]++;
    c_off[find_i64(cls, K, dt[k].category_id) + 1]++;
    if (kind == RV_TIDE_CLS && di[k].fix_ok) c_off[find_i64(cls, K, gt[di[k].target].category_id) + 1]++;
  }
  for (size_t c = 0; c < K; c++) c_off[c + 1] += c_off[c];
  cands = malloc(sizeof *cands * (c_off[K] + 1));
  if (!cands) goto nomem;
  for (size_t i = 0; i < n_img; i++) { /* in q order: each image's detections come sorted */
    for (size_t rk = 0; rk < kept[i]; rk++) {
      size_t k = m->d_idx[m->d_off[i] + rk];
      int kind = r->dt_kind[k];
      size_t q = q0[i] + rk;
      long c = find_i64(cls, K, dt[k].category_id);
      cands[c_off[c] + c_fill[c]++] = (cand){dt[k].score, q, k, 0};
      if (kind == RV_TIDE_CLS && di[k].fix_ok) {
        c = find_i64(cls, K, gt[di[k].target].category_id);
        cands[c_off[c] + c_fill[c]++] = (cand){dt[k].score, q, k, 1};
      }
    }
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth) reduction(| : failed)
  for (long c = 0; c < (long)K; c++)
    if (!class_scenarios(&ca[c], cands + c_off[c], c_off[c + 1] - c_off[c], num_gt[c], n_miss[c], n_fn[c], r, di))
      failed = 1;
  if (failed) goto nomem;
  double map[SC_N];
  for (int sc = 0; sc < SC_N; sc++) {
    double s = 0;
    size_t nc = 0;
    for (size_t c = 0; c < K; c++)
      if (ca[c].n[sc] > 0 || ca[c].num_gt[sc] != 0) {
        s += ca[c].ap[sc];
        nc++;
      }
    map[sc] = nc ? s / (double)nc : NAN;
  }
  r->ap = map[SC_BASE];
  for (int e = 0; e < RV_TIDE_N_MAIN; e++) {
    double d = map[SC_FIX0 + e] - r->ap;
    r->main[e] = d > 0 ? d : 0;
  }
  r->special[RV_TIDE_FALSE_POS] = map[SC_FP] - r->ap;
  r->special[RV_TIDE_FALSE_NEG] = map[SC_FN] - r->ap;
  goto done;
nomem:
  st = rv_error(ctx, RV_ERR_NOMEM, "tide: out of memory");
  rv_tide_result_free(r);
done:
  free(kept);
  free(q0);
  free(di);
  free(cls);
  free(c_off);
  free(c_fill);
  free(cands);
  free(ca);
  free(num_gt);
  free(n_miss);
  free(n_fn);
  return st;
}
