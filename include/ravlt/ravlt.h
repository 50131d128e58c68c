/* ravlt: RAVLT dense prediction (semantic segmentation, detection, instance segmentation)
 * on CPUs with the official numerics, and COCO / ADE20K evaluation. The stable public API.
 *
 *   #include <ravlt/ravlt.h>
 *   // cc prog.c $(pkg-config --cflags --libs ravlt)
 *
 *   rv_ctx *ctx = rv_ctx_create();
 *   rv_arena *arena = rv_arena_create(0);
 *   rv_model *m = NULL;
 *   rv_image img = {0};
 *   if (rv_model_load(&m, "upernet_ravlt_s.pth", NULL, ctx) != RV_OK ||
 *       rv_image_read("photo.jpg", &img, ctx) != RV_OK) {
 *     fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx));
 *     return 1;
 *   }
 *   int32_t *labels = malloc(sizeof *labels * img.h * img.w);
 *   if (rv_model_task(m) == RV_TASK_SEGMENT &&
 *       rv_model_segment(m, labels, &img, NULL, arena, ctx) == RV_OK)
 *     printf("pixel (0,0): %s\n", rv_model_class_name(m, labels[0]));
 *   free(labels); rv_image_free(&img); rv_model_free(m);
 *   rv_arena_free(arena); rv_ctx_free(ctx);
 *
 * Headers: <ravlt/core.h> statuses, context, arena; <ravlt/image.h> images;
 * <ravlt/model.h> checkpoints, segment, detect; <ravlt/eval.h> COCO AP, RLE masks, mIoU;
 * <ravlt/analysis.h> error analysis and the HTML report;
 * <ravlt/classes.h> built-in class names; <ravlt/tile.h> large images (tiled detection and
 * segmentation); <ravlt/version.h> versions; <ravlt/pyapi.h>
 * (not included here) the flat entry points of the Python package.
 * Every function returning rv_status leaves a one-line message in the context on error;
 * the library never prints and never exits.
 */
#ifndef RAVLT_RAVLT_H
#define RAVLT_RAVLT_H

#include <ravlt/core.h>
#include <ravlt/version.h>
#include <ravlt/image.h>
#include <ravlt/model.h>
#include <ravlt/eval.h>
#include <ravlt/analysis.h>
#include <ravlt/classes.h>
#include <ravlt/tile.h>

#endif
