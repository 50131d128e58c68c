/* The flat C entry points of the Python package (python/ravlt, over ctypes).
 *
 * Every function takes and returns plain scalars, pointers to caller buffers (numpy arrays)
 * and opaque handles, so the binding needs no struct layout: a handle is created by one call,
 * read by counts/copy calls and released by its _free. Each call takes its own rv_ctx (created
 * with rv_py_ctx_new, one per call so threads never share one); on a status other than RV_OK
 * the message is rv_py_errmsg(ctx). These are the functions the shared library must export
 * for the package (tests/cli/test_python.sh): installed as <ravlt/pyapi.h>, RV_API like the rest
 * of the public API, but not part of the umbrella <ravlt/ravlt.h> (C programs use that).
 *
 *   rv_ctx *ctx = rv_py_ctx_new(0);
 *   rv_coco *gt; rv_coco_results *dt; rv_py_eval *ev;
 *   rv_py_coco_load(&gt, "gt.json", NULL, 0, NULL, 1, ctx);
 *   rv_py_results_load(&dt, gt, "dt.json", NULL, 0, NULL, RV_IOU_SEGM, ctx);
 *   rv_py_eval_run(&ev, gt, dt, RV_IOU_SEGM, imgs, ni, cats, nc, iou, 10, rec, 101, md, 3,
 *                  rng, lbl, 4, 1, 0, ctx);
 *   rv_py_eval_accumulate(ev, ctx); rv_py_eval_summarize(ev, stats);
 *   rv_py_eval_free(ev); rv_py_results_free(dt); rv_py_coco_free(gt); rv_py_ctx_free(ctx);
 */
#ifndef RAVLT_PYAPI_H
#define RAVLT_PYAPI_H

#include <ravlt/core.h>
#include <ravlt/analysis.h>
#include <ravlt/eval.h>
#include <ravlt/model.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version of this header: it grows when functions are added (never changed), and the
 * package refuses a library older than the version it was written for. 2: config text,
 * rectangular slide windows, drawing, imwrite. 3: tiled detection. 4: the error analysis and the
 * HTML report. */
#define RV_PY_ABI 4
RV_API int rv_py_abi(void);
/* Process start-up for a host program that is not the CLI (rv_blas_init); returns the
 * OpenBLAS core name. Call once, before other threads use the library. */
RV_API const char *rv_py_init(void);

RV_API rv_ctx *rv_py_ctx_new(int threads);
RV_API void rv_py_ctx_free(rv_ctx *ctx);
RV_API const char *rv_py_errmsg(const rv_ctx *ctx);

/* ---- COCO ground truth ---- */
/* From a file (path) or, when path is NULL, from JSON text json[len] named `name`. load_segm:
 * 0 no masks, 1 masks, 2 no masks yet (the segmentations kept for rv_py_coco_add_masks). */
RV_API rv_status rv_py_coco_load(rv_coco **out, const char *path, const char *json, size_t len, const char *name,
                                 int load_segm, rv_ctx *ctx);
/* The masks of a load_segm = 2 ground truth, in place (RV_OK at once when it has them). */
RV_API rv_status rv_py_coco_add_masks(rv_coco *c, rv_ctx *ctx);
RV_API void rv_py_coco_free(rv_coco *c);
/* counts[0..2] = images, categories, annotations; has_segm. */
RV_API void rv_py_coco_counts(const rv_coco *c, size_t counts[3], int *has_segm);
/* Image ids and category ids in file order (n_images and n_cats entries). */
RV_API void rv_py_coco_ids(const rv_coco *c, int64_t *img_ids, int64_t *cat_ids);

/* ---- Results (loadRes) ---- */
/* From a file, or JSON text; pycocotools' loadRes rules (datasets/coco.h). */
RV_API rv_status rv_py_results_load(rv_coco_results **out, const rv_coco *gt, const char *path, const char *json,
                                    size_t len, const char *name, int iou_type, rv_ctx *ctx);
