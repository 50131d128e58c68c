/* Subcommands of `ravlt`, one file each (apps/cmd_<name>.c). Declared weak so the table in
 * main.c lists every command; one whose file is not in this build says so. */
#ifndef RV_APPS_COMMANDS_H
#define RV_APPS_COMMANDS_H

typedef int (*rv_cmd_fn)(int argc, char **argv);

#define RV_CMD(name) __attribute__((weak)) int rv_cmd_##name(int argc, char **argv)
RV_CMD(convert);
RV_CMD(check_fixture);
RV_CMD(info);
RV_CMD(bench);
RV_CMD(classify);
RV_CMD(segment);
RV_CMD(detect);
RV_CMD(eval);
RV_CMD(video);
RV_CMD(rank);
RV_CMD(models);
RV_CMD(synth);
RV_CMD(merge);
#undef RV_CMD

#endif
