/* Input image lists for the CLI: explicit files, directories (optionally recursive) and
 * glob(3) patterns, each expansion sorted, duplicates dropped. */
#define _POSIX_C_SOURCE 200809L
#include "apps/inputs.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

typedef struct {
  char **v;
  int n, cap;
} strvec;

static int push(strvec *s, const char *p) {
  if (s->n == s->cap) {
    int cap = s->cap ? s->cap * 2 : 64;
    char **nv = realloc(s->v, sizeof *nv * (size_t)cap);
    if (!nv) return -1;
    s->v = nv;
    s->cap = cap;
  }
  char *d = strdup(p);
  if (!d) return -1;
  s->v[s->n++] = d;
  return 0;
}

static void strvec_free(strvec *s) {
  for (int i = 0; i < s->n; i++) free(s->v[i]);
  free(s->v);
  s->v = NULL;
  s->n = s->cap = 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int rv_inputs_is_image_name(const char *path) {
  static const char *const exts[] = {"jpg", "jpeg", "png", "bmp", "tif", "tiff", "webp", "ppm", "pgm"};
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  const char *dot = strrchr(base, '.');
  if (!dot || dot == base) return 0; /* no extension, or a hidden file like ".png" */
  for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
    if (strcasecmp(dot + 1, exts[i]) == 0) return 1;
  return 0;
}

/* Image files under dir (sorted by full path); recursive descends into subfolders. */
static rv_status list_dir(strvec *out, const char *dir, int recursive, int depth, rv_ctx *ctx) {
  if (depth > 32) return rv_error(ctx, RV_ERR_IO, "input %s: folders nested too deep", dir);
  DIR *d = opendir(dir);
  if (!d) return rv_error(ctx, RV_ERR_IO, "input %s: cannot list folder: %s", dir, strerror(errno));
  strvec files = {0}, subdirs = {0};
  rv_status st = RV_OK;
  struct dirent *e;
  size_t dl = strlen(dir);
  int sep = dl > 0 && dir[dl - 1] != '/';
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue; /* ., .., hidden files (and our own temp files) */
    size_t len = dl + 1 + strlen(e->d_name) + 1;
    char *full = malloc(len);
    if (!full) {
      st = rv_error(ctx, RV_ERR_NOMEM, "input %s: out of memory", dir);
      break;
    }
    snprintf(full, len, "%s%s%s", dir, sep ? "/" : "", e->d_name);
    struct stat sb;
    if (stat(full, &sb) == 0) {
      int r = 0;
      if (S_ISDIR(sb.st_mode)) {
        if (recursive) r = push(&subdirs, full);
      } else if (S_ISREG(sb.st_mode) && rv_inputs_is_image_name(full)) {
        r = push(&files, full);
      }
      if (r) st = rv_error(ctx, RV_ERR_NOMEM, "input %s: out of memory", dir);
    }
    free(full);
    if (st != RV_OK) break;
  }
  closedir(d);
  if (st == RV_OK) {
    if (files.n > 1) qsort(files.v, (size_t)files.n, sizeof *files.v, cmp_str);
    if (subdirs.n > 1) qsort(subdirs.v, (size_t)subdirs.n, sizeof *subdirs.v, cmp_str);
    for (int i = 0; i < files.n && st == RV_OK; i++)
      if (push(out, files.v[i])) st = rv_error(ctx, RV_ERR_NOMEM, "input %s: out of memory", dir);
    for (int i = 0; i < subdirs.n && st == RV_OK; i++)
      st = list_dir(out, subdirs.v[i], recursive, depth + 1, ctx);
  }
  strvec_free(&files);
  strvec_free(&subdirs);
  return st;
}

static int has_glob_chars(const char *s) { return strpbrk(s, "*?[") != NULL; }

