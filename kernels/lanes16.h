/* The 16-lane masks of the AVX-512 kernels (kernels/ukernel.c, kernels/gemm_bf16.c,
 * kernels/conv3x3_direct.c, kernels/dwconv.c): include only where <immintrin.h> is available
 * (x86-64 with GCC or clang). Integer operations only, so callable from functions of any
 * target. */
#ifndef RV_CORE_LANES16_H
#define RV_CORE_LANES16_H

#include <immintrin.h>

/* lanes [0, n) of 16: all for n >= 16, none for n <= 0 */
static inline __mmask16 rv_lanes_below(long long n) {
  return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* lanes [0, 16) of a load starting at column c0 that fall in [0, wd) */
static inline __mmask16 rv_cols_mask(long long c0, long long wd) {
  return (__mmask16)(rv_lanes_below(wd - c0) & ~rv_lanes_below(-c0));
}

#endif
