/* Tensor kernels: convolutions, norms, activations, resampling, pooling, GEMM.
 *
 *   // 3x3 conv, stride 2, pad 1, fused ReLU, NCHW in and out:
 *   rv_conv_params p = rv_conv_default_params(3, 2, 1);
 *   p.act = RV_ACT_RELU;
 *   int oh = rv_conv_out_size(h, 3, 2, 1, 1), ow = rv_conv_out_size(w, 3, 2, 1, 1);
 *   rv_conv2d_f32(y, x, weight, bias, n, cin, h, w, cout, p, scratch);
 *
 * Conventions: every tensor is NCHW float32, contiguous. Output first, inputs const.
 * Kernels allocate nothing from the system: the scratch arena is used (and released
 * before returning) where a kernel needs workspace (im2col). Threads: kernels use OpenMP
 * with the calling thread's team size (omp_get_max_threads(): the call's share, set by the
 * model between layers, core/rv.h "Calls"); rv_gemm_f32 shares its blocks among the same
 * team, each a serial OpenBLAS call (OpenBLAS never threads). Every fast kernel has a *_naive twin
 * (plain loops, the reference for tests) in kernels/ref/ under its fast kernel's file name;
 * an _add variant's twin is its plain form followed by the addition.
 */
#ifndef RV_CORE_OPS_H
#define RV_CORE_OPS_H

#include "core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { RV_ACT_NONE = 0, RV_ACT_RELU, RV_ACT_GELU, RV_ACT_SILU, RV_ACT_SIGMOID } rv_act;

/* ---- GEMM ------------------------------------------------------------------------------ */
/* C[M x N] = alpha * op(A)[M x K] * op(B)[K x N] + beta * C, row-major, via OpenBLAS sgemm. */
void rv_gemm_f32(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);
/* Around BLAS calls made inside an OpenMP parallel region, by each thread (kernels/gemm.c):
 * keeps OpenBLAS on the calling thread where its OpenMP runtime is not ours. */
typedef struct {
  void *set; /* libgomp's omp_set_num_threads where it was changed, else NULL */
  int saved;
} rv_blas_serial;
void rv_blas_serial_begin(rv_blas_serial *g);
void rv_blas_serial_end(const rv_blas_serial *g);
void rv_gemm_naive_f32(int trans_a, int trans_b, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc);

/* ---- AVX-512 GEMM kernel (kernels/ukernel.c) ------------------------------------------------
 * rv_ukernel_f32: c[r ldc + t] = (bias ? bias[r] : 0) + sum_{i < k} u[i UK_MR + r] v[i ldv + t]
 * for r < UK_MR, t < nt <= UK_NT, the sum over i in order with FMA; u packed as
 * [co / UK_MR][ci][co % UK_MR] (cout rounded up to UK_MR with zero rows). Only where
 * rv_ukernel_supported() (AVX-512F). */
enum { UK_MR = 8, UK_NT = 48 };
int rv_ukernel_supported(void);
void rv_ukernel_f32(float *c, size_t ldc, const float *u, const float *v, size_t ldv, int k,
                    int nt, const float *bias);
/* The same adding to c: c[r ldc + t] += sum_{i < k} u[i UK_MR + r] v[i ldv + t] (a sum over
 * chunks of k: the dense 3x3 convs of kernels/conv3x3.c). */
void rv_ukernel_acc_f32(float *c, size_t ldc, const float *u, const float *v, size_t ldv, int k,
                        int nt);
/* rv_ukernel_rows_f32: c[r ldc + j] = sum_{i < k} a[r lda + i] b[i UK_RC + j] for r < UK_RR,
 * j < UK_RC (rows of a broadcast, b packed in panels of UK_RC columns): the channels-last
 * Winograd GEMM, tiles as rows and 64 output channels per call. */
enum { UK_RR = 6, UK_RC = 64 };
void rv_ukernel_rows_f32(float *c, size_t ldc, const float *a, size_t lda, const float *b,
                         int k);
/* y[cout x n] = w[cout x cin] x[cin x n] + b (b may be NULL): the kernel with x read in place
 * where supported and n >= 4096 (kernels/ukernel.c), else BLAS. Workspace: cout cin floats;
 * RV_ERR_NOMEM if scratch is short. */
rv_status rv_pointwise_f32(float *y, const float *w, const float *b, const float *x, int cout,
                           int cin, size_t n, rv_arena *scratch);
/* The same with post(row, len) applied to every stretch of finished output (an elementwise
 * function such as an activation: the kernel path calls it on each 8 x 48 block while it is
 * in cache, the BLAS path on whole rows after the GEMM; NULL: none). */