static rv_status expand_one(strvec *out, const char *arg, int recursive, rv_ctx *ctx) {
  struct stat sb;
  if (stat(arg, &sb) == 0) {
    if (S_ISDIR(sb.st_mode)) {
      int before = out->n;
      RV_TRY(list_dir(out, arg, recursive, 0, ctx));
      if (out->n == before)
        return rv_error(ctx, RV_ERR_NOTFOUND, "input %s: folder has no image files%s", arg,
                        recursive ? "" : " (subfolders are not searched without --recursive)");
      return RV_OK;
    }
    if (push(out, arg)) return rv_error(ctx, RV_ERR_NOMEM, "input %s: out of memory", arg);
    return RV_OK;
  }
  if (!has_glob_chars(arg))
    return rv_error(ctx, RV_ERR_IO, "input %s: %s", arg, errno == ENOENT ? "no such file or folder" : strerror(errno));
  glob_t g;
  memset(&g, 0, sizeof g);
  int r = glob(arg, GLOB_ERR, NULL, &g); /* glob sorts its results */
  if (r == GLOB_NOMATCH) {
    globfree(&g);
    return rv_error(ctx, RV_ERR_NOTFOUND, "input %s: pattern matches no file", arg);
  }
  if (r != 0) {
    globfree(&g);
    return rv_error(ctx, RV_ERR_IO, "input %s: cannot expand the pattern", arg);
  }
  rv_status st = RV_OK;
  int added = 0;
  for (size_t i = 0; i < g.gl_pathc && st == RV_OK; i++) {
    if (stat(g.gl_pathv[i], &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
    if (push(out, g.gl_pathv[i])) st = rv_error(ctx, RV_ERR_NOMEM, "input %s: out of memory", arg);
    added++;
  }
  globfree(&g);
  if (st == RV_OK && added == 0)
    st = rv_error(ctx, RV_ERR_NOTFOUND, "input %s: pattern matches no regular file", arg);
  return st;
}

typedef struct {
  const char *s;
  int i;
} keyed;

static int by_str_then_index(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  int c = strcmp(x->s, y->s);
  return c ? c : x->i - y->i;
}

rv_status rv_inputs_collect(rv_input_list *out, char *const *args, int nargs, int recursive, rv_ctx *ctx) {
  out->paths = NULL;
  out->n = 0;
  if (nargs <= 0) return rv_error(ctx, RV_ERR_ARG, "no input images given");
  strvec v = {0};
  for (int i = 0; i < nargs; i++) {
    rv_status st = expand_one(&v, args[i], recursive, ctx);
    if (st != RV_OK) {
      strvec_free(&v);
      return st;
    }
  }
  /* drop duplicates, keeping the first occurrence and the order */
  keyed *k = malloc(sizeof *k * (size_t)(v.n ? v.n : 1));
  char *keep = calloc((size_t)(v.n ? v.n : 1), 1);
  if (!k || !keep) {
    free(k);
    free(keep);
    strvec_free(&v);
    return rv_error(ctx, RV_ERR_NOMEM, "inputs: out of memory");
  }
  for (int i = 0; i < v.n; i++) k[i] = (keyed){v.v[i], i};
  if (v.n > 1) qsort(k, (size_t)v.n, sizeof *k, by_str_then_index);
  for (int i = 0; i < v.n; i++)
    if (i == 0 || strcmp(k[i].s, k[i - 1].s) != 0) keep[k[i].i] = 1;
  int m = 0;
  for (int i = 0; i < v.n; i++) {
    if (keep[i]) v.v[m++] = v.v[i];
    else free(v.v[i]);
  }
  free(k);
  free(keep);
  if (m == 0) {
    free(v.v);
    return rv_error(ctx, RV_ERR_NOTFOUND, "no input images found");
  }
  out->paths = v.v;
  out->n = m;
  return RV_OK;
}

void rv_input_list_free(rv_input_list *list) {
  if (!list) return;
  for (int i = 0; i < list->n; i++) free(list->paths[i]);
  free(list->paths);
  list->paths = NULL;
  list->n = 0;
}
