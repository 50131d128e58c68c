/* Images, video and drawing: the C face of OpenCV 4.6 (the only file that sees cv:: is
 * formats/image.cpp).
 *
 *   rv_image img = {0}, small = {0};
 *   if (rv_image_read("photo.jpg", &img, ctx) != RV_OK) ...rv_ctx_errmsg(ctx)...;
 *   rv_image_resize(&small, &img, img.w / 2, img.h / 2, RV_INTERP_LINEAR, ctx);
 *   rv_draw_text(&small, "hello", 10, 30, 0.8, rv_rgb(255, 255, 255), 2, ctx);
 *   rv_image_write("out.png", &small, ctx);          // temp file + rename
 *   rv_image_free(&img); rv_image_free(&small);
 *
 *   rv_video_reader *vr; rv_image frame = {0}; int got;
 *   rv_video_open(&vr, "clip.mp4", ctx);              // or "0" (camera), or a URL
 *   while (rv_video_read(vr, &frame, &got, ctx) == RV_OK && got) { ... }
 *   rv_video_close(vr); rv_image_free(&frame);
 *
 * Pixels are HWC uint8 in OpenCV's channel order: 3-channel images are BGR (as cv2.imread
 * and mmcv give them), 1-channel images are grey / label maps. Every function catches all
 * C++ exceptions and turns them into an rv_status with a one-line message naming the file.
 * Decoding is byte-identical to cv2.imread / mmcv.imfrombytes (same libjpeg-turbo, same
 * OpenCV), resizing to cv2.resize (OpenCV's fixed-point uint8 bilinear).
 */
#ifndef RV_CORE_IMAGE_H
#define RV_CORE_IMAGE_H

#include "core/rv.h"
#include <ravlt/image.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rv_image, rv_img_meta and rv_image_alloc/free/copy/read/read_gray/decode/write/encode are
 * public: <ravlt/image.h>. */

/* JPEG at a given quality (1-100) into memory (*buf malloc'ed); rv_image_encode uses 95. */
rv_status rv_image_encode_jpeg(const rv_image *img, int quality, unsigned char **buf, size_t *len, rv_ctx *ctx);

/* Width and height from the header of an encoded image, without decoding: the figures
 * rv_image_decode checks against rv_ctx_max_pixels before it decodes. 1 when found, 0 when
 * the format is not one whose header is read or the header is cut short. */
int rv_image_header_size(const void *buf, size_t len, long long *w, long long *h);

typedef enum { RV_INTERP_LINEAR = 0, RV_INTERP_NEAREST, RV_INTERP_AREA, RV_INTERP_CUBIC } rv_interp;
/* dst = cv2.resize(src, (w, h), interpolation). dst is (re)allocated; dst != src. */
rv_status rv_image_resize(rv_image *dst, const rv_image *src, int w, int h, rv_interp interp,
                          rv_ctx *ctx);
/* Horizontal (mirror left-right) or vertical flip, like mmcv.imflip. dst may equal src. */
rv_status rv_image_flip(rv_image *dst, const rv_image *src, int horizontal, rv_ctx *ctx);
/* BGR <-> RGB in place (3 or 4 channels). */
void rv_image_swap_rb(rv_image *img);

/* OpenCV's own diagnostics (its logger: GStreamer/V4L/FFmpeg backend warnings, decoder
 * errors such as OpenJPEG's) are process-wide OpenCV state: the CLI calls this once at
 * start-up (0: none, so that a bad input gives our one-line error alone; 1, --verbose:
 * errors and warnings; 2: everything). libjpeg's "Corrupt JPEG data" lines and FFmpeg's own log go
 * to stderr regardless. The library itself never calls it. */
void rv_image_set_opencv_log_level(int level);
/* Threads OpenCV may use for resize/colour conversion (its own TBB pool in Debian's
 * build; 0 = OpenCV's default = all cores). Process-wide OpenCV state, for the CLI's
 * --threads; the library itself never calls it. */
void rv_image_set_opencv_threads(int n);

/* Show img in a window named `window` and wait up to wait_ms for a key (cv::imshow +
 * cv::waitKey); *key receives the key code or -1. RV_ERR_UNSUPPORTED when there is no display
 * (no DISPLAY / WAYLAND_DISPLAY: checked first, as OpenCV's GTK backend would end the
 * process) or OpenCV was built without a GUI. Call from one thread only. */
rv_status rv_image_show(const char *window, const rv_image *img, int wait_ms, int *key, rv_ctx *ctx);
/* Close every window opened by rv_image_show (no-op without a display). */
void rv_image_close_windows(void);

/* ---- video ------------------------------------------------------------------------------ */
typedef struct rv_video_reader rv_video_reader;
typedef struct {
  double fps;        /* 0 if unknown (cameras often report 0 or 30) */
  int width, height; /* first frame size */
  long frame_count;  /* -1 if unknown (cameras, streams) */
  int is_camera;     /* source was a camera index */
} rv_video_info;

