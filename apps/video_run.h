/* `ravlt video` as pieces (apps/video_run.c) that the one-process command (apps/cmd_video.c)
 * and the MPI ranks (apps/mpi_video.c) share: the model loaded once, then one input (or a
 * frame range of one file) run through the pipeline of models/video_pipeline.h into its
 * outputs.
 *
 *   rv_video_app *a;
 *   RV_TRY(rv_video_app_open(&a, &opts, ctx));
 *   rv_video_job j = {.input = "clip.mp4", .output = "seg.mp4", .json = "seg.jsonl"};
 *   rv_status st = rv_video_run(a, &j, ctx);   // j.rc: exit status 0 / 3 / 130; j.stats
 *   rv_video_app_free(a);
 */
#ifndef RV_APPS_VIDEO_RUN_H
#define RV_APPS_VIDEO_RUN_H

#include "apps/tile_cli.h"
#include "models/video_pipeline.h"
#include <ravlt/model.h>

#include <stdint.h>
#include <stdio.h>

/* The options of one `ravlt video` command (every input gets the same). */
typedef struct {
  const char *weights, *model;
  int size[2]; /* --size HxW: the inference scale (0: the checkpoint's) */
  double thr, opacity, stall;
  long every, max_frames, threads, queue;
  int drop, show, no_seek;
  int demo;                      /* no --weights: the built-in demo model (a notice says so) */
  int strict;                    /* --strict: unexpected checkpoint keys are an error */
  const char *out_dir, *out_ext; /* several inputs: DIR/STEM.jsonl and DIR/STEM.EXT */
  const char *precision;         /* --precision: NULL / "f32" or "bf16" */
  rv_tile_cli tile;              /* --tile ...: each frame on tiles (docs/large-images.md) */
  rv_model *shared_model;        /* a model already loaded (borrowed, not freed; weights, model,
                                    demo, precision and strict are then not read): `ravlt serve`'s
                                    streams share the model of its workers */
  int realtime;                  /* files are read no faster than their frame rate (25 fps when
                                    unknown), as a camera delivers them */
} rv_video_opts;

typedef struct rv_video_app rv_video_app;
rv_status rv_video_app_open(rv_video_app **out, const rv_video_opts *o, rv_ctx *ctx);
void rv_video_app_free(rv_video_app *a);

typedef struct {
  const char *input;
  rv_video_reader *reader;     /* input already opened by the caller and not read from (NULL:
                                  rv_video_run opens it); rv_video_run takes it over */
  const char *output, *fourcc; /* overlay video (NULL: none), codec (NULL: by extension) ... */
  rv_video_writer *writer;     /* ... or frames appended to this open writer (not closed) */
  const char *json;            /* JSON lines file, via rv_out_file (NULL: none) ... */
  FILE *json_stream;           /* ... or JSON lines appended to this stream (not closed) */
  long first, count;           /* frames first .. first + count - 1 of a file (count 0: to
                                  the end); frame indices, times and --every stay global */
  int quiet;                   /* no header and summary lines */
  /* hooks of an embedding program (`ravlt serve`); NULL: none */
  rv_status (*on_frame)(void *user, const rv_image *frame, const rv_vp_frame *fi,
                        rv_ctx *ctx); /* encode thread: every frame, drawn as --output writes it */
  void (*on_stats)(void *user, const rv_vp_stats *s); /* encode thread: counters after each frame */
  int (*cancelled)(void *user); /* polled with the signal flag: nonzero stops the run */
  void *hook_user;
  /* results */
  int rc;                      /* exit status of this input: 0, 3 (ended early / stalled),
                                  130 (Ctrl-C); 1 or 2 when an error is returned */
  rv_vp_stats stats;
  rv_video_info info;
  long frames_out, json_lines;
  int have_first, have_next;   /* hashes of the first frame read and of the frame after the */
  uint64_t first_hash, next_hash; /* range (count > 0): a split file's seams are checked */
} rv_video_job;

/* Runs one job. RV_OK (job->rc 0, 3 or 130, outputs finalised) or the error in ctx (no
 * output left behind). */
rv_status rv_video_run(rv_video_app *a, rv_video_job *job, rv_ctx *ctx);

/* Several inputs: output names under o->out_dir from the input's file name without its
 * extension (video empty when out_ext is "none"). -1 when a name does not fit. */
int rv_video_out_names(const rv_video_opts *o, const char *input, char *video, char *json, size_t cap);
/* A job for input into those names (video and json: cap bytes each, holding them while the
 * job runs; the names were checked while parsing). */
void rv_video_dir_job(rv_video_job *j, const rv_video_opts *o, const char *input, char *video, char *json, size_t cap);

/* The frame rate an overlay video of the input is written at: the input's, or 25 fps when
 * it reports none (a warning then names input and output). */
double rv_video_out_fps(const rv_video_info *info, const char *input, const char *output, rv_ctx *ctx);

/* The FNV-1a 64-bit hash of a frame's pixels (seam checks). */
uint64_t rv_video_frame_hash(const rv_image *frame);

/* Set by SIGINT while rv_cmd_video runs, or by q / Esc in the --show window (polled by the
 * pipeline); rv_video_interrupt_clear resets the window's flag before a run. */
int rv_video_interrupted(void);
void rv_video_interrupt_clear(void);

/* `mpirun -np N ravlt video ...` (apps/mpi_video.c): several inputs, whole files per rank
 * (sorted, input k on rank k mod N, outputs as one process writes them under --out-dir);
 * one input, split into N frame ranges whose outputs rank 0 concatenates into output and
 * json (or DIR/NAME.*). Every rank calls it (it loads the model); returns the exit status. */
int rv_mpi_video(const rv_video_opts *o, char **inputs, int n_inputs, const char *output, const char *json,
                 rv_ctx *ctx);

#endif
