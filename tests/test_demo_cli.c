/* The offline demo model embedded in the ravlt binary (apps/demo_model.c,
 * models/demo_seg.safetensors, tools/train_demo.py):
 *  - `ravlt eval ade20k --weights demo` on a freshly generated synthetic validation set (seed
 *    9001, never used in training: the model was trained on seed 1 and validated on 1001)
 *    reaches mIoU >= 80 (the acceptance bar), every class IoU >= 60;
 *  - `ravlt segment IMAGE` and `ravlt video INPUT` without --weights use it, from any working
 *    directory, say so in one line, and write a label PNG of the image's size / JSON lines;
 *  - `ravlt detect` without --weights is a one-line usage error naming `ravlt models`. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include "core/image.h"
#include <cjson/cJSON.h>
#include <unistd.h>

#define SAMPLES "/usr/share/doc/opencv-doc/examples/data"
#define DEMO_CLASSES 6

static char tmpdir[256];

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/rv_demo_cli_XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  test_run("rm -rf '%s'", tmpdir);
  return 0;
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/* The acceptance test: a fresh synthetic set, the embedded model, mIoU >= 80. */
static void test_eval_fresh_synthetic_set(void **state) {
  (void)state;
  assert_int_equal(test_run("%s --quiet synth --task seg --out '%s/val' --count 40 --seed 9001", RV_BIN, tmpdir), 0);
  assert_int_equal(test_run("cd / && %s --quiet --threads 1 eval ade20k --root '%s/val' --weights demo --json '%s/m.json' > '%s/eval.txt'",
                            RV_BIN, tmpdir, tmpdir, tmpdir),
                   0);
  char p[512];
  snprintf(p, sizeof p, "%s/m.json", tmpdir);
  char *txt = test_read_text(p);
  assert_non_null(txt);
  cJSON *j = cJSON_Parse(txt);
  assert_non_null(j);
  cJSON *miou = cJSON_GetObjectItem(j, "mIoU"), *iou = cJSON_GetObjectItem(j, "IoU");
  assert_true(cJSON_IsNumber(miou));
  assert_int_equal(cJSON_GetArraySize(iou), DEMO_CLASSES);
  assert_int_equal(cJSON_GetObjectItem(j, "images")->valueint, 40);
  printf("demo model on synth seed 9001 (40 images): mIoU %.2f, IoU", miou->valuedouble * 100);
  for (int k = 0; k < DEMO_CLASSES; k++) {
    cJSON *v = cJSON_GetArrayItem(iou, k);
    assert_true(cJSON_IsNumber(v)); /* every class occurs in 40 images */
    printf(" %.1f", v->valuedouble * 100);
    assert_true(v->valuedouble >= 0.60);
  }
  printf("\n");
  assert_true(miou->valuedouble >= 0.80);
  cJSON_Delete(j);
  free(txt);
}

/* segment without --weights, run from another working directory: one notice line, a label
 * PNG of the image's size with labels 1..6, an overlay. */
static void test_segment_without_weights(void **state) {
  (void)state;
  const char *img = SAMPLES "/fruits.jpg";
  char log[512], p[512];
  snprintf(log, sizeof log, "%s/seg.log", tmpdir);
  assert_int_equal(test_run("cd / && %s --threads 1 segment --out-dir '%s/seg' '%s' 2> '%s'", RV_BIN, tmpdir, img, log), 0);
  char *msg = test_read_text(log);
  assert_non_null(msg);
  assert_non_null(strstr(msg, "no --weights: using the built-in demo model (synthetic shapes, 6 classes)"));
  assert_non_null(strstr(msg, "ravlt models"));
  int notices = 0;
  for (const char *c = msg; (c = strstr(c, "built-in demo model")); c++) notices++;
  assert_int_equal(notices, 1);
  free(msg);
  rv_ctx *ctx = rv_ctx_create();
  rv_image src = {0}, lab = {0}, ov = {0};
  assert_int_equal(rv_image_read(img, &src, ctx), RV_OK);
  snprintf(p, sizeof p, "%s/seg/fruits.png", tmpdir);
  assert_int_equal(rv_image_read_gray(p, &lab, ctx), RV_OK);
  assert_int_equal(lab.w, src.w);
  assert_int_equal(lab.h, src.h);
  for (size_t k = 0; k < (size_t)lab.w * lab.h; k++) assert_true(lab.data[k] >= 1 && lab.data[k] <= DEMO_CLASSES);
  snprintf(p, sizeof p, "%s/seg/fruits_overlay.png", tmpdir);
  assert_int_equal(rv_image_read(p, &ov, ctx), RV_OK);
  assert_int_equal(ov.w, src.w);
  rv_image_free(&src);
  rv_image_free(&lab);
  rv_image_free(&ov);
  /* --quiet: no notice */
  assert_int_equal(test_run("%s --quiet --threads 1 segment --format png --out-dir '%s/seg2' '%s' 2> '%s'", RV_BIN, tmpdir, img, log), 0);
  msg = test_read_text(log);
  assert_non_null(msg);
  assert_string_equal(msg, "");
  free(msg);
  rv_ctx_free(ctx);
}

