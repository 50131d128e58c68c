/* .pth checkpoints: every fixture checkpoint equals its weights.safetensors tensor for
 * tensor (exact bytes), mmcv meta extraction, synthetic views/dtypes/protocols from
 * tools/make_bad_pth.py, the pickle interpreter on hand-made streams, and malformed inputs
 * (bad files, truncations, byte flips in data.pkl, missing storages) that must fail with a
 * message and never crash. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"
#include "formats/pickle.h"
#include "formats/pth.h"
#include "formats/weights.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Collect "<kind>/<name>" fixture folders holding a checkpoint.pth. */
static int list_checkpoints(const char *kind, char names[][256], int max) {
  DIR *d = opendir(fixture_path(kind));
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < max) {
    if (e->d_name[0] == '.') continue;
    char rel[512];
    snprintf(rel, sizeof rel, "%.100s/%.200s/checkpoint.pth", kind, e->d_name);
    if (!path_exists(fixture_path(rel))) continue;
    snprintf(names[n++], 256, "%.40s/%.200s", kind, e->d_name);
  }
  closedir(d);
  return n;
}

static void expect_same_weights(const rv_weights *a, const rv_weights *b, const char *what) {
  if (rv_weights_count(a) != rv_weights_count(b))
    fail_msg("%s: %d tensors in the checkpoint, %d in weights.safetensors", what, rv_weights_count(a), rv_weights_count(b));
  for (int i = 0; i < rv_weights_count(a); i++) {
    const rv_wtensor *x = rv_weights_get(a, i), *y = rv_weights_find(b, x->name);
    if (!y) fail_msg("%s: '%s' missing from weights.safetensors", what, x->name);
    if (x->dtype != y->dtype || x->ndim != y->ndim || x->nbytes != y->nbytes)
      fail_msg("%s: '%s' dtype/rank/size differ", what, x->name);
    for (int d = 0; d < x->ndim; d++) assert_int_equal(x->shape[d], y->shape[d]);
    if (x->nbytes && memcmp(x->data, y->data, x->nbytes) != 0) fail_msg("%s: '%s' bytes differ", what, x->name);
  }
}

static void test_fixture_checkpoints(void **state) {
  (void)state;
  char names[64][256];
  int nb = list_checkpoints("backbone", names, 32);
  int ne = list_checkpoints("e2e", names + nb, 32);
  assert_true(nb > 0); /* the fixtures must be there: a missing folder is a failure */
  assert_true(ne > 0);
  rv_ctx *ctx = rv_ctx_create();
  for (int k = 0; k < nb + ne; k++) {
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, "%.256s/checkpoint.pth", names[k]);
    snprintf(p2, sizeof p2, "%.256s/weights.safetensors", names[k]);
    rv_weights *a = NULL, *b = NULL;
    double t0 = now_s();
    rv_status st = rv_weights_open(&a, fixture_path(p1), ctx);
    double t1 = now_s();
    if (st != RV_OK) fail_msg("%s: %s", p1, rv_ctx_errmsg(ctx));
    assert_int_equal(rv_safetensors_open(&b, fixture_path(p2), ctx), RV_OK);
    expect_same_weights(a, b, names[k]);
    /* the in-memory entry point gives the same */
    size_t len;
    unsigned char *img = (unsigned char *)test_read_file(fixture_path(p1), &len);
    assert_non_null(img);
    rv_weights *c = NULL;
    assert_int_equal(rv_pth_load_buffer(&c, img, len, p1, ctx), RV_OK);
    free(img); /* tensors are copies: c stays valid */
    expect_same_weights(c, b, names[k]);
    print_message("  %-28s %4d tensors, %2d meta, loaded in %.1f ms\n", names[k], rv_weights_count(a),
                  rv_weights_meta_count(a), 1e3 * (t1 - t0));
    rv_weights_free(a);
    rv_weights_free(b);
    rv_weights_free(c);
  }
  rv_ctx_free(ctx);
}

