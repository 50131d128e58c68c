/* formats/image.h (OpenCV wrapper): decode/encode round trips on OpenCV's sample images,
 * label PNG rules, error cases (missing, non-image, truncated JPEG, unwritable output),
 * resize, flip, drawing primitives, video read/write; apps/draw.c overlays and
 * apps/inputs.c input lists (compiled in here: apps/ is not part of libravlt).
 * Sample images: /usr/share/doc/opencv-doc/examples/data (package opencv-doc, installed
 * by scripts/install-deps.sh). Small crafted PNGs: tests/data/image (16-bit grey,
 * palette, 8-bit grey 7x5 with values (37x+11y) mod 256, RGB, a text file). */
#define _GNU_SOURCE
#include "test_util.h"
#include "formats/image.h"
#include "formats/imghdr.h"
#include "datasets/classes.h"

#include "apps/draw.c"
#include "apps/inputs.c"

#include <unistd.h>

#define SAMPLES "/usr/share/doc/opencv-doc/examples/data"

static char tmpdir[256];

static int setup(void **state) {
  (void)state;
  rv_image_set_opencv_log_level(0);
  snprintf(tmpdir, sizeof tmpdir, "/tmp/rv_test_image_XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[512];
  if (getenv("RV_KEEP_TEST_OUTPUT")) {
    fprintf(stderr, "test outputs kept in %s\n", tmpdir);
    return 0;
  }
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

static const char *tmp_path(const char *name) {
  static char buf[4][512];
  static int slot;
  slot = (slot + 1) & 3;
  snprintf(buf[slot], sizeof buf[slot], "%s/%s", tmpdir, name);
  return buf[slot];
}

static int images_equal(const rv_image *a, const rv_image *b) {
  return a->h == b->h && a->w == b->w && a->c == b->c &&
         memcmp(a->data, b->data, (size_t)a->h * a->w * a->c) == 0;
}

static int write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(p, 1, n, f);
  fclose(f);
  return w == n ? 0 : -1;
}

/* log hook that counts warnings */
static void count_warn(void *user, rv_log_level lvl, const char *msg) {
  (void)msg;
  if (lvl == RV_LOG_WARN) (*(int *)user)++;
}

static void test_read_write_samples(void **state) {
  (void)state;
  static const char *const names[] = {"fruits.jpg", "messi5.jpg", "baboon.jpg", "smarties.png",
                                      "opencv-logo.png", "chessboard.png"};
  rv_ctx *ctx = rv_ctx_create();
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char src[512];
    snprintf(src, sizeof src, "%s/%s", SAMPLES, names[i]);
    rv_image img = {0}, small = {0}, back = {0}, dec = {0};
    assert_int_equal(rv_image_read(src, &img, ctx), RV_OK);
    assert_int_equal(img.c, 3);
    assert_true(img.h > 16 && img.w > 16);
    /* decode from memory = decode from file */
    size_t n;
    unsigned char *bytes = (unsigned char *)test_read_file(src, &n);
    assert_non_null(bytes);
    assert_int_equal(rv_image_decode(bytes, n, names[i], &dec, ctx), RV_OK);
    assert_true(images_equal(&img, &dec));
    free(bytes);
    /* resize (odd size), PNG round trip is lossless */
    assert_int_equal(rv_image_resize(&small, &img, img.w / 3 + 1, img.h / 2 + 1, RV_INTERP_LINEAR, ctx), RV_OK);
    assert_int_equal(small.w, img.w / 3 + 1);
    assert_int_equal(small.h, img.h / 2 + 1);
    const char *out = tmp_path("roundtrip.png");
    assert_int_equal(rv_image_write(out, &small, ctx), RV_OK);
    assert_int_equal(rv_image_read(out, &back, ctx), RV_OK);
    assert_true(images_equal(&small, &back));
    /* JPEG round trip: close, not exact */
    const char *outj = tmp_path("roundtrip.jpg");
    assert_int_equal(rv_image_write(outj, &small, ctx), RV_OK);
    assert_int_equal(rv_image_read(outj, &back, ctx), RV_OK);
    assert_int_equal(back.w, small.w);
    double mad = 0;
    for (size_t k = 0; k < (size_t)small.h * small.w * 3; k++) mad += abs((int)small.data[k] - (int)back.data[k]);
    mad /= (double)small.h * small.w * 3;
    assert_true(mad < 6.0);
    rv_image_free(&img);
    rv_image_free(&small);
    rv_image_free(&back);
    rv_image_free(&dec);
  }
  /* no temp files left behind */
  rv_input_list l;
  assert_int_equal(rv_inputs_collect(&l, (char *const[]){tmpdir}, 1, 0, ctx), RV_OK);
  assert_int_equal(l.n, 2); /* roundtrip.png, roundtrip.jpg */
  rv_input_list_free(&l);
  rv_ctx_free(ctx);
}

/* EXIF orientation is applied (like cv2.imread / mmcv.imfrombytes with flag 'color'):
 * insert an APP1 Exif segment with Orientation = 6 (rotate 90 degrees clockwise). */
