/* `ravlt classify --weights W.pth [--size 224] [--top K] [--json] IMAGE...`: ImageNet top-K
 * with the RAVLT classifier (official classfication/RALA.py checkpoints). Preprocessing is
 * the official eval transform (datasets/preprocess.h rv_preprocess_imagenet: resize the
 * short side to 256/224 * size with PIL bicubic, center crop, normalise). */
#include "apps/cli.h"
#include "core/ops.h"
#include "apps/model_args.h"
#include "backbone/ravlt.h"
#include "core/image.h"
#include "datasets/classes.h"
#include "datasets/preprocess.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *USAGE =
    "usage: ravlt classify --weights W [--size N] [--top K] [--json] IMAGE...\n"
    "\n"
    "ImageNet classification with a RAVLT classifier checkpoint (.pth as saved by the\n"
    "official classification code, a bare state_dict, or .safetensors). The architecture\n"
    "(T/S/B/L or other) is read from the weights. Prints the top K classes per image with\n"
    "softmax probabilities.\n"
    "\n"
    "  --weights W   checkpoint (required)\n"
    "  --size N      crop size (default 224; the short side is resized to 256/224 * N)\n"
    "  --top K       classes to print (default 5)\n"
    "  --json        one JSON object per image: {\"image\", \"top\": [{\"index\", \"label\", \"prob\"}]}\n";

static void json_str(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", (unsigned char)*s);
    else putchar(*s);
  }
  putchar('"');
}

int rv_cmd_classify(int argc, char **argv) {
  const char *cmd = "classify";
  const char *weights = NULL;
  int size = 224, top = 5, json = 0, nimg = 0;
  const char **imgs = calloc((size_t)argc, sizeof *imgs);
  if (!imgs) return 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (rv_cli_is_help(a)) { fputs(USAGE, stdout); free(imgs); return 0; }
    if (strcmp(a, "--json") == 0) json = 1;
    else if (strcmp(a, "--weights") == 0 && i + 1 < argc) weights = argv[++i];
    else if (strcmp(a, "--size") == 0 && i + 1 < argc) {
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < 32 || v > 4096) { free(imgs); return rv_cli_usage_error(cmd, "--size needs 32..4096"); }
      size = (int)v;
    } else if (strcmp(a, "--top") == 0 && i + 1 < argc) {
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < 1 || v > 1000) { free(imgs); return rv_cli_usage_error(cmd, "--top needs 1..1000"); }
      top = (int)v;
    } else if (a[0] == '-' && a[1]) { free(imgs); return rv_cli_usage_error(cmd, "unknown option '%s'", a); }
    else imgs[nimg++] = a;
  }
  if (!weights) { free(imgs); return rv_cli_usage_error(cmd, "--weights W is required"); }
  if (nimg == 0) { free(imgs); return rv_cli_usage_error(cmd, "no IMAGE given"); }
  rv_blas_init(); /* OpenBLAS kernels for this CPU (core/ops.h) */
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) { free(imgs); return 1; }
  int rc = 1;
  rv_ravlt_config cfg;
  rv_weights *w = NULL;
  rv_ravlt *m = NULL;
  rv_arena *arena = rv_arena_create(0);
  float *prob = NULL;
  int *order = NULL;
  rv_status st = rv_model_config(weights, &cfg, &w, ctx);
  if (st == RV_OK && !w) st = rv_error(ctx, RV_ERR_ARG, "--weights '%s' is not a file", weights);
  if (st != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
  if (!cfg.classifier) {
    rc = rv_cli_fail(ctx, cmd, rv_error(ctx, RV_ERR_MODEL, "%s: no classifier head (proj/norm/head keys): "
                                        "a backbone checkpoint cannot classify", weights));
    goto done;
  }
  if ((st = rv_ravlt_create(&m, &cfg, w, NULL, ctx)) != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
  rv_weights_free(w);
  w = NULL;
  const int K = cfg.num_classes;
  if (top > K) top = K;
  prob = malloc(sizeof(float) * (size_t)K);
  order = malloc(sizeof(int) * (size_t)K);
  if (!arena || !prob || !order) { fprintf(stderr, "ravlt %s: out of memory\n", cmd); goto done; }
  int failed = 0;
  for (int i = 0; i < nimg; i++) {
    rv_arena_reset(arena);
    rv_image img;
    memset(&img, 0, sizeof img);
    rv_tensor x, logits;
    st = rv_image_read(imgs[i], &img, ctx);
    if (st == RV_OK) st = rv_preprocess_imagenet(&x, &img, size, arena, ctx);
    rv_image_free(&img);
    if (st == RV_OK) st = rv_ravlt_classify(m, arena, x, &logits, ctx);
    if (st != RV_OK) {
      fprintf(stderr, "ravlt %s: %s: %s\n", cmd, imgs[i], rv_ctx_errmsg(ctx));
      failed++;
      continue;
    }
    /* softmax (double accumulation) and partial selection of the top K */
    double mx = -INFINITY, sum = 0;
    for (int c = 0; c < K; c++) if (logits.data[c] > mx) mx = logits.data[c];
    for (int c = 0; c < K; c++) { prob[c] = (float)exp(logits.data[c] - mx); sum += prob[c]; }
    for (int c = 0; c < K; c++) { prob[c] = (float)(prob[c] / sum); order[c] = c; }
    for (int a = 0; a < top; a++) {
      int best = a;
      for (int c = a + 1; c < K; c++)
        if (prob[order[c]] > prob[order[best]] ||
            (prob[order[c]] == prob[order[best]] && order[c] < order[best]))
          best = c;
      int t = order[a];
      order[a] = order[best];
      order[best] = t;
    }
    if (json) {
      printf("{\"image\":");
      json_str(imgs[i]);
      printf(",\"top\":[");
      for (int a = 0; a < top; a++) {
        int c = order[a];
        printf("%s{\"index\":%d,\"label\":", a ? "," : "", c);
        json_str(K == RV_IMAGENET_NUM_CLASSES ? rv_imagenet_classes[c] : "");
        printf(",\"prob\":%.6g}", prob[c]);
      }
      printf("]}\n");
    } else {
      printf("%s:\n", imgs[i]);
      for (int a = 0; a < top; a++) {
        int c = order[a];
        printf("  %6.2f%%  %4d  %s\n", 100.0 * prob[c], c,
               K == RV_IMAGENET_NUM_CLASSES ? rv_imagenet_classes[c] : "");
      }
    }
    fflush(stdout);
  }
  rc = failed ? 1 : 0;
done:
  rv_weights_free(w);
  rv_ravlt_free(m);
  rv_arena_free(arena);
  free(prob);
  free(order);
  free(imgs);
  rv_ctx_free(ctx);
  return rc;
}
