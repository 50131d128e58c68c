/* The one checkpoint parameter loader: every module of the backbone, necks and heads reads
 * its tensors through it, by key, with the same checks and the same error wording.
 *
 *   rv_params P;
 *   RV_TRY(rv_params_init(&P, w, ctx));          // records which keys were consumed
 *   int64_t shape[2] = {256, -1};                // -1: any size
 *   const rv_wtensor *t;
 *   RV_TRY(rv_param_get(&P, &t, "roi_head.bbox_head.fc_cls.weight", 2, shape, ctx));
 *   ...
 *   rv_params_check_unused(&P, skip, strict, ctx);  // warning (or error) listing the rest
 *   rv_params_free(&P);
 *
 * rv_params_view(w) reads without recording (a part loaded on its own, a test).
 *
 * Errors (RV_ERR_MODEL unless said), FILE being the weights' path:
 *   FILE: missing key 'K' (expected shape [a, b])           (RV_ERR_NOTFOUND)
 *   FILE: key 'K' has shape [c, d], expected [a, b]
 *   FILE: key 'K' has dtype I64, expected a float type
 *   FILE: key 'K' has a negative or NaN value at index i    (BatchNorm running_var)
 *   FILE: unexpected key 'K' (N unexpected keys in all: ...) (strict; else a warning)
 * A '?' in an expected shape is a size the caller takes from the checkpoint.
 */
#ifndef RV_NN_PARAM_H
#define RV_NN_PARAM_H

#include "formats/weights.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const rv_weights *w;
  unsigned char *used; /* one flag per tensor of w (rv_weights_count), or NULL: no record */
} rv_params;

/* Reads w without recording what is consumed. */
rv_params rv_params_view(const rv_weights *w);
/* Reads w and records every key consumed. */
rv_status rv_params_init(rv_params *p, const rv_weights *w, rv_ctx *ctx);
void rv_params_free(rv_params *p);
/* The weights' path for messages ("weights" when they have none). */
const char *rv_params_path(const rv_params *p);

/* The tensor named key, or NULL; consumes nothing (probing optional parts). */
const rv_wtensor *rv_param_find(const rv_params *p, const char *key);
/* Records t (and nothing else) as consumed. */
void rv_param_mark(rv_params *p, const rv_wtensor *t);
/* 1 when the key has been consumed. */
int rv_param_used(const rv_params *p, const rv_wtensor *t);

/* The tensor named key with ndim dims, shape[i] its size or -1 for any, a float dtype;
 * consumed. */
rv_status rv_param_get(rv_params *p, const rv_wtensor **out, const char *key, int ndim,
                       const int64_t *shape, rv_ctx *ctx);
/* rv_param_get, then its values as float32 into dst (numel floats). */
rv_status rv_param_read(rv_params *p, float *dst, const char *key, int ndim,
                        const int64_t *shape, rv_ctx *ctx);
/* rv_param_get, then its values in a new rv_malloc buffer (*dst; free with rv_free). */
rv_status rv_param_alloc(rv_params *p, float **dst, const rv_wtensor **out, const char *key,
                         int ndim, const int64_t *shape, rv_ctx *ctx);

/* Eval-mode BatchNorm at `bn` ("P.bn": P.bn.weight, .bias, .running_mean, .running_var, each
 * [cout]; .num_batches_tracked consumed when present) folded into a conv's w [cout,
 * per_out] and b [cout]. Checks running_var >= 0. */
rv_status rv_param_bn_fold(rv_params *p, float *w, float *b, int cout, size_t per_out,
                           const char *bn, float eps, rv_ctx *ctx);

/* Keys not consumed, except those starting with one of skip[] (NULL-terminated, may be NULL)
 * and BatchNorm's num_batches_tracked: none -> RV_OK; else with strict an error naming the
 * first (and the count), without strict a warning through rv_log listing them all and
 * RV_OK. `what` names the model in the message. Needs a recording p. */
rv_status rv_params_check_unused(const rv_params *p, const char *const *skip, int strict,
                                 const char *what, rv_ctx *ctx);
/* The number of keys check_unused would list. */
int rv_params_count_unused(const rv_params *p, const char *const *skip);

/* "[a, b, ?]" for a shape with -1 as '?'. */
void rv_param_shape_str(char *buf, size_t cap, int ndim, const int64_t *shape);

#ifdef __cplusplus
}
#endif
#endif