/* From arrays (loadNumpyAnnotations: boxes, no masks). bbox is n x 4 [x, y, w, h]. */
RV_API rv_status rv_py_results_from_arrays(rv_coco_results **out, const rv_coco *gt, size_t n,
                                           const int64_t *image_id, const int64_t *category_id,
                                           const double *score, const double *bbox, int iou_type,
                                           const char *name, rv_ctx *ctx);
RV_API void rv_py_results_free(rv_coco_results *r);
RV_API size_t rv_py_results_count(const rv_coco_results *r);
/* 1 when every result has a mask (segm evaluation possible without reloading). */
RV_API int rv_py_results_all_segm(const rv_coco_results *r);
/* The loaded fields (any pointer may be NULL): id, image_id, category_id, bbox (n x 4),
 * area, score. */
RV_API void rv_py_results_copy(const rv_coco_results *r, int64_t *id, int64_t *image_id, int64_t *category_id,
                               double *bbox, double *area, double *score);

/* ---- COCOeval ---- */
typedef struct rv_py_eval rv_py_eval;
/* evaluate() with pycocotools' Params: img_ids (np.unique'd here), cat_ids, iou_thrs,
 * rec_thrs, max_dets (sorted here), area_rng (n_areas x 2) and area_lbl. use_cats = 0 pools
 * every category of cat_ids as one (pycocotools useCats=0: per image, the gt and dt of the
 * categories in cat_ids order, K = 1). segm needs gt loaded with masks and results with masks. */
RV_API rv_status rv_py_eval_run(rv_py_eval **out, const rv_coco *gt, const rv_coco_results *dt, int iou_type,
                                const int64_t *img_ids, size_t n_imgs, const int64_t *cat_ids, size_t n_cats,
                                const double *iou_thrs, int n_iou, const double *rec_thrs, int n_rec,
                                const int *max_dets, int n_max_dets, const double *area_rng,
                                const char *const *area_lbl, int n_areas, int use_cats, int threads,
                                rv_ctx *ctx);
/* rv_py_eval_run for keypoints (iouType 'keypoints', OKS): gt_kpts (n_anns x 3*n_kpts, the gt's
 * annotations in file order), gt_ignore (num_keypoints == 0), dt_kpts (n results x 3*n_kpts),
 * sigmas (n_kpts, or n_cats x n_kpts in the order of the sorted unique cat_ids when
 * per_cat_sigmas); vexp: an exp over a buffer in place (NULL: libm's; see rv_cocoeval_kpts). */
RV_API rv_status rv_py_eval_run_kpts(rv_py_eval **out, const rv_coco *gt, const rv_coco_results *dt,
                                     const int64_t *img_ids, size_t n_imgs, const int64_t *cat_ids, size_t n_cats,
                                     const double *iou_thrs, int n_iou, const double *rec_thrs, int n_rec,
                                     const int *max_dets, int n_max_dets, const double *area_rng,
                                     const char *const *area_lbl, int n_areas, int use_cats, int n_kpts,
                                     const double *gt_kpts, const uint8_t *gt_ignore, const double *dt_kpts,
                                     const double *sigmas, int per_cat_sigmas,
                                     void (*vexp)(double *v, size_t n, void *user), int threads, rv_ctx *ctx);
/* 12 summary numbers, or 10 for keypoints. */
RV_API int rv_py_eval_num_stats(const rv_py_eval *ev);
/* evalImgs / ious: the (image, category) pairs with a gt or a detection (category-major, images
 * in id order); dims[4*q..] = image index (into the sorted unique img_ids), category index, D
 * (kept detections), G (gt). */
RV_API size_t rv_py_eval_num_pairs(const rv_py_eval *ev);
RV_API void rv_py_eval_pair_dims(const rv_py_eval *ev, int64_t *dims);
/* Every pair's evaluateImg, concatenated in pair order (sizes from the dims, A areas, T
 * thresholds): dt_ids, dt_scores (D each), gt_ids (G, file order), ious (D x G), gt_order and
 * gt_ignore (A x G: per area, the gt positions with ignored last), dt_matches (A x T x D, gt
 * ids), gt_matches (A x T x G, dt ids), dt_ignore (A x T x D); has_ious per pair. */
