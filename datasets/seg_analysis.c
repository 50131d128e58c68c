/* The semantic segmentation analysis of `ravlt eval ade20k --report` (include/ravlt/analysis.h):
 * mmseg's areas and metrics (eval/segmetrics.c), mmseg 0.x's confusion matrix and per-image
 * mIoU (eval/confusion.c), and the worst images with image | ground truth | prediction
 * thumbnails. Images may be added from several threads: each call works on its own matrix and
 * areas and merges them under a lock; a thumbnail is made only for an image that is among the
 * worst so far. */
#define _POSIX_C_SOURCE 200809L
#include "datasets/seg_analysis.h"
#include "datasets/ade20k.h"
#include "datasets/analysis_util.h"
#include "datasets/classes.h"
#include "eval/confusion.h"
#include "eval/segmetrics.h"
#include "formats/image.h"

#include <ravlt/analysis.h>
#include <ravlt/classes.h>

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
  char *name;
  double miou;
  char *thumb;
} worst_slot;

struct rv_seg_analysis {
  int C;
  char **names;
  rv_analysis_params p;
  rv_seg_areas areas;
  int64_t *confusion; /* C x C */
  size_t n_images;
  worst_slot *worst;  /* p.n_worst slots, the lowest mIoU first */
  int n_worst;
  omp_lock_t lock;
};

