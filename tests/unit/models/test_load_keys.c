/* A model load accounts for every checkpoint key (nn/param.h), as PyTorch's load_state_dict:
 * a key the model needs and the checkpoint lacks is an error naming it; a key the model does
 * not use is listed in a warning, an error when strict. Checkpoints are the e2e Semantic FPN
 * and Mask R-CNN fixtures written back as safetensors with keys added or renamed. */
#define _POSIX_C_SOURCE 200809L
#include "models/model.h"
#include "nn/layer.h"
#include "nn/param.h"
#include "test_util.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct {
  char warn[4096];
  int nwarn;
} log_capture;

static void capture(void *user, rv_log_level level, const char *msg) {
  log_capture *c = user;
  if (level != RV_LOG_WARN) return;
  c->nwarn++;
  snprintf(c->warn, sizeof c->warn, "%s", msg);
}

/* src's tensors and metadata, key `rename_from` stored as `rename_to` (if non-NULL), plus an
 * extra F32 tensor `extra` [3] (if non-NULL), written to path. */
static void write_variant(const char *path, const rv_weights *src, const char *rename_from,
                          const char *rename_to, const char *extra, rv_ctx *ctx) {
  rv_weights *w = rv_weights_new(path);
  int renamed = 0;
  for (int i = 0; i < rv_weights_count(src); i++) {
    const rv_wtensor *t = rv_weights_get(src, i);
    const char *name = t->name;
    if (rename_from && strcmp(name, rename_from) == 0) {
      name = rename_to;
      renamed = 1;
    }
    assert_int_equal(rv_weights_add(w, name, t->dtype, t->ndim, t->shape, t->data, t->nbytes, 0, ctx),
                     RV_OK);
  }
  assert_true(!rename_from || renamed);
  static const float three[3] = {1, 2, 3};
  const int64_t shape[1] = {3};
  if (extra) assert_int_equal(rv_weights_add(w, extra, RV_DT_F32, 1, shape, three, sizeof three, 0, ctx), RV_OK);
  for (int i = 0; i < rv_weights_meta_count(src); i++)
    assert_int_equal(rv_weights_set_meta(w, rv_weights_meta_key(src, i), rv_weights_meta(src, rv_weights_meta_key(src, i))),
                     RV_OK);
  assert_int_equal(rv_safetensors_write(path, w, ctx), RV_OK);
  rv_weights_free(w);
}

typedef struct {
  const char *fixture;   /* e2e weights */
  const char *required;  /* a key the model needs */
  const char *optional;  /* a key of an optional part (a bias: zeros when absent) */
} family_case;

static void run_family(const family_case *fc) {
  rv_ctx *ctx = rv_ctx_create();
  log_capture cap = {{0}, 0};
  rv_ctx_set_log(ctx, capture, &cap);
  rv_weights *src = NULL;
  assert_int_equal(rv_weights_open(&src, fixture_path(fc->fixture), ctx), RV_OK);
  char dir[] = "/tmp/rv_load_keys_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256], renamed[300];
  snprintf(path, sizeof path, "%s/variant.safetensors", dir);
  rv_model *m = NULL;
  rv_model_load_opts strict = {1};

  /* the checkpoint as it is: no warning, strict or not */
  write_variant(path, src, NULL, NULL, NULL, ctx);
  assert_int_equal(rv_model_load_ex(&m, path, NULL, &strict, ctx), RV_OK);
  rv_model_free(m);
  assert_int_equal(cap.nwarn, 0);

  /* a required key renamed: the load fails naming the missing key */
  snprintf(renamed, sizeof renamed, "%s_renamed", fc->required);
  write_variant(path, src, fc->required, renamed, NULL, ctx);
  assert_int_equal(rv_model_load(&m, path, NULL, ctx), RV_ERR_NOTFOUND);
  assert_null(m);
  char want[400];
  snprintf(want, sizeof want, "missing key '%s' (expected shape [", fc->required);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), want));
  assert_non_null(strstr(rv_ctx_errmsg(ctx), path));

  /* one extra key and an optional key renamed: both listed in one warning; strict: error */
  snprintf(renamed, sizeof renamed, "%s_renamed", fc->optional);
  write_variant(path, src, fc->optional, renamed, "decode_head.extra.weight", ctx);
  cap.nwarn = 0;
  assert_int_equal(rv_model_load(&m, path, NULL, ctx), RV_OK);
  assert_non_null(m);
  rv_model_free(m);
  assert_int_equal(cap.nwarn, 1);
  assert_non_null(strstr(cap.warn, "2 unexpected keys"));
  assert_non_null(strstr(cap.warn, "decode_head.extra.weight"));
  assert_non_null(strstr(cap.warn, renamed));
  m = NULL;
  assert_int_equal(rv_model_load_ex(&m, path, NULL, &strict, ctx), RV_ERR_MODEL);
  assert_null(m);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "unexpected key '"));
  assert_non_null(strstr(rv_ctx_errmsg(ctx), renamed));
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "decode_head.extra.weight"));

  unlink(path);
  rmdir(dir);
  rv_weights_free(src);
  rv_ctx_free(ctx);
}

