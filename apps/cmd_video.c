/* `ravlt video --weights W INPUT`: segmentation or detection on a video file, a camera or
 * a network stream, through the three-stage pipeline of models/video_pipeline.h. This file
 * supplies the stages: inference with the model (calling thread), drawing + encoding +
 * JSON lines (encode thread); it owns the SIGINT flag and prints progress and summary. */
#define _POSIX_C_SOURCE 200809L
#include "apps/cli.h"
#include "apps/draw.h"
#include "apps/model_args.h"
#include "apps/model_run.h"
#include "eval/rle.h"
#include "models/video_pipeline.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *USAGE =
    "usage: ravlt video [--weights W] [options] INPUT\n"
    "\n"
    "Semantic segmentation or detection (chosen from the checkpoint) on every frame of a\n"
    "video. INPUT is a video file, a camera index (0, 1, ...) or a stream URL (rtsp://,\n"
    "http://, ...): whatever OpenCV's VideoCapture opens. Decoding, inference and\n"
    "drawing/encoding run concurrently (bounded queues, frames kept in order); inference\n"
    "uses all cores but one (or --threads).\n"
    "\n"
    "  --weights W       checkpoint (.pth or .safetensors), a 'ravlt models' name, or 'demo'\n"
    "                    (default): the built-in demo segmentation model (synthetic shapes);\n"
    "                    'demo-det': the built-in demo detector (the same shapes, boxes)\n"
    "  --model NAME      architecture when the checkpoint has no config\n"
    "  --output OUT      overlay video (input size and fps; .mp4 H.264 or MPEG-4, .avi MJPG)\n"
    "  --show            display the overlay in a window (needs a display; q or Esc stops)\n"
    "  --json OUT.jsonl  one JSON object per processed frame:\n"
    "                    segmentation {\"frame\", \"time\", \"pixels\": {\"class\": count}}\n"
    "                    detection {\"frame\", \"time\", \"detections\": [{\"bbox\": [x,y,w,h],\n"
    "                    \"score\", \"label\", \"name\", \"category_id\", \"segmentation\":\n"
    "                    {\"size\": [h,w], \"counts\": RLE}}]} (detections with score >= T)\n"
    "  --every N         run the model on every Nth frame (default 1); the other frames are\n"
    "                    written with the last overlay and get no JSON line\n"
    "  --max-frames N    stop after N input frames\n"
    "  --size HxW        inference scale: the model's test Resize img_scale becomes (W, H)\n"
    "                    (keep ratio), e.g. 480x640; output and results stay at the input size\n"
    "                    (default: the checkpoint's scale, (1333, 800) / (2048, 512))\n"
    "  --score-thr T     detections drawn and written with score >= T (default 0.3)\n"
    "  --opacity A       segmentation overlay opacity 0..1 (default 0.5)\n"
    "  --drop            live sources (camera, URL): drop frames inference cannot keep up with\n"
    "                    (counted); files never drop\n"
    "  --threads N       inference threads (default: cores - 1)\n"
    "  --queue N         frames per queue between stages (default 4)\n"
    "  --stall S         seconds without a frame before the stream counts as stalled (10)\n"
    "\n"
    "JSON \"time\" is frame / fps for files, seconds since the start for live sources. The\n"
    "summary counts frames read, processed, written, dropped and corrupt, the latency of\n"
    "processed frames (decoded -> written: mean, p95), fps, and the share of wall time the\n"
    "inference stage was not busy (--verbose: time per stage).\n"
    "\n"
    "Exit status: 0 done; 1 error (bad input, model, output); 2 usage; 3 the stream ended\n"
    "early or stalled (reported; outputs are finalised with the frames read); 130 stopped by\n"
    "Ctrl-C (outputs finalised). Frames of the wrong size are skipped and counted.\n";

static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
  (void)sig;
  g_interrupted = 1;
}

static int cancelled(void *user) {
  (void)user;
  return g_interrupted != 0;
}

