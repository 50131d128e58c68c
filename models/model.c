/* Whole models: architecture discovery (meta config text, weights, name), loading and the
 * end-to-end test path: pre-processing, then the family's ops (models/family.h) with the
 * backbone as its features function, the same for every family. */
#include "models/model.h"

#include "kernels/ops.h"
#include "formats/pyconfig.h"
#include "datasets/classes.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rv_model {
  const rv_family *family;
  rv_task task;
  char arch[32];
  const char *source;
  rv_ravlt *backbone;
  const rv_family_ops *ops;     /* the family's (models/family.h) */
  void *head;                   /* its state: the neck and heads after the backbone */
  rv_family_load parts;         /* what its load reported (classes, masks, parts) */
  rv_seg_test_cfg seg_test;     /* whole / slide (segmentation families use it) */
  rv_preprocess_params pre;
  int num_classes;
  char **class_names;           /* from meta CLASSES, or NULL */
  unsigned char (*palette)[3];  /* from meta PALETTE (RGB), or NULL */
  const rv_class_set *builtin;  /* COCO / ADE20K when the class count matches */
  char *config_text;            /* meta config text (a copy), or NULL */
  /* the calls in flight (core/rv.h "Calls"): the one mutable member, changed atomically by
   * the calls that share the model (its storage is the heap's, so the const of the entry
   * points is cast away legally) */
  rv_share share;
};

static const char *const MODEL_NAMES[] = {
    "semantic-fpn-ravlt-t", "semantic-fpn-ravlt-s", "semantic-fpn-ravlt-b", "semantic-fpn-ravlt-l",
    "upernet-ravlt-s", "upernet-ravlt-b", "upernet-ravlt-l",
    "retinanet-ravlt-t", "retinanet-ravlt-s", "retinanet-ravlt-b", "retinanet-ravlt-l",
    "mask-rcnn-ravlt-t", "mask-rcnn-ravlt-s", "mask-rcnn-ravlt-b", "mask-rcnn-ravlt-l",
    "cascade-mask-rcnn-ravlt-s", "cascade-mask-rcnn-ravlt-b", "cascade-mask-rcnn-ravlt-l",
    NULL};

const char *const *rv_model_names(void) { return MODEL_NAMES; }

