/* RoI box heads of mmdet 2.11: ConvFCBBoxHead (shared 3x3 ConvModules with BN + ReLU, then
 * shared fcs) and Shared2FCBBoxHead (two shared fcs), with fc_cls (background last) and
 * class-specific fc_reg. All rois of an image go through the layers as one batch. */
#include "heads/det.h"
#include "nn/layer.h"

#include <stdio.h>
#include <string.h>

rv_status rv_bbox_head_load(rv_bbox_head *h, rv_params *p, const char *prefix,
                            const double stds[4], rv_ctx *ctx) {
  memset(h, 0, sizeof *h);
  char key[256];
  rv_status st = RV_OK;
  for (int i = 0; i < 8; i++) {
    snprintf(key, sizeof key, "%s.shared_convs.%d.conv.weight", prefix, i);
    if (!rv_param_find(p, key)) break;
    snprintf(key, sizeof key, "%s.shared_convs.%d", prefix, i);
    if ((st = rv_layer_load_convmodule(&h->convs[i], p, key, 3, ctx)) != RV_OK) goto fail;
    h->convs[i].algo = RV_CONV_AUTO_FAST; /* RoI stack; fixture errors with F(4x4) here: kernels/conv.c */
    h->num_convs = i + 1;
  }
  for (int i = 0; i < 4; i++) {
    snprintf(key, sizeof key, "%s.shared_fcs.%d.weight", prefix, i);
    if (!rv_param_find(p, key)) break;
    snprintf(key, sizeof key, "%s.shared_fcs.%d", prefix, i);
    if ((st = rv_layer_load(&h->fcs[i], p, key, 0, ctx)) != RV_OK) goto fail;
    h->num_fcs = i + 1;
  }
  snprintf(key, sizeof key, "%s.fc_cls", prefix);
  if ((st = rv_layer_load(&h->fc_cls, p, key, 0, ctx)) != RV_OK) goto fail;
  snprintf(key, sizeof key, "%s.fc_reg", prefix);
  if ((st = rv_layer_load(&h->fc_reg, p, key, 0, ctx)) != RV_OK) goto fail;
  if (h->num_fcs == 0) {
    st = rv_error(ctx, RV_ERR_UNSUPPORTED, "weights: %s has no shared_fcs (unsupported head)",
                  prefix);
    goto fail;
  }
  h->roi_size = 7;
  h->in_channels = h->num_convs ? h->convs[0].cin : h->fcs[0].cin / 49;
  int flat = (h->num_convs ? h->convs[h->num_convs - 1].cout : h->in_channels) * 49;
  for (int i = 1; i < h->num_convs; i++)
    if (h->convs[i].cin != h->convs[i - 1].cout) {
      st = rv_error(ctx, RV_ERR_MODEL, "weights: %s.shared_convs.%d input channels mismatch",
                    prefix, i);
      goto fail;
    }
  if (h->fcs[0].cin != flat || (!h->num_convs && h->fcs[0].cin % 49)) {
    st = rv_error(ctx, RV_ERR_MODEL, "weights: %s.shared_fcs.0 takes %d inputs, expected %d "
                  "(C x 7 x 7)", prefix, h->fcs[0].cin, flat);
    goto fail;
  }
  for (int i = 1; i < h->num_fcs; i++)
    if (h->fcs[i].cin != h->fcs[i - 1].cout) {
      st = rv_error(ctx, RV_ERR_MODEL, "weights: %s.shared_fcs.%d input size mismatch", prefix, i);
      goto fail;
    }
  int fo = h->fcs[h->num_fcs - 1].cout;
  if (h->fc_cls.cin != fo || h->fc_reg.cin != fo || h->fc_cls.cout < 2) {
    st = rv_error(ctx, RV_ERR_MODEL, "weights: %s.fc_cls/fc_reg do not match shared_fcs", prefix);
    goto fail;
  }
  h->num_classes = h->fc_cls.cout - 1;
  if (h->fc_reg.cout == 4)
    h->class_agnostic = 1;
  else if (h->fc_reg.cout != 4 * h->num_classes) {
    st = rv_error(ctx, RV_ERR_MODEL, "weights: %s.fc_reg has %d outputs, expected 4 or %d",
                  prefix, h->fc_reg.cout, 4 * h->num_classes);
    goto fail;
  }
  h->coder = rv_bbox_coder_default();
  for (int k = 0; k < 4; k++) h->coder.stds[k] = stds[k];
  return RV_OK;
fail:
  rv_bbox_head_free(h);
  return st;
}

void rv_bbox_head_free(rv_bbox_head *h) {
  for (int i = 0; i < 8; i++) rv_layer_free(&h->convs[i]);
  for (int i = 0; i < 4; i++) rv_layer_free(&h->fcs[i]);
  rv_layer_free(&h->fc_cls);
  rv_layer_free(&h->fc_reg);
}

rv_status rv_bbox_head_forward(float *cls, float *reg, const rv_bbox_head *h,
                               const float *roi_feats, int n, rv_arena *scratch, rv_ctx *ctx) {
  if (n <= 0) return RV_OK;
  const int s = h->roi_size, ss = s * s;
  int maxf = 0;
  for (int i = 0; i < h->num_fcs; i++)
    if (h->fcs[i].cout > maxf) maxf = h->fcs[i].cout;
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  const int cl = h->num_convs ? h->convs[h->num_convs - 1].cout : h->in_channels;
  float *conv_out = h->num_convs ? rv_arena_floats(scratch, (size_t)n * cl * ss) : NULL;
  float *fa = rv_arena_floats(scratch, (size_t)n * maxf);
  float *fb = rv_arena_floats(scratch, (size_t)n * maxf);
  if ((h->num_convs && !conv_out) || !fa || !fb) {
    rv_arena_release(scratch, mk);
    return rv_error(ctx, RV_ERR_NOMEM, "bbox head: out of memory for %d rois", n);
  }
  const float *x = roi_feats;
  if (h->num_convs) {
    /* the shared convs: each layer one conv over all rois (rv_det_conv_stack_rois) */
    if (rv_det_conv_stack_rois(conv_out, h->convs, h->num_convs, x, n, s, scratch) != RV_OK) {
      rv_arena_release(scratch, mk);
      return rv_error(ctx, RV_ERR_NOMEM, "bbox head: out of scratch memory for shared convs");
    }
    x = conv_out;
  }
  /* flatten(1) of [n, C, 7, 7] is the contiguous layout; every fc is one GEMM over all rois */
  for (int i = 0; i < h->num_fcs; i++) {
    float *y = (i & 1) ? fb : fa;
    rv_status st = rv_layer_linear_ex(y, &h->fcs[i], x, n, RV_ACT_RELU, scratch);
    if (st != RV_OK) {
      rv_arena_release(scratch, mk);
      return rv_error(ctx, st, "bbox head: fc %d over %d rois: %s", i, n, rv_status_str(st));
    }
    x = y;
  }
  rv_layer_linear(cls, &h->fc_cls, x, n, RV_ACT_NONE);
  rv_layer_linear(reg, &h->fc_reg, x, n, RV_ACT_NONE);
  rv_arena_release(scratch, mk);
  return RV_OK;
}
