/* Small file-system helpers shared by the library and the CLI.
 *
 *   if (rv_mkdirs("out/masks", ctx) != RV_OK) ...rv_ctx_errmsg(ctx)...;   // mkdir -p
 */
#ifndef RV_CORE_FS_H
#define RV_CORE_FS_H

#include "core/rv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Create dir and its missing parents (mode 0777 & umask). RV_ERR_ARG if the path is too
 * long, RV_ERR_IO naming the folder if one cannot be created or dir is not a folder. */
rv_status rv_mkdirs(const char *dir, rv_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
