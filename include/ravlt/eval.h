/* ravlt public API: evaluation with the official numbers. COCO box/mask AP (pycocotools'
 * COCO, loadRes and COCOeval, bit for bit), COCO run-length encoded masks (maskApi), and
 * ADE20K-style semantic segmentation metrics (mmsegmentation 0.x mIoU).
 *
 *   // COCO: files (or JSON text in memory with the _mem variants)
 *   rv_coco *gt = NULL; rv_coco_results res = {0}; rv_cocoeval *ev = NULL;
 *   rv_cocoeval_params p = rv_cocoeval_default_params(RV_IOU_SEGM);
 *   if (rv_coco_load(&gt, "instances_val2017.json", 1, 0, ctx) == RV_OK &&
 *       rv_coco_load_results(&res, gt, "segm.json", RV_IOU_SEGM, RV_COCO_AREA_BOX, 0, ctx) == RV_OK &&
 *       rv_coco_evaluate(&ev, gt, &res, &p, ctx) == RV_OK) {
 *     double stats[12];
 *     rv_cocoeval_summarize(ev, stats);                 // AP, AP50, AP75, ... (-1 = undefined)
 *   }
 *   rv_cocoeval_free(ev); rv_coco_results_free(&res); rv_coco_free(gt);
 *
 *   // ADE20K mIoU on label maps (the annotation PNG convention: k = class k-1, 0 ignored)
 *   rv_seg_areas acc; rv_seg_areas_init(&acc, 150, ctx);
 *   rv_seg_areas_add_i32(&acc, pred, label, h * w, 1, 255);  // or rv_ade20k_add_pair(PNGs)
 *   rv_seg_metrics m; rv_seg_metrics_compute(&m, &acc, ctx);  // m.mIoU, m.aAcc, m.iou[k]
 *   rv_seg_metrics_free(&m); rv_seg_areas_free(&acc);
 */
#ifndef RAVLT_EVAL_H
#define RAVLT_EVAL_H

#include <ravlt/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- run-length encoded masks (pycocotools common/maskApi.c) ------------------------------
 * A mask of h x w pixels is stored column-major (x-major): counts alternate background /
 * foreground runs starting with background, over pixel index x*h + y; they sum to h*w. */
typedef struct {
  uint32_t h, w;  /* mask size */
  size_t m;       /* number of runs */
  uint32_t *cnts; /* m run lengths (malloc'd, NULL when m == 0) */
  int borrowed;   /* 1: cnts belong to a container (e.g. rv_coco_results' pool), not to the RLE */
} rv_rle;

/* Frees cnts unless borrowed; the RLE becomes empty. */
RV_API void rv_rle_free(rv_rle *r);
/* Deep copy. */
RV_API rv_status rv_rle_copy(rv_rle *dst, const rv_rle *src, rv_ctx *ctx);
/* Encode a column-major mask (M[x*h + y], 0/1). */
RV_API rv_status rv_rle_encode(rv_rle *r, const uint8_t *mask_colmajor, uint32_t h, uint32_t w, rv_ctx *ctx);
/* Encode a row-major mask (M[y*w + x] nonzero = foreground), as a model or a PNG gives it. */
RV_API rv_status rv_rle_encode_rowmajor(rv_rle *r, const uint8_t *mask, uint32_t h, uint32_t w, rv_ctx *ctx);
/* Decode into h*w bytes (0/1), column-major. */
RV_API void rv_rle_decode(const rv_rle *r, uint8_t *mask_colmajor);
/* Compressed "counts" string as COCO JSON stores it (maskApi rleToString). malloc'd; NULL
 * when out of memory. */
RV_API char *rv_rle_to_string(const rv_rle *r);
/* Parse a compressed string; RV_ERR_FORMAT (message names `what`) on a malformed string or
 * counts whose sum differs from h*w. The _n variant reads len characters. */