RV_API rv_status rv_py_eval_details(const rv_py_eval *ev, int64_t *dt_ids, double *dt_scores, int64_t *gt_ids,
                                    double *ious, int64_t *gt_order, uint8_t *gt_ignore, int64_t *dt_matches,
                                    int64_t *gt_matches, uint8_t *dt_ignore, uint8_t *has_ious, int threads,
                                    rv_ctx *ctx);
RV_API rv_status rv_py_eval_accumulate(rv_py_eval *ev, rv_ctx *ctx);
/* dims[0..4] = T, R, K, A, M of the accumulated arrays. */
RV_API void rv_py_eval_dims(const rv_py_eval *ev, size_t dims[5]);
/* Copies precision and scores (T*R*K*A*M) and recall (T*K*A*M); NULL skips one. Returns 0
 * before accumulate. */
RV_API int rv_py_eval_copy(const rv_py_eval *ev, double *precision, double *recall, double *scores);
RV_API void rv_py_eval_summarize(const rv_py_eval *ev, double stats[12]);
/* pycocotools' 12 printed lines; returns the length (or the length needed). */
RV_API int rv_py_eval_summary_text(const rv_py_eval *ev, char *buf, size_t size);
RV_API void rv_py_eval_free(rv_py_eval *ev);

/* ---- Masks (pycocotools.mask) ---- */
/* Encode n column-major masks (h*w bytes each, Fortran order as pycocotools wants) into
 * compressed strings, a run ending at every change of byte value (maskApi rleEncode):
 * out_strs[i] is malloc'd (rv_py_free). */
RV_API rv_status rv_py_rle_encode(const uint8_t *masks, uint32_t h, uint32_t w, size_t n, char **out_strs,
                                  rv_ctx *ctx);
/* Decode n compressed strings (all h x w) into n column-major masks. */
RV_API rv_status rv_py_rle_decode(const char *const *strs, uint32_t h, uint32_t w, size_t n, uint8_t *masks,
                                  rv_ctx *ctx);
/* area (uint32) and toBbox (n x 4) of n strings of one size; either output may be NULL. */
RV_API rv_status rv_py_rle_area_bbox(const char *const *strs, uint32_t h, uint32_t w, size_t n, uint32_t *area,
                                     double *bbox, rv_ctx *ctx);
/* merge of n strings -> one malloc'd string (*out; rv_py_free). Sizes may differ: as
 * pycocotools, a 0x0 result (out_hw gets the size). */
RV_API rv_status rv_py_rle_merge(const char *const *strs, const uint32_t *hw, size_t n, int intersect,
                                 char **out, uint32_t out_hw[2], rv_ctx *ctx);
/* IoU matrix (m x n) of RLE strings (each with its size). */
RV_API rv_status rv_py_rle_iou(const char *const *dt, const uint32_t *dt_hw, size_t m, const char *const *gt,
                               const uint32_t *gt_hw, size_t n, const uint8_t *iscrowd, double *out,
                               rv_ctx *ctx);
/* Polygons (frPoly: xy[2k] each) -> strings; boxes (frBbox: n x 4) -> strings;
 * uncompressed counts (any sum, as frUncompressedRLE) -> string. Strings are read whatever
 * their counts sum to (pycocotools' rules: decode fails past h*w, area and toBbox as maskApi). */
RV_API rv_status rv_py_rle_from_poly(const double *xy, size_t k, uint32_t h, uint32_t w, char **out, rv_ctx *ctx);
RV_API rv_status rv_py_rle_from_bbox(const double *bb, size_t n, uint32_t h, uint32_t w, char **out, rv_ctx *ctx);
RV_API rv_status rv_py_rle_from_counts(const uint32_t *counts, size_t m, uint32_t h, uint32_t w, char **out,
                                       rv_ctx *ctx);
RV_API void rv_py_free(void *p);

/* ---- mIoU (mmseg 0.x) ---- */
/* One call over n images: pred[i] (int32, or uint8 when pred_u8) and label[i] (uint8) of
 * npix[i] pixels. Outputs: per class intersect/union/pred/label counts (int64 x num_classes),
 * iou and acc (NaN = 0/0) and all_acc. */