static void test_e2e_meta(void **state) {
  (void)state;
  char names[32][256];
  int ne = list_checkpoints("e2e", names, 32);
  assert_true(ne > 0);
  rv_ctx *ctx = rv_ctx_create();
  for (int k = 0; k < ne; k++) {
    char p[512];
    snprintf(p, sizeof p, "%.256s/checkpoint.pth", names[k]);
    rv_weights *w = NULL;
    assert_int_equal(rv_pth_load(&w, fixture_path(p), ctx), RV_OK);
    const char *cfg = rv_weights_meta(w, "config");
    assert_non_null(cfg);
    snprintf(p, sizeof p, "%.256s/train_config.py", names[k]);
    char *txt = test_read_text(fixture_path(p));
    if (txt) { /* the meta text is exactly the training config */
      assert_string_equal(cfg, txt);
      free(txt);
    }
    assert_non_null(strstr(cfg, "model = dict("));
    assert_non_null(rv_weights_meta(w, "mmcv_version"));
    int seg = rv_weights_meta(w, "mmseg_version") != NULL;
    assert_true(seg || rv_weights_meta(w, "mmdet_version"));
    cJSON *cls = cJSON_Parse(rv_weights_meta(w, "CLASSES"));
    assert_true(cJSON_IsArray(cls));
    assert_true(cJSON_GetArraySize(cls) > 0);
    for (cJSON *c = cls->child; c; c = c->next) assert_true(cJSON_IsString(c) && c->valuestring[0]);
    if (seg) {
      cJSON *pal = cJSON_Parse(rv_weights_meta(w, "PALETTE"));
      assert_true(cJSON_IsArray(pal));
      assert_int_equal(cJSON_GetArraySize(pal), cJSON_GetArraySize(cls));
      for (cJSON *c = pal->child; c; c = c->next) {
        assert_int_equal(cJSON_GetArraySize(c), 3);
        assert_true(cJSON_IsNumber(c->child) && c->child->valuedouble >= 0 && c->child->valuedouble <= 255);
      }
      cJSON_Delete(pal);
    }
    cJSON_Delete(cls);
    /* a numpy float64 scalar in hook_msgs is decoded to its number */
    const char *best = rv_weights_meta(w, "hook_msgs.best_score");
    if (best) {
      char *end;
      strtod(best, &end);
      assert_true(*end == 0 && end != best);
    }
    rv_weights_free(w);
  }
  rv_ctx_free(ctx);
}

/* ---- synthetic checkpoints (tools/make_bad_pth.py) ---------------------------------------- */

static const rv_wtensor *need_tensor(const rv_weights *w, const char *name, rv_dtype dt, int ndim, ...) {
  const rv_wtensor *t = rv_weights_find(w, name);
  if (!t) fail_msg("tensor '%s' missing", name);
  assert_int_equal(t->dtype, dt);
  assert_int_equal(t->ndim, ndim);
  va_list ap;
  va_start(ap, ndim);
  size_t n = 1;
  for (int d = 0; d < ndim; d++) {
    int64_t s = va_arg(ap, int);
    assert_int_equal(t->shape[d], s);
    n *= (size_t)s;
  }
  va_end(ap);
  assert_int_equal(t->nbytes, n * rv_dtype_size(dt));
  return t;
}

static void expect_f32(const rv_wtensor *t, const float *want, size_t n) {
  float *got = malloc(n * sizeof *got + 1);
  rv_wtensor_to_f32(t, got);
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i]) fail_msg("'%s'[%zu] = %g, want %g", t->name, i, got[i], want[i]);
  free(got);
}

