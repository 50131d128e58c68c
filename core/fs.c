/* File-system helpers. */
#define _POSIX_C_SOURCE 200809L
#include "core/fs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

rv_status rv_mkdirs(const char *dir, rv_ctx *ctx) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
    return rv_error(ctx, RV_ERR_ARG, "%s: path too long", dir);
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == 0) {
      char c = *p;
      *p = 0;
      if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return rv_error(ctx, RV_ERR_IO, "%s: cannot create folder: %s", buf, strerror(errno));
      *p = c;
      if (!c) break;
    }
  }
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return rv_error(ctx, RV_ERR_IO, "%s: not a folder", dir);
  return RV_OK;
}
