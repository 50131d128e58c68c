/* `mpirun -np N ravlt video` (apps/video_run.h): the ranks share the frames of one command.
 *
 * Several inputs: sorted by name, input k runs on rank k mod N, each into DIR/STEM.* exactly
 * as a one-process run with --out-dir writes it.
 *
 * One input (a file): frames 0 .. T-1 (T: its frame count, or --max-frames) are cut into N
 * contiguous ranges at multiples of --every (so each range starts on a processed frame and
 * the overlays of the frames in between are the ones a single run draws). Rank r positions
 * its reader at its first frame (rv_video_seek: the keyframe before it, then decoded
 * forward; --no-seek decodes from frame 0), runs the pipeline with global frame indices and
 * writes its overlay frames losslessly (HuffYUV) to OUTPUT.part<r>of<N>.mkv beside OUTPUT and
 * its JSON lines to memory; rank 0 encodes its own frames into OUTPUT's temporary file as it
 * goes. Rank 0 gathers the JSON lines and the seam hashes (each rank's first frame must be
 * the frame after the previous rank's range: a seek that is not frame-exact fails the run),
 * then appends the other parts in rank order (one lossy encode, as in a single run) and
 * writes JSON; both through temporary files renamed at the end. The parts need a folder
 * every rank sees (the output's). Any failure: reported by rank and input, every rank exits
 * 1, no final output, parts removed. */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "apps/mpi_run.h"
#include "apps/video_run.h"
#include "core/fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

/* What each rank reports to rank 0 (gathered as bytes). */
typedef struct {
  int64_t first, count;          /* its frame range (split) */
  int64_t read, processed, written, json_lines;
  uint64_t first_hash, next_hash;
  int32_t have_first, have_next;
  double wall_s, infer_s;        /* its pipelines */
} rank_rec;

/* ctx's message prefixed with the input unless it names it already. */
static rv_status name_input(rv_status st, const char *input, rv_ctx *ctx) {
  if (st == RV_OK) return st;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", rv_ctx_errmsg(ctx));
  if (strstr(msg, input)) return st;
  return rv_error(ctx, st, "%s: %s", input, msg);
}

/* A job that returned RV_OK but did not finish its frames is a failure across ranks. */
static rv_status job_outcome(rv_status st, const rv_video_job *j, rv_ctx *ctx) {
  if (st != RV_OK) return name_input(st, j->input, ctx);
  const rv_vp_stats *s = &j->stats;
  if (s->ended_early || s->stalled)
    return rv_error(ctx, RV_ERR_FORMAT, "%s: %s after %ld frame(s) (%s)", j->input, s->stalled ? "stalled" : "ended early",
                    s->read, s->fault);
  if (s->interrupted) return rv_error(ctx, RV_ERR_IO, "%s: interrupted after %ld frame(s)", j->input, s->written);
  if (s->corrupt)
    return rv_error(ctx, RV_ERR_FORMAT, "%s: %ld frame(s) of another size: frame indices would differ from one process",
                    j->input, s->corrupt);
  return RV_OK;
}

static void add_job(rank_rec *r, const rv_video_job *j) {
  r->read += j->stats.read;
  r->processed += j->stats.processed;
  r->written += j->stats.written;
  r->json_lines += j->json_lines;
  r->wall_s += j->stats.wall_s;
  r->infer_s += j->stats.infer_s;
}

/* Rank 0's summary line from every rank's record; `extra` names the work after the ranks.
 * Returns the ranks' totals (frames, JSON lines, inference time). */
static rank_rec report(const rank_rec *recs, int R, double wall, double wait_s,
                       const char *extra) {
  rank_rec t = {0};
  double lo = 1e300, hi = 0;
  for (int r = 0; r < R; r++) {
    t.read += recs[r].read;
    t.processed += recs[r].processed;
    t.written += recs[r].written;
    t.json_lines += recs[r].json_lines;
    t.infer_s += recs[r].infer_s;
    if (recs[r].wall_s < lo) lo = recs[r].wall_s;
    if (recs[r].wall_s > hi) hi = recs[r].wall_s;
  }
  fprintf(stderr,
          "ravlt video: MPI: %d ranks: %lld frame(s) read, %lld processed, %lld written in %.2f s: %.2f fps; rank "
          "pipelines %.2f-%.2f s (inference %.2f s in all); rank 0 waited %.2f s for the others%s\n",
          R, (long long)t.read, (long long)t.processed, (long long)t.written, wall, wall > 0 ? (double)t.written / wall : 0,
          lo, hi, t.infer_s, wait_s, extra);
  return t;
}

