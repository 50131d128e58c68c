/* rv_check_segmentor_head: check-fixture for the segmentation head fixtures (kinds
 * "upernet", "semantic_fpn"): the stored backbone features feat.0..3 go through the neck and
 * decode head; FPN outputs, 1/4 logits, logits at the input size and at the original size
 * are compared (rv_check_tensor, 1e-4 of scale), then the label map.
 *
 * Label rule: seg_pred must equal the reference at every pixel where the reference top-1 /
 * top-2 softmax probability margin exceeds 1e-4 (margin from seg_probs_ori when stored,
 * else from the softmax of seg_logits_ori); pixels below that margin may flip between
 * float32 and float64 and are reported but not counted. */
#include "apps/check_fixture.h"
#include "eval/compare.h"
#include "models/family.h"
#include "models/segmentor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_MARGIN 1e-4
#define TENSOR_TOL 1e-4

static cJSON *jpath(cJSON *root, const char *a, const char *b) {
  cJSON *x = cJSON_GetObjectItemCaseSensitive(root, a);
  return b && x ? cJSON_GetObjectItemCaseSensitive(x, b) : x;
}

/* Fill up to cap ints from a JSON array; returns the count or -1. */
static int json_ints(cJSON *arr, int *out, int cap) {
  if (!cJSON_IsArray(arr)) return -1;
  int n = 0;
  cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    if (!cJSON_IsNumber(e) || n >= cap) return -1;
    out[n++] = e->valueint;
  }
  return n;
}

static int json_int(cJSON *x, int dflt) { return cJSON_IsNumber(x) ? x->valueint : dflt; }

