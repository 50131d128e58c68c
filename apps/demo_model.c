/* The offline demo segmentation model (models/demo_seg.safetensors, trained by
 * tools/train_demo.py on `ravlt synth` shapes), embedded in the ravlt binary at build time
 * with the assembler's .incbin, so that it is found on any machine and from any working
 * directory. RV_DEMO_SEG_FILE (the file's absolute path) comes from CMakeLists.txt, which
 * also rebuilds this object when the file changes. */
#include "apps/model_run.h"

#include "apps/cli.h"

#include <stdio.h>

#ifndef RV_DEMO_SEG_FILE
#error "RV_DEMO_SEG_FILE: the path of models/demo_seg.safetensors (set by CMakeLists.txt)"
#endif

__asm__(".pushsection .rodata\n"
        ".balign 64\n"
        ".type rv_demo_seg_begin, @object\n"
        "rv_demo_seg_begin:\n"
        ".incbin \"" RV_DEMO_SEG_FILE "\"\n"
        ".type rv_demo_seg_end, @object\n"
        "rv_demo_seg_end:\n"
        ".byte 0\n"
        ".popsection\n");
extern const unsigned char rv_demo_seg_begin[], rv_demo_seg_end[];

rv_status rv_cli_load_demo(rv_model **m, rv_ctx *ctx) {
  rv_weights *w = NULL;
  RV_TRY(rv_safetensors_parse(&w, rv_demo_seg_begin, (size_t)(rv_demo_seg_end - rv_demo_seg_begin),
                              "<built-in demo model>", ctx));
  rv_status st = rv_model_from_weights(m, w, NULL, ctx);
  rv_weights_free(w);
  return st;
}

void rv_cli_demo_notice(const char *cmd, const rv_model *m) {
  if (!rv_cli.quiet)
    fprintf(stderr, "ravlt %s: no --weights: using the built-in demo model (synthetic shapes, %d classes); see "
                    "'ravlt models' for real checkpoints\n", cmd, rv_model_num_classes(m));
}