RV_API rv_status rv_rle_from_string(rv_rle *r, const char *s, uint32_t h, uint32_t w, const char *what,
                                    rv_ctx *ctx);
RV_API rv_status rv_rle_from_string_n(rv_rle *r, const char *s, size_t len, uint32_t h, uint32_t w,
                                      const char *what, rv_ctx *ctx);
/* Uncompressed RLE (COCO {"counts": [...], "size": [h, w]}); validates the sum. */
RV_API rv_status rv_rle_from_counts(rv_rle *r, const uint32_t *counts, size_t m, uint32_t h, uint32_t w,
                                    const char *what, rv_ctx *ctx);
/* Polygon of k points xy[2k] rasterised exactly like maskApi rleFrPoly. */
RV_API rv_status rv_rle_from_poly(rv_rle *r, const double *xy, size_t k, uint32_t h, uint32_t w, rv_ctx *ctx);
/* Box [x, y, w, h] -> RLE (rleFrBbox). */
RV_API rv_status rv_rle_from_bbox(rv_rle *r, const double bb[4], uint32_t h, uint32_t w, rv_ctx *ctx);
/* Union (intersect = 0) or intersection (intersect = 1) of n RLEs (maskApi rleMerge). */
RV_API rv_status rv_rle_merge(rv_rle *out, const rv_rle *in, size_t n, int intersect, rv_ctx *ctx);
/* Foreground pixel count. */
RV_API uint32_t rv_rle_area(const rv_rle *r);
/* Tight box [x, y, w, h] (maskApi rleToBbox). */
RV_API void rv_rle_to_bbox(const rv_rle *r, double bb[4]);
/* IoU matrix o[d*n + g] (rows = detections, like pycocotools' iou()); iscrowd may be NULL
 * (crowd gt: union = the detection's area). */
RV_API void rv_rle_iou(double *o, const rv_rle *dt, size_t m, const rv_rle *gt, size_t n,
                       const uint8_t *iscrowd);
/* Box IoU matrix o[d*n + g] (maskApi bbIou; boxes x, y, w, h). */
RV_API void rv_bbox_iou(double *o, const double *dt, size_t m, const double *gt, size_t n,
                        const uint8_t *iscrowd);
/* IoU of one pair of same-size RLEs. */
RV_API double rv_rle_iou_pair(const rv_rle *dt, const rv_rle *gt, int crowd);

/* ---- COCOeval ------------------------------------------------------------------------- */
typedef enum { RV_IOU_BBOX = 0, RV_IOU_SEGM = 1, RV_IOU_KEYPOINTS = 2 } rv_iou_type;

/* One ground truth annotation or one detection. */
typedef struct {
  int64_t id;          /* gt: annotation id (must be non-zero); dt: index+1 in the results */
  int64_t image_id, category_id;
  double bbox[4];      /* x, y, w, h (bbox evaluation) */
  double area;         /* gt: the file's "area"; dt: see rv_coco_results_prepare (loadRes rules) */
  double score;        /* dt only */
  int iscrowd;         /* gt only */
  int has_bbox, has_segm;
  rv_rle segm;         /* segm evaluation: the mask (gt: polygons merged / RLE) */
} rv_coco_obj;

#define RV_COCO_MAX_IOU 32
#define RV_COCO_MAX_REC 1024
#define RV_COCO_MAX_DETS 8
#define RV_COCO_MAX_AREAS 8

typedef struct {
  rv_iou_type iou_type;
  int n_iou;
  double iou_thrs[RV_COCO_MAX_IOU];   /* np.linspace(.5, .95, 10) */
  int n_rec;
  double rec_thrs[RV_COCO_MAX_REC];   /* np.linspace(0, 1, 101) */
  int n_max_dets;
  int max_dets[RV_COCO_MAX_DETS];     /* ascending: [1, 10, 100] */
  int n_areas;
  double area_rng[RV_COCO_MAX_AREAS][2]; /* all [0,1e10], small [0,1024], medium [1024,9216], large [9216,1e10] */
  const char *area_lbl[RV_COCO_MAX_AREAS];
  int threads; /* OpenMP threads, 0 = default */
  int naive;   /* 1: accumulate with the literal reference code (tests compare the two) */
} rv_cocoeval_params;

