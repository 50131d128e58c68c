/* RALA: rank-augmented linear attention (GateLinearAttentionNoSilu in the official
 * RALA.py), the attention part only: the caller adds LePE, gates by o and projects.
 *
 * Per head, with q, k, v [d x N] channel-major:
 *   q' = elu(q) + 1, k' = elu(k) + 1
 *   a_l = softmax_l(d^-1/2 * sum_i mean(q'_i) k'_il)        query-mean attention over tokens
 *   k''_il = k'_il * a_l * N                               keys re-weighted
 *   z_l = 1 / (sum_i q'_il mean_l(k''_il) + 1e-6)          normaliser, without RoPE
 *   kv = rope(k'') v^T / N                                 [d x d], the KV buffer
 *   res_l = z_l * kv^T rope(q')_l                          numerator with RoPE
 * The official code scales both factors of kv by N^-1/2; we scale once by 1/N.
 */
#include "backbone/attention.h"
#include "kernels/ops.h"
#include "kernels/vmath.h"

#include <math.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_max_threads(void) { return 1; }
#endif

/* Hot loops get AVX-512 / AVX2 clones (the default build targets x86-64-v2). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLONES
#endif

enum { CB = 512 }; /* token block of the column passes */

/* x = elu(x) + 1 = (x > 0 ? x + 1 : e^x) in place over n floats; returns the sum. */
CLONES static double elu1_sum(float *x, int n) {
  double s = 0.0;
  for (int l0 = 0; l0 < n; l0 += 1024) {
    const int m = n - l0 < 1024 ? n - l0 : 1024;
    float *p = x + l0;
    float acc[16] = {0};
    int j = 0;
    for (; j + 16 <= m; j += 16)
      for (int t = 0; t < 16; t++) {
        const float v = p[j + t], e = rv_vexpf(v);
        const float y = v > 0.0f ? v + 1.0f : e;
        p[j + t] = y;
        acc[t] += y;
      }
    float part = 0.0f;
    for (; j < m; j++) {
      const float v = p[j];
      p[j] = v > 0.0f ? v + 1.0f : rv_vexpf(v);
      part += p[j];
    }
    for (int t = 0; t < 16; t++) part += acc[t];
    s += part;
  }
  return s;
}

/* acc[l] = sum_i w[i] * x[i*ld + l] for l in [0, m) (m <= CB) */
CLONES static void col_dot(float *acc, const float *x, int ld, const float *w, int d, int m) {
  for (int l = 0; l < m; l++) acc[l] = 0.0f;
  for (int i = 0; i < d; i++) {
    const float wi = w[i];
    const float *xr = x + (size_t)i * ld;
    for (int l = 0; l < m; l++) acc[l] += wi * xr[l];
  }
}

/* a[l] = e^(a[l] - mx) in place; returns the sum */
CLONES static double exp_shift_sum(float *a, int n, float mx) {
  double s = 0.0;
  for (int l0 = 0; l0 < n; l0 += 1024) {
    const int m = n - l0 < 1024 ? n - l0 : 1024;
    float *p = a + l0;
    float acc[16] = {0};
    int j = 0;
    for (; j + 16 <= m; j += 16)
      for (int t = 0; t < 16; t++) {
        const float e = rv_vexpf(p[j + t] - mx);
        p[j + t] = e;
        acc[t] += e;
      }
    float part = 0.0f;
    for (; j < m; j++) { p[j] = rv_vexpf(p[j] - mx); part += p[j]; }
    for (int t = 0; t < 16; t++) part += acc[t];
    s += part;
  }
  return s;
}

/* The logits of a block of m <= CB tokens fused with k's elu: x = elu(x) + 1 in place
 * (elu1_sum's element operation) and acc[l] = sum_i w[i] x'[i][l] in order of i. */
