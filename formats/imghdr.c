/* Image sizes from file headers (formats/imghdr.h). Every read is bounds-checked against n;
 * nothing is allocated. */
#include "formats/imghdr.h"

#include <stdint.h>
#include <string.h>

static uint32_t be16(const unsigned char *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t le16(const unsigned char *p) { return (uint32_t)p[1] << 8 | p[0]; }
static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
static uint64_t be64(const unsigned char *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }
static uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p + 4) << 32 | le32(p); }

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static rv_imghdr_result ok(rv_imghdr *h, long long w, long long ht) {
  h->width = w;
  h->height = ht;
  return RV_IMGHDR_OK;
}

static rv_imghdr_result bad(rv_imghdr *h, const char *why) {
  h->error = why;
  return RV_IMGHDR_BAD;
}

/* ---- PNG, JPEG, BMP, WebP, Sun raster ---- */

static rv_imghdr_result png(rv_imghdr *h, const unsigned char *p, size_t n) {
  if (n < 24 || memcmp(p + 12, "IHDR", 4) != 0) return bad(h, "no IHDR chunk first");
  return ok(h, be32(p + 16), be32(p + 20));
}

static rv_imghdr_result jpeg(rv_imghdr *h, const unsigned char *p, size_t n) {
  size_t i = 2;
  while (i + 1 < n) {
    if (p[i] != 0xFF) return bad(h, "a marker expected");
    unsigned char m = p[i + 1];
    if (m == 0xFF) { /* fill byte */
      i++;
      continue;
    }
    if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) { /* no length */
      i += 2;
      continue;
    }
    if (i + 4 > n) break;
    size_t len = be16(p + i + 2);
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) { /* SOFn */
      if (i + 10 > n || len < 8) break;
      h->channels = p[i + 9];
      return ok(h, be16(p + i + 7), be16(p + i + 5));
    }
    if (m == 0xDA || m == 0xD9 || len < 2) return bad(h, "no frame header (SOF) before the image data");
    i += 2 + len;
  }
  return bad(h, "cut short before the frame header (SOF)");
}

static rv_imghdr_result bmp(rv_imghdr *h, const unsigned char *p, size_t n) {
  if (n < 18) return bad(h, "header cut short");
  uint32_t hs = le32(p + 14);
  if (hs == 12) { /* OS/2 BITMAPCOREHEADER: 16-bit sides */
    if (n < 22) return bad(h, "header cut short");
    return ok(h, le16(p + 18), le16(p + 20));
  }
  if (hs < 16 || n < 26) return bad(h, "header cut short");
  long long w = (int32_t)le32(p + 18), ht = (int32_t)le32(p + 22);
  return ok(h, w < 0 ? -w : w, ht < 0 ? -ht : ht);
}

static rv_imghdr_result webp(rv_imghdr *h, const unsigned char *p, size_t n) {
  if (n < 16) return bad(h, "header cut short");
  if (!memcmp(p + 12, "VP8 ", 4)) {
    if (n < 30 || p[23] != 0x9D || p[24] != 0x01 || p[25] != 0x2A) return bad(h, "no VP8 frame header");
    return ok(h, le16(p + 26) & 0x3FFF, le16(p + 28) & 0x3FFF);
  }
  if (!memcmp(p + 12, "VP8L", 4)) {
    if (n < 25 || p[20] != 0x2F) return bad(h, "no VP8L header");
    uint32_t b = le32(p + 21);
    return ok(h, (b & 0x3FFF) + 1, ((b >> 14) & 0x3FFF) + 1);
  }
  if (!memcmp(p + 12, "VP8X", 4)) {
    if (n < 30) return bad(h, "VP8X header cut short");
    return ok(h, (long long)(p[24] | p[25] << 8 | p[26] << 16) + 1, (long long)(p[27] | p[28] << 8 | p[29] << 16) + 1);
  }
  return bad(h, "not a VP8, VP8L or VP8X bitstream");
}

