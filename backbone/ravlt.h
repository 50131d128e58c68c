/* RAVLT: the GLTA backbone of the official dense-prediction code (qhfan/RALA,
 * detection/mmdet/models/backbones/RALA.py) and the ImageNet classifier
 * (classfication/RALA.py), with exact test-time semantics.
 *
 *   rv_ravlt_config cfg;
 *   rv_ravlt_preset(&cfg, "ravlt-s-backbone", ctx);     // or _config_from_json/_from_weights
 *   rv_ravlt *m;
 *   if (rv_ravlt_create(&m, &cfg, weights, NULL, ctx) != RV_OK) ...;  // NULL: detect prefix
 *   rv_arena *a = rv_arena_create(0);
 *   rv_tensor out[4];                                    // strides 4, 8, 16, 32
 *   rv_ravlt_forward(m, a, input, out, ctx);             // out[i].data in the arena
 *   ... use out ...; rv_arena_reset(a);                  // next image
 *   rv_ravlt_free(m);
 *
 * Structure (test time): PatchEmbed (conv3x3 s2 + BN + GELU, conv3x3 + BN + GELU,
 * conv3x3 + BN + GELU, conv3x3 s2 + BN), then 4 stages of blocks
 *   x += pos(x)                        3x3 depthwise conv with bias
 *   x += gamma_1 * attn(LN(x))         'l': RALA linear attention, 'v': softmax attention
 *   x += gamma_2 * ffn(LN(x))          fc1, GELU, h += dw3x3(h), fc2
 * with PatchMerging (conv3x3 s2 + BN) between stages. The backbone returns the stage
 * outputs (before PatchMerging) after the `extra_norms` LayerNorms; the classifier runs
 * proj 1x1 + BN + swish + global average pool + head 1x1 after the last stage. LayerNorm
 * eps 1e-6, BatchNorm eps 1e-5 (folded into the preceding conv at load time).
 *
 * Weights are immutable after rv_ravlt_create (share one model between threads);
 * activations come from the caller's arena. Layout NCHW float32 throughout.
 */
#ifndef RV_BACKBONE_RAVLT_H
#define RV_BACKBONE_RAVLT_H

#include "core/tensor.h"
#include "nn/param.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RV_RAVLT_STAGES 4
#define RV_RAVLT_MAX_DEPTH 64

typedef struct {
  int in_chans;                          /* 3 */
  int embed_dims[RV_RAVLT_STAGES];
  int depths[RV_RAVLT_STAGES];
  int num_heads[RV_RAVLT_STAGES];        /* head_dim = embed_dim / heads, a multiple of 4 */
  double mlp_ratios[RV_RAVLT_STAGES];    /* ffn_dim = (int)(mlp_ratio * embed_dim) */
  int layerscales[RV_RAVLT_STAGES];      /* 1: blocks carry gamma_1 / gamma_2 */
  double layer_init_values[RV_RAVLT_STAGES]; /* gamma init, used by random weights only */
  char flags[RV_RAVLT_STAGES][RV_RAVLT_MAX_DEPTH]; /* per block: 'l' RALA, 'v' softmax */
  int out_indices[RV_RAVLT_STAGES];      /* backbone outputs (stage numbers), ascending */
  int num_outs;
  int classifier;                        /* 1: ImageNet RAVLT (no extra_norms) */
  int projection;                        /* classifier: proj width (1024) */
  int num_classes;                       /* classifier: 1000 */
  float ln_eps;                          /* 1e-6 */
  float bn_eps;                          /* 1e-5 */
} rv_ravlt_config;

/* GLTA defaults of the official code (embed [96,192,384,768], depths [2,2,6,2], heads
 * [3,6,12,24], flags l/l/v/v per stage, no layerscale, all outputs). */
rv_ravlt_config rv_ravlt_default_config(void);

/* Presets with the official values: "ravlt-t", "ravlt-s", "ravlt-b", "ravlt-l" are the
 * ImageNet classifiers (as in timm); "ravlt-t-backbone" ... give the dense-prediction
 * backbone (GLTA with the same dims and 4 outputs). */