static void test_exif_orientation(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  size_t n;
  unsigned char *jpg = (unsigned char *)test_read_file(SAMPLES "/HappyFish.jpg", &n);
  assert_non_null(jpg);
  static const unsigned char app1[] = {
      0xFF, 0xE1, 0x00, 0x22, 'E', 'x', 'i', 'f', 0, 0,             /* APP1, length 34 */
      'M', 'M', 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08,                 /* TIFF big-endian */
      0x00, 0x01,                                                   /* 1 IFD entry */
      0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06, 0x00, 0x00, /* Orientation 6 */
      0x00, 0x00, 0x00, 0x00};                                      /* no next IFD */
  unsigned char *rot = malloc(n + sizeof app1);
  memcpy(rot, jpg, 2); /* SOI */
  memcpy(rot + 2, app1, sizeof app1);
  memcpy(rot + 2 + sizeof app1, jpg + 2, n - 2);
  rv_image a = {0}, b = {0};
  assert_int_equal(rv_image_decode(jpg, n, "plain", &a, ctx), RV_OK);
  assert_int_equal(rv_image_decode(rot, n + sizeof app1, "rotated", &b, ctx), RV_OK);
  assert_int_equal(b.w, a.h);
  assert_int_equal(b.h, a.w);
  /* clockwise: b(y, x) = a(h-1-x, y) */
  assert_memory_equal(rv_image_px(&b, 5, 7), rv_image_px(&a, a.h - 1 - 7, 5), 3);
  free(jpg);
  free(rot);
  rv_image_free(&a);
  rv_image_free(&b);
  rv_ctx_free(ctx);
}

static void test_resize_interpolations(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  /* 2x2 checker upscaled: nearest keeps values, linear at the centre is the mean. */
  rv_image src = {0}, dst = {0};
  assert_int_equal(rv_image_alloc(&src, 2, 2, 1, ctx), RV_OK);
  src.data[0] = 0; src.data[1] = 200; src.data[2] = 100; src.data[3] = 40;
  assert_int_equal(rv_image_resize(&dst, &src, 4, 4, RV_INTERP_NEAREST, ctx), RV_OK);
  assert_int_equal(dst.data[0], 0);
  assert_int_equal(dst.data[3], 200);
  assert_int_equal(dst.data[15], 40);
  /* cv2 INTER_LINEAR 2->4: src x = (dx+0.5)/2-0.5 -> 0.25 for dx=1: 0*0.75+200*0.25 = 50 */
  assert_int_equal(rv_image_resize(&dst, &src, 4, 4, RV_INTERP_LINEAR, ctx), RV_OK);
  assert_int_equal(dst.data[0], 0);
  assert_int_equal(dst.data[1], 50);
  assert_int_equal(dst.data[2], 150);
  /* area downscale 4->2 averages 2x2 blocks */
  rv_image big = {0};
  assert_int_equal(rv_image_alloc(&big, 4, 4, 3, ctx), RV_OK);
  for (int k = 0; k < 48; k++) big.data[k] = (unsigned char)(k * 5);
  assert_int_equal(rv_image_resize(&dst, &big, 2, 2, RV_INTERP_AREA, ctx), RV_OK);
  /* block (0,0) channel 0: pixels (0,0),(0,1),(1,0),(1,1) -> k = 0,3,12,15 -> mean 7.5*5 */
  assert_int_equal(dst.data[0], (0 + 15 + 60 + 75 + 2) / 4);
  /* bad arguments */
  assert_int_equal(rv_image_resize(&dst, &big, 0, 3, RV_INTERP_LINEAR, ctx), RV_ERR_ARG);
  assert_int_equal(rv_image_resize(&big, &big, 3, 3, RV_INTERP_LINEAR, ctx), RV_ERR_ARG);
  rv_image empty = {0};
  assert_int_equal(rv_image_resize(&dst, &empty, 3, 3, RV_INTERP_LINEAR, ctx), RV_ERR_ARG);
  /* results do not depend on OpenCV's thread count */
  rv_image photo = {0}, r1 = {0}, r2 = {0};
  assert_int_equal(rv_image_read(SAMPLES "/baboon.jpg", &photo, ctx), RV_OK);
  rv_image_set_opencv_threads(1);
  assert_int_equal(rv_image_resize(&r1, &photo, 1333, 997, RV_INTERP_LINEAR, ctx), RV_OK);
  rv_image_set_opencv_threads(0);
  assert_int_equal(rv_image_resize(&r2, &photo, 1333, 997, RV_INTERP_LINEAR, ctx), RV_OK);
  assert_true(images_equal(&r1, &r2));
  rv_image_free(&photo);
  rv_image_free(&r1);
  rv_image_free(&r2);
  /* flip */
  rv_image f = {0};
  assert_int_equal(rv_image_flip(&f, &big, 1, ctx), RV_OK);
  assert_memory_equal(rv_image_px(&f, 1, 0), rv_image_px(&big, 1, 3), 3);
  assert_int_equal(rv_image_flip(&f, &f, 1, ctx), RV_OK);
  assert_true(images_equal(&f, &big));
  assert_int_equal(rv_image_flip(&f, &big, 0, ctx), RV_OK);
  assert_memory_equal(rv_image_px(&f, 0, 2), rv_image_px(&big, 3, 2), 3);
  rv_image_swap_rb(&f);
  assert_int_equal(rv_image_px(&f, 0, 2)[0], rv_image_px(&big, 3, 2)[2]);
  rv_image_free(&src);
  rv_image_free(&dst);
  rv_image_free(&big);
  rv_image_free(&f);
  rv_ctx_free(ctx);
}

