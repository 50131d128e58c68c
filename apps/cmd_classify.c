/* `ravlt classify --weights W.pth [--size 224] [--top K] [--json FILE|-] IMAGE...`: ImageNet top-K
 * with the RAVLT classifier (official classfication/RALA.py checkpoints). Preprocessing is
 * the official eval transform (datasets/preprocess.h rv_preprocess_imagenet: resize the
 * short side to 256/224 * size with PIL bicubic, center crop, normalise). */
#include "apps/commands.h"
#include "apps/image_run.h"
#include "kernels/ops.h"
#include "datasets/classes.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  rv_model_opts mo;
  const char *json;
  int size, top;
} classify_opts;

static const rv_opt OPTS[] = {
    RV_MODEL_OPT_WEIGHTS(classify_opts, mo, "checkpoint (required)"),
    {"--size", NULL, RV_OPT_INT, offsetof(classify_opts, size), 32, 4096, NULL, "N",
     "crop size 32..4096 (the short side is resized to 256/224 * N)", 0, "224"},
    {"--top", NULL, RV_OPT_INT, offsetof(classify_opts, top), 1, 1000, NULL, "K", "classes to print, 1..1000", 0, "5"},
    {"--json", NULL, RV_OPT_STR, offsetof(classify_opts, json), 0, 0, NULL, "FILE",
     "write [{\"image\", \"top\": [{\"index\", \"label\", \"prob\"}]}] (one object per\n"
     "image) to FILE ('-': stdout, instead of the table)", 0},
    RV_MODEL_OPT_PRECISION(classify_opts, mo),
    RV_OPT_STRICT(classify_opts, mo.strict),
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

typedef struct {
  const classify_opts *o;
  int top;
  float *prob;
  int *order;
  cJSON *arr; /* --json */
} classify_run;

static rv_status prepare(void *user, rv_image_run *r, rv_ctx *ctx) {
  classify_run *u = user;
  const int K = r->model.num_classes;
  u->top = u->o->top < K ? u->o->top : K;
  if (!(u->prob = malloc(sizeof *u->prob * (size_t)K)) || !(u->order = malloc(sizeof *u->order * (size_t)K)) ||
      (u->o->json && !(u->arr = cJSON_CreateArray())))
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  return RV_OK;
}

/* One image: its top classes, printed as a table or added to the JSON array. */
static rv_status one(void *user, rv_image_run *r, size_t k, const char *path, rv_image *img, rv_ctx *ctx) {
  (void)k;
  classify_run *u = user;
  const int K = r->model.num_classes;
  RV_TRY(rv_task_classify(&r->model, img, u->o->size, r->arena, u->prob, u->order, u->top, ctx));
  if (u->arr) {
    cJSON *e = rv_task_classify_json(&r->model, path, u->prob, u->order, u->top);
    if (!e) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    cJSON_AddItemToArray(u->arr, e);
  }
  if (!rv_cli_json_stdout(u->o->json)) {
    printf("%s:\n", path);
    for (int a = 0; a < u->top; a++) {
      int c = u->order[a];
      printf("  %6.2f%%  %4d  %s\n", 100.0 * u->prob[c], c, K == RV_IMAGENET_NUM_CLASSES ? rv_imagenet_classes[c] : "");
    }
  }
  fflush(stdout);
  return RV_OK;
}

static rv_status finish(void *user, rv_image_run *r, rv_ctx *ctx) {
  (void)r;
  classify_run *u = user;
  if (!u->arr) return RV_OK;
  char *txt = cJSON_PrintUnformatted(u->arr);
  rv_status st = txt ? rv_cli_json_write(u->o->json, txt, ctx) : rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  free(txt);
  return st;
}

int rv_cmd_classify(int argc, char **argv) {
  classify_opts o = {0};
  int nimg;
  int prc = rv_cli_parse(&rv_spec_classify, &o, argc, argv, &nimg);
  if (prc >= 0) return prc;
  if (nimg == 0) return rv_cli_usage_error("classify", "no IMAGE given");
  rv_blas_init(); /* OpenBLAS kernels for this CPU (kernels/ops.h) */
  classify_run u = {&o};
  const char *outs[1] = {rv_cli_json_stdout(o.json) ? NULL : o.json};
  rv_image_cmd c = {{.cmd = "classify", .user = &u, .image = one}, RV_RUN_CLASSIFY, NULL, &o.mo, argv, nimg, NULL, NULL,
                    NULL, outs, 1, NULL, prepare, finish, NULL, NULL};
  int rc = rv_image_cmd_run(&c);
  free(u.prob);
  free(u.order);
  cJSON_Delete(u.arr);
  return rc;
}
