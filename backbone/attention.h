/* RAVLT attention kernels: 2-D RoPE, RALA linear attention, blocked online-softmax
 * attention. Heads are stored channel-major, as they come out of the qkvo 1x1 conv:
 * head h of q is the d x N matrix q + h*d*ld (row = channel, ld >= N floats per row),
 * N = H*W tokens in row-major (y, x) order.
 *
 *   rv_rope r;                                              // C = heads * d channels
 *   rv_rope_init(&r, arena, angle, d / 2, H, W);            // sin/cos tables of a stage
 *   float *q = qkvo, *k = qkvo + C*N, *v = qkvo + 2*C*N;    // qkvo conv output [4C x N]
 *   rv_rala_f32(res, N, q, k, v, N, heads, d, N, &r, arena);          // 'l' blocks
 *   // 'v' blocks: rope q and k per head, then
 *   rv_softmax_attention_f32(res, N, q, k, v, N, heads, d, N, 1/sqrtf(d), arena);
 *
 * Every kernel has a *_naive twin (plain loops in double, materialising everything) used
 * by the tests.
 */
#ifndef RV_BACKBONE_ATTENTION_H
#define RV_BACKBONE_ATTENTION_H

#include "core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* RoPE tables for an H x W grid. The official RoPE gives token l = (y, x) the angles
 * sin/cos(y * angle[j]) for channel j < d2 and sin/cos(x * angle[j - d2]) for j >= d2
 * (head_dim = 2 * d2); we store the two separable halves. */
typedef struct {
  const float *sin_h, *cos_h; /* [H x d2] */
  const float *sin_w, *cos_w; /* [W x d2] */
  int d2, h, w;
  const float *sin_wt, *cos_wt; /* [d2 x W]: sin_w, cos_w transposed (contiguous along x) */
} rv_rope;

/* Tables from `angle` [d2] (the stage's RoPE.angle buffer) in the arena (computed in
 * double, stored float). RV_ERR_NOMEM if the arena fails. */
rv_status rv_rope_init(rv_rope *r, rv_arena *arena, const float *angle, int d2, int h, int w);

/* In place on one head x [2*d2 x N] (row stride ld):
 *   x'[2i]   = x[2i] cos_{2i}(l)   - x[2i+1] sin_{2i}(l)
 *   x'[2i+1] = x[2i+1] cos_{2i+1}(l) + x[2i] sin_{2i+1}(l)   (rotate_every_two, theta_shift) */
void rv_rope_apply_f32(float *x, int ld, const rv_rope *r);
/* The same on `rows` consecutive rows (a multiple of 2 d2: several heads, or q and k
 * stacked), in one parallel region. */
void rv_rope_apply_rows_f32(float *x, int ld, int rows, const rv_rope *r);
void rv_rope_apply_naive_f32(float *x, int ld, const rv_rope *r);
/* Channel pair (j, j + 1) of a head (j even) over tokens [l0, l0 + m) only: a[t] and b[t]
 * are token l0 + t of its two rows. The same float operations as rv_rope_apply_f32; with
 * z non-NULL each rotated token is then multiplied by z[t] (as a second pass would:
 * rotate, round, multiply). Serial (for callers that block their own passes). */
void rv_rope_pair_range_f32(float *a, float *b, int j, const rv_rope *r, int l0, int m,
                            const float *z);

/* RALA (GateLinearAttentionNoSilu without LePE, gate and proj), per head, on q, k, v
 * [heads*d x N] (row stride ld); res [heads*d x N] (row stride ldr):
 *   q' = elu(q)+1, k' = elu(k)+1                      (d x N)
 * (the implementation folds z into rope(q') before the second GEMM)
 *   a  = softmax_l(d^-1/2 * mean_l(q') . k'_l)        (N)
 *   k'' = k' * a * N
 *   z_l = 1 / (q'_l . mean_l(k'') + 1e-6)
 *   kv = rope(k'') v^T / N                            (d x d)
 *   res_l = z_l * kv^T rope(q')_l
 * q and k are overwritten (scratch); v is read only. RV_ERR_NOMEM if the arena fails.
 * Calls multithreaded BLAS (not from inside a parallel region). */
rv_status rv_rala_f32(float *res, int ldr, float *q, float *k, const float *v, int ld,
                      int heads, int d, int n, const rv_rope *rope, rv_arena *arena);
/* The same with the two products (kv and kv^T rope(q') z) on the bf16 kernel: k''/N, v,
 * kv and z rope(q') rounded to bfloat16, float32 sums; the elu, the softmax over tokens,
 * the means, RoPE and z in float32. Only where rv_bf16_supported(); with ld or ldr != n
 * the float32 products (the second one reads q as 1x1 rows). */
rv_status rv_rala_bf16(float *res, int ldr, float *q, float *k, const float *v, int ld,
                       int heads, int d, int n, const rv_rope *rope, rv_arena *arena);
rv_status rv_rala_naive_f32(float *res, int ldr, const float *q, const float *k,
                            const float *v, int ld, int heads, int d, int n,
                            const rv_rope *rope);

/* Softmax attention per head on already-roped q, k and v [heads*d x N] (row stride ld):
 *   res[:, l] = sum_m softmax_m(scale * q_l . k_m) v[:, m]
 * computed in query tiles x key tiles with an online softmax: the N x N matrix is never
 * stored (scratch O(threads * tile^2), plus K and V packed: 2 heads d N floats where the
 * AVX-512 kernel runs). Where rv_ukernel_supported(), both products on rv_ukernel_f32
 * (kernels/ukernel.c), else rv_softmax_attention_tiles_f32. */
rv_status rv_softmax_attention_f32(float *res, int ldr, const float *q, const float *k,
                                   const float *v, int ld, int heads, int d, int n,
                                   float scale, rv_arena *arena);
/* The same with the products as BLAS calls on 512 x 512 tiles (any CPU). */
rv_status rv_softmax_attention_tiles_f32(float *res, int ldr, const float *q, const float *k,
                                         const float *v, int ld, int heads, int d, int n,
                                         float scale, rv_arena *arena);
/* The same with both products on the bf16 kernel (q, k scaled and v and the probabilities
 * rounded to bfloat16, float32 sums; softmax, rescaling and the division in float32). Only
 * where rv_bf16_supported(). */
rv_status rv_softmax_attention_bf16(float *res, int ldr, const float *q, const float *k,
                                    const float *v, int ld, int heads, int d, int n,
                                    float scale, rv_arena *arena);
/* Reference: materialises the N x N matrix (small N only). */
rv_status rv_softmax_attention_naive_f32(float *res, int ldr, const float *q, const float *k,
                                         const float *v, int ld, int heads, int d, int n,
                                         float scale);

#ifdef __cplusplus
}
#endif
#endif