rv_status rv_ravlt_preset(rv_ravlt_config *cfg, const char *name, rv_ctx *ctx);
/* Names of the presets (NULL-terminated list). */
const char *const *rv_ravlt_preset_names(void);

/* From a JSON object with the GLTA arguments (the fixtures' config.json): embed_dims,
 * depths, num_heads, mlp_ratios, layerscales, layer_init_values, flagss, out_indices,
 * in_chans. Missing keys keep the GLTA defaults; bad values give RV_ERR_FORMAT. */
rv_status rv_ravlt_config_from_json(rv_ravlt_config *cfg, const char *json_text, rv_ctx *ctx);

/* Infer the architecture from the weights (dims, depths, heads from RoPE.angle, ffn
 * width, layerscale, classifier head). Attention kinds cannot be seen in the weights:
 * flags get the official default (RALA in stages 1-2, softmax in 3-4). prefix NULL:
 * detect. */
rv_status rv_ravlt_config_from_weights(rv_ravlt_config *cfg, const rv_weights *w,
                                       const char *prefix, rv_ctx *ctx);

/* RV_ERR_ARG with a message if the config cannot be built. */
rv_status rv_ravlt_config_validate(const rv_ravlt_config *cfg, rv_ctx *ctx);
/* FFN hidden width of stage i. */
int rv_ravlt_ffn_dim(const rv_ravlt_config *cfg, int stage);
/* Feature size of stage i for an input h x w: ceil-halvings (stem /4, then /2 per stage). */
void rv_ravlt_stage_size(int h, int w, int stage, int *oh, int *ow);

/* "backbone." when the weights' keys carry it, "" when bare keys, NULL if neither
 * patch_embed key is found. */
const char *rv_ravlt_detect_prefix(const rv_weights *w);

typedef struct rv_ravlt rv_ravlt;

/* Build a model from weights with official key names under `prefix` ("backbone.", "",
 * or NULL to detect). Every expected key must exist with the expected shape, and no
 * unexpected patch_embed./layers./extra_norms. key may be present (RV_ERR_MODEL naming the
 * key and shapes). The weights are copied (BN folded), so `w` may be freed afterwards. */
rv_status rv_ravlt_create(rv_ravlt **out, const rv_ravlt_config *cfg, const rv_weights *w,
                          const char *prefix, rv_ctx *ctx);
/* The same through a parameter loader (nn/param.h): the keys the backbone consumed are
 * marked in p (a whole model checks the rest). */
rv_status rv_ravlt_create_params(rv_ravlt **out, const rv_ravlt_config *cfg, rv_params *p,
                                 const char *prefix, rv_ctx *ctx);
/* Random weights (deterministic from seed), for benchmarks and tests. */
rv_status rv_ravlt_create_random(rv_ravlt **out, const rv_ravlt_config *cfg, uint64_t seed,
                                 rv_ctx *ctx);
void rv_ravlt_free(rv_ravlt *m);
const rv_ravlt_config *rv_ravlt_get_config(const rv_ravlt *m);
/* Bytes of weights held by the model. */
size_t rv_ravlt_weight_bytes(const rv_ravlt *m);
/* on 1: the blocks' 1x1 convs (qkvo, proj, fc1, fc2: most of the multiply-adds) run in bf16
 * (rv_pointwise_bf16: weights packed here once, activations rounded per call, float32
 * sums), and so do the attention products; the FFN's GELU is computed to bf16 accuracy
 * (rv_vgeluf_bf16); everything else stays float32. on 0: all float32 again (the default).
 * Call before the model is shared between threads. RV_ERR_UNSUPPORTED (one line through
 * ctx) where the CPU has no AVX512_BF16. */
rv_status rv_ravlt_set_bf16(rv_ravlt *m, int on, rv_ctx *ctx);
int rv_ravlt_is_bf16(const rv_ravlt *m);

