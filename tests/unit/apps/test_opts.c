#define _GNU_SOURCE /* mkstemp, open_memstream */
/* The option parser of every command (apps/opts.h) and the option tables themselves:
 *  - parser rules: --opt value / --opt=value, flags, `--`, "-", unknown options, missing
 *    values, global options after the command, deprecated aliases, positional limits;
 *  - strict numbers: the whole string, in range;
 *  - table-driven: every numeric option of every command, given garbage or an out-of-range
 *    value, makes the command itself (rv_cmd_*) return 2 with a message naming the option
 *    and the value;
 *  - --help of every command is generated from its table (every option listed, Examples),
 *    and every example line parses with the table of the command it shows;
 *  - every `ravlt COMMAND ... --option` the README shows names a real command and options. */
#include "test_util.h"

#include "apps/cli.h"
#include "apps/opts.h"
#include "apps/outputs.h"

#include <ctype.h>
#include <fcntl.h>
#include <unistd.h>

/* ---- a table of every kind --------------------------------------------------------------- */
typedef struct {
  const char *name, *format;
  int flag, n, size[2];
  long big;
  double thr;
  unsigned long long seed;
} t_opts;

static const rv_opt T_OPTS[] = {
    {"--name", "--old-name", RV_OPT_STR, offsetof(t_opts, name), 0, 0, NULL, "S", "a string", 0},
    {"--format", NULL, RV_OPT_CHOICE, offsetof(t_opts, format), 0, 0, "png|overlay|both", "F", "a choice", 0},
    {"--flag", NULL, RV_OPT_FLAG, offsetof(t_opts, flag), 0, 0, NULL, NULL, "a flag", 0},
    {"--n", NULL, RV_OPT_INT, offsetof(t_opts, n), 1, 100, NULL, "N", "an int", 0},
    {"--big", NULL, RV_OPT_LONG, offsetof(t_opts, big), 0, 1e12, NULL, "N", "a long", 0},
    {"--thr", NULL, RV_OPT_DOUBLE, offsetof(t_opts, thr), 0, 1, NULL, "T", "a number", RV_OPT_OPEN_HI},
    {"--seed", NULL, RV_OPT_U64, offsetof(t_opts, seed), 0, 0, NULL, "S", "a seed", 0},
    {"--size", NULL, RV_OPT_SIZE, offsetof(t_opts, size), 16, 8192, NULL, "HxW", "a size", 0},
    RV_OPT_END};
static const rv_cmd_spec T_SPEC = {"t", "[options] FILE...", "About.\n", T_OPTS, 3, NULL, "  ravlt t --n 3 a\n", sizeof(t_opts)};

/* Parse a space-separated command line (argv[0] = "t"); argv strings live in buf. */
static int parse_line(const rv_cmd_spec *spec, void *dst, rv_opts_globals *g, const char *line, rv_opts_result *r,
                      char **argv, int *argc, char *buf, size_t cap) {
  snprintf(buf, cap, "%s", line);
  *argc = 0;
  for (char *tok = strtok(buf, " "); tok && *argc < 63; tok = strtok(NULL, " ")) argv[(*argc)++] = tok;
  argv[*argc] = NULL;
  return rv_opts_parse(spec, dst, g, *argc, argv, r);
}