static void test_label_png(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_image lab = {0}, back = {0};
  assert_int_equal(rv_image_read_gray(data_path("image/label8.png"), &lab, ctx), RV_OK);
  assert_int_equal(lab.c, 1);
  assert_int_equal(lab.w, 7);
  assert_int_equal(lab.h, 5);
  for (int y = 0; y < 5; y++)
    for (int x = 0; x < 7; x++) assert_int_equal(lab.data[y * 7 + x], (x * 37 + y * 11) % 256);
  /* write a label map and read it back bit-exact */
  const char *out = tmp_path("label.png");
  assert_int_equal(rv_image_write(out, &lab, ctx), RV_OK);
  assert_int_equal(rv_image_read_gray(out, &back, ctx), RV_OK);
  assert_true(images_equal(&lab, &back));
  /* rejected: 16-bit, palette, RGB */
  assert_int_equal(rv_image_read_gray(data_path("image/grey16.png"), &back, ctx), RV_ERR_UNSUPPORTED);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "16-bit"));
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "grey16.png"));
  assert_int_equal(rv_image_read_gray(data_path("image/palette.png"), &back, ctx), RV_ERR_UNSUPPORTED);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "palette"));
  assert_int_equal(rv_image_read_gray(data_path("image/rgb8.png"), &back, ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "3 channels"));
  /* as colour images these all decode (IMREAD_COLOR converts) */
  assert_int_equal(rv_image_read(data_path("image/grey16.png"), &back, ctx), RV_OK);
  assert_int_equal(back.c, 3);
  /* 16-bit -> 8-bit is >> 8: pixel (x=1,y=0) = 9000 -> 35 */
  assert_int_equal(rv_image_px(&back, 0, 1)[0], 9000 >> 8);
  assert_int_equal(rv_image_read(data_path("image/palette.png"), &back, ctx), RV_OK);
  /* index (0+0)%4 = 0 -> RGB (255,0,0) -> BGR */
  assert_int_equal(back.data[0], 0);
  assert_int_equal(back.data[2], 255);
  rv_image_free(&lab);
  rv_image_free(&back);
  rv_ctx_free(ctx);
}

/* --max-pixels for every format imdecode reads (issue 43): a tiny file declaring a
 * 12000x12000 image (tools/make_image_bombs.py, tests/data/image/bombs) is refused from its
 * header, naming the format, before a decoder allocates; the header reader gives the sides
 * of real files in every format OpenCV writes (the decoded size), and a limit of w*h-1
 * refuses them while w*h accepts them; a format whose size cannot be read is not decoded. */
static void test_pixel_limit_every_format(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_image img = {0};
  static const char *const bombs[] = {
      "bomb.png", "bomb.jpg", "bomb.bmp", "bomb_core.bmp", "bomb_vp8.webp", "bomb_vp8l.webp", "bomb_vp8x.webp",
      "bomb.pbm", "bomb.pgm", "bomb.ppm", "bomb.pam", "bomb.pfm", "bomb.ras", "bomb.hdr", "bomb_le.tif",
      "bomb_be.tif", "bomb_big.tif", "bomb.j2k", "bomb.jp2", "bomb.exr"};
  for (size_t i = 0; i < sizeof bombs / sizeof *bombs; i++) {
    char rel[128];
    snprintf(rel, sizeof rel, "image/bombs/%s", bombs[i]);
    const char *path = data_path(rel);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char buf[512];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    rv_imghdr h;
    rv_imghdr_result r = rv_imghdr_read(&h, buf, n);
    if (r != RV_IMGHDR_OK || h.width != 12000 || h.height != 12000)
      fprintf(stderr, "%s: result %d, %s %lldx%lld (%s)\n", bombs[i], (int)r, h.format ? h.format : "-", h.width,
              h.height, h.error ? h.error : "");
    assert_int_equal(r, RV_IMGHDR_OK);
    assert_true(h.width == 12000 && h.height == 12000);
    rv_status st = rv_image_read(path, &img, ctx);
    if (st != RV_ERR_UNSUPPORTED || !strstr(rv_ctx_errmsg(ctx), "over the limit"))
      fprintf(stderr, "%s: %s\n", bombs[i], rv_ctx_errmsg(ctx));
    assert_int_equal(st, RV_ERR_UNSUPPORTED);
    assert_non_null(strstr(rv_ctx_errmsg(ctx), "over the limit"));
    assert_non_null(strstr(rv_ctx_errmsg(ctx), h.format));
    assert_null(img.data);
    /* cut short inside the header: refused as unreadable, never decoded */
    for (size_t cut = 4; cut + 1 < n && cut < 40; cut += 3) {
      r = rv_imghdr_read(&h, buf, cut);
      if (r == RV_IMGHDR_OK) continue; /* the sides come before the cut */
      assert_int_equal(rv_image_decode(buf, cut, "cut", &img, ctx), RV_ERR_FORMAT);
      assert_null(img.data);
    }
  }
  /* real files in every format OpenCV writes here: the header's size is the decoded size */
  static const char *const exts[] = {".png", ".jpg", ".bmp", ".webp", ".tif", ".jp2", ".ppm", ".pgm", ".pbm",
                                     ".pam", ".pfm", ".ras", ".hdr"};
  rv_image src = {0}, grey = {0};
  assert_int_equal(rv_image_alloc(&src, 41, 67, 3, ctx), RV_OK);
  assert_int_equal(rv_image_alloc(&grey, 41, 67, 1, ctx), RV_OK);
  for (size_t i = 0; i < src.h * (size_t)src.w * 3; i++) src.data[i] = (unsigned char)(i * 7);
  for (size_t i = 0; i < grey.h * (size_t)grey.w; i++) grey.data[i] = (unsigned char)(i * 5);
  for (size_t i = 0; i < sizeof exts / sizeof *exts; i++) {
    char name[32];
    snprintf(name, sizeof name, "real%s", exts[i]);
    const char *path = tmp_path(name);
    const int one = !strcmp(exts[i], ".pgm") || !strcmp(exts[i], ".pbm"); /* grey formats */
    rv_status st = rv_image_write(path, one ? &grey : &src, ctx);
    if (st != RV_OK) fprintf(stderr, "%s: %s\n", exts[i], rv_ctx_errmsg(ctx));
    assert_int_equal(st, RV_OK);
    FILE *f = fopen(path, "rb");
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    rv_imghdr h;
    assert_int_equal(rv_imghdr_read(&h, buf, n), RV_IMGHDR_OK);
    if (h.width != 67 || h.height != 41) fprintf(stderr, "%s: header %lldx%lld\n", exts[i], h.width, h.height);
    assert_true(h.width == 67 && h.height == 41);
    rv_ctx_set_max_pixels(ctx, 67 * 41 - 1);
    st = rv_image_read(path, &img, ctx);
    assert_int_equal(st, RV_ERR_UNSUPPORTED);
    assert_non_null(strstr(rv_ctx_errmsg(ctx), "over the limit"));
    rv_ctx_set_max_pixels(ctx, 67 * 41);
    st = rv_image_read(path, &img, ctx);
    if (st != RV_OK) fprintf(stderr, "%s: %s\n", exts[i], rv_ctx_errmsg(ctx));
    assert_int_equal(st, RV_OK);
    assert_true(img.w == 67 && img.h == 41);
    rv_image_free(&img);
    rv_ctx_set_max_pixels(ctx, 0);
  }
  rv_image_free(&src);
  rv_image_free(&grey);
  /* an unknown format is not handed to a decoder */
  assert_int_equal(rv_image_decode("GIF89a\x01\x00\x01\x00\x00\x00\x00", 13, "x.gif", &img, ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "not an image format"));
  rv_ctx_free(ctx);
}

