/* bf16 precision (rv_model_set_precision) against float32 on the e2e fixtures, measured
 * with issue 24's criteria (README "bf16"):
 *  - segmentation (semantic_fpn, upernet): the share of the pixels whose float32 top-2 logit
 *    margin (the fixture's label_margin) exceeds 1e-2 where the label maps agree;
 *  - detection (mask_rcnn, cascade_mask_rcnn, retinanet): the share of the float32
 *    detections with a bf16 detection of the same label and box IoU >= 0.95 (greedy, in
 *    score order, each bf16 detection used once), and how many of the float32 top 20 miss.
 * The goal (>= 99.9%; >= 98% and none of the top 20 missed) holds for semantic_fpn
 * only (mask_rcnn in some builds). The fixtures are small random-weight models whose
 * outputs are full of near-ties (mask_rcnn's top detections all score 0.495; the
 * RetinaNet's boxes are 15 px wide, so one pixel of shift is IoU < 0.95): bf16's relative
 * rounding of 2^-9 per operand moves them. Each case asserts its measured level minus a
 * margin (a regression bound, stated in `bound` below) and prints the figure; README
 * "bf16" has the measurements, and the demo models' mIoU / box AP (trained models) the
 * fidelity that matters;
 *  - the control: the float32 model with only the backbone's 1x1 weights (qkvo, proj, fc1,
 *    fc2: a subset of the weights bf16 mode converts at load, as the issue prescribes)
 *    rounded to bfloat16, everything computed in float32, measured by the same criteria and
 *    printed beside bf16: what the weights' rounding alone costs on these fixtures (it
 *    misses the goal on 4 of the 5 as well; README "bf16");
 *  - switching back to f32 gives the float32 results bit for bit;
 *  - on a CPU without AVX512_BF16 (or with RAVLT_DISABLE_BF16=1) rv_model_set_precision
 *    and `ravlt segment --precision bf16` refuse with one line, nothing crashes.
 * Without AVX512_BF16 the comparisons cannot run: the test prints SKIP and exits 77
 * (ctest SKIP_RETURN_CODE), after checking the refusal. */
#define _POSIX_C_SOURCE 200809L /* setenv, popen */
#include "test_util.h"
#include "formats/weights.h"
#include <ravlt/model.h>

#include <cjson/cJSON.h>

static rv_ctx *ctx;
static rv_arena *arena;

static rv_model *load(const char *name) {
  char rel[256];
  snprintf(rel, sizeof rel, "e2e/%s/checkpoint.pth", name);
  rv_model *m = NULL;
  rv_status st = rv_model_load(&m, fixture_path(rel), NULL, ctx);
  if (st != RV_OK) fprintf(stderr, "%s: %s\n", name, rv_ctx_errmsg(ctx));
  assert_int_equal(st, RV_OK);
  return m;
}

/* The control's weights: the backbone's blocks' 1x1 convs, which bf16 mode always converts
 * (include/ravlt/model.h, rv_precision). */
static int backbone_1x1(const char *n) {
  static const char *const suffix[] = {".attn.qkvo.weight", ".attn.proj.weight",
                                       ".ffn.fc1.weight", ".ffn.fc2.weight"};
  if (strncmp(n, "backbone.", 9) != 0) return 0;
  for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
    size_t ln = strlen(n), ls = strlen(suffix[i]);
    if (ln > ls && strcmp(n + ln - ls, suffix[i]) == 0) return 1;
  }
  return 0;
}

/* The float32 model of the fixture with backbone_1x1's weights rounded to bfloat16: the
 * checkpoint rewritten (meta config kept) as a safetensors file in a temporary folder. */
