/* `ravlt video [--weights W] INPUT...`: segmentation or detection on video files, a camera or
 * a network stream. This file parses argv, checks the outputs and dispatches: one process
 * runs the jobs of apps/video_run.h (apps/video_run.c: the model, the pipeline, the outputs),
 * MPI ranks run apps/mpi_video.c. */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "apps/image_run.h"
#include "apps/model_args.h"
#include "apps/model_run.h"
#include "apps/mpi_run.h"
#include "apps/outputs.h"
#include "apps/video_run.h"
#include "core/fs.h"
#include "models/video_pipeline.h"
#include "apps/commands.h"

#include <stddef.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char VIDEO_ABOUT[] =
    "Semantic segmentation or detection (chosen from the checkpoint) on every frame of a\n"
    "video. INPUT is a video file, a camera index (0, 1, ...) or a stream URL (rtsp://,\n"
    "http://, ...): whatever OpenCV's VideoCapture opens. Decoding, inference and\n"
    "drawing/encoding run concurrently (bounded queues, frames kept in order); inference\n"
    "uses all cores but one (or the common --threads N).\n";

static const char VIDEO_EPILOG[] =
    "JSON \"time\" is frame / fps for files, seconds since the start for live sources. The\n"
    "summary counts frames read, processed, written, dropped and corrupt, the latency of\n"
    "processed frames (decoded -> written: mean, p95), fps, and the share of wall time the\n"
    "inference stage was not busy (--verbose: time per stage).\n"
    "\n"
    "Exit status: 0 done; 1 error (bad input, model, output); 2 usage; 3 the stream ended\n"
    "early or stalled (reported; outputs are finalised with the frames read); 128+N stopped by\n"
    "signal N: SIGINT (Ctrl-C, 130), SIGTERM (143), SIGHUP (129) stop reading, the frames in\n"
    "flight are finished and the outputs finalised (a playable video, complete JSON lines); a\n"
    "second signal changes nothing, a third exits at once (a temporary beside the output may\n"
    "stay: the next run removes it); with several INPUTs the worst of them (the others run). An\n"
    "input that fails before its first frame is written leaves no output; one that fails\n"
    "later keeps its outputs finalised with the frames written (complete files, never a\n"
    "half-written one). Frames of the wrong size are skipped and counted.\n"
    "\n"
    "mpirun -np N ravlt video ... (a -DRAVLT_MPI=ON build; files only, no --show or --drop):\n"
    "several INPUTs: sorted, input k runs on rank k mod N into --out-dir. One INPUT: its\n"
    "frames are cut into N contiguous ranges at multiples of --every; each rank seeks to its\n"
    "range and writes a lossless part beside --output, rank 0 re-encodes the parts in order\n"
    "into --output and writes --json: the JSON lines of one process. Threads per rank: cores\n"
    "/ ranks on the node. A failure on any rank: reported once by rank and input, every rank\n"
    "exits 1 (2 for a usage error), no output (one INPUT) or none for that input (several).\n";

typedef struct {
  rv_video_opts v;
  const char *output, *json;
} video_cli_opts;