typedef void (*rv_row_fn)(float *row, size_t n);
rv_status rv_pointwise_post_f32(float *y, const float *w, const float *b, const float *x,
                                int cout, int cin, size_t n, rv_row_fn post, rv_arena *scratch);
/* The same with a post function that has a context and knows where it is, called once per
 * finished block: post(arg, blk, ldy, c0, rows, p0, len) with blk = y + c0 n + p0, rows
 * output channels from c0 (ldy = n apart) of len pixels from p0; for an epilogue that reads
 * another map at the same place (a residual add). */
typedef void (*rv_block_fn)(void *arg, float *blk, size_t ldy, int c0, int rows, size_t p0,
                            size_t len);
/* A row function as a block one (each of the block's rows in turn): post rv_row_post_block,
 * arg an rv_row_post holding it. */
typedef struct {
  rv_row_fn fn;
} rv_row_post;
void rv_row_post_block(void *arg, float *blk, size_t ldy, int c0, int rows, size_t p0, size_t len);
rv_status rv_pointwise_ctx_f32(float *y, const float *w, const float *b, const float *x,
                               int cout, int cin, size_t n, rv_block_fn post, void *arg,
                               rv_arena *scratch);
void rv_pointwise_naive_f32(float *y, const float *w, const float *b, const float *x, int cout,
                            int cin, size_t n); /* kernels/ref/ */

/* ---- bf16 GEMM (kernels/gemm_bf16.c) -------------------------------------------------------
 * bf16(v): v rounded to the nearest bfloat16, ties to even, denormals flushed to zero (as
 * vcvtne2ps2bf16). rv_pointwise_bf16: y[cout x n] = W x + b as rv_pointwise_post_f32 with
 * both operands rounded to bf16 and products summed in float32 (vdpbf16ps, pairs of
 * consecutive ci); wp from rv_bf16_pack_weights (rv_bf16_packed_words(cout, cin) words, the
 * caller's memory, packed once). Only where rv_bf16_supported() (AVX-512F/BW/VL and
 * AVX512_BF16; 0 when the environment sets RAVLT_DISABLE_BF16 to anything but 0). Workspace:
 * cin * 192 bf16 per thread; RV_ERR_NOMEM if scratch is short. */
int rv_bf16_supported(void);
uint16_t rv_f32_to_bf16(float f);
float rv_bf16_to_f32(uint16_t h);
size_t rv_bf16_packed_words(int cout, int cin);
void rv_bf16_pack_weights(uint32_t *wp, const float *w, int cout, int cin);
rv_status rv_pointwise_bf16(float *y, const uint32_t *wp, const float *b, const float *x,
                            int cout, int cin, size_t n, rv_row_fn post, rv_arena *scratch);
/* Its post with a context, as rv_pointwise_ctx_f32. */
rv_status rv_pointwise_bf16_ctx(float *y, const uint32_t *wp, const float *b, const float *x,
                                int cout, int cin, size_t n, rv_block_fn post, void *arg,
                                rv_arena *scratch);
/* With GELU to bf16 accuracy (rv_vgeluf_bf16, kernels/vmath.h) applied to each output in the
 * kernel's registers before its store: the bits of rv_pointwise_bf16 with that GELU as the
 * post (a load and a store less per output, and no call per row of a block). */
rv_status rv_pointwise_bf16_gelu(float *y, const uint32_t *wp, const float *b, const float *x,
                                 int cout, int cin, size_t n, rv_arena *scratch);
/* Its twin: both operands through rv_f32_to_bf16, double accumulation, then + b. */
void rv_pointwise_bf16_naive(float *y, const float *w, const float *b, const float *x,
                             int cout, int cin, size_t n);
/* Serial pieces (the calling thread only) for products whose operands both change per call
 * (softmax attention). A [m x k] packed as rv_bf16_pack_weights lays it out, bf16(scale a),
 * with group_words between groups of 8 rows (>= 8 * ((k + 1) / 2); larger lets a caller pack
 * a whole head once and address a range of k by offset (8 * c0 / 2 words, c0 even)):
 * rv_bf16_pack_rows for A[r][c] = a[r lda + c], rv_bf16_pack_cols for A[r][c] = a[c lda + r]
 * (A given transposed: channel-major maps). B [k x n] (row stride ldb) into a panel of
 * rv_bf16_panel_words(k, n) words by rv_bf16_pack_panel; then rv_bf16_gemm_panel:
 * y[m x n] (row stride ldy) = A B, or y += A B with accumulate. */
