/* Softmax attention of the RAVLT 'v' blocks (VanillaSelfAttention without LePE, gate and
 * proj): res[:, l] = sum_m softmax_m(scale * q_l . k_m) v[:, m], per head.
 *
 * Blocked online softmax (flash-attention style): each task owns a tile of BQ queries
 * and streams over key tiles of BK keys,
 *   S = scale * Q_tile^T K_tile                     [BQ x BK]   (GEMM)
 *   m' = max(m, rowmax S); P = exp(S - m'); l = l e^(m-m') + rowsum P
 *   O = O e^(m-m') + P V_tile^T                      [BQ x d]    (GEMM)
 * and finally res = O / l. Scratch per thread: BQ*BK + BQ*d floats (~1.2 MB for d = 64);
 * the N x N matrix is never stored (N = 4200 at stride 16 for an 800x1344 input).
 * Tiles of 512 x 512: larger query tiles re-pack K and V less often, and larger still leave
 * fewer tasks than threads at N ~ 1000 (bench/RESULTS.md, "Measurements behind the code's
 * rules").
 *
 * Where the CPU has AVX-512 both products run on kernels/ukernel.c's kernel instead (the
 * section "float32 on the AVX-512 kernel" below), with the same online softmax; the BLAS
 * tiles (rv_softmax_attention_tiles_f32) are the other CPUs' path.
 *
 * Tiles run in an OpenMP loop, each calling cblas_sgemm on its own tile. OpenBLAS's
 * OpenMP build runs a GEMM called from inside a parallel region on the calling thread
 * only (num_cpu_avail() checks omp_in_parallel()), so there is no oversubscription; where
 * OpenBLAS's runtime is not ours, rv_blas_serial_begin (kernels/gemm.c) keeps it so.
 */
#include "backbone/attention.h"
#include "kernels/ops.h"
#include "kernels/vmath.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

enum { BQ = 512, BK = 512 };


typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

/* Online-softmax update of one query row: s[0..n) <- e^(s - m'), m' = max(*m, max s);
 * returns alpha = e^(*m - m') (0 on the first tile) and sets *m = m', *sum = sum of the
 * new exponentials. Lanes of 16 keep the reductions vectorisable. */
RV_CLONES4 static float softmax_update(float *s, int n, float *m, float *sum) {
  /* the running maximum in GCC vector types: written with arrays (lane[t] = s > lane ? s :
   * lane) GCC 12 left this loop scalar, a fifth of the function's time; as a vector compare
   * and select it is one compare and one masked move per 16 keys (AVX-512) */
  v16f lane;
  for (int t = 0; t < 16; t++) lane[t] = *m;
  int j = 0;
  for (; j + 16 <= n; j += 16) {
    v16f a;
    memcpy(&a, s + j, sizeof a);
    const v16i gt = a > lane;
    lane = (v16f)((gt & (v16i)a) | (~gt & (v16i)lane));
  }
  float mx = *m;
  for (int t = 0; t < 16; t++) mx = lane[t] > mx ? lane[t] : mx;
  for (; j < n; j++) mx = s[j] > mx ? s[j] : mx;
  float acc[16] = {0};
  j = 0;
  for (; j + 16 <= n; j += 16)
    for (int t = 0; t < 16; t++) {
      const float e = rv_vexpf(s[j + t] - mx);
      s[j + t] = e;
      acc[t] += e;
    }
  float tot = 0.0f;
  for (; j < n; j++) { s[j] = rv_vexpf(s[j] - mx); tot += s[j]; }
  for (int t = 0; t < 16; t++) tot += acc[t];
  const float alpha = *m == -INFINITY ? 0.0f : rv_vexpf(*m - mx);
  *m = mx;
  *sum = tot;
  return alpha;
}

/* One query tile of one head. */
static void flash_tile(float *res, int ldr, const float *q, const float *k, const float *v,
                       int ld, int d, int n, float scale, int q0, int bq, float *s, float *o,
                       float *m, float *l) {
  for (int i = 0; i < bq; i++) { m[i] = -INFINITY; l[i] = 0.0f; }
  for (size_t i = 0; i < (size_t)bq * d; i++) o[i] = 0.0f;
  for (int k0 = 0; k0 < n; k0 += BK) {
    const int bk = n - k0 < BK ? n - k0 : BK;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, bq, bk, d, scale, q + q0, ld, k + k0,
                ld, 0.0f, s, BK);
    for (int i = 0; i < bq; i++) {
      float sum;
      const float alpha = softmax_update(s + (size_t)i * BK, bk, &m[i], &sum);
      if (k0 > 0) {
        float *oi = o + (size_t)i * d;
        for (int e = 0; e < d; e++) oi[e] *= alpha;
      }
      l[i] = l[i] * alpha + sum;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bq, d, bk, 1.0f, s, BK, v + k0, ld,
                1.0f, o, d);
  }
  /* res is channel-major: 16 x 16 blocks, so each row of res gets a 64-byte run (one float
   * per cache line, as a plain transposed loop writes, made this store 95% of the function) */
  for (int i = 0; i < bq; i++) l[i] = 1.0f / l[i];
  for (int i0 = 0; i0 < bq; i0 += 16) {
    const int ni = bq - i0 < 16 ? bq - i0 : 16;
    for (int e0 = 0; e0 < d; e0 += 16) {
      const int ne = d - e0 < 16 ? d - e0 : 16;
      float blk[16][16];
      for (int i = 0; i < ni; i++)
        for (int e = 0; e < ne; e++) blk[e][i] = o[(size_t)(i0 + i) * d + e0 + e] * l[i0 + i];
      for (int e = 0; e < ne; e++)
        memcpy(res + (size_t)(e0 + e) * ldr + q0 + i0, blk[e], sizeof(float) * (size_t)ni);
    }
  }
}

