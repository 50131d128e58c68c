/* Parameter and multiply-accumulate counts of a RAVLT config, counted the way fvcore's
 * FlopCountAnalysis counts the official model (conv, matmul, norm handles; elementwise
 * ops, softmax, activations and means are free):
 *   conv         Cout * Cin/groups * kh * kw per output pixel (bias free)
 *   matmul       [.., m, k] @ [.., k, n] -> m * k * n
 *   LayerNorm    5 per element (affine), BatchNorm in eval 2 per element
 *   avg pool     1 per input element
 * Parameters are the trainable tensors (no BN running statistics, no RoPE.angle buffer). */
#include "backbone/ravlt.h"

#include <string.h>

static void conv(rv_ravlt_cost *c, int64_t cout, int64_t cin_per_group, int64_t k, int64_t pixels,
                 int bias) {
  c->params += cout * cin_per_group * k * k + (bias ? cout : 0);
  c->macs_conv += cout * cin_per_group * k * k * pixels;
}
static void bn(rv_ravlt_cost *c, int64_t ch, int64_t pixels) {
  c->params += 2 * ch;
  c->macs_norm += 2 * ch * pixels;
}
static void ln(rv_ravlt_cost *c, int64_t ch, int64_t pixels) {
  c->params += 2 * ch;
  c->macs_norm += 5 * ch * pixels;
}
static void add(rv_ravlt_cost *dst, const rv_ravlt_cost *src) {
  dst->params += src->params;
  dst->macs_conv += src->macs_conv;
  dst->macs_attn += src->macs_attn;
  dst->macs_norm += src->macs_norm;
}

rv_status rv_ravlt_count(const rv_ravlt_config *cfg, int h, int w, rv_ravlt_costs *out,
                         rv_ctx *ctx) {
  RV_TRY(rv_ravlt_config_validate(cfg, ctx));
  if (h < 1 || w < 1 || h > 65536 || w > 65536)
    return rv_error(ctx, RV_ERR_ARG, "RAVLT cost: bad input size %dx%d", h, w);
  memset(out, 0, sizeof *out);
  /* stem */
  const int64_t c0 = cfg->embed_dims[0], half = c0 / 2;
  int64_t sh = h, sw = w;
  const int64_t cin[4] = {cfg->in_chans, half, half, half}, cout[4] = {half, half, half, c0};
  for (int i = 0; i < 4; i++) {
    if (i == 0 || i == 3) { sh = (sh + 1) / 2; sw = (sw + 1) / 2; }
    conv(&out->stem, cout[i], cin[i], 3, sh * sw, 1);
    bn(&out->stem, cout[i], sh * sw);
  }
  for (int s = 0; s < 4; s++) {
    int fh, fw;
    rv_ravlt_stage_size(h, w, s, &fh, &fw);
    out->h[s] = fh;
    out->w[s] = fw;
    const int64_t C = cfg->embed_dims[s], F = rv_ravlt_ffn_dim(cfg, s), N = (int64_t)fh * fw;
    const int64_t heads = cfg->num_heads[s], d = C / heads;
    rv_ravlt_cost *c = &out->stages[s];
    for (int j = 0; j < cfg->depths[s]; j++) {
      conv(c, C, 1, 3, N, 1);          /* pos */
      ln(c, C, N);                     /* norm1 */
      conv(c, 4 * C, C, 1, N, 1);      /* qkvo */
      conv(c, C, 1, 5, N, 1);          /* lepe */
      conv(c, C, C, 1, N, 1);          /* proj */
      if (cfg->flags[s][j] == 'l')     /* q_mean k^T, q mean(k)^T, k^T v, q kv */
        c->macs_attn += heads * (2 * N * d + 2 * N * d * d);
      else                             /* q k^T, attn v */
        c->macs_attn += heads * 2 * N * N * d;
      ln(c, C, N);                     /* norm2 */
      conv(c, F, C, 1, N, 1);          /* fc1 */
      conv(c, F, 1, 3, N, 1);          /* dwconv */
      conv(c, C, F, 1, N, 1);          /* fc2 */
      if (cfg->layerscales[s]) c->params += 2 * C;
    }
    if (s < 3) {
      int nh, nw;
      rv_ravlt_stage_size(h, w, s + 1, &nh, &nw);
      conv(c, cfg->embed_dims[s + 1], C, 3, (int64_t)nh * nw, 1);
      bn(c, cfg->embed_dims[s + 1], (int64_t)nh * nw);
    }
    if (!cfg->classifier) {
      /* GLTA builds all four extra_norms; only out_indices are computed */
      int used = 0;
      for (int k = 0; k < cfg->num_outs; k++) used |= cfg->out_indices[k] == s;
      c->params += 2 * C;
      if (used) c->macs_norm += 5 * C * N;
    }
  }
  if (cfg->classifier) {
    const int64_t P = cfg->projection, N = (int64_t)out->h[3] * out->w[3];
    conv(&out->head, P, cfg->embed_dims[3], 1, N, 1);
    bn(&out->head, P, N);
    out->head.macs_norm += P * N; /* adaptive avg pool */
    conv(&out->head, cfg->num_classes, P, 1, 1, 1);
  }
  add(&out->total, &out->stem);
  for (int s = 0; s < 4; s++) add(&out->total, &out->stages[s]);
  add(&out->total, &out->head);
  return RV_OK;
}
