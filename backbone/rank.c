/* Rank analysis of RAVLT attention: the block's attention quantities recomputed in double
 * from the weights (semantics of GateLinearAttentionNoSilu / VanillaSelfAttention in the
 * official RALA.py), their singular values by LAPACK, and the whole-model driver on the
 * backbone's trace hook. See backbone/rank.h. */
#include "backbone/rank.h"

#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const QNAMES[RV_RANK_NQ] = {"kv_rala", "kv_plain", "attn_plain",
                                               "attn",    "out",      "gated"};
static const char *const QDESC[RV_RANK_NQ] = {
    "RALA KV buffer rope(k'')^T v / N, keys re-weighted by N softmax(mean(q') k'^T / sqrt(d)) (d x d)",
    "plain linear-attention KV buffer rope(k')^T v / N, no re-weighting (d x d)",
    "plain linear attention output z' rope(q') kv_plain (d x N)",
    "attention result before LePE: RALA z rope(q') kv_rala; softmax blocks softmax(q k^T / sqrt(d)) v (d x N)",
    "attention output before the gate: attn + lepe(v) (d x N)",
    "attention output after the gate: out * o, before proj (d x N)"};

const char *rv_rank_qty_name(rv_rank_qty q) {
  return (unsigned)q < RV_RANK_NQ ? QNAMES[q] : "?";
}
const char *rv_rank_qty_desc(rv_rank_qty q) {
  return (unsigned)q < RV_RANK_NQ ? QDESC[q] : "?";
}

/* ---- numerical rank ------------------------------------------------------------------- */

double rv_rank_default_rtol(int m, int n) { return (double)(m > n ? m : n) * FLT_EPSILON; }

int rv_rank_count(const double *s, int ns, int m, int n, double rtol) {
  if (ns < 1 || !(s[0] > 0.0)) return 0;
  const double thr = (rtol > 0.0 ? rtol : rv_rank_default_rtol(m, n)) * s[0];
  int r = 0;
  for (int i = 0; i < ns; i++) r += s[i] > thr;
  return r;
}

rv_status rv_rank_svd(double *s, const double *a, int m, int n, int lda, rv_ctx *ctx) {
  RV_ASSERT(s && a && m > 0 && n > 0 && lda >= n);
  double *c = malloc(sizeof(double) * (size_t)m * n);
  if (!c) return rv_error(ctx, RV_ERR_NOMEM, "rank: out of memory for a %d x %d SVD", m, n);
  /* the row-major m x n matrix is the column-major n x m matrix A^T: same singular values,
   * no transposing copy inside LAPACKE */
  for (int i = 0; i < m; i++) {
    const double *src = a + (size_t)i * lda;
    for (int j = 0; j < n; j++) {
      if (!isfinite(src[j])) {
        free(c);
        return rv_error(ctx, RV_ERR_ARG, "rank: non-finite entry (%d, %d) in a %d x %d matrix",
                        i, j, m, n);
      }
      c[(size_t)i * n + j] = src[j];
    }
  }
  double dummy = 0.0;
  lapack_int info = LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', n, m, c, n, s, &dummy, 1, &dummy, 1);
  free(c);
  if (info != 0)
    return rv_error(ctx, RV_ERR_INTERNAL, "rank: LAPACK dgesdd failed on a %d x %d matrix (info %d)", m, n, (int)info);
  return RV_OK;
}

/* ---- weights ---------------------------------------------------------------------------- */