CLONES static void elu_col_dot(float *acc, float *x, int ld, const float *w, int d, int m) {
  for (int l = 0; l < m; l++) acc[l] = 0.0f;
  for (int i = 0; i < d; i++) {
    const float wi = w[i];
    float *xr = x + (size_t)i * ld;
    for (int l = 0; l < m; l++) {
      const float v = xr[l], e = rv_vexpf(v);
      const float y = v > 0.0f ? v + 1.0f : e;
      xr[l] = y;
      acc[l] += wi * y;
    }
  }
}

/* One chunk (m <= SC tokens) of a row of k'': y = x * (e * fac) (e * fac is the token's
 * N softmax weight); returns the chunk's sum (16-lane partial sums, then the tail).
 * SCALE_CHUNK(Y, X) with Y == X (in place) or Y a separate buffer (restrict: one version
 * of the loop, no overlap check). */
enum { SC = 1024 };
#define SCALE_CHUNK(Y, X)                                                                     \
  float acc[16] = {0};                                                                         \
  int j = 0;                                                                                   \
  for (; j + 16 <= m; j += 16)                                                                 \
    for (int t = 0; t < 16; t++) {                                                             \
      const float a = e[j + t] * fac;                                                          \
      const float v = X[j + t] * a;                                                            \
      Y[j + t] = v;                                                                            \
      acc[t] += v;                                                                             \
    }                                                                                          \
  float part = 0.0f;                                                                           \
  for (; j < m; j++) {                                                                         \
    const float a = e[j] * fac;                                                                \
    Y[j] = X[j] * a;                                                                           \
    part += Y[j];                                                                              \
  }                                                                                            \
  for (int t = 0; t < 16; t++) part += acc[t];                                                 \
  return part;
CLONES static float scale_chunk_inplace(float *x, const float *e, float fac, int m) {
  SCALE_CHUNK(x, x)
}
CLONES static float scale_chunk_to(float *restrict y, const float *restrict x,
                                   const float *restrict e, float fac, int m) {
  SCALE_CHUNK(y, x)
}
#undef SCALE_CHUNK

/* bf16 products (rv_rala_bf16): k'' packed as rows, v^T as the panels, kv^T packed as the
 * 1x1 weights of the second product */
typedef struct {
  uint32_t *kp, *vt, *wp; /* vt: one panel per column block of kv (kv_bf16) */
  float *tb; /* per thread: 8 rows x SC tokens of k'' before packing */
  rv_arena *arena;
} bf16_bufs;

/* The first product kv = k v^T / N [d x d] on the bf16 kernel (float32 sums) from k''/N
 * packed (bb->kp, groups of 8 rows), inside a parallel region, with no barrier: the
 * threads split kv's columns in blocks of 16 (rows of v), and each packs its block of v^T
 * chunk by chunk (KC tokens, its panel in L2 while every group of 8 rows of k reads it;
 * over all tokens at once the panel of an 800x1344 stage 1, 13 MB, came from memory once
 * per group) into a panel of its own and accumulates all of kv's rows in its columns in
 * chunk order. Each output is the kernel's sum over a chunk added to the chunks before it,
 * whatever block its column falls in: the same bits for any number of threads. The
 * parallel region's end completes kv. (A shared panel per chunk, its columns packed by all
 * threads, needed a barrier a chunk: 44 a RAVLT-S forward at 512x512.) */
