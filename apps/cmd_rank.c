/* `ravlt rank --weights W IMAGE [--json FILE|-] [--plot OUT.png] [--tol T] [--block S.B]
 * [--size HxW]`: numerical rank of RALA's KV buffer and of the attention outputs per block
 * and head (backbone/rank.h), as a table, JSON and a PNG chart. */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "apps/image_run.h"
#include "apps/model_args.h"
#include "apps/model_run.h"
#include "backbone/rank.h"
#include "core/fs.h"
#include "formats/image.h"
#include "kernels/ops.h"
#include "datasets/preprocess.h"
#include "apps/commands.h"

#include <stddef.h>
#include "models/model.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char RANK_ABOUT[] =
    "Runs the RAVLT backbone of W on IMAGE and, for every block and head, recomputes the\n"
    "attention quantities from the block input (in double) and prints the numerical rank of:\n"
    "  kv_rala     RALA's KV buffer rope(k'')^T v / N (keys re-weighted by N softmax of the\n"
    "              mean query against the keys, RoPE applied)                 d x d, RALA blocks\n"
    "  kv_plain    the same buffer without the re-weighting (plain linear attention)  d x d\n"
    "  attn_plain  plain linear attention output on the same q, k, v          d x N, RALA blocks\n"
    "  attn        the block's attention result before LePE (softmax attention in 'v' blocks)\n"
    "  out         attn + lepe(v): the output before the gate                 d x N\n"
    "  gated       out * o: the output after the gate (before proj)           d x N\n"
    "Rank = number of singular values (LAPACK dgesdd) > tol * s_max; default tol =\n"
    "max(m, n) * eps with the float32 eps 1.19e-7 (numpy / torch matrix_rank convention).\n"
    "Every recomputed attention output is checked against the backbone's own.\n"
;

typedef struct {
  rv_model_opts mo; /* --weights only (rank reads the backbone itself) */
  const char *json, *plot, *block;
  double tol;
  int size[2];
} rank_opts;

static const rv_opt OPTS[] = {
    RV_MODEL_OPT_WEIGHTS(rank_opts, mo,
                         "whole-model checkpoint (mmdet/mmseg .pth or .safetensors), a backbone or\n"
                         "ImageNet classifier checkpoint, or a model-zoo name"),
    {"--json", NULL, RV_OPT_STR, offsetof(rank_opts, json), 0, 0, NULL, "FILE",
     "everything (ranks and singular values per block, head and quantity)\n"
     "to FILE ('-': stdout, instead of the table)", 0},
    {"--plot", NULL, RV_OPT_STR, offsetof(rank_opts, plot), 0, 0, NULL, "OUT.png",
     "PNG chart: rank / full rank per block, and singular value spectra of one block", 0},
    {"--tol", NULL, RV_OPT_DOUBLE, offsetof(rank_opts, tol), 0, 1, NULL, "T",
     "relative tolerance T in (0, 1) instead of the default", RV_OPT_OPEN_LO | RV_OPT_OPEN_HI},
    {"--block", NULL, RV_OPT_STR, offsetof(rank_opts, block), 0, 0, NULL, "S.B",
     "block (stage S, block B, from 0) whose spectra are plotted (default: the\n"
     "first block)", 0},
    {"--size", NULL, RV_OPT_SIZE, offsetof(rank_opts, size), 16, 8192, NULL, "HxW",
     "resize the image to exactly H x W, sides 16..8192 (default: the model's\n"
     "test pipeline; 224 crop for a classifier, mmseg (2048, 512) for a bare backbone)", 0},
    RV_OPT_END};

const rv_cmd_spec rv_spec_rank = {
    "rank", "--weights W [--json FILE|-] [--plot OUT.png] [--tol T] [--block S.B] [--size HxW] IMAGE",
    RANK_ABOUT, OPTS, 1, NULL,
    "  ravlt rank --weights upernet_ravlt_s.pth --json rank.json --plot rank.png photo.jpg\n"
    "  ravlt rank --weights ravlt_t.pth --size 224x224 --tol 1e-6 --json - photo.jpg\n",
    sizeof(rank_opts)};