void rv_bf16_pack_rows(uint32_t *wp, size_t group_words, const float *a, size_t lda, int m,
                       int k, float scale);
void rv_bf16_pack_cols(uint32_t *wp, size_t group_words, const float *a, size_t lda, int m,
                       int k, float scale);
size_t rv_bf16_panel_words(int k, int n);
void rv_bf16_pack_panel(uint32_t *vp, const float *b, size_t ldb, int k, int n);
void rv_bf16_gemm_panel(float *y, size_t ldy, const uint32_t *ap, size_t group_words,
                        const uint32_t *vp, int m, int k, int n, int accumulate);
/* rv_bf16_pack_panel for B given transposed, B[r][c] = bt[c ldb + r] (the same panel), its
 * columns [c0, c1) only (c1 <= n rounded up to 48; zeros past n), so threads can share it. */
void rv_bf16_pack_panel_t(uint32_t *vp, const float *bt, size_t ldb, int k, int n, int c0,
                          int c1);
/* out[i] = bf16(x[i]) by the vector instruction (tests: the twin's rounding is the kernel's). */
void rv_bf16_convert_vec(uint16_t *out, const float *x, size_t n);
/* Linear layers (the RoI heads' fc): y[n x cout] += x[n x cin] W^T with both operands
 * rounded to bf16 and float32 sums (the caller writes the bias into y first). W packed once
 * by rv_bf16_linear_pack into rv_bf16_linear_words(cout, cin) words (panels of 48 outputs);
 * x's rows packed per call in blocks of 1024 inputs. Workspace: 8 ceil(n / 8) * 512 words;
 * RV_ERR_NOMEM if scratch is short. Twin: rv_pointwise_bf16_naive on the transposes. */
size_t rv_bf16_linear_words(int cout, int cin);
void rv_bf16_linear_pack(uint32_t *wq, const float *w, int cout, int cin);
rv_status rv_linear_bf16(float *y, const uint32_t *wq, const float *x, int n, int cout,
                         int cin, rv_arena *scratch);
/* The kernel on one block for GEMMs laid out by their caller (the bf16 Winograd):
 * c[r ldc + t] = (accumulate ? c[r ldc + t] : bias ? bias[r] : 0) + sum_{i < k2}
 * dot(u[i 8 + r], v[i ldv + t]) for r < rows <= 8, t < nt <= 48 (u, v pairs of bf16 as
 * rv_bf16_pack_weights / rv_bf16_pack_pairs lay them out). */
void rv_bf16_block(float *c, size_t ldc, const uint32_t *u, const uint32_t *v, size_t ldv,
                   int k2, int rows, int nt, const float *bias, int accumulate);
/* vp[i ldv + t] = bf16 pair (x[2i ldx + t], x[(2i+1) ldx + t]) for i < (k+1)/2, t < n (n a
 * multiple of 16; the row past an odd k reads as zeros). */
void rv_bf16_pack_pairs(uint32_t *vp, size_t ldv, const float *x, size_t ldx, int k, int n);
/* c[r ldc + j] = sum_{i < k2} dot(a[r lda + i], b[i 64 + j]) for r < 6, j < 64 (stored, not
 * added): rows of bf16 pairs broadcast (a row of bf16 values read as pairs), b in panels of
 * 64 columns (the channels-last Winograd GEMM of the RoI heads in bf16). */
void rv_bf16_rows_block(float *c, size_t ldc, const uint32_t *a, size_t lda, const uint32_t *b,
                        int k2);

/* ---- dense 3x3 convs on the GEMM kernels (kernels/conv3x3.c) ----------------------------------
 * y [cout][oh][ow] = act(b + conv3x3(x)) for one image x [cin][h][wd], pad 1, stride 1 or 2,
 * any cin, cout (oh, ow by rv_conv_out_size; b may be NULL): the result of rv_conv2d_f32
 * with those parameters up to the order of the sums (over k = 9 ci + 3 ky + kx with FMA, in
 * order within chunks of 144 rows (bf16: 288), the chunks added in order). Each thread
 * gathers im2col panels of its pixels from x (no column matrix of the image) and multiplies
 * them with weights packed once: rv_conv3x3_f32 on rv_ukernel_f32 (up from
 * rv_conv3x3_pack_f32, rv_conv3x3_packed_floats(cout, cin) floats; AVX-512F:
 * rv_conv3x3_f32_supported()), rv_conv3x3_bf16 on the bf16 kernel (wp from
 * rv_bf16_pack_weights(wp, w, cout, 9 cin), rv_bf16_packed_words(cout, 9 cin) words; both
 * operands rounded to bf16 as rv_pointwise_bf16 rounds them, float32 sums;
 * rv_bf16_supported()). RV_ERR_UNSUPPORTED where the CPU lacks them, RV_ERR_ARG for another
 * stride, RV_ERR_NOMEM if scratch is short (workspace: 236 KB per thread at most). Twin of
 * the bf16 version: rv_conv3x3_bf16_naive (operands through rv_f32_to_bf16, double sums,
 * + b, act). */