enum { KC = 2048 };
static int kv_blocks(int d, int threads) {
  const int nb = (d + 15) / 16;
  return threads < nb ? threads : nb;
}
static void kv_bf16(float *kv, const float *v, int d, int n, const bf16_bufs *bb) {
  const size_t gw = (size_t)8 * ((n + 1) / 2); /* words per group of 8 rows of k */
  const int groups = (d + 7) / 8, nb = (d + 15) / 16;
#ifdef _OPENMP
  const int tasks = kv_blocks(d, omp_get_num_threads());
#else
  const int tasks = 1;
#endif
  const size_t pw = rv_bf16_panel_words(n < KC ? n : KC, d);
#pragma omp for schedule(static) nowait
  for (int t = 0; t < tasks; t++) {
    const int c0 = 16 * (t * nb / tasks), c1e = 16 * ((t + 1) * nb / tasks);
    const int c1 = c1e < d ? c1e : d, cols = c1 - c0;
    uint32_t *vp = bb->vt + (size_t)t * pw;
    for (int k0 = 0; k0 < n; k0 += KC) {
      const int kc = n - k0 < KC ? n - k0 : KC;
      /* columns to a multiple of 16: the kernel reads whole vectors of them */
      rv_bf16_pack_panel_t(vp, v + (size_t)c0 * n + k0, (size_t)n, kc, cols, 0,
                           (cols + 15) / 16 * 16);
      for (int g = 0; g < groups; g++) /* tokens k0.. are pair k0 / 2 of the packed rows */
        rv_bf16_gemm_panel(kv + (size_t)g * 8 * d + c0, (size_t)d,
                           bb->kp + (size_t)g * gw + (size_t)(k0 / 2) * 8, gw, vp,
                           d - 8 * g < 8 ? d - 8 * g : 8, kc, cols, k0 > 0);
    }
  }
}

/* Per head: q, k overwritten (q becomes z * rope(q'), k becomes rope(k''), or k' with bb).
 * bb non-NULL: the two products in bf16 (ld == ldr == n). The element-wise work is four
 * passes over q and k in one parallel region: q' and its mean (rows); k' and the logits
 * (token blocks); k'' = k' a N with its row sums, RoPE and (bf16) the packed rows of k''/N
 * (groups of 8 rows x chunks of SC tokens); z, RoPE on q' and the product by z (token
 * blocks). Every element sees the operations of the separate passes in the same order, and
 * every sum the same order (per-row chunks of SC with 16-lane partials; per token over i). */
