/* Visualisations for the CLI: semantic label overlays with a legend, detections with
 * labels, scores and translucent instance masks.
 *
 *   rv_draw_label_overlay(&img, labels, rv_ade20k_palette, rv_ade20k_classes, 150,
 *                         0.5f, 1, ctx);                       // in place, BGR image
 *   rv_draw_detections(&img, dets, n, rv_coco_classes, rv_coco_palette, 80, 0.3f, ctx);
 *
 * Palettes are RGB (as the dataset tables); images BGR.
 */
#ifndef RV_APPS_DRAW_H
#define RV_APPS_DRAW_H

#include "eval/rle.h"
#include "formats/image.h"

/* Blend the colour of each pixel's class over img (3 channels, labels img->h x img->w):
 * px = px*(1-opacity) + palette[label]*opacity, like mmseg show_result (opacity 0.5).
 * Labels outside [0, n_classes) (e.g. 255 = ignore) are left as they are. With legend=1 a
 * box listing the classes present (by pixel share, largest first, with swatches) is
 * drawn in the top-left corner. names may be NULL (then "class k"). */
rv_status rv_draw_label_overlay(rv_image *img, const int32_t *labels, const unsigned char (*palette)[3],
                                const char *const *names, int n_classes, float opacity,
                                int legend, rv_ctx *ctx);
/* The label map alone as a colour image (BGR), same size; out-of-range labels black. */
rv_status rv_draw_label_colors(rv_image *out, const int32_t *labels, int h, int w,
                               const unsigned char (*palette)[3], int n_classes, rv_ctx *ctx);

typedef struct {
  float x1, y1, x2, y2;        /* original image coordinates */
  float score;
  int label;
  const unsigned char *mask;   /* img->h x img->w, nonzero = inside; may be NULL */
  const rv_rle *rle;           /* else a COCO RLE of img->h x img->w (a tiled run's); may be NULL */
} rv_draw_det;

/* Draw detections with score >= score_thr, lowest score first so the best end on top:
 * translucent mask fill (alpha 0.45) with a contour, box, and "name 0.87" on a filled tag.
 * palette may be NULL (rv_palette_color then). */
rv_status rv_draw_detections(rv_image *img, const rv_draw_det *dets, int n,
                             const char *const *names, const unsigned char (*palette)[3],
                             int n_classes, float score_thr, rv_ctx *ctx);

#endif
