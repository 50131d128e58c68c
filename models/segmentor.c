/* Semantic segmentation decoder assembly and mmseg test-time inference. See segmentor.h. */
#include "models/segmentor.h"
#include "backbone/ravlt.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

struct rv_seg_decoder {
  rv_seg_arch arch;
  const rv_seg_head_ops *ops;
  int num_classes;
  int num_ins;
  int in_channels[RV_FPN_MAX_LEVELS];
  rv_fpn *fpn;            /* the FPN neck of a family that has one (ops->load sets it) */
  void *head;             /* the family's head state (ops->load, ops->free) */
};

const char *rv_seg_arch_name(rv_seg_arch a) {
  const rv_family *f = rv_family_get((int)a);
  return f && f->task == RV_TASK_SEGMENT ? f->arch : "auto";
}

rv_seg_decoder_config rv_seg_decoder_default_config(void) {
  rv_seg_decoder_config c;
  memset(&c, 0, sizeof c);
  c.arch = RV_SEG_ARCH_AUTO;
  c.num_classes = -1;
  c.fpn = rv_fpn_default_config();
  c.fpn_head = rv_fpn_head_default_config();
  c.uper = rv_uper_default_config();
  return c;
}

rv_seg_test_cfg rv_seg_default_test_cfg(void) {
  rv_seg_test_cfg t;
  t.mode = RV_SEG_MODE_WHOLE;
  t.crop_h = t.crop_w = 512;
  t.stride_h = t.stride_w = 341;
  return t;
}

void rv_seg_decoder_free(rv_seg_decoder *d) {
  if (!d) return;
  if (d->ops) d->ops->free(d);
  rv_fpn_free(d->fpn);
  rv_free(d);
}

rv_seg_arch rv_seg_decoder_arch(const rv_seg_decoder *d) { return d->arch; }
int rv_seg_decoder_num_classes(const rv_seg_decoder *d) { return d->num_classes; }
int rv_seg_decoder_num_inputs(const rv_seg_decoder *d) { return d->num_ins; }
int rv_seg_decoder_in_channels(const rv_seg_decoder *d, int i) {
  return i >= 0 && i < d->num_ins ? d->in_channels[i] : -1;
}
const rv_fpn *rv_seg_decoder_fpn(const rv_seg_decoder *d) { return d->fpn; }

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static int count_prefix(const rv_weights *w, const char *prefix) {
  int n = 0;
  for (int i = 0; i < rv_weights_count(w); i++) n += has_prefix(rv_weights_get(w, i)->name, prefix);
  return n;
}

/* ---- Semantic FPN: FPN neck + FPNHead (heads/seg_heads.h) ----------------------------- */

static rv_status semantic_fpn_load(rv_seg_decoder *d, const rv_seg_decoder_config *cfg, rv_params *p,
                                   rv_ctx *ctx) {
  if (count_prefix(p->w, "neck.") == 0)
    return rv_error(ctx, RV_ERR_MODEL, "%s: Semantic FPN needs an FPN neck but the checkpoint has no neck.* keys",
                    rv_params_path(p));
  RV_TRY(rv_fpn_load(&d->fpn, &cfg->fpn, p, "neck.", ctx));
  const rv_fpn_config *fc = rv_fpn_config_of(d->fpn);
  rv_fpn_head_config hc = cfg->fpn_head;
  if (hc.num_levels != fc->num_outs)
    return rv_error(ctx, RV_ERR_MODEL, "Semantic FPN: the head takes %d levels but the neck gives %d",
                    hc.num_levels, fc->num_outs);
  for (int i = 0; i < hc.num_levels && i < RV_FPN_HEAD_MAX_LEVELS; i++)
    if (hc.in_channels[i] < 0) hc.in_channels[i] = fc->out_channels;
  hc.num_classes = cfg->num_classes;
  rv_fpn_head *h = NULL;
  RV_TRY(rv_fpn_head_load(&h, &hc, p, "decode_head.", ctx));
  d->head = h;
  d->num_classes = rv_fpn_head_config_of(h)->num_classes;
  d->num_ins = fc->num_ins;
  memcpy(d->in_channels, fc->in_channels, sizeof d->in_channels);
  return RV_OK;
}

