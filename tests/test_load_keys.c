/* A model load accounts for every checkpoint key (nn/param.h), as PyTorch's load_state_dict:
 * a key the model needs and the checkpoint lacks is an error naming it; a key the model does
 * not use is listed in a warning, an error when strict. Checkpoints are the e2e Semantic FPN
 * and Mask R-CNN fixtures written back as safetensors with keys added or renamed. */
#define _POSIX_C_SOURCE 200809L
#include "models/model.h"
#include "nn/param.h"
#include "test_util.h"

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_param_loader),
      cmocka_unit_test(test_semantic_fpn),
      cmocka_unit_test(test_mask_rcnn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
