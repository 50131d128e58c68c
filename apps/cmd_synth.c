/* `ravlt synth --task seg|det --out DIR [--count N] [--seed S] [--size WxH] [--shapes MIN-MAX]
 *  [--backgrounds DIR|none] [--split NAME]`: a synthetic dataset in ADE20K or COCO format
 * (datasets/synth.h). */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "core/fs.h"
#include "datasets/synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define OPENCV_DATA "/usr/share/doc/opencv-doc/examples/data"

static const char *USAGE =
    "usage: ravlt synth --task seg|det --out DIR [--count N] [--seed S] [options]\n"
    "\n"
    "Writes a synthetic dataset: shapes of 5 classes (circle, triangle, square, hexagon,\n"
    "ellipse), each class in its own colour family (red, yellow-green, green-cyan, blue,\n"
    "magenta) with random shades and textures, occluding each other, on unsaturated textured\n"
    "or photographic backgrounds. Every image depends only on (seed, index, options).\n"
    "  seg: ADE20K layout DIR/images/SPLIT/*.jpg + DIR/annotations/SPLIT/*.png (uint8 labels:\n"
    "       1 = background, 2..6 = circle..ellipse, mmseg reduce_zero_label convention)\n"
    "  det: COCO layout DIR/images/*.jpg + DIR/annotations/instances.json (categories 1..5,\n"
    "       polygon masks of the visible parts, bbox/area of the rasterised polygons)\n"
    "\n"
    "  --count N            images (default 10)\n"
    "  --seed S             random seed (default 0); use different seeds for train and val\n"
    "  --size WxH           image size (default 320x240)\n"
    "  --shapes MIN-MAX     shapes per image (default 2-6, at most 16)\n"
    "  --backgrounds DIR    photographs (.jpg/.png) used for half of the backgrounds\n"
    "                       (default " OPENCV_DATA " if present; 'none' = textures only)\n"
    "  --split NAME         seg sub-folder (default validation)\n"
    "  --raw FILE           instead of folders, one binary file for training tools:\n"
    "                       \"RVSYNTH1\", int32 n, h, w, then n*h*w*3 BGR bytes (after a JPEG\n"
    "                       round trip, as the .jpg files decode) and n*h*w label bytes\n";

/* The --raw file: written to a temporary file, then renamed (rv_out_file). */
static rv_status write_raw(const char *path, const rv_synth_opts *o, rv_ctx *ctx) {
  rv_out_file out;
  RV_TRY(rv_out_open(&out, path, ctx));
  FILE *f = out.f;
  int32_t hdr[3] = {o->count, o->height, o->width};
  int bad = fwrite("RVSYNTH1", 1, 8, f) != 8 || fwrite(hdr, sizeof hdr, 1, f) != 1;
  size_t plane = (size_t)o->width * o->height;
  unsigned char *labels = malloc(plane * (size_t)o->count);
  rv_status st = labels ? RV_OK : rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (int i = 0; i < o->count && st == RV_OK && !bad; i++) {
    rv_synth_sample s;
    st = rv_synth_generate(&s, o, i, ctx);
    if (st != RV_OK) break;
    unsigned char *jpg = NULL;
    size_t len = 0;
    rv_image dec = {0};
    st = rv_image_encode(&s.image, ".jpg", &jpg, &len, ctx);
    if (st == RV_OK) st = rv_image_decode(jpg, len, "synth", &dec, ctx);
    if (st == RV_OK) bad |= fwrite(dec.data, 1, plane * 3, f) != plane * 3;
    if (st == RV_OK) memcpy(labels + plane * (size_t)i, s.label.data, plane);
    free(jpg);
    rv_image_free(&dec);
    rv_synth_sample_free(&s);
  }
  if (st == RV_OK && !bad) bad |= fwrite(labels, 1, plane * (size_t)o->count, f) != plane * (size_t)o->count;
  free(labels);
  if (st != RV_OK || bad) {
    rv_out_abort(&out);
    return st != RV_OK ? st : rv_error(ctx, RV_ERR_IO, "%s: write failed", path);
  }
  return rv_out_close(&out, ctx);
}

int rv_cmd_synth(int argc, char **argv) {
  rv_synth_opts o;
  rv_synth_defaults(&o);
  const char *task = NULL, *out = NULL, *bg = NULL, *raw = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    if (rv_cli_is_help(a)) { fputs(USAGE, stdout); return 0; }
    else if (!strcmp(a, "--task") && has) task = argv[++i];
    else if (!strcmp(a, "--out") && has) out = argv[++i];
    else if (!strcmp(a, "--count") && has) {
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < 1 || v > 10000000) return rv_cli_usage_error("synth", "--count must be a positive integer");
      o.count = (int)v;
    } else if (!strcmp(a, "--seed") && has) {
      char *end;
      unsigned long long v = strtoull(argv[++i], &end, 10);
      if (*end || argv[i][0] == '-') return rv_cli_usage_error("synth", "--seed must be a non-negative integer");
      o.seed = v;
    } else if (!strcmp(a, "--size") && has) {
      int w, h;
      char c;
      if (sscanf(argv[++i], "%dx%d%c", &w, &h, &c) != 2) return rv_cli_usage_error("synth", "--size must be WxH");
      o.width = w;
      o.height = h;
    } else if (!strcmp(a, "--shapes") && has) {
      int lo, hi;
      char c;
      if (sscanf(argv[++i], "%d-%d%c", &lo, &hi, &c) != 2) return rv_cli_usage_error("synth", "--shapes must be MIN-MAX");
      o.min_shapes = lo;
      o.max_shapes = hi;
    } else if (!strcmp(a, "--backgrounds") && has) bg = argv[++i];
    else if (!strcmp(a, "--split") && has) o.split = argv[++i];
    else if (!strcmp(a, "--raw") && has) raw = argv[++i];
    else return rv_cli_usage_error("synth", "unknown or incomplete option '%s'", a);
  }
  if (!task || (strcmp(task, "seg") && strcmp(task, "det"))) return rv_cli_usage_error("synth", "--task must be seg or det");
  if (!out && !raw) return rv_cli_usage_error("synth", "--out DIR is required");
  o.task = !strcmp(task, "seg") ? RV_SYNTH_SEG : RV_SYNTH_DET;
  struct stat sb;
  if (!bg) o.bg_dir = stat(OPENCV_DATA, &sb) == 0 ? OPENCV_DATA : NULL;
  else o.bg_dir = strcmp(bg, "none") ? bg : NULL;
  rv_ctx *ctx = rv_cli_ctx();
  rv_status st = raw ? write_raw(raw, &o, ctx) : rv_synth_write(out, &o, ctx);
  if (raw) out = raw;
  int rc = 0;
  if (st != RV_OK) rc = rv_cli_fail(ctx, "synth", st);
  else if (!rv_cli.quiet)
    fprintf(stderr, "ravlt synth: %d %s image(s) (%dx%d, seed %llu) written to %s%s\n", o.count,
            o.task == RV_SYNTH_SEG ? "segmentation" : "detection", o.width, o.height,
            (unsigned long long)o.seed, out, raw ? "" : "/");
  rv_ctx_free(ctx);
  return rc;
}
