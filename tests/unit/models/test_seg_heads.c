/* Segmentation necks and heads: parity with the official mmseg 0.13 code on the head
 * fixtures (heads/upernet, heads/semantic_fpn: every stored tensor within 1e-4 of its scale
 * max(1, max|ref|); labels equal wherever the reference top-1/top-2 probability margin
 * > 1e-4), FPN extra-level modes against a direct reference, slide-window geometry and
 * averaging, aug-test merging, fused rescale+argmax, and load-time errors. */
#include "test_util.h"
#include "models/segmentor.h"
#include "backbone/ravlt.h"
#include "datasets/preprocess.h"

#include <stdint.h>

#define TOL 1e-4

/* ---- helpers ------------------------------------------------------------------------------ */

/* A "backbone" that returns stored features (copied into the arena). */
typedef struct {
  rv_tensor feats[4];
  int calls;
} stored_backbone;

static rv_status stored_features(void *user, rv_tensor *feats, int num_feats, rv_tensor img,
                                 rv_arena *a, rv_ctx *ctx) {
  stored_backbone *b = user;
  b->calls++;
  for (int i = 0; i < num_feats; i++) {
    rv_tensor f = b->feats[i];
    feats[i] = rv_tensor_new(a, f.n, f.c, f.h, f.w);
    if (!feats[i].data) return rv_error(ctx, RV_ERR_NOMEM, "oom");
    memcpy(feats[i].data, f.data, rv_tensor_numel(f) * sizeof(float));
  }
  return RV_OK;
}

/* ---- fixture parity ----------------------------------------------------------------------- */

static void run_fixture(const char *kind, rv_seg_arch arch) {
  char p[256];
  snprintf(p, sizeof p, "heads/%s/weights.safetensors", kind);
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w = NULL, *io = NULL;
  assert_int_equal(rv_weights_open(&w, fixture_path(p), ctx), RV_OK);
  snprintf(p, sizeof p, "heads/%s/io.safetensors", kind);
  assert_int_equal(rv_weights_open(&io, fixture_path(p), ctx), RV_OK);

  rv_seg_decoder *dec = NULL;
  rv_seg_decoder_config dc = rv_seg_decoder_default_config(); /* auto-detect */
  assert_int_equal(rv_seg_decoder_load(&dec, &dc, w, ctx), RV_OK);
  assert_int_equal(rv_seg_decoder_arch(dec), arch);
  assert_int_equal(rv_seg_decoder_num_classes(dec), 7);
  assert_int_equal(rv_seg_decoder_num_inputs(dec), 4);

  rv_tensor feats[4];
  float *fd[4];
  for (int i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "feat.%d", i);
    fd[i] = test_io_f32(io, p, &feats[i]);
    assert_non_null(fd[i]);
    assert_int_equal(rv_seg_decoder_in_channels(dec, i), feats[i].c);
  }
  rv_arena *a = rv_arena_create(0);
  rv_tensor logits, neck[8];
  assert_int_equal(rv_seg_decoder_forward(dec, &logits, feats, 4, neck, a, ctx), RV_OK);
  if (arch == RV_SEG_ARCH_SEMANTIC_FPN)
    for (int i = 0; i < 4; i++) {
      snprintf(p, sizeof p, "neck.out.%d", i);
      test_expect_close(kind, neck[i].data, io, p, rv_tensor_numel(neck[i]), TOL);
    }
  test_expect_close(kind, logits.data, io, "seg_logits", rv_tensor_numel(logits), TOL);

  /* img_shape 200x264, ori_shape 333x440 (config.json img_meta) */
  const int ih = 200, iw = 264, oh = 333, ow = 440, C = 7;
  rv_tensor limg = rv_tensor_new(a, 1, C, ih, iw), lori = rv_tensor_new(a, 1, C, oh, ow);
  rv_resize_bilinear_f32(limg.data, logits.data, C, logits.h, logits.w, ih, iw);
  test_expect_close(kind, limg.data, io, "seg_logits_img", rv_tensor_numel(limg), TOL);
  rv_resize_bilinear_f32(lori.data, limg.data, C, ih, iw, oh, ow);
  test_expect_close(kind, lori.data, io, "seg_logits_ori", rv_tensor_numel(lori), TOL);

  /* labels: fused rescale+argmax == argmax of the explicit resize (bit-identical), and the
   * reference wherever its margin > 1e-4 */
  size_t hw = (size_t)oh * ow;
  int32_t *lab = malloc(hw * sizeof *lab), *lab2 = malloc(hw * sizeof *lab2);
  float *margin = malloc(hw * sizeof *margin);
  assert_int_equal(rv_seg_labels_from_logits(lab, limg, oh, ow, a, ctx), RV_OK);
  rv_seg_argmax(lab2, lori.data, C, hw);
  assert_memory_equal(lab, lab2, hw * sizeof *lab);
  rv_tensor tref;
  float *ref_ori = test_io_f32(io, "seg_logits_ori", &tref);
  float *pred = test_io_f32(io, "seg_pred", NULL);
  rv_seg_top2_margin(margin, ref_ori, C, hw, 0);
  rv_label_cmp lc = rv_compare_labels(lab, pred, margin, 1e-4, hw);
  size_t flips = lc.differ, bad = lc.bad;
  printf("  %-16s seg_pred: %zu of %zu differ, %zu above margin 1e-4\n", kind, flips, hw, bad);
  assert_int_equal(bad, 0);

  /* The segmentor driven by a backbone that returns the stored features reproduces the
   * same labels (whole mode: encode_decode to the input size, rescale, argmax). */
  stored_backbone sb;
  memcpy(sb.feats, feats, sizeof feats);
  sb.calls = 0;
  rv_segmentor seg = {dec, stored_features, &sb, rv_seg_default_test_cfg()};
  rv_tensor img = rv_tensor_zeros(a, 1, 3, ih, iw);
  assert_int_equal(rv_seg_simple_test(&seg, lab2, img, oh, ow, a, ctx), RV_OK);
  assert_int_equal(sb.calls, 1);
  assert_memory_equal(lab, lab2, hw * sizeof *lab);
  free(ref_ori);
  free(pred);
  free(margin);
  free(lab);
  free(lab2);
  for (int i = 0; i < 4; i++) free(fd[i]);
  rv_arena_free(a);
  rv_seg_decoder_free(dec);
  rv_weights_free(w);
  rv_weights_free(io);
  rv_ctx_free(ctx);
}

