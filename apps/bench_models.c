/* Random whole dense models for `ravlt bench NAME --random-weights`. See bench_models.h. */
#include "apps/bench_models.h"

#include "models/family.h"
#include "apps/model_run.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* RetinaNet retina_cls bias: mmdet's init, prior 0.01 (-4.595), for every class but one,
 * which gets prior 0.1 (-2.197). With random weights the logits vary by a few hundredths
 * around the bias, so no score passes score_thr 0.05 at mmdet's init; this way the one
 * class's nms_pre (1000) best anchors of each level do: ~4700 candidates into NMS at
 * 800x1344, 100 detections after it. */
#define RETINA_PRIOR_BIAS (-4.595f)
#define RETINA_HOT_BIAS (-2.197f)

typedef struct {
  rv_weights *w;
  uint64_t rng;
  rv_status st;
  rv_ctx *ctx;
} gen;

static float frand(gen *g) { /* [-1, 1) */
  g->rng ^= g->rng << 13;
  g->rng ^= g->rng >> 7;
  g->rng ^= g->rng << 17;
  return (float)((g->rng >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}

/* weights (ndim >= 2) ~ U(-1,1)/sqrt(fan_in); vectors uniform in [lo, hi] */
static void add(gen *g, const char *name, int ndim, const int64_t *shape, float lo, float hi) {
  if (g->st != RV_OK) return;
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  float *x = rv_malloc(n * sizeof(float));
  if (!x) {
    g->st = rv_error(g->ctx, RV_ERR_NOMEM, "out of memory for the random weights");
    return;
  }
  float s = ndim >= 2 ? 1.0f / sqrtf((float)(n / (size_t)shape[0])) : 0.0f;
  for (size_t i = 0; i < n; i++) x[i] = ndim >= 2 ? frand(g) * s : lo + (hi - lo) * 0.5f * (frand(g) + 1.0f);
  g->st = rv_weights_add(g->w, name, RV_DT_F32, ndim, shape, x, n * sizeof(float), 1, g->ctx);
}

static void conv(gen *g, const char *name, int cin, int cout, int k, int bias) {
  char n[256];
  int64_t s4[4] = {cout, cin, k, k}, s1[1] = {cout};
  snprintf(n, sizeof n, "%s.weight", name);
  add(g, n, 4, s4, 0, 0);
  if (!bias) return;
  snprintf(n, sizeof n, "%s.bias", name);
  add(g, n, 1, s1, -0.1f, 0.1f);
}

static void linear(gen *g, const char *name, int cin, int cout) {
  char n[256];
  int64_t s2[2] = {cout, cin}, s1[1] = {cout};
  snprintf(n, sizeof n, "%s.weight", name);
  add(g, n, 2, s2, 0, 0);
  snprintf(n, sizeof n, "%s.bias", name);
  add(g, n, 1, s1, -0.1f, 0.1f);
}

static void bn(gen *g, const char *prefix, int c) {
  static const char *const sfx[4] = {"weight", "bias", "running_mean", "running_var"};
  static const float lo[4] = {0.5f, -0.1f, -0.1f, 0.5f}, hi[4] = {1.5f, 0.1f, 0.1f, 1.5f};
  char n[256];
  int64_t s1[1] = {c};
  for (int i = 0; i < 4; i++) {
    snprintf(n, sizeof n, "%s.bn.%s", prefix, sfx[i]);
    add(g, n, 1, s1, lo[i], hi[i]);
  }
}

/* mmcv ConvModule at prefix: conv (bias unless BN) [+ BN] */
static void convmod(gen *g, const char *prefix, int cin, int cout, int k, int with_bn) {
  char n[200];
  snprintf(n, sizeof n, "%s.conv", prefix);
  conv(g, n, cin, cout, k, !with_bn);
  if (with_bn) bn(g, prefix, cout);
}

/* UPerHead (channels 512, pool scales 1 2 3 6) or FPN neck (256) + FPNHead (128); 150 classes */
static void seg_weights(gen *g, int upernet, const int *dims) {
  char p[128];
  int ch;
  if (upernet) {
    ch = 512;
    for (int i = 0; i < 4; i++) {
      snprintf(p, sizeof p, "decode_head.psp_modules.%d.1", i);
      convmod(g, p, dims[3], ch, 1, 1);
    }
    convmod(g, "decode_head.bottleneck", dims[3] + 4 * ch, ch, 3, 1);
    for (int i = 0; i < 3; i++) {
      snprintf(p, sizeof p, "decode_head.lateral_convs.%d", i);
      convmod(g, p, dims[i], ch, 1, 1);
      snprintf(p, sizeof p, "decode_head.fpn_convs.%d", i);
      convmod(g, p, ch, ch, 3, 1);
    }
    convmod(g, "decode_head.fpn_bottleneck", 4 * ch, ch, 3, 1);
  } else {
    const int oc = 256;
    ch = 128;
    for (int i = 0; i < 4; i++) {
      snprintf(p, sizeof p, "neck.lateral_convs.%d", i);
      convmod(g, p, dims[i], oc, 1, 0);
      snprintf(p, sizeof p, "neck.fpn_convs.%d", i);
      convmod(g, p, oc, oc, 3, 0);
      for (int k = 0; k < (i > 1 ? i : 1); k++) {
        snprintf(p, sizeof p, "decode_head.scale_heads.%d.%d", i, i ? 2 * k : 0);
        convmod(g, p, k ? ch : oc, ch, 3, 1);
      }
    }
  }
  conv(g, "decode_head.conv_seg", ch, 150, 1, 1);
}

/* RetinaNet (RALA_retinanet.py): FPN from stage 2 with two extra 3x3 stride-2 convs (the
 * first on the last backbone output), 4 + 4 head convs, 9 anchors, 80 classes */
static void retina_weights(gen *g, const int *dims) {
  const int C = 256, K = 80;
  char p[160];
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "neck.lateral_convs.%d.conv", i);
    conv(g, p, dims[i + 1], C, 1, 1);
  }
  for (int i = 0; i < 5; i++) {
    snprintf(p, sizeof p, "neck.fpn_convs.%d.conv", i);
    conv(g, p, i == 3 ? dims[3] : C, C, 3, 1);
  }
  for (int i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "bbox_head.cls_convs.%d.conv", i);
    conv(g, p, C, C, 3, 1);
    snprintf(p, sizeof p, "bbox_head.reg_convs.%d.conv", i);
    conv(g, p, C, C, 3, 1);
  }
  int64_t s1[1] = {9 * K};
  conv(g, "bbox_head.retina_cls", C, 9 * K, 3, 0);
  float *bias = g->st == RV_OK ? rv_malloc(sizeof(float) * 9 * K) : NULL;
  if (bias) {
    for (int i = 0; i < 9 * K; i++) bias[i] = i % K ? RETINA_PRIOR_BIAS : RETINA_HOT_BIAS; /* a * K + k */
    g->st = rv_weights_add(g->w, "bbox_head.retina_cls.bias", RV_DT_F32, 1, s1, bias, sizeof(float) * 9 * K, 1, g->ctx);
  } else if (g->st == RV_OK) {
    g->st = rv_error(g->ctx, RV_ERR_NOMEM, "out of memory for the random weights");
  }
  conv(g, "bbox_head.retina_reg", C, 36, 3, 1);
}