static void semantic_fpn_free(rv_seg_decoder *d) { rv_fpn_head_free(d->head); }

static rv_status semantic_fpn_forward(const rv_seg_decoder *d, rv_tensor *logits, const rv_tensor *feats,
                                      int num_feats, rv_tensor *neck_outs, rv_arena *a, rv_ctx *ctx) {
  const rv_fpn_config *fc = rv_fpn_config_of(d->fpn);
  rv_tensor local[2 * RV_FPN_MAX_LEVELS];
  rv_tensor *outs = neck_outs ? neck_outs : local;
  /* The neck outputs stay in the arena (below the logits) until the caller releases. */
  RV_TRY(rv_fpn_forward(d->fpn, outs, feats, num_feats, a, ctx));
  return rv_fpn_head_forward(d->head, logits, outs, fc->num_outs, a, ctx);
}

static rv_status semantic_fpn_set_bf16(rv_seg_decoder *d, int on, rv_ctx *ctx) {
  return d->head ? rv_fpn_head_set_bf16(d->head, on, ctx) : RV_OK;
}

static const rv_seg_head_ops SEMANTIC_FPN_HEAD = {semantic_fpn_load, semantic_fpn_free, semantic_fpn_forward,
                                                  semantic_fpn_set_bf16};

/* ---- UperNet: UPerHead fusion (necks/uper.h) + conv_seg -------------------------------- */

typedef struct {
  rv_uper *uper;
  rv_convmod conv_seg;
} uper_head;

static rv_status upernet_load(rv_seg_decoder *d, const rv_seg_decoder_config *cfg, rv_params *p,
                              rv_ctx *ctx) {
  uper_head *h = rv_calloc(1, sizeof *h);
  if (!h) return rv_error(ctx, RV_ERR_NOMEM, "out of memory (segmentation decoder)");
  d->head = h;
  RV_TRY(rv_uper_load(&h->uper, &cfg->uper, p, "decode_head.", ctx));
  const rv_uper_config *uc = rv_uper_config_of(h->uper);
  RV_TRY(rv_seg_classifier_load(&h->conv_seg, p, "decode_head.", uc->channels, cfg->num_classes, ctx));
  d->num_classes = h->conv_seg.cout;
  d->num_ins = uc->num_ins;
  for (int i = 0; i < uc->num_ins && i < RV_FPN_MAX_LEVELS; i++) d->in_channels[i] = uc->in_channels[i];
  return RV_OK;
}

static void upernet_free(rv_seg_decoder *d) {
  uper_head *h = d->head;
  if (!h) return;
  rv_uper_free(h->uper);
  rv_convmod_free(&h->conv_seg);
  rv_free(h);
}

static rv_status upernet_forward(const rv_seg_decoder *d, rv_tensor *logits, const rv_tensor *feats,
                                 int num_feats, rv_tensor *neck_outs, rv_arena *a, rv_ctx *ctx) {
  (void)neck_outs;
  const uper_head *h = d->head;
  int h0 = feats[0].h, w0 = feats[0].w;
  *logits = rv_tensor_new(a, feats[0].n, d->num_classes, h0, w0);
  if (!logits->data) return rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (logits)");
  rv_arena_mark m = rv_arena_get_mark(a);
  rv_tensor fused;
  rv_status st = rv_uper_forward(h->uper, &fused, feats, num_feats, a, ctx);
  if (st == RV_OK)
    st = rv_convmod_forward_into(&h->conv_seg, logits->data,
                                 (size_t)d->num_classes * (size_t)h0 * (size_t)w0, fused, a, ctx);
  rv_arena_release(a, m);
  return st;
}

static rv_status upernet_set_bf16(rv_seg_decoder *d, int on, rv_ctx *ctx) {
  return d->head ? rv_uper_set_bf16(((uper_head *)d->head)->uper, on, ctx) : RV_OK;
}

static const rv_seg_head_ops UPERNET_HEAD = {upernet_load, upernet_free, upernet_forward, upernet_set_bf16};

/* ---- the decoder: the family's part ----------------------------------------------------- */

