/* Output pre-checks and signal handling of the CLI (apps/outputs.h). */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700 /* realpath */
#include "apps/outputs.h"

#include "apps/mpi_run.h"
#include "core/fs.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t g_sig, g_count, g_limit;
static struct sigaction g_old[3];
static const int SIGS[3] = {SIGINT, SIGTERM, SIGHUP};
static int g_installed;

static void on_signal(int sig) {
  if (g_count == 0) g_sig = sig;
  g_count++;
  if (g_count >= g_limit) _exit(128 + g_sig);
}

static void on_startup_signal(int sig) {
  g_sig = sig;
  _exit(128 + sig);
}

void rv_cli_stop_signals(sigset_t *set) {
  sigemptyset(set);
  for (int i = 0; i < 3; i++) sigaddset(set, SIGS[i]);
}

void rv_cli_signals_startup(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_startup_signal;
  sigemptyset(&sa.sa_mask);
  /* as rv_cli_signals_install does: also where the parent ignored them (a shell's
   * background job ignores SIGINT): a stop signal always stops the run */
  for (int i = 0; i < 3; i++) sigaction(SIGS[i], &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop;
  rv_cli_stop_signals(&stop);
  sigprocmask(SIG_UNBLOCK, &stop, NULL);
}

void rv_cli_signals_install(int extra) {
  g_sig = 0;
  g_count = 0;
  g_limit = 1 + (extra > 0 ? extra : 1);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; i++) sigaction(SIGS[i], &sa, &g_old[i]);
  g_installed = 1;
}

void rv_cli_signals_restore(void) {
  if (!g_installed) return;
  for (int i = 0; i < 3; i++) sigaction(SIGS[i], &g_old[i], NULL);
  g_installed = 0;
}

int rv_cli_stop_signal(void) { return g_sig; }

int rv_cli_signal_exit_code(int rc) { return g_sig ? 128 + g_sig : rc; }

typedef struct {
  const char *out, *from;
} pair;

static int cmp_pair(const void *a, const void *b) {
  const pair *x = a, *y = b;
  int c = strcmp(x->out, y->out);
  return c ? c : (x < y ? -1 : x > y);
}

static void folder_of(char *dir, size_t n, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, n, ".");
  else if (slash == path) snprintf(dir, n, "/");
  else snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

rv_status rv_cli_outputs_check(const char *const *outs, const char *const *from, int n,
                               const char *const *inputs, int nin, rv_ctx *ctx) {
  /* an output over an input */
  struct stat *ins = calloc((size_t)(nin > 0 ? nin : 1), sizeof *ins);
  if (!ins) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  int *have = calloc((size_t)(nin > 0 ? nin : 1), sizeof *have);
  if (!have) {
    free(ins);
    return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; i < nin; i++) have[i] = inputs[i] && stat(inputs[i], &ins[i]) == 0;
  rv_status st = RV_OK;
  char last_dir[4096] = "";
  for (int k = 0; k < n && st == RV_OK; k++) {
    if (!outs[k] || !strcmp(outs[k], "-")) continue;
    struct stat so;
    if (stat(outs[k], &so) == 0) {
      for (int i = 0; i < nin; i++) {
        if (have[i] && ins[i].st_dev == so.st_dev && ins[i].st_ino == so.st_ino && S_ISREG(so.st_mode)) {
          st = rv_error(ctx, RV_ERR_ARG, "%s is the input %s: refusing to write over an input", outs[k], inputs[i]);
          break;
        }
      }
    }
    if (st == RV_OK) st = rv_out_check(outs[k], ctx);
    char target[4096], dir[4096];
    if (st == RV_OK && rv_out_target(target, sizeof target, outs[k]) == 0) {
      folder_of(dir, sizeof dir, target);
      /* temporaries of killed runs (a live run's, on any host, are locked: kept) */
      if (strcmp(dir, last_dir) != 0) {
        rv_out_sweep(dir);
        snprintf(last_dir, sizeof last_dir, "%s", dir);
      }
    }
  }
  free(ins);
  free(have);
  if (st != RV_OK || !from || n < 2) return st;
  /* two inputs, one output name */
  pair *p = malloc(sizeof *p * (size_t)n);
  if (!p) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  int m = 0;
  for (int k = 0; k < n; k++)
    if (outs[k] && strcmp(outs[k], "-")) p[m++] = (pair){outs[k], from[k]};
  qsort(p, (size_t)m, sizeof *p, cmp_pair);
  char msg[900] = "";
  size_t len = 0;
  int clashes = 0;
  for (int k = 1; k < m; k++) {
    if (strcmp(p[k].out, p[k - 1].out) || !strcmp(p[k].from, p[k - 1].from)) continue;
    if (clashes++ < 4 && len < sizeof msg)
      len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s and %s would both write %s", clashes > 1 ? "; " : "",
                              p[k - 1].from, p[k].from, p[k].out);
  }
  free(p);
  if (clashes)
    return rv_error(ctx, RV_ERR_ARG, "%d output name clash(es), nothing written: %s%s (give inputs distinct file names, "
                    "or run them into different output folders)", clashes, msg, clashes > 4 ? "; ..." : "");
  return RV_OK;
}

