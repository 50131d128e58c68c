/* `ravlt serve`: one image through a model into the body of an answer (apps/serve.h). The
 * numbers come from the code the CLI runs: the per-image work of `ravlt detect` / `ravlt
 * segment` (rv_task_*, apps/image_run.h: the model, the label image, the drawings), the COCO
 * results entries of rv_det_json (`ravlt detect --json`). */
#define _POSIX_C_SOURCE 200809L
#include "apps/serve.h"

#include "apps/cli.h"
#include "datasets/det_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text -------------------------------------------------------------------------------- */

void srv_buf_put(srv_buf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 1024;
    while (nc < b->n + n + 1) nc *= 2;
    char *d = realloc(b->d, nc);
    if (!d) {
      b->oom = 1;
      return;
    }
    b->d = d;
    b->cap = nc;
  }
  memcpy(b->d + b->n, s, n);
  b->n += n;
  b->d[b->n] = 0;
}

void srv_buf_str(srv_buf *b, const char *s) { srv_buf_put(b, s, strlen(s)); }

void srv_buf_printf(srv_buf *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    srv_buf_put(b, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  srv_buf_put(b, big, (size_t)n);
  free(big);
}

void srv_buf_json_str(srv_buf *b, const char *s) {
  srv_buf_put(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      char e[2] = {'\\', (char)*p};
      srv_buf_put(b, e, 2);
    } else if (*p < 0x20) {
      srv_buf_printf(b, "\\u%04x", *p);
    } else {
      srv_buf_put(b, (const char *)p, 1);
    }
  }
  srv_buf_put(b, "\"", 1);
}

