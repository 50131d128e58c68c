/* RLE mask API against pycocotools (rle/cases.json: encodings, strings, areas, boxes,
 * polygons, boxes, uncompressed RLE, merge, IoU with crowd and size mismatch), plus
 * round trips on random masks and corrupt strings, and the optimised kernels (rv_rle_info_get,
 * rv_rle_iou_pair, rv_rle_from_string_n) against their literal references and a decoded-bitmap
 * IoU on random masks. Exact equality everywhere. */
#include "eval_test_util.h"
#include "eval/rle.h"

static cJSON *g_cases;

static const char *cases_path(void) { return fixture_path("rle/cases.json"); }

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
      rv_rle_iou(o, d, m, g, n, ic);
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
    rv_rle_iou(&iou, &r, 1, &q, 1, NULL);
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


/* A random RLE of h*w pixels: runs of random lengths (short, about a column, or long), with
 * empty runs inside when `holes` (what only a hand-made string gives). */
static void random_rle(rv_rle *r, uint32_t h, uint32_t w, int holes, uint64_t *seed) {
  size_t a = (size_t)h * w, cap = a + 8, m = 0, used = 0;
  uint32_t *c = malloc(cap * sizeof *c);
  int style = (int)((test_rand(seed) + 1) * 2); /* 0: short runs, 1: column-sized, 2..: mixed */
  while (used < a && m + 2 < cap) {
    float u = (test_rand(seed) + 1) / 2;
    size_t len;
    if (holes && u < 0.15f)
      len = 0;
    else if (style == 0 || u < 0.4f)
      len = 1 + (size_t)(u * 4);
    else if (style == 1 || u < 0.8f)
      len = (size_t)(u * 1.5f * h) + 1;
    else
      len = (size_t)(u * a / 3) + 1;
    if (m == 0 && (test_rand(seed) > 0.5f)) len = 0; /* starts with foreground */
    if (len > a - used) len = a - used;
    c[m++] = (uint32_t)len;
    used += len;
  }
  if (used < a) c[m++] = (uint32_t)(a - used);
  r->h = h;
  r->w = w;
  r->m = m;
  r->cnts = c;
}

static void decode_bitmap(const rv_rle *r, uint8_t *M) {
  size_t a = (size_t)r->h * r->w;
  memset(M, 0, a);
  rv_rle_decode(r, M);
}

/* pycocotools 2.0.x rleToBbox (tests/fixtures/cocotools/goldens.json toBbox_*): empty
 * foreground runs are skipped, counts past or short of h*w are measured as they are, and the
 * IoU walk ends when one mask's counts end first (maskApi loops forever there). */
static void test_bbox_empty_runs_and_any_sum(void **state) {
  (void)state;
  static const struct {
    uint32_t h, w, cnts[8];
    size_t m;
    double bb[4];
  } C[] = {
      {600, 800, {0, 0, 3181458, 1350}, 4, {800, 0, 4505, 600}},
      {10, 10, {5, 0, 3, 2, 0, 4, 86}, 7, {0, 0, 2, 10}},
      {10, 10, {5, 0, 95}, 3, {10, 10, 4294967287.0, 4294967287.0}},
      {3, 4, {2, 3}, 2, {0, 0, 2, 3}},
      {3, 4, {2, 30}, 2, {0, 0, 11, 3}},
      {4, 4, {4, 4, 0, 8}, 4, {1, 0, 3, 4}},
  };
  for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
    rv_rle r = {C[i].h, C[i].w, C[i].m, (uint32_t *)C[i].cnts, 1};
    double bb[4], nb[4];
    rv_rle_to_bbox(&r, bb);
    rv_rle_to_bbox_naive(&r, nb);
    for (int k = 0; k < 4; k++)
      if (bb[k] != C[i].bb[k] || nb[k] != C[i].bb[k])
        fail_msg("case %zu: bbox[%d] %.17g (naive %.17g), pycocotools %.17g", i, k, bb[k], nb[k], C[i].bb[k]);
  }
  /* the IoU of a short mask and a full one ends (background after its counts) */
  uint32_t a[2] = {2, 3}, b[3] = {1, 4, 7};
  rv_rle ra = {3, 4, 2, a, 1}, rb = {3, 4, 3, b, 1};
  double o = rv_rle_iou_pair(&ra, &rb, 0);
  assert_true(o == 3.0 / 4.0);
  uint8_t M[12];
  assert_int_equal(rv_rle_decode_checked(&ra, M), 1);
  assert_true(M[0] == 0 && M[2] == 1 && M[4] == 1 && M[5] == 0 && M[11] == 0);
  uint32_t c[2] = {2, 30};
  rv_rle rc = {3, 4, 2, c, 1};
  assert_int_equal(rv_rle_decode_checked(&rc, M), 0);
}

