/* The official RAVLT checkpoints (qhfan/RALA README), by name, and their cached download.
 *
 *   const rv_zoo_entry *e = rv_zoo_find("upernet-ravlt-s");         // NULL if unknown
 *   char path[4096];
 *   rv_download_opts o = {0};                                       // progress callback etc.
 *   if (rv_zoo_fetch(path, sizeof path, e, NULL, NULL, &o, ctx) == RV_OK) // fetch, convert once
 *     rv_model_load(&m, path, e->model, ctx);
 *
 * Names: classifiers "ravlt-t/s/b/l" (ImageNet-1k), "retinanet-ravlt-*", "mask-rcnn-ravlt-*"
 * (1x), "mask-rcnn-ravlt-*-3x", "cascade-mask-rcnn-ravlt-*" (3x), "semantic-fpn-ravlt-*",
 * "upernet-ravlt-*". Files come from base_url + "/" + file, the base being (first set wins)
 * the argument, env RAVLT_BASE_URL (a mirror: any URL libcurl reads, file:// too), or
 * RV_ZOO_DEFAULT_BASE. They are cached in rv_cache_dir() and converted to safetensors there.
 *
 * The README (commit 0b0b17d) publishes no UperNet checkpoint and no Semantic FPN RAVLT-L:
 * those entries have file == NULL and rv_zoo_fetch fails with a message saying so.
 */
#ifndef RV_MODELS_ZOO_H
#define RV_MODELS_ZOO_H

#include "formats/download.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RV_ZOO_DEFAULT_BASE "https://huggingface.co/aldjalkdf/RAVLT/resolve/main"

typedef enum { RV_ZOO_CLASSIFY = 0, RV_ZOO_SEGMENT, RV_ZOO_DETECT } rv_zoo_task;

typedef struct {
  const char *name;      /* zoo name, e.g. "mask-rcnn-ravlt-s-3x" */
  const char *model;     /* rv_model_load name ("mask-rcnn-ravlt-s"), or the backbone preset
                            ("ravlt-s") for classifiers */
  rv_zoo_task task;
  const char *method;    /* "ImageNet-1k", "RetinaNet 1x", "Semantic FPN 1x", ... */
  const char *file;      /* file name under the base URL; NULL: no published checkpoint */
  double params_m;       /* parameters (M), as published; 0 = not published */
  double flops_g;        /* FLOPs (G), as published; 0 = not published */
  const char *metric;    /* "top-1", "box AP", "mIoU" */
  double value;          /* published metric (%); 0 = not published */
  double mask_ap;        /* mask AP for Mask R-CNN / Cascade; 0 otherwise */
} rv_zoo_entry;

/* All entries (NULL-name terminated), and the count. */
const rv_zoo_entry *rv_zoo_entries(int *count);
const rv_zoo_entry *rv_zoo_find(const char *name);
const char *rv_zoo_task_name(rv_zoo_task t); /* "classify", "segment", "detect" */

/* The base URL in effect: base if non-NULL and non-empty, else env RAVLT_BASE_URL, else the
 * default. */
const char *rv_zoo_base_url(const char *base);
/* base + "/" + file (one slash). RV_ERR_NOTFOUND if the entry has no file. */
rv_status rv_zoo_url(char *out, size_t cap, const rv_zoo_entry *e, const char *base, rv_ctx *ctx);

/* Cached safetensors of the entry (downloaded and converted when needed; see
 * rv_checkpoint_fetch). dir: NULL = rv_cache_dir(). opts may be NULL. */
rv_status rv_zoo_fetch(char *out, size_t cap, const rv_zoo_entry *e, const char *base,
                       const char *dir, const rv_download_opts *opts, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
