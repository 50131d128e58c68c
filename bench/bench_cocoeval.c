/* COCO evaluation benchmark (not a test): load + evaluate + accumulate for bbox and segm.
 *
 *   bench_cocoeval DIR [THREADS=2]     # DIR holds gt.json, dt_bbox.json, dt_segm.json
 *
 * Prints the time of each phase and the 12 stats (also written to DIR/c_bbox.json, c_segm.json) (bash bench/bench_cocoeval.sh builds the
 * generator and this program, creates the COCO-scale set and runs both thread counts). */
#include "datasets/coco.h"
#include "eval/cocoeval.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int run(const char *dir, rv_iou_type t, int threads, rv_ctx *ctx) {
  char p[4096];
  const char *name = t == RV_IOU_BBOX ? "bbox" : "segm";
  double t0 = now();
  rv_coco *gt = NULL;
  snprintf(p, sizeof p, "%s/gt.json", dir);
  if (rv_coco_load(&gt, p, t == RV_IOU_SEGM, threads, ctx) != RV_OK) goto fail;
  double t1 = now();
  rv_coco_results res;
  snprintf(p, sizeof p, "%s/dt_%s.json", dir, name);
  if (rv_coco_load_results(&res, gt, p, t, RV_COCO_AREA_BOX, threads, ctx) != RV_OK) goto fail;
  double t2 = now();
  int64_t *img = malloc(sizeof(int64_t) * gt->n_images), *cat = malloc(sizeof(int64_t) * gt->n_cats);
  for (size_t i = 0; i < gt->n_images; i++) img[i] = gt->images[i].id;
  for (size_t i = 0; i < gt->n_cats; i++) cat[i] = gt->cats[i].id;
  rv_cocoeval_input in = {img, gt->n_images, cat, gt->n_cats, gt->anns, gt->n_anns, res.dets, res.n};
  rv_cocoeval_params prm = rv_cocoeval_default_params(t);
  prm.threads = threads;
  rv_cocoeval *ev = NULL;
  if (rv_cocoeval_evaluate(&ev, &prm, &in, ctx) != RV_OK) goto fail;
  double t3 = now();
  if (rv_cocoeval_accumulate(ev, ctx) != RV_OK) goto fail;
  double t4 = now();
  double s[12];
  rv_cocoeval_summarize(ev, s);
  double t5 = now();
  printf("%s threads=%d: %zu gt, %zu dets | load gt %.2f s, load results %.2f s, evaluate %.2f s, "
         "accumulate %.2f s, summarize %.3f s | evaluate+accumulate %.2f s, total %.2f s | AP %.4f AR100 %.4f\n",
         name, threads, gt->n_anns, res.n, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t4 - t2, t5 - t0, s[0], s[8]);
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
    fprintf(stderr, "usage: bench_cocoeval DIR [THREADS=2]\n");
    return 2;
  }
  int threads = argc > 2 ? atoi(argv[2]) : 2;
  rv_ctx *ctx = rv_ctx_create();
  int rc = run(argv[1], RV_IOU_BBOX, threads, ctx) || run(argv[1], RV_IOU_SEGM, threads, ctx);
  rv_ctx_free(ctx);
  return rc;
}