/* each segmentation family's part, by family id (the rows of models/family.h whose ops are
 * rv_segmentor_family_ops) */
static const rv_seg_head_ops *const HEADS[RV_FAMILY_COUNT] = {
    [RV_FAMILY_SEMANTIC_FPN] = &SEMANTIC_FPN_HEAD,
    [RV_FAMILY_UPERNET] = &UPERNET_HEAD,
};

const rv_seg_head_ops *rv_seg_arch_ops(rv_seg_arch a) {
  const rv_family *f = rv_family_get((int)a);
  return f && f->task == RV_TASK_SEGMENT ? HEADS[f->id] : NULL;
}

rv_status rv_seg_decoder_load(rv_seg_decoder **out, const rv_seg_decoder_config *cfg,
                              const rv_weights *w, rv_ctx *ctx) {
  rv_params p = rv_params_view(w);
  return rv_seg_decoder_load_params(out, cfg, &p, ctx);
}

rv_status rv_seg_decoder_load_params(rv_seg_decoder **out, const rv_seg_decoder_config *cfg,
                                     rv_params *p, rv_ctx *ctx) {
  *out = NULL;
  const rv_weights *w = p->w;
  int n_aux = 0, n_head = 0;
  const char *det_key = NULL;
  for (int i = 0; i < rv_weights_count(w); i++) {
    const char *k = rv_weights_get(w, i)->name;
    if (has_prefix(k, "auxiliary_head.")) n_aux++;
    if (has_prefix(k, "decode_head.")) n_head++;
    if (!det_key && (has_prefix(k, "rpn_head.") || has_prefix(k, "roi_head.") ||
                     has_prefix(k, "bbox_head.")))
      det_key = k;
  }
  const char *path = rv_params_path(p);
  if (det_key && n_head == 0)
    return rv_error(ctx, RV_ERR_MODEL, "%s: this is a detection checkpoint (has '%s'), not a segmentation model",
                    path, det_key);
  /* the family: the one asked for, else the one whose sniff key the checkpoint has */
  const rv_family *found = rv_family_sniff(w, RV_TASK_SEGMENT);
  const rv_family *fam = cfg->arch == RV_SEG_ARCH_AUTO ? found : rv_family_get((int)cfg->arch);
  if (!fam || fam->task != RV_TASK_SEGMENT) {
    if (fam || cfg->arch != RV_SEG_ARCH_AUTO)
      return rv_error(ctx, RV_ERR_ARG, "unknown segmentation architecture %d", (int)cfg->arch);
    char list[512];
    size_t o = 0;
    list[0] = 0;
    for (int i = 0; i < RV_FAMILY_COUNT; i++) {
      const rv_family *f = rv_family_get(i);
      if (f->task == RV_TASK_SEGMENT && o < sizeof list)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s (%s)", o ? ", " : "", f->title, f->sniff_key);
    }
    return rv_error(ctx, RV_ERR_MODEL, "%s: no segmentation head in the checkpoint (looked for %s)", path, list);
  }
  if (found && found != fam && !rv_weights_find(w, fam->sniff_key))
    return rv_error(ctx, RV_ERR_MODEL, "%s: this is a %s checkpoint (has '%s'), not %s", path, found->title,
                    found->sniff_key, fam->title);
  if (n_aux > 0)
    rv_log(ctx, RV_LOG_INFO, "ignoring %d auxiliary_head.* tensors (training-only auxiliary head)", n_aux);
  rv_seg_decoder *d = rv_calloc(1, sizeof *d);
  if (!d) return rv_error(ctx, RV_ERR_NOMEM, "out of memory (segmentation decoder)");
  d->arch = (rv_seg_arch)fam->id;
  d->ops = rv_seg_arch_ops(d->arch);
  rv_status st = d->ops->load(d, cfg, p, ctx);
  if (st != RV_OK) {
    rv_seg_decoder_free(d);
    return st;
  }
  *out = d;
  return RV_OK;
}