static const cJSON *get(const cJSON *o, const char *key) {
  return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static int get_num(const cJSON *o, const char *key, double *v) {
  const cJSON *x = get(o, key);
  if (!cJSON_IsNumber(x)) return 0;
  *v = x->valuedouble;
  return 1;
}

/* The first MultiScaleFlipAug (or Resize) img_scale and Pad size_divisor of the test
 * pipeline: data.test.pipeline, else test_pipeline. */
static void read_pipeline(const cJSON *cfg, rv_preprocess_params *p) {
  const cJSON *pipe = get(get(get(cfg, "data"), "test"), "pipeline");
  if (!cJSON_IsArray(pipe)) pipe = get(cfg, "test_pipeline");
  if (!cJSON_IsArray(pipe)) return;
  int saw_transforms = 0, pad = 0;
  const cJSON *step;
  cJSON_ArrayForEach(step, pipe) {
    const char *type = cJSON_GetStringValue(get(step, "type"));
    if (!type) continue;
    const cJSON *sc = get(step, "img_scale");
    if ((strcmp(type, "MultiScaleFlipAug") == 0 || strcmp(type, "Resize") == 0) && cJSON_GetArraySize(sc) == 2 &&
        cJSON_IsNumber(cJSON_GetArrayItem(sc, 0))) {
      p->scale_w = cJSON_GetArrayItem(sc, 0)->valueint;
      p->scale_h = cJSON_GetArrayItem(sc, 1)->valueint;
    }
    const cJSON *inner = get(step, "transforms"), *t;
    if (!cJSON_IsArray(inner)) continue;
    saw_transforms = 1;
    cJSON_ArrayForEach(t, inner) {
      const char *tt = cJSON_GetStringValue(get(t, "type"));
      double v;
      if (tt && strcmp(tt, "Pad") == 0 && get_num(t, "size_divisor", &v)) pad = (int)v;
    }
  }
  /* a test pipeline that lists its transforms and has no Pad (mmseg's ADE20K) pads nothing */
  if (pad) p->size_divisor = pad;
  else if (saw_transforms) p->size_divisor = 0;
}

static rv_status backbone_from_meta(rv_ravlt_config *bc, const cJSON *bb, rv_ctx *ctx) {
  /* the GLTA arguments have the names rv_ravlt_config_from_json reads */
  char *txt = cJSON_PrintUnformatted(bb);
  if (!txt) return rv_error(ctx, RV_ERR_NOMEM, "out of memory");
  rv_status st = rv_ravlt_config_from_json(bc, txt, ctx);
  free(txt);
  return st;
}

static rv_status load_classes(rv_model *m, const rv_weights *w, rv_ctx *ctx) {
  const char *cls = rv_weights_meta(w, "CLASSES");
  if (cls) {
    cJSON *a = cJSON_Parse(cls);
    int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
    if (n > 0 && n == m->num_classes) {
      m->class_names = calloc((size_t)n, sizeof *m->class_names);
      for (int i = 0; m->class_names && i < n; i++) {
        const char *s = cJSON_GetStringValue(cJSON_GetArrayItem(a, i));
        size_t len = s ? strlen(s) : 0;
        m->class_names[i] = malloc(len + 1);
        if (!m->class_names[i]) break;
        memcpy(m->class_names[i], s ? s : "", len + 1);
      }
    } else if (n >= 0) {
      rv_log(ctx, RV_LOG_WARN, "%s: meta CLASSES has %d names but the model has %d classes; using built-in names",
             rv_weights_path(w), n, m->num_classes);
    }
    cJSON_Delete(a);
  }
  const char *pal = rv_weights_meta(w, "PALETTE");
  if (pal) {
    cJSON *a = cJSON_Parse(pal);
    if (cJSON_IsArray(a) && cJSON_GetArraySize(a) == m->num_classes) {
      m->palette = calloc((size_t)m->num_classes, sizeof *m->palette);
      for (int i = 0; m->palette && i < m->num_classes; i++) {
        const cJSON *c = cJSON_GetArrayItem(a, i);
        for (int k = 0; k < 3; k++) {
          const cJSON *v = cJSON_GetArrayItem(c, k);
          m->palette[i][k] = (unsigned char)(cJSON_IsNumber(v) ? v->valueint : 0);
        }
      }
    }
    cJSON_Delete(a);
  }
  /* the family's data set's names when the class count is theirs */
  const rv_class_set *cs = m->family->classes ? rv_class_set_find(m->family->classes) : NULL;
  if (cs && cs->n == m->num_classes) m->builtin = cs;
  return RV_OK;
}

/* The family of the meta config's model (model.type, decode_head.type). */
static const rv_family *family_of_config(const char *model_type, const cJSON *model) {
  return rv_family_by_mmcv(model_type, cJSON_GetStringValue(get(get(model, "decode_head"), "type")));
}

/* The mmcv types of task's families, from the table, sep between them: "FPNHead/UPerHead"
 * (segmentation: decode_head.type), "RetinaNet, CascadeRCNN, MaskRCNN" (detection:
 * model.type). */
static void family_types(char *buf, size_t cap, rv_task task, const char *sep) {
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < RV_FAMILY_COUNT && o < cap; i++) {
    const rv_family *f = rv_family_get(i);
    if (f->task == task)
      o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? sep : "", f->mmcv_head ? f->mmcv_head : f->mmcv_type);
  }
}

/* the table's ops column, by family id */
static const rv_family_ops *const FAMILY_OPS[RV_FAMILY_COUNT] = {RV_MODEL_FAMILIES(RV_FAMILY_OPS)};

/* Keys a dense-prediction checkpoint carries that no test-time model uses. */
static const char *const UNUSED_OK[] = {"auxiliary_head.", NULL};

