/* The option parser of every `ravlt` command (apps/opts.h). */
#include "apps/opts.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The global options: an rv_opts_globals destination. */
static const rv_opt GLOBALS[] = {
    {"--quiet", "-q", RV_OPT_FLAG, offsetof(rv_opts_globals, quiet), 0, 0, NULL, NULL,
     "only warnings and errors on stderr", 0},
    {"--verbose", "-v", RV_OPT_FLAG, offsetof(rv_opts_globals, verbose), 0, 0, NULL, NULL,
     "debug messages: timings, the model's architecture source, OpenCV's warnings", 0},
    {"--threads", NULL, RV_OPT_INT, offsetof(rv_opts_globals, threads), 0, 4096, NULL, "N",
     "threads (default 0: all cores)", 0},
    {"--max-pixels", NULL, RV_OPT_LONG, offsetof(rv_opts_globals, max_pixels), 1, 1e15, NULL, "N",
     "refuse input images of more than N pixels, read from the file's header before decoding\n"
     "(default 134217728 = 2^27)", 0},
    RV_OPT_END};

int rv_opts_parse_long(const char *s, long lo, long hi, long *out) {
  if (!s || !*s) return -1;
  const char *p = s;
  if (*p == '+' || *p == '-') p++;
  if (*p < '0' || *p > '9') return -1; /* no leading blanks, a digit first */
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*end || errno == ERANGE || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int rv_opts_parse_double(const char *s, double lo, double hi, int open, double *out) {
  if (!s || !*s) return -1;
  const char *p = s;
  if (*p == '+' || *p == '-') p++;
  if (!((*p >= '0' && *p <= '9') || *p == '.')) return -1; /* no inf, nan, hex floats, blanks */
  for (const char *q = p; *q; q++)
    if (*q == 'x' || *q == 'X') return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno == ERANGE || !isfinite(v)) return -1;
  if (v < lo || v > hi) return -1;
  if ((open & RV_OPT_OPEN_LO) && v == lo) return -1;
  if ((open & RV_OPT_OPEN_HI) && v == hi) return -1;
  *out = v;
  return 0;
}

int rv_opts_parse_size(const char *s, int lo, int hi, int hw[2]) {
  if (!s) return -1;
  const char *x = strchr(s, 'x');
  if (!x) x = strchr(s, 'X');
  long h, w;
  char a[32];
  if (x) {
    size_t n = (size_t)(x - s);
    if (n == 0 || n >= sizeof a) return -1;
    memcpy(a, s, n);
    a[n] = 0;
    if (a[0] == '+' || a[0] == '-' || x[1] == '+' || x[1] == '-') return -1;
    if (rv_opts_parse_long(a, lo, hi, &h) || rv_opts_parse_long(x + 1, lo, hi, &w)) return -1;
  } else {
    if (s[0] == '+' || s[0] == '-' || rv_opts_parse_long(s, lo, hi, &h)) return -1;
    w = h;
  }
  hw[0] = (int)h;
  hw[1] = (int)w;
  return 0;
}

static int fail(rv_opts_result *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err, sizeof r->err, fmt, ap);
  va_end(ap);
  return 2;
}

/* "between 0 and 1", "0 or more", ... for an error message. */
static void range_words(char *buf, size_t n, const rv_opt *o) {
  const char *lb = (o->flags & RV_OPT_OPEN_LO) ? "(" : "[", *rb = (o->flags & RV_OPT_OPEN_HI) ? ")" : "]";
  switch (o->kind) {
  case RV_OPT_INT:
  case RV_OPT_LONG: snprintf(buf, n, "an integer in %.0f..%.0f", o->lo, o->hi); break;
  case RV_OPT_U64: snprintf(buf, n, "a non-negative integer"); break;
  case RV_OPT_DOUBLE: snprintf(buf, n, "a number in %s%g, %g%s", lb, o->lo, o->hi, rb); break;
  case RV_OPT_SIZE: snprintf(buf, n, "HxW (height first) or N, sides in %.0f..%.0f", o->lo, o->hi); break;
  default: buf[0] = 0;
  }
}

static int choice_ok(const char *choices, const char *v) {
  size_t lv = strlen(v);
  for (const char *p = choices; p && *p;) {
    const char *bar = strchr(p, '|');
    size_t l = bar ? (size_t)(bar - p) : strlen(p);
    if (l == lv && !strncmp(p, v, l)) return 1;
    if (!bar) break;
    p = bar + 1;
  }
  return 0;
}

