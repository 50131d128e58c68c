/* Fast COCO results reader: a results file is a flat JSON list of small objects (485k for a
 * val2017 run, ~140 MB with masks), so it is parsed without building a tree. A serial pass
 * finds the element boundaries (tracking strings and nesting only), then the elements are
 * parsed in parallel straight into rv_coco_obj, RLE strings decoded in place. The grammar is
 * checked strictly per element; polygon segmentations (rare in results) go through cJSON and
 * the gt converter. Errors name the file and element ("dt.json: results[12]: ..."). */
#include "datasets/coco_internal.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *p, *end;
  char err[160]; /* first problem found */
} cursor;

static int fail(cursor *c, const char *msg) {
  if (!c->err[0]) snprintf(c->err, sizeof c->err, "%s", msg);
  return 0;
}

static void ws(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t')) c->p++;
}

static int expect(cursor *c, char ch) {
  ws(c);
  if (c->p >= c->end || *c->p != ch) {
    char m[64];
    snprintf(m, sizeof m, "expected '%c'", ch);
    return fail(c, m);
  }
  c->p++;
  return 1;
}

/* JSON number (strict grammar), value via strtod (correctly rounded, like Python's json). */
static int number(cursor *c, double *v) {
  ws(c);
  const char *s = c->p, *q = s;
  if (q < c->end && *q == '-') q++;
  if (q >= c->end || !isdigit((unsigned char)*q)) return fail(c, "expected a number");
  if (*q == '0')
    q++;
  else
    while (q < c->end && isdigit((unsigned char)*q)) q++;
  if (q < c->end && *q == '.') {
    q++;
    if (q >= c->end || !isdigit((unsigned char)*q)) return fail(c, "malformed number");
    while (q < c->end && isdigit((unsigned char)*q)) q++;
  }
  if (q < c->end && (*q == 'e' || *q == 'E')) {
    q++;
    if (q < c->end && (*q == '+' || *q == '-')) q++;
    if (q >= c->end || !isdigit((unsigned char)*q)) return fail(c, "malformed number");
    while (q < c->end && isdigit((unsigned char)*q)) q++;
  }
  char buf[64];
  size_t n = (size_t)(q - s);
  if (n < sizeof buf) {
    memcpy(buf, s, n);
    buf[n] = 0;
    *v = strtod(buf, NULL);
  } else {
    char *big = malloc(n + 1);
    if (!big) return fail(c, "out of memory");
    memcpy(big, s, n);
    big[n] = 0;
    *v = strtod(big, NULL);
    free(big);
  }
  c->p = q;
  return 1;
}

/* String into out (unescaped, NUL-terminated; out may be NULL to skip). *len = its length. */
static int string(cursor *c, char *out, size_t cap, size_t *len) {
  ws(c);
  if (c->p >= c->end || *c->p != '"') return fail(c, "expected a string");
  c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != '"') {
    unsigned char ch = (unsigned char)*c->p++;
    if (ch < 0x20) return fail(c, "control character in a string");
    if (ch == '\\') {
      if (c->p >= c->end) return fail(c, "truncated string");
      char e = *c->p++;
      switch (e) {
        case '"': ch = '"'; break;
        case '\\': ch = '\\'; break;
        case '/': ch = '/'; break;
        case 'b': ch = '\b'; break;
        case 'f': ch = '\f'; break;
        case 'n': ch = '\n'; break;
        case 'r': ch = '\r'; break;
        case 't': ch = '\t'; break;
        case 'u': {
          unsigned v = 0;
          for (int k = 0; k < 4; k++) {
            if (c->p >= c->end || !isxdigit((unsigned char)*c->p)) return fail(c, "bad \\u escape");
            char h = *c->p++;
            v = v * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
          }
          ch = v < 0x80 ? (unsigned char)v : 0xff; /* non-ASCII: never a valid RLE char */
          break;
        }
        default: return fail(c, "bad escape in a string");
      }
    }
    if (out) {
      if (n + 1 >= cap) return fail(c, "string too long");
      out[n] = (char)ch;
    }
    n++;
  }
  if (c->p >= c->end) return fail(c, "unterminated string");
  c->p++;
  if (out) out[n] = 0;
  if (len) *len = n;
  return 1;
}

static int skip_value(cursor *c, int depth);