void rv_cli_sibling_path(char *out, size_t n, const char *path, const char *suffix) {
  size_t l = strlen(path);
  if (l > 5 && !strcmp(path + l - 5, ".json")) snprintf(out, n, "%.*s%s", (int)(l - 5), path, suffix);
  else snprintf(out, n, "%s%s", path, suffix);
}

/* ---- the declarations ---------------------------------------------------------------- */

#define IMAGES "jpg|jpeg|png|bmp|tif|tiff|webp|ppm|pgm" /* what rv_inputs_collect lists */
#define PART_FILES ".json|.segm.json|.shard.json"       /* a COCO part: results, masks, sidecar */

/* Every path a command takes; RV_IO_NONE marks a string option that is not a path (so that
 * tests/unit/apps/test_opts.c can require every string option to be declared). */
static const rv_io_decl DECLS[] = {
    {"segment", "#*", RV_IO_IN, NULL, IMAGES},
    {"segment", "--weights", RV_IO_IN, NULL, NULL},
    {"segment", "--model", RV_IO_NONE, NULL, NULL},
    {"segment", "--out-dir", RV_IO_OUT_DIR, NULL, NULL},
    {"segment", "--shard", RV_IO_NONE, NULL, NULL},
    {"detect", "#*", RV_IO_IN, NULL, IMAGES},
    {"detect", "--weights", RV_IO_IN, NULL, NULL},
    {"detect", "--model", RV_IO_NONE, NULL, NULL},
    {"detect", "--out-dir", RV_IO_OUT_DIR, NULL, NULL},
    {"detect", "--json", RV_IO_OUT, ".segm.json|.shard.json", NULL},
    {"detect", "--ann", RV_IO_IN, NULL, NULL},
    {"detect", "--shard", RV_IO_NONE, NULL, NULL},
    {"video", "#*", RV_IO_IN, NULL, NULL},
    {"video", "--weights", RV_IO_IN, NULL, NULL},
    {"video", "--model", RV_IO_NONE, NULL, NULL},
    {"video", "--output", RV_IO_OUT, NULL, NULL},
    {"video", "--out-dir", RV_IO_OUT_DIR, NULL, NULL},
    {"video", "--json", RV_IO_OUT, NULL, NULL},
    {"eval coco", "--ann", RV_IO_IN, NULL, NULL},
    {"eval coco", "--results", RV_IO_IN, NULL, NULL},
    {"eval coco", "--json", RV_IO_OUT, ".segm.json", NULL},
    {"eval coco", "--images", RV_IO_IN, NULL, IMAGES},
    {"eval coco", "--weights", RV_IO_IN, NULL, NULL},
    {"eval coco", "--model", RV_IO_NONE, NULL, NULL},
    {"eval coco", "--output", RV_IO_OUT, ".segm.json|.shard.json", NULL},
    {"eval coco", "--shard", RV_IO_NONE, NULL, NULL},
    {"eval coco", "--report", RV_IO_OUT, NULL, NULL},
    {"eval coco", "--report-json", RV_IO_OUT, ".segm.json", NULL},
    {"eval coco", "--compare", RV_IO_IN, NULL, NULL},
    {"eval ade20k", "--pred-dir", RV_IO_IN, NULL, "png"},
    {"eval ade20k", "--gt-dir", RV_IO_IN, NULL, "png"},
    {"eval ade20k", "--root", RV_IO_IN, NULL, "jpg|png"},
    {"eval ade20k", "--json", RV_IO_OUT, NULL, NULL},
    {"eval ade20k", "--weights", RV_IO_IN, NULL, NULL},
    {"eval ade20k", "--model", RV_IO_NONE, NULL, NULL},
    {"eval ade20k", "--out-dir", RV_IO_OUT_DIR, NULL, NULL},
    {"eval ade20k", "--output", RV_IO_OUT, NULL, NULL},
    {"eval ade20k", "--shard", RV_IO_NONE, NULL, NULL},
    {"eval ade20k", "--report", RV_IO_OUT, NULL, NULL},
    {"eval ade20k", "--report-json", RV_IO_OUT, NULL, NULL},
    {"eval ade20k", "--images", RV_IO_IN, NULL, "jpg"},
    {"classify", "#*", RV_IO_IN, NULL, IMAGES},
    {"classify", "--weights", RV_IO_IN, NULL, NULL},
    {"classify", "--json", RV_IO_OUT, NULL, NULL},
    {"convert", "#1", RV_IO_IN, NULL, NULL},
    {"convert", "#2", RV_IO_OUT, NULL, NULL},
    {"info", "#1", RV_IO_IN, NULL, NULL},
    {"info", "--json", RV_IO_OUT, NULL, NULL},
    {"bench", "#1", RV_IO_IN, NULL, NULL},
    {"bench", "--weights", RV_IO_IN, NULL, NULL},
    {"bench", "--name", RV_IO_NONE, NULL, NULL},
    {"bench", "--json", RV_IO_OUT, NULL, NULL},
    {"check-fixture", "#1", RV_IO_IN, NULL, NULL},
    {"rank", "#1", RV_IO_IN, NULL, NULL},
    {"rank", "--weights", RV_IO_IN, NULL, NULL},
    {"rank", "--json", RV_IO_OUT, NULL, NULL},
    {"rank", "--plot", RV_IO_OUT, NULL, NULL},
    {"rank", "--block", RV_IO_NONE, NULL, NULL},
    {"models", "--json", RV_IO_OUT, NULL, NULL},
    {"synth", "--out-dir", RV_IO_OUT_DIR, NULL, NULL},
    {"synth", "--backgrounds", RV_IO_IN, NULL, IMAGES},
    {"synth", "--raw", RV_IO_OUT, NULL, NULL},
    {"synth", "--shapes", RV_IO_NONE, NULL, NULL},
    {"synth", "--split", RV_IO_NONE, NULL, NULL},
    {"merge", "#*", RV_IO_IN, PART_FILES, NULL},
    {"merge", "--ann", RV_IO_IN, NULL, NULL},
    {"merge", "--output", RV_IO_OUT, ".segm.json", NULL},
    {"merge", "--json", RV_IO_OUT, ".segm.json", NULL},
    {"serve", "--host", RV_IO_NONE, NULL, NULL},
    {"serve", "--token-file", RV_IO_IN, NULL, NULL},
    {"serve", "--tls-cert", RV_IO_IN, NULL, NULL},
    {"serve", "--tls-key", RV_IO_IN, NULL, NULL},
    {NULL, NULL, RV_IO_NONE, NULL, NULL},
};

