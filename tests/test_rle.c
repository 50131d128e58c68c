/* RLE mask API against pycocotools (rle/cases.json: encodings, strings, areas, boxes,
 * polygons, boxes, uncompressed RLE, merge, IoU with crowd and size mismatch), plus
 * round trips on random masks and corrupt strings. Exact equality everywhere. */
#include "eval_test_util.h"
#include "eval/rle.h"

static cJSON *g_cases;

static const char *cases_path(void) { return data_path("eval/rle/cases.json"); }

static int setup(void **state) {
  (void)state;
  g_cases = load_json(cases_path());
  return g_cases ? 0 : -1;
}
static int teardown(void **state) {
  (void)state;
  cJSON_Delete(g_cases);
  return 0;
}

static const cJSON *sect(const char *name) {
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(g_cases, name);
  assert_true(cJSON_IsArray(s));
  assert_true(cJSON_GetArraySize(s) > 0);
  return s;
}

/* {"size":[h,w],"counts":"...","area":A,"bbox":[...]} -> parse and check area and box */
static void rle_from_obj(rv_rle *r, const cJSON *o, rv_ctx *ctx) {
  const cJSON *size = cJSON_GetObjectItem(o, "size");
  uint32_t h = (uint32_t)cJSON_GetArrayItem(size, 0)->valueint, w = (uint32_t)cJSON_GetArrayItem(size, 1)->valueint;
  const char *counts = cJSON_GetObjectItem(o, "counts")->valuestring;
  assert_int_equal(rv_rle_from_string(r, counts, h, w, "test", ctx), RV_OK);
  char *s = rv_rle_to_string(r);
  assert_string_equal(s, counts);
  free(s);
}

static void check_obj(const rv_rle *r, const cJSON *o) {
  const cJSON *size = cJSON_GetObjectItem(o, "size");
  assert_int_equal(r->h, cJSON_GetArrayItem(size, 0)->valueint);
  assert_int_equal(r->w, cJSON_GetArrayItem(size, 1)->valueint);
  char *s = rv_rle_to_string(r);
  assert_string_equal(s, cJSON_GetObjectItem(o, "counts")->valuestring);
  free(s);
  assert_int_equal(rv_rle_area(r), (uint32_t)cJSON_GetObjectItem(o, "area")->valuedouble);
  double bb[4];
  rv_rle_to_bbox(r, bb);
  const cJSON *eb = cJSON_GetObjectItem(o, "bbox");
  for (int i = 0; i < 4; i++) assert_true(bb[i] == cJSON_GetArrayItem(eb, i)->valuedouble);
}

static void test_encode(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  const cJSON *c;
  int n = 0;
  cJSON_ArrayForEach(c, sect("encode")) {
    uint32_t h = (uint32_t)cJSON_GetObjectItem(c, "h")->valueint, w = (uint32_t)cJSON_GetObjectItem(c, "w")->valueint;
    const cJSON *uc = cJSON_GetObjectItem(c, "uncompressed_counts");
    size_t m = (size_t)cJSON_GetArraySize(uc);
    uint32_t *cnt = malloc(sizeof(uint32_t) * m);
    for (size_t i = 0; i < m; i++) cnt[i] = (uint32_t)cJSON_GetArrayItem(uc, (int)i)->valuedouble;
    rv_rle r0 = {0}, r1 = {0}, r2 = {0};
    assert_int_equal(rv_rle_from_counts(&r0, cnt, m, h, w, "t", ctx), RV_OK);
    /* decode -> encode (column-major) and via a row-major copy */
    uint8_t *mask = malloc((size_t)h * w), *rowm = malloc((size_t)h * w);
    rv_rle_decode(&r0, mask);
    for (uint32_t x = 0; x < w; x++)
      for (uint32_t y = 0; y < h; y++) rowm[(size_t)y * w + x] = mask[(size_t)x * h + y] ? 255 : 0;
    assert_int_equal(rv_rle_encode(&r1, mask, h, w, ctx), RV_OK);
    assert_int_equal(rv_rle_encode_rowmajor(&r2, rowm, h, w, ctx), RV_OK);
    assert_int_equal(r1.m, m);
    assert_memory_equal(r1.cnts, cnt, m * sizeof(uint32_t));
    assert_int_equal(r2.m, m);
    assert_memory_equal(r2.cnts, cnt, m * sizeof(uint32_t));
    char *s = rv_rle_to_string(&r1);
    assert_string_equal(s, cJSON_GetObjectItem(c, "counts")->valuestring);
    free(s);
    cJSON *obj = cJSON_CreateObject();
    cJSON *size = cJSON_AddArrayToObject(obj, "size");
    cJSON_AddItemToArray(size, cJSON_CreateNumber(h));
    cJSON_AddItemToArray(size, cJSON_CreateNumber(w));
    cJSON_AddStringToObject(obj, "counts", cJSON_GetObjectItem(c, "counts")->valuestring);
    cJSON_AddItemToObject(obj, "area", cJSON_Duplicate(cJSON_GetObjectItem(c, "area"), 1));
    cJSON_AddItemToObject(obj, "bbox", cJSON_Duplicate(cJSON_GetObjectItem(c, "bbox"), 1));
    check_obj(&r1, obj);
    rv_rle r3 = {0};
    rle_from_obj(&r3, obj, ctx);
    assert_int_equal(r3.m, m);
    assert_memory_equal(r3.cnts, cnt, m * sizeof(uint32_t));
    cJSON_Delete(obj);
    rv_rle_free(&r0);
    rv_rle_free(&r1);
    rv_rle_free(&r2);
    rv_rle_free(&r3);
    free(mask);
    free(rowm);
    free(cnt);
    n++;
  }
  assert_true(n >= 10);
  rv_ctx_free(ctx);
}

