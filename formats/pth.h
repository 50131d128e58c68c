/* PyTorch .pth checkpoints (zip format, PyTorch >= 1.6) as mmcv saves them.
 *
 *   rv_weights *w;
 *   rv_status st = rv_pth_load(&w, "ckpt.pth", ctx);   // state_dict tensors + meta strings
 *   const char *cfg = rv_weights_meta(w, "config");      // mmcv config text, if saved
 *
 * The zip holds <prefix>/data.pkl and <prefix>/data/<key>. A pickle-subset interpreter
 * rebuilds the state_dict (OrderedDict of torch._utils._rebuild_tensor_v2 over storages
 * named by persistent ids) and treats every other global as an opaque object. A checkpoint
 * that is a dict with 'state_dict' (mmcv) yields that; a bare state_dict yields itself.
 * If neither, a top-level 'model' dict of tensors is used. Tensors keep the state_dict
 * order, dtype and shape; non-contiguous or offset views are gathered into contiguous
 * buffers owned by the rv_weights. Values under 'meta' become metadata entries: strings as
 * they are, numbers as Python prints them (numpy scalars too), lists and tuples as JSON text
 * (CLASSES -> ["person",...], PALETTE -> [[120,120,120],...]), nested dicts flattened as
 * "a.b" (hook_msgs.best_score). Optimizer state and anything else is never read.
 *
 * Every read is bounded: storage sizes are checked against their zip entries, strides and
 * offsets against the storage, sizes against overflow, and any malformed input fails with
 * RV_ERR_FORMAT (or RV_ERR_UNSUPPORTED) and a one-line message naming the file.
 */
#ifndef RV_CORE_PTH_H
#define RV_CORE_PTH_H

#include "formats/weights.h"

#ifdef __cplusplus
extern "C" {
#endif

rv_status rv_pth_load(rv_weights **out, const char *path, rv_ctx *ctx);
/* The same from a checkpoint image in memory (copied where tensors need it: buf may be
 * freed after the call). `name` is used in messages and as the weights' path. */
rv_status rv_pth_load_buffer(rv_weights **out, const void *buf, size_t len, const char *name,
                             rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