RV_API rv_status rv_py_mean_iou(const void *const *pred, int pred_u8, const uint8_t *const *label,
                                const size_t *npix, size_t n, int num_classes, int ignore_index,
                                int reduce_zero_label, double *iou, double *acc, double *all_acc,
                                int64_t *areas, rv_ctx *ctx);

/* ---- Models ---- */
/* A checkpoint path (.pth / .safetensors) or a model-zoo name (downloaded into the cache once,
 * as `ravlt --weights NAME`); name: NULL or the architecture name. */
RV_API rv_status rv_py_model_load(rv_model **out, const char *weights, const char *name, rv_ctx *ctx);
/* rv_py_model_load with strict (rv_model_load_opts.strict): 1 makes an unexpected checkpoint
 * key an error, 0 a warning through the log hook. */
RV_API rv_status rv_py_model_load_ex(rv_model **out, const char *weights, const char *name, int strict,
                                     rv_ctx *ctx);
RV_API void rv_py_model_free(rv_model *m);
/* info[0..2] = task (0 segment, 1 detect), classes, has masks. */
RV_API void rv_py_model_info(const rv_model *m, int info[3]);
RV_API const char *rv_py_model_arch(const rv_model *m);
RV_API const char *rv_py_model_class_name(const rv_model *m, int i);
RV_API int rv_py_model_category_id(const rv_model *m, int i);
/* Segmentation test mode: mode 0 whole, 1 slide (crop and stride, square). Not thread-safe
 * against a running rv_py_segment on the same model. */
RV_API void rv_py_model_set_seg_mode(rv_model *m, int mode, int crop, int stride);
RV_API int rv_py_model_seg_mode(const rv_model *m);
/* labels[h*w] (int32) of an HxWx3 BGR uint8 image (rows contiguous). aug_test: multi-scale
 * (ratios, NULL = mmseg's six) + flip when flip. */
RV_API rv_status rv_py_segment(const rv_model *m, int32_t *labels, const uint8_t *bgr, int h, int w, int aug_test,
                               const double *ratios, int n_ratios, int flip, rv_ctx *ctx);
/* Read an image file as BGR (c = 3) or grayscale (c = 1) into a malloc'd buffer (rv_py_free). */
RV_API rv_status rv_py_imread(const char *path, int gray, uint8_t **data, int hwc[3], rv_ctx *ctx);

typedef struct rv_py_dets rv_py_dets;
RV_API rv_status rv_py_detect(const rv_model *m, rv_py_dets **out, const uint8_t *bgr, int h, int w, rv_ctx *ctx);
/* dims[0..2] = n, mask_h, mask_w (mask_h = 0 without masks). */
RV_API void rv_py_dets_dims(const rv_py_dets *d, int dims[3]);
/* In mmdet's bbox2result order (by class, NMS order within one): bboxes n x 5 [x1, y1, x2,
 * y2, score], labels n, masks n x mask_h x mask_w (0/1; NULL skips). */
RV_API void rv_py_dets_copy(const rv_py_dets *d, float *bboxes5, int32_t *labels, uint8_t *masks);
RV_API void rv_py_dets_free(rv_py_dets *d);

/* ---- ABI 2 ---- */
/* An mmcv config text (a checkpoint's meta['config'], a config.py; formats/pyconfig.h's subset)
 * as JSON text (dicts as objects, tuples and lists as arrays): *out malloc'd (rv_py_free).
 * name is used in messages ("name:LINE:COL: ..."). */
RV_API rv_status rv_py_config_json(const char *text, const char *name, char **out, rv_ctx *ctx);
/* Segmentation test_cfg with (h, w) windows: mode 0 whole, 1 slide; a crop or stride value
 * <= 0 keeps the current one. Not thread-safe against a running rv_py_segment on m. */
