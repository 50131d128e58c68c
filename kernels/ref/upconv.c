/* The naive twin of kernels/upconv.c: plain loops, double accumulation, the reference
 * tests/unit/kernels/test_kernels.c compares the fast kernel with. Never on a hot path. */
#include "kernels/ops.h"

rv_status rv_conv3x3_upsampled_naive_f32(float *y, const float *x, const float *w,
                                         const float *b, int n, int cin, int ih, int iw,
                                         int cout, int oh, int ow, rv_act act, int accumulate,
                                         rv_arena *scratch) {
  rv_arena_mark mk = rv_arena_get_mark(scratch);
  const size_t in_up = (size_t)cin * oh * ow, out = (size_t)cout * oh * ow;
  float *up = rv_arena_floats(scratch, in_up);
  float *conv = rv_arena_floats(scratch, out);
  if (!up || !conv) {
    rv_arena_release(scratch, mk);
    return RV_ERR_NOMEM;
  }
  rv_conv_params p = rv_conv_default_params(3, 1, 1);
  for (int i = 0; i < n; i++) {
    rv_resize_bilinear_naive_f32(up, x + (size_t)i * cin * ih * iw, cin, ih, iw, oh, ow);
    rv_conv2d_naive_f32(conv, up, w, b, 1, cin, oh, ow, cout, p);
    float *yi = y + (size_t)i * out;
    for (size_t k = 0; k < out; k++) yi[k] = accumulate ? yi[k] + conv[k] : conv[k];
    if (act != RV_ACT_NONE) rv_act_f32(yi, out, act);
  }
  rv_arena_release(scratch, mk);
  return RV_OK;
}
