/* Anchor generation with mmdet 2.11 AnchorGenerator semantics (center_offset 0, float32). */
#include "heads/det.h"

#include <math.h>

int rv_anchor_base_f32(float *base, float base_size, const float *ratios, int nr,
                       const float *scales, int ns) {
  /* h_ratios = sqrt(ratios), w_ratios = 1 / h_ratios (float32 tensors);
   * ws = (w * w_ratios[:, None] * scales[None, :]).view(-1), ratio-major. */
  int a = 0;
  for (int i = 0; i < nr; i++) {
    float hr = sqrtf(ratios[i]);
    float wr = 1.0f / hr;
    for (int j = 0; j < ns; j++, a++) {
      float ws = base_size * wr * scales[j];
      float hs = base_size * hr * scales[j];
      base[a * 4 + 0] = 0.0f - 0.5f * ws;
      base[a * 4 + 1] = 0.0f - 0.5f * hs;
      base[a * 4 + 2] = 0.0f + 0.5f * ws;
      base[a * 4 + 3] = 0.0f + 0.5f * hs;
    }
  }
  return a;
}

void rv_anchor_octave_scales(float *scales, float octave_base, int per_octave) {
  /* np.array([2**(i/n)]) * octave_base in float64, then torch.Tensor -> float32 */
  for (int i = 0; i < per_octave; i++)
    scales[i] = (float)(pow(2.0, (double)i / (double)per_octave) * (double)octave_base);
}

void rv_anchor_grid_f32(float *anchors, const float *base, int A, int h, int w, int stride) {
  for (int y = 0; y < h; y++) {
    float sy = (float)(y * stride);
    for (int x = 0; x < w; x++) {
      float sx = (float)(x * stride);
      float *o = anchors + ((size_t)y * w + x) * A * 4;
      for (int a = 0; a < A; a++) {
        o[a * 4 + 0] = base[a * 4 + 0] + sx;
        o[a * 4 + 1] = base[a * 4 + 1] + sy;
        o[a * 4 + 2] = base[a * 4 + 2] + sx;
        o[a * 4 + 3] = base[a * 4 + 3] + sy;
      }
    }
  }
}