/* Tensor prefix + name as doubles, checked to hold `numel` values. */
static rv_status get_param(double **out, const rv_weights *w, const char *prefix, size_t numel,
                           rv_ctx *ctx, const char *fmt, int stage, int block) {
  char name[256], full[320];
  snprintf(name, sizeof name, fmt, stage, block);
  snprintf(full, sizeof full, "%s%s", prefix, name);
  const char *path = rv_weights_path(w) ? rv_weights_path(w) : "weights";
  const rv_wtensor *t = rv_weights_find(w, full);
  if (!t) return rv_error(ctx, RV_ERR_MODEL, "%s: missing key '%s'", path, full);
  if (rv_wtensor_numel(t) != numel)
    return rv_error(ctx, RV_ERR_MODEL, "%s: key '%s' has %zu values, expected %zu", path, full,
                    rv_wtensor_numel(t), numel);
  if (t->dtype != RV_DT_F32 && t->dtype != RV_DT_F16 && t->dtype != RV_DT_BF16 &&
      t->dtype != RV_DT_F64)
    return rv_error(ctx, RV_ERR_MODEL, "%s: key '%s' has dtype %s, expected a float type", path,
                    full, rv_dtype_name(t->dtype));
  float *f = malloc(sizeof(float) * (numel ? numel : 1));
  double *d = malloc(sizeof(double) * (numel ? numel : 1));
  if (!f || !d) {
    free(f);
    free(d);
    return rv_error(ctx, RV_ERR_NOMEM, "rank: out of memory reading '%s'", full);
  }
  rv_wtensor_to_f32(t, f);
  for (size_t i = 0; i < numel; i++) d[i] = f[i];
  free(f);
  *out = d;
  return RV_OK;
}

/* ---- block recomputation ----------------------------------------------------------------- */

typedef struct {
  double *ln_g, *ln_b, *qkvo_w, *qkvo_b, *lepe_w, *lepe_b, *proj_w, *proj_b, *angle;
} blk_params;

static void params_free(blk_params *p) {
  free(p->ln_g); free(p->ln_b); free(p->qkvo_w); free(p->qkvo_b); free(p->lepe_w);
  free(p->lepe_b); free(p->proj_w); free(p->proj_b); free(p->angle);
  memset(p, 0, sizeof *p);
}

static rv_status params_load(blk_params *p, const rv_weights *w, const char *pf, int C, int d,
                             int s, int b, rv_ctx *ctx) {
  const size_t c = (size_t)C;
  RV_TRY(get_param(&p->ln_g, w, pf, c, ctx, "layers.%d.blocks.%d.norm1.norm.weight", s, b));
  RV_TRY(get_param(&p->ln_b, w, pf, c, ctx, "layers.%d.blocks.%d.norm1.norm.bias", s, b));
  RV_TRY(get_param(&p->qkvo_w, w, pf, 4 * c * c, ctx, "layers.%d.blocks.%d.attn.qkvo.weight", s, b));
  RV_TRY(get_param(&p->qkvo_b, w, pf, 4 * c, ctx, "layers.%d.blocks.%d.attn.qkvo.bias", s, b));
  RV_TRY(get_param(&p->lepe_w, w, pf, 25 * c, ctx, "layers.%d.blocks.%d.attn.lepe.weight", s, b));
  RV_TRY(get_param(&p->lepe_b, w, pf, c, ctx, "layers.%d.blocks.%d.attn.lepe.bias", s, b));
  RV_TRY(get_param(&p->proj_w, w, pf, c * c, ctx, "layers.%d.blocks.%d.attn.proj.weight", s, b));
  RV_TRY(get_param(&p->proj_b, w, pf, c, ctx, "layers.%d.blocks.%d.attn.proj.bias", s, b));
  /* the RoPE key has no block index: the extra argument is ignored (C11 7.21.6.1p2) */
  RV_TRY(get_param(&p->angle, w, pf, (size_t)d / 2, ctx, "layers.%d.RoPE.angle", s, b));
  return RV_OK;
}

/* y[cout x n] = W[cout x cin] x[cin x n] + b */
static void conv1x1(double *y, const double *wt, const double *b, const double *x, int cout,
                    int cin, int n) {
  for (int o = 0; o < cout; o++)
    for (int l = 0; l < n; l++) y[(size_t)o * n + l] = b[o];
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cout, n, cin, 1.0, wt, cin, x, n, 1.0,
              y, n);
}

