/* `ravlt synth --task seg|det --out-dir DIR [--count N] [--seed S] [--size HxW] [--shapes MIN-MAX]
 *  [--backgrounds DIR|none] [--split NAME]`: a synthetic dataset in ADE20K or COCO format
 * (datasets/synth.h). */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "core/fs.h"
#include "datasets/synth.h"
#include "apps/commands.h"

#include <stddef.h>

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#define OPENCV_DATA "/usr/share/doc/opencv-doc/examples/data"

typedef struct {
  const char *task, *out_dir, *backgrounds, *split, *raw, *shapes;
  int count;
  unsigned long long seed;
  int size[2];
} synth_opts;

static const rv_opt OPTS[] = {
    {"--task", NULL, RV_OPT_CHOICE, offsetof(synth_opts, task), 0, 0, "seg|det", "T", "seg or det (required)", 0},
    {"--out-dir", "--out", RV_OPT_STR, offsetof(synth_opts, out_dir), 0, 0, NULL, "DIR", "the dataset's folder (required unless --raw)", 0},
    {"--count", NULL, RV_OPT_INT, offsetof(synth_opts, count), 1, 10000000, NULL, "N", "images", 0, "10"},
    {"--seed", NULL, RV_OPT_U64, offsetof(synth_opts, seed), 0, 0, NULL, "S",
     "random seed; use different seeds for train and val", 0, "0"},
    {"--size", NULL, RV_OPT_SIZE, offsetof(synth_opts, size), 64, 4096, NULL, "HxW",
     "image size, height first, sides 64..4096", 0, "240x320"},
    {"--shapes", NULL, RV_OPT_STR, offsetof(synth_opts, shapes), 0, 0, NULL, "MIN-MAX", "shapes per image, at most 16", 0, "2-6"},
    {"--backgrounds", NULL, RV_OPT_STR, offsetof(synth_opts, backgrounds), 0, 0, NULL, "DIR",
     "photographs (.jpg/.png) used for half of the backgrounds\n"
     "(default " OPENCV_DATA "\nif present; 'none' = textures only)", 0},
    {"--split", NULL, RV_OPT_STR, offsetof(synth_opts, split), 0, 0, NULL, "NAME", "seg sub-folder", 0, "validation"},
    {"--raw", NULL, RV_OPT_STR, offsetof(synth_opts, raw), 0, 0, NULL, "FILE",
     "instead of folders, one binary file for training tools:\n"
     "\"RVSYNTH1\", int32 n, h, w, then n*h*w*3 BGR bytes (after a JPEG\n"
     "round trip, as the .jpg files decode) and n*h*w label bytes", 0},
    RV_OPT_END};

const rv_cmd_spec rv_spec_synth = {
    "synth", "--task seg|det --out-dir DIR [--count N] [--seed S] [options]",
    "Writes a synthetic dataset: shapes of 5 classes (circle, triangle, square, hexagon,\n"
    "ellipse), each class in its own colour family (red, yellow-green, green-cyan, blue,\n"
    "magenta) with random shades and textures, occluding each other, on unsaturated textured\n"
    "or photographic backgrounds. Every image depends only on (seed, index, options).\n"
    "  seg: ADE20K layout DIR/images/SPLIT/*.jpg + DIR/annotations/SPLIT/*.png (uint8 labels:\n"
    "       1 = background, 2..6 = circle..ellipse, mmseg reduce_zero_label convention)\n"
    "  det: COCO layout DIR/images/*.jpg + DIR/annotations/instances.json (categories 1..5,\n"
    "       polygon masks of the visible parts, bbox/area of the rasterised polygons)\n",
    OPTS, 0, NULL,
    "  ravlt synth --task seg --out-dir synth_seg --count 100 --seed 1\n"
    "  ravlt synth --task det --out-dir synth_det --count 100 --seed 2 --size 480x640\n",
    sizeof(synth_opts)};

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
    int err = rv_out_errno(&out) ? rv_out_errno(&out) : EIO;
    rv_out_abort(&out);
    return st != RV_OK ? st : rv_error(ctx, RV_ERR_IO, "%s: write failed (%s)", path, strerror(err));
  }
  return rv_out_close(&out, ctx);
}

int rv_cmd_synth(int argc, char **argv) {
  rv_synth_opts o;
  rv_synth_defaults(&o);
  synth_opts so = {0}; /* the table's defaults */
  int npos;
  int prc = rv_cli_parse(&rv_spec_synth, &so, argc, argv, &npos);
  if (prc >= 0) return prc;
  const char *task = so.task, *out = so.out_dir, *bg = so.backgrounds, *raw = so.raw;
  o.count = so.count;
  o.seed = so.seed;
  o.height = so.size[0];
  o.width = so.size[1];
  o.split = so.split;
  if (so.shapes) {
    long lo, hi;
    const char *dash = strchr(so.shapes, '-');
    char a[24];
    size_t n = dash ? (size_t)(dash - so.shapes) : 0;
    if (!dash || n == 0 || n >= sizeof a) return rv_cli_usage_error("synth", "--shapes must be MIN-MAX, not '%s'", so.shapes);
    memcpy(a, so.shapes, n);
    a[n] = 0;
    if (rv_opts_parse_long(a, 1, 16, &lo) || dash[1] == '+' || dash[1] == '-' || rv_opts_parse_long(dash + 1, lo, 16, &hi))
      return rv_cli_usage_error("synth", "--shapes must be MIN-MAX with 1 <= MIN <= MAX <= 16, not '%s'", so.shapes);
    o.min_shapes = (int)lo;
    o.max_shapes = (int)hi;
  }
  if (!task || (strcmp(task, "seg") && strcmp(task, "det"))) return rv_cli_usage_error("synth", "--task seg|det is required");
  if (!out && !raw) return rv_cli_usage_error("synth", "--out-dir DIR (or --raw FILE) is required");
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
            o.task == RV_SYNTH_SEG ? "segmentation" : "detection", o.height, o.width,
            (unsigned long long)o.seed, out, raw ? "" : "/");
  rv_ctx_free(ctx);
  return rc;
}