const rv_io_decl *rv_cli_io_decls(void) { return DECLS; }

const rv_io_decl *rv_cli_io_decl(const char *cmd, const char *arg) {
  for (const rv_io_decl *d = DECLS; d->cmd; d++)
    if (!strcmp(d->cmd, cmd) && !strcmp(d->arg, arg)) return d;
  return NULL;
}

/* ---- the check ------------------------------------------------------------------------- */

typedef struct {
  const char *name; /* as the user gave it (or a sibling's name, in names[]) */
  struct stat sb;
  const char *exts; /* a folder: the files read in it */
} io_in;

typedef struct {
  io_in *in;
  int nin, cap_in;
  char **names; /* siblings' names (owned) */
  int nnames, cap_names;
} io_set;

static const char *keep_name(io_set *s, const char *a, const char *b) {
  if (s->nnames == s->cap_names) {
    int nc = s->cap_names ? 2 * s->cap_names : 16;
    char **nn = realloc(s->names, sizeof *nn * (size_t)nc);
    if (!nn) return NULL;
    s->names = nn;
    s->cap_names = nc;
  }
  size_t n = strlen(a) + strlen(b) + 1;
  char *p = malloc(n);
  if (!p) return NULL;
  snprintf(p, n, "%s%s", a, b);
  return s->names[s->nnames++] = p;
}