/* In place on one head x [d x n] (row = channel): RoPE of RALA.py (theta_shift with
 * rotate_every_two): channel j < d/2 turns by y * angle[j], j >= d/2 by x * angle[j - d/2];
 *   x'[2i] = x[2i] cos_2i - x[2i+1] sin_2i,  x'[2i+1] = x[2i+1] cos_2i+1 + x[2i] sin_2i+1 */
static void rope(double *x, int d, int h, int w, const double *angle) {
  const int d2 = d / 2;
  for (int i = 0; i < d; i += 2) {
    double *a = x + (size_t)i * h * w, *b = a + (size_t)h * w;
    for (int y = 0; y < h; y++)
      for (int xx = 0; xx < w; xx++) {
        const double p0 = i < d2 ? y : xx, p1 = i + 1 < d2 ? y : xx;
        const double t0 = p0 * angle[i < d2 ? i : i - d2];
        const double t1 = p1 * angle[i + 1 < d2 ? i + 1 : i + 1 - d2];
        const size_t l = (size_t)y * w + xx;
        const double xa = a[l], xb = b[l];
        a[l] = xa * cos(t0) - xb * sin(t0);
        b[l] = xb * cos(t1) + xa * sin(t1);
      }
  }
}

static double elu1(double x) { return x > 0.0 ? x + 1.0 : exp(x); } /* elu(x) + 1 */

/* res[e][l] = z[l] * sum_i kv[i][e] qr[i][l] */
static void apply_kv(double *res, const double *kv, const double *qr, const double *z, int d,
                     int n) {
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, n, d, 1.0, kv, d, qr, n, 0.0, res, n);
  for (int e = 0; e < d; e++)
    for (int l = 0; l < n; l++) res[(size_t)e * n + l] *= z[l];
}

/* One RALA head; q, k, v [d x n]; scratch 3*d*n + 3*n + 2*d doubles. */
static void rala_head(rv_rank_attn *A, int hd, const double *angle, double *scr) {
  const int d = A->d, n = A->n;
  const size_t off = (size_t)hd * d * n;
  const double *q = A->q + off, *k = A->k + off, *v = A->v + off;
  double *qe = scr, *ke = qe + (size_t)d * n, *kr = ke + (size_t)d * n;
  double *a = kr + (size_t)d * n, *z = a + n, *zp = z + n, *qm = zp + n, *km = qm + d;
  const double scale = 1.0 / sqrt((double)d);
  for (size_t i = 0; i < (size_t)d * n; i++) { qe[i] = elu1(q[i]); ke[i] = elu1(k[i]); }
  for (int i = 0; i < d; i++) {
    double s = 0.0;
    for (int l = 0; l < n; l++) s += qe[(size_t)i * n + l];
    qm[i] = s / n;
  }
  /* a = N softmax_l(scale * mean(q') . k'_l) */
  double mx = -INFINITY, tot = 0.0;
  for (int l = 0; l < n; l++) {
    double s = 0.0;
    for (int i = 0; i < d; i++) s += qm[i] * ke[(size_t)i * n + l];
    a[l] = scale * s;
    if (a[l] > mx) mx = a[l];
  }
  for (int l = 0; l < n; l++) { a[l] = exp(a[l] - mx); tot += a[l]; }
  for (int l = 0; l < n; l++) a[l] *= n / tot;
  for (int i = 0; i < d; i++)
    for (int l = 0; l < n; l++) kr[(size_t)i * n + l] = ke[(size_t)i * n + l] * a[l];
  /* normalisers without RoPE: z from k'' (RALA), z' from k' (plain) */
  for (int i = 0; i < d; i++) {
    double s = 0.0, sp = 0.0;
    for (int l = 0; l < n; l++) { s += kr[(size_t)i * n + l]; sp += ke[(size_t)i * n + l]; }
    km[i] = s / n;
    qm[i] = sp / n; /* qm now holds mean(k') */
  }
  for (int l = 0; l < n; l++) {
    double s = 0.0, sp = 0.0;
    for (int i = 0; i < d; i++) {
      s += qe[(size_t)i * n + l] * km[i];
      sp += qe[(size_t)i * n + l] * qm[i];
    }
    z[l] = 1.0 / (s + 1e-6);
    zp[l] = 1.0 / (sp + 1e-6);
  }
  rope(qe, d, A->h, A->w, angle);
  rope(kr, d, A->h, A->w, angle);
  rope(ke, d, A->h, A->w, angle);
  double *kv = A->kv_rala + (size_t)hd * d * d, *kvp = A->kv_plain + (size_t)hd * d * d;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, n, 1.0 / n, kr, n, v, n, 0.0, kv, d);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, n, 1.0 / n, ke, n, v, n, 0.0, kvp, d);
  apply_kv(A->attn + off, kv, qe, z, d, n);
  apply_kv(A->attn_plain + off, kvp, qe, zp, d, n);
}