static rv_model *load_control(const char *name) {
  char rel[256], dir[] = "/tmp/ravlt-bf16-control.XXXXXX", path[512];
  snprintf(rel, sizeof rel, "e2e/%s/checkpoint.pth", name);
  rv_weights *w = NULL;
  assert_int_equal(rv_weights_open(&w, fixture_path(rel), ctx), RV_OK);
  rv_weights *out = rv_weights_new("control");
  assert_non_null(out);
  int rounded = 0, moved = 0;
  for (int i = 0; i < rv_weights_count(w); i++) {
    const rv_wtensor *t = rv_weights_get(w, i);
    if (!backbone_1x1(t->name)) {
      assert_int_equal(rv_weights_add(out, t->name, t->dtype, t->ndim, t->shape, t->data,
                                      t->nbytes, 0, ctx), RV_OK);
      continue;
    }
    const size_t n = rv_wtensor_numel(t);
    float *v = rv_malloc(n * sizeof *v);
    assert_non_null(v);
    rv_wtensor_to_f32(t, v);
    for (size_t k = 0; k < n; k++) {
      float r = rv_bf16_to_f32(rv_f32_to_bf16(v[k])); /* bf16 mode's rounding */
      moved += r != v[k];
      v[k] = r;
    }
    assert_int_equal(rv_weights_add(out, t->name, RV_DT_F32, t->ndim, t->shape, v,
                                    n * sizeof *v, 1, ctx), RV_OK);
    rounded++;
  }
  for (int i = 0; i < rv_weights_meta_count(w); i++)
    assert_int_equal(rv_weights_set_meta(out, rv_weights_meta_key(w, i),
                                         rv_weights_meta(w, rv_weights_meta_key(w, i))), RV_OK);
  assert_true(rounded >= 4 && rounded % 4 == 0); /* four per block */
  assert_true(moved > 0);
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/control.safetensors", dir);
  assert_int_equal(rv_safetensors_write(path, out, ctx), RV_OK);
  rv_model *m = NULL;
  rv_status st = rv_model_load(&m, path, NULL, ctx);
  if (st != RV_OK) fprintf(stderr, "%s control: %s\n", name, rv_ctx_errmsg(ctx));
  assert_int_equal(st, RV_OK);
  assert_int_equal(test_run("rm -rf %s", dir), 0);
  rv_weights_free(out); /* after the load: out's untouched tensors point into w */
  rv_weights_free(w);
  return m;
}

static void read_image(const char *name, rv_image *img) {
  char rel[256];
  snprintf(rel, sizeof rel, "e2e/%s/image.jpg", name);
  assert_int_equal(rv_image_read(fixture_path(rel), img, ctx), RV_OK);
}

static void seg_case(const char *name, double bound) {
  rv_model *m = load(name);
  rv_image img = {0};
  read_image(name, &img);
  const size_t np = (size_t)img.h * img.w;
  int32_t *f = malloc(np * sizeof *f), *b = malloc(np * sizeof *b), *f2 = malloc(np * sizeof *f2);
  assert_true(f && b && f2);
  assert_int_equal(rv_model_segment(m, f, &img, NULL, arena, ctx), RV_OK);
  rv_arena_reset(arena);
  assert_int_equal(rv_model_set_precision(m, RV_PRECISION_BF16, ctx), RV_OK);
  assert_int_equal(rv_model_precision(m), RV_PRECISION_BF16);
  assert_int_equal(rv_model_segment(m, b, &img, NULL, arena, ctx), RV_OK);
  rv_arena_reset(arena);
  assert_int_equal(rv_model_set_precision(m, RV_PRECISION_F32, ctx), RV_OK);
  assert_int_equal(rv_model_segment(m, f2, &img, NULL, arena, ctx), RV_OK);
  rv_arena_reset(arena);
  assert_memory_equal(f, f2, np * sizeof *f); /* back to float32: the same bits */
  /* the float32 margins of the fixture (official float32 code) */
  char rel[256];
  snprintf(rel, sizeof rel, "e2e/%s/io.safetensors", name);
  rv_weights *io = NULL;
  assert_int_equal(rv_weights_open(&io, fixture_path(rel), ctx), RV_OK);
  const rv_wtensor *t = rv_weights_find(io, "label_margin");
  assert_non_null(t);
  assert_int_equal(rv_wtensor_numel(t), np);
  float *margin = malloc(np * sizeof *margin);
  assert_non_null(margin);
  rv_wtensor_to_f32(t, margin);
  double frac = 0;
  for (int run = 0; run < 2; run++) { /* bf16, then the control */
    int32_t *x = b;
    if (run == 1) {
      rv_model *c = load_control(name);
      assert_int_equal(rv_model_segment(c, f2, &img, NULL, arena, ctx), RV_OK);
      rv_arena_reset(arena);
      rv_model_free(c);
      x = f2;
    }
    size_t confident = 0, agree = 0, all_agree = 0;
    for (size_t i = 0; i < np; i++) {
      all_agree += f[i] == x[i];
      if (margin[i] > 1e-2f) {
        confident++;
        agree += f[i] == x[i];
      }
    }
    assert_true(confident > np / 2);
    const double fr = (double)agree / (double)confident;
    if (run == 0) frac = fr;
    printf("%s: %s labels agree with float32 on %zu of %zu pixels with margin > 1e-2 (%.4f%%),"
           " %zu of %zu overall\n",
           name, run ? "control (bf16 backbone 1x1 weights)" : "bf16", agree, confident,
           100.0 * fr, all_agree, np);
  }
  assert_true(frac >= bound);
  free(margin), free(f), free(b), free(f2);
  rv_weights_free(io);
  rv_image_free(&img);
  rv_model_free(m);
}

