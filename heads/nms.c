/* NMS family: greedy NMS (mmcv nms CPU kernel, offset 0), batched NMS by index (mmcv
 * batched_nms per-class semantics) and mmdet multiclass_nms. */
#include "heads/det.h"
#include "kernels/vmath.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  float s;
  int i;
} scored;

/* score descending, then index ascending: a total order, so qsort is deterministic */
static int cmp_scored(const void *pa, const void *pb) {
  const scored *a = pa, *b = pb;
  int na = a->s != a->s, nb = b->s != b->s; /* NaN scores sort last */
  if (na != nb) return na - nb;
  if (a->s > b->s) return -1;
  if (a->s < b->s) return 1;
  return (a->i > b->i) - (a->i < b->i);
}

static void select_first(scored *t, int n, int k);

/* order[0..k) = the first k indices (k <= n) in cmp_scored order; tmp: n pairs of scratch */
static void argsort_pairs(int *order, scored *tmp, const float *scores, int n, int k) {
  for (int i = 0; i < n; i++) {
    tmp[i].s = scores[i];
    tmp[i].i = i;
  }
  if (k < n) select_first(tmp, n, k);
  qsort(tmp, (size_t)k, sizeof *tmp, cmp_scored);
  for (int i = 0; i < k; i++) order[i] = tmp[i].i;
}

int rv_argsort_desc(int *order, const float *scores, int n, rv_arena *scratch) {
  if (n <= 0) return 0;
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  scored *tmp = rv_arena_alloc(scratch, (size_t)n * sizeof *tmp);
  if (!tmp) return -1;
  argsort_pairs(order, tmp, scores, n, n);
  rv_arena_release(scratch, mk);
  return 0;
}

static inline int before(const scored *a, const scored *b) { return cmp_scored(a, b) < 0; }

static inline void swap_scored(scored *a, scored *b) {
  scored t = *a;
  *a = *b;
  *b = t;
}

/* Rearranges t[0..n) so that its k first elements under cmp_scored are t[0..k) (in no
 * order): quickselect with a median-of-three pivot (the order is total, so there are no
 * equal keys to degrade it); past 2 log2(n) + 8 rounds the rest is sorted instead. */
static void select_first(scored *t, int n, int k) {
  int lo = 0, hi = n - 1, rounds = 8;
  for (int m = n; m > 1; m >>= 1) rounds += 2;
  while (hi > lo && rounds-- > 0) {
    const int mid = lo + (hi - lo) / 2;
    if (before(&t[mid], &t[lo])) swap_scored(&t[mid], &t[lo]);
    if (before(&t[hi], &t[lo])) swap_scored(&t[hi], &t[lo]);
    if (before(&t[hi], &t[mid])) swap_scored(&t[hi], &t[mid]);
    const scored piv = t[mid]; /* median of lo, mid, hi */
    int i = lo, j = hi;
    while (i <= j) { /* Hoare partition: [lo, j] before-or-pivot, [i, hi] pivot-or-after */
      while (before(&t[i], &piv)) i++;
      while (before(&piv, &t[j])) j--;
      if (i <= j) swap_scored(&t[i++], &t[j--]);
    }
    if (k - 1 <= j) hi = j;
    else if (k - 1 >= i) lo = i;
    else return; /* t[j + 1 .. i - 1] is the pivot: the k first are in place */
  }
  if (hi > lo) qsort(t + lo, (size_t)(hi - lo + 1), sizeof *t, cmp_scored);
}

int rv_argsort_topk_desc(int *order, const float *scores, int n, int k, rv_arena *scratch) {
  if (n <= 0 || k <= 0) return 0;
  if (k > n) k = n;
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  scored *tmp = rv_arena_alloc(scratch, (size_t)n * sizeof *tmp);
  if (!tmp) return -1;
  argsort_pairs(order, tmp, scores, n, k);
  rv_arena_release(scratch, mk);
  return k;
}