/* One softmax head: attn = softmax(scale rope(q)^T rope(k)) v^T, queries in chunks.
 * scratch: 2*d*n + BQ*n doubles. */
enum { BQ = 256 };
static void softmax_head(rv_rank_attn *A, int hd, const double *angle, double *scr) {
  const int d = A->d, n = A->n;
  const size_t off = (size_t)hd * d * n;
  double *qr = scr, *kr = qr + (size_t)d * n, *S = kr + (size_t)d * n;
  memcpy(qr, A->q + off, sizeof(double) * (size_t)d * n);
  memcpy(kr, A->k + off, sizeof(double) * (size_t)d * n);
  rope(qr, d, A->h, A->w, angle);
  rope(kr, d, A->h, A->w, angle);
  const double scale = 1.0 / sqrt((double)d);
  for (int q0 = 0; q0 < n; q0 += BQ) {
    const int bq = n - q0 < BQ ? n - q0 : BQ;
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, bq, n, d, scale, qr + q0, n, kr, n, 0.0,
                S, n);
    for (int i = 0; i < bq; i++) {
      double *r = S + (size_t)i * n, mx = -INFINITY, tot = 0.0;
      for (int l = 0; l < n; l++) mx = r[l] > mx ? r[l] : mx;
      for (int l = 0; l < n; l++) { r[l] = exp(r[l] - mx); tot += r[l]; }
      for (int l = 0; l < n; l++) r[l] /= tot;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, bq, n, 1.0, A->v + off, n, S, n, 0.0,
                A->attn + off + q0, n);
  }
}

void rv_rank_attn_free(rv_rank_attn *a) {
  if (!a) return;
  free(a->q); /* q, k, v, o share one allocation */
  free(a->kv_rala);
  free(a->kv_plain);
  free(a->attn_plain);
  free(a->attn);
  free(a->out);
  free(a->gated);
  free(a->attn_out);
  memset(a, 0, sizeof *a);
}