static void log_stderr(void *user, rv_log_level level, const char *msg) {
  (void)user;
  const char *tag = level == RV_LOG_ERROR ? "error: " : level == RV_LOG_WARN ? "warning: " : level == RV_LOG_DEBUG ? "debug: " : "";
  fprintf(stderr, "ravlt: %s%s\n", tag, msg);
}

/* Per-frame results (heap; the pipeline hands them to the encode thread). */
typedef struct {
  int32_t *labels; /* segmentation: h x w */
  int n;           /* detection: kept detections (score >= thr) */
  float *boxes, *scores;
  int *cls;
  unsigned char *masks; /* n x h x w or NULL */
  int h, w;
} result;

typedef struct {
  rv_model *m;
  rv_task task;
  int custom_scale;
  rv_preprocess_params pre;
  rv_segmentor seg;
  rv_arena *arena;
  float thr, opacity;
  int n_classes;
  const char **names;
  unsigned char (*palette)[3];
  int *cat_ids;
  /* encode-thread state */
  rv_video_writer *vw;
  const char *out_path;
  FILE *json;
  const char *json_path;
  char json_tmp[4200];
  long *counts;
  rv_draw_det *dd;
  int dd_cap;
  long frames_out, json_lines;
  int show;
  int out_finalised, json_finalised;
  char fourcc[8];
} app;

static void free_result(void *user, void *r) {
  (void)user;
  result *x = r;
  if (!x) return;
  free(x->labels);
  free(x->boxes);
  free(x->scores);
  free(x->cls);
  free(x->masks);
  free(x);
}

static rv_status nomem(rv_ctx *ctx) { return rv_error(ctx, RV_ERR_NOMEM, "out of memory"); }

static rv_status infer(void *user, void **out, const rv_image *frame, const rv_vp_frame *fi, rv_ctx *ctx) {
  app *a = user;
  *out = NULL;
  result *r = calloc(1, sizeof *r);
  if (!r) return nomem(ctx);
  r->h = frame->h;
  r->w = frame->w;
  rv_status st = RV_OK;
  rv_arena_reset(a->arena);
  if (a->task == RV_TASK_SEGMENT) {
    r->labels = malloc(sizeof *r->labels * (size_t)frame->h * (size_t)frame->w);
    if (!r->labels) st = nomem(ctx);
    else if (!a->custom_scale) st = rv_model_segment(a->m, r->labels, frame, NULL, a->arena, ctx);
    else {
      rv_tensor x;
      rv_img_meta meta;
      st = rv_preprocess(&x, &meta, frame, &a->pre, a->arena, ctx);
      if (st == RV_OK) st = rv_seg_simple_test(&a->seg, r->labels, x, frame->h, frame->w, a->arena, ctx);
    }
  } else {
    rv_detections det = {0};
    if (!a->custom_scale) st = rv_model_detect(a->m, &det, NULL, frame, a->arena, ctx);
    else {
      rv_tensor x, feats[RV_RAVLT_STAGES];
      rv_img_meta meta;
      st = rv_preprocess(&x, &meta, frame, &a->pre, a->arena, ctx);
      if (st == RV_OK) st = rv_model_features(a->m, feats, x, a->arena, ctx);
      for (int i = 0; st == RV_OK && i < RV_RAVLT_STAGES; i++)
        if (!feats[i].data) st = rv_error(ctx, RV_ERR_MODEL, "the detector needs all 4 backbone outputs");
      if (st == RV_OK) st = rv_detector_forward(rv_model_detector(a->m), &det, feats, &meta, NULL, a->arena, ctx);
    }
    int keep = 0;
    for (int i = 0; st == RV_OK && i < det.n; i++) keep += det.scores[i] >= a->thr;
    if (st == RV_OK && keep) {
      size_t plane = (size_t)frame->h * (size_t)frame->w;
      r->boxes = malloc(sizeof *r->boxes * 4 * (size_t)keep);
      r->scores = malloc(sizeof *r->scores * (size_t)keep);
      r->cls = malloc(sizeof *r->cls * (size_t)keep);
      int masks = det.masks && det.mask_h == frame->h && det.mask_w == frame->w;
      if (masks) r->masks = malloc(plane * (size_t)keep);
      if (!r->boxes || !r->scores || !r->cls || (masks && !r->masks)) st = nomem(ctx);
      for (int i = 0; st == RV_OK && i < det.n; i++) {
        if (det.scores[i] < a->thr) continue;
        int k = r->n++;
        memcpy(r->boxes + 4 * k, det.bboxes + 4 * i, 4 * sizeof(float));
        r->scores[k] = det.scores[i];
        r->cls[k] = det.labels[i];
        if (masks) memcpy(r->masks + plane * (size_t)k, det.masks + plane * (size_t)i, plane);
      }
    }
  }
  if (st != RV_OK) {
    free_result(NULL, r);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", rv_ctx_errmsg(ctx)); /* not the buffer rv_error writes */
    return rv_error(ctx, st, "frame %ld: %s", fi->index, msg);
  }
  *out = r;
  return RV_OK;
}

