/* PyTorch .pth checkpoints (zip format, PyTorch >= 1.6) as mmcv saves them.
 *
 *   rv_weights *w;
 *   rv_status st = rv_pth_load(&w, "ckpt.pth", ctx);   // state_dict tensors + meta strings
 *
 * The zip holds <prefix>/data.pkl and <prefix>/data/<key>. A pickle-subset interpreter
 * rebuilds the state_dict (OrderedDict of torch._utils._rebuild_tensor_v2 over storages
 * named by persistent ids) and treats every other global as an opaque object. A checkpoint
 * that is a dict with 'state_dict' (mmcv) yields that; a bare state_dict yields itself.
 * Strings found under 'meta' (config text, CLASSES, PALETTE...) become metadata entries.
 */
#ifndef RV_CORE_PTH_H
#define RV_CORE_PTH_H

#include "core/weights.h"

#ifdef __cplusplus
extern "C" {
#endif

rv_status rv_pth_load(rv_weights **out, const char *path, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
