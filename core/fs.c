/* File-system helpers. */
#define _GNU_SOURCE /* MAP_POPULATE, fopencookie */
#include "core/fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <dirent.h>
#include <time.h>
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
  enum { MAX_TRIES = 10000 };
  int fd = -1;
  for (int k = 0; fd < 0 && k < MAX_TRIES; k++) {
    int len = snprintf(name, n, "%s.%ld.%d%s", stem, (long)getpid(), k, suffix);
    RV_ASSERT(len > 0 && (size_t)len < n);
    fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  /* the liveness token rv_out_sweep tests: held until the file is renamed or removed. A file
   * system without locks (ENOLCK) keeps the file unlocked, and the sweep then never takes it. */
  if (fd >= 0) {
    int err = errno;
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) { /* a sweeper holds it for a moment at most */
    }
    errno = err;
  }
  return fd;
}

int rv_out_tmp_stem(char *stem, size_t n, const char *target) {
  const char *slash = strrchr(target, '/');
  int dlen = slash ? (int)(slash - target + 1) : 0;
  const char *base = slash ? slash + 1 : target;
  int len = snprintf(stem, n, "%.*s.%s.ravlt-tmp", dlen, target, base);
  return len < 0 || (size_t)len >= n ? -1 : 0;
}

int rv_out_target(char *out, size_t n, const char *path) {
  char cur[4096], link[4096];
  if (snprintf(cur, sizeof cur, "%s", path) >= (int)sizeof cur) return -1;
  for (int hops = 0; hops < 40; hops++) {
    struct stat sb;
    if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode)) {
      if (snprintf(out, n, "%s", cur) >= (int)n) return -1;
      return 0;
    }
    ssize_t len = readlink(cur, link, sizeof link - 1);
    if (len < 0 || (size_t)len >= sizeof link - 1) return -1;
    link[len] = 0;
    if (link[0] == '/') {
      memcpy(cur, link, (size_t)len + 1);
    } else { /* relative to the link's folder */
      char *slash = strrchr(cur, '/');
      int dlen = slash ? (int)(slash - cur + 1) : 0;
      char tmp[4096];
      if (snprintf(tmp, sizeof tmp, "%.*s%s", dlen, cur, link) >= (int)sizeof tmp) return -1;
      memcpy(cur, tmp, strlen(tmp) + 1);
    }
  }
  return -1; /* a loop */
}

/* The stream behind an rv_out_file: its own write function keeps the errno of a failed write
 * (stdio's ferror does not: a full disk would read "Input/output error"), and its close
 * checks the data (a close of a duplicate: NFS reports deferred write errors there) but
 * keeps the descriptor, and with it the temporary's lock, until the rename or removal. */
typedef struct {
  int fd;
  int err; /* errno of the first failed write or close, 0 if none */
} out_io;

static ssize_t io_write(void *cookie, const char *buf, size_t n) {
  out_io *io = cookie;
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(io->fd, buf + done, n - done);
    if (w < 0) {
      if (!io->err) io->err = errno; /* EINTR included: a stop signal interrupts a blocked FIFO */
      return 0;
    }
    if (w == 0) {
      if (!io->err) io->err = EIO;
      return 0;
    }
    done += (size_t)w;
  }
  return (ssize_t)n;
}

static int io_close(void *cookie) {
  out_io *io = cookie;
  int d = dup(io->fd);
  if (d >= 0 && close(d) != 0 && !io->err) io->err = errno;
  return io->err ? -1 : 0;
}

static FILE *io_open(out_io *io) {
  cookie_io_functions_t fns = {NULL, io_write, NULL, io_close};
  return fopencookie(io, "w", fns);
}

static void out_free(rv_out_file *o) {
  out_io *io = o->io;
  if (io && io->fd >= 0) close(io->fd);
  free(io);
  free(o->tmp);
  free(o->target);
  o->tmp = o->target = NULL;
  o->io = NULL;
  o->f = NULL;
}

/* the errno a failed stream reports (the write's own, else errno) */
static int out_errno(const rv_out_file *o, int fallback) {
  const out_io *io = o->io;
  return io && io->err ? io->err : fallback ? fallback : EIO;
}

int rv_out_errno(const rv_out_file *o) {
  const out_io *io = o->io;
  return io ? io->err : 0;
}

