/* Rank analysis of RAVLT attention (the measurement behind the RALA paper's figures 2, 4
 * and 5): per block and head, the numerical rank and singular value spectrum of the KV
 * buffer and of the attention outputs, recomputed in double from the block input.
 *
 *   rv_rank_report rep;
 *   if (rv_rank_analyze(&rep, model, weights, NULL, input, 0.0, arena, ctx) != RV_OK) ...;
 *   for (int b = 0; b < rep.nblocks; b++)
 *     for (int h = 0; h < rep.blocks[b].heads; h++) {
 *       const rv_rank_spectrum *s = rv_rank_block_spec(&rep.blocks[b], h, RV_RANK_KV_RALA);
 *       if (s->m) printf("%d/%d\n", s->rank, s->ns);       // m == 0: not in this block
 *     }
 *   rv_rank_report_free(&rep);
 *
 * Quantities of one head (d = head dim, N = H*W tokens; q, k, v, o are the qkvo 1x1 conv
 * of LN(x) on the block input x, q'/k' = elu + 1, rope() the 2-D RoPE of RALA.py):
 *   RV_RANK_KV_RALA    d x d  rope(k'')^T v / N with k''_l = k'_l * N softmax_l(d^-1/2
 *                             mean(q') . k'_l): RALA's KV buffer as the official code forms
 *                             it (its N^-1/2 on both factors = 1/N)
 *   RV_RANK_KV_PLAIN   d x d  rope(k')^T v / N: the same buffer without the re-weighting
 *                             (plain linear attention on the same q, k, v)
 *   RV_RANK_ATTN_PLAIN d x N  plain linear attention output z'_l rope(q')_l^T kv_plain,
 *                             z'_l = 1 / (q'_l . mean(k') + 1e-6)
 *   RV_RANK_ATTN       d x N  the block's attention result before LePE: RALA
 *                             z_l rope(q')_l^T kv_rala (z_l = 1/(q'_l . mean(k'') + 1e-6));
 *                             softmax blocks softmax(d^-1/2 rope(q) rope(k)^T) v
 *   RV_RANK_OUT        d x N  ATTN + lepe(v): the output before the gate
 *   RV_RANK_GATED      d x N  OUT * o (Hadamard): the output after the gate, before proj
 * The first three exist in RALA ('l') blocks only (m = n = 0 in softmax blocks). Matrices
 * are channels x tokens; rank <= min(m, n).
 *
 * Numerical rank: the number of singular values > rtol * s_max. Default rtol (rtol <= 0)
 * = max(m, n) * FLT_EPSILON: numpy's matrix_rank / torch.linalg.matrix_rank convention
 * with the epsilon of float32, the precision the model runs in (values are computed in
 * double from the float32 block input and weights). Singular values come from LAPACK's
 * dgesdd (the OpenBLAS build, through LAPACKE).
 */
#ifndef RV_BACKBONE_RANK_H
#define RV_BACKBONE_RANK_H

#include "backbone/ravlt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  RV_RANK_KV_RALA = 0,
  RV_RANK_KV_PLAIN,
  RV_RANK_ATTN_PLAIN,
  RV_RANK_ATTN,
  RV_RANK_OUT,
  RV_RANK_GATED,
  RV_RANK_NQ
} rv_rank_qty;

/* "kv_rala", "kv_plain", "attn_plain", "attn", "out", "gated" */
const char *rv_rank_qty_name(rv_rank_qty q);
/* One-line description of the quantity (for JSON and help texts). */
const char *rv_rank_qty_desc(rv_rank_qty q);

/* ---- numerical rank ----------------------------------------------------------------- */

/* max(m, n) * FLT_EPSILON */
double rv_rank_default_rtol(int m, int n);
/* Number of s[i] > rtol * s[0] (s descending, ns values; rtol <= 0: the default for an
 * m x n matrix). 0 when s[0] == 0. */
