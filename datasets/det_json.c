/* COCO results JSON writer with mmdet's entry order and Python's number formatting. */
#define _POSIX_C_SOURCE 200809L
#include "datasets/det_json.h"

#include "core/fs.h"
#include "eval/rle.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  char *data;
  size_t len, cap;
} strbuf;

struct rv_det_json {
  int with_masks;
  strbuf bbox, segm;
  size_t count;
};

static int sb_put(strbuf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 4096;
    while (nc < b->len + n + 1) nc *= 2;
    char *d = realloc(b->data, nc);
    if (!d) return -1;
    b->data = d;
    b->cap = nc;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
  return 0;
}

static int sb_str(strbuf *b, const char *s) { return sb_put(b, s, strlen(s)); }

void rv_format_double_repr(char *buf, size_t size, double v) {
  if (isnan(v)) { snprintf(buf, size, "NaN"); return; }
  if (isinf(v)) { snprintf(buf, size, v > 0 ? "Infinity" : "-Infinity"); return; }
  char tmp[40];
  int p = 1;
  for (; p <= 17; p++) {
    snprintf(tmp, sizeof tmp, "%.*g", p, v);
    if (strtod(tmp, NULL) == v) break;
  }
  /* Python repr: integral values keep ".0"; exponent form for >= 1e16 or < 1e-4 */
  double a = fabs(v);
  if (a != 0 && (a >= 1e16 || a < 1e-4)) {
    /* %g gives e.g. 1e-05; Python gives 1e-05 too */
    snprintf(buf, size, "%s", tmp);
    return;
  }
  char fixed[64];
  snprintf(fixed, sizeof fixed, "%.*g", p, v);
  if (strchr(fixed, 'e')) { /* %g chose exponent form for a value Python prints fixed */
    int decimals = 0;
    for (; decimals <= 20; decimals++) {
      snprintf(fixed, sizeof fixed, "%.*f", decimals, v);
      if (strtod(fixed, NULL) == v) break;
    }
  }
  if (!strchr(fixed, '.')) {
    size_t l = strlen(fixed);
    if (l + 2 < sizeof fixed) memcpy(fixed + l, ".0", 3);
  }
  snprintf(buf, size, "%s", fixed);
}

rv_det_json *rv_det_json_create(int with_masks) {
  rv_det_json *r = calloc(1, sizeof *r);
  if (r) r->with_masks = with_masks;
  return r;
}

void rv_det_json_free(rv_det_json *r) {
  if (!r) return;
  free(r->bbox.data);
  free(r->segm.data);
  free(r);
}

size_t rv_det_json_count(const rv_det_json *r) { return r->count; }

/* One detection: its bbox entry, and its segm entry when rle is non-NULL. */
static rv_status add_one(rv_det_json *r, int64_t image_id, const float *b, float score, int cat, const rv_rle *rle,
                         rv_ctx *ctx) {
  double x1 = b[0], y1 = b[1], x2 = b[2], y2 = b[3];
  char v[4][40], sc[40], head[512];
  rv_format_double_repr(v[0], sizeof v[0], x1);
  rv_format_double_repr(v[1], sizeof v[1], y1);
  rv_format_double_repr(v[2], sizeof v[2], x2 - x1);
  rv_format_double_repr(v[3], sizeof v[3], y2 - y1);
  rv_format_double_repr(sc, sizeof sc, (double)score);
  snprintf(head, sizeof head, "{\"image_id\": %lld, \"bbox\": [%s, %s, %s, %s], \"score\": %s, \"category_id\": %d",
           (long long)image_id, v[0], v[1], v[2], v[3], sc, cat);
  int fail = sb_str(&r->bbox, r->bbox.len ? ", " : "") || sb_str(&r->bbox, head) || sb_str(&r->bbox, "}");
  if (rle && !fail) {
    char *counts = rv_rle_to_string(rle);
    char size[64];
    snprintf(size, sizeof size, ", \"segmentation\": {\"size\": [%u, %u], \"counts\": \"", rle->h, rle->w);
    fail = !counts || sb_str(&r->segm, r->segm.len ? ", " : "") || sb_str(&r->segm, head) || sb_str(&r->segm, size);
    /* the counts alphabet is ASCII 48..111 plus '\\' (92), which JSON escapes */
    for (const char *c = counts; !fail && c && *c; c++)
      fail = *c == '\\' ? sb_str(&r->segm, "\\\\") : sb_put(&r->segm, c, 1);
    if (!fail) fail = sb_str(&r->segm, "\"}}");
    free(counts);
  }
  if (fail) return rv_error(ctx, RV_ERR_NOMEM, "out of memory for results JSON");
  r->count++;
  return RV_OK;
}

