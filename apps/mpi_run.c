/* MPI scale-out of `ravlt eval` (apps/mpi_run.h). Everything MPI is behind RAVLT_WITH_MPI;
 * the default build compiles the one-process stubs at the end. */
#define _GNU_SOURCE
#include "apps/mpi_run.h"

#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Ranks in the job as the launcher's environment states it (0: not launched by MPI). */
static int env_world_size(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    /* SLURM_NTASKS alone is an allocation, not a launch: only with a step rank */
    if (i == 3 && !getenv("PMIX_RANK") && !getenv("PMI_RANK")) continue;
    if (v && *v) return atoi(v) > 0 ? atoi(v) : 1;
  }
  return getenv("PMIX_RANK") || getenv("PMI_RANK") ? 1 : 0;
}

/* Threads per rank: cores / ranks on this node, no more than the CPUs this process may run
 * on (a launcher that binds a rank to one core gives 1), at least 1. */
static int threads_per_rank(int local_ranks) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1) cores = 1;
  long t = cores / (local_ranks > 0 ? local_ranks : 1);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    long mine = CPU_COUNT(&set);
    if (mine > 0 && mine < t) t = mine;
  }
  return t < 1 ? 1 : (int)t;
}

#ifdef RAVLT_WITH_MPI
#include <mpi.h>

#define CHUNK ((size_t)1 << 30) /* point-to-point messages of at most 1 GiB (int counts) */

/* The process's MPI state: set once by rv_mpi_start (apps/ only, not the library). */
static struct {
  int started, rank, size;
} mpi = {0, 0, 1};

int rv_mpi_built(void) { return 1; }
int rv_mpi_rank(void) { return mpi.rank; }
int rv_mpi_size(void) { return mpi.size; }

int rv_mpi_start(int *argc, char ***argv, rv_opts_globals *g) {
  if (env_world_size() == 0) return 0; /* a plain run never initialises MPI */
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "ravlt: MPI_Init failed\n");
    return -1;
  }
  mpi.started = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi.size);
  MPI_Comm node;
  int local = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, mpi.rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
  }
  int given = g->threads > 0;
  if (!given) g->threads = threads_per_rank(local);
  omp_set_num_threads(g->threads);
  if (mpi.rank == 0 && !g->quiet)
    fprintf(stderr, "ravlt: MPI: %d rank%s (%d on this node), %d thread%s per rank%s\n", mpi.size,
            mpi.size == 1 ? "" : "s", local, g->threads, g->threads == 1 ? "" : "s",
            given ? " (--threads)" : "");
  if (mpi.rank > 0) { /* rank 0 prints the results and the errors */
    g->quiet = 1;
    if (!freopen("/dev/null", "w", stdout)) fclose(stdout);
  }
  return 0;
}

void rv_mpi_end(void) {
  if (mpi.started) {
    fflush(stdout);
    MPI_Finalize();
    mpi.started = 0;
  }
}

