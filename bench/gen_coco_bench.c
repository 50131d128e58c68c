/* Generator of a COCO-scale evaluation set (not part of the library or the tests).
 *
 *   gen_coco_bench OUT_DIR [IMAGES=5000] [DETS_PER_PAIR=40] [SEED=1]
 *
 * Writes OUT_DIR/gt.json (IMAGES images, 80 categories with COCO's ids 1..90, ~6.8
 * annotations per image: random star polygons of all sizes, ~1% crowd as uncompressed RLE),
 * OUT_DIR/dt_bbox.json and OUT_DIR/dt_segm.json (mmdet-style results: for each image and each
 * category present, DETS_PER_PAIR detections, jittered copies of the gt plus false positives,
 * masks as compressed RLE with a bbox). Defaults give ~34k gt and ~485k detections, the size
 * of a val2017 evaluation with a detector that keeps 100 boxes per image and category. */
#include "eval/rle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rs;
static double urand(void) {
  rs = rs * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(rs >> 11) / 9007199254740992.0;
}
static int irand(int lo, int hi) { return lo + (int)(urand() * (hi - lo + 1)); }

static const int CAT_IDS[80] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                22, 23, 24, 25, 27, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44,
                                46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65,
                                67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90};

typedef struct {
  int cat, n;
  double xy[40];
  double cx, cy, r;
} gt_obj;

static void star(double *xy, int n, double cx, double cy, double r) {
  double a0 = urand() * 6.283185307179586;
  for (int i = 0; i < n; i++) {
    double a = a0 + 6.283185307179586 * (i + 0.3 * urand()) / n, q = r * (0.5 + 0.5 * urand());
    xy[2 * i] = round((cx + q * cos(a)) * 100) / 100;
    xy[2 * i + 1] = round((cy + q * sin(a)) * 100) / 100;
  }
}

static double shoelace(const double *xy, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) {
    int j = (i + 1) % n;
    s += xy[2 * i] * xy[2 * j + 1] - xy[2 * j] * xy[2 * i + 1];
  }
  return fabs(s) / 2;
}