static void test_parser_rules(void **state) {
  (void)state;
  char buf[512], *argv[64];
  int argc;
  rv_opts_result r;
  rv_opts_globals g = {0, 0, 0, 0};
  t_opts o;
  memset(&o, 0, sizeof o);
  /* --opt value, --opt=value, flags, positionals in order */
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t a --name=x --n 7 --thr=0.25 b --flag --size 480x640 --format both", &r, argv, &argc, buf, sizeof buf), 0);
  assert_string_equal(o.name, "x");
  assert_int_equal(o.n, 7);
  assert_true(o.thr == 0.25);
  assert_int_equal(o.flag, 1);
  assert_int_equal(o.size[0], 480); /* height first */
  assert_int_equal(o.size[1], 640);
  assert_string_equal(o.format, "both");
  assert_int_equal(r.npos, 2);
  assert_string_equal(argv[0], "a");
  assert_string_equal(argv[1], "b");
  assert_int_equal(r.help, 0);
  /* `--` ends the options: -x.jpg is a file; a lone - is positional */
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t - -- -x.jpg --n", &r, argv, &argc, buf, sizeof buf), 0);
  assert_int_equal(r.npos, 3);
  assert_string_equal(argv[0], "-");
  assert_string_equal(argv[1], "-x.jpg");
  assert_string_equal(argv[2], "--n");
  /* without `--` the same file is an unknown option */
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t -x.jpg", &r, argv, &argc, buf, sizeof buf), 2);
  assert_non_null(strstr(r.err, "unknown option '-x.jpg'"));
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t --nope=3", &r, argv, &argc, buf, sizeof buf), 2);
  assert_non_null(strstr(r.err, "unknown option '--nope'"));
  /* a flag takes no value; an option needs one */
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t --flag=1", &r, argv, &argc, buf, sizeof buf), 2);
  assert_non_null(strstr(r.err, "--flag takes no value"));
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t --n", &r, argv, &argc, buf, sizeof buf), 2);
  assert_non_null(strstr(r.err, "--n needs a value"));
  /* a value may start with '-' (then a range error names it) */
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t --n -5", &r, argv, &argc, buf, sizeof buf), 2);
  assert_non_null(strstr(r.err, "--n needs an integer in 1..100, not '-5'"));
  /* choices */
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t --format=jpeg", &r, argv, &argc, buf, sizeof buf), 2);
  assert_non_null(strstr(r.err, "--format must be png, overlay or both, not 'jpeg'"));
  /* global options after the command (and their short forms) */
  memset(&g, 0, sizeof g);
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t a -q --threads=3 -v", &r, argv, &argc, buf, sizeof buf), 0);
  assert_int_equal(g.quiet, 1);
  assert_int_equal(g.verbose, 1);
  assert_int_equal(g.threads, 3);
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t --threads x", &r, argv, &argc, buf, sizeof buf), 2);
  assert_non_null(strstr(r.err, "--threads needs an integer in 0..4096, not 'x'"));
  /* without a globals destination they are unknown */
  assert_int_equal(parse_line(&T_SPEC, &o, NULL, "t -q", &r, argv, &argc, buf, sizeof buf), 2);
  /* a deprecated alias works and is reported */
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t --old-name y", &r, argv, &argc, buf, sizeof buf), 0);
  assert_string_equal(o.name, "y");
  assert_int_equal(r.n_deprecated, 1);
  assert_string_equal(r.deprecated[0]->name, "--name");
  /* positional limit */
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t a b c d", &r, argv, &argc, buf, sizeof buf), 2);
  assert_non_null(strstr(r.err, "unexpected argument 'd'"));
  /* help anywhere */
  assert_int_equal(parse_line(&T_SPEC, &o, &g, "t a --help --n zz", &r, argv, &argc, buf, sizeof buf), 0);
  assert_int_equal(r.help, 1);
}