typedef struct {
  int n;
  float *boxes, *scores;
  int *labels;
} dets;

static void run_det(rv_model *m, const rv_image *img, dets *d) {
  rv_detections det;
  assert_int_equal(rv_model_detect(m, &det, NULL, img, arena, ctx), RV_OK);
  d->n = det.n;
  d->boxes = malloc(sizeof(float) * 4 * (size_t)(det.n + 1));
  d->scores = malloc(sizeof(float) * (size_t)(det.n + 1));
  d->labels = malloc(sizeof(int) * (size_t)(det.n + 1));
  assert_true(d->boxes && d->scores && d->labels);
  memcpy(d->boxes, det.bboxes, sizeof(float) * 4 * (size_t)det.n);
  memcpy(d->scores, det.scores, sizeof(float) * (size_t)det.n);
  memcpy(d->labels, det.labels, sizeof(int) * (size_t)det.n);
  rv_arena_reset(arena);
}

static void free_dets(dets *d) { free(d->boxes), free(d->scores), free(d->labels); }

/* How many of f's detections (order: f by score) have a match in x, and how many of its top
 * 20 have none (worst top-20 IoU in *worst). */
static int match_dets(const dets *f, const int *order, const dets *x, int *top_missed,
                      double *worst) {
  int *match = malloc(sizeof(int) * (size_t)f->n), *used = malloc(sizeof(int) * (size_t)(x->n + 1));
  assert_true(match && used);
  /* the library's matcher (eval/compare.h): in score order, the detection of x of the same
   * label with the largest IoU >= 0.95, with the legacy +1 pixel convention (mmdet v1: x2 -
   * x1 + 1): the fixtures' small random-weight detectors give many zero-width boxes at the
   * image border, whose plain IoU is 0 even against themselves */
  const rv_det_list fl = {f->n, f->boxes, 4, f->scores, 1, f->labels, NULL, order};
  const rv_det_list xl = {x->n, x->boxes, 4, x->scores, 1, x->labels, NULL, NULL};
  const rv_det_match_opts mo = {-1, -1, 0.95, 1, 1, 0, -1, -1};
  const int matched = rv_match_detections(match, used, &fl, &xl, &mo).matched;
  *top_missed = 0;
  *worst = 1.0;
  for (int r = 0; r < f->n && r < 20; r++) {
    if (match[r] < 0) {
      ++*top_missed;
      continue;
    }
    double v = rv_box_iou(f->boxes + 4 * order[r], x->boxes + 4 * match[r], 1);
    if (v < *worst) *worst = v;
  }
  free(match), free(used);
  return matched;
}

