/* Synthetic dense-prediction datasets in the real on-disk formats: convex shapes of five
 * classes (circle, triangle, square, hexagon, ellipse), overlapping each other (later shapes
 * occlude earlier ones) on procedural textures or photographs.
 *
 * Each class has a colour family as well as a shape, so that a small model trained for
 * minutes on one CPU core can learn the task (with random colours only geometry told the
 * classes apart, and the demo model reached 38 mIoU): shapes of class c take HSV hues within
 * +-0.3 of c * 6/5 (hue in [0, 6): circle red, triangle yellow-green, square green-cyan,
 * hexagon blue, ellipse magenta), saturation 0.55..1, value 0.5..1; their pattern (flat,
 * stripes, gradient, checks, random period and angle) mixes that colour with a darker shade
 * of the same family, plus +-10 per-channel noise. Backgrounds stay unsaturated: textures
 * (waves, checkerboards, value noise) at saturation <= 0.3, photographs with their chroma
 * scaled by 0.4 towards grey. Images are written as JPEG (q95).
 *
 *   rv_synth_opts o;
 *   rv_synth_defaults(&o);
 *   o.task = RV_SYNTH_DET; o.count = 50; o.seed = 7;
 *   o.bg_dir = "/usr/share/doc/opencv-doc/examples/data";    // optional photo backgrounds
 *   if (rv_synth_write("synth_det", &o, ctx) != RV_OK) ...;
 *
 * Segmentation (ADE20K layout): OUT/images/<split>/synth_NNNNNN.jpg and
 * OUT/annotations/<split>/synth_NNNNNN.png, uint8 label PNGs with mmseg's reduce_zero_label
 * convention: 0 = ignored (never written), 1 = background, 2..6 = the shape classes
 * (class index k-1 = rv_synth_class_name(k-1), index 0 "background").
 * Detection (COCO): OUT/images/synth_NNNNNN.jpg and OUT/annotations/instances.json with
 * categories 1..5 (the shape classes), one annotation per visible shape: "segmentation" is a
 * list of polygons tracing its visible part (rasterised by pycocotools / rv_rle_from_poly),
 * "bbox" and "area" are those of that rasterised mask, "iscrowd" 0.
 *
 * Every image is a pure function of (seed, index, options): a set can be regenerated, and
 * two seeds give independent sets (train / validation). Shapes keep at least 45% of their
 * area visible and at least 250 pixels.
 */
#ifndef RV_DATASETS_SYNTH_H
#define RV_DATASETS_SYNTH_H

#include "formats/image.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { RV_SYNTH_SEG = 0, RV_SYNTH_DET } rv_synth_task;

#define RV_SYNTH_SHAPES 5 /* shape classes; segmentation adds "background" as class 0 */

typedef struct {
  rv_synth_task task;
  int count;              /* images */
  uint64_t seed;
  int width, height;      /* image size (default 320x240) */
  int min_shapes, max_shapes; /* per image (default 2..6) */
  const char *bg_dir;     /* .jpg/.png photographs for backgrounds; NULL: textures only */
  const char *split;      /* segmentation sub-folder (default "validation") */
} rv_synth_opts;

void rv_synth_defaults(rv_synth_opts *o);

/* Segmentation class names: 0 "background", 1..5 the shapes. */
const char *rv_synth_class_name(int i);

/* One sample in memory. */
typedef struct {
  rv_image image;   /* BGR */
  rv_image label;   /* 1 channel, segmentation values as in the files (1..6) */
  int n;            /* shapes */
  int cls[16];      /* shape class 0..4 (COCO category cls+1) */
  int *ids;         /* h*w: index of the visible shape per pixel, -1 background */
} rv_synth_sample;

rv_status rv_synth_generate(rv_synth_sample *s, const rv_synth_opts *o, int index, rv_ctx *ctx);
void rv_synth_sample_free(rv_synth_sample *s);

/* Visible part of shape j of a sample as COCO polygons: *xy holds all vertices
 * (x0,y0,x1,y1,...), parts[p] the vertex count of part p (both malloc'd). */
rv_status rv_synth_polygons(const rv_synth_sample *s, int j, double **xy, int **parts, int *n_parts,
                            rv_ctx *ctx);

/* Write the dataset (folders created; files written through temporaries). */
rv_status rv_synth_write(const char *out_dir, const rv_synth_opts *o, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
