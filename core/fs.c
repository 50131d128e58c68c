/* File-system helpers. */
#define _POSIX_C_SOURCE 200809L
#include "core/fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

rv_status rv_out_open(rv_out_file *o, const char *path, rv_ctx *ctx) {
  o->path = path;
  o->f = NULL;
  size_t n = strlen(path) + 32;
  o->tmp = malloc(n);
  if (!o->tmp) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  snprintf(o->tmp, n, "%s.tmp.%ld", path, (long)getpid());
  o->f = fopen(o->tmp, "w");
  if (!o->f) {
    rv_status st = rv_error(ctx, RV_ERR_IO, "%s: cannot write (%s)", o->tmp, strerror(errno));
    free(o->tmp);
    o->tmp = NULL;
    return st;
  }
  return RV_OK;
}

rv_status rv_out_close(rv_out_file *o, rv_ctx *ctx) {
  int bad = ferror(o->f) != 0;
  bad |= fclose(o->f) != 0;
  o->f = NULL;
  if (bad || rename(o->tmp, o->path) != 0) {
    remove(o->tmp);
    free(o->tmp);
    o->tmp = NULL;
    return rv_error(ctx, RV_ERR_IO, "%s: write failed", o->path);
  }
  free(o->tmp);
  o->tmp = NULL;
  return RV_OK;
}

void rv_out_abort(rv_out_file *o) {
  if (o->f) fclose(o->f);
  if (o->tmp) remove(o->tmp);
  free(o->tmp);
  o->f = NULL;
  o->tmp = NULL;
}
