/* Small file-system helpers shared by the library and the CLI.
 *
 *   if (rv_mkdirs("out/masks", ctx) != RV_OK) ...rv_ctx_errmsg(ctx)...;   // mkdir -p
 *
 *   rv_out_file o;                                   // never a half-written file:
 *   RV_TRY(rv_out_open(&o, "stats.json", ctx));     // writes .stats.json.ravlt-tmp.<pid>.<k>
 *   fprintf(o.f, ...);                               // ("-": stdout; a device: in place)
 *   return rv_out_close(&o, ctx);                    // checks errors, renames into place
 *
 *   rv_mapped_file f;                                // a whole input file, mapped once
 *   RV_TRY(rv_file_map(&f, "dt.json", ctx));  ...f.data, f.len...;  rv_file_unmap(&f);
 */
#ifndef RV_CORE_FS_H
#define RV_CORE_FS_H

#include "core/rv.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Create dir and its missing parents (mode 0777 & umask). RV_ERR_ARG if the path is too
 * long, RV_ERR_IO naming the folder if one cannot be created or dir is not a folder. */
rv_status rv_mkdirs(const char *dir, rv_ctx *ctx);

/* Creates a new file STEM.<pid>.<k>SUFFIX, k the first number whose file does not exist
 * (O_CREAT | O_EXCL, write-only, mode 0666 & umask as fopen gives: threads and processes
 * never share one, an existing file is never truncated); its name goes to name[n],
 * n >= strlen(stem) + strlen(suffix) + RV_UNIQUE_EXTRA. Returns the descriptor, or -1 with
 * errno set. The descriptor holds an exclusive flock() on the file: the proof, valid across
 * PID namespaces and (on file systems with locks, NFS included) hosts, that its writer is
 * alive; rv_out_sweep never removes a file whose lock it cannot take. Keep the descriptor
 * open until the file is renamed into place or removed. */
#define RV_UNIQUE_EXTRA 40 /* 2 dots, a long and an int, NUL */
int rv_create_unique(char *name, size_t n, const char *stem, const char *suffix);

/* The temporary-file stem of an output: "DIR/.NAME.ravlt-tmp" for target "DIR/NAME" (a
 * hidden file in the target's own folder, so that the final rename stays on one file
 * system). Temporaries are "DIR/.NAME.ravlt-tmp.<pid>.<k>[.ext]". -1 if it does not fit. */
#define RV_TMP_TAG ".ravlt-tmp."
int rv_out_tmp_stem(char *stem, size_t n, const char *target);

/* The file an output path really names: PATH itself, or the target of a symbolic link
 * (followed through chains; a dangling link's target, relative to the link's folder).
 * Writing goes to the target, so a link stays a link. -1 if it does not fit or loops. */
int rv_out_target(char *out, size_t n, const char *path);

/* One output file, whatever the path names:
 *  - "-": standard output (not closed; rv_out_close flushes it and checks for errors);
 *  - an existing character device, FIFO or socket: opened and written as a stream, never
 *    replaced;
 *  - a folder: an error;
 *  - a regular file, nothing, or a symbolic link to either: a temporary file beside the
 *    target (rv_out_tmp_stem, O_EXCL: threads and processes never share one), flushed and
 *    renamed over the target by rv_out_close (the link stays a link). A write error or
 *    rv_out_abort removes it; a process killed in between leaves it, recognisable by its
 *    name, and rv_out_sweep removes it later. The temporary stays locked (rv_create_unique)
 *    until it is renamed or removed.
 * Every error names PATH as the caller gave it, never a temporary name, and the errno of
 * the write that failed ("No space left on device", "Broken pipe"). The last rv_out_close
 * of a path wins. */
typedef enum { RV_OUT_FILE = 0, RV_OUT_STREAM = 1, RV_OUT_STDOUT = 2 } rv_out_kind;
typedef struct {
  FILE *f;
  char *tmp;    /* RV_OUT_FILE: the temporary's name */
  char *target; /* RV_OUT_FILE: the file renamed over (PATH or a link's target) */
  const char *path;
  rv_out_kind kind;
  void *io; /* RV_OUT_FILE, RV_OUT_STREAM: the descriptor (and lock) behind f */
} rv_out_file;
rv_status rv_out_open(rv_out_file *o, const char *path, rv_ctx *ctx);
rv_status rv_out_close(rv_out_file *o, rv_ctx *ctx);
void rv_out_abort(rv_out_file *o);
/* The errno of o's first failed write (ENOSPC, EPIPE, ...), 0 if none failed (or o is
 * standard output: see errno) -- for a caller that checks ferror(o->f) as it goes. */
int rv_out_errno(const rv_out_file *o);

/* Checks, before any work, that rv_out_open(path) can succeed: "-" is fine; a folder is an
 * error; an existing device/FIFO must be writable; otherwise the target's folder must exist
 * and be writable (the temporary is created there). Errors name PATH. Creates nothing. */
rv_status rv_out_check(const char *path, rv_ctx *ctx);
/* rv_mkdirs(dir) and a check that files can be created in it. */
rv_status rv_out_check_dir(const char *dir, rv_ctx *ctx);
/* Removes the temporaries (".*.ravlt-tmp.<pid>.*") in dir left by processes that no longer
 * run (killed: SIGKILL, a power cut). A temporary goes only when this process can take its
 * lock (rv_create_unique: a writer holds it from creation to rename, in any PID namespace
 * or on any host sharing the file system), the name still names the file locked, the PID in
 * its name is not this process's, and it holds data or is over RV_SWEEP_EMPTY_AGE seconds
 * old (an empty file may be one a writer created a moment ago and has yet to lock). A file
 * system without locks: nothing is removed. Returns how many were removed. */
#define RV_SWEEP_EMPTY_AGE 60
int rv_out_sweep(const char *dir);
/* 1 if a and b name the same existing file (device and inode, links followed). */
int rv_same_file(const char *a, const char *b);

/* A whole file in memory, read-only: mapped (MAP_POPULATE) when it is a regular file,
 * otherwise read. data[len] is not guaranteed to be NUL. */
typedef struct {
  const char *data;
  size_t len;
  void *map;   /* mapping (munmap'd by rv_file_unmap) or NULL */
  char *buf;   /* read buffer (freed) or NULL */
} rv_mapped_file;
rv_status rv_file_map(rv_mapped_file *m, const char *path, rv_ctx *ctx);
/* The same, refusing (RV_ERR_UNSUPPORTED) a stream that yields more than max bytes. */
rv_status rv_file_map_max(rv_mapped_file *m, const char *path, size_t max, rv_ctx *ctx);
void rv_file_unmap(rv_mapped_file *m);

#ifdef __cplusplus
}
#endif
#endif
