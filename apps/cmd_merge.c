/* `ravlt merge PART...`: combine the parts written by `--shard i/N` runs (eval coco, eval
 * ade20k, detect) into exactly the numbers of one run over the whole set.
 *
 * ADE20K parts carry int64 per-class areas: they are summed (exact). COCO parts carry their
 * results files and image lists: the detections are put back in the single run's order
 * (item k of the sorted list came from shard k mod N, position k / N), numbered as one
 * results file would number them, and evaluated once, so the stats are bit-identical. */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "apps/eval_report.h"
#include "apps/json_writer.h"
#include "apps/outputs.h"
#include "apps/shard.h"
#include "apps/commands.h"
#include <stddef.h>
#include "datasets/ade20k.h"
#include "datasets/coco.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *ann, *output, *json, *area_mode;
  int mmdet_maxdets;
} merge_opts;

static const rv_opt OPTS[] = {
    {"--ann", NULL, RV_OPT_STR, offsetof(merge_opts, ann), 0, 0, NULL, "GT.json",
     "ground truth for coco parts (default: the one the parts name; parts\n"
     "from `ravlt detect` have none: then only --output is written)", 0},
    {"--output", "--out", RV_OPT_STR, offsetof(merge_opts, output), 0, 0, NULL, "FILE",
     "write the merged result: coco: results JSON FILE (+ FILE.segm.json);\n"
     "ade20k: the merged areas as one part", 0},
    {"--json", NULL, RV_OPT_STR, offsetof(merge_opts, json), 0, 0, NULL, "FILE",
     "evaluation summary as `ravlt eval --json` writes it ('-': stdout, the\n"
     "tables then go to stderr; one summary only: not for parts with masks)", 0},
    {"--area-mode", NULL, RV_OPT_CHOICE, offsetof(merge_opts, area_mode), 0, 0, "box|mask", "M", "as for `ravlt eval coco`", 0},
    {"--mmdet-maxdets", NULL, RV_OPT_FLAG, offsetof(merge_opts, mmdet_maxdets), 0, 0, NULL, NULL, "as for `ravlt eval coco`", 0},
    RV_OPT_END};

const rv_cmd_spec rv_spec_merge = {
    "merge", "[options] PART...",
    "Combines the parts of a sharded run (`--shard i/N` on eval coco, eval ade20k or detect)\n"
    "into the single-run result. Every shard 0..N-1 must be given exactly once; parts of\n"
    "different runs, missing, duplicated or incomplete shards are refused.\n"
    "  eval ade20k parts (PART.json): summed int64 areas, mmseg's table and summary\n"
    "  coco parts (R.json or R.shard.json): detections in the single-run order, evaluated with\n"
    "                    the parts' ground truth (bbox, and segm when they have masks)\n",
    OPTS, -1, NULL,
    "  ravlt merge parts/p*.json --ann instances_val2017.json --json stats.json --output results.json\n"
    "  ravlt merge part0.json part1.json --json -\n",
    sizeof(merge_opts)};

typedef struct {
  int64_t id;
  size_t pos;
} id_pos;

