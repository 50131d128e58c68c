/* Rank analysis (backbone/rank.h, `ravlt rank`): SVD rank on constructed matrices of known
 * rank (numpy matrix_rank cases, the tolerance boundary, user tolerances); the recomputed
 * attention output against the official traces of the tiny fixture (tolerance 1e-4 of
 * max(1, scale)) and against the backbone's own traces on tiny and d64; the KV buffers
 * re-derived here from q, k, v with independent loops (1e-9 relative); rank bounds; the
 * CLI's JSON and PNG on a whole-model e2e checkpoint and an opencv-doc photograph; bad
 * inputs. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"
#include "backbone/rank.h"
#include "backbone/ravlt.h"
#include "formats/image.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <sys/wait.h>
#include <unistd.h>

#define PARITY_TOL 1e-4
#define PHOTO "/usr/share/doc/opencv-doc/examples/data/messi5.jpg"

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
  if (buf) buf[n] = 0;
  fclose(f);
  return buf;
}

/* ---- known ranks ---------------------------------------------------------------------- */

static double drand(uint64_t *s) { return (double)test_rand(s); }

/* q [m x k] with orthonormal columns (modified Gram-Schmidt of random columns), row-major */
static void orthonormal(double *q, int m, int k, uint64_t seed) {
  for (int i = 0; i < m * k; i++) q[i] = drand(&seed);
  for (int j = 0; j < k; j++) {
    for (int p = 0; p < j; p++) {
      double dot = 0;
      for (int i = 0; i < m; i++) dot += q[i * k + j] * q[i * k + p];
      for (int i = 0; i < m; i++) q[i * k + j] -= dot * q[i * k + p];
    }
    double nrm = 0;
    for (int i = 0; i < m; i++) nrm += q[i * k + j] * q[i * k + j];
    nrm = sqrt(nrm);
    for (int i = 0; i < m; i++) q[i * k + j] /= nrm;
  }
}

/* a [m x n] = U diag(s) V^T with k = min(m, n) given singular values */
static double *with_spectrum(int m, int n, const double *s, uint64_t seed) {
  const int k = m < n ? m : n;
  double *u = malloc(sizeof(double) * m * k), *v = malloc(sizeof(double) * n * k);
  double *a = calloc((size_t)m * n, sizeof(double));
  orthonormal(u, m, k, seed);
  orthonormal(v, n, k, seed + 99);
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double acc = 0;
      for (int p = 0; p < k; p++) acc += u[i * k + p] * s[p] * v[j * k + p];
      a[i * n + j] = acc;
    }
  free(u);
  free(v);
  return a;
}

static int rank_of(const double *a, int m, int n, double rtol, double *s_out) {
  rv_ctx *ctx = rv_ctx_create();
  double s[64];
  assert_true((m < n ? m : n) <= 64);
  assert_int_equal(rv_rank_svd(s, a, m, n, n, ctx), RV_OK);
  const int k = m < n ? m : n;
  for (int i = 1; i < k; i++) assert_true(s[i] <= s[i - 1] && s[i] >= 0);
  if (s_out) memcpy(s_out, s, sizeof(double) * k);
  rv_ctx_free(ctx);
  return rv_rank_count(s, k, m, n, rtol);
}

