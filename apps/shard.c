/* --shard i/N and the part files `ravlt merge` combines (see shard.h). */
#define _POSIX_C_SOURCE 200809L
#include "apps/shard.h"
#include "apps/eval_report.h"
#include "apps/json_writer.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int rv_shard_parse(rv_shard *s, const char *spec) {
  char *end;
  errno = 0;
  long i = strtol(spec, &end, 10);
  if (end == spec || *end != '/' || errno) return -1;
  const char *p = end + 1;
  long n = strtol(p, &end, 10);
  if (end == p || *end || errno) return -1;
  if (n < 1 || n > 1000000 || i < 0 || i >= n) return -1;
  s->index = (int)i;
  s->count = (int)n;
  return 0;
}

size_t rv_shard_size(const rv_shard *s, size_t total) {
  if (s->count <= 1) return total;
  size_t N = (size_t)s->count, i = (size_t)s->index;
  return total > i ? (total - i + N - 1) / N : 0;
}

void rv_digest_init(rv_digest *d) { d->h = 1469598103934665603ULL; }
void rv_digest_bytes(rv_digest *d, const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = d->h;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
  d->h = h;
}
void rv_digest_str(rv_digest *d, const char *s) { rv_digest_bytes(d, s ? s : "", s ? strlen(s) + 1 : 1); }
int rv_digest_file(rv_digest *d, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  unsigned char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) rv_digest_bytes(d, buf, n);
  fclose(f);
  return 0;
}
void rv_digest_hex(const rv_digest *d, char out[17]) { snprintf(out, 17, "%016llx", (unsigned long long)d->h); }

void rv_part_run_id(rv_part_run *run, const char *weights, const char *options, const char *ann, const rv_digest *items) {
  rv_digest d;
  rv_digest_init(&d);
  struct stat sb;
  rv_digest_str(&d, "weights");
  if (!(weights && stat(weights, &sb) == 0 && S_ISREG(sb.st_mode) && rv_digest_file(&d, weights) == 0)) rv_digest_str(&d, weights);
  rv_digest_str(&d, "options");
  rv_digest_str(&d, options);
  rv_digest_str(&d, "ann");
  if (ann) rv_digest_file(&d, ann);
  rv_digest_str(&d, "items");
  if (items) rv_digest_bytes(&d, &items->h, sizeof items->h);
  rv_digest_hex(&d, run->id);
}

/* A part file opened (a temporary until part_close) with the keys both kinds start with:
 * {"ravlt_part", "shard", "num_shards", "total" */
static rv_status part_open(rv_out_file *of, rv_jw *w, const char *path, const char *kind, const rv_shard *s, size_t total,
                           rv_ctx *ctx) {
  RV_TRY(rv_out_open(of, path, ctx));
  rv_jw_init(w, of->f);
  rv_jw_obj(w);
  rv_jw_key(w, "ravlt_part");
  rv_jw_str(w, kind);
  rv_jw_key(w, "shard");
  rv_jw_int(w, s->index);
  rv_jw_key(w, "num_shards");
  rv_jw_int(w, s->count > 0 ? s->count : 1);
  rv_jw_key(w, "total");
  rv_jw_int(w, (long long)total);
  return RV_OK;
}

