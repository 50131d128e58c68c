/* The one JSON writer of the CLI's output files (evaluation summaries, shard parts, video
 * JSON lines, merge's in-memory ground truth): values streamed to a FILE with ", " between
 * items and ": " after keys, strings escaped in one place (" and \ with a backslash, other
 * control characters as \u00XX), numbers as the value needs:
 *   rv_jw_num  %.17g: reads back as the same double (null for NaN / inf, which JSON lacks);
 *   rv_jw_int  a whole number;
 *   rv_jw_fixed  a number with d decimals (%.*f: pixel coordinates, times, scores in JSON lines).
 * Documents parsed back by programs (the results JSON of detect / eval) are written by
 * datasets/ (det_json, coco_results); cJSON writes those the CLI builds as trees (classify,
 * bench, models).
 *
 *   rv_jw w;
 *   rv_jw_init(&w, f);
 *   rv_jw_obj(&w);
 *   rv_jw_key(&w, "stats"); rv_jw_arr(&w); rv_jw_num(&w, 0.5); rv_jw_num(&w, NAN); rv_jw_end(&w);
 *   rv_jw_end(&w);
 *   rv_jw_raw(&w, "\n");                 // {"stats": [0.5, null]}
 *   if (!rv_jw_ok(&w)) write error;
 *
 * Layout: rv_jw_layout(&w, first, rest) sets what the innermost open container writes before
 * its first item and between items (defaults "" and ", "); rv_jw_sep(&w, s) replaces the
 * separator before the next item once (",\n " to start a line). */
#ifndef RV_APPS_JSON_WRITER_H
#define RV_APPS_JSON_WRITER_H

#include <stdio.h>

#define RV_JW_DEPTH 16

typedef struct {
  FILE *f;
  int depth;
  int items[RV_JW_DEPTH];         /* items written in each open container */
  char close[RV_JW_DEPTH];        /* '}' or ']' */
  const char *first[RV_JW_DEPTH]; /* before the first item */
  const char *rest[RV_JW_DEPTH];  /* between items */
  const char *once;               /* rv_jw_sep: before the next item instead */
  int after_key;                  /* a key was written: the next value is its value */
  int overflow;                   /* nested deeper than RV_JW_DEPTH: an error */
} rv_jw;

void rv_jw_init(rv_jw *w, FILE *f);
void rv_jw_obj(rv_jw *w);
void rv_jw_arr(rv_jw *w);
void rv_jw_end(rv_jw *w); /* closes the innermost object or array */
void rv_jw_key(rv_jw *w, const char *key);
void rv_jw_str(rv_jw *w, const char *s); /* NULL: null */
void rv_jw_null(rv_jw *w);
void rv_jw_num(rv_jw *w, double v);
void rv_jw_int(rv_jw *w, long long v);
void rv_jw_fixed(rv_jw *w, double v, int decimals);
void rv_jw_layout(rv_jw *w, const char *first, const char *rest);
void rv_jw_sep(rv_jw *w, const char *s);
void rv_jw_raw(rv_jw *w, const char *s); /* text outside the values (a final newline) */
/* 1 when everything was written (no stream error, the nesting within bounds). */
int rv_jw_ok(const rv_jw *w);

#endif