/* fd (owned) as o's stream; RV_OK or an error naming o->path */
static rv_status out_attach(rv_out_file *o, int fd, rv_ctx *ctx) {
  out_io *io = malloc(sizeof *io);
  if (io) {
    io->fd = fd;
    io->err = 0;
    o->io = io;
    if ((o->f = io_open(io)) != NULL) return RV_OK;
  }
  int err = errno;
  if (!io) close(fd);
  if (o->tmp) unlink(o->tmp);
  out_free(o);
  return rv_error(ctx, RV_ERR_NOMEM, "%s: cannot write (%s)", o->path, strerror(err));
}

rv_status rv_out_open(rv_out_file *o, const char *path, rv_ctx *ctx) {
  memset(o, 0, sizeof *o);
  o->path = path;
  if (strcmp(path, "-") == 0) {
    o->kind = RV_OUT_STDOUT;
    o->f = stdout;
    return RV_OK;
  }
  char target[4096];
  if (rv_out_target(target, sizeof target, path) != 0)
    return rv_error(ctx, RV_ERR_IO, "%s: cannot resolve the path (too long or a loop of links)", path);
  struct stat sb;
  if (stat(target, &sb) == 0) {
    if (S_ISDIR(sb.st_mode)) return rv_error(ctx, RV_ERR_IO, "%s: is a folder, not a file", path);
    if (!S_ISREG(sb.st_mode)) { /* a device, FIFO or socket: written in place, never replaced */
      int fd = open(target, O_WRONLY | O_CLOEXEC | O_NOCTTY);
      if (fd < 0) return rv_error(ctx, RV_ERR_IO, "%s: cannot write (%s)", path, strerror(errno));
      o->kind = RV_OUT_STREAM;
      return out_attach(o, fd, ctx);
    }
  }
  const size_t n = strlen(target) + RV_UNIQUE_EXTRA + sizeof RV_TMP_TAG + 2;
  char *stem = malloc(n);
  o->tmp = malloc(n);
  o->target = strdup(target);
  if (!stem || !o->tmp || !o->target) {
    free(stem);
    out_free(o);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  rv_out_tmp_stem(stem, n, target);
  int fd = rv_create_unique(o->tmp, n, stem, ""), err = errno;
  free(stem);
  if (fd < 0) {
    out_free(o);
    return rv_error(ctx, RV_ERR_IO, "%s: cannot write (%s)", path, strerror(err));
  }
  return out_attach(o, fd, ctx);
}

rv_status rv_out_close(rv_out_file *o, rv_ctx *ctx) {
  if (o->kind == RV_OUT_STDOUT) {
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int err = errno ? errno : EIO;
    o->f = NULL;
    if (bad) return rv_error(ctx, RV_ERR_IO, "standard output: write failed (%s)", strerror(err));
    return RV_OK;
  }
  if (!o->f) return rv_error(ctx, RV_ERR_INTERNAL, "%s: closed twice", o->path);
  errno = 0;
  int bad = ferror(o->f) != 0;
  if (fflush(o->f) != 0) bad = 1;
  if (fclose(o->f) != 0) bad = 1;
  int err = bad ? out_errno(o, errno) : 0;
  o->f = NULL;
  if (o->kind == RV_OUT_STREAM) {
    out_free(o);
    if (bad) return rv_error(ctx, RV_ERR_IO, "%s: write failed (%s)", o->path, strerror(err));
    return RV_OK;
  }
  /* renamed (or removed) while the lock is held: a sweep never sees it unlocked */
  if (!bad && rename(o->tmp, o->target) != 0) bad = 1, err = errno;
  if (bad) unlink(o->tmp);
  out_free(o);
  if (bad) return rv_error(ctx, RV_ERR_IO, "%s: write failed (%s)", o->path, strerror(err));
  return RV_OK;
}

void rv_out_abort(rv_out_file *o) {
  if (o->kind == RV_OUT_STDOUT) {
    if (o->f) fflush(stdout);
    o->f = NULL;
    return;
  }
  if (o->f) fclose(o->f);
  o->f = NULL;
  if (o->tmp) unlink(o->tmp);
  out_free(o);
}

/* the folder part of path ("." when there is none) */
static void dir_of(char *dir, size_t n, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, n, ".");
  else if (slash == path) snprintf(dir, n, "/");
  else snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

rv_status rv_out_check(const char *path, rv_ctx *ctx) {
  if (strcmp(path, "-") == 0) return RV_OK;
  if (!*path) return rv_error(ctx, RV_ERR_ARG, "an output path is empty");
  char target[4096], dir[4096];
  if (rv_out_target(target, sizeof target, path) != 0)
    return rv_error(ctx, RV_ERR_IO, "%s: cannot resolve the path (too long or a loop of links)", path);
  struct stat sb;
  if (stat(target, &sb) == 0) {
    if (S_ISDIR(sb.st_mode)) return rv_error(ctx, RV_ERR_IO, "%s: is a folder, not a file", path);
    if (!S_ISREG(sb.st_mode)) {
      if (access(target, W_OK) != 0) return rv_error(ctx, RV_ERR_IO, "%s: cannot write (%s)", path, strerror(errno));
      return RV_OK;
    }
  }
  dir_of(dir, sizeof dir, target);
  if (stat(dir, &sb) != 0)
    return rv_error(ctx, RV_ERR_IO, "%s: cannot write: folder %s: %s", path, dir, strerror(errno));
  if (!S_ISDIR(sb.st_mode)) return rv_error(ctx, RV_ERR_IO, "%s: cannot write: %s is not a folder", path, dir);
  if (access(dir, W_OK | X_OK) != 0)
    return rv_error(ctx, RV_ERR_IO, "%s: cannot write in folder %s (%s)", path, dir, strerror(errno));
  return RV_OK;
}

rv_status rv_out_check_dir(const char *dir, rv_ctx *ctx) {
  RV_TRY(rv_mkdirs(dir, ctx));
  if (access(dir, W_OK | X_OK) != 0) return rv_error(ctx, RV_ERR_IO, "%s: cannot write in this folder (%s)", dir, strerror(errno));
  return RV_OK;
}

/* dir/name is a dead writer's temporary: removed under its lock (see fs.h) */
static int sweep_one(const char *path) {
  const int flags = O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW;
  int fd = open(path, O_RDWR | flags); /* NFS's emulated flock wants a writable descriptor */
  if (fd < 0 && errno == EACCES) fd = open(path, O_RDONLY | flags);
  if (fd < 0) return 0;
  int removed = 0;
  struct stat sf, sp;
  if (fstat(fd, &sf) == 0 && S_ISREG(sf.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0) {
    /* the name still names the file locked (not renamed away and replaced meanwhile) */
    if (lstat(path, &sp) == 0 && sp.st_dev == sf.st_dev && sp.st_ino == sf.st_ino &&
        fstat(fd, &sf) == 0 && (sf.st_size > 0 || time(NULL) - sf.st_mtime >= RV_SWEEP_EMPTY_AGE))
      removed = unlink(path) == 0;
  }
  close(fd);
  return removed;
}

int rv_out_sweep(const char *dir) {
  const char *d0 = dir && *dir ? dir : ".";
  DIR *d = opendir(d0);
  if (!d) return 0;
  int removed = 0;
  const long me = (long)getpid();
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] != '.') continue;
    const char *t = strstr(e->d_name, RV_TMP_TAG);
    if (!t) continue;
    char *end;
    long pid = strtol(t + strlen(RV_TMP_TAG), &end, 10);
    if (end == t + strlen(RV_TMP_TAG) || *end != '.' || pid <= 0) continue;
    /* our own: a temporary of a thread of this process (a file system whose locks are
     * per process, NFS's, would let us take it) */
    if (pid == me) continue;
    char p[4096];
    if (snprintf(p, sizeof p, "%s/%s", d0, e->d_name) >= (int)sizeof p) continue;
    removed += sweep_one(p);
  }
  closedir(d);
  return removed;
}

