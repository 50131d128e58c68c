/* Whole models end to end: `ravlt check-fixture` on every e2e fixture (official outputs of
 * the checkpoints on real photographs), `ravlt segment` and `ravlt detect` on Debian's
 * opencv-doc sample photographs (outputs exist, sizes and label ranges, JSON schema), a
 * converted checkpoint giving the same label map as the .pth, and bad inputs. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include "formats/image.h"
#include <cjson/cJSON.h>
#include <dirent.h>
#include <unistd.h>

#define SAMPLES "/usr/share/doc/opencv-doc/examples/data"

static char tmpdir[256];

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/rv_models_cli_XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  test_run("rm -rf '%s'", tmpdir);
  return 0;
}

static void test_check_fixture_e2e(void **state) {
  (void)state;
  DIR *d = opendir(fixture_path("e2e"));
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "%s/%s/config.json", fixture_path("e2e"), e->d_name);
    if (!path_exists(cfg)) continue;
    printf("e2e fixture %s\n", e->d_name);
    fflush(stdout);
    assert_int_equal(test_run("%s --quiet check-fixture '%s/%s' > '%s/check.log' 2>&1 || { cat '%s/check.log'; exit 1; }", RV_BIN,
                         fixture_path("e2e"), e->d_name, tmpdir, tmpdir),
                     0);
    n++;
  }
  closedir(d);
  assert_true(n >= 1);
}

static void test_segment_photographs(void **state) {
  (void)state;
  const char *imgs[] = {"home.jpg", "baboon.jpg", "fruits.jpg"};
  char out[512];
  snprintf(out, sizeof out, "%s/seg", tmpdir);
  assert_int_equal(test_run("%s --quiet segment --weights '%s' --out-dir '%s' --format both " SAMPLES "/%s " SAMPLES "/%s " SAMPLES "/%s",
                       RV_BIN, fixture_path("e2e/semantic_fpn/checkpoint.pth"), out, imgs[0], imgs[1], imgs[2]),
                   0);
  rv_ctx *ctx = rv_ctx_create();
  for (int i = 0; i < 3; i++) {
    char p[1024], base[64];
    snprintf(base, sizeof base, "%.*s", (int)(strlen(imgs[i]) - 4), imgs[i]);
    rv_image src = {0}, lab = {0}, ov = {0};
    snprintf(p, sizeof p, SAMPLES "/%s", imgs[i]);
    assert_int_equal(rv_image_read(p, &src, ctx), RV_OK);
    snprintf(p, sizeof p, "%s/%s.png", out, base);
    assert_int_equal(rv_image_read_gray(p, &lab, ctx), RV_OK);
    assert_int_equal(lab.h, src.h);
    assert_int_equal(lab.w, src.w);
    for (size_t k = 0; k < (size_t)lab.h * lab.w; k++) {
      assert_true(lab.data[k] >= 1);
      assert_true(lab.data[k] <= 150);
    }
    snprintf(p, sizeof p, "%s/%s_overlay.png", out, base);
    assert_int_equal(rv_image_read(p, &ov, ctx), RV_OK);
    assert_int_equal(ov.h, src.h);
    assert_int_equal(ov.w, src.w);
    rv_image_free(&src);
    rv_image_free(&lab);
    rv_image_free(&ov);
  }
  rv_ctx_free(ctx);
}

/* The converted safetensors (meta config carried in __metadata__) is the same model. */
static void test_segment_converted_same(void **state) {
  (void)state;
  const char *ck = fixture_path("e2e/upernet/checkpoint.pth");
  assert_int_equal(test_run("%s --quiet convert '%s' '%s/u.safetensors'", RV_BIN, ck, tmpdir), 0);
  assert_int_equal(test_run("%s --quiet segment --weights '%s' --out-dir '%s/a' --format png " SAMPLES "/home.jpg", RV_BIN, ck, tmpdir), 0);
  assert_int_equal(test_run("%s --quiet segment --weights '%s/u.safetensors' --out-dir '%s/b' --format png " SAMPLES "/home.jpg", RV_BIN,
                       tmpdir, tmpdir),
                   0);
  assert_int_equal(test_run("cmp -s '%s/a/home.png' '%s/b/home.png'", tmpdir, tmpdir), 0);
}