/* JSON string body for an RLE string: only '"' and '\\' can occur in '0'..'o'. */
static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static void json_name(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
    else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
    else fputc(ch, f);
  }
  fputc('"', f);
}

static rv_status write_json(app *a, const rv_vp_frame *fi, const result *r, rv_ctx *ctx) {
  FILE *f = a->json;
  fprintf(f, "{\"frame\": %ld, \"time\": %.6f", fi->index, fi->time);
  if (a->task == RV_TASK_SEGMENT) {
    memset(a->counts, 0, sizeof *a->counts * (size_t)a->n_classes);
    size_t np = (size_t)r->h * (size_t)r->w;
    for (size_t p = 0; p < np; p++)
      if (r->labels[p] >= 0 && r->labels[p] < a->n_classes) a->counts[r->labels[p]]++;
    fputs(", \"pixels\": {", f);
    int first = 1;
    for (int k = 0; k < a->n_classes; k++) {
      if (!a->counts[k]) continue;
      fprintf(f, "%s\"%d\": %ld", first ? "" : ", ", k, a->counts[k]);
      first = 0;
    }
    fputs("}}\n", f);
  } else {
    fputs(", \"detections\": [", f);
    for (int k = 0; k < r->n; k++) {
      const float *b = r->boxes + 4 * k;
      fprintf(f, "%s{\"bbox\": [%.2f, %.2f, %.2f, %.2f], \"score\": %.5f, \"label\": %d, \"name\": ", k ? ", " : "",
              b[0], b[1], b[2] - b[0], b[3] - b[1], r->scores[k], r->cls[k]);
      json_name(f, rv_model_class_name(a->m, r->cls[k]));
      fprintf(f, ", \"category_id\": %d", a->cat_ids[r->cls[k]]);
      if (r->masks) {
        rv_rle rle = {0};
        rv_status st = rv_rle_encode_rowmajor(&rle, r->masks + (size_t)k * r->h * r->w, (uint32_t)r->h, (uint32_t)r->w, ctx);
        char *s = st == RV_OK ? rv_rle_to_string(&rle) : NULL;
        rv_rle_free(&rle);
        if (!s) return st != RV_OK ? st : nomem(ctx);
        fprintf(f, ", \"segmentation\": {\"size\": [%d, %d], \"counts\": ", r->h, r->w);
        json_str(f, s);
        fputc('}', f);
        free(s);
      }
      fputc('}', f);
    }
    fputs("]}\n", f);
  }
  if (fflush(f) || ferror(f)) return rv_error(ctx, RV_ERR_IO, "%s: write failed", a->json_path); /* line by line for tail -f */
  a->json_lines++;
  return RV_OK;
}

