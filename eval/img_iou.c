/* Per-image detection x gt IoU matrices (img_iou.h). */
#include "eval/img_iou.h"

#include "eval/rle.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

void rv_img_ious_free(rv_img_ious *m) {
  if (!m) return;
  free(m->g_off);
  free(m->g_idx);
  free(m->d_off);
  free(m->d_idx);
  free(m->rows);
  free(m->iou_off);
  free(m->iou);
  free(m->img_of_gt);
  free(m->img_of_dt);
  memset(m, 0, sizeof *m);
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

static long find_img(const id_ord *v, size_t n, int64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && v[lo].id == id ? (long)v[lo].ord : -1;
}

/* stable sort of idx[0..n) by score descending (merge sort, tmp holds n) */
static void sort_by_score(size_t *idx, size_t n, size_t *tmp, const rv_coco_obj *dt) {
  if (n < 2) return;
  if (n <= 24) { /* insertion sort: stable */
    for (size_t i = 1; i < n; i++) {
      size_t x = idx[i], j = i;
      double s = dt[x].score;
      while (j > 0 && dt[idx[j - 1]].score < s) {
        idx[j] = idx[j - 1];
        j--;
      }
      idx[j] = x;
    }
    return;
  }
  size_t h = n / 2;
  sort_by_score(idx, h, tmp, dt);
  sort_by_score(idx + h, n - h, tmp, dt);
  if (!(dt[idx[h]].score > dt[idx[h - 1]].score)) return; /* already in order */
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = dt[idx[j]].score > dt[idx[i]].score ? idx[j++] : idx[i++];
  while (i < h) tmp[k++] = idx[i++];
  while (j < n) tmp[k++] = idx[j++];
  memcpy(idx, tmp, n * sizeof *idx);
}

rv_status rv_img_ious_build(rv_img_ious *m, rv_iou_type t, const int64_t *img_ids, size_t n_img, const rv_coco_obj *gt,
                            size_t n_gt, const rv_coco_obj *dt, size_t n_dt, int max_dets, double min_score, int threads,
                            rv_ctx *ctx) {
  memset(m, 0, sizeof *m);
  m->t = t;
  m->n_img = n_img;
  id_ord *imgs = malloc(sizeof *imgs * (n_img + 1));
  size_t *fill = calloc(n_img + 1, sizeof *fill);
  m->g_off = calloc(n_img + 2, sizeof *m->g_off);
  m->d_off = calloc(n_img + 2, sizeof *m->d_off);
  m->g_idx = malloc(sizeof(size_t) * (n_gt + 1));
  m->d_idx = malloc(sizeof(size_t) * (n_dt + 1));
  m->rows = calloc(n_img + 1, sizeof *m->rows);
  m->iou_off = calloc(n_img + 2, sizeof *m->iou_off);
  m->img_of_gt = malloc(sizeof(long) * (n_gt + 1));
  m->img_of_dt = malloc(sizeof(long) * (n_dt + 1));
  if (!imgs || !fill || !m->g_off || !m->d_off || !m->g_idx || !m->d_idx || !m->rows || !m->iou_off || !m->img_of_gt ||
      !m->img_of_dt)
    goto nomem;
  for (size_t i = 0; i < n_img; i++) imgs[i] = (id_ord){img_ids[i], i};
  qsort(imgs, n_img, sizeof *imgs, cmp_id_ord);
  for (size_t k = 0; k < n_gt; k++) {
    long i = m->img_of_gt[k] = find_img(imgs, n_img, gt[k].image_id);
    if (i >= 0) m->g_off[i + 1]++;
  }
  for (size_t k = 0; k < n_dt; k++) {
    long i = m->img_of_dt[k] = find_img(imgs, n_img, dt[k].image_id);
    if (i >= 0) m->d_off[i + 1]++;
  }
  for (size_t i = 0; i < n_img; i++) {
    m->g_off[i + 1] += m->g_off[i];
    m->d_off[i + 1] += m->d_off[i];
  }
  for (size_t k = 0; k < n_gt; k++)
    if (m->img_of_gt[k] >= 0) m->g_idx[m->g_off[m->img_of_gt[k]] + fill[m->img_of_gt[k]]++] = k;
  memset(fill, 0, sizeof *fill * (n_img + 1));
  for (size_t k = 0; k < n_dt; k++)
    if (m->img_of_dt[k] >= 0) m->d_idx[m->d_off[m->img_of_dt[k]] + fill[m->img_of_dt[k]]++] = k;
  int nth = threads > 0 ? threads : omp_get_max_threads(), failed = 0;
  /* sort each image's detections, count the rows */
#pragma omp parallel num_threads(nth) reduction(| : failed)
  {
    size_t cap = 0, *tmp = NULL;
#pragma omp for schedule(dynamic, 32)
    for (long i = 0; i < (long)n_img; i++) {
      size_t n = m->d_off[i + 1] - m->d_off[i], *idx = m->d_idx + m->d_off[i];
      if (n > cap) {
        free(tmp);
        cap = n * 2;
        if (!(tmp = malloc(sizeof *tmp * cap))) {
          cap = 0;
          failed = 1;
          continue;
        }
      }
      sort_by_score(idx, n, tmp, dt);
      size_t r = n < (size_t)max_dets ? n : (size_t)max_dets;
      while (r < n && dt[idx[r]].score >= min_score) r++;
      m->rows[i] = r;
    }
    free(tmp);
  }
  if (failed) goto nomem;
  for (size_t i = 0; i < n_img; i++) m->iou_off[i + 1] = m->iou_off[i] + m->rows[i] * (m->g_off[i + 1] - m->g_off[i]);
  m->iou = malloc(sizeof(double) * (m->iou_off[n_img] + 1));
  if (!m->iou) goto nomem;
#pragma omp parallel num_threads(nth) reduction(| : failed)
  {
    size_t cap = 0;
    unsigned char *buf = NULL;
#pragma omp for schedule(dynamic, 8)
    for (long i = 0; i < (long)n_img; i++) {
      size_t D = m->rows[i], G = m->g_off[i + 1] - m->g_off[i];
      if (!D || !G) continue;
      const size_t *di = m->d_idx + m->d_off[i], *gi = m->g_idx + m->g_off[i];
      size_t need = (sizeof(rv_rle) + sizeof(rv_rle_info) + 4 * sizeof(double)) * (D + G) + G + 64;
      if (need > cap) {
        free(buf);
        cap = need * 2;
        if (!(buf = malloc(cap))) {
          cap = 0;
          failed = 1;
          continue;
        }
      }
      rv_rle *rl = (rv_rle *)buf;
      rv_rle_info *inf = (rv_rle_info *)(rl + D + G);
      double *bb = (double *)(inf + D + G);
      uint8_t *crowd = (uint8_t *)(bb + 4 * (D + G));
      for (size_t g = 0; g < G; g++) crowd[g] = gt[gi[g]].iscrowd != 0;
      double *out = m->iou + m->iou_off[i];
      if (t == RV_IOU_SEGM) {
        for (size_t d = 0; d < D; d++) {
          rl[d] = dt[di[d]].segm;
          rv_rle_info_get(&inf[d], &rl[d]);
        }
        for (size_t g = 0; g < G; g++) {
          rl[D + g] = gt[gi[g]].segm;
          rv_rle_info_get(&inf[D + g], &rl[D + g]);
        }
        rv_rle_iou_info(out, rl, inf, D, rl + D, inf + D, G, crowd);
      } else {
        for (size_t d = 0; d < D; d++) memcpy(bb + 4 * d, dt[di[d]].bbox, sizeof(double) * 4);
        for (size_t g = 0; g < G; g++) memcpy(bb + 4 * (D + g), gt[gi[g]].bbox, sizeof(double) * 4);
        rv_bbox_iou(out, bb, D, bb + 4 * D, G, crowd);
      }
    }
    free(buf);
  }
  if (failed) goto nomem;
  free(imgs);
  free(fill);
  return RV_OK;
nomem:
  free(imgs);
  free(fill);
  rv_img_ious_free(m);
  return rv_error(ctx, RV_ERR_NOMEM, "IoU matrices: out of memory");
}