int rv_conv3x3_f32_supported(void);
size_t rv_conv3x3_packed_floats(int cout, int cin);
void rv_conv3x3_pack_f32(float *up, const float *w, int cout, int cin);
rv_status rv_conv3x3_f32(float *y, const float *x, const float *up, const float *b, int cin,
                         int h, int wd, int cout, int stride, rv_act act, rv_arena *scratch);
rv_status rv_conv3x3_bf16(float *y, const float *x, const uint32_t *wp, const float *b, int cin,
                          int h, int wd, int cout, int stride, rv_act act, rv_arena *scratch);
void rv_conv3x3_bf16_naive(float *y, const float *x, const float *w, const float *b, int cin,
                           int h, int wd, int cout, int stride, rv_act act);

/* ---- direct dense 3x3 convs for few input channels (kernels/conv3x3_direct.c) -------------------
 * The same conv as rv_conv3x3_f32 (pad 1, stride 1 or 2, one NCHW image, w [cout][cin][3][3]
 * as PyTorch stores it, b may be NULL) by a register-blocked AVX-512 kernel reading x in place:
 * each output sums over k = 9 ci + 3 ky + kx in order with FMA (padding taps skipped), then
 * + b, then act: the order of im2col with a GEMM that does not split k. The weights are
 * packed per call (rv_conv3x3_direct_packed_floats(cout, cin) floats of scratch): meant for
 * small cin (the stem), where im2col and Winograd move more bytes than they multiply.
 * RV_ERR_UNSUPPORTED without AVX-512F (rv_conv3x3_direct_supported()), RV_ERR_ARG for
 * another stride, RV_ERR_NOMEM if scratch is short. */
int rv_conv3x3_direct_supported(void);
size_t rv_conv3x3_direct_packed_floats(int cout, int cin);
rv_status rv_conv3x3_direct_f32(float *y, const float *x, const float *w, const float *b,
                                int cin, int h, int wd, int cout, int stride, rv_act act,
                                rv_arena *scratch);

/* ---- convolution ----------------------------------------------------------------------- */
/* How rv_conv2d_f32 computes a conv. The AUTO modes pick by the rule in kernels/conv.c; the
 * others force a path (Winograd applies only to 3x3 stride-1 undilated ungrouped convs,
 * other convs take AUTO's path). */
typedef enum {
  RV_CONV_AUTO = 0,  /* im2col or F(2x2, 3x3): errors within ~2x of im2col's */
  RV_CONV_AUTO_FAST, /* also F(4x4, 3x3) where faster: errors ~5x im2col's (dense heads) */
  RV_CONV_IM2COL,    /* im2col / direct GEMM / depthwise kernel */
  RV_CONV_WINOGRAD2, /* F(2x2, 3x3) */
  RV_CONV_WINOGRAD4  /* F(4x4, 3x3) */
} rv_conv_algo;

typedef struct {
  int kh, kw;     /* kernel */
  int sh, sw;     /* stride */
  int ph, pw;     /* zero padding, both sides */
  int dh, dw;     /* dilation */
  int groups;
  rv_act act;     /* applied after the bias */
  rv_conv_algo algo; /* RV_CONV_AUTO from rv_conv_default_params */
  int accumulate; /* 1: y = act(y + b + conv): y's contents are added before the act
                   * (a conv over a channel concatenation as a sum of per-slice convs) */
} rv_conv_params;

rv_conv_params rv_conv_default_params(int k, int stride, int pad); /* square, groups 1 */
int rv_conv_out_size(int in, int k, int stride, int pad, int dilation); /* floor formula */

/* y[n,co,oy,ox] = act([y[n,co,oy,ox] if p.accumulate] + b[co] +
 *                 sum_{ci in group, ky, kx} w[co, ci, ky, kx] *
 *                 x[n, g*cin/groups + ci, oy*sh - ph + ky*dh, ox*sw - pw + kx*dw])
 * w: [cout, cin/groups, kh, kw]; b may be NULL. Returns RV_ERR_NOMEM if scratch is short. */
