/* Small file-system helpers shared by the library and the CLI.
 *
 *   if (rv_mkdirs("out/masks", ctx) != RV_OK) ...rv_ctx_errmsg(ctx)...;   // mkdir -p
 *
 *   rv_out_file o;                                   // never a half-written file:
 *   RV_TRY(rv_out_open(&o, "stats.json", ctx));     // writes stats.json.tmp.<pid>...
 *   fprintf(o.f, ...);
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

/* Creates a new file STEM.<pid>.<tid>.<k>SUFFIX, k the first number whose file does not
 * exist (O_CREAT | O_EXCL, write-only, mode 0666 & umask as fopen gives: threads and
 * processes never share one, an existing file is never truncated); its name goes to
 * name[n], n >= strlen(stem) + strlen(suffix) + RV_UNIQUE_EXTRA. Returns the descriptor,
 * or -1 with errno set. */
#define RV_UNIQUE_EXTRA 56 /* 3 dots, 2 longs and an int, NUL */
int rv_create_unique(char *name, size_t n, const char *stem, const char *suffix);

/* Output file written to PATH.tmp.<pid>.<tid>.<k> (created with O_EXCL, k the first free
 * number: threads and several rv_out_open of one path never share a temporary; mode
 * 0666 & umask), renamed into place by rv_out_close (removed on a write error, and by
 * rv_out_abort). The last rv_out_close of a path wins. */
typedef struct {
  FILE *f;
  char *tmp;
  const char *path;
} rv_out_file;
rv_status rv_out_open(rv_out_file *o, const char *path, rv_ctx *ctx);
rv_status rv_out_close(rv_out_file *o, rv_ctx *ctx);
void rv_out_abort(rv_out_file *o);

/* A whole file in memory, read-only: mapped (MAP_POPULATE) when it is a regular file,
 * otherwise read. data[len] is not guaranteed to be NUL. */
typedef struct {
  const char *data;
  size_t len;
  void *map;   /* mapping (munmap'd by rv_file_unmap) or NULL */
  char *buf;   /* read buffer (freed) or NULL */
} rv_mapped_file;
rv_status rv_file_map(rv_mapped_file *m, const char *path, rv_ctx *ctx);
void rv_file_unmap(rv_mapped_file *m);

#ifdef __cplusplus
}
#endif
#endif