static int add_in(io_set *s, const char *name, const char *exts) {
  struct stat sb;
  if (stat(name, &sb) != 0) return 0; /* not a file ("demo", a preset, a URL): nothing to protect */
  if (s->nin == s->cap_in) {
    int nc = s->cap_in ? 2 * s->cap_in : 16;
    io_in *ni = realloc(s->in, sizeof *ni * (size_t)nc);
    if (!ni) return -1;
    s->in = ni;
    s->cap_in = nc;
  }
  s->in[s->nin++] = (io_in){name, sb, exts};
  return 0;
}

/* 1 if s ends with suffix */
static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

/* an input and the files read with it: BASE + each suffix, BASE the path without the
 * longest of those suffixes it ends with */
static int add_in_with_siblings(io_set *s, const char *path, const char *exts, const char *siblings) {
  if (add_in(s, path, exts)) return -1;
  if (!siblings) return 0;
  char list[256], base[PATH_MAX];
  snprintf(list, sizeof list, "%s", siblings);
  size_t cut = 0;
  for (char *save = NULL, *t = strtok_r(list, "|", &save); t; t = strtok_r(NULL, "|", &save))
    if (ends_with(path, t) && strlen(t) > cut) cut = strlen(t);
  snprintf(base, sizeof base, "%.*s", (int)(strlen(path) - cut), path);
  snprintf(list, sizeof list, "%s", siblings);
  for (char *save = NULL, *t = strtok_r(list, "|", &save); t; t = strtok_r(NULL, "|", &save)) {
    const char *nm = keep_name(s, base, t);
    if (!nm || add_in(s, nm, exts)) return -1;
  }
  return 0;
}

static int has_ext(const char *path, const char *exts) {
  if (!exts) return 1;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  if (!dot || dot == base) return 0;
  char list[256];
  snprintf(list, sizeof list, "%s", exts);
  for (char *save = NULL, *t = strtok_r(list, "|", &save); t; t = strtok_r(NULL, "|", &save))
    if (!strcasecmp(dot + 1, t)) return 1;
  return 0;
}

/* 1 if folder dir holds (at any depth) a file with exts of device / inode *so: a hard link
 * to a file the command reads, from outside the folder */
static int dir_holds(const char *dir, const char *exts, const struct stat *so, int depth) {
  DIR *d = depth < 16 ? opendir(dir) : NULL;
  if (!d) return 0;
  int found = 0;
  struct dirent *e;
  while (!found && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
    struct stat sb;
    if (lstat(p, &sb) != 0) continue;
    if (S_ISDIR(sb.st_mode)) found = dir_holds(p, exts, so, depth + 1);
    else if (stat(p, &sb) == 0 && sb.st_dev == so->st_dev && sb.st_ino == so->st_ino && has_ext(p, exts)) found = 1;
  }
  closedir(d);
  return found;
}

/* out is an existing regular file: is it one of the inputs, or a file an input folder's
 * reading takes? */
static rv_status check_out(const io_set *s, const char *out, rv_ctx *ctx) {
  struct stat so;
  if (!out || !strcmp(out, "-") || stat(out, &so) != 0 || !S_ISREG(so.st_mode)) return RV_OK;
  for (int i = 0; i < s->nin; i++)
    if (!S_ISDIR(s->in[i].sb.st_mode) && s->in[i].sb.st_dev == so.st_dev && s->in[i].sb.st_ino == so.st_ino)
      return rv_error(ctx, RV_ERR_ARG, "%s is the input %s: refusing to write over an input", out, s->in[i].name);
  char real[PATH_MAX], file[PATH_MAX];
  if (!realpath(out, real)) return RV_OK;
  snprintf(file, sizeof file, "%s", real); /* the name the folder's listing would take it by */
  for (char *slash = strrchr(real, '/'); slash; slash = strrchr(real, '/')) {
    *slash = 0; /* the next folder up */
    struct stat sd;
    if (stat(*real ? real : "/", &sd) != 0) break;
    for (int i = 0; i < s->nin; i++)
      if (S_ISDIR(s->in[i].sb.st_mode) && s->in[i].sb.st_dev == sd.st_dev && s->in[i].sb.st_ino == sd.st_ino &&
          has_ext(file, s->in[i].exts))
        return rv_error(ctx, RV_ERR_ARG, "%s is an input (a file of the input folder %s): refusing to write over an input",
                        out, s->in[i].name);
    if (!*real) break;
  }
  if (so.st_nlink > 1) /* another name elsewhere: one inside an input folder? */
    for (int i = 0; i < s->nin; i++)
      if (S_ISDIR(s->in[i].sb.st_mode) && dir_holds(s->in[i].name, s->in[i].exts, &so, 0))
        return rv_error(ctx, RV_ERR_ARG, "%s is an input (a hard link to a file of the input folder %s): refusing to "
                        "write over an input", out, s->in[i].name);
  return RV_OK;
}

