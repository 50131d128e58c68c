/* mmdet's mask paste (get_seg_masks / _do_paste_mask: grid_sample bilinear, zeros padding,
 * align_corners=False, threshold >=). See det_ops.h. */
#include "heads/det_ops.h"

#include <math.h>
#include <string.h>

/* One axis of grid_sample(bilinear, align_corners=False, zeros) at pixel centre c + 0.5 of
 * the box [b0, b1] over a source axis of length len: two taps with weights (0 outside). */
typedef struct {
  int i0, i1;
  double w0, w1;
} gtap;

static gtap grid_tap(int c, double b0, double b1, int len) {
  gtap t = {0, 0, 0.0, 0.0};
  double g = ((double)c + 0.5 - b0) / (b1 - b0) * 2.0 - 1.0;
  if (isinf(g)) g = 0.0; /* torch sets inf grid values to 0 */
  if (isnan(g)) return t;
  double v = ((g + 1.0) * len - 1.0) / 2.0; /* unnormalise, align_corners=False */
  if (!(v > -2.0 && v < len + 1.0)) return t; /* both taps outside (also huge values) */
  double f = floor(v);
  int i0 = (int)f, i1 = i0 + 1;
  double w1 = v - f, w0 = 1.0 - w1;
  if (i0 >= 0 && i0 < len) {
    t.i0 = i0;
    t.w0 = w0;
  }
  if (i1 >= 0 && i1 < len) {
    t.i1 = i1;
    t.w1 = w1;
  }
  return t;
}

void rv_paste_mask_u8(unsigned char *out, int img_h, int img_w, const float *prob, int mh,
                      int mw, const float box[4], float thr) {
  memset(out, 0, (size_t)img_h * img_w);
  double x0 = box[0], y0 = box[1], x1 = box[2], y1 = box[3];
  if (!isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1)) return;
  /* paste window (skip_empty): floor(min)-1 .. ceil(max)+1, clamped to the image */
  double fx0 = floor(x0) - 1, fy0 = floor(y0) - 1, cx1 = ceil(x1) + 1, cy1 = ceil(y1) + 1;
  int wx0 = fx0 < 0 ? 0 : (fx0 > img_w ? img_w : (int)fx0);
  int wy0 = fy0 < 0 ? 0 : (fy0 > img_h ? img_h : (int)fy0);
  int wx1 = cx1 > img_w ? img_w : (cx1 < 0 ? 0 : (int)cx1);
  int wy1 = cy1 > img_h ? img_h : (cy1 < 0 ? 0 : (int)cy1);
  if (wx1 <= wx0 || wy1 <= wy0) return;
  for (int y = wy0; y < wy1; y++) {
    gtap ty = grid_tap(y, y0, y1, mh);
    if (ty.w0 == 0.0 && ty.w1 == 0.0) continue;
    const float *r0 = prob + (size_t)ty.i0 * mw, *r1 = prob + (size_t)ty.i1 * mw;
    unsigned char *o = out + (size_t)y * img_w;
    for (int x = wx0; x < wx1; x++) {
      gtap t = grid_tap(x, x0, x1, mw);
      double v = ty.w0 * (t.w0 * r0[t.i0] + t.w1 * r0[t.i1]) +
                 ty.w1 * (t.w0 * r1[t.i0] + t.w1 * r1[t.i1]);
      o[x] = v >= (double)thr;
    }
  }
}
