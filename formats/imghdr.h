/* The size an image file declares, read from its header without decoding: what the
 * decoded-pixel limit (--max-pixels, rv_ctx_set_max_pixels) is checked against before any
 * decoder allocates. Untrusted bytes: fuzzed by fuzz/fuzz_imghdr.c.
 *
 *   rv_imghdr h;
 *   switch (rv_imghdr_read(&h, data, len)) {
 *   case RV_IMGHDR_OK: ...h.format, h.width, h.height, h.channels...; break;
 *   case RV_IMGHDR_BAD: ...h.format names the format, h.error the problem...; break;
 *   case RV_IMGHDR_UNKNOWN: ...not a format OpenCV's imdecode reads...;
 *   }
 *
 * Every format OpenCV's imdecode recognises is read: PNG, JPEG, BMP, WebP (VP8, VP8L,
 * VP8X), PBM/PGM/PPM (P1-P6), PAM (P7), PFM, Sun raster, Radiance HDR, TIFF and BigTIFF
 * (the first image, which imdecode decodes), JPEG 2000 (JP2 boxes and raw codestreams: the
 * SIZ marker, which the decoder allocates from), OpenEXR (the first part's dataWindow); and
 * DICOM is recognised (to be refused: its decoder aborts on malformed files). A format
 * recognised by its signature whose header cannot be read to the size is RV_IMGHDR_BAD.
 */
#ifndef RV_CORE_IMGHDR_H
#define RV_CORE_IMGHDR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { RV_IMGHDR_UNKNOWN = 0, RV_IMGHDR_OK = 1, RV_IMGHDR_BAD = 2 } rv_imghdr_result;

typedef struct {
  const char *format; /* "PNG", "TIFF", "JPEG 2000", ... (static), or NULL when unknown */
  long long width, height; /* >= 0; as declared, not checked against anything */
  long long channels;      /* components per pixel when the header says (JPEG 2000, TIFF, PAM), else 0 */
  const char *error;       /* RV_IMGHDR_BAD: what is wrong (static) */
} rv_imghdr;

rv_imghdr_result rv_imghdr_read(rv_imghdr *h, const unsigned char *p, size_t n);

#ifdef __cplusplus
}
#endif
#endif