static void check_results_schema(const char *path, int with_segm, int expect_n) {
  char *txt = test_read_text(path);
  assert_non_null(txt);
  cJSON *a = cJSON_Parse(txt);
  free(txt);
  assert_true(cJSON_IsArray(a));
  if (expect_n >= 0) assert_int_equal(cJSON_GetArraySize(a), expect_n);
  const cJSON *e;
  cJSON_ArrayForEach(e, a) {
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(e, "image_id")));
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(e, "category_id")));
    const cJSON *s = cJSON_GetObjectItem(e, "score");
    assert_true(cJSON_IsNumber(s) && s->valuedouble > 0.05 && s->valuedouble <= 1);
    const cJSON *b = cJSON_GetObjectItem(e, "bbox");
    assert_int_equal(cJSON_GetArraySize(b), 4);
    assert_true(cJSON_GetArrayItem(b, 2)->valuedouble >= 0 && cJSON_GetArrayItem(b, 3)->valuedouble >= 0);
    if (with_segm) {
      const cJSON *sg = cJSON_GetObjectItem(e, "segmentation");
      assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sg, "size")), 2);
      assert_true(cJSON_IsString(cJSON_GetObjectItem(sg, "counts")));
    }
  }
  cJSON_Delete(a);
}

static void test_detect_photographs(void **state) {
  (void)state;
  char out[512];
  snprintf(out, sizeof out, "%s/det", tmpdir);
  assert_int_equal(test_run("%s --quiet detect --weights '%s' --out-dir '%s' --score-thr 0.05 --json '%s/r.json' " SAMPLES "/home.jpg " SAMPLES
                       "/HappyFish.jpg",
                       RV_BIN, fixture_path("e2e/mask_rcnn/checkpoint.pth"), out, out),
                   0);
  char p[1024];
  snprintf(p, sizeof p, "%s/r.json", out);
  check_results_schema(p, 0, -1);
  snprintf(p, sizeof p, "%s/r.segm.json", out);
  check_results_schema(p, 1, -1);
  rv_ctx *ctx = rv_ctx_create();
  rv_image img = {0};
  snprintf(p, sizeof p, "%s/home_det.jpg", out);
  assert_int_equal(rv_image_read(p, &img, ctx), RV_OK);
  assert_int_equal(img.w, 512);
  rv_image_free(&img);
  rv_ctx_free(ctx);
  /* the e2e photograph: as many entries as mmdet wrote, RetinaNet has no masks */
  assert_int_equal(test_run("%s --quiet detect --weights '%s' --no-draw --json '%s/retina.json' '%s'", RV_BIN,
                       fixture_path("e2e/retinanet/checkpoint.pth"), out, fixture_path("e2e/retinanet/image.jpg")),
                   0);
  snprintf(p, sizeof p, "%s/retina.json", out);
  char *ref = test_read_text(fixture_path("e2e/retinanet/results.bbox.json"));
  assert_non_null(ref);
  cJSON *r = cJSON_Parse(ref);
  free(ref);
  check_results_schema(p, 0, cJSON_GetArraySize(r));
  cJSON_Delete(r);
  snprintf(p, sizeof p, "%s/retina.segm.json", out);
  assert_false(path_exists(p));
}