static void test_fixture_upernet(void **state) {
  (void)state;
  run_fixture("upernet", RV_SEG_ARCH_UPERNET);
}

static void test_fixture_semantic_fpn(void **state) {
  (void)state;
  run_fixture("semantic_fpn", RV_SEG_ARCH_SEMANTIC_FPN);
}


/* ---- FPN extra levels against a direct reference ----------------------------------------- */

/* y[co,oy,ox] = b[co] + sum w[co,ci,ky,kx] x[ci, oy*s-p+ky, ox*s-p+kx] (double accumulation) */
static void ref_conv(float *y, const float *x, int cin, int h, int w, const float *wt, const float *b,
                     int cout, int k, int stride, int *oh_out, int *ow_out) {
  int pad = (k - 1) / 2, oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  for (int co = 0; co < cout; co++)
    for (int oy = 0; oy < oh; oy++)
      for (int ox = 0; ox < ow; ox++) {
        double acc = b[co];
        for (int ci = 0; ci < cin; ci++)
          for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
              int iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              acc += (double)wt[((co * cin + ci) * k + ky) * k + kx] * x[(ci * h + iy) * w + ix];
            }
        y[(co * oh + oy) * ow + ox] = (float)acc;
      }
  *oh_out = oh;
  *ow_out = ow;
}

typedef struct {
  float *data[64];
  int n;
} owned_bufs;

static void add_rand(rv_weights *w, owned_bufs *ob, const char *name, int ndim, const int64_t *shape,
                     uint64_t seed, float scale) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  float *d = malloc(n * sizeof(float));
  fill_rand(d, n, seed);
  for (size_t i = 0; i < n; i++) d[i] *= scale;
  assert_int_equal(rv_weights_add(w, name, RV_DT_F32, ndim, shape, d, n * sizeof(float), 0, NULL), RV_OK);
  assert_true(ob->n < 64);
  ob->data[ob->n++] = d;
}

static const float *wdata(const rv_weights *w, const char *name) {
  const rv_wtensor *t = rv_weights_find(w, name);
  assert_non_null(t);
  return t->data;
}

/* FPN weights: laterals for levels [start, 4), `extra` extra convs (first on C_last if on_input). */
static rv_weights *make_fpn_weights(owned_bufs *ob, const int *cin, int start, int oc, int extra,
                                    int on_input) {
  rv_weights *w = rv_weights_new("fpn-test");
  char name[128];
  int nl = 4 - start;
  for (int i = 0; i < nl; i++) {
    int64_t sl[4] = {oc, cin[start + i], 1, 1}, sb[1] = {oc}, sf[4] = {oc, oc, 3, 3};
    snprintf(name, sizeof name, "neck.lateral_convs.%d.conv.weight", i);
    add_rand(w, ob, name, 4, sl, 100 + i, 0.5f);
    snprintf(name, sizeof name, "neck.lateral_convs.%d.conv.bias", i);
    add_rand(w, ob, name, 1, sb, 200 + i, 0.5f);
    snprintf(name, sizeof name, "neck.fpn_convs.%d.conv.weight", i);
    add_rand(w, ob, name, 4, sf, 300 + i, 0.3f);
    snprintf(name, sizeof name, "neck.fpn_convs.%d.conv.bias", i);
    add_rand(w, ob, name, 1, sb, 400 + i, 0.5f);
  }
  for (int j = 0; j < extra; j++) {
    int64_t sf[4] = {oc, (j == 0 && on_input) ? cin[3] : oc, 3, 3}, sb[1] = {oc};
    snprintf(name, sizeof name, "neck.fpn_convs.%d.conv.weight", nl + j);
    add_rand(w, ob, name, 4, sf, 500 + j, 0.3f);
    snprintf(name, sizeof name, "neck.fpn_convs.%d.conv.bias", nl + j);
    add_rand(w, ob, name, 1, sb, 600 + j, 0.5f);
  }
  return w;
}