static void test_views_and_dtypes(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w = NULL;
  rv_status st = rv_weights_open(&w, data_path("pth/views.pth"), ctx);
  if (st != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
  const char *order[] = {"a", "a_t", "a_off", "b_step", "bcast", "h", "bf", "i32", "i16", "i8",
                         "u8", "bool", "nbt", "empty", "param", "nhwc"};
  assert_int_equal(rv_weights_count(w), 16);
  for (int i = 0; i < 16; i++) assert_string_equal(rv_weights_get(w, i)->name, order[i]);
  expect_f32(need_tensor(w, "a", RV_DT_F32, 2, 2, 3), (const float[]){0, 1, 2, 3, 4, 5}, 6);
  expect_f32(need_tensor(w, "a_t", RV_DT_F32, 2, 3, 2), (const float[]){0, 3, 1, 4, 2, 5}, 6);
  expect_f32(need_tensor(w, "a_off", RV_DT_F32, 1, 4), (const float[]){2, 3, 4, 5}, 4);
  expect_f32(need_tensor(w, "b_step", RV_DT_F64, 1, 3), (const float[]){1, 3, 5}, 3);
  expect_f32(need_tensor(w, "bcast", RV_DT_F32, 2, 2, 3), (const float[]){3, 4, 5, 3, 4, 5}, 6);
  expect_f32(need_tensor(w, "h", RV_DT_F16, 1, 3), (const float[]){1, -2, 0.5f}, 3);
  expect_f32(need_tensor(w, "bf", RV_DT_BF16, 1, 2), (const float[]){1, -2}, 2);
  expect_f32(need_tensor(w, "i32", RV_DT_I32, 1, 2), (const float[]){-7, 8}, 2);
  expect_f32(need_tensor(w, "i16", RV_DT_I16, 1, 2), (const float[]){-3, 300}, 2);
  expect_f32(need_tensor(w, "i8", RV_DT_I8, 1, 2), (const float[]){-1, 2}, 2);
  expect_f32(need_tensor(w, "u8", RV_DT_U8, 2, 2, 2), (const float[]){200, 1, 2, 3}, 4);
  expect_f32(need_tensor(w, "bool", RV_DT_BOOL, 1, 2), (const float[]){1, 0}, 2);
  const rv_wtensor *nbt = need_tensor(w, "nbt", RV_DT_I64, 0);
  int64_t v;
  memcpy(&v, nbt->data, 8);
  assert_int_equal(v, 42);
  need_tensor(w, "empty", RV_DT_F32, 2, 0, 4);
  expect_f32(need_tensor(w, "param", RV_DT_F32, 1, 2), (const float[]){9.5f, 8.5f}, 2);
  /* channels-last: element (n,c,h,w) = storage[12n + c + 6h + 3w] */
  float want[24];
  for (int n = 0, i = 0; n < 2; n++)
    for (int c = 0; c < 3; c++)
      for (int h = 0; h < 2; h++)
        for (int x = 0; x < 2; x++) want[i++] = (float)(12 * n + c + 6 * h + 3 * x);
  expect_f32(need_tensor(w, "nhwc", RV_DT_F32, 4, 2, 3, 2, 2), want, 24);
  assert_int_equal(rv_weights_meta_count(w), 0); /* a bare state_dict has no meta */
  rv_weights_free(w);

  assert_int_equal(rv_weights_open(&w, data_path("pth/big_endian.pth"), ctx), RV_OK);
  expect_f32(need_tensor(w, "x", RV_DT_F32, 1, 3), (const float[]){1.5f, -2.0f, 3.25f}, 3);
  rv_weights_free(w);

  assert_int_equal(rv_weights_open(&w, data_path("pth/model_key.pth"), ctx), RV_OK);
  expect_f32(need_tensor(w, "w", RV_DT_F32, 2, 2, 2), (const float[]){1, 2, 3, 4}, 4);
  rv_weights_free(w);

  /* a deeply nested and a self-referencing meta list are skipped, not recursed into */
  assert_int_equal(rv_weights_open(&w, data_path("pth/deep_meta.pth"), ctx), RV_OK);
  assert_int_equal(rv_weights_count(w), 0);
  assert_null(rv_weights_meta(w, "deep"));
  assert_null(rv_weights_meta(w, "loop"));
  rv_weights_free(w);
  rv_ctx_free(ctx);
}

static void test_meta_values(void **state) {
  (void)state;
  const char *files[] = {"pth/mmcv_meta.pth", "pth/proto4.pth"}; /* protocol 2 and 4 */
  rv_ctx *ctx = rv_ctx_create();
  for (int f = 0; f < 2; f++) {
    rv_weights *w = NULL;
    rv_status st = rv_weights_open(&w, data_path(files[f]), ctx);
    if (st != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
    assert_int_equal(rv_weights_count(w), 1); /* optimizer state is not read */
    expect_f32(need_tensor(w, "w", RV_DT_F32, 2, 2, 2), (const float[]){1, 2, 3, 4}, 4);
    const struct { const char *k, *v; } want[] = {
        {"mmdet_version", "2.11.0"},
        {"CLASSES", "[\"person\",\"caf\xc3\xa9\",\"quo\\\"te\"]"},
        {"PALETTE", "[[1,2,3],[4,5,6]]"},
        {"config", "model = dict(type='X')\n"},
        {"epoch", "3"}, {"lr", "0.0001"}, {"flag", "True"}, {"big", "1e+16"},
        {"hook_msgs.best", "0.5"}, {"hook_msgs.nested.x", "y"}, {"hook_msgs.7", "seven"},
        {"mixed", "[1,\"a\",2.5,null,[true,false]]"},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
      const char *got = rv_weights_meta(w, want[i].k);
      if (!got || strcmp(got, want[i].v)) fail_msg("%s: meta %s = %s, want %s", files[f], want[i].k, got ? got : "(none)", want[i].v);
    }
    assert_null(rv_weights_meta(w, "nothing")); /* None is skipped */
    assert_int_equal(rv_weights_meta_count(w), (int)(sizeof want / sizeof *want));
    rv_weights_free(w);
  }
  rv_ctx_free(ctx);
}

static void test_bad_files(void **state) {
  (void)state;
  const struct { const char *file; rv_status st; const char *msg; } cases[] = {
      {"bad_missing_storage.pth", RV_ERR_FORMAT, "needs zip entry 'archive/data/1', which is missing"},
      {"bad_short_storage.pth", RV_ERR_FORMAT, "has 4 bytes but is declared as 2 F32 elements"},
      {"bad_stride.pth", RV_ERR_FORMAT, "reaches past its storage of 3 elements"},
      {"bad_offset.pth", RV_ERR_FORMAT, "reaches past its storage"},
      {"bad_huge_numel.pth", RV_ERR_FORMAT, "overflows"},
      {"bad_huge_size.pth", RV_ERR_FORMAT, "size overflows"},
      {"bad_huge_stride.pth", RV_ERR_FORMAT, "reaches past its storage"},
      {"bad_expand.pth", RV_ERR_FORMAT, "strided views expand to over"},
      {"bad_storage_type.pth", RV_ERR_UNSUPPORTED, "torch.ComplexFloatStorage is not supported"},
      {"bad_byteorder.pth", RV_ERR_FORMAT, "neither 'little' nor 'big'"},
      {"bad_not_dict.pth", RV_ERR_FORMAT, "holds a list, not a dict"},
      {"bad_no_tensors.pth", RV_ERR_FORMAT, "no 'state_dict'"},
      {"bad_state_dict_type.pth", RV_ERR_FORMAT, "'state_dict' is a list"},
      {"bad_no_pickle.pth", RV_ERR_FORMAT, "data.pkl"},
      {"bad_truncated_pickle.pth", RV_ERR_FORMAT, "pickle:"},
      {"bad_opcode.pth", RV_ERR_FORMAT, "pickle: opcode 0x53 at offset 2 not allowed here"},
      {"bad_memo.pth", RV_ERR_FORMAT, "memo key 5 not defined at offset 2"},
      {"bad_underflow.pth", RV_ERR_FORMAT, "stack underflow at offset 4"},
      {"bad_no_stop.pth", RV_ERR_FORMAT, "no STOP"},
      {"bad_utf8.pth", RV_ERR_FORMAT, "not valid UTF-8"},
      {"bad_long_string.pth", RV_ERR_FORMAT, "runs past the end"},
      {"bad_memo_index.pth", RV_ERR_FORMAT, "memo index 2147483647 too large"},
      {"bad_persid.pth", RV_ERR_FORMAT, "persistent id"},
      {"bad_legacy.pth", RV_ERR_UNSUPPORTED, "legacy"},
      {"bad_magic.pth", RV_ERR_FORMAT, "not a readable zip"},
  };
  rv_ctx *ctx = rv_ctx_create();
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char rel[256];
    snprintf(rel, sizeof rel, "pth/%s", cases[i].file);
    rv_weights *w = (rv_weights *)1;
    rv_status st = rv_weights_open(&w, data_path(rel), ctx);
    const char *m = rv_ctx_errmsg(ctx);
    if (st != cases[i].st || !strstr(m, cases[i].msg) || !strstr(m, cases[i].file))
      fail_msg("%s: status %d '%s', want %d with '%s'", cases[i].file, st, m, cases[i].st, cases[i].msg);
    assert_null(w);
    assert_null(strchr(m, '\n'));
  }
  rv_weights *w;
  assert_int_equal(rv_pth_load(&w, data_path("pth/no_such_file.pth"), ctx), RV_ERR_IO);
  assert_int_equal(rv_pth_load_buffer(&w, "", 0, "empty", ctx), RV_ERR_FORMAT);
  assert_int_equal(rv_pth_load_buffer(&w, NULL, 0, NULL, ctx), RV_ERR_FORMAT);
  rv_ctx_free(ctx);
}

/* ---- mutations of the fixture checkpoints -------------------------------------------------- */

static uint32_t crc32_of(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
  }
  return ~c;
}
static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void wr32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }

