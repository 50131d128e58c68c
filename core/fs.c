/* File-system helpers. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_POPULATE, syscall */
#include "core/fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

int rv_create_unique(char *name, size_t n, const char *stem, const char *suffix) {
  enum { MAX_TRIES = 1000 };
#ifdef SYS_gettid
  const long tid = (long)syscall(SYS_gettid);
#else
  const long tid = 0; /* the O_EXCL retry below still keeps threads apart */
#endif
  int fd = -1;
  for (int k = 0; fd < 0 && k < MAX_TRIES; k++) {
    int len = snprintf(name, n, "%s.%ld.%ld.%d%s", stem, (long)getpid(), tid, k, suffix);
    RV_ASSERT(len > 0 && (size_t)len < n);
    fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  return fd;
}

/* Writes PATH.tmp.<pid>.<tid>.<k> (rv_create_unique): O_EXCL never truncates an existing
 * file (another process's or thread's temporary, or this thread's other rv_out_open of the
 * same path). Mode 0666 & umask, as fopen "w" creates it, so the renamed file keeps the
 * permissions it always had. */
rv_status rv_out_open(rv_out_file *o, const char *path, rv_ctx *ctx) {
  o->path = path;
  o->f = NULL;
  const size_t n = strlen(path) + RV_UNIQUE_EXTRA + sizeof ".tmp";
  char *stem = malloc(n);
  o->tmp = malloc(n);
  if (!stem || !o->tmp) {
    free(stem);
    free(o->tmp);
    o->tmp = NULL;
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  snprintf(stem, n, "%s.tmp", path);
  int fd = rv_create_unique(o->tmp, n, stem, ""), err = errno;
  free(stem);
  if (fd >= 0 && !(o->f = fdopen(fd, "w"))) {
    err = errno;
    close(fd);
    remove(o->tmp);
  }
  if (!o->f) {
    rv_status st = rv_error(ctx, RV_ERR_IO, "%s: cannot write (%s)", o->tmp, strerror(err));
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

/* not a regular file (a pipe, /dev/stdin): read to the end */
static rv_status read_stream(rv_mapped_file *m, int fd, const char *path, rv_ctx *ctx) {
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  if (!b) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", path);
  for (;;) {
    if (n == cap) {
      char *nb = cap > ((size_t)-1) / 2 ? NULL : realloc(b, cap * 2);
      if (!nb) {
        free(b);
        return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory (%zu bytes)", path, n);
      }
      b = nb;
      cap *= 2;
    }
    ssize_t got = read(fd, b + n, cap - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      rv_status st = rv_error(ctx, RV_ERR_IO, "%s: read failed (%s)", path, strerror(errno));
      free(b);
      return st;
    }
    if (got == 0) break;
    n += (size_t)got;
  }
  m->buf = b;
  m->data = b;
  m->len = n;
  return RV_OK;
}

rv_status rv_file_map(rv_mapped_file *m, const char *path, rv_ctx *ctx) {
  memset(m, 0, sizeof *m);
  m->data = "";
  int fd = open(path, O_RDONLY);
  if (fd < 0) return rv_error(ctx, RV_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
  struct stat sb;
  rv_status st = RV_OK;
  if (fstat(fd, &sb) != 0) {
    st = rv_error(ctx, RV_ERR_IO, "%s: cannot stat (%s)", path, strerror(errno));
  } else if (S_ISDIR(sb.st_mode)) {
    st = rv_error(ctx, RV_ERR_IO, "%s: is a folder", path);
  } else if (!S_ISREG(sb.st_mode)) {
    st = read_stream(m, fd, path, ctx);
  } else if (sb.st_size > 0) {
#ifdef MAP_POPULATE
    const int flags = MAP_PRIVATE | MAP_POPULATE;
#else
    const int flags = MAP_PRIVATE;
#endif
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, flags, fd, 0);
    if (p == MAP_FAILED) {
      st = read_stream(m, fd, path, ctx); /* e.g. a file system without mmap */
    } else {
      m->map = p;
      m->data = p;
      m->len = (size_t)sb.st_size;
    }
  }
  close(fd);
  return st;
}

void rv_file_unmap(rv_mapped_file *m) {
  if (m->map) munmap(m->map, m->len);
  free(m->buf);
  memset(m, 0, sizeof *m);
  m->data = "";
}
