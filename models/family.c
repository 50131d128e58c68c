/* The model family table. See family.h. */
#include "models/family.h"

#include "backbone/ravlt.h"

#include <string.h>

static const rv_family FAMILIES[RV_FAMILY_COUNT] = {
#define RV_FAMILY_ROW_(id, arch, alias, title, prefix, type, head, sniff, task, classes, ops) \
  {RV_FAMILY_##id, arch, alias, title, prefix, type, head, sniff, task, classes},
    RV_MODEL_FAMILIES(RV_FAMILY_ROW_)
#undef RV_FAMILY_ROW_
};

const rv_family *rv_family_get(int id) {
  return id >= 0 && id < RV_FAMILY_COUNT ? &FAMILIES[id] : NULL;
}

const rv_family *rv_family_by_arch(const char *arch) {
  for (int i = 0; arch && i < RV_FAMILY_COUNT; i++)
    if (strcmp(arch, FAMILIES[i].arch) == 0 || (FAMILIES[i].alias && strcmp(arch, FAMILIES[i].alias) == 0))
      return &FAMILIES[i];
  return NULL;
}

const rv_family *rv_family_by_name(const char *name, const char **backbone) {
  for (int i = 0; name && i < RV_FAMILY_COUNT; i++) {
    size_t n = strlen(FAMILIES[i].name_prefix);
    if (strncmp(name, FAMILIES[i].name_prefix, n) == 0) {
      if (backbone) *backbone = name + n;
      return &FAMILIES[i];
    }
  }
  return NULL;
}

const rv_family *rv_family_by_mmcv(const char *type, const char *head_type) {
  for (int i = 0; type && i < RV_FAMILY_COUNT; i++) {
    const rv_family *f = &FAMILIES[i];
    if (strcmp(type, f->mmcv_type) != 0) continue;
    if (!f->mmcv_head || (head_type && strcmp(head_type, f->mmcv_head) == 0)) return f;
  }
  return NULL;
}

const rv_family *rv_family_sniff(const rv_weights *w, int task) {
  for (int i = 0; i < RV_FAMILY_COUNT; i++)
    if ((task < 0 || (int)FAMILIES[i].task == task) && rv_weights_find(w, FAMILIES[i].sniff_key))
      return &FAMILIES[i];
  return NULL;
}

rv_status rv_family_ravlt_features(void *user, rv_tensor *feats, int num_feats, rv_tensor img,
                                   rv_arena *a, rv_ctx *ctx) {
  const rv_ravlt *m = user;
  if (num_feats < 1 || num_feats > RV_RAVLT_STAGES)
    return rv_error(ctx, RV_ERR_MODEL, "the head takes %d features, RAVLT gives at most %d", num_feats,
                    RV_RAVLT_STAGES);
  rv_tensor out[RV_RAVLT_STAGES];
  RV_TRY(rv_ravlt_forward(m, a, img, out, ctx));
  /* the present outputs, in stage order, are the head's inputs (in_index 0..3) */
  int k = 0;
  for (int i = 0; i < RV_RAVLT_STAGES; i++)
    if (out[i].data) {
      if (k == num_feats)
        return rv_error(ctx, RV_ERR_MODEL, "the backbone gives more outputs than the head's %d inputs",
                        num_feats);
      feats[k++] = out[i];
    }
  if (k != num_feats)
    return rv_error(ctx, RV_ERR_MODEL, "the backbone gives %d outputs (out_indices), the head takes %d", k,
                    num_feats);
  return RV_OK;
}
