/* Synthetic datasets (datasets/synth.h, `ravlt synth`): determinism, occlusion limits, labels
 * consistent with the visible shapes, COCO polygons that rasterise (rv_rle_from_poly) to the
 * visible masks, files loadable with rv_coco_load / the ADE20K layout, CLI errors.
 * RV_SYNTH_DUMP=DIR writes PNG previews with the polygons drawn. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include "formats/image.h"
#include "datasets/ade20k.h"
#include "datasets/coco.h"
#include "datasets/synth.h"
#include "eval/rle.h"

#include <sys/wait.h>
#include <unistd.h>

#define SAMPLES "/usr/share/doc/opencv-doc/examples/data"

static rv_ctx *ctx;

static void make_tmp(char *dir, size_t cap) {
  snprintf(dir, cap, "/tmp/ravlt_test_synth_XXXXXX");
  assert_non_null(mkdtemp(dir));
}

static void rm_rf(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static void test_deterministic(void **state) {
  (void)state;
  rv_synth_opts o;
  rv_synth_defaults(&o);
  o.seed = 3;
  o.bg_dir = SAMPLES;
  rv_synth_sample a, b, c;
  assert_int_equal(rv_synth_generate(&a, &o, 5, ctx), RV_OK);
  assert_int_equal(rv_synth_generate(&b, &o, 5, ctx), RV_OK);
  assert_int_equal(a.image.w, 320);
  assert_int_equal(a.image.h, 240);
  assert_memory_equal(a.image.data, b.image.data, (size_t)320 * 240 * 3);
  assert_memory_equal(a.label.data, b.label.data, (size_t)320 * 240);
  o.seed = 4;
  assert_int_equal(rv_synth_generate(&c, &o, 5, ctx), RV_OK);
  assert_true(memcmp(a.image.data, c.image.data, (size_t)320 * 240 * 3) != 0);
  rv_synth_sample_free(&a);
  rv_synth_sample_free(&b);
  rv_synth_sample_free(&c);
}

/* Labels follow the visible shapes; every shape keeps >= 250 px and occlusion happens. */
static void test_labels_and_occlusion(void **state) {
  (void)state;
  rv_synth_opts o;
  rv_synth_defaults(&o);
  o.seed = 11;
  o.width = 256;
  o.height = 192;
  int occluded = 0, shapes = 0, hist[RV_SYNTH_SHAPES] = {0};
  for (int i = 0; i < 30; i++) {
    rv_synth_sample s;
    assert_int_equal(rv_synth_generate(&s, &o, i, ctx), RV_OK);
    assert_true(s.n >= 1 && s.n <= o.max_shapes);
    int vis[16] = {0};
    for (int p = 0; p < 256 * 192; p++) {
      int id = s.ids[p];
      assert_true(id >= -1 && id < s.n);
      assert_int_equal(s.label.data[p], id < 0 ? 1 : s.cls[id] + 2);
      if (id >= 0) vis[id]++;
    }
    for (int j = 0; j < s.n; j++) {
      assert_true(vis[j] >= 250);
      hist[s.cls[j]]++;
    }
    /* occlusion: the label count of an earlier shape is below its full raster (approximate
     * check: some shape has a boundary shared with a later one) */
    for (int y = 0; y < 192; y++)
      for (int x = 1; x < 256; x++) {
        int a = s.ids[y * 256 + x - 1], b = s.ids[y * 256 + x];
        if (a >= 0 && b >= 0 && a != b) { occluded++; y = 192; break; }
      }
    shapes += s.n;
    rv_synth_sample_free(&s);
  }
  assert_true(occluded >= 10); /* of 30 images, shapes touch / overlap in many */
  assert_true(shapes >= 60);
  for (int c = 0; c < RV_SYNTH_SHAPES; c++) assert_true(hist[c] >= 5);
}

