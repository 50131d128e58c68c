/* Sharding without MPI: `--shard i/N` picks every N-th item of a sorted list (item k goes to
 * shard k mod N, so slow images spread evenly), and each shard writes a part file that
 * `ravlt merge` combines into exactly the single-run numbers.
 *
 *   rv_shard s;
 *   if (rv_shard_parse(&s, "2/3")) usage error;             // shards are numbered 0..N-1
 *   for (size_t k = 0; k < n; k++) if (rv_shard_has(&s, k)) run(k);
 *   rv_part_write_ade("part2.json", &s, n, names, n_mine, &areas, ctx);
 *
 *   rv_part p; rv_part_read(&p, "part2.json", ctx); ... rv_part_free(&p);
 *
 * Part files (JSON, written to a temporary name and renamed, so a part that exists is
 * complete):
 *  - ADE20K: {"ravlt_part": "ade20k", "shard": i, "num_shards": N, "total": T,
 *    "num_classes": C, "images": [file names], "intersect": [C int64], "union": [...],
 *    "pred": [...], "label": [...]}
 *  - COCO: a sidecar X.shard.json next to the results X.json (and X.segm.json):
 *    {"ravlt_part": "coco", "shard", "num_shards", "total", "ann": GT path or null,
 *    "results": "X.json", "segm_results": "X.segm.json" or null (names relative to the
 *    sidecar's folder), "images": [{"id", "file_name", "width", "height"}]}; the sidecar is
 *    written last. Given X.json, merge reads X.json itself (and X.segm.json), never another
 *    file the sidecar names, and refuses a sidecar naming another file.
 *  - both: "run" (rv_part_run: what produced the part; merge refuses parts of different
 *    runs) and, COCO, "detections" / "segm_detections" (merge refuses a results file whose
 *    count differs).
 */
#ifndef RV_APPS_SHARD_H
#define RV_APPS_SHARD_H

#include "eval/segmetrics.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
  int index, count; /* count 0 or 1: everything */
} rv_shard;

/* "i/N" with 0 <= i < N <= 1000000 -> 0, else -1. */
int rv_shard_parse(rv_shard *s, const char *spec);
static inline int rv_shard_has(const rv_shard *s, size_t k) {
  return s->count <= 1 || (int)(k % (size_t)s->count) == s->index;
}
/* Number of the first `total` items that shard s owns. */
size_t rv_shard_size(const rv_shard *s, size_t total);

typedef enum { RV_PART_COCO = 1, RV_PART_ADE20K = 2 } rv_part_kind;

typedef struct {
  int64_t id;
  int width, height;
  const char *file_name;
} rv_part_image;

typedef struct {
  char *path;
  rv_part_kind kind;
  char run[17];               /* "" when the part does not record it */
  long long detections, segm_detections; /* -1: not recorded */
  int shard, num_shards;
  size_t total;
  /* coco */
  char *ann;                  /* NULL if the part has no ground truth (ravlt detect) */
  char *results, *segm_results; /* resolved paths (segm NULL when no masks) */
  int64_t *ids; int *widths, *heights; char **file_names; /* n items */
  /* ade20k */
  char **names;               /* n items */
  rv_seg_areas areas;
  size_t n;
} rv_part;

/* What produced a part ("run": 16 hex digits, a digest of the weights file (or the model
 * name), the options that change results, the annotation file and the image list: parts of
 * one run carry the same) and, for COCO, how many detections its results files hold. */
typedef struct {
  char id[17];
  long long detections, segm_detections; /* -1: not recorded */
} rv_part_run;
/* 64-bit FNV-1a digest, fed piece by piece */
typedef struct {
  uint64_t h;
} rv_digest;
void rv_digest_init(rv_digest *d);
void rv_digest_bytes(rv_digest *d, const void *p, size_t n);
void rv_digest_str(rv_digest *d, const char *s); /* with its NUL, so "a","b" != "ab" */
/* the file's bytes; -1 (nothing fed) if it cannot be read */
int rv_digest_file(rv_digest *d, const char *path);
void rv_digest_hex(const rv_digest *d, char out[17]);
/* run->id from the weights (a file's bytes, else the name), the options string, the
 * annotation file (may be NULL) and d_items (the image list, fed by the caller). */
void rv_part_run_id(rv_part_run *run, const char *weights, const char *options, const char *ann, const rv_digest *items);

rv_status rv_part_write_coco(const char *sidecar, const rv_shard *s, size_t total, const char *ann,
                             const char *results, const char *segm_results,
                             const rv_part_image *imgs, size_t n, const rv_part_run *run, rv_ctx *ctx);
rv_status rv_part_write_ade(const char *path, const rv_shard *s, size_t total,
                            char *const *names, size_t n, const rv_seg_areas *a, const rv_part_run *run, rv_ctx *ctx);
/* Reads an ADE20K part or a COCO sidecar (given X.json, reads X.shard.json when X.json is a
 * results list). Errors name the file and the field. */
rv_status rv_part_read(rv_part *p, const char *path, rv_ctx *ctx);
void rv_part_free(rv_part *p);

/* Checks a set of parts: same kind, same N and total, every shard 0..N-1 exactly once, each
 * with its share of the items; sorts parts by shard index. */
rv_status rv_parts_check(rv_part *parts, size_t n, rv_ctx *ctx);

#endif
