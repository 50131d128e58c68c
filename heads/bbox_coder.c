/* DeltaXYWHBBoxCoder.decode (mmdet 2.11 delta2bbox) with clamping and clipping. */
#include "heads/det.h"

#include <math.h>

rv_bbox_coder rv_bbox_coder_default(void) {
  rv_bbox_coder c;
  for (int k = 0; k < 4; k++) {
    c.means[k] = 0.0f;
    c.stds[k] = 1.0f;
  }
  c.max_ratio = fabs(log(16.0 / 1000.0));
  return c;
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

void rv_delta2bbox_f32(float *out, const float *rois, int roi_stride, const float *deltas,
                       int delta_stride, int n, int ncls, const rv_bbox_coder *coder, int img_h,
                       int img_w) {
  const double mr = coder->max_ratio;
  for (int r = 0; r < n; r++) {
    const float *b = rois + (size_t)r * roi_stride;
    /* px, pw from the (float32) rois; sums of two float32 are exact in double */
    double px = ((double)b[0] + (double)b[2]) * 0.5, py = ((double)b[1] + (double)b[3]) * 0.5;
    double pw = (double)b[2] - (double)b[0], ph = (double)b[3] - (double)b[1];
    for (int c = 0; c < ncls; c++) {
      const float *d = deltas + (size_t)r * delta_stride + (size_t)c * 4;
      double dx = (double)d[0] * coder->stds[0] + coder->means[0];
      double dy = (double)d[1] * coder->stds[1] + coder->means[1];
      double dw = (double)d[2] * coder->stds[2] + coder->means[2];
      double dh = (double)d[3] * coder->stds[3] + coder->means[3];
      dw = clampd(dw, -mr, mr);
      dh = clampd(dh, -mr, mr);
      double gw = pw * exp(dw), gh = ph * exp(dh);
      double gx = px + pw * dx, gy = py + ph * dy;
      double x1 = gx - gw * 0.5, y1 = gy - gh * 0.5, x2 = gx + gw * 0.5, y2 = gy + gh * 0.5;
      if (img_w > 0 && img_h > 0) {
        x1 = clampd(x1, 0, img_w);
        x2 = clampd(x2, 0, img_w);
        y1 = clampd(y1, 0, img_h);
        y2 = clampd(y2, 0, img_h);
      }
      float *o = out + ((size_t)r * ncls + c) * 4;
      o[0] = (float)x1;
      o[1] = (float)y1;
      o[2] = (float)x2;
      o[3] = (float)y2;
    }
  }
}