static void rala_head(float *res, int ldr, float *q, float *k, const float *v, int ld, int d,
                      int n, const rv_rope *rope, float *qm, float *km, float *a, float *kv,
                      float *parts, const bf16_bufs *bb) {
  const float scale = (float)pow((double)d, -0.5);
  const int par = (size_t)d * n >= 32768;
  const int nb = (n + CB - 1) / CB, nc = (n + SC - 1) / SC, groups = (d + 7) / 8;
  const size_t gw = (size_t)8 * ((n + 1) / 2); /* bf16: words per group of 8 rows of k */
  float gmax = -INFINITY;
  double sum = 0.0;
#pragma omp parallel if (par)
  {
    /* pass 1: q' in place and its mean */
#pragma omp for schedule(static)
    for (int i = 0; i < d; i++) qm[i] = (float)(elu1_sum(q + (size_t)i * ld, n) / n) * scale;
    /* pass 2: k' in place and the logits a_l = scale * mean(q') . k'_l, and their max */
#pragma omp for schedule(static) reduction(max : gmax)
    for (int b = 0; b < nb; b++) {
      const int l0 = b * CB, m = n - l0 < CB ? n - l0 : CB;
      elu_col_dot(a + l0, k + l0, ld, qm, d, m);
      for (int l = 0; l < m; l++) gmax = a[l0 + l] > gmax ? a[l0 + l] : gmax;
    }
#pragma omp for schedule(static) reduction(+ : sum)
    for (int b = 0; b < (n + 4095) / 4096; b++) {
      const int l0 = b * 4096;
      sum += exp_shift_sum(a + l0, n - l0 < 4096 ? n - l0 : 4096, gmax);
    }
    const float fac = (float)((double)n / sum); /* a_l * N = N e_l / sum */
    /* pass 3: k'' = k' a N with the chunks' row sums, then RoPE on the chunk's row pairs
     * (and with bb: k''/N packed as bf16 rows from a per-thread copy; k keeps k') */
#ifdef _OPENMP
    float *tb = bb ? bb->tb + (size_t)omp_get_thread_num() * 8 * SC : NULL;
#else
    float *tb = bb ? bb->tb : NULL;
#endif
#pragma omp for schedule(static)
    for (int it = 0; it < groups * nc; it++) {
      const int g = it / nc, c = it % nc, l0 = c * SC, m = n - l0 < SC ? n - l0 : SC;
      const int rows = d - 8 * g < 8 ? d - 8 * g : 8;
      float *kg = k + (size_t)8 * g * ld + l0, *out = tb ? tb : kg;
      const size_t lo = tb ? SC : (size_t)ld;
      for (int r = 0; r < rows; r++)
        parts[(size_t)(8 * g + r) * nc + c] =
            tb ? scale_chunk_to(tb + r * SC, kg + (size_t)r * ld, a + l0, fac, m)
               : scale_chunk_inplace(kg + (size_t)r * ld, a + l0, fac, m);
      for (int r = 0; r < rows; r += 2)
        rv_rope_pair_range_f32(out + r * lo, out + (r + 1) * lo, 8 * g + r, rope, l0, m, NULL);
      if (tb) /* tokens l0.. are pair l0 / 2 of the packed rows (l0 a multiple of 32) */
        rv_bf16_pack_rows(bb->kp + (size_t)g * gw + (size_t)(l0 / 2) * 8, gw, tb, SC, rows, m,
                          1.0f / (float)n);
    }
    /* mean(k''): the chunks' sums in order, in double */
#pragma omp for schedule(static)
    for (int i = 0; i < d; i++) {
      double s = 0.0;
      for (int c = 0; c < nc; c++) s += parts[(size_t)i * nc + c];
      km[i] = (float)(s / n);
    }
    /* pass 4: z_l = 1 / (q'_l . mean(k'') + 1e-6) in a[], then q <- rope(q') * z (z folded
     * into the numerator's right factor) on the block's row pairs; no barrier after it:
     * kv_bf16 reads k and v, and the region's end waits for it */
#pragma omp for schedule(static) nowait
    for (int b = 0; b < nb; b++) {
      const int l0 = b * CB, m = n - l0 < CB ? n - l0 : CB;
      col_dot(a + l0, q + l0, ld, km, d, m);
      for (int l = 0; l < m; l++) a[l0 + l] = 1.0f / (a[l0 + l] + 1e-6f);
      for (int i = 0; i < d; i += 2)
        rv_rope_pair_range_f32(q + (size_t)i * ld + l0, q + (size_t)(i + 1) * ld + l0, i, rope,
                               l0, m, a + l0);
    }
    /* bf16: kv[i][e] = 1/N sum_l k''_il v_el */
    if (bb) kv_bf16(kv, v, d, n, bb);
  }
  /* kv[i][e] = 1/N sum_l k''_il v_el ; res[e][l] = sum_i kv[i][e] (z rope(q'))_il */
  if (bb) { /* kv^T as 1x1 weights */
    rv_bf16_pack_cols(bb->wp, (size_t)8 * ((d + 1) / 2), kv, (size_t)d, d, d, 1.0f);
    rv_status st = rv_pointwise_bf16(res, bb->wp, NULL, q, d, d, (size_t)n, NULL, bb->arena);
    RV_ASSERT(st == RV_OK); /* its workspace was reserved by rv_rala_bf16 */
    (void)st;
    return;
  }
  rv_gemm_f32(0, 1, d, d, n, 1.0f / (float)n, k, ld, v, ld, 0.0f, kv, d);
  rv_gemm_f32(1, 0, d, n, d, 1.0f, kv, d, q, ld, 0.0f, res, ldr);
}

