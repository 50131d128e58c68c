/* The image-run driver (apps/image_run.h) without the command line around it:
 *  - the per-image work (rv_task_*) on images in memory, as the service calls it: the demo
 *    segmentor's labels equal rv_model_segment's, the label image is labels + 1, the overlay
 *    draws; the demo detector's detections come with mmdet's class order and JSON entries;
 *    the classifier's probabilities sum to 1 with the top classes in descending order, and its
 *    JSON entry holds them;
 *  - the loop (rv_image_loop): only the shard's items run, skipped items are not run, a failed
 *    item is named and counted and the others run (keep_going), or ends the loop with its
 *    error named ("NAME: ERROR") when the run stops at the first failure;
 *  - the model options: loading without --weights gives the demo model of the task, a model
 *    of the other task is refused naming the command to use. */
#include "test_util.h"

#include "apps/image_run.h"
#include "datasets/det_json.h"

#include <fcntl.h>
#include <math.h>
#include <unistd.h>

static rv_ctx *ctx;

static int setup(void **state) {
  (void)state;
  rv_cli.quiet = 1; /* no demo notices */
  ctx = rv_ctx_create();
  return ctx ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  rv_ctx_free(ctx);
  return 0;
}

/* A 3-channel image of smooth gradients and a bright disc (something for the demo models). */
static void make_image(rv_image *img, int h, int w) {
  assert_int_equal(rv_image_alloc(img, h, w, 3, ctx), RV_OK);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int in = (x - w / 2) * (x - w / 2) + (y - h / 2) * (y - h / 2) < (h / 4) * (h / 4);
      unsigned char *p = img->data + ((size_t)y * w + x) * 3;
      p[0] = in ? 240 : (unsigned char)(x * 255 / w);
      p[1] = in ? 40 : (unsigned char)(y * 255 / h);
      p[2] = in ? 30 : 90;
    }
}

static void test_segment_task(void **state) {
  (void)state;
  rv_run_model rm;
  rv_model_opts mo = {0};
  assert_int_equal(rv_run_model_load(&rm, "test", RV_RUN_SEGMENT, "detect", &mo, ctx), RV_OK);
  assert_true(rm.demo);
  assert_int_equal(rm.num_classes, 6);
  rv_arena *arena = rv_arena_create(0);
  rv_image img = {0}, lab = {0};
  make_image(&img, 96, 128);
  int32_t *labels = NULL, *ref = malloc(sizeof *ref * 96 * 128);
  rv_seg_run_opts ro = {0};
  assert_int_equal(rv_task_segment(&rm, &img, &ro, arena, &labels, ctx), RV_OK);
  rv_arena_reset(arena);
  assert_int_equal(rv_model_segment(rm.m, ref, &img, &ro, arena, ctx), RV_OK);
  assert_memory_equal(labels, ref, sizeof *ref * 96 * 128);
  assert_int_equal(rv_task_label_image(&lab, labels, 96, 128, ctx), RV_OK);
  for (size_t p = 0; p < 96 * 128; p++) assert_int_equal(lab.data[p], labels[p] + 1);
  rv_image before = {0};
  assert_int_equal(rv_image_alloc(&before, 96, 128, 3, ctx), RV_OK);
  memcpy(before.data, img.data, (size_t)96 * 128 * 3);
  assert_int_equal(rv_task_overlay(&rm, &img, labels, 0.5f, ctx), RV_OK);
  assert_memory_not_equal(before.data, img.data, (size_t)96 * 128 * 3);
  free(labels);
  free(ref);
  rv_image_free(&img);
  rv_image_free(&lab);
  rv_image_free(&before);
  rv_arena_free(arena);
  rv_run_model_free(&rm);
}