/* One call's tasks (head, query tile) and what they share. */
typedef struct {
  float *res;
  int ldr, ld, d, n, nqt;
  const float *q, *k, *v;
  float scale;
  float *scratch; /* per floats per thread */
  size_t per;
  uint32_t *packed; /* kernel paths: K and V of every head (kwords + vwords each) */
  size_t kwords, vwords, kgw, vgw;
} att_job;

typedef void (*att_task)(const att_job *j, int t, int tid);

static int att_threads(int tasks) {
  int nth = 1;
#ifdef _OPENMP
  nth = omp_get_max_threads();
#endif
  if (nth > tasks) nth = tasks;
  return nth < 1 ? 1 : nth;
}

/* preps 0..preps-1 (packing, static), then tasks 0..tasks-1 on nth threads, one at a time
 * each (dynamic), in one parallel region: one sleep and wake of the threads (OMP passive)
 * fewer than two regions */
static void att_run(const att_job *j, int tasks, int nth, att_task fn, att_task prep,
                    int preps) {
  if (nth == 1) {
    /* not an inactive parallel region: inside one, OpenBLAS (omp_in_parallel() false) would
     * fork its own team, which LLVM's libomp (clang builds) serialises while OpenBLAS's
     * workers wait on each other: a sched_yield livelock */
    for (int t = 0; t < preps; t++) prep(j, t, 0);
    for (int t = 0; t < tasks; t++) fn(j, t, 0);
    return;
  }
#pragma omp parallel num_threads(nth)
  {
    int tid = 0;
#ifdef _OPENMP
    tid = omp_get_thread_num();
#endif
    if (preps > 0) {
#pragma omp for schedule(static)
      for (int t = 0; t < preps; t++) prep(j, t, tid);
    }
    rv_blas_serial bs; /* the tiles' sgemm on this thread whatever runtime OpenBLAS asks */
    rv_blas_serial_begin(&bs);
#pragma omp for schedule(dynamic, 1) nowait
    for (int t = 0; t < tasks; t++) fn(j, t, tid);
    rv_blas_serial_end(&bs);
  }
}

/* The kernel paths' two buffers: K and V of every head packed, and the threads' scratch;
 * 0 (the arena back at mk) if either fails */
static int att_buffers(rv_arena *arena, rv_arena_mark mk, size_t packed_floats,
                       size_t scratch_floats, float **packed, float **scratch) {
  *packed = rv_arena_floats(arena, packed_floats);
  *scratch = rv_arena_floats(arena, scratch_floats);
  if (*packed && *scratch) return 1;
  rv_arena_release(arena, mk);
  return 0;
}

static void f32_task(const att_job *j, int t, int tid) {
  float *s = j->scratch + j->per * tid, *o = s + (size_t)BQ * BK, *m = o + (size_t)BQ * j->d;
  const int h = t / j->nqt, q0 = (t % j->nqt) * BQ, bq = j->n - q0 < BQ ? j->n - q0 : BQ;
  const size_t off = (size_t)h * j->d * j->ld;
  flash_tile(j->res + (size_t)h * j->d * j->ldr, j->ldr, j->q + off, j->k + off, j->v + off,
             j->ld, j->d, j->n, j->scale, q0, bq, s, o, m, m + BQ);
}


