/* Subcommands of `ravlt`, one file each (apps/cmd_<name>.c), and their option tables; the
 * command table itself is apps/commands.c (rv_cli_commands, apps/opts.h). */
#ifndef RV_APPS_COMMANDS_H
#define RV_APPS_COMMANDS_H

#include "apps/opts.h"

#define RV_CMD(name)                                                                               \
  int rv_cmd_##name(int argc, char **argv);                                                        \
  extern const rv_cmd_spec rv_spec_##name
RV_CMD(convert);
RV_CMD(check_fixture);
RV_CMD(info);
RV_CMD(bench);
RV_CMD(classify);
RV_CMD(segment);
RV_CMD(detect);
RV_CMD(video);
RV_CMD(rank);
RV_CMD(models);
RV_CMD(synth);
RV_CMD(merge);
RV_CMD(serve);
#undef RV_CMD
int rv_cmd_eval(int argc, char **argv);
extern const rv_cmd_spec rv_spec_eval_coco, rv_spec_eval_ade20k;

#endif
