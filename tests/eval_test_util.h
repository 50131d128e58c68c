/* Helpers shared by the evaluation tests (test_rle, test_cocoeval, test_segmetrics). */
#ifndef RV_TESTS_EVAL_TEST_UTIL_H
#define RV_TESTS_EVAL_TEST_UTIL_H

#include "test_util.h"
#include <cjson/cJSON.h>
#include <dirent.h>

static inline cJSON *load_json(const char *path) {
  char *s = test_read_text(path);
  if (!s) {
    fprintf(stderr, "missing fixture %s\n", path);
    return NULL;
  }
  cJSON *j = cJSON_Parse(s);
  free(s);
  return j;
}

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names of the subdirectories of dir whose name starts with prefix ("" = all). */
static inline int list_dirs(const char *dir, const char *prefix, char names[][256], int max) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  char *tmp[512];
  while ((e = readdir(d)) && n < max && n < 512) {
    if (e->d_name[0] == '.') continue;
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) continue;
    size_t l = strlen(e->d_name) + 1;
    tmp[n] = malloc(l);
    memcpy(tmp[n++], e->d_name, l);
  }
  closedir(d);
  qsort(tmp, (size_t)n, sizeof tmp[0], cmp_cstr);
  for (int i = 0; i < n; i++) {
    snprintf(names[i], 256, "%s", tmp[i]);
    free(tmp[i]);
  }
  return n;
}

#endif
