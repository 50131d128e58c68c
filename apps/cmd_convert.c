/* `ravlt convert IN.pth OUT.safetensors`: a PyTorch checkpoint's state_dict as safetensors. */
#include "apps/cli.h"
#include "formats/weights.h"
#include "apps/commands.h"

#include <string.h>

static const rv_opt OPTS[] = {RV_OPT_END};

const rv_cmd_spec rv_spec_convert = {
    "convert", "IN.pth OUT.safetensors",
    "Convert a PyTorch checkpoint (zip format, as mmdetection/mmsegmentation save it) to\n"
    "safetensors. Every tensor of the state_dict is written unchanged (same names, dtypes,\n"
    "shapes and bytes, including the I64 BatchNorm num_batches_tracked, in state_dict\n"
    "order); optimizer state is dropped. The checkpoint's meta values go to __metadata__:\n"
    "'config' (the mmcv config text), 'CLASSES' and 'PALETTE' (JSON), 'mmdet_version',\n"
    "'mmseg_version', ... (nested dicts flattened as 'a.b'). The output is written to a\n"
    "temporary file and renamed, so a failed conversion leaves nothing behind.\n"
    "A safetensors input is copied (re-validated, tensors in file order).\n",
    OPTS, 2, NULL,
    "  ravlt convert upernet_ravlt_s.pth upernet_ravlt_s.safetensors\n",
    0};

int rv_cmd_convert(int argc, char **argv) {
  int npos;
  int prc = rv_cli_parse(&rv_spec_convert, NULL, argc, argv, &npos);
  if (prc >= 0) return prc;
  const char *in = npos > 0 ? argv[0] : NULL, *out = npos > 1 ? argv[1] : NULL;
  if (!in || !out) return rv_cli_usage_error("convert", "needs IN.pth and OUT.safetensors");
  rv_ctx *ctx = rv_cli_ctx();
  if (!ctx) { fprintf(stderr, "ravlt convert: out of memory\n"); return 1; }
  rv_weights *w = NULL;
  rv_status st = rv_weights_open(&w, in, ctx);
  if (st == RV_OK && rv_weights_count(w) == 0)
    st = rv_error(ctx, RV_ERR_FORMAT, "%s: the state_dict holds no tensors: nothing to convert", in);
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