static void test_frpoly(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  const cJSON *c;
  cJSON_ArrayForEach(c, sect("frPoly")) {
    uint32_t h = (uint32_t)cJSON_GetObjectItem(c, "h")->valueint, w = (uint32_t)cJSON_GetObjectItem(c, "w")->valueint;
    const cJSON *polys = cJSON_GetObjectItem(c, "polygons"), *per = cJSON_GetObjectItem(c, "per_polygon");
    int np = cJSON_GetArraySize(polys);
    assert_int_equal(np, cJSON_GetArraySize(per));
    rv_rle *parts = calloc((size_t)np, sizeof *parts);
    for (int i = 0; i < np; i++) {
      const cJSON *poly = cJSON_GetArrayItem(polys, i);
      int k = cJSON_GetArraySize(poly);
      double *xy = malloc(sizeof(double) * (size_t)k);
      for (int j = 0; j < k; j++) xy[j] = cJSON_GetArrayItem(poly, j)->valuedouble;
      assert_int_equal(rv_rle_from_poly(&parts[i], xy, (size_t)k / 2, h, w, ctx), RV_OK);
      check_obj(&parts[i], cJSON_GetArrayItem(per, i));
      free(xy);
    }
    rv_rle merged = {0};
    assert_int_equal(rv_rle_merge(&merged, parts, (size_t)np, 0, ctx), RV_OK);
    check_obj(&merged, cJSON_GetObjectItem(c, "merged"));
    rv_rle_free(&merged);
    for (int i = 0; i < np; i++) rv_rle_free(&parts[i]);
    free(parts);
  }
  rv_ctx_free(ctx);
}

static void test_frbbox_uncompressed(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  const cJSON *c;
  cJSON_ArrayForEach(c, sect("frBbox")) {
    uint32_t h = (uint32_t)cJSON_GetObjectItem(c, "h")->valueint, w = (uint32_t)cJSON_GetObjectItem(c, "w")->valueint;
    const cJSON *bbs = cJSON_GetObjectItem(c, "bboxes"), *rles = cJSON_GetObjectItem(c, "rles");
    for (int i = 0; i < cJSON_GetArraySize(bbs); i++) {
      double bb[4];
      for (int j = 0; j < 4; j++) bb[j] = cJSON_GetArrayItem(cJSON_GetArrayItem(bbs, i), j)->valuedouble;
      rv_rle r = {0};
      assert_int_equal(rv_rle_from_bbox(&r, bb, h, w, ctx), RV_OK);
      check_obj(&r, cJSON_GetArrayItem(rles, i));
      rv_rle_free(&r);
    }
  }
  cJSON_ArrayForEach(c, sect("frUncompressedRLE")) {
    const cJSON *size = cJSON_GetObjectItem(c, "size"), *counts = cJSON_GetObjectItem(c, "counts");
    size_t m = (size_t)cJSON_GetArraySize(counts);
    uint32_t *cnt = malloc(sizeof(uint32_t) * m);
    for (size_t i = 0; i < m; i++) cnt[i] = (uint32_t)cJSON_GetArrayItem(counts, (int)i)->valuedouble;
    rv_rle r = {0};
    assert_int_equal(rv_rle_from_counts(&r, cnt, m, (uint32_t)cJSON_GetArrayItem(size, 0)->valueint,
                                        (uint32_t)cJSON_GetArrayItem(size, 1)->valueint, "t", ctx),
                     RV_OK);
    check_obj(&r, cJSON_GetObjectItem(c, "rle"));
    rv_rle_free(&r);
    free(cnt);
  }
  rv_ctx_free(ctx);
}