static void test_info_random(void **state) {
  (void)state;
  uint64_t seed = 777;
  int n = 0;
  for (int it = 0; it < 3000; it++) {
    uint32_t h = 1 + (uint32_t)((test_rand(&seed) + 1) * (it % 3 ? 30 : 3));
    uint32_t w = 1 + (uint32_t)((test_rand(&seed) + 1) * (it % 5 ? 30 : 2));
    rv_rle r;
    random_rle(&r, h, w, it % 4 == 0, &seed);
    if (it % 7 == 0 && r.m > 1) r.m--; /* a count list that stops early (m odd or even) */
    rv_rle_info in;
    double bb[4];
    rv_rle_info_get(&in, &r);
    rv_rle_to_bbox_naive(&r, bb);
    for (int i = 0; i < 4; i++)
      if (in.bb[i] != bb[i]) fail_msg("it %d (%ux%u, m %zu): bbox[%d] %g, naive %g", it, h, w, r.m, i, in.bb[i], bb[i]);
    assert_int_equal(in.area, rv_rle_area(&r));
    int zero = 0;
    uint64_t sum = 0;
    for (size_t j = 0; j < r.m; j++) sum += r.cnts[j];
    for (size_t j = 1; j < r.m; j++) zero |= r.cnts[j] == 0;
    zero |= sum != (uint64_t)h * w; /* counts that stop early */
    assert_int_equal(in.irregular, zero);
    rv_rle_to_bbox(&r, bb);
    assert_memory_equal(bb, in.bb, sizeof bb);
    free(r.cnts);
    n++;
  }
  assert_int_equal(n, 3000);
}

static void test_iou_random(void **state) {
  (void)state;
  uint64_t seed = 4242;
  int n_nonzero = 0, n_irregular = 0;
  for (int it = 0; it < 3000; it++) {
    uint32_t h = 1 + (uint32_t)((test_rand(&seed) + 1) * 20), w = 1 + (uint32_t)((test_rand(&seed) + 1) * 20);
    int holes = it % 5 == 0;
    rv_rle a, b;
    random_rle(&a, h, w, holes, &seed);
    random_rle(&b, h, w, holes && it % 2, &seed);
    size_t px = (size_t)h * w;
    uint8_t *ma = malloc(px), *mb = malloc(px);
    decode_bitmap(&a, ma);
    decode_bitmap(&b, mb);
    uint32_t inter = 0, uni = 0, area_a = 0;
    for (size_t i = 0; i < px; i++) {
      inter += ma[i] && mb[i];
      uni += ma[i] || mb[i];
      area_a += ma[i];
    }
    rv_rle_info ia, ib;
    rv_rle_info_get(&ia, &a);
    rv_rle_info_get(&ib, &b);
    n_irregular += ia.irregular || ib.irregular;
    for (int crowd = 0; crowd < 2; crowd++) {
      double fast = rv_rle_iou_pair(&a, &b, crowd), naive = rv_rle_iou_pair_naive(&a, &b, crowd);
      if (fast != naive) fail_msg("it %d crowd %d: iou %.17g, naive walk %.17g", it, crowd, fast, naive);
      if (!ia.irregular && !ib.irregular) { /* the bitmap agrees where maskApi's walk is exact */
        double bm = inter ? (double)inter / (double)(crowd ? area_a : uni) : 0.0;
        if (fast != bm) fail_msg("it %d crowd %d: iou %.17g, bitmap %.17g", it, crowd, fast, bm);
      }
      n_nonzero += fast > 0;
      /* the matrix form with and without the info */
      uint8_t cr = (uint8_t)crowd;
      double o1, o2;
      rv_rle_iou(&o1, &a, 1, &b, 1, &cr);
      rv_rle_iou_info(&o2, &a, &ia, 1, &b, &ib, 1, &cr);
      double bbv;
      rv_bbox_iou(&bbv, ia.bb, 1, ib.bb, 1, &cr);
      double expect = bbv > 0 ? naive : 0; /* boxes apart: 0 without a walk */
      if (o1 != expect || o2 != expect) fail_msg("it %d: matrix iou %.17g / %.17g, expected %.17g", it, o1, o2, expect);
    }
    free(ma);
    free(mb);
    free(a.cnts);
    free(b.cnts);
  }
  assert_true(n_nonzero > 1000 && n_irregular > 100);
}