rv_status rv_conv2d_f32(float *y, const float *x, const float *w, const float *b, int n,
                        int cin, int h, int wd, int cout, rv_conv_params p, rv_arena *scratch);
/* The algorithm rv_conv2d_f32 runs a 3x3 stride-1 groups-1 conv with (the requested one,
 * or for RV_CONV_AUTO / RV_CONV_AUTO_FAST the rule of kernels/conv.c): RV_CONV_IM2COL,
 * RV_CONV_WINOGRAD2 or RV_CONV_WINOGRAD4. */
rv_conv_algo rv_conv3x3_algo(rv_conv_algo requested, int n, int cin, int cout, int oh, int ow);
void rv_conv2d_naive_f32(float *y, const float *x, const float *w, const float *b, int n,
                         int cin, int h, int wd, int cout, rv_conv_params p);

/* The same convolution for 3x3 kernels, stride 1, dilation 1, groups 1 (any padding) by
 * Winograd F(m x m, 3 x 3), m = 2 or 4 (kernels/winograd.c): (m+2)^2 GEMMs on transformed
 * weights and input tiles, 2.25x (m = 2) or 4x (m = 4) fewer multiplies, larger float32
 * rounding error than im2col (see the file's comment). Workspace from scratch:
 * (m+2)^2 * cout * cin floats plus a bounded block of tiles; RV_ERR_NOMEM if short.
 * rv_conv2d_f32 calls it where it is faster (rule in kernels/conv.c). */
rv_status rv_conv2d_winograd_f32(float *y, const float *x, const float *w, const float *b,
                                 int n, int cin, int h, int wd, int cout, rv_conv_params p, int m,
                                 rv_arena *scratch);
/* The same with the implementation chosen (tests, benchmarks): RV_WINO_BLAS runs each of
 * the (m+2)^2 GEMMs through BLAS over blocks of up to 4096 tiles; RV_WINO_FUSED has each
 * thread transform, multiply (AVX-512 kernel, U packed once) and invert 48 tiles at a time,
 * RV_ERR_UNSUPPORTED without AVX-512F; RV_WINO_AUTO (rv_conv2d_winograd_f32) takes the fused
 * path where it is supported and the transformed weights fit in 12 MB. */
typedef enum { RV_WINO_AUTO, RV_WINO_BLAS, RV_WINO_FUSED } rv_wino_path;
rv_status rv_conv2d_winograd_path_f32(float *y, const float *x, const float *w, const float *b,
                                      int n, int cin, int h, int wd, int cout, rv_conv_params p,
                                      int m, rv_wino_path path, rv_arena *scratch);

/* The same convolution (pad on all sides, act RV_ACT_NONE or RV_ACT_RELU, no accumulate)
 * for batches of small images with the channels contiguous: x [n][h][w][cin] ->
 * y [n][oh][ow][cout], or NCHW on either side with RV_ROIS_IN_NCHW / RV_ROIS_OUT_NCHW (the
 * ends of a conv stack). Results equal rv_conv2d_winograd_f32's with the same m bit for bit
 * (same transforms, the sums over ci in the same order). Needs AVX-512F:
 * RV_ERR_UNSUPPORTED where rv_winograd_rois_supported() is 0. Workspace: (m+2)^2 cout cin
 * floats (U) plus, per thread, one block's transformed tiles ((m+2)^2 (cin + cout) floats
 * for each of at most 48 tiles, or one image's) and one zero-padded image. */
enum { RV_ROIS_IN_NCHW = 1, RV_ROIS_OUT_NCHW = 2 };
int rv_winograd_rois_supported(void);
/* The same convolution as rv_conv2d_winograd_f32 with m = 4 (pad any, act, accumulate),
 * its a^2 GEMMs in bf16 (kernels/gemm_bf16.c: U and V rounded to bfloat16, M summed in
 * float32; the transforms, bias and act in float32): wp from rv_winograd_bf16_pack (the
 * transformed weights, rv_winograd_bf16_words(cout, cin) words, packed once). Only where
 * rv_bf16_supported(). Workspace: per thread 36 (cin + cout + cin / 2) 48 floats and the
 * transforms' buffer; RV_ERR_NOMEM if scratch is short. */
/* The channels-last RoI path (rv_conv2d_winograd_rois_f32, m = 4) with its GEMMs in bf16
 * the same way: wp from rv_winograd_rois_bf16_pack (U in panels of 64 output channels,
 * rv_winograd_rois_bf16_words words); cin even. */