static void test_merge(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  const cJSON *c;
  cJSON_ArrayForEach(c, sect("merge")) {
    const cJSON *ins = cJSON_GetObjectItem(c, "inputs");
    int n = cJSON_GetArraySize(ins);
    rv_rle *r = calloc((size_t)n, sizeof *r);
    for (int i = 0; i < n; i++) {
      rle_from_obj(&r[i], cJSON_GetArrayItem(ins, i), ctx);
      check_obj(&r[i], cJSON_GetArrayItem(ins, i));
    }
    rv_rle out = {0};
    assert_int_equal(rv_rle_merge(&out, r, (size_t)n, cJSON_GetObjectItem(c, "intersect")->valueint, ctx), RV_OK);
    check_obj(&out, cJSON_GetObjectItem(c, "result"));
    rv_rle_free(&out);
    /* different sizes give an empty 0x0 result, like pycocotools */
    rv_rle other = {0}, pair[2];
    uint32_t full = 12;
    assert_int_equal(rv_rle_from_counts(&other, &full, 1, 3, 4, "t", ctx), RV_OK);
    pair[0] = r[0];
    pair[1] = other;
    assert_int_equal(rv_rle_merge(&out, pair, 2, 0, ctx), RV_OK);
    assert_int_equal(out.h, 0);
    assert_int_equal(out.m, 0);
    rv_rle_free(&out);
    rv_rle_free(&other);
    for (int i = 0; i < n; i++) rv_rle_free(&r[i]);
    free(r);
  }
  rv_ctx_free(ctx);
}

static void test_iou(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  const cJSON *c;
  int nrle = 0, nbox = 0;
  cJSON_ArrayForEach(c, sect("iou")) {
    const cJSON *dt = cJSON_GetObjectItem(c, "dt"), *gt = cJSON_GetObjectItem(c, "gt");
    const cJSON *crowd = cJSON_GetObjectItem(c, "iscrowd"), *exp = cJSON_GetObjectItem(c, "iou");
    size_t m = (size_t)cJSON_GetArraySize(dt), n = (size_t)cJSON_GetArraySize(gt);
    uint8_t *ic = malloc(n);
    for (size_t g = 0; g < n; g++) ic[g] = (uint8_t)cJSON_GetArrayItem(crowd, (int)g)->valueint;
    double *o = malloc(sizeof(double) * m * n);
    if (strcmp(cJSON_GetObjectItem(c, "kind")->valuestring, "rle") == 0) {
      rv_rle *d = calloc(m, sizeof *d), *g = calloc(n, sizeof *g);
      for (size_t i = 0; i < m; i++) rle_from_obj(&d[i], cJSON_GetArrayItem(dt, (int)i), ctx);
      for (size_t i = 0; i < n; i++) rle_from_obj(&g[i], cJSON_GetArrayItem(gt, (int)i), ctx);
      rv_rle_iou(o, d, m, g, n, ic, NULL, NULL);
      for (size_t i = 0; i < m; i++) rv_rle_free(&d[i]);
      for (size_t i = 0; i < n; i++) rv_rle_free(&g[i]);
      free(d);
      free(g);
      nrle++;
    } else {
      double *d = malloc(sizeof(double) * 4 * m), *g = malloc(sizeof(double) * 4 * n);
      for (size_t i = 0; i < m; i++)
        for (int j = 0; j < 4; j++) d[4 * i + j] = cJSON_GetArrayItem(cJSON_GetArrayItem(dt, (int)i), j)->valuedouble;
      for (size_t i = 0; i < n; i++)
        for (int j = 0; j < 4; j++) g[4 * i + j] = cJSON_GetArrayItem(cJSON_GetArrayItem(gt, (int)i), j)->valuedouble;
      rv_bbox_iou(o, d, m, g, n, ic);
      free(d);
      free(g);
      nbox++;
    }
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++) {
        double e = cJSON_GetArrayItem(cJSON_GetArrayItem(exp, (int)i), (int)j)->valuedouble;
        if (o[i * n + j] != e) fail_msg("iou[%zu][%zu] = %.17g, expected %.17g", i, j, o[i * n + j], e);
      }
    free(o);
    free(ic);
  }
  assert_true(nrle >= 3 && nbox >= 2);
  rv_ctx_free(ctx);
}