/* The matrix over more gt than rv_rle_iou takes at a time (blocks of 64): every entry is the
 * pair's literal run walk, 0 for boxes apart, -1 for another size with overlapping boxes. */
static void test_iou_matrix_wide(void **state) {
  (void)state;
  uint64_t seed = 4242;
  enum { M = 3, N = 150 };
  rv_rle dt[M], gt[N];
  uint8_t crowd[N];
  for (int d = 0; d < M; d++) random_rle(&dt[d], 23, 17, 0, &seed);
  for (int g = 0; g < N; g++) {
    random_rle(&gt[g], 23, g % 29 == 5 ? 16 : 17, g % 3 == 0, &seed);
    crowd[g] = g % 7 == 2;
  }
  double *o = malloc(sizeof *o * M * N);
  rv_rle_iou(o, dt, M, gt, N, crowd);
  int n_pos = 0, n_other_size = 0;
  for (int d = 0; d < M; d++)
    for (int g = 0; g < N; g++) {
      rv_rle_info a, b;
      rv_rle_info_get(&a, &dt[d]);
      rv_rle_info_get(&b, &gt[g]);
      double bbv;
      rv_bbox_iou(&bbv, a.bb, 1, b.bb, 1, &crowd[g]);
      double expect = bbv <= 0 ? 0 : gt[g].w != dt[d].w ? -1 : rv_rle_iou_pair_naive(&dt[d], &gt[g], crowd[g]);
      if (o[d * N + g] != expect) fail_msg("dt %d gt %d: %.17g, expected %.17g", d, g, o[d * N + g], expect);
      n_pos += expect > 0;
      n_other_size += expect < 0;
    }
  assert_true(n_pos > 100 && n_other_size > 0);
  free(o);
  for (int d = 0; d < M; d++) free(dt[d].cnts);
  for (int g = 0; g < N; g++) free(gt[g].cnts);
}

/* maskApi rleFrString as written there, for the decoder's cross-check (no validation: only
 * used on strings the decoder accepted). */
static size_t ref_from_string(uint32_t *cnts, const char *s) {
  size_t m = 0, p = 0;
  while (s[p]) {
    long x = 0;
    int k = 0, more = 1;
    while (more) {
      long c = (long)s[p] - 48;
      x |= (c & 0x1f) << 5 * k;
      more = c & 0x20;
      p++;
      k++;
      if (!more && (c & 0x10)) x |= -(1L << 5 * k);
    }
    if (m > 2) x += (long)cnts[m - 2];
    cnts[m++] = (uint32_t)x;
  }
  return m;
}

static void test_string_random(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  uint64_t seed = 99;
  int ok = 0, bad = 0;
  for (int it = 0; it < 4000; it++) {
    uint32_t h = 1 + (uint32_t)((test_rand(&seed) + 1) * 25), w = 1 + (uint32_t)((test_rand(&seed) + 1) * 25);
    rv_rle r;
    random_rle(&r, h, w, it % 3 == 0, &seed);
    char *s = rv_rle_to_string(&r);
    size_t len = strlen(s);
    if (it % 2) { /* corrupt it: a changed character, a cut, or a long count */
      size_t at = (size_t)((test_rand(&seed) + 1) / 2 * (float)len);
      if (at >= len) at = len ? len - 1 : 0;
      float u = (test_rand(&seed) + 1) / 2;
      if (len && u < 0.3f)
        s[at] = (char)(40 + (int)(u * 300) % 80); /* may leave '0'..'o' */
      else if (len && u < 0.6f)
        len = at;
      else if (len && u < 0.8f)
        s[at] = (char)(48 + 32 + (int)(u * 100) % 32); /* a continuation bit */
      else {
        char *t = malloc(len + 12);
        memcpy(t, s, at);
        memcpy(t + at, "oooooooooo0", 11);
        memcpy(t + at + 11, s + at, len - at + 1);
        free(s);
        s = t;
        len += 11;
      }
    }
    char *z = malloc(len + 1);
    memcpy(z, s, len);
    z[len] = 0;
    rv_rle q = {0};
    rv_status st = rv_rle_from_string_n(&q, s, len, h, w, "t", ctx);
    if (st == RV_OK) {
      uint32_t *ref = malloc(sizeof(uint32_t) * (len + 1));
      size_t m = ref_from_string(ref, z);
      assert_int_equal(q.m, m);
      if (m) assert_memory_equal(q.cnts, ref, m * sizeof(uint32_t));
      uint64_t sum = 0;
      for (size_t j = 0; j < m; j++) sum += ref[j];
      assert_true(sum == (uint64_t)h * w);
      free(ref);
      ok++;
    } else {
      assert_int_equal(st, RV_ERR_FORMAT);
      assert_non_null(strstr(rv_ctx_errmsg(ctx), "t: "));
      assert_null(q.cnts);
      bad++;
    }
    /* into caller memory: the same counts, borrowed (rv_rle_free leaves the buffer) */
    size_t cap = rv_rle_string_max_counts(s, len);
    uint32_t *buf = malloc(sizeof(uint32_t) * (cap + 1));
    rv_rle qb = {0};
    assert_int_equal(rv_rle_from_string_into(&qb, buf, s, len, h, w, "t", ctx), st);
    if (st == RV_OK) {
      assert_true(qb.borrowed && qb.m == q.m && qb.m <= cap);
      if (q.m) assert_memory_equal(qb.cnts, q.cnts, q.m * sizeof(uint32_t));
      assert_false(q.borrowed);
    }
    rv_rle_free(&qb);
    assert_true(qb.cnts == NULL && !qb.borrowed);
    free(buf);
    /* the NUL-terminated entry point agrees */
    rv_rle q2 = {0};
    assert_int_equal(rv_rle_from_string(&q2, z, h, w, "t", ctx), st);
    assert_int_equal(q2.m, q.m);
    if (q.m) assert_memory_equal(q2.cnts, q.cnts, q.m * sizeof(uint32_t));
    rv_rle_free(&q);
    rv_rle_free(&q2);
    free(z);
    free(s);
    free(r.cnts);
  }
  assert_true(ok > 2000 && bad > 500);
  rv_ctx_free(ctx);
}