int rv_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return 0;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* not a regular file (a pipe, /dev/stdin): read to the end, at most max bytes */
static rv_status read_stream(rv_mapped_file *m, int fd, const char *path, size_t max, rv_ctx *ctx) {
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
    if (n > max) {
      free(b);
      return rv_error(ctx, RV_ERR_UNSUPPORTED, "%s: over %zu MiB read from a pipe or device: give a regular file", path,
                      max >> 20);
    }
  }
  m->buf = b;
  m->data = b;
  m->len = n;
  return RV_OK;
}

rv_status rv_file_map(rv_mapped_file *m, const char *path, rv_ctx *ctx) {
  return rv_file_map_max(m, path, (size_t)-1, ctx);
}

rv_status rv_file_map_max(rv_mapped_file *m, const char *path, size_t max, rv_ctx *ctx) {
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
    st = read_stream(m, fd, path, max, ctx);
  } else if (sb.st_size > 0) {
#ifdef MAP_POPULATE
    const int flags = MAP_PRIVATE | MAP_POPULATE;
#else
    const int flags = MAP_PRIVATE;
#endif
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, flags, fd, 0);
    if (p == MAP_FAILED) {
      st = read_stream(m, fd, path, (size_t)-1, ctx); /* e.g. a file system without mmap */
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