/* A stored zip member located in an archive image: its central directory record, local
 * header and data. */
typedef struct { size_t cd, local, data, size; } member;

static int find_member(const unsigned char *z, size_t len, const char *suffix, member *m) {
  size_t eocd = len - 22; /* no archive comment in torch's zips */
  if (len < 22 || rd32(z + eocd) != 0x06054b50u) return -1;
  size_t cd = rd32(z + eocd + 16), count = rd16(z + eocd + 10), sl = strlen(suffix);
  for (size_t i = 0; i < count && cd + 46 <= len; i++) {
    size_t nl = rd16(z + cd + 28), xl = rd16(z + cd + 30), cl = rd16(z + cd + 32);
    if (nl >= sl && memcmp(z + cd + 46 + nl - sl, suffix, sl) == 0) {
      m->cd = cd;
      m->local = rd32(z + cd + 42);
      m->size = rd32(z + cd + 20);
      m->data = m->local + 30 + rd16(z + m->local + 26) + rd16(z + m->local + 28);
      return 0;
    }
    cd += 46 + nl + xl + cl;
  }
  return -1;
}

/* After editing a member's data in place, store its new CRC (central record and data
 * descriptor). */
static void fix_crc(unsigned char *z, const member *m) {
  uint32_t c = crc32_of(z + m->data, m->size);
  wr32(z + m->cd + 16, c);
  size_t dd = m->data + m->size;
  wr32(z + dd + (rd32(z + dd) == 0x08074b50u ? 4 : 0), c);
}

