/* RAVLT model: weights (load with shape checks and BN folding, or random), forward pass
 * of the GLTA backbone and of the ImageNet classifier. Semantics: backbone/ravlt.h. */
#include "backbone/ravlt.h"
#include "backbone/attention.h"
#include "kernels/ops.h"
#include "kernels/vmath.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
  char kind; /* 'l' or 'v' */
  float *pos_w, *pos_b;
  float *ln1_g, *ln1_b, *ln2_g, *ln2_b;
  float *qkvo_w, *qkvo_b, *lepe_w, *lepe_b, *proj_w, *proj_b;
  float *fc1_w, *fc1_b, *dw_w, *dw_b, *fc2_w, *fc2_b;
  float *gamma1, *gamma2; /* NULL without layerscale */
  /* bf16 mode (rv_ravlt_set_bf16): the four 1x1 convs' weights packed for
   * rv_pointwise_bf16, in bf16_slab; NULL in float32 */
  uint32_t *qkvo_p, *proj_p, *fc1_p, *fc2_p;
} block_w;

typedef struct {
  int dim, heads, hd, ffn, depth;
  float *angle; /* [hd/2] */
  block_w *blocks;
  float *down_w, *down_b; /* PatchMerging conv with BN folded; NULL in the last stage */
  float *norm_g, *norm_b; /* extra_norms (backbone) */
} stage_w;

struct rv_ravlt {
  rv_ravlt_config cfg;
  int stem_c[5];          /* channels in -> c/2 -> c/2 -> c/2 -> c */
  float *stem_w[4], *stem_b[4];
  stage_w st[RV_RAVLT_STAGES];
  float *cls_w, *cls_b;   /* classifier proj with BN folded */
  float *head_w, *head_b;
  float *slab;
  size_t slab_floats;
  uint32_t *bf16_slab;    /* the packed bf16 weights, or NULL (float32) */
  block_w block_store[RV_RAVLT_STAGES][RV_RAVLT_MAX_DEPTH];
};

/* ---- weight walker: one walk lays out the slab, loads or randomises ------------------- */

enum { MODE_COUNT, MODE_LOAD, MODE_RANDOM };
enum { K_CONV, K_CONV_HALF, K_BIAS, K_LN_G, K_LN_B, K_GAMMA, K_ANGLE };

typedef struct {
  int mode;
  float *slab;
  size_t used;
  rv_params *P; /* the checkpoint (MODE_LOAD) */
  const char *prefix;
  rv_ctx *ctx;
  uint64_t rng;
  double gamma_init;
  float bn_eps;
} walker;

static float *take(walker *W, size_t n) {
  float *p = W->mode == MODE_COUNT ? NULL : W->slab + W->used;
  W->used += (n + 15) & ~(size_t)15;
  return p;
}