/* pycocotools' Params (iouType bbox or segm). */
RV_API rv_cocoeval_params rv_cocoeval_default_params(rv_iou_type t);
/* mmdetection 2.x CocoDataset.evaluate: maxDets = proposal_nums = [100, 300, 1000]. */
RV_API void rv_cocoeval_params_mmdet(rv_cocoeval_params *p);

typedef struct {
  const int64_t *img_ids; size_t n_imgs; /* any order; duplicates allowed (np.unique) */
  const int64_t *cat_ids; size_t n_cats;
  const rv_coco_obj *gt; size_t n_gt;    /* gt outside img_ids/cat_ids are skipped */
  const rv_coco_obj *dt; size_t n_dt;    /* dt outside img_ids/cat_ids are skipped */
} rv_cocoeval_input;

typedef struct rv_cocoeval rv_cocoeval;

/* evaluate(): per (image, category) IoUs and matching for every area range. The inputs must
 * stay valid until rv_cocoeval_accumulate returns. */
RV_API rv_status rv_cocoeval_evaluate(rv_cocoeval **out, const rv_cocoeval_params *p,
                                      const rv_cocoeval_input *in, rv_ctx *ctx);
/* Keypoints (pycocotools iouType='keypoints'): object keypoint similarity instead of IoU.
 * Arrays are parallel to rv_cocoeval_input's gt and dt (object i's keypoints at
 * [i * 3 * n_kpts], x, y, v triples). The gt bbox and area of rv_coco_obj give the OKS scale
 * and the box used when a gt has no visible keypoint; gt_ignore[i] != 0 (num_keypoints == 0)
 * ignores gt i as a crowd does. Use Params('keypoints'): maxDets [20], areas all / medium /
 * large. */
typedef struct {
  int n_kpts;             /* keypoints per object (17 for COCO persons) */
  const double *gt_kpts;  /* n_gt x 3*n_kpts */
  const uint8_t *gt_ignore; /* n_gt, or NULL */
  const double *dt_kpts;  /* n_dt x 3*n_kpts */
  const double *sigmas;   /* n_kpts (per_cat_sigmas = 0), or n_cats x n_kpts in the sorted order of
                             the unique cat_ids */
  int per_cat_sigmas;
  int no_oks;             /* 1: no OKS (pycocotools with useCats = 0 computes none: every dt unmatched) */
  /* exp over v[0..n-1] in place, NULL = libm's exp. A host can pass its own (numpy's, so that
   * OKS equal pycocotools' bit for bit); it may be called from several threads at once. */
  void (*vexp)(double *v, size_t n, void *user);
  void *vexp_user;
} rv_cocoeval_kpts;

RV_API rv_status rv_cocoeval_evaluate_kpts(rv_cocoeval **out, const rv_cocoeval_params *p,
                                           const rv_cocoeval_input *in, const rv_cocoeval_kpts *kp,
                                           rv_ctx *ctx);
/* accumulate(): precision and scores [T][R][K][A][M], recall [T][K][A][M], -1 where undefined. */
RV_API rv_status rv_cocoeval_accumulate(rv_cocoeval *ev, rv_ctx *ctx);
/* summarize(): the 12 stats of _summarizeDets (keypoints: the 10 of _summarizeKps, then 0, 0). */
RV_API void rv_cocoeval_summarize(const rv_cocoeval *ev, double stats[12]);
/* 12, or 10 for keypoints. */
RV_API int rv_cocoeval_num_stats(const rv_cocoeval *ev);
/* pycocotools' 12 (keypoints: 10) printed lines (each ending in '\n'); returns the length
 * written (or needed). */