static void det_case(const char *name, double bound, int top_missed_max) {
  rv_model *m = load(name);
  rv_image img = {0};
  read_image(name, &img);
  dets f, b, f2, c;
  run_det(m, &img, &f);
  assert_int_equal(rv_model_set_precision(m, RV_PRECISION_BF16, ctx), RV_OK);
  run_det(m, &img, &b);
  assert_int_equal(rv_model_set_precision(m, RV_PRECISION_F32, ctx), RV_OK);
  run_det(m, &img, &f2);
  assert_int_equal(f.n, f2.n); /* back to float32: the same bits */
  assert_memory_equal(f.boxes, f2.boxes, sizeof(float) * 4 * (size_t)f.n);
  assert_memory_equal(f.scores, f2.scores, sizeof(float) * (size_t)f.n);
  assert_true(f.n > 0);
  rv_model *cm = load_control(name);
  run_det(cm, &img, &c);
  rv_model_free(cm);
  /* f is in NMS order (score descending); its top 20 by score */
  int *order = malloc(sizeof(int) * (size_t)f.n);
  assert_non_null(order);
  for (int i = 0; i < f.n; i++) order[i] = i;
  for (int i = 1; i < f.n; i++) /* insertion sort by score, stable */
    for (int j = i; j > 0 && f.scores[order[j]] > f.scores[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  int top_missed = 0, c_missed = 0;
  double worst = 1, c_worst = 1;
  const int matched = match_dets(&f, order, &b, &top_missed, &worst);
  const int c_matched = match_dets(&f, order, &c, &c_missed, &c_worst);
  printf("%s: %d of %d float32 detections matched in bf16 (%d detections; label, IoU >= 0.95),"
         " top 20 missed %d, worst top-20 IoU %.4f\n",
         name, matched, f.n, b.n, top_missed, worst);
  printf("%s: %d of %d matched in the control (bf16 backbone 1x1 weights; %d detections), top"
         " 20 missed %d, worst top-20 IoU %.4f\n",
         name, c_matched, f.n, c.n, c_missed, c_worst);
  assert_true(matched >= bound * f.n);
  assert_true(top_missed <= top_missed_max);
  free(order);
  free_dets(&f), free_dets(&b), free_dets(&f2), free_dets(&c);
  rv_image_free(&img);
  rv_model_free(m);
}

/* bounds: the goal where met, else the measured figures (Zen 5; gcc 12 Release, the
 * ASan build and clang 14, whose float32 parts round differently, each with OpenBLAS's
 * SkylakeX and Haswell kernels) less a margin. With the whole model in bf16 (backbone, neck
 * and heads, the detection FPN / RPN 3x3 convs in bf16 F(2x2); README "bf16"), 2026-12-05:
 * semantic_fpn 99.947-99.960%, upernet 98.39-98.60%; mask_rcnn 66-70 of 71 matched, 1-3 of
 * the top 20 missed; cascade 29-39 of 85-86, 13-17; retinanet 63-73 of 100, 4-8. Before the
 * FPN / RPN moved to bf16 (gcc Release): 99.963%, 98.71%, 70 and 1, 44 and 12, 71 and 6. The
 * control (float32, the backbone's 1x1 weights rounded to bf16): 99.99%, 99.08%, 69 of 71
 * and 1, 70 of 86 and 6, 92 of 100 and 2. Most cascade misses are boxes of a few pixels
 * whose bf16 box has IoU 0.90-0.95 with the float32 one, or members of clusters of
 * overlapping same-label boxes whose scores differ by less than bf16 moves them; the trained
 * demo models (test_demo_models) are where the goal is met. */
static void test_semantic_fpn(void **s) { (void)s, seg_case("semantic_fpn", 0.999); }
static void test_upernet(void **s) { (void)s, seg_case("upernet", 0.975); }
static void test_mask_rcnn(void **s) { (void)s, det_case("mask_rcnn", 0.88, 5); }
static void test_cascade(void **s) { (void)s, det_case("cascade_mask_rcnn", 0.30, 18); }
static void test_retinanet(void **s) { (void)s, det_case("retinanet", 0.60, 12); }

/* The refusal where the CPU lacks AVX512_BF16 (simulated with RAVLT_DISABLE_BF16=1): an
 * error with one line naming the missing instruction set, the model unchanged; the CLI
 * exits 1 with that line. */
static void check_refusal(void) {
  setenv("RAVLT_DISABLE_BF16", "1", 1);
  assert_int_equal(rv_cpu_has_bf16(), 0);
  rv_model *m = load("semantic_fpn");
  assert_int_equal(rv_model_set_precision(m, RV_PRECISION_BF16, ctx), RV_ERR_UNSUPPORTED);
  const char *msg = rv_ctx_errmsg(ctx);
  assert_non_null(strstr(msg, "AVX512_BF16"));
  assert_null(strchr(msg, '\n'));
  assert_int_equal(rv_model_precision(m), RV_PRECISION_F32);
  rv_ctx_clear_error(ctx);
  rv_model_free(m);
  char cmd[4096], line[1024], all[4096] = "";
  snprintf(cmd, sizeof cmd, "%s segment --weights %s --precision bf16 --out-dir /tmp %s 2>&1", RV_BIN,
           fixture_path("e2e/semantic_fpn/checkpoint.pth"), fixture_path("e2e/semantic_fpn/image.jpg"));
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  int lines = 0;
  while (fgets(line, sizeof line, p)) {
    lines++;
    strncat(all, line, sizeof all - strlen(all) - 1);
  }
  int rc = pclose(p);
  printf("refused: %s", all);
  assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
  assert_int_equal(lines, 1);
  assert_non_null(strstr(all, "AVX512_BF16"));
  unsetenv("RAVLT_DISABLE_BF16");
}

static void test_refusal(void **s) { (void)s, check_refusal(); }

/* One metric from `ravlt eval ... --json FILE`: the number `key`, or (an array, COCO's
 * "stats") its first element, box AP. */
static double json_metric(const char *path, const char *key) {
  char *txt = test_read_text(path);
  assert_non_null(txt);
  cJSON *j = cJSON_Parse(txt);
  assert_non_null(j);
  const cJSON *v = cJSON_GetObjectItem(j, key);
  if (cJSON_IsArray(v)) v = cJSON_GetArrayItem(v, 0);
  assert_true(cJSON_IsNumber(v));
  const double r = v->valuedouble;
  cJSON_Delete(j);
  free(txt);
  return r;
}

/* Issue 24's fidelity goal on trained models: the demo segmentor's mIoU and the demo
 * detector's box AP (both embedded in the CLI; the detector is RetinaNet + FPN, so its
 * neck's 3x3 convs run bf16 F(2x2)) on fresh synthetic sets, bf16 within 0.2 points of
 * float32. Measured (60 images, seeds 11-13): detector |diff| <= 0.06 points, segmentor
 * <= 0.005; on 200 images (README "bf16"): 82.601 / 82.632, 96.7426 / 96.7403. */
static void test_demo_models(void **s) {
  (void)s;
  char dir[] = "/tmp/ravlt-bf16-demo.XXXXXX", js[600], ev[1200];
  assert_non_null(mkdtemp(dir));
  static const char *const task[] = {"det", "seg"};
  for (int i = 0; i < 2; i++) {
    assert_int_equal(test_run("%s synth --task %s --out-dir %s/%s --count 60 --seed %d "
                              ">/dev/null 2>&1", RV_BIN, task[i], dir, task[i], 7001 + i),
                     0);
    if (i == 0)
      snprintf(ev, sizeof ev, "coco --ann %s/det/annotations/instances.json --images "
               "%s/det/images --weights demo-det", dir, dir);
    else
      snprintf(ev, sizeof ev, "ade20k --root %s/seg --weights demo", dir);
    double v[2];
    for (int b = 0; b < 2; b++) {
      snprintf(js, sizeof js, "%s/%s-%d.json", dir, task[i], b);
      assert_int_equal(test_run("%s eval %s --precision %s --json %s >/dev/null 2>&1", RV_BIN,
                                ev, b ? "bf16" : "f32", js), 0);
      v[b] = 100.0 * json_metric(js, i == 0 ? "stats" : "mIoU");
    }
    printf("demo %s: float32 %.4f, bf16 %.4f (%s, 60 images)\n", task[i], v[0], v[1],
           i == 0 ? "box AP" : "mIoU");
    assert_true(v[0] > 50.0); /* the trained model, not a broken run */
    assert_true(fabs(v[1] - v[0]) <= 0.2);
  }
  assert_int_equal(test_run("rm -rf %s", dir), 0);
}

int main(void) {
  ctx = rv_ctx_create();
  arena = rv_arena_create(0);
  if (!ctx || !arena) return 1;
  const struct CMUnitTest refusal[] = {cmocka_unit_test(test_refusal)};
  int failed = cmocka_run_group_tests_name("bf16 refusal", refusal, NULL, NULL);
  if (failed) return 1;
  if (!rv_cpu_has_bf16()) {
    printf("SKIP: this CPU has no AVX512_BF16: bf16 against float32 not compared here\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_semantic_fpn), cmocka_unit_test(test_upernet),
      cmocka_unit_test(test_mask_rcnn),    cmocka_unit_test(test_cascade),
      cmocka_unit_test(test_retinanet),    cmocka_unit_test(test_demo_models),
  };
  failed = cmocka_run_group_tests_name("bf16 vs float32 on the e2e fixtures", tests, NULL, NULL);
  rv_arena_free(arena);
  rv_ctx_free(ctx);
  return failed ? 1 : 0;
}