/* Reference FPN on batch-1 inputs; refs[i] malloc'd, sizes in rh/rw. */
static void ref_fpn(float **refs, int *rh, int *rw, const rv_weights *w, const rv_tensor *in,
                    const int *cin, int start, int oc, int num_outs, int mode, int relu_extra) {
  char name[128];
  int nl = 4 - start;
  float *lat[4];
  for (int i = 0; i < nl; i++) {
    rv_tensor x = in[start + i];
    lat[i] = malloc((size_t)oc * x.h * x.w * sizeof(float));
    snprintf(name, sizeof name, "neck.lateral_convs.%d.conv.weight", i);
    const float *wt = wdata(w, name);
    snprintf(name, sizeof name, "neck.lateral_convs.%d.conv.bias", i);
    int oh, ow;
    ref_conv(lat[i], x.data, cin[start + i], x.h, x.w, wt, wdata(w, name), oc, 1, 1, &oh, &ow);
    rh[i] = x.h;
    rw[i] = x.w;
  }
  for (int i = nl - 1; i > 0; i--) /* nearest: src = floor(dst * in / out), exact integers */
    for (int c = 0; c < oc; c++)
      for (int y = 0; y < rh[i - 1]; y++)
        for (int x = 0; x < rw[i - 1]; x++) {
          int sy = y * rh[i] / rh[i - 1], sx = x * rw[i] / rw[i - 1];
          lat[i - 1][(c * rh[i - 1] + y) * rw[i - 1] + x] += lat[i][(c * rh[i] + sy) * rw[i] + sx];
        }
  for (int i = 0; i < nl; i++) {
    refs[i] = malloc((size_t)oc * rh[i] * rw[i] * sizeof(float));
    snprintf(name, sizeof name, "neck.fpn_convs.%d.conv.weight", i);
    const float *wt = wdata(w, name);
    snprintf(name, sizeof name, "neck.fpn_convs.%d.conv.bias", i);
    ref_conv(refs[i], lat[i], oc, rh[i], rw[i], wt, wdata(w, name), oc, 3, 1, &rh[i], &rw[i]);
  }
  for (int i = nl; i < num_outs; i++) {
    if (mode == 0) { /* max_pool2d(k=1, s=2) == subsample [::2, ::2] */
      rh[i] = (rh[i - 1] + 1) / 2;
      rw[i] = (rw[i - 1] + 1) / 2;
      refs[i] = malloc((size_t)oc * rh[i] * rw[i] * sizeof(float));
      for (int c = 0; c < oc; c++)
        for (int y = 0; y < rh[i]; y++)
          for (int x = 0; x < rw[i]; x++)
            refs[i][(c * rh[i] + y) * rw[i] + x] = refs[i - 1][(c * rh[i - 1] + 2 * y) * rw[i - 1] + 2 * x];
      continue;
    }
    const float *src;
    int sc, sh, sw;
    float *tmp = NULL;
    if (i == nl) { /* on_input: the backbone's last feature */
      src = in[3].data;
      sc = cin[3];
      sh = in[3].h;
      sw = in[3].w;
    } else {
      sc = oc;
      sh = rh[i - 1];
      sw = rw[i - 1];
      size_t cnt = (size_t)oc * sh * sw;
      tmp = malloc(cnt * sizeof(float));
      for (size_t k = 0; k < cnt; k++) tmp[k] = relu_extra && refs[i - 1][k] < 0 ? 0 : refs[i - 1][k];
      src = tmp;
    }
    int oh = (sh - 1) / 2 + 1, ow = (sw - 1) / 2 + 1;
    refs[i] = malloc((size_t)oc * oh * ow * sizeof(float));
    snprintf(name, sizeof name, "neck.fpn_convs.%d.conv.weight", i);
    const float *wt = wdata(w, name);
    snprintf(name, sizeof name, "neck.fpn_convs.%d.conv.bias", i);
    ref_conv(refs[i], src, sc, sh, sw, wt, wdata(w, name), oc, 3, 2, &rh[i], &rw[i]);
    free(tmp);
  }
  for (int i = 0; i < nl; i++) free(lat[i]);
}

static void check_fpn_mode(int mode, int relu_extra) {
  const int cin[4] = {3, 4, 5, 6}, oc = 5;
  const int start = mode == 0 ? 0 : 1, num_outs = 5;
  const int nl = 4 - start, extra = mode == 0 ? 0 : num_outs - nl;
  /* odd sizes: ceil-halving of 50x67 */
  const int hs[4] = {13, 7, 4, 2}, ws[4] = {17, 9, 5, 3};
  owned_bufs ob = {{0}, 0};
  rv_weights *w = make_fpn_weights(&ob, cin, start, oc, extra, mode == 1);
  rv_tensor in[4];
  for (int i = 0; i < 4; i++) {
    in[i] = (rv_tensor){malloc((size_t)cin[i] * hs[i] * ws[i] * sizeof(float)), 1, cin[i], hs[i], ws[i]};
    fill_rand(in[i].data, (size_t)cin[i] * hs[i] * ws[i], 7 + i);
  }
  rv_ctx *ctx = rv_ctx_create();
  rv_fpn_config cfg = mode == 0 ? rv_fpn_default_config() : rv_fpn_retinanet_config();
  cfg.num_outs = num_outs;
  cfg.relu_before_extra_convs = relu_extra;
  rv_fpn *fpn = NULL;
  assert_int_equal(rv_fpn_load(&fpn, &cfg, &(rv_params){w, NULL}, "neck.", ctx), RV_OK);
  assert_int_equal(rv_fpn_config_of(fpn)->out_channels, oc);
  rv_arena *a = rv_arena_create(0);
  rv_tensor outs[5];
  assert_int_equal(rv_fpn_forward(fpn, outs, in, 4, a, ctx), RV_OK);
  float *refs[5];
  int rh[5], rw[5];
  ref_fpn(refs, rh, rw, w, in, cin, start, oc, num_outs, mode, relu_extra);
  for (int i = 0; i < num_outs; i++) {
    assert_int_equal(outs[i].c, oc);
    assert_int_equal(outs[i].h, rh[i]);
    assert_int_equal(outs[i].w, rw[i]);
    double e = test_rel_err(outs[i].data, refs[i], (size_t)oc * rh[i] * rw[i]);
    assert_true(e < 1e-5);
    free(refs[i]);
  }
  /* the extra level sizes: P6 = ceil(P5/2) (max-pool), or conv s2 on C5 (RetinaNet) */
  assert_int_equal(outs[nl].h, 1);
  assert_int_equal(outs[nl].w, 2);
  /* a config that does not use every conv of the checkpoint is a model mismatch */
  rv_fpn *f2 = NULL;
  rv_fpn_config c2 = cfg;
  c2.num_outs = nl;
  rv_status st = rv_fpn_load(&f2, &c2, &(rv_params){w, NULL}, "neck.", ctx);
  if (extra > 0) {
    assert_int_equal(st, RV_ERR_MODEL);
    assert_non_null(strstr(rv_ctx_errmsg(ctx), "fpn_convs"));
  } else {
    assert_int_equal(st, RV_OK);
  }
  rv_fpn_free(f2);
  /* wrong input channels */
  in[3].c = 7;
  assert_int_equal(rv_fpn_forward(fpn, outs, in, 4, a, ctx), RV_ERR_SHAPE);
  in[3].c = cin[3];
  assert_int_equal(rv_fpn_forward(fpn, outs, in, 3, a, ctx), RV_ERR_SHAPE);
  for (int i = 0; i < 4; i++) free(in[i].data);
  for (int i = 0; i < ob.n; i++) free(ob.data[i]);
  rv_fpn_free(fpn);
  rv_weights_free(w);
  rv_arena_free(a);
  rv_ctx_free(ctx);
}

