/* Resumable downloads with libcurl into the user cache; one-time .pth -> safetensors
 * conversion of downloaded checkpoints (formats/download.h). */
#define _POSIX_C_SOURCE 200809L
#include "formats/download.h"
#include "core/fs.h"

#include "formats/weights.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

rv_status rv_cache_dir(char *out, size_t cap, rv_ctx *ctx) {
  RV_ASSERT(out && cap > 0);
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  int n;
  if (xdg && xdg[0] == '/') n = snprintf(out, cap, "%s/ravlt", xdg);  /* XDG: absolute only */
  else if (home && home[0]) n = snprintf(out, cap, "%s/.cache/ravlt", home);
  else return rv_error(ctx, RV_ERR_ARG, "no cache folder: neither XDG_CACHE_HOME nor HOME is set");
  if (n < 0 || (size_t)n >= cap) return rv_error(ctx, RV_ERR_ARG, "cache folder path too long");
  return rv_mkdirs(out, ctx);
}

static int64_t file_size(const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return -1;
  return (int64_t)sb.st_size;
}

static int env_offline(void) {
  const char *e = getenv("RAVLT_OFFLINE");
  return e && e[0] && strcmp(e, "0") != 0;
}

typedef struct {
  FILE *f;
  int64_t offset;  /* bytes already in the .part file when this transfer began */
  int64_t written; /* bytes written by this transfer */
  const rv_download_opts *o;
  int cancelled, write_failed;
} xfer;

static size_t on_data(char *p, size_t size, size_t n, void *user) {
  xfer *x = user;
  size_t len = size * n;
  if (fwrite(p, 1, len, x->f) != len) {
    x->write_failed = 1;
    return 0;
  }
  x->written += (int64_t)len;
  return len;
}

static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow) {
  (void)ultotal;
  (void)ulnow;
  xfer *x = user;
  if (!x->o || !x->o->progress) return 0;
  int64_t total = dltotal > 0 ? x->offset + (int64_t)dltotal : -1;
  if (x->o->progress(x->o->user, x->offset + (int64_t)dlnow, total)) {
    x->cancelled = 1;
    return 1;
  }
  return 0;
}

static rv_status offline_error(rv_ctx *ctx, const char *url, const char *dest, const char *why) {
  return rv_error(ctx, RV_ERR_IO,
                  "cannot download %s (%s): fetch it by hand and put it at %s "
                  "(or set RAVLT_BASE_URL to a mirror)", url, why, dest);
}

/* One transfer: appends to part from its current size. */
static CURLcode transfer(CURL *h, const char *url, xfer *x, long *http_code, char *errbuf) {
  const rv_download_opts *o = x->o;
  curl_easy_reset(h);
  errbuf[0] = 0;
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "ravlt/0.1");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, o && o->connect_timeout > 0 ? o->connect_timeout : 30L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, o && o->low_speed_time > 0 ? o->low_speed_time : 60L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
  if (x->offset > 0) curl_easy_setopt(h, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)x->offset);
  CURLcode rc = curl_easy_perform(h);
  *http_code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, http_code);
  return rc;
}