rv_status rv_rank_attn_compute(rv_rank_attn *a, const rv_weights *w, const char *prefix,
                               const rv_ravlt_config *cfg, int stage, int block,
                               const float *x, int h, int wd, rv_ctx *ctx) {
  RV_ASSERT(a && w && cfg && x);
  memset(a, 0, sizeof *a);
  if (stage < 0 || stage >= RV_RAVLT_STAGES || block < 0 || block >= cfg->depths[stage])
    return rv_error(ctx, RV_ERR_ARG, "rank: no block %d.%d in this model", stage, block);
  if (h < 1 || wd < 1) return rv_error(ctx, RV_ERR_SHAPE, "rank: empty block input");
  if (!prefix) prefix = rv_ravlt_detect_prefix(w);
  if (!prefix)
    return rv_error(ctx, RV_ERR_MODEL, "%s: not a RAVLT checkpoint (no patch_embed keys)",
                    rv_weights_path(w) ? rv_weights_path(w) : "weights");
  const int C = cfg->embed_dims[stage], heads = cfg->num_heads[stage];
  if (heads < 1 || C % heads || (C / heads) % 2)
    return rv_error(ctx, RV_ERR_MODEL, "rank: stage %d: %d channels in %d heads", stage, C, heads);
  const int d = C / heads, n = h * wd;
  a->kind = cfg->flags[stage][block];
  a->c = C; a->heads = heads; a->d = d; a->h = h; a->w = wd; a->n = n;
  blk_params p;
  memset(&p, 0, sizeof p);
  rv_status st = params_load(&p, w, prefix, C, d, stage, block, ctx);
  if (st != RV_OK) { params_free(&p); return st; }
  const size_t cn = (size_t)C * n;
  const int lin = a->kind == 'l';
  size_t scr_n = lin ? 3 * (size_t)d * n + 3 * (size_t)n + 2 * (size_t)d
                     : 2 * (size_t)d * n + (size_t)BQ * n;
  if (scr_n < cn) scr_n = cn;
  double *scr = malloc(sizeof(double) * scr_n);
  a->q = malloc(sizeof(double) * 4 * cn);
  a->attn = malloc(sizeof(double) * cn);
  a->out = malloc(sizeof(double) * cn);
  a->gated = malloc(sizeof(double) * cn);
  a->attn_out = malloc(sizeof(double) * cn);
  if (lin) {
    a->kv_rala = malloc(sizeof(double) * (size_t)heads * d * d);
    a->kv_plain = malloc(sizeof(double) * (size_t)heads * d * d);
    a->attn_plain = malloc(sizeof(double) * cn);
  }
  if (!scr || !a->q || !a->attn || !a->out || !a->gated || !a->attn_out ||
      (lin && (!a->kv_rala || !a->kv_plain || !a->attn_plain))) {
    free(scr);
    params_free(&p);
    rv_rank_attn_free(a);
    return rv_error(ctx, RV_ERR_NOMEM, "rank: out of memory for block %d.%d (%d x %d tokens)",
                    stage, block, h, wd);
  }
  a->k = a->q + cn; a->v = a->k + cn; a->o = a->v + cn;
  /* LN over channels per token (eps cfg->ln_eps, biased variance) into scr */
  for (int l = 0; l < n; l++) {
    double mu = 0.0, var = 0.0;
    for (int c = 0; c < C; c++) mu += x[(size_t)c * n + l];
    mu /= C;
    for (int c = 0; c < C; c++) {
      const double t = x[(size_t)c * n + l] - mu;
      var += t * t;
    }
    const double inv = 1.0 / sqrt(var / C + (double)cfg->ln_eps);
    for (int c = 0; c < C; c++)
      scr[(size_t)c * n + l] = (x[(size_t)c * n + l] - mu) * inv * p.ln_g[c] + p.ln_b[c];
  }
  conv1x1(a->q, p.qkvo_w, p.qkvo_b, scr, 4 * C, C, n);
  for (int hd = 0; hd < heads; hd++) {
    if (lin) rala_head(a, hd, p.angle, scr);
    else softmax_head(a, hd, p.angle, scr);
  }
  /* out = attn + lepe(v) (5x5 depthwise, pad 2, bias), gated = out * o */
  for (int c = 0; c < C; c++) {
    const double *vc = a->v + (size_t)c * n, *kw = p.lepe_w + (size_t)c * 25;
    for (int y = 0; y < h; y++)
      for (int xx = 0; xx < wd; xx++) {
        double s = p.lepe_b[c];
        for (int dy = -2; dy <= 2; dy++) {
          const int yy = y + dy;
          if (yy < 0 || yy >= h) continue;
          for (int dx = -2; dx <= 2; dx++) {
            const int x2 = xx + dx;
            if (x2 < 0 || x2 >= wd) continue;
            s += kw[(dy + 2) * 5 + dx + 2] * vc[(size_t)yy * wd + x2];
          }
        }
        const size_t i = (size_t)c * n + (size_t)y * wd + xx;
        a->out[i] = a->attn[i] + s;
        a->gated[i] = a->out[i] * a->o[i];
      }
  }
  conv1x1(a->attn_out, p.proj_w, p.proj_b, a->gated, C, C, n);
  free(scr);
  params_free(&p);
  return RV_OK;
}