RV_API int rv_cocoeval_summary_text(const rv_cocoeval *ev, char *buf, size_t size);
/* Sorted unique category ids (K of them) and their AP: mean(precision[:, :, k, 0, -1] > -1),
 * -1 when the category has no gt (mmdet's classwise table). */
RV_API size_t rv_cocoeval_num_cats(const rv_cocoeval *ev);
RV_API int64_t rv_cocoeval_cat_id(const rv_cocoeval *ev, size_t k);
RV_API double rv_cocoeval_category_ap(const rv_cocoeval *ev, size_t k);
/* Accumulated arrays (NULL before accumulate). */
RV_API const double *rv_cocoeval_precision(const rv_cocoeval *ev);
RV_API const double *rv_cocoeval_recall(const rv_cocoeval *ev);
/* scores [T][R][K][A][M] (pycocotools' eval['scores']): the detection score at the position
 * each recall threshold reads, 0 past the end, -1 where undefined. */
RV_API const double *rv_cocoeval_scores(const rv_cocoeval *ev);
RV_API const rv_cocoeval_params *rv_cocoeval_get_params(const rv_cocoeval *ev);
RV_API void rv_cocoeval_free(rv_cocoeval *ev);

/* ---- COCO annotation and results files (pycocotools' COCO and loadRes rules) ----------- */
typedef struct {
  int64_t id;
  int32_t width, height;
  char *file_name; /* may be NULL */
} rv_coco_image;

typedef struct {
  int64_t id;
  char *name; /* may be NULL */
} rv_coco_category;

typedef struct rv_coco {
  char *path;
  rv_coco_image *images; size_t n_images;     /* file order */
  rv_coco_category *cats; size_t n_cats;      /* file order */
  rv_coco_obj *anns; size_t n_anns;           /* file order; segm filled when loaded with segm */
  int has_segm;
  int64_t *img_ids_sorted; size_t *img_idx_sorted; /* lookup by id */
  int64_t *cat_ids_sorted; size_t *cat_idx_sorted;
} rv_coco;

/* Load a COCO instances file. load_segm: convert every annotation's segmentation to an RLE
 * (needed for segm evaluation). threads: 0 = default. Errors name the file and the entry
 * (e.g. "gt.json: annotations[12]: 'bbox' must be 4 numbers"). */
RV_API rv_status rv_coco_load(rv_coco **out, const char *path, int load_segm, int threads, rv_ctx *ctx);
/* Same from a JSON text in memory (name is used in messages). */
RV_API rv_status rv_coco_load_mem(rv_coco **out, const char *json, size_t len, const char *name,
                                  int load_segm, int threads, rv_ctx *ctx);
RV_API void rv_coco_free(rv_coco *c);
RV_API const rv_coco_image *rv_coco_find_image(const rv_coco *c, int64_t id);
RV_API const rv_coco_category *rv_coco_find_category(const rv_coco *c, int64_t id);

/* Detection area under loadRes: the box w*h when the first result has a bbox (what mmdet
 * 2.x fed pycocotools, so the published mask APs use it), or the mask pixel count. */
typedef enum { RV_COCO_AREA_BOX = 0, RV_COCO_AREA_MASK = 1 } rv_coco_area_mode;

typedef struct {
  rv_coco_obj *dets;
  size_t n;
  size_t n_unknown_category;
  void *pool; /* run lengths of the masks read from a file (their segm.borrowed is set) */
} rv_coco_results;

/* Load a results file (a JSON list of {image_id, category_id, score, bbox?, segmentation?})
 * and apply rv_coco_results_prepare. */
RV_API rv_status rv_coco_load_results(rv_coco_results *r, const rv_coco *gt, const char *path,
                                      rv_iou_type t, rv_coco_area_mode mode, int threads, rv_ctx *ctx);
RV_API rv_status rv_coco_load_results_mem(rv_coco_results *r, const rv_coco *gt, const char *json,
                                          size_t len, const char *name, rv_iou_type t,
                                          rv_coco_area_mode mode, int threads, rv_ctx *ctx);
