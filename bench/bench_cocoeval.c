/* COCO evaluation benchmark (not a test): load + evaluate + accumulate for bbox and segm.
 *
 *   bench_cocoeval DIR [THREADS=2] [bbox|segm]   # DIR holds gt.json, dt_bbox.json, dt_segm.json
 *
 * Prints the wall and CPU time of each phase, a digest of the accumulated precision and recall
 * arrays (equal digests: bit-identical arrays) and the 12 stats (also written with the
 * per-category APs to DIR/c_bbox.json, c_segm.json). bash bench/bench_cocoeval.sh builds the
 * generator and this program, creates the COCO-scale set and runs both thread counts. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "datasets/coco.h"
#include "eval/cocoeval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); } /* all threads */

/* FNV-1a over the bytes of the accumulated arrays: equal digests = bit-identical arrays */
static uint64_t digest(const void *p, size_t n, uint64_t h) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

static int run(const char *dir, rv_iou_type t, int threads, rv_ctx *ctx) {
  char p[4096];
  const char *name = t == RV_IOU_BBOX ? "bbox" : "segm";
  double t0 = now(), c0 = cpu();
  rv_coco *gt = NULL;
  snprintf(p, sizeof p, "%s/gt.json", dir);
  if (rv_coco_load(&gt, p, t == RV_IOU_SEGM, threads, ctx) != RV_OK) goto fail;
  double t1 = now(), c1 = cpu();
  rv_coco_results res;
  snprintf(p, sizeof p, "%s/dt_%s.json", dir, name);
  if (rv_coco_load_results(&res, gt, p, t, RV_COCO_AREA_BOX, threads, ctx) != RV_OK) goto fail;
  double t2 = now(), c2 = cpu();
  int64_t *img = malloc(sizeof(int64_t) * gt->n_images), *cat = malloc(sizeof(int64_t) * gt->n_cats);
  for (size_t i = 0; i < gt->n_images; i++) img[i] = gt->images[i].id;
  for (size_t i = 0; i < gt->n_cats; i++) cat[i] = gt->cats[i].id;
  rv_cocoeval_input in = {img, gt->n_images, cat, gt->n_cats, gt->anns, gt->n_anns, res.dets, res.n};
  rv_cocoeval_params prm = rv_cocoeval_default_params(t);
  prm.threads = threads;
  rv_cocoeval *ev = NULL;
  if (rv_cocoeval_evaluate(&ev, &prm, &in, ctx) != RV_OK) goto fail;
  double t3 = now(), c3 = cpu();
  if (rv_cocoeval_accumulate(ev, ctx) != RV_OK) goto fail;
  double t4 = now(), c4 = cpu();
  double s[12];
  rv_cocoeval_summarize(ev, s);
  double t5 = now(), c5 = cpu();
  printf("%s threads=%d: %zu gt, %zu dets | load gt %.2f s, load results %.2f s, evaluate %.2f s, "
         "accumulate %.2f s, summarize %.3f s | evaluate+accumulate %.2f s, total %.2f s | AP %.4f AR100 %.4f\n",
         name, threads, gt->n_anns, res.n, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t4 - t2, t5 - t0, s[0], s[8]);
  printf("%s threads=%d CPU (all threads): load gt %.2f s, load results %.2f s, evaluate %.2f s, accumulate %.2f s, "
         "total %.2f s\n",
         name, threads, c1 - c0, c2 - c1, c3 - c2, c4 - c3, c5 - c0);
  const rv_cocoeval_params *pp = rv_cocoeval_get_params(ev);
  size_t K = rv_cocoeval_num_cats(ev), cells = (size_t)pp->n_iou * K * pp->n_areas * pp->n_max_dets;
  uint64_t h = digest(rv_cocoeval_precision(ev), sizeof(double) * cells * pp->n_rec, 14695981039346656037ULL);
  printf("%s digest of precision + recall: %016llx\n", name,
         (unsigned long long)digest(rv_cocoeval_recall(ev), sizeof(double) * cells, h));
  char text[4096];
  rv_cocoeval_summary_text(ev, text, sizeof text);
  fputs(text, stdout);
  snprintf(p, sizeof p, "%s/c_%s.json", dir, name); /* full-precision stats for comparisons */
  FILE *f = fopen(p, "w");
  if (f) {
    fprintf(f, "{\"stats\": [");
    for (int i = 0; i < 12; i++) fprintf(f, "%s%.17g", i ? ", " : "", s[i]);
    fprintf(f, "], \"per_category\": {");
    for (size_t k = 0; k < rv_cocoeval_num_cats(ev); k++)
      fprintf(f, "%s\"%lld\": %.17g", k ? ", " : "", (long long)rv_cocoeval_cat_id(ev, k), rv_cocoeval_category_ap(ev, k));
    fprintf(f, "}}\n");
    fclose(f);
  }
  fflush(stdout);
  rv_cocoeval_free(ev);
  free(img);
  free(cat);
  rv_coco_results_free(&res);
  rv_coco_free(gt);
  return 0;
fail:
  fprintf(stderr, "bench_cocoeval: %s\n", rv_ctx_errmsg(ctx));
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_cocoeval DIR [THREADS=2] [bbox|segm (default both)]\n");
    return 2;
  }
  int threads = argc > 2 ? atoi(argv[2]) : 2;
  rv_ctx *ctx = rv_ctx_create();
  const char *only = argc > 3 ? argv[3] : "";
  int rc = (strcmp(only, "segm") != 0 && run(argv[1], RV_IOU_BBOX, threads, ctx)) ||
           (strcmp(only, "bbox") != 0 && run(argv[1], RV_IOU_SEGM, threads, ctx));
  rv_ctx_free(ctx);
  return rc;
}
