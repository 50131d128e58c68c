/* `ravlt convert IN.pth OUT.safetensors`: a PyTorch checkpoint's state_dict as safetensors. */
#include "apps/cli.h"
#include "core/weights.h"

#include <string.h>

static void help(void) {
  printf("usage: ravlt convert IN.pth OUT.safetensors\n\n"
         "Convert a PyTorch checkpoint (zip format, as mmdetection/mmsegmentation save it) to\n"
         "safetensors. Every tensor of the state_dict is written unchanged (same names, dtypes,\n"
         "shapes and bytes, including the I64 BatchNorm num_batches_tracked, in state_dict\n"
         "order); optimizer state is dropped. The checkpoint's meta values go to __metadata__:\n"
         "'config' (the mmcv config text), 'CLASSES' and 'PALETTE' (JSON), 'mmdet_version',\n"
         "'mmseg_version', ... (nested dicts flattened as 'a.b'). The output is written to a\n"
         "temporary file and renamed, so a failed conversion leaves nothing behind.\n"
         "A safetensors input is copied (re-validated, tensors in file order).\n");
}

int rv_cmd_convert(int argc, char **argv) {
  const char *in = NULL, *out = NULL;
  for (int i = 1; i < argc; i++) {
    if (rv_cli_is_help(argv[i])) { help(); return 0; }
    if (argv[i][0] == '-' && argv[i][1]) return rv_cli_usage_error("convert", "unknown option '%s'", argv[i]);
    if (!in) in = argv[i];
    else if (!out) out = argv[i];
    else return rv_cli_usage_error("convert", "unexpected argument '%s'", argv[i]);
  }
  if (!in || !out) return rv_cli_usage_error("convert", "needs IN.pth and OUT.safetensors");
  if (strcmp(in, out) == 0) return rv_cli_usage_error("convert", "input and output are the same file");
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) { fprintf(stderr, "ravlt convert: out of memory\n"); return 1; }
  rv_weights *w = NULL;
  rv_status st = rv_weights_open(&w, in, ctx);
  if (st == RV_OK && rv_weights_find(w, "__metadata__"))
    st = rv_error(ctx, RV_ERR_FORMAT, "%s: a tensor is named '__metadata__', which safetensors reserves", in);
  if (st == RV_OK) st = rv_safetensors_write(out, w, ctx);
  if (st != RV_OK) {
    int rc = rv_cli_fail(ctx, "convert", st);
    rv_weights_free(w);
    rv_ctx_free(ctx);
    return rc;
  }
  if (!rv_cli.quiet) {
    size_t bytes = 0;
    for (int i = 0; i < rv_weights_count(w); i++) bytes += rv_weights_get(w, i)->nbytes;
    fprintf(stderr, "ravlt convert: %s: %d tensors (%.1f MB), %d metadata entries -> %s\n", in,
            rv_weights_count(w), (double)bytes / 1e6, rv_weights_meta_count(w), out);
  }
  rv_weights_free(w);
  rv_ctx_free(ctx);
  return 0;
}