/* ---- float32 on the AVX-512 kernel (kernels/ukernel.c) --------------------------------------
 * Where rv_ukernel_supported(): flash_tile's products computed transposed, as the bf16 ones
 * below, on rv_ukernel_f32 / rv_ukernel_acc_f32 and no BLAS call, for each block of 48
 * queries against each key tile of BKU:
 *   S^T = (scale K_tile)^T Q_block  [bk x 48]  (K packed per head, once, as 8-key groups
 *                                              [key / 8][c][key % 8]; the query tile
 *                                              copied once as [d][48] blocks)
 *   softmax down the columns, in place (16 queries per vector)
 *   O^T = O^T alpha + V_tile P^T    [d x 48]   (V packed per head, once, as 8-channel groups
 *                                              [e / 8][key][e % 8]; P^T, the S^T block)
 * OpenBLAS re-packed the 512 x 64 query tile for every key tile and the 512 x 512
 * probabilities for the second product (its copy routines were a tenth of the attention's
 * time) and stored the 512 x 64 output tile row-major, transposed at the end: 1.03-1.15x
 * with SkylakeX kernels, 1.5-1.8x with Haswell ones (bench/RESULTS.md). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "kernels/lanes16.h"
#define ATT_F32 __attribute__((target("avx512f,fma")))

/* rv_vexpf (kernels/vmath.h) on 16 lanes, operation for operation */
ATT_F32 static inline __m512 exp16_f32(__m512 x) {
  x = _mm512_min_ps(x, _mm512_set1_ps(88.3762626647949f));
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.3365f));
  const __m512 n = _mm512_sub_ps(
      _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(12582912.0f)),
      _mm512_set1_ps(12582912.0f));
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500e-4f), r,
                             _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 e = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r),
                                 _mm512_set1_ps(1.0f));
  const __m512i bits = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(e, _mm512_castsi512_ps(bits));
}

/* The running maximum of 16 columns of S^T [bk x 16] (row stride ls) from init: a > mx ?
 * a : mx (vmaxps: a NaN score is skipped), four chains */
__attribute__((target("avx512f"))) static inline __m512 col_max16(const float *st, size_t ls,
                                                                  int bk, __m512 init) {
  __m512 mx0 = init, mx1 = init, mx2 = init, mx3 = init;
  int j = 0;
  for (; j + 4 <= bk; j += 4) {
    mx0 = _mm512_max_ps(_mm512_loadu_ps(st + (size_t)j * ls), mx0);
    mx1 = _mm512_max_ps(_mm512_loadu_ps(st + (size_t)(j + 1) * ls), mx1);
    mx2 = _mm512_max_ps(_mm512_loadu_ps(st + (size_t)(j + 2) * ls), mx2);
    mx3 = _mm512_max_ps(_mm512_loadu_ps(st + (size_t)(j + 3) * ls), mx3);
  }
  for (; j < bk; j++) mx0 = _mm512_max_ps(_mm512_loadu_ps(st + (size_t)j * ls), mx0);
  return _mm512_max_ps(_mm512_max_ps(mx0, mx1), _mm512_max_ps(mx2, mx3));
}

/* Column softmax update of S^T [bk x 16 queries] (row stride ls) in place: the columns'
 * running maxima m, sums l and rescale factors alpha (16 each, all lanes: columns past the
 * tile hold finite values, never read back) */
ATT_F32 static void softmax_cols16(float *st, size_t ls, int bk, float *m, float *l,
                                   float *alpha) {
  const __m512 m0 = _mm512_loadu_ps(m);
  const __m512 mx = col_max16(st, ls, bk, m0);
  int j;
  __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0;
  for (j = 0; j + 2 <= bk; j += 2) {
    float *s0 = st + (size_t)j * ls, *s1 = s0 + ls;
    const __m512 e0 = exp16_f32(_mm512_sub_ps(_mm512_loadu_ps(s0), mx));
    const __m512 e1 = exp16_f32(_mm512_sub_ps(_mm512_loadu_ps(s1), mx));
    _mm512_storeu_ps(s0, e0);
    _mm512_storeu_ps(s1, e1);
    acc0 = _mm512_add_ps(acc0, e0);
    acc1 = _mm512_add_ps(acc1, e1);
  }
  if (j < bk) {
    float *s0 = st + (size_t)j * ls;
    const __m512 e0 = exp16_f32(_mm512_sub_ps(_mm512_loadu_ps(s0), mx));
    _mm512_storeu_ps(s0, e0);
    acc0 = _mm512_add_ps(acc0, e0);
  }
  /* alpha = e^(m - m'), 0 where m was -inf (the first tile) */
  const __mmask16 first = _mm512_cmp_ps_mask(m0, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ);
  const __m512 a = _mm512_mask_mov_ps(exp16_f32(_mm512_sub_ps(m0, mx)), first,
                                      _mm512_setzero_ps());
  _mm512_storeu_ps(alpha, a);
  _mm512_storeu_ps(l, _mm512_fmadd_ps(_mm512_loadu_ps(l), a, _mm512_add_ps(acc0, acc1)));
  _mm512_storeu_ps(m, mx);
}