/* Gathers every rank's record to rank 0 (*recs, malloc'd there; NULL elsewhere). */
static rv_status gather_recs(rank_rec **recs, const rank_rec *mine, rv_ctx *ctx) {
  char *all = NULL;
  size_t *offs = NULL;
  *recs = NULL;
  rv_status st = rv_mpi_gather_bytes(&all, &offs, mine, sizeof *mine, ctx);
  if (st == RV_OK && all) {
    for (int r = 0; r < rv_mpi_size(); r++)
      if (offs[r + 1] - offs[r] != sizeof *mine) st = rv_error(ctx, RV_ERR_INTERNAL, "MPI gather: rank %d sent a short record", r);
    if (st == RV_OK) *recs = (rank_rec *)(void *)all;
    else free(all);
  }
  free(offs);
  return st;
}

/* ---- several inputs: whole files per rank --------------------------------------------- */
static int whole_files(rv_video_app *A, const rv_video_opts *o, char **inputs, int n, rv_ctx *ctx) {
  const int R = rv_mpi_size(), me = rv_mpi_rank();
  double t0 = rv_now();
  rank_rec mine = {0};
  rv_status st = RV_OK;
  char first_err[1024] = "";
  if (me == 0 && !rv_cli.quiet)
    fprintf(stderr, "ravlt video: MPI: %d inputs over %d ranks (sorted, input k on rank k mod %d), outputs in %s\n", n, R,
            R, o->out_dir);
  for (int k = me; k < n && !rv_video_interrupted(); k += R) {
    char video[4096], json[4096];
    rv_video_job j;
    rv_video_dir_job(&j, o, inputs[k], video, json, sizeof video);
    j.quiet = 1;
    rv_status s = job_outcome(rv_video_run(A, &j, ctx), &j, ctx);
    add_job(&mine, &j);
    if (s == RV_OK && me == 0 && !rv_cli.quiet)
      fprintf(stderr, "ravlt video: %s: %ld frame(s) -> %s%s%s\n", inputs[k], j.stats.written, video[0] ? video : "",
              video[0] ? " and " : "", json);
    if (s != RV_OK && st == RV_OK) { /* the first failure is reported; the rank's other files still run */
      st = s;
      snprintf(first_err, sizeof first_err, "%s", rv_ctx_errmsg(ctx));
    } else if (s != RV_OK) {
      rv_log(ctx, RV_LOG_ERROR, "%s", rv_ctx_errmsg(ctx));
    }
  }
  if (st != RV_OK) rv_error(ctx, st, "%s", first_err);
  double t_done = rv_now();
  rank_rec *recs = NULL;
  rv_status g = gather_recs(&recs, &mine, ctx);
  st = rv_mpi_agree(st != RV_OK ? st : g, ctx);
  if (me == 0 && recs && !rv_cli.quiet) report(recs, R, rv_now() - t0, rv_now() - t_done, "");
  free(recs);
  if (st != RV_OK) return rv_cli_fail_once(ctx, "video", st);
  return 0;
}

/* ---- one input split into frame ranges ---------------------------------------------- */

/* Rank r's frames [first, first + count) of T, cut at multiples of every; count 0 for the
 * last rank when T is the file's (estimated) length: it reads to the end. */
static void split_range(long T, long every, int r, int R, int to_end, long *first, long *count) {
  long units = (T + every - 1) / every;
  long a = (long)(((__int128)units * r) / R), b = (long)(((__int128)units * (r + 1)) / R);
  *first = a * every;
  long end = b * every < T ? b * every : T;
  *count = end - *first;
  if (r == R - 1 && to_end) *count = 0;
}

static void part_name(char *dst, size_t cap, const char *output, int r, int R) {
  snprintf(dst, cap, "%s.part%dof%d.mkv", output, r, R);
}

/* Rank 0: the seams, then the other ranks' parts appended to vw (which holds rank 0's
 * frames; closed or discarded here) and the JSON lines written to json. */
