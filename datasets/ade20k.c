/* ADE20K folder helpers and label-PNG evaluation (see ade20k.h). */
#define _POSIX_C_SOURCE 200809L
#include "datasets/ade20k.h"
#include "formats/image.h"

#include <dirent.h>
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

rv_status rv_list_files(rv_name_list *out, const char *dir, const char *ext, rv_ctx *ctx) {
  memset(out, 0, sizeof *out);
  DIR *d = opendir(dir);
  if (!d) return rv_error(ctx, RV_ERR_IO, "%s: cannot open folder (%s)", dir, strerror(errno));
  size_t cap = 0, el = strlen(ext);
  struct dirent *e;
  rv_status st = RV_OK;
  while ((e = readdir(d))) {
    size_t nl = strlen(e->d_name);
    if (e->d_name[0] == '.' || nl < el || strcmp(e->d_name + nl - el, ext) != 0) continue;
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
    if (out->n == cap) {
      cap = cap ? 2 * cap : 256;
      char **nn = realloc(out->names, cap * sizeof *nn);
      if (!nn) {
        st = rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", dir);
        break;
      }
      out->names = nn;
    }
    if (!(out->names[out->n] = strdup(e->d_name))) {
      st = rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", dir);
      break;
    }
    out->n++;
  }
  closedir(d);
  if (st != RV_OK) {
    rv_name_list_free(out);
    return st;
  }
  if (out->n) qsort(out->names, out->n, sizeof *out->names, cmp_str);
  return RV_OK;
}

void rv_name_list_free(rv_name_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) free(l->names[i]);
  free(l->names);
  l->names = NULL;
  l->n = 0;
}

static int is_dir(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

rv_status rv_ade20k_layout(const char *root, char *img_dir, char *ann_dir, size_t cap, rv_ctx *ctx) {
  snprintf(img_dir, cap, "%s/images/validation", root);
  snprintf(ann_dir, cap, "%s/annotations/validation", root);
  if (!is_dir(img_dir) || !is_dir(ann_dir))
    return rv_error(ctx, RV_ERR_IO, "%s: not an ADE20K folder (expected images/validation and annotations/validation)",
                    root);
  return RV_OK;
}

rv_status rv_ade20k_add_pair(rv_seg_areas *acc, const char *pred_png, const char *gt_png, rv_ade_pred_format fmt,
                             rv_ctx *ctx) {
  rv_image p = {0}, g = {0};
  rv_status st = rv_image_read_gray(gt_png, &g, ctx);
  if (st == RV_OK) st = rv_image_read_gray(pred_png, &p, ctx);
  if (st != RV_OK) goto done;
  if (p.h != g.h || p.w != g.w) {
    st = rv_error(ctx, RV_ERR_SHAPE, "%s is %dx%d but %s is %dx%d (width x height)", pred_png, p.w, p.h, gt_png, g.w,
                  g.h);
    goto done;
  }
  const int C = acc->num_classes;
  size_t n = (size_t)g.h * g.w;
  for (size_t i = 0; i < n; i++) {
    int v = g.data[i];
    if (!(v <= C || v == 255)) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: label %d at x=%zu y=%zu (ADE20K labels are 0..%d or 255)", gt_png, v,
                    i % (size_t)g.w, i / (size_t)g.w, C);
      goto done;
    }
    v = p.data[i]; /* zero-based: any value >= C is "no class", as in mmseg (torch.histc range) */
    if (fmt == RV_ADE_PRED_ANNOTATION && v > C) {
      st = rv_error(ctx, RV_ERR_FORMAT,
                    "%s: prediction %d at x=%zu y=%zu (expected 0..%d, k = class k-1; use --pred-zero-based for "
                    "class indices)",
                    pred_png, v, i % (size_t)g.w, i / (size_t)g.w, C);
      goto done;
    }
  }
  if (fmt == RV_ADE_PRED_ANNOTATION) /* same convention as the labels: 0 -> no class */
    for (size_t i = 0; i < n; i++) p.data[i] = rv_seg_reduce_label(p.data[i]);
  rv_seg_areas_add_u8(acc, p.data, g.data, n, 1, 255);
done:
  rv_image_free(&p);
  rv_image_free(&g);
  return st;
}

rv_status rv_ade20k_eval_dirs(rv_seg_areas *acc, const char *pred_dir, const char *gt_dir, rv_ade_pred_format fmt,
                              int threads, size_t *n_images, rv_ctx *ctx) {
  rv_name_list gl;
  if (n_images) *n_images = 0;
  RV_TRY(rv_list_files(&gl, gt_dir, ".png", ctx));
  if (gl.n == 0) {
    rv_name_list_free(&gl);
    return rv_error(ctx, RV_ERR_NOTFOUND, "%s: no .png label maps", gt_dir);
  }
  size_t n = gl.n;
  char **pp = calloc(n, sizeof *pp), **gp = calloc(n, sizeof *gp);
  rv_status st = RV_OK;
  if (!pp || !gp) {
    st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    size_t lp = strlen(pred_dir) + strlen(gl.names[i]) + 2, lg = strlen(gt_dir) + strlen(gl.names[i]) + 2;
    pp[i] = malloc(lp);
    gp[i] = malloc(lg);
    if (!pp[i] || !gp[i]) {
      st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
      goto done;
    }
    snprintf(pp[i], lp, "%s/%s", pred_dir, gl.names[i]);
    snprintf(gp[i], lg, "%s/%s", gt_dir, gl.names[i]);
    struct stat sb;
    if (stat(pp[i], &sb) != 0) {
      st = rv_error(ctx, RV_ERR_NOTFOUND, "%s: missing prediction for %s", pp[i], gp[i]);
      goto done;
    }
  }
  int nth = threads > 0 ? threads : omp_get_max_threads();
  long first_bad = -1;
  int nomem = 0;
#pragma omp parallel num_threads(nth)
  {
    rv_seg_areas local;
    rv_ctx *tctx = rv_ctx_create();
    int ok = tctx && rv_seg_areas_init(&local, acc->num_classes, NULL) == RV_OK;
    if (!ok) {
#pragma omp atomic write
      nomem = 1;
    }
#pragma omp for schedule(dynamic, 4)
    for (long i = 0; i < (long)n; i++) {
      if (!ok) continue;
      if (rv_ade20k_add_pair(&local, pp[i], gp[i], fmt, tctx) != RV_OK) {
#pragma omp critical(rv_ade_bad)
        if (first_bad < 0 || i < first_bad) first_bad = i;
      }
    }
    if (ok) {
#pragma omp critical(rv_ade_merge)
      rv_seg_areas_merge(acc, &local);
      rv_seg_areas_free(&local);
    }
    rv_ctx_free(tctx);
  }
  if (nomem) {
    st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  } else if (first_bad >= 0) { /* redo serially for a deterministic message */
    rv_seg_areas tmp;
    st = rv_seg_areas_init(&tmp, acc->num_classes, ctx);
    if (st == RV_OK) {
      st = rv_ade20k_add_pair(&tmp, pp[first_bad], gp[first_bad], fmt, ctx);
      if (st == RV_OK) st = rv_error(ctx, RV_ERR_INTERNAL, "%s: evaluation failed", gp[first_bad]);
      rv_seg_areas_free(&tmp);
    }
  } else if (n_images)
    *n_images = n;
done:
  for (size_t i = 0; i < n; i++) {
    if (pp) free(pp[i]);
    if (gp) free(gp[i]);
  }
  free(pp);
  free(gp);
  rv_name_list_free(&gl);
  return st;
}