size_t rv_winograd_rois_bf16_words(int cout, int cin);
rv_status rv_winograd_rois_bf16_pack(uint32_t *wp, const float *w, int cout, int cin);
rv_status rv_conv2d_winograd_rois_bf16(float *y, const float *x, const uint32_t *wp,
                                       const float *b, int n, int cin, int h, int wd, int cout,
                                       int pad, rv_act act, int layout, rv_arena *scratch);
size_t rv_winograd_bf16_words(int cout, int cin);
rv_status rv_winograd_bf16_pack(uint32_t *wp, const float *w, int cout, int cin); /* NOMEM */
rv_status rv_conv2d_winograd_bf16(float *y, const float *x, const uint32_t *wp, const float *b,
                                  int n, int cin, int h, int wd, int cout, rv_conv_params p,
                                  rv_arena *scratch);
/* The same for m = 2 or 4 (the functions above are m = 4): F(2x2)'s 16 GEMMs in bf16; its
 * transforms have entries 0, +-1 (and 1/2 in G), so they amplify the bf16 rounding far
 * less than F(4x4)'s (tests/unit/backbone/test_bf16_gemm.c states both bounds). wp from
 * rv_winograd_bf16_pack_m with the same m (rv_winograd_bf16_words_m words). The bf16
 * mode's 3x3 convs under RV_CONV_AUTO (nn/conv.h: the detection FPN / RPN) take m = 2. */
size_t rv_winograd_bf16_words_m(int cout, int cin, int m);
rv_status rv_winograd_bf16_pack_m(uint32_t *wp, const float *w, int cout, int cin, int m);
rv_status rv_conv2d_winograd_bf16_m(float *y, const float *x, const uint32_t *wp, const float *b,
                                    int n, int cin, int h, int wd, int cout, rv_conv_params p,
                                    int m, rv_arena *scratch);
rv_status rv_conv2d_winograd_rois_f32(float *y, const float *x, const float *w, const float *b,
                                      int n, int cin, int h, int wd, int cout, int pad,
                                      rv_act act, int m, int layout, rv_arena *scratch);

/* y = act([y if accumulate] + b + conv3x3(up(x))), up = rv_resize_bilinear_f32 of x
 * [n][cin][ih][iw] to oh x ow, the conv pad 1, stride 1, w [cout][cin][3][3], b may be NULL,
 * act RV_ACT_NONE or RV_ACT_RELU; y [n][cout][oh][ow]. Computed at the input's resolution
 * (the nine taps as one 1x1 conv, then resized and shifted into y: kernels/upconv.c): 9 ih iw
 * instead of 9 oh ow multiply-adds per cin cout, the same sum up to float rounding.
 * Workspace from scratch: 18 cin floats per output channel of a chunk plus at most 12 MB of
 * tap planes (more only for coarse maps over 43690 pixels); RV_ERR_NOMEM if short. */
rv_status rv_conv3x3_upsampled_f32(float *y, const float *x, const float *w, const float *b,
                                   int n, int cin, int ih, int iw, int cout, int oh, int ow,
                                   rv_act act, int accumulate, rv_arena *scratch);
/* The same with the taps' GEMM in bf16 (rv_pointwise_bf16; its weights rounded and packed
 * per call, 9 cin words per output channel of a chunk of workspace more): the bf16 mode of
 * UperNet's fusion conv. Only where rv_bf16_supported(). */
rv_status rv_conv3x3_upsampled_bf16(float *y, const float *x, const float *w, const float *b,
                                    int n, int cin, int ih, int iw, int cout, int oh, int ow,
                                    rv_act act, int accumulate, rv_arena *scratch);
/* The same with the tap weights packed once (nn/conv.c, when the precision is set):
 * rv_conv3x3_upsampled_bf16_pack writes rv_conv3x3_upsampled_bf16_words(cout, cin) words
 * (the 9 cout x cin tap matrix, rows (co, tap), as rv_bf16_pack_weights lays it out); the
 * results equal rv_conv3x3_upsampled_bf16's bit for bit. */
size_t rv_conv3x3_upsampled_bf16_words(int cout, int cin);
rv_status rv_conv3x3_upsampled_bf16_pack(uint32_t *wp, const float *w, int cout,
                                         int cin); /* NOMEM */
rv_status rv_conv3x3_upsampled_bf16_packed(float *y, const float *x, const uint32_t *wp,
                                           const float *b, int n, int cin, int ih, int iw,
                                           int cout, int oh, int ow, rv_act act, int accumulate,
                                           rv_arena *scratch);