#define VO(f) offsetof(video_cli_opts, v.f)
static const rv_opt OPTS[] = {
    RV_MODEL_OPTS(video_cli_opts, v,
                  "checkpoint (.pth or .safetensors), a 'ravlt models' name, or 'demo'\n"
                  "(default): the built-in demo segmentation model (synthetic shapes);\n"
                  "'demo-det': the built-in demo detector (the same shapes, boxes)"),
    {"--output", NULL, RV_OPT_STR, offsetof(video_cli_opts, output), 0, 0, NULL, "OUT",
     "overlay video (input size and fps; .mp4 H.264 or MPEG-4, .avi MJPG)", 0},
    {"--out-dir", NULL, RV_OPT_STR, VO(out_dir), 0, 0, NULL, "DIR",
     "(needed with several INPUTs) per input DIR/NAME.jsonl and DIR/NAME.EXT\n"
     "(NAME: its file name without the extension); inputs run sorted", 0},
    {"--out-ext", NULL, RV_OPT_CHOICE, VO(out_ext), 0, 0, "mp4|avi|mkv|none", "EXT",
     "with --out-dir: mp4 (default), avi, mkv, or none (JSON lines only)", 0},
    {"--show", NULL, RV_OPT_FLAG, VO(show), 0, 0, NULL, NULL, "display the overlay in a window (needs a display; q or Esc stops)", 0},
    {"--json", NULL, RV_OPT_STR, offsetof(video_cli_opts, json), 0, 0, NULL, "OUT.jsonl",
     "one JSON object per processed frame ('-': stdout):\n"
     "segmentation {\"frame\", \"time\", \"pixels\": {\"class\": count}}\n"
     "detection {\"frame\", \"time\", \"detections\": [{\"bbox\": [x,y,w,h],\n"
     "\"score\", \"label\", \"name\", \"category_id\", \"segmentation\":\n"
     "{\"size\": [h,w], \"counts\": RLE}}]} (detections with score >= T)", 0},
    {"--every", NULL, RV_OPT_LONG, VO(every), 1, 1000000, NULL, "N",
     "run the model on every Nth frame; the other frames are written with\n"
     "the last overlay and get no JSON line", 0, "1"},
    {"--max-frames", NULL, RV_OPT_LONG, VO(max_frames), 1, 2147483647.0, NULL, "N", "stop after N input frames", 0},
    {"--size", NULL, RV_OPT_SIZE, VO(size), 16, 8192, NULL, "HxW",
     "inference scale: the model's test Resize img_scale becomes (W, H)\n"
     "(keep ratio), e.g. 480x640; output and results stay at the input size\n"
     "(default: the checkpoint's scale, (1333, 800) / (2048, 512))", 0},
    {"--score-thr", NULL, RV_OPT_DOUBLE, VO(thr), 0, 1, NULL, "T", "detections drawn and written with score >= T, 0..1", 0, "0.3"},
    {"--opacity", NULL, RV_OPT_DOUBLE, VO(opacity), 0, 1, NULL, "A", "segmentation overlay opacity 0..1", 0, "0.5"},
    {"--drop", NULL, RV_OPT_FLAG, VO(drop), 0, 0, NULL, NULL,
     "live sources (camera, URL): drop frames inference cannot keep up with\n"
     "(counted); files never drop", 0},
    {"--queue", NULL, RV_OPT_LONG, VO(queue), 1, 256, NULL, "N", "frames per queue between stages, 1..256", 0, "4"},
    {"--stall", NULL, RV_OPT_DOUBLE, VO(stall), 0, 1e9, NULL, "S", "seconds without a frame before the stream counts as stalled", 0, "10"},
    {"--no-seek", NULL, RV_OPT_FLAG, VO(no_seek), 0, 0, NULL, NULL,
     "under mpirun: ranks reach their first frame by decoding from frame 0\n"
     "instead of seeking (for files whose seeking is not frame-exact)", 0},
    RV_TILE_OPTS_DET(video_cli_opts, v.tile),
    RV_OPT_END};
#undef VO

const rv_cmd_spec rv_spec_video = {
    "video", "[--weights W] [options] INPUT [INPUT...]", VIDEO_ABOUT, OPTS, -1, VIDEO_EPILOG,
    "  ravlt video --weights upernet_ravlt_s.pth clip.mp4 --output clip_seg.mp4 --json clip.jsonl\n"
    "  ravlt video --weights cascade_ravlt_s.pth 0 --output cam.mp4 --drop --every 2 --size 480x640\n"
    "  ravlt video --weights upernet_ravlt_s.pth a.mp4 b.mp4 --out-dir seg --threads 4\n",
    sizeof(video_cli_opts)};


static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

/* One process, several inputs in sorted order: each into DIR/STEM.*; every input is run (a
 * failed one leaves no output, or its finalised outputs up to the failure when frames had
 * been written) and the worst exit status is returned. first: inputs[0]
 * already open, or NULL (closed here if it is not run). */
static int run_inputs(rv_video_app *A, const rv_video_opts *o, char **inputs, int n, rv_video_reader *first, rv_ctx *ctx) {
  int worst = 0;
  for (int i = 0; i < n && !rv_video_interrupted(); i++) {
    char video[4096], json[4096];
    rv_video_job j;
    rv_video_dir_job(&j, o, inputs[i], video, json, sizeof video);
    if (i == 0) j.reader = first;
    first = NULL;
    rv_status st = rv_video_run(A, &j, ctx);
    int rc = st == RV_OK ? j.rc : rv_cli_fail(ctx, "video", st);
    if (rc >= 128 || (rc > worst && worst < 128)) worst = rc;
  }
  rv_video_close(first);
  return worst;
}

