/* Internal accessors of the segmentation analysis (datasets/seg_analysis.c; the public part is
 * <ravlt/analysis.h>): the CLI prints mmseg's table from the same areas. */
#ifndef RV_DATASETS_SEG_ANALYSIS_H
#define RV_DATASETS_SEG_ANALYSIS_H

#include "core/rv.h"

#include <ravlt/analysis.h>

#ifdef __cplusplus
extern "C" {
#endif

/* mmseg's per-class areas of the images added so far. */
const rv_seg_areas *rv_seg_analysis_areas(const rv_seg_analysis *a);
size_t rv_seg_analysis_count(const rv_seg_analysis *a);

#ifdef __cplusplus
}
#endif
#endif