static void dump_preview(const rv_synth_sample *s, int i) {
  const char *dir = getenv("RV_SYNTH_DUMP");
  if (!dir) return;
  rv_image v = {0};
  assert_int_equal(rv_image_copy(&v, &s->image, ctx), RV_OK);
  for (int j = 0; j < s->n; j++) {
    double *xy;
    int *parts, np;
    assert_int_equal(rv_synth_polygons(s, j, &xy, &parts, &np, ctx), RV_OK);
    int off = 0;
    for (int p = 0; p < np; p++) {
      for (int k = 0; k < parts[p]; k++) {
        int k2 = (k + 1) % parts[p];
        rv_draw_line(&v, (int)xy[2 * (off + k)], (int)xy[2 * (off + k) + 1], (int)xy[2 * (off + k2)],
                     (int)xy[2 * (off + k2) + 1], rv_rgb(255, 0, 0), 1, ctx);
      }
      off += parts[p];
    }
    free(xy);
    free(parts);
  }
  char p[512];
  snprintf(p, sizeof p, "%s/preview_%d.png", dir, i);
  rv_image_write(p, &v, ctx);
  rv_image_free(&v);
}

/* Pixels where the raster of shape j's polygons (poly, column-major) and its visible mask
 * disagree away from the mask's boundary: a polygon through the boundary pixels' centres may
 * disagree on the boundary pixels (a mask pixel with an 8-neighbour outside it or outside the
 * image, an outside pixel with an 8-neighbour in it) and nowhere else, except on specks of
 * fewer than 12 pixels, which get no polygon. */
static long off_boundary(const rv_synth_sample *s, int j, const uint8_t *poly) {
  const int w = s->image.w, h = s->image.h;
  long bad = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      const int m = s->ids[y * w + x] == j, p = poly[(size_t)x * h + y] != 0;
      if (m == p) continue;
      int edge = 0, part = 0;
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
          const int nx = x + dx, ny = y + dy;
          const int in = nx >= 0 && ny >= 0 && nx < w && ny < h && s->ids[ny * w + nx] == j;
          edge |= m ? !in : in;
        }
      if (!edge && m) { /* the size of its 8-connected part (a speck: < 12), by a small flood */
        int q[12], n = 0;
        q[n++] = y * w + x;
        for (int k = 0; k < n && n < 12; k++)
          for (int d = 0; d < 9 && n < 12; d++) {
            const int nx = q[k] % w + d % 3 - 1, ny = q[k] / w + d / 3 - 1;
            if (nx < 0 || ny < 0 || nx >= w || ny >= h || s->ids[ny * w + nx] != j) continue;
            int seen = 0;
            for (int t = 0; t < n; t++) seen |= q[t] == ny * w + nx;
            if (!seen) q[n++] = ny * w + nx;
          }
        part = n;
      }
      if (!edge && (!m || part >= 12)) bad++;
    }
  return bad;
}

/* One shape's check: polygons of >= 3 points that trace its visible mask (off_boundary 0);
 * returns the IoU of their raster with the mask. */
static double check_shape(const rv_synth_sample *s, int j, uint8_t *vm, uint8_t *pm) {
  const int w = s->image.w, h = s->image.h;
  double *xy;
  int *parts, np;
  assert_int_equal(rv_synth_polygons(s, j, &xy, &parts, &np, ctx), RV_OK);
  assert_true(np >= 1);
  rv_rle r[32], m = {0}, v = {0};
  int off = 0;
  assert_true(np <= 32);
  for (int p = 0; p < np; p++) {
    assert_true(parts[p] >= 3);
    assert_int_equal(rv_rle_from_poly(&r[p], xy + 2 * off, (size_t)parts[p], (uint32_t)h, (uint32_t)w, ctx), RV_OK);
    off += parts[p];
  }
  assert_int_equal(rv_rle_merge(&m, r, (size_t)np, 0, ctx), RV_OK);
  for (int p = 0; p < w * h; p++) vm[p] = s->ids[p] == j;
  assert_int_equal(rv_rle_encode_rowmajor(&v, vm, (uint32_t)h, (uint32_t)w, ctx), RV_OK);
  rv_rle_decode(&m, pm);
  const long bad = off_boundary(s, j, pm);
  if (bad) printf("shape %d: %ld pixel(s) off the boundary\n", j, bad);
  assert_int_equal(bad, 0);
  const double iou = rv_rle_iou_pair(&m, &v, 0);
  for (int p = 0; p < np; p++) rv_rle_free(&r[p]);
  rv_rle_free(&m);
  rv_rle_free(&v);
  free(xy);
  free(parts);
  return iou;
}

/* The COCO polygons rasterise (pycocotools' rule) to the visible masks up to their boundary
 * pixels. */