static void test_truncations(void **state) {
  (void)state;
  char names[64][256];
  int n = list_checkpoints("backbone", names, 32);
  n += list_checkpoints("e2e", names + n, 32);
  assert_true(n > 0);
  rv_ctx *ctx = rv_ctx_create();
  int fails = 0;
  for (int k = 0; k < n; k++) {
    char p[512];
    snprintf(p, sizeof p, "%.256s/checkpoint.pth", names[k]);
    size_t len;
    unsigned char *img = (unsigned char *)test_read_file(fixture_path(p), &len);
    assert_non_null(img);
    size_t cuts[] = {0, 1, 4, 21, 22, 30, 100, len / 4, len / 2, 3 * len / 4, len - 100, len - 23, len - 22, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
      unsigned char *t = malloc(cuts[i] + 1); /* exact-size copy so ASan sees overreads */
      memcpy(t, img, cuts[i]);
      rv_weights *w = NULL;
      rv_status st = rv_pth_load_buffer(&w, t, cuts[i], p, ctx);
      if (st == RV_OK) fail_msg("%s truncated to %zu bytes loaded", p, cuts[i]);
      assert_true(strlen(rv_ctx_errmsg(ctx)) > 0);
      fails++;
      free(t);
    }
    free(img);
  }
  print_message("  %d truncated checkpoints rejected\n", fails);
  rv_ctx_free(ctx);
}