static void test_known_ranks(void **state) {
  (void)state;
  /* numpy: matrix_rank([[1,2,3],[4,5,6],[7,8,9]]) == 2, eye(4) == 4, eye(4) with a 0 == 3 */
  const double m3[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  assert_int_equal(rank_of(m3, 3, 3, 0, NULL), 2);
  double eye[16] = {0};
  for (int i = 0; i < 4; i++) eye[i * 5] = 1;
  assert_int_equal(rank_of(eye, 4, 4, 0, NULL), 4);
  eye[15] = 0;
  assert_int_equal(rank_of(eye, 4, 4, 0, NULL), 3);
  const double zero[6] = {0};
  assert_int_equal(rank_of(zero, 2, 3, 0, NULL), 0);
  /* U diag(s) V^T: exact singular values and the rank, wide, tall and square */
  struct { int m, n, r; } cases[] = {{6, 9, 4}, {12, 7, 7}, {8, 8, 1}, {20, 5, 3}, {16, 40, 11}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int m = cases[c].m, n = cases[c].n, k = m < n ? m : n;
    double s[64] = {0}, got[64];
    for (int i = 0; i < cases[c].r; i++) s[i] = 3.0 / (1 + i);
    double *a = with_spectrum(m, n, s, 11 + c);
    assert_int_equal(rank_of(a, m, n, 0, got), cases[c].r);
    for (int i = 0; i < k; i++) assert_true(fabs(got[i] - s[i]) <= 1e-12 * s[0]);
    free(a);
  }
  /* near-singular at the default tolerance max(m, n) * eps32 * s_max: values at 2x and 0.5x
   * of the threshold are in and out */
  const int m = 10, n = 14;
  const double thr = rv_rank_default_rtol(m, n);
  assert_true(fabs(thr - 14 * (double)FLT_EPSILON) < 1e-20);
  const double s[10] = {1, 0.1, 0.01, 2 * thr, 1.2 * thr, 0.8 * thr, 0.5 * thr, 0, 0, 0};
  double *a = with_spectrum(m, n, s, 5);
  assert_int_equal(rank_of(a, m, n, 0, NULL), 5);
  assert_int_equal(rank_of(a, m, n, 1e-4, NULL), 3);
  assert_int_equal(rank_of(a, m, n, 0.05, NULL), 2);
  assert_int_equal(rank_of(a, m, n, 1e-7, NULL), 7);
  free(a);
  /* strictly greater, like numpy's S > tol */
  const double sv[3] = {2.0, 2.0 * 1e-3, 1e-9}; /* exactly at rtol * s_max: out */
  assert_int_equal(rv_rank_count(sv, 3, 3, 3, 1e-3), 1);
  const double sv2[3] = {2.0, nextafter(2.0 * 1e-3, 1.0), 1e-9};
  assert_int_equal(rv_rank_count(sv2, 3, 3, 3, 1e-3), 2);
  /* non-finite input */
  rv_ctx *ctx = rv_ctx_create();
  double bad[4] = {1, 2, NAN, 4}, out[2];
  assert_int_equal(rv_rank_svd(out, bad, 2, 2, 2, ctx), RV_ERR_ARG);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "non-finite"));
  rv_ctx_free(ctx);
}

/* ---- fixture blocks ------------------------------------------------------------------------ */

typedef struct {
  rv_ravlt_config cfg;
  rv_weights *w, *io;
} fixture;