int rv_rank_count(const double *s, int ns, int m, int n, double rtol);
/* s[min(m, n)] = singular values (descending) of the row-major m x n matrix a (lda >= n),
 * by LAPACKE_dgesdd (jobz 'N'). a is not modified. RV_ERR_ARG for non-finite entries,
 * RV_ERR_INTERNAL if LAPACK does not converge. */
rv_status rv_rank_svd(double *s, const double *a, int m, int n, int lda, rv_ctx *ctx);

/* ---- one block's attention quantities ------------------------------------------------ */

typedef struct {
  char kind;                    /* 'l' RALA, 'v' softmax */
  int c, heads, d, h, w, n;     /* n = h * w */
  double *q, *k, *v, *o;        /* c x n: the qkvo conv on LN(x), before elu/RoPE */
  double *kv_rala, *kv_plain;   /* [heads][d][d], row = key channel ('l' only, else NULL) */
  double *attn_plain;           /* c x n ('l' only, else NULL) */
  double *attn, *out, *gated;   /* c x n */
  double *attn_out;             /* c x n: proj(gated), the backbone trace "s{i}b{j}.attn_out" */
} rv_rank_attn;

/* Recompute block (stage, block) of the model described by cfg from its weights (keys
 * prefix + "layers.{stage}.blocks.{block}.norm1/attn..." and "layers.{stage}.RoPE.angle";
 * prefix NULL: detect) and its input x [c x h x w] (the trace "s{i}b{j}.pos": x after
 * x += pos(x), before norm1). Everything in double. RV_ERR_MODEL naming the key for a
 * missing or mis-shaped weight. rv_rank_attn_free releases it (also after an error). */
rv_status rv_rank_attn_compute(rv_rank_attn *a, const rv_weights *w, const char *prefix,
                               const rv_ravlt_config *cfg, int stage, int block,
                               const float *x, int h, int wd, rv_ctx *ctx);
void rv_rank_attn_free(rv_rank_attn *a);

/* ---- whole-model analysis ------------------------------------------------------------ */

typedef struct {
  int m, n;       /* matrix shape; 0 x 0 when the quantity does not exist in the block */
  int ns;         /* min(m, n) */
  int rank;       /* numerical rank at rtol */
  double rtol;    /* the relative tolerance used */
  double *s;      /* ns singular values, descending */
} rv_rank_spectrum;

typedef struct {
  int stage, block;
  char kind;
  int heads, d, h, w;
  rv_rank_spectrum *spec;  /* [heads * RV_RANK_NQ] */
  double check_err;        /* max |recomputed attn_out - backbone trace attn_out| */
  double check_scale;      /* max |backbone attn_out| */
  int checked;             /* 1 once the backbone's attn_out trace was compared */
} rv_rank_block;

typedef struct {
  double rtol;             /* as requested (<= 0: per-matrix default) */
  int in_h, in_w;          /* input tensor size */
  int nblocks;
  rv_rank_block *blocks;   /* in forward order: stage-major */
} rv_rank_report;

static inline const rv_rank_spectrum *rv_rank_block_spec(const rv_rank_block *b, int head,
                                                         rv_rank_qty q) {
  return &b->spec[(size_t)head * RV_RANK_NQ + (size_t)q];
}

/* Run the backbone on input (n == 1) with the trace hook, recompute every block's
 * attention quantities from w (the weights the model was built from; prefix NULL:
 * detect) and take their spectra. Each recomputed attention output is compared with the
 * backbone's own (check_err). rtol <= 0: default tolerance. */
rv_status rv_rank_analyze(rv_rank_report *rep, const rv_ravlt *model, const rv_weights *w,
                          const char *prefix, rv_tensor input, double rtol, rv_arena *arena,
                          rv_ctx *ctx);
void rv_rank_report_free(rv_rank_report *rep);

/* Largest check_err / max(1, check_scale) over the blocks. */
double rv_rank_report_check(const rv_rank_report *rep);

#ifdef __cplusplus
}
#endif
#endif