static void test_semantic_fpn(void **state) {
  (void)state;
  family_case fc = {"e2e/semantic_fpn/weights.safetensors", "decode_head.scale_heads.1.0.conv.weight",
                    "decode_head.conv_seg.bias"};
  run_family(&fc);
}

static void test_mask_rcnn(void **state) {
  (void)state;
  family_case fc = {"e2e/mask_rcnn/weights.safetensors", "roi_head.bbox_head.fc_reg.weight",
                    "roi_head.mask_head.conv_logits.bias"};
  run_family(&fc);
}

/* The loader's own wording and accounting, on a two-key set. */
static void test_param_loader(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w = rv_weights_new("mem.safetensors");
  const float v[6] = {1, 2, 3, 4, 5, 6};
  const int64_t s23[2] = {2, 3}, s6[1] = {6};
  const int32_t iv[6] = {0};
  assert_int_equal(rv_weights_add(w, "a.weight", RV_DT_F32, 2, s23, v, sizeof v, 0, ctx), RV_OK);
  assert_int_equal(rv_weights_add(w, "a.ids", RV_DT_I32, 1, s6, iv, sizeof iv, 0, ctx), RV_OK);
  rv_params p;
  assert_int_equal(rv_params_init(&p, w, ctx), RV_OK);
  float got[6];
  const int64_t any3[2] = {-1, 3}, bad[2] = {3, 2};
  assert_int_equal(rv_param_read(&p, got, "a.weight", 2, bad, ctx), RV_ERR_MODEL);
  assert_string_equal(rv_ctx_errmsg(ctx), "mem.safetensors: key 'a.weight' has shape [2, 3], expected [3, 2]");
  assert_int_equal(rv_params_count_unused(&p, NULL), 2); /* a failed read consumes nothing */
  assert_int_equal(rv_param_read(&p, got, "a.weight", 2, any3, ctx), RV_OK);
  assert_true(got[5] == 6.0f);
  assert_int_equal(rv_param_read(&p, got, "a.bias", 1, s6, ctx), RV_ERR_NOTFOUND);
  assert_string_equal(rv_ctx_errmsg(ctx), "mem.safetensors: missing key 'a.bias' (expected shape [6])");
  assert_int_equal(rv_param_read(&p, got, "a.ids", 1, s6, ctx), RV_ERR_MODEL);
  assert_string_equal(rv_ctx_errmsg(ctx), "mem.safetensors: key 'a.ids' has dtype I32, expected a float type");
  assert_int_equal(rv_params_count_unused(&p, NULL), 1);
  static const char *const skip[] = {"a.", NULL};
  assert_int_equal(rv_params_count_unused(&p, skip), 0);
  assert_int_equal(rv_params_check_unused(&p, NULL, 1, "test model", ctx), RV_ERR_MODEL);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "unexpected key 'a.ids'"));
  assert_int_equal(rv_params_check_unused(&p, NULL, 0, "test model", ctx), RV_OK);
  rv_params_free(&p);
  rv_weights_free(w);
  rv_ctx_free(ctx);
}

/* nn/'s one reading path and one conv forward: a plain conv read by rv_layer_load and by
 * rv_convmod_load is the same module (weights, bias, shape), and rv_layer_conv (the batch in
 * one call) equals rv_convmod_forward_into (item by item) bit for bit; a ConvModule with BN
 * folds it (rv_layer_load_convmodule == rv_convmod_load) and consumes every BN key; an even
 * kernel and a missing weight are refused with nn/param.h's wording. */