static void test_read_errors(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_image img = {0};
  assert_int_equal(rv_image_read("/nonexistent/photo.jpg", &img, ctx), RV_ERR_IO);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "/nonexistent/photo.jpg"));
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "no such file"));
  assert_null(img.data);
  assert_int_equal(rv_image_read(tmpdir, &img, ctx), RV_ERR_IO);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "directory"));
  assert_int_equal(rv_image_read(data_path("image/not_an_image.png"), &img, ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "not an image format"));
  const char *empty = tmp_path("empty.jpg");
  assert_int_equal(write_bytes(empty, "", 0), 0);
  assert_int_equal(rv_image_read(empty, &img, ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "empty"));
  assert_int_equal(rv_image_decode("abc", 3, "mem", &img, ctx), RV_ERR_FORMAT);
  assert_int_equal(rv_image_decode(NULL, 0, "mem", &img, ctx), RV_ERR_ARG);
  /* a malformed DICOM file (found by fuzz_image): OpenCV's GDCM reader asserts (aborts) on
   * it; refused before decoding, with a message naming the file. A JPEG that happens to
   * carry "DICM" at offset 128 still decodes (below, with the fruits sample). */
  assert_int_equal(rv_image_read(data_path("image/dicom_fuzz.dcm"), &img, ctx), RV_ERR_UNSUPPORTED);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "dicom_fuzz.dcm"));
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "DICOM"));
  assert_null(img.data);

  /* Truncated JPEGs: OpenCV (libjpeg-turbo) decodes what is there and fills the rest
   * with grey; we return the image and log a warning. Header-only data fails. */
  size_t n;
  unsigned char *jpg = (unsigned char *)test_read_file(SAMPLES "/fruits.jpg", &n);
  assert_non_null(jpg);
  rv_image full = {0};
  assert_int_equal(rv_image_decode(jpg, n, "fruits", &full, ctx), RV_OK);
  {
    unsigned char *dj = malloc(n);
    memcpy(dj, jpg, n);
    memcpy(dj + 128, "DICM", 4); /* inside the JPEG's headers: at worst a corrupt JPEG */
    rv_image t = {0};
    rv_status sd = rv_image_decode(dj, n, "dicm-in-jpeg", &t, ctx);
    assert_true(sd == RV_OK || sd == RV_ERR_FORMAT); /* the JPEG decoder's verdict */
    rv_image_free(&t);
    free(dj);
  }
  int warns = 0;
  rv_ctx_set_log(ctx, count_warn, &warns);
  const char *half = tmp_path("half.jpg");
  assert_int_equal(write_bytes(half, jpg, n / 2), 0);
  assert_int_equal(rv_image_read(half, &img, ctx), RV_OK);
  assert_int_equal(warns, 1);
  assert_int_equal(img.w, full.w);
  assert_int_equal(img.h, full.h);
  /* the first rows decoded exactly */
  assert_memory_equal(img.data, full.data, (size_t)full.w * 3 * 8);
  warns = 0;
  assert_int_equal(rv_image_decode(jpg, n, "fruits", &img, ctx), RV_OK);
  assert_int_equal(warns, 0);
  const char *hdr = tmp_path("header.jpg");
  assert_int_equal(write_bytes(hdr, jpg, 200), 0);
  assert_int_equal(rv_image_read(hdr, &img, ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "header.jpg"));
  /* corrupt bytes in the middle: no crash, some result */
  unsigned char *bad = malloc(n);
  memcpy(bad, jpg, n);
  for (size_t k = n / 3; k < n / 3 + 64; k++) bad[k] = (unsigned char)(k * 7);
  rv_status st = rv_image_decode(bad, n, "corrupt", &img, ctx);
  assert_true(st == RV_OK || st == RV_ERR_FORMAT);
  free(bad);
  free(jpg);
  rv_image_free(&full);
  rv_image_free(&img);
  rv_ctx_free(ctx);
}