static void test_bad_inputs(void **state) {
  (void)state;
  const char *seg = fixture_path("e2e/semantic_fpn/checkpoint.pth");
  const char *det = fixture_path("e2e/retinanet/checkpoint.pth");
  char log[512];
  snprintf(log, sizeof log, "%s/err.log", tmpdir);
  /* missing image */
  assert_int_equal(test_run("%s segment --weights '%s' --out-dir '%s/x' /nonexistent/a.jpg 2> '%s'", RV_BIN, seg, tmpdir, log), 1);
  /* unreadable (not an image) */
  assert_int_equal(test_run("%s segment --weights '%s' --out-dir '%s/x' '%s' 2> '%s'", RV_BIN, seg, tmpdir,
                       fixture_path("e2e/upernet/config.json"), log),
                   1);
  /* detector given to segment, segmentor given to detect */
  assert_int_equal(test_run("%s segment --weights '%s' --out-dir '%s/x' " SAMPLES "/home.jpg 2> '%s'", RV_BIN, det, tmpdir, log), 1);
  char *msg = test_read_text(log);
  assert_non_null(msg);
  assert_non_null(strstr(msg, "not a segmentor"));
  free(msg);
  assert_int_equal(test_run("%s detect --weights '%s' --out-dir '%s/x' " SAMPLES "/home.jpg 2> '%s'", RV_BIN, seg, tmpdir, log), 1);
  /* a backbone-only checkpoint is not a dense-prediction model */
  assert_int_equal(test_run("%s segment --weights '%s' " SAMPLES "/home.jpg 2> '%s'", RV_BIN,
                       fixture_path("backbone/tiny/checkpoint.pth"), log),
                   1);
  /* a truncated checkpoint */
  assert_int_equal(test_run("head -c 30000 '%s' > '%s/trunc.pth' && %s segment --weights '%s/trunc.pth' " SAMPLES "/home.jpg 2> '%s'",
                       seg, tmpdir, RV_BIN, tmpdir, log),
                   1);
  msg = test_read_text(log);
  assert_non_null(msg);
  assert_non_null(strstr(msg, "trunc.pth"));
  int lines = 0;
  for (const char *c = msg; *c; c++) lines += *c == '\n';
  assert_int_equal(lines, 1); /* one line naming the file and the problem */
  free(msg);
  /* usage errors */
  assert_int_equal(test_run("%s segment --bogus " SAMPLES "/home.jpg 2> '%s'", RV_BIN, log), 2);
  assert_int_equal(test_run("%s detect --weights '%s' --score-thr 7 " SAMPLES "/home.jpg 2> '%s'", RV_BIN, det, log), 2);
  assert_int_equal(test_run("%s segment --help > '%s'", RV_BIN, log), 0);
}

/* `ravlt video --show` draws into a window: under a virtual X server it runs; without a
 * display it is a usage error, never a crash. */
static void test_video_show(void **state) {
  (void)state;
  assert_int_equal(test_run("env -u DISPLAY -u WAYLAND_DISPLAY %s video --weights '%s' --show " SAMPLES "/vtest.avi 2> '%s/show.log'", RV_BIN,
                       fixture_path("e2e/semantic_fpn/checkpoint.pth"), tmpdir),
                   2);
  assert_int_equal(test_run("xvfb-run -a %s --quiet video --weights '%s' --show --max-frames 2 --size 120x160 --json '%s/show.jsonl' " SAMPLES
                       "/vtest.avi > '%s/show.log' 2>&1",
                       RV_BIN, fixture_path("e2e/semantic_fpn/checkpoint.pth"), tmpdir, tmpdir),
                   0);
  char p[512];
  snprintf(p, sizeof p, "%s/show.jsonl", tmpdir);
  char *j = test_read_text(p);
  assert_non_null(j);
  int lines = 0;
  for (const char *c = j; *c; c++) lines += *c == '\n';
  assert_int_equal(lines, 2);
  free(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_check_fixture_e2e),  cmocka_unit_test(test_segment_photographs),
      cmocka_unit_test(test_segment_converted_same), cmocka_unit_test(test_detect_photographs),
      cmocka_unit_test(test_bad_inputs),         cmocka_unit_test(test_video_show),
  };
  return cmocka_run_group_tests_name("models_cli", tests, setup, teardown);
}