static void test_polygons_match_masks(void **state) {
  (void)state;
  rv_synth_opts o;
  rv_synth_defaults(&o);
  o.seed = 21;
  o.bg_dir = SAMPLES;
  double sum = 0, worst = 1;
  int n = 0;
  uint8_t *vm = malloc(320 * 240), *pm = malloc(320 * 240);
  for (int i = 0; i < 20; i++) {
    rv_synth_sample s;
    assert_int_equal(rv_synth_generate(&s, &o, i, ctx), RV_OK);
    dump_preview(&s, i);
    for (int j = 0; j < s.n; j++) {
      const double iou = check_shape(&s, j, vm, pm);
      sum += iou;
      n++;
      if (iou < worst) worst = iou;
    }
    rv_synth_sample_free(&s);
  }
  free(vm);
  free(pm);
  printf("polygon vs visible mask IoU over %d shapes: mean %.4f, worst %.4f\n", n, sum / n, worst);
  assert_true(sum / n >= 0.95);
}

/* Every seed works (issue 42: an IoU floor of 0.85 rejected thin shapes, whose polygons
 * through the boundary pixels' centres keep 84% of them: `--count 36` failed for seeds 8786
 * and 8787, 2 of the 31 seeds 8770-8800). The two sets are written (their failing images are
 * 28 and 8); seeds 8770-8800 and a second size are swept in memory with the check above. */
static void test_every_seed(void **state) {
  (void)state;
  char dir[64];
  make_tmp(dir, sizeof dir);
  rv_synth_opts o;
  rv_synth_defaults(&o);
  o.task = RV_SYNTH_DET;
  o.bg_dir = SAMPLES;
  o.seed = 8786;
  o.count = 29;
  assert_int_equal(rv_synth_write(dir, &o, ctx), RV_OK);
  o.seed = 8787;
  o.count = 9;
  assert_int_equal(rv_synth_write(dir, &o, ctx), RV_OK);
  rm_rf(dir);
  uint8_t *vm = malloc(320 * 240), *pm = malloc(320 * 240);
  double worst = 1;
  int shapes = 0;
  for (int pass = 0; pass < 2; pass++)
    for (uint64_t seed = 8770; seed <= 8800; seed++) {
      rv_synth_defaults(&o);
      o.bg_dir = SAMPLES;
      o.seed = seed;
      if (pass) o.width = 176, o.height = 96, o.max_shapes = 9;
      for (int i = 0; i < 4; i++) {
        rv_synth_sample s;
        assert_int_equal(rv_synth_generate(&s, &o, i, ctx), RV_OK);
        for (int j = 0; j < s.n; j++, shapes++) {
          const double iou = check_shape(&s, j, vm, pm);
          if (iou < worst) worst = iou;
        }
        rv_synth_sample_free(&s);
      }
    }
  free(vm);
  free(pm);
  printf("seeds 8770-8800 at 320x240 and 176x96: %d shapes traced, worst IoU %.3f\n", shapes, worst);
}

static void test_write_seg(void **state) {
  (void)state;
  char dir[64], img[256], ann[256];
  make_tmp(dir, sizeof dir);
  rv_synth_opts o;
  rv_synth_defaults(&o);
  o.count = 4;
  o.seed = 5;
  assert_int_equal(rv_synth_write(dir, &o, ctx), RV_OK);
  assert_int_equal(rv_ade20k_layout(dir, img, ann, sizeof img, ctx), RV_OK);
  rv_name_list a = {0}, b = {0};
  assert_int_equal(rv_list_files(&a, img, ".jpg", ctx), RV_OK);
  assert_int_equal(rv_list_files(&b, ann, ".png", ctx), RV_OK);
  assert_int_equal(a.n, 4);
  assert_int_equal(b.n, 4);
  assert_string_equal(b.names[2], "synth_000002.png");
  char p[512];
  snprintf(p, sizeof p, "%s/%s", ann, b.names[2]);
  rv_image lab = {0};
  assert_int_equal(rv_image_read_gray(p, &lab, ctx), RV_OK);
  rv_synth_sample s;
  assert_int_equal(rv_synth_generate(&s, &o, 2, ctx), RV_OK);
  assert_int_equal(lab.w, 320);
  assert_memory_equal(lab.data, s.label.data, (size_t)320 * 240);
  rv_image_free(&lab);
  rv_synth_sample_free(&s);
  rv_name_list_free(&a);
  rv_name_list_free(&b);
  rm_rf(dir);
}