static void fixture_open(fixture *f, const char *name) {
  rv_ctx *ctx = rv_ctx_create();
  char rel[256];
  snprintf(rel, sizeof rel, "backbone/%s/config.json", name);
  char *text = read_text(fixture_path(rel));
  if (!text) fail_msg("fixture %s missing", rel);
  assert_int_equal(rv_ravlt_config_from_json(&f->cfg, text, ctx), RV_OK);
  free(text);
  snprintf(rel, sizeof rel, "backbone/%s/weights.safetensors", name);
  if (rv_weights_open(&f->w, fixture_path(rel), ctx) != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
  snprintf(rel, sizeof rel, "backbone/%s/io.safetensors", name);
  if (rv_weights_open(&f->io, fixture_path(rel), ctx) != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
  rv_ctx_free(ctx);
}
static void fixture_close(fixture *f) {
  rv_weights_free(f->w);
  rv_weights_free(f->io);
}

static float *tensor_f32(const rv_weights *w, const char *name, size_t *numel) {
  const rv_wtensor *t = rv_weights_find(w, name);
  if (!t) fail_msg("tensor %s missing", name);
  float *x = malloc(sizeof(float) * rv_wtensor_numel(t));
  rv_wtensor_to_f32(t, x);
  if (numel) *numel = rv_wtensor_numel(t);
  return x;
}

static double wv(const rv_weights *w, const char *fmt, int s, int b, size_t i) {
  char name[256];
  snprintf(name, sizeof name, fmt, s, b);
  const rv_wtensor *t = rv_weights_find(w, name);
  if (!t) fail_msg("weight %s missing", name);
  assert_true(t->dtype == RV_DT_F32 && i < rv_wtensor_numel(t));
  return ((const float *)t->data)[i];
}

/* Independent re-derivation of q, k, v and the KV buffers of head 0..heads-1 from the block
 * input, with the torch layout of RALA.py: tokens x channels, theta_shift with the
 * (N x d) sin/cos tables built as cat(sin(y*angle), sin(x*angle)). */
static void rederive(const fixture *f, int s, int b, const float *x, int h, int w,
                     const rv_rank_attn *a) {
  const int C = f->cfg.embed_dims[s], heads = f->cfg.num_heads[s], d = C / heads, n = h * w;
  double *xn = malloc(sizeof(double) * C * n), *qkv = malloc(sizeof(double) * 4 * C * n);
  for (int l = 0; l < n; l++) {
    double mu = 0, var = 0;
    for (int c = 0; c < C; c++) mu += x[c * n + l];
    mu /= C;
    for (int c = 0; c < C; c++) var += (x[c * n + l] - mu) * (x[c * n + l] - mu);
    var /= C;
    for (int c = 0; c < C; c++)
      xn[c * n + l] = (x[c * n + l] - mu) / sqrt(var + 1e-6) *
                          wv(f->w, "backbone.layers.%d.blocks.%d.norm1.norm.weight", s, b, c) +
                      wv(f->w, "backbone.layers.%d.blocks.%d.norm1.norm.bias", s, b, c);
  }
  for (int o = 0; o < 4 * C; o++)
    for (int l = 0; l < n; l++) {
      double acc = wv(f->w, "backbone.layers.%d.blocks.%d.attn.qkvo.bias", s, b, o);
      for (int c = 0; c < C; c++)
        acc += wv(f->w, "backbone.layers.%d.blocks.%d.attn.qkvo.weight", s, b, (size_t)o * C + c) *
               xn[c * n + l];
      qkv[o * n + l] = acc;
    }
  double scale_q = 0;
  for (size_t i = 0; i < (size_t)4 * C * n; i++) scale_q = fmax(scale_q, fabs(qkv[i]));
  for (size_t i = 0; i < (size_t)4 * C * n; i++) assert_true(fabs(qkv[i] - a->q[i]) <= 1e-9 * scale_q);
  if (a->kind != 'l') { free(xn); free(qkv); return; }
  /* sin/cos [n x d] */
  double *sn = malloc(sizeof(double) * n * d), *cs = malloc(sizeof(double) * n * d);
  char an[128];
  snprintf(an, sizeof an, "backbone.layers.%d.RoPE.angle", s);
  float *angle = tensor_f32(f->w, an, NULL);
  for (int y = 0; y < h; y++)
    for (int xx = 0; xx < w; xx++)
      for (int j = 0; j < d; j++) {
        const double t = j < d / 2 ? y * (double)angle[j] : xx * (double)angle[j - d / 2];
        sn[(y * w + xx) * d + j] = sin(t);
        cs[(y * w + xx) * d + j] = cos(t);
      }
  double *K = malloc(sizeof(double) * n * d), *Kr = malloc(sizeof(double) * n * d);
  double *Q = malloc(sizeof(double) * n * d), *V = malloc(sizeof(double) * n * d);
  double *eff = malloc(sizeof(double) * n), *kv = malloc(sizeof(double) * d * d);
  for (int hd = 0; hd < heads; hd++) {
    for (int pass = 0; pass < 2; pass++) { /* 0: RALA, 1: plain */
      for (int l = 0; l < n; l++)
        for (int j = 0; j < d; j++) {
          const double qv = qkv[(hd * d + j) * n + l], kvv = qkv[(C + hd * d + j) * n + l];
          Q[l * d + j] = qv > 0 ? qv + 1 : exp(qv);
          K[l * d + j] = kvv > 0 ? kvv + 1 : exp(kvv);
          V[l * d + j] = qkv[(2 * C + hd * d + j) * n + l];
        }
      if (pass == 0) {
        double mx = -INFINITY, tot = 0;
        for (int l = 0; l < n; l++) {
          double acc = 0;
          for (int j = 0; j < d; j++) {
            double qm = 0;
            for (int m2 = 0; m2 < n; m2++) qm += Q[m2 * d + j];
            acc += qm / n * K[l * d + j];
          }
          eff[l] = acc / sqrt((double)d);
          mx = fmax(mx, eff[l]);
        }
        for (int l = 0; l < n; l++) { eff[l] = exp(eff[l] - mx); tot += eff[l]; }
        for (int l = 0; l < n; l++)
          for (int j = 0; j < d; j++) K[l * d + j] *= eff[l] / tot * n;
      }
      for (int l = 0; l < n; l++) /* theta_shift: x cos + rotate_every_two(x) sin */
        for (int j = 0; j < d; j++) {
          const double rot = j % 2 == 0 ? -K[l * d + j + 1] : K[l * d + j - 1];
          Kr[l * d + j] = K[l * d + j] * cs[l * d + j] + rot * sn[l * d + j];
        }
      double mxkv = 0, err = 0;
      for (int i = 0; i < d; i++)
        for (int e = 0; e < d; e++) {
          double acc = 0;
          for (int l = 0; l < n; l++) acc += (Kr[l * d + i] / sqrt((double)n)) * (V[l * d + e] / sqrt((double)n));
          kv[i * d + e] = acc;
          const double got = (pass == 0 ? a->kv_rala : a->kv_plain)[(size_t)hd * d * d + i * d + e];
          mxkv = fmax(mxkv, fabs(acc));
          err = fmax(err, fabs(acc - got));
        }
      assert_true(mxkv > 0);
      if (!(err <= 1e-9 * mxkv)) fail_msg("block %d.%d head %d %s KV: err %g of %g", s, b, hd, pass ? "plain" : "rala", err, mxkv);
      /* the plain linear-attention buffer (and RALA's) has rank <= head dim, and the
       * re-derived one has the same rank as the tool's */
      double sv[64];
      rv_ctx *ctx = rv_ctx_create();
      assert_int_equal(rv_rank_svd(sv, kv, d, d, d, ctx), RV_OK);
      rv_ctx_free(ctx);
      const int r = rv_rank_count(sv, d, d, d, 0);
      assert_true(r >= 1 && r <= d && r <= n);
      double sv2[64];
      const double *mine = (pass == 0 ? a->kv_rala : a->kv_plain) + (size_t)hd * d * d;
      assert_int_equal(rank_of(mine, d, d, 0, sv2), r);
    }
  }
  free(sn); free(cs); free(angle); free(K); free(Kr); free(Q); free(V); free(eff); free(kv);
  free(xn); free(qkv);
}

/* The official traces of the tiny fixture: s{i}b0.pos -> recomputed attn_out vs s{i}b0.attn_out */
static void test_fixture_official_traces(void **state) {
  (void)state;
  fixture f = {0};
  fixture_open(&f, "tiny");
  rv_ctx *ctx = rv_ctx_create();
  const int stages[2] = {0, 2};
  for (int t = 0; t < 2; t++) {
    const int s = stages[t];
    char name[64];
    snprintf(name, sizeof name, "s%db0.pos", s);
    const rv_wtensor *tp = rv_weights_find(f.io, name);
    if (!tp) fail_msg("trace %s missing", name);
    const int h = (int)tp->shape[2], w = (int)tp->shape[3];
    float *x = tensor_f32(f.io, name, NULL);
    snprintf(name, sizeof name, "s%db0.attn_out", s);
    size_t cn;
    float *ref = tensor_f32(f.io, name, &cn);
    rv_rank_attn a;
    if (rv_rank_attn_compute(&a, f.w, NULL, &f.cfg, s, 0, x, h, w, ctx) != RV_OK)
      fail_msg("%s", rv_ctx_errmsg(ctx));
    assert_int_equal(a.kind, s < 2 ? 'l' : 'v');
    assert_int_equal((size_t)a.c * a.n, cn);
    double err = 0, sc = 1.0;
    for (size_t i = 0; i < cn; i++) {
      err = fmax(err, fabs(a.attn_out[i] - ref[i]));
      sc = fmax(sc, fabs(ref[i]));
    }
    print_message("tiny s%db0 (%c): recomputed attn_out vs official: %.2e of scale %.2f\n", s, a.kind, err, sc);
    assert_true(err <= PARITY_TOL * sc);
    /* LePE and the gate as defined: out = attn + lepe(v), gated = out * o */
    for (size_t i = 0; i < cn; i++) assert_true(fabs(a.gated[i] - a.out[i] * a.o[i]) <= 1e-12 * (1 + fabs(a.gated[i])));
    assert_true((a.kv_rala != NULL) == (s < 2));
    rederive(&f, s, 0, x, h, w, &a);
    rv_rank_attn_free(&a);
    free(x);
    free(ref);
  }
  rv_ctx_free(ctx);
  fixture_close(&f);
}

/* Whole-model analysis on the fixture inputs: checks vs the backbone's own traces, rank
 * bounds, spectra, which quantities exist. */
static void analyze_fixture(const char *name) {
  fixture f = {0};
  fixture_open(&f, name);
  rv_ctx *ctx = rv_ctx_create();
  rv_ravlt *m = NULL;
  if (rv_ravlt_create(&m, &f.cfg, f.w, NULL, ctx) != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
  const rv_wtensor *ti = rv_weights_find(f.io, "input");
  float *x = tensor_f32(f.io, "input", NULL);
  rv_tensor in = {x, 1, (int)ti->shape[1], (int)ti->shape[2], (int)ti->shape[3]};
  rv_arena *A = rv_arena_create(0);
  rv_rank_report rep, loose;
  if (rv_rank_analyze(&rep, m, f.w, NULL, in, 0.0, A, ctx) != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
  assert_int_equal(rv_rank_analyze(&loose, m, f.w, "backbone.", in, 0.05, A, ctx), RV_OK);
  int nb = 0;
  for (int s = 0; s < 4; s++) nb += f.cfg.depths[s];
  assert_int_equal(rep.nblocks, nb);
  print_message("%s: worst recomputed/backbone attn_out difference %.2e of scale\n", name, rv_rank_report_check(&rep));
  assert_true(rv_rank_report_check(&rep) <= PARITY_TOL);
  int k = 0;
  for (int s = 0; s < 4; s++)
    for (int b = 0; b < f.cfg.depths[s]; b++, k++) {
      const rv_rank_block *B = &rep.blocks[k];
      assert_int_equal(B->stage, s);
      assert_int_equal(B->block, b);
      assert_int_equal(B->kind, f.cfg.flags[s][b]);
      assert_int_equal(B->heads, f.cfg.num_heads[s]);
      assert_true(B->checked && B->check_scale > 0);
      const int n = B->h * B->w, full = B->d < n ? B->d : n;
      for (int h = 0; h < B->heads; h++)
        for (int q = 0; q < RV_RANK_NQ; q++) {
          const rv_rank_spectrum *sp = rv_rank_block_spec(B, h, (rv_rank_qty)q);
          const int exists = B->kind == 'l' || q >= RV_RANK_ATTN;
          assert_int_equal(sp->m != 0, exists);
          if (!exists) continue;
          const int is_kv = q <= RV_RANK_KV_PLAIN;
          assert_int_equal(sp->m, B->d);
          assert_int_equal(sp->n, is_kv ? B->d : n);
          assert_true(sp->rank >= 1 && sp->rank <= full);
          assert_true(fabs(sp->rtol - rv_rank_default_rtol(sp->m, sp->n)) < 1e-20);
          for (int i = 1; i < sp->ns; i++) assert_true(sp->s[i] <= sp->s[i - 1] && sp->s[i] >= 0);
          assert_int_equal(sp->rank, rv_rank_count(sp->s, sp->ns, sp->m, sp->n, 0));
          const rv_rank_spectrum *lp = rv_rank_block_spec(&loose.blocks[k], h, (rv_rank_qty)q);
          assert_true(lp->rank <= sp->rank && lp->rtol == 0.05);
        }
    }
  rv_rank_report_free(&rep);
  rv_rank_report_free(&loose);
  rv_arena_free(A);
  free(x);
  rv_ravlt_free(m);
  rv_ctx_free(ctx);
  fixture_close(&f);
}
static void test_analyze_tiny(void **state) { (void)state; analyze_fixture("tiny"); }
static void test_analyze_d64(void **state) { (void)state; analyze_fixture("d64"); }

static void test_library_errors(void **state) {
  (void)state;
  fixture f = {0};
  fixture_open(&f, "tiny");
  rv_ctx *ctx = rv_ctx_create();
  float x[16 * 4] = {0};
  rv_rank_attn a;
  assert_int_equal(rv_rank_attn_compute(&a, f.w, NULL, &f.cfg, 0, 7, x, 2, 2, ctx), RV_ERR_ARG);
  assert_int_equal(rv_rank_attn_compute(&a, f.w, NULL, &f.cfg, 5, 0, x, 2, 2, ctx), RV_ERR_ARG);
  /* weights without one key: RV_ERR_MODEL naming it */
  rv_weights *cut = rv_weights_new("cut.safetensors");
  for (int i = 0; i < rv_weights_count(f.w); i++) {
    const rv_wtensor *t = rv_weights_get(f.w, i);
    if (strstr(t->name, "layers.0.blocks.0.attn.lepe.bias")) continue;
    assert_int_equal(rv_weights_add(cut, t->name, t->dtype, t->ndim, t->shape, t->data, t->nbytes, 0, ctx), RV_OK);
  }
  assert_int_equal(rv_rank_attn_compute(&a, cut, NULL, &f.cfg, 0, 0, x, 2, 2, ctx), RV_ERR_MODEL);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "backbone.layers.0.blocks.0.attn.lepe.bias"));
  rv_rank_attn_free(&a);
  /* the analysis: batch of 2, bad tolerance, weights missing a key */
  rv_ravlt *m = NULL;
  assert_int_equal(rv_ravlt_create(&m, &f.cfg, f.w, NULL, ctx), RV_OK);
  rv_arena *A = rv_arena_create(0);
  float *img = calloc(2 * 3 * 40 * 40, sizeof(float));
  rv_tensor two = {img, 2, 3, 40, 40}, one = {img, 1, 3, 40, 40};
  rv_rank_report rep;
  assert_int_equal(rv_rank_analyze(&rep, m, f.w, NULL, two, 0, A, ctx), RV_ERR_SHAPE);
  assert_int_equal(rv_rank_analyze(&rep, m, f.w, NULL, one, 1.5, A, ctx), RV_ERR_ARG);
  assert_int_equal(rv_rank_analyze(&rep, m, cut, NULL, one, 0, A, ctx), RV_ERR_MODEL);
  assert_int_equal(rep.nblocks, 0);
  assert_null(rep.blocks);
  /* a constant image still analyses (ranks may be low but within bounds) */
  assert_int_equal(rv_rank_analyze(&rep, m, f.w, NULL, one, 0, A, ctx), RV_OK);
  rv_rank_report_free(&rep);
  free(img);
  rv_arena_free(A);
  rv_ravlt_free(m);
  rv_weights_free(cut);
  rv_ctx_free(ctx);
  fixture_close(&f);
}

/* ---- CLI ---------------------------------------------------------------------------------- */

static const char *tmp_path(const char *name) {
  static char buf[4][512];
  static int slot;
  slot = (slot + 1) & 3;
  snprintf(buf[slot], sizeof buf[slot], "/tmp/ravlt_test_rank_%d_%s", (int)getpid(), name);
  return buf[slot];
}

/* Runs the command with stdout/stderr to files; returns the exit code. */
static int run(const char *args, int *stderr_lines) {
  char cmd[4096];
  const char *err = tmp_path("stderr");
  snprintf(cmd, sizeof cmd, "%s rank %s >%s 2>%s", RV_BIN, args, tmp_path("stdout"), err);
  int st = system(cmd);
  if (stderr_lines) {
    char *t = read_text(err);
    int n = 0;
    for (char *p = t; p && *p; p++) n += *p == '\n';
    *stderr_lines = n;
    free(t);
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void check_json(const char *path, int expect_blocks) {
  char *text = read_text(path);
  assert_non_null(text);
  cJSON *root = cJSON_Parse(text);
  free(text);
  assert_non_null(root);
  const cJSON *blocks = cJSON_GetObjectItem(root, "blocks");
  const cJSON *entries = cJSON_GetObjectItem(root, "entries");
  assert_true(cJSON_IsArray(blocks) && cJSON_IsArray(entries));
  assert_int_equal(cJSON_GetArraySize(blocks), expect_blocks);
  int heads = 0;
  const cJSON *b;
  cJSON_ArrayForEach(b, blocks) {
    heads += cJSON_GetObjectItem(b, "heads")->valueint;
    const cJSON *ck = cJSON_GetObjectItem(b, "check");
    assert_true(cJSON_GetObjectItem(ck, "max_abs_err")->valuedouble <=
                PARITY_TOL * fmax(1.0, cJSON_GetObjectItem(ck, "scale")->valuedouble));
  }
  assert_int_equal(cJSON_GetArraySize(entries), heads); /* one entry per block and head */
  const cJSON *e;
  int kv_seen = 0;
  cJSON_ArrayForEach(e, entries) {
    const int d = cJSON_GetObjectItem(e, "d")->valueint, n = cJSON_GetObjectItem(e, "n")->valueint;
    const int full = d < n ? d : n;
    const char *kind = cJSON_GetObjectItem(e, "kind")->valuestring;
    for (int q = 0; q < RV_RANK_NQ; q++) {
      const cJSON *o = cJSON_GetObjectItem(e, rv_rank_qty_name((rv_rank_qty)q));
      const int expect = kind[0] == 'l' || q >= RV_RANK_ATTN;
      assert_int_equal(o != NULL, expect);
      if (!o) continue;
      kv_seen += q == RV_RANK_KV_RALA;
      const int r = cJSON_GetObjectItem(o, "rank")->valueint;
      assert_true(r >= 1 && r <= full);
      const cJSON *sv = cJSON_GetObjectItem(o, "singular_values");
      assert_int_equal(cJSON_GetArraySize(sv), cJSON_GetObjectItem(o, "full_rank")->valueint);
      /* the rank is the count above rtol * s_max */
      const double rtol = cJSON_GetObjectItem(o, "rtol")->valuedouble;
      const double s0 = cJSON_GetArrayItem(sv, 0)->valuedouble;
      int cnt = 0;
      const cJSON *x;
      cJSON_ArrayForEach(x, sv) cnt += x->valuedouble > rtol * s0;
      assert_int_equal(cnt, r);
    }
  }
  assert_true(kv_seen > 0);
  cJSON_Delete(root);
}

static void test_cli(void **state) {
  (void)state;
  const char *ck = fixture_path("e2e/mask_rcnn/checkpoint.pth");
  if (!path_exists(ck)) fail_msg("fixture %s missing", ck);
  if (!path_exists(PHOTO)) fail_msg("%s missing (opencv-doc)", PHOTO);
  char json[512], png[512]; /* own copies: run() reuses tmp_path's slots */
  snprintf(json, sizeof json, "%s", tmp_path("r.json"));
  snprintf(png, sizeof png, "%s", tmp_path("r.png"));
  char args[2048];
  snprintf(args, sizeof args, "--weights %s %s --size 96x128 --block 1.1 --json %s --plot %s", ck, PHOTO, json, png);
  assert_int_equal(run(args, NULL), 0);
  /* the e2e Mask R-CNN backbone: depths from its meta config */
  check_json(json, 8);
  rv_image img = {0};
  rv_ctx *ctx = rv_ctx_create();
  assert_int_equal(rv_image_read(png, &img, ctx), RV_OK);
  assert_int_equal(img.w, 1400);
  assert_int_equal(img.h, 720);
  long nonwhite = 0;
  for (size_t i = 0; i < (size_t)img.w * img.h * 3; i++) nonwhite += img.data[i] != 255;
  assert_true(nonwhite > 20000);
  rv_image_free(&img);
  /* the table: one row per block and head plus headers */
  char *out = read_text(tmp_path("stdout"));
  assert_non_null(out);
  assert_non_null(strstr(out, "kv_rala"));
  assert_non_null(strstr(out, "check: recomputed attention outputs"));
  free(out);
  unlink(json);
  unlink(png);
  /* a classifier checkpoint (ImageNet 224 crop), --tol */
  snprintf(args, sizeof args, "--weights %s %s --tol 1e-3 --json %s", data_path("backbone/classifier.pth"),
           data_path("image/rgb8.png"), json);
  assert_int_equal(run(args, NULL), 0);
  char *text = read_text(json);
  cJSON *root = cJSON_Parse(text);
  free(text);
  assert_non_null(root);
  assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "tolerance"), "rtol")->valuedouble == 1e-3);
  const cJSON *in = cJSON_GetObjectItem(root, "input_size");
  assert_int_equal(cJSON_GetArrayItem(in, 0)->valueint, 224);
  cJSON_Delete(root);
  unlink(json);
  rv_ctx_free(ctx);
}

/* out = t with {W} -> w and {I} -> im */
static void expand(char *out, size_t cap, const char *t, const char *w, const char *im) {
  size_t o = 0;
  for (; *t && o + 1 < cap; t++) {
    const char *rep = !strncmp(t, "{W}", 3) ? w : !strncmp(t, "{I}", 3) ? im : NULL;
    if (rep) {
      o += (size_t)snprintf(out + o, cap - o, "%s", rep);
      t += 2;
    } else {
      out[o++] = *t;
    }
  }
  out[o < cap ? o : cap - 1] = 0;
}

static void test_cli_errors(void **state) {
  (void)state;
  const char *ck = fixture_path("e2e/semantic_fpn/checkpoint.pth");
  char json[512], png[512]; /* own copies: run() reuses tmp_path's slots */
  snprintf(json, sizeof json, "%s", tmp_path("bad.json"));
  snprintf(png, sizeof png, "%s", tmp_path("bad.png"));
  char args[2048];
  int lines;
  struct { const char *args; int rc; } cases[] = {
      {"", 2},
      {"--weights {W}", 2},
      {"--weights {W} {I} --tol 0", 2},
      {"--weights {W} {I} --tol 1.5", 2},
      {"--weights {W} {I} --tol abc", 2},
      {"--weights {W} {I} --block 9.9", 2},
      {"--weights {W} {I} --block 1", 2},
      {"--weights {W} {I} --size 0x5", 2},
      {"--weights {W} {I} --plot out.jpg", 2},
      {"--weights {W} {I} {I}", 2},
      {"--weights {W} {I} --frobnicate", 2},
      {"--weights {W} {I} --size 64x64 --block 3.5", 2},         /* stage 3 has 2 blocks */
      {"--weights {W} /nonexistent/x.jpg", 1},
      {"--weights " RV_TEST_DATA "/image/not_an_image.png {I}", 1}, /* not weights */
      {"--weights " RV_TEST_DATA "/image/rgb8.png {I}", 1},
      {"--weights {W} " RV_TEST_DATA "/image/not_an_image.png", 1}, /* not an image */
      {"--weights {W} {I} --size 64x64 --json /nonexistent/dir/x.json", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    expand(args, sizeof args, cases[i].args, ck, PHOTO);
    const int rc = run(args, &lines);
    if (rc != cases[i].rc || lines != 1)
      fail_msg("'rank %s': exit %d (expected %d), %d stderr lines (expected 1)", args, rc, cases[i].rc, lines);
  }
  /* a failing run leaves no outputs */
  snprintf(args, sizeof args, "--weights %s /nonexistent/x.jpg --json %s --plot %s", ck, json, png);
  const int rc = run(args, NULL);
  if (rc != 1) fail_msg("'rank %s': exit %d", args, rc);
  assert_false(path_exists(json));
  assert_false(path_exists(png));
  /* --help */
  assert_int_equal(run("--help", NULL), 0);
  unlink(tmp_path("stdout"));
  unlink(tmp_path("stderr"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_ranks),
      cmocka_unit_test(test_fixture_official_traces),
      cmocka_unit_test(test_analyze_tiny),
      cmocka_unit_test(test_analyze_d64),
      cmocka_unit_test(test_library_errors),
      cmocka_unit_test(test_cli),
      cmocka_unit_test(test_cli_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