static int cmp_id_pos(const void *a, const void *b) {
  const id_pos *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

/* Load every part's results of type t and concatenate them in the single-run order. */
static rv_status merge_coco_results(rv_coco_results *out, const rv_part *parts, size_t np, const rv_coco *gt,
                                    rv_iou_type t, rv_coco_area_mode mode, int threads, rv_ctx *ctx) {
  memset(out, 0, sizeof *out);
  rv_coco_results *res = calloc(np, sizeof *res);
  size_t **start = calloc(np, sizeof *start); /* per part: first det of local image j (n + 1 entries) */
  size_t **perm = calloc(np, sizeof *perm);
  rv_status st = RV_OK;
  if (!res || !start || !perm) {
    st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    goto done;
  }
  size_t total = 0;
  for (size_t p = 0; p < np && st == RV_OK; p++) {
    const rv_part *pt = &parts[p];
    const char *file = t == RV_IOU_SEGM ? pt->segm_results : pt->results;
    if (!file) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: no mask results (the other parts have them)", pt->path);
      break;
    }
    if ((st = rv_coco_load_results(&res[p], gt, file, t, mode, threads, ctx)) != RV_OK) break;
    long long want = t == RV_IOU_SEGM ? pt->segm_detections : pt->detections;
    if (want >= 0 && (long long)res[p].n != want) {
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: %zu detections, its part description %s says %lld (changed or cut short)", file,
                    res[p].n, pt->path, want);
      break;
    }
    id_pos *map = malloc(sizeof *map * (pt->n + 1));
    start[p] = calloc(pt->n + 2, sizeof **start);
    perm[p] = malloc(sizeof **perm * (res[p].n + 1));
    size_t *loc = malloc(sizeof *loc * (res[p].n + 1));
    if (!map || !start[p] || !perm[p] || !loc) {
      free(map);
      free(loc);
      st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
      break;
    }
    for (size_t j = 0; j < pt->n; j++) map[j] = (id_pos){pt->ids[j], j};
    qsort(map, pt->n, sizeof *map, cmp_id_pos);
    for (size_t d = 0; d < res[p].n && st == RV_OK; d++) {
      id_pos key = {res[p].dets[d].image_id, 0};
      const id_pos *hit = bsearch(&key, map, pt->n, sizeof *map, cmp_id_pos);
      if (!hit)
        st = rv_error(ctx, RV_ERR_FORMAT, "%s: results[%zu]: image_id %lld is not one of this part's images (%s)", file,
                      d, (long long)key.id, pt->path);
      else
        loc[d] = hit->pos;
    }
    if (st == RV_OK) { /* stable counting sort by local image position */
      for (size_t d = 0; d < res[p].n; d++) start[p][loc[d] + 1]++;
      for (size_t j = 0; j < pt->n; j++) start[p][j + 1] += start[p][j];
      size_t *fill = malloc(sizeof *fill * (pt->n + 1));
      if (!fill) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
      else {
        memcpy(fill, start[p], sizeof *fill * (pt->n + 1));
        for (size_t d = 0; d < res[p].n; d++) perm[p][fill[loc[d]]++] = d;
        free(fill);
      }
    }
    free(map);
    free(loc);
    total += res[p].n;
  }
  if (st != RV_OK) goto done;
  out->dets = malloc(sizeof *out->dets * (total + 1));
  if (!out->dets) {
    st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    goto done;
  }
  size_t N = np, T = parts[0].total;
  for (size_t k = 0; k < T; k++) {
    size_t p = k % N, j = k / N;
    for (size_t q = start[p][j]; q < start[p][j + 1]; q++) {
      rv_coco_obj *o = &res[p].dets[perm[p][q]];
      out->dets[out->n] = *o;
      memset(&o->segm, 0, sizeof o->segm); /* moved */
      out->dets[out->n].id = (int64_t)out->n + 1;
      out->n++;
    }
  }
  for (size_t p = 0; p < np; p++) {
    out->n_unknown_category += res[p].n_unknown_category;
    rv_coco_results_take_memory(out, &res[p]); /* the moved masks borrow from it */
  }
done:
  for (size_t p = 0; res && p < np; p++) {
    rv_coco_results_free(&res[p]);
    if (start) free(start[p]);
    if (perm) free(perm[p]);
  }
  free(res);
  free(start);
  free(perm);
  return st;
}

/* A ground truth with the parts' images and nothing else (to read `ravlt detect` parts). */
static rv_status images_only_gt(rv_coco **gt, const rv_part *parts, size_t np, rv_ctx *ctx) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_jw w;
  rv_jw_init(&w, f);
  rv_jw_obj(&w);
  rv_jw_key(&w, "images");
  rv_jw_arr(&w);
  for (size_t p = 0; p < np; p++)
    for (size_t j = 0; j < parts[p].n; j++) {
      rv_jw_obj(&w);
      rv_jw_key(&w, "id");
      rv_jw_int(&w, (long long)parts[p].ids[j]);
      rv_jw_key(&w, "width");
      rv_jw_int(&w, parts[p].widths[j]);
      rv_jw_key(&w, "height");
      rv_jw_int(&w, parts[p].heights[j]);
      rv_jw_key(&w, "file_name");
      rv_jw_str(&w, parts[p].file_names[j]);
      rv_jw_end(&w);
    }
  rv_jw_end(&w);
  for (int k = 0; k < 2; k++) { /* no annotations, no categories */
    rv_jw_key(&w, k ? "categories" : "annotations");
    rv_jw_arr(&w);
    rv_jw_end(&w);
  }
  rv_jw_end(&w);
  int bad = !rv_jw_ok(&w);
  fclose(f);
  if (bad || !buf) {
    free(buf);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  rv_status st = rv_coco_load_mem(gt, buf, len, "part images", 1, 0, ctx);
  free(buf);
  return st;
}