/* source: a file path, a camera index ("0", "1", ...), or a URL (rtsp://, http://, ...).
 * Fails with RV_ERR_IO (no such file / camera / stream) or RV_ERR_FORMAT (opened but no
 * frame can be decoded). The first frame is decoded at open time to learn the size; it
 * is returned by the first rv_video_read. */
rv_status rv_video_open(rv_video_reader **out, const char *source, rv_ctx *ctx);
/* 1 if rv_video_open treats source as live: a camera index (1-4 digits) or a URL ("://"). */
int rv_video_is_live(const char *source);
rv_video_info rv_video_get_info(const rv_video_reader *r);
/* Next frame as BGR into *frame ((re)allocated). RV_OK with *got = 1: a frame; RV_OK with
 * *got = 0: end of stream. An error status means the stream broke (e.g. far fewer frames
 * decoded than the container announced). */
rv_status rv_video_read(rv_video_reader *r, rv_image *frame, int *got, rv_ctx *ctx);
long rv_video_frames_read(const rv_video_reader *r);
/* Files only, before the first rv_video_read: the next read returns frame `index` (0-based)
 * and frames are counted from there. exact = 0 sets CAP_PROP_POS_FRAMES: OpenCV's FFmpeg
 * backend seeks to the keyframe before the frame and decodes forward to it by timestamp,
 * frame-exact when the timestamps are regular (checked on AVI MPEG-4 and MP4 H.264
 * in tests/cli/test_video.c); it fails when the position read back is another frame. exact = 1
 * decodes and drops the frames before index (exact on any file, costs their decoding).
 * RV_ERR_FORMAT when the file ends before index. */
rv_status rv_video_seek(rv_video_reader *r, long index, int exact, rv_ctx *ctx);
void rv_video_close(rv_video_reader *r); /* NULL-safe */

typedef struct rv_video_writer rv_video_writer;
/* Open path for writing frames of w x h at fps. fourcc NULL picks by extension: .mp4/.m4v/
 * .mov try "avc1" (H.264) then "mp4v"; .avi "MJPG"; .mkv "X264" then "MJPG". Frames go to a
 * temporary file beside path (same extension) that rv_video_writer_close renames. */
rv_status rv_video_writer_open(rv_video_writer **out, const char *path, double fps, int w,
                               int h, const char *fourcc, rv_ctx *ctx);
/* Frame must be w x h, 3 channels (BGR) or 1 channel (converted). */
rv_status rv_video_write(rv_video_writer *vw, const rv_image *frame, rv_ctx *ctx);
const char *rv_video_writer_fourcc(const rv_video_writer *vw); /* the codec in use */
/* Finalise the file and rename it into place; frees vw (also on error). */
rv_status rv_video_writer_close(rv_video_writer *vw, rv_ctx *ctx);
/* Abandon: delete the temporary file and free. NULL-safe. */
void rv_video_writer_discard(rv_video_writer *vw);

/* ---- drawing primitives (cv::rectangle, putText, ...) ------------------------------------ */
/* Colours are BGR like the pixels. rv_rgb() builds one from RGB (palettes are RGB). */
typedef struct { unsigned char b, g, r; } rv_color;
static inline rv_color rv_rgb(int r, int g, int b) {
  rv_color c = {(unsigned char)b, (unsigned char)g, (unsigned char)r};
  return c;
}
/* All drawing clips to the image. Thickness in pixels; anti-aliased lines and text.
 * ctx may be NULL (errors are then only returned). 1-channel images draw the colour's
 * grey value (the b component). */
rv_status rv_draw_rect(rv_image *img, int x1, int y1, int x2, int y2, rv_color c,
                       int thickness, rv_ctx *ctx);
/* Filled rectangle blended: px = px*(1-alpha) + c*alpha, corners inclusive. */
rv_status rv_draw_rect_filled(rv_image *img, int x1, int y1, int x2, int y2, rv_color c,
                              float alpha, rv_ctx *ctx);
rv_status rv_draw_line(rv_image *img, int x1, int y1, int x2, int y2, rv_color c,
                       int thickness, rv_ctx *ctx);
rv_status rv_draw_circle(rv_image *img, int cx, int cy, int radius, rv_color c,
                         int thickness /* <0: filled */, rv_ctx *ctx);
/* Hershey simplex text (ASCII); (x, y) is the bottom-left of the text (baseline). */
rv_status rv_draw_text(rv_image *img, const char *text, int x, int y, double scale,
                       rv_color c, int thickness, rv_ctx *ctx);
/* Size of the text box as rv_draw_text draws it: width, height above the baseline and
 * the descent below it. */
void rv_text_size(const char *text, double scale, int thickness, int *w, int *h,
                  int *baseline);

#ifdef __cplusplus
}
#endif
#endif