RV_API void rv_py_model_set_seg_cfg(rv_model *m, int mode, int crop_h, int crop_w, int stride_h, int stride_w);
/* cfg[0..4] = mode (0 whole, 1 slide), crop h, crop w, stride h, stride w; zeros for a
 * detector. */
RV_API void rv_py_model_seg_cfg(const rv_model *m, int cfg[5]);
/* Drawing in place on an h x w x c uint8 image (rows contiguous, c = 1 or 3), clipped to it,
 * colour bgr[3] (1 channel: bgr[0]): a rectangle's outline of `thickness` pixels, or, with
 * fill_alpha > 0, the rectangle filled and blended (px*(1-a) + colour*a, corners inclusive). */
RV_API rv_status rv_py_draw_rect(uint8_t *img, int h, int w, int c, int x1, int y1, int x2, int y2,
                                 const uint8_t bgr[3], int thickness, float fill_alpha, rv_ctx *ctx);
/* Anti-aliased Hershey simplex text (ASCII), (x, y) the left end of its baseline. */
RV_API rv_status rv_py_draw_text(uint8_t *img, int h, int w, int c, const char *text, int x, int y, double scale,
                                 const uint8_t bgr[3], int thickness, rv_ctx *ctx);
/* size[0..2] = width, height above the baseline, descent below it, as rv_py_draw_text draws. */
RV_API void rv_py_text_size(const char *text, double scale, int thickness, int size[3]);
/* Write an h x w x c uint8 image (c = 1, 3 BGR or 4 BGRA) to path, format by its extension,
 * through a temporary file renamed into place (nothing left behind on failure). */
RV_API rv_status rv_py_imwrite(const char *path, const uint8_t *img, int h, int w, int c, rv_ctx *ctx);

/* ---- ABI 3 ---- */
/* rv_py_detect on tiles (<ravlt/tile.h>: tile size, overlap ratios, nmm 0 NMS / 1 NMM at
 * merge_thr, full: also the whole image, max_dets <= 0: no cap, score_thr: dropped before the
 * merge). Masks come out as whole-image masks (dims: the image's size). */
RV_API rv_status rv_py_detect_tiled(const rv_model *m, rv_py_dets **out, const uint8_t *bgr, int h, int w,
                                    int tile_h, int tile_w, double overlap_h, double overlap_w, int nmm,
                                    float merge_thr, int full, int max_dets, float score_thr, rv_ctx *ctx);

/* ---- ABI 4: the analysis (<ravlt/analysis.h>; python/ravlt/analysis.py) ---- */
/* rv_coco_analyze with pycocotools' evaluation parameters; other (may be NULL) a second
 * results set; n_worst < 0: the default. *json malloc'd (rv_py_free). */
RV_API rv_status rv_py_coco_analyze(char **json, const rv_coco *gt, const rv_coco_results *dt, int iou_type,
                                    const rv_coco_results *other, const char *other_name, const char *images_dir,
                                    const char *name, double conf_score_thr, double conf_iou_thr, int n_worst,
                                    int threads, rv_ctx *ctx);
RV_API rv_status rv_py_seg_analysis_new(rv_seg_analysis **out, int num_classes, const char *const *names, int n_worst,
                                        int threads, rv_ctx *ctx);
/* One image: label (annotation map, h*w uint8), pred (class indices, h*w int32), bgr (h*w*3, may
 * be NULL). */
RV_API rv_status rv_py_seg_analysis_add(rv_seg_analysis *a, const char *name, const uint8_t *bgr, const uint8_t *label,
                                        const int32_t *pred, int h, int w, rv_ctx *ctx);
RV_API rv_status rv_py_seg_analysis_add_dirs(rv_seg_analysis *a, const char *pred_dir, const char *gt_dir,
                                             const char *img_dir, int zero_based, size_t *n_images, rv_ctx *ctx);
RV_API rv_status rv_py_seg_analysis_json(const rv_seg_analysis *a, char **json, rv_ctx *ctx);
RV_API void rv_py_seg_analysis_free(rv_seg_analysis *a);
RV_API rv_status rv_py_write_report(const char *path, const char *const *json, size_t n, const char *title,
                                    rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