/* Store value v of option o (as spelt: name) into base; 0 or 2. */
static int store(const rv_opt *o, const char *name, const char *v, char *base, rv_opts_result *r) {
  void *d = base + o->offset;
  char words[96];
  switch (o->kind) {
  case RV_OPT_FLAG: *(int *)d = 1; return 0;
  case RV_OPT_STR: *(const char **)d = v; return 0;
  case RV_OPT_LIST: {
    rv_opt_list *l = d;
    if (l->n >= RV_OPT_LIST_MAX) return fail(r, "%s: at most %d of them", name, RV_OPT_LIST_MAX);
    l->v[l->n++] = v;
    return 0;
  }
  case RV_OPT_CHOICE:
    if (!choice_ok(o->choices, v)) { /* "a|b|c" -> "a, b or c" */
      char list[128];
      size_t n = 0;
      const char *last = strrchr(o->choices, '|');
      for (const char *p = o->choices; *p && n + 4 < sizeof list; p++) {
        if (*p != '|') { list[n++] = *p; continue; }
        const char *sep = p == last ? " or " : ", ";
        size_t l = strlen(sep);
        if (n + l + 1 >= sizeof list) break;
        memcpy(list + n, sep, l);
        n += l;
      }
      list[n] = 0;
      return fail(r, "%s must be %s, not '%s'", name, list, v);
    }
    *(const char **)d = v;
    return 0;
  case RV_OPT_INT:
  case RV_OPT_LONG: {
    long x;
    if (rv_opts_parse_long(v, (long)o->lo, (long)o->hi, &x)) break;
    if (o->kind == RV_OPT_INT) *(int *)d = (int)x;
    else *(long *)d = x;
    return 0;
  }
  case RV_OPT_U64: {
    const char *p = v;
    if (!*p) break;
    for (; *p; p++)
      if (*p < '0' || *p > '9') break;
    if (*p) break;
    errno = 0;
    unsigned long long x = strtoull(v, NULL, 10);
    if (errno == ERANGE) break;
    *(unsigned long long *)d = x;
    return 0;
  }
  case RV_OPT_DOUBLE: {
    double x;
    if (rv_opts_parse_double(v, o->lo, o->hi, o->flags, &x)) break;
    *(double *)d = x;
    return 0;
  }
  case RV_OPT_SIZE: {
    int hw[2];
    if (rv_opts_parse_size(v, (int)o->lo, (int)o->hi, hw)) break;
    memcpy(d, hw, sizeof hw);
    return 0;
  }
  }
  range_words(words, sizeof words, o);
  return fail(r, "%s needs %s, not '%s'", name, words, v);
}

/* The entry of tab named a (name or alias), or NULL; *dep = 1 when a is the alias. */
static const rv_opt *find(const rv_opt *tab, const char *a, size_t len, int *dep) {
  for (const rv_opt *o = tab; o && o->name; o++) {
    if (strlen(o->name) == len && !strncmp(o->name, a, len)) { *dep = 0; return o; }
    if (o->alias && strlen(o->alias) == len && !strncmp(o->alias, a, len)) { *dep = 1; return o; }
  }
  return NULL;
}

int rv_opts_parse(const rv_cmd_spec *spec, void *dst, rv_opts_globals *g, int argc, char **argv,
                  rv_opts_result *res) {
  memset(res, 0, sizeof *res);
  for (const rv_opt *o = spec->opts; dst && o && o->name; o++) /* the table's defaults */
    if (o->def && o->kind != RV_OPT_FLAG && store(o, o->name, o->def, dst, res)) return 2;
  int npos = 0, only_pos = 0;
  for (int i = 1; i < argc; i++) {
    char *a = argv[i];
    if (only_pos || a[0] != '-' || a[1] == 0) {
      if (spec->max_pos >= 0 && npos >= spec->max_pos)
        return spec->max_pos == 0 ? fail(res, "unexpected argument '%s'", a)
                                  : fail(res, "unexpected argument '%s' (%d expected at most)", a, spec->max_pos);
      argv[npos++] = a; /* npos <= i - 1 < i: never overwrites what is still to be read */
      continue;
    }
    if (!strcmp(a, "--")) { only_pos = 1; continue; }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { res->help = 1; return 0; }
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    int dep = 0;
    char *base = dst;
    const rv_opt *o = find(spec->opts, a, len, &dep);
    if (!o && g) {
      o = find(GLOBALS, a, len, &dep);
      base = (char *)g;
      dep = 0; /* -q / -v are the short forms, not deprecated */
    }
    if (!o) {
      if (eq) return fail(res, "unknown option '%.*s'", (int)len, a);
      return fail(res, "unknown option '%s'", a);
    }
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(len < 60 ? len : 60), a);
    if (dep && res->n_deprecated < RV_OPTS_MAX_DEPRECATED) res->deprecated[res->n_deprecated++] = o;
    const char *v = NULL;
    if (o->kind == RV_OPT_FLAG) {
      if (eq) return fail(res, "%s takes no value (given '%s')", name, eq + 1);
    } else if (eq) {
      v = eq + 1;
    } else {
      if (i + 1 >= argc) return fail(res, "%s needs a value (%s)", name, o->metavar ? o->metavar : "a value");
      v = argv[++i];
    }
    int rc = store(o, name, v, base, res);
    if (rc) return rc;
  }
  res->npos = npos;
  return 0;
}

