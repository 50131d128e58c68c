/* The Python package's flat entry points: declared in the public header <ravlt/pyapi.h>
 * (exported from libravlt.so); models/pyapi.c implements them. */
#ifndef RV_MODELS_PYAPI_H
#define RV_MODELS_PYAPI_H

#include "core/rv.h"
#include "datasets/coco.h"
#include "models/model.h"

#include <ravlt/pyapi.h>

#endif