static void test_pickle_mutations(void **state) {
  (void)state;
  const char *fx[] = {"backbone/tiny/checkpoint.pth", "e2e/mask_rcnn/checkpoint.pth"};
  rv_ctx *ctx = rv_ctx_create();
  uint64_t seed = 12345;
  for (int f = 0; f < 2; f++) {
    size_t len;
    unsigned char *img = (unsigned char *)test_read_file(fixture_path(fx[f]), &len);
    assert_non_null(img);
    member m;
    assert_int_equal(find_member(img, len, "/data.pkl", &m), 0);
    int ok = 0, bad = 0;
    double t0 = now_s();
    int iters = f == 0 ? 300 : 150;
    for (int it = 0; it < iters; it++) {
      unsigned char *z = malloc(len);
      memcpy(z, img, len);
      int nflip = 1 + it % 3;
      for (int j = 0; j < nflip; j++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t pos = (size_t)(seed >> 33) % m.size;
        unsigned char val = (unsigned char)(seed >> 20);
        if (it % 2) z[m.data + pos] ^= (unsigned char)(1u << (val & 7)); /* bit flip */
        else z[m.data + pos] = val;                                    /* random byte */
      }
      fix_crc(z, &m);
      rv_weights *w = NULL;
      rv_status st = rv_pth_load_buffer(&w, z, len, fx[f], ctx);
      if (st == RV_OK) { ok++; rv_weights_free(w); }
      else { bad++; assert_true(strlen(rv_ctx_errmsg(ctx)) > 0); assert_null(w); }
      free(z);
    }
    print_message("  %s: %d data.pkl mutations: %d loaded, %d rejected (%.2f s)\n", fx[f], iters, ok, bad, now_s() - t0);
    assert_true(bad > 0);
    /* an unfixed CRC is caught by libzip */
    unsigned char *z = malloc(len);
    memcpy(z, img, len);
    z[m.data + m.size / 2] ^= 0x40;
    rv_weights *w = NULL;
    assert_int_not_equal(rv_pth_load_buffer(&w, z, len, fx[f], ctx), RV_OK);
    assert_non_null(strstr(rv_ctx_errmsg(ctx), "CRC"));
    free(z);
    free(img);
  }
  rv_ctx_free(ctx);
}

static void test_missing_and_short_entries(void **state) {
  (void)state;
  const char *fx = "backbone/tiny/checkpoint.pth";
  size_t len;
  unsigned char *img = (unsigned char *)test_read_file(fixture_path(fx), &len);
  assert_non_null(img);
  rv_ctx *ctx = rv_ctx_create();
  const char *keys[] = {"/data/0", "/data/7", "/data/100", "/data/220"};
  for (int i = 0; i < 4; i++) {
    member m;
    assert_int_equal(find_member(img, len, keys[i], &m), 0);
    unsigned char *z = malloc(len);
    memcpy(z, img, len);
    /* rename the member (central and local name) so the storage is missing */
    size_t nl = rd16(z + m.cd + 28);
    z[m.cd + 46 + nl - 1] = 'x';
    z[m.local + 30 + nl - 1] = 'x';
    rv_weights *w = NULL;
    assert_int_equal(rv_pth_load_buffer(&w, z, len, fx, ctx), RV_ERR_FORMAT);
    assert_non_null(strstr(rv_ctx_errmsg(ctx), "which is missing"));
    /* declare the member shorter than its storage: size in the central record */
    memcpy(z, img, len);
    wr32(z + m.cd + 20, (uint32_t)m.size - 1);
    wr32(z + m.cd + 24, (uint32_t)m.size - 1);
    assert_int_not_equal(rv_pth_load_buffer(&w, z, len, fx, ctx), RV_OK);
    /* declare an absurd size: rejected before allocating */
    memcpy(z, img, len);
    wr32(z + m.cd + 20, 0xfffffff0u);
    wr32(z + m.cd + 24, 0xfffffff0u);
    assert_int_not_equal(rv_pth_load_buffer(&w, z, len, fx, ctx), RV_OK);
    free(z);
  }
  free(img);
  rv_ctx_free(ctx);
}