static rv_status merge_coco(rv_part *parts, size_t np, const char *ann, const char *out, const char *json,
                            rv_coco_area_mode mode, int mmdet, rv_ctx *ctx) {
  int threads = rv_cli.threads;
  int masks = parts[0].segm_results != NULL;
  for (size_t p = 1; p < np; p++)
    if ((parts[p].segm_results != NULL) != masks)
      return rv_error(ctx, RV_ERR_FORMAT, "%s and %s: one part has mask results, the other not", parts[0].path,
                      parts[p].path);
  if (!ann) {
    ann = parts[0].ann;
    for (size_t p = 1; p < np && ann; p++)
      if (!parts[p].ann || strcmp(parts[p].ann, ann))
        return rv_error(ctx, RV_ERR_FORMAT, "%s and %s were evaluated against different ground truths (%s, %s); give --ann",
                        parts[0].path, parts[p].path, ann, parts[p].ann ? parts[p].ann : "none");
  }
  if (!ann && !out)
    return rv_error(ctx, RV_ERR_ARG, "%s: parts without a ground truth (ravlt detect): give --ann GT.json to "
                    "evaluate or --out to write the merged results", parts[0].path);
  { /* the files the parts name are inputs too (the ground truth, the results): never written over */
    char so[4096] = "", sj[4096] = "";
    if (out) rv_cli_sibling_path(so, sizeof so, out, ".segm.json");
    if (json) rv_cli_sibling_path(sj, sizeof sj, json, ".segm.json");
    const char *outs[4] = {out, out ? so : NULL, json, json ? sj : NULL};
    const char **ins = malloc(sizeof *ins * (2 * np + 1));
    if (!ins) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    int nin = 0;
    ins[nin++] = ann;
    for (size_t p = 0; p < np; p++) {
      ins[nin++] = parts[p].results;
      ins[nin++] = parts[p].segm_results;
    }
    rv_status cst = rv_cli_outputs_check(outs, NULL, 4, ins, nin, ctx);
    free(ins);
    RV_TRY(cst);
  }
  rv_coco *gt = NULL;
  rv_coco_results box = {0}, seg = {0};
  rv_status st;
  if (ann) {
    if ((st = rv_coco_load(&gt, ann, masks, threads, ctx)) != RV_OK) return st;
    if (gt->n_images != parts[0].total)
      st = rv_error(ctx, RV_ERR_FORMAT, "%s has %zu images but the parts were made over %zu", ann, gt->n_images,
                    parts[0].total);
    for (size_t p = 0; p < np && st == RV_OK; p++)
      for (size_t j = 0; j < parts[p].n && st == RV_OK; j++)
        if (!rv_coco_find_image(gt, parts[p].ids[j]))
          st = rv_error(ctx, RV_ERR_FORMAT, "%s: image %lld is not in %s", parts[p].path, (long long)parts[p].ids[j], ann);
    if (st != RV_OK) goto done;
  } else if ((st = images_only_gt(&gt, parts, np, ctx)) != RV_OK)
    goto done;
  double t0 = rv_now();
  if ((st = merge_coco_results(&box, parts, np, gt, RV_IOU_BBOX, mode, threads, ctx)) != RV_OK) goto done;
  if (masks && (st = merge_coco_results(&seg, parts, np, gt, RV_IOU_SEGM, mode, threads, ctx)) != RV_OK) goto done;
  rv_log(ctx, RV_LOG_INFO, "merged %zu parts: %zu images, %zu detections (%.2f s)", np, parts[0].total, box.n,
         rv_now() - t0);
  if (out) {
    char so[4096];
    rv_cli_sibling_path(so, sizeof so, out, ".segm.json");
    if ((st = rv_coco_results_write(out, box.dets, box.n, 0, ctx)) != RV_OK) goto done;
    if (masks && (st = rv_coco_results_write(so, seg.dets, seg.n, 1, ctx)) != RV_OK) goto done;
  }
  if (ann && masks && rv_cli_json_stdout(json)) {
    st = rv_error(ctx, RV_ERR_ARG, "--json -: these parts have masks, whose summary is a second file: give --json FILE");
    goto done;
  }
  if (ann) {
    rv_coco_report_opts ro = {mode, mmdet, threads, masks, NULL, 0};
    if ((st = rv_cli_coco_report(gt, &box, RV_IOU_BBOX, &ro, json, NULL, ctx)) != RV_OK) goto done;
    if (masks) {
      char sj[4096];
      if (json) rv_cli_sibling_path(sj, sizeof sj, json, ".segm.json");
      printf("\n");
      st = rv_cli_coco_report(gt, &seg, RV_IOU_SEGM, &ro, json ? sj : NULL, NULL, ctx);
    }
  }
done:
  rv_coco_results_free(&box);
  rv_coco_results_free(&seg);
  rv_coco_free(gt);
  return st;
}