static void test_write_det_loads_with_coco(void **state) {
  (void)state;
  char dir[64], p[256];
  make_tmp(dir, sizeof dir);
  rv_synth_opts o;
  rv_synth_defaults(&o);
  o.task = RV_SYNTH_DET;
  o.count = 6;
  o.seed = 9;
  o.bg_dir = SAMPLES;
  assert_int_equal(rv_synth_write(dir, &o, ctx), RV_OK);
  snprintf(p, sizeof p, "%s/annotations/instances.json", dir);
  rv_coco *gt = NULL;
  assert_int_equal(rv_coco_load(&gt, p, 1, 0, ctx), RV_OK);
  assert_int_equal(gt->n_images, 6);
  assert_int_equal(gt->n_cats, 5);
  assert_string_equal(gt->cats[4].name, "ellipse");
  size_t total = 0;
  for (int i = 0; i < 6; i++) {
    rv_synth_sample s;
    assert_int_equal(rv_synth_generate(&s, &o, i, ctx), RV_OK);
    total += (size_t)s.n;
    rv_synth_sample_free(&s);
    snprintf(p, sizeof p, "%s/images/%s", dir, gt->images[i].file_name);
    assert_true(path_exists(p));
  }
  assert_int_equal(gt->n_anns, total);
  for (size_t k = 0; k < gt->n_anns; k++) {
    const rv_coco_obj *a = &gt->anns[k];
    assert_true(a->has_segm);
    assert_true(a->category_id >= 1 && a->category_id <= 5);
    assert_int_equal((double)rv_rle_area(&a->segm), a->area); /* area of the rasterised polygons */
    double bb[4];
    rv_rle_to_bbox(&a->segm, bb);
    for (int c = 0; c < 4; c++) assert_true(fabs(bb[c] - a->bbox[c]) < 1e-9);
    assert_true(a->area >= 200);
  }
  rv_coco_free(gt);
  rm_rf(dir);
}