static int skip_container(cursor *c, char open, char close, int depth) {
  if (depth > 64) return fail(c, "nesting too deep");
  c->p++; /* open */
  (void)open;
  ws(c);
  if (c->p < c->end && *c->p == close) {
    c->p++;
    return 1;
  }
  for (;;) {
    if (close == '}') {
      if (!string(c, NULL, 0, NULL) || !expect(c, ':')) return 0;
    }
    if (!skip_value(c, depth + 1)) return 0;
    ws(c);
    if (c->p < c->end && *c->p == ',') {
      c->p++;
      continue;
    }
    if (c->p < c->end && *c->p == close) {
      c->p++;
      return 1;
    }
    return fail(c, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static int skip_value(cursor *c, int depth) {
  ws(c);
  if (c->p >= c->end) return fail(c, "unexpected end");
  char ch = *c->p;
  if (ch == '"') return string(c, NULL, 0, NULL);
  if (ch == '{') return skip_container(c, '{', '}', depth);
  if (ch == '[') return skip_container(c, '[', ']', depth);
  static const char *lits[3] = {"true", "false", "null"};
  for (int i = 0; i < 3; i++) {
    size_t l = strlen(lits[i]);
    if ((size_t)(c->end - c->p) >= l && memcmp(c->p, lits[i], l) == 0) {
      c->p += l;
      return 1;
    }
  }
  double v;
  return number(c, &v);
}

static int key_is(const char *k, size_t kl, const char *want) { return kl == strlen(want) && memcmp(k, want, kl) == 0; }

static int read_key(cursor *c, char *k, size_t cap, size_t *kl) {
  ws(c);
  const char *s = c->p;
  if (!string(c, NULL, 0, NULL)) return 0;
  cursor sub = {s, c->p, {0}};
  if (!string(&sub, k, cap, kl)) { /* an unusually long key: never one of ours */
    k[0] = 0;
    *kl = 0;
  }
  return expect(c, ':');
}

static int int_id(double v, int64_t *out) {
  if (!(fabs(v) <= 9007199254740992.0) || v != floor(v)) return 0;
  *out = (int64_t)v;
  return 1;
}

/* "segmentation": RLE object parsed here; anything else handed to cJSON + the gt converter. */
static int segmentation(cursor *c, rv_coco_obj *d, const rv_coco *gt, int want, char *sbuf, size_t scap) {
  ws(c);
  const char *start = c->p;
  if (c->p < c->end && *c->p == '{') {
    c->p++;
    double size[2] = {-1, -1};
    int have_size = 0, have_counts = 0, counts_list = 0;
    size_t slen = 0;
    ws(c);
    if (c->p < c->end && *c->p == '}') return fail(c, "'segmentation' must have size and counts");
    for (;;) {
      char k[32];
      size_t kl;
      if (!read_key(c, k, sizeof k, &kl)) return 0;
      if (key_is(k, kl, "size")) {
        if (!expect(c, '[') || !number(c, &size[0]) || !expect(c, ',') || !number(c, &size[1]) || !expect(c, ']'))
          return fail(c, "RLE 'size' must be [height, width]");
        have_size = 1;
      } else if (key_is(k, kl, "counts")) {
        ws(c);
        if (c->p < c->end && *c->p == '"') {
          if (!string(c, sbuf, scap, &slen)) return 0;
          if (strlen(sbuf) != slen) return fail(c, "NUL character in RLE counts");
        } else {
          counts_list = 1;
          if (!skip_value(c, 0)) return 0;
        }
        have_counts = 1;
      } else if (!skip_value(c, 0))
        return 0;
      ws(c);
      if (c->p < c->end && *c->p == ',') {
        c->p++;
        continue;
      }
      if (!expect(c, '}')) return 0;
      break;
    }
    if (!have_size || !have_counts) return fail(c, "'segmentation' must have size and counts");
    if (!want) return 1;
    if (!counts_list) {
      if (!(size[0] >= 0 && size[1] >= 0 && size[0] == floor(size[0]) && size[1] == floor(size[1]) &&
            size[0] * size[1] < 4294967296.0))
        return fail(c, "RLE 'size' is not a valid mask size");
      rv_status st = rv_rle_from_string(&d->segm, sbuf, (uint32_t)size[0], (uint32_t)size[1], "segmentation", NULL);
      if (st != RV_OK) { /* again with a context, for the message */
        rv_ctx *tctx = rv_ctx_create();
        rv_rle tmp = {0};
        rv_rle_from_string(&tmp, sbuf, (uint32_t)size[0], (uint32_t)size[1], "segmentation", tctx);
        fail(c, tctx ? rv_ctx_errmsg(tctx) : "corrupt RLE");
        rv_rle_free(&tmp);
        rv_ctx_free(tctx);
        return 0;
      }
      d->has_segm = 1;
      return 1;
    }
  } else if (!skip_value(c, 0))
    return 0;
  if (!want) return 1;
  /* uncompressed RLE or polygons: the general converter */
  cJSON *j = cJSON_ParseWithLength(start, (size_t)(c->p - start));
  if (!j) return fail(c, "malformed segmentation");
  const rv_coco_image *im = rv_coco_find_image(gt, d->image_id);
  rv_ctx *tctx = rv_ctx_create();
  rv_status st = im ? rv_coco_seg_to_rle(&d->segm, j, (uint32_t)im->height, (uint32_t)im->width, tctx) : RV_ERR_FORMAT;
  if (st != RV_OK) fail(c, im ? (tctx ? rv_ctx_errmsg(tctx) : "bad segmentation") : "image_id is not in the ground truth");
  rv_ctx_free(tctx);
  cJSON_Delete(j);
  if (st != RV_OK) return 0;
  d->has_segm = 1;
  return 1;
}

/* One element: {image_id, category_id, score, bbox?, segmentation?, anything else}. */
static int element(cursor *c, rv_coco_obj *d, const rv_coco *gt, int want_segm, char *sbuf, size_t scap) {
  if (!expect(c, '{')) return fail(c, "not an object");
  int have_img = 0, have_cat = 0, have_score = 0;
  ws(c);
  if (c->p < c->end && *c->p == '}') {
    c->p++;
    return fail(c, "'image_id' and 'category_id' must be integers");
  }
  for (;;) {
    char k[32];
    size_t kl;
    double v;
    if (!read_key(c, k, sizeof k, &kl)) return 0;
    if (key_is(k, kl, "image_id") || key_is(k, kl, "category_id")) {
      int img = k[0] == 'i';
      ws(c);
      if (!(c->p < c->end && (*c->p == '-' || isdigit((unsigned char)*c->p))) || !number(c, &v) ||
          !int_id(v, img ? &d->image_id : &d->category_id))
        return fail(c, "'image_id' and 'category_id' must be integers");
      if (img) have_img = 1; else have_cat = 1;
    } else if (key_is(k, kl, "score")) {
      ws(c);
      if (!(c->p < c->end && (*c->p == '-' || isdigit((unsigned char)*c->p))) || !number(c, &d->score) ||
          !isfinite(d->score))
        return fail(c, "missing or non-finite 'score'");
      have_score = 1;
    } else if (key_is(k, kl, "bbox")) {
      if (!expect(c, '[')) return fail(c, "'bbox' must be 4 numbers");
      ws(c);
      if (c->p < c->end && *c->p == ']') { /* [] counts as no bbox (loadRes) */
        c->p++;
      } else {
        for (int i = 0; i < 4; i++)
          if ((i && !expect(c, ',')) || !number(c, &d->bbox[i]) || !isfinite(d->bbox[i]))
            return fail(c, "'bbox' must be 4 numbers");
        if (!expect(c, ']')) return fail(c, "'bbox' must be 4 numbers");
        d->has_bbox = 1;
      }
    } else if (key_is(k, kl, "segmentation")) {
      if (!segmentation(c, d, gt, want_segm, sbuf, scap)) return 0;
    } else if (!skip_value(c, 0))
      return 0;
    ws(c);
    if (c->p < c->end && *c->p == ',') {
      c->p++;
      continue;
    }
    if (!expect(c, '}')) return 0;
    break;
  }
  if (!have_img || !have_cat) return fail(c, "'image_id' and 'category_id' must be integers");
  if (!have_score) return fail(c, "missing or non-finite 'score'");
  ws(c);
  if (c->p != c->end) return fail(c, "expected ',' or ']' after the object");
  return 1;
}

static rv_status syntax_error(rv_ctx *ctx, const char *name, const char *json, const char *at, const char *what) {
  size_t line = 1, col = 1;
  for (const char *q = json; q < at; q++) {
    if (*q == '\n') {
      line++;
      col = 1;
    } else
      col++;
  }
  return rv_error(ctx, RV_ERR_FORMAT, "%s: malformed JSON near line %zu column %zu (%s)", name, line, col, what);
}

rv_status rv_coco_parse_results(rv_coco_results *r, const rv_coco *gt, const char *json, size_t len, const char *name,
                                rv_iou_type t, rv_coco_area_mode mode, int threads, rv_ctx *ctx) {
  memset(r, 0, sizeof *r);
  const char *end = json + len, *p = json;
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  if (p >= end || *p != '[')
    return p < end && *p == '{'
               ? rv_error(ctx, RV_ERR_FORMAT, "%s: results must be a JSON list of detections", name)
               : syntax_error(ctx, name, json, p, "expected '['");
  p++;
  /* element boundaries: top-level commas outside strings */
  size_t cap = 1024, n = 0;
  const char **starts = malloc(sizeof *starts * (cap + 1));
  if (!starts) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name);
  int depth = 0, instr = 0, closed = 0;
  const char *s = p;
  while (p < end && *p != '\0' && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  if (p < end && *p == ']') {
    closed = 1;
    p++;
  } else {
    s = p;
    for (; p < end; p++) {
      char ch = *p;
      if (instr) {
        if (ch == '\\') p++;
        else if (ch == '"') instr = 0;
        continue;
      }
      if (ch == '"') instr = 1;
      else if (ch == '{' || ch == '[') depth++;
      else if ((ch == '}' || ch == ']') && depth > 0) depth--;
      else if ((ch == ',' || ch == ']') && depth == 0) {
        if (n == cap) {
          cap *= 2;
          const char **ns = realloc(starts, sizeof *starts * (cap + 1));
          if (!ns) {
            free(starts);
            return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name);
          }
          starts = ns;
        }
        starts[n++] = s;
        s = p + 1;
        if (ch == ']') {
          closed = 1;
          p++;
          break;
        }
      }
    }
  }
  if (!closed) {
    free(starts);
    return syntax_error(ctx, name, json, end, "unterminated list");
  }
  starts[n] = p; /* one past the closing ']' */
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  if (p < end && *p != '\0') {
    free(starts);
    return syntax_error(ctx, name, json, p, "data after the list");
  }
  r->dets = calloc(n ? n : 1, sizeof *r->dets);
  if (!r->dets) {
    free(starts);
    return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name);
  }
  r->n = n;
  /* element 0 first: it decides whether masks matter (loadRes branch) */
  long first_bad = -1;
  char first_msg[200] = "";
  size_t maxlen = 0;
  for (size_t i = 0; i < n; i++) {
    size_t l = (size_t)(starts[i + 1] - starts[i]);
    if (l > maxlen) maxlen = l;
  }
  int want = t == RV_IOU_SEGM || mode == RV_COCO_AREA_MASK;
  char *sbuf0 = malloc(maxlen + 1);
  if (!sbuf0) {
    free(starts);
    rv_coco_results_free(r);
    return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", name);
  }
  if (n) {
    cursor c = {starts[0], starts[1] - 1, {0}};
    if (!element(&c, &r->dets[0], gt, 1, sbuf0, maxlen + 1)) {
      first_bad = 0;
      snprintf(first_msg, sizeof first_msg, "%s", c.err);
    }
    if (!r->dets[0].has_bbox) want = 1;
  }
  int nth = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel num_threads(nth)
  {
    char *sbuf = malloc(maxlen + 1);
#pragma omp for schedule(dynamic, 256)
    for (long i = 1; i < (long)n; i++) {
      cursor c = {starts[i], starts[i + 1] - 1, {0}};
      int ok = sbuf && element(&c, &r->dets[i], gt, want, sbuf, maxlen + 1);
      if (!ok) {
#pragma omp critical(rv_results_bad)
        if (first_bad < 0 || i < first_bad) {
          first_bad = i;
          snprintf(first_msg, sizeof first_msg, "%s", sbuf ? c.err : "out of memory");
        }
      }
    }
    free(sbuf);
  }
  free(sbuf0);
  free(starts);
  if (first_bad >= 0) {
    rv_coco_results_free(r);
    return rv_error(ctx, RV_ERR_FORMAT, "%s: results[%ld]: %s", name, first_bad, first_msg);
  }
  return RV_OK;
}