rv_status rv_seg_analysis_create(rv_seg_analysis **out, int C, const char *const *names, const rv_analysis_params *p,
                                 rv_ctx *ctx) {
  *out = NULL;
  if (C < 1 || C > 254) return rv_error(ctx, RV_ERR_ARG, "segmentation analysis: %d classes (1..254)", C);
  rv_seg_analysis *a = calloc(1, sizeof *a);
  if (!a) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  a->C = C;
  a->p = p ? *p : rv_analysis_default_params();
  if (a->p.n_worst < 0) a->p.n_worst = 0;
  a->confusion = calloc((size_t)C * C, sizeof *a->confusion);
  a->worst = calloc((size_t)a->p.n_worst + 1, sizeof *a->worst);
  a->names = calloc((size_t)C, sizeof *a->names);
  rv_status st = a->confusion && a->worst && a->names ? rv_seg_areas_init(&a->areas, C, ctx)
                                                       : rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (int k = 0; st == RV_OK && k < C; k++) {
    char idx[16];
    snprintf(idx, sizeof idx, "%d", k);
    const char *nm = names ? names[k] : C == RV_ADE20K_CLASSES ? rv_ade20k_classes[k] : idx;
    if (!(a->names[k] = strdup(nm ? nm : idx))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  if (st != RV_OK) {
    omp_init_lock(&a->lock);
    rv_seg_analysis_free(a);
    return st;
  }
  omp_init_lock(&a->lock);
  *out = a;
  return RV_OK;
}

void rv_seg_analysis_free(rv_seg_analysis *a) {
  if (!a) return;
  for (int k = 0; a->names && k < a->C; k++) free(a->names[k]);
  free(a->names);
  for (int i = 0; a->worst && i < a->n_worst; i++) {
    free(a->worst[i].name);
    free(a->worst[i].thumb);
  }
  free(a->worst);
  free(a->confusion);
  rv_seg_areas_free(&a->areas);
  omp_destroy_lock(&a->lock);
  free(a);
}

static void color_of(int C, int k, unsigned char bgr[3]) {
  unsigned char rgb[3];
  if (C == RV_ADE20K_CLASSES) memcpy(rgb, rv_ade20k_palette[k], 3);
  else rv_palette_color(k, rgb);
  bgr[0] = rgb[2];
  bgr[1] = rgb[1];
  bgr[2] = rgb[0];
}

/* image | ground truth | prediction, each panel scaled to at most side x side */
static rv_status seg_thumb(char **uri, const rv_image *img, const uint8_t *label, const uint8_t *pred_cls, int h, int w,
                           int C, int side, rv_ctx *ctx) {
  *uri = NULL;
  int mx = w > h ? w : h;
  double s = mx > side && side > 0 ? (double)side / mx : 1.0;
  int tw = (int)lround(w * s), th = (int)lround(h * s);
  if (tw < 1) tw = 1;
  if (th < 1) th = 1;
  const int gap = 4;
  rv_image comp = {0}, small = {0};
  RV_TRY(rv_image_alloc(&comp, th, 3 * tw + 2 * gap, 3, ctx));
  memset(comp.data, 255, (size_t)comp.h * comp.w * 3);
  rv_status st = RV_OK;
  if (img && img->data) {
    st = rv_image_resize(&small, img, tw, th, RV_INTERP_AREA, ctx);
    for (int y = 0; st == RV_OK && y < th; y++) memcpy(rv_image_px(&comp, y, 0), rv_image_px(&small, y, 0), (size_t)tw * 3);
  }
  for (int y = 0; st == RV_OK && y < th; y++) {
    int sy = (int)((y + 0.5) / s);
    if (sy >= h) sy = h - 1;
    for (int x = 0; x < tw; x++) {
      int sx = (int)((x + 0.5) / s);
      if (sx >= w) sx = w - 1;
      size_t i = (size_t)sy * w + sx;
      int l = label[i] == 0 || label[i] == 255 ? -1 : label[i] - 1, pc = pred_cls[i] < C ? pred_cls[i] : -1;
      unsigned char *g = rv_image_px(&comp, y, tw + gap + x), *q = rv_image_px(&comp, y, 2 * (tw + gap) + x);
      if (l >= 0 && l < C) color_of(C, l, g);
      else memset(g, 0, 3);
      if (pc >= 0) color_of(C, pc, q);
      else memset(q, 0, 3);
    }
  }
  if (st == RV_OK) st = rv_thumb_data_uri(uri, &comp, 0, ctx);
  rv_image_free(&comp);
  rv_image_free(&small);
  return st;
}

/* is an image of this mIoU among the worst so far (under the lock) */
static int qualifies(const rv_seg_analysis *a, double miou) {
  if (a->p.n_worst == 0 || isnan(miou)) return 0;
  return a->n_worst < a->p.n_worst || miou < a->worst[a->n_worst - 1].miou;
}

/* pred_cls: class indices (values >= C: no class), n = h * w */
static rv_status seg_add(rv_seg_analysis *a, const char *name, const rv_image *img, const char *img_path,
                         const uint8_t *label, const uint8_t *pred_cls, int h, int w, rv_ctx *ctx) {
  const int C = a->C;
  size_t n = (size_t)h * w;
  int64_t *cm = calloc((size_t)C * C, sizeof *cm);
  rv_seg_areas loc;
  if (!cm) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_status st = rv_seg_areas_init(&loc, C, ctx);
  if (st != RV_OK) {
    free(cm);
    return st;
  }
  rv_seg_areas_add_u8(&loc, pred_cls, label, n, 1, 255);
  double miou = rv_seg_confusion_add_u8(cm, C, pred_cls, 0, label, n, 1, 255);
  omp_set_lock(&a->lock);
  for (size_t q = 0; q < (size_t)C * C; q++) a->confusion[q] += cm[q];
  rv_seg_areas_merge(&a->areas, &loc);
  a->n_images++;
  int want = qualifies(a, miou);
  omp_unset_lock(&a->lock);
  free(cm);
  rv_seg_areas_free(&loc);
  if (!want) return RV_OK;
  char *thumb = NULL, *nm = strdup(name ? name : "");
  if (!nm) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_image own = {0};
  if (!img && img_path) {
    rv_ctx *c2 = rv_ctx_create();
    if (c2 && rv_image_read(img_path, &own, c2) == RV_OK && own.h == h && own.w == w) img = &own;
    rv_ctx_free(c2);
  }
  if (img && (img->h != h || img->w != w)) img = NULL;
  if (seg_thumb(&thumb, img, label, pred_cls, h, w, C, a->p.thumb_size, ctx) != RV_OK) thumb = NULL;
  rv_image_free(&own);
  omp_set_lock(&a->lock);
  if (qualifies(a, miou)) { /* insert, keeping the slots sorted (ties: the earlier stays first) */
    int pos = a->n_worst < a->p.n_worst ? a->n_worst++ : a->n_worst - 1;
    free(a->worst[pos].name);
    free(a->worst[pos].thumb);
    while (pos > 0 && a->worst[pos - 1].miou > miou) {
      a->worst[pos] = a->worst[pos - 1];
      pos--;
    }
    a->worst[pos] = (worst_slot){nm, miou, thumb};
    nm = thumb = NULL;
  }
  omp_unset_lock(&a->lock);
  free(nm);
  free(thumb);
  return RV_OK;
}

rv_status rv_seg_analysis_add(rv_seg_analysis *a, const char *name, const rv_image *img, const uint8_t *label,
                              const int32_t *pred_i32, const uint8_t *pred_u8, int h, int w, rv_ctx *ctx) {
  if (!!pred_i32 == !!pred_u8)
    return rv_error(ctx, RV_ERR_ARG, "segmentation analysis: give the prediction as int32 classes or 8-bit annotations");
  size_t n = (size_t)h * w;
  uint8_t *pc = malloc(n ? n : 1);
  if (!pc) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    if (pred_i32) pc[i] = pred_i32[i] >= 0 && pred_i32[i] < a->C ? (uint8_t)pred_i32[i] : 255;
    else pc[i] = rv_seg_reduce_label(pred_u8[i]);
  }
  rv_status st = seg_add(a, name, img, NULL, label, pc, h, w, ctx);
  free(pc);
  return st;
}

/* one pair of PNGs (+ the image path for a thumbnail); the checks of rv_ade20k_add_pair */
static rv_status add_pair(rv_seg_analysis *a, const char *name, const char *pred_png, const char *gt_png,
                          const char *img_path, rv_ade_pred_format fmt, rv_ctx *ctx) {
  rv_image p = {0}, g = {0};
  const int C = a->C;
  rv_status st = rv_image_read_gray(gt_png, &g, ctx);
  if (st == RV_OK) st = rv_image_read_gray(pred_png, &p, ctx);
  if (st == RV_OK && (p.h != g.h || p.w != g.w))
    st = rv_error(ctx, RV_ERR_SHAPE, "%s is %dx%d but %s is %dx%d (width x height)", pred_png, p.w, p.h, gt_png, g.w, g.h);
  size_t n = (size_t)g.h * g.w;
  for (size_t i = 0; st == RV_OK && i < n; i++) {
    int v = g.data[i];
    if (!(v <= C || v == 255))
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: label %d at x=%zu y=%zu (ADE20K labels are 0..%d or 255)", gt_png, v,
                    i % (size_t)g.w, i / (size_t)g.w, C);
    else if (fmt == RV_ADE_PRED_ANNOTATION && p.data[i] > C)
      st = rv_error(ctx, RV_ERR_FORMAT,
                    "%s: prediction %d at x=%zu y=%zu (expected 0..%d, k = class k-1; use --pred-zero-based for class "
                    "indices)",
                    pred_png, p.data[i], i % (size_t)g.w, i / (size_t)g.w, C);
  }
  if (st == RV_OK) {
    if (fmt == RV_ADE_PRED_ANNOTATION)
      for (size_t i = 0; i < n; i++) p.data[i] = rv_seg_reduce_label(p.data[i]);
    st = seg_add(a, name, NULL, img_path, g.data, p.data, g.h, g.w, ctx);
  }
  rv_image_free(&p);
  rv_image_free(&g);
  return st;
}