/* A block's O^T [d x 48] times alpha, column by column (both precisions' loops) */
ATT_F32 static void rescale_cols(float *ot, int d, const float *alpha) {
  const __m512 a0 = _mm512_loadu_ps(alpha), a1 = _mm512_loadu_ps(alpha + 16),
               a2 = _mm512_loadu_ps(alpha + 32);
  for (int e = 0; e < d; e++) {
    float *r = ot + (size_t)e * 48;
    _mm512_storeu_ps(r, _mm512_mul_ps(_mm512_loadu_ps(r), a0));
    _mm512_storeu_ps(r + 16, _mm512_mul_ps(_mm512_loadu_ps(r + 16), a1));
    _mm512_storeu_ps(r + 32, _mm512_mul_ps(_mm512_loadu_ps(r + 32), a2));
  }
}
#define ATT_HAVE_UK 1
#else
#define ATT_HAVE_UK 0
static void softmax_cols16(float *st, size_t ls, int bk, float *m, float *l, float *alpha) {
  (void)st, (void)ls, (void)bk, (void)m, (void)l, (void)alpha;
  RV_ASSERT(0); /* the kernel path runs only where rv_ukernel_supported() */
}
static void rescale_cols(float *ot, int d, const float *alpha) {
  (void)ot, (void)d, (void)alpha;
  RV_ASSERT(0);
}
#endif

/* One query tile of one head against key tiles of BKU, 48 queries (the kernel's block) at
 * a time within a key tile: the block's S^T [BKU x 48] stays in L1 from the product through
 * the column softmax to the second product, and the key tile's packed K and V (2 x 32 KB
 * for d = 64) stay in L1 / L2 for all the tile's blocks (query blocks outside, K and V came
 * from L3 once per block: 20% slower).
 * kp, vp: this head's packed K (keys rounded up to 8) and V (channels rounded up to 8, np
 * keys a group); qp [bq / 48 blocks][d][48]; st [BKU x 48]; ot [bq / 48 blocks][dp][48];
 * m, l BQ + 48 each, alpha 48. */
enum { BKU = 128 };
static void flash_tile_uk(float *res, int ldr, const float *kp, const float *vp, int np,
                          const float *q, int ld, int d, int n, int q0, int bq, float *qp,
                          float *st, float *ot, float *m, float *l, float *alpha) {
  const int dp = (d + UK_MR - 1) / UK_MR * UK_MR, nb = (bq + UK_NT - 1) / UK_NT;
  /* the query tile as blocks [d][48]: read in place, rows ld apart, a power of two such as
   * N = 1024 put the block's 64 rows in one L1 set (the products ran 25% slower) */
  for (int b = 0; b < nb; b++) {
    const int i0 = b * UK_NT, nt = bq - i0 < UK_NT ? bq - i0 : UK_NT;
    for (int c = 0; c < d; c++) {
      float *o = qp + ((size_t)b * d + c) * UK_NT;
      memcpy(o, q + (size_t)c * ld + q0 + i0, sizeof(float) * nt);
      for (int i = nt; i < UK_NT; i++) o[i] = 0.0f;
    }
  }
  for (int i = 0; i < nb * UK_NT; i++) { m[i] = -INFINITY; l[i] = 0.0f; }
  for (size_t i = 0; i < (size_t)nb * dp * UK_NT; i++) ot[i] = 0.0f;
  /* columns past bq: read by the softmax's vectors, finite */
  for (size_t i = 0; i < (size_t)BKU * UK_NT; i++) st[i] = 0.0f;
  for (int k0 = 0; k0 < n; k0 += BKU) {
    const int bk = n - k0 < BKU ? n - k0 : BKU;
    for (int b = 0; b < nb; b++) {
      const int i0 = b * UK_NT, nt = bq - i0 < UK_NT ? bq - i0 : UK_NT;
      float *ob = ot + (size_t)b * dp * UK_NT;
      /* S^T rows of 8 keys (the last group's padding keys give rows past bk, not read) */
      for (int g = 0; g < bk; g += UK_MR)
        rv_ukernel_f32(st + (size_t)g * UK_NT, UK_NT, kp + (size_t)(k0 + g) * d,
                       qp + (size_t)b * d * UK_NT, UK_NT, d, nt, NULL);
      for (int c = 0; c < UK_NT; c += 16)
        softmax_cols16(st + c, UK_NT, bk, m + i0 + c, l + i0 + c, alpha + c);
      if (k0 > 0) rescale_cols(ob, dp, alpha);
      for (int e0 = 0; e0 < dp; e0 += UK_MR)
        rv_ukernel_acc_f32(ob + (size_t)e0 * UK_NT, UK_NT,
                           vp + (size_t)e0 * np + (size_t)k0 * UK_MR, st, UK_NT, bk, nt);
    }
  }
  for (int i = 0; i < bq; i++) l[i] = 1.0f / l[i];
  for (int b = 0; b < nb; b++) {
    const int i0 = b * UK_NT, nt = bq - i0 < UK_NT ? bq - i0 : UK_NT;
    for (int e = 0; e < d; e++) {
      const float *r = ot + ((size_t)b * dp + e) * UK_NT;
      float *o = res + (size_t)e * ldr + q0 + i0;
      for (int i = 0; i < nt; i++) o[i] = r[i] * l[i0 + i];
    }
  }
}