static rv_status build(rv_model *m, rv_params *P, const char *name, rv_ctx *ctx) {
  const rv_weights *w = P->w;
  const char *path = rv_weights_path(w);
  rv_ravlt_config bc;
  int have_bc = 0;
  const rv_family *fam = NULL;
  cJSON *cfg = NULL;
  const cJSON *model = NULL;
  rv_status st = RV_OK;

  /* 1. meta config text */
  const char *text = rv_weights_meta(w, "config");
  if (text) {
    size_t n = strlen(text) + 1;
    if (!(m->config_text = malloc(n))) {
      st = rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", path);
      goto done;
    }
    memcpy(m->config_text, text, n);
  }
  if (text) {
    char label[1100];
    snprintf(label, sizeof label, "%s:config", path);
    st = rv_pyconfig_parse(&cfg, text, label, ctx);
    if (st != RV_OK) {
      rv_log(ctx, RV_LOG_WARN, "%s; reading the architecture from the weights instead", rv_ctx_errmsg(ctx));
      cfg = NULL;
      st = RV_OK;
    }
    model = get(cfg, "model");
    const char *type = cJSON_GetStringValue(get(model, "type"));
    fam = family_of_config(type, model);
    const cJSON *bb = get(model, "backbone");
    const char *bbtype = cJSON_GetStringValue(get(bb, "type"));
    if (fam && bbtype && strcmp(bbtype, "GLTA") == 0) {
      st = backbone_from_meta(&bc, bb, ctx);
      if (st != RV_OK) goto done;
      have_bc = 1;
      m->source = "meta config";
    } else if (type) {
      if (!fam || !bbtype || strcmp(bbtype, "GLTA") != 0) {
        char seg[128], det[128];
        family_types(seg, sizeof seg, RV_TASK_SEGMENT, "/");
        family_types(det, sizeof det, RV_TASK_DETECT, ", ");
        st = rv_error(ctx, RV_ERR_MODEL, "%s: the meta config describes a %s with a %s backbone; ravlt runs RAVLT (GLTA) "
                      "segmentors (EncoderDecoder with %s) and detectors (%s)",
                      path, type, bbtype ? bbtype : "unknown", seg, det);
        goto done;
      }
    }
  }
  /* 3. a name overrides the family */
  const char *bbname = NULL;
  if (name) {
    const rv_family *f = rv_family_by_name(name, &bbname);
    if (!f) {
      st = rv_error(ctx, RV_ERR_ARG, "unknown model name '%s' (see 'ravlt models' or rv_model_names)", name);
      goto done;
    }
    if (fam && fam != f)
      rv_log(ctx, RV_LOG_WARN, "%s: the checkpoint's config says %s, --model says %s; using %s", path, fam->arch, f->arch, f->arch);
    fam = f;
  }
  /* 2. weights */
  if (!fam) {
    fam = rv_family_sniff(w, -1);
    if (!fam) {
      st = rv_error(ctx, RV_ERR_MODEL, "%s: no meta config and no segmentation or detection head keys "
                    "(decode_head.*, rpn_head.*, roi_head.*, bbox_head.*): not a dense-prediction checkpoint; "
                    "a classifier runs with 'ravlt classify'", path);
      goto done;
    }
  }
  if (!have_bc) {
    rv_ctx_clear_error(ctx);
    if (rv_ravlt_config_from_weights(&bc, w, "backbone.", ctx) == RV_OK) {
      have_bc = 1;
      if (!m->source) m->source = name ? "name" : "weights";
    } else if (bbname) {
      char preset[64];
      snprintf(preset, sizeof preset, "%s-backbone", bbname);
      st = rv_ravlt_preset(&bc, preset, ctx);
      if (st != RV_OK) goto done;
      have_bc = 1;
      m->source = "name";
    } else {
      goto done_err_backbone;
    }
  }
  snprintf(m->arch, sizeof m->arch, "%s", fam->arch);
  m->family = fam;
  m->task = fam->task;

  st = rv_ravlt_create_params(&m->backbone, &bc, P, "backbone.", ctx);
  if (st != RV_OK) goto done;

  /* the family: the part after the backbone, its test settings and pipeline */
  m->ops = FAMILY_OPS[fam->id];
  m->seg_test = rv_seg_default_test_cfg();
  m->parts = (rv_family_load){.family = fam, .model = model, .config = cfg, .seg_test = &m->seg_test};
  st = m->ops->load(&m->head, &m->parts, P, ctx);
  if (st != RV_OK) goto done;
  m->pre = m->parts.pre;
  if (cfg) read_pipeline(cfg, &m->pre);
  m->num_classes = m->parts.num_classes;
  st = load_classes(m, w, ctx);
  goto done;

done_err_backbone:
  st = rv_error(ctx, RV_ERR_MODEL, "%s: cannot tell the RAVLT backbone from the weights (%s); pass --model NAME",
                path, rv_ctx_errmsg(ctx));
done:
  cJSON_Delete(cfg);
  return st;
}