rv_status rv_seg_decoder_forward(const rv_seg_decoder *d, rv_tensor *logits, const rv_tensor *feats,
                                 int num_feats, rv_tensor *neck_outs, rv_arena *a, rv_ctx *ctx) {
  if (num_feats != d->num_ins)
    return rv_error(ctx, RV_ERR_SHAPE, "the %s decoder takes %d backbone features, got %d",
                    rv_seg_arch_name(d->arch), d->num_ins, num_feats);
  return d->ops->forward(d, logits, feats, num_feats, neck_outs, a, ctx);
}

/* ---- test-time inference ---------------------------------------------------------------- */

/* backbone + decoder: logits at 1/4 of the input (from the arena, scratch left below them). */
static rv_status decode_small(const rv_segmentor *s, rv_tensor *small, rv_tensor img, rv_arena *a,
                              rv_ctx *ctx) {
  RV_ASSERT(s && s->decoder && s->backbone);
  if (!img.data || img.n != 1 || img.h <= 0 || img.w <= 0)
    return rv_error(ctx, RV_ERR_SHAPE, "segmentation input must be one non-empty image [1, C, H, W]");
  const rv_seg_decoder *d = s->decoder;
  rv_tensor feats[RV_FPN_MAX_LEVELS];
  RV_TRY(s->backbone(s->backbone_user, feats, d->num_ins, img, a, ctx));
  RV_TRY(rv_ctx_check(ctx)); /* cancelled; the threads of the call (core/rv.h) */
  return rv_seg_decoder_forward(d, small, feats, d->num_ins, NULL, a, ctx);
}

rv_status rv_seg_encode_decode(const rv_segmentor *s, rv_tensor *logits, rv_tensor img, rv_arena *a,
                               rv_ctx *ctx) {
  RV_ASSERT(s && s->decoder && s->backbone);
  const rv_seg_decoder *d = s->decoder;
  if (img.h <= 0 || img.w <= 0) return rv_error(ctx, RV_ERR_SHAPE, "segmentation input is empty");
  *logits = rv_tensor_new(a, 1, d->num_classes, img.h, img.w);
  if (!logits->data)
    return rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (%d x %d x %d logits)", d->num_classes,
                    img.h, img.w);
  rv_arena_mark m = rv_arena_get_mark(a);
  rv_tensor small;
  rv_status st = decode_small(s, &small, img, a, ctx);
  if (st == RV_OK &&
      rv_seg_resize_planes(logits->data, small.data, d->num_classes, small.h, small.w, img.h, img.w, a) != RV_OK)
    st = rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (logits resize)");
  rv_arena_release(a, m);
  return st;
}

rv_status rv_seg_ravlt_backbone(void *user, rv_tensor *feats, int num_feats, rv_tensor img,
                                rv_arena *a, rv_ctx *ctx) {
  return rv_family_ravlt_features(user, feats, num_feats, img, a, ctx);
}