static rv_imghdr_result sunras(rv_imghdr *h, const unsigned char *p, size_t n) {
  if (n < 16) return bad(h, "header cut short");
  h->channels = be32(p + 12) / 8;
  return ok(h, be32(p + 4), be32(p + 8));
}

/* ---- the text headers: PNM, PFM, PAM, Radiance HDR ---- */

/* a decimal integer after whitespace and # comments; -1 when there is none or it is over
 * 2^40 (absurd for a side) */
static long long text_int(const unsigned char *p, size_t n, size_t *i) {
  for (;;) {
    while (*i < n && is_space(p[*i])) (*i)++;
    if (*i < n && p[*i] == '#') {
      while (*i < n && p[*i] != '\n') (*i)++;
      continue;
    }
    break;
  }
  if (*i >= n || !is_digit(p[*i])) return -1;
  long long v = 0;
  while (*i < n && is_digit(p[*i])) {
    v = v * 10 + (p[(*i)++] - '0');
    if (v > (1LL << 40)) return -1;
  }
  return v;
}

static rv_imghdr_result pnm(rv_imghdr *h, const unsigned char *p, size_t n) {
  size_t i = 2;
  long long w = text_int(p, n, &i), ht = text_int(p, n, &i);
  if (w < 0 || ht < 0) return bad(h, "no width and height in the header");
  return ok(h, w, ht);
}

static int word_is(const unsigned char *p, size_t n, size_t i, const char *w) {
  size_t l = strlen(w);
  return i + l <= n && !memcmp(p + i, w, l) && (i + l == n || is_space(p[i + l]));
}

static rv_imghdr_result pam(rv_imghdr *h, const unsigned char *p, size_t n) {
  long long w = -1, ht = -1;
  size_t i = 2;
  while (i < n) {
    while (i < n && is_space(p[i])) i++;
    if (i < n && p[i] == '#') {
      while (i < n && p[i] != '\n') i++;
      continue;
    }
    if (word_is(p, n, i, "ENDHDR")) {
      if (w < 0 || ht < 0) break;
      return ok(h, w, ht);
    }
    long long *dst = NULL;
    if (word_is(p, n, i, "WIDTH")) dst = &w, i += 5;
    else if (word_is(p, n, i, "HEIGHT")) dst = &ht, i += 6;
    else if (word_is(p, n, i, "DEPTH")) dst = &h->channels, i += 5;
    if (dst) {
      if ((*dst = text_int(p, n, &i)) < 0) return bad(h, "a header value is not a number");
    } else {
      while (i < n && p[i] != '\n') i++; /* MAXVAL, TUPLTYPE, ... */
    }
  }
  return bad(h, "no WIDTH, HEIGHT and ENDHDR in the header");
}

/* "#?RADIANCE" header lines, a blank line, then "-Y H +X W" (either sign, either order) */
static rv_imghdr_result hdr(rv_imghdr *h, const unsigned char *p, size_t n) {
  size_t i = 0;
  for (;;) { /* to the end of the line, then stop at an empty one */
    while (i < n && p[i] != '\n') i++;
    if (i >= n) return bad(h, "no end of the header");
    i++;
    if (i < n && p[i] == '\n') {
      i++;
      break;
    }
  }
  long long w = -1, ht = -1;
  for (int k = 0; k < 2; k++) {
    while (i < n && p[i] == ' ') i++;
    if (i + 2 > n || (p[i] != '-' && p[i] != '+') || (p[i + 1] != 'X' && p[i + 1] != 'Y'))
      return bad(h, "no resolution line (-Y H +X W)");
    long long *dst = p[i + 1] == 'X' ? &w : &ht;
    i += 2;
    if (i >= n || p[i] != ' ') return bad(h, "no resolution line (-Y H +X W)");
    if ((*dst = text_int(p, n, &i)) < 0) return bad(h, "no resolution line (-Y H +X W)");
  }
  if (w < 0 || ht < 0) return bad(h, "no resolution line (-Y H +X W)");
  return ok(h, w, ht);
}