/* "run" (and, coco, "detections", "segm_detections") */
static void part_run(rv_jw *w, const rv_part_run *run, int coco) {
  if (!run) return;
  rv_jw_key(w, "run");
  rv_jw_str(w, run->id);
  if (!coco) return;
  rv_jw_key(w, "detections");
  rv_jw_int(w, run->detections);
  rv_jw_key(w, "segm_detections");
  rv_jw_int(w, run->segm_detections);
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* The end of a part: its file closed (renamed into place) when everything was written. */
static rv_status part_close(rv_out_file *of, rv_jw *w, rv_ctx *ctx) {
  rv_jw_end(w);
  rv_jw_raw(w, "\n");
  if (!rv_jw_ok(w)) {
    rv_out_abort(of);
    return rv_error(ctx, RV_ERR_INTERNAL, "part JSON: nesting out of bounds");
  }
  return rv_out_close(of, ctx);
}

rv_status rv_part_write_coco(const char *sidecar, const rv_shard *s, size_t total, const char *ann,
                             const char *results, const char *segm_results,
                             const rv_part_image *imgs, size_t n, const rv_part_run *run, rv_ctx *ctx) {
  rv_out_file of;
  rv_jw w;
  RV_TRY(part_open(&of, &w, sidecar, "coco", s, total, ctx));
  rv_jw_key(&w, "ann");
  rv_jw_str(&w, ann);
  rv_jw_key(&w, "results");
  rv_jw_str(&w, base_name(results));
  rv_jw_key(&w, "segm_results");
  rv_jw_str(&w, segm_results ? base_name(segm_results) : NULL);
  part_run(&w, run, 1);
  rv_jw_sep(&w, ",\n ");
  rv_jw_key(&w, "images");
  rv_jw_arr(&w);
  rv_jw_layout(&w, "\n  ", ",\n  "); /* an image a line */
  for (size_t i = 0; i < n; i++) {
    rv_jw_obj(&w);
    rv_jw_key(&w, "id");
    rv_jw_int(&w, (long long)imgs[i].id);
    rv_jw_key(&w, "width");
    rv_jw_int(&w, imgs[i].width);
    rv_jw_key(&w, "height");
    rv_jw_int(&w, imgs[i].height);
    rv_jw_key(&w, "file_name");
    rv_jw_str(&w, imgs[i].file_name ? imgs[i].file_name : "");
    rv_jw_end(&w);
  }
  rv_jw_end(&w);
  return part_close(&of, &w, ctx);
}

rv_status rv_part_write_ade(const char *path, const rv_shard *s, size_t total, char *const *names, size_t n,
                            const rv_seg_areas *a, const rv_part_run *run, rv_ctx *ctx) {
  rv_out_file of;
  rv_jw w;
  RV_TRY(part_open(&of, &w, path, "ade20k", s, total, ctx));
  rv_jw_key(&w, "num_classes");
  rv_jw_int(&w, a->num_classes);
  part_run(&w, run, 0);
  const int64_t *arr[4] = {a->intersect, a->union_, a->pred, a->label};
  const char *nm[4] = {"intersect", "union", "pred", "label"};
  for (int j = 0; j < 4; j++) { /* an area list a line */
    rv_jw_sep(&w, ",\n ");
    rv_jw_key(&w, nm[j]);
    rv_jw_arr(&w);
    for (int k = 0; k < a->num_classes; k++) rv_jw_int(&w, (long long)arr[j][k]);
    rv_jw_end(&w);
  }
  rv_jw_sep(&w, ",\n ");
  rv_jw_key(&w, "images");
  rv_jw_arr(&w);
  for (size_t i = 0; i < n; i++) rv_jw_str(&w, names[i]);
  rv_jw_end(&w);
  return part_close(&of, &w, ctx);
}

static rv_status read_text(char **out, size_t *len, const char *path, rv_ctx *ctx) {
  FILE *f = fopen(path, "rb");
  if (!f) return rv_error(ctx, RV_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  while (b) {
    size_t r = fread(b + n, 1, cap - n - 1, f);
    n += r;
    if (n + 1 < cap) break;
    char *nb = realloc(b, cap * 2);
    if (!nb) { free(b); b = NULL; break; }
    b = nb;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (!b) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", path);
  if (bad) { free(b); return rv_error(ctx, RV_ERR_IO, "%s: read error", path); }
  b[n] = 0;
  *out = b;
  *len = n;
  return RV_OK;
}

void rv_part_free(rv_part *p) {
  free(p->path);
  free(p->ann);
  free(p->results);
  free(p->segm_results);
  free(p->ids);
  free(p->widths);
  free(p->heights);
  for (size_t i = 0; p->file_names && i < p->n; i++) free(p->file_names[i]);
  free(p->file_names);
  for (size_t i = 0; p->names && i < p->n; i++) free(p->names[i]);
  free(p->names);
  rv_seg_areas_free(&p->areas);
  memset(p, 0, sizeof *p);
}

/* integer field; 0 if ok */
static int get_int(const cJSON *o, const char *key, double lo, double hi, long long *v) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(x)) return -1;
  double d = x->valuedouble;
  if (!(d >= lo && d <= hi) || d != (double)(long long)d) return -1;
  *v = (long long)d;
  return 0;
}

/* path of `name` relative to the folder of `rel_to` (absolute names stay) */
static char *resolve(const char *rel_to, const char *name) {
  const char *sl = strrchr(rel_to, '/');
  size_t dl = (name[0] == '/' || !sl) ? 0 : (size_t)(sl - rel_to) + 1;
  size_t n = dl + strlen(name) + 1;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%.*s%s", (int)dl, rel_to, name);
  return s;
}

#define BAD(...) do { st = rv_error(ctx, RV_ERR_FORMAT, __VA_ARGS__); goto done; } while (0)

rv_status rv_part_read(rv_part *p, const char *path, rv_ctx *ctx) {
  memset(p, 0, sizeof *p);
  char *text = NULL;
  size_t len = 0;
  RV_TRY(read_text(&text, &len, path, ctx));
  rv_status st = RV_OK;
  cJSON *j = NULL;
  const char *ws = text;
  while (*ws == ' ' || *ws == '\n' || *ws == '\t' || *ws == '\r') ws++;
  if (*ws == '[') { /* a results list: its sidecar */
    char side[4096];
    rv_cli_sibling_path(side, sizeof side, path, ".shard.json");
    free(text);
    struct stat sb;
    if (stat(side, &sb) != 0)
      return rv_error(ctx, RV_ERR_NOTFOUND, "%s: a results list without its part description %s (not written by "
                      "--shard, or that shard did not finish)", path, side);
    RV_TRY(rv_part_read(p, side, ctx));
    /* exactly the file given: the sidecar must name it */
    if (p->kind != RV_PART_COCO || !p->results || strcmp(base_name(p->results), base_name(path)) != 0) {
      rv_status e = rv_error(ctx, RV_ERR_FORMAT, "%s: its part description %s names another results file (%s)", path, side,
                             p->results ? base_name(p->results) : "none");
      rv_part_free(p);
      return e;
    }
    char *given = strdup(path);
    if (!given) { rv_part_free(p); return rv_error(ctx, RV_ERR_NOMEM, "out of memory"); }
    free(p->results);
    p->results = given;
    if (p->segm_results) {
      char sp[4096];
      rv_cli_sibling_path(sp, sizeof sp, path, ".segm.json");
      free(p->segm_results);
      if (!(p->segm_results = strdup(sp))) { rv_part_free(p); return rv_error(ctx, RV_ERR_NOMEM, "out of memory"); }
    }
    return RV_OK;
  }
  p->path = strdup(path);
  if (!p->path) { free(text); return rv_error(ctx, RV_ERR_NOMEM, "out of memory"); }
  j = cJSON_ParseWithLength(text, len);
  if (!j) BAD("%s: malformed JSON", path);
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "ravlt_part");
  if (!cJSON_IsString(kind)) BAD("%s: not a ravlt part file (no \"ravlt_part\")", path);
  if (!strcmp(kind->valuestring, "coco")) p->kind = RV_PART_COCO;
  else if (!strcmp(kind->valuestring, "ade20k")) p->kind = RV_PART_ADE20K;
  else BAD("%s: unknown part kind '%s'", path, kind->valuestring);
  long long v;
  if (get_int(j, "num_shards", 1, 1000000, &v)) BAD("%s: 'num_shards' must be an integer 1..1000000", path);
  p->num_shards = (int)v;
  if (get_int(j, "shard", 0, p->num_shards - 1, &v)) BAD("%s: 'shard' must be an integer 0..%d", path, p->num_shards - 1);
  p->shard = (int)v;
  if (get_int(j, "total", 0, 1e15, &v)) BAD("%s: 'total' must be a non-negative integer", path);
  p->total = (size_t)v;
  const cJSON *run = cJSON_GetObjectItemCaseSensitive(j, "run");
  if (run && !(cJSON_IsString(run) && strlen(run->valuestring) == 16)) BAD("%s: 'run' must be 16 hex digits", path);
  if (run) memcpy(p->run, run->valuestring, 17);
  p->detections = p->segm_detections = -1;
  if (cJSON_GetObjectItemCaseSensitive(j, "detections") && get_int(j, "detections", -1, 1e15, &p->detections))
    BAD("%s: 'detections' must be a count", path);
  if (cJSON_GetObjectItemCaseSensitive(j, "segm_detections") && get_int(j, "segm_detections", -1, 1e15, &p->segm_detections))
    BAD("%s: 'segm_detections' must be a count", path);
  const cJSON *imgs = cJSON_GetObjectItemCaseSensitive(j, "images");
  if (!cJSON_IsArray(imgs)) BAD("%s: 'images' must be a list", path);
  size_t n = (size_t)cJSON_GetArraySize(imgs);
  p->n = n;
  if (p->kind == RV_PART_COCO) {
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(j, "ann");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "results");
    const cJSON *segm = cJSON_GetObjectItemCaseSensitive(j, "segm_results");
    if (!cJSON_IsString(res)) BAD("%s: 'results' must be a file name", path);
    if (cJSON_IsString(ann) && !(p->ann = strdup(ann->valuestring))) BAD("out of memory");
    if (!(p->results = resolve(path, res->valuestring))) BAD("out of memory");
    if (cJSON_IsString(segm) && !(p->segm_results = resolve(path, segm->valuestring))) BAD("out of memory");
    p->ids = calloc(n + 1, sizeof *p->ids);
    p->widths = calloc(n + 1, sizeof *p->widths);
    p->heights = calloc(n + 1, sizeof *p->heights);
    p->file_names = calloc(n + 1, sizeof *p->file_names);
    if (!p->ids || !p->widths || !p->heights || !p->file_names) BAD("out of memory");
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, imgs) {
      long long id, w, h;
      if (get_int(e, "id", -9007199254740992.0, 9007199254740992.0, &id) || get_int(e, "width", 1, INT_MAX, &w) ||
          get_int(e, "height", 1, INT_MAX, &h))
        BAD("%s: images[%zu]: needs integer 'id', 'width', 'height'", path, i);
      const cJSON *fn = cJSON_GetObjectItemCaseSensitive(e, "file_name");
      p->ids[i] = id;
      p->widths[i] = (int)w;
      p->heights[i] = (int)h;
      if (!(p->file_names[i] = strdup(cJSON_IsString(fn) ? fn->valuestring : ""))) BAD("out of memory");
      i++;
    }
  } else {
    if (get_int(j, "num_classes", 1, 100000, &v)) BAD("%s: 'num_classes' must be an integer 1..100000", path);
    if ((st = rv_seg_areas_init(&p->areas, (int)v, ctx)) != RV_OK) goto done;
    int64_t *arr[4] = {p->areas.intersect, p->areas.union_, p->areas.pred, p->areas.label};
    const char *nm[4] = {"intersect", "union", "pred", "label"};
    for (int a = 0; a < 4; a++) {
      const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, nm[a]);
      if (!cJSON_IsArray(x) || cJSON_GetArraySize(x) != (int)v)
        BAD("%s: '%s' must be a list of %lld counts", path, nm[a], v);
      int k = 0;
      const cJSON *e;
      cJSON_ArrayForEach(e, x) {
        double d = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(int64_t)d)
          BAD("%s: %s[%d] must be a count 0..2^53", path, nm[a], k);
        arr[a][k++] = (int64_t)d;
      }
    }
    p->names = calloc(n + 1, sizeof *p->names);
    if (!p->names) BAD("out of memory");
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, imgs) {
      if (!cJSON_IsString(e)) BAD("%s: images[%zu] must be a file name", path, i);
      if (!(p->names[i++] = strdup(e->valuestring))) BAD("out of memory");
    }
  }