rv_status rv_seg_analysis_add_dirs(rv_seg_analysis *a, const char *pred_dir, const char *gt_dir, const char *img_dir,
                                   rv_ade_pred_format fmt, size_t *n_images, rv_ctx *ctx) {
  rv_name_list gl;
  if (n_images) *n_images = 0;
  RV_TRY(rv_list_files(&gl, gt_dir, ".png", ctx));
  rv_status st = RV_OK;
  if (gl.n == 0) st = rv_error(ctx, RV_ERR_NOTFOUND, "%s: no .png label maps", gt_dir);
  for (size_t i = 0; st == RV_OK && i < gl.n; i++) {
    char pp[4096];
    struct stat sb;
    snprintf(pp, sizeof pp, "%s/%s", pred_dir, gl.names[i]);
    if (stat(pp, &sb) != 0) st = rv_error(ctx, RV_ERR_NOTFOUND, "%s: missing prediction for %s/%s", pp, gt_dir, gl.names[i]);
  }
  long first_bad = -1;
  int nth = a->p.threads > 0 ? a->p.threads : omp_get_max_threads();
  if (st == RV_OK) {
#pragma omp parallel num_threads(nth)
    {
      rv_ctx *tctx = rv_ctx_create();
#pragma omp for schedule(dynamic, 4)
      for (long i = 0; i < (long)gl.n; i++) {
        const char *nm = gl.names[i];
        size_t stem = strlen(nm) - 4;
        char pp[4096], gp[4096], ip[4096];
        snprintf(pp, sizeof pp, "%s/%s", pred_dir, nm);
        snprintf(gp, sizeof gp, "%s/%s", gt_dir, nm);
        if (img_dir) snprintf(ip, sizeof ip, "%s/%.*s.jpg", img_dir, (int)stem, nm);
        char stem_name[1024];
        snprintf(stem_name, sizeof stem_name, "%.*s", (int)stem, nm);
        if (!tctx || add_pair(a, stem_name, pp, gp, img_dir ? ip : NULL, fmt, tctx) != RV_OK) {
#pragma omp critical(rv_seg_analysis_bad)
          if (first_bad < 0 || i < first_bad) first_bad = i;
        }
      }
      rv_ctx_free(tctx);
    }
    if (first_bad >= 0) { /* the first failing pair again, serially, for its message */
      char pp[4096], gp[4096];
      snprintf(pp, sizeof pp, "%s/%s", pred_dir, gl.names[first_bad]);
      snprintf(gp, sizeof gp, "%s/%s", gt_dir, gl.names[first_bad]);
      rv_seg_analysis *tmp = NULL;
      st = rv_seg_analysis_create(&tmp, a->C, NULL, &a->p, ctx);
      if (st == RV_OK) st = add_pair(tmp, gl.names[first_bad], pp, gp, NULL, fmt, ctx);
      if (st == RV_OK) st = rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", gp);
      rv_seg_analysis_free(tmp);
    } else if (n_images)
      *n_images = gl.n;
  }
  rv_name_list_free(&gl);
  return st;
}