rv_status rv_download(const char *url, const char *dest, const rv_download_opts *opts, rv_ctx *ctx) {
  RV_ASSERT(url && dest);
  char part[4096];
  if (snprintf(part, sizeof part, "%s.part", dest) >= (int)sizeof part)
    return rv_error(ctx, RV_ERR_ARG, "%s: path too long", dest);
  if ((opts && opts->offline) || env_offline())
    return offline_error(ctx, url, dest, "offline mode");
  CURL *h = curl_easy_init();
  if (!h) return rv_error(ctx, RV_ERR_INTERNAL, "cannot start libcurl for %s", url);
  char errbuf[CURL_ERROR_SIZE];
  int retries = opts && opts->retries > 0 ? opts->retries : 0;
  int restarts = 0;
  rv_status st = RV_OK;
  for (int attempt = 0;; attempt++) {
    int64_t have = file_size(part);
    if (have < 0) have = 0;
    xfer x = {0};
    x.o = opts;
    x.offset = have;
    x.f = fopen(part, have > 0 ? "ab" : "wb");
    if (!x.f) {
      st = rv_error(ctx, RV_ERR_IO, "%s: cannot write: %s", part, strerror(errno));
      break;
    }
    long code = 0;
    CURLcode rc = transfer(h, url, &x, &code, errbuf);
    int close_failed = fclose(x.f) != 0;
    const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    if (rc == CURLE_OK && !close_failed) {
      if (rename(part, dest) != 0)
        st = rv_error(ctx, RV_ERR_IO, "%s: cannot rename to %s: %s", part, dest, strerror(errno));
      break;
    }
    if (x.write_failed || close_failed) {
      st = rv_error(ctx, RV_ERR_IO, "%s: write failed (disk full?)", part);
      break;
    }
    if (x.cancelled) {
      st = rv_error(ctx, RV_ERR_INTERRUPTED, "download of %s cancelled after %lld bytes (kept in %s)",
                    url, (long long)(x.offset + x.written), part);
      break;
    }
    /* The server cannot resume this part: start again from zero (once). */
    if (have > 0 && restarts == 0 &&
        (rc == CURLE_RANGE_ERROR || (rc == CURLE_HTTP_RETURNED_ERROR && code == 416))) {
      remove(part);
      restarts++;
      attempt--;
      continue;
    }
    if (file_size(part) == 0) remove(part);
    if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY ||
        rc == CURLE_COULDNT_CONNECT) {
      st = offline_error(ctx, url, dest, why);
      break;
    }
    if (rc == CURLE_HTTP_RETURNED_ERROR) {
      st = rv_error(ctx, code == 404 ? RV_ERR_NOTFOUND : RV_ERR_IO,
                    "cannot download %s: HTTP %ld: fetch it by hand and put it at %s", url, code, dest);
      break;
    }
    if (rc == CURLE_FILE_COULDNT_READ_FILE || rc == CURLE_REMOTE_FILE_NOT_FOUND) {
      st = rv_error(ctx, RV_ERR_NOTFOUND, "cannot download %s (%s): fetch it by hand and put it at %s",
                    url, why, dest);
      break;
    }
    if (attempt < retries) continue; /* interrupted: resume from what arrived */
    int64_t got = file_size(part);
    st = rv_error(ctx, RV_ERR_IO,
                  "download of %s interrupted after %lld bytes (%s): run again to resume "
                  "(partial data in %s), or fetch it by hand and put it at %s",
                  url, (long long)(got > 0 ? got : 0), why, part, dest);
    break;
  }
  curl_easy_cleanup(h);
  return st;
}

rv_status rv_checkpoint_fetch(char *out, size_t cap, const char *url, const char *dir,
                              const char *file, const rv_download_opts *opts, rv_ctx *ctx) {
  RV_ASSERT(out && url && dir && file);
  if (!file[0] || strchr(file, '/')) return rv_error(ctx, RV_ERR_ARG, "bad checkpoint file name '%s'", file);
  const char *dot = strrchr(file, '.');
  int stem = dot && dot != file ? (int)(dot - file) : (int)strlen(file);
  int is_st = dot && strcmp(dot, ".safetensors") == 0;
  char src[4096];
  int n1 = snprintf(out, cap, "%s/%.*s.safetensors", dir, stem, file);
  int n2 = snprintf(src, sizeof src, "%s/%s", dir, file);
  if (n1 < 0 || (size_t)n1 >= cap || n2 < 0 || (size_t)n2 >= sizeof src)
    return rv_error(ctx, RV_ERR_ARG, "%s: path too long", dir);
  if (!is_st && file_size(out) > 0) return RV_OK; /* converted before */
  RV_TRY(rv_mkdirs(dir, ctx));
  if (file_size(src) <= 0) RV_TRY(rv_download(url, src, opts, ctx));
  rv_weights *w = NULL;
  rv_status st = rv_weights_open(&w, src, ctx);
  if (st != RV_OK) {
    char why[512];
    snprintf(why, sizeof why, "%s", rv_ctx_errmsg(ctx));
    remove(src);
    return rv_error(ctx, RV_ERR_FORMAT,
                    "%s (from %s) is not a valid checkpoint, deleted it; run again to download it "
                    "anew [%s]", src, url, why);
  }
  if (!is_st) st = rv_safetensors_write(out, w, ctx);
  rv_weights_free(w);
  return st;
}
