/* The video application library behind apps/video_run.h: the model loaded once, and one
 * job (an input or a frame range of it) run through the three-stage pipeline of
 * models/video_pipeline.h: inference with the model (calling thread), drawing + encoding +
 * JSON lines (encode thread); the interrupt flag, progress and summary lines. The
 * one-process command (apps/cmd_video.c) and the MPI ranks (apps/mpi_video.c) run it. */
#define _POSIX_C_SOURCE 200809L
#include "apps/video_run.h"
#include "apps/json_writer.h"
#include "apps/cli.h"
#include "apps/draw.h"
#include "apps/model_args.h"
#include "apps/model_run.h"
#include "apps/outputs.h"
#include "core/fs.h"
#include "eval/rle.h"
#include "models/video_pipeline.h"

#include <stddef.h>

#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_interrupted; /* q or Esc in the --show window */

static int cancelled(void *user) {
  const rv_video_job *j = user;
  if (j && j->cancelled && j->cancelled(j->hook_user)) return 1;
  return g_interrupted != 0 || rv_cli_stop_signal() != 0;
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

struct rv_video_app {
  rv_video_opts o;
  rv_model *m;
  rv_task task;
  int custom_scale;
  int tiled; /* --tile */
  rv_tile_opts to;
  rv_preprocess_params pre;
  rv_segmentor seg;
  rv_arena *arena;
  float thr, opacity;
  int n_classes;
  const char **names;
  unsigned char (*palette)[3];
  int *cat_ids;
  long *counts;
  rv_draw_det *dd;
  int dd_cap;
  /* the job being run, its reader and its encode-thread state */
  rv_video_job *job;
  int live;       /* the job's input is a camera or a URL */
  double t_start; /* realtime: when the job's first frame was read */
  rv_video_reader *vr;
  rv_video_writer *vw;
  int vw_owned; /* vw is ours to close (else the job's writer) */
  const char *out_path;
  double out_fps; /* of vw when it is ours */
  FILE *json;     /* jo.f, or the job's stream */
  rv_out_file jo;
  int json_owned; /* jo was opened for this job (else json is the job's stream or NULL) */
  const char *json_path;
  long frames_out, json_lines;
  int show;
  int out_finalised, json_finalised;
  char fourcc[8];
};
typedef struct rv_video_app app;

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
    else if (a->tiled) st = rv_model_segment_tiled(a->m, r->labels, frame, &a->to, a->arena, ctx);
    else if (!a->custom_scale) st = rv_model_segment(a->m, r->labels, frame, NULL, a->arena, ctx);
    else {
      rv_tensor x;
      rv_img_meta meta;
      st = rv_preprocess(&x, &meta, frame, &a->pre, a->arena, ctx);
      if (st == RV_OK) st = rv_seg_simple_test(&a->seg, r->labels, x, frame->h, frame->w, a->arena, ctx);
    }
  } else {
    rv_detections det = {0};
    const rv_rle *rles = NULL; /* a tiled run's masks */
    if (a->tiled) {
      rv_tile_detections td;
      st = rv_model_detect_tiled(a->m, &td, frame, &a->to, a->arena, ctx);
      if (st == RV_OK) det = (rv_detections){td.n, td.bboxes, td.scores, td.labels, NULL, 0, 0};
      rles = st == RV_OK ? td.masks : NULL;
    } else if (!a->custom_scale) st = rv_model_detect(a->m, &det, NULL, frame, a->arena, ctx);
    else {
      rv_tensor x, feats[RV_RAVLT_STAGES];
      rv_img_meta meta;
      st = rv_preprocess(&x, &meta, frame, &a->pre, a->arena, ctx);
      if (st == RV_OK) st = rv_model_features(a->m, feats, x, a->arena, ctx);
      for (int i = 0; st == RV_OK && i < RV_RAVLT_STAGES; i++)
        if (!feats[i].data) st = rv_error(ctx, RV_ERR_MODEL, "the detector needs all 4 backbone outputs");
      if (st == RV_OK) st = rv_detector_forward(rv_model_detector(a->m), &det, feats, &meta, NULL, a->arena, ctx);
    }
    if (st == RV_OK && !a->tiled && a->o.tile.max_dets > 0 && det.n > a->o.tile.max_dets) det.n = a->o.tile.max_dets;
    int keep = 0;
    for (int i = 0; st == RV_OK && i < det.n; i++) keep += det.scores[i] >= a->thr;
    if (st == RV_OK && keep) {
      size_t plane = (size_t)frame->h * (size_t)frame->w;
      r->boxes = malloc(sizeof *r->boxes * 4 * (size_t)keep);
      r->scores = malloc(sizeof *r->scores * (size_t)keep);
      r->cls = malloc(sizeof *r->cls * (size_t)keep);
      int masks = (det.masks && det.mask_h == frame->h && det.mask_w == frame->w) || rles;
      if (masks) r->masks = malloc(plane * (size_t)keep);
      if (!r->boxes || !r->scores || !r->cls || (masks && !r->masks)) st = nomem(ctx);
      for (int i = 0; st == RV_OK && i < det.n; i++) {
        if (det.scores[i] < a->thr) continue;
        int k = r->n++;
        memcpy(r->boxes + 4 * k, det.bboxes + 4 * i, 4 * sizeof(float));
        r->scores[k] = det.scores[i];
        r->cls[k] = det.labels[i];
        if (masks && !rles) memcpy(r->masks + plane * (size_t)k, det.masks + plane * (size_t)i, plane);
        if (rles) { /* the RLE's runs go down the columns */
          unsigned char *o = r->masks + plane * (size_t)k, v = 0;
          size_t p = 0;
          for (size_t j = 0; j < rles[i].m; j++, v = !v)
            for (uint32_t c = 0; c < rles[i].cnts[j]; c++, p++) o[(p % (size_t)frame->h) * (size_t)frame->w + p / (size_t)frame->h] = v;
        }
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

/* One JSON line: {"frame", "time", "pixels": {"class": count}} (segmentation) or
 * {"frame", "time", "detections": [{"bbox": [x, y, w, h], "score", "label", "name",
 * "category_id", "segmentation": {"size", "counts"}}]}. */
static rv_status write_json(app *a, const rv_vp_frame *fi, const result *r, rv_ctx *ctx) {
  rv_jw w;
  rv_jw_init(&w, a->json);
  rv_jw_obj(&w);
  rv_jw_key(&w, "frame");
  rv_jw_int(&w, fi->index);
  rv_jw_key(&w, "time");
  rv_jw_fixed(&w, fi->time, 6);
  if (a->task == RV_TASK_SEGMENT) {
    memset(a->counts, 0, sizeof *a->counts * (size_t)a->n_classes);
    size_t np = (size_t)r->h * (size_t)r->w;
    for (size_t p = 0; p < np; p++)
      if (r->labels[p] >= 0 && r->labels[p] < a->n_classes) a->counts[r->labels[p]]++;
    rv_jw_key(&w, "pixels");
    rv_jw_obj(&w);
    for (int k = 0; k < a->n_classes; k++) {
      if (!a->counts[k]) continue;
      char key[16];
      snprintf(key, sizeof key, "%d", k);
      rv_jw_key(&w, key);
      rv_jw_int(&w, a->counts[k]);
    }
    rv_jw_end(&w);
  } else {
    rv_jw_key(&w, "detections");
    rv_jw_arr(&w);
    for (int k = 0; k < r->n; k++) {
      const float *b = r->boxes + 4 * k;
      const float xywh[4] = {b[0], b[1], b[2] - b[0], b[3] - b[1]};
      rv_jw_obj(&w);
      rv_jw_key(&w, "bbox");
      rv_jw_arr(&w);
      for (int c = 0; c < 4; c++) rv_jw_fixed(&w, xywh[c], 2);
      rv_jw_end(&w);
      rv_jw_key(&w, "score");
      rv_jw_fixed(&w, r->scores[k], 5);
      rv_jw_key(&w, "label");
      rv_jw_int(&w, r->cls[k]);
      rv_jw_key(&w, "name");
      rv_jw_str(&w, rv_model_class_name(a->m, r->cls[k]));
      rv_jw_key(&w, "category_id");
      rv_jw_int(&w, a->cat_ids[r->cls[k]]);
      if (r->masks) {
        rv_rle rle = {0};
        rv_status st = rv_rle_encode_rowmajor(&rle, r->masks + (size_t)k * r->h * r->w, (uint32_t)r->h, (uint32_t)r->w, ctx);
        char *s = st == RV_OK ? rv_rle_to_string(&rle) : NULL;
        rv_rle_free(&rle);
        if (!s) return st != RV_OK ? st : nomem(ctx);
        rv_jw_key(&w, "segmentation");
        rv_jw_obj(&w);
        rv_jw_key(&w, "size");
        rv_jw_arr(&w);
        rv_jw_int(&w, r->h);
        rv_jw_int(&w, r->w);
        rv_jw_end(&w);
        rv_jw_key(&w, "counts");
        rv_jw_str(&w, s);
        rv_jw_end(&w);
        free(s);
      }
      rv_jw_end(&w);
    }
    rv_jw_end(&w);
  }
  rv_jw_end(&w);
  rv_jw_raw(&w, "\n");
  errno = 0;
  if (fflush(a->json) || !rv_jw_ok(&w)) { /* line by line for tail -f */
    int err = a->json_owned && rv_out_errno(&a->jo) ? rv_out_errno(&a->jo) : errno ? errno : EIO;
    return rv_error(ctx, RV_ERR_IO, "%s: write failed (%s)", a->json == stdout ? "standard output" : a->json_path,
                    strerror(err));
  }
  a->json_lines++;
  return RV_OK;
}

static rv_status sink(void *user, rv_image *frame, const rv_vp_frame *fi, const void *res, rv_ctx *ctx) {
  app *a = user;
  const result *r = res;
  if (a->json && fi->processed && r) RV_TRY(write_json(a, fi, r, ctx));
  if (!a->vw && !a->show && !a->job->on_frame) return RV_OK;
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
      d->rle = NULL;
    }
    RV_TRY(rv_draw_detections(frame, a->dd, r->n, a->names, (const unsigned char (*)[3])a->palette, a->n_classes,
                              a->thr, ctx));
  }
  if (a->show) {
    int key = -1;
    RV_TRY(rv_image_show("ravlt video", frame, 1, &key, ctx));
    if (key == 'q' || key == 27) g_interrupted = 1; /* stop like Ctrl-C: outputs finalised */
  }
  if (a->job->on_frame) RV_TRY(a->job->on_frame(a->job->hook_user, frame, fi, ctx));
  if (!a->vw) return RV_OK;
  RV_TRY(rv_video_write(a->vw, frame, ctx));
  a->frames_out++;
  return RV_OK;
}

/* Encode thread, after the last frame: close the video and the JSON (rv_out_file: renamed
 * into place when a line was written or the run went well, else removed). */
static rv_status finish(void *user, rv_status prior, rv_ctx *ctx) {
  app *a = user;
  rv_status st = RV_OK;
  double t0 = rv_now();
  if (a->show) rv_image_close_windows(); /* GUI calls stay on the encode thread */
  if (a->vw && !a->vw_owned) a->vw = NULL; /* the caller's writer stays open */
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
  if (a->json && !a->json_owned) a->json_finalised = 1; /* the caller's stream: flushed line by line */
  if (a->json_owned) {
    if (a->json_lines > 0 || prior == RV_OK) {
      rv_status s = rv_out_close(&a->jo, ctx);
      if (s == RV_OK) a->json_finalised = 1;
      else if (st == RV_OK) st = s;
    } else {
      rv_out_abort(&a->jo);
    }
  }
  a->json = NULL;
  rv_log(ctx, RV_LOG_DEBUG, "outputs finalised in %.2f s", rv_now() - t0);
  return st;
}

typedef struct {
  int enabled, drawn;
  long total;
  double last;
  const rv_video_job *job;
} progress;

static void on_progress(void *user, const rv_vp_stats *s) {
  progress *p = user;
  if (p->job->on_stats) p->job->on_stats(p->job->hook_user, s);
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

int rv_video_interrupted(void) { return g_interrupted != 0 || rv_cli_stop_signal() != 0; }

uint64_t rv_video_frame_hash(const rv_image *f) {
  uint64_t h = 1469598103934665603ULL;
  size_t n = (size_t)f->h * (size_t)f->w * (size_t)f->c;
  for (size_t i = 0; i < n; i++) {
    h ^= f->data[i];
    h *= 1099511628211ULL;
  }
  return h;
}

/* Decode thread: the job's reader (--realtime: a file's frame k no sooner than k / fps
 * after the first); the first frame's hash for the seam check. */
static rv_status read_frame(void *user, rv_image *frame, int *got, rv_ctx *ctx) {
  app *a = user;
  if (a->o.realtime && !a->live) {
    double fps = a->job->info.fps > 0 && a->job->info.fps <= 1000 ? a->job->info.fps : 25.0;
    long k = rv_video_frames_read(a->vr);
    if (k == 0) a->t_start = rv_now();
    for (double due = a->t_start + (double)k / fps, t; (t = rv_now()) < due && !cancelled(a->job);) {
      double s = due - t < 0.05 ? due - t : 0.05;
      struct timespec ts = {0, (long)(s * 1e9)};
      nanosleep(&ts, NULL);
    }
  }
  RV_TRY(rv_video_read(a->vr, frame, got, ctx));
  if (*got && !a->job->have_first) {
    a->job->first_hash = rv_video_frame_hash(frame);
    a->job->have_first = 1;
  }
  return RV_OK;
}

void rv_video_app_free(rv_video_app *a) {
  if (!a) return;
  free(a->cat_ids);
  free(a->counts);
  free(a->dd);
  free(a->names);
  free(a->palette);
  rv_arena_free(a->arena);
  if (!a->o.shared_model) rv_model_free(a->m);
  free(a);
}

rv_status rv_video_app_open(rv_video_app **out, const rv_video_opts *o, rv_ctx *ctx) {
  *out = NULL;
  app *A = calloc(1, sizeof *A);
  if (!A) return nomem(ctx);
  A->o = *o;
  A->show = o->show;
  rv_status st = RV_OK;
  if (o->shared_model) A->m = o->shared_model;
  else {
    st = o->demo ? rv_cli_load_demo(&A->m, 0, ctx) : rv_cli_load_model_ex(&A->m, o->weights, o->model, &(rv_model_load_opts){o->strict}, ctx);
    if (st == RV_OK) st = rv_cli_set_precision(A->m, o->precision, ctx);
    if (st == RV_OK && o->demo) rv_cli_demo_notice("video", A->m);
  }
  if (st == RV_OK) {
    A->task = rv_model_task(A->m);
    A->n_classes = rv_model_num_classes(A->m);
    A->thr = (float)o->thr;
    A->opacity = (float)o->opacity;
    A->pre = rv_model_preprocess(A->m);
    A->tiled = rv_tile_cli_opts(&o->tile, &A->to);
    int sh = o->size[0], sw = o->size[1];
    if (sh > 0) {
      A->custom_scale = 1;
      A->pre.scale_w = sw;
      A->pre.scale_h = sh;
      A->pre.keep_ratio = 1;
      if (A->task == RV_TASK_SEGMENT) {
        A->seg.decoder = rv_model_seg_decoder(A->m);
        A->seg.backbone = rv_seg_ravlt_backbone;
        A->seg.backbone_user = (void *)rv_model_backbone(A->m);
        A->seg.test = *rv_model_seg_test_cfg(A->m);
      }
    }
    if (!(A->arena = rv_arena_create(0))) st = nomem(ctx);
  }
  if (st == RV_OK && rv_cli_class_tables(A->m, &A->names, &A->palette)) st = nomem(ctx);
  if (st == RV_OK) {
    A->cat_ids = malloc(sizeof *A->cat_ids * (size_t)A->n_classes);
    A->counts = malloc(sizeof *A->counts * (size_t)A->n_classes);
    A->dd = calloc(128, sizeof *A->dd);
    A->dd_cap = 128;
    if (!A->cat_ids || !A->counts || !A->dd) st = nomem(ctx);
    for (int i = 0; A->cat_ids && i < A->n_classes; i++) A->cat_ids[i] = rv_model_category_id(A->m, i);
  }
  if (st != RV_OK) {
    rv_video_app_free(A);
    return st;
  }
  *out = A;
  return RV_OK;
}

double rv_video_out_fps(const rv_video_info *info, const char *input, const char *output, rv_ctx *ctx) {
  if (info->fps > 0 && info->fps <= 1000) return info->fps;
  rv_log(ctx, RV_LOG_WARN, "%s: unknown frame rate: writing %s at 25 fps", input, output);
  return 25.0;
}

/* Opens the job's input (or takes over job->reader), positioned at job->first, and outputs. */
static rv_status open_job(app *A, rv_video_job *j, rv_ctx *ctx) {
  if (j->reader) {
    A->vr = j->reader;
    j->reader = NULL;
  } else {
    RV_TRY(rv_video_open(&A->vr, j->input, ctx));
  }
  j->info = rv_video_get_info(A->vr);
  if (j->first > 0 || j->count > 0) RV_TRY(rv_video_seek(A->vr, j->first, A->o.no_seek, ctx));
  if (j->writer) {
    A->vw = j->writer;
  } else if (j->output) {
    A->vw_owned = 1;
    A->out_fps = rv_video_out_fps(&j->info, j->input, j->output, ctx);
    RV_TRY(rv_video_writer_open(&A->vw, j->output, A->out_fps, j->info.width, j->info.height, j->fourcc, ctx));
    A->out_path = j->output;
  }
  if (j->json_stream) {
    A->json = j->json_stream;
    A->json_path = j->input;
  } else if (j->json) {
    RV_TRY(rv_out_open(&A->jo, j->json, ctx));
    A->json_owned = 1;
    A->json = A->jo.f;
    A->json_path = j->json;
  }
  return RV_OK;
}

/* The frame after a range, for the seam check (the decode thread is done with the reader). */
static void hash_next(app *A, rv_video_job *j, rv_ctx *ctx) {
  rv_image f = {0};
  int got = 0;
  if (rv_video_read(A->vr, &f, &got, ctx) == RV_OK && got) {
    j->next_hash = rv_video_frame_hash(&f);
    j->have_next = 1;
  }
  rv_image_free(&f);
}

static void summary(const app *A, const rv_video_job *j) {
  const rv_vp_stats *s = &j->stats;
  double share = s->wall_s > 0 ? 100.0 * (1.0 - s->infer_s / s->wall_s) : 0;
  fprintf(stderr,
          "ravlt video: %ld frame(s) read, %ld processed, %ld written, %ld dropped, %ld corrupt; latency mean %.3f s, "
          "p95 %.3f s; %.2f fps; %.1f s wall, %.1f%% outside inference\n",
          s->read, s->processed, s->written, s->dropped, s->corrupt, s->latency_mean_s, s->latency_p95_s, s->fps, s->wall_s,
          share < 0 ? 0 : share);
  if (A->out_finalised) fprintf(stderr, "ravlt video: wrote %s (%s, %ld frames, %.3g fps)\n", j->output, A->fourcc, A->frames_out, A->out_fps);
  if (A->json_finalised && A->json_owned) fprintf(stderr, "ravlt video: wrote %s (%ld lines)\n", j->json, A->json_lines);
}

rv_status rv_video_run(rv_video_app *A, rv_video_job *j, rv_ctx *ctx) {
  const rv_video_opts *o = &A->o;
  A->job = j;
  A->vr = NULL;
  A->vw = NULL;
  A->vw_owned = 0;
  A->out_fps = 0;
  A->json = NULL;
  memset(&A->jo, 0, sizeof A->jo);
  A->json_owned = A->out_finalised = A->json_finalised = 0;
  A->frames_out = A->json_lines = 0;
  A->fourcc[0] = 0;
  j->rc = 1;
  j->have_first = j->have_next = 0;
  memset(&j->stats, 0, sizeof j->stats);
  rv_status st = open_job(A, j, ctx);
  const rv_video_info info = j->info;
  const char *input = j->input;
  int live = rv_video_is_live(input);
  A->live = live;
  if (st != RV_OK) goto out;
  if (!j->output && !j->writer && !j->json && !j->json_stream) rv_log(ctx, RV_LOG_INFO, "no --output or --json: results are not saved");
  if (o->drop && !live) rv_log(ctx, RV_LOG_INFO, "--drop applies to cameras and streams only: a file never drops frames");

  long ncores = sysconf(_SC_NPROCESSORS_ONLN);
  int ithreads = o->threads > 0 ? (int)o->threads : rv_cli.threads > 0 ? rv_cli.threads : (int)(ncores > 1 ? ncores - 1 : 1);
  rv_ctx_set_threads(ctx, ithreads);
  rv_vp_config c = rv_vp_default_config();
  c.read = read_frame;
  c.read_user = A;
  c.infer = infer;
  c.sink = sink;
  c.free_result = free_result;
  c.finish = finish;
  c.user = A;
  progress prog = {0};
  prog.enabled = !rv_cli.quiet && !j->quiet && isatty(2);
  prog.job = j;
  prog.total = info.frame_count > 0 ? info.frame_count - j->first : 0;
  /* a range's own count, else --max-frames counted from frame 0 (the last range of a split
   * file runs to the end: it stops where one process would) */
  long max_frames = j->count > 0 ? j->count : o->max_frames > 0 ? o->max_frames - j->first : 0;
  if (max_frames > 0 && (prog.total <= 0 || prog.total > max_frames)) prog.total = max_frames;
  c.progress = on_progress;
  c.progress_user = &prog;
  c.cancelled = cancelled;
  c.cancel_user = j;
  c.log = log_stderr;
  c.log_level = rv_cli.quiet ? RV_LOG_WARN : rv_cli.verbose ? RV_LOG_DEBUG : RV_LOG_INFO;
  c.width = info.width;
  c.height = info.height;
  c.fps = info.fps;
  c.live = live;
  c.drop = o->drop;
  c.every = (int)o->every;
  c.max_frames = max_frames;
  c.first_index = j->first;
  c.queue = (int)o->queue;
  c.stall_s = o->stall;
  c.infer_threads = ithreads;
  int talk = !rv_cli.quiet && !j->quiet;
  if (talk)
    fprintf(stderr, "ravlt video: %s: %dx%d, %.3g fps, %s; %s%s, inference scale %dx%d, %d thread(s)\n", input, info.width,
            info.height, info.fps, info.frame_count > 0 ? "file" : live ? "live" : "length unknown",
            rv_model_arch(A->m), o->every > 1 ? " on every Nth frame" : "", A->pre.scale_h, A->pre.scale_w, ithreads);

  rv_vp_stats *s = &j->stats;
  st = rv_vp_run(&c, s, ctx);
  if (prog.drawn) fputc('\n', stderr);
  if (st == RV_OK && j->count > 0 && s->read == j->count) hash_next(A, j, ctx);
  j->frames_out = A->frames_out;
  j->json_lines = A->json_lines;
  if (st == RV_OK) j->rc = s->interrupted ? (rv_cli_stop_signal() ? 128 + rv_cli_stop_signal() : 130) : (s->ended_early || s->stalled) ? 3 : 0;
  if (!j->quiet && (s->ended_early || s->stalled)) /* a quiet job's caller reports them */
    fprintf(stderr, "ravlt video: input %s: %s\n", s->stalled ? "stalled" : "ended early", s->fault);
  if (!j->quiet && s->corrupt) fprintf(stderr, "ravlt video: %ld corrupt frame(s) skipped\n", s->corrupt);
  if (!j->quiet && s->interrupted) fprintf(stderr, "ravlt video: interrupted: stopped after %ld frame(s)\n", s->written);
  if (talk || (!j->quiet && (st != RV_OK || s->ended_early || s->stalled))) {
    summary(A, j);
    rv_log(ctx, RV_LOG_DEBUG,
           "stages: decode %.2f s, inference %.2f s (waited %.2f s for frames, %.2f s for the encoder), draw+encode %.2f s",
           s->read_s, s->infer_s, s->wait_in_s, s->wait_out_s, s->sink_s);
  }
out:
  if (A->vw && A->vw_owned) rv_video_writer_discard(A->vw);
  A->vw = NULL;
  if (A->json_owned) rv_out_abort(&A->jo); /* a no-op when finish() closed it */
  A->json = NULL;
  rv_video_close(A->vr);
  A->vr = NULL;
  A->job = NULL;
  return st;
}

/* "DIR/STEM" + suffix; -1 when it does not fit. */
static int under_dir(char *dst, size_t cap, const char *dir, const char *input, const char *ext) {
  const char *base = strrchr(input, '/');
  base = base ? base + 1 : input;
  const char *dot = strrchr(base, '.');
  int stem = (int)(dot && dot != base ? (size_t)(dot - base) : strlen(base));
  int n = snprintf(dst, cap, "%s/%.*s.%s", dir, stem, base, ext);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int rv_video_out_names(const rv_video_opts *o, const char *input, char *video, char *json, size_t cap) {
  video[0] = 0;
  if (under_dir(json, cap, o->out_dir, input, "jsonl")) return -1;
  if (strcmp(o->out_ext, "none") != 0 && under_dir(video, cap, o->out_dir, input, o->out_ext)) return -1;
  return 0;
}

void rv_video_dir_job(rv_video_job *j, const rv_video_opts *o, const char *input, char *video, char *json, size_t cap) {
  memset(j, 0, sizeof *j);
  j->input = input;
  rv_video_out_names(o, input, video, json, cap); /* checked while parsing */
  j->output = video[0] ? video : NULL;
  j->json = json;
}

void rv_video_interrupt_clear(void) { g_interrupted = 0; }