int rv_check_segmentor_head(rv_check_state *s) {
  rv_ctx *ctx = s->ctx;
  cJSON *kind = cJSON_GetObjectItemCaseSensitive(s->config, "kind");
  const char *k = cJSON_IsString(kind) ? kind->valuestring : "";
  rv_seg_decoder_config dc = rv_seg_decoder_default_config();
  const rv_family *fam = rv_family_by_arch(k);
  if (!fam || fam->task != RV_TASK_SEGMENT)
    return rv_error(ctx, RV_ERR_ARG, "%s: kind '%s' is not a segmentation head fixture", s->dir, k);
  dc.arch = (rv_seg_arch)fam->id;

  /* What the config states explicitly overrides the defaults; the rest comes from the weights. */
  cJSON *model = jpath(s->config, "model", NULL);
  cJSON *head = model ? jpath(model, "decode_head", NULL) : NULL;
  cJSON *neck = model ? jpath(model, "neck", NULL) : NULL;
  if (head) {
    dc.num_classes = json_int(jpath(head, "num_classes", NULL), -1);
    int v[RV_UPER_MAX_SCALES];
    int n = json_ints(jpath(head, "pool_scales", NULL), v, RV_UPER_MAX_SCALES);
    if (n > 0) {
      dc.uper.num_pool_scales = n;
      memcpy(dc.uper.pool_scales, v, (size_t)n * sizeof(int));
    }
    int fs[RV_FPN_HEAD_MAX_LEVELS];
    n = json_ints(jpath(head, "feature_strides", NULL), fs, RV_FPN_HEAD_MAX_LEVELS);
    if (n > 0) {
      dc.fpn_head.num_levels = n;
      memcpy(dc.fpn_head.feature_strides, fs, (size_t)n * sizeof(int));
    }
  }
  if (neck) {
    dc.fpn.num_outs = json_int(jpath(neck, "num_outs", NULL), dc.fpn.num_outs);
    dc.fpn.start_level = json_int(jpath(neck, "start_level", NULL), 0);
  }
  int ori[3] = {0}, img[3] = {0};
  cJSON *meta = jpath(s->config, "img_meta", NULL);
  if (json_ints(jpath(meta, "ori_shape", NULL), ori, 3) < 2 || json_ints(jpath(meta, "img_shape", NULL), img, 3) < 2)
    return rv_error(ctx, RV_ERR_FORMAT, "%s/config.json: img_meta.ori_shape / img_shape missing", s->dir);

  rv_seg_decoder *dec = NULL;
  RV_TRY(rv_seg_decoder_load(&dec, &dc, s->weights, ctx));
  const int nin = rv_seg_decoder_num_inputs(dec), C = rv_seg_decoder_num_classes(dec);
  if (s->verbose)
    printf("  model: %s, %d classes, %d inputs\n", rv_seg_arch_name(rv_seg_decoder_arch(dec)), C, nin);

  rv_status st = RV_OK;
  float *feat_data[RV_FPN_MAX_LEVELS] = {0};
  rv_tensor feats[RV_FPN_MAX_LEVELS];
  for (int i = 0; i < nin && st == RV_OK; i++) {
    char name[32];
    snprintf(name, sizeof name, "feat.%d", i);
    const rv_wtensor *t = rv_weights_find(s->io, name);
    size_t n = 0;
    if (!t || t->ndim != 4) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: io has no 4-d input '%s'", s->dir, name);
      break;
    }
    feat_data[i] = rv_check_load_f32(s, name, &n);
    if (!feat_data[i]) {
      st = rv_error(ctx, RV_ERR_NOMEM, "cannot load '%s'", name);
      break;
    }
    feats[i] = (rv_tensor){feat_data[i], (int)t->shape[0], (int)t->shape[1], (int)t->shape[2], (int)t->shape[3]};
  }
  rv_arena *a = rv_arena_create(0);
  int32_t *labels = NULL;
  float *ref = NULL, *margin = NULL;
  if (!a) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_tensor logits, neck_outs[2 * RV_FPN_MAX_LEVELS];
  if (st == RV_OK) st = rv_seg_decoder_forward(dec, &logits, feats, nin, neck_outs, a, ctx);
  if (st == RV_OK && rv_seg_decoder_fpn(dec)) { /* a family with an FPN neck */
    const rv_fpn_config *fc = rv_fpn_config_of(rv_seg_decoder_fpn(dec));
    for (int i = 0; i < fc->num_outs; i++) {
      char name[32];
      snprintf(name, sizeof name, "neck.out.%d", i);
      rv_check_tensor(s, name, neck_outs[i].data, rv_tensor_numel(neck_outs[i]), name, TENSOR_TOL);
    }
  }
  rv_tensor limg = {0}, lori = {0};
  if (st == RV_OK) {
    rv_check_tensor(s, "seg_logits", logits.data, rv_tensor_numel(logits), "seg_logits", TENSOR_TOL);
    limg = rv_tensor_new(a, 1, C, img[0], img[1]);
    lori = rv_tensor_new(a, 1, C, ori[0], ori[1]);
    labels = malloc((size_t)ori[0] * (size_t)ori[1] * sizeof *labels);
    margin = malloc((size_t)ori[0] * (size_t)ori[1] * sizeof *margin);
    if (!limg.data || !lori.data || !labels || !margin) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  if (st == RV_OK) {
    /* encode_decode: to the input tensor size; whole_inference: again to ori_shape */
    rv_resize_bilinear_f32(limg.data, logits.data, C, logits.h, logits.w, limg.h, limg.w);
    rv_check_tensor(s, "seg_logits_img", limg.data, rv_tensor_numel(limg), "seg_logits_img", TENSOR_TOL);
    rv_resize_bilinear_f32(lori.data, limg.data, C, limg.h, limg.w, lori.h, lori.w);
    rv_check_tensor(s, "seg_logits_ori", lori.data, rv_tensor_numel(lori), "seg_logits_ori", TENSOR_TOL);
    st = rv_seg_labels_from_logits(labels, limg, ori[0], ori[1], a, ctx);
  }
  if (st == RV_OK) {
    const size_t hw = (size_t)ori[0] * (size_t)ori[1];
    size_t n = 0;
    int is_prob = 1;
    const char *src = "seg_probs_ori";
    ref = rv_check_load_f32(s, "seg_probs_ori", &n);
    if (!ref) {
      is_prob = 0;
      src = "seg_logits_ori";
      ref = rv_check_load_f32(s, "seg_logits_ori", &n);
    }
    float *pred = NULL;
    size_t np = 0;
    if (ref && n == (size_t)C * hw) rv_seg_top2_margin(margin, ref, C, hw, is_prob);
    if (ref && n == (size_t)C * hw && (pred = rv_check_load_f32(s, "seg_pred", &np)) && np == hw) {
      rv_label_cmp c = rv_compare_labels(labels, pred, margin, LABEL_MARGIN, hw);
      size_t bad = c.bad, flips = c.differ, low = c.low;
      float min_margin = c.min_margin;
      rv_check_report(s, "seg_pred", bad == 0,
                      "[%d x %d]: %zu of %zu labels differ, %zu where the reference top-1/top-2 "
                      "probability margin (from %s) > %.0e (%zu pixels at or below it, min margin %.2e); "
                      "rule: labels must match wherever margin > %.0e",
                      ori[0], ori[1], flips, hw, bad, src, LABEL_MARGIN, low, (double)min_margin,
                      LABEL_MARGIN);
    } else {
      rv_check_report(s, "seg_pred", 0, "reference seg_pred [%d x %d] and %s [%d x %d x %d] needed", ori[0],
                      ori[1], src, C, ori[0], ori[1]);
    }
    free(pred);
  }
  free(ref);
  free(margin);
  free(labels);
  for (int i = 0; i < RV_FPN_MAX_LEVELS; i++) free(feat_data[i]);
  rv_arena_free(a);
  rv_seg_decoder_free(dec);
  return st;
}