/* Intermediate tensors, for parity checks: called with names "patch_embed",
 * "s{i}b{j}.pos" (x after x += pos(x)), "s{i}b{j}.attn_out" (attention output before
 * gamma), "s{i}b{j}.attn" (x after the attention residual), "s{i}b{j}.ffn_out",
 * "s{i}b{j}.ffn", "s{i}.prenorm" (stage output before extra_norms), "s{i}.down" (after
 * PatchMerging). `t` is one image (t.n == 1) of the batch, index `image`. */
typedef void (*rv_ravlt_trace_fn)(void *user, const char *name, int image, rv_tensor t);

/* Backbone forward: input [n, in_chans, h, w] -> out[i] = extra_norms[i](stage i output)
 * for i in out_indices ([n, C_i, h_i, w_i], allocated from `arena`), other out[i].data
 * NULL. Scratch also comes from `arena` and is released before returning. Uses
 * rv_ctx_threads(ctx) threads. Not for classifier configs. */
rv_status rv_ravlt_forward(const rv_ravlt *m, rv_arena *arena, rv_tensor input,
                           rv_tensor out[RV_RAVLT_STAGES], rv_ctx *ctx);
rv_status rv_ravlt_forward_traced(const rv_ravlt *m, rv_arena *arena, rv_tensor input,
                                  rv_tensor out[RV_RAVLT_STAGES], rv_ravlt_trace_fn trace,
                                  void *user, rv_ctx *ctx);
/* Classifier forward: logits [n, num_classes, 1, 1] from the arena. */
rv_status rv_ravlt_classify(const rv_ravlt *m, rv_arena *arena, rv_tensor input,
                            rv_tensor *logits, rv_ctx *ctx);

/* ---- cost model (backbone/flops.c) ------------------------------------------------------ */
/* Multiply-accumulates counted like fvcore (the tool behind the paper's table): convs
 * Cout*Cin/groups*k*k per output pixel; attention matmuls (RALA: q_mean.k, q.mean(k),
 * k^T v, q kv; softmax: q k^T, attn v); norms: LayerNorm 5 per element, BatchNorm (eval)
 * 2 per element, avg pool 1 per input element; elementwise ops free. */
typedef struct {
  int64_t params;
  int64_t macs_conv;   /* convolutions (incl. 1x1 "linear" layers and the head) */
  int64_t macs_attn;   /* attention matmuls */
  int64_t macs_norm;   /* LayerNorm / BatchNorm / pooling */
} rv_ravlt_cost;

typedef struct {
  rv_ravlt_cost stem;                     /* patch_embed */
  rv_ravlt_cost stages[RV_RAVLT_STAGES];  /* blocks + the PatchMerging after them + extra norm */
  rv_ravlt_cost head;                     /* classifier head (zero for the backbone) */
  rv_ravlt_cost total;
  int h[RV_RAVLT_STAGES], w[RV_RAVLT_STAGES]; /* stage feature sizes */
} rv_ravlt_costs;

/* Parameters (trainable tensors; no BN running stats, no RoPE buffer) and MACs for one
 * h x w image. */
rv_status rv_ravlt_count(const rv_ravlt_config *cfg, int h, int w, rv_ravlt_costs *out,
                         rv_ctx *ctx);
/* macs = conv + attention matmuls (every multiply-accumulate of a conv or matmul: what
 * torch's FlopCounterMode counts; 2.61/4.88/10.58/17.21 G for T/S/B/L at 224x224).
 * macs_paper = conv + norms, without the attention matmuls: fvcore's count with the
 * attention left out, which is what the paper's table reports (2.4/4.6/9.9/16.0 G). */
static inline int64_t rv_ravlt_cost_macs(const rv_ravlt_cost *c) {
  return c->macs_conv + c->macs_attn;
}
static inline int64_t rv_ravlt_cost_macs_paper(const rv_ravlt_cost *c) {
  return c->macs_conv + c->macs_norm;
}

#ifdef __cplusplus
}
#endif
#endif