int rv_opts_is_option(const char *arg) { return arg[0] == '-' && arg[1] && strcmp(arg, "--"); }

int rv_opts_global_span(int argc, char **argv, int i) {
  const char *a = argv[i];
  const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
  int dep;
  const rv_opt *o = find(GLOBALS, a, eq ? (size_t)(eq - a) : strlen(a), &dep);
  return o && o->kind != RV_OPT_FLAG && !eq && i + 1 < argc ? 2 : 1;
}

int rv_opts_globals_end(int argc, char **argv, int i) {
  while (i < argc && rv_opts_is_option(argv[i])) i += rv_opts_global_span(argc, argv, i);
  return i < argc ? i : argc;
}

/* ---- help ---------------------------------------------------------------------------- */

#define HELP_COL 24

static void print_indented(FILE *f, const char *text, int col) {
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    fprintf(f, "%.*s\n", (int)l, p);
    if (!nl) break;
    p = nl + 1;
    if (*p) fprintf(f, "%*s", col, "");
  }
}

static void print_opts(FILE *f, const rv_opt *tab, int globals) {
  for (const rv_opt *o = tab; o->name; o++) {
    if (o->flags & RV_OPT_HIDDEN) continue;
    char head[128];
    int n;
    if (globals && o->alias) n = snprintf(head, sizeof head, "  %s, %s", o->alias, o->name);
    else n = snprintf(head, sizeof head, "  %s", o->name);
    if (o->metavar && n < (int)sizeof head) n += snprintf(head + n, sizeof head - (size_t)n, " %s", o->metavar);
    if (n > (int)sizeof head - 1) n = (int)sizeof head - 1;
    if (n <= HELP_COL - 2) fprintf(f, "%s%*s", head, HELP_COL - n, "");
    else fprintf(f, "%s\n%*s", head, HELP_COL, "");
    char help[2048];
    snprintf(help, sizeof help, "%s%s%s%s", o->help ? o->help : "", o->def ? " (default " : "", o->def ? o->def : "",
             o->def ? ")" : "");
    print_indented(f, help, HELP_COL);
    if (o->alias && !globals) fprintf(f, "%*s(old spelling %s: still accepted, deprecated)\n", HELP_COL, "", o->alias);
  }
}

void rv_opts_help_globals(FILE *f) { print_opts(f, GLOBALS, 1); }

void rv_opts_help(const rv_cmd_spec *spec, FILE *f) {
  const char *syn = spec->synopsis ? spec->synopsis : "";
  fprintf(f, "usage: ravlt %s ", spec->name);
  for (const char *p = syn; *p;) { /* more forms: "usage: ravlt NAME " again on each line */
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    fprintf(f, "%.*s\n", (int)l, p);
    if (!nl) break;
    p = nl + 1;
    if (*p) fprintf(f, "       ravlt %s ", spec->name);
  }
  if (!*syn) fputc('\n', f);
  if (spec->about) fprintf(f, "\n%s", spec->about);
  fprintf(f, "\noptions:\n");
  print_opts(f, spec->opts, 0);
  fprintf(f, "  --                    end of the options: what follows is an argument even if it starts with '-'\n");
  fprintf(f, "  -h, --help            this help\n");
  fprintf(f, "\ncommon options (before or after the command):\n");
  rv_opts_help_globals(f);
  if (spec->epilog) fprintf(f, "\n%s", spec->epilog);
  if (spec->examples) {
    fprintf(f, "\nExamples:\n");
    print_indented(f, spec->examples, 0);
  }
}