static rv_status assemble(const rank_rec *recs, int R, const char *input, rv_video_writer *vw, const char *output,
                          const char *json, const char *lines, size_t n_lines, rv_ctx *ctx) {
  rv_status st = RV_OK;
  for (int r = 0, prev = -1; r < R && st == RV_OK; r++) {
    if (!recs[r].have_first) continue; /* an empty range (more ranks than --every steps) */
    if (prev >= 0 && (!recs[prev].have_next || recs[prev].next_hash != recs[r].first_hash))
      st = rv_error(ctx, RV_ERR_FORMAT,
                    "%s: frame %lld, where rank %d starts, differs from the frame after rank %d's range: seeking is "
                    "not frame-exact on this file (rerun with --no-seek)",
                    input, (long long)recs[r].first, r, prev);
    prev = r;
  }
  rv_out_file jo = {0};
  int have_jo = 0;
  if (st == RV_OK && json) {
    st = rv_out_open(&jo, json, ctx);
    have_jo = st == RV_OK;
    if (have_jo && n_lines && fwrite(lines, 1, n_lines, jo.f) != n_lines)
      st = rv_error(ctx, RV_ERR_IO, "%s: write failed (%s)", json, strerror(rv_out_errno(&jo) ? rv_out_errno(&jo) : EIO));
  }
  int wrote_video = 0;
  if (vw) {
    rv_image f = {0};
    for (int r = 1; st == RV_OK && r < R; r++) {
      if (!recs[r].written) continue;
      char part[4200];
      part_name(part, sizeof part, output, r, R);
      rv_video_reader *vr = NULL;
      long n = 0;
      int got = 0;
      st = rv_video_open(&vr, part, ctx);
      while (st == RV_OK && (st = rv_video_read(vr, &f, &got, ctx)) == RV_OK && got) {
        st = rv_video_write(vw, &f, ctx);
        n++;
      }
      rv_video_close(vr);
      if (st == RV_OK && n != recs[r].written)
        st = rv_error(ctx, RV_ERR_FORMAT, "%s: holds %ld frames, rank %d wrote %lld", part, n, r, (long long)recs[r].written);
    }
    rv_image_free(&f);
    if (st == RV_OK) st = rv_video_writer_close(vw, ctx);
    else rv_video_writer_discard(vw);
    wrote_video = st == RV_OK;
  }
  if (have_jo) {
    if (st == RV_OK) st = rv_out_close(&jo, ctx);
    else rv_out_abort(&jo);
    if (st != RV_OK && wrote_video) remove(output); /* both or neither */
  }
  return st;
}