static void test_fpn_maxpool_extra(void **state) {
  (void)state;
  check_fpn_mode(0, 0);
}

static void test_fpn_retinanet_on_input(void **state) {
  (void)state;
  check_fpn_mode(1, 0); /* RetinaNet: P7 = conv(P6) without ReLU */
  check_fpn_mode(1, 1); /* relu_before_extra_convs */
}

/* ---- slide inference --------------------------------------------------------------------- */

/* Synthetic backbone for the semantic_fpn fixture decoder (channels 16/32/48/64): level i
 * (stride 4*2^i, ceil-halved sizes) is a fixed function of the crop's pixels. The crop origin
 * is read back from image channels 0/1, which hold the global y/x coordinates. */
typedef struct {
  int n;
  int y1[64], x1[64], h[64], w[64];
} crop_log;

static rv_status synth_backbone(void *user, rv_tensor *feats, int num_feats, rv_tensor img,
                                rv_arena *a, rv_ctx *ctx) {
  crop_log *log = user;
  if (log && log->n < 64) {
    log->y1[log->n] = (int)lrintf(img.data[0]);
    log->x1[log->n] = (int)lrintf(img.data[(size_t)img.h * img.w]);
    log->h[log->n] = img.h;
    log->w[log->n] = img.w;
    log->n++;
  }
  static const int ch[4] = {16, 32, 48, 64};
  int h = img.h, w = img.w;
  for (int l = 0; l < num_feats; l++) {
    int s = 4 << l;
    h = (h + 1) / 2;
    w = (w + 1) / 2;
    if (l == 0) {
      h = (h + 1) / 2;
      w = (w + 1) / 2;
    }
    feats[l] = rv_tensor_new(a, 1, ch[l], h, w);
    if (!feats[l].data) return rv_error(ctx, RV_ERR_NOMEM, "oom");
    for (int c = 0; c < ch[l]; c++)
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
          int iy = y * s < img.h ? y * s : img.h - 1, ix = x * s < img.w ? x * s : img.w - 1;
          float v = *rv_tensor_at(img, 0, 2, iy, ix);
          *rv_tensor_at(feats[l], 0, c, y, x) = sinf(v * (float)(c + 1) * 0.7f + (float)l);
        }
  }
  return RV_OK;
}

static rv_tensor coord_image(rv_arena *a, int h, int w, uint64_t seed) {
  rv_tensor img = rv_tensor_new(a, 1, 3, h, w);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      *rv_tensor_at(img, 0, 0, y, x) = (float)y;
      *rv_tensor_at(img, 0, 1, y, x) = (float)x;
    }
  fill_rand(rv_tensor_at(img, 0, 2, 0, 0), (size_t)h * w, seed);
  return img;
}

static rv_seg_decoder *fixture_decoder(rv_weights **w, rv_ctx *ctx) {
  assert_int_equal(rv_weights_open(w, fixture_path("heads/semantic_fpn/weights.safetensors"), ctx), RV_OK);
  rv_seg_decoder *dec = NULL;
  rv_seg_decoder_config dc = rv_seg_decoder_default_config();
  assert_int_equal(rv_seg_decoder_load(&dec, &dc, *w, ctx), RV_OK);
  return dec;
}