static rv_status rala(float *res, int ldr, float *q, float *k, const float *v, int ld,
                      int heads, int d, int n, const rv_rope *rope, rv_arena *arena, int bf16) {
  RV_ASSERT(res && q && k && v && heads > 0 && d > 0 && n > 0 && ld >= n && ldr >= n);
  RV_ASSERT(rope && 2 * rope->d2 == d && rope->h * rope->w == n);
  rv_arena_mark mk = rv_arena_get_mark(arena);
  float *qm = rv_arena_floats(arena, (size_t)d);
  float *km = rv_arena_floats(arena, (size_t)d);
  float *kv = rv_arena_floats(arena, (size_t)d * d);
  float *a = rv_arena_floats(arena, (size_t)n);
  float *parts = rv_arena_floats(arena, (size_t)d * ((n + SC - 1) / SC));
  bf16_bufs bb = {0};
  if (bf16) {
    const size_t k2 = (size_t)(n + 1) / 2, groups = (size_t)(d + 7) / 8;
    bb.kp = (uint32_t *)rv_arena_floats(arena, groups * 8 * k2);
    bb.tb = rv_arena_floats(arena, (size_t)8 * SC * omp_get_max_threads());
    bb.vt = (uint32_t *)rv_arena_floats(arena, rv_bf16_panel_words(n < KC ? n : KC, d) *
                                                    (size_t)kv_blocks(d, omp_get_max_threads()));
    bb.wp = (uint32_t *)rv_arena_floats(arena, rv_bf16_packed_words(d, d));
    bb.arena = arena;
    /* rv_pointwise_bf16's workspace (k2 * 192 words per thread), tried here so that it
     * cannot fail inside the head loop */
    rv_arena_mark probe = rv_arena_get_mark(arena);
    const int ok = rv_arena_floats(arena, (size_t)(d + 1) / 2 * 192 * omp_get_max_threads() +
                                              64) != NULL;
    rv_arena_release(arena, probe);
    if (!ok) bb.kp = NULL;
  }
  if (!qm || !km || !kv || !a || !parts ||
      (bf16 && (!bb.kp || !bb.tb || !bb.vt || !bb.wp))) {
    rv_arena_release(arena, mk);
    return RV_ERR_NOMEM;
  }
  for (int h = 0; h < heads; h++) {
    size_t off = (size_t)h * d * ld;
    rala_head(res + (size_t)h * d * ldr, ldr, q + off, k + off, v + off, ld, d, n, rope, qm, km,
              a, kv, parts, bf16 ? &bb : NULL);
  }
  rv_arena_release(arena, mk);
  return RV_OK;
}

rv_status rv_rala_f32(float *res, int ldr, float *q, float *k, const float *v, int ld,
                      int heads, int d, int n, const rv_rope *rope, rv_arena *arena) {
  return rala(res, ldr, q, k, v, ld, heads, d, n, rope, arena, 0);
}

rv_status rv_rala_bf16(float *res, int ldr, float *q, float *k, const float *v, int ld,
                       int heads, int d, int n, const rv_rope *rope, rv_arena *arena) {
  RV_ASSERT(rv_bf16_supported());
  /* the second product reads q and writes res as 1x1 maps: rows n apart */
  return rala(res, ldr, q, k, v, ld, heads, d, n, rope, arena, ld == n && ldr == n);
}

/* ---- reference ------------------------------------------------------------------------ */

/* The official formula step by step, in double, with separate buffers and the N^-1/2
 * scaling of both kv factors. */