/* ---- the pickle interpreter on hand-made streams ----------------------------------------- */

static const rv_pk_value *load_pk(rv_pickle **pk, const char *bytes, size_t n, rv_ctx *ctx) {
  const rv_pk_value *root = NULL;
  rv_status st = rv_pickle_load(pk, &root, bytes, n, "t", ctx);
  if (st != RV_OK) fail_msg("pickle failed: %s", rv_ctx_errmsg(ctx));
  return root;
}
#define PK(s) s, sizeof(s) - 1

static void test_pickle_values(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_pickle *pk;
  /* protocol 4: FRAME, MEMOIZE, SHORT_BINUNICODE, LONG1, BINFLOAT, TUPLE3, EMPTY_SET +
   * ADDITEMS, a duplicate key (later value wins, first position kept), GLOBAL + text PUT/GET,
   * NEWOBJ + BUILD, _codecs.encode, OrderedDict(), BINPERSID, BIGINT */
  const rv_pk_value *r = load_pk(&pk, PK("\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00}\x94("
      "\x8c\x01k" "\x8a\x02\x00\xff"
      "\x8c\x01" "f" "G\x3f\xf8\x00\x00\x00\x00\x00\x00"
      "\x8c\x01k" "K\x07"
      "\x8c\x01t" "K\x01M\x00\x01J\xff\xff\xff\xff\x87"
      "\x8c\x01s" "\x8f\x94(K\x05\x88\x90"
      "\x8c\x01g" "cmod.sub\nCls\np7\n)\x81}\x8c\x01" "aK\x02sb"
      "\x8c\x01h" "g7\n"
      "\x8c\x01" "b" "c_codecs\nencode\nX\x02\x00\x00\x00\xc3\xa9X\x06\x00\x00\x00latin1\x86R"
      "\x8c\x01o" "ccollections\nOrderedDict\n)R"
      "\x8c\x01p" "X\x03\x00\x00\x00" "abcQ"
      "\x8c\x01" "B" "\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09"
      "\x8c\x01n" "N\x89\x86"
      "u."), ctx);
  assert_int_equal(r->type, RV_PK_DICT);
  assert_int_equal(r->n, 11);
  assert_true(rv_pk_str_eq(r->keys[0], "k"));
  const rv_pk_value *v = rv_pk_dict_get(r, "k");
  assert_true(v->type == RV_PK_INT && v->i == 7);
  v = rv_pk_dict_get(r, "f");
  assert_true(v->type == RV_PK_FLOAT && v->f == 1.5);
  v = rv_pk_dict_get(r, "t");
  assert_true(v->type == RV_PK_TUPLE && v->n == 3 && v->items[0]->i == 1 && v->items[1]->i == 256 &&
              v->items[2]->i == -1);
  v = rv_pk_dict_get(r, "s");
  assert_true(v->type == RV_PK_SET && v->n == 2 && v->items[0]->i == 5 && v->items[1]->type == RV_PK_BOOL);
  const rv_pk_value *g = rv_pk_dict_get(r, "g");
  assert_int_equal(g->type, RV_PK_OBJECT);
  assert_true(rv_pk_is_global(rv_pk_object_global(g), "mod.sub", "Cls"));
  assert_true(g->b->type == RV_PK_TUPLE && g->b->n == 0);
  assert_true(g->c && rv_pk_dict_get(g->c, "a")->i == 2);
  assert_ptr_equal(rv_pk_dict_get(r, "h"), g->a); /* memo GET gives the same value */
  v = rv_pk_dict_get(r, "b");
  assert_true(v->type == RV_PK_BYTES && v->len == 1 && (unsigned char)v->s[0] == 0xe9);
  v = rv_pk_dict_get(r, "o");
  assert_true(v->type == RV_PK_DICT && v->n == 0);
  v = rv_pk_dict_get(r, "p");
  assert_true(v->type == RV_PK_PERSID && rv_pk_str_eq(v->a, "abc"));
  v = rv_pk_dict_get(r, "B");
  assert_true(v->type == RV_PK_BIGINT && v->len == 9);
  v = rv_pk_dict_get(r, "n");
  assert_true(v->type == RV_PK_TUPLE && v->n == 2 && v->items[0]->type == RV_PK_NONE && v->items[1]->i == 0);
  assert_null(rv_pk_dict_get(r, "zz"));
  rv_pickle_free(pk);

  /* LONG1 sign extension; protocol 2 LIST/DICT with marks, DUP, POP, POP_MARK */
  r = load_pk(&pk, PK("\x80\x02(\x8a\x02\x00\xff\x8a\x01\x80\x8a\x00\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f"
                      "K\x01" "2" "0" "(N1l."), ctx);
  assert_true(r->type == RV_PK_LIST && r->n == 5);
  assert_true(r->items[0]->i == -256 && r->items[1]->i == -128 && r->items[2]->i == 0 &&
              r->items[3]->i == INT64_MAX && r->items[4]->i == 1);
  rv_pickle_free(pk);
  rv_ctx_free(ctx);
}