static void test_slide_inference(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w;
  rv_seg_decoder *dec = fixture_decoder(&w, ctx);
  rv_arena *a = rv_arena_create(0);
  crop_log log = {0};
  rv_segmentor seg = {dec, synth_backbone, &log, rv_seg_default_test_cfg()};
  seg.test.mode = RV_SEG_MODE_SLIDE;
  seg.test.crop_h = seg.test.crop_w = 64;
  seg.test.stride_h = seg.test.stride_w = 42;
  const int H = 75, W = 170, C = 7;
  rv_tensor img = coord_image(a, H, W, 11);
  rv_tensor logits;
  assert_int_equal(rv_seg_logits(&seg, &logits, img, a, ctx), RV_OK);
  /* mmseg grid, worked by hand: h_grids = (75-64+41)//42+1 = 2 -> rows [0,64) [11,75);
   * w_grids = (170-64+41)//42+1 = 4 -> cols [0,64) [42,106) [84,148) [106,170) */
  static const int ey[2] = {0, 11}, ex[4] = {0, 42, 84, 106};
  assert_int_equal(log.n, 8);
  for (int i = 0; i < 8; i++) {
    assert_int_equal(log.y1[i], ey[i / 4]);
    assert_int_equal(log.x1[i], ex[i % 4]);
    assert_int_equal(log.h[i], 64);
    assert_int_equal(log.w[i], 64);
  }
  /* reference: sum of every crop's encode_decode placed at its window / window count */
  double *sum = calloc((size_t)C * H * W, sizeof *sum);
  int *cnt = calloc((size_t)H * W, sizeof *cnt);
  for (int i = 0; i < 8; i++) {
    rv_arena_mark m = rv_arena_get_mark(a);
    rv_tensor crop = rv_tensor_new(a, 1, 3, 64, 64), cl;
    for (int c = 0; c < 3; c++)
      for (int y = 0; y < 64; y++)
        for (int x = 0; x < 64; x++)
          *rv_tensor_at(crop, 0, c, y, x) = *rv_tensor_at(img, 0, c, ey[i / 4] + y, ex[i % 4] + x);
    assert_int_equal(rv_seg_encode_decode(&seg, &cl, crop, a, ctx), RV_OK);
    for (int c = 0; c < C; c++)
      for (int y = 0; y < 64; y++)
        for (int x = 0; x < 64; x++)
          sum[((size_t)c * H + ey[i / 4] + y) * W + ex[i % 4] + x] += *rv_tensor_at(cl, 0, c, y, x);
    for (int y = 0; y < 64; y++)
      for (int x = 0; x < 64; x++) cnt[(ey[i / 4] + y) * W + ex[i % 4] + x]++;
    rv_arena_release(a, m);
  }
  assert_int_equal(cnt[0], 1);
  assert_int_equal(cnt[20 * W + 50], 4); /* two rows x two columns overlap */
  double maxd = 0;
  for (int c = 0; c < C; c++)
    for (int i = 0; i < H * W; i++) {
      double d = fabs(sum[(size_t)c * H * W + i] / cnt[i] - logits.data[(size_t)c * H * W + i]);
      if (d > maxd) maxd = d;
    }
  printf("  slide: max |got - ref| %.3g\n", maxd);
  assert_true(maxd < 1e-5);
  /* a crop larger than the image: one window, identical to whole inference */
  rv_tensor small = coord_image(a, 40, 50, 12), l1, l2;
  log.n = 0;
  assert_int_equal(rv_seg_logits(&seg, &l1, small, a, ctx), RV_OK);
  assert_int_equal(log.n, 1);
  seg.test.mode = RV_SEG_MODE_WHOLE;
  assert_int_equal(rv_seg_logits(&seg, &l2, small, a, ctx), RV_OK);
  assert_memory_equal(l1.data, l2.data, rv_tensor_numel(l1) * sizeof(float));
  /* bad slide parameters */
  seg.test.mode = RV_SEG_MODE_SLIDE;
  seg.test.stride_w = 0;
  assert_int_equal(rv_seg_logits(&seg, &l1, small, a, ctx), RV_ERR_ARG);
  free(sum);
  free(cnt);
  rv_arena_free(a);
  rv_seg_decoder_free(dec);
  rv_weights_free(w);
  rv_ctx_free(ctx);
}

/* ---- aug-test merging and fused rescale -------------------------------------------------- */

static void test_aug_merge(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  const int C = 5, ih = 7, iw = 9, oh = 13, ow = 20;
  const size_t ohw = (size_t)oh * ow;
  float *ld = malloc((size_t)C * ih * iw * sizeof(float));
  fill_rand(ld, (size_t)C * ih * iw, 5);
  for (size_t i = 0; i < (size_t)C * ih * iw; i++) ld[i] *= 4;
  rv_tensor l = {ld, 1, C, ih, iw};
  /* reference: explicit resize, softmax in double */
  float *r = malloc((size_t)C * ohw * sizeof(float));
  rv_resize_bilinear_f32(r, ld, C, ih, iw, oh, ow);
  double *p = malloc((size_t)C * ohw * sizeof(double));
  for (size_t i = 0; i < ohw; i++) {
    double m = -1e30, s = 0;
    for (int c = 0; c < C; c++) m = fmax(m, r[c * ohw + i]);
    for (int c = 0; c < C; c++) s += exp(r[c * ohw + i] - m);
    for (int c = 0; c < C; c++) p[c * ohw + i] = exp(r[c * ohw + i] - m) / s;
  }
  float *acc = calloc((size_t)C * ohw, sizeof(float)), *accf = calloc((size_t)C * ohw, sizeof(float));
  rv_arena *a = rv_arena_create(0);
  assert_int_equal(rv_seg_probs_add(acc, l, 0, oh, ow, a, ctx), RV_OK);
  assert_int_equal(rv_seg_probs_add(accf, l, 1, oh, ow, a, ctx), RV_OK);
  double maxd = 0;
  for (int c = 0; c < C; c++)
    for (int y = 0; y < oh; y++)
      for (int x = 0; x < ow; x++) {
        size_t i = (size_t)c * ohw + (size_t)y * ow + x, j = (size_t)c * ohw + (size_t)y * ow + (ow - 1 - x);
        maxd = fmax(maxd, fabs(acc[i] - p[i]));
        assert_true(accf[j] == acc[i]); /* flipped back: exact mirror */
      }
  assert_true(maxd < 1e-6);
  /* merge: (p + mirror(p)) / 2, argmax, first max wins */
  assert_int_equal(rv_seg_probs_add(acc, l, 1, oh, ow, a, ctx), RV_OK);
  int32_t *lab = malloc(ohw * sizeof *lab);
  rv_seg_aug_labels(lab, acc, C, oh, ow, 2);
  for (int y = 0; y < oh; y++)
    for (int x = 0; x < ow; x++) {
      int best = 0;
      double bv = -1;
      for (int c = 0; c < C; c++) {
        double v = (p[c * ohw + y * ow + x] + p[c * ohw + y * ow + (ow - 1 - x)]) / 2;
        if (v > bv + 1e-6) bv = v, best = c;
      }
      assert_int_equal(lab[y * ow + x], best);
    }
  /* argmax ties: the first maximum wins */
  float tie[6] = {1, 3, 2, 3, 2, 3}; /* [class][pixel]: pixel 0 = (1, 2, 2), pixel 1 = (3, 3, 3) */
  int32_t tl[2];
  rv_seg_argmax(tl, tie, 3, 2);
  assert_int_equal(tl[0], 1);
  assert_int_equal(tl[1], 0);
  /* fused rescale+argmax == argmax of the explicit resize */
  int32_t *lab2 = malloc(ohw * sizeof *lab2);
  assert_int_equal(rv_seg_labels_from_logits(lab, l, oh, ow, a, ctx), RV_OK);
  rv_seg_argmax(lab2, r, C, ohw);
  assert_memory_equal(lab, lab2, ohw * sizeof *lab);
  assert_int_equal(rv_seg_labels_from_logits(lab, l, 0, ow, a, ctx), RV_ERR_ARG);
  rv_arena_free(a);
  free(lab2);
  free(lab);
  free(acc);
  free(accf);
  free(p);
  free(r);
  free(ld);
  rv_ctx_free(ctx);
}