static void test_write_errors(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_image img = {0};
  assert_int_equal(rv_image_alloc(&img, 4, 5, 3, ctx), RV_OK);
  assert_int_equal(rv_image_write("/nonexistent/dir/out.png", &img, ctx), RV_ERR_IO);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "/nonexistent/dir/out.png"));
  /* parent is a regular file */
  const char *file = tmp_path("plain.txt");
  assert_int_equal(write_bytes(file, "x", 1), 0);
  char p[600];
  snprintf(p, sizeof p, "%s/out.png", file);
  assert_int_equal(rv_image_write(p, &img, ctx), RV_ERR_IO);
  assert_int_equal(rv_image_write(tmp_path("noext"), &img, ctx), RV_ERR_ARG);
  assert_int_equal(rv_image_write(tmp_path("x.unknownfmt"), &img, ctx), RV_ERR_ARG);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "unsupported"));
  rv_image empty = {0};
  assert_int_equal(rv_image_write(tmp_path("e.png"), &empty, ctx), RV_ERR_ARG);
  assert_false(path_exists(tmp_path("e.png")));
  /* encode to memory, decode back */
  unsigned char *buf;
  size_t len;
  img.data[7] = 99;
  assert_int_equal(rv_image_encode(&img, ".png", &buf, &len, ctx), RV_OK);
  rv_image back = {0};
  assert_int_equal(rv_image_decode(buf, len, "mem", &back, ctx), RV_OK);
  assert_true(images_equal(&img, &back));
  free(buf);
  assert_int_equal(rv_image_alloc(&img, -1, 5, 3, ctx), RV_ERR_SHAPE);
  assert_int_equal(rv_image_alloc(&img, 1 << 20, 1 << 20, 3, ctx), RV_ERR_SHAPE);
  rv_image_free(&img);
  rv_image_free(&back);
  rv_ctx_free(ctx);
}

static void test_drawing_primitives(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_image img = {0};
  assert_int_equal(rv_image_alloc(&img, 60, 80, 3, ctx), RV_OK);
  assert_int_equal(rv_draw_rect_filled(&img, 10, 10, 19, 19, rv_rgb(200, 100, 50), 1.0f, ctx), RV_OK);
  unsigned char *p = rv_image_px(&img, 15, 15);
  assert_int_equal(p[0], 50); /* BGR */
  assert_int_equal(p[2], 200);
  assert_int_equal(rv_image_px(&img, 9, 15)[2], 0);
  assert_int_equal(rv_draw_rect_filled(&img, 10, 10, 19, 19, rv_rgb(0, 0, 0), 0.5f, ctx), RV_OK);
  assert_int_equal(rv_image_px(&img, 15, 15)[2], 100);
  /* fully outside / reversed corners: clipped, no crash */
  assert_int_equal(rv_draw_rect_filled(&img, -50, -50, -10, -10, rv_rgb(255, 0, 0), 1.0f, ctx), RV_OK);
  assert_int_equal(rv_draw_rect_filled(&img, 79, 59, 70, 50, rv_rgb(255, 0, 0), 1.0f, ctx), RV_OK);
  assert_int_equal(rv_image_px(&img, 59, 79)[2], 255);
  assert_int_equal(rv_draw_rect(&img, -5, -5, 500, 500, rv_rgb(0, 255, 0), 3, ctx), RV_OK);
  assert_int_equal(rv_draw_line(&img, 0, 59, 79, 0, rv_rgb(255, 255, 255), 1, ctx), RV_OK);
  assert_int_equal(rv_draw_circle(&img, 40, 30, 5, rv_rgb(0, 0, 255), -1, ctx), RV_OK);
  assert_int_equal(rv_image_px(&img, 30, 40)[0], 255);
  assert_int_equal(rv_draw_circle(&img, 40, 30, -5, rv_rgb(0, 0, 255), -1, ctx), RV_ERR_ARG);
  int tw, th, bl;
  rv_text_size("Hello", 1.0, 2, &tw, &th, &bl);
  assert_true(tw > 50 && th > 10 && bl >= 0);
  rv_text_size("", 1.0, 1, &tw, &th, &bl);
  assert_true(tw <= 2);
  rv_image before = {0};
  assert_int_equal(rv_image_copy(&before, &img, ctx), RV_OK);
  assert_int_equal(rv_draw_text(&img, "Hi", 2, 50, 0.6, rv_rgb(255, 255, 0), 1, ctx), RV_OK);
  assert_false(images_equal(&img, &before));
  assert_int_equal(rv_draw_text(&img, NULL, 2, 50, 0.6, rv_rgb(255, 255, 0), 1, ctx), RV_ERR_ARG);
  rv_image empty = {0};
  assert_int_equal(rv_draw_rect(&empty, 0, 0, 1, 1, rv_rgb(1, 1, 1), 1, NULL), RV_ERR_ARG);
  /* grey images draw the b component */
  rv_image g = {0};
  assert_int_equal(rv_image_alloc(&g, 10, 10, 1, ctx), RV_OK);
  assert_int_equal(rv_draw_rect_filled(&g, 0, 0, 9, 9, rv_rgb(0, 0, 77), 1.0f, ctx), RV_OK);
  assert_int_equal(g.data[55], 77);
  rv_image_free(&g);
  rv_image_free(&img);
  rv_image_free(&before);
  rv_ctx_free(ctx);
}

