// The OpenCV wrapper behind formats/image.h: the only file of ravlt that includes OpenCV.
// Every entry point catches all exceptions (cv::Exception, std::bad_alloc, ...) and returns
// an rv_status with a one-line message; nothing here prints or exits.
#include "formats/image.h"
#include "core/fs.h"
#include "formats/imghdr.h"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#include <opencv2/highgui.hpp>
#include <cstdlib>
#include <opencv2/core/utils/logger.hpp>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace {

// A cv::Mat header over an rv_image (no copy).
cv::Mat wrap(const rv_image *img) {
  return cv::Mat(img->h, img->w, CV_8UC(img->c), img->data, (size_t)img->w * (size_t)img->c);
}

bool valid(const rv_image *img) {
  return img && img->data && img->h > 0 && img->w > 0 && img->c >= 1 && img->c <= 4;
}

const char *base_name(const char *path) {
  const char *s = std::strrchr(path, '/');
  return s ? s + 1 : path;
}

// Copy a continuous or strided 8-bit Mat into an rv_image (reallocated as needed).
rv_status from_mat(rv_image *dst, const cv::Mat &m, rv_ctx *ctx, const char *what) {
  if (m.depth() != CV_8U)
    return rv_error(ctx, RV_ERR_UNSUPPORTED, "%s: %d-bit pixels, expected 8-bit", what,
                    (int)(m.elemSize1() * 8));
  rv_status st = rv_image_alloc(dst, m.rows, m.cols, m.channels(), ctx);
  if (st != RV_OK) return st;
  size_t row = (size_t)m.cols * (size_t)m.channels();
  for (int y = 0; y < m.rows; y++) std::memcpy(dst->data + (size_t)y * row, m.ptr(y), row);
  return RV_OK;
}

// Read a whole file; distinguishes missing, directory, unreadable and empty.
rv_status slurp(const char *path, std::vector<unsigned char> &buf, rv_ctx *ctx) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return rv_error(ctx, RV_ERR_IO, "image %s: %s", path,
                    errno == ENOENT ? "no such file" : std::strerror(errno));
  if (S_ISDIR(sb.st_mode)) return rv_error(ctx, RV_ERR_IO, "image %s: is a directory", path);
  if (!S_ISREG(sb.st_mode)) return rv_error(ctx, RV_ERR_IO, "image %s: not a regular file (a device, FIFO or socket)", path);
  if (sb.st_size > (off_t)INT32_MAX) return rv_error(ctx, RV_ERR_UNSUPPORTED, "image %s: file over 2 GiB", path);
  FILE *f = std::fopen(path, "rb");
  if (!f) return rv_error(ctx, RV_ERR_IO, "image %s: cannot open: %s", path, std::strerror(errno));
  buf.clear();
  buf.reserve((size_t)sb.st_size);
  unsigned char chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0 && buf.size() <= (size_t)INT32_MAX)
    buf.insert(buf.end(), chunk, chunk + n);
  int err = std::ferror(f);
  std::fclose(f);
  if (err) return rv_error(ctx, RV_ERR_IO, "image %s: read error", path);
  if (buf.empty()) return rv_error(ctx, RV_ERR_FORMAT, "image %s: empty file", path);
  return RV_OK;
}

bool is_jpeg(const unsigned char *p, size_t n) { return n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF; }
bool is_png(const unsigned char *p, size_t n) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return n >= 8 && std::memcmp(p, sig, 8) == 0;
}

// A JPEG whose data does not end with the EOI marker (FFD9, possibly followed by padding)
// was cut short; libjpeg decodes what is there and fills the rest with grey.
bool jpeg_truncated(const unsigned char *p, size_t n) {
  size_t lo = n > 4096 ? n - 4096 : 0;
  for (size_t i = n; i-- > lo + 1;)
    if (p[i - 1] == 0xFF && p[i] == 0xD9) return false;
  return true;
}

// A DICOM file ("DICM" at offset 128): OpenCV hands it to GDCM, whose reader asserts, i.e.
// aborts the process, on malformed files (fuzz/fuzz_image found one: 140 bytes). DICOM is
// not an input format here. Data that starts with the signature of a decoder OpenCV tries
// first (JPEG, PNG, BMP, TIFF, WebP) goes to that decoder as before.
bool is_dicom(const unsigned char *p, size_t n) {
  if (n < 132 || std::memcmp(p + 128, "DICM", 4) != 0) return false;
  bool bmp = p[0] == 'B' && p[1] == 'M';
  bool tiff = (p[0] == 'I' && p[1] == 'I' && p[2] == 42 && p[3] == 0) ||
              (p[0] == 'M' && p[1] == 'M' && p[2] == 0 && p[3] == 42);
  bool webp = std::memcmp(p, "RIFF", 4) == 0 && std::memcmp(p + 8, "WEBP", 4) == 0;
  return !(is_jpeg(p, n) || is_png(p, n) || bmp || tiff || webp);
}