/* ---- load-time errors and the auxiliary head --------------------------------------------- */

typedef struct {
  char msgs[8][256];
  int n;
} log_capture;

static void capture_log(void *user, rv_log_level level, const char *msg) {
  log_capture *c = user;
  if (level >= RV_LOG_INFO && c->n < 8) snprintf(c->msgs[c->n++], sizeof c->msgs[0], "%s", msg);
}

/* Copy of `src` without the tensor `skip` (NULL: all), plus `extra` (NULL: none). */
static rv_weights *copy_weights(const rv_weights *src, const char *skip, const char *extra) {
  rv_weights *w = rv_weights_new("copy");
  for (int i = 0; i < rv_weights_count(src); i++) {
    const rv_wtensor *t = rv_weights_get(src, i);
    if (skip && strcmp(t->name, skip) == 0) continue;
    assert_int_equal(rv_weights_add(w, t->name, t->dtype, t->ndim, t->shape, t->data, t->nbytes, 0, NULL), RV_OK);
  }
  static const float one[1] = {1};
  static const int64_t shape1[1] = {1};
  if (extra) assert_int_equal(rv_weights_add(w, extra, RV_DT_F32, 1, shape1, one, 4, 0, NULL), RV_OK);
  return w;
}

static void test_load_errors(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  log_capture cap = {{{0}}, 0};
  rv_ctx_set_log(ctx, capture_log, &cap);
  rv_ctx_set_log_level(ctx, RV_LOG_DEBUG);
  rv_weights *up = NULL;
  assert_int_equal(rv_weights_open(&up, fixture_path("heads/upernet/weights.safetensors"), ctx), RV_OK);
  rv_seg_decoder_config dc = rv_seg_decoder_default_config();
  rv_seg_decoder *dec = NULL;
  /* auxiliary_head.* is ignored with an info message */
  assert_int_equal(rv_seg_decoder_load(&dec, &dc, up, ctx), RV_OK);
  int seen = 0;
  for (int i = 0; i < cap.n; i++) seen |= strstr(cap.msgs[i], "auxiliary_head") != NULL;
  assert_true(seen);
  /* features with the wrong channels or count */
  rv_arena *a = rv_arena_create(0);
  rv_tensor f[4], logits;
  static const int ch[4] = {16, 32, 48, 64}, hs[4] = {8, 4, 2, 1};
  for (int i = 0; i < 4; i++) f[i] = rv_tensor_zeros(a, 1, ch[i], hs[i], hs[i]);
  assert_int_equal(rv_seg_decoder_forward(dec, &logits, f, 4, NULL, a, ctx), RV_OK);
  assert_int_equal(logits.c, 7);
  f[2].c = 40;
  assert_int_equal(rv_seg_decoder_forward(dec, &logits, f, 4, NULL, a, ctx), RV_ERR_SHAPE);
  assert_int_equal(rv_seg_decoder_forward(dec, &logits, f, 3, NULL, a, ctx), RV_ERR_SHAPE);
  rv_seg_decoder_free(dec);
  /* wrong number of classes */
  dc.num_classes = 150;
  assert_int_equal(rv_seg_decoder_load(&dec, &dc, up, ctx), RV_ERR_MODEL);
  assert_null(dec);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "decode_head.conv_seg.weight"));
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "[7, 32, 1, 1]"));
  dc.num_classes = -1;
  /* a missing tensor is named */
  rv_weights *w = copy_weights(up, "decode_head.fpn_convs.1.bn.running_var", NULL);
  assert_int_equal(rv_seg_decoder_load(&dec, &dc, w, ctx), RV_ERR_NOTFOUND);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "decode_head.fpn_convs.1.bn.running_var"));
  rv_weights_free(w);
  /* a 5th pool scale in the checkpoint that the config lacks */
  dc.uper.num_pool_scales = 3;
  assert_int_equal(rv_seg_decoder_load(&dec, &dc, up, ctx), RV_ERR_MODEL);
  dc.uper.num_pool_scales = 4;
  /* the architecture forced to Semantic FPN on an UperNet checkpoint */
  dc.arch = RV_SEG_ARCH_SEMANTIC_FPN;
  assert_int_equal(rv_seg_decoder_load(&dec, &dc, up, ctx), RV_ERR_MODEL);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "this is a UperNet checkpoint (has "
                                             "'decode_head.psp_modules.0.1.conv.weight'), not Semantic FPN"));
  /* the family table says which decoder a family uses: seg ops for its segmentation rows
   * only; a detection family forced on the decoder is refused */
  for (int i = 0; i < RV_FAMILY_COUNT; i++)
    assert_int_equal(rv_seg_arch_ops((rv_seg_arch)i) != NULL, rv_family_get(i)->task == RV_TASK_SEGMENT);
  dc.arch = (rv_seg_arch)RV_FAMILY_RETINANET;
  assert_int_equal(rv_seg_decoder_load(&dec, &dc, up, ctx), RV_ERR_ARG);
  assert_null(dec);
  dc.arch = RV_SEG_ARCH_AUTO;
  /* a detector checkpoint */
  rv_weights *det = rv_weights_new("det");
  static const float v[4] = {0};
  static const int64_t s4[1] = {4};
  assert_int_equal(rv_weights_add(det, "neck.lateral_convs.0.conv.bias", RV_DT_F32, 1, s4, v, 16, 0, NULL), RV_OK);
  assert_int_equal(rv_weights_add(det, "rpn_head.rpn_conv.bias", RV_DT_F32, 1, s4, v, 16, 0, NULL), RV_OK);
  assert_int_equal(rv_seg_decoder_load(&dec, &dc, det, ctx), RV_ERR_MODEL);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "detection checkpoint"));
  rv_weights_free(det);
  /* nothing recognisable */
  rv_weights *empty = rv_weights_new("empty");
  assert_int_equal(rv_seg_decoder_load(&dec, &dc, empty, ctx), RV_ERR_MODEL);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "no segmentation head in the checkpoint (looked for Semantic FPN"));
  rv_weights_free(empty);
  rv_arena_free(a);
  rv_weights_free(up);
  rv_ctx_free(ctx);
}