static const char *CMD = "rank";

/* ---- loading --------------------------------------------------------------------------- */

typedef struct {
  rv_weights *w;        /* the checkpoint */
  rv_weights *view;     /* classifier checkpoints: w's tensors + identity extra_norms */
  rv_model *model;      /* whole models */
  rv_ravlt *own;        /* backbone / classifier checkpoints */
  const rv_ravlt *bb;
  int classifier;
  rv_preprocess_params pp;
  float *norm_buf;
} loaded;

static void loaded_free(loaded *L) {
  rv_model_free(L->model);
  rv_ravlt_free(L->own);
  rv_weights_free(L->view);
  rv_weights_free(L->w);
  free(L->norm_buf);
}

static int has_head_keys(const rv_weights *w) {
  for (int i = 0; i < rv_weights_count(w); i++) {
    const char *n = rv_weights_get(w, i)->name;
    if (strncmp(n, "backbone.", 9) != 0) return 1;
  }
  return 0;
}

/* A classifier checkpoint runs through the backbone forward: the blocks are the same; the
 * backbone's extra_norms (which the trace does not depend on) get identity parameters. */
static rv_status classifier_view(loaded *L, rv_ravlt_config *cfg, const char *prefix,
                                 rv_ctx *ctx) {
  int maxc = 0;
  for (int s = 0; s < 4; s++) maxc = cfg->embed_dims[s] > maxc ? cfg->embed_dims[s] : maxc;
  L->norm_buf = malloc(sizeof(float) * 2 * (size_t)maxc);
  L->view = rv_weights_new(rv_weights_path(L->w));
  if (!L->norm_buf || !L->view) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (int i = 0; i < maxc; i++) { L->norm_buf[i] = 1.0f; L->norm_buf[maxc + i] = 0.0f; }
  for (int i = 0; i < rv_weights_count(L->w); i++) {
    const rv_wtensor *t = rv_weights_get(L->w, i);
    if (strncmp(t->name, prefix, strlen(prefix)) == 0) {
      const char *r = t->name + strlen(prefix);
      if (!strncmp(r, "proj.", 5) || !strncmp(r, "norm.", 5) || !strncmp(r, "head.", 5)) continue;
    }
    RV_TRY(rv_weights_add(L->view, t->name, t->dtype, t->ndim, t->shape, t->data, t->nbytes, 0, ctx));
  }
  for (int s = 0; s < 4; s++) {
    char name[128];
    int64_t shape[1] = {cfg->embed_dims[s]};
    const size_t nb = sizeof(float) * (size_t)cfg->embed_dims[s];
    snprintf(name, sizeof name, "%sextra_norms.%d.norm.weight", prefix, s);
    RV_TRY(rv_weights_add(L->view, name, RV_DT_F32, 1, shape, L->norm_buf, nb, 0, ctx));
    snprintf(name, sizeof name, "%sextra_norms.%d.norm.bias", prefix, s);
    RV_TRY(rv_weights_add(L->view, name, RV_DT_F32, 1, shape, L->norm_buf + maxc, nb, 0, ctx));
  }
  cfg->classifier = 0;
  cfg->num_outs = 4;
  for (int s = 0; s < 4; s++) cfg->out_indices[s] = s;
  return RV_OK;
}

