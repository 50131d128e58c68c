/* Named weight tensors: the common in-memory form of safetensors files and .pth checkpoints.
 *
 *   rv_weights *w;
 *   if (rv_weights_open(&w, "model.safetensors", ctx) != RV_OK) ...;   // or a .pth
 *   const rv_wtensor *t = rv_weights_find(w, "backbone.patch_embed.proj.0.weight");
 *   float *buf = ...; rv_wtensor_to_f32(t, buf);                       // any float dtype
 *   const char *cfg = rv_weights_meta(w, "config");                    // NULL if absent
 *   rv_weights_free(w);
 *
 * A safetensors file is mmapped and its tensors point into the map (zero copy); a pipe or
 * other stream is read into memory instead (rv_file_map, core/fs.h). Readers
 * validate everything (header JSON, dtypes, shapes, offsets inside the file, no overlap
 * past the end, sizes that overflow) and fail with RV_ERR_FORMAT and a one-line message
 * naming the file. Weights are immutable after loading and may be shared between threads.
 */
#ifndef RV_CORE_WEIGHTS_H
#define RV_CORE_WEIGHTS_H

#include "core/rv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  RV_DT_F32 = 0, RV_DT_F16, RV_DT_BF16, RV_DT_F64, RV_DT_I64, RV_DT_I32, RV_DT_I16,
  RV_DT_I8, RV_DT_U8, RV_DT_BOOL, RV_DT_COUNT
} rv_dtype;

const char *rv_dtype_name(rv_dtype dt);      /* safetensors spelling: "F32", "I64"... */
int rv_dtype_from_name(const char *s, rv_dtype *out); /* 0 ok, -1 unknown */
size_t rv_dtype_size(rv_dtype dt);

#define RV_MAX_DIMS 8

typedef struct {
  char *name;
  rv_dtype dtype;
  int ndim;                   /* 0 for a scalar */
  int64_t shape[RV_MAX_DIMS];
  const void *data;           /* little-endian, contiguous, row-major */
  size_t nbytes;
} rv_wtensor;

typedef struct rv_weights rv_weights;

/* Opens by content: a zip (PyTorch >= 1.6 .pth) or a safetensors file; anything but a
 * regular file (a pipe, --weights <(cat x.pth)) is read into memory first, up to
 * RV_WEIGHTS_STREAM_MAX bytes, then opened by its content the same way (formats/weights_open.c). */
#define RV_WEIGHTS_STREAM_MAX ((size_t)8 << 30)
rv_status rv_weights_open(rv_weights **out, const char *path, rv_ctx *ctx);
rv_status rv_safetensors_open(rv_weights **out, const char *path, rv_ctx *ctx);
/* Parse a safetensors image already in memory; the buffer is copied. `name` is used in
 * error messages. */
rv_status rv_safetensors_parse(rv_weights **out, const void *buf, size_t len,
                               const char *name, rv_ctx *ctx);
void rv_weights_free(rv_weights *w);

int rv_weights_count(const rv_weights *w);
const rv_wtensor *rv_weights_get(const rv_weights *w, int i);
const rv_wtensor *rv_weights_find(const rv_weights *w, const char *name);
int rv_weights_meta_count(const rv_weights *w);
const char *rv_weights_meta_key(const rv_weights *w, int i);
const char *rv_weights_meta(const rv_weights *w, const char *key);
const char *rv_weights_path(const rv_weights *w);

size_t rv_wtensor_numel(const rv_wtensor *t);
/* Convert any float or integer dtype to float32 (count = numel). */
void rv_wtensor_to_f32(const rv_wtensor *t, float *dst);

/* Build a weights set in memory (used by the .pth reader and by tests). The builder takes
 * ownership of `owned` buffers passed to rv_weights_add_owned (freed with rv_free). */
rv_weights *rv_weights_new(const char *path);
rv_status rv_weights_add(rv_weights *w, const char *name, rv_dtype dt, int ndim,
                         const int64_t *shape, const void *data, size_t nbytes, int take_ownership,
                         rv_ctx *ctx);
rv_status rv_weights_set_meta(rv_weights *w, const char *key, const char *value);
/* Keep a buffer alive for the lifetime of w (freed with rv_free). */
rv_status rv_weights_adopt(rv_weights *w, void *buf);

/* Write tensors (in the given order) and metadata as a safetensors file. Written to a
 * temporary file beside `path` and renamed: on failure nothing is left behind. */
rv_status rv_safetensors_write(const char *path, const rv_weights *w, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
