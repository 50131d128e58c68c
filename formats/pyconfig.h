/* mmcv Python-literal configs (the text saved in a checkpoint's meta['config'] and in
 * train_config.py files) parsed into a cJSON tree, without Python.
 *
 *   cJSON *cfg;
 *   if (rv_pyconfig_parse(&cfg, rv_weights_meta(w, "config"), "ckpt.pth:config", ctx) != RV_OK)
 *     ...;                                     // "ckpt.pth:config:12:7: expected ')' ..."
 *   cJSON *model = cJSON_GetObjectItemCaseSensitive(cfg, "model");
 *   const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(model, "type"));
 *   cJSON_Delete(cfg);
 *
 * The subset: top-level `name = expr` statements (one per line, or separated by ';'; a
 * later assignment replaces an earlier one), where expr is a dict(key=value, ...) call, a
 * {key: value} literal (string or int keys), a [list], a (tuple) or bare `a, b` tuple (both
 * become JSON arrays), range(...) (an array), strings ('...', "...", triple-quoted, r'',
 * escapes, adjacent literals concatenated), ints (also 0x/0o/0b, with _), floats (1e-6, .5),
 * True/False/None, unary +/- on numbers, and the name of an earlier top-level variable
 * (a deep copy of its value). Comments, blank lines, backslash continuations and line
 * breaks inside brackets are accepted. Anything else (operators, imports, attribute access,
 * other calls, f-strings, bytes) is an RV_ERR_FORMAT error "NAME:LINE:COL: message".
 * Nesting is limited to 200 levels and range() to 1,000,000 items.
 */
#ifndef RV_CORE_PYCONFIG_H
#define RV_CORE_PYCONFIG_H

#include "core/rv.h"
#include <cjson/cJSON.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parse NUL-terminated text. On success *out is a cJSON object (top-level names in
 * assignment order) that the caller frees with cJSON_Delete. */
rv_status rv_pyconfig_parse(cJSON **out, const char *text, const char *name, rv_ctx *ctx);
/* The same for text[0..len) (a NUL byte inside is an error). */
rv_status rv_pyconfig_parse_len(cJSON **out, const char *text, size_t len, const char *name,
                                rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