int rv_cmd_video(int argc, char **argv) {
  video_cli_opts vo;
  memset(&vo, 0, sizeof vo);
  vo.v.out_ext = "mp4";
  int n_in;
  int prc = rv_cli_parse(&rv_spec_video, &vo, argc, argv, &n_in);
  if (prc >= 0) return prc;
  rv_video_opts o = vo.v;
  const char *output = vo.output, *json = vo.json;
  char **inputs = argv;
#define USAGE_ERR(...) return rv_cli_usage_error("video", __VA_ARGS__)
  if (!n_in) USAGE_ERR("no INPUT video, camera index or URL");
  if (rv_mpi_size() > 1) {
    for (int i = 0; i < n_in; i++) {
      if (rv_video_is_live(inputs[i]))
        USAGE_ERR("'%s': cameras and streams run in one process, not across MPI ranks", inputs[i]);
    }
    if (o.show) USAGE_ERR("--show runs in one process, not across MPI ranks");
    if (o.drop) USAGE_ERR("--drop is for live sources, which run in one process, not across MPI ranks");
  }
  if (rv_tile_cli_check("video", &o.tile)) return 2;
  if (o.tile.tile[0] > 0 && o.size[0] > 0) USAGE_ERR("--tile runs tiles at the model's own scale: not with --size");
  if (o.show && !getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY"))
    USAGE_ERR("--show needs a display (DISPLAY is not set); use --output");
  if (output && json && !strcmp(output, json)) USAGE_ERR("--output and --json name the same file");
  if (rv_cli_json_stdout(json) && rv_mpi_size() > 1) USAGE_ERR("--json - (stdout) runs in one process: give --json FILE under mpirun");
  if (rv_cli_json_stdout(output)) USAGE_ERR("--output needs a video file name, not '-'");
  if (n_in > 1 && !o.out_dir) USAGE_ERR("%d INPUTs: give --out-dir DIR (DIR/NAME.jsonl and DIR/NAME.%s each)", n_in, o.out_ext);
  if (o.out_dir && (output || json)) USAGE_ERR("--out-dir names the outputs: no --output or --json with it");
  if (o.out_dir) {
    qsort(inputs, (size_t)n_in, sizeof *inputs, cmp_str);
    for (int i = 0; i < n_in; i++) {
      char v[4096], jn[4096], v2[4096], jn2[4096];
      if (rv_video_out_names(&o, inputs[i], v, jn, sizeof v)) USAGE_ERR("--out-dir: output name for '%s' too long", inputs[i]);
      for (int k = 0; k < i; k++) {
        rv_video_out_names(&o, inputs[k], v2, jn2, sizeof v2);
        if (!strcmp(jn, jn2)) USAGE_ERR("'%s' and '%s' would both write %s", inputs[k], inputs[i], jn);
      }
    }
  }
#undef USAGE_ERR
  if (rv_cli_check_model_opt("video", o.weights, o.model)) return 2;
  o.demo = !o.weights; /* the demo model built into the binary */
  if (o.demo) o.weights = RV_CLI_DEMO;

  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  /* Every output checked before any work: writable, not an input, no clash */
  {
    int nout = 0;
    char (*names)[4096] = calloc((size_t)n_in * 2 + 2, sizeof *names);
    const char **outs = calloc((size_t)n_in * 2 + 2, sizeof *outs), **from = calloc((size_t)n_in * 2 + 2, sizeof *from);
    rv_status cst = names && outs && from ? RV_OK : rv_error(ctx, RV_ERR_NOMEM, "out of memory");
    if (cst == RV_OK && o.out_dir) cst = rv_out_check_dir(o.out_dir, ctx);
    for (int i = 0; cst == RV_OK && o.out_dir && i < n_in; i++) {
      rv_video_out_names(&o, inputs[i], names[2 * i], names[2 * i + 1], sizeof names[0]);
      if (names[2 * i][0]) from[nout] = inputs[i], outs[nout++] = names[2 * i];
      from[nout] = inputs[i], outs[nout++] = names[2 * i + 1];
    }
    if (output) from[nout] = "--output", outs[nout++] = output;
    if (json) from[nout] = "--json", outs[nout++] = json;
    if (cst == RV_OK) cst = rv_cli_outputs_check(outs, from, nout, (const char *const *)inputs, n_in, ctx);
    free(names);
    free(outs);
    free(from);
    if (cst != RV_OK) {
      int rc = rv_cli_fail_once(ctx, "video", cst);
      rv_ctx_free(ctx);
      return rc;
    }
  }
  /* From here on SIGINT, SIGTERM and SIGHUP only set a flag (a third signal exits at once):
   * the outputs opened by a job are always finalised (or removed) by rv_video_run. */
  rv_video_interrupt_clear();
  rv_cli_signals_install(2);
  rv_video_app *A = NULL;
  int rc = 0;
  rv_status st = RV_OK;
  if (rv_mpi_size() > 1) {
    rc = rv_mpi_video(&o, inputs, n_in, output, json, ctx); /* loads the model on every rank */
  } else {
    /* one file: opened before the model loads (a missing file fails first), then run */
    rv_video_reader *vr = NULL;
    if (n_in == 1 && !rv_video_is_live(inputs[0])) st = rv_video_open(&vr, inputs[0], ctx);
    if (st == RV_OK && o.out_dir) st = rv_mkdirs(o.out_dir, ctx);
    if (st == RV_OK) st = rv_video_app_open(&A, &o, ctx);
    if (st != RV_OK) {
      rv_video_close(vr);
      rc = rv_cli_fail(ctx, "video", st);
    } else if (o.out_dir) {
      rc = run_inputs(A, &o, inputs, n_in, vr, ctx);
    } else {
      rv_video_job j;
      memset(&j, 0, sizeof j);
      j.input = inputs[0];
      j.reader = vr;
      j.output = output;
      j.json = rv_cli_json_stdout(json) ? NULL : json;
      j.json_stream = rv_cli_json_stdout(json) ? stdout : NULL;
      st = rv_video_run(A, &j, ctx);
      rc = st == RV_OK ? j.rc : rv_cli_fail(ctx, "video", st);
    }
  }
  rv_cli_signals_restore();
  rv_video_app_free(A);
  rv_ctx_free(ctx);
  return rc;
}