static int run(const char *cmd) {
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_cli(void **state) {
  (void)state;
  char dir[64], cmd[1024], p[512];
  make_tmp(dir, sizeof dir);
  snprintf(cmd, sizeof cmd, "'%s' synth --task det --out-dir '%s/d' --count 3 --seed 1 --size 128x160 --shapes 1-3", RV_BIN, dir);
  assert_int_equal(run(cmd), 0);
  snprintf(p, sizeof p, "%s/d/annotations/instances.json", dir);
  assert_true(path_exists(p));
  snprintf(p, sizeof p, "%s/d/images/synth_000002.jpg", dir);
  rv_image im = {0};
  assert_int_equal(rv_image_read(p, &im, ctx), RV_OK);
  assert_int_equal(im.w, 160);
  assert_int_equal(im.h, 128);
  rv_image_free(&im);
  snprintf(cmd, sizeof cmd, "'%s' synth --task seg --out-dir '%s/s' --count 2 --split training --backgrounds none 2>/dev/null", RV_BIN, dir);
  assert_int_equal(run(cmd), 0);
  snprintf(p, sizeof p, "%s/s/annotations/training/synth_000001.png", dir);
  assert_true(path_exists(p));
  /* --raw: header, then images (JPEG round trip) and labels equal to the generator's */
  snprintf(cmd, sizeof cmd, "'%s' --quiet synth --task seg --raw '%s/r.bin' --count 2 --seed 4 --size 64x96 --backgrounds none", RV_BIN, dir);
  assert_int_equal(run(cmd), 0);
  snprintf(p, sizeof p, "%s/r.bin", dir);
  FILE *f = fopen(p, "rb");
  assert_non_null(f);
  unsigned char buf[20 + 2 * 96 * 64 * 4];
  assert_int_equal(fread(buf, 1, sizeof buf, f), sizeof buf);
  assert_int_equal(fgetc(f), EOF);
  fclose(f);
  assert_memory_equal(buf, "RVSYNTH1", 8);
  int32_t hdr[3];
  memcpy(hdr, buf + 8, sizeof hdr);
  assert_int_equal(hdr[0], 2);
  assert_int_equal(hdr[1], 64);
  assert_int_equal(hdr[2], 96);
  rv_synth_opts o;
  rv_synth_defaults(&o);
  o.seed = 4;
  o.width = 96;
  o.height = 64;
  rv_synth_sample s;
  assert_int_equal(rv_synth_generate(&s, &o, 1, ctx), RV_OK);
  assert_memory_equal(buf + 20 + 2 * 96 * 64 * 3 + 96 * 64, s.label.data, 96 * 64);
  double err = 0;
  for (int i = 0; i < 96 * 64 * 3; i++) err += fabs((double)buf[20 + 96 * 64 * 3 + i] - s.image.data[i]);
  printf("raw image vs generated: mean abs difference %.2f (JPEG q95 of noisy textures)\n", err / (96 * 64 * 3));
  assert_true(err / (96 * 64 * 3) < 10);
  rv_synth_sample_free(&s);
  /* errors */
  snprintf(cmd, sizeof cmd, "'%s' synth --task cls --out-dir '%s/x' 2>/dev/null", RV_BIN, dir);
  assert_int_equal(run(cmd), 2);
  snprintf(cmd, sizeof cmd, "'%s' synth --task seg 2>/dev/null", RV_BIN);
  assert_int_equal(run(cmd), 2);
  snprintf(cmd, sizeof cmd, "'%s' synth --task seg --out-dir '%s/x' --size 10x10 2>/dev/null", RV_BIN, dir);
  assert_int_equal(run(cmd), 2);
  snprintf(cmd, sizeof cmd, "'%s' synth --task seg --out-dir '%s/x' --backgrounds /nonexistent_dir 2>&1 | grep -q nonexistent_dir", RV_BIN, dir);
  assert_int_equal(run(cmd), 0);
  rm_rf(dir);
}

/* HSV hue in [0, 6) and saturation of a BGR pixel. */
static void bgr_hsv(const unsigned char *p, double *hue, double *sat, double *chroma) {
  double b = p[0], g = p[1], r = p[2];
  double mx = fmax(r, fmax(g, b)), mn = fmin(r, fmin(g, b)), c = mx - mn;
  *sat = mx > 0 ? c / mx : 0;
  *chroma = c / 255;
  if (c == 0) *hue = 0;
  else if (mx == r) *hue = fmod((g - b) / c + 6, 6);
  else if (mx == g) *hue = (b - r) / c + 2;
  else *hue = (r - g) / c + 4;
}

/* Colour families: shape pixels of class c are saturated with hues near c * 6/5 (HSV, band
 * +-0.3 before the +-10 per-channel noise), backgrounds (textures and the photographs, drawn
 * towards grey) have little chroma (max - min of B, G, R). */
static void test_colour_families(void **state) {
  (void)state;
  rv_synth_opts o;
  rv_synth_defaults(&o);
  o.seed = 31;
  o.bg_dir = SAMPLES;
  long in_band = 0, shape_px = 0, bg_px = 0, bg_sat = 0, shape_sat = 0;
  for (int i = 0; i < 20; i++) {
    rv_synth_sample s;
    assert_int_equal(rv_synth_generate(&s, &o, i, ctx), RV_OK);
    for (int p = 0; p < 320 * 240; p++) {
      double hue, sat, chroma;
      bgr_hsv(s.image.data + 3 * p, &hue, &sat, &chroma);
      int id = s.ids[p];
      if (id < 0) {
        bg_px++;
        bg_sat += chroma > 0.45;
        continue;
      }
      double d = fabs(hue - s.cls[id] * 6.0 / RV_SYNTH_SHAPES);
      d = fmin(d, 6 - d);
      shape_px++;
      in_band += d <= 0.45;
      shape_sat += sat >= 0.4;
    }
    rv_synth_sample_free(&s);
  }
  printf("colour families: %.2f%% of shape pixels within 0.45 of their class hue, %.2f%% with saturation >= 0.4; "
         "%.3f%% of background pixels with chroma > 0.45\n",
         100.0 * in_band / shape_px, 100.0 * shape_sat / shape_px, 100.0 * bg_sat / bg_px);
  assert_true(shape_px > 100000 && bg_px > 100000);
  assert_true(in_band >= 0.97 * shape_px);
  assert_true(shape_sat >= 0.97 * shape_px);
  assert_true(bg_sat <= 0.001 * bg_px);
}

int main(void) {
  ctx = rv_ctx_create();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_labels_and_occlusion),
      cmocka_unit_test(test_colour_families),
      cmocka_unit_test(test_polygons_match_masks),
      cmocka_unit_test(test_every_seed),
      cmocka_unit_test(test_write_seg),
      cmocka_unit_test(test_write_det_loads_with_coco),
      cmocka_unit_test(test_cli),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rv_ctx_free(ctx);
  return rc;
}