static void uk_task(const att_job *j, int t, int tid) {
  const int dp = (j->d + UK_MR - 1) / UK_MR * UK_MR;
  float *st = j->scratch + j->per * tid, *ot = st + (size_t)BKU * UK_NT;
  float *qp = ot + (size_t)dp * (BQ + UK_NT), *m = qp + (size_t)dp * (BQ + UK_NT);
  const int h = t / j->nqt, q0 = (t % j->nqt) * BQ, bq = j->n - q0 < BQ ? j->n - q0 : BQ;
  const float *kp = (const float *)j->packed + (size_t)h * (j->kwords + j->vwords);
  flash_tile_uk(j->res + (size_t)h * j->d * j->ldr, j->ldr, kp, kp + j->kwords, (int)j->kgw,
                j->q + (size_t)h * j->d * j->ld, j->ld, j->d, j->n, q0, bq, qp, st, ot, m,
                m + BQ + UK_NT, m + 2 * (BQ + UK_NT));
}

/* prep h of attention_uk: K (h even) or V (h odd) of head h / 2 packed, K times scale */
static void uk_pack(const att_job *j, int h, int tid) {
  (void)tid;
  const int d = j->d, n = j->n, np = (int)j->kgw;
  const size_t kfl = j->kwords, vfl = j->vwords, off = (size_t)(h / 2) * d * j->ld;
  float *dst = (float *)j->packed + (size_t)(h / 2) * (kfl + vfl);
  if (h % 2 == 0) { /* K: [key / 8][c][key % 8] times scale, zero keys past n */
    const float *kh = j->k + off;
    for (int g = 0; g < np; g += UK_MR) {
      const int nk = n - g < UK_MR ? n - g : UK_MR;
      for (int c = 0; c < d; c++) {
        float *o = dst + (size_t)g * d + (size_t)c * UK_MR;
        const float *src = kh + (size_t)c * j->ld + g;
        for (int r = 0; r < nk; r++) o[r] = src[r] * j->scale;
        for (int r = nk; r < UK_MR; r++) o[r] = 0.0f;
      }
    }
  } else { /* V: [e / 8][key][e % 8], zero keys past n and channels past d */
    const float *vh = j->v + off;
    float *vd = dst + kfl;
    memset(vd, 0, sizeof(float) * vfl);
    for (int e = 0; e < d; e++) {
      const float *src = vh + (size_t)e * j->ld;
      float *o = vd + (size_t)(e / UK_MR) * UK_MR * np + e % UK_MR;
      for (int key = 0; key < n; key++) o[(size_t)key * UK_MR] = src[key];
    }
  }
}

static rv_status attention_uk(float *res, int ldr, const float *q, const float *k,
                              const float *v, int ld, int heads, int d, int n, float scale,
                              rv_arena *arena) {
  const int nqt = (n + BQ - 1) / BQ, tasks = heads * nqt, nth = att_threads(tasks);
  const int np = (n + UK_MR - 1) / UK_MR * UK_MR, dp = (d + UK_MR - 1) / UK_MR * UK_MR;
  const size_t kfl = (size_t)np * d, vfl = (size_t)dp * np; /* packed K, V floats a head */
  const size_t per = (size_t)BKU * UK_NT + (size_t)(2 * dp + 3) * (BQ + UK_NT) + 16;
  rv_arena_mark mk = rv_arena_get_mark(arena);
  float *packed, *scratch;
  if (!att_buffers(arena, mk, (kfl + vfl) * heads, per * nth, &packed, &scratch))
    return RV_ERR_NOMEM;
  const att_job j = {res, ldr, ld, d, n, nqt, q, k, v, scale, scratch, per,
                     (uint32_t *)packed, kfl, vfl, (size_t)np, 0};
  att_run(&j, tasks, nth, uk_task, uk_pack, 2 * heads);
  rv_arena_release(arena, mk);
  return RV_OK;
}

rv_status rv_softmax_attention_tiles_f32(float *res, int ldr, const float *q, const float *k,
                                         const float *v, int ld, int heads, int d, int n,
                                         float scale, rv_arena *arena) {
  RV_ASSERT(res && q && k && v && heads > 0 && d > 0 && n > 0 && ld >= n && ldr >= n);
  const int nqt = (n + BQ - 1) / BQ, tasks = heads * nqt, nth = att_threads(tasks);
  const size_t per = (size_t)BQ * BK + (size_t)BQ * d + 2 * (size_t)BQ + 16;
  rv_arena_mark mk = rv_arena_get_mark(arena);
  float *scratch = rv_arena_floats(arena, per * nth);
  if (!scratch) return RV_ERR_NOMEM;
  const att_job j = {res, ldr, ld, d, n, nqt, q, k, v, scale, scratch, per, NULL, 0, 0, 0, 0};
  att_run(&j, tasks, nth, f32_task, NULL, 0);
  rv_arena_release(arena, mk);
  return RV_OK;
}