static void test_pickle_errors(void **state) {
  (void)state;
  const struct { const char *b; size_t n; const char *msg; } cases[] = {
      {PK("\x80\x02(."), "STOP with an empty stack"},
      {PK("\x80\x06N."), "unsupported protocol 6"},
      {PK("N\x85t."), "no MARK"},
      {PK("]K\x01K\x02s."), "SETITEM on a list"},
      {PK(")K\x01" "a."), "APPEND on a tuple"},
      {PK("K\x01K\x02\x93."), "STACK_GLOBAL needs two strings"},
      {PK("\x95\xff\xff\xff\xff\xff\xff\xff\xffN."), "FRAME of"},
      {PK("}(K\x01K\x02K\x03u."), "odd number of items for SETITEMS"},
      {PK("(K\x01K\x02K\x03" "d."), "odd number of items for DICT"},
      {PK("G\x00\x00"), "truncated BINFLOAT"},
      {PK("cmod\n"), "unterminated text argument"},
      {PK("cmo\x01" "d\nX\n."), "non-printable"},
      {PK("N\x8b\xff\xff\xff\xff."), "negative length"},
      {PK("N\x8b\x00\x00\x00\x01."), "runs past the end"},
      {PK("Nh\x00."), "memo key 0 not defined at offset 1"},
      {PK("K\x01(" "a."), "stack underflow at offset 3"},
      {PK("(\x85."), "stack underflow for TUPLE1"},
      {PK("\x8c\x02\xc0\x80."), "not valid UTF-8"},
      {PK("X\x03\x00\x00\x00\xed\xa0\x80."), "not valid UTF-8"}, /* a surrogate */
      {PK("I1\n."), "opcode 0x49 at offset 0 not allowed here"},
      {PK(""), "truncated (no STOP opcode) at offset 0"},
      {PK("p1\n."), "stack underflow"},
      {PK("Np1x\n."), "bad memo index"},
  };
  rv_ctx *ctx = rv_ctx_create();
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rv_pickle *pk = (rv_pickle *)1;
    const rv_pk_value *root = (const rv_pk_value *)1;
    rv_status st = rv_pickle_load(&pk, &root, cases[i].b, cases[i].n, "x.pkl", ctx);
    const char *m = rv_ctx_errmsg(ctx);
    if (st != RV_ERR_FORMAT || !strstr(m, cases[i].msg) || strncmp(m, "x.pkl: pickle: ", 15))
      fail_msg("case %zu: status %d '%s', want '%s'", i, st, m, cases[i].msg);
    assert_null(pk);
    assert_null(root);
  }
  rv_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixture_checkpoints), cmocka_unit_test(test_e2e_meta),
      cmocka_unit_test(test_views_and_dtypes),    cmocka_unit_test(test_meta_values),
      cmocka_unit_test(test_bad_files),           cmocka_unit_test(test_truncations),
      cmocka_unit_test(test_pickle_mutations),    cmocka_unit_test(test_missing_and_short_entries),
      cmocka_unit_test(test_pickle_values),       cmocka_unit_test(test_pickle_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