static void test_detect_task(void **state) {
  (void)state;
  rv_run_model rm;
  rv_model_opts mo = {0};
  assert_int_equal(rv_run_model_load(&rm, "test", RV_RUN_DETECT, "segment", &mo, ctx), RV_OK);
  assert_int_equal(rm.num_classes, 5);
  rv_arena *arena = rv_arena_create(0);
  rv_image img = {0};
  make_image(&img, 240, 320);
  rv_detections det = {0};
  int *order = NULL;
  assert_int_equal(rv_task_detect(&rm, &img, arena, &det, &order, ctx), RV_OK);
  assert_true(det.n > 0);
  /* order: a permutation of the detections, by class (mmdet's bbox2result) */
  int *seen = calloc((size_t)det.n, sizeof *seen);
  for (int i = 0; i < det.n; i++) {
    assert_true(order[i] >= 0 && order[i] < det.n);
    seen[order[i]]++;
    if (i) assert_true(det.labels[order[i - 1]] <= det.labels[order[i]]);
  }
  for (int i = 0; i < det.n; i++) assert_int_equal(seen[i], 1);
  /* the JSON entries of the results file: one per detection */
  int cat[5] = {1, 2, 3, 4, 5};
  rv_det_json *dj = rv_det_json_create(0);
  assert_int_equal(rv_det_json_add(dj, 7, &det, order, cat, ctx), RV_OK);
  assert_int_equal((int)rv_det_json_count(dj), det.n);
  assert_int_equal(rv_task_draw_detections(&rm, &img, &det, 0.0f, ctx), RV_OK);
  rv_det_json_free(dj);
  free(seen);
  free(order);
  rv_image_free(&img);
  rv_arena_free(arena);
  rv_run_model_free(&rm);
}

static void test_classify_task(void **state) {
  (void)state;
  rv_run_model rm;
  rv_model_opts mo = {data_path("backbone/classifier.safetensors"), NULL, NULL, 0};
  assert_int_equal(rv_run_model_load(&rm, "test", RV_RUN_CLASSIFY, NULL, &mo, ctx), RV_OK);
  const int K = rm.num_classes;
  assert_true(K > 3);
  rv_arena *arena = rv_arena_create(0);
  rv_image img = {0};
  make_image(&img, 64, 80);
  float *prob = malloc(sizeof *prob * (size_t)K);
  int *order = malloc(sizeof *order * (size_t)K);
  assert_int_equal(rv_task_classify(&rm, &img, 32, arena, prob, order, 3, ctx), RV_OK);
  double sum = 0;
  for (int c = 0; c < K; c++) sum += prob[c];
  assert_true(fabs(sum - 1.0) < 1e-5);
  for (int c = 0; c < K; c++) assert_true(prob[c] <= prob[order[0]]);
  assert_true(prob[order[0]] >= prob[order[1]] && prob[order[1]] >= prob[order[2]]);
  cJSON *e = rv_task_classify_json(&rm, "x.jpg", prob, order, 3);
  assert_non_null(e);
  assert_string_equal(cJSON_GetObjectItem(e, "image")->valuestring, "x.jpg");
  cJSON *top = cJSON_GetObjectItem(e, "top");
  assert_int_equal(cJSON_GetArraySize(top), 3);
  assert_int_equal((int)cJSON_GetObjectItem(cJSON_GetArrayItem(top, 0), "index")->valuedouble, order[0]);
  assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(top, 1), "prob")->valuedouble == (double)prob[order[1]]);
  cJSON_Delete(e);
  free(prob);
  free(order);
  rv_image_free(&img);
  rv_arena_free(arena);
  rv_run_model_free(&rm);
}

static void test_wrong_task(void **state) {
  (void)state;
  rv_run_model rm;
  rv_model_opts mo = {"demo-det", NULL, NULL, 0};
  assert_int_equal(rv_run_model_load(&rm, "test", RV_RUN_SEGMENT, "detect", &mo, ctx), RV_ERR_MODEL);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "use 'ravlt detect'"));
  rv_run_model_free(&rm);
}