rv_status rv_model_from_weights(rv_model **out, const rv_weights *w, const char *name, rv_ctx *ctx) {
  return rv_model_from_weights_ex(out, w, name, NULL, ctx);
}

rv_status rv_model_from_weights_ex(rv_model **out, const rv_weights *w, const char *name,
                                     const rv_model_load_opts *opts, rv_ctx *ctx) {
  *out = NULL;
  rv_model *m = calloc(1, sizeof *m);
  if (!m) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", rv_weights_path(w));
  rv_params P;
  rv_status st = rv_params_init(&P, w, ctx);
  if (st == RV_OK) st = build(m, &P, name, ctx);
  /* every key a part did not consume: PyTorch load_state_dict's unexpected_keys */
  if (st == RV_OK) {
    char what[64];
    snprintf(what, sizeof what, "%s model", m->arch);
    st = rv_params_check_unused(&P, UNUSED_OK, opts && opts->strict, what, ctx);
  }
  rv_params_free(&P);
  if (st != RV_OK) {
    rv_model_free(m);
    return st;
  }
  *out = m;
  return RV_OK;
}

rv_status rv_model_load(rv_model **out, const char *path, const char *name, rv_ctx *ctx) {
  return rv_model_load_ex(out, path, name, NULL, ctx);
}

rv_status rv_model_load_ex(rv_model **out, const char *path, const char *name,
                             const rv_model_load_opts *opts, rv_ctx *ctx) {
  *out = NULL;
  rv_weights *w = NULL;
  RV_TRY(rv_weights_open(&w, path, ctx));
  rv_status st = rv_model_from_weights_ex(out, w, name, opts, ctx);
  rv_weights_free(w); /* every part copied what it needs */
  return st;
}

void rv_model_free(rv_model *m) {
  if (!m) return;
  rv_ravlt_free(m->backbone);
  if (m->ops && m->head) m->ops->free(m->head);
  if (m->class_names)
    for (int i = 0; i < m->num_classes; i++) free(m->class_names[i]);
  free(m->class_names);
  free(m->palette);
  free(m->config_text);
  free(m);
}

int rv_cpu_has_bf16(void) { return rv_bf16_supported(); }

rv_status rv_model_set_precision(rv_model *m, rv_precision p, rv_ctx *ctx) {
  RV_ASSERT(m);
  if (p != RV_PRECISION_F32 && p != RV_PRECISION_BF16)
    return rv_error(ctx, RV_ERR_ARG, "unknown precision %d (f32 or bf16)", (int)p);
  RV_TRY(rv_ravlt_set_bf16(m->backbone, p == RV_PRECISION_BF16, ctx));
  /* the neck and heads (their classifiers stay float32): float32 again on failure */
  rv_status st = m->ops->set_precision(m->head, p, ctx);
  if (st != RV_OK && p == RV_PRECISION_BF16) rv_ravlt_set_bf16(m->backbone, 0, ctx);
  return st;
}