static void test_random_roundtrip(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  uint64_t seed = 12345;
  for (int it = 0; it < 200; it++) {
    uint32_t h = 1 + (uint32_t)((test_rand(&seed) + 1) * 40), w = 1 + (uint32_t)((test_rand(&seed) + 1) * 40);
    float density = (test_rand(&seed) + 1) / 2;
    size_t a = (size_t)h * w;
    uint8_t *m = malloc(a), *back = malloc(a);
    for (size_t i = 0; i < a; i++) m[i] = (test_rand(&seed) + 1) / 2 < density;
    rv_rle r = {0}, q = {0};
    assert_int_equal(rv_rle_encode(&r, m, h, w, ctx), RV_OK);
    char *s = rv_rle_to_string(&r);
    assert_int_equal(rv_rle_from_string(&q, s, h, w, "t", ctx), RV_OK);
    assert_int_equal(q.m, r.m);
    assert_memory_equal(q.cnts, r.cnts, r.m * sizeof(uint32_t));
    rv_rle_decode(&q, back);
    assert_memory_equal(back, m, a);
    uint32_t area = 0;
    for (size_t i = 0; i < a; i++) area += m[i];
    assert_int_equal(rv_rle_area(&r), area);
    /* self IoU is 1 (or 0 for an empty mask), crowd too */
    double iou;
    rv_rle_iou(&iou, &r, 1, &q, 1, NULL, NULL, NULL);
    assert_true(iou == (area ? 1.0 : 0.0));
    free(s);
    free(m);
    free(back);
    rv_rle_free(&r);
    rv_rle_free(&q);
  }
  rv_ctx_free(ctx);
}

static void test_corrupt(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_rle r = {0};
  /* '~' is outside '0'..'o' */
  assert_int_equal(rv_rle_from_string(&r, "0~1", 2, 2, "x.json", ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "x.json"));
  /* a continuation bit on the last character */
  assert_int_equal(rv_rle_from_string(&r, "0P", 2, 2, "x", ctx), RV_ERR_FORMAT);
  /* counts that do not sum to h*w */
  assert_int_equal(rv_rle_from_string(&r, "S1", 7, 6, "x", ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "sum"));
  /* a negative count */
  assert_int_equal(rv_rle_from_string(&r, "0`0", 2, 2, "x", ctx), RV_ERR_FORMAT);
  uint32_t c[2] = {3, 3};
  assert_int_equal(rv_rle_from_counts(&r, c, 2, 2, 2, "x", ctx), RV_ERR_FORMAT);
  double bad[6] = {0, 0, NAN, 1, 2, 2};
  assert_int_equal(rv_rle_from_poly(&r, bad, 3, 4, 4, ctx), RV_ERR_FORMAT);
  assert_null(r.cnts);
  /* the empty string is a valid empty 0x0 mask */
  assert_int_equal(rv_rle_from_string(&r, "", 0, 0, "x", ctx), RV_OK);
  rv_rle_free(&r);
  rv_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_encode),       cmocka_unit_test(test_frpoly),
      cmocka_unit_test(test_frbbox_uncompressed), cmocka_unit_test(test_merge),
      cmocka_unit_test(test_iou),          cmocka_unit_test(test_random_roundtrip),
      cmocka_unit_test(test_corrupt),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