rv_status rv_softmax_attention_f32(float *res, int ldr, const float *q, const float *k,
                                   const float *v, int ld, int heads, int d, int n,
                                   float scale, rv_arena *arena) {
  RV_ASSERT(res && q && k && v && heads > 0 && d > 0 && n > 0 && ld >= n && ldr >= n);
  if (ATT_HAVE_UK && rv_ukernel_supported())
    return attention_uk(res, ldr, q, k, v, ld, heads, d, n, scale, arena);
  return rv_softmax_attention_tiles_f32(res, ldr, q, k, v, ld, heads, d, n, scale, arena);
}

/* ---- bf16 (rv_softmax_attention_bf16) ----------------------------------------------------
 * The same blocked online softmax with the two products on the bf16 kernel, computed
 * transposed so that every operand is in the layout the kernel packs without a transpose:
 *   S^T = (scale K_tile)^T Q_tile  [bk x 48]   (K packed per head, once, as rows = keys;
 *                                              the query tile packed once as the panel)
 *   softmax down the columns (16 queries per vector: no horizontal reductions)
 *   O^T = O^T alpha + V_tile P^T   [d x 48]    (V packed per head, once, as rows = channels;
 *                                              P^T, the S^T block, packed as the panel)
 * key tiles of BKU outside, the query tile's 48-query blocks inside (flash_tile_uk's
 * order), and res[:, q0 + i] = O^T[:, i] / l_i, rows contiguous. */

/* Column softmax update of S^T [bk x bq] (row stride ls) for 16 query columns at i0, the
 * probabilities written straight into the panel of the second product as bf16 pairs (keys
 * 2i and 2i + 1 of each column: the layout rv_bf16_pack_panel makes, row stride pw words,
 * the nq valid columns, zeros in the rest of the 16) instead of back into S^T for a separate
 * packing pass over the tile; the sums are of the float32 values, key by key. All in
 * registers: written as 16-lane loops over arrays, GCC kept the sums and the exponentials
 * on the stack, and each key's add waited on the store of the last (store forwarding: half
 * of this function's time, a quarter of the whole bf16 attention's). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ATT_BF16 __attribute__((target("avx512bf16,avx512f,avx512bw,avx512vl")))

/* rv_vexpf_bf16 (kernels/vmath.h) on 16 lanes, operation for operation as GCC compiles the
 * scalar one in this file (-ffp-contract=fast: x log2e + 1.5 2^23 and x log2e - n fused) */
ATT_BF16 static inline __m512 exp16_bf16(__m512 x) {
  x = _mm512_min_ps(x, _mm512_set1_ps(88.0f));
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.3365f));
  const __m512 l2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, l2e, _mm512_set1_ps(12582912.0f)),
                                 _mm512_set1_ps(12582912.0f));
  const __m512 f = _mm512_fmsub_ps(x, l2e, n);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(5.5171669075e-02f), f,
                             _mm512_set1_ps(2.4261112219e-01f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9326098546e-01f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.9992807354e-01f));
  const __m512i bits = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
}

ATT_BF16 static void softmax_pack16(const float *st, size_t ls, int bk, int nq, float *m,
                                    float *l, float *alpha, uint32_t *pan, size_t pw) {
  const __mmask16 valid = rv_lanes_below(nq);
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                       24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                       16, 0);
  const __m512 mx = col_max16(st, ls, bk, _mm512_maskz_loadu_ps(valid, m));
  int j;
  __m512 acc = _mm512_setzero_ps();
  for (j = 0; j < bk; j += 2) {
    const __m512 e0 = exp16_bf16(_mm512_sub_ps(_mm512_loadu_ps(st + (size_t)j * ls), mx));
    acc = _mm512_add_ps(acc, e0);
    __m512 e1 = _mm512_setzero_ps(); /* the pair past an odd key count: zeros */
    if (j + 1 < bk) {
      e1 = exp16_bf16(_mm512_sub_ps(_mm512_loadu_ps(st + (size_t)(j + 1) * ls), mx));
      acc = _mm512_add_ps(acc, e1);
    }
    const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_maskz_mov_ps(valid, e1),
                                           _mm512_maskz_mov_ps(valid, e0));
    _mm512_storeu_si512((void *)(pan + (size_t)(j / 2) * pw),
                        _mm512_permutexvar_epi16(idx, (__m512i)h));
  }
  float mxa[16], acca[16];
  _mm512_storeu_ps(mxa, mx);
  _mm512_storeu_ps(acca, acc);
  for (int t = 0; t < nq; t++) {
    alpha[t] = m[t] == -INFINITY ? 0.0f : rv_vexpf(m[t] - mxa[t]);
    l[t] = l[t] * alpha[t] + acca[t];
    m[t] = mxa[t];
  }
}
#else
static void softmax_pack16(const float *st, size_t ls, int bk, int nq, float *m, float *l,
                           float *alpha, uint32_t *pan, size_t pw) {
  (void)st, (void)ls, (void)bk, (void)nq, (void)m, (void)l, (void)alpha, (void)pan, (void)pw;
  RV_ASSERT(0); /* rv_softmax_attention_bf16 runs only where rv_bf16_supported() */
}
#endif