static void test_strict_numbers(void **state) {
  (void)state;
  long l;
  double d;
  int hw[2];
  assert_int_equal(rv_opts_parse_long("12", 0, 100, &l), 0);
  assert_int_equal(l, 12);
  const char *bad_long[] = {"", "abc", "12abc", " 12", "12 ", "0x10", "1e3", "+", "-", "101", "-1", "99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad_long / sizeof *bad_long; i++) assert_int_equal(rv_opts_parse_long(bad_long[i], 0, 100, &l), -1);
  assert_int_equal(rv_opts_parse_double("0.5", 0, 1, 0, &d), 0);
  assert_int_equal(rv_opts_parse_double(".5", 0, 1, 0, &d), 0);
  assert_int_equal(rv_opts_parse_double("1e-3", 0, 1, 0, &d), 0);
  assert_int_equal(rv_opts_parse_double("1", 0, 1, 0, &d), 0);
  const char *bad_d[] = {"", "abc", "0.5x", "nan", "inf", "-inf", "0x0.8p0", " 0.5", "1.5", "-0.1", "1e999", "e5"};
  for (size_t i = 0; i < sizeof bad_d / sizeof *bad_d; i++) assert_int_equal(rv_opts_parse_double(bad_d[i], 0, 1, 0, &d), -1);
  assert_int_equal(rv_opts_parse_double("1", 0, 1, RV_OPT_OPEN_HI, &d), -1);
  assert_int_equal(rv_opts_parse_double("0", 0, 1, RV_OPT_OPEN_LO, &d), -1);
  assert_int_equal(rv_opts_parse_size("480x640", 16, 8192, hw), 0);
  assert_int_equal(hw[0], 480);
  assert_int_equal(hw[1], 640);
  assert_int_equal(rv_opts_parse_size("512", 16, 8192, hw), 0);
  assert_int_equal(hw[1], 512);
  const char *bad_s[] = {"", "x", "480x", "x640", "480x640x2", "480*640", "-480x640", "480x-640", "480x+640", "8x640", "480x99999", "abc"};
  for (size_t i = 0; i < sizeof bad_s / sizeof *bad_s; i++) assert_int_equal(rv_opts_parse_size(bad_s[i], 16, 8192, hw), -1);
}

/* ---- table-driven: every numeric option of every command ------------------------------- */

/* Run a command's entry point with argv words; its stderr into err. */
static int run_cmd(rv_cmd_fn fn, char **argv, int argc, char *err, size_t cap) {
  char path[] = "/tmp/ravlt_test_opts_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  rv_cli_opts keep = rv_cli;
  int rc = fn(argc, argv);
  rv_cli = keep;
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  lseek(fd, 0, SEEK_SET);
  ssize_t n = read(fd, err, cap - 1);
  err[n > 0 ? n : 0] = 0;
  close(fd);
  unlink(path);
  return rc;
}

/* Bad values of option o: garbage always, and the values just outside its range. */
static int bad_values(const rv_opt *o, char vals[][64]) {
  int n = 0;
  snprintf(vals[n++], 64, "abc");
  snprintf(vals[n++], 64, "12abc");
  snprintf(vals[n++], 64, "%s", "");
  switch (o->kind) {
  case RV_OPT_INT:
  case RV_OPT_LONG:
    snprintf(vals[n++], 64, "%.0f", o->lo - 1);
    snprintf(vals[n++], 64, "%.0f", o->hi + 1);
    snprintf(vals[n++], 64, "1.5");
    break;
  case RV_OPT_DOUBLE:
    snprintf(vals[n++], 64, "%.17g", (o->flags & RV_OPT_OPEN_LO) ? o->lo : o->lo - 0.5);
    snprintf(vals[n++], 64, "%.17g", (o->flags & RV_OPT_OPEN_HI) ? o->hi : o->hi + 0.5);
    snprintf(vals[n++], 64, "nan");
    break;
  case RV_OPT_U64:
    snprintf(vals[n++], 64, "-1");
    snprintf(vals[n++], 64, "99999999999999999999999");
    break;
  case RV_OPT_SIZE:
    snprintf(vals[n++], 64, "%.0fx%.0f", o->lo - 1, o->lo);
    snprintf(vals[n++], 64, "%.0fx%.0f", o->lo, o->hi + 1);
    snprintf(vals[n++], 64, "%.0fx", o->lo);
    break;
  default: break;
  }
  return n;
}

static void test_numeric_options_of_every_command(void **state) {
  (void)state;
  int ncmd, checked = 0;
  const rv_cli_command *cmds = rv_cli_commands(&ncmd);
  assert_true(ncmd >= 13);
  for (int c = 0; c < ncmd; c++) {
    assert_non_null(cmds[c].fn);
    assert_non_null(cmds[c].specs[0]);
    for (int s = 0; cmds[c].specs[s]; s++) {
      const rv_cmd_spec *spec = cmds[c].specs[s];
      for (const rv_opt *o = spec->opts; o->name; o++) {
        if (o->kind == RV_OPT_FLAG || o->kind == RV_OPT_STR || o->kind == RV_OPT_CHOICE || o->kind == RV_OPT_LIST) continue;
        char vals[8][64];
        int nv = bad_values(o, vals);
        for (int v = 0; v < nv; v++) {
          for (int form = 0; form < 2; form++) { /* --opt value, --opt=value */
            char words[4][128], eq[768], *argv[8];
            int argc = 0;
            snprintf(words[0], sizeof words[0], "%s", spec->name); /* "eval coco": two words */
            char *sp = strchr(words[0], ' ');
            if (sp) *sp = 0;
            argv[argc++] = words[0];
            if (sp) argv[argc++] = sp + 1;
            if (form == 0) {
              argv[argc++] = (char *)o->name;
              argv[argc++] = vals[v];
            } else {
              snprintf(eq, sizeof eq, "%s=%s", o->name, vals[v]);
              argv[argc++] = eq;
            }
            argv[argc] = NULL;
            char err[2048], want[640];
            int rc = run_cmd(cmds[c].fn, argv, argc, err, sizeof err);
            if (rc != 2) fprintf(stderr, "%s %s '%s': exit %d, %s\n", spec->name, o->name, vals[v], rc, err);
            assert_int_equal(rc, 2);
            snprintf(want, sizeof want, "%s needs ", o->name);
            if (!strstr(err, want)) fprintf(stderr, "%s %s '%s': %s\n", spec->name, o->name, vals[v], err);
            assert_non_null(strstr(err, want));
            snprintf(want, sizeof want, "not '%s'", vals[v]);
            assert_non_null(strstr(err, want));
            checked++;
          }
        }
      }
    }
  }
  assert_true(checked > 100);
}

/* --precision on every inference command: the same choice row, bad values refused with
 * exit 2 and the choices named. */
static void test_precision_option(void **state) {
  (void)state;
  static const char *const with[] = {"segment", "detect", "video", "eval coco", "eval ade20k",
                                     "bench", "classify"};
  static const char *const bad[] = {"fp16", "BF16", "", "bf16x", "f64", "32"};
  int ncmd, found = 0;
  const rv_cli_command *cmds = rv_cli_commands(&ncmd);
  for (int c = 0; c < ncmd; c++)
    for (int s = 0; cmds[c].specs[s]; s++) {
      const rv_cmd_spec *spec = cmds[c].specs[s];
      int want = 0;
      for (size_t i = 0; i < sizeof with / sizeof *with; i++) want |= !strcmp(spec->name, with[i]);
      const rv_opt *o = spec->opts;
      while (o->name && strcmp(o->name, "--precision")) o++;
      if (!want) continue;
      if (!o->name) fprintf(stderr, "%s: no --precision\n", spec->name);
      assert_non_null(o->name);
      assert_int_equal(o->kind, RV_OPT_CHOICE);
      assert_string_equal(o->choices, "f32|bf16");
      found++;
      for (size_t v = 0; v < sizeof bad / sizeof *bad; v++) {
        char words[128], *argv[6], err[2048], want_msg[128];
        int argc = 0;
        snprintf(words, sizeof words, "%s", spec->name);
        char *sp = strchr(words, ' ');
        if (sp) *sp = 0;
        argv[argc++] = words;
        if (sp) argv[argc++] = sp + 1;
        argv[argc++] = (char *)"--precision";
        argv[argc++] = (char *)bad[v];
        argv[argc] = NULL;
        int rc = run_cmd(cmds[c].fn, argv, argc, err, sizeof err);
        if (rc != 2) fprintf(stderr, "%s --precision '%s': exit %d, %s\n", spec->name, bad[v], rc, err);
        assert_int_equal(rc, 2);
        snprintf(want_msg, sizeof want_msg, "--precision must be f32 or bf16, not '%s'", bad[v]);
        if (!strstr(err, want_msg)) fprintf(stderr, "%s: %s\n", spec->name, err);
        assert_non_null(strstr(err, want_msg));
      }
    }
  assert_int_equal(found, (int)(sizeof with / sizeof *with));
}

/* ---- the output rules' declarations (apps/outputs.c) ------------------------------------- */

/* Every string option of every command is declared in the output rules' table (an input, an
 * output, an output folder, or not a path), every declaration names an option the command
 * has (a string) or a positional it takes, and a command that takes positionals declares
 * them: a path a command adds is never outside the rule. */
static void test_io_declarations(void **state) {
  (void)state;
  int ncmd, nspec = 0;
  const rv_cli_command *cmds = rv_cli_commands(&ncmd);
  for (int c = 0; c < ncmd; c++)
    for (int s = 0; cmds[c].specs[s]; s++) {
      const rv_cmd_spec *spec = cmds[c].specs[s];
      nspec++;
      for (const rv_opt *o = spec->opts; o->name; o++) {
        if (o->kind != RV_OPT_STR) continue;
        const rv_io_decl *d = rv_cli_io_decl(spec->name, o->name);
        if (!d) fprintf(stderr, "%s %s: not declared in apps/outputs.c\n", spec->name, o->name);
        assert_non_null(d);
      }
      if (spec->max_pos != 0) {
        int any = rv_cli_io_decl(spec->name, "#*") || rv_cli_io_decl(spec->name, "#1");
        if (!any) fprintf(stderr, "%s: positionals not declared in apps/outputs.c\n", spec->name);
        assert_true(any);
      }
    }
  assert_true(nspec >= 14);
  for (const rv_io_decl *d = rv_cli_io_decls(); d->cmd; d++) {
    const rv_cmd_spec *spec = NULL;
    for (int c = 0; c < ncmd && !spec; c++)
      for (int s = 0; cmds[c].specs[s]; s++)
        if (!strcmp(cmds[c].specs[s]->name, d->cmd)) spec = cmds[c].specs[s];
    if (!spec) fprintf(stderr, "apps/outputs.c declares '%s', not a command\n", d->cmd);
    assert_non_null(spec);
    if (d->arg[0] == '#') {
      int k = d->arg[1] == '*' ? 1 : atoi(d->arg + 1);
      assert_true(k >= 1 && (spec->max_pos < 0 || k <= spec->max_pos));
      continue;
    }
    const rv_opt *o = spec->opts;
    while (o->name && strcmp(o->name, d->arg)) o++;
    if (!o->name) fprintf(stderr, "apps/outputs.c declares %s %s, not an option\n", d->cmd, d->arg);
    assert_non_null(o->name);
    assert_int_equal(o->kind, RV_OPT_STR);
  }
}

/* ---- help and examples --------------------------------------------------------------------- */

static const rv_cmd_spec *find_spec(const char *line, const char **rest) {
  int ncmd;
  const rv_cli_command *cmds = rv_cli_commands(&ncmd);
  const rv_cmd_spec *best = NULL;
  size_t best_len = 0;
  for (int c = 0; c < ncmd; c++)
    for (int s = 0; cmds[c].specs[s]; s++) {
      const char *nm = cmds[c].specs[s]->name;
      size_t l = strlen(nm);
      if (!strncmp(line, nm, l) && (line[l] == ' ' || line[l] == 0) && l > best_len) {
        best = cmds[c].specs[s];
        best_len = l;
      }
    }
  if (!best) {
    for (int c = 0; c < ncmd; c++) { /* `ravlt eval ...` with the dataset elided */
      size_t l = strlen(cmds[c].name);
      if (!strncmp(line, cmds[c].name, l) && (line[l] == ' ' || line[l] == 0 || line[l] == '`')) {
        best = cmds[c].specs[0];
        best_len = l;
      }
    }
  }
  if (rest) *rest = line + best_len;
  return best;
}

static int known_option(const rv_cmd_spec *spec, const char *word, size_t len) {
  static const char *const globals[] = {"--quiet", "--verbose", "--threads", "--help", "--version", "-q", "-v", "-h", "--"};
  for (size_t i = 0; i < sizeof globals / sizeof *globals; i++)
    if (strlen(globals[i]) == len && !strncmp(globals[i], word, len)) return 1;
  int ncmd;
  const rv_cli_command *cmds = rv_cli_commands(&ncmd);
  for (int c = 0; c < ncmd; c++) /* eval: the options of either dataset */
    for (int s = 0; cmds[c].specs[s]; s++) {
      const rv_cmd_spec *sp = cmds[c].specs[s];
      if (sp != spec && strncmp(sp->name, spec->name, strcspn(spec->name, " ")) != 0) continue;
      if (sp != spec && strchr(spec->name, ' ')) continue;
      for (const rv_opt *o = sp->opts; o->name; o++)
        if ((strlen(o->name) == len && !strncmp(o->name, word, len)) ||
            (o->alias && strlen(o->alias) == len && !strncmp(o->alias, word, len)))
          return 1;
    }
  return 0;
}

static void test_help_and_examples(void **state) {
  (void)state;
  int ncmd, lines = 0;
  const rv_cli_command *cmds = rv_cli_commands(&ncmd);
  for (int c = 0; c < ncmd; c++)
    for (int s = 0; cmds[c].specs[s]; s++) {
      const rv_cmd_spec *spec = cmds[c].specs[s];
      char *text = NULL;
      size_t len = 0;
      FILE *f = open_memstream(&text, &len);
      rv_opts_help(spec, f);
      fclose(f);
      for (const rv_opt *o = spec->opts; o->name; o++) {
        char want[96];
        snprintf(want, sizeof want, "  %s", o->name);
        if (!strstr(text, want)) fprintf(stderr, "%s --help lacks %s\n", spec->name, o->name);
        assert_non_null(strstr(text, want));
      }
      assert_non_null(strstr(text, "\nExamples:\n"));
      assert_non_null(strstr(text, "--threads N"));
      free(text);
      /* every example parses with the table of the command it shows */
      assert_non_null(spec->examples);
      char ex[2048];
      snprintf(ex, sizeof ex, "%s", spec->examples);
      for (char *line = strtok(ex, "\n"); line; line = strtok(NULL, "\n")) {
        char *p = strstr(line, "ravlt ");
        assert_non_null(p);
        char *cut = strstr(p, "  #");
        if (cut) *cut = 0;
        cut = strstr(p, " |");
        if (cut) *cut = 0;
        const char *rest;
        const rv_cmd_spec *es = find_spec(p + 6, &rest);
        if (!es) fprintf(stderr, "example of %s: unknown command in '%s'\n", spec->name, p);
        assert_non_null(es);
        char buf[1024], *argv[64];
        int argc = 1;
        argv[0] = (char *)es->name;
        snprintf(buf, sizeof buf, "%s", rest);
        for (char *q = buf; *q && argc < 63;) {
          while (*q == ' ') *q++ = 0;
          if (!*q) break;
          argv[argc++] = q;
          while (*q && *q != ' ') q++;
        }
        argv[argc] = NULL;
        void *dst = calloc(1, es->size ? es->size : 1);
        rv_opts_globals g = {0, 0, 0, 0};
        rv_opts_result r;
        int rc = rv_opts_parse(es, dst, &g, argc, argv, &r);
        if (rc) fprintf(stderr, "example '%s': %s\n", p, r.err);
        assert_int_equal(rc, 0);
        free(dst);
        lines++;
      }
    }
  assert_true(lines >= 20);
}

/* Every `ravlt CMD ...` in the README: CMD is a command and each --option after it one of
 * its options (or a common one). Fenced lines and inline `code` spans are checked. */
static void test_readme_command_lines(void **state) {
  (void)state;
  static const char *const pages[] = {"README.md", "docs/outputs.md"};
  int checked = 0, bad = 0;
  for (size_t pg = 0; pg < sizeof pages / sizeof *pages; pg++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/../../%s", RV_TEST_DATA, pages[pg]);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    while (fgets(line, sizeof line, f)) {
      for (char *p = line; (p = strstr(p, "ravlt ")) != NULL; p += 6) {
        if (p > line && (p[-1] == '/' || p[-1] == '_' || p[-1] == '-' || isalnum((unsigned char)p[-1]))) continue;
        char *q = p + 6;
        while (*q == ' ') q++;
        /* global options before the command */
        while (*q == '-') {
          size_t l = strcspn(q, " `");
          int takes = !strncmp(q, "--threads", 9) && l == 9;
          q += l;
          while (*q == ' ') q++;
          if (takes) {
            q += strcspn(q, " `");
            while (*q == ' ') q++;
          }
        }
        if (!(*q >= 'a' && *q <= 'z')) continue;
        const char *rest;
        const rv_cmd_spec *spec = find_spec(q, &rest);
        size_t wl = strcspn(q, " `.,;:)");
        /* prose such as "ravlt runs ..." is not a command line: only words that are commands */
        if (!spec) continue;
        (void)wl;
        /* the options up to the end of the code span / comment */
        size_t span = strcspn(rest, "`#|");
        char seg[2048];
        snprintf(seg, sizeof seg, "%.*s", (int)(span < sizeof seg - 1 ? span : sizeof seg - 1), rest);
        for (char *o = seg; (o = strstr(o, "--")) != NULL;) {
          if (o > seg && o[-1] != ' ' && o[-1] != '[' && o[-1] != '(') { o += 2; continue; }
          size_t l = 2 + strcspn(o + 2, " ]=)|,\n");
          if (l == 2) { o += 2; continue; } /* `--` itself */
          if (!known_option(spec, o, l)) {
            fprintf(stderr, "%s: '%.*s' is not an option of 'ravlt %s': %s", pages[pg], (int)l, o, spec->name, line);
            bad++;
          }
          checked++;
          o += l;
        }
      }
    }
    fclose(f);
  }
  assert_int_equal(bad, 0);
  assert_true(checked > 30);
}

