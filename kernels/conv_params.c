/* The convolution parameters and output size (kernels/ops.h): shared by the direct / im2col
 * path (kernels/conv.c) and the Winograd paths (kernels/winograd.c), which conv.c dispatches to. */
#include "kernels/ops.h"

rv_conv_params rv_conv_default_params(int k, int stride, int pad) {
  rv_conv_params p;
  p.kh = p.kw = k;
  p.sh = p.sw = stride;
  p.ph = p.pw = pad;
  p.dh = p.dw = 1;
  p.groups = 1;
  p.act = RV_ACT_NONE;
  p.algo = RV_CONV_AUTO;
  p.accumulate = 0;
  return p;
}

/* floor((in + 2 pad - dilation (k - 1) - 1) / stride) + 1; <= 0 when the kernel does not fit */
int rv_conv_out_size(int in, int k, int stride, int pad, int dilation) {
  long num = (long)in + 2L * pad - (long)dilation * (k - 1) - 1;
  if (num < 0) return 0;
  return (int)(num / stride + 1);
}
