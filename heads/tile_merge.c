/* Merging the detections of overlapping tiles, class by class, as SAHI's postprocess does
 * (sahi/postprocess/combine.py: batched_nms, batched_greedy_nmm + GreedyNMMPostprocess). */
#include "heads/det.h"

#include <stdlib.h>

typedef struct {
  int label;
  float s;
  int i;
  const float *box; /* the detection's box, for SAHI's tie-break */
} ranked;

/* label ascending, then score descending (NaN last), then, between equal scores, the box's
 * x1, y1, x2, y2 ascending (SAHI's _score_tiebreak_order: np.lexsort((y2, x2, y1, x1,
 * -scores)), a stable sort), then index ascending: a total order */
static int cmp_ranked(const void *pa, const void *pb) {
  const ranked *a = pa, *b = pb;
  if (a->label != b->label) return a->label < b->label ? -1 : 1;
  int na = a->s != a->s, nb = b->s != b->s;
  if (na != nb) return na - nb;
  if (a->s > b->s) return -1;
  if (a->s < b->s) return 1;
  for (int c = 0; c < 4; c++) {
    const float u = a->box[c], v = b->box[c];
    if (u < v) return -1;
    if (u > v) return 1;
  }
  return (a->i > b->i) - (a->i < b->i);
}

/* score descending (NaN last), then index ascending */
static int cmp_scored(const void *pa, const void *pb) {
  const ranked *a = pa, *b = pb;
  int na = a->s != a->s, nb = b->s != b->s;
  if (na != nb) return na - nb;
  if (a->s > b->s) return -1;
  if (a->s < b->s) return 1;
  return (a->i > b->i) - (a->i < b->i);
}

double rv_box_overlap(const float *a, const float *b, int ios) {
  double w = (a[2] < b[2] ? (double)a[2] : b[2]) - (a[0] > b[0] ? (double)a[0] : b[0]);
  double h = (a[3] < b[3] ? (double)a[3] : b[3]) - (a[1] > b[1] ? (double)a[1] : b[1]);
  w = w < 0 ? 0 : w;
  h = h < 0 ? 0 : h;
  const double inter = w * h;
  const double aa = ((double)a[2] - a[0]) * ((double)a[3] - a[1]);
  const double ab = ((double)b[2] - b[0]) * ((double)b[3] - b[1]);
  const double den = ios ? (aa < ab ? aa : ab) : aa + ab - inter;
  return den > 0 ? inter / den : 0; /* a box without area matches nothing */
}

/* positions sorted by their box's x1 (NaN last), for the window of candidates of a box */
typedef struct {
  float x1;
  int pos;
} xpos;

