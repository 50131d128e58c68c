/* Semantic segmentation: the decoder (neck + decode head + conv_seg) of an mmseg 0.13
 * EncoderDecoder checkpoint, and its test-time inference (whole / slide / aug-test).
 *
 *   rv_seg_decoder *dec;
 *   rv_seg_decoder_config dc = rv_seg_decoder_default_config();   // architecture from keys
 *   if (rv_seg_decoder_load(&dec, &dc, weights, ctx)) ...;        // "neck.*", "decode_head.*"
 *   rv_segmentor seg = {dec, my_backbone_fn, my_backbone, rv_seg_default_test_cfg()};
 *   int32_t *labels = malloc(ori_h * ori_w * sizeof *labels);
 *   rv_seg_simple_test(&seg, labels, img, ori_h, ori_w, arena, ctx); // img: normalised [1,3,H,W]
 *
 *   // aug-test: one accumulator, one call per (scale, flip) image, then the label map
 *   float *acc = calloc((size_t)C * ori_h * ori_w, sizeof *acc);
 *   for each augmented img: rv_seg_aug_add(&seg, acc, img, flipped, ori_h, ori_w, arena, ctx);
 *   rv_seg_aug_labels(labels, acc, C, ori_h, ori_w, n_aug);
 *
 * Semantics (SEMANTICS.md I.27, mmseg segmentors/encoder_decoder.py):
 * - encode_decode: backbone -> [FPN neck] -> head -> 1/4 logits -> bilinear to the input
 *   tensor size (align_corners False).
 * - whole: logits = encode_decode(img); slide: crops of crop_h x crop_w every stride, each
 *   y1 = min(r*stride_h, H-crop_h) clamped at 0 (same for x), h_grids =
 *   max(H-crop_h+stride_h-1, 0)/stride_h + 1; every crop's encode_decode is added into a
 *   [C,H,W] sum and divided by the per-pixel window count.
 * - rescale: a SECOND bilinear resize of those logits to ori_shape (never composed with
 *   the first), softmax over classes, [flip back], argmax (the first maximum wins).
 * - aug_test: mean over the augmented images of the (flipped back) softmax at ori_shape,
 *   summed in call order then divided by their number, argmax.
 * Softmax is monotonic, so simple_test takes the argmax of the logits (no softmax pass).
 * Memory: in whole mode neither the [C, H, W] input-size logits nor the ori-size logits are
 * materialised: both resizes are fused with the argmax / softmax-add, band by band of
 * output rows (models/seg_post.h), bit-identical to resizing twice. Slide mode keeps the
 * input-size window average (it needs it) and fuses the rescale.
 *
 * The backbone is a callback (rv_features_fn, models/family.h: slide mode runs it per
 * window) so any feature extractor (backbone/ravlt.h, a fixture's stored features in tests)
 * can drive the same pipeline. A whole model runs a segmentor through
 * rv_segmentor_family_ops (models/family.h), the same ops shape as a detector's.
 */
#ifndef RV_MODELS_SEGMENTOR_H
#define RV_MODELS_SEGMENTOR_H

#include "heads/seg_heads.h"
#include "models/family.h"
#include "models/seg_post.h"
#include "necks/fpn.h"
#include "necks/uper.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The segmentation families of models/family.h (the values are their family ids). */
typedef enum {
  RV_SEG_ARCH_AUTO = -1,                             /* from the checkpoint keys */
  RV_SEG_ARCH_UPERNET = RV_FAMILY_UPERNET,           /* UPerHead (decode_head.psp_modules.*) */
  RV_SEG_ARCH_SEMANTIC_FPN = RV_FAMILY_SEMANTIC_FPN  /* FPN neck + FPNHead (neck.*,
                                                      * decode_head.scale_heads.*) */
} rv_seg_arch;

const char *rv_seg_arch_name(rv_seg_arch a); /* "upernet", "semantic_fpn", "auto" */