/* ---- whole-model driver -------------------------------------------------------------- */

typedef struct {
  const rv_ravlt_config *cfg;
  const rv_weights *w;
  const char *prefix;
  double rtol;
  rv_rank_report *rep;
  rv_rank_attn cur;     /* the block waiting for its attn_out trace */
  int cur_block;        /* index into rep->blocks, -1 none */
  rv_status st;
  rv_ctx *ctx;
} tracer;

static int block_index(const rv_ravlt_config *cfg, int s, int b) {
  int k = 0;
  for (int i = 0; i < s; i++) k += cfg->depths[i];
  return k + b;
}

static rv_status spectra(rv_rank_block *B, const rv_rank_attn *A, double rtol, rv_ctx *ctx) {
  const int d = A->d, n = A->n;
  for (int hd = 0; hd < A->heads; hd++)
    for (int q = 0; q < RV_RANK_NQ; q++) {
      rv_rank_spectrum *s = &B->spec[(size_t)hd * RV_RANK_NQ + q];
      const double *mat = NULL;
      int m = d, cols = n;
      switch ((rv_rank_qty)q) {
      case RV_RANK_KV_RALA: mat = A->kv_rala; cols = d; break;
      case RV_RANK_KV_PLAIN: mat = A->kv_plain; cols = d; break;
      case RV_RANK_ATTN_PLAIN: mat = A->attn_plain; break;
      case RV_RANK_ATTN: mat = A->attn; break;
      case RV_RANK_OUT: mat = A->out; break;
      case RV_RANK_GATED: mat = A->gated; break;
      default: break;
      }
      if (!mat) continue; /* not in this kind of block: m = n = 0 */
      mat += (size_t)hd * m * cols;
      s->m = m;
      s->n = cols;
      s->ns = m < cols ? m : cols;
      s->rtol = rtol > 0.0 ? rtol : rv_rank_default_rtol(m, cols);
      s->s = malloc(sizeof(double) * (size_t)s->ns);
      if (!s->s) return rv_error(ctx, RV_ERR_NOMEM, "rank: out of memory for spectra");
      RV_TRY(rv_rank_svd(s->s, mat, m, cols, cols, ctx));
      s->rank = rv_rank_count(s->s, s->ns, m, cols, s->rtol);
    }
  return RV_OK;
}

static void on_trace(void *user, const char *name, int image, rv_tensor t) {
  tracer *T = user;
  int s, b, used = 0;
  char what[16];
  if (T->st != RV_OK || image != 0) return;
  if (sscanf(name, "s%db%d.%15s%n", &s, &b, what, &used) != 3 || name[used]) return;
  if (s < 0 || s >= RV_RAVLT_STAGES || b < 0 || b >= T->cfg->depths[s]) return;
  const int bi = block_index(T->cfg, s, b);
  if (strcmp(what, "pos") == 0) {
    rv_rank_attn_free(&T->cur);
    T->cur_block = -1;
    T->st = rv_rank_attn_compute(&T->cur, T->w, T->prefix, T->cfg, s, b, t.data, t.h, t.w, T->ctx);
    if (T->st != RV_OK) return;
    rv_rank_block *B = &T->rep->blocks[bi];
    B->stage = s; B->block = b; B->kind = T->cur.kind;
    B->heads = T->cur.heads; B->d = T->cur.d; B->h = t.h; B->w = t.w;
    B->spec = calloc((size_t)B->heads * RV_RANK_NQ, sizeof *B->spec);
    if (!B->spec) { T->st = rv_error(T->ctx, RV_ERR_NOMEM, "rank: out of memory"); return; }
    T->st = spectra(B, &T->cur, T->rtol, T->ctx);
    T->cur_block = bi;
  } else if (strcmp(what, "attn_out") == 0 && T->cur_block == bi) {
    rv_rank_block *B = &T->rep->blocks[bi];
    const size_t cn = (size_t)t.c * t.h * t.w;
    double err = 0.0, sc = 0.0;
    for (size_t i = 0; i < cn; i++) {
      const double r = t.data[i], e = fabs(T->cur.attn_out[i] - r);
      if (!(e <= err)) err = e; /* NaN propagates */
      if (fabs(r) > sc) sc = fabs(r);
    }
    B->check_err = err;
    B->check_scale = sc;
    B->checked = 1;
    rv_rank_attn_free(&T->cur);
    T->cur_block = -1;
  }
}