static rv_status load(loaded *L, const char *weights, rv_ctx *ctx) {
  char path[4096];
  const char *zoo_model = NULL;
  RV_TRY(rv_cli_resolve_weights(path, sizeof path, weights, &zoo_model, ctx));
  RV_TRY(rv_weights_open(&L->w, path, ctx));
  const char *prefix = rv_ravlt_detect_prefix(L->w);
  if (!prefix)
    return rv_error(ctx, RV_ERR_MODEL, "%s: not a RAVLT checkpoint (no patch_embed.proj.0.weight, "
                    "with or without the 'backbone.' prefix)", weights);
  if (prefix[0] && has_head_keys(L->w)) { /* a whole detector / segmentor */
    RV_TRY(rv_model_from_weights(&L->model, L->w, zoo_model, ctx));
    L->bb = rv_model_backbone(L->model);
    L->pp = rv_model_preprocess(L->model);
    return RV_OK;
  }
  rv_ravlt_config cfg;
  RV_TRY(rv_ravlt_config_from_weights(&cfg, L->w, prefix, ctx));
  const rv_weights *src = L->w;
  if (cfg.classifier) {
    L->classifier = 1;
    RV_TRY(classifier_view(L, &cfg, prefix, ctx));
    src = L->view;
  }
  RV_TRY(rv_ravlt_create(&L->own, &cfg, src, prefix, ctx));
  L->bb = L->own;
  L->pp = rv_preprocess_mmseg_params();
  return RV_OK;
}

/* ---- table ------------------------------------------------------------------------------ */

static void print_table(const rv_rank_report *rep) {
  printf("stage block kind head    d      N |  kv_rala kv_plain | attn_plain     attn      out    gated\n");
  for (int b = 0; b < rep->nblocks; b++) {
    const rv_rank_block *B = &rep->blocks[b];
    for (int h = 0; h < B->heads; h++) {
      printf("%5d %5d %4s %4d %4d %6d |", B->stage, B->block, B->kind == 'l' ? "RALA" : "soft",
             h, B->d, B->h * B->w);
      for (int q = 0; q < RV_RANK_NQ; q++) {
        const rv_rank_spectrum *s = rv_rank_block_spec(B, h, (rv_rank_qty)q);
        if (q == RV_RANK_ATTN_PLAIN) printf(" |  ");
        if (s->m) printf(" %8d", s->rank);
        else printf(" %8s", "-");
      }
      putchar('\n');
    }
  }
  /* mean rank / full rank over all heads of the blocks where the quantity exists */
  printf("mean rank / full rank:");
  for (int q = 0; q < RV_RANK_NQ; q++) {
    double sum = 0.0;
    int cnt = 0;
    for (int b = 0; b < rep->nblocks; b++)
      for (int h = 0; h < rep->blocks[b].heads; h++) {
        const rv_rank_spectrum *s = rv_rank_block_spec(&rep->blocks[b], h, (rv_rank_qty)q);
        if (s->m) { sum += (double)s->rank / s->ns; cnt++; }
      }
    if (cnt) printf(" %s %.0f%%", rv_rank_qty_name((rv_rank_qty)q), 100.0 * sum / cnt);
  }
  putchar('\n');
}

/* ---- JSON ------------------------------------------------------------------------------- */

static cJSON *spectrum_json(const rv_rank_spectrum *s) {
  cJSON *o = cJSON_CreateObject();
  int shape[2] = {s->m, s->n};
  cJSON_AddItemToObject(o, "shape", cJSON_CreateIntArray(shape, 2));
  cJSON_AddNumberToObject(o, "rank", s->rank);
  cJSON_AddNumberToObject(o, "full_rank", s->ns);
  cJSON_AddNumberToObject(o, "rtol", s->rtol);
  cJSON_AddItemToObject(o, "singular_values", cJSON_CreateDoubleArray(s->s, s->ns));
  return o;
}