typedef struct {
  rv_seg_arch arch;
  int num_classes;               /* expected number of classes, -1: from the weights */
  rv_fpn_config fpn;             /* Semantic FPN neck (default: 4 in, 4 out, widths from weights) */
  rv_fpn_head_config fpn_head;   /* strides 4,8,16,32 */
  rv_uper_config uper;           /* pool scales 1,2,3,6 */
} rv_seg_decoder_config;

rv_seg_decoder_config rv_seg_decoder_default_config(void);

typedef struct rv_seg_decoder rv_seg_decoder;

/* Copies the neck/head weights (BN folded). Keys "neck.*" and "decode_head.*";
 * "auxiliary_head.*" (training only) is ignored with an info log. A detector checkpoint
 * (rpn_head / roi_head / bbox_head keys) or a class-count mismatch is RV_ERR_MODEL. */
rv_status rv_seg_decoder_load(rv_seg_decoder **out, const rv_seg_decoder_config *cfg,
                              const rv_weights *w, rv_ctx *ctx);
/* The same through a parameter loader (nn/param.h): the keys consumed are marked in p. */
rv_status rv_seg_decoder_load_params(rv_seg_decoder **out, const rv_seg_decoder_config *cfg,
                                     rv_params *p, rv_ctx *ctx);
void rv_seg_decoder_free(rv_seg_decoder *d);
rv_seg_arch rv_seg_decoder_arch(const rv_seg_decoder *d);
int rv_seg_decoder_num_classes(const rv_seg_decoder *d);
int rv_seg_decoder_num_inputs(const rv_seg_decoder *d);
/* Backbone channels the decoder expects at input i. */
int rv_seg_decoder_in_channels(const rv_seg_decoder *d, int i);
/* The FPN neck of a decoder whose family has one (Semantic FPN), else NULL. */
const rv_fpn *rv_seg_decoder_fpn(const rv_seg_decoder *d);

/* Backbone features -> logits at the resolution of feats[0] (1/4), from the arena. If
 * neck_outs is non-NULL and the model has an FPN neck, its outputs are stored there (they
 * are allocated from the arena either way: release with a mark taken before the call). */
rv_status rv_seg_decoder_forward(const rv_seg_decoder *d, rv_tensor *logits, const rv_tensor *feats,
                                 int num_feats, rv_tensor *neck_outs, rv_arena *a, rv_ctx *ctx);

/* A segmentation family's part of the decoder (the decoder's own per-family code, defined in
 * models/segmentor.c and found by family id); the decoder dispatches every per-family step
 * through it. */
typedef struct rv_seg_head_ops rv_seg_head_ops;
struct rv_seg_head_ops {
  /* neck and head from p (cfg's part for the family): sets the decoder's head state,
   * classes, inputs and their channels, and its FPN neck when the family has one */
  rv_status (*load)(rv_seg_decoder *d, const rv_seg_decoder_config *cfg, rv_params *p,
                    rv_ctx *ctx);
  void (*free)(rv_seg_decoder *d);
  /* backbone features -> logits at the resolution of feats[0] (rv_seg_decoder_forward) */
  rv_status (*forward)(const rv_seg_decoder *d, rv_tensor *logits, const rv_tensor *feats,
                       int num_feats, rv_tensor *neck_outs, rv_arena *a, rv_ctx *ctx);
  /* the head's convs (not the FPN neck's: the decoder does those) in bf16 (on 1) or
   * float32 (on 0) */
  rv_status (*set_bf16)(rv_seg_decoder *d, int on, rv_ctx *ctx);
};
/* The part of a segmentation family id; NULL when a is not one. */
const rv_seg_head_ops *rv_seg_arch_ops(rv_seg_arch a);

/* ---- test-time inference ---------------------------------------------------------------- */
/* The features of one input (models/family.h). */
typedef rv_features_fn rv_seg_backbone_fn;

typedef enum { RV_SEG_MODE_WHOLE = 0, RV_SEG_MODE_SLIDE } rv_seg_mode;

