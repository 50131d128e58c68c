/* Detection and segmentation confusion matrices (see confusion.h). */
#include "eval/confusion.h"

#include "eval/rle.h"

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

typedef struct {
  int64_t id;
  size_t ord;
} id_ord;

static int cmp_id_ord(const void *a, const void *b) {
  const id_ord *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return x->ord < y->ord ? -1 : x->ord > y->ord;
}

static long find_ord(const id_ord *v, size_t n, int64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && v[lo].id == id ? (long)v[lo].ord : -1;
}

rv_status rv_det_confusion(int64_t *counts, const int64_t *cat_ids, size_t K, rv_iou_type t, const int64_t *img_ids,
                           size_t n_img, const rv_coco_obj *gt, size_t n_gt, const rv_coco_obj *dt, size_t n_dt,
                           const rv_det_confusion_params *p, rv_det_confusion_detail *detail, rv_ctx *ctx) {
  const size_t K1 = K + 1;
  id_ord *imgs = malloc(sizeof *imgs * (n_img + 1)), *cats = malloc(sizeof *cats * (K + 1));
  size_t *g_off = calloc(n_img + 2, sizeof *g_off), *d_off = calloc(n_img + 2, sizeof *d_off);
  size_t *g_idx = malloc(sizeof(size_t) * (n_gt + 1)), *d_idx = malloc(sizeof(size_t) * (n_dt + 1));
  long *g_lab = malloc(sizeof(long) * (n_gt + 1)), *d_lab = malloc(sizeof(long) * (n_dt + 1));
  long *g_img = malloc(sizeof(long) * (n_gt + 1)), *d_img = malloc(sizeof(long) * (n_dt + 1));
  size_t *fill = calloc(n_img + 1, sizeof *fill);
  rv_status st = RV_OK;
  if (!imgs || !cats || !g_off || !d_off || !g_idx || !d_idx || !g_lab || !d_lab || !g_img || !d_img || !fill) {
    st = rv_error(ctx, RV_ERR_NOMEM, "confusion matrix: out of memory");
    goto done;
  }
  for (size_t i = 0; i < n_img; i++) imgs[i] = (id_ord){img_ids[i], i};
  for (size_t k = 0; k < K; k++) cats[k] = (id_ord){cat_ids[k], k};
  qsort(imgs, n_img, sizeof *imgs, cmp_id_ord);
  qsort(cats, K, sizeof *cats, cmp_id_ord);
  if (detail) {
    if (detail->dt_out) memset(detail->dt_out, 0, n_dt);
    if (detail->gt_out) memset(detail->gt_out, 0, n_gt);
  }
  /* the counted objects grouped by image: non-crowd gt and detections above the threshold,
   * of the K categories */
  for (size_t k = 0; k < n_gt; k++) {
    g_img[k] = gt[k].iscrowd ? -1 : find_ord(imgs, n_img, gt[k].image_id);
    g_lab[k] = find_ord(cats, K, gt[k].category_id);
    if (g_lab[k] < 0) g_img[k] = -1;
    if (g_img[k] >= 0) g_off[g_img[k] + 1]++;
  }
  for (size_t k = 0; k < n_dt; k++) {
    d_img[k] = dt[k].score >= p->score_thr ? find_ord(imgs, n_img, dt[k].image_id) : -1;
    d_lab[k] = find_ord(cats, K, dt[k].category_id);
    if (d_lab[k] < 0) d_img[k] = -1;
    if (d_img[k] >= 0) d_off[d_img[k] + 1]++;
  }
  for (size_t i = 0; i < n_img; i++) {
    g_off[i + 1] += g_off[i];
    d_off[i + 1] += d_off[i];
  }
  for (size_t k = 0; k < n_gt; k++)
    if (g_img[k] >= 0) g_idx[g_off[g_img[k]] + fill[g_img[k]]++] = k;
  memset(fill, 0, sizeof *fill * (n_img + 1));
  for (size_t k = 0; k < n_dt; k++)
    if (d_img[k] >= 0) d_idx[d_off[d_img[k]] + fill[d_img[k]]++] = k;
  int failed = 0, nth = p->threads > 0 ? p->threads : omp_get_max_threads();
#pragma omp parallel num_threads(nth) reduction(| : failed)
  {
    int64_t *local = calloc(K1 * K1, sizeof *local);
    double *iou = NULL;
    int64_t *tp = NULL;
    rv_rle *rl = NULL;
    rv_rle_info *inf = NULL;
    size_t cap = 0, capg = 0;
    if (!local) failed = 1;
#pragma omp for schedule(dynamic, 16)
    for (long i = 0; i < (long)n_img; i++) {
      if (failed) continue;
      const size_t *gi = g_idx + g_off[i], *di = d_idx + d_off[i];
      size_t G = g_off[i + 1] - g_off[i], D = d_off[i + 1] - d_off[i];
      if (G + D > capg) {
        capg = (G + D) * 2;
        free(tp);
        free(rl);
        free(inf);
        tp = malloc(sizeof *tp * capg);
        rl = malloc(sizeof *rl * capg);
        inf = malloc(sizeof *inf * capg);
        if (!tp || !rl || !inf) {
          failed = 1;
          capg = 0;
          continue;
        }
      }
      if (D * G > cap) {
        cap = D * G * 2;
        free(iou);
        if (!(iou = malloc(sizeof *iou * cap))) {
          failed = 1;
          cap = 0;
          continue;
        }
      }
      if (t == RV_IOU_SEGM && D && G) {
        for (size_t d = 0; d < D; d++) {
          rl[d] = dt[di[d]].segm;
          rv_rle_info_get(&inf[d], &rl[d]);
        }
        for (size_t g = 0; g < G; g++) {
          rl[D + g] = gt[gi[g]].segm;
          rv_rle_info_get(&inf[D + g], &rl[D + g]);
        }
        rv_rle_iou_info(iou, rl, inf, D, rl + D, inf + D, G, NULL);
      } else {
        for (size_t d = 0; d < D; d++)
          for (size_t g = 0; g < G; g++) iou[d * G + g] = rv_det_box_iou(dt[di[d]].bbox, gt[gi[g]].bbox);
      }
      memset(tp, 0, sizeof *tp * G);
      int64_t fp = 0, fn = 0;
      for (size_t d = 0; d < D; d++) {
        long dl = d_lab[di[d]];
        int match = 0, own = 0;
        for (size_t g = 0; g < G; g++) {
          if (!(iou[d * G + g] >= p->iou_thr)) continue;
          long gl = g_lab[gi[g]];
          match++;
          if (gl == dl) {
            tp[g]++;
            own = 1;
          }
          local[(size_t)gl * K1 + (size_t)dl]++;
        }
        if (!match) local[K * K1 + (size_t)dl]++;
        if (!own) fp++;
        if (detail && detail->dt_out) detail->dt_out[di[d]] = own ? 1 : 2;
      }
      for (size_t g = 0; g < G; g++) {
        if (tp[g] == 0) {
          local[(size_t)g_lab[gi[g]] * K1 + K]++;
          fn++;
        }
        if (detail && detail->gt_out) detail->gt_out[gi[g]] = tp[g] ? 1 : 2;
      }
      if (detail && detail->img_fp) detail->img_fp[i] = fp;
      if (detail && detail->img_fn) detail->img_fn[i] = fn;
    }
    if (local) {
#pragma omp critical(rv_det_confusion_sum)
      for (size_t q = 0; q < K1 * K1; q++) counts[q] += local[q];
    }
    free(local);
    free(iou);
    free(tp);
    free(rl);
    free(inf);
  }
  if (failed) st = rv_error(ctx, RV_ERR_NOMEM, "confusion matrix: out of memory");
done:
  free(imgs);
  free(cats);
  free(g_off);
  free(d_off);
  free(g_idx);
  free(d_idx);
  free(g_lab);
  free(d_lab);
  free(g_img);
  free(d_img);
  free(fill);
  return st;
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