/* FPN (256) + RPN + Cascade RoI head (3 x ConvFC 4conv1fc with BN, fc 1024, 3 FCN mask heads)
 * or Mask R-CNN's StandardRoIHead (Shared2FC 1024, one FCN mask head); 80 classes */
static void rcnn_weights(gen *g, int cascade, const int *dims) {
  const int C = 256, FC = 1024, K = 80;
  char p[160];
  for (int i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "neck.lateral_convs.%d.conv", i);
    conv(g, p, dims[i], C, 1, 1);
    snprintf(p, sizeof p, "neck.fpn_convs.%d.conv", i);
    conv(g, p, C, C, 3, 1);
  }
  conv(g, "rpn_head.rpn_conv", C, C, 3, 1);
  conv(g, "rpn_head.rpn_cls", C, 3, 1, 1);
  conv(g, "rpn_head.rpn_reg", C, 12, 1, 1);
  for (int s = 0; s < (cascade ? 3 : 1); s++) {
    char b[64], m[64];
    if (cascade) {
      snprintf(b, sizeof b, "roi_head.bbox_head.%d", s);
      snprintf(m, sizeof m, "roi_head.mask_head.%d", s);
      for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s.shared_convs.%d", b, i);
        convmod(g, p, C, C, 3, 1);
      }
      snprintf(p, sizeof p, "%s.shared_fcs.0", b);
      linear(g, p, C * 49, FC);
    } else {
      snprintf(b, sizeof b, "roi_head.bbox_head");
      snprintf(m, sizeof m, "roi_head.mask_head");
      for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s.shared_fcs.%d", b, i);
        linear(g, p, i ? FC : C * 49, FC);
      }
    }
    snprintf(p, sizeof p, "%s.fc_cls", b);
    linear(g, p, FC, K + 1);
    snprintf(p, sizeof p, "%s.fc_reg", b);
    linear(g, p, FC, 4 * K);
    for (int i = 0; i < 4; i++) {
      snprintf(p, sizeof p, "%s.convs.%d.conv", m, i);
      conv(g, p, C, C, 3, 1);
    }
    snprintf(p, sizeof p, "%s.upsample", m);
    conv(g, p, C, C, 2, 1); /* ConvTranspose2d [cin, cout, 2, 2]: cin == cout here */
    snprintf(p, sizeof p, "%s.conv_logits", m);
    conv(g, p, C, K, 1, 1);
  }
}

