/* A three-stage video pipeline: decode (a pthread) -> inference (the calling thread, which
 * may use OpenMP) -> draw/encode (a pthread), connected by bounded queues with
 * back-pressure. Frames reach the sink in input order. The stages are callbacks, so the
 * pipeline knows nothing about models, drawing or files (apps/cmd_video.c supplies them;
 * the tests drive it with synthetic sources).
 *
 *   rv_vp_config c = rv_vp_default_config();
 *   c.read = rv_vp_read_video; c.read_user = reader;       // an open rv_video_reader
 *   c.width = info.width; c.height = info.height; c.fps = info.fps; c.live = 0;
 *   c.infer = my_infer; c.sink = my_sink; c.free_result = my_free; c.finish = my_finish;
 *   c.user = &app;
 *   rv_vp_stats s;
 *   if (rv_vp_run(&c, &s, ctx) != RV_OK) ...rv_ctx_errmsg(ctx)...;   // infer/sink failed
 *   if (s.ended_early || s.stalled) ...s.fault...;                     // source faults
 *
 * Policies:
 * - every N: the 1st, (N+1)th, ... frame reaching inference is processed (counted from
 *   first_index: frame k is processed when (first_index + k) mod N is 0); the others go to
 *   the sink unprocessed, with the result of the last processed frame (so an output video
 *   keeps every frame, drawn with the latest overlay).
 * - live sources (cameras, URLs) with drop = 1: when the decode queue is full the oldest
 *   queued frame is dropped (counted) so the output follows the live stream instead of
 *   drifting behind. Files (live = 0) never drop: the decoder waits (back-pressure).
 * - a frame whose size differs from width x height is corrupt: skipped and counted.
 * - a read error ends the stream: stats.ended_early, the message in stats.fault; the frames
 *   already read are still processed and written, then finish() runs.
 * - no frame for stall_s seconds while inference waits: stats.stalled, the stream is ended
 *   the same way (the decode thread is joined once its blocked read returns; finish() has
 *   already run by then, so the output is finalised first).
 * - cancelled() (e.g. a SIGINT flag) stops reading; frames still queued for inference are
 *   discarded, those already inferred are written, then finish() runs (stats.interrupted).
 * The helper threads run with omp_set_num_threads(1): no OpenMP team is started there.
 */
#ifndef RV_MODELS_VIDEO_PIPELINE_H
#define RV_MODELS_VIDEO_PIPELINE_H

#include "formats/image.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  long index;     /* input frame index, 0-based (every frame read that was not corrupt) */
  double time;    /* seconds: index / fps for files, wall time since the start for live
                     sources or when the fps is unknown */
  int processed;  /* 1: inference ran on this frame (its result is the one given) */
} rv_vp_frame;

typedef struct {
  long read;          /* frames decoded (corrupt ones included) */
  long processed;     /* frames that went through inference */
  long written;       /* frames the sink accepted */
  long dropped;       /* live frames dropped because inference could not keep up */
  long corrupt;       /* frames skipped (wrong size) */
  int ended_early;    /* the source broke (read error) */
  int stalled;        /* no frame for stall_s seconds */
  int interrupted;    /* cancelled() returned nonzero */
  double wall_s;      /* from start to the end of the sink */
  double infer_s;     /* total time inside infer() */
  double read_s;      /* total time inside read() (decode thread) */
  double sink_s;      /* total time inside sink() (encode thread) */
  double wait_in_s;   /* inference stage waiting for a decoded frame */
  double wait_out_s;  /* inference stage blocked on a full encode queue */
  double latency_mean_s, latency_p95_s; /* decode done -> sink done, processed frames (the
                                           progress snapshots: the mean so far) */
  double fps;         /* written / wall_s */
  char fault[256];    /* message of the source fault (ended early / stalled), or "" */
} rv_vp_stats;

/* Source: *got = 1 with a frame (frame is an empty rv_image to fill), *got = 0 at the end;
 * an error status means the stream broke. Runs in the decode thread. */
typedef rv_status (*rv_vp_read_fn)(void *read_user, rv_image *frame, int *got, rv_ctx *ctx);
/* Inference (calling thread): *result = a heap object the sink will see (freed with
 * free_result once a newer result replaced it and at the end). */
typedef rv_status (*rv_vp_infer_fn)(void *user, void **result, const rv_image *frame,
                                    const rv_vp_frame *fi, rv_ctx *ctx);
/* Sink (encode thread), once per frame in input order; result: the latest processed
 * frame's (NULL only if none yet). frame may be drawn on. */
typedef rv_status (*rv_vp_sink_fn)(void *user, rv_image *frame, const rv_vp_frame *fi,
                                   const void *result, rv_ctx *ctx);
typedef void (*rv_vp_free_fn)(void *user, void *result);
/* Encode thread, once after the last frame (also after errors): finalise outputs. st is
 * RV_OK or the first error of the run. Its own error is returned by rv_vp_run. */
typedef rv_status (*rv_vp_finish_fn)(void *user, rv_status st, rv_ctx *ctx);
/* Encode thread, after each written frame: a snapshot of the counters. */
typedef void (*rv_vp_progress_fn)(void *progress_user, const rv_vp_stats *s);

typedef struct {
  rv_vp_read_fn read;
  void *read_user;
  rv_vp_infer_fn infer;
  rv_vp_sink_fn sink;      /* may be NULL (results only) */
  rv_vp_free_fn free_result;
  rv_vp_finish_fn finish;  /* may be NULL */
  void *user;
  rv_vp_progress_fn progress; /* may be NULL */
  void *progress_user;
  int (*cancelled)(void *cancel_user); /* may be NULL; polled by the decode and inference stages */
  void *cancel_user;
  rv_log_fn log;           /* log hook for the helper threads' contexts (may be NULL) */
  void *log_user;
  rv_log_level log_level;
  int width, height;       /* expected frame size (others are corrupt); 0: the first frame's */
  double fps;              /* source fps (0: unknown) */
  int live;                /* camera / network stream */
  int drop;                /* live sources: drop the oldest queued frame when full */
  int every;               /* process every Nth frame (>= 1) */
  long max_frames;         /* stop after this many frames read (0: all) */
  long first_index;        /* index of the first frame read (a range of a file split across
                              processes, see rv_video_seek): frames are numbered from it and
                              `every` counts from it; 0 by default */
  int queue;               /* capacity of each queue (>= 1; default 4) */
  double stall_s;          /* stall timeout in seconds (0: none; default 10) */
  int infer_threads;       /* omp_set_num_threads for the inference stage (0: leave) */
} rv_vp_config;

rv_vp_config rv_vp_default_config(void);

/* Runs the pipeline to the end of the stream. Returns RV_OK when every frame read was
 * handled (source faults are in stats, not errors), else the first infer / sink / finish
 * error (message in ctx; the run stops, finish() still runs). */
rv_status rv_vp_run(const rv_vp_config *cfg, rv_vp_stats *stats, rv_ctx *ctx);

/* read callback for an open rv_video_reader (read_user = the reader). */
rv_status rv_vp_read_video(void *reader, rv_image *frame, int *got, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