static rv_status write_json(const char *path, const rv_rank_report *rep, const char *weights,
                            const char *image, double tol, rv_ctx *ctx) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  cJSON_AddStringToObject(root, "weights", weights);
  cJSON_AddStringToObject(root, "image", image);
  int in[2] = {rep->in_h, rep->in_w};
  cJSON_AddItemToObject(root, "input_size", cJSON_CreateIntArray(in, 2));
  cJSON *t = cJSON_AddObjectToObject(root, "tolerance");
  if (tol > 0) cJSON_AddNumberToObject(t, "rtol", tol);
  else cJSON_AddNullToObject(t, "rtol");
  cJSON_AddStringToObject(t, "rule", "rank = #{s_i > rtol * s_max}; default rtol = max(m, n) * eps");
  cJSON_AddNumberToObject(t, "eps", FLT_EPSILON);
  cJSON *qd = cJSON_AddObjectToObject(root, "quantities");
  for (int q = 0; q < RV_RANK_NQ; q++)
    cJSON_AddStringToObject(qd, rv_rank_qty_name((rv_rank_qty)q), rv_rank_qty_desc((rv_rank_qty)q));
  cJSON *blocks = cJSON_AddArrayToObject(root, "blocks");
  cJSON *entries = cJSON_AddArrayToObject(root, "entries");
  for (int b = 0; b < rep->nblocks; b++) {
    const rv_rank_block *B = &rep->blocks[b];
    const char kind[2] = {B->kind, 0};
    cJSON *bo = cJSON_CreateObject();
    cJSON_AddNumberToObject(bo, "stage", B->stage);
    cJSON_AddNumberToObject(bo, "block", B->block);
    cJSON_AddStringToObject(bo, "kind", kind);
    cJSON_AddNumberToObject(bo, "heads", B->heads);
    cJSON_AddNumberToObject(bo, "d", B->d);
    cJSON_AddNumberToObject(bo, "h", B->h);
    cJSON_AddNumberToObject(bo, "w", B->w);
    cJSON_AddNumberToObject(bo, "n", B->h * B->w);
    cJSON *ck = cJSON_AddObjectToObject(bo, "check");
    cJSON_AddNumberToObject(ck, "max_abs_err", B->check_err);
    cJSON_AddNumberToObject(ck, "scale", B->check_scale);
    cJSON_AddItemToArray(blocks, bo);
    for (int h = 0; h < B->heads; h++) {
      cJSON *e = cJSON_CreateObject();
      cJSON_AddNumberToObject(e, "stage", B->stage);
      cJSON_AddNumberToObject(e, "block", B->block);
      cJSON_AddNumberToObject(e, "head", h);
      cJSON_AddStringToObject(e, "kind", kind);
      cJSON_AddNumberToObject(e, "d", B->d);
      cJSON_AddNumberToObject(e, "n", B->h * B->w);
      for (int q = 0; q < RV_RANK_NQ; q++) {
        const rv_rank_spectrum *s = rv_rank_block_spec(B, h, (rv_rank_qty)q);
        if (s->m) cJSON_AddItemToObject(e, rv_rank_qty_name((rv_rank_qty)q), spectrum_json(s));
      }
      cJSON_AddItemToArray(entries, e);
    }
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return rv_error(ctx, RV_ERR_NOMEM, "out of memory formatting the JSON");
  rv_status st = rv_cli_json_write(path, text, ctx); /* '-': stdout; a file: atomically */
  free(text);
  return st;
}

/* ---- chart ------------------------------------------------------------------------------ */

static const int QCOL[RV_RANK_NQ][3] = {
    {214, 39, 40}, {31, 119, 180}, {120, 170, 220}, {255, 127, 14}, {44, 160, 44}, {148, 103, 189}};
static const char *const QLABEL[RV_RANK_NQ] = {
    "KV buffer, RALA", "KV buffer, plain linear attn", "attn output, plain linear",
    "attn output: RALA / softmax ('v')", "+ LePE: output before gate", "output after gate (x o)"};

static rv_color qcol(int q) { return rv_rgb(QCOL[q][0], QCOL[q][1], QCOL[q][2]); }

static void dashed(rv_image *img, int x1, int y1, int x2, int y2, rv_color c) {
  const double len = hypot(x2 - x1, y2 - y1);
  const int seg = 6;
  for (double t = 0; t < len; t += 2 * seg) {
    const double t2 = t + seg < len ? t + seg : len;
    rv_draw_line(img, x1 + (int)lround((x2 - x1) * t / len), y1 + (int)lround((y2 - y1) * t / len),
                 x1 + (int)lround((x2 - x1) * t2 / len), y1 + (int)lround((y2 - y1) * t2 / len), c,
                 1, NULL);
  }
}