/* ---- whole models on a real photograph (e2e fixtures) ------------------------------------ */

/* checkpoint.pth -> RAVLT backbone (config from the weights) + decoder; image.jpg through
 * the mmseg test pipeline; labels must equal the official label_map wherever the official
 * top-1/top-2 margin (label_margin) exceeds 1e-4. Then (one model) aug-test with the single
 * unflipped image must give the simple-test labels. */
static void run_e2e(const char *kind, int check_aug) {
  char p[512];
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w = NULL, *io = NULL;
  snprintf(p, sizeof p, "e2e/%s/checkpoint.pth", kind);
  assert_int_equal(rv_weights_open(&w, fixture_path(p), ctx), RV_OK);
  snprintf(p, sizeof p, "e2e/%s/io.safetensors", kind);
  assert_int_equal(rv_weights_open(&io, fixture_path(p), ctx), RV_OK);
  rv_ravlt_config bc;
  assert_int_equal(rv_ravlt_config_from_weights(&bc, w, NULL, ctx), RV_OK);
  rv_ravlt *bb = NULL;
  assert_int_equal(rv_ravlt_create(&bb, &bc, w, NULL, ctx), RV_OK);
  rv_seg_decoder *dec = NULL;
  rv_seg_decoder_config dc = rv_seg_decoder_default_config();
  dc.num_classes = 150;
  assert_int_equal(rv_seg_decoder_load(&dec, &dc, w, ctx), RV_OK);
  rv_image img = {0};
  snprintf(p, sizeof p, "e2e/%s/image.jpg", kind);
  assert_int_equal(rv_image_read(fixture_path(p), &img, ctx), RV_OK);
  rv_arena *a = rv_arena_create(0);
  rv_preprocess_params pp = rv_preprocess_mmseg_params();
  rv_tensor x;
  rv_img_meta meta;
  assert_int_equal(rv_preprocess(&x, &meta, &img, &pp, a, ctx), RV_OK);
  rv_segmentor seg = {dec, rv_seg_ravlt_backbone, bb, rv_seg_default_test_cfg()};
  const size_t hw = (size_t)meta.ori_h * meta.ori_w;
  int32_t *lab = malloc(hw * sizeof *lab), *lab2 = malloc(hw * sizeof *lab2);
  assert_int_equal(rv_seg_simple_test(&seg, lab, x, meta.ori_h, meta.ori_w, a, ctx), RV_OK);
  rv_tensor tl, tm;
  float *ref = test_io_f32(io, "label_map", &tl), *margin = test_io_f32(io, "label_margin", &tm);
  assert_int_equal(rv_tensor_numel(tl), hw);
  rv_label_cmp lc = rv_compare_labels(lab, ref, margin, 1e-4, hw);
  size_t flips = lc.differ, bad = lc.bad;
  printf("  e2e %-12s %dx%d -> %dx%d: %zu of %zu labels differ, %zu above margin 1e-4\n", kind, meta.ori_w,
         meta.ori_h, x.w, x.h, flips, hw, bad);
  assert_int_equal(bad, 0);
  if (check_aug) { /* aug-test machinery on the real model (one pass, unflipped) */
    const int C = rv_seg_decoder_num_classes(dec);
    float *acc = calloc((size_t)C * hw, sizeof *acc);
    assert_int_equal(rv_seg_aug_add(&seg, acc, x, 0, meta.ori_h, meta.ori_w, a, ctx), RV_OK);
    rv_seg_aug_labels(lab2, acc, C, meta.ori_h, meta.ori_w, 1);
    size_t same = 0;
    for (size_t i = 0; i < hw; i++) same += lab2[i] == lab[i];
    assert_true(same >= hw - 2); /* softmax vs logits argmax: only exact ties may differ */
    free(acc);
  }
  free(ref);
  free(margin);
  free(lab);
  free(lab2);
  rv_image_free(&img);
  rv_arena_free(a);
  rv_seg_decoder_free(dec);
  rv_ravlt_free(bb);
  rv_weights_free(w);
  rv_weights_free(io);
  rv_ctx_free(ctx);
}

static void test_e2e_upernet(void **state) {
  (void)state;
  run_e2e("upernet", 0);
}

static void test_e2e_semantic_fpn(void **state) {
  (void)state;
  run_e2e("semantic_fpn", 1);
}

/* ---- banded resize == core kernel, bit for bit ------------------------------------------- */