static rv_status slide_logits(const rv_segmentor *s, rv_tensor *logits, rv_tensor img, rv_arena *a,
                              rv_ctx *ctx) {
  const rv_seg_test_cfg *t = &s->test;
  if (t->crop_h <= 0 || t->crop_w <= 0 || t->stride_h <= 0 || t->stride_w <= 0)
    return rv_error(ctx, RV_ERR_ARG, "slide inference needs a positive crop and stride (got crop %dx%d, stride %dx%d)",
                    t->crop_h, t->crop_w, t->stride_h, t->stride_w);
  const int H = img.h, W = img.w, C = s->decoder->num_classes;
  const int h_grids = (H - t->crop_h + t->stride_h - 1 > 0 ? H - t->crop_h + t->stride_h - 1 : 0) / t->stride_h + 1;
  const int w_grids = (W - t->crop_w + t->stride_w - 1 > 0 ? W - t->crop_w + t->stride_w - 1 : 0) / t->stride_w + 1;
  *logits = rv_tensor_zeros(a, 1, C, H, W);
  if (!logits->data) return rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (slide logits)");
  rv_arena_mark m = rv_arena_get_mark(a);
  float *count = rv_arena_floats(a, (size_t)H * (size_t)W);
  if (!count) return rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (slide counts)");
  memset(count, 0, (size_t)H * (size_t)W * sizeof(float));
  rv_status st = RV_OK;
  for (int hi = 0; hi < h_grids && st == RV_OK; hi++)
    for (int wi = 0; wi < w_grids && st == RV_OK; wi++) {
      int y1 = hi * t->stride_h, x1 = wi * t->stride_w;
      int y2 = y1 + t->crop_h < H ? y1 + t->crop_h : H;
      int x2 = x1 + t->crop_w < W ? x1 + t->crop_w : W;
      y1 = y2 - t->crop_h > 0 ? y2 - t->crop_h : 0;
      x1 = x2 - t->crop_w > 0 ? x2 - t->crop_w : 0;
      const int ch = y2 - y1, cw = x2 - x1;
      if ((st = rv_ctx_check(ctx)) != RV_OK) break;
      rv_arena_mark mc = rv_arena_get_mark(a);
      rv_tensor crop = rv_tensor_new(a, 1, img.c, ch, cw), cl;
      if (!crop.data) {
        st = rv_error(ctx, RV_ERR_NOMEM, "out of activation memory (slide crop)");
        break;
      }
      for (int c = 0; c < img.c; c++)
        for (int y = 0; y < ch; y++)
          memcpy(rv_tensor_at(crop, 0, c, y, 0), rv_tensor_at(img, 0, c, y1 + y, x1), (size_t)cw * sizeof(float));
      st = rv_seg_encode_decode(s, &cl, crop, a, ctx);
      if (st == RV_OK) {
#pragma omp parallel for schedule(static)
        for (int c = 0; c < C; c++)
          for (int y = 0; y < ch; y++) {
            float *dst = rv_tensor_at(*logits, 0, c, y1 + y, x1);
            const float *src = rv_tensor_at(cl, 0, c, y, 0);
            for (int x = 0; x < cw; x++) dst[x] += src[x];
          }
        for (int y = y1; y < y2; y++)
          for (int x = x1; x < x2; x++) count[(size_t)y * W + x] += 1.0f;
      }
      rv_arena_release(a, mc);
    }
  if (st == RV_OK) {
    size_t hw = (size_t)H * (size_t)W;
    for (size_t i = 0; i < hw; i++)
      if (count[i] == 0.0f) {
        st = rv_error(ctx, RV_ERR_INTERNAL, "slide inference left pixel %zu uncovered", i);
        break;
      }
#pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++) {
      float *p = logits->data + (size_t)c * hw;
      for (size_t i = 0; i < hw; i++) p[i] /= count[i];
    }
  }
  rv_arena_release(a, m);
  return st;
}

rv_status rv_seg_logits(const rv_segmentor *s, rv_tensor *logits, rv_tensor img, rv_arena *a,
                        rv_ctx *ctx) {
  rv_ctx_apply_threads(ctx);
  if (!img.data || img.n != 1 || img.h <= 0 || img.w <= 0)
    return rv_error(ctx, RV_ERR_SHAPE, "segmentation input must be one non-empty image [1, C, H, W]");
  if (s->test.mode == RV_SEG_MODE_SLIDE) return slide_logits(s, logits, img, a, ctx);
  if (s->test.mode != RV_SEG_MODE_WHOLE)
    return rv_error(ctx, RV_ERR_ARG, "unknown segmentation test mode %d", (int)s->test.mode);
  return rv_seg_encode_decode(s, logits, img, a, ctx);
}

static rv_status check_resize_args(rv_tensor logits, int ori_h, int ori_w, rv_ctx *ctx) {
  if (!logits.data || logits.n != 1 || logits.c <= 0 || logits.h <= 0 || logits.w <= 0)
    return rv_error(ctx, RV_ERR_SHAPE, "logits must be one non-empty [1, C, H, W] tensor");
  if (ori_h <= 0 || ori_w <= 0 || ori_h > (1 << 16) || ori_w > (1 << 16))
    return rv_error(ctx, RV_ERR_ARG, "invalid original image size %dx%d", ori_w, ori_h);
  return RV_OK;
}

rv_status rv_seg_labels_from_logits(int32_t *labels, rv_tensor logits, int ori_h, int ori_w,
                                    rv_arena *scratch, rv_ctx *ctx) {
  RV_TRY(check_resize_args(logits, ori_h, ori_w, ctx));
  if (rv_seg_resize_argmax(labels, logits.data, logits.c, logits.h, logits.w, ori_h, ori_w, scratch) != RV_OK)
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory resizing %d score planes to %dx%d", logits.c, ori_w, ori_h);
  return RV_OK;
}