static void test_video_read_write(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_video_reader *vr = NULL;
  assert_int_equal(rv_video_open(&vr, SAMPLES "/Megamind.avi", ctx), RV_OK);
  rv_video_info info = rv_video_get_info(vr);
  assert_true(info.width > 0 && info.height > 0);
  assert_true(info.fps > 1 && info.fps < 100);
  assert_true(info.frame_count > 10);
  assert_int_equal(info.is_camera, 0);
  rv_image frame = {0}, first = {0};
  int got = 0;
  long nread = 0;
  const char *out = tmp_path("clip.mp4");
  rv_video_writer *vw = NULL;
  assert_int_equal(rv_video_writer_open(&vw, out, info.fps, info.width / 2, info.height / 2, NULL, ctx), RV_OK);
  rv_image small = {0};
  for (;;) {
    assert_int_equal(rv_video_read(vr, &frame, &got, ctx), RV_OK);
    if (!got) break;
    assert_int_equal(frame.w, info.width);
    assert_int_equal(frame.c, 3);
    if (nread == 0) assert_int_equal(rv_image_copy(&first, &frame, ctx), RV_OK);
    if (nread < 12) {
      assert_int_equal(rv_image_resize(&small, &frame, info.width / 2, info.height / 2, RV_INTERP_AREA, ctx), RV_OK);
      assert_int_equal(rv_video_write(vw, &small, ctx), RV_OK);
    }
    nread++;
  }
  assert_int_equal(nread, rv_video_frames_read(vr));
  assert_true(labs(nread - info.frame_count) <= 2);
  /* reads after the end keep saying end-of-stream */
  assert_int_equal(rv_video_read(vr, &frame, &got, ctx), RV_OK);
  assert_int_equal(got, 0);
  rv_video_close(vr);
  /* wrong frame size is an error, not a crash */
  assert_int_equal(rv_video_write(vw, &frame, ctx), RV_ERR_SHAPE);
  assert_false(path_exists(out)); /* still a temp file */
  assert_int_equal(rv_video_writer_close(vw, ctx), RV_OK);
  assert_true(path_exists(out));
  /* read back: 12 frames of the written size, first frame close to the source */
  assert_int_equal(rv_video_open(&vr, out, ctx), RV_OK);
  info = rv_video_get_info(vr);
  assert_int_equal(info.width, first.w / 2);
  nread = 0;
  while (rv_video_read(vr, &frame, &got, ctx) == RV_OK && got) {
    if (nread == 0) {
      assert_int_equal(rv_image_resize(&small, &first, first.w / 2, first.h / 2, RV_INTERP_AREA, ctx), RV_OK);
      double mad = 0;
      for (size_t k = 0; k < (size_t)small.h * small.w * 3; k++) mad += abs((int)small.data[k] - (int)frame.data[k]);
      assert_true(mad / ((double)small.h * small.w * 3) < 8.0);
    }
    nread++;
  }
  assert_int_equal(nread, 12);
  rv_video_close(vr);
  /* tree.avi announces 444 frames but only 68 decode (OpenCV 4.6 / FFmpeg 5.1): the read
   * after the last good frame is an error naming the shortfall, not a silent end */
  assert_int_equal(rv_video_open(&vr, SAMPLES "/tree.avi", ctx), RV_OK);
  rv_status st;
  nread = 0;
  while ((st = rv_video_read(vr, &frame, &got, ctx)) == RV_OK && got) nread++;
  if (st == RV_OK) {
    assert_true(labs(nread - rv_video_get_info(vr).frame_count) <= 2); /* a fixed decoder */
  } else {
    assert_int_equal(st, RV_ERR_FORMAT);
    assert_non_null(strstr(rv_ctx_errmsg(ctx), "stream ended after"));
    assert_int_equal(got, 0);
  }
  rv_video_close(vr);
  /* errors */
  assert_int_equal(rv_video_open(&vr, "/nonexistent/clip.mp4", ctx), RV_ERR_IO);
  assert_null(vr);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "no such file"));
  assert_int_equal(rv_video_open(&vr, data_path("image/not_an_image.png"), ctx), RV_ERR_FORMAT);
  /* URLs go through FFmpeg with timeouts; a refused connection fails at once */
  assert_int_equal(rv_video_open(&vr, "http://127.0.0.1:9/none.mp4", ctx), RV_ERR_IO);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "stream unreachable"));
  assert_int_equal(rv_video_open(&vr, "file://" SAMPLES "/Megamind.avi", ctx), RV_OK);
  assert_int_equal(rv_video_get_info(vr).frame_count, -1); /* not trusted for streams */
  assert_int_equal(rv_video_read(vr, &frame, &got, ctx), RV_OK);
  assert_int_equal(got, 1);
  rv_video_close(vr);
  /* camera indices ("0") are not opened here: probing cameras loads libusb/dc1394,
   * which leak at exit under LeakSanitizer, and CI machines have no camera */
  assert_int_equal(rv_video_writer_open(&vw, tmp_path("x.unknown"), 25, 64, 48, NULL, ctx), RV_ERR_ARG);
  assert_int_equal(rv_video_writer_open(&vw, "/nonexistent/dir/x.mp4", 25, 64, 48, NULL, ctx), RV_ERR_IO);
  assert_int_equal(rv_video_writer_open(&vw, tmp_path("y.mp4"), 0, 64, 48, NULL, ctx), RV_ERR_ARG);
  assert_int_equal(rv_video_writer_open(&vw, tmp_path("y.avi"), 25, 64, 48, "MJPGX", ctx), RV_ERR_ARG);
  /* discard leaves nothing */
  assert_int_equal(rv_video_writer_open(&vw, tmp_path("z.avi"), 25, 64, 48, NULL, ctx), RV_OK);
  assert_string_equal(rv_video_writer_fourcc(vw), "MJPG");
  rv_video_writer_discard(vw);
  assert_false(path_exists(tmp_path("z.avi")));
  rv_image_free(&frame);
  rv_image_free(&first);
  rv_image_free(&small);
  rv_ctx_free(ctx);
}

/* A synthetic label map over a sample photo: overlay changes labelled pixels only (outside
 * the legend), keeps the size; the detections drawing changes mask pixels. */
