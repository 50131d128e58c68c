/* The table of `ravlt`'s commands (apps/opts.h rv_cli_commands): name, entry point, one-line
 * summary and option tables. */
#include "apps/commands.h"

#include <stddef.h>

#define SPECS(...) ((const rv_cmd_spec *const[]){__VA_ARGS__, NULL})

static const rv_cli_command COMMANDS[] = {
    {"segment", rv_cmd_segment, "semantic segmentation of images (label PNGs, overlays)", SPECS(&rv_spec_segment)},
    {"detect", rv_cmd_detect, "object detection and instance segmentation of images", SPECS(&rv_spec_detect)},
    {"video", rv_cmd_video, "segment or detect in video files, cameras and streams", SPECS(&rv_spec_video)},
    {"eval", rv_cmd_eval, "COCO box/mask AP and ADE20K mIoU, from results or by running a model",
     SPECS(&rv_spec_eval_coco, &rv_spec_eval_ade20k)},
    {"classify", rv_cmd_classify, "ImageNet top-5 classification", SPECS(&rv_spec_classify)},
    {"convert", rv_cmd_convert, "convert a PyTorch .pth checkpoint to safetensors", SPECS(&rv_spec_convert)},
    {"info", rv_cmd_info, "parameters and multiply-accumulates of a model", SPECS(&rv_spec_info)},
    {"bench", rv_cmd_bench, "time a model", SPECS(&rv_spec_bench)},
    {"check-fixture", rv_cmd_check_fixture, "compare the model against a golden fixture folder",
     SPECS(&rv_spec_check_fixture)},
    {"rank", rv_cmd_rank, "rank of RALA KV buffers and attention outputs per block", SPECS(&rv_spec_rank)},
    {"models", rv_cmd_models, "list the official checkpoints", SPECS(&rv_spec_models)},
    {"synth", rv_cmd_synth, "generate a synthetic dataset", SPECS(&rv_spec_synth)},
    {"merge", rv_cmd_merge, "merge sharded evaluation results", SPECS(&rv_spec_merge)},
    {"serve", rv_cmd_serve, "an HTTP inference service (REST, KServe v2, live video streams)", SPECS(&rv_spec_serve)},
};

const rv_cli_command *rv_cli_commands(int *n) {
  *n = (int)(sizeof COMMANDS / sizeof COMMANDS[0]);
  return COMMANDS;
}