static void put_escaped(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '\\') fputc('\\', f);
    fputc(*s, f);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: gen_coco_bench OUT_DIR [IMAGES=5000] [DETS_PER_PAIR=40] [SEED=1]\n");
    return 2;
  }
  const char *out = argv[1];
  int nimg = argc > 2 ? atoi(argv[2]) : 5000, per = argc > 3 ? atoi(argv[3]) : 40;
  rs = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
  char p[4096];
  snprintf(p, sizeof p, "%s/gt.json", out);
  FILE *fg = fopen(p, "w");
  snprintf(p, sizeof p, "%s/dt_bbox.json", out);
  FILE *fb = fopen(p, "w");
  snprintf(p, sizeof p, "%s/dt_segm.json", out);
  FILE *fs = fopen(p, "w");
  if (!fg || !fb || !fs) {
    fprintf(stderr, "gen_coco_bench: cannot write into %s\n", out);
    return 1;
  }
  fprintf(fg, "{\"info\": {\"description\": \"gen_coco_bench %d images\"}, \"images\": [", nimg);
  int *w = malloc(sizeof(int) * nimg), *h = malloc(sizeof(int) * nimg);
  for (int i = 0; i < nimg; i++) {
    w[i] = irand(400, 640);
    h[i] = irand(300, 640);
    fprintf(fg, "%s{\"id\": %d, \"width\": %d, \"height\": %d, \"file_name\": \"%012d.jpg\"}", i ? ", " : "",
            100000 + 7 * i, w[i], h[i], 100000 + 7 * i);
  }
  fprintf(fg, "], \"categories\": [");
  for (int k = 0; k < 80; k++) fprintf(fg, "%s{\"id\": %d, \"name\": \"c%d\"}", k ? ", " : "", CAT_IDS[k], CAT_IDS[k]);
  fprintf(fg, "], \"annotations\": [");
  fputc('[', fb);
  fputc('[', fs);
  long ngt = 0, ndt = 0, ann_id = 1;
  rv_ctx *ctx = rv_ctx_create();
  gt_obj objs[32];
  for (int i = 0; i < nimg; i++) {
    int id = 100000 + 7 * i, n = irand(1, 13), ncat = irand(1, 4), cats[4];
    for (int c = 0; c < ncat; c++) cats[c] = irand(0, 79);
    for (int j = 0; j < n; j++) {
      gt_obj *o = &objs[j];
      o->cat = cats[irand(0, ncat - 1)];
      double u = urand();
      o->r = u < 0.4 ? 2 + 14 * urand() : u < 0.75 ? 16 + 40 * urand() : 56 + 150 * urand();
      o->cx = urand() * w[i];
      o->cy = urand() * h[i];
      o->n = irand(5, 20);
      star(o->xy, o->n, o->cx, o->cy, o->r);
      rv_rle r = {0};
      rv_rle_from_poly(&r, o->xy, (size_t)o->n, (uint32_t)h[i], (uint32_t)w[i], ctx);
      double bb[4];
      rv_rle_to_bbox(&r, bb);
      int crowd = urand() < 0.01;
      fprintf(fg, "%s{\"id\": %ld, \"image_id\": %d, \"category_id\": %d, \"iscrowd\": %d, \"area\": %.4f, "
                  "\"bbox\": [%g, %g, %g, %g], \"segmentation\": ",
              ngt ? ", " : "", ann_id++, id, CAT_IDS[o->cat], crowd, crowd ? (double)rv_rle_area(&r) : shoelace(o->xy, o->n),
              bb[0], bb[1], bb[2], bb[3]);
      if (crowd) {
        fprintf(fg, "{\"size\": [%d, %d], \"counts\": [", h[i], w[i]);
        for (size_t q = 0; q < r.m; q++) fprintf(fg, "%s%u", q ? ", " : "", r.cnts[q]);
        fprintf(fg, "]}}");
      } else {
        fprintf(fg, "[[");
        for (int q = 0; q < 2 * o->n; q++) fprintf(fg, "%s%g", q ? ", " : "", o->xy[q]);
        fprintf(fg, "]]}");
      }
      rv_rle_free(&r);
      ngt++;
    }
    /* detections per category present in the image */
    for (int c = 0; c < ncat; c++) {
      int dup = 0;
      for (int c2 = 0; c2 < c; c2++) dup |= cats[c2] == cats[c];
      if (dup) continue;
      for (int d = 0; d < per; d++) {
        double xy[40], cx, cy, r;
        int nv;
        /* a jittered gt of this category, or a false positive */
        int src = -1;
        for (int t = 0; t < 3 && src < 0; t++) {
          int j = irand(0, n - 1);
          if (objs[j].cat == cats[c]) src = j;
        }
        if (src >= 0 && urand() < 0.7) {
          double s = 0.15 * urand();
          cx = objs[src].cx + objs[src].r * s * (urand() - 0.5);
          cy = objs[src].cy + objs[src].r * s * (urand() - 0.5);
          r = objs[src].r * (0.85 + 0.3 * urand());
          nv = objs[src].n;
        } else {
          cx = urand() * w[i];
          cy = urand() * h[i];
          r = 2 + 100 * urand() * urand();
          nv = irand(5, 20);
        }
        star(xy, nv, cx, cy, r);
        rv_rle m = {0};
        rv_rle_from_poly(&m, xy, (size_t)nv, (uint32_t)h[i], (uint32_t)w[i], ctx);
        double bb[4];
        rv_rle_to_bbox(&m, bb);
        double score = round(urand() * 1e6) / 1e6;
        fprintf(fb, "%s{\"image_id\": %d, \"bbox\": [%.17g, %.17g, %.17g, %.17g], \"score\": %.17g, \"category_id\": %d}",
                ndt ? ", " : "", id, bb[0] + urand() - 0.5, bb[1] + urand() - 0.5, bb[2], bb[3], score, CAT_IDS[cats[c]]);
        char *str = rv_rle_to_string(&m);
        fprintf(fs, "%s{\"image_id\": %d, \"bbox\": [%.17g, %.17g, %.17g, %.17g], \"score\": %.17g, \"category_id\": %d, "
                    "\"segmentation\": {\"size\": [%d, %d], \"counts\": \"",
                ndt ? ", " : "", id, bb[0], bb[1], bb[2], bb[3], score, CAT_IDS[cats[c]], h[i], w[i]);
        put_escaped(fs, str);
        fputs("\"}}", fs);
        free(str);
        rv_rle_free(&m);
        ndt++;
      }
    }
  }
  fputs("]}\n", fg);
  fputs("]\n", fb);
  fputs("]\n", fs);
  fclose(fg);
  fclose(fb);
  fclose(fs);
  rv_ctx_free(ctx);
  free(w);
  free(h);
  fprintf(stderr, "gen_coco_bench: %d images, %ld gt, %ld detections in %s\n", nimg, ngt, ndt, out);
  return 0;
}
