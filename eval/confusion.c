/* Detection and segmentation confusion matrices (see confusion.h). */
#include "eval/confusion.h"

#include "eval/img_iou.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

rv_det_confusion_params rv_det_confusion_default_params(void) {
  rv_det_confusion_params p = {0.3, 0.5, 0};
  return p;
}

double rv_det_box_iou(const double a[4], const double b[4]) {
  double ax1 = a[0], ay1 = a[1], ax2 = a[0] + a[2], ay2 = a[1] + a[3];
  double bx1 = b[0], by1 = b[1], bx2 = b[0] + b[2], by2 = b[1] + b[3];
  double area1 = (ax2 - ax1) * (ay2 - ay1), area2 = (bx2 - bx1) * (by2 - by1);
  double xs = ax1 > bx1 ? ax1 : bx1, ys = ay1 > by1 ? ay1 : by1;
  double xe = ax2 < bx2 ? ax2 : bx2, ye = ay2 < by2 ? ay2 : by2;
  double w = xe - xs, h = ye - ys;
  double overlap = (w > 0 ? w : 0) * (h > 0 ? h : 0);
  double uni = area1 + area2 - overlap;
  if (!(uni >= 1e-6)) uni = 1e-6; /* np.maximum(union, eps) */
  return overlap / uni;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* the category's row / column, or -1 */
static long cat_index(const int64_t *sorted, const size_t *pos, size_t K, int64_t id) {
  size_t lo = 0, hi = K;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < K && sorted[lo] == id ? (long)pos[lo] : -1;
}

rv_status rv_det_confusion(int64_t *counts, const int64_t *cat_ids, size_t K, rv_iou_type t, const int64_t *img_ids,
                           size_t n_img, const rv_coco_obj *gt, size_t n_gt, const rv_coco_obj *dt, size_t n_dt,
                           const rv_det_confusion_params *p, rv_det_confusion_detail *detail, rv_ctx *ctx) {
  rv_img_ious m;
  RV_TRY(rv_img_ious_build(&m, t, img_ids, n_img, gt, n_gt, dt, n_dt, 0, p->score_thr, p->threads, ctx));
  rv_status st = rv_det_confusion_ious(counts, cat_ids, K, &m, gt, n_gt, dt, n_dt, p, detail, ctx);
  rv_img_ious_free(&m);
  return st;
}

rv_status rv_det_confusion_ious(int64_t *counts, const int64_t *cat_ids, size_t K, const rv_img_ious *m,
                                const rv_coco_obj *gt, size_t n_gt, const rv_coco_obj *dt, size_t n_dt,
                                const rv_det_confusion_params *p, rv_det_confusion_detail *detail, rv_ctx *ctx) {
  const size_t K1 = K + 1, n_img = m->n_img;
  const int segm = m->t == RV_IOU_SEGM;
  int64_t *sorted = malloc(sizeof *sorted * (K + 1));
  size_t *pos = malloc(sizeof *pos * (K + 1));
  if (!sorted || !pos) {
    free(sorted);
    free(pos);
    return rv_error(ctx, RV_ERR_NOMEM, "confusion matrix: out of memory");
  }
  { /* sort the ids with their positions (insertion: K is small) */
    for (size_t k = 0; k < K; k++) sorted[k] = cat_ids[k];
    qsort(sorted, K, sizeof *sorted, cmp_i64);
    for (size_t k = 0; k < K; k++) {
      size_t j = 0;
      while (cat_ids[j] != sorted[k]) j++;
      pos[k] = j;
    }
  }
  if (detail) {
    if (detail->dt_out) memset(detail->dt_out, 0, n_dt);
    if (detail->gt_out) memset(detail->gt_out, 0, n_gt);
    for (size_t i = 0; i < n_img; i++) {
      if (detail->img_fp) detail->img_fp[i] = 0;
      if (detail->img_fn) detail->img_fn[i] = 0;
    }
  }
  int failed = 0, nth = p->threads > 0 ? p->threads : omp_get_max_threads();
#pragma omp parallel num_threads(nth) reduction(| : failed)
  {
    int64_t *local = calloc(K1 * K1, sizeof *local);
    size_t cap = 0;
    int64_t *tp = NULL;
    long *glab = NULL;
    size_t *gcol = NULL;
    if (!local) failed = 1;
#pragma omp for schedule(dynamic, 16)
    for (long i = 0; i < (long)n_img; i++) {
      if (failed) continue;
      const size_t *gi = m->g_idx + m->g_off[i], *di = m->d_idx + m->d_off[i];
      const size_t Gall = m->g_off[i + 1] - m->g_off[i];
      const double *Mi = m->iou + m->iou_off[i];
      if (Gall > cap) {
        cap = Gall * 2;
        free(tp);
        free(glab);
        free(gcol);
        tp = malloc(sizeof *tp * cap);
        glab = malloc(sizeof *glab * cap);
        gcol = malloc(sizeof *gcol * cap);
        if (!tp || !glab || !gcol) {
          failed = 1;
          cap = 0;
          continue;
        }
      }
      /* the counted gt: non-crowd, of the K categories */
      size_t G = 0;
      for (size_t c = 0; c < Gall; c++) {
        const rv_coco_obj *g = &gt[gi[c]];
        long l = g->iscrowd ? -1 : cat_index(sorted, pos, K, g->category_id);
        if (l < 0) continue;
        glab[G] = l;
        gcol[G] = c;
        tp[G++] = 0;
      }
      int64_t fp = 0, fn = 0;
      for (size_t r = 0; r < m->rows[i] && dt[di[r]].score >= p->score_thr; r++) {
        const rv_coco_obj *d = &dt[di[r]];
        long dl = cat_index(sorted, pos, K, d->category_id);
        if (dl < 0) continue;
        int match = 0, own = 0;
        for (size_t g = 0; g < G; g++) {
          double v = segm ? Mi[r * Gall + gcol[g]] : rv_det_box_iou(d->bbox, gt[gi[gcol[g]]].bbox);
          if (!(v >= p->iou_thr)) continue;
          match++;
          if (glab[g] == dl) {
            tp[g]++;
            own = 1;
          }
          local[(size_t)glab[g] * K1 + (size_t)dl]++;
        }
        if (!match) local[K * K1 + (size_t)dl]++;
        if (!own) fp++;
        if (detail && detail->dt_out) detail->dt_out[di[r]] = own ? 1 : 2;
      }
      for (size_t g = 0; g < G; g++) {
        if (tp[g] == 0) {
          local[(size_t)glab[g] * K1 + K]++;
          fn++;
        }
        if (detail && detail->gt_out) detail->gt_out[gi[gcol[g]]] = tp[g] ? 1 : 2;
      }
      if (detail && detail->img_fp) detail->img_fp[i] = fp;
      if (detail && detail->img_fn) detail->img_fn[i] = fn;
    }
    if (local) {
#pragma omp critical(rv_det_confusion_sum)
      for (size_t q = 0; q < K1 * K1; q++) counts[q] += local[q];
    }
    free(local);
    free(tp);
    free(glab);
    free(gcol);
  }
  free(sorted);
  free(pos);
  return failed ? rv_error(ctx, RV_ERR_NOMEM, "confusion matrix: out of memory") : RV_OK;
}

/* the label's class after reduce_zero_label and ignore_index, or -1 */
static inline int seg_label(int v, int C, int rzl, int ignore) {
  if (rzl) v = v == 0 ? 255 : v - 1;
  if (v == ignore || v < 0 || v >= C) return -1;
  return v;
}

static double image_miou(const int64_t *inter, const int64_t *area_p, const int64_t *area_l, int C) {
  double s = 0;
  int m = 0;
  for (int c = 0; c < C; c++) {
    int64_t u = area_p[c] + area_l[c] - inter[c];
    if (u > 0) {
      s += (double)inter[c] / (double)u;
      m++;
    }
  }
  return m ? s / m : NAN;
}

#define SEG_CONFUSION_BODY(PRED_CLASS)                                                           \
  int64_t *a = calloc((size_t)3 * (size_t)(C > 0 ? C : 1), sizeof *a);                          \
  if (!a) return NAN;                                                                           \
  int64_t *inter = a, *ap = a + C, *al = a + 2 * C;                                             \
  for (size_t i = 0; i < n; i++) {                                                              \
    int l = seg_label(label[i], C, reduce_zero_label, ignore_index);                           \
    if (l < 0) continue;                                                                        \
    long v = (PRED_CLASS);                                                                      \
    al[l]++;                                                                                    \
    if (v < 0 || v >= C) continue;                                                              \
    counts[(size_t)l * (size_t)C + (size_t)v]++;                                                \
    ap[v]++;                                                                                    \
    if (v == l) inter[l]++;                                                                     \
  }                                                                                             \
  double miou = image_miou(inter, ap, al, C);                                                   \
  free(a);                                                                                      \
  return miou;

double rv_seg_confusion_add_u8(int64_t *counts, int C, const uint8_t *pred, int pred_offset, const uint8_t *label,
                               size_t n, int reduce_zero_label, int ignore_index) {
  SEG_CONFUSION_BODY((long)pred[i] - pred_offset)
}

double rv_seg_confusion_add_i32(int64_t *counts, int C, const int32_t *pred, const uint8_t *label, size_t n,
                                int reduce_zero_label, int ignore_index) {
  SEG_CONFUSION_BODY((long)pred[i])
}