/* Its twin: the naive resize into a buffer, then the naive conv (kernels/ref/upconv.c). */
rv_status rv_conv3x3_upsampled_naive_f32(float *y, const float *x, const float *w,
                                         const float *b, int n, int cin, int ih, int iw,
                                         int cout, int oh, int ow, rv_act act, int accumulate,
                                         rv_arena *scratch);

/* Depthwise k x k (odd k), stride s, pad (k-1)/2*... as given: w [c, 1, k, k], b may be NULL.
 * If `residual` is non-NULL it is added to the output (y = residual + conv(x)); y may alias
 * residual, and x (in place: y = x + conv(x) with residual x) where stride is 1, pad is
 * (k - 1) / 2 and rv_dwconv2d_inplace_ok(wd, k) (rows of up to ~4000 floats). */
int rv_dwconv2d_inplace_ok(int wd, int k);
void rv_dwconv2d_f32(float *y, const float *x, const float *w, const float *b,
                     const float *residual, int n, int c, int h, int wd, int k, int stride,
                     int pad);
/* The same times a gate map of y's shape: y = (residual + b + conv(x)) * gate, the gate
 * applied to each output row while in cache (gate NULL: rv_dwconv2d_f32). */
void rv_dwconv2d_gate_f32(float *y, const float *x, const float *w, const float *b,
                          const float *residual, const float *gate, int n, int c, int h,
                          int wd, int k, int stride, int pad);
void rv_dwconv2d_naive_f32(float *y, const float *x, const float *w, const float *b,
                           const float *residual, int n, int c, int h, int wd, int k,
                           int stride, int pad);

/* ConvTranspose2d kernel 2, stride 2, no padding: y [n, cout, 2h, 2w];
 * w [cin, cout, 2, 2] (PyTorch layout), b may be NULL, then act. */
void rv_deconv2x2_f32(float *y, const float *x, const float *w, const float *b, int n, int cin,
                      int h, int wd, int cout, rv_act act);
void rv_deconv2x2_naive_f32(float *y, const float *x, const float *w, const float *b, int n,
                            int cin, int h, int wd, int cout, rv_act act);

/* ---- normalisation --------------------------------------------------------------------- */
/* Fold eval-mode BatchNorm into the preceding conv: w [cout, per_out], b [cout] (b is
 * written; it may start as zeros): w' = w * g/sqrt(var+eps), b' = (b-mean)*g/sqrt(var+eps)+beta */
void rv_bn_fold(float *w, float *b, int cout, size_t per_out, const float *mean,
                const float *var, const float *gamma, const float *beta, float eps);
/* y = (x - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c], over NCHW. */
void rv_batchnorm_f32(float *y, const float *x, const float *mean, const float *var,
                      const float *gamma, const float *beta, float eps, int n, int c, int hw);
/* LayerNorm over the channel dimension of an NCHW tensor (per pixel), biased variance. */
void rv_layernorm_nchw_f32(float *y, const float *x, const float *g, const float *b, int n,
                           int c, int hw, float eps);
void rv_layernorm_nchw_naive_f32(float *y, const float *x, const float *g, const float *b,
                                 int n, int c, int hw, float eps);
/* LayerNorm over the last dimension of a [rows x cols] matrix. */
void rv_layernorm_rows_f32(float *y, const float *x, const float *g, const float *b, int rows,
                           int cols, float eps);
void rv_layernorm_rows_naive_f32(float *y, const float *x, const float *g, const float *b,
                                 int rows, int cols, float eps); /* kernels/ref/ */

/* ---- element-wise ---------------------------------------------------------------------- */
void rv_act_f32(float *x, size_t n, rv_act act);        /* in place */
void rv_gelu_f32(float *x, size_t n);                   /* 0.5 x (1 + erf(x / sqrt 2)) */
void rv_elu_f32(float *x, size_t n, float alpha);       /* x > 0 ? x : alpha (e^x - 1) */
void rv_relu_f32(float *x, size_t n);
void rv_silu_f32(float *x, size_t n);                   /* x * sigmoid(x) */
void rv_sigmoid_f32(float *x, size_t n);
/* Softmax over the last dimension of [rows x cols]; y may alias x. */
void rv_softmax_rows_f32(float *y, const float *x, int rows, int cols);
/* Softmax over the channel dimension of NCHW (per pixel); y may alias x. */
void rv_softmax_nchw_f32(float *y, const float *x, int n, int c, int hw);
void rv_softmax_rows_naive_f32(float *y, const float *x, int rows, int cols); /* kernels/ref/ */
void rv_softmax_nchw_naive_f32(float *y, const float *x, int n, int c, int hw);