typedef struct rv_seg_test_cfg {
  rv_seg_mode mode;
  int crop_h, crop_w;      /* slide only */
  int stride_h, stride_w;
} rv_seg_test_cfg;

/* t from an mmseg meta config (model: its model dict, config: the whole config, either may
 * be NULL): model.test_cfg (else the top-level test_cfg) mode='slide' with its crop_size
 * and stride; anything else leaves t as it is. */
void rv_seg_test_cfg_from_meta(rv_seg_test_cfg *t, const struct cJSON *model, const struct cJSON *config);
/* The decoder's settings in an mmseg meta config's model.decode_head (num_classes,
 * pool_scales) into c. */
void rv_seg_decoder_config_from_meta(rv_seg_decoder_config *c, const struct cJSON *model);

/* whole; crop 512x512, stride 341x341 for slide. */
rv_seg_test_cfg rv_seg_default_test_cfg(void);

typedef struct {
  const rv_seg_decoder *decoder;
  rv_seg_backbone_fn backbone;
  void *backbone_user;
  rv_seg_test_cfg test;
} rv_segmentor;

/* Backbone callback for a RAVLT backbone: user = const rv_ravlt * (backbone/ravlt.h) built
 * with out_indices 0..3. Its features are allocated from the arena. The same as
 * rv_family_ravlt_features (models/family.h). */
rv_status rv_seg_ravlt_backbone(void *user, rv_tensor *feats, int num_feats, rv_tensor img,
                                rv_arena *a, rv_ctx *ctx);

/* Logits at the input size [1, C, H, W] (from the arena): encode_decode in whole mode, the
 * window average in slide mode. img: normalised [1, 3, H, W]. */
rv_status rv_seg_logits(const rv_segmentor *s, rv_tensor *logits, rv_tensor img, rv_arena *a,
                        rv_ctx *ctx);
/* encode_decode alone: backbone, decoder, bilinear to the input size. */
rv_status rv_seg_encode_decode(const rv_segmentor *s, rv_tensor *logits, rv_tensor img, rv_arena *a,
                               rv_ctx *ctx);

/* labels[ori_h * ori_w] = argmax_c bilinear(logits -> ori_h x ori_w)[c]; first max wins.
 * logits: [1, C, H, W]. This is the rescale + argmax of simple_test. */
rv_status rv_seg_labels_from_logits(int32_t *labels, rv_tensor logits, int ori_h, int ori_w,
                                    rv_arena *scratch, rv_ctx *ctx);
/* simple_test: rv_seg_logits + rv_seg_labels_from_logits. */
rv_status rv_seg_simple_test(const rv_segmentor *s, int32_t *labels, rv_tensor img, int ori_h,
                             int ori_w, rv_arena *a, rv_ctx *ctx);

/* acc[C, ori_h, ori_w] += softmax(bilinear(logits -> ori)) (mirrored in x when flipped). */
rv_status rv_seg_probs_add(float *acc, rv_tensor logits, int flipped, int ori_h, int ori_w,
                           rv_arena *scratch, rv_ctx *ctx);
/* One aug-test image: rv_seg_logits + rv_seg_probs_add. */
rv_status rv_seg_aug_add(const rv_segmentor *s, float *acc, rv_tensor img, int flipped, int ori_h,
                         int ori_w, rv_arena *a, rv_ctx *ctx);
/* acc /= n_aug (in place), labels = argmax over classes (first max wins). */
void rv_seg_aug_labels(int32_t *labels, float *acc, int num_classes, int ori_h, int ori_w, int n_aug);

/* The bf16 mode of the decoder's neck and head convs (nn/conv.h, bf16 mode; the classifier stays
 * float32); on 0 frees it (float32 results bit for bit again). */
rv_status rv_seg_decoder_set_bf16(rv_seg_decoder *d, int on, rv_ctx *ctx);
#ifdef __cplusplus
}
#endif
#endif