rv_precision rv_model_precision(const rv_model *m) {
  return rv_ravlt_is_bf16(m->backbone) ? RV_PRECISION_BF16 : RV_PRECISION_F32;
}

rv_status rv_precision_parse(const char *name, rv_precision *p, rv_ctx *ctx) {
  if (name && !strcmp(name, "f32")) *p = RV_PRECISION_F32;
  else if (name && !strcmp(name, "bf16")) *p = RV_PRECISION_BF16;
  else
    return rv_error(ctx, RV_ERR_ARG, "unknown precision '%s' (f32 or bf16)",
                    name ? name : "(null)");
  return RV_OK;
}

rv_task rv_model_task(const rv_model *m) { return m->task; }
const char *rv_model_arch(const rv_model *m) { return m->arch; }
const char *rv_model_source(const rv_model *m) { return m->source ? m->source : "weights"; }
const char *rv_model_config_text(const rv_model *m) { return m->config_text; }
int rv_model_num_classes(const rv_model *m) { return m->num_classes; }
const rv_ravlt *rv_model_backbone(const rv_model *m) { return m->backbone; }
const rv_detector *rv_model_detector(const rv_model *m) { return m->parts.detector; }
const rv_seg_decoder *rv_model_seg_decoder(const rv_model *m) { return m->parts.decoder; }
int rv_model_has_masks(const rv_model *m) { return m->parts.has_masks; }
rv_preprocess_params rv_model_preprocess(const rv_model *m) { return m->pre; }
rv_seg_test_cfg *rv_model_seg_test_cfg(rv_model *m) { return &m->seg_test; }

const char *rv_model_class_name(const rv_model *m, int i) {
  if (i < 0 || i >= m->num_classes) return "?";
  if (m->class_names && m->class_names[i]) return m->class_names[i];
  if (m->builtin) return m->builtin->classes[i];
  return "object";
}

int rv_model_has_class_names(const rv_model *m) { return m->class_names != NULL || m->builtin != NULL; }

void rv_model_class_color(const rv_model *m, int i, unsigned char rgb[3]) {
  if (i >= 0 && i < m->num_classes && m->palette) {
    memcpy(rgb, m->palette[i], 3);
    return;
  }
  if (i >= 0 && m->builtin && i < m->builtin->n) {
    memcpy(rgb, m->builtin->palette[i], 3);
    return;
  }
  rv_palette_color(i, rgb);
}

int rv_model_category_id(const rv_model *m, int i) {
  /* the built-in COCO classes (a model of the 80 COCO classes): their category ids */
  if (m->builtin && !strcmp(m->builtin->name, "coco") && i >= 0 && i < RV_COCO_NUM_CLASSES)
    return rv_coco_category_ids[i];
  return i + 1;
}

rv_status rv_model_features(const rv_model *m, rv_tensor feats[RV_RAVLT_STAGES], rv_tensor input,
                            rv_arena *arena, rv_ctx *ctx) {
  return rv_ravlt_forward(m->backbone, arena, input, feats, ctx);
}

/* The features of one input: the model's backbone (the same function for every family). */
static rv_status model_features(void *user, rv_tensor *feats, int num_feats, rv_tensor img, rv_arena *a,
                                rv_ctx *ctx) {
  return rv_family_ravlt_features(((const rv_model *)user)->backbone, feats, num_feats, img, a, ctx);
}

/* A forward of the model's family on x with its meta: r's output fields say what is asked. */
static rv_status family_forward(const rv_model *m, rv_family_run *r, rv_tensor x, const rv_img_meta *meta,
                                rv_arena *arena, rv_ctx *ctx) {
  r->img = x;
  r->meta = meta;
  r->features = model_features;
  r->features_user = (void *)m;
  r->seg_test = &m->seg_test;
  return m->ops->forward(m->head, r, arena, ctx);
}

static const double DEFAULT_RATIOS[] = {0.5, 0.75, 1.0, 1.25, 1.5, 1.75};

