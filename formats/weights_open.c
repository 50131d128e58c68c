/* rv_weights_open: a checkpoint opened by its content, a zip (PyTorch >= 1.6 .pth, formats/pth.c)
 * or a safetensors file (formats/weights.c). Apart from weights.c so that the container does
 * not depend on the .pth reader built on it. */
#define _POSIX_C_SOURCE 200809L
#include "core/fs.h"
#include "formats/pth.h"
#include "formats/weights.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* the checkpoint kinds by their first bytes: a zip, safetensors (u64 header length, then
 * '{': its first byte may be 0x80, like pickle's), a bare pickle (PyTorch < 1.6) */
typedef enum { CK_ZIP, CK_SAFETENSORS, CK_LEGACY, CK_UNKNOWN } ck_kind;

static ck_kind sniff(const unsigned char *magic, size_t got) {
  if (got >= 4 && magic[0] == 'P' && magic[1] == 'K') return CK_ZIP;
  if (got >= 9 && magic[8] == '{') return CK_SAFETENSORS;
  if (got >= 2 && magic[0] == 0x80) return CK_LEGACY;
  return CK_UNKNOWN;
}

static rv_status kind_error(ck_kind k, const char *path, rv_ctx *ctx) {
  if (k == CK_LEGACY)
    return rv_error(ctx, RV_ERR_UNSUPPORTED,
                    "%s: legacy (pre-1.6, non-zip) PyTorch checkpoint; re-save it with torch.save(..., _use_new_zipfile_serialization=True) or convert it with a newer PyTorch",
                    path);
  return rv_error(ctx, RV_ERR_FORMAT, "%s: not a checkpoint (expected a PyTorch .pth zip or .safetensors)", path);
}

rv_status rv_weights_open(rv_weights **out, const char *path, rv_ctx *ctx) {
  *out = NULL;
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return rv_error(ctx, RV_ERR_IO, "%s: is a folder, not a checkpoint", path);
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
    /* a pipe (--weights <(cat x.pth)) or a device: neither sniffed in place nor seekable, as
     * a zip needs: read into memory (bounded), then opened by its content like a file */
    rv_mapped_file m;
    RV_TRY(rv_file_map_max(&m, path, RV_WEIGHTS_STREAM_MAX, ctx));
    rv_status st;
    switch (sniff((const unsigned char *)m.data, m.len)) {
    case CK_ZIP: st = rv_pth_load_buffer(out, m.data, m.len, path, ctx); break;
    case CK_SAFETENSORS: st = rv_safetensors_parse(out, m.data, m.len, path, ctx); break;
    default: st = kind_error(sniff((const unsigned char *)m.data, m.len), path, ctx); break;
    }
    rv_file_unmap(&m);
    return st;
  }
  FILE *f = fopen(path, "rb");
  if (!f) return rv_error(ctx, RV_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  unsigned char magic[9] = {0};
  size_t got = fread(magic, 1, 9, f);
  fclose(f);
  switch (sniff(magic, got)) {
  case CK_ZIP: return rv_pth_load(out, path, ctx);
  case CK_SAFETENSORS: return rv_safetensors_open(out, path, ctx);
  default: return kind_error(sniff(magic, got), path, ctx);
  }
}