rv_status rv_rala_naive_f32(float *res, int ldr, const float *q, const float *k,
                            const float *v, int ld, int heads, int d, int n,
                            const rv_rope *rope) {
  RV_ASSERT(2 * rope->d2 == d && rope->h * rope->w == n);
  double *qf = malloc(sizeof(double) * (size_t)d * n);
  double *kf = malloc(sizeof(double) * (size_t)d * n);
  double *qr = malloc(sizeof(double) * (size_t)d * n);
  double *kr = malloc(sizeof(double) * (size_t)d * n);
  double *eff = malloc(sizeof(double) * (size_t)n);
  double *kv = malloc(sizeof(double) * (size_t)d * d);
  double *qmean = malloc(sizeof(double) * (size_t)d);
  double *kmean = malloc(sizeof(double) * (size_t)d);
  rv_status st = RV_OK;
  if (!qf || !kf || !qr || !kr || !eff || !kv || !qmean || !kmean) { st = RV_ERR_NOMEM; goto done; }
  const double scale = 1.0 / sqrt((double)d);
  for (int h = 0; h < heads; h++) {
    const float *qh = q + (size_t)h * d * ld, *kh = k + (size_t)h * d * ld,
                *vh = v + (size_t)h * d * ld;
    for (int i = 0; i < d; i++)
      for (int l = 0; l < n; l++) {
        double x = qh[(size_t)i * ld + l], y = kh[(size_t)i * ld + l];
        qf[(size_t)i * n + l] = (x > 0 ? x : exp(x) - 1.0) + 1.0;
        kf[(size_t)i * n + l] = (y > 0 ? y : exp(y) - 1.0) + 1.0;
      }
    for (int i = 0; i < d; i++) {
      double s = 0;
      for (int l = 0; l < n; l++) s += qf[(size_t)i * n + l];
      qmean[i] = s / n;
    }
    double mx = -INFINITY;
    for (int l = 0; l < n; l++) {
      double s = 0;
      for (int i = 0; i < d; i++) s += qmean[i] * kf[(size_t)i * n + l];
      eff[l] = scale * s;
      if (eff[l] > mx) mx = eff[l];
    }
    double tot = 0;
    for (int l = 0; l < n; l++) { eff[l] = exp(eff[l] - mx); tot += eff[l]; }
    for (int l = 0; l < n; l++) eff[l] /= tot;
    for (int i = 0; i < d; i++)
      for (int l = 0; l < n; l++) kf[(size_t)i * n + l] *= eff[l] * n;
    for (int i = 0; i < d; i++) {
      double s = 0;
      for (int l = 0; l < n; l++) s += kf[(size_t)i * n + l];
      kmean[i] = s / n;
    }
    /* rope on copies (theta_shift) */
    for (int l = 0; l < n; l++) {
      int y = l / rope->w, x = l % rope->w;
      for (int i = 0; i < d; i += 2) {
        double s[2], c[2];
        for (int t = 0; t < 2; t++) {
          int j = i + t;
          if (j < rope->d2) { s[t] = rope->sin_h[(size_t)y * rope->d2 + j]; c[t] = rope->cos_h[(size_t)y * rope->d2 + j]; }
          else { s[t] = rope->sin_w[(size_t)x * rope->d2 + j - rope->d2]; c[t] = rope->cos_w[(size_t)x * rope->d2 + j - rope->d2]; }
        }
        double a0 = qf[(size_t)i * n + l], a1 = qf[(size_t)(i + 1) * n + l];
        qr[(size_t)i * n + l] = a0 * c[0] - a1 * s[0];
        qr[(size_t)(i + 1) * n + l] = a1 * c[1] + a0 * s[1];
        a0 = kf[(size_t)i * n + l]; a1 = kf[(size_t)(i + 1) * n + l];
        kr[(size_t)i * n + l] = a0 * c[0] - a1 * s[0];
        kr[(size_t)(i + 1) * n + l] = a1 * c[1] + a0 * s[1];
      }
    }
    const double rs = pow((double)n, -0.5);
    for (int i = 0; i < d; i++)
      for (int e = 0; e < d; e++) {
        double s = 0;
        for (int l = 0; l < n; l++) s += (kr[(size_t)i * n + l] * rs) * (vh[(size_t)e * ld + l] * rs);
        kv[(size_t)i * d + e] = s;
      }
    for (int l = 0; l < n; l++) {
      double zs = 0;
      for (int i = 0; i < d; i++) zs += qf[(size_t)i * n + l] * kmean[i];
      double zl = 1.0 / (zs + 1e-6);
      for (int e = 0; e < d; e++) {
        double s = 0;
        for (int i = 0; i < d; i++) s += qr[(size_t)i * n + l] * kv[(size_t)i * d + e];
        res[(size_t)h * d * ldr + (size_t)e * ldr + l] = (float)(s * zl);
      }
    }
  }
done:
  free(qf); free(kf); free(qr); free(kr); free(eff); free(kv); free(qmean); free(kmean);
  return st;
}