rv_status decode(const unsigned char *p, size_t n, const char *name, int flags, cv::Mat &out,
                 rv_ctx *ctx) {
  if (n == 0) return rv_error(ctx, RV_ERR_FORMAT, "image %s: empty data", name);
  if (is_dicom(p, n))
    return rv_error(ctx, RV_ERR_UNSUPPORTED, "image %s: DICOM files are not supported (convert to PNG)", name);
  // The size every format declares, checked before a decoder allocates (formats/imghdr.h):
  // a format whose size cannot be read is not decoded.
  rv_imghdr h;
  switch (rv_imghdr_read(&h, p, n)) {
  case RV_IMGHDR_UNKNOWN:
    return rv_error(ctx, RV_ERR_FORMAT, "image %s: not an image format ravlt reads (PNG, JPEG, BMP, TIFF, WebP, JPEG 2000, "
                    "PNM/PAM/PFM, Sun raster, Radiance HDR, OpenEXR)", name);
  case RV_IMGHDR_BAD:
    return rv_error(ctx, RV_ERR_FORMAT, "image %s: %s header unreadable (%s): its size is unknown, not decoded", name,
                    h.format, h.error);
  case RV_IMGHDR_OK:
    break;
  }
  const long long w = h.width, ht = h.height, cap = rv_ctx_max_pixels(ctx);
  if (w > cap || ht > cap || (ht > 0 && w > cap / ht))
    return rv_error(ctx, RV_ERR_UNSUPPORTED, "image %s: %s of %lldx%lld = %lld pixels, over the limit of %lld (ravlt --max-pixels)",
                    name, h.format, w, ht, w * ht, cap);
  // OpenJPEG decodes every component at full size before OpenCV keeps three
  if (!std::strcmp(h.format, "JPEG 2000") && h.channels > 4)
    return rv_error(ctx, RV_ERR_UNSUPPORTED, "image %s: JPEG 2000 with %lld components (at most 4 are read)", name, h.channels);
  cv::Mat raw(1, (int)n, CV_8UC1, const_cast<unsigned char *>(p));
  out = cv::imdecode(raw, flags);
  if (out.empty())
    return rv_error(ctx, RV_ERR_FORMAT, "image %s: not a decodable image (%s)", name,
                    is_jpeg(p, n) ? "corrupt JPEG" : is_png(p, n) ? "corrupt PNG" : "unknown format");
  if (is_jpeg(p, n) && jpeg_truncated(p, n))
    rv_log(ctx, RV_LOG_WARN, "image %s: truncated JPEG (no end-of-image marker); decoded partially", name);
  return RV_OK;
}

rv_status decode_color(const unsigned char *p, size_t n, const char *name, rv_image *img, rv_ctx *ctx) {
  if (n > (size_t)INT32_MAX) return rv_error(ctx, RV_ERR_UNSUPPORTED, "image %s: file over 2 GiB", name);
  cv::Mat m;
  rv_status st = decode(p, n, name, cv::IMREAD_COLOR, m, ctx);
  if (st != RV_OK) return st;
  if (m.type() != CV_8UC3)
    return rv_error(ctx, RV_ERR_INTERNAL, "image %s: decoder returned type %d", name, m.type());
  return from_mat(img, m, ctx, name);
}

int cv_interp(rv_interp i) {
  switch (i) {
  case RV_INTERP_NEAREST: return cv::INTER_NEAREST;
  case RV_INTERP_AREA: return cv::INTER_AREA;
  case RV_INTERP_CUBIC: return cv::INTER_CUBIC;
  case RV_INTERP_LINEAR: break;
  }
  return cv::INTER_LINEAR;
}

std::string lower_ext(const char *path) {
  const char *b = base_name(path);
  const char *dot = std::strrchr(b, '.');
  std::string e = dot ? dot : "";
  for (auto &ch : e) ch = (char)std::tolower((unsigned char)ch);
  return e;
}

// "dir/name.ext" -> "dir/.name.ext.ravlt-tmp.<pid>.<k>.ext" (rv_out_tmp_stem) created by
// rv_create_unique (O_EXCL, mode 0666 & umask as fopen would; fd returned) for the video
// writer, whose file name must keep the extension (cv::VideoWriter picks the container by
// it); the caller writes and renames. path is the resolved target (rv_out_target). No
// umask() call: it is process-wide.
int make_temp(const char *path, std::string &tmp, const std::string &suffix) {
  std::vector<char> stem(std::strlen(path) + sizeof RV_TMP_TAG + 4);
  if (rv_out_tmp_stem(stem.data(), stem.size(), path) != 0) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::vector<char> name(std::strlen(stem.data()) + suffix.size() + RV_UNIQUE_EXTRA);
  int fd = rv_create_unique(name.data(), name.size(), stem.data(), suffix.c_str());
  tmp = name.data();
  return fd;
}

cv::Scalar scalar(rv_color c, int channels) {
  if (channels == 1) return cv::Scalar(c.b);
  return cv::Scalar(c.b, c.g, c.r, 255);
}

rv_status guard_draw(rv_image *img, rv_ctx *ctx, const char *what) {
  if (!valid(img)) return rv_error(ctx, RV_ERR_ARG, "%s: empty or invalid image", what);
  return RV_OK;
}

}  // namespace

