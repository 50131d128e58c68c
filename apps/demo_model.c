/* The offline demo models, embedded in the ravlt binary at build time with the assembler's
 * .incbin, so that they are found on any machine and from any working directory:
 *  - "demo": the segmentation model models/demo_seg.safetensors (tools/train_demo.py);
 *  - "demo-det": the detector models/demo_det.safetensors (tools/train_det_demo.py, a
 *    RetinaNet).
 * Both are trained on `ravlt synth` shapes. RV_DEMO_SEG_FILE and RV_DEMO_DET_FILE (the files'
 * absolute paths) come from CMakeLists.txt, which also rebuilds this object when they change. */
#include "apps/demo_model.h"

#include <string.h>

#ifndef RV_DEMO_SEG_FILE
#error "RV_DEMO_SEG_FILE: the path of models/demo_seg.safetensors (set by CMakeLists.txt)"
#endif
#ifndef RV_DEMO_DET_FILE
#error "RV_DEMO_DET_FILE: the path of models/demo_det.safetensors (set by CMakeLists.txt)"
#endif

#define RV_INCBIN(sym, file)                                                                       \
  __asm__(".pushsection .rodata\n"                                                                 \
          ".balign 64\n"                                                                           \
          ".type " #sym "_begin, @object\n" #sym "_begin:\n"                                       \
          ".incbin \"" file "\"\n"                                                                 \
          ".type " #sym "_end, @object\n" #sym "_end:\n"                                           \
          ".byte 0\n"                                                                              \
          ".popsection\n");                                                                        \
  extern const unsigned char sym##_begin[], sym##_end[]

RV_INCBIN(rv_demo_seg, RV_DEMO_SEG_FILE);
RV_INCBIN(rv_demo_det, RV_DEMO_DET_FILE);

int rv_cli_is_demo(const char *weights) {
  return !strcmp(weights, RV_CLI_DEMO) || !strcmp(weights, RV_CLI_DEMO_DET);
}

const unsigned char *rv_cli_demo_bytes(int det, size_t *len) {
  const unsigned char *b = det ? rv_demo_det_begin : rv_demo_seg_begin;
  const unsigned char *e = det ? rv_demo_det_end : rv_demo_seg_end;
  *len = (size_t)(e - b);
  return b;
}