static rv_status merge_ade(rv_part *parts, size_t np, const char *out, const char *json, rv_ctx *ctx) {
  rv_seg_areas acc = {0};
  RV_TRY(rv_seg_areas_init(&acc, parts[0].areas.num_classes, ctx));
  rv_status st = RV_OK;
  for (size_t p = 0; p < np && st == RV_OK; p++) {
    if (parts[p].areas.num_classes != acc.num_classes)
      st = rv_error(ctx, RV_ERR_FORMAT, "%s has %d classes, %s %d", parts[p].path, parts[p].areas.num_classes,
                    parts[0].path, acc.num_classes);
    else
      rv_seg_areas_merge(&acc, &parts[p].areas);
  }
  if (st == RV_OK && out) {
    size_t T = parts[0].total;
    char **names = malloc(sizeof *names * (T + 1));
    if (!names) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    for (size_t k = 0; names && k < T; k++) names[k] = parts[k % np].names[k / np];
    rv_shard whole = {0, 1};
    rv_part_run run = {"", -1, -1}; /* the merged part keeps its run */
    memcpy(run.id, parts[0].run, sizeof run.id);
    if (st == RV_OK) st = rv_part_write_ade(out, &whole, T, names, T, &acc, run.id[0] ? &run : NULL, ctx);
    free(names);
  }
  if (st == RV_OK) st = rv_cli_ade_report(&acc, parts[0].total, NULL, json, ctx);
  rv_seg_areas_free(&acc);
  return st;
}

int rv_cmd_merge(int argc, char **argv) {
  const char *cmd = "merge";
  merge_opts mo = {NULL, NULL, NULL, "box", 0};
  int n;
  int prc = rv_cli_parse(&rv_spec_merge, &mo, argc, argv, &n);
  if (prc >= 0) return prc;
  char **files = argv;
  const char *ann = mo.ann, *out = mo.output, *json = mo.json;
  rv_coco_area_mode mode = !strcmp(mo.area_mode, "mask") ? RV_COCO_AREA_MASK : RV_COCO_AREA_BOX;
  int mmdet = mo.mmdet_maxdets;
  if (n == 0) return rv_cli_usage_error(cmd, "no part files (the outputs of --shard i/N runs)");
  rv_ctx *ctx = rv_cli_ctx();
  rv_part *parts = calloc((size_t)n, sizeof *parts);
  int rc = 0, nread = 0;
  rv_status st = ctx && parts ? RV_OK : RV_ERR_NOMEM;
  if (!parts && ctx) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (; st == RV_OK && nread < n; nread++)
    if ((st = rv_part_read(&parts[nread], files[nread], ctx)) != RV_OK) break;
  if (st == RV_OK) st = rv_parts_check(parts, (size_t)n, ctx);
  if (st == RV_OK) {
    if (parts[0].kind == RV_PART_ADE20K) {
      if (ann) st = rv_error(ctx, RV_ERR_ARG, "--ann is for coco parts; %s is an ade20k part", parts[0].path);
      else st = merge_ade(parts, (size_t)n, out, json, ctx);
    } else
      st = merge_coco(parts, (size_t)n, ann, out, json, mode, mmdet, ctx);
  }
  if (st != RV_OK) rc = ctx ? rv_cli_fail(ctx, cmd, st) : 1;
  for (int i = 0; parts && i < nread; i++) rv_part_free(&parts[i]);
  free(parts);
  rv_ctx_free(ctx);
  return rc;
}