static void test_draw_overlay_and_detections(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_image img = {0}, orig = {0};
  assert_int_equal(rv_image_read(SAMPLES "/fruits.jpg", &img, ctx), RV_OK);
  assert_int_equal(rv_image_copy(&orig, &img, ctx), RV_OK);
  int h = img.h, w = img.w;
  int32_t *lab = malloc(sizeof *lab * (size_t)h * w);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int k = 255; /* ignore */
      if (y > h / 2) k = x < w / 3 ? 4 : x < 2 * w / 3 ? 12 : 2; /* tree, person, sky */
      else if (x > w / 2) k = (x / 40 + y / 40) % 2 ? 21 : 0;      /* water / wall tiles */
      lab[(size_t)y * w + x] = k;
    }
  assert_int_equal(rv_draw_label_overlay(&img, lab, rv_ade20k_palette, rv_ade20k_classes, 150, 0.5f, 1, ctx), RV_OK);
  assert_int_equal(img.h, orig.h);
  assert_int_equal(img.w, orig.w);
  /* labelled pixel: (orig*0.5 + colour*0.5) truncated, like mmseg */
  int y0 = h - 5, x0 = w - 5;
  const unsigned char *a = rv_image_px(&img, y0, x0), *o = rv_image_px(&orig, y0, x0);
  assert_int_equal(a[2], (int)(o[2] * 0.5 + rv_ade20k_palette[2][0] * 0.5));
  assert_int_equal(a[0], (int)(o[0] * 0.5 + rv_ade20k_palette[2][2] * 0.5));
  /* unlabelled pixels away from the legend (bottom-left quadrant is labelled; the
   * top-left is ignore=255 but holds the legend near the corner) */
  assert_memory_equal(rv_image_px(&img, h / 2 - 2, w / 2 - 2), rv_image_px(&orig, h / 2 - 2, w / 2 - 2), 3);
  long changed = 0;
  for (int y = h / 2 + 1; y < h; y++)
    for (int x = 0; x < w; x++) changed += memcmp(rv_image_px(&img, y, x), rv_image_px(&orig, y, x), 3) != 0;
  assert_true(changed > (long)(h / 2 - 1) * w * 9 / 10);
  /* the legend changed the top-left corner (ignore pixels) */
  assert_true(memcmp(rv_image_px(&img, 12, 12), rv_image_px(&orig, 12, 12), 3) != 0);
  assert_int_equal(rv_image_write(tmp_path("overlay.png"), &img, ctx), RV_OK);
  /* label colours image */
  rv_image col = {0};
  assert_int_equal(rv_draw_label_colors(&col, lab, h, w, rv_ade20k_palette, 150, ctx), RV_OK);
  assert_int_equal(rv_image_px(&col, h - 1, w - 1)[2], rv_ade20k_palette[2][0]);
  assert_int_equal(rv_image_px(&col, 0, 0)[0], 0);
  /* argument errors */
  assert_int_equal(rv_draw_label_overlay(&img, lab, rv_ade20k_palette, NULL, 150, 1.5f, 0, ctx), RV_ERR_ARG);
  assert_int_equal(rv_draw_label_overlay(&img, NULL, rv_ade20k_palette, NULL, 150, 0.5f, 0, ctx), RV_ERR_ARG);

  /* detections with one mask */
  rv_image det = {0};
  assert_int_equal(rv_image_copy(&det, &orig, ctx), RV_OK);
  unsigned char *mask = calloc((size_t)h * w, 1);
  for (int y = 100; y < 250; y++)
    for (int x = 60; x < 200; x++)
      if ((x - 130) * (x - 130) + (y - 175) * (y - 175) < 60 * 60) mask[(size_t)y * w + x] = 1;
  rv_draw_det d[3] = {
      {50.f, 100.f, 210.f, 260.f, 0.91f, 47, mask},   /* apple */
      {300.f, 200.f, 480.f, 400.f, 0.42f, 49, NULL},  /* orange */
      {10.f, 10.f, 30.f, 30.f, 0.01f, 0, NULL},       /* below threshold: not drawn */
  };
  assert_int_equal(rv_draw_detections(&det, d, 3, rv_coco_classes, rv_coco_palette, 80, 0.3f, ctx), RV_OK);
  assert_true(memcmp(rv_image_px(&det, 175, 130), rv_image_px(&orig, 175, 130), 3) != 0); /* mask */
  assert_memory_equal(rv_image_px(&det, 20, 20), rv_image_px(&orig, 20, 20), 3);            /* thr */
  assert_memory_equal(rv_image_px(&det, 470, 10), rv_image_px(&orig, 470, 10), 3);
  assert_true(memcmp(rv_image_px(&det, 300, 300), rv_image_px(&orig, 300, 300), 3) != 0); /* box edge */
  assert_int_equal(rv_image_write(tmp_path("detections.png"), &det, ctx), RV_OK);
  /* degenerate inputs do not crash */
  rv_draw_det bad[2] = {{NAN, 0, 10, 10, 0.9f, 1, NULL}, {-1e9f, -1e9f, 1e9f, 1e9f, 0.9f, 79, NULL}};
  assert_int_equal(rv_draw_detections(&det, bad, 2, rv_coco_classes, NULL, 80, 0.3f, ctx), RV_OK);
  assert_int_equal(rv_draw_detections(&det, d, 0, NULL, NULL, 0, 0.3f, ctx), RV_OK);
  free(mask);
  free(lab);
  rv_image_free(&img);
  rv_image_free(&orig);
  rv_image_free(&det);
  rv_image_free(&col);
  rv_ctx_free(ctx);
}