enum { BQ16 = 512 }; /* query tile (a multiple of 16 and of the kernel's 48-pixel block) */

/* One query tile of one head, as flash_tile_uk: against key tiles of BKU keys, 48 queries
 * at a time, the block's S^T [BKU x 48], its probabilities as bf16 pairs [BKU / 2 x 48] and
 * its O^T [d x 48] in L1 (S^T tiles of 512 x 512 streamed the column softmax from L2).
 * qpan: the query tile's panel; ppan BKU / 2 x 48 words; st BKU x 48; ot [bq / 48][dp][48];
 * m, l BQ16 + 48 each, alpha 48. */
static void flash_tile_bf16(float *res, int ldr, const uint32_t *kp, const uint32_t *vp,
                            size_t kgw, size_t vgw, const float *q, int ld, int d, int n,
                            int q0, int bq, uint32_t *qpan, uint32_t *ppan, float *st,
                            float *ot, float *m, float *l, float *alpha) {
  const int nb = (bq + 47) / 48, pw = nb * 48, dp = (d + 7) / 8 * 8, d2 = (d + 1) / 2;
  rv_bf16_pack_panel(qpan, q + q0, (size_t)ld, d, bq); /* rows pw words: bq rounded to 48 */
  for (int i = 0; i < pw; i++) { m[i] = -INFINITY; l[i] = 0.0f; }
  for (int i = 0; i < 48; i++) alpha[i] = 1.0f;
  for (size_t i = 0; i < (size_t)nb * dp * 48; i++) ot[i] = 0.0f;
  /* columns past bq: read by the softmax's vectors, finite */
  for (size_t i = 0; i < (size_t)BKU * 48; i++) st[i] = 0.0f;
  for (int k0 = 0; k0 < n; k0 += BKU) {
    const int bk = n - k0 < BKU ? n - k0 : BKU;
    for (int b = 0; b < nb; b++) {
      const int i0 = b * 48, nt = bq - i0 < 48 ? bq - i0 : 48;
      float *ob = ot + (size_t)b * dp * 48;
      /* S^T [bk x nt]: keys k0.. are rows k0.. of the packed K (k0 a multiple of 8; the
       * last group's padding keys give rows past bk, not read) */
      for (int g = 0; g < bk; g += 8)
        rv_bf16_block(st + (size_t)g * 48, 48, kp + (size_t)((k0 + g) / 8) * kgw, qpan + i0,
                      (size_t)pw, d2, 8, nt, NULL, 0);
      for (int c = 0; c < 48; c += 16)
        softmax_pack16(st + c, 48, bk, nt - c < 16 ? (nt - c > 0 ? nt - c : 0) : 16,
                       m + i0 + c, l + i0 + c, alpha + c, ppan + c, 48);
      if (k0 > 0) rescale_cols(ob, d, alpha);
      /* O^T += V[:, k0..k0+bk) P^T (keys 2i, 2i + 1 the panel's pair i) */
      for (int e0 = 0; e0 < d; e0 += 8)
        rv_bf16_block(ob + (size_t)e0 * 48, 48, vp + (size_t)(e0 / 8) * vgw + (size_t)(k0 / 2) * 8,
                      ppan, 48, (bk + 1) / 2, d - e0 < 8 ? d - e0 : 8, nt, NULL, 1);
    }
  }
  for (int i = 0; i < bq; i++) l[i] = 1.0f / l[i];
  for (int b = 0; b < nb; b++) {
    const int i0 = b * 48, nt = bq - i0 < 48 ? bq - i0 : 48;
    for (int e = 0; e < d; e++) {
      const float *r = ot + ((size_t)b * dp + e) * 48;
      float *o = res + (size_t)e * ldr + q0 + i0;
      for (int i = 0; i < nt; i++) o[i] = r[i] * l[i0 + i];
    }
  }
}

