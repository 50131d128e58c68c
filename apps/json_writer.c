/* The CLI's JSON writer (apps/json_writer.h). */
#include "apps/json_writer.h"

#include <math.h>
#include <string.h>

void rv_jw_init(rv_jw *w, FILE *f) {
  memset(w, 0, sizeof *w);
  w->f = f;
}

/* Before a value or a key: the separator of the container it goes in. */
static void item(rv_jw *w) {
  if (w->after_key) {
    w->after_key = 0;
    return;
  }
  if (w->depth == 0) return;
  int d = w->depth - 1;
  const char *s = w->once ? w->once : w->items[d] ? w->rest[d] : w->first[d];
  w->once = NULL;
  fputs(s, w->f);
  w->items[d]++;
}

static void open_(rv_jw *w, char open, char close) {
  item(w);
  fputc(open, w->f);
  if (w->depth == RV_JW_DEPTH) {
    w->overflow = 1;
    return;
  }
  int d = w->depth++;
  w->items[d] = 0;
  w->close[d] = close;
  w->first[d] = "";
  w->rest[d] = ", ";
}

void rv_jw_obj(rv_jw *w) { open_(w, '{', '}'); }
void rv_jw_arr(rv_jw *w) { open_(w, '[', ']'); }

void rv_jw_end(rv_jw *w) {
  if (w->depth == 0) {
    w->overflow = 1;
    return;
  }
  fputc(w->close[--w->depth], w->f);
}

static void string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
    else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
    else fputc(*c, f);
  }
  fputc('"', f);
}

void rv_jw_key(rv_jw *w, const char *key) {
  item(w);
  string(w->f, key);
  fputs(": ", w->f);
  w->after_key = 1;
}

void rv_jw_str(rv_jw *w, const char *s) {
  if (!s) {
    rv_jw_null(w);
    return;
  }
  item(w);
  string(w->f, s);
}

void rv_jw_null(rv_jw *w) {
  item(w);
  fputs("null", w->f);
}

void rv_jw_num(rv_jw *w, double v) {
  item(w);
  if (isnan(v) || isinf(v)) fputs("null", w->f);
  else fprintf(w->f, "%.17g", v);
}

void rv_jw_int(rv_jw *w, long long v) {
  item(w);
  fprintf(w->f, "%lld", v);
}

void rv_jw_fixed(rv_jw *w, double v, int decimals) {
  item(w);
  if (isnan(v) || isinf(v)) fputs("null", w->f);
  else fprintf(w->f, "%.*f", decimals, v);
}

void rv_jw_layout(rv_jw *w, const char *first, const char *rest) {
  if (w->depth == 0) return;
  w->first[w->depth - 1] = first;
  w->rest[w->depth - 1] = rest;
}

void rv_jw_sep(rv_jw *w, const char *s) { w->once = s; }

void rv_jw_raw(rv_jw *w, const char *s) { fputs(s, w->f); }

int rv_jw_ok(const rv_jw *w) { return !w->overflow && !ferror(w->f); }