rv_share *rv_model_share(const rv_model *m) { return (rv_share *)&m->share; }

static rv_status segment(const rv_model *m, int32_t *labels, const rv_image *bgr,
                         const rv_seg_run_opts *opts, rv_arena *arena, rv_ctx *ctx) {
  rv_arena_mark mark = rv_arena_get_mark(arena);
  rv_status st = RV_OK;
  if (!opts || !opts->aug_test) {
    rv_tensor x;
    rv_img_meta meta;
    rv_family_run r = {0};
    r.labels = labels;
    r.ori_h = bgr->h;
    r.ori_w = bgr->w;
    st = rv_preprocess(&x, &meta, bgr, &m->pre, arena, ctx);
    if (st == RV_OK) st = family_forward(m, &r, x, &meta, arena, ctx);
    rv_arena_release(arena, mark);
    return st;
  }
  const double *ratios = opts->ratios ? opts->ratios : DEFAULT_RATIOS;
  int nr = opts->ratios ? opts->n_ratios : (int)(sizeof DEFAULT_RATIOS / sizeof DEFAULT_RATIOS[0]);
  rv_preprocess_params list[64];
  int n = rv_preprocess_aug_list(list, 64, &m->pre, ratios, nr, opts->flip, bgr->w, bgr->h);
  if (n <= 0 || n > 64) return rv_error(ctx, RV_ERR_ARG, "aug-test needs 1..32 positive ratios");
  const int C = m->num_classes;
  size_t cnt = (size_t)C * (size_t)bgr->h * (size_t)bgr->w;
  float *acc = rv_arena_floats(arena, cnt);
  if (!acc) return rv_error(ctx, RV_ERR_NOMEM, "out of memory for the %d x %d x %d aug-test accumulator", C, bgr->h, bgr->w);
  memset(acc, 0, cnt * sizeof *acc);
  for (int i = 0; i < n && st == RV_OK; i++) {
    rv_arena_mark inner = rv_arena_get_mark(arena);
    rv_tensor x;
    rv_img_meta meta;
    rv_family_run r = {0};
    r.probs = acc;
    r.flipped = list[i].flip;
    r.ori_h = bgr->h;
    r.ori_w = bgr->w;
    st = rv_ctx_check(ctx); /* between the passes: cancelled, or the call's threads anew */
    if (st == RV_OK) st = rv_preprocess(&x, &meta, bgr, &list[i], arena, ctx);
    if (st == RV_OK) st = family_forward(m, &r, x, &meta, arena, ctx);
    rv_arena_release(arena, inner);
  }
  if (st == RV_OK) rv_seg_aug_labels(labels, acc, C, bgr->h, bgr->w, n);
  rv_arena_release(arena, mark);
  return st;
}

rv_status rv_model_segment(const rv_model *m, int32_t *labels, const rv_image *bgr,
                           const rv_seg_run_opts *opts, rv_arena *arena, rv_ctx *ctx) {
  rv_call_begin(ctx, rv_model_share(m));
  return rv_call_end(ctx, segment(m, labels, bgr, opts, arena, ctx));
}

static rv_status detect(const rv_model *m, rv_detections *det, rv_img_meta *meta_out,
                        const rv_image *bgr, rv_arena *arena, rv_ctx *ctx) {
  rv_tensor x;
  rv_img_meta meta;
  rv_family_run r = {0};
  r.det = det;
  RV_TRY(rv_preprocess(&x, &meta, bgr, &m->pre, arena, ctx));
  RV_TRY(family_forward(m, &r, x, &meta, arena, ctx));
  if (meta_out) *meta_out = meta;
  return RV_OK;
}

rv_status rv_model_detect(const rv_model *m, rv_detections *det, rv_img_meta *meta_out,
                          const rv_image *bgr, rv_arena *arena, rv_ctx *ctx) {
  rv_call_begin(ctx, rv_model_share(m));
  return rv_call_end(ctx, detect(m, det, meta_out, bgr, arena, ctx));
}