rv_status rv_seg_simple_test(const rv_segmentor *s, int32_t *labels, rv_tensor img, int ori_h,
                             int ori_w, rv_arena *a, rv_ctx *ctx) {
  rv_ctx_apply_threads(ctx);
  rv_arena_mark m = rv_arena_get_mark(a);
  rv_tensor logits;
  rv_status st;
  if (s->test.mode == RV_SEG_MODE_WHOLE) {
    /* encode_decode's resize to the input size and the rescale to ori_shape, fused */
    st = decode_small(s, &logits, img, a, ctx);
    if (st == RV_OK) st = check_resize_args(logits, ori_h, ori_w, ctx);
    if (st == RV_OK && rv_seg_resize2_argmax(labels, logits.data, logits.c, logits.h, logits.w, img.h, img.w,
                                             ori_h, ori_w, a) != RV_OK)
      st = rv_error(ctx, RV_ERR_NOMEM, "out of memory resizing %d score planes to %dx%d", logits.c, ori_w, ori_h);
  } else {
    st = rv_seg_logits(s, &logits, img, a, ctx);
    if (st == RV_OK) st = rv_seg_labels_from_logits(labels, logits, ori_h, ori_w, a, ctx);
  }
  rv_arena_release(a, m);
  return st;
}

rv_status rv_seg_probs_add(float *acc, rv_tensor logits, int flipped, int ori_h, int ori_w,
                           rv_arena *scratch, rv_ctx *ctx) {
  RV_TRY(check_resize_args(logits, ori_h, ori_w, ctx));
  if (rv_seg_resize_softmax_add(acc, logits.data, logits.c, logits.h, logits.w, ori_h, ori_w, flipped,
                                scratch) != RV_OK)
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory resizing %d score planes to %dx%d", logits.c, ori_w, ori_h);
  return RV_OK;
}

rv_status rv_seg_aug_add(const rv_segmentor *s, float *acc, rv_tensor img, int flipped, int ori_h,
                         int ori_w, rv_arena *a, rv_ctx *ctx) {
  rv_ctx_apply_threads(ctx);
  rv_arena_mark m = rv_arena_get_mark(a);
  rv_tensor logits;
  rv_status st;
  if (s->test.mode == RV_SEG_MODE_WHOLE) {
    st = decode_small(s, &logits, img, a, ctx);
    if (st == RV_OK) st = check_resize_args(logits, ori_h, ori_w, ctx);
    if (st == RV_OK && rv_seg_resize2_softmax_add(acc, logits.data, logits.c, logits.h, logits.w, img.h, img.w,
                                                  ori_h, ori_w, flipped, a) != RV_OK)
      st = rv_error(ctx, RV_ERR_NOMEM, "out of memory resizing %d score planes to %dx%d", logits.c, ori_w, ori_h);
  } else {
    st = rv_seg_logits(s, &logits, img, a, ctx);
    if (st == RV_OK) st = rv_seg_probs_add(acc, logits, flipped, ori_h, ori_w, a, ctx);
  }
  rv_arena_release(a, m);
  return st;
}

void rv_seg_aug_labels(int32_t *labels, float *acc, int num_classes, int ori_h, int ori_w, int n_aug) {
  size_t n = (size_t)num_classes * (size_t)ori_h * (size_t)ori_w;
  if (n_aug > 1) {
    float inv = (float)n_aug;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) acc[i] /= inv;
  }
  rv_seg_argmax(labels, acc, num_classes, (size_t)ori_h * (size_t)ori_w);
}


rv_status rv_seg_decoder_set_bf16(rv_seg_decoder *d, int on, rv_ctx *ctx) {
  /* the neck and head convs; the classifiers (conv_seg) stay float32 */
  rv_status st = RV_OK;
  if (d->fpn) st = rv_fpn_set_bf16(d->fpn, on, ctx);
  if (st == RV_OK) st = d->ops->set_bf16(d, on, ctx);
  if (st != RV_OK && on) rv_seg_decoder_set_bf16(d, 0, ctx);
  return st;
}