/* ---- TIFF and BigTIFF: the first image file directory ---- */

static rv_imghdr_result tiff(rv_imghdr *h, const unsigned char *p, size_t n) {
  if (n < 8) return bad(h, "header cut short");
  const int le = p[0] == 'I';
  const int big = (le ? le16(p + 2) : be16(p + 2)) == 43;
  uint64_t off, count;
  size_t entry = big ? 20 : 12;
  if (big) {
    if (n < 16) return bad(h, "header cut short");
    off = le ? le64(p + 8) : be64(p + 8);
  } else {
    off = le ? le32(p + 4) : be32(p + 4);
  }
  if (off < 8 || off > n || n - off < (big ? 8u : 2u)) return bad(h, "the first directory lies outside the file");
  count = big ? (le ? le64(p + off) : be64(p + off)) : (le ? le16(p + off) : be16(p + off));
  size_t at = (size_t)off + (big ? 8 : 2);
  long long w = -1, ht = -1;
  for (uint64_t k = 0; k < count && at + entry <= n; k++, at += entry) {
    const unsigned char *e = p + at;
    uint32_t tag = le ? le16(e) : be16(e), type = le ? le16(e + 2) : be16(e + 2);
    if (tag != 256 && tag != 257 && tag != 277) continue;
    const unsigned char *v = e + (big ? 12 : 8);
    long long val;
    if (type == 3) val = le ? le16(v) : be16(v);             /* SHORT */
    else if (type == 4) val = le ? le32(v) : be32(v);        /* LONG */
    else if (type == 16 && big) {                            /* LONG8 */
      uint64_t x = le ? le64(v) : be64(v);
      val = x > (1ULL << 40) ? (1LL << 40) : (long long)x;
    } else
      return bad(h, "ImageWidth / ImageLength of an unexpected type");
    if (tag == 256) w = val;
    else if (tag == 257) ht = val;
    else h->channels = val;
  }
  if (w < 0 || ht < 0) return bad(h, "no ImageWidth and ImageLength in the first directory");
  return ok(h, w, ht);
}

/* ---- JPEG 2000: the codestream's SIZ marker (what the decoder allocates from) ---- */

static rv_imghdr_result j2k_siz(rv_imghdr *h, const unsigned char *p, size_t n) {
  /* SOC (FF4F) then SIZ (FF51): Lsiz Rsiz Xsiz Ysiz XOsiz YOsiz XTsiz YTsiz XTOsiz YTOsiz Csiz */
  if (n < 42 || p[0] != 0xFF || p[1] != 0x4F || p[2] != 0xFF || p[3] != 0x51) return bad(h, "no SIZ marker after SOC");
  const unsigned char *s = p + 2;
  uint32_t x = be32(s + 6), y = be32(s + 10), xo = be32(s + 14), yo = be32(s + 18);
  if (xo >= x || yo >= y) return bad(h, "image offset outside the image");
  h->channels = be16(s + 38);
  return ok(h, (long long)x - xo, (long long)y - yo);
}

static rv_imghdr_result jp2(rv_imghdr *h, const unsigned char *p, size_t n) {
  size_t i = 0;
  while (i + 8 <= n) {
    uint64_t len = be32(p + i);
    size_t head = 8;
    if (len == 1) {
      if (i + 16 > n) break;
      len = be64(p + i + 8);
      head = 16;
    } else if (len == 0) {
      len = n - i;
    }
    if (len < head) return bad(h, "a box shorter than its header");
    if (!memcmp(p + i + 4, "jp2c", 4)) return j2k_siz(h, p + i + head, n - i - head);
    if (len > n - i) break;
    i += (size_t)len;
  }
  return bad(h, "no codestream box (jp2c)");
}

/* ---- OpenEXR: the first header's dataWindow ---- */