/* Greedy suppression over the boxes listed in idx[0..m) (already in score order).
 * alive[] flags (1 = kept) are written for those positions. IoU in double:
 * inter / (area_i + area_j - inter) > thr suppresses j. The boxes are gathered into double
 * columns (soa: x1, y1, x2, y2, area, 5 m doubles) so that the loop over later boxes runs on
 * contiguous lanes and vectorises; it computes the IoU of boxes already suppressed too
 * (their flag stays 0), the same arithmetic per pair as the plain loop. */
RV_CLONES static void greedy(unsigned char *restrict alive, const int *idx, int m,
                             const float *boxes, double *restrict soa, double thr) {
  double *restrict X1 = soa, *restrict Y1 = soa + m, *restrict X2 = soa + 2 * (size_t)m;
  double *restrict Y2 = soa + 3 * (size_t)m, *restrict A = soa + 4 * (size_t)m;
  for (int t = 0; t < m; t++) {
    const float *b = boxes + (size_t)idx[t] * 4;
    X1[t] = b[0], Y1[t] = b[1], X2[t] = b[2], Y2[t] = b[3];
    A[t] = ((double)b[2] - b[0]) * ((double)b[3] - b[1]);
    alive[t] = 1;
  }
  for (int t = 0; t < m; t++) {
    if (!alive[t]) continue;
    const double ix1 = X1[t], iy1 = Y1[t], ix2 = X2[t], iy2 = Y2[t], ia = A[t];
    for (int u = t + 1; u < m; u++) {
      double xx1 = ix1 > X1[u] ? ix1 : X1[u];
      double yy1 = iy1 > Y1[u] ? iy1 : Y1[u];
      double xx2 = ix2 < X2[u] ? ix2 : X2[u];
      double yy2 = iy2 < Y2[u] ? iy2 : Y2[u];
      double w = xx2 - xx1, h = yy2 - yy1;
      w = w < 0 ? 0 : w;
      h = h < 0 ? 0 : h;
      const double inter = w * h, ovr = inter / (ia + A[u] - inter);
      alive[u] = ovr > thr ? 0 : alive[u];
    }
  }
}

int rv_nms(int *keep, const float *boxes, const float *scores, int n, float iou_thr,
           rv_arena *scratch) {
  if (n <= 0) return 0;
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  int *order = rv_arena_alloc(scratch, (size_t)n * sizeof(int));
  scored *tmp = rv_arena_alloc(scratch, (size_t)n * sizeof(scored));
  double *cols = rv_arena_alloc(scratch, (size_t)n * 5 * sizeof(double)); /* greedy's columns */
  unsigned char *alive = rv_arena_alloc(scratch, (size_t)n);
  if (!order || !tmp || !cols || !alive) {
    rv_arena_release(scratch, mk);
    return -1;
  }
  argsort_pairs(order, tmp, scores, n, n);
  greedy(alive, order, n, boxes, cols, (double)iou_thr);
  int k = 0;
  for (int t = 0; t < n; t++)
    if (alive[t]) keep[k++] = order[t];
  rv_arena_release(scratch, mk);
  return k;
}