int rv_bench_is_model_name(const char *name) {
  for (const char *const *n = rv_model_names(); name && *n; n++)
    if (strcmp(*n, name) == 0) return 1;
  return 0;
}

void rv_bench_model_list(char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (const char *const *n = rv_model_names(); *n && len < cap; n++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", *n);
}

rv_status rv_bench_model_create(rv_bench_model *m, const char *name, uint64_t seed, rv_ctx *ctx) {
  memset(m, 0, sizeof *m);
  const char *bbname = NULL;
  const rv_family *f = rv_bench_is_model_name(name) ? rv_family_by_name(name, &bbname) : NULL;
  if (!f) {
    char list[1024];
    rv_bench_model_list(list, sizeof list);
    return rv_error(ctx, RV_ERR_ARG, "unknown model name '%s'; whole models: %s", name ? name : "(null)", list);
  }
  m->name = name;
  m->arch = f->arch;
  m->task = f->task;
  char preset[64];
  snprintf(preset, sizeof preset, "%s-backbone", bbname);
  rv_ravlt_config bc;
  RV_TRY(rv_ravlt_preset(&bc, preset, ctx));
  RV_TRY(rv_ravlt_create_random(&m->backbone, &bc, seed, ctx));
  gen g = {rv_weights_new("random"), seed * 0x9E3779B97F4A7C15ULL + 88172645463325252ULL, RV_OK, ctx};
  if (!g.w) {
    rv_bench_model_free(m);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory for the random weights");
  }
  rv_status st;
  if (m->task == RV_TASK_SEGMENT) {
    seg_weights(&g, f->id == RV_FAMILY_UPERNET, bc.embed_dims);
    m->pre = rv_preprocess_mmseg_params();
    m->seg_test = rv_seg_default_test_cfg();
    rv_seg_decoder_config dc = rv_seg_decoder_default_config();
    dc.arch = (rv_seg_arch)f->id;
    st = g.st == RV_OK ? rv_seg_decoder_load(&m->decoder, &dc, g.w, ctx) : g.st;
  } else {
    if (f->id == RV_FAMILY_RETINANET) retina_weights(&g, bc.embed_dims);
    else rcnn_weights(&g, f->id == RV_FAMILY_CASCADE_MASK_RCNN, bc.embed_dims);
    m->pre = rv_preprocess_mmdet_params();
    rv_detector_config dc = rv_detector_default_config((rv_det_arch)f->id);
    dc.rcnn.score_thr = 0; /* max_per_img (100) detections, each with its mask */
    st = g.st == RV_OK ? rv_detector_load(&m->detector, &dc, g.w, ctx) : g.st;
  }
  rv_weights_free(g.w);
  if (st != RV_OK) rv_bench_model_free(m);
  return st;
}

void rv_bench_model_free(rv_bench_model *m) {
  rv_ravlt_free(m->backbone);
  rv_seg_decoder_free(m->decoder);
  rv_detector_free(m->detector);
  m->backbone = NULL;
  m->decoder = NULL;
  m->detector = NULL;
}

rv_status rv_bench_model_set_precision(rv_bench_model *m, const char *precision, rv_ctx *ctx) {
  RV_TRY(rv_cli_set_backbone_precision(m->backbone, precision, ctx));
  if (!precision || !strcmp(precision, "f32")) return RV_OK;
  /* bf16 (the backbone accepted it): the neck and heads as rv_model_set_precision does */
  if (m->decoder) RV_TRY(rv_seg_decoder_set_bf16(m->decoder, 1, ctx));
  if (m->detector) RV_TRY(rv_detector_set_bf16(m->detector, 1, ctx));
  return RV_OK;
}
