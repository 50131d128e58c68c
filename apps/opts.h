/* The one option parser of every `ravlt` command: each command describes its options in a
 * table (apps/cmd_<name>.c), the parser fills the command's option struct from argv and
 * --help is generated from the same table, so the help and the parser cannot disagree.
 *
 *   typedef struct { const char *weights; double thr; int draw_off; } det_opts;
 *   static const rv_opt OPTS[] = {
 *     {"--weights", 0, RV_OPT_STR, offsetof(det_opts, weights), .metavar = "W", .help = "checkpoint"},
 *     {"--score-thr", 0, RV_OPT_DOUBLE, offsetof(det_opts, thr), 0, 1, .metavar = "T", .help = "..."},
 *     RV_OPT_END};
 *   static const rv_cmd_spec SPEC = {"detect", "[options] IMAGE...", "About...", OPTS, -1, ...};
 *   det_opts o = {NULL, 0.3, 0};
 *   int npos, rc = rv_cli_parse(&SPEC, &o, argc, argv, &npos);
 *   if (rc >= 0) return rc;       // --help printed (0) or a usage error printed (2)
 *   // argv[0 .. npos-1] are now the positional arguments (IMAGE...)
 *
 * Rules (the same for every command):
 *   - `--opt value` and `--opt=value`; a flag takes no value; `--` ends the options (what
 *     follows is positional even when it starts with '-'); a lone "-" is positional;
 *   - numbers are parsed strictly: the whole string, within the table's range; garbage or
 *     out-of-range values are usage errors naming the option and the value;
 *   - the global options (-q/--quiet, -v/--verbose, --threads N, --max-pixels N) are accepted anywhere;
 *   - an entry's `alias` (an old spelling) is accepted with a one-line deprecation notice;
 *   - an entry's `def` is its default: stored before argv is read, shown by --help.
 */
#ifndef RV_APPS_OPTS_H
#define RV_APPS_OPTS_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
  RV_OPT_FLAG,   /* int = 1 */
  RV_OPT_STR,    /* const char * (points into argv) */
  RV_OPT_CHOICE, /* const char *, one of the '|'-separated words of .choices */
  RV_OPT_INT,    /* int in [lo, hi] */
  RV_OPT_LONG,   /* long in [lo, hi] */
  RV_OPT_U64,    /* unsigned long long (decimal digits only) */
  RV_OPT_DOUBLE, /* double in [lo, hi] (an end excluded with RV_OPT_OPEN_LO / _HI) */
  RV_OPT_SIZE,   /* int[2] {height, width} from "HxW" (height first) or "N" (square); sides in [lo, hi] */
  RV_OPT_LIST,   /* rv_opt_list: a repeatable option; each value appended (at most RV_OPT_LIST_MAX) */
} rv_opt_kind;

/* The destination of an RV_OPT_LIST option: the values in the order given (into argv). */
#define RV_OPT_LIST_MAX 32
typedef struct {
  int n;
  const char *v[RV_OPT_LIST_MAX];
} rv_opt_list;

enum { RV_OPT_OPEN_LO = 1, RV_OPT_OPEN_HI = 2, RV_OPT_HIDDEN = 4 };

typedef struct {
  const char *name;  /* "--score-thr" */
  const char *alias; /* deprecated old spelling ("--out"), or NULL */
  rv_opt_kind kind;
  size_t offset; /* of the destination in the command's option struct */
  double lo, hi; /* numbers: the accepted range */
  const char *choices; /* RV_OPT_CHOICE: "png|overlay|both" */
  const char *metavar; /* "T" (NULL for a flag) */
  const char *help;    /* may hold '\n': continuation lines are indented */
  int flags;           /* RV_OPT_OPEN_LO | RV_OPT_OPEN_HI | RV_OPT_HIDDEN */
  const char *def;     /* the default as it would be given (\"512\", \"both\"), or NULL: the parser
                        * stores it before reading argv and --help prints "(default DEF)" after
                        * the help, so the default is written once, here */
} rv_opt;

#define RV_OPT_END {NULL, NULL, RV_OPT_FLAG, 0, 0, 0, NULL, NULL, NULL, 0}

/* `--strict`, the same entry in every command that loads a checkpoint (an int field, passed
 * as rv_model_load_opts.strict). */
#define RV_OPT_STRICT(type, field)                                                             \
  {"--strict", NULL, RV_OPT_FLAG, offsetof(type, field), 0, 0, NULL, NULL,                     \
   "unexpected checkpoint keys (keys the model does not use) are an error,\n"                  \
   "not a warning (missing keys are always an error)", 0}