/* stderr to /dev/null (the failure lines of the loop) and back */
static int quiet_stderr(void) {
  fflush(stderr);
  int fd = dup(2), nul = open("/dev/null", O_WRONLY);
  dup2(nul, 2);
  close(nul);
  return fd;
}
static void restore_stderr(int fd) {
  fflush(stderr);
  dup2(fd, 2);
  close(fd);
}

/* ---- the loop, with a fake image callback: item k "fails" when k % 4 == 1 ---- */
typedef struct {
  int ran[16];
} loop_user;

static rv_status fake_path(void *user, rv_image_run *r, size_t k, char *buf, size_t cap, rv_ctx *c) {
  (void)user, (void)r, (void)c;
  snprintf(buf, cap, "%s", data_path("image/rgb8.png"));
  (void)k;
  return RV_OK;
}

static int fake_skip(void *user, size_t k) { return k == 6; }

static void fake_name(void *user, rv_image_run *r, size_t k, const char *path, char *buf, size_t cap) {
  (void)user, (void)r, (void)path;
  snprintf(buf, cap, "item %zu", k);
}

static rv_status fake_image(void *user, rv_image_run *r, size_t k, const char *path, rv_image *img, rv_ctx *c) {
  (void)r, (void)path, (void)img;
  ((loop_user *)user)->ran[k]++;
  if (k % 4 == 1) return rv_error(c, RV_ERR_FORMAT, "bad item");
  return RV_OK;
}

static void test_loop(void **state) {
  (void)state;
  loop_user u = {{0}};
  rv_image_run r = {.cmd = "test", .n = 10, .shard = {0, 2}, .keep_going = 1, .list_failed = 1, .user = &u,
                    .path = fake_path, .skip = fake_skip, .name = fake_name, .image = fake_image};
  int fd = quiet_stderr();
  rv_status st = rv_image_loop(&r, ctx);
  restore_stderr(fd);
  assert_int_equal(st, RV_OK);
  /* shard 0/2: items 0 2 4 6 8; 6 skipped; none of them fails (k % 4 == 1 is odd) */
  for (int k = 0; k < 10; k++) assert_int_equal(u.ran[k], k % 2 == 0 && k != 6);
  assert_int_equal((int)r.done, 4);
  assert_int_equal((int)r.failed, 0);
  rv_image_run_free(&r);

  memset(&u, 0, sizeof u);
  rv_image_run r2 = {.cmd = "test", .n = 10, .shard = {1, 2}, .keep_going = 1, .list_failed = 1, .user = &u,
                     .path = fake_path, .name = fake_name, .image = fake_image};
  fd = quiet_stderr();
  st = rv_image_loop(&r2, ctx);
  restore_stderr(fd);
  assert_int_equal(st, RV_OK);
  /* items 1 3 5 7 9 run; 1, 5, 9 fail and are listed */
  assert_int_equal((int)r2.done, 2);
  assert_int_equal((int)r2.failed, 3);
  for (int k = 1; k < 10; k += 2) assert_int_equal(u.ran[k], 1);
  assert_string_equal(r2.failed_paths[0], data_path("image/rgb8.png"));
  rv_image_run_free(&r2);

  /* stop at the first failure: its error, named */
  memset(&u, 0, sizeof u);
  rv_image_run r3 = {.cmd = "test", .n = 10, .shard = {0, 1}, .user = &u, .path = fake_path, .name = fake_name,
                     .image = fake_image};
  assert_int_equal(rv_image_loop(&r3, ctx), RV_ERR_FORMAT);
  assert_string_equal(rv_ctx_errmsg(ctx), "item 1: bad item");
  assert_int_equal(u.ran[2], 0);
  assert_int_equal((int)r3.done, 1);
  rv_image_run_free(&r3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_segment_task), cmocka_unit_test(test_detect_task), cmocka_unit_test(test_classify_task),
      cmocka_unit_test(test_wrong_task),   cmocka_unit_test(test_loop),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