static void test_resize_exact(void **state) {
  (void)state;
  /* up (x4 and odd), down, identity, one row/column, and more rows than one band */
  static const int sz[][4] = {{7, 9, 28, 36}, {13, 17, 50, 66}, {50, 66, 13, 17}, {40, 3, 97, 5},
                              {1, 1, 5, 4},   {5, 4, 1, 1},     {9, 9, 9, 9},    {100, 31, 333, 45}};
  rv_arena *a = rv_arena_create(0);
  for (size_t k = 0; k < sizeof sz / sizeof sz[0]; k++) {
    const int C = 3, h = sz[k][0], w = sz[k][1], oh = sz[k][2], ow = sz[k][3];
    float *x = malloc((size_t)C * h * w * sizeof(float));
    float *y1 = malloc((size_t)C * oh * ow * sizeof(float)), *y2 = malloc((size_t)C * oh * ow * sizeof(float));
    fill_rand(x, (size_t)C * h * w, 40 + k);
    rv_resize_bilinear_f32(y1, x, C, h, w, oh, ow);
    assert_int_equal(rv_seg_resize_planes(y2, x, C, h, w, oh, ow, a), RV_OK);
    assert_memory_equal(y1, y2, (size_t)C * oh * ow * sizeof(float));
    int32_t *l1 = malloc((size_t)oh * ow * sizeof *l1), *l2 = malloc((size_t)oh * ow * sizeof *l2);
    rv_seg_argmax(l1, y1, C, (size_t)oh * ow);
    assert_int_equal(rv_seg_resize_argmax(l2, x, C, h, w, oh, ow, a), RV_OK);
    assert_memory_equal(l1, l2, (size_t)oh * ow * sizeof *l1);
    assert_int_equal(rv_arena_used(a), 0); /* scratch released */
    free(l1);
    free(l2);
    free(x);
    free(y1);
    free(y2);
  }
  /* two fused resizes == two materialised ones (labels and softmax sums, bit for bit) */
  static const int s2[][6] = {{7, 9, 28, 36, 50, 60},   {13, 17, 50, 66, 50, 66}, {13, 17, 50, 66, 33, 44},
                              {5, 4, 20, 16, 100, 3},   {6, 6, 6, 6, 40, 41},     {9, 70, 36, 280, 29, 201},
                              {3, 50, 12, 200, 12, 200}};
  for (size_t k = 0; k < sizeof s2 / sizeof s2[0]; k++) {
    const int C = 4, h = s2[k][0], w = s2[k][1], mh = s2[k][2], mw = s2[k][3], oh = s2[k][4], ow = s2[k][5];
    const size_t on = (size_t)oh * ow;
    float *x = malloc((size_t)C * h * w * sizeof(float)), *mid = malloc((size_t)C * mh * mw * sizeof(float));
    float *y = malloc((size_t)C * on * sizeof(float));
    fill_rand(x, (size_t)C * h * w, 60 + k);
    for (size_t i = 0; i < (size_t)C * h * w; i++) x[i] *= 5;
    rv_resize_bilinear_f32(mid, x, C, h, w, mh, mw);
    rv_resize_bilinear_f32(y, mid, C, mh, mw, oh, ow);
    int32_t *l1 = malloc(on * sizeof *l1), *l2 = malloc(on * sizeof *l2);
    rv_seg_argmax(l1, y, C, on);
    assert_int_equal(rv_seg_resize2_argmax(l2, x, C, h, w, mh, mw, oh, ow, a), RV_OK);
    assert_memory_equal(l1, l2, on * sizeof *l1);
    float *p1 = calloc((size_t)C * on, sizeof(float)), *p2 = calloc((size_t)C * on, sizeof(float));
    assert_int_equal(rv_seg_resize_softmax_add(p1, mid, C, mh, mw, oh, ow, 1, a), RV_OK);
    assert_int_equal(rv_seg_resize2_softmax_add(p2, x, C, h, w, mh, mw, oh, ow, 1, a), RV_OK);
    assert_memory_equal(p1, p2, (size_t)C * on * sizeof(float));
    assert_int_equal(rv_arena_used(a), 0);
    free(p1);
    free(p2);
    free(l1);
    free(l2);
    free(x);
    free(mid);
    free(y);
  }
  /* many classes over several bands and both threads (the argmax runs class by class per
   * band; its clones for AVX2 / AVX-512 give the same bits) */
  static const int s3[][6] = {{32, 40, 0, 0, 128, 160}, {17, 23, 68, 92, 51, 70},
                              {30, 64, 120, 256, 120, 256}, {40, 30, 40, 30, 97, 75}};
  for (size_t k = 0; k < sizeof s3 / sizeof s3[0]; k++) {
    const int C = 37, h = s3[k][0], w = s3[k][1], mh = s3[k][2], mw = s3[k][3], oh = s3[k][4],
              ow = s3[k][5];
    const size_t on = (size_t)oh * ow;
    const int th = mh ? mh : h, tw = mh ? mw : w;
    float *x = malloc((size_t)C * h * w * sizeof(float)), *mid = malloc((size_t)C * th * tw * sizeof(float));
    float *y = malloc((size_t)C * on * sizeof(float));
    fill_rand(x, (size_t)C * h * w, 80 + k);
    if (mh) rv_resize_bilinear_f32(mid, x, C, h, w, mh, mw);
    else memcpy(mid, x, (size_t)C * h * w * sizeof(float));
    rv_resize_bilinear_f32(y, mid, C, th, tw, oh, ow);
    int32_t *l1 = malloc(on * sizeof *l1), *l2 = malloc(on * sizeof *l2);
    rv_seg_argmax(l1, y, C, on);
    assert_int_equal(rv_seg_resize2_argmax(l2, x, C, h, w, mh, mw, oh, ow, a), RV_OK);
    assert_memory_equal(l1, l2, on * sizeof *l1);
    assert_int_equal(rv_arena_used(a), 0);
    free(l1);
    free(l2);
    free(x);
    free(mid);
    free(y);
  }
  rv_arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixture_upernet),
      cmocka_unit_test(test_fixture_semantic_fpn),
      cmocka_unit_test(test_fpn_maxpool_extra),
      cmocka_unit_test(test_fpn_retinanet_on_input),
      cmocka_unit_test(test_slide_inference),
      cmocka_unit_test(test_resize_exact),
      cmocka_unit_test(test_aug_merge),
      cmocka_unit_test(test_load_errors),
      cmocka_unit_test(test_e2e_upernet),
      cmocka_unit_test(test_e2e_semantic_fpn),
  };
  return cmocka_run_group_tests_name("seg_heads", tests, NULL, NULL);
}
