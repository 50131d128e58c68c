/* rv_weights_open: a checkpoint opened by its content, a zip (PyTorch >= 1.6 .pth, formats/pth.c)
 * or a safetensors file (formats/weights.c). Apart from weights.c so that the container does
 * not depend on the .pth reader built on it. */
#define _POSIX_C_SOURCE 200809L
#include "formats/pth.h"
#include "formats/weights.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

rv_status rv_weights_open(rv_weights **out, const char *path, rv_ctx *ctx) {
  *out = NULL;
  /* a pipe cannot be sniffed (the bytes read are gone) nor seeked, as a zip needs */
  struct stat sb;
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) return rv_safetensors_open(out, path, ctx);
  FILE *f = fopen(path, "rb");
  if (!f) return rv_error(ctx, RV_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  unsigned char magic[9] = {0};
  size_t got = fread(magic, 1, 9, f);
  fclose(f);
  if (got >= 4 && magic[0] == 'P' && magic[1] == 'K') return rv_pth_load(out, path, ctx);
  /* safetensors: u64 header length, then '{' (its first byte may be 0x80, like pickle's) */
  if (got == 9 && magic[8] == '{') return rv_safetensors_open(out, path, ctx);
  if (got >= 2 && magic[0] == 0x80) /* bare pickle: PyTorch < 1.6 legacy format */
    return rv_error(ctx, RV_ERR_UNSUPPORTED,
                    "%s: legacy (pre-1.6, non-zip) PyTorch checkpoint; re-save it with torch.save(..., _use_new_zipfile_serialization=True) or convert it with a newer PyTorch",
                    path);
  return rv_error(ctx, RV_ERR_FORMAT, "%s: not a checkpoint (expected a PyTorch .pth zip or .safetensors)", path);
}
