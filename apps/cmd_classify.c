/* `ravlt classify --weights W.pth [--size 224] [--top K] [--json FILE|-] IMAGE...`: ImageNet top-K
 * with the RAVLT classifier (official classfication/RALA.py checkpoints). Preprocessing is
 * the official eval transform (datasets/preprocess.h rv_preprocess_imagenet: resize the
 * short side to 256/224 * size with PIL bicubic, center crop, normalise). */
#include "apps/cli.h"
#include "core/ops.h"
#include "apps/model_args.h"
#include "apps/model_run.h"
#include "backbone/ravlt.h"
#include "core/image.h"
#include "datasets/classes.h"
#include "datasets/preprocess.h"
#include "apps/commands.h"
#include "nn/param.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *weights, *json;
  int size, top, strict;
  const char *precision;
} classify_opts;

static const rv_opt OPTS[] = {
    {"--weights", NULL, RV_OPT_STR, offsetof(classify_opts, weights), 0, 0, NULL, "W", "checkpoint (required)", 0},
    {"--size", NULL, RV_OPT_INT, offsetof(classify_opts, size), 32, 4096, NULL, "N",
     "crop size 32..4096 (default 224; the short side is resized to 256/224 * N)", 0},
    {"--top", NULL, RV_OPT_INT, offsetof(classify_opts, top), 1, 1000, NULL, "K", "classes to print, 1..1000 (default 5)", 0},
    {"--json", NULL, RV_OPT_STR, offsetof(classify_opts, json), 0, 0, NULL, "FILE",
     "write [{\"image\", \"top\": [{\"index\", \"label\", \"prob\"}]}] (one object per\n"
     "image) to FILE ('-': stdout, instead of the table)", 0},
    RV_CLI_PRECISION_OPT(classify_opts, precision),
    RV_OPT_STRICT(classify_opts, strict),
    RV_OPT_END};

const rv_cmd_spec rv_spec_classify = {
    "classify", "--weights W [--size N] [--top K] [--json FILE|-] IMAGE...",
    "ImageNet classification with a RAVLT classifier checkpoint (.pth as saved by the\n"
    "official classification code, a bare state_dict, or .safetensors). The architecture\n"
    "(T/S/B/L or other) is read from the weights. Prints the top K classes per image with\n"
    "softmax probabilities.\n",
    OPTS, -1, NULL,
    "  ravlt classify --weights ravlt_s.pth cat.jpg dog.jpg\n"
    "  ravlt classify --weights ravlt_s.pth --top 3 --json - cat.jpg\n",
    sizeof(classify_opts)};

int rv_cmd_classify(int argc, char **argv) {
  const char *cmd = "classify";
  classify_opts co = {NULL, NULL, 224, 5, 0, NULL};
  int nimg;
  int prc = rv_cli_parse(&rv_spec_classify, &co, argc, argv, &nimg);
  if (prc >= 0) return prc;
  char **imgs = argv;
  const char *weights = co.weights;
  int size = co.size, top = co.top;
  cJSON *jarr = NULL;
  if (!weights) { return rv_cli_usage_error(cmd, "--weights W is required"); }
  if (nimg == 0) { return rv_cli_usage_error(cmd, "no IMAGE given"); }
  rv_blas_init(); /* OpenBLAS kernels for this CPU (core/ops.h) */
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  int rc = 1;
  rv_ravlt_config cfg;
  rv_weights *w = NULL;
  rv_ravlt *m = NULL;
  rv_arena *arena = rv_arena_create(0);
  float *prob = NULL;
  int *order = NULL;
  if (co.json && !(jarr = cJSON_CreateArray())) { fprintf(stderr, "ravlt %s: out of memory\n", cmd); goto done; }
  rv_status st = rv_model_config(weights, &cfg, &w, ctx);
  if (st == RV_OK && !w) st = rv_error(ctx, RV_ERR_ARG, "--weights '%s' is not a file", weights);
  if (st != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
  if (!cfg.classifier) {
    rc = rv_cli_fail(ctx, cmd, rv_error(ctx, RV_ERR_MODEL, "%s: no classifier head (proj/norm/head keys): "
                                        "a backbone checkpoint cannot classify", weights));
    goto done;
  }
  /* every key the classifier does not use: a warning, an error with --strict */
  rv_params P;
  if ((st = rv_params_init(&P, w, ctx)) == RV_OK) {
    st = rv_ravlt_create_params(&m, &cfg, &P, NULL, ctx);
    if (st == RV_OK) st = rv_params_check_unused(&P, NULL, co.strict, "classifier", ctx);
    rv_params_free(&P);
  }
  if (st == RV_OK) st = rv_cli_set_backbone_precision(m, co.precision, ctx);
  if (st != RV_OK) { rc = rv_cli_fail(ctx, cmd, st); goto done; }
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
    if (jarr) {
      cJSON *jo = cJSON_CreateObject();
      cJSON_AddStringToObject(jo, "image", imgs[i]);
      cJSON *jt = cJSON_AddArrayToObject(jo, "top");
      for (int a = 0; a < top; a++) {
        int c = order[a];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", c);
        cJSON_AddStringToObject(e, "label", K == RV_IMAGENET_NUM_CLASSES ? rv_imagenet_classes[c] : "");
        cJSON_AddNumberToObject(e, "prob", (double)prob[c]);
        cJSON_AddItemToArray(jt, e);
      }
      cJSON_AddItemToArray(jarr, jo);
    }
    if (!rv_cli_json_stdout(co.json)) {
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
  if (jarr) {
    char *txt = cJSON_PrintUnformatted(jarr);
    st = txt ? rv_cli_json_write(co.json, txt, ctx) : rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    free(txt);
    if (st != RV_OK) rc = rv_cli_fail(ctx, cmd, st);
  }
done:
  cJSON_Delete(jarr);
  rv_weights_free(w);
  rv_ravlt_free(m);
  rv_arena_free(arena);
  free(prob);
  free(order);
  rv_ctx_free(ctx);
  return rc;
}