/* ---- resampling and pooling (planes = n*c, each ih x iw) -------------------------------- */
/* Bilinear, align_corners=False, PyTorch semantics: src = (dst + 0.5) * scale - 0.5, clamped
 * at 0; scale = in/out (explicit size). rv_resize_bilinear_scale_f32 takes the scale used by
 * F.interpolate(scale_factor=s) (scale = 1/s). */
void rv_resize_bilinear_f32(float *y, const float *x, int planes, int ih, int iw, int oh, int ow);
void rv_resize_bilinear_scale_f32(float *y, const float *x, int planes, int ih, int iw, int oh,
                                  int ow, double scale_h, double scale_w);
void rv_resize_bilinear_naive_f32(float *y, const float *x, int planes, int ih, int iw, int oh,
                                  int ow);
/* y += rv_resize_bilinear_f32(x) without the resized buffer (the same bits as resizing,
 * then adding); y += x when the sizes are equal. */
void rv_resize_bilinear_add_f32(float *y, const float *x, int planes, int ih, int iw, int oh,
                                int ow);
/* One output coordinate of a bilinear resize (align_corners=False, PyTorch CPU
 * upsample_bilinear2d with a float scale): src = max(scale * (dst + 0.5) - 0.5, 0),
 * out = l0 * in[i0] + l1 * in[i1]. Shared by the resize kernels and fused resize passes. */
typedef struct {
  int i0, i1;
  float l0, l1;
} rv_lin_tap;
static inline rv_lin_tap rv_bilinear_tap(float scale, int dst, int in) {
  float src = (float)((double)scale * ((double)dst + 0.5) - 0.5);
  if (src < 0.0f) src = 0.0f;
  rv_lin_tap t;
  t.i0 = (int)src;
  if (t.i0 > in - 1) t.i0 = in - 1;
  t.i1 = t.i0 + (t.i0 < in - 1 ? 1 : 0);
  t.l1 = src - (float)t.i0;
  if (t.l1 > 1.0f) t.l1 = 1.0f;
  t.l0 = 1.0f - t.l1;
  return t;
}
/* Nearest, PyTorch 'nearest' semantics: src = min(floor(dst * in/out), in-1). */
void rv_resize_nearest_f32(float *y, const float *x, int planes, int ih, int iw, int oh, int ow);
void rv_resize_nearest_naive_f32(float *y, const float *x, int planes, int ih, int iw, int oh,
                                 int ow); /* kernels/ref/ */
/* y += rv_resize_nearest_f32(x), without the resized buffer; y += x when the sizes are
 * equal. */
void rv_resize_nearest_add_f32(float *y, const float *x, int planes, int ih, int iw, int oh,
                               int ow);
/* AdaptiveAvgPool2d: bin i covers [floor(i*in/out), ceil((i+1)*in/out)). */
void rv_adaptive_avgpool_f32(float *y, const float *x, int planes, int ih, int iw, int oh, int ow);
/* MaxPool2d(k, stride, pad) with -inf padding, floor output size. */
void rv_maxpool2d_f32(float *y, const float *x, int planes, int ih, int iw, int k, int stride,
                      int pad);

/* ---- helpers usable by model code ------------------------------------------------------ */
/* y[n,c,:] = act(y[n,c,:] + b[c]) in place over NCHW planes of hw floats; b may be NULL. */
void rv_bias_act_f32(float *y, const float *b, int n, int c, size_t hw, rv_act act);
/* Single-threaded variants (never open an OpenMP region): for use inside a caller's own
 * parallel loop. Same formulas as the plain versions. */
void rv_act_serial_f32(float *x, size_t n, rv_act act);
/* rv_act_serial_f32 on rows rows of n floats, ld apart (a register block's outputs) */
void rv_act_rows_serial_f32(float *x, size_t ld, int rows, size_t n, rv_act act);
void rv_relu_serial_f32(float *x, size_t n);
void rv_gelu_serial_f32(float *x, size_t n);
/* GELU to bf16 accuracy (rv_vgeluf_bf16, kernels/vmath.h: bf16 mode's FFN) */
void rv_gelu_bf16_serial_f32(float *x, size_t n);
void rv_silu_serial_f32(float *x, size_t n);
void rv_sigmoid_serial_f32(float *x, size_t n);

/* rv_blas_init (OpenBLAS kernel selection at process start-up): <ravlt/core.h>. */

#ifdef __cplusplus
}
#endif
#endif
