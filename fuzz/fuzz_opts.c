/* libFuzzer target: the option parser (apps/opts.c) over every command's table. The first
 * byte picks the table; the rest is split at NUL bytes into argv. Checks: the parser returns
 * 0 or 2, a usage error has a message, the positionals are argv entries that were given, and
 * the help of the table is generated without error. */
#include "apps/opts.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  int n;
  const rv_cli_command *cmds = rv_cli_commands(&n);
  const rv_cmd_spec *specs[64];
  int ns = 0;
  for (int i = 0; i < n; i++)
    for (int k = 0; cmds[i].specs[k] && ns < 64; k++) specs[ns++] = cmds[i].specs[k];
  const rv_cmd_spec *spec = specs[data[0] % ns];
  char *buf = malloc(size); /* the argument strings, NUL-separated (the last one terminated) */
  if (!buf) return 0;
  memcpy(buf, data + 1, size - 1);
  buf[size - 1] = 0;
  char *argv[257], *given[257];
  int argc = 0;
  argv[argc++] = (char *)spec->name;
  for (size_t i = 0; i < size - 1 && argc < 256;) {
    argv[argc++] = buf + i;
    i += strlen(buf + i) + 1;
  }
  memcpy(given, argv, sizeof(char *) * (size_t)argc);
  void *dst = calloc(1, spec->size ? spec->size : 1);
  rv_opts_globals g = {0, 0, 0, 0};
  rv_opts_result r;
  int rc = rv_opts_parse(spec, dst, &g, argc, argv, &r);
  if (rc != 0 && rc != 2) abort();
  if (rc == 2 && r.err[0] == 0) abort();
  if (rc == 0) {
    if (r.npos < 0 || r.npos >= argc) abort();
    if (spec->max_pos >= 0 && r.npos > spec->max_pos) abort();
    for (int i = 0; i < r.npos; i++) { /* each positional is one of the arguments given */
      int found = 0;
      for (int k = 1; k < argc && !found; k++) found = argv[i] == given[k];
      if (!found) abort();
    }
    if (g.threads < 0 || g.threads > 4096) abort();
  }
  if ((data[0] & 0x80) && size < 64) { /* now and then: the help of this table */
    FILE *f = fopen("/dev/null", "w");
    if (f) {
      rv_opts_help(spec, f);
      fclose(f);
    }
  }
  free(dst);
  free(buf);
  return 0;
}