char *srv_error_json(const char *msg, size_t *len) {
  srv_buf b = {0};
  srv_buf_str(&b, "{\"error\": ");
  char line[1024];
  snprintf(line, sizeof line, "%s", msg); /* one line: a newline would end it */
  for (char *p = line; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  srv_buf_json_str(&b, line);
  srv_buf_str(&b, "}\n");
  if (b.oom) {
    free(b.d);
    return NULL;
  }
  *len = b.n;
  return b.d;
}

long srv_base64_decode(unsigned char *out, const char *in, size_t n) {
  static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  signed char m[256];
  memset(m, -1, sizeof m);
  for (int i = 0; i < 64; i++) m[(unsigned char)alpha[i]] = (signed char)i;
  m['-'] = 62; /* the URL-safe alphabet too */
  m['_'] = 63;
  while (n > 0 && in[n - 1] == '=') n--;
  if (n % 4 == 1) return -1;
  long o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = m[(unsigned char)in[i]];
    if (v < 0) return -1;
    acc = acc << 6 | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  return o;
}

/* The shortest decimal text that reads back (strtof) to the same float32. */
static void f32_text(char *buf, size_t cap, float v) {
  if (!isfinite(v)) {
    snprintf(buf, cap, "null");
    return;
  }
  for (int p = 1; p <= 9; p++) {
    snprintf(buf, cap, "%.*g", p, (double)v);
    if (strtof(buf, NULL) == v) return;
  }
}

/* A number of a parsed entry printed back as Python's repr prints it (the text of the CLI's
 * JSON files, rv_format_double_repr), not with cJSON's %.15g / %.17g. */
static int repr_number(cJSON *c) {
  if (!cJSON_IsNumber(c)) return 0;
  char t[64];
  rv_format_double_repr(t, sizeof t, c->valuedouble);
  char *d = strdup(t);
  if (!d) return -1;
  c->type = cJSON_Raw;
  c->valuestring = d;
  return 0;
}

/* ---- answers ----------------------------------------------------------------------------- */

static void answer(srv_output *out, int status, char *body, size_t len, const char *ctype) {
  free(out->body);
  out->status = status;
  out->body = body;
  out->len = len;
  out->ctype = ctype;
}

static void fail(srv_output *out, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(srv_output *out, int status, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t len = 0;
  char *b = srv_error_json(msg, &len);
  answer(out, b ? status : 500, b, b ? len : 0, "application/json");
}

static void take_buf(srv_output *out, srv_buf *b, const char *ctype) {
  if (b->oom) {
    free(b->d);
    fail(out, 500, "out of memory");
    return;
  }
  answer(out, 200, b->d, b->n, ctype);
  memset(b, 0, sizeof *b);
}

static void encode_png(srv_output *out, const rv_image *img, rv_ctx *ctx) {
  unsigned char *png = NULL;
  size_t len = 0;
  if (rv_image_encode(img, ".png", &png, &len, ctx) != RV_OK) {
    fail(out, 500, "encoding the PNG: %s", rv_ctx_errmsg(ctx));
    return;
  }
  answer(out, 200, (char *)png, len, "image/png");
}

/* The COCO results entries `ravlt detect --json` writes for this image (rv_det_json: class
 * order, mmdet's numbers; with the segmentation when the model has masks), parsed. rles: a
 * tiled run's whole-image masks (det->masks is then NULL), as `detect --tile --json`. */
static cJSON *det_entries(const srv_model *M, const rv_detections *det, const rv_rle *rles, const int *order,
                          rv_ctx *ctx) {
  rv_det_json *r = rv_det_json_create(M->masks);
  if (!r) return NULL;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  cJSON *j = NULL;
  rv_status st = rles ? rv_det_json_add_rle(r, 0, det->n, det->bboxes, det->scores, det->labels, rles, order,
                                             M->cat_ids, ctx)
                      : rv_det_json_add(r, 0, det, order, M->cat_ids, ctx);
  if (f && st == RV_OK && rv_det_json_fwrite(r, f, M->masks && (det->masks || rles), ctx) == RV_OK &&
      fclose(f) == 0) {
    f = NULL;
    j = cJSON_ParseWithLength(text, len);
  }
  if (f) fclose(f);
  free(text);
  rv_det_json_free(r);
  return j;
}

static void detect_json(srv_output *out, const srv_model *M, const rv_detections *det, const rv_rle *rles,
                        const int *order, double thr,
                        const rv_image *img, const char *timing, rv_ctx *ctx) {
  cJSON *arr = det_entries(M, det, rles, order, ctx);
  if (!arr || cJSON_GetArraySize(arr) != det->n) {
    cJSON_Delete(arr);
    fail(out, 500, "building the detections: %s", rv_ctx_errmsg(ctx));
    return;
  }
  cJSON *list = cJSON_CreateArray();
  int i = 0, bad = !list;
  for (cJSON *e = arr->child; e && !bad; e = e->next, i++) {
    int k = order[i];
    if (thr >= 0 && det->scores[k] < thr) continue;
    cJSON *bbox = cJSON_GetObjectItemCaseSensitive(e, "bbox");
    for (cJSON *v = bbox ? bbox->child : NULL; v; v = v->next) bad |= repr_number(v);
    bad |= repr_number(cJSON_GetObjectItemCaseSensitive(e, "score"));
    cJSON *o = cJSON_CreateObject();
    const char *keys[] = {"bbox", "score", "category_id"};
    for (int q = 0; o && q < 3; q++) cJSON_AddItemToObject(o, keys[q], cJSON_DetachItemFromObject(e, keys[q]));
    if (o) cJSON_AddStringToObject(o, "name", M->names[det->labels[k]]);
    cJSON *seg = o ? cJSON_DetachItemFromObject(e, "segmentation") : NULL;
    if (seg) cJSON_AddItemToObject(o, "segmentation", seg);
    if (!o) bad = 1;
    else cJSON_AddItemToArray(list, o);
  }
  cJSON_Delete(arr);
  if (bad) {
    cJSON_Delete(list);
    fail(out, 500, "out of memory");
    return;
  }
  char *dets = cJSON_PrintUnformatted(list);
  cJSON_Delete(list);
  if (!dets) {
    fail(out, 500, "out of memory");
    return;
  }
  srv_buf b = {0};
  srv_buf_str(&b, "{\"model\": ");
  srv_buf_json_str(&b, M->name);
  srv_buf_printf(&b, ", \"image\": {\"height\": %d, \"width\": %d}, \"detections\": ", img->h, img->w);
  srv_buf_str(&b, dets);
  srv_buf_printf(&b, ", \"timing_ms\": %s}\n", timing);
  free(dets);
  take_buf(out, &b, "application/json");
}

/* v2 outputs of a detector: boxes, scores, labels (category ids), masks (RLE strings). */
static void detect_v2(srv_output *out, const srv_model *M, const rv_detections *det, const rv_rle *rles,
                      const int *order, double thr,
                      const srv_input *in, rv_ctx *ctx) {
  const int with_masks = M->masks && (det->masks || rles);
  cJSON *arr = with_masks ? det_entries(M, det, rles, order, ctx) : NULL;
  if (with_masks && (!arr || cJSON_GetArraySize(arr) != det->n)) {
    cJSON_Delete(arr);
    fail(out, 500, "building the masks: %s", rv_ctx_errmsg(ctx));
    return;
  }
  int *keep = malloc(sizeof *keep * (size_t)(det->n + 1));
  cJSON **ent = calloc((size_t)det->n + 1, sizeof *ent);
  if (!keep || !ent) {
    free(keep);
    free(ent);
    cJSON_Delete(arr);
    fail(out, 500, "out of memory");
    return;
  }
  int n = 0, i = 0;
  for (cJSON *e = arr ? arr->child : NULL; e; e = e->next) ent[i++] = e;
  for (i = 0; i < det->n; i++)
    if (thr < 0 || det->scores[order[i]] >= thr) keep[n++] = i;
  srv_buf b = {0};
  srv_buf_str(&b, "{\"model_name\": ");
  srv_buf_json_str(&b, M->name);
  srv_buf_str(&b, ", \"model_version\": \"1\"");
  if (in->v2_id) {
    srv_buf_str(&b, ", \"id\": ");
    srv_buf_json_str(&b, in->v2_id);
  }
  srv_buf_str(&b, ", \"outputs\": [");
  int first = 1;
  char t[64];
  for (int o = 0; o < 4; o++) {
    if (in->v2_outputs && !(in->v2_outputs & (1u << o))) continue;
    if (o == 3 && !M->masks) continue;
    static const char *const names[] = {"boxes", "scores", "labels", "masks"};
    static const char *const types[] = {"FP32", "FP32", "INT32", "BYTES"};
    srv_buf_printf(&b, "%s{\"name\": \"%s\", \"datatype\": \"%s\", \"shape\": ", first ? "" : ", ", names[o], types[o]);
    first = 0;
    if (o == 0) srv_buf_printf(&b, "[%d, 4]", n);
    else srv_buf_printf(&b, "[%d]", n);
    srv_buf_str(&b, ", \"data\": [");
    for (int q = 0; q < n; q++) {
      int k = order[keep[q]];
      if (q) srv_buf_str(&b, ", ");
      if (o == 0) {
        for (int c = 0; c < 4; c++) {
          f32_text(t, sizeof t, det->bboxes[4 * k + c]);
          srv_buf_printf(&b, "%s%s", c ? ", " : "", t);
        }
      } else if (o == 1) {
        f32_text(t, sizeof t, det->scores[k]);
        srv_buf_str(&b, t);
      } else if (o == 2) {
        srv_buf_printf(&b, "%d", M->cat_ids[det->labels[k]]);
      } else {
        cJSON *seg = ent[keep[q]] ? cJSON_GetObjectItemCaseSensitive(ent[keep[q]], "segmentation") : NULL;
        cJSON *counts = seg ? cJSON_GetObjectItemCaseSensitive(seg, "counts") : NULL;
        srv_buf_json_str(&b, cJSON_IsString(counts) ? counts->valuestring : "");
      }
    }
    srv_buf_str(&b, "]}");
  }
  srv_buf_str(&b, "]}\n");
  free(keep);
  free(ent);
  cJSON_Delete(arr);
  take_buf(out, &b, "application/json");
}

static void segment_json(srv_output *out, const srv_model *M, const int32_t *labels, const rv_image *img,
                         const char *timing) {
  long *count = calloc((size_t)M->n_classes, sizeof *count);
  if (!count) {
    fail(out, 500, "out of memory");
    return;
  }
  size_t np = (size_t)img->h * (size_t)img->w;
  for (size_t p = 0; p < np; p++)
    if (labels[p] >= 0 && labels[p] < M->n_classes) count[labels[p]]++;
  srv_buf b = {0};
  srv_buf_str(&b, "{\"model\": ");
  srv_buf_json_str(&b, M->name);
  srv_buf_printf(&b, ", \"image\": {\"height\": %d, \"width\": %d}, \"classes\": [", img->h, img->w);
  int first = 1;
  for (int k = 0; k < M->n_classes; k++) {
    if (!count[k]) continue;
    srv_buf_printf(&b, "%s{\"label\": %d, \"name\": ", first ? "" : ", ", k);
    srv_buf_json_str(&b, M->names[k]);
    srv_buf_printf(&b, ", \"pixels\": %ld}", count[k]);
    first = 0;
  }
  srv_buf_printf(&b, "], \"timing_ms\": %s}\n", timing);
  free(count);
  take_buf(out, &b, "application/json");
}

static void segment_v2(srv_output *out, const srv_model *M, const int32_t *labels, const rv_image *img,
                       const srv_input *in) {
  srv_buf b = {0};
  srv_buf_str(&b, "{\"model_name\": ");
  srv_buf_json_str(&b, M->name);
  srv_buf_str(&b, ", \"model_version\": \"1\"");
  if (in->v2_id) {
    srv_buf_str(&b, ", \"id\": ");
    srv_buf_json_str(&b, in->v2_id);
  }
  srv_buf_str(&b, ", \"outputs\": [");
  if (!in->v2_outputs || (in->v2_outputs & 1u)) {
    srv_buf_printf(&b, "{\"name\": \"label_map\", \"datatype\": \"INT32\", \"shape\": [%d, %d], \"data\": [", img->h, img->w);
    size_t np = (size_t)img->h * (size_t)img->w;
    char row[16 * 64];
    for (size_t p = 0; p < np && !b.oom;) { /* 64 numbers per call */
      size_t r = 0;
      for (int q = 0; q < 64 && p < np; q++, p++) r += (size_t)snprintf(row + r, sizeof row - r, p ? ", %d" : "%d", labels[p]);
      srv_buf_put(&b, row, r);
    }
    srv_buf_str(&b, "]}");
  }
  srv_buf_str(&b, "]}\n");
  take_buf(out, &b, "application/json");
}

int srv_over_limit(const unsigned char *data, size_t len, long long cap, long long *w, long long *h) {
  if (!rv_image_header_size(data, len, w, h)) return 0;
  return *w > cap || *h > cap || (*h > 0 && *w > cap / *h); /* w * h > cap, without overflow */
}

/* ---- one request ------------------------------------------------------------------------- */

void srv_predict(rv_srv *s, const srv_input *in, srv_output *out, rv_ctx *ctx, rv_arena *arena) {
  const srv_model *M = &s->models[in->model];
  memset(out, 0, sizeof *out);
  rv_image img = {0};
  int32_t *labels = NULL;
  int *order = NULL;
  long long w = 0, h = 0, cap = rv_ctx_max_pixels(ctx);
  double t0 = rv_now();
  if (srv_over_limit(in->data, in->len, cap, &w, &h)) {
    fail(out, 413, "image: %lldx%lld = %.0f pixels, over the limit of %lld (--max-pixels)", w, h, (double)w * (double)h, cap);
    return;
  }
  rv_status st = rv_image_decode(in->data, in->len, "in the request", &img, ctx);
  if (st != RV_OK) {
    /* the limit may also be found by the decoder's own check (a format the header reader
       above does not know) */
    int too_big = st == RV_ERR_UNSUPPORTED && strstr(rv_ctx_errmsg(ctx), "--max-pixels");
    fail(out, too_big ? 413 : st == RV_ERR_NOMEM ? 500 : 400, "%s", rv_ctx_errmsg(ctx));
    return;
  }
  double t1 = rv_now();
  out->decode_s = t1 - t0;
  char timing[160];
  /* the per-image work of `ravlt detect` / `ravlt segment` (apps/image_run.h) */
  if (M->task == RV_TASK_DETECT) {
    rv_detections det = {0};
    rv_tile_detections tdet = {0};
    const rv_rle *rles = NULL;
    if (in->tiled) { /* `detect --tile`: whole-image RLE masks */
      st = rv_task_detect_tiled(&M->rm, &img, &in->to, arena, &tdet, &order, ctx);
      det = (rv_detections){tdet.n, tdet.bboxes, tdet.scores, tdet.labels, NULL, 0, 0};
      rles = tdet.masks;
    } else {
      st = rv_task_detect(&M->rm, &img, arena, &det, &order, ctx);
    }
    double t2 = rv_now();
    out->infer_s = t2 - t1;
    if (st != RV_OK) {
      fail(out, st == RV_ERR_CANCELLED ? 503 : 500, "%s", st == RV_ERR_CANCELLED ? "the server is shutting down" : rv_ctx_errmsg(ctx));
    } else {
      snprintf(timing, sizeof timing, "{\"queue\": %.3f, \"decode\": %.3f, \"inference\": %.3f}",
               (t0 - in->t_queued) * 1e3, out->decode_s * 1e3, out->infer_s * 1e3);
      if (in->fmt == SRV_JSON) {
        detect_json(out, M, &det, rles, order, in->thr, &img, timing, ctx);
      } else if (in->fmt == SRV_V2) {
        detect_v2(out, M, &det, rles, order, in->thr, in, ctx);
      } else if (in->fmt == SRV_OVERLAY) {
        float thr = in->thr >= 0 ? (float)in->thr : 0.3f; /* `ravlt detect`'s default --score-thr */
        st = in->tiled ? rv_task_draw_tiled(&M->rm, &img, &tdet, thr, ctx)
                       : rv_task_draw_detections(&M->rm, &img, &det, thr, ctx);
        if (st == RV_OK) encode_png(out, &img, ctx);
        else fail(out, 500, "%s", rv_ctx_errmsg(ctx));
      } else {
        fail(out, 400, "format=png is the label map of a segmentation model; model '%s' is a detector (format=json or overlay)", M->name);
      }
    }
  } else {
    st = in->tiled ? rv_task_segment_tiled(&M->rm, &img, &in->to, arena, &labels, ctx) /* `segment --tile` */
                   : rv_task_segment(&M->rm, &img, NULL, arena, &labels, ctx);
    double t2 = rv_now();
    out->infer_s = t2 - t1;
    snprintf(timing, sizeof timing, "{\"queue\": %.3f, \"decode\": %.3f, \"inference\": %.3f}",
             (t0 - in->t_queued) * 1e3, out->decode_s * 1e3, out->infer_s * 1e3);
    if (st != RV_OK) {
      fail(out, st == RV_ERR_CANCELLED ? 503 : 500, "%s", st == RV_ERR_CANCELLED ? "the server is shutting down" : rv_ctx_errmsg(ctx));
    } else if (in->fmt == SRV_JSON) {
      segment_json(out, M, labels, &img, timing);
    } else if (in->fmt == SRV_V2) {
      segment_v2(out, M, labels, &img, in);
    } else if (in->fmt == SRV_PNG && M->n_classes > 254) {
      fail(out, 400, "format=png: model '%s' has %d classes, more than an 8-bit label PNG holds", M->name, M->n_classes);
    } else if (in->fmt == SRV_PNG) { /* the label PNG of `ravlt segment`: class k as k + 1, 8-bit */
      rv_image lab = {0};
      st = rv_task_label_image(&lab, labels, img.h, img.w, ctx);
      if (st == RV_OK) encode_png(out, &lab, ctx);
      else fail(out, 500, "%s", rv_ctx_errmsg(ctx));
      rv_image_free(&lab);
    } else {
      st = rv_task_overlay(&M->rm, &img, labels, 0.5f, ctx); /* `ravlt segment`'s default --opacity */
      if (st == RV_OK) encode_png(out, &img, ctx);
      else fail(out, 500, "%s", rv_ctx_errmsg(ctx));
    }
  }
  out->encode_s = rv_now() - t0 - out->decode_s - out->infer_s;
  free(order);
  free(labels);
  rv_image_free(&img);
  rv_arena_reset(arena);
}