static void test_module_reader(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w = rv_weights_new("mem.safetensors");
  enum { CO = 5, CI = 4 };
  float cw[CO * CI * 9], cb[CO], bn[4][CO], ew[CO * CI * 4];
  for (int i = 0; i < CO * CI * 9; i++) cw[i] = (float)((i * 37) % 19 - 9) / 16.0f;
  for (int i = 0; i < CO * CI * 4; i++) ew[i] = 1.0f;
  for (int c = 0; c < CO; c++) {
    cb[c] = 0.25f * (float)c - 0.5f;
    bn[0][c] = 0.1f * (float)c;          /* running_mean */
    bn[1][c] = 1.0f + 0.5f * (float)c;   /* running_var */
    bn[2][c] = 2.0f - 0.25f * (float)c;  /* weight */
    bn[3][c] = -0.3f + 0.2f * (float)c;  /* bias */
  }
  const int64_t s4[4] = {CO, CI, 3, 3}, s1[1] = {CO}, e4[4] = {CO, CI, 2, 2};
  static const char *const bnk[4] = {"running_mean", "running_var", "weight", "bias"};
  assert_int_equal(rv_weights_add(w, "plain.weight", RV_DT_F32, 4, s4, cw, sizeof cw, 0, ctx), RV_OK);
  assert_int_equal(rv_weights_add(w, "plain.bias", RV_DT_F32, 1, s1, cb, sizeof cb, 0, ctx), RV_OK);
  assert_int_equal(rv_weights_add(w, "cm.conv.weight", RV_DT_F32, 4, s4, cw, sizeof cw, 0, ctx), RV_OK);
  for (int i = 0; i < 4; i++) {
    char k[64];
    snprintf(k, sizeof k, "cm.bn.%s", bnk[i]);
    assert_int_equal(rv_weights_add(w, k, RV_DT_F32, 1, s1, bn[i], sizeof bn[i], 0, ctx), RV_OK);
  }
  assert_int_equal(rv_weights_add(w, "even.weight", RV_DT_F32, 4, e4, ew, sizeof ew, 0, ctx), RV_OK);
  rv_params p;
  assert_int_equal(rv_params_init(&p, w, ctx), RV_OK);
  rv_layer l, cm, lm;
  rv_convmod m;
  assert_int_equal(rv_layer_load(&l, &p, "plain", 3, ctx), RV_OK);
  assert_int_equal(rv_convmod_load(&m, &p, "plain", CI, CO, 3, 1, RV_ACT_NONE, ctx), RV_OK);
  assert_int_equal(l.cin, CI), assert_int_equal(l.cout, CO), assert_int_equal(l.k, 3);
  assert_int_equal(m.cin, l.cin), assert_int_equal(m.cout, l.cout), assert_int_equal(m.k, l.k);
  assert_int_equal(m.pad, l.pad), assert_int_equal(m.stride, l.stride);
  assert_memory_equal(l.w, m.w, sizeof cw);
  assert_memory_equal(l.b, cb, sizeof cb);
  assert_memory_equal(m.b, cb, sizeof cb);
  /* one forward: the batch in one call == item by item */
  enum { N = 2, H = 6, W = 7 };
  float x[N * CI * H * W], y1[N * CO * H * W], y2[N * CO * H * W];
  for (int i = 0; i < N * CI * H * W; i++) x[i] = (float)((i * 13) % 23 - 11) / 8.0f;
  rv_arena *a = rv_arena_create(0);
  assert_int_equal(rv_layer_conv(y1, &l, x, N, H, W, RV_ACT_RELU, a), RV_OK);
  m.act = RV_ACT_RELU;
  rv_tensor xt = {x, N, CI, H, W};
  assert_int_equal(rv_convmod_forward_into(&m, y2, (size_t)CO * H * W, xt, a, ctx), RV_OK);
  assert_memory_equal(y1, y2, sizeof y1);
  /* BN folded: w' = w g / sqrt(v + 1e-5), b' = beta - mean g / sqrt(v + 1e-5) */
  assert_int_equal(rv_layer_load_convmodule(&lm, &p, "cm", 3, ctx), RV_OK);
  assert_int_equal(rv_convmod_load(&cm, &p, "cm", -1, -1, 3, 1, RV_ACT_NONE, ctx), RV_OK);
  assert_memory_equal(lm.w, cm.w, sizeof cw);
  assert_memory_equal(lm.b, cm.b, sizeof cb);
  for (int c = 0; c < CO; c++) {
    double g = bn[2][c] / sqrt((double)bn[1][c] + 1e-5);
    assert_float_equal(cm.w[c * CI * 9 + 4], cw[c * CI * 9 + 4] * g, 1e-6);
    assert_float_equal(cm.b[c], bn[3][c] - bn[0][c] * g, 1e-6);
  }
  /* refusals */
  rv_convmod bad;
  assert_int_equal(rv_convmod_load(&bad, &p, "even", -1, -1, -1, 1, RV_ACT_NONE, ctx), RV_ERR_MODEL);
  assert_string_equal(rv_ctx_errmsg(ctx), "mem.safetensors: key 'even.weight' has shape [5, 4, 2, 2], "
                                          "expected [cout, cin, k, k] with odd k");
  assert_null(bad.w);
  assert_int_equal(rv_layer_load(&bad, &p, "none", 1, ctx), RV_ERR_NOTFOUND);
  assert_string_equal(rv_ctx_errmsg(ctx), "mem.safetensors: missing key 'none.weight' (expected shape [?, ?, 1, 1])");
  rv_layer_free(&l), rv_layer_free(&lm), rv_convmod_free(&m), rv_convmod_free(&cm);
  rv_arena_free(a);
  rv_params_free(&p);
  rv_weights_free(w);
  rv_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_param_loader),
      cmocka_unit_test(test_module_reader),
      cmocka_unit_test(test_semantic_fpn),
      cmocka_unit_test(test_mask_rcnn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
