/* Segment one image with a RAVLT checkpoint and print the classes found, with their pixel
 * counts: a small program over the installed library.
 *
 *   cc segment_classes.c -o segment_classes $(pkg-config --cflags --libs ravlt)
 *   ./segment_classes upernet_ravlt_s.pth photo.jpg
 *
 * Output: one line per class present, by class index: "INDEX<TAB>PIXELS<TAB>NAME". The index
 * is the model's class index (0..K-1); `ravlt segment` writes it + 1 into its label PNGs
 * (the ADE20K annotation convention).
 */
#include <ravlt/ravlt.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: %s CHECKPOINT IMAGE [MODEL_NAME]\n"
                    "  CHECKPOINT: an mmseg .pth or .safetensors; MODEL_NAME: e.g. upernet-ravlt-s,\n"
                    "  when the checkpoint carries no config\n", argv[0]);
    return 2;
  }
  rv_blas_init(); /* OpenBLAS's best kernels for this CPU, once at start-up */
  rv_ctx *ctx = rv_ctx_create();
  rv_arena *arena = rv_arena_create(0);
  rv_model *model = NULL;
  rv_image img = {0};
  int32_t *labels = NULL;
  size_t *count = NULL;
  int rc = 1;
  if (!ctx || !arena) { fprintf(stderr, "segment_classes: out of memory\n"); goto out; }
  if (rv_model_load(&model, argv[1], argc > 3 ? argv[3] : NULL, ctx) != RV_OK) goto fail;
  if (rv_model_task(model) != RV_TASK_SEGMENT) {
    fprintf(stderr, "segment_classes: %s is a detector (%s), not a segmentor\n", argv[1], rv_model_arch(model));
    goto out;
  }
  if (rv_image_read(argv[2], &img, ctx) != RV_OK) goto fail;
  int k = rv_model_num_classes(model);
  labels = malloc(sizeof *labels * (size_t)img.h * (size_t)img.w);
  count = calloc((size_t)k, sizeof *count);
  if (!labels || !count) { fprintf(stderr, "segment_classes: out of memory\n"); goto out; }
  if (rv_model_segment(model, labels, &img, NULL, arena, ctx) != RV_OK) goto fail;
  for (size_t p = 0; p < (size_t)img.h * (size_t)img.w; p++)
    if (labels[p] >= 0 && labels[p] < k) count[labels[p]]++;
  for (int c = 0; c < k; c++)
    if (count[c]) printf("%d\t%zu\t%s\n", c, count[c], rv_model_class_name(model, c));
  rc = 0;
  goto out;
fail:
  fprintf(stderr, "segment_classes: %s\n", rv_ctx_errmsg(ctx));
out:
  free(count);
  free(labels);
  rv_image_free(&img);
  rv_model_free(model);
  rv_arena_free(arena);
  rv_ctx_free(ctx);
  return rc;
}