static rv_imghdr_result exr(rv_imghdr *h, const unsigned char *p, size_t n) {
  if (n < 8) return bad(h, "header cut short");
  uint32_t flags = le32(p + 4);
  if (flags & 0x1800) return bad(h, "multi-part or deep-data OpenEXR files are not read");
  size_t i = 8;
  while (i < n) {
    if (p[i] == 0) break; /* the end of the header */
    const unsigned char *name = p + i, *nz = memchr(name, 0, n - i);
    if (!nz) break;
    size_t j = (size_t)(nz - p) + 1;
    if (j >= n) break;
    const unsigned char *type = p + j, *tz = memchr(type, 0, n - j);
    if (!tz) break;
    j = (size_t)(tz - p) + 1;
    if (j + 4 > n) break;
    uint32_t size = le32(p + j);
    j += 4;
    if (size > n - j) break;
    if (!strcmp((const char *)name, "dataWindow")) {
      if (strcmp((const char *)type, "box2i") || size != 16) return bad(h, "dataWindow is not a box2i");
      long long x0 = (int32_t)le32(p + j), y0 = (int32_t)le32(p + j + 4);
      long long x1 = (int32_t)le32(p + j + 8), y1 = (int32_t)le32(p + j + 12);
      if (x1 < x0 || y1 < y0) return bad(h, "empty dataWindow");
      return ok(h, x1 - x0 + 1, y1 - y0 + 1);
    }
    i = j + size;
  }
  return bad(h, "no dataWindow in the header");
}

rv_imghdr_result rv_imghdr_read(rv_imghdr *h, const unsigned char *p, size_t n) {
  memset(h, 0, sizeof *h);
  static const unsigned char PNG[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  static const unsigned char JP2[12] = {0, 0, 0, 0x0C, 'j', 'P', ' ', ' ', '\r', '\n', 0x87, '\n'};
  static const unsigned char SUN[4] = {0x59, 0xA6, 0x6A, 0x95};
  static const unsigned char EXR[4] = {0x76, 0x2F, 0x31, 0x01};
  if (!p) return RV_IMGHDR_UNKNOWN;
  if (n >= 8 && !memcmp(p, PNG, 8)) return h->format = "PNG", png(h, p, n);
  if (n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return h->format = "JPEG", jpeg(h, p, n);
  if (n >= 2 && p[0] == 'B' && p[1] == 'M') return h->format = "BMP", bmp(h, p, n);
  if (n >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4)) return h->format = "WebP", webp(h, p, n);
  if (n >= 4 && ((p[0] == 'I' && p[1] == 'I' && (p[2] == 42 || p[2] == 43) && p[3] == 0) ||
                 (p[0] == 'M' && p[1] == 'M' && p[2] == 0 && (p[3] == 42 || p[3] == 43))))
    return h->format = "TIFF", tiff(h, p, n);
  if (n >= 12 && !memcmp(p, JP2, 12)) return h->format = "JPEG 2000", jp2(h, p, n);
  if (n >= 4 && p[0] == 0xFF && p[1] == 0x4F && p[2] == 0xFF && p[3] == 0x51) return h->format = "JPEG 2000", j2k_siz(h, p, n);
  if (n >= 4 && !memcmp(p, SUN, 4)) return h->format = "Sun raster", sunras(h, p, n);
  if (n >= 4 && !memcmp(p, EXR, 4)) return h->format = "OpenEXR", exr(h, p, n);
  if ((n >= 6 && !memcmp(p, "#?RGBE", 6)) || (n >= 10 && !memcmp(p, "#?RADIANCE", 10)))
    return h->format = "Radiance HDR", hdr(h, p, n);
  if (n >= 3 && p[0] == 'P' && is_space(p[2])) {
    if (p[1] >= '1' && p[1] <= '6') return h->format = "PNM", pnm(h, p, n);
    if (p[1] == '7') return h->format = "PAM", pam(h, p, n);
    if (p[1] == 'F' || p[1] == 'f') return h->format = "PFM", pnm(h, p, n);
  }
  return RV_IMGHDR_UNKNOWN;
}