/* On a synthetic image the shapes are found: most pixels agree with the annotation. */
static void test_segment_synthetic_image(void **state) {
  (void)state;
  assert_int_equal(test_run("%s --quiet synth --task seg --out '%s/one' --count 1 --seed 9002 --size 288x224", RV_BIN, tmpdir), 0);
  assert_int_equal(test_run("%s --quiet --threads 1 segment --format png --out-dir '%s/one_out' '%s/one/images/validation/synth_000000.jpg'",
                            RV_BIN, tmpdir, tmpdir),
                   0);
  rv_ctx *ctx = rv_ctx_create();
  rv_image gt = {0}, pr = {0};
  char p[512];
  snprintf(p, sizeof p, "%s/one/annotations/validation/synth_000000.png", tmpdir);
  assert_int_equal(rv_image_read_gray(p, &gt, ctx), RV_OK);
  snprintf(p, sizeof p, "%s/one_out/synth_000000.png", tmpdir);
  assert_int_equal(rv_image_read_gray(p, &pr, ctx), RV_OK);
  assert_int_equal(pr.w, 288);
  assert_int_equal(pr.h, 224);
  size_t same = 0, shape_px = 0, n = (size_t)pr.w * pr.h;
  for (size_t k = 0; k < n; k++) {
    same += pr.data[k] == gt.data[k];
    shape_px += gt.data[k] > 1;
  }
  printf("synthetic image: %.1f%% of pixels correct, %zu shape pixels\n", 100.0 * same / n, shape_px);
  assert_true(shape_px > 500);
  assert_true(same >= 0.9 * n);
  rv_image_free(&gt);
  rv_image_free(&pr);
  rv_ctx_free(ctx);
}

/* video without --weights: the demo model, one JSON line per frame (pixels per class index). */
static void test_video_without_weights(void **state) {
  (void)state;
  char log[512], p[512];
  snprintf(log, sizeof log, "%s/video.log", tmpdir);
  assert_int_equal(test_run("cd / && %s --threads 1 video --max-frames 2 --size 240x320 --json '%s/v.jsonl' " SAMPLES
                            "/vtest.avi 2> '%s'",
                            RV_BIN, tmpdir, log),
                   0);
  char *msg = test_read_text(log);
  assert_non_null(msg);
  assert_non_null(strstr(msg, "ravlt video: no --weights: using the built-in demo model"));
  free(msg);
  snprintf(p, sizeof p, "%s/v.jsonl", tmpdir);
  char *txt = test_read_text(p);
  assert_non_null(txt);
  assert_int_equal(count_lines(txt), 2);
  assert_non_null(strstr(txt, "{\"frame\": 1, "));
  assert_non_null(strstr(txt, "\"pixels\": {\"0\": ")); /* class 0: background */
  free(txt);
}

/* detect has no demo model: a one-line usage error that says where checkpoints come from;
 * --weights demo (a segmentor) is refused by detect and by eval coco's model mode. */
static void test_detect_without_weights(void **state) {
  (void)state;
  char log[512];
  snprintf(log, sizeof log, "%s/det.log", tmpdir);
  assert_int_equal(test_run("%s detect --out-dir '%s/det' " SAMPLES "/home.jpg 2> '%s'", RV_BIN, tmpdir, log), 2);
  char *msg = test_read_text(log);
  assert_non_null(msg);
  assert_int_equal(count_lines(msg), 1);
  assert_non_null(strstr(msg, "no built-in detection demo model"));
  assert_non_null(strstr(msg, "ravlt models"));
  free(msg);
  assert_int_equal(test_run("%s detect --weights demo --out-dir '%s/det' " SAMPLES "/home.jpg 2> '%s'", RV_BIN, tmpdir, log), 1);
  msg = test_read_text(log);
  assert_non_null(msg);
  assert_int_equal(count_lines(msg), 1);
  assert_non_null(strstr(msg, "segmentor, not a detector"));
  free(msg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_eval_fresh_synthetic_set),
      cmocka_unit_test(test_segment_without_weights),
      cmocka_unit_test(test_segment_synthetic_image),
      cmocka_unit_test(test_video_without_weights),
      cmocka_unit_test(test_detect_without_weights),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