/* rv_rle_from_poly (integer downsampling) against rleFrPoly's floating-point steps on random
 * polygons: vertices inside and outside the image, on the 0.1 / 0.2 / 0.5 grids where
 * 5x + .5 lands on integers, repeated points, 1 to 14 vertices. */
static void test_poly_random(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  uint64_t seed = 31337;
  int nonempty = 0;
  for (int it = 0; it < 6000; it++) {
    const double big = it % 5 == 0 ? 200 : 30; /* long edges too (the fast walk skips steps on them) */
    uint32_t h = 1 + (uint32_t)((test_rand(&seed) + 1) * big), w = 1 + (uint32_t)((test_rand(&seed) + 1) * big);
    size_t k = 1 + (size_t)((test_rand(&seed) + 1) * 7);
    double xy[28];
    const double grid[4] = {0.5, 0.2, 0.1, 0.01};
    double g = grid[it % 4];
    for (size_t j = 0; j < k; j++) {
      if (j && test_rand(&seed) > 0.8f) { /* a repeated point */
        xy[2 * j] = xy[2 * j - 2];
        xy[2 * j + 1] = xy[2 * j - 1];
        continue;
      }
      xy[2 * j] = round(((test_rand(&seed) + 1) / 2 * (w + 12.0) - 6) / g) * g;
      xy[2 * j + 1] = round(((test_rand(&seed) + 1) / 2 * (h + 12.0) - 6) / g) * g;
    }
    rv_rle a = {0}, b = {0};
    assert_int_equal(rv_rle_from_poly(&a, xy, k, h, w, ctx), RV_OK);
    assert_int_equal(rv_rle_from_poly_naive(&b, xy, k, h, w, ctx), RV_OK);
    if (a.m != b.m || (a.m && memcmp(a.cnts, b.cnts, a.m * sizeof(uint32_t)) != 0))
      fail_msg("it %d (%ux%u, %zu points): %zu runs, literal %zu", it, h, w, k, a.m, b.m);
    nonempty += rv_rle_area(&a) > 0;
    rv_rle_free(&a);
    rv_rle_free(&b);
  }
  assert_true(nonempty > 1500);
  rv_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_encode),       cmocka_unit_test(test_frpoly),
      cmocka_unit_test(test_frbbox_uncompressed), cmocka_unit_test(test_merge),
      cmocka_unit_test(test_iou),          cmocka_unit_test(test_random_roundtrip),
      cmocka_unit_test(test_corrupt),      cmocka_unit_test(test_info_random),
      cmocka_unit_test(test_bbox_empty_runs_and_any_sum),
      cmocka_unit_test(test_iou_random),   cmocka_unit_test(test_iou_matrix_wide),
      cmocka_unit_test(test_string_random),
      cmocka_unit_test(test_poly_random),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