static void test_inputs(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  char d[512], sub[600], p[700];
  snprintf(d, sizeof d, "%s/inputs", tmpdir);
  assert_int_equal(mkdir(d, 0755), 0);
  snprintf(sub, sizeof sub, "%s/sub", d);
  assert_int_equal(mkdir(sub, 0755), 0);
  const char *files[] = {"b.PNG", "a.jpg", "c.txt", ".hidden.jpg", "sub/d.jpeg", "z.jpg"};
  for (size_t i = 0; i < 6; i++) {
    snprintf(p, sizeof p, "%s/%s", d, files[i]);
    assert_int_equal(write_bytes(p, "x", 1), 0);
  }
  rv_input_list l;
  char *args1[] = {d};
  assert_int_equal(rv_inputs_collect(&l, args1, 1, 0, ctx), RV_OK);
  assert_int_equal(l.n, 3);
  assert_non_null(strstr(l.paths[0], "/a.jpg"));
  assert_non_null(strstr(l.paths[1], "/b.PNG"));
  assert_non_null(strstr(l.paths[2], "/z.jpg"));
  rv_input_list_free(&l);
  assert_int_equal(rv_inputs_collect(&l, args1, 1, 1, ctx), RV_OK);
  assert_int_equal(l.n, 4);
  assert_non_null(strstr(l.paths[3], "/sub/d.jpeg"));
  rv_input_list_free(&l);
  /* glob, explicit file (any extension), duplicates dropped, argument order kept */
  char g[700], z[700], c[700];
  snprintf(g, sizeof g, "%s/*.jpg", d);
  snprintf(z, sizeof z, "%s/z.jpg", d);
  snprintf(c, sizeof c, "%s/c.txt", d);
  char *args2[] = {z, g, c};
  assert_int_equal(rv_inputs_collect(&l, args2, 3, 0, ctx), RV_OK);
  assert_int_equal(l.n, 3);
  assert_non_null(strstr(l.paths[0], "/z.jpg"));
  assert_non_null(strstr(l.paths[1], "/a.jpg"));
  assert_non_null(strstr(l.paths[2], "/c.txt"));
  rv_input_list_free(&l);
  /* errors */
  char missing[700], nomatch[700];
  snprintf(missing, sizeof missing, "%s/nope.jpg", d);
  snprintf(nomatch, sizeof nomatch, "%s/*.bmp", d);
  char *a3[] = {missing};
  assert_int_equal(rv_inputs_collect(&l, a3, 1, 0, ctx), RV_ERR_IO);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "nope.jpg"));
  char *a4[] = {nomatch};
  assert_int_equal(rv_inputs_collect(&l, a4, 1, 0, ctx), RV_ERR_NOTFOUND);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "matches no file"));
  char *a5[] = {sub};
  snprintf(p, sizeof p, "%s/d.jpeg", sub);
  unlink(p);
  assert_int_equal(rv_inputs_collect(&l, a5, 1, 0, ctx), RV_ERR_NOTFOUND);
  assert_int_equal(rv_inputs_collect(&l, NULL, 0, 0, ctx), RV_ERR_ARG);
  assert_true(rv_inputs_is_image_name("x/y.JPEG"));
  assert_false(rv_inputs_is_image_name("x.jpg/y"));
  assert_false(rv_inputs_is_image_name(".png"));
  rv_ctx_free(ctx);
}

static void test_classes(void **state) {
  (void)state;
  assert_string_equal(rv_coco_classes[0], "person");
  assert_string_equal(rv_coco_classes[79], "toothbrush");
  assert_int_equal(rv_coco_category_ids[0], 1);
  assert_int_equal(rv_coco_category_ids[11], 13); /* stop sign: id 12 is unused */
  assert_int_equal(rv_coco_category_ids[79], 90);
  for (int i = 1; i < 80; i++) assert_true(rv_coco_category_ids[i] > rv_coco_category_ids[i - 1]);
  assert_int_equal(rv_coco_label_of_category(90), 79);
  assert_int_equal(rv_coco_label_of_category(12), -1);
  assert_string_equal(rv_ade20k_classes[0], "wall");
  assert_string_equal(rv_ade20k_classes[7], "bed "); /* official spelling */
  assert_string_equal(rv_ade20k_classes[149], "flag");
  assert_memory_equal(rv_ade20k_palette[0], ((unsigned char[]){120, 120, 120}), 3);
  assert_memory_equal(rv_ade20k_palette[149], ((unsigned char[]){92, 0, 255}), 3);
  assert_string_equal(rv_imagenet_classes[0], "tench, Tinca tinca");
  assert_string_equal(rv_imagenet_classes[999], "toilet tissue, toilet paper, bathroom tissue");
  for (int i = 0; i < 80; i++) {
    unsigned char c[3];
    rv_palette_color(i, c);
    assert_memory_equal(c, rv_coco_palette[i], 3);
  }
  const rv_class_set *cs = rv_class_set_find("ADE20K");
  assert_non_null(cs);
  assert_int_equal(cs->n, 150);
  assert_non_null(rv_class_set_find("coco"));
  assert_null(rv_class_set_find("voc"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_read_write_samples), cmocka_unit_test(test_resize_interpolations),
      cmocka_unit_test(test_exif_orientation),
      cmocka_unit_test(test_label_png),          cmocka_unit_test(test_read_errors),
      cmocka_unit_test(test_write_errors),       cmocka_unit_test(test_drawing_primitives),
      cmocka_unit_test(test_video_read_write),   cmocka_unit_test(test_draw_overlay_and_detections),
      cmocka_unit_test(test_inputs),             cmocka_unit_test(test_classes),
      cmocka_unit_test(test_pixel_limit_every_format),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