void rv_rank_report_free(rv_rank_report *rep) {
  if (!rep) return;
  for (int b = 0; b < rep->nblocks; b++) {
    rv_rank_block *B = &rep->blocks[b];
    if (!B->spec) continue;
    for (int i = 0; i < B->heads * RV_RANK_NQ; i++) free(B->spec[i].s);
    free(B->spec);
  }
  free(rep->blocks);
  memset(rep, 0, sizeof *rep);
}

rv_status rv_rank_analyze(rv_rank_report *rep, const rv_ravlt *model, const rv_weights *w,
                          const char *prefix, rv_tensor input, double rtol, rv_arena *arena,
                          rv_ctx *ctx) {
  RV_ASSERT(rep && model && w && arena);
  memset(rep, 0, sizeof *rep);
  const rv_ravlt_config *cfg = rv_ravlt_get_config(model);
  if (cfg->classifier)
    return rv_error(ctx, RV_ERR_ARG, "rank: the model is a classifier; build it as a backbone");
  if (input.n != 1) return rv_error(ctx, RV_ERR_SHAPE, "rank: one image at a time (batch %d)", input.n);
  if (!(rtol >= 0.0 && rtol < 1.0))
    return rv_error(ctx, RV_ERR_ARG, "rank: tolerance %g is not in [0, 1)", rtol);
  if (!prefix) prefix = rv_ravlt_detect_prefix(w);
  if (!prefix)
    return rv_error(ctx, RV_ERR_MODEL, "%s: not a RAVLT checkpoint (no patch_embed keys)",
                    rv_weights_path(w) ? rv_weights_path(w) : "weights");
  int nb = 0;
  for (int s = 0; s < RV_RAVLT_STAGES; s++) nb += cfg->depths[s];
  rep->blocks = calloc((size_t)(nb ? nb : 1), sizeof *rep->blocks);
  if (!rep->blocks) return rv_error(ctx, RV_ERR_NOMEM, "rank: out of memory");
  rep->nblocks = nb;
  rep->rtol = rtol;
  rep->in_h = input.h;
  rep->in_w = input.w;
  tracer T;
  memset(&T, 0, sizeof T);
  T.cfg = cfg; T.w = w; T.prefix = prefix; T.rtol = rtol; T.rep = rep; T.cur_block = -1;
  T.st = RV_OK; T.ctx = ctx;
  rv_arena_mark mk = rv_arena_get_mark(arena);
  rv_tensor outs[RV_RAVLT_STAGES];
  rv_status st = rv_ravlt_forward_traced(model, arena, input, outs, on_trace, &T, ctx);
  rv_arena_release(arena, mk);
  rv_rank_attn_free(&T.cur);
  if (st == RV_OK) st = T.st;
  for (int b = 0; st == RV_OK && b < nb; b++)
    if (!rep->blocks[b].spec || !rep->blocks[b].checked)
      st = rv_error(ctx, RV_ERR_INTERNAL, "rank: block %d was not traced by the backbone", b);
  if (st != RV_OK) rv_rank_report_free(rep);
  return st;
}

double rv_rank_report_check(const rv_rank_report *rep) {
  double worst = 0.0;
  for (int b = 0; b < rep->nblocks; b++) {
    const rv_rank_block *B = &rep->blocks[b];
    const double r = B->check_err / (B->check_scale > 1.0 ? B->check_scale : 1.0);
    if (!(r <= worst)) worst = r;
  }
  return worst;
}