static void text_c(rv_image *img, const char *s, int cx, int y, double sc, rv_color c) {
  int tw, th, bl;
  rv_text_size(s, sc, 1, &tw, &th, &bl);
  rv_draw_text(img, s, cx - tw / 2, y, sc, c, 1, NULL);
}
static void text_r(rv_image *img, const char *s, int rx, int y, double sc, rv_color c) {
  int tw, th, bl;
  rv_text_size(s, sc, 1, &tw, &th, &bl);
  rv_draw_text(img, s, rx - tw, y, sc, c, 1, NULL);
}

typedef struct { int x0, y0, x1, y1; } box;

static void frame(rv_image *img, box b, const char *title) {
  const rv_color ink = rv_rgb(40, 40, 40);
  rv_draw_rect(img, b.x0, b.y0, b.x1, b.y1, ink, 1, NULL);
  text_c(img, title, (b.x0 + b.x1) / 2, b.y0 - 10, 0.55, ink);
}

static rv_status draw_chart(const char *path, const rv_rank_report *rep, int sel,
                            const char *title, rv_ctx *ctx) {
  const int W = 1400, H = 720;
  rv_image img = {0};
  RV_TRY(rv_image_alloc(&img, H, W, 3, ctx));
  memset(img.data, 255, (size_t)W * H * 3);
  const rv_color ink = rv_rgb(40, 40, 40), grid = rv_rgb(225, 225, 225), mid = rv_rgb(110, 110, 110);
  text_c(&img, title, W / 2, 28, 0.6, ink);
  char buf[160];

  /* left: rank / full rank per block, mean over heads */
  box L = {80, 75, 760, 545};
  const int nb = rep->nblocks;
  for (int p = 0; p <= 100; p += 25) {
    const int y = L.y1 - (L.y1 - L.y0) * p / 100;
    rv_draw_line(&img, L.x0, y, L.x1, y, grid, 1, NULL);
    snprintf(buf, sizeof buf, "%d%%", p);
    text_r(&img, buf, L.x0 - 6, y + 5, 0.45, ink);
  }
  frame(&img, L, "numerical rank / full rank min(d, N), mean over heads");
  const double step = (double)(L.x1 - L.x0) / (nb > 0 ? nb : 1);
#define BX(b) (L.x0 + (int)lround(step * ((b) + 0.5)))
  const int every = nb > 24 ? (nb + 23) / 24 : 1;
  for (int b = 0; b < nb; b++) {
    const rv_rank_block *B = &rep->blocks[b];
    if (b > 0 && B->stage != rep->blocks[b - 1].stage) {
      const int xs = L.x0 + (int)lround(step * b);
      dashed(&img, xs, L.y0, xs, L.y1, mid);
    }
    if (b % every == 0) {
      snprintf(buf, sizeof buf, "%d.%d", B->stage, B->block);
      text_c(&img, buf, BX(b), L.y1 + 18, 0.4, ink);
      text_c(&img, B->kind == 'l' ? "RALA" : "soft", BX(b), L.y1 + 34, 0.35, mid);
    }
    if (b == sel) rv_draw_rect_filled(&img, BX(b) - 4, L.y0 + 1, BX(b) + 4, L.y1 - 1, rv_rgb(255, 230, 150), 0.6f, NULL);
  }
  text_c(&img, "block (stage.block), attention kind", (L.x0 + L.x1) / 2, L.y1 + 58, 0.5, ink);
  for (int q = 0; q < RV_RANK_NQ; q++) {
    int px = -1, py = -1;
    for (int b = 0; b < nb; b++) {
      const rv_rank_block *B = &rep->blocks[b];
      double sum = 0.0;
      int cnt = 0;
      for (int h = 0; h < B->heads; h++) {
        const rv_rank_spectrum *s = rv_rank_block_spec(B, h, (rv_rank_qty)q);
        if (s->m) { sum += (double)s->rank / s->ns; cnt++; }
      }
      if (!cnt) { px = -1; continue; }
      const int x = BX(b), y = L.y1 - (int)lround((L.y1 - L.y0) * sum / cnt);
      if (px >= 0) rv_draw_line(&img, px, py, x, y, qcol(q), 2, NULL);
      /* earlier quantities get larger dots: coinciding values show as rings */
      rv_draw_circle(&img, x, y, 3 + (RV_RANK_NQ - 1 - q), qcol(q), -1, NULL);
      px = x;
      py = y;
    }
  }
#undef BX

  /* right: normalised spectra of the selected block (geometric mean of s_i / s_1 over heads) */
  box R = {880, 75, 1370, 545};
  const rv_rank_block *S = &rep->blocks[sel];
  int maxns = 1;
  double lo = 0.0;
  for (int q = 0; q < RV_RANK_NQ; q++)
    for (int h = 0; h < S->heads; h++) {
      const rv_rank_spectrum *s = rv_rank_block_spec(S, h, (rv_rank_qty)q);
      if (!s->m) continue;
      if (s->ns > maxns) maxns = s->ns;
      for (int i = 0; i < s->ns; i++) {
        const double v = s->s[0] > 0 ? log10(fmax(s->s[i] / s->s[0], 1e-17)) : -17;
        if (v < lo) lo = v;
      }
    }
  const double tol_dd = rep->rtol > 0 ? rep->rtol : rv_rank_default_rtol(S->d, S->d);
  const double tol_dn = rep->rtol > 0 ? rep->rtol : rv_rank_default_rtol(S->d, S->h * S->w);
  const int has_kv = S->kind == 'l'; /* d x d quantities only in RALA blocks */
  lo = fmin(lo, fmin(has_kv ? log10(tol_dd) : 0.0, log10(tol_dn)) - 0.3); /* lines stay inside */
  int dec = (int)floor(lo);
  if (dec > -2) dec = -2;
  const int dstep = dec < -8 ? 2 : 1;
  if (-dec % dstep) dec -= 1;
  for (int e = 0; e >= dec; e -= dstep) {
    const int y = R.y0 + (R.y1 - R.y0) * (-e) / (-dec);
    rv_draw_line(&img, R.x0, y, R.x1, y, grid, 1, NULL);
    snprintf(buf, sizeof buf, "1e%d", e);
    text_r(&img, e == 0 ? "1" : buf, R.x0 - 6, y + 5, 0.45, ink);
  }
  snprintf(buf, sizeof buf, "spectra s_i / s_1 of block %d.%d (%s, d=%d, N=%d)", S->stage,
           S->block, S->kind == 'l' ? "RALA" : "softmax", S->d, S->h * S->w);
  frame(&img, R, buf);
#define SX(i) (R.x0 + (maxns > 1 ? (int)lround((double)(R.x1 - R.x0 - 20) * (i) / (maxns - 1)) + 10 : (R.x1 - R.x0) / 2))
#define SY(v) (R.y0 + (int)lround((R.y1 - R.y0) * (v) / dec))
  const int tick = maxns <= 16 ? 1 : maxns <= 40 ? 4 : maxns <= 80 ? 8 : 16;
  for (int i = 0; i < maxns; i++)
    if ((i + 1) % tick == 0 || i == 0) {
      snprintf(buf, sizeof buf, "%d", i + 1);
      text_c(&img, buf, SX(i), R.y1 + 18, 0.4, ink);
    }
  text_c(&img, "index i (rank = number of values above the tolerance line)", (R.x0 + R.x1) / 2,
         R.y1 + 40, 0.45, ink);
  /* tolerance lines: the default for d x d and d x N, or the user's */
  {
    const int y1 = has_kv ? SY(log10(tol_dd)) : -1, y2 = SY(log10(tol_dn));
    if (has_kv) {
      dashed(&img, R.x0, y1, R.x1, y1, mid);
      rv_draw_text(&img, rep->rtol > 0 ? "tol" : "tol d x d", R.x0 + 6, y1 - 4, 0.4, mid, 1, NULL);
    }
    if (y2 != y1) {
      dashed(&img, R.x0, y2, R.x1, y2, mid);
      rv_draw_text(&img, rep->rtol > 0 ? "tol" : "tol d x N", R.x0 + 6, y2 + 14, 0.4, mid, 1, NULL);
    }
  }
  for (int q = 0; q < RV_RANK_NQ; q++) {
    const rv_rank_spectrum *s0 = rv_rank_block_spec(S, 0, (rv_rank_qty)q);
    if (!s0->m) continue;
    int px = -1, py = -1;
    for (int i = 0; i < s0->ns; i++) {
      double acc = 0.0;
      for (int h = 0; h < S->heads; h++) {
        const rv_rank_spectrum *s = rv_rank_block_spec(S, h, (rv_rank_qty)q);
        acc += s->s[0] > 0 && i < s->ns ? log10(fmax(s->s[i] / s->s[0], 1e-17)) : -17;
      }
      const int x = SX(i), y = SY(acc / S->heads);
      if (px >= 0) rv_draw_line(&img, px, py, x, y, qcol(q), 2, NULL);
      if (s0->ns <= 64) rv_draw_circle(&img, x, y, 3, qcol(q), -1, NULL);
      px = x;
      py = y;
    }
  }
#undef SX
#undef SY

  /* legend, two rows of three */
  for (int q = 0; q < RV_RANK_NQ; q++) {
    const int x = 110 + (q % 3) * 420, y = 662 + (q / 3) * 28;
    rv_draw_line(&img, x, y - 5, x + 34, y - 5, qcol(q), 3, NULL);
    rv_draw_circle(&img, x + 17, y - 5, 4, qcol(q), -1, NULL);
    rv_draw_text(&img, QLABEL[q], x + 44, y, 0.5, ink, 1, NULL);
  }
  rv_draw_rect(&img, 90, 637, 1330, 705, grid, 1, NULL);
  rv_status st = rv_image_write(path, &img, ctx);
  rv_image_free(&img);
  return st;
}