rv_status rv_mpi_agree(rv_status st, rv_ctx *ctx) {
  if (mpi.size <= 1) return st;
  int mine = (int)st, *all = malloc(sizeof *all * (size_t)mpi.size);
  if (!all) {
    MPI_Abort(MPI_COMM_WORLD, 1); /* cannot keep the ranks in step */
    return RV_ERR_NOMEM;
  }
  MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
  int bad = -1, n_bad = 0;
  for (int r = 0; r < mpi.size; r++)
    if (all[r] != RV_OK) {
      if (bad < 0) bad = r;
      n_bad++;
    }
  rv_status first = bad < 0 ? RV_OK : (rv_status)all[bad];
  free(all);
  if (bad < 0) return RV_OK;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", rv_ctx_errmsg(ctx));
  if (!msg[0]) snprintf(msg, sizeof msg, "%s", rv_status_str(first));
  if (bad > 0) {
    if (mpi.rank == bad) MPI_Send(msg, (int)sizeof msg, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
    else if (mpi.rank == 0) MPI_Recv(msg, (int)sizeof msg, MPI_CHAR, bad, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    msg[sizeof msg - 1] = 0;
  }
  if (n_bad > 1)
    return rv_error(ctx, first, "rank %d of %d: %s (%d ranks failed)", bad, mpi.size, msg, n_bad);
  return rv_error(ctx, first, "rank %d of %d: %s", bad, mpi.size, msg);
}

rv_status rv_mpi_sum_i64(int64_t *buf, size_t n, rv_ctx *ctx) {
  if (mpi.size <= 1) return RV_OK;
  for (size_t i = 0; i < n; i += CHUNK / 8) {
    int c = (int)(n - i < CHUNK / 8 ? n - i : CHUNK / 8);
    int rc = mpi.rank == 0 ? MPI_Reduce(MPI_IN_PLACE, buf + i, c, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD)
                           : MPI_Reduce(buf + i, NULL, c, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return rv_error(ctx, RV_ERR_INTERNAL, "MPI_Reduce failed (%d)", rc);
  }
  return RV_OK;
}

rv_status rv_mpi_gather_bytes(char **all, size_t **offs, const void *buf, size_t len, rv_ctx *ctx) {
  *all = NULL;
  *offs = NULL;
  uint64_t mine = len, *lens = NULL;
  if (mpi.rank == 0 && !(lens = malloc(sizeof *lens * (size_t)mpi.size))) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Gather(&mine, 1, MPI_UINT64_T, lens, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (mpi.rank != 0) {
    for (size_t i = 0; i < len; i += CHUNK)
      MPI_Send((const char *)buf + i, (int)(len - i < CHUNK ? len - i : CHUNK), MPI_BYTE, 0, 8, MPI_COMM_WORLD);
    return RV_OK;
  }
  size_t *o = malloc(sizeof *o * ((size_t)mpi.size + 1));
  if (!o) MPI_Abort(MPI_COMM_WORLD, 1);
  o[0] = 0;
  for (int r = 0; r < mpi.size; r++) o[r + 1] = o[r] + (size_t)lens[r];
  free(lens);
  char *b = malloc(o[mpi.size] ? o[mpi.size] : 1);
  if (!b) MPI_Abort(MPI_COMM_WORLD, 1); /* the other ranks are already sending */
  if (len) memcpy(b, buf, len);
  for (int r = 1; r < mpi.size; r++)
    for (size_t i = o[r]; i < o[r + 1]; i += CHUNK)
      MPI_Recv(b + i, (int)(o[r + 1] - i < CHUNK ? o[r + 1] - i : CHUNK), MPI_BYTE, r, 8, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  *all = b;
  *offs = o;
  (void)ctx;
  return RV_OK;
}

#else /* one process */

int rv_mpi_built(void) { return 0; }
int rv_mpi_rank(void) { return 0; }
int rv_mpi_size(void) { return 1; }
int rv_mpi_start(int *argc, char ***argv, rv_opts_globals *g) {
  (void)argc;
  (void)argv;
  (void)g;
  (void)threads_per_rank;
  if (env_world_size() > 1) {
    fprintf(stderr, "ravlt: launched as %d MPI ranks, but this ravlt was built without MPI "
                    "(cmake -DRAVLT_MPI=ON)\n", env_world_size());
    return -1;
  }
  return 0;
}
void rv_mpi_end(void) {}
rv_status rv_mpi_agree(rv_status st, rv_ctx *ctx) {
  (void)ctx;
  return st;
}
rv_status rv_mpi_sum_i64(int64_t *buf, size_t n, rv_ctx *ctx) {
  (void)buf;
  (void)n;
  (void)ctx;
  return RV_OK;
}
rv_status rv_mpi_gather_bytes(char **all, size_t **offs, const void *buf, size_t len, rv_ctx *ctx) {
  *offs = malloc(2 * sizeof **offs);
  *all = malloc(len ? len : 1);
  if (!*offs || !*all) {
    free(*offs);
    free(*all);
    *offs = NULL;
    *all = NULL;
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  (*offs)[0] = 0;
  (*offs)[1] = len;
  if (len) memcpy(*all, buf, len);
  return RV_OK;
}

#endif

/* ---- the eval payloads (both builds; only called with more than one rank) ---- */

rv_status rv_mpi_sum_areas(rv_seg_areas *a, size_t *n_images, rv_ctx *ctx) {
  size_t C = (size_t)a->num_classes;
  int64_t n = (int64_t)*n_images;
  RV_TRY(rv_mpi_sum_i64(a->intersect, C, ctx));
  RV_TRY(rv_mpi_sum_i64(a->union_, C, ctx));
  RV_TRY(rv_mpi_sum_i64(a->pred, C, ctx));
  RV_TRY(rv_mpi_sum_i64(a->label, C, ctx));
  RV_TRY(rv_mpi_sum_i64(&n, 1, ctx));
  *n_images = (size_t)n;
  return RV_OK;
}

typedef struct {
  char *p;
  size_t n, cap;
} bytes;

static int put(bytes *b, const void *v, size_t n) {
  if (b->n + n > b->cap) {
    size_t c = b->cap ? b->cap : 4096;
    while (c < b->n + n) c *= 2;
    char *q = realloc(b->p, c);
    if (!q) return -1;
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->n, v, n);
  b->n += n;
  return 0;
}

/* One list: u64 count, then per object image_id, category_id (i64), score, bbox[4] (f64),
 * has_bbox, has_segm (i32), segm h, w (u32), runs (u64), runs x u32. */
static int put_list(bytes *b, const rv_coco_results *r) {
  uint64_t n = r ? r->n : 0;
  if (put(b, &n, 8)) return -1;
  for (uint64_t i = 0; i < n; i++) {
    const rv_coco_obj *o = &r->dets[i];
    int32_t fl[2] = {o->has_bbox, o->has_segm};
    uint32_t hw[2] = {o->segm.h, o->segm.w};
    uint64_t m = o->segm.m;
    if (put(b, &o->image_id, 8) || put(b, &o->category_id, 8) || put(b, &o->score, 8) || put(b, o->bbox, 32) ||
        put(b, fl, 8) || put(b, hw, 8) || put(b, &m, 8) || (m && put(b, o->segm.cnts, 4 * (size_t)m)))
      return -1;
  }
  return 0;
}

/* Reads one list from p .. end into *out (malloc'd objects, *n of them); 0 or -1 (short). */
static int get_list(rv_coco_obj **out, size_t *n, const char **p, const char *end) {
  uint64_t cnt;
  *out = NULL;
  *n = 0;
  if ((size_t)(end - *p) < 8) return -1;
  memcpy(&cnt, *p, 8);
  *p += 8;
  if (cnt > (uint64_t)(end - *p) / 80) return -1;
  rv_coco_obj *v = calloc(cnt ? cnt : 1, sizeof *v);
  if (!v) return -1;
  for (uint64_t i = 0; i < cnt; i++) {
    rv_coco_obj *o = &v[i];
    int32_t fl[2];
    uint32_t hw[2];
    uint64_t m;
    if ((size_t)(end - *p) < 80) goto bad;
    memcpy(&o->image_id, *p, 8);
    memcpy(&o->category_id, *p + 8, 8);
    memcpy(&o->score, *p + 16, 8);
    memcpy(o->bbox, *p + 24, 32);
    memcpy(fl, *p + 56, 8);
    memcpy(hw, *p + 64, 8);
    memcpy(&m, *p + 72, 8);
    *p += 80;
    o->has_bbox = fl[0];
    o->has_segm = fl[1];
    o->segm.h = hw[0];
    o->segm.w = hw[1];
    if (m > (uint64_t)(end - *p) / 4) goto bad;
    o->segm.m = (size_t)m;
    if (m) {
      if (!(o->segm.cnts = malloc(4 * (size_t)m))) goto bad;
      memcpy(o->segm.cnts, *p, 4 * (size_t)m);
      *p += 4 * (size_t)m;
    }
    *n = (size_t)i + 1;
  }
  *out = v;
  *n = (size_t)cnt;
  return 0;
bad:
  for (size_t i = 0; i < *n; i++) rv_rle_free(&v[i].segm);
  free(v);
  *n = 0;
  return -1;
}

/* Rank lists -> one list in the one-process order: sorted image k is rank k mod R's next
 * image; its detections are the run of that rank's list with its image id. */
static rv_status interleave(rv_coco_results *dst, rv_coco_obj **lists, size_t *lens, size_t R, const rv_coco *gt,
                            rv_ctx *ctx) {
  size_t total = 0;
  for (size_t r = 0; r < R; r++) total += lens[r];
  size_t *cur = calloc(R, sizeof *cur);
  rv_coco_obj *v = malloc(sizeof *v * (total ? total : 1));
  if (!cur || !v) {
    free(cur);
    free(v);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  size_t n = 0;
  for (size_t k = 0; k < gt->n_images; k++) {
    size_t r = k % R;
    int64_t id = gt->images[gt->img_idx_sorted[k]].id;
    while (cur[r] < lens[r] && lists[r][cur[r]].image_id == id) v[n++] = lists[r][cur[r]++];
  }
  for (size_t r = 0; r < R; r++)
    if (cur[r] != lens[r]) {
      /* the objects stay owned by lists (freed by the caller) */
      free(cur);
      free(v);
      return rv_error(ctx, RV_ERR_INTERNAL, "MPI gather: rank %zu sent detections out of image order", r);
    }
  for (size_t r = 0; r < R; r++) lens[r] = 0; /* moved */
  free(cur);
  dst->dets = v;
  dst->n = n;
  dst->n_unknown_category = 0;
  return RV_OK;
}

rv_status rv_mpi_gather_coco(rv_coco_results *box, rv_coco_results *seg, const rv_coco *gt, rv_ctx *ctx) {
  bytes b = {0};
  rv_status st = RV_OK;
  /* a rank out of memory still takes part (sends nothing) and fails after the gather */
  int bad = put_list(&b, box) || put_list(&b, seg);
  if (bad) b.n = 0;
  char *all = NULL;
  size_t *offs = NULL;
  st = rv_mpi_gather_bytes(&all, &offs, b.p, b.n, ctx);
  free(b.p);
  rv_coco_results_free(box);
  if (seg) rv_coco_results_free(seg);
  if (bad && st == RV_OK) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  st = rv_mpi_agree(st, ctx);
  if (st != RV_OK || rv_mpi_rank() != 0) {
    free(all);
    free(offs);
    return st;
  }
  int R = rv_mpi_size();
  rv_coco_obj **lists = calloc(2 * (size_t)R, sizeof *lists);
  size_t *lens = calloc(2 * (size_t)R, sizeof *lens);
  if (!lists || !lens) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  for (int r = 0; r < R && st == RV_OK; r++) {
    const char *p = all + offs[r], *end = all + offs[r + 1];
    if (get_list(&lists[r], &lens[r], &p, end) || get_list(&lists[R + r], &lens[R + r], &p, end) || p != end)
      st = rv_error(ctx, RV_ERR_FORMAT, "MPI gather: rank %d sent %zu malformed bytes", r, offs[r + 1] - offs[r]);
  }
  if (st == RV_OK) st = interleave(box, lists, lens, (size_t)R, gt, ctx);
  if (st == RV_OK && seg) st = interleave(seg, lists + R, lens + R, (size_t)R, gt, ctx);
  for (int r = 0; lists && r < 2 * R; r++) {
    for (size_t i = 0; i < lens[r]; i++) rv_rle_free(&lists[r][i].segm);
    free(lists[r]);
  }
  free(lists);
  free(lens);
  free(all);
  free(offs);
  return st;
}