static int cmp_xpos(const void *pa, const void *pb) {
  const xpos *a = pa, *b = pb;
  int na = a->x1 != a->x1, nb = b->x1 != b->x1;
  if (na != nb) return na - nb;
  if (a->x1 != b->x1) return a->x1 < b->x1 ? -1 : 1;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

int rv_merge_tile_dets(float *out_boxes, float *out_scores, int *out_labels, int *slot,
                       const float *boxes, const float *scores, const int *labels, int n,
                       int nmm, float thr, rv_arena *scratch) {
  if (n <= 0) return 0;
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  ranked *r = rv_arena_alloc(scratch, (size_t)n * sizeof *r);
  ranked *keeps = rv_arena_alloc(scratch, (size_t)n * sizeof *keeps);
  unsigned char *alive = rv_arena_alloc(scratch, (size_t)n);
  int *owner = rv_arena_alloc(scratch, (size_t)n * sizeof *owner); /* NMM: the keep (order position) a detection matched */
  int *rank = rv_arena_alloc(scratch, (size_t)n * sizeof *rank);
  xpos *xs = rv_arena_alloc(scratch, (size_t)n * sizeof *xs);
  if (!r || !keeps || !alive || !owner || !rank || !xs) {
    rv_arena_release(scratch, mk);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    r[i] = (ranked){labels[i], scores[i], i, boxes + 4 * (size_t)i};
    slot[i] = -1;
  }
  qsort(r, (size_t)n, sizeof *r, cmp_ranked);
  int nk = 0;
  for (int a = 0; a < n;) {
    int b = a + 1;
    while (b < n && r[b].label == r[a].label) b++;
    for (int t = a; t < b; t++) alive[t] = 1, owner[t] = -1;
    /* only boxes that intersect can match (thr > 0): the candidates of a box are those whose
     * x1 lies in [its x1 - the class's widest box - 1, its x2), a window of the class's boxes
     * sorted by x1 (the same decisions as visiting every later box, without the n^2 of the
     * tens of thousands of detections of a large image) */
    double maxw = 0;
    for (int t = a; t < b; t++) {
      const float *bt = boxes + 4 * (size_t)r[t].i;
      xs[t] = (xpos){bt[0], t};
      if ((double)bt[2] - bt[0] > maxw) maxw = (double)bt[2] - bt[0];
    }
    qsort(xs + a, (size_t)(b - a), sizeof *xs, cmp_xpos);
    /* greedy over the class by descending score: the best detection left is kept; every
     * later one whose overlap with it (its own box: the IoU for NMS, the intersection over
     * the smaller area for NMM) reaches thr leaves the pool, suppressed (NMS) or matched to
     * it for merging (NMM) */
    for (int t = a; t < b; t++) {
      if (!alive[t]) continue;
      keeps[nk++] = (ranked){r[t].label, r[t].s, t, NULL};
      const float *bt = boxes + 4 * (size_t)r[t].i;
      const double lo = (double)bt[0] - maxw - 1; /* a pixel of slack for the roundings */
      int l = a, h = b; /* the first x1 >= lo */
      while (l < h) {
        const int mid = l + (h - l) / 2;
        if ((double)xs[mid].x1 < lo) l = mid + 1;
        else h = mid;
      }
      for (int j = l; j < b && xs[j].x1 < bt[2]; j++) {
        const int u = xs[j].pos;
        if (u > t && alive[u] && rv_box_overlap(bt, boxes + 4 * (size_t)r[u].i, nmm) >= thr) {
          alive[u] = 0;
          owner[u] = t;
        }
      }
    }
    a = b;
  }
  /* the results by score (ties: the index of the detection kept) */
  for (int k = 0; k < nk; k++) keeps[k].i = r[keeps[k].i].i;
  qsort(keeps, (size_t)nk, sizeof *keeps, cmp_scored);
  for (int k = 0; k < nk; k++) {
    const int i = keeps[k].i;
    rank[i] = k;
    slot[i] = k;
    for (int c = 0; c < 4; c++) out_boxes[4 * (size_t)k + c] = boxes[4 * (size_t)i + c];
    out_scores[k] = scores[i];
    out_labels[k] = labels[i];
  }
  if (nmm) {
    /* each matched detection, in descending score order, joins its keep's merged box when
     * it still overlaps that (grown) box by more than thr (SAHI re-checks with has_match, a
     * strict >): box union, the higher score; one that no longer does is dropped */
    for (int u = 0; u < n; u++) {
      if (owner[u] < 0) continue;
      const int k = rank[r[owner[u]].i], i = r[u].i;
      float *mb = out_boxes + 4 * (size_t)k;
      const float *bu = boxes + 4 * (size_t)i;
      if (!(rv_box_overlap(mb, bu, 1) > thr)) continue;
      mb[0] = mb[0] < bu[0] ? mb[0] : bu[0];
      mb[1] = mb[1] < bu[1] ? mb[1] : bu[1];
      mb[2] = mb[2] > bu[2] ? mb[2] : bu[2];
      mb[3] = mb[3] > bu[3] ? mb[3] : bu[3];
      if (scores[i] > out_scores[k]) out_scores[k] = scores[i];
      slot[i] = k;
    }
  }
  rv_arena_release(scratch, mk);
  return nk;
}
