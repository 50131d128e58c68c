/* Input image lists for the CLI: explicit files, directories and glob patterns.
 *
 *   rv_input_list in;
 *   if (rv_inputs_collect(&in, argv + i, argc - i, 0, ctx) != RV_OK) return fail;
 *   for (int k = 0; k < in.n; k++) process(in.paths[k]);
 *   rv_input_list_free(&in);
 *
 * Each argument is expanded in order: a directory gives its image files (by extension:
 * jpg jpeg png bmp tif tiff webp ppm pgm, case-insensitive; recursively if recursive),
 * sorted by name; a pattern with * ? or [ is expanded with glob(3), sorted, and must
 * match something; anything else must be an existing file. Duplicates are dropped
 * (first occurrence kept). An empty result is an error.
 */
#ifndef RV_APPS_INPUTS_H
#define RV_APPS_INPUTS_H

#include "core/rv.h"

typedef struct {
  char **paths;
  int n;
} rv_input_list;

rv_status rv_inputs_collect(rv_input_list *out, char *const *args, int nargs, int recursive,
                            rv_ctx *ctx);
void rv_input_list_free(rv_input_list *list);
/* 1 if the file name has an image extension listed above. */
int rv_inputs_is_image_name(const char *path);

#endif