/* ---- the meta config ---------------------------------------------------------------------- */

static const cJSON *get(const cJSON *o, const char *key) {
  return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

void rv_seg_test_cfg_from_meta(rv_seg_test_cfg *t, const cJSON *model, const cJSON *config) {
  const cJSON *tc = get(model, "test_cfg");
  if (!tc) tc = get(config, "test_cfg");
  const char *mode = cJSON_GetStringValue(get(tc, "mode"));
  if (!mode || strcmp(mode, "slide") != 0) return;
  t->mode = RV_SEG_MODE_SLIDE;
  const cJSON *crop = get(tc, "crop_size"), *stride = get(tc, "stride");
  if (cJSON_GetArraySize(crop) == 2) {
    t->crop_h = cJSON_GetArrayItem(crop, 0)->valueint;
    t->crop_w = cJSON_GetArrayItem(crop, 1)->valueint;
  }
  if (cJSON_GetArraySize(stride) == 2) {
    t->stride_h = cJSON_GetArrayItem(stride, 0)->valueint;
    t->stride_w = cJSON_GetArrayItem(stride, 1)->valueint;
  }
}

void rv_seg_decoder_config_from_meta(rv_seg_decoder_config *c, const cJSON *model) {
  const cJSON *head = get(model, "decode_head");
  const cJSON *n = get(head, "num_classes");
  if (cJSON_IsNumber(n)) c->num_classes = (int)n->valuedouble;
  const cJSON *ps = get(head, "pool_scales");
  if (cJSON_IsArray(ps) && cJSON_GetArraySize(ps) > 0 && cJSON_GetArraySize(ps) <= RV_UPER_MAX_SCALES) {
    c->uper.num_pool_scales = cJSON_GetArraySize(ps);
    for (int i = 0; i < c->uper.num_pool_scales; i++) c->uper.pool_scales[i] = cJSON_GetArrayItem(ps, i)->valueint;
  }
}

/* ---- the family ops (models/family.h) of every segmentation family --------------------- */

static rv_status family_load(void **head, rv_family_load *L, rv_params *p, rv_ctx *ctx) {
  rv_seg_decoder_config dc = rv_seg_decoder_default_config();
  dc.arch = (rv_seg_arch)L->family->id;
  rv_seg_decoder_config_from_meta(&dc, L->model);
  rv_seg_decoder *d = NULL;
  RV_TRY(rv_seg_decoder_load_params(&d, &dc, p, ctx));
  *head = d;
  if (L->seg_test) {
    *L->seg_test = rv_seg_default_test_cfg();
    rv_seg_test_cfg_from_meta(L->seg_test, L->model, L->config);
  }
  L->num_classes = d->num_classes;
  L->has_masks = 0;
  L->pre = rv_preprocess_mmseg_params();
  L->decoder = d;
  return RV_OK;
}

static rv_status family_forward(const void *head, const rv_family_run *r, rv_arena *a, rv_ctx *ctx) {
  const rv_seg_decoder *d = head;
  if (!r->labels && !r->probs)
    return rv_error(ctx, RV_ERR_MODEL, "this checkpoint is a %s segmentor, not a detector: use 'ravlt segment'",
                    rv_seg_arch_name(d->arch));
  rv_segmentor s = {d, r->features, r->features_user, r->seg_test ? *r->seg_test : rv_seg_default_test_cfg()};
  if (r->labels) return rv_seg_simple_test(&s, r->labels, r->img, r->ori_h, r->ori_w, a, ctx);
  return rv_seg_aug_add(&s, r->probs, r->img, r->flipped, r->ori_h, r->ori_w, a, ctx);
}

static rv_status family_set_precision(void *head, rv_precision p, rv_ctx *ctx) {
  return rv_seg_decoder_set_bf16(head, p == RV_PRECISION_BF16, ctx);
}

static void family_free(void *head) { rv_seg_decoder_free(head); }

const rv_family_ops rv_segmentor_family_ops = {family_load, family_forward, family_set_precision, family_free};