static int split_file(rv_video_app *A, const rv_video_opts *o, const char *input, const char *output, const char *json,
                      rv_ctx *ctx) {
  const int R = rv_mpi_size(), me = rv_mpi_rank();
  double t0 = rv_now();
  rank_rec mine = {0};
  rv_video_job j;
  memset(&j, 0, sizeof j);
  char part[4200] = "";
  char *lines = NULL;
  size_t n_lines = 0;
  FILE *mem = NULL;
  rv_video_reader *vr = NULL;
  rv_video_writer *final = NULL; /* rank 0: output, its own frames first */
  rv_status st = rv_video_open(&vr, input, ctx); /* its length, on every rank */
  if (st == RV_OK) j.info = rv_video_get_info(vr);
  rv_video_close(vr);
  long T = j.info.frame_count;
  if (st == RV_OK && T <= 0)
    st = rv_error(ctx, RV_ERR_FORMAT, "%s: frame count unknown: it cannot be split across ranks", input);
  int to_end = !(o->max_frames > 0 && o->max_frames < T);
  if (!to_end) T = o->max_frames;
  if (st == RV_OK) {
    split_range(T, o->every, me, R, to_end, &j.first, &j.count);
    mine.first = j.first;
    mine.count = j.count;
    if (me == 0 && !rv_cli.quiet)
      fprintf(stderr, "ravlt video: MPI: %s (%ld frames%s) split into %d ranges at multiples of %ld, %s\n", input, T,
              to_end ? "" : ", --max-frames", R, o->every, o->no_seek ? "decoded from frame 0 (--no-seek)" : "by seeking");
  }
  int empty = st == RV_OK && j.count == 0 && !(me == R - 1 && to_end);
  if (st == RV_OK && output && me == 0) {
    double fps = rv_video_out_fps(&j.info, input, output, ctx);
    st = rv_video_writer_open(&final, output, fps, j.info.width, j.info.height, NULL, ctx);
  }
  /* an unreadable input or output is known before any frame is processed */
  st = rv_mpi_agree(st, ctx);
  if (st != RV_OK) {
    rv_video_writer_discard(final);
    return rv_cli_fail_once(ctx, "video", st);
  }
  if (st == RV_OK && !empty) {
    j.input = input;
    j.quiet = 1;
    if (final) {
      j.writer = final;
    } else if (output) {
      part_name(part, sizeof part, output, me, R);
      j.output = part;
      j.fourcc = "HFYU"; /* lossless (HuffYUV, BGR): the final encode is the only lossy one */
    }
    if (json && !(mem = open_memstream(&lines, &n_lines))) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    j.json_stream = mem;
    if (st == RV_OK) st = job_outcome(rv_video_run(A, &j, ctx), &j, ctx);
    if (st == RV_OK && j.count > 0 && j.stats.read != j.count)
      st = rv_error(ctx, RV_ERR_FORMAT, "%s: ended at frame %lld, inside frames %ld..%ld", input,
                    (long long)(j.first + j.stats.read), j.first, j.first + j.count - 1);
    add_job(&mine, &j);
    mine.first_hash = j.first_hash;
    mine.next_hash = j.next_hash;
    mine.have_first = j.have_first;
    mine.have_next = j.have_next;
  }
  if (mem && fclose(mem) && st == RV_OK) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  if (!mem) n_lines = 0;
  double t_done = rv_now();
  /* every rank, failed or not: the records, the JSON lines, then the verdict */
  rank_rec *recs = NULL;
  char *all = NULL;
  size_t *offs = NULL;
  rv_status g = gather_recs(&recs, &mine, ctx);
  if (json) { /* every rank calls it, whatever happened before */
    rv_status gj = rv_mpi_gather_bytes(&all, &offs, st == RV_OK ? lines : NULL, st == RV_OK ? n_lines : 0, ctx);
    if (g == RV_OK) g = gj;
  }
  free(lines);
  st = rv_mpi_agree(st != RV_OK ? st : g, ctx);
  double t_gather = rv_now();
  if (st == RV_OK) { /* rank 0's verdict on the seams and the final files, for every rank */
    if (me == 0) st = assemble(recs, R, input, final, output, json, all, json ? offs[R] : 0, ctx);
    final = NULL;
    st = rv_mpi_agree(st, ctx);
  }
  rv_video_writer_discard(final); /* a failure before assembling */
  if (part[0]) remove(part);  /* rank 0 has read them (or failed) */
  if (me == 0 && recs && st == RV_OK && !rv_cli.quiet) {
    char extra[256];
    snprintf(extra, sizeof extra, ", gathered and concatenated in %.2f s", rv_now() - t_gather);
    rank_rec t = report(recs, R, rv_now() - t0, t_gather - t_done, extra);
    if (output)
      fprintf(stderr, "ravlt video: wrote %s (%lld frames)\n", output, (long long)t.written);
    if (json)
      fprintf(stderr, "ravlt video: wrote %s (%lld lines)\n", json, (long long)t.json_lines);
  }
  free(recs);
  free(all);
  free(offs);
  if (st != RV_OK) return rv_cli_fail_once(ctx, "video", st);
  return 0;
}

int rv_mpi_video(const rv_video_opts *o, char **inputs, int n_inputs, const char *output, const char *json, rv_ctx *ctx) {
  rv_video_app *A = NULL;
  rv_status st = o->out_dir ? rv_mkdirs(o->out_dir, ctx) : RV_OK;
  if (st == RV_OK) st = rv_video_app_open(&A, o, ctx);
  st = rv_mpi_agree(st, ctx);
  int rc;
  if (st != RV_OK) rc = rv_cli_fail_once(ctx, "video", st);
  else if (n_inputs > 1) rc = whole_files(A, o, inputs, n_inputs, ctx);
  else if (!o->out_dir) rc = split_file(A, o, inputs[0], output, json, ctx);
  else { /* one input into DIR/NAME.*: split too */
    char video[4096], jn[4096];
    rv_video_out_names(o, inputs[0], video, jn, sizeof video); /* checked while parsing */
    rc = split_file(A, o, inputs[0], video[0] ? video : NULL, jn, ctx);
  }
  rv_video_app_free(A);
  return rc;
}