#define RV_CATCH(ctx, label)                                                                 \
  catch (const cv::Exception &cv_ex_) {                                                      \
    return rv_error(ctx, RV_ERR_FORMAT, "%s: opencv: %s", label, cv_ex_.err.c_str());        \
  }                                                                                          \
  catch (const std::bad_alloc &) {                                                           \
    return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", label);                          \
  }                                                                                          \
  catch (const std::exception &std_ex_) {                                                    \
    return rv_error(ctx, RV_ERR_INTERNAL, "%s: %s", label, std_ex_.what());                  \
  }                                                                                          \
  catch (...) {                                                                              \
    return rv_error(ctx, RV_ERR_INTERNAL, "%s: unknown exception", label);                   \
  }

extern "C" {

rv_status rv_image_alloc(rv_image *img, int h, int w, int c, rv_ctx *ctx) {
  RV_ASSERT(img != NULL);
  if (h <= 0 || w <= 0 || c < 1 || c > 4)
    return rv_error(ctx, RV_ERR_SHAPE, "image size %dx%dx%d is invalid", h, w, c);
  size_t n;
  if (rv_mul_size((size_t)h * (size_t)w, (size_t)c, &n) != 0 || n > ((size_t)1 << 34))
    return rv_error(ctx, RV_ERR_SHAPE, "image size %dx%dx%d is too large", h, w, c);
  if (img->data && (size_t)img->h * img->w * img->c == n) {
    img->h = h;
    img->w = w;
    img->c = c;
    std::memset(img->data, 0, n);
    return RV_OK;
  }
  unsigned char *p = (unsigned char *)rv_calloc(n, 1);
  if (!p) return rv_error(ctx, RV_ERR_NOMEM, "image %dx%dx%d: out of memory", h, w, c);
  rv_free(img->data);
  img->data = p;
  img->h = h;
  img->w = w;
  img->c = c;
  return RV_OK;
}

void rv_image_free(rv_image *img) {
  if (!img) return;
  rv_free(img->data);
  img->data = NULL;
  img->h = img->w = img->c = 0;
}

rv_status rv_image_copy(rv_image *dst, const rv_image *src, rv_ctx *ctx) {
  if (!valid(src)) return rv_error(ctx, RV_ERR_ARG, "image copy: empty source");
  if (dst == src) return RV_OK;
  RV_TRY(rv_image_alloc(dst, src->h, src->w, src->c, ctx));
  std::memcpy(dst->data, src->data, (size_t)src->h * src->w * src->c);
  return RV_OK;
}

rv_status rv_image_read(const char *path, rv_image *img, rv_ctx *ctx) {
  try {
    std::vector<unsigned char> buf;
    RV_TRY(slurp(path, buf, ctx));
    return decode_color(buf.data(), buf.size(), path, img, ctx);
  }
  RV_CATCH(ctx, path)
}

int rv_image_header_size(const void *buf, size_t len, long long *w, long long *h) {
  rv_imghdr hd;
  if (!buf || rv_imghdr_read(&hd, static_cast<const unsigned char *>(buf), len) != RV_IMGHDR_OK) return 0;
  *w = hd.width;
  *h = hd.height;
  return 1;
}

rv_status rv_image_decode(const void *buf, size_t len, const char *name, rv_image *img, rv_ctx *ctx) {
  const char *nm = name ? name : "(memory)";
  try {
    if (!buf) return rv_error(ctx, RV_ERR_ARG, "image %s: no data", nm);
    return decode_color((const unsigned char *)buf, len, nm, img, ctx);
  }
  RV_CATCH(ctx, nm)
}

rv_status rv_image_read_gray(const char *path, rv_image *img, rv_ctx *ctx) {
  try {
    std::vector<unsigned char> buf;
    RV_TRY(slurp(path, buf, ctx));
    const unsigned char *p = buf.data();
    size_t n = buf.size();
    // PNG IHDR: bit depth at byte 24, colour type at byte 25 (3 = palette).
    if (is_png(p, n) && n > 25 && p[25] == 3)
      return rv_error(ctx, RV_ERR_UNSUPPORTED,
                      "label image %s: palette-indexed PNG; expected an 8-bit grey PNG "
                      "(OpenCV would expand the palette to colours)", path);
    // 1-, 2- and 4-bit grey PNGs decode scaled to 0..255 (a 4-bit label 1 reads as 17)
    if (is_png(p, n) && n > 25 && p[24] != 8)
      return rv_error(ctx, RV_ERR_UNSUPPORTED, "label image %s: %d-bit PNG; expected an 8-bit grey PNG", path, p[24]);
    cv::Mat m;
    RV_TRY(decode(p, n, path, cv::IMREAD_UNCHANGED, m, ctx));
    if (m.depth() != CV_8U)
      return rv_error(ctx, RV_ERR_UNSUPPORTED, "label image %s: %d-bit pixels, expected 8-bit",
                      path, (int)(m.elemSize1() * 8));
    if (m.channels() != 1)
      return rv_error(ctx, RV_ERR_FORMAT, "label image %s: %d channels, expected a single-channel image",
                      path, m.channels());
    return from_mat(img, m, ctx, path);
  }
  RV_CATCH(ctx, path)
}

rv_status rv_image_encode(const rv_image *img, const char *ext, unsigned char **out, size_t *len,
                          rv_ctx *ctx) {
  const char *e = ext ? ext : "";
  *out = NULL;
  *len = 0;
  try {
    if (!valid(img) || img->c == 2)
      return rv_error(ctx, RV_ERR_ARG, "encode %s: empty or invalid image", e);
    std::string le = lower_ext(e[0] == '.' ? e : (std::string(".") + e).c_str());
    std::vector<int> params;
    if (le == ".jpg" || le == ".jpeg") params = {cv::IMWRITE_JPEG_QUALITY, 95};
    if (le == ".png") params = {cv::IMWRITE_PNG_COMPRESSION, 3};
    std::vector<unsigned char> buf;
    if (!cv::imencode(le, wrap(img), buf, params) || buf.empty())
      return rv_error(ctx, RV_ERR_IO, "encode %s: encoding failed", e);
    *out = (unsigned char *)std::malloc(buf.size());
    if (!*out) return rv_error(ctx, RV_ERR_NOMEM, "encode %s: out of memory", e);
    std::memcpy(*out, buf.data(), buf.size());
    *len = buf.size();
    return RV_OK;
  }
  RV_CATCH(ctx, e)
}

rv_status rv_image_encode_jpeg(const rv_image *img, int quality, unsigned char **out, size_t *len, rv_ctx *ctx) {
  *out = NULL;
  *len = 0;
  try {
    if (!valid(img) || (img->c != 1 && img->c != 3)) return rv_error(ctx, RV_ERR_ARG, "encode .jpg: empty or invalid image");
    std::vector<int> params = {cv::IMWRITE_JPEG_QUALITY, quality < 1 ? 1 : quality > 100 ? 100 : quality};
    std::vector<unsigned char> buf;
    if (!cv::imencode(".jpg", wrap(img), buf, params) || buf.empty())
      return rv_error(ctx, RV_ERR_IO, "encode .jpg: encoding failed");
    *out = (unsigned char *)std::malloc(buf.size());
    if (!*out) return rv_error(ctx, RV_ERR_NOMEM, "encode .jpg: out of memory");
    std::memcpy(*out, buf.data(), buf.size());
    *len = buf.size();
    return RV_OK;
  }
  RV_CATCH(ctx, "encode .jpg")
}

rv_status rv_image_write(const char *path, const rv_image *img, rv_ctx *ctx) {
  try {
    std::string ext = lower_ext(path);
    if (ext.empty())
      return rv_error(ctx, RV_ERR_ARG, "image %s: no file extension to choose the format", path);
    if (!cv::haveImageWriter(std::string("x") + ext))
      return rv_error(ctx, RV_ERR_ARG, "image %s: unsupported output format '%s'", path, ext.c_str());
    unsigned char *buf = NULL;
    size_t len = 0;
    rv_status st = rv_image_encode(img, ext.c_str(), &buf, &len, ctx);
    if (st != RV_OK) {
      std::string msg = rv_ctx_errmsg(ctx);
      return rv_error(ctx, st, "image %s: %s", path, msg.c_str());
    }
    rv_out_file o; // core/fs.h: a temporary renamed into place, or a device written in place
    st = rv_out_open(&o, path, ctx);
    if (st == RV_OK) {
      std::fwrite(buf, 1, len, o.f);
      st = rv_out_close(&o, ctx);
    }
    std::free(buf);
    return st;
  }
  RV_CATCH(ctx, path)
}

rv_status rv_image_resize(rv_image *dst, const rv_image *src, int w, int h, rv_interp interp, rv_ctx *ctx) {
  try {
    if (!valid(src)) return rv_error(ctx, RV_ERR_ARG, "resize: empty source image");
    if (dst == src || (dst->data && dst->data == src->data))
      return rv_error(ctx, RV_ERR_ARG, "resize: destination must differ from the source");
    if (w <= 0 || h <= 0) return rv_error(ctx, RV_ERR_ARG, "resize: invalid size %dx%d", w, h);
    RV_TRY(rv_image_alloc(dst, h, w, src->c, ctx));
    cv::Mat d = wrap(dst);
    cv::resize(wrap(src), d, cv::Size(w, h), 0, 0, cv_interp(interp));
    if (d.data != dst->data) return rv_error(ctx, RV_ERR_INTERNAL, "resize: output reallocated");
    return RV_OK;
  }
  RV_CATCH(ctx, "resize")
}

rv_status rv_image_flip(rv_image *dst, const rv_image *src, int horizontal, rv_ctx *ctx) {
  if (!valid(src)) return rv_error(ctx, RV_ERR_ARG, "flip: empty source image");
  int h = src->h, w = src->w, c = src->c;
  size_t row = (size_t)w * c;
  if (dst != src) RV_TRY(rv_image_copy(dst, src, ctx));
  unsigned char *p = dst->data;
  if (horizontal) {
    for (int y = 0; y < h; y++) {
      unsigned char *r = p + (size_t)y * row;
      for (int a = 0, b = w - 1; a < b; a++, b--)
        for (int k = 0; k < c; k++) {
          unsigned char t = r[(size_t)a * c + k];
          r[(size_t)a * c + k] = r[(size_t)b * c + k];
          r[(size_t)b * c + k] = t;
        }
    }
  } else {
    for (int a = 0, b = h - 1; a < b; a++, b--) {
      unsigned char *ra = p + (size_t)a * row, *rb = p + (size_t)b * row;
      for (size_t k = 0; k < row; k++) {
        unsigned char t = ra[k];
        ra[k] = rb[k];
        rb[k] = t;
      }
    }
  }
  return RV_OK;
}

void rv_image_swap_rb(rv_image *img) {
  if (!valid(img) || img->c < 3) return;
  size_t n = (size_t)img->h * img->w;
  for (size_t i = 0; i < n; i++) {
    unsigned char *q = img->data + i * img->c;
    unsigned char t = q[0];
    q[0] = q[2];
    q[2] = t;
  }
}

void rv_image_set_opencv_log_level(int level) {
  try {
    cv::utils::logging::setLogLevel(level >= 2   ? cv::utils::logging::LOG_LEVEL_INFO
                                    : level == 1 ? cv::utils::logging::LOG_LEVEL_WARNING
                                                 : cv::utils::logging::LOG_LEVEL_SILENT);
  } catch (...) {
  }
}

void rv_image_set_opencv_threads(int n) {
  try {
    cv::setNumThreads(n > 0 ? n : -1);
  } catch (...) {
  }
}

/* ---- video ---------------------------------------------------------------------------- */

struct rv_video_reader {
  cv::VideoCapture cap;
  cv::Mat first;      // decoded at open, handed out by the first read
  bool have_first;
  rv_video_info info;
  long frames;        // frames returned so far
  std::string source;
};

static bool is_camera_index(const char *s, int *idx) {
  if (!*s) return false;
  for (const char *p = s; *p; p++)
    if (*p < '0' || *p > '9') return false;
  if (std::strlen(s) > 4) return false;
  *idx = std::atoi(s);
  return true;
}

static bool is_url(const char *s) { return std::strstr(s, "://") != NULL; }

int rv_video_is_live(const char *source) {
  int cam;
  return is_camera_index(source, &cam) || is_url(source);
}

rv_status rv_video_open(rv_video_reader **out, const char *source, rv_ctx *ctx) {
  *out = NULL;
  rv_video_reader *r = NULL;
  try {
    r = new rv_video_reader();
    r->source = source;
    r->have_first = false;
    r->frames = 0;
    std::memset(&r->info, 0, sizeof r->info);
    r->info.frame_count = -1;
    int cam = 0;
    const bool url = is_url(source);
    if (is_camera_index(source, &cam)) {
      r->info.is_camera = 1;
      if (!r->cap.open(cam)) {
        delete r;
        return rv_error(ctx, RV_ERR_IO, "video: cannot open camera %d", cam);
      }
    } else {
      if (!url) {
        struct stat sb;
        if (stat(source, &sb) != 0) {
          delete r;
          return rv_error(ctx, RV_ERR_IO, "video %s: %s", source,
                          errno == ENOENT ? "no such file" : std::strerror(errno));
        }
        if (S_ISDIR(sb.st_mode)) {
          delete r;
          return rv_error(ctx, RV_ERR_IO, "video %s: is a directory", source);
        }
      }
      // Network streams: bounded waits so a dead stream fails instead of hanging.
      std::vector<int> params;
      if (url) params = {cv::CAP_PROP_OPEN_TIMEOUT_MSEC, 15000, cv::CAP_PROP_READ_TIMEOUT_MSEC, 15000};
      // Files and URLs go to FFmpeg directly: probing every backend (GStreamer, libusb
      // cameras...) is slow and leaks inside those plugins. A printf-style pattern
      // ("frame_%04d.png") is an image sequence, which only CAP_ANY (CAP_IMAGES) opens.
      int api = (url || !std::strchr(source, '%')) ? cv::CAP_FFMPEG : cv::CAP_ANY;
      if (!r->cap.open(source, api, params)) {
        delete r;
        return rv_error(ctx, url ? RV_ERR_IO : RV_ERR_FORMAT, "video %s: cannot open (%s)",
                        source, url ? "stream unreachable or unsupported" : "not a video OpenCV can decode");
      }
    }
    if (!r->cap.read(r->first) || r->first.empty()) {
      delete r;
      return rv_error(ctx, RV_ERR_FORMAT, "video %s: opened but no frame could be decoded", source);
    }
    r->have_first = true;
    r->info.width = r->first.cols;
    r->info.height = r->first.rows;
    double fps = r->cap.get(cv::CAP_PROP_FPS);
    r->info.fps = (fps > 0 && fps < 1000) ? fps : 0;
    double fc = r->cap.get(cv::CAP_PROP_FRAME_COUNT);
    r->info.frame_count = (!r->info.is_camera && !url && fc > 0) ? (long)fc : -1;
    *out = r;
    return RV_OK;
  } catch (const cv::Exception &e) {
    delete r;
    return rv_error(ctx, RV_ERR_FORMAT, "video %s: opencv: %s", source, e.err.c_str());
  } catch (const std::bad_alloc &) {
    delete r;
    return rv_error(ctx, RV_ERR_NOMEM, "video %s: out of memory", source);
  } catch (...) {
    delete r;
    return rv_error(ctx, RV_ERR_INTERNAL, "video %s: unexpected exception", source);
  }
}

rv_video_info rv_video_get_info(const rv_video_reader *r) { return r->info; }
long rv_video_frames_read(const rv_video_reader *r) { return r->frames; }

static rv_status to_bgr(rv_image *dst, const cv::Mat &m, rv_ctx *ctx, const char *what) {
  if (m.type() == CV_8UC3) return from_mat(dst, m, ctx, what);
  cv::Mat c;
  if (m.depth() != CV_8U) {
    cv::Mat t;
    m.convertTo(t, CV_8U, m.depth() == CV_16U ? 1.0 / 256 : 1.0);
    if (t.channels() == 3) return from_mat(dst, t, ctx, what);
    cv::cvtColor(t, c, t.channels() == 4 ? cv::COLOR_BGRA2BGR : cv::COLOR_GRAY2BGR);
  } else {
    cv::cvtColor(m, c, m.channels() == 4 ? cv::COLOR_BGRA2BGR : cv::COLOR_GRAY2BGR);
  }
  return from_mat(dst, c, ctx, what);
}

rv_status rv_video_read(rv_video_reader *r, rv_image *frame, int *got, rv_ctx *ctx) {
  *got = 0;
  const char *src = r->source.c_str();
  try {
    if (r->have_first) {
      r->have_first = false;
      RV_TRY(to_bgr(frame, r->first, ctx, src));
      r->first.release();
      r->frames++;
      *got = 1;
      return RV_OK;
    }
    cv::Mat m;
    if (!r->cap.read(m) || m.empty()) {
      // OpenCV does not tell end-of-stream from a decode failure. A file that announced
      // N frames and stops well before is reported as broken; a small shortfall is
      // common (frame counts are estimated from the duration) and is a normal end.
      long n = r->info.frame_count;
      if (n > 0 && r->frames < n - n / 20 - 2)
        return rv_error(ctx, RV_ERR_FORMAT, "video %s: stream ended after %ld of %ld frames", src,
                        r->frames, n);
      return RV_OK;
    }
    RV_TRY(to_bgr(frame, m, ctx, src));
    r->frames++;
    *got = 1;
    return RV_OK;
  }
  RV_CATCH(ctx, src)
}

rv_status rv_video_seek(rv_video_reader *r, long index, int exact, rv_ctx *ctx) {
  const char *src = r->source.c_str();
  if (r->info.is_camera || r->info.frame_count < 0)
    return rv_error(ctx, RV_ERR_ARG, "video %s: only files of known length can be positioned", src);
  if (r->frames > 0 || !r->have_first)
    return rv_error(ctx, RV_ERR_ARG, "video %s: positioned after frames were read", src);
  if (index < 0) return rv_error(ctx, RV_ERR_ARG, "video %s: frame %ld out of range", src, index);
  if (index == 0) return RV_OK;
  try {
    r->have_first = false; // frame 0, decoded at open
    r->first.release();
    if (exact) {
      for (long k = 1; k < index; k++)
        if (!r->cap.grab())
          return rv_error(ctx, RV_ERR_FORMAT, "video %s: ends after %ld frames, before frame %ld", src, k, index);
    } else {
      if (index >= r->info.frame_count || !r->cap.set(cv::CAP_PROP_POS_FRAMES, (double)index))
        return rv_error(ctx, RV_ERR_FORMAT, "video %s: cannot seek to frame %ld (%ld frames)", src, index,
                        r->info.frame_count);
      double at = r->cap.get(cv::CAP_PROP_POS_FRAMES);
      if (at != (double)index)
        return rv_error(ctx, RV_ERR_FORMAT, "video %s: seeking to frame %ld landed on frame %.0f", src, index, at);
    }
    r->frames = index;
    return RV_OK;
  }
  RV_CATCH(ctx, src)
}

void rv_video_close(rv_video_reader *r) {
  if (!r) return;
  try {
    r->cap.release();
  } catch (...) {
  }
  delete r;
}

struct rv_video_writer {
  cv::VideoWriter vw;
  std::string path, tmp, target; // tmp empty: written in place (a device or FIFO)
  int fd;                        // the temporary's descriptor: its lock (rv_create_unique), or -1
  int w, h;
  char fourcc[5];
  long frames;
  cv::Mat scratch;
};

// The temporary removed, then its descriptor (and lock) closed: a sweep never sees it unlocked.
static void drop_temp(rv_video_writer *v) {
  if (!v->tmp.empty()) ::unlink(v->tmp.c_str());
  if (v->fd >= 0) ::close(v->fd);
  v->fd = -1;
}

// Frames the finished file holds, as its container declares them (-1: it does not open).
// The count comes from the index or header FFmpeg writes last (mp4 moov, avi idx1/avih,
// mkv duration): a file cut short by a failed write has none (0), or a wrong one.
static long readback_frames(const std::string &path) {
  cv::VideoCapture cap;
  if (!cap.open(path, cv::CAP_FFMPEG) || !cap.isOpened()) return -1;
  double fc = cap.get(cv::CAP_PROP_FRAME_COUNT);
  return fc > 0 ? (long)(fc + 0.5) : 0;
}

// A failed video: the error of a write into the temporary's folder now (a full disk:
// "No space left on device"), else what the read-back found.
static rv_status write_failure(rv_video_writer *v, const char *what, rv_ctx *ctx) {
  std::string stem = v->tmp;
  stem += ".probe";
  std::vector<char> name(stem.size() + RV_UNIQUE_EXTRA);
  int fd = rv_create_unique(name.data(), name.size(), stem.c_str(), "");
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    static const char zeros[1 << 16] = {0};
    if (::write(fd, zeros, sizeof zeros) != (ssize_t)sizeof zeros) err = errno ? errno : EIO;
    else if (::fsync(fd) != 0) err = errno;
    ::unlink(name.data());
    ::close(fd);
  }
  if (err == ENOSPC || err == EDQUOT || err == EIO || err == EROFS || err == EFBIG)
    return rv_error(ctx, RV_ERR_IO, "video %s: write failed (%s): %s", v->path.c_str(), std::strerror(err), what);
  return rv_error(ctx, RV_ERR_IO, "video %s: the encoder failed: %s", v->path.c_str(), what);
}

rv_status rv_video_writer_open(rv_video_writer **out, const char *path, double fps, int w, int h,
                               const char *fourcc, rv_ctx *ctx) {
  *out = NULL;
  if (w <= 0 || h <= 0) return rv_error(ctx, RV_ERR_ARG, "video %s: invalid frame size %dx%d", path, w, h);
  if (!(fps > 0 && fps <= 1000)) return rv_error(ctx, RV_ERR_ARG, "video %s: invalid fps %g", path, fps);
  if (fourcc && std::strlen(fourcc) != 4)
    return rv_error(ctx, RV_ERR_ARG, "video %s: fourcc '%s' must have 4 characters", path, fourcc);
  rv_video_writer *v = NULL;
  try {
    std::string ext = lower_ext(path);
    std::vector<std::string> cands;
    if (fourcc) cands.push_back(fourcc);
    else if (ext == ".mp4" || ext == ".m4v" || ext == ".mov") cands = {"avc1", "mp4v"};
    else if (ext == ".avi") cands = {"MJPG", "XVID"};
    else if (ext == ".mkv") cands = {"X264", "MJPG"};
    else if (ext == ".webm") cands = {"VP80"};
    else
      return rv_error(ctx, RV_ERR_ARG, "video %s: unknown container '%s' (use .mp4, .avi, .mkv)",
                      path, ext.c_str());
    v = new rv_video_writer();
    v->fd = -1;
    v->path = path;
    v->w = w;
    v->h = h;
    v->frames = 0;
    char target[4096];
    if (rv_out_target(target, sizeof target, path) != 0) {
      delete v;
      return rv_error(ctx, RV_ERR_IO, "video %s: cannot resolve the path (too long or a loop of links)", path);
    }
    v->target = target;
    struct stat tsb;
    bool in_place = stat(target, &tsb) == 0 && !S_ISREG(tsb.st_mode);
    if (in_place && S_ISDIR(tsb.st_mode)) {
      delete v;
      return rv_error(ctx, RV_ERR_IO, "video %s: is a folder, not a file", path);
    }
    if (!in_place) { // a link stays a link: the temporary goes beside its target
      v->fd = make_temp(target, v->tmp, ext); // kept open: the lock proves the run alive
      if (v->fd < 0) {
        int err = errno;
        delete v;
        return rv_error(ctx, RV_ERR_IO, "video %s: cannot create a file there: %s", path, std::strerror(err));
      }
    }
    const std::string &dest = in_place ? v->target : v->tmp;
    bool ok = false;
    for (const auto &c : cands) {
      int cc = cv::VideoWriter::fourcc(c[0], c[1], c[2], c[3]);
      if (v->vw.open(dest, cv::CAP_FFMPEG, cc, fps, cv::Size(w, h), true) && v->vw.isOpened()) {
        std::memcpy(v->fourcc, c.data(), 4);
        v->fourcc[4] = 0;
        ok = true;
        break;
      }
    }
    if (!ok) {
      drop_temp(v);
      delete v;
      return rv_error(ctx, RV_ERR_UNSUPPORTED, "video %s: no usable encoder (tried %s%s)", path,
                      cands[0].c_str(), cands.size() > 1 ? " and others" : "");
    }
    *out = v;
    return RV_OK;
  } catch (const cv::Exception &e) {
    if (v) {
      drop_temp(v);
      delete v;
    }
    return rv_error(ctx, RV_ERR_IO, "video %s: opencv: %s", path, e.err.c_str());
  } catch (...) {
    if (v) {
      drop_temp(v);
      delete v;
    }
    return rv_error(ctx, RV_ERR_INTERNAL, "video %s: unexpected exception", path);
  }
}

const char *rv_video_writer_fourcc(const rv_video_writer *vw) { return vw->fourcc; }

rv_status rv_video_write(rv_video_writer *v, const rv_image *frame, rv_ctx *ctx) {
  const char *p = v->path.c_str();
  try {
    if (!valid(frame) || (frame->c != 3 && frame->c != 1))
      return rv_error(ctx, RV_ERR_ARG, "video %s: frame must be a 1- or 3-channel image", p);
    if (frame->w != v->w || frame->h != v->h)
      return rv_error(ctx, RV_ERR_SHAPE, "video %s: frame %dx%d differs from the video size %dx%d", p,
                      frame->w, frame->h, v->w, v->h);
    cv::Mat m = wrap(frame);
    if (frame->c == 1) {
      cv::cvtColor(m, v->scratch, cv::COLOR_GRAY2BGR);
      v->vw.write(v->scratch);
    } else {
      v->vw.write(m);
    }
    v->frames++;
    return RV_OK;
  }
  RV_CATCH(ctx, p)
}

rv_status rv_video_writer_close(rv_video_writer *v, rv_ctx *ctx) {
  if (!v) return RV_OK;
  rv_status st = RV_OK;
  try {
    v->vw.release();
    struct stat sb;
    if (v->tmp.empty()) {
      // written in place (a device or FIFO): nothing to rename, nothing to read back
    } else if (stat(v->tmp.c_str(), &sb) != 0 || (v->frames > 0 && sb.st_size == 0)) {
      st = write_failure(v, "encoder produced no data", ctx);
    } else {
      // OpenCV's writer reports no error: a full disk or a failing encoder leaves a file cut
      // short (FFmpeg stops writing at the first failed write, the index or trailer with it).
      // The file must read back with every frame written before it takes the final name.
      // (mkv / webm estimate the count from the duration: off by one at some rates)
      long got = readback_frames(v->tmp), slack = 1 + v->frames / 100;
      if (got < 0 || (v->frames > 0 && got == 0) || got < v->frames - slack || got > v->frames + slack) {
        char what[160];
        if (got < 0) std::snprintf(what, sizeof what, "the file written does not open as a video (%ld frames written)", v->frames);
        else std::snprintf(what, sizeof what, "the file written reads back with %ld of the %ld frames written", got, v->frames);
        st = write_failure(v, what, ctx);
      } else if (std::rename(v->tmp.c_str(), v->target.c_str()) != 0) {
        st = rv_error(ctx, RV_ERR_IO, "video %s: cannot rename into place: %s", v->path.c_str(), std::strerror(errno));
      }
    }
  } catch (const cv::Exception &e) {
    st = rv_error(ctx, RV_ERR_IO, "video %s: opencv: %s", v->path.c_str(), e.err.c_str());
  } catch (...) {
    st = rv_error(ctx, RV_ERR_INTERNAL, "video %s: unexpected exception", v->path.c_str());
  }
  if (st != RV_OK) drop_temp(v);
  else if (v->fd >= 0) ::close(v->fd); // after the rename: the lock is held until then
  delete v;
  return st;
}

void rv_video_writer_discard(rv_video_writer *v) {
  if (!v) return;
  try {
    v->vw.release();
  } catch (...) {
  }
  drop_temp(v);
  delete v;
}

/* ---- drawing ------------------------------------------------------------------------------ */

rv_status rv_draw_rect(rv_image *img, int x1, int y1, int x2, int y2, rv_color c, int thickness, rv_ctx *ctx) {
  RV_TRY(guard_draw(img, ctx, "draw rectangle"));
  try {
    cv::Mat m = wrap(img);
    cv::rectangle(m, cv::Point(x1, y1), cv::Point(x2, y2), scalar(c, img->c),
                  thickness < 1 ? 1 : thickness, cv::LINE_AA);
    return RV_OK;
  }
  RV_CATCH(ctx, "draw rectangle")
}

rv_status rv_draw_rect_filled(rv_image *img, int x1, int y1, int x2, int y2, rv_color c, float alpha,
                              rv_ctx *ctx) {
  RV_TRY(guard_draw(img, ctx, "draw filled rectangle"));
  if (x1 > x2) std::swap(x1, x2);
  if (y1 > y2) std::swap(y1, y2);
  if (x1 < 0) x1 = 0;
  if (y1 < 0) y1 = 0;
  if (x2 > img->w - 1) x2 = img->w - 1;
  if (y2 > img->h - 1) y2 = img->h - 1;
  if (x1 > x2 || y1 > y2) return RV_OK;
  float a = alpha < 0 ? 0 : alpha > 1 ? 1 : alpha;
  const unsigned char col[4] = {c.b, c.g, c.r, 255};
  for (int y = y1; y <= y2; y++) {
    unsigned char *p = rv_image_px(img, y, x1);
    for (int x = x1; x <= x2; x++)
      for (int k = 0; k < img->c; k++, p++) {
        float v = (float)*p * (1.0f - a) + (float)col[img->c == 1 ? 0 : k] * a;
        *p = (unsigned char)(v + 0.5f);
      }
  }
  return RV_OK;
}

rv_status rv_draw_line(rv_image *img, int x1, int y1, int x2, int y2, rv_color c, int thickness, rv_ctx *ctx) {
  RV_TRY(guard_draw(img, ctx, "draw line"));
  try {
    cv::Mat m = wrap(img);
    cv::line(m, cv::Point(x1, y1), cv::Point(x2, y2), scalar(c, img->c), thickness < 1 ? 1 : thickness,
             cv::LINE_AA);
    return RV_OK;
  }
  RV_CATCH(ctx, "draw line")
}

rv_status rv_draw_circle(rv_image *img, int cx, int cy, int radius, rv_color c, int thickness, rv_ctx *ctx) {
  RV_TRY(guard_draw(img, ctx, "draw circle"));
  if (radius < 0) return rv_error(ctx, RV_ERR_ARG, "draw circle: negative radius %d", radius);
  try {
    cv::Mat m = wrap(img);
    cv::circle(m, cv::Point(cx, cy), radius, scalar(c, img->c), thickness < 0 ? cv::FILLED : thickness,
               cv::LINE_AA);
    return RV_OK;
  }
  RV_CATCH(ctx, "draw circle")
}

rv_status rv_draw_text(rv_image *img, const char *text, int x, int y, double scale, rv_color c,
                       int thickness, rv_ctx *ctx) {
  RV_TRY(guard_draw(img, ctx, "draw text"));
  if (!text) return rv_error(ctx, RV_ERR_ARG, "draw text: NULL text");
  try {
    cv::Mat m = wrap(img);
    cv::putText(m, text, cv::Point(x, y), cv::FONT_HERSHEY_SIMPLEX, scale, scalar(c, img->c),
                thickness < 1 ? 1 : thickness, cv::LINE_AA);
    return RV_OK;
  }
  RV_CATCH(ctx, "draw text")
}

void rv_text_size(const char *text, double scale, int thickness, int *w, int *h, int *baseline) {
  int bl = 0;
  cv::Size s(0, 0);
  try {
    s = cv::getTextSize(text ? text : "", cv::FONT_HERSHEY_SIMPLEX, scale, thickness < 1 ? 1 : thickness, &bl);
  } catch (...) {
    s = cv::Size(0, 0);
    bl = 0;
  }
  if (w) *w = s.width;
  if (h) *h = s.height;
  if (baseline) *baseline = bl;
}

}  // extern "C"

static int have_display(void) {
  const char *d = getenv("DISPLAY"), *w = getenv("WAYLAND_DISPLAY");
  return (d && *d) || (w && *w);
}

extern "C" rv_status rv_image_show(const char *window, const rv_image *img, int wait_ms, int *key, rv_ctx *ctx) {
  if (key) *key = -1;
  if (!img || !img->data || img->h <= 0 || img->w <= 0) return rv_error(ctx, RV_ERR_ARG, "show: empty image");
  if (!have_display())
    return rv_error(ctx, RV_ERR_UNSUPPORTED, "show: no display (DISPLAY is not set); write the output to a file instead");
  try {
    cv::Mat m = wrap(img);
    cv::imshow(window ? window : "ravlt", m);
    int k = cv::waitKey(wait_ms < 1 ? 1 : wait_ms);
    if (key) *key = k;
    return RV_OK;
  }
  RV_CATCH(ctx, "show")
}

extern "C" void rv_image_close_windows(void) {
  if (!have_display()) return;
  try {
    cv::destroyAllWindows();
  } catch (...) {
  }
}
