/* Downloads (libcurl) into the user cache, resumable, and one-time conversion of a
 * downloaded .pth checkpoint to safetensors beside it.
 *
 *   char dir[4096], path[4096];
 *   rv_download_opts o = {0};
 *   o.progress = my_bar; o.user = &bar;       // called as bytes arrive; the library never prints
 *   if (rv_cache_dir(dir, sizeof dir, ctx) == RV_OK &&
 *       rv_checkpoint_fetch(path, sizeof path, "https://host/fpn_s_1x.pth", dir, "fpn_s_1x.pth",
 *                           &o, ctx) == RV_OK)
 *     rv_model_load(&m, path, NULL, ctx);    // path = <dir>/fpn_s_1x.safetensors
 *
 * Resume: bytes go to DEST.part; a later call (or a retry, opts.retries) asks the server for
 * the rest with "Range: bytes=N-". A server that ignores the range (200 instead of 206) or
 * answers 416 makes the download start again from zero. Only a complete transfer (curl saw
 * every byte the server announced) is renamed to DEST.
 *
 * Offline (no network, DNS failure, connection refused, or opts.offline / env RAVLT_OFFLINE=1)
 * the error names the URL to fetch by hand and the path to put the file at.
 */
#ifndef RV_CORE_DOWNLOAD_H
#define RV_CORE_DOWNLOAD_H

#include "core/rv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* done: bytes of the file present so far (including a resumed part); total: file size, or
 * -1 while unknown. Return non-zero to cancel (the call then fails with
 * RV_ERR_INTERRUPTED and keeps the .part file for a later resume). */
typedef int (*rv_download_progress_fn)(void *user, int64_t done, int64_t total);

typedef struct {
  rv_download_progress_fn progress; /* may be NULL */
  void *user;
  int retries;          /* extra attempts (each resuming) after an interrupted transfer */
  long connect_timeout; /* seconds; 0 = 30 */
  long low_speed_time;  /* abort when under 1 byte/s for this many seconds; 0 = 60 */
  int offline;          /* 1: never connect (the env RAVLT_OFFLINE=1 does the same) */
} rv_download_opts;

/* $XDG_CACHE_HOME/ravlt, else $HOME/.cache/ravlt; created if missing (mkdir -p). */
rv_status rv_cache_dir(char *out, size_t cap, rv_ctx *ctx);

/* url -> dest (through dest.part). opts may be NULL. */
rv_status rv_download(const char *url, const char *dest, const rv_download_opts *opts, rv_ctx *ctx);

/* The cached, converted checkpoint for `file` (a .pth name) from `url`:
 *   <dir>/<stem>.safetensors exists -> its path, no network;
 *   else <dir>/<file> is downloaded unless present, checked by loading it (a file that is
 *   not a valid checkpoint is deleted and the error says so), and converted once to
 *   <dir>/<stem>.safetensors (the .pth stays beside it).
 * out receives the safetensors path. */
rv_status rv_checkpoint_fetch(char *out, size_t cap, const char *url, const char *dir,
                              const char *file, const rv_download_opts *opts, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