static void sweep_folder_of(const char *path, int is_dir) {
  char target[4096], dir[4096];
  if (!path || !strcmp(path, "-")) return;
  if (is_dir) {
    rv_out_sweep(path);
    return;
  }
  if (rv_out_target(target, sizeof target, path) != 0) return;
  folder_of(dir, sizeof dir, target);
  rv_out_sweep(dir);
}

/* The value of a declaration on this command line: an option's string, positional k. */
static const char *decl_value(const rv_cmd_spec *spec, const void *dst, const rv_io_decl *d, char *const *pos,
                              int npos) {
  if (d->arg[0] == '#') {
    int k = atoi(d->arg + 1);
    return k >= 1 && k <= npos ? pos[k - 1] : NULL;
  }
  if (!dst) return NULL;
  for (const rv_opt *o = spec->opts; o && o->name; o++)
    if (!strcmp(o->name, d->arg) && o->kind == RV_OPT_STR) return *(const char *const *)((const char *)dst + o->offset);
  return NULL;
}

rv_status rv_cli_io_check(const rv_cmd_spec *spec, const void *dst, char *const *pos, int npos, rv_ctx *ctx) {
  io_set s = {0};
  rv_status st = RV_OK;
  int oom = 0;
  /* the inputs */
  for (const rv_io_decl *d = DECLS; d->cmd && !oom; d++) {
    if (strcmp(d->cmd, spec->name) || d->role != RV_IO_IN) continue;
    if (!strcmp(d->arg, "#*")) {
      for (int k = 0; k < npos && !oom; k++) {
        char num[16];
        snprintf(num, sizeof num, "#%d", k + 1);
        if (rv_cli_io_decl(spec->name, num)) continue; /* declared on its own */
        oom = add_in_with_siblings(&s, pos[k], d->dir_exts, d->siblings) != 0;
      }
      continue;
    }
    const char *v = decl_value(spec, dst, d, pos, npos);
    if (v && strcmp(v, "-")) oom = add_in_with_siblings(&s, v, d->dir_exts, d->siblings) != 0;
  }
  /* the outputs, each with the files written beside it */
  for (const rv_io_decl *d = DECLS; d->cmd && !oom && st == RV_OK; d++) {
    if (strcmp(d->cmd, spec->name) || (d->role != RV_IO_OUT && d->role != RV_IO_OUT_DIR)) continue;
    const char *v = decl_value(spec, dst, d, pos, npos);
    if (!v || d->role == RV_IO_OUT_DIR) continue;
    st = check_out(&s, v, ctx);
    if (!d->siblings || !strcmp(v, "-")) continue;
    char list[256];
    snprintf(list, sizeof list, "%s", d->siblings);
    for (char *save = NULL, *t = strtok_r(list, "|", &save); t && st == RV_OK; t = strtok_r(NULL, "|", &save)) {
      char sib[PATH_MAX];
      rv_cli_sibling_path(sib, sizeof sib, v, t);
      st = check_out(&s, sib, ctx);
    }
  }
  if (oom && st == RV_OK) st = rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  /* the temporaries of killed runs, where this command writes */
  for (const rv_io_decl *d = DECLS; d->cmd && st == RV_OK; d++) {
    if (strcmp(d->cmd, spec->name) || (d->role != RV_IO_OUT && d->role != RV_IO_OUT_DIR)) continue;
    sweep_folder_of(decl_value(spec, dst, d, pos, npos), d->role == RV_IO_OUT_DIR);
  }
  free(s.in);
  for (int i = 0; i < s.nnames; i++) free(s.names[i]);
  free(s.names);
  return st;
}