static rv_status sink(void *user, rv_image *frame, const rv_vp_frame *fi, const void *res, rv_ctx *ctx) {
  app *a = user;
  const result *r = res;
  if (a->json && fi->processed && r) RV_TRY(write_json(a, fi, r, ctx));
  if (!a->vw && !a->show) return RV_OK;
  if (r && a->task == RV_TASK_SEGMENT) {
    RV_TRY(rv_draw_label_overlay(frame, r->labels, (const unsigned char (*)[3])a->palette, a->names, a->n_classes,
                                 a->opacity, 1, ctx));
  } else if (r && r->n) {
    if (r->n > a->dd_cap) {
      rv_draw_det *nd = realloc(a->dd, sizeof *nd * (size_t)r->n);
      if (!nd) return nomem(ctx);
      a->dd = nd;
      a->dd_cap = r->n;
    }
    size_t plane = (size_t)r->h * (size_t)r->w;
    for (int k = 0; k < r->n; k++) {
      rv_draw_det *d = &a->dd[k];
      d->x1 = r->boxes[4 * k];
      d->y1 = r->boxes[4 * k + 1];
      d->x2 = r->boxes[4 * k + 2];
      d->y2 = r->boxes[4 * k + 3];
      d->score = r->scores[k];
      d->label = r->cls[k];
      d->mask = r->masks ? r->masks + plane * (size_t)k : NULL;
    }
    RV_TRY(rv_draw_detections(frame, a->dd, r->n, a->names, (const unsigned char (*)[3])a->palette, a->n_classes,
                              a->thr, ctx));
  }
  if (a->show) {
    int key = -1;
    RV_TRY(rv_image_show("ravlt video", frame, 1, &key, ctx));
    if (key == 'q' || key == 27) g_interrupted = 1; /* stop like Ctrl-C: outputs finalised */
  }
  if (!a->vw) return RV_OK;
  RV_TRY(rv_video_write(a->vw, frame, ctx));
  a->frames_out++;
  return RV_OK;
}

/* Encode thread, after the last frame: close the video and the JSON (temp + rename). */
static rv_status finish(void *user, rv_status prior, rv_ctx *ctx) {
  app *a = user;
  rv_status st = RV_OK;
  double t0 = rv_now();
  if (a->show) rv_image_close_windows(); /* GUI calls stay on the encode thread */
  if (a->vw) {
    snprintf(a->fourcc, sizeof a->fourcc, "%s", rv_video_writer_fourcc(a->vw));
    if (a->frames_out > 0) {
      st = rv_video_writer_close(a->vw, ctx);
      a->out_finalised = st == RV_OK;
    } else {
      rv_video_writer_discard(a->vw);
    }
    a->vw = NULL;
  }
  if (a->json) {
    int bad = fclose(a->json) != 0;
    a->json = NULL;
    if (bad && st == RV_OK) st = rv_error(ctx, RV_ERR_IO, "%s: write failed", a->json_path);
    if (!bad && (a->json_lines > 0 || prior == RV_OK) && rename(a->json_tmp, a->json_path) == 0) a->json_finalised = 1;
    else {
      remove(a->json_tmp);
      if (!bad && st == RV_OK && prior == RV_OK) st = rv_error(ctx, RV_ERR_IO, "%s: cannot rename the temporary file", a->json_path);
    }
  }
  rv_log(ctx, RV_LOG_DEBUG, "outputs finalised in %.2f s", rv_now() - t0);
  return st;
}

typedef struct {
  int enabled, drawn;
  long total;
  double last;
} progress;

static void on_progress(void *user, const rv_vp_stats *s) {
  progress *p = user;
  if (!p->enabled) return;
  double t = rv_now();
  if (t - p->last < 0.2 && !(p->total > 0 && s->written >= p->total)) return;
  p->last = t;
  p->drawn = 1;
  double fps = s->wall_s > 0 ? (double)s->written / s->wall_s : 0;
  if (p->total > 0) {
    long eta = fps > 0 ? (long)((double)(p->total - s->written) / fps + 0.5) : 0;
    fprintf(stderr, "\rvideo: %ld/%ld frames  %.2f fps  ETA %ld:%02ld  ", s->written, p->total, fps, eta / 60, eta % 60);
  } else {
    fprintf(stderr, "\rvideo: %ld frames  %.2f fps  %ld dropped  ", s->written, fps, s->dropped);
  }
}