/* loadRes rules on detections filled in memory (image_id, category_id, score, has_bbox/bbox,
 * has_segm/segm): ids, areas, missing boxes or masks, image and mask size checks. The
 * segmentations may have any size (as pycocotools: a mask whose size differs from its gt's has
 * IoU -1 with it, so never matches). `what` names the source in messages. */
RV_API rv_status rv_coco_results_prepare(rv_coco_results *r, const rv_coco *gt, rv_iou_type t,
                                         rv_coco_area_mode mode, const char *what, rv_ctx *ctx);
RV_API void rv_coco_results_free(rv_coco_results *r);
/* Write detections as a COCO results JSON (mmdet's results2json format) to a temporary file
 * renamed into place. */
RV_API rv_status rv_coco_results_write(const char *path, const rv_coco_obj *dets, size_t n,
                                       int with_segm, rv_ctx *ctx);
/* Evaluate results against the gt with the gt's images and categories (evaluate + accumulate). */
RV_API rv_status rv_coco_evaluate(rv_cocoeval **ev, const rv_coco *gt, const rv_coco_results *res,
                                  const rv_cocoeval_params *p, rv_ctx *ctx);

/* ---- semantic segmentation metrics (mmseg 0.x intersect_and_union / eval_metrics) ------- */
typedef struct {
  int num_classes;
  int64_t *intersect, *union_, *pred, *label; /* num_classes each */
} rv_seg_areas;

RV_API rv_status rv_seg_areas_init(rv_seg_areas *a, int num_classes, rv_ctx *ctx);
RV_API void rv_seg_areas_free(rv_seg_areas *a);
RV_API void rv_seg_areas_reset(rv_seg_areas *a);
/* dst += src (same class count). */
RV_API void rv_seg_areas_merge(rv_seg_areas *dst, const rv_seg_areas *src);
/* One image (n pixels, any layout as long as pred and label match): pred holds class indices
 * (0..C-1; other values count as "no class"), label the raw label map. ignore_index: 255 in
 * mmseg. reduce_zero_label (ADE20K): label 0 is ignored and k in 1..C is class k-1. */
RV_API void rv_seg_areas_add_u8(rv_seg_areas *a, const uint8_t *pred, const uint8_t *label, size_t n,
                                int reduce_zero_label, int ignore_index);
RV_API void rv_seg_areas_add_i32(rv_seg_areas *a, const int32_t *pred, const uint8_t *label, size_t n,
                                 int reduce_zero_label, int ignore_index);

typedef struct {
  int num_classes;
  double aAcc, mIoU, mAcc;
  double *iou, *acc; /* num_classes each, NaN where undefined (0/0) */
} rv_seg_metrics;

RV_API rv_status rv_seg_metrics_compute(rv_seg_metrics *m, const rv_seg_areas *a, rv_ctx *ctx);
RV_API void rv_seg_metrics_free(rv_seg_metrics *m);

typedef enum {
  RV_ADE_PRED_ANNOTATION = 0, /* v = class v-1, 0 = no class (values 0..C): `ravlt segment` PNGs */
  RV_ADE_PRED_ZERO_BASED = 1  /* v = class v (0..C-1); any larger value = no class (mmseg) */
} rv_ade_pred_format;

/* Add one image: prediction and ADE20K annotation PNGs, 8-bit grey, same size. */
RV_API rv_status rv_ade20k_add_pair(rv_seg_areas *acc, const char *pred_png, const char *gt_png,
                                    rv_ade_pred_format fmt, rv_ctx *ctx);
/* Every <name>.png of gt_dir against pred_dir/<name>.png (a missing prediction is an error),
 * images in parallel (threads: 0 = default); *n_images = count. */
RV_API rv_status rv_ade20k_eval_dirs(rv_seg_areas *acc, const char *pred_dir, const char *gt_dir,
                                     rv_ade_pred_format fmt, int threads, size_t *n_images, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