/* rv_opt.def: stored before argv is read (argv still wins), shown by --help once. */
static void test_table_defaults(void **state) {
  (void)state;
  typedef struct {
    const char *out, *format;
    int n;
    double thr;
  } d_opts;
  static const rv_opt D_OPTS[] = {
      {"--out", NULL, RV_OPT_STR, offsetof(d_opts, out), 0, 0, NULL, "DIR", "output folder", 0, "seg-out"},
      {"--format", NULL, RV_OPT_CHOICE, offsetof(d_opts, format), 0, 0, "png|both", "F", "what", 0, "both"},
      {"--n", NULL, RV_OPT_INT, offsetof(d_opts, n), 1, 100, NULL, "N", "an int", 0, "5"},
      {"--thr", NULL, RV_OPT_DOUBLE, offsetof(d_opts, thr), 0, 1, NULL, "T", "a number\nover two lines", 0, "0.3"},
      RV_OPT_END};
  static const rv_cmd_spec D_SPEC = {"d", "[options]", NULL, D_OPTS, 0, NULL, "  ravlt d\n", sizeof(d_opts)};
  char buf[256], *argv[64];
  int argc;
  rv_opts_result r;
  d_opts o = {0};
  assert_int_equal(parse_line(&D_SPEC, &o, NULL, "d", &r, argv, &argc, buf, sizeof buf), 0);
  assert_string_equal(o.out, "seg-out");
  assert_string_equal(o.format, "both");
  assert_int_equal(o.n, 5);
  assert_true(o.thr == 0.3);
  memset(&o, 0, sizeof o);
  assert_int_equal(parse_line(&D_SPEC, &o, NULL, "d --n 7 --format png", &r, argv, &argc, buf, sizeof buf), 0);
  assert_int_equal(o.n, 7);
  assert_string_equal(o.format, "png");
  assert_string_equal(o.out, "seg-out");
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  rv_opts_help(&D_SPEC, f);
  fclose(f);
  assert_non_null(strstr(text, "output folder (default seg-out)\n"));
  assert_non_null(strstr(text, "an int (default 5)\n"));
  assert_non_null(strstr(text, "over two lines (default 0.3)\n")); /* after the last line */
  free(text);
  /* the commands' tables: a default is not also written in the help text */
  int n;
  const rv_cli_command *cmds = rv_cli_commands(&n);
  for (int c = 0; c < n; c++)
    for (const rv_cmd_spec *const *sp = cmds[c].specs; sp && *sp; sp++)
      for (const rv_opt *op = (*sp)->opts; op->name; op++)
        if (op->def && op->help) {
          char said[64];
          snprintf(said, sizeof said, "(default %s", op->def);
          if (strstr(op->help, said)) fail_msg("%s %s: the default is written in its help and its table", (*sp)->name, op->name);
        }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parser_rules),
      cmocka_unit_test(test_table_defaults),
      cmocka_unit_test(test_strict_numbers),
      cmocka_unit_test(test_numeric_options_of_every_command),
      cmocka_unit_test(test_precision_option),
      cmocka_unit_test(test_io_declarations),
      cmocka_unit_test(test_help_and_examples),
      cmocka_unit_test(test_readme_command_lines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