int rv_batched_nms(int *keep, const float *boxes, const float *scores, const int *idxs, int n,
                   float iou_thr, rv_arena *scratch) {
  if (n <= 0) return 0;
  int lo = idxs[0], hi = idxs[0];
  for (int i = 1; i < n; i++) {
    if (idxs[i] < lo) lo = idxs[i];
    if (idxs[i] > hi) hi = idxs[i];
  }
  int ng = hi - lo + 1;
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  int *order = rv_arena_alloc(scratch, (size_t)n * sizeof(int));
  scored *tmp = rv_arena_alloc(scratch, (size_t)n * sizeof(scored));
  double *cols = rv_arena_alloc(scratch, (size_t)n * 5 * sizeof(double)); /* greedy's columns */
  unsigned char *alive = rv_arena_alloc(scratch, (size_t)n);
  unsigned char *kept = rv_arena_alloc(scratch, (size_t)n);
  int *grouped = rv_arena_alloc(scratch, (size_t)n * sizeof(int));
  int *start = rv_arena_alloc(scratch, ((size_t)ng + 1) * sizeof(int));
  if (!order || !tmp || !cols || !alive || !kept || !grouped || !start) {
    rv_arena_release(scratch, mk);
    return -1;
  }
  argsort_pairs(order, tmp, scores, n, n);
  /* stable bucket of the score order by group: each group stays in score order */
  memset(start, 0, ((size_t)ng + 1) * sizeof(int));
  for (int i = 0; i < n; i++) start[idxs[i] - lo + 1]++;
  for (int g = 0; g < ng; g++) start[g + 1] += start[g];
  int *fill = rv_arena_alloc(scratch, (size_t)ng * sizeof(int));
  if (!fill) {
    rv_arena_release(scratch, mk);
    return -1;
  }
  memcpy(fill, start, (size_t)ng * sizeof(int));
  for (int t = 0; t < n; t++) grouped[fill[idxs[order[t]] - lo]++] = order[t];
  memset(kept, 0, (size_t)n);
  for (int g = 0; g < ng; g++) {
    int m = start[g + 1] - start[g];
    if (m == 0) continue;
    greedy(alive, grouped + start[g], m, boxes, cols, (double)iou_thr);
    for (int t = 0; t < m; t++)
      if (alive[t]) kept[grouped[start[g] + t]] = 1;
  }
  int k = 0;
  for (int t = 0; t < n; t++)
    if (kept[order[t]]) keep[k++] = order[t];
  rv_arena_release(scratch, mk);
  return k;
}

int rv_multiclass_nms_candidates(const float *scores, int score_stride, int n, int num_classes,
                                 float score_thr) {
  int c = 0;
  for (int r = 0; r < n; r++)
    for (int k = 0; k < num_classes; k++)
      if (scores[(size_t)r * score_stride + k] > score_thr) c++;
  return c;
}

int rv_multiclass_nms(float *out_boxes, float *out_scores, int *out_labels, int *out_rows,
                      const float *boxes, int boxes_per_class, const float *scores,
                      int score_stride, int n, int num_classes, float score_thr, float iou_thr,
                      int max_num, rv_arena *scratch) {
  int nc = rv_multiclass_nms_candidates(scores, score_stride, n, num_classes, score_thr);
  if (nc == 0) return 0;
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  float *cb = rv_arena_floats(scratch, (size_t)nc * 4);
  float *cs = rv_arena_floats(scratch, (size_t)nc);
  int *cl = rv_arena_alloc(scratch, (size_t)nc * sizeof(int));
  int *cr = rv_arena_alloc(scratch, (size_t)nc * sizeof(int));
  int *keep = rv_arena_alloc(scratch, (size_t)nc * sizeof(int));
  if (!cb || !cs || !cl || !cr || !keep) {
    rv_arena_release(scratch, mk);
    return -1;
  }
  int c = 0;
  for (int r = 0; r < n; r++)
    for (int k = 0; k < num_classes; k++) {
      float s = scores[(size_t)r * score_stride + k];
      if (!(s > score_thr)) continue;
      const float *b = boxes_per_class ? boxes + ((size_t)r * num_classes + k) * 4
                                       : boxes + (size_t)r * 4;
      memcpy(cb + (size_t)c * 4, b, 4 * sizeof(float));
      cs[c] = s;
      cl[c] = k;
      cr[c] = r;
      c++;
    }
  int nk = rv_batched_nms(keep, cb, cs, cl, nc, iou_thr, scratch);
  if (nk < 0) {
    rv_arena_release(scratch, mk);
    return -1;
  }
  if (max_num > 0 && nk > max_num) nk = max_num;
  for (int t = 0; t < nk; t++) {
    int i = keep[t];
    memcpy(out_boxes + (size_t)t * 4, cb + (size_t)i * 4, 4 * sizeof(float));
    out_scores[t] = cs[i];
    out_labels[t] = cl[i];
    if (out_rows) out_rows[t] = cr[i];
  }
  rv_arena_release(scratch, mk);
  return nk;
}
