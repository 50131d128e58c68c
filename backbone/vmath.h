/* Private to backbone/: a branch-free expf the compiler vectorises (Cephes polynomial,
 * Cody-Waite range reduction; max relative error ~2e-7 on [-87, 88], inputs clamped
 * there, so exp(-inf) gives ~1e-38 instead of 0). */
#ifndef RV_BACKBONE_VMATH_H
#define RV_BACKBONE_VMATH_H

#include <stdint.h>
#include <string.h>

static inline float vm_expf(float x) {
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  /* n = round(x / ln2) by the 1.5*2^23 trick (exact for |x/ln2| < 2^22) */
  const float r = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float f = x - r * 0.693359375f;
  f = f + r * 2.12194440e-4f;
  const float f2 = f * f;
  float p = 1.9875691500e-4f;
  p = p * f + 1.3981999507e-3f;
  p = p * f + 8.3334519073e-3f;
  p = p * f + 4.1665795894e-2f;
  p = p * f + 1.6666665459e-1f;
  p = p * f + 5.0000001201e-1f;
  p = p * f2 + f + 1.0f;
  const int32_t bits = ((int32_t)r + 127) << 23;
  float s;
  memcpy(&s, &bits, sizeof s);
  return p * s;
}

#endif