/* ---- command ------------------------------------------------------------------------------ */

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

int rv_cmd_rank(int argc, char **argv) {
  rank_opts ro = {0};
  int npos;
  int prc = rv_cli_parse(&rv_spec_rank, &ro, argc, argv, &npos);
  if (prc >= 0) return prc;
  const char *weights = ro.mo.weights, *image = npos ? argv[0] : NULL, *json = ro.json, *plot = ro.plot, *block = ro.block;
  double tol = ro.tol;
  if (!weights) return rv_cli_usage_error(CMD, "--weights W is required");
  if (!image) return rv_cli_usage_error(CMD, "no IMAGE given");
  int sel_s = -1, sel_b = -1, size_h = ro.size[0], size_w = ro.size[1];
  if (block) {
    char *end;
    long s = strtol(block, &end, 10), b = -1;
    if (end != block && *end == '.') {
      const char *p = end + 1;
      b = strtol(p, &end, 10);
      if (end == p) b = -1;
    }
    if (*end || s < 0 || s >= RV_RAVLT_STAGES || b < 0 || b >= RV_RAVLT_MAX_DEPTH)
      return rv_cli_usage_error(CMD, "--block needs STAGE.BLOCK such as 0.1, not '%s'", block);
    sel_s = (int)s;
    sel_b = (int)b;
  }
  if (plot) {
    const char *dot = strrchr(plot, '.');
    if (!dot || strcmp(dot, ".png")) return rv_cli_usage_error(CMD, "--plot needs a .png file name");
  }

  rv_blas_init();
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  loaded L;
  memset(&L, 0, sizeof L);
  rv_arena *arena = rv_arena_create(0);
  rv_image img = {0};
  rv_rank_report rep;
  memset(&rep, 0, sizeof rep);
  int rc = 1;
  rv_status st = arena ? RV_OK : rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (st == RV_OK) st = load(&L, weights, ctx);
  if (st == RV_OK) st = rv_image_read(image, &img, ctx);
  rv_tensor x = {0};
  if (st == RV_OK) {
    if (size_h > 0) {
      rv_preprocess_params p = L.pp;
      p.scale_w = size_w;
      p.scale_h = size_h;
      p.keep_ratio = 0;
      p.size_divisor = 0;
      p.flip = 0;
      rv_img_meta meta;
      st = rv_preprocess(&x, &meta, &img, &p, arena, ctx);
    } else if (L.classifier) {
      st = rv_preprocess_imagenet(&x, &img, 224, arena, ctx);
    } else {
      rv_img_meta meta;
      st = rv_preprocess(&x, &meta, &img, &L.pp, arena, ctx);
    }
  }
  const rv_ravlt_config *cfg = L.bb ? rv_ravlt_get_config(L.bb) : NULL;
  int sel = 0;
  if (st == RV_OK && block) {
    if (sel_b >= cfg->depths[sel_s]) {
      st = rv_error(ctx, RV_ERR_ARG, "--block %s: stage %d has %d blocks", block, sel_s,
                    cfg->depths[sel_s]);
      rc = rv_cli_fail(ctx, CMD, st);
      goto done;
    }
    for (int s = 0; s < sel_s; s++) sel += cfg->depths[s];
    sel += sel_b;
  }
  if (st == RV_OK) {
    double t0 = rv_now();
    st = rv_rank_analyze(&rep, L.bb, L.view ? L.view : L.w, NULL, x, tol, arena, ctx);
    rv_log(ctx, RV_LOG_DEBUG, "analysis of %d blocks took %.2f s", rep.nblocks, rv_now() - t0);
  }
  if (st != RV_OK) { rc = rv_cli_fail(ctx, CMD, st); goto done; }
  if (rep.nblocks == 0) {
    rc = rv_cli_fail(ctx, CMD, rv_error(ctx, RV_ERR_MODEL, "%s: the backbone has no blocks", weights));
    goto done;
  }
  char tol_text[32];
  snprintf(tol_text, sizeof tol_text, "%g", tol);
  const double chk = rv_rank_report_check(&rep);
  if (!rv_cli_json_stdout(json)) {
    printf("%s on %s: input %dx%d, %d blocks; rank = #{s_i > tol * s_max}, tol = %s\n",
           base_name(weights), base_name(image), x.h, x.w, rep.nblocks,
           tol > 0 ? tol_text : "max(m, n) * eps(float32)");
    print_table(&rep);
    printf("check: recomputed attention outputs vs the backbone's: max |diff| / max(1, scale) = %.2e\n", chk);
  }
  if (!(chk <= 1e-3)) {
    fprintf(stderr, "ravlt %s: the recomputed attention differs from the backbone's (%.2e): "
            "the analysis does not describe this model\n", CMD, chk);
    goto done;
  }
  if (!(chk <= 1e-4)) rv_log(ctx, RV_LOG_WARN, "recomputed attention differs from the backbone's by %.2e", chk);
  if (json && (st = write_json(json, &rep, weights, image, tol, ctx)) != RV_OK) {
    rc = rv_cli_fail(ctx, CMD, st);
    goto done;
  }
  if (plot) {
    char title[512], tols[32];
    snprintf(tols, sizeof tols, "%g", tol);
    snprintf(title, sizeof title, "ravlt rank: %s on %s (input %dx%d, tol %s)", base_name(weights),
             base_name(image), x.h, x.w, tol > 0 ? tols : "max(m,n) eps_f32");
    if ((st = draw_chart(plot, &rep, sel, title, ctx)) != RV_OK) {
      rc = rv_cli_fail(ctx, CMD, st);
      goto done;
    }
  }
  rc = 0;
done:
  rv_rank_report_free(&rep);
  rv_image_free(&img);
  rv_arena_free(arena);
  loaded_free(&L);
  rv_ctx_free(ctx);
  return rc;
}