static void bf16_task(const att_job *j, int t, int tid) {
  const int dp = (j->d + 7) / 8 * 8;
  float *base = j->scratch + j->per * tid;
  uint32_t *qpan = (uint32_t *)base, *ppan = qpan + rv_bf16_panel_words(j->d, BQ16);
  float *st = (float *)(ppan + (size_t)BKU / 2 * 48);
  float *ot = st + (size_t)BKU * 48, *m = ot + (size_t)dp * (BQ16 + 48);
  const int h = t / j->nqt, q0 = (t % j->nqt) * BQ16;
  const int bq = j->n - q0 < BQ16 ? j->n - q0 : BQ16;
  const uint32_t *kp = j->packed + (size_t)h * (j->kwords + j->vwords);
  flash_tile_bf16(j->res + (size_t)h * j->d * j->ldr, j->ldr, kp, kp + j->kwords, j->kgw,
                  j->vgw, j->q + (size_t)h * j->d * j->ld, j->ld, j->d, j->n, q0, bq, qpan,
                  ppan, st, ot, m, m + BQ16 + 48, m + 2 * (BQ16 + 48));
}

/* prep h of rv_softmax_attention_bf16: K (h even, times scale) or V (h odd) of head h / 2 */
static void bf16_pack(const att_job *j, int h, int tid) {
  (void)tid;
  const size_t off = (size_t)(h / 2) * j->d * j->ld;
  uint32_t *dst = j->packed + (size_t)(h / 2) * (j->kwords + j->vwords);
  if (h % 2 == 0) rv_bf16_pack_cols(dst, j->kgw, j->k + off, (size_t)j->ld, j->n, j->d, j->scale);
  else rv_bf16_pack_rows(dst + j->kwords, j->vgw, j->v + off, (size_t)j->ld, j->d, j->n, 1.0f);
}

rv_status rv_softmax_attention_bf16(float *res, int ldr, const float *q, const float *k,
                                    const float *v, int ld, int heads, int d, int n,
                                    float scale, rv_arena *arena) {
  RV_ASSERT(res && q && k && v && heads > 0 && d > 0 && n > 0 && ld >= n && ldr >= n);
  RV_ASSERT(rv_bf16_supported());
  const int nqt = (n + BQ16 - 1) / BQ16, tasks = heads * nqt, nth = att_threads(tasks);
  const int np = (n + 7) / 8 * 8, dp = (d + 7) / 8 * 8;
  const size_t kgw = (size_t)8 * ((d + 1) / 2); /* K packed: rows = keys, k = channels */
  const size_t vgw = (size_t)8 * ((np + 1) / 2); /* V packed: rows = channels, k = keys */
  const size_t kwords = (size_t)(np / 8) * kgw, vwords = (size_t)(dp / 8) * vgw;
  const size_t per = rv_bf16_panel_words(d, BQ16) + (size_t)BKU / 2 * 48 + (size_t)BKU * 48 +
                     (size_t)(dp + 3) * (BQ16 + 48) + 64;
  rv_arena_mark mk = rv_arena_get_mark(arena);
  float *packed_f, *scratch;
  if (!att_buffers(arena, mk, (kwords + vwords) * heads, per * nth, &packed_f, &scratch))
    return RV_ERR_NOMEM;
  uint32_t *packed = (uint32_t *)packed_f;
  /* K and V of every head packed once (a key range is an offset into them): bf16_pack */
  const att_job j = {res,   ldr,     ld,   d,      n,      nqt,    q,   k,  v,
                     scale, scratch, per,  packed, kwords, vwords, kgw, vgw};
  att_run(&j, tasks, nth, bf16_task, bf16_pack, 2 * heads);
  rv_arena_release(arena, mk);
  return RV_OK;
}

rv_status rv_softmax_attention_naive_f32(float *res, int ldr, const float *q, const float *k,
                                         const float *v, int ld, int heads, int d, int n,
                                         float scale) {
  double *a = malloc(sizeof(double) * (size_t)n * n);
  if (!a) return RV_ERR_NOMEM;
  for (int h = 0; h < heads; h++) {
    const float *qh = q + (size_t)h * d * ld, *kh = k + (size_t)h * d * ld,
                *vh = v + (size_t)h * d * ld;
    for (int i = 0; i < n; i++) {
      double mx = -INFINITY;
      for (int j = 0; j < n; j++) {
        double s = 0;
        for (int c = 0; c < d; c++) s += (double)qh[(size_t)c * ld + i] * kh[(size_t)c * ld + j];
        a[(size_t)i * n + j] = scale * s;
        if (a[(size_t)i * n + j] > mx) mx = a[(size_t)i * n + j];
      }
      double tot = 0;
      for (int j = 0; j < n; j++) { a[(size_t)i * n + j] = exp(a[(size_t)i * n + j] - mx); tot += a[(size_t)i * n + j]; }
      for (int j = 0; j < n; j++) a[(size_t)i * n + j] /= tot;
    }
    for (int e = 0; e < d; e++)
      for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < n; j++) s += a[(size_t)i * n + j] * vh[(size_t)e * ld + j];
        res[(size_t)h * d * ldr + (size_t)e * ldr + i] = (float)s;
      }
  }
  free(a);
  return RV_OK;
}
