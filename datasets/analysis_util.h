/* Shared by the COCO and ADE20K analyses (datasets/coco_analysis.c, datasets/seg_analysis.c)
 * and the HTML report (datasets/report_html.c): JSON building helpers over cJSON and the
 * JPEG data URIs of thumbnails. */
#ifndef RV_DATASETS_ANALYSIS_UTIL_H
#define RV_DATASETS_ANALYSIS_UTIL_H

#include "core/rv.h"
#include <ravlt/image.h>

#include <cjson/cJSON.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "data:image/jpeg;base64,..." of img scaled down (INTER_AREA) so that its longest side is at
 * most max_side (never up), JPEG quality 80. *uri malloc'd. */
rv_status rv_thumb_data_uri(char **uri, const rv_image *img, int max_side, rv_ctx *ctx);
/* Base64 (RFC 4648, padded) of n bytes after prefix; malloc'd, NULL when out of memory. */
char *rv_base64(const char *prefix, const unsigned char *data, size_t n);

/* A number item written exactly (the shortest %.15g-%.17g that reads back as v), null for
 * NaN / inf. */
cJSON *rv_jnum_item(double v);
/* Adds name: number (NaN / inf become null, as cJSON prints them) and returns the item; NULL
 * when out of memory. */
cJSON *rv_jadd_num(cJSON *obj, const char *name, double v);
/* The JSON text of an nd-dimensional array (row-major, dims[nd], nd <= 8) of doubles: numbers
 * as rv_jnum_item writes them. malloc'd; NULL when out of memory. */
char *rv_jtext_num(const double *v, const size_t *dims, int nd);
/* A JSON array of n doubles / int64s (NULL when out of memory): one raw item. */
cJSON *rv_jarr_num(const double *v, size_t n);
cJSON *rv_jarr_i64(const int64_t *v, size_t n);
/* The item's number, NaN when it is null, missing, not a number or not finite. */
double rv_jnum(const cJSON *obj, const char *name);

#ifdef __cplusplus
}
#endif
#endif
