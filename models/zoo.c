/* The table of official RAVLT checkpoints and their cached download (models/zoo.h).
 *
 * Source: the qhfan/RALA README (commit 0b0b17d): names, checkpoint files on
 * huggingface.co/aldjalkdf/RAVLT, params (M), FLOPs (G) and the published metric. Detection
 * rows give box AP (and mask AP for the Mask R-CNN family), segmentation rows mIoU
 * (single scale as the README states it), classification rows ImageNet-1k top-1.
 */
#define _POSIX_C_SOURCE 200809L
#include "models/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLS RV_ZOO_CLASSIFY
#define SEG RV_ZOO_SEGMENT
#define DET RV_ZOO_DETECT

static const rv_zoo_entry ENTRIES[] = {
    /* name, model, task, method, file, params, flops, metric, value, mask AP */
    {"ravlt-t", "ravlt-t", CLS, "ImageNet-1k", "RAVLT_T.pth", 15, 2.4, "top-1", 82.8, 0},
    {"ravlt-s", "ravlt-s", CLS, "ImageNet-1k", "RAVLT_S.pth", 26, 4.6, "top-1", 84.4, 0},
    {"ravlt-b", "ravlt-b", CLS, "ImageNet-1k", "RAVLT_B.pth", 48, 9.9, "top-1", 85.5, 0},
    {"ravlt-l", "ravlt-l", CLS, "ImageNet-1k", "RAVLT_L.pth", 95, 16.0, "top-1", 85.8, 0},

    {"retinanet-ravlt-t", "retinanet-ravlt-t", DET, "RetinaNet 1x", "retinanet_t_1x_12_epoch.pth", 24, 201, "box AP", 45.9, 0},
    {"retinanet-ravlt-s", "retinanet-ravlt-s", DET, "RetinaNet 1x", "retinanet_s_1x_12_epoch.pth", 34, 244, "box AP", 48.3, 0},
    {"retinanet-ravlt-b", "retinanet-ravlt-b", DET, "RetinaNet 1x", "retinanet_b_1x_12_epoch.pth", 57, 353, "box AP", 49.8, 0},
    {"retinanet-ravlt-l", "retinanet-ravlt-l", DET, "RetinaNet 1x", "retinanet_l_1x_12_epoch.pth", 104, 482, "box AP", 50.9, 0},

    {"mask-rcnn-ravlt-t", "mask-rcnn-ravlt-t", DET, "Mask R-CNN 1x", "maskrcnn_t_1x_12_epoch.pth", 33, 219, "box AP", 47.3, 42.7},
    {"mask-rcnn-ravlt-s", "mask-rcnn-ravlt-s", DET, "Mask R-CNN 1x", "maskrcnn_s_1x_12_epoch.pth", 44, 262, "box AP", 49.8, 44.6},
    {"mask-rcnn-ravlt-b", "mask-rcnn-ravlt-b", DET, "Mask R-CNN 1x", "maskrcnn_b_1x_12_epoch.pth", 67, 372, "box AP", 51.2, 45.7},
    {"mask-rcnn-ravlt-l", "mask-rcnn-ravlt-l", DET, "Mask R-CNN 1x", "maskrcnn_l_1x_12_epoch.pth", 114, 501, "box AP", 52.3, 46.4},

    {"mask-rcnn-ravlt-s-3x", "mask-rcnn-ravlt-s", DET, "Mask R-CNN 3x", "maskrcnn_s_3x_36_epoch.pth", 44, 262, "box AP", 51.4, 45.5},
    {"mask-rcnn-ravlt-b-3x", "mask-rcnn-ravlt-b", DET, "Mask R-CNN 3x", "maskrcnn_b_3x_36_epoch.pth", 67, 372, "box AP", 52.7, 46.4},
    {"mask-rcnn-ravlt-l-3x", "mask-rcnn-ravlt-l", DET, "Mask R-CNN 3x", "maskrcnn_l_3x_36_epoch.pth", 114, 501, "box AP", 53.6, 47.3},

    {"cascade-mask-rcnn-ravlt-s", "cascade-mask-rcnn-ravlt-s", DET, "Cascade Mask R-CNN 3x", "Casmaskrcnn_s_3x_36_epoch.pth", 82, 741, "box AP", 54.2, 46.8},
    {"cascade-mask-rcnn-ravlt-b", "cascade-mask-rcnn-ravlt-b", DET, "Cascade Mask R-CNN 3x", "Casmaskrcnn_b_3x_36_epoch.pth", 105, 851, "box AP", 55.3, 47.7},
    {"cascade-mask-rcnn-ravlt-l", "cascade-mask-rcnn-ravlt-l", DET, "Cascade Mask R-CNN 3x", "Casmaskrcnn_l_3x_36_epoch.pth", 152, 979, "box AP", 55.6, 48.0},

    {"semantic-fpn-ravlt-t", "semantic-fpn-ravlt-t", SEG, "Semantic FPN 1x", "fpn_t_1x.pth", 18, 136, "mIoU", 47.9, 0},
    {"semantic-fpn-ravlt-s", "semantic-fpn-ravlt-s", SEG, "Semantic FPN 1x", "fpn_s_1x.pth", 28, 180, "mIoU", 49.5, 0},
    {"semantic-fpn-ravlt-b", "semantic-fpn-ravlt-b", SEG, "Semantic FPN 1x", "fpn_b_1x.pth", 51, 292, "mIoU", 51.9, 0},
    {"semantic-fpn-ravlt-l", "semantic-fpn-ravlt-l", SEG, "Semantic FPN 1x", NULL, 0, 0, "mIoU", 0, 0},

    {"upernet-ravlt-s", "upernet-ravlt-s", SEG, "UperNet", NULL, 0, 0, "mIoU", 0, 0},
    {"upernet-ravlt-b", "upernet-ravlt-b", SEG, "UperNet", NULL, 0, 0, "mIoU", 0, 0},
    {"upernet-ravlt-l", "upernet-ravlt-l", SEG, "UperNet", NULL, 0, 0, "mIoU", 0, 0},

    {NULL, NULL, CLS, NULL, NULL, 0, 0, NULL, 0, 0}};