rv_status rv_seg_analysis_json(const rv_seg_analysis *a, char **json, rv_ctx *ctx) {
  *json = NULL;
  rv_seg_metrics m = {0};
  RV_TRY(rv_seg_metrics_compute(&m, &a->areas, ctx));
  const int C = a->C;
  cJSON *root = cJSON_CreateObject();
  rv_status st = RV_OK;
  if (root) {
    cJSON_AddStringToObject(root, "report", "ade20k");
    rv_jadd_num(root, "aAcc", m.aAcc);
    rv_jadd_num(root, "mIoU", m.mIoU);
    rv_jadd_num(root, "mAcc", m.mAcc);
    cJSON_AddItemToObject(root, "IoU", rv_jarr_num(m.iou, (size_t)C));
    cJSON_AddItemToObject(root, "Acc", rv_jarr_num(m.acc, (size_t)C));
    cJSON_AddItemToObject(root, "names", cJSON_CreateStringArray((const char *const *)a->names, C));
    rv_jadd_num(root, "images", (double)a->n_images);
    cJSON *c = cJSON_AddObjectToObject(root, "confusion");
    cJSON *rows = cJSON_AddArrayToObject(c, "counts");
    for (int r = 0; rows && r < C; r++) cJSON_AddItemToArray(rows, rv_jarr_i64(a->confusion + (size_t)r * C, (size_t)C));
    cJSON *w = cJSON_AddArrayToObject(root, "worst_images");
    for (int i = 0; w && i < a->n_worst; i++) {
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "name", a->worst[i].name);
      rv_jadd_num(e, "mIoU", a->worst[i].miou);
      if (a->worst[i].thumb) cJSON_AddStringToObject(e, "thumbnail", a->worst[i].thumb);
      cJSON_AddItemToArray(w, e);
    }
    *json = cJSON_PrintUnformatted(root);
  }
  if (!*json) st = rv_error(ctx, RV_ERR_NOMEM, "analysis: out of memory");
  cJSON_Delete(root);
  rv_seg_metrics_free(&m);
  return st;
}

const rv_seg_areas *rv_seg_analysis_areas(const rv_seg_analysis *a) { return &a->areas; }
size_t rv_seg_analysis_count(const rv_seg_analysis *a) { return a->n_images; }
