/* Tensors and the activation arena.
 *
 *   rv_arena *a = rv_arena_create(0);
 *   rv_tensor x = rv_tensor_new(a, 1, 64, 128, 128);   // NCHW float32, from the arena
 *   if (!x.data) ...out of memory...
 *   rv_arena_reset(a);                                  // between images: memory is kept
 *   rv_arena_free(a);
 *
 * Layout: feature maps are NCHW float32 (batch, channels, height, width), contiguous. NCHW
 * matches PyTorch, the checkpoints and the fixtures, so a 1x1 convolution is one GEMM
 * W[Cout x Cin] * X[Cin x HW] with no transposes, a k x k convolution is im2col + the same
 * GEMM, and per-channel ops (BN, depthwise) stream over contiguous planes. Kernels that
 * prefer another layout internally (attention works on tokens) transpose locally.
 */
#ifndef RV_CORE_TENSOR_H
#define RV_CORE_TENSOR_H

#include "core/rv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  float *data;
  int n, c, h, w;
} rv_tensor;

static inline size_t rv_tensor_numel(rv_tensor t) {
  return (size_t)t.n * (size_t)t.c * (size_t)t.h * (size_t)t.w;
}
static inline float *rv_tensor_at(rv_tensor t, int n, int c, int y, int x) {
  return t.data + ((((size_t)n * t.c + c) * t.h + y) * t.w + x);
}

/* Bump allocator for activations. Blocks grow geometrically; rv_arena_reset keeps them,
 * so after the first image a forward pass allocates nothing from the system. Every
 * allocation is 64-byte aligned. Not thread-safe: one arena per stream/state. */
/* rv_arena, rv_arena_create/free/reset/used/peak/capacity: <ravlt/core.h>. */
void *rv_arena_alloc(rv_arena *a, size_t bytes);           /* NULL on failure */
float *rv_arena_floats(rv_arena *a, size_t count);          /* NULL on failure/overflow */
/* Marks let a function free its scratch on return: m = mark(); ... release(m). */
typedef struct { size_t block; size_t used; } rv_arena_mark;
rv_arena_mark rv_arena_get_mark(const rv_arena *a);
void rv_arena_release(rv_arena *a, rv_arena_mark m);

/* Tensor from the arena; data == NULL on failure or impossible size. */
rv_tensor rv_tensor_new(rv_arena *a, int n, int c, int h, int w);
rv_tensor rv_tensor_zeros(rv_arena *a, int n, int c, int h, int w);

#ifdef __cplusplus
}
#endif
#endif