const rv_zoo_entry *rv_zoo_entries(int *count) {
  if (count) *count = (int)(sizeof ENTRIES / sizeof ENTRIES[0]) - 1;
  return ENTRIES;
}

const rv_zoo_entry *rv_zoo_find(const char *name) {
  if (!name) return NULL;
  for (const rv_zoo_entry *e = ENTRIES; e->name; e++)
    if (strcmp(e->name, name) == 0) return e;
  return NULL;
}

const char *rv_zoo_task_name(rv_zoo_task t) {
  return t == RV_ZOO_CLASSIFY ? "classify" : t == RV_ZOO_SEGMENT ? "segment" : "detect";
}

const char *rv_zoo_base_url(const char *base) {
  if (base && base[0]) return base;
  const char *env = getenv("RAVLT_BASE_URL");
  if (env && env[0]) return env;
  return RV_ZOO_DEFAULT_BASE;
}

rv_status rv_zoo_url(char *out, size_t cap, const rv_zoo_entry *e, const char *base, rv_ctx *ctx) {
  RV_ASSERT(out && e);
  if (!e->file)
    return rv_error(ctx, RV_ERR_NOTFOUND,
                    "%s: the RALA README publishes no checkpoint for this model; pass a file to --weights",
                    e->name);
  const char *b = rv_zoo_base_url(base);
  size_t bl = strlen(b);
  while (bl > 0 && b[bl - 1] == '/') bl--;
  int n = snprintf(out, cap, "%.*s/%s", (int)bl, b, e->file);
  if (n < 0 || (size_t)n >= cap) return rv_error(ctx, RV_ERR_ARG, "%s: base URL too long", e->name);
  return RV_OK;
}

rv_status rv_zoo_fetch(char *out, size_t cap, const rv_zoo_entry *e, const char *base,
                       const char *dir, const rv_download_opts *opts, rv_ctx *ctx) {
  RV_ASSERT(out && e);
  char url[4096], cache[4096];
  RV_TRY(rv_zoo_url(url, sizeof url, e, base, ctx));
  if (!dir) {
    RV_TRY(rv_cache_dir(cache, sizeof cache, ctx));
    dir = cache;
  }
  return rv_checkpoint_fetch(out, cap, url, dir, e->file, opts, ctx);
}