done:
  cJSON_Delete(j);
  free(text);
  if (st != RV_OK) rv_part_free(p);
  return st;
}

typedef struct {
  int64_t id;
  const char *name;
  size_t part;
} item_ref;

static int cmp_item(const void *a, const void *b) {
  const item_ref *x = a, *y = b;
  if (x->name) return strcmp(x->name, y->name);
  return (x->id > y->id) - (x->id < y->id);
}

static int cmp_shard(const void *a, const void *b) {
  const rv_part *x = a, *y = b;
  return (x->shard > y->shard) - (x->shard < y->shard);
}

rv_status rv_parts_check(rv_part *parts, size_t n, rv_ctx *ctx) {
  if (n == 0) return rv_error(ctx, RV_ERR_ARG, "no part files");
  const rv_part *a = &parts[0];
  for (size_t i = 1; i < n; i++) {
    const rv_part *b = &parts[i];
    if (b->kind != a->kind)
      return rv_error(ctx, RV_ERR_FORMAT, "%s and %s: parts of different kinds (coco / ade20k)", a->path, b->path);
    if (strcmp(a->run, b->run) != 0)
      return rv_error(ctx, RV_ERR_FORMAT, "%s (run %s) and %s (run %s) come from different runs (weights, options that change "
                      "results, annotations or image list differ)", a->path, a->run[0] ? a->run : "not recorded", b->path,
                      b->run[0] ? b->run : "not recorded");
    if (b->num_shards != a->num_shards || b->total != a->total)
      return rv_error(ctx, RV_ERR_FORMAT, "%s (shard of %d, %zu items) and %s (shard of %d, %zu items) come from different runs",
                      a->path, a->num_shards, a->total, b->path, b->num_shards, b->total);
  }
  qsort(parts, n, sizeof *parts, cmp_shard);
  for (size_t i = 1; i < n; i++)
    if (parts[i].shard == parts[i - 1].shard)
      return rv_error(ctx, RV_ERR_FORMAT, "shard %d/%d given twice: %s and %s", parts[i].shard, parts[i].num_shards,
                      parts[i - 1].path, parts[i].path);
  int N = parts[0].num_shards;
  if ((int)n != N) {
    int miss = 0;
    for (size_t i = 0; i < n && parts[i].shard == miss; i++) miss++;
    return rv_error(ctx, RV_ERR_FORMAT, "shard %d/%d is missing (%zu of %d parts given)", miss, N, n, N);
  }
  for (size_t i = 0; i < n; i++) {
    rv_shard s = {parts[i].shard, N};
    size_t want = rv_shard_size(&s, parts[i].total);
    if (parts[i].n != want)
      return rv_error(ctx, RV_ERR_FORMAT, "%s: shard %d/%d lists %zu images, its share of %zu is %zu (incomplete part)",
                      parts[i].path, parts[i].shard, N, parts[i].n, parts[i].total, want);
  }
  /* no item in two parts */
  size_t tot = 0;
  for (size_t i = 0; i < n; i++) tot += parts[i].n;
  item_ref *all = malloc(sizeof *all * (tot + 1));
  if (!all) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < parts[i].n; k++) {
      all[m].id = parts[i].ids ? parts[i].ids[k] : 0;
      all[m].name = parts[i].kind == RV_PART_ADE20K ? parts[i].names[k] : NULL;
      all[m++].part = i;
    }
  qsort(all, m, sizeof *all, cmp_item);
  for (size_t k = 1; k < m; k++)
    if (cmp_item(&all[k - 1], &all[k]) == 0) {
      char what[512];
      if (all[k].name) snprintf(what, sizeof what, "image %s", all[k].name);
      else snprintf(what, sizeof what, "image id %lld", (long long)all[k].id);
      rv_status st = rv_error(ctx, RV_ERR_FORMAT, "%s is in two parts: %s and %s (overlapping shards)", what,
                              parts[all[k - 1].part].path, parts[all[k].part].path);
      free(all);
      return st;
    }
  free(all);
  return RV_OK;
}