typedef struct {
  const char *name;     /* "detect", "eval coco" */
  const char *synopsis; /* after "usage: ravlt NAME ": may hold '\n' for more forms */
  const char *about;    /* paragraphs before the options */
  const rv_opt *opts;   /* ends with RV_OPT_END */
  int max_pos;          /* positional arguments at most (-1: any number) */
  const char *epilog;   /* after the options (NULL: none) */
  const char *examples; /* lines of the Examples section (required) */
  size_t size;          /* sizeof the option struct (for tests and the fuzzer) */
} rv_cmd_spec;

/* The global options, parsed before the command by main and anywhere after it. */
typedef struct {
  int quiet;
  int verbose;
  int threads; /* 0 = all cores */
  long max_pixels; /* --max-pixels (0: the library's default, 2^27) */
} rv_opts_globals;

#define RV_OPTS_MAX_DEPRECATED 8
typedef struct {
  int npos;                                     /* positionals, moved to argv[0..npos-1] */
  int help;                                     /* -h / --help was given */
  const rv_opt *deprecated[RV_OPTS_MAX_DEPRECATED]; /* aliases used (notices to print) */
  int n_deprecated;
  char err[512]; /* the usage error (without "ravlt CMD: ") */
} rv_opts_result;

/* Parse argv[1..argc-1] (argv[0] is the command word) into dst (spec->size bytes: the
 * table's defaults (rv_opt.def) are stored first, other fields are left as the caller set them) and the globals g (may be NULL: global options are then unknown).
 * Positionals are compacted into argv[0 .. res->npos-1] (argv is reordered, not copied).
 * Returns 0 (parsed; res->help when --help was given: stop there), or 2 with a usage error in
 * res->err. Prints nothing, allocates nothing, keeps no state: fuzzed by fuzz/fuzz_opts.c. */
int rv_opts_parse(const rv_cmd_spec *spec, void *dst, rv_opts_globals *g, int argc, char **argv,
                  rv_opts_result *res);

/* The --help text of a command, generated from its table: usage, about, options, the common
 * options, epilog, Examples. */
void rv_opts_help(const rv_cmd_spec *spec, FILE *f);
/* The lines of the common options (also in `ravlt --help`). */
void rv_opts_help_globals(FILE *f);

/* The extent of a run of options before a command word (`ravlt -q --threads 4 segment ...`,
 * `ravlt eval -v coco ...`), from the globals' table: which of them take a value.
 * rv_opts_is_option: a word starting with '-' but not "-" or "--". rv_opts_global_span: the
 * words the option argv[i] spans: 2 for a global that takes a value given as the next word
 * (--threads N), else 1 (a flag, --opt=value, or an unknown option the parser will report).
 * rv_opts_globals_end: the index of the first word from argv[i] on that is not an option or
 * an option's value (argc when there is none). */
int rv_opts_is_option(const char *arg);
int rv_opts_global_span(int argc, char **argv, int i);
int rv_opts_globals_end(int argc, char **argv, int i);

/* Strict number parsing as the parser does it: the whole string, within [lo, hi]; 0 or -1. */
int rv_opts_parse_long(const char *s, long lo, long hi, long *out);
int rv_opts_parse_double(const char *s, double lo, double hi, int open, double *out);
int rv_opts_parse_size(const char *s, int lo, int hi, int hw[2]);

/* For the CLI: rv_opts_parse with rv_cli's globals, then: --help printed on stdout (rank 0)
 * -> 0; a usage error printed "ravlt CMD: ... (see 'ravlt CMD --help')" -> 2; deprecation
 * notices printed (rank 0, not with --quiet); global settings applied (OpenCV threads and
 * log level); the output rules checked (apps/outputs.h rv_cli_io_check: an output over an
 * input -> 2) -> -1: run the command with argv[0 .. *npos-1] as its positionals. */
int rv_cli_parse(const rv_cmd_spec *spec, void *dst, int argc, char **argv, int *npos);

/* `ravlt`'s commands, one static table (apps/commands.c). */
typedef int (*rv_cmd_fn)(int argc, char **argv);
typedef struct {
  const char *name;
  rv_cmd_fn fn;
  const char *summary;
  const rv_cmd_spec *const *specs; /* the option tables of the command (eval: coco, ade20k), NULL-terminated */
} rv_cli_command;
const rv_cli_command *rv_cli_commands(int *n);

#endif