static float urand(walker *W) { /* uniform [-1, 1) */
  W->rng = W->rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((W->rng >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}

/* One parameter tensor: `dst` gets numel floats; name = prefix + printf(fmt, ...). */
static rv_status param(walker *W, float **dst, int kind, int nd, const int64_t *shape,
                       const char *fmt, ...) {
  size_t numel = 1;
  for (int i = 0; i < nd; i++) numel *= (size_t)shape[i];
  float *p = take(W, numel);
  if (dst) *dst = p;
  if (W->mode == MODE_COUNT) return RV_OK;
  if (W->mode == MODE_RANDOM) {
    size_t fan_in = nd >= 2 ? numel / (size_t)shape[0] : 1;
    float sd = sqrtf(3.0f / (float)fan_in) * (kind == K_CONV_HALF ? 0.5f : 1.0f);
    for (size_t i = 0; i < numel; i++) {
      switch (kind) {
      case K_CONV: case K_CONV_HALF: p[i] = sd * urand(W); break;
      case K_BIAS: case K_LN_B: p[i] = 0.02f * urand(W); break;
      case K_LN_G: p[i] = 1.0f + 0.1f * urand(W); break;
      case K_GAMMA: p[i] = (float)W->gamma_init; break;
      case K_ANGLE: break;
      }
    }
    if (kind == K_ANGLE) { /* 1 / 10000^linspace(0, 1, m), each repeated twice */
      int m = (int)numel / 2;
      for (int i = 0; i < m; i++) {
        double t = m > 1 ? (double)i / (m - 1) : 0.0;
        p[2 * i] = p[2 * i + 1] = (float)(1.0 / pow(10000.0, t));
      }
    }
    return RV_OK;
  }
  char name[256], full[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  snprintf(full, sizeof full, "%s%s", W->prefix, name);
  return rv_param_read(W->P, p, full, nd, shape, W->ctx);
}

static const int64_t *S1(int64_t a, int64_t *buf) { buf[0] = a; return buf; }
static const int64_t *S4(int64_t a, int64_t b, int64_t c, int64_t d, int64_t *buf) {
  buf[0] = a; buf[1] = b; buf[2] = c; buf[3] = d;
  return buf;
}

/* conv (k x k, bias) named `conv`, followed by BatchNorm named `bn`, folded together. */
static rv_status conv_bn(walker *W, float **dw, float **db, int cout, int cin, int k,
                         const char *conv, const char *bn) {
  int64_t s[4];
  RV_TRY(param(W, dw, K_CONV, 4, S4(cout, cin, k, k, s), "%s.weight", conv));
  RV_TRY(param(W, db, K_BIAS, 1, S1(cout, s), "%s.bias", conv));
  if (W->mode != MODE_LOAD) return RV_OK;
  char full[320];
  snprintf(full, sizeof full, "%s%s", W->prefix, bn);
  return rv_param_bn_fold(W->P, *dw, *db, cout, (size_t)cin * k * k, full, W->bn_eps, W->ctx);
}

static rv_status walk(walker *W, rv_ravlt *m) {
  const rv_ravlt_config *c = &m->cfg;
  int64_t s[4];
  const int stem_idx[4] = {0, 3, 6, 9};
  for (int i = 0; i < 4; i++) {
    char conv[64], bn[64];
    snprintf(conv, sizeof conv, "patch_embed.proj.%d", stem_idx[i]);
    snprintf(bn, sizeof bn, "patch_embed.proj.%d", stem_idx[i] + 1);
    RV_TRY(conv_bn(W, &m->stem_w[i], &m->stem_b[i], m->stem_c[i + 1], m->stem_c[i], 3, conv, bn));
  }
  for (int si = 0; si < 4; si++) {
    stage_w *st = &m->st[si];
    const int C = st->dim, F = st->ffn;
    RV_TRY(param(W, &st->angle, K_ANGLE, 1, S1(st->hd / 2, s), "layers.%d.RoPE.angle", si));
    W->gamma_init = c->layer_init_values[si];
    for (int j = 0; j < st->depth; j++) {
      block_w *b = &st->blocks[j];
#define P(dst, kind, nd, shp, suffix) \
  RV_TRY(param(W, dst, kind, nd, shp, "layers.%d.blocks.%d." suffix, si, j))
      if (c->layerscales[si]) {
        P(&b->gamma1, K_GAMMA, 4, S4(1, C, 1, 1, s), "gamma_1");
        P(&b->gamma2, K_GAMMA, 4, S4(1, C, 1, 1, s), "gamma_2");
      } else {
        b->gamma1 = b->gamma2 = NULL;
      }
      P(&b->ln1_g, K_LN_G, 1, S1(C, s), "norm1.norm.weight");
      P(&b->ln1_b, K_LN_B, 1, S1(C, s), "norm1.norm.bias");
      P(&b->qkvo_w, K_CONV, 4, S4(4 * C, C, 1, 1, s), "attn.qkvo.weight");
      P(&b->qkvo_b, K_BIAS, 1, S1(4 * C, s), "attn.qkvo.bias");
      P(&b->lepe_w, K_CONV, 4, S4(C, 1, 5, 5, s), "attn.lepe.weight");
      P(&b->lepe_b, K_BIAS, 1, S1(C, s), "attn.lepe.bias");
      P(&b->proj_w, K_CONV_HALF, 4, S4(C, C, 1, 1, s), "attn.proj.weight");
      P(&b->proj_b, K_BIAS, 1, S1(C, s), "attn.proj.bias");
      P(&b->ln2_g, K_LN_G, 1, S1(C, s), "norm2.norm.weight");
      P(&b->ln2_b, K_LN_B, 1, S1(C, s), "norm2.norm.bias");
      P(&b->fc1_w, K_CONV, 4, S4(F, C, 1, 1, s), "ffn.fc1.weight");
      P(&b->fc1_b, K_BIAS, 1, S1(F, s), "ffn.fc1.bias");
      P(&b->fc2_w, K_CONV_HALF, 4, S4(C, F, 1, 1, s), "ffn.fc2.weight");
      P(&b->fc2_b, K_BIAS, 1, S1(C, s), "ffn.fc2.bias");
      P(&b->dw_w, K_CONV, 4, S4(F, 1, 3, 3, s), "ffn.dwconv.weight");
      P(&b->dw_b, K_BIAS, 1, S1(F, s), "ffn.dwconv.bias");
      P(&b->pos_w, K_CONV_HALF, 4, S4(C, 1, 3, 3, s), "pos.weight");
      P(&b->pos_b, K_BIAS, 1, S1(C, s), "pos.bias");
#undef P
      b->kind = c->flags[si][j];
    }
    if (si < 3) {
      char conv[64], bn[64];
      snprintf(conv, sizeof conv, "layers.%d.downsample.reduction", si);
      snprintf(bn, sizeof bn, "layers.%d.downsample.norm", si);
      RV_TRY(conv_bn(W, &st->down_w, &st->down_b, m->st[si + 1].dim, C, 3, conv, bn));
    } else {
      st->down_w = st->down_b = NULL;
    }
  }
  if (!c->classifier) {
    /* GLTA always builds the four extra_norms, whatever out_indices says */
    for (int si = 0; si < 4; si++) {
      stage_w *st = &m->st[si];
      RV_TRY(param(W, &st->norm_g, K_LN_G, 1, S1(st->dim, s), "extra_norms.%d.norm.weight", si));
      RV_TRY(param(W, &st->norm_b, K_LN_B, 1, S1(st->dim, s), "extra_norms.%d.norm.bias", si));
    }
  } else {
    RV_TRY(conv_bn(W, &m->cls_w, &m->cls_b, c->projection, m->st[3].dim, 1, "proj", "norm"));
    RV_TRY(param(W, &m->head_w, K_CONV, 4, S4(c->num_classes, c->projection, 1, 1, s),
                 "head.weight"));
    RV_TRY(param(W, &m->head_b, K_BIAS, 1, S1(c->num_classes, s), "head.bias"));
  }
  return RV_OK;
}

/* Keys under the prefix that belong to the architecture but were not consumed mean the
 * config does not match the checkpoint (e.g. more blocks than configured). */
static rv_status check_unused(walker *W, int classifier) {
  size_t pl = strlen(W->prefix);
  static const char *const owned[] = {"patch_embed.", "layers.", "extra_norms."};
  static const char *const owned_cls[] = {"proj.", "norm.", "head."};
  const rv_weights *w = W->P->w;
  for (int i = 0; i < rv_weights_count(w); i++) {
    const rv_wtensor *t = rv_weights_get(w, i);
    if (strncmp(t->name, W->prefix, pl) != 0) continue;
    const char *rest = t->name + pl;
    int mine = 0;
    for (int k = 0; k < 3; k++) mine |= strncmp(rest, owned[k], strlen(owned[k])) == 0;
    for (int k = 0; classifier && k < 3; k++)
      mine |= strncmp(rest, owned_cls[k], strlen(owned_cls[k])) == 0;
    if (!mine) continue;
    size_t nl = strlen(rest);
    if (nl >= 19 && strcmp(rest + nl - 19, "num_batches_tracked") == 0) continue;
    if (!rv_param_used(W->P, t))
      return rv_error(W->ctx, RV_ERR_MODEL,
                      "%s: unexpected key '%s' (the checkpoint does not match the RAVLT config: "
                      "depths, dims or classifier head)",
                      rv_params_path(W->P), t->name);
  }
  return RV_OK;
}

/* outer: the checkpoint (NULL: random weights); the keys consumed are marked in it. */
static rv_status build(rv_ravlt **out, const rv_ravlt_config *cfg, rv_params *outer,
                       const char *prefix, uint64_t seed, rv_ctx *ctx) {
  *out = NULL;
  RV_TRY(rv_ravlt_config_validate(cfg, ctx));
  rv_ravlt *m = rv_calloc(1, sizeof *m);
  if (!m) return rv_error(ctx, RV_ERR_NOMEM, "out of memory creating the RAVLT model");
  m->cfg = *cfg;
  m->stem_c[0] = cfg->in_chans;
  m->stem_c[1] = m->stem_c[2] = m->stem_c[3] = cfg->embed_dims[0] / 2;
  m->stem_c[4] = cfg->embed_dims[0];
  for (int s = 0; s < 4; s++) {
    stage_w *st = &m->st[s];
    st->dim = cfg->embed_dims[s];
    st->heads = cfg->num_heads[s];
    st->hd = st->dim / st->heads;
    st->ffn = rv_ravlt_ffn_dim(cfg, s);
    st->depth = cfg->depths[s];
    st->blocks = m->block_store[s];
  }
  walker W = {0};
  W.mode = MODE_COUNT;
  W.ctx = ctx;
  W.bn_eps = cfg->bn_eps;
  rv_status st = walk(&W, m);
  if (st != RV_OK) { rv_ravlt_free(m); return st; }
  m->slab_floats = W.used;
  m->slab = rv_malloc(W.used * sizeof(float));
  if (!m->slab) {
    rv_ravlt_free(m);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory for %zu RAVLT weights", W.used);
  }
  W.slab = m->slab;
  W.used = 0;
  W.prefix = prefix;
  W.rng = seed * 2654435761ULL + 12345;
  W.mode = outer ? MODE_LOAD : MODE_RANDOM;
  /* the backbone's own record of its keys: check_unused reads it whatever outer records */
  rv_params mine = {0};
  if (outer) {
    st = rv_params_init(&mine, outer->w, ctx);
    W.P = &mine;
  }
  if (st == RV_OK) st = walk(&W, m);
  if (st == RV_OK && outer) st = check_unused(&W, cfg->classifier);
  for (int i = 0; st == RV_OK && outer && i < rv_weights_count(outer->w); i++)
    if (mine.used[i]) rv_param_mark(outer, rv_weights_get(outer->w, i));
  rv_params_free(&mine);
  if (st != RV_OK) { rv_ravlt_free(m); return st; }
  *out = m;
  return RV_OK;
}

rv_status rv_ravlt_create(rv_ravlt **out, const rv_ravlt_config *cfg, const rv_weights *w,
                          const char *prefix, rv_ctx *ctx) {
  RV_ASSERT(w);
  rv_params p = rv_params_view(w);
  return rv_ravlt_create_params(out, cfg, &p, prefix, ctx);
}

rv_status rv_ravlt_create_params(rv_ravlt **out, const rv_ravlt_config *cfg, rv_params *p,
                                 const char *prefix, rv_ctx *ctx) {
  RV_ASSERT(out && cfg && p && p->w);
  const rv_weights *w = p->w;
  if (!prefix) prefix = rv_ravlt_detect_prefix(w);
  if (!prefix) {
    *out = NULL;
    return rv_error(ctx, RV_ERR_MODEL,
                    "%s: not a RAVLT checkpoint (no patch_embed.proj.0.weight, with or without "
                    "the 'backbone.' prefix)",
                    rv_weights_path(w) ? rv_weights_path(w) : "weights");
  }
  return build(out, cfg, p, prefix, 0, ctx);
}

rv_status rv_ravlt_create_random(rv_ravlt **out, const rv_ravlt_config *cfg, uint64_t seed,
                                 rv_ctx *ctx) {
  RV_ASSERT(out && cfg);
  return build(out, cfg, NULL, "", seed, ctx);
}

void rv_ravlt_free(rv_ravlt *m) {
  if (!m) return;
  rv_free(m->slab);
  rv_free(m->bf16_slab);
  rv_free(m);
}

/* The GEMM-heavy layers of the blocks (qkvo, proj, fc1, fc2) in bf16 or back in float32;
 * the float32 weights stay (the switch back and everything else read them). The stem and
 * downsample convs stay float32 (on rv_conv3x3_bf16 the stem cost the e2e cascade fixture
 * its bound and the downsample convs Mask R-CNN's 71 of 71, for 2-4% of the backbone's
 * time: bench/RESULTS.md). */
rv_status rv_ravlt_set_bf16(rv_ravlt *m, int on, rv_ctx *ctx) {
  RV_ASSERT(m);
  if (on && !rv_bf16_supported())
    return rv_error(ctx, RV_ERR_UNSUPPORTED,
                    "bf16 precision needs a CPU with AVX512_BF16 (this one has none)");
  size_t words = 0;
  for (int si = 0; si < RV_RAVLT_STAGES; si++) {
    const stage_w *st = &m->st[si];
    for (int j = 0; j < st->depth; j++)
      words += rv_bf16_packed_words(4 * st->dim, st->dim) +
               rv_bf16_packed_words(st->dim, st->dim) +
               rv_bf16_packed_words(st->ffn, st->dim) + rv_bf16_packed_words(st->dim, st->ffn);
  }
  uint32_t *slab = NULL;
  if (on && words) {
    slab = rv_malloc(words * sizeof(uint32_t));
    if (!slab) return rv_error(ctx, RV_ERR_NOMEM, "out of memory for the bf16 weights");
  }
  rv_free(m->bf16_slab);
  m->bf16_slab = slab;
  uint32_t *p = slab;
  for (int si = 0; si < RV_RAVLT_STAGES; si++) {
    stage_w *st = &m->st[si];
    const int C = st->dim, FF = st->ffn;
    for (int j = 0; j < st->depth; j++) {
      block_w *b = &st->blocks[j];
      b->qkvo_p = b->proj_p = b->fc1_p = b->fc2_p = NULL;
      if (!slab) continue;
#define PACK(dst, w, co, ci)                                                                  \
  do {                                                                                        \
    rv_bf16_pack_weights(p, w, co, ci);                                                       \
    dst = p;                                                                                  \
    p += rv_bf16_packed_words(co, ci);                                                        \
  } while (0)
      PACK(b->qkvo_p, b->qkvo_w, 4 * C, C);
      PACK(b->proj_p, b->proj_w, C, C);
      PACK(b->fc1_p, b->fc1_w, FF, C);
      PACK(b->fc2_p, b->fc2_w, C, FF);
#undef PACK
    }
  }
  return RV_OK;
}

int rv_ravlt_is_bf16(const rv_ravlt *m) { return m->bf16_slab != NULL; }

const rv_ravlt_config *rv_ravlt_get_config(const rv_ravlt *m) { return &m->cfg; }
size_t rv_ravlt_weight_bytes(const rv_ravlt *m) { return m->slab_floats * sizeof(float); }

/* ---- forward ---------------------------------------------------------------------------- */

typedef struct {
  const rv_ravlt *m;
  rv_arena *A;
  rv_ctx *ctx;
  rv_ravlt_trace_fn trace;
  void *user;
  int image;
} fwd;

static void emit(fwd *F, const char *name, const float *x, int c, int h, int w) {
  if (!F->trace) return;
  rv_tensor t = {(float *)x, 1, c, h, w};
  F->trace(F->user, name, F->image, t);
}

static rv_status oom(fwd *F) {
  return rv_error(F->ctx, RV_ERR_NOMEM, "out of memory in the RAVLT forward pass");
}

/* y[cout x n] = post(W[cout x cin] x[cin x n] + b) (1x1 conv: rv_pointwise_post_f32, x read
 * in place by the AVX-512 kernel, or BLAS; with wp, W packed in bf16: rv_pointwise_bf16;
 * post NULL: none); its only failure is the arena (packed weights, workspace) */
#define CONV1X1(F, y, w, wp, b, x, cout, cin, n, post)                                        \
  do {                                                                                        \
    if ((wp) ? rv_pointwise_bf16(y, wp, b, x, cout, cin, (size_t)(n), post, (F)->A) != RV_OK  \
             : rv_pointwise_post_f32(y, w, b, x, cout, cin, (size_t)(n), post, (F)->A) !=     \
                   RV_OK)                                                                     \
      return oom(F);                                                                          \
  } while (0)

/* The residual add x[c][l] += g[c] p[c][l] (g NULL: 1) as the post function of the 1x1
 * conv that makes p (attn.proj, ffn.fc2): each finished block of p is added while in
 * cache, in the same parallel region (a separate pass over x and p before). Two roundings,
 * as PyTorch's x + gamma * p (not fused, though this file is compiled with
 * -ffp-contract=fast), 16 lanes wide where the CPU has AVX-512 (GCC builds). */
typedef struct {
  float *x;
  const float *g;
  size_t n;
} residual_arg;

#if defined(__clang__) /* fuses under -ffp-contract=fast whatever a pragma says: baseline */
#define RESIDUAL_CLONES
#else
#define RESIDUAL_CLONES RV_CLONES4 __attribute__((optimize("fp-contract=off")))
#endif
RESIDUAL_CLONES static void residual_post(void *arg, float *p, size_t ldp, int c0, int rows,
                                          size_t p0, size_t len) {
  const residual_arg *a = arg;
  for (int r = 0; r < rows; r++) {
    float *xr = a->x + (size_t)(c0 + r) * a->n + p0;
    const float *pr = p + (size_t)r * ldp;
    const float gi = a->g ? a->g[c0 + r] : 1.0f;
    for (size_t l = 0; l < len; l++) xr[l] += gi * pr[l];
  }
}

/* y = W x + b as CONV1X1, then x_res += g y (residual_post) */
#define CONV1X1_RESIDUAL(F, y, w, wp, b, x, cout, cin, n, x_res, g)                           \
  do {                                                                                        \
    residual_arg ra_ = {x_res, g, (size_t)(n)};                                               \
    if ((wp) ? rv_pointwise_bf16_ctx(y, wp, b, x, cout, cin, (size_t)(n), residual_post,      \
                                     &ra_, (F)->A) != RV_OK                                   \
             : rv_pointwise_ctx_f32(y, w, b, x, cout, cin, (size_t)(n), residual_post, &ra_,  \
                                    (F)->A) != RV_OK)                                         \
      return oom(F);                                                                          \
  } while (0)


/* exact GELU 0.5 x (1 + erf(x / sqrt 2)) in place (kernels/vmath.h polynomial, |err| ~2e-7) on
 * each block of fc1's output while in cache (a separate pass over the FF x N map before) */
static void gelu_post(void *arg, float *blk, size_t ldy, int c0, int rows, size_t p0,
                      size_t len) {
  (void)arg, (void)c0, (void)p0;
  rv_act_rows_serial_f32(blk, ldy, rows, len, RV_ACT_GELU);
}

/* One stage's blocks on x [C x H x W] (in place). */
static rv_status stage_blocks(fwd *F, int si, float *const x_io, int H, int W) {
  const stage_w *st = &F->m->st[si];
  const rv_ravlt_config *cfg = &F->m->cfg;
  const int C = st->dim, FF = st->ffn, N = H * W, hd = st->hd;
  if (st->depth == 0) return RV_OK;
  rv_arena_mark mk = rv_arena_get_mark(F->A);
  /* the 3x3 depthwise convs in place where the rows fit kernels/dwconv.c's band buffer (they
   * move their maps at the memory's rate: no second map to write, 1.2-1.35x on stage 1's,
   * and the FFN needs one FF x N map, not two); otherwise x and t swap roles after each pos
   * conv, and the FFN's depthwise conv writes h2 */
  const int inplace = rv_dwconv2d_inplace_ok(W, 3);
  const int ffn_maps = inplace ? 1 : 2;
  size_t big_n = (size_t)(4 * C > ffn_maps * FF ? 4 * C : ffn_maps * FF) * N;
  float *t = rv_arena_floats(F->A, (size_t)C * N);
  float *big = rv_arena_floats(F->A, big_n);
  rv_rope rope;
  if (!t || !big || rv_rope_init(&rope, F->A, st->angle, hd / 2, H, W) != RV_OK) return oom(F);
  const float scale = (float)pow((double)hd, -0.5);
  char name[64];
  float *x = x_io;
  for (int j = 0; j < st->depth; j++) {
    const block_w *b = &st->blocks[j];
    /* a cancelled call stops here; the call's thread count follows the calls in flight
     * (core/rv.h "Calls": no kernel's scratch spans this point) */
    RV_TRY(rv_ctx_check(F->ctx));
    /* x = x + pos(x) */
    if (inplace) {
      rv_dwconv2d_f32(x, x, b->pos_w, b->pos_b, x, 1, C, H, W, 3, 1, 1);
    } else {
      rv_dwconv2d_f32(t, x, b->pos_w, b->pos_b, x, 1, C, H, W, 3, 1, 1);
      float *swap = x;
      x = t;
      t = swap;
    }
    snprintf(name, sizeof name, "s%db%d.pos", si, j);
    emit(F, name, x, C, H, W);
    /* attention on LN(x) */
    rv_layernorm_nchw_f32(t, x, b->ln1_g, b->ln1_b, 1, C, N, cfg->ln_eps);
    float *q = big, *k = big + (size_t)C * N, *v = big + (size_t)2 * C * N,
          *o = big + (size_t)3 * C * N;
    CONV1X1(F, big, b->qkvo_w, b->qkvo_p, b->qkvo_b, t, 4 * C, C, N, NULL);
    float *r = t; /* LN output no longer needed */
    if (b->kind == 'l') {
      if ((b->qkvo_p ? rv_rala_bf16 : rv_rala_f32)(r, N, q, k, v, N, st->heads, hd, N, &rope,
                                                    F->A) != RV_OK)
        return oom(F);
    } else {
      /* q and k of every head (k's rows follow q's): one parallel region, not 2 per head */
      rv_rope_apply_rows_f32(q, N, 2 * C, &rope);
      /* bf16 mode: the attention products on the bf16 kernel too (b->qkvo_p: the model's
       * switch; the softmax itself stays float32) */
      if ((b->qkvo_p ? rv_softmax_attention_bf16
                     : rv_softmax_attention_f32)(r, N, q, k, v, N, st->heads, hd, N, scale,
                                                 F->A) != RV_OK)
        return oom(F);
    }
    /* (r + lepe(v)) * o: the gate applied to each output row of the depthwise conv */
    rv_dwconv2d_gate_f32(r, v, b->lepe_w, b->lepe_b, r, o, 1, C, H, W, 5, 1, 2);
    float *p = big;                                                      /* q is free */
    CONV1X1_RESIDUAL(F, p, b->proj_w, b->proj_p, b->proj_b, r, C, C, N, x, b->gamma1);
    snprintf(name, sizeof name, "s%db%d.attn_out", si, j);
    emit(F, name, p, C, H, W);
    snprintf(name, sizeof name, "s%db%d.attn", si, j);
    emit(F, name, x, C, H, W);
    /* ffn on LN(x) */
    rv_layernorm_nchw_f32(t, x, b->ln2_g, b->ln2_b, 1, C, N, cfg->ln_eps);
    float *h1 = big, *h2 = inplace ? big : big + (size_t)FF * N;
    /* bf16 mode: rv_vgeluf_bf16 (relative error 7.5e-5 of |GELU(x)| + 1e-3 |x|, against
     * bf16's 2^-9 = 2e-3 when fc2's kernel rounds this map after the depthwise conv; half
     * the operations of the exact one) in the kernel's registers */
    if (b->fc1_p) {
      if (rv_pointwise_bf16_gelu(h1, b->fc1_p, b->fc1_b, t, FF, C, (size_t)N, F->A) != RV_OK)
        return oom(F);
    } else {
      if (rv_pointwise_ctx_f32(h1, b->fc1_w, b->fc1_b, t, FF, C, (size_t)N, gelu_post, NULL,
                               F->A) != RV_OK)
        return oom(F);
    }
    rv_dwconv2d_f32(h2, h1, b->dw_w, b->dw_b, h1, 1, FF, H, W, 3, 1, 1);
    CONV1X1_RESIDUAL(F, t, b->fc2_w, b->fc2_p, b->fc2_b, h2, C, FF, N, x, b->gamma2);
    snprintf(name, sizeof name, "s%db%d.ffn_out", si, j);
    emit(F, name, t, C, H, W);
    snprintf(name, sizeof name, "s%db%d.ffn", si, j);
    emit(F, name, x, C, H, W);
  }
  if (x != x_io) memcpy(x_io, x, sizeof(float) * (size_t)C * N);
  rv_arena_release(F->A, mk);
  return RV_OK;
}

static rv_status conv3x3(fwd *F, float *y, const float *x, const float *w, const float *b,
                         int cin, int h, int wd, int cout, int stride, rv_act act) {
  rv_conv_params p = rv_conv_default_params(3, stride, 1);
  p.act = act;
  if (rv_conv2d_f32(y, x, w, b, 1, cin, h, wd, cout, p, F->A) != RV_OK) return oom(F);
  return RV_OK;
}

/* The stem's 3x3 convs (few input channels: 3, then embed_dims[0] / 2) on the direct kernel
 * where the CPU has it (kernels/conv3x3_direct.c: at 512x512 the stem of RAVLT-S went 19.2 ->
 * 13.5 ms, bench/RESULTS.md), else as conv3x3 above; the stride-2 ones give conv3x3's bits
 * (the same sums in the same order as im2col + the GEMM), the stride-1 ones the direct sums
 * instead of Winograd F(2x2)'s. */
static rv_status stem_conv(fwd *F, float *y, const float *x, const float *w, const float *b,
                           int cin, int h, int wd, int cout, int stride, rv_act act) {
  if (rv_conv3x3_direct_supported()) {
    rv_status st = rv_conv3x3_direct_f32(y, x, w, b, cin, h, wd, cout, stride, act, F->A);
    return st == RV_OK ? RV_OK : oom(F);
  }
  return conv3x3(F, y, x, w, b, cin, h, wd, cout, stride, act);
}

/* One image: stem, stages, outputs (backbone: out slices; classifier: logits row). */
static rv_status forward_image(fwd *F, const float *img, int H, int W, rv_tensor out[4],
                               float *logits) {
  const rv_ravlt *m = F->m;
  const rv_ravlt_config *cfg = &m->cfg;
  rv_arena_mark mk = rv_arena_get_mark(F->A);
  /* stem: 3x3 convs with strides 2, 1, 1, 2; the three half-resolution maps ping-pong
   * between two buffers released after the stem (at 512x512 they were 25 MB kept through
   * the stages) */
  const int h2 = (H + 2 - 3) / 2 + 1, w2 = (W + 2 - 3) / 2 + 1;
  int h = (h2 + 2 - 3) / 2 + 1, w = (w2 + 2 - 3) / 2 + 1;
  float *x = rv_arena_floats(F->A, (size_t)m->stem_c[4] * h * w);
  if (!x) return oom(F);
  rv_arena_mark ms = rv_arena_get_mark(F->A);
  const size_t half = (size_t)m->stem_c[1] * h2 * w2; /* stem_c[1..3]: all embed_dims[0] / 2 */
  float *pa = rv_arena_floats(F->A, half), *pb = rv_arena_floats(F->A, half);
  if (!pa || !pb) return oom(F);
  RV_TRY(stem_conv(F, pa, img, m->stem_w[0], m->stem_b[0], m->stem_c[0], H, W, m->stem_c[1], 2,
                 RV_ACT_GELU));
  RV_TRY(stem_conv(F, pb, pa, m->stem_w[1], m->stem_b[1], m->stem_c[1], h2, w2, m->stem_c[2], 1,
                 RV_ACT_GELU));
  RV_TRY(stem_conv(F, pa, pb, m->stem_w[2], m->stem_b[2], m->stem_c[2], h2, w2, m->stem_c[3], 1,
                 RV_ACT_GELU));
  RV_TRY(stem_conv(F, x, pa, m->stem_w[3], m->stem_b[3], m->stem_c[3], h2, w2, m->stem_c[4], 2,
                 RV_ACT_NONE));
  rv_arena_release(F->A, ms);
  emit(F, "patch_embed", x, m->stem_c[4], h, w);
  char name[32];
  for (int si = 0; si < 4; si++) {
    const stage_w *st = &m->st[si];
    int nh = (h + 1) / 2, nw = (w + 1) / 2;
    RV_TRY(rv_ctx_check(F->ctx));
    float *xn = NULL;
    if (si < 3) { /* next stage's input, allocated below this stage's scratch */
      xn = rv_arena_floats(F->A, (size_t)m->st[si + 1].dim * nh * nw);
      if (!xn) return oom(F);
    }
    RV_TRY(stage_blocks(F, si, x, h, w));
    snprintf(name, sizeof name, "s%d.prenorm", si);
    emit(F, name, x, st->dim, h, w);
    if (!cfg->classifier && out[si].data) {
      float *dst = out[si].data + (size_t)F->image * st->dim * h * w;
      rv_layernorm_nchw_f32(dst, x, st->norm_g, st->norm_b, 1, st->dim, h * w, cfg->ln_eps);
    }
    if (si < 3) {
      RV_TRY(conv3x3(F, xn, x, st->down_w, st->down_b, st->dim, h, w, m->st[si + 1].dim, 2,
                     RV_ACT_NONE));
      snprintf(name, sizeof name, "s%d.down", si);
      emit(F, name, xn, m->st[si + 1].dim, nh, nw);
      x = xn;
      h = nh;
      w = nw;
    }
  }
  if (cfg->classifier) {
    const int P = cfg->projection, N = h * w;
    float *y = rv_arena_floats(F->A, (size_t)P * N);
    float *pool = rv_arena_floats(F->A, (size_t)P);
    if (!y || !pool) return oom(F);
    CONV1X1(F, y, m->cls_w, NULL, m->cls_b, x, P, m->st[3].dim, N, NULL);
    rv_silu_f32(y, (size_t)P * N);
    for (int c = 0; c < P; c++) {
      double s = 0;
      for (int l = 0; l < N; l++) s += y[(size_t)c * N + l];
      pool[c] = (float)(s / N);
    }
    CONV1X1(F, logits, m->head_w, NULL, m->head_b, pool, cfg->num_classes, P, 1, NULL);
  }
  rv_arena_release(F->A, mk);
  return RV_OK;
}

static rv_status check_input(const rv_ravlt *m, rv_tensor in, rv_ctx *ctx) {
  if (!in.data || in.n < 1 || in.h < 1 || in.w < 1)
    return rv_error(ctx, RV_ERR_SHAPE, "RAVLT: empty input tensor");
  if (in.c != m->cfg.in_chans)
    return rv_error(ctx, RV_ERR_SHAPE, "RAVLT: input has %d channels, the model expects %d",
                    in.c, m->cfg.in_chans);
  if (in.h > 32768 || in.w > 32768 || (size_t)in.h * in.w > ((size_t)1 << 28))
    return rv_error(ctx, RV_ERR_SHAPE, "RAVLT: input %dx%d is too large", in.h, in.w);
  return RV_OK;
}

rv_status rv_ravlt_forward_traced(const rv_ravlt *m, rv_arena *arena, rv_tensor input,
                                  rv_tensor out[RV_RAVLT_STAGES], rv_ravlt_trace_fn trace,
                                  void *user, rv_ctx *ctx) {
  RV_ASSERT(m && arena && out);
  for (int i = 0; i < 4; i++) memset(&out[i], 0, sizeof out[i]);
  if (m->cfg.classifier)
    return rv_error(ctx, RV_ERR_ARG, "RAVLT: this is a classifier model; use rv_ravlt_classify");
  RV_TRY(check_input(m, input, ctx));
  rv_ctx_apply_threads(ctx);
  for (int k = 0; k < m->cfg.num_outs; k++) {
    int s = m->cfg.out_indices[k], h, w;
    rv_ravlt_stage_size(input.h, input.w, s, &h, &w);
    out[s] = rv_tensor_new(arena, input.n, m->st[s].dim, h, w);
    if (!out[s].data) {
      for (int i = 0; i < 4; i++) memset(&out[i], 0, sizeof out[i]);
      return rv_error(ctx, RV_ERR_NOMEM, "out of memory for the RAVLT outputs");
    }
  }
  fwd F = {m, arena, ctx, trace, user, 0};
  const size_t per = (size_t)input.c * input.h * input.w;
  for (int b = 0; b < input.n; b++) {
    F.image = b;
    rv_status st = forward_image(&F, input.data + per * b, input.h, input.w, out, NULL);
    if (st != RV_OK) return st;
  }
  return RV_OK;
}

rv_status rv_ravlt_forward(const rv_ravlt *m, rv_arena *arena, rv_tensor input,
                           rv_tensor out[RV_RAVLT_STAGES], rv_ctx *ctx) {
  return rv_ravlt_forward_traced(m, arena, input, out, NULL, NULL, ctx);
}

rv_status rv_ravlt_classify(const rv_ravlt *m, rv_arena *arena, rv_tensor input,
                            rv_tensor *logits, rv_ctx *ctx) {
  RV_ASSERT(m && arena && logits);
  memset(logits, 0, sizeof *logits);
  if (!m->cfg.classifier)
    return rv_error(ctx, RV_ERR_ARG, "RAVLT: this is a backbone model without classifier head");
  RV_TRY(check_input(m, input, ctx));
  rv_ctx_apply_threads(ctx);
  rv_tensor lg = rv_tensor_new(arena, input.n, m->cfg.num_classes, 1, 1);
  if (!lg.data) return rv_error(ctx, RV_ERR_NOMEM, "out of memory for the logits");
  fwd F = {m, arena, ctx, NULL, NULL, 0};
  rv_tensor none[4];
  memset(none, 0, sizeof none);
  const size_t per = (size_t)input.c * input.h * input.w;
  for (int b = 0; b < input.n; b++) {
    F.image = b;
    RV_TRY(forward_image(&F, input.data + per * b, input.h, input.w, none,
                         lg.data + (size_t)b * m->cfg.num_classes));
  }
  *logits = lg;
  return RV_OK;
}