rv_status rv_det_json_add(rv_det_json *r, int64_t image_id, const rv_detections *det,
                              const int *order, const int *cat_ids, rv_ctx *ctx) {
  int with_masks = r->with_masks && det->masks;
  uint8_t *col = NULL;
  size_t plane = (size_t)det->mask_h * (size_t)det->mask_w;
  if (with_masks) {
    col = malloc(plane ? plane : 1);
    if (!col) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  rv_status st = RV_OK;
  for (int i = 0; i < det->n && st == RV_OK; i++) {
    int k = order ? order[i] : i;
    rv_rle rle = {0};
    if (with_masks) {
      const unsigned char *m = det->masks + (size_t)k * plane;
      for (int x = 0; x < det->mask_w; x++)
        for (int y = 0; y < det->mask_h; y++) col[(size_t)x * det->mask_h + y] = m[(size_t)y * det->mask_w + x] ? 1 : 0;
      st = rv_rle_encode(&rle, col, (uint32_t)det->mask_h, (uint32_t)det->mask_w, ctx);
    }
    if (st == RV_OK)
      st = add_one(r, image_id, det->bboxes + 4 * (size_t)k, det->scores[k], cat_ids[det->labels[k]],
                   with_masks ? &rle : NULL, ctx);
    rv_rle_free(&rle);
  }
  free(col);
  return st;
}

rv_status rv_det_json_add_rle(rv_det_json *r, int64_t image_id, int n, const float *bboxes, const float *scores,
                              const int *labels, const rv_rle *masks, const int *order, const int *cat_ids,
                              rv_ctx *ctx) {
  rv_status st = RV_OK;
  for (int i = 0; i < n && st == RV_OK; i++) {
    int k = order ? order[i] : i;
    st = add_one(r, image_id, bboxes + 4 * (size_t)k, scores[k], cat_ids[labels[k]],
                 r->with_masks && masks ? &masks[k] : NULL, ctx);
  }
  return st;
}

static rv_status write_atomic(const char *path, const strbuf *b, rv_ctx *ctx) {
  rv_out_file o;
  RV_TRY(rv_out_open(&o, path, ctx));
  if (fputc('[', o.f) == EOF || (b->len && fwrite(b->data, 1, b->len, o.f) != b->len) || fputc(']', o.f) == EOF) {
    rv_out_abort(&o);
    return rv_error(ctx, RV_ERR_IO, "%s: write failed: %s", path, strerror(errno));
  }
  return rv_out_close(&o, ctx);
}

rv_status rv_det_json_fwrite(const rv_det_json *r, FILE *f, int segm, rv_ctx *ctx) {
  const strbuf *b = segm ? &r->segm : &r->bbox;
  if (fputc('[', f) == EOF || (b->len && fwrite(b->data, 1, b->len, f) != b->len) || fputs("]\n", f) == EOF ||
      fflush(f) != 0)
    return rv_error(ctx, RV_ERR_IO, "results JSON: write failed: %s", strerror(errno));
  return RV_OK;
}

rv_status rv_det_json_write(const rv_det_json *r, const char *bbox_path, const char *segm_path,
                                rv_ctx *ctx) {
  RV_TRY(write_atomic(bbox_path, &r->bbox, ctx));
  if (segm_path && r->with_masks) RV_TRY(write_atomic(segm_path, &r->segm, ctx));
  return RV_OK;
}