static int parse_long(const char *s, long lo, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo) return -1;
  *out = v;
  return 0;
}

int rv_cmd_video(int argc, char **argv) {
  const char *weights = NULL, *name = NULL, *output = NULL, *json = NULL, *input = NULL, *size = NULL;
  double thr = 0.3, opacity = 0.5, stall = 10.0;
  long every = 1, max_frames = 0, threads = 0, queue = 4;
  int drop = 0, show = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    if (rv_cli_is_help(a)) { fputs(USAGE, stdout); return 0; }
    else if (!strcmp(a, "--weights") && has) weights = argv[++i];
    else if (!strcmp(a, "--model") && has) name = argv[++i];
    else if (!strcmp(a, "--output") && has) output = argv[++i];
    else if (!strcmp(a, "--json") && has) json = argv[++i];
    else if (!strcmp(a, "--show")) show = 1;
    else if (!strcmp(a, "--drop")) drop = 1;
    else if (!strcmp(a, "--size") && has) size = argv[++i];
    else if (!strcmp(a, "--score-thr") && has) thr = atof(argv[++i]);
    else if (!strcmp(a, "--opacity") && has) opacity = atof(argv[++i]);
    else if (!strcmp(a, "--stall") && has) stall = atof(argv[++i]);
    else if (!strcmp(a, "--every") && has) { if (parse_long(argv[++i], 1, &every) || every > 1000000) return rv_cli_usage_error("video", "--every needs a count >= 1"); }
    else if (!strcmp(a, "--max-frames") && has) { if (parse_long(argv[++i], 1, &max_frames)) return rv_cli_usage_error("video", "--max-frames needs a count >= 1"); }
    else if (!strcmp(a, "--threads") && has) { if (parse_long(argv[++i], 1, &threads) || threads > 4096) return rv_cli_usage_error("video", "--threads needs a count >= 1"); }
    else if (!strcmp(a, "--queue") && has) { if (parse_long(argv[++i], 1, &queue) || queue > 256) return rv_cli_usage_error("video", "--queue needs a count in 1..256"); }
    else if (a[0] == '-' && a[1]) return rv_cli_usage_error("video", "unknown or incomplete option '%s'", a);
    else if (input) return rv_cli_usage_error("video", "one INPUT only ('%s' and '%s')", input, a);
    else input = a;
  }
  int sh = 0, sw = 0;
  if (!input) return rv_cli_usage_error("video", "no INPUT video, camera index or URL");
  if (show && !getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY"))
    return rv_cli_usage_error("video", "--show needs a display (DISPLAY is not set); use --output");
  if (!(thr >= 0 && thr <= 1)) return rv_cli_usage_error("video", "--score-thr must be in 0..1");
  if (!(opacity >= 0 && opacity <= 1)) return rv_cli_usage_error("video", "--opacity must be in 0..1");
  if (!(stall >= 0)) return rv_cli_usage_error("video", "--stall must be >= 0 seconds");
  if (size && (rv_parse_size(size, &sh, &sw) || sh < 16 || sw < 16 || sh > 8192 || sw > 8192))
    return rv_cli_usage_error("video", "--size must be HxW with sides in 16..8192, e.g. 480x640");
  if (output && json && !strcmp(output, json)) return rv_cli_usage_error("video", "--output and --json name the same file");

  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) return 1;
  app A;
  memset(&A, 0, sizeof A);
  A.show = show;
  rv_video_reader *vr = NULL;
  int rc = 0;
  rv_status st = rv_video_open(&vr, input, ctx);
  rv_video_info info = {0};
  if (st == RV_OK) info = rv_video_get_info(vr);
  int live = info.is_camera || strstr(input, "://") != NULL;
  int demo = !weights;
  if (demo) weights = RV_CLI_DEMO;
  if (st == RV_OK) st = rv_cli_load_model(&A.m, weights, name, ctx);
  if (st == RV_OK && demo) rv_cli_demo_notice("video", A.m);
  if (st == RV_OK) {
    A.task = rv_model_task(A.m);
    A.n_classes = rv_model_num_classes(A.m);
    A.thr = (float)thr;
    A.opacity = (float)opacity;
    A.pre = rv_model_preprocess(A.m);
    if (size) {
      A.custom_scale = 1;
      A.pre.scale_w = sw;
      A.pre.scale_h = sh;
      A.pre.keep_ratio = 1;
      if (A.task == RV_TASK_SEGMENT) {
        A.seg.decoder = rv_model_seg_decoder(A.m);
        A.seg.backbone = rv_seg_ravlt_backbone;
        A.seg.backbone_user = (void *)rv_model_backbone(A.m);
        A.seg.test = *rv_model_seg_test_cfg(A.m);
      }
    }
    if (!(A.arena = rv_arena_create(0))) st = nomem(ctx);
  }
  if (st == RV_OK && rv_cli_class_tables(A.m, &A.names, &A.palette)) st = nomem(ctx);
  if (st == RV_OK) {
    A.cat_ids = malloc(sizeof *A.cat_ids * (size_t)A.n_classes);
    A.counts = malloc(sizeof *A.counts * (size_t)A.n_classes);
    A.dd = calloc(128, sizeof *A.dd);
    A.dd_cap = 128;
    if (!A.cat_ids || !A.counts || !A.dd) st = nomem(ctx);
    for (int i = 0; A.cat_ids && i < A.n_classes; i++) A.cat_ids[i] = rv_model_category_id(A.m, i);
  }
  /* From here on Ctrl-C only sets the flag: the outputs opened below are always finalised
   * (or removed) by this function. */
  struct sigaction sa, old_sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C kills at once */
  g_interrupted = 0;
  sigaction(SIGINT, &sa, &old_sa);
  double out_fps = info.fps > 0 && info.fps <= 1000 ? info.fps : 25.0;
  if (st == RV_OK && output) {
    if (!(info.fps > 0 && info.fps <= 1000)) rv_log(ctx, RV_LOG_WARN, "%s: unknown frame rate: writing %s at 25 fps", input, output);
    st = rv_video_writer_open(&A.vw, output, out_fps, info.width, info.height, NULL, ctx);
    A.out_path = output;
  }
  if (st == RV_OK && json) {
    snprintf(A.json_tmp, sizeof A.json_tmp, "%s.tmp%ld", json, (long)getpid());
    A.json_path = json;
    if (!(A.json = fopen(A.json_tmp, "w"))) st = rv_error(ctx, RV_ERR_IO, "%s: cannot create (%s)", json, "check the folder");
  }
  if (st != RV_OK) {
    rc = rv_cli_fail(ctx, "video", st);
    goto out;
  }
  if (!output && !json) rv_log(ctx, RV_LOG_INFO, "no --output or --json: results are not saved");
  if (drop && !live) rv_log(ctx, RV_LOG_INFO, "--drop applies to cameras and streams only: a file never drops frames");

  long ncores = sysconf(_SC_NPROCESSORS_ONLN);
  int ithreads = threads > 0 ? (int)threads : rv_cli.threads > 0 ? rv_cli.threads : (int)(ncores > 1 ? ncores - 1 : 1);
  rv_ctx_set_threads(ctx, ithreads);
  rv_vp_config c = rv_vp_default_config();
  c.read = rv_vp_read_video;
  c.read_user = vr;
  c.infer = infer;
  c.sink = sink;
  c.free_result = free_result;
  c.finish = finish;
  c.user = &A;
  progress prog = {0};
  prog.enabled = !rv_cli.quiet && isatty(2);
  prog.total = info.frame_count > 0 ? info.frame_count : 0;
  if (max_frames > 0 && (prog.total == 0 || prog.total > max_frames)) prog.total = max_frames;
  c.progress = on_progress;
  c.progress_user = &prog;
  c.cancelled = cancelled;
  c.log = log_stderr;
  c.log_level = rv_cli.quiet ? RV_LOG_WARN : rv_cli.verbose ? RV_LOG_DEBUG : RV_LOG_INFO;
  c.width = info.width;
  c.height = info.height;
  c.fps = info.fps;
  c.live = live;
  c.drop = drop;
  c.every = (int)every;
  c.max_frames = max_frames;
  c.queue = (int)queue;
  c.stall_s = stall;
  c.infer_threads = ithreads;
  if (!rv_cli.quiet)
    fprintf(stderr, "ravlt video: %s: %dx%d, %.3g fps, %s; %s%s, inference scale %dx%d, %d thread(s)\n", input, info.width,
            info.height, info.fps, info.frame_count > 0 ? "file" : live ? "live" : "length unknown",
            rv_model_arch(A.m), every > 1 ? " on every Nth frame" : "", A.pre.scale_h, A.pre.scale_w, ithreads);

  rv_vp_stats s;
  st = rv_vp_run(&c, &s, ctx);
  if (prog.drawn) fputc('\n', stderr);

  if (st != RV_OK) rc = rv_cli_fail(ctx, "video", st);
  if (s.ended_early || s.stalled)
    fprintf(stderr, "ravlt video: input %s: %s\n", s.stalled ? "stalled" : "ended early", s.fault);
  if (s.corrupt) fprintf(stderr, "ravlt video: %ld corrupt frame(s) skipped\n", s.corrupt);
  if (s.interrupted) fprintf(stderr, "ravlt video: interrupted: stopped after %ld frame(s)\n", s.written);
  if (!rv_cli.quiet || st != RV_OK || s.ended_early || s.stalled) {
    double share = s.wall_s > 0 ? 100.0 * (1.0 - s.infer_s / s.wall_s) : 0;
    fprintf(stderr,
            "ravlt video: %ld frame(s) read, %ld processed, %ld written, %ld dropped, %ld corrupt; latency mean %.3f s, "
            "p95 %.3f s; %.2f fps; %.1f s wall, %.1f%% outside inference\n",
            s.read, s.processed, s.written, s.dropped, s.corrupt, s.latency_mean_s, s.latency_p95_s, s.fps, s.wall_s,
            share < 0 ? 0 : share);
    rv_log(ctx, RV_LOG_DEBUG,
           "stages: decode %.2f s, inference %.2f s (waited %.2f s for frames, %.2f s for the encoder), draw+encode %.2f s",
           s.read_s, s.infer_s, s.wait_in_s, s.wait_out_s, s.sink_s);
    if (A.out_finalised) fprintf(stderr, "ravlt video: wrote %s (%s, %ld frames, %.3g fps)\n", output, A.fourcc, A.frames_out, out_fps);
    if (A.json_finalised) fprintf(stderr, "ravlt video: wrote %s (%ld lines)\n", json, A.json_lines);
  }
  if (rc == 0) rc = s.interrupted ? 130 : (s.ended_early || s.stalled) ? 3 : 0;
out:
  sigaction(SIGINT, &old_sa, NULL);
  if (A.vw) rv_video_writer_discard(A.vw);
  if (A.json) {
    fclose(A.json);
    remove(A.json_tmp);
  }
  rv_video_close(vr);
  free(A.cat_ids);
  free(A.counts);
  free(A.dd);
  free(A.names);
  free(A.palette);
  rv_arena_free(A.arena);
  rv_model_free(A.m);
  rv_ctx_free(ctx);
  return rc;
}
