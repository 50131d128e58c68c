/* rv_analysis_write_html: the evaluation report as one self-contained HTML file, made from the
 * analysis JSON (datasets/coco_analysis.c, datasets/seg_analysis.c). Charts are inline SVG,
 * thumbnails inline JPEG (data URIs), the style sheet and the one small script (sorting the
 * tables) are inline: the file loads nothing. Sections carry ids (<part>-summary, -categories,
 * -pr, -tide, -confusion, -f1, -worst, -compare; ADE20K: -summary, -classes, -confusion,
 * -worst) that tests/cli/test_report_browser.sh checks. Readable on a laptop (max width ~1100 px)
 * and in print (@media print: no navigation, sections kept together where they fit). */
#define _POSIX_C_SOURCE 200809L
#include "datasets/analysis_util.h"
#include "core/fs.h"

#include <ravlt/analysis.h>
#include <ravlt/version.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *s;
  size_t n, cap;
  int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 1 << 16;
    while (nc < b->n + n + 1) nc *= 2;
    char *ns = realloc(b->s, nc);
    if (!ns) {
      b->oom = 1;
      return;
    }
    b->s = ns;
    b->cap = nc;
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = 0;
}

static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_printf(sbuf *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    sb_put(b, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb_put(b, big, (size_t)n);
  free(big);
}

/* text escaped for HTML / SVG content and attribute values */
static void sb_esc(sbuf *b, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '&': sb_puts(b, "&amp;"); break;
    case '<': sb_puts(b, "&lt;"); break;
    case '>': sb_puts(b, "&gt;"); break;
    case '"': sb_puts(b, "&quot;"); break;
    case '\'': sb_puts(b, "&#39;"); break;
    default: sb_put(b, s, 1);
    }
  }
}

/* a number for a table cell: NaN / null as "-", else printf with fmt */
static void sb_num(sbuf *b, const char *fmt, double v) {
  if (isnan(v)) sb_puts(b, "&ndash;");
  else sb_printf(b, fmt, v);
}

/* o's string member name (or o itself when name is NULL), dflt when it is not a string */
static const char *jstr(const cJSON *o, const char *name, const char *dflt) {
  const cJSON *x = name ? cJSON_GetObjectItemCaseSensitive(o, name) : o;
  return cJSON_IsString(x) ? x->valuestring : dflt;
}

/* a thumbnail as the analyses write it: a base64 JPEG or PNG data URI (anything else, which
 * could break out of the attribute, is left out) */
static const char *thumb_uri(const cJSON *o) {
  const char *t = jstr(o, "thumbnail", NULL);
  if (!t) return NULL;
  const char *body = NULL;
  if (!strncmp(t, "data:image/jpeg;base64,", 23)) body = t + 23;
  else if (!strncmp(t, "data:image/png;base64,", 22)) body = t + 22;
  if (!body) return NULL;
  for (const char *c = body; *c; c++)
    if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '+' || *c == '/' ||
          *c == '='))
      return NULL;
  return t;
}

static const char *const PALETTE[8] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

/* ---- charts ---- */
typedef struct {
  const char *name, *color;
  const double *x, *y; /* y < 0 or NaN: a gap */
  int n;
  int dashed;
} series;

/* x and y in [0, 1]; w x h pixels */
static void svg_lines(sbuf *b, const char *title, const char *xl, const char *yl, const series *s, int ns, int w, int h,
                      int small) {
  int ml = small ? 6 : 44, mr = small ? 4 : 12, mt = small ? 16 : 40, mb = small ? 6 : 36;
  double pw = w - ml - mr, ph = h - mt - mb;
  sb_printf(b, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">", w, h, w, h);
  sb_puts(b, "<title>");
  sb_esc(b, title);
  sb_puts(b, "</title>");
  sb_printf(b, "<text x=\"%d\" y=\"%d\" class=\"%s\">", small ? ml : 0, small ? mt - 4 : 14, small ? "st" : "ct");
  sb_esc(b, title);
  sb_puts(b, "</text>");
  sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" class=\"frame\"/>", ml, mt, pw, ph);
  if (!small) {
    for (int k = 0; k <= 5; k++) {
      double v = k / 5.0, x = ml + v * pw, y = mt + (1 - v) * ph;
      sb_printf(b, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>", ml, ml + pw, y, y);
      sb_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\" class=\"grid\"/>", x, x, mt, mt + ph);
      sb_printf(b, "<text x=\"%d\" y=\"%.1f\" class=\"tk\" text-anchor=\"end\">%.1f</text>", ml - 4, y + 4, v);
      sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" class=\"tk\" text-anchor=\"middle\">%.1f</text>", x, mt + ph + 14, v);
    }
    sb_printf(b, "<text x=\"%.1f\" y=\"%d\" class=\"al\" text-anchor=\"middle\">", ml + pw / 2, h - 4);
    sb_esc(b, xl);
    sb_printf(b, "</text><text x=\"12\" y=\"%.1f\" class=\"al\" text-anchor=\"middle\" transform=\"rotate(-90 12 %.1f)\">",
              mt + ph / 2, mt + ph / 2);
    sb_esc(b, yl);
    sb_puts(b, "</text>");
  }
  for (int i = 0; i < ns; i++) {
    int open = 0;
    for (int k = 0; k < s[i].n; k++) {
      double yv = s[i].y[k];
      if (isnan(yv) || yv < 0) {
        if (open) sb_puts(b, "\"/>");
        open = 0;
        continue;
      }
      double x = ml + s[i].x[k] * pw, y = mt + (1 - yv) * ph;
      if (!open) {
        sb_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"", s[i].color, small ? "1.2" : "1.8",
                  s[i].dashed ? " stroke-dasharray=\"5 3\"" : "");
        open = 1;
      } else
        sb_puts(b, " ");
      sb_printf(b, "%.1f,%.1f", x, y);
    }
    if (open) sb_puts(b, "\"/>");
  }
  /* the legend: one row under the title, right-aligned (it never covers a curve) */
  double lx = ml + pw;
  for (int i = ns - 1; i >= 0 && !small; i--) {
    if (!s[i].name) continue;
    double wtxt = 6.0 * (double)strlen(s[i].name);
    lx -= wtxt + 30;
    double ly = mt - 8;
    sb_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>", lx, lx + 20,
              ly - 4, ly - 4, s[i].color, s[i].dashed ? " stroke-dasharray=\"5 3\"" : "");
    sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" class=\"tk\">", lx + 24, ly);
    sb_esc(b, s[i].name);
    sb_puts(b, "</text>");
  }
  sb_puts(b, "</svg>");
}

/* horizontal bars: n labels with values (NaN / < 0: no bar, "n/a"), scaled to vmax */
static void svg_hbars(sbuf *b, const char *title, const char *const *labels, const double *v, int n, double vmax,
                      const char *fmt, const char *color, int w) {
  int lw = 150, bh = 14, mt = 24, vw = 56;
  int h = mt + n * bh + 8;
  double pw = w - lw - vw;
  sb_printf(b, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\"><title>", w, h, w, h);
  sb_esc(b, title);
  sb_printf(b, "</title><text x=\"0\" y=\"14\" class=\"ct\">");
  sb_esc(b, title);
  sb_puts(b, "</text>");
  for (int i = 0; i < n; i++) {
    double y = mt + i * bh;
    sb_printf(b, "<text x=\"%d\" y=\"%.1f\" class=\"tk\" text-anchor=\"end\">", lw - 4, y + bh - 3);
    sb_esc(b, labels[i]);
    sb_puts(b, "</text>");
    if (isnan(v[i]) || v[i] < 0) {
      sb_printf(b, "<text x=\"%d\" y=\"%.1f\" class=\"tk\">n/a</text>", lw + 2, y + bh - 3);
      continue;
    }
    double len = vmax > 0 ? v[i] / vmax * pw : 0;
    if (len < 0) len = 0;
    sb_printf(b, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", lw, y + 1, len, bh - 3, color);
    sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" class=\"tk\">", lw + len + 3, y + bh - 3);
    sb_printf(b, fmt, v[i]);
    sb_puts(b, "</text>");
  }
  sb_puts(b, "</svg>");
}

/* vertical bars in groups: ng groups (labels) x ns series (values[s * ng + g]) */
static void svg_vbars(sbuf *b, const char *title, const char *const *groups, int ng, const char *const *snames,
                      const double *values, int ns, int w, int h) {
  double vmax = 1;
  for (int i = 0; i < ng * ns; i++)
    if (!isnan(values[i]) && values[i] > vmax) vmax = values[i];
  vmax = ceil(vmax / 5) * 5;
  int ml = 36, mt = 28, mb = 30, mr = 8;
  double pw = w - ml - mr, ph = h - mt - mb, gw = pw / ng, bw = gw * 0.8 / ns;
  sb_printf(b, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\"><title>", w, h, w, h);
  sb_esc(b, title);
  sb_puts(b, "</title><text x=\"0\" y=\"14\" class=\"ct\">");
  sb_esc(b, title);
  sb_puts(b, "</text>");
  for (int k = 0; k <= 5; k++) {
    double v = vmax * k / 5, y = mt + ph - v / vmax * ph;
    sb_printf(b, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>", ml, ml + pw, y, y);
    sb_printf(b, "<text x=\"%d\" y=\"%.1f\" class=\"tk\" text-anchor=\"end\">%g</text>", ml - 4, y + 4, v);
  }
  for (int g = 0; g < ng; g++) {
    double x0 = ml + g * gw + gw * 0.1;
    for (int s = 0; s < ns; s++) {
      double v = values[s * ng + g];
      if (isnan(v)) continue;
      double bh = (v > 0 ? v : 0) / vmax * ph;
      sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%.2f</title></rect>", x0 + s * bw,
                mt + ph - bh, bw - 1, bh, PALETTE[s % 8], v);
      sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" class=\"tk\" text-anchor=\"middle\">%.2f</text>", x0 + s * bw + bw / 2,
                mt + ph - bh - 3, v);
    }
    sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" class=\"tk\" text-anchor=\"middle\">", ml + g * gw + gw / 2, mt + ph + 14);
    sb_esc(b, groups[g]);
    sb_puts(b, "</text>");
  }
  if (ns > 1)
    for (int s = 0; s < ns; s++) {
      double x = ml + 8 + s * 180;
      sb_printf(b, "<rect x=\"%.1f\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%.1f\" y=\"%d\" class=\"tk\">", x,
                h - 12, PALETTE[s % 8], x + 14, h - 3);
      sb_esc(b, snames[s]);
      sb_puts(b, "</text>");
    }
  sb_puts(b, "</svg>");
}

/* row-normalised heat map of an n x n count matrix; cells under 0.5% of their row are left
 * out (the table of the most confused pairs has the counts) */
static void svg_heatmap(sbuf *b, const char *title, const char *const *labels, const double *m, int n) {
  int cell = n <= 30 ? 14 : n <= 90 ? 7 : 4, lw = n <= 90 ? 110 : 4, mt = 24;
  int w = lw + n * cell + 8, h = mt + lw + n * cell;
  if (w < 380) w = 380;
  sb_printf(b, "<svg class=\"chart heat\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\"><title>", w, h, w, h);
  sb_esc(b, title);
  sb_puts(b, "</title><text x=\"0\" y=\"14\" class=\"ct\">");
  sb_esc(b, title);
  sb_printf(b, "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"frame\"/>", lw, mt + lw, n * cell, n * cell);
  if (n <= 90)
    for (int i = 0; i < n; i++) {
      double y = mt + lw + i * cell + cell - 1;
      sb_printf(b, "<text x=\"%d\" y=\"%.1f\" class=\"hl\" text-anchor=\"end\">", lw - 2, y);
      sb_esc(b, labels[i]);
      sb_printf(b, "</text><text x=\"%.1f\" y=\"%d\" class=\"hl\" transform=\"rotate(-90 %.1f %d)\">", lw + i * cell + cell - 1.0,
                mt + lw - 2, lw + i * cell + cell - 1.0, mt + lw - 2);
      sb_esc(b, labels[i]);
      sb_puts(b, "</text>");
    }
  for (int r = 0; r < n; r++) {
    double s = 0;
    for (int c = 0; c < n; c++) s += m[(size_t)r * n + c];
    if (s <= 0) continue;
    for (int c = 0; c < n; c++) {
      double v = m[(size_t)r * n + c] / s;
      if (v < 0.005) continue;
      int lvl = (int)lround(40 + (1 - v) * 200);
      sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"rgb(%d,%d,255)\"><title>", lw + c * cell,
                mt + lw + r * cell, cell, cell, lvl, lvl);
      sb_esc(b, labels[r]);
      sb_puts(b, " \xe2\x86\x92 ");
      sb_esc(b, labels[c]);
      sb_printf(b, ": %.1f%%</title></rect>", 100 * v);
    }
  }
  sb_puts(b, "</svg>");
}

/* ---- page parts ---- */
static const char *const STAT_NAMES[12] = {"AP @[.50:.95]", "AP50", "AP75", "AP small", "AP medium", "AP large",
                                           "AR@1", "AR@10", "AR@100", "AR small", "AR medium", "AR large"};

static void stats_table(sbuf *b, const cJSON *stats) {
  sb_puts(b, "<table class=\"stats\"><tr>");
  for (int i = 0; i < 12; i++) sb_printf(b, "<th>%s</th>", STAT_NAMES[i]);
  sb_puts(b, "</tr><tr>");
  for (int i = 0; i < 12; i++) {
    sb_puts(b, "<td>");
    sb_num(b, "%.3f", rv_jnum(cJSON_GetArrayItem(stats, i), NULL));
    sb_puts(b, "</td>");
  }
  sb_puts(b, "</tr></table>");
}

typedef struct {
  double v;
  int i;
} vi;

static int cmp_vi_desc(const void *a, const void *b) {
  const vi *x = a, *y = b;
  double xv = isnan(x->v) ? -2 : x->v, yv = isnan(y->v) ? -2 : y->v;
  if (xv != yv) return xv > yv ? -1 : 1;
  return x->i - y->i;
}

static void sec_open(sbuf *b, const char *part, const char *id, const char *title) {
  sb_printf(b, "<section id=\"%s-%s\" class=\"sec\"><h3>", part, id);
  sb_esc(b, title);
  sb_puts(b, "</h3>");
}

static void coco_categories(sbuf *b, const char *part, const cJSON *pc) {
  int n = cJSON_GetArraySize(pc);
  sec_open(b, part, "categories", "Per-category results");
  vi *ord = malloc(sizeof *ord * (size_t)(n + 1));
  const char **lab = malloc(sizeof *lab * (size_t)(n + 1));
  double *val = malloc(sizeof *val * (size_t)(n + 1));
  if (ord && lab && val) {
    for (int i = 0; i < n; i++) ord[i] = (vi){rv_jnum(cJSON_GetArrayItem(pc, i), "ap"), i};
    qsort(ord, (size_t)n, sizeof *ord, cmp_vi_desc);
    for (int i = 0; i < n; i++) {
      lab[i] = jstr(cJSON_GetArrayItem(pc, ord[i].i), "name", "");
      val[i] = ord[i].v;
    }
    sb_puts(b, "<div class=\"figs\"><div class=\"fig\">");
    svg_hbars(b, "AP @[.50:.95] per category, best first", lab, val, n, 1.0, "%.3f", PALETTE[0], 460);
    sb_puts(b, "</div>");
  } else
    sb_puts(b, "<div class=\"figs\">");
  free(ord);
  free(lab);
  free(val);
  static const char *const keys[8] = {"ap", "ap50", "ap75", "ap_small", "ap_medium", "ap_large", "ar100", NULL};
  sb_puts(b, "<div><p class=\"note\">Click a column title to sort. &ndash; : no ground truth in that range (-1 in the "
             "JSON).</p><table class=\"sortable\"><thead><tr><th>id</th><th>name</th><th>AP</th><th>AP50</th><th>AP75</th>"
             "<th>AP S</th><th>AP M</th><th>AP L</th><th>AR@max</th></tr></thead><tbody>");
  for (int i = 0; i < n; i++) {
    const cJSON *e = cJSON_GetArrayItem(pc, i);
    sb_printf(b, "<tr><td>%.0f</td><td>", rv_jnum(e, "id"));
    sb_esc(b, jstr(e, "name", ""));
    sb_puts(b, "</td>");
    for (int k = 0; keys[k]; k++) {
      double v = rv_jnum(e, keys[k]);
      sb_puts(b, "<td>");
      sb_num(b, "%.3f", v < 0 ? NAN : v);
      sb_puts(b, "</td>");
    }
    sb_puts(b, "</tr>");
  }
  sb_puts(b, "</tbody></table></div></div></section>");
}

/* mean over the categories of the defined (> -1) precision at each recall threshold, over the
 * IoU thresholds t0..t1-1 of the dense [T][R][K] array */
static void pr_mean(const double *P, int t0, int t1, int R, int K, double *out) {
  for (int r = 0; r < R; r++) {
    double s = 0;
    int m = 0;
    for (int t = t0; t < t1; t++)
      for (int k = 0; k < K; k++) {
        double v = P[((size_t)t * R + r) * K + k];
        if (v > -1) {
          s += v;
          m++;
        }
      }
    out[r] = m ? s / m : -1;
  }
}

static void coco_pr(sbuf *b, const char *part, const cJSON *pr, const cJSON *pc) {
  const cJSON *prec = cJSON_GetObjectItem(pr, "precision"), *rec = cJSON_GetObjectItem(pr, "rec_thrs"),
              *iou = cJSON_GetObjectItem(pr, "iou_thrs");
  int T = cJSON_GetArraySize(prec), R = cJSON_GetArraySize(rec), K = cJSON_GetArraySize(pc);
  sec_open(b, part, "pr", "Precision-recall curves");
  sb_puts(b, "<p class=\"note\">From accumulate()'s precision array (area all, the last maxDets): the interpolated precision "
             "at each of the 101 recall thresholds, averaged over the categories with ground truth.</p>");
  double *x = T > 0 && R > 0 ? malloc(sizeof(double) * (size_t)R * 10) : NULL; /* x, then 9 rows of y */
  double *P = x ? malloc(sizeof(double) * ((size_t)T * R * (K > 0 ? K : 1))) : NULL;
  if (!x || !P) {
    free(x);
    free(P);
    sb_puts(b, "</section>");
    return;
  }
  double *y = x + R;
  { /* the nested lists into a dense array in one walk (missing cells: -1) */
    for (size_t i = 0; i < (size_t)T * R * K; i++) P[i] = -1;
    int t = 0;
    const cJSON *tr, *rr, *v;
    cJSON_ArrayForEach(tr, prec) {
      int r = 0;
      cJSON_ArrayForEach(rr, tr) {
        int k = 0;
        if (r >= R) break;
        cJSON_ArrayForEach(v, rr) {
          if (k >= K) break;
          double d = rv_jnum(v, NULL);
          if (!isnan(d)) P[((size_t)t * R + r) * K + k] = d;
          k++;
        }
        r++;
      }
      t++;
    }
  }
  int r0 = 0;
  const cJSON *xv;
  cJSON_ArrayForEach(xv, rec) x[r0++] = rv_jnum(xv, NULL);
  int t50 = -1, t75 = -1, t0 = 0;
  cJSON_ArrayForEach(xv, iou) {
    double v = rv_jnum(xv, NULL);
    if (t0 < T && fabs(v - 0.5) < 1e-9) t50 = t0;
    if (t0 < T && fabs(v - 0.75) < 1e-9) t75 = t0;
    t0++;
  }
  series s[4];
  int ns = 0;
  pr_mean(P, 0, T, R, K, y);
  s[ns++] = (series){"IoU .50:.95 (mean)", PALETTE[0], x, y, R, 0};
  if (t50 >= 0) {
    pr_mean(P, t50, t50 + 1, R, K, y + R);
    s[ns++] = (series){"IoU .50", PALETTE[1], x, y + R, R, 0};
  }
  if (t75 >= 0) {
    pr_mean(P, t75, t75 + 1, R, K, y + 2 * R);
    s[ns++] = (series){"IoU .75", PALETTE[2], x, y + 2 * R, R, 1};
  }
  sb_puts(b, "<div class=\"figs\">");
  svg_lines(b, "All categories", "recall", "precision", s, ns, 420, 300, 0);
  const cJSON *areas = cJSON_GetObjectItem(pr, "area_mean"), *a;
  int na = 0;
  series sa[4];
  cJSON_ArrayForEach(a, areas) {
    if (na >= 4) break;
    const cJSON *pa = cJSON_GetObjectItem(a, "precision"), *v;
    double *ya = y + (size_t)(3 + na) * R;
    int r = 0;
    for (int q = 0; q < R; q++) ya[q] = -1;
    cJSON_ArrayForEach(v, pa) {
      if (r >= R) break;
      ya[r++] = rv_jnum(v, NULL);
    }
    sa[na] = (series){jstr(a, "area", "?"), PALETTE[na % 8], x, ya, R, 0};
    na++;
  }
  if (na) svg_lines(b, "Per area range (IoU .50:.95)", "recall", "precision", sa, na, 420, 300, 0);
  sb_puts(b, "</div><h4>Per category (IoU .50 solid, .75 dashed)</h4><div class=\"grid\">");
  double *y50 = y + 7 * (size_t)R; /* the last two of the 8 rows after x */
  const cJSON *e = pc ? pc->child : NULL;
  for (int k = 0; k < K; k++, e = e ? e->next : NULL) {
    double *y75 = y50 + R;
    for (int r = 0; r < R; r++) {
      y50[r] = t50 >= 0 ? P[((size_t)t50 * R + r) * K + k] : -1;
      y75[r] = t75 >= 0 ? P[((size_t)t75 * R + r) * K + k] : -1;
    }
    series sk[2] = {{NULL, PALETTE[1], x, y50, R, 0}, {NULL, PALETTE[2], x, y75, R, 1}};
    char title[160];
    snprintf(title, sizeof title, "%s (AP %.3f)", jstr(e, "name", "?"), rv_jnum(e, "ap"));
    svg_lines(b, title, "", "", sk, 2, 150, 110, 1);
  }
  sb_puts(b, "</div></section>");
  free(x);
  free(P);
}

static void tide_section(sbuf *b, const char *part, const cJSON *tide, const cJSON *other_tide, const char *name,
                         const char *other_name) {
  static const char *const mains[6] = {"Cls", "Loc", "Both", "Dupe", "Bkg", "Miss"}, *const specials[2] = {"FalsePos", "FalseNeg"};
  static const char *const desc[8] = {
      "classified wrongly (IoU with a gt of another class >= .5)", "localised wrongly (same class, .1 <= IoU <= .5)",
      "wrong class and location", "duplicate of a detection that already matched the gt",
      "background detected as an object (IoU <= .1 with every gt)", "gt missed (no error above would recover it)",
      "all false positives scored 0", "every gt found"};
  const cJSON *ts[2] = {tide, other_tide};
  int nt = other_tide ? 2 : 1;
  double v[12], sp[4];
  for (int s = 0; s < nt; s++) {
    for (int k = 0; k < 6; k++) v[s * 6 + k] = rv_jnum(cJSON_GetObjectItem(ts[s], "main"), mains[k]);
    for (int k = 0; k < 2; k++) sp[s * 2 + k] = rv_jnum(cJSON_GetObjectItem(ts[s], "special"), specials[k]);
  }
  const char *sn[2] = {name, other_name};
  if (!other_tide) {
    sec_open(b, part, "tide", "TIDE error breakdown");
    sb_printf(b, "<p class=\"note\">dbolya/tide 1.0.1's analysis (foreground IoU %.2f, background IoU %.2f, 100 detections "
                 "per image): how much AP50 each error type costs, in AP points &ndash; the AP gained by fixing only "
                 "that type. TIDE's own AP50: <b>",
              rv_jnum(tide, "pos_thr"), rv_jnum(tide, "bg_thr"));
    sb_num(b, "%.2f", rv_jnum(tide, "ap50"));
    sb_puts(b, "</b>.</p>");
  } else {
    sb_puts(b, "<h4>TIDE side by side</h4>");
  }
  sb_puts(b, "<div class=\"figs\">");
  svg_vbars(b, "Main errors: dAP", mains, 6, sn, v, nt, 460, 240);
  double spv[4] = {sp[0], sp[1], nt > 1 ? sp[2] : 0, nt > 1 ? sp[3] : 0};
  svg_vbars(b, "Special errors: dAP", specials, 2, sn, spv, nt, 260, 240);
  sb_puts(b, "</div><table><tr><th>error</th><th>what it is</th>");
  for (int s = 0; s < nt; s++) {
    sb_puts(b, "<th>dAP ");
    sb_esc(b, nt > 1 ? sn[s] : "");
    sb_puts(b, "</th>");
    if (nt == 1) sb_puts(b, "<th>count</th>");
  }
  sb_puts(b, "</tr>");
  for (int k = 0; k < 8; k++) {
    sb_printf(b, "<tr><td>%s</td><td>%s</td>", k < 6 ? mains[k] : specials[k - 6], desc[k]);
    for (int s = 0; s < nt; s++) {
      sb_puts(b, "<td>");
      sb_num(b, "%.2f", k < 6 ? v[s * 6 + k] : sp[s * 2 + k - 6]);
      sb_puts(b, "</td>");
      if (nt == 1) {
        sb_puts(b, "<td>");
        if (k < 6) sb_num(b, "%.0f", rv_jnum(cJSON_GetObjectItem(ts[s], "counts"), mains[k]));
        sb_puts(b, "</td>");
      }
    }
    sb_puts(b, "</tr>");
  }
  if (nt > 1) {
    sb_puts(b, "<tr><td>AP50</td><td>TIDE's own AP at IoU .5</td>");
    for (int s = 0; s < nt; s++) {
      sb_puts(b, "<td>");
      sb_num(b, "%.2f", rv_jnum(ts[s], "ap50"));
      sb_puts(b, "</td>");
    }
    sb_puts(b, "</tr>");
  }
  sb_puts(b, "</table>");
  if (!other_tide) sb_puts(b, "</section>");
}

typedef struct {
  double c;
  int r, k;
} cell;

static int cmp_cell(const void *a, const void *b) {
  const cell *x = a, *y = b;
  if (x->c != y->c) return x->c > y->c ? -1 : 1;
  if (x->r != y->r) return x->r - y->r;
  return x->k - y->k;
}

/* the heat map and the most confused pairs (off-diagonal) of an n x n matrix */
static void confusion_body(sbuf *b, const cJSON *rows, const char *const *names, int n, const char *row_lbl,
                           const char *col_lbl) {
  double *m = calloc((size_t)n * n + 1, sizeof *m);
  cell *cs = malloc(sizeof *cs * ((size_t)n * n + 1));
  if (!m || !cs) {
    free(m);
    free(cs);
    return;
  }
  int nc = 0;
  for (int r = 0; r < n; r++) {
    const cJSON *row = cJSON_GetArrayItem(rows, r);
    double s = 0;
    for (int c = 0; c < n; c++) {
      double v = rv_jnum(cJSON_GetArrayItem(row, c), NULL);
      s += m[(size_t)r * n + c] = v >= 0 ? v : 0; /* counts: anything else draws nothing */
    }
    for (int c = 0; c < n; c++)
      if (c != r && m[(size_t)r * n + c] > 0) cs[nc++] = (cell){m[(size_t)r * n + c], r, c};
    (void)s;
  }
  qsort(cs, (size_t)nc, sizeof *cs, cmp_cell);
  sb_puts(b, "<div class=\"figs\"><div class=\"fig\">");
  svg_heatmap(b, "Row-normalised (rows: ground truth, columns: prediction)", names, m, n);
  sb_printf(b, "</div><div><table><tr><th>%s</th><th>%s</th><th>count</th><th>%% of row</th></tr>", row_lbl, col_lbl);
  for (int i = 0; i < nc && i < 25; i++) {
    double s = 0;
    for (int c = 0; c < n; c++) s += m[(size_t)cs[i].r * n + c];
    sb_puts(b, "<tr><td>");
    sb_esc(b, names[cs[i].r]);
    sb_puts(b, "</td><td>");
    sb_esc(b, names[cs[i].k]);
    sb_printf(b, "</td><td>%.0f</td><td>%.1f</td></tr>", cs[i].c, s > 0 ? 100 * cs[i].c / s : 0);
  }
  sb_puts(b, "</table></div></div>");
  free(m);
  free(cs);
}

static void coco_confusion(sbuf *b, const char *part, const cJSON *conf) {
  const cJSON *names = cJSON_GetObjectItem(conf, "names"), *rows = cJSON_GetObjectItem(conf, "counts");
  int n = cJSON_GetArraySize(rows);
  sec_open(b, part, "confusion", "Confusion matrix");
  sb_printf(b, "<p class=\"note\">mmdetection 2.x's confusion_matrix.py: detections with score &ge; %.2f against the "
               "non-crowd ground truth at IoU &ge; %.2f; a detection counts once in the row of every gt it overlaps, in "
               "the background row when it overlaps none; a gt that no detection of its class overlaps counts in the "
               "background column. The JSON has the raw counts.</p>",
            rv_jnum(conf, "score_thr"), rv_jnum(conf, "iou_thr"));
  const char **nm = malloc(sizeof *nm * (size_t)(n + 1));
  if (nm) {
    for (int i = 0; i < n; i++) nm[i] = jstr(cJSON_GetArrayItem(names, i), NULL, "?");
    confusion_body(b, rows, nm, n, "ground truth", "predicted as");
  }
  free(nm);
  sb_puts(b, "</section>");
}

static void coco_f1(sbuf *b, const char *part, const cJSON *f1) {
  sec_open(b, part, "f1", "Precision, recall and F1 against the score threshold");
  const cJSON *ov = cJSON_GetObjectItem(f1, "overall"), *thr = cJSON_GetObjectItem(f1, "thresholds"),
              *pc = cJSON_GetObjectItem(f1, "per_category");
  sb_puts(b, "<p class=\"note\">The evaluator's matching at IoU .50 (area all, the last maxDets; crowd matches "
             "ignored), keeping the detections with score &ge; threshold; overall: pooled over the categories. Best F1 over "
             "every score: threshold <b>");
  sb_num(b, "%.3f", rv_jnum(ov, "threshold"));
  sb_puts(b, "</b>, precision ");
  sb_num(b, "%.3f", rv_jnum(ov, "precision"));
  sb_puts(b, ", recall ");
  sb_num(b, "%.3f", rv_jnum(ov, "recall"));
  sb_puts(b, ", F1 <b>");
  sb_num(b, "%.3f", rv_jnum(ov, "f1"));
  sb_puts(b, "</b>.");
  const cJSON *mac = cJSON_GetObjectItem(f1, "macro");
  if (mac) {
    sb_puts(b, " On the interpolated PR curves instead (faster-coco-eval's extended metrics: the recall threshold of the best "
               "F1 averaged over the categories): recall ");
    sb_num(b, "%.2f", rv_jnum(mac, "recall"));
    sb_puts(b, ", precision ");
    sb_num(b, "%.3f", rv_jnum(mac, "precision"));
    sb_puts(b, ", F1 ");
    sb_num(b, "%.3f", rv_jnum(mac, "f1"));
    sb_puts(b, ".");
  }
  sb_puts(b, "</p>");
  int n = cJSON_GetArraySize(thr);
  double *x = malloc(sizeof(double) * (size_t)(4 * n + 1));
  if (x) {
    double *p = x + n, *r = x + 2 * n, *f = x + 3 * n;
    for (int i = 0; i < n; i++) {
      x[i] = rv_jnum(cJSON_GetArrayItem(thr, i), NULL);
      p[i] = rv_jnum(cJSON_GetArrayItem(cJSON_GetObjectItem(ov, "precision_curve"), i), NULL);
      r[i] = rv_jnum(cJSON_GetArrayItem(cJSON_GetObjectItem(ov, "recall_curve"), i), NULL);
      f[i] = rv_jnum(cJSON_GetArrayItem(cJSON_GetObjectItem(ov, "f1_curve"), i), NULL);
    }
    series s[3] = {{"precision", PALETTE[0], x, p, n, 0}, {"recall", PALETTE[1], x, r, n, 0}, {"F1", PALETTE[3], x, f, n, 0}};
    sb_puts(b, "<div class=\"figs\"><div class=\"fig\">");
    svg_lines(b, "All categories", "score threshold", "value", s, 3, 480, 300, 0);
    sb_puts(b, "</div>");
    free(x);
  } else
    sb_puts(b, "<div class=\"figs\">");
  sb_puts(b, "<div><table class=\"sortable\"><thead><tr><th>id</th><th>name</th><th>best threshold</th><th>precision</th>"
             "<th>recall</th><th>F1</th></tr></thead><tbody>");
  const cJSON *e;
  cJSON_ArrayForEach(e, pc) {
    sb_printf(b, "<tr><td>%.0f</td><td>", rv_jnum(e, "id"));
    sb_esc(b, jstr(e, "name", ""));
    sb_puts(b, "</td>");
    static const char *const k4[4] = {"threshold", "precision", "recall", "f1"};
    for (int k = 0; k < 4; k++) {
      sb_puts(b, "<td>");
      sb_num(b, "%.3f", rv_jnum(e, k4[k]));
      sb_puts(b, "</td>");
    }
    sb_puts(b, "</tr>");
  }
  sb_puts(b, "</tbody></table></div></div></section>");
}

static const char *label_color(const char *lab) {
  if (!strcmp(lab, "TP")) return "#2ca02c";
  if (!strcmp(lab, "Miss") || !strcmp(lab, "FN")) return "#ff7f0e";
  if (!strcmp(lab, "crowd") || !strcmp(lab, "ignored")) return "#9a9a9a";
  return "#d62728";
}

static void coco_worst(sbuf *b, const char *part, const cJSON *worst, const cJSON *conf) {
  sec_open(b, part, "worst", "Worst images");
  sb_printf(b, "<p class=\"note\">The images with the most false positives + false negatives at the confusion matrix's "
               "rule (score &ge; %.2f, IoU &ge; %.2f). Ground truth: solid boxes; detections: dashed. Green: found (TP, "
               "unlabelled); the errors are labelled: TIDE's error type of a detection (Cls, Loc, Both, Dupe, Bkg; FP past its 100 detections), "
               "Miss / FN for a ground truth not found (FN: a Cls or Loc error points at it), crowd / ignored in grey.</p>",
            rv_jnum(conf, "score_thr"), rv_jnum(conf, "iou_thr"));
  const cJSON *names = cJSON_GetObjectItem(conf, "names"), *labels = cJSON_GetObjectItem(conf, "labels");
  sb_puts(b, "<div class=\"thumbs\">");
  const cJSON *w;
  cJSON_ArrayForEach(w, worst) {
    double W = rv_jnum(w, "width"), H = rv_jnum(w, "height");
    sb_puts(b, "<figure class=\"thumb\">");
    if (W > 0 && H > 0) {
      sb_printf(b, "<svg viewBox=\"0 0 %.0f %.0f\" class=\"timg\" role=\"img\">", W, H);
      const char *th = thumb_uri(w);
      if (th) {
        sb_printf(b, "<image x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" href=\"", W, H);
        sb_puts(b, th);
        sb_puts(b, "\"/>");
      } else {
        sb_printf(b, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"#eee\"/>", W, H);
      }
      double sw = (W > H ? W : H) / 240.0, fs = 11 * sw;
      const cJSON *o;
      cJSON_ArrayForEach(o, cJSON_GetObjectItem(w, "objects")) {
        const cJSON *bb = cJSON_GetObjectItem(o, "bbox");
        double x = rv_jnum(cJSON_GetArrayItem(bb, 0), NULL), y = rv_jnum(cJSON_GetArrayItem(bb, 1), NULL),
               bw = rv_jnum(cJSON_GetArrayItem(bb, 2), NULL), bh = rv_jnum(cJSON_GetArrayItem(bb, 3), NULL);
        if (isnan(x + y + bw + bh)) continue;
        int is_gt = !strcmp(jstr(o, "kind", ""), "gt");
        const char *lab = jstr(o, "label", "");
        const char *col = label_color(lab);
        double cid = rv_jnum(o, "category_id");
        const char *cname = "?";
        for (int i = 0; i < cJSON_GetArraySize(labels); i++)
          if (rv_jnum(cJSON_GetArrayItem(labels, i), NULL) == cid) cname = jstr(cJSON_GetArrayItem(names, i), NULL, "?");
        sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.2f\"%s>",
                  x, y, bw, bh, col, 1.6 * sw, is_gt ? "" : " stroke-dasharray=\"4 2\"");
        sb_puts(b, "<title>");
        sb_esc(b, is_gt ? "ground truth " : "detection ");
        sb_esc(b, cname);
        sb_puts(b, ": ");
        sb_esc(b, lab);
        sb_puts(b, "</title></rect>");
        if (!strcmp(lab, "TP")) continue; /* found objects: the box alone (its title says it), errors get a label */
        char txt[160];
        if (is_gt) snprintf(txt, sizeof txt, "%s %s", lab, cname);
        else snprintf(txt, sizeof txt, "%s %s %.2f", lab, cname, rv_jnum(o, "score"));
        double ty = is_gt ? y + fs : y + bh - 2 * sw, tx = x + 2 * sw;
        const char *anchor = "start";
        if (tx + 0.62 * fs * (double)strlen(txt) > W) { /* would leave the image: end it at the box's right */
          tx = (x + bw < W ? x + bw : W) - 2 * sw;
          anchor = "end";
        }
        if (ty > H - 2 * sw) ty = H - 2 * sw;
        if (ty < fs) ty = fs;
        sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" fill=\"%s\" text-anchor=\"%s\" class=\"bl\">", tx, ty,
                  fs, col, anchor);
        sb_esc(b, txt);
        sb_puts(b, "</text>");
      }
      sb_puts(b, "</svg>");
    }
    sb_printf(b, "<figcaption>image %.0f ", rv_jnum(w, "image_id"));
    sb_esc(b, jstr(w, "file_name", ""));
    sb_printf(b, ": %.0f FP, %.0f FN</figcaption></figure>", rv_jnum(w, "fp"), rv_jnum(w, "fn"));
  }
  sb_puts(b, "</div></section>");
}

static void coco_compare(sbuf *b, const char *part, const cJSON *cmp, const cJSON *tide, const cJSON *stats,
                         const char *name) {
  const char *other = jstr(cmp, "name", "other");
  sec_open(b, part, "compare", "Model comparison");
  sb_puts(b, "<p class=\"note\">");
  sb_esc(b, other);
  sb_puts(b, " against this run on the same ground truth. delta = its AP &minus; this run's AP.</p>");
  sb_puts(b, "<table class=\"stats\"><tr><th></th>");
  for (int i = 0; i < 12; i++) sb_printf(b, "<th>%s</th>", STAT_NAMES[i]);
  sb_puts(b, "</tr><tr><td>this run</td>");
  for (int i = 0; i < 12; i++) {
    sb_puts(b, "<td>");
    sb_num(b, "%.3f", rv_jnum(cJSON_GetArrayItem(stats, i), NULL));
    sb_puts(b, "</td>");
  }
  const cJSON *pc = cJSON_GetObjectItem(cmp, "per_category");
  sb_puts(b, "</tr><tr><td>");
  sb_esc(b, other);
  sb_puts(b, "</td>");
  for (int i = 0; i < 12; i++) {
    sb_puts(b, "<td>");
    sb_num(b, "%.3f", rv_jnum(cJSON_GetArrayItem(cJSON_GetObjectItem(cmp, "stats"), i), NULL));
    sb_puts(b, "</td>");
  }
  sb_puts(b, "</tr></table>");
  int n = cJSON_GetArraySize(pc);
  vi *ord = malloc(sizeof *ord * (size_t)(n + 1));
  const char **lab = calloc((size_t)n + 1, sizeof *lab);
  double *val = calloc((size_t)n + 1, sizeof *val);
  if (ord && lab && val) {
    double vmax = 0;
    for (int i = 0; i < n; i++) {
      ord[i] = (vi){rv_jnum(cJSON_GetArrayItem(pc, i), "delta"), i};
      if (!isnan(ord[i].v) && fabs(ord[i].v) > vmax) vmax = fabs(ord[i].v);
    }
    qsort(ord, (size_t)n, sizeof *ord, cmp_vi_desc);
    /* diverging bars: one chart of the gains, one of the losses */
    int ng = 0, nl = 0;
    for (int i = 0; i < n; i++) {
      if (isnan(ord[i].v)) continue;
      if (ord[i].v >= 0) {
        lab[ng] = jstr(cJSON_GetArrayItem(pc, ord[i].i), "name", "");
        val[ng++] = ord[i].v;
      }
    }
    sb_puts(b, "<div class=\"figs\"><div class=\"fig\">");
    svg_hbars(b, "Categories where it is better (AP delta)", lab, val, ng, vmax > 0 ? vmax : 1, "%+.3f", PALETTE[2], 460);
    for (int i = n - 1; i >= 0; i--) {
      if (isnan(ord[i].v) || ord[i].v >= 0) continue;
      lab[nl] = jstr(cJSON_GetArrayItem(pc, ord[i].i), "name", "");
      val[nl++] = -ord[i].v;
    }
    sb_puts(b, "</div><div class=\"fig\">");
    svg_hbars(b, "Categories where it is worse (AP loss)", lab, val, nl, vmax > 0 ? vmax : 1, "-%.3f", PALETTE[3], 460);
    sb_puts(b, "</div></div>");
  }
  free(ord);
  free(lab);
  free(val);
  sb_puts(b, "<table class=\"sortable\"><thead><tr><th>id</th><th>name</th><th>AP this run</th><th>AP other</th><th>delta</th>"
             "</tr></thead><tbody>");
  const cJSON *e;
  cJSON_ArrayForEach(e, pc) {
    sb_printf(b, "<tr><td>%.0f</td><td>", rv_jnum(e, "id"));
    sb_esc(b, jstr(e, "name", ""));
    sb_puts(b, "</td><td>");
    double a = rv_jnum(e, "ap"), o = rv_jnum(e, "other_ap");
    sb_num(b, "%.3f", a < 0 ? NAN : a);
    sb_puts(b, "</td><td>");
    sb_num(b, "%.3f", o < 0 ? NAN : o);
    sb_puts(b, "</td><td>");
    sb_num(b, "%+.3f", rv_jnum(e, "delta"));
    sb_puts(b, "</td></tr>");
  }
  sb_puts(b, "</tbody></table>");
  tide_section(b, part, tide, cJSON_GetObjectItem(cmp, "tide"), name, other);
  sb_puts(b, "</section>");
}

static void coco_part(sbuf *b, const cJSON *j, int idx) {
  const char *iou = strcmp(jstr(j, "iou_type", "bbox"), "segm") ? "bbox" : "segm"; /* ids: never the JSON's text */
  char part[32];
  if (idx > 1) snprintf(part, sizeof part, "%s%d", iou, idx);
  else snprintf(part, sizeof part, "%s", iou);
  sb_printf(b, "<article class=\"part\" id=\"%s\"><h2>COCO %s evaluation", part, strcmp(iou, "segm") ? "box (bbox)" : "mask (segm)");
  const char *nm = jstr(j, "name", NULL);
  if (nm) {
    sb_puts(b, " &middot; <span class=\"src\">");
    sb_esc(b, nm);
    sb_puts(b, "</span>");
  }
  sb_puts(b, "</h2>");
  sec_open(b, part, "summary", "Summary");
  sb_printf(b, "<p>%.0f images, %.0f annotations, %.0f detections. pycocotools' 12 numbers:</p>", rv_jnum(j, "images"),
            rv_jnum(j, "annotations"), rv_jnum(j, "detections"));
  stats_table(b, cJSON_GetObjectItem(j, "stats"));
  const cJSON *tide = cJSON_GetObjectItem(j, "tide");
  sb_puts(b, "<p>TIDE: ");
  static const char *const mains[6] = {"Cls", "Loc", "Both", "Dupe", "Bkg", "Miss"};
  int worst_k = 0;
  for (int k = 1; k < 6; k++)
    if (rv_jnum(cJSON_GetObjectItem(tide, "main"), mains[k]) > rv_jnum(cJSON_GetObjectItem(tide, "main"), mains[worst_k])) worst_k = k;
  sb_printf(b, "the largest error is <b>%s</b> (%.2f AP50 points of %.2f).</p></section>", mains[worst_k],
            rv_jnum(cJSON_GetObjectItem(tide, "main"), mains[worst_k]), rv_jnum(tide, "ap50"));
  coco_categories(b, part, cJSON_GetObjectItem(j, "per_category"));
  coco_pr(b, part, cJSON_GetObjectItem(j, "pr"), cJSON_GetObjectItem(j, "per_category"));
  tide_section(b, part, tide, NULL, NULL, NULL);
  coco_confusion(b, part, cJSON_GetObjectItem(j, "confusion"));
  coco_f1(b, part, cJSON_GetObjectItem(j, "f1"));
  coco_worst(b, part, cJSON_GetObjectItem(j, "worst_images"), cJSON_GetObjectItem(j, "confusion"));
  const cJSON *cmp = cJSON_GetObjectItem(j, "compare");
  if (cmp) coco_compare(b, part, cmp, tide, cJSON_GetObjectItem(j, "stats"), "this run");
  sb_puts(b, "</article>");
}

static void seg_part(sbuf *b, const cJSON *j, int idx) {
  char part[32];
  snprintf(part, sizeof part, idx > 1 ? "ade20k%d" : "ade20k", idx);
  const cJSON *names = cJSON_GetObjectItem(j, "names"), *iou = cJSON_GetObjectItem(j, "IoU"), *acc = cJSON_GetObjectItem(j, "Acc");
  int C = cJSON_GetArraySize(iou);
  sb_printf(b, "<article class=\"part\" id=\"%s\"><h2>Semantic segmentation (ADE20K metrics)</h2>", part);
  sec_open(b, part, "summary", "Summary");
  sb_puts(b, "<table class=\"stats\"><tr><th>aAcc</th><th>mIoU</th><th>mAcc</th><th>images</th><th>classes</th></tr><tr><td>");
  sb_num(b, "%.2f", 100 * rv_jnum(j, "aAcc"));
  sb_puts(b, "</td><td>");
  sb_num(b, "%.2f", 100 * rv_jnum(j, "mIoU"));
  sb_puts(b, "</td><td>");
  sb_num(b, "%.2f", 100 * rv_jnum(j, "mAcc"));
  sb_printf(b, "</td><td>%.0f</td><td>%d</td></tr></table><p class=\"note\">mmsegmentation 0.x's numbers (%%), "
               "annotation 0 ignored (reduce_zero_label).</p></section>",
            rv_jnum(j, "images"), C);
  sec_open(b, part, "classes", "Per-class IoU and accuracy");
  vi *ord = malloc(sizeof *ord * (size_t)(C + 1));
  const char **lab = malloc(sizeof *lab * (size_t)(C + 1));
  double *val = malloc(sizeof *val * (size_t)(C + 1)), *val2 = malloc(sizeof *val2 * (size_t)(C + 1));
  if (ord && lab && val && val2) {
    for (int i = 0; i < C; i++) ord[i] = (vi){rv_jnum(cJSON_GetArrayItem(iou, i), NULL), i};
    qsort(ord, (size_t)C, sizeof *ord, cmp_vi_desc);
    int nb = 0; /* the classes with an IoU (present in the ground truth or the predictions) */
    for (int i = 0; i < C; i++) {
      if (isnan(ord[i].v)) continue;
      lab[nb] = jstr(cJSON_GetArrayItem(names, ord[i].i), NULL, "?");
      val[nb] = 100 * ord[i].v;
      val2[nb++] = 100 * rv_jnum(cJSON_GetArrayItem(acc, ord[i].i), NULL);
    }
    if (nb < C)
      sb_printf(b, "<p class=\"note\">%d of the %d classes appear in neither the ground truth nor the predictions "
                   "(IoU undefined, null in the JSON): they are in the table only.</p>", C - nb, C);
    sb_puts(b, "<div class=\"figs\"><div class=\"fig\">");
    svg_hbars(b, "IoU (%) per class, best first", lab, val, nb, 100, "%.1f", PALETTE[0], 420);
    sb_puts(b, "</div><div class=\"fig\">");
    svg_hbars(b, "Accuracy (%), same order", lab, val2, nb, 100, "%.1f", PALETTE[2], 420);
    sb_puts(b, "</div></div>");
  }
  free(ord);
  free(lab);
  free(val);
  free(val2);
  sb_puts(b, "<table class=\"sortable\"><thead><tr><th>k</th><th>class</th><th>IoU</th><th>Acc</th></tr></thead><tbody>");
  for (int i = 0; i < C; i++) {
    sb_printf(b, "<tr><td>%d</td><td>", i);
    sb_esc(b, jstr(cJSON_GetArrayItem(names, i), NULL, "?"));
    sb_puts(b, "</td><td>");
    sb_num(b, "%.2f", 100 * rv_jnum(cJSON_GetArrayItem(iou, i), NULL));
    sb_puts(b, "</td><td>");
    sb_num(b, "%.2f", 100 * rv_jnum(cJSON_GetArrayItem(acc, i), NULL));
    sb_puts(b, "</td></tr>");
  }
  sb_puts(b, "</tbody></table></section>");
  sec_open(b, part, "confusion", "Confusion matrix");
  sb_puts(b, "<p class=\"note\">mmsegmentation 0.x's tools/confusion_matrix.py: pixels, rows ground truth, columns "
             "prediction (ignored labels and predictions without a class left out). The most confused pairs, then the "
             "row-normalised matrix. The JSON has the raw counts.</p>");
  const char **nm = malloc(sizeof *nm * (size_t)(C + 1));
  if (nm) {
    for (int i = 0; i < C; i++) nm[i] = jstr(cJSON_GetArrayItem(names, i), NULL, "?");
    confusion_body(b, cJSON_GetObjectItem(cJSON_GetObjectItem(j, "confusion"), "counts"), nm, C, "ground truth", "predicted as");
  }
  free(nm);
  sb_puts(b, "</section>");
  sec_open(b, part, "worst", "Worst images");
  sb_puts(b, "<p class=\"note\">The lowest per-image mIoU (mean over the classes present in the ground truth or the "
             "prediction). Image | ground truth | prediction; black: ignored or no class.</p><div class=\"thumbs wide\">");
  const cJSON *w;
  cJSON_ArrayForEach(w, cJSON_GetObjectItem(j, "worst_images")) {
    sb_puts(b, "<figure class=\"thumb\">");
    const char *th = thumb_uri(w);
    if (th) {
      sb_puts(b, "<img alt=\"image, ground truth, prediction\" src=\"");
      sb_puts(b, th);
      sb_puts(b, "\">");
    }
    sb_puts(b, "<figcaption>");
    sb_esc(b, jstr(w, "name", ""));
    sb_puts(b, ": mIoU ");
    sb_num(b, "%.2f", 100 * rv_jnum(w, "mIoU"));
    sb_puts(b, "</figcaption></figure>");
  }
  sb_puts(b, "</div></section></article>");
}

static const char CSS[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:#222;margin:0;background:#fafafa}"
    "main{max-width:1120px;margin:0 auto;padding:0 20px 40px}header{background:#233;color:#fff;padding:14px 20px}"
    "header h1{margin:0;font-size:22px}header p{margin:4px 0 0;color:#cdd}nav{font-size:13px;margin-top:6px}"
    "nav a{color:#9cf;margin-right:12px}h2{margin:28px 0 6px;border-bottom:2px solid #233;padding-bottom:4px}"
    "h3{margin:22px 0 6px}h4{margin:14px 0 4px}.src{font-weight:normal;color:#666;font-size:15px}"
    "section.sec{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 14px 12px;margin:12px 0}"
    "table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}"
    "th{background:#f0f3f5;cursor:default}td:nth-child(2),th:nth-child(2){text-align:left}"
    "table.sortable th{cursor:pointer}table.sortable th:hover{background:#e2e8ec}"
    ".sortable{max-height:none}.note{color:#555;font-size:13px;max-width:900px}"
    ".figs{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}.fig{overflow-x:auto;max-width:100%}"
    ".grid{display:flex;flex-wrap:wrap;gap:4px}"
    "svg.chart{background:#fff}svg .frame{fill:none;stroke:#999}svg .grid{stroke:#eee}svg line.grid{stroke:#e6e6e6}"
    "svg .ct{font-size:13px;font-weight:600;fill:#222}svg .st{font-size:10px;fill:#222}svg .tk{font-size:10px;fill:#444}"
    "svg .al{font-size:11px;fill:#333}svg .hl{font-size:7px;fill:#444}svg .bl{font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:0.25em}"
    ".thumbs{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:10px}"
    ".thumbs.wide{grid-template-columns:repeat(auto-fill,minmax(520px,1fr))}"
    "figure.thumb{margin:0;border:1px solid #ddd;background:#fff;padding:4px}figure.thumb svg,figure.thumb img{width:100%;height:auto;display:block}"
    "figcaption{font-size:12px;color:#444;margin-top:3px;word-break:break-all}"
    "@media print{body{background:#fff;font-size:11px}header{background:#fff;color:#000;border-bottom:2px solid #000}"
    "header p{color:#333}nav{display:none}main{max-width:none;padding:0}section.sec{border:none;break-inside:avoid-page;padding:0}"
    ".grid,.figs,.thumbs{break-inside:auto}article.part{break-before:page}article.part:first-of-type{break-before:auto}"
    "th{background:#eee !important;-webkit-print-color-adjust:exact;print-color-adjust:exact}"
    "svg,img{-webkit-print-color-adjust:exact;print-color-adjust:exact}}";

/* sorts a table.sortable by the clicked column (numbers as numbers, "–" last) */
static const char JS[] =
    "(function(){function key(td){var t=td.textContent.trim();var v=parseFloat(t);return isNaN(v)?t:v;}"
    "document.querySelectorAll('table.sortable').forEach(function(tb){var ths=tb.querySelectorAll('thead th');"
    "ths.forEach(function(th,i){th.title='sort';th.addEventListener('click',function(){var body=tb.tBodies[0];"
    "var rows=Array.prototype.slice.call(body.rows);var dir=th.getAttribute('data-dir')==='desc'?1:-1;"
    "ths.forEach(function(o){o.removeAttribute('data-dir');});th.setAttribute('data-dir',dir===1?'asc':'desc');"
    "rows.sort(function(a,b){var x=key(a.cells[i]),y=key(b.cells[i]);if(typeof x!==typeof y)return typeof x==='number'?-1:1;"
    "return x<y?-dir:x>y?dir:0;});rows.forEach(function(r){body.appendChild(r);});});});});})();";

rv_status rv_analysis_write_html(const char *path, const char *const *json, size_t n, const char *title, rv_ctx *ctx) {
  sbuf b = {0};
  cJSON **parts = calloc(n + 1, sizeof *parts);
  if (!parts) return rv_error(ctx, RV_ERR_NOMEM, "report: out of memory");
  rv_status st = RV_OK;
  for (size_t i = 0; i < n && st == RV_OK; i++) {
    parts[i] = cJSON_Parse(json[i]);
    if (!parts[i] || !cJSON_IsObject(parts[i]))
      st = rv_error(ctx, RV_ERR_FORMAT, "report: analysis %zu is not a JSON object", i + 1);
    else if (strcmp(jstr(parts[i], "report", ""), "coco") && strcmp(jstr(parts[i], "report", ""), "ade20k"))
      st = rv_error(ctx, RV_ERR_FORMAT, "report: analysis %zu is neither a COCO nor an ADE20K analysis (\"report\" key)", i + 1);
  }
  if (st == RV_OK) {
    const char *t = title ? title : "Evaluation report";
    sb_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                "<meta name=\"generator\" content=\"ravlt\"><title>");
    sb_esc(&b, t);
    sb_puts(&b, "</title><style>");
    sb_puts(&b, CSS);
    sb_puts(&b, "</style></head><body><header><h1>");
    sb_esc(&b, t);
    sb_printf(&b, "</h1><p>ravlt %s evaluation report</p><nav>", rv_version());
    int seen[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
      int coco = !strcmp(jstr(parts[i], "report", ""), "coco");
      int slot = coco ? strcmp(jstr(parts[i], "iou_type", "bbox"), "segm") == 0 : 2;
      const char *base = !coco ? "ade20k" : slot ? "segm" : "bbox";
      int idx = ++seen[slot];
      char part[32];
      if (idx > 1) snprintf(part, sizeof part, "%s%d", base, idx);
      else snprintf(part, sizeof part, "%s", base);
      sb_printf(&b, "<a href=\"#%s\">%s</a>", part, coco ? (slot ? "mask" : "box") : "segmentation");
      static const char *const cs[8] = {"summary", "categories", "pr", "tide", "confusion", "f1", "worst", "compare"};
      static const char *const ss[4] = {"summary", "classes", "confusion", "worst"};
      int nsec = coco ? (cJSON_GetObjectItem(parts[i], "compare") ? 8 : 7) : 4;
      for (int k = 0; k < nsec; k++) sb_printf(&b, "<a href=\"#%s-%s\">%s</a>", part, coco ? cs[k] : ss[k], coco ? cs[k] : ss[k]);
    }
    sb_puts(&b, "</nav></header><main>");
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < n; i++) {
      int coco = !strcmp(jstr(parts[i], "report", ""), "coco");
      int slot = coco ? strcmp(jstr(parts[i], "iou_type", "bbox"), "segm") == 0 : 2;
      int idx = ++seen[slot];
      if (coco) coco_part(&b, parts[i], idx);
      else seg_part(&b, parts[i], idx);
    }
    sb_puts(&b, "</main><script>");
    sb_puts(&b, JS);
    sb_puts(&b, "</script></body></html>\n");
    if (b.oom) st = rv_error(ctx, RV_ERR_NOMEM, "report: out of memory");
  }
  if (st == RV_OK) {
    rv_out_file of = {0};
    st = rv_out_open(&of, path, ctx);
    if (st == RV_OK) {
      if (fwrite(b.s, 1, b.n, of.f) != b.n) {
        rv_out_abort(&of);
        st = rv_error(ctx, RV_ERR_IO, "%s: write failed", path);
      } else
        st = rv_out_close(&of, ctx);
    }
  }
  for (size_t i = 0; i < n; i++) cJSON_Delete(parts[i]);
  free(parts);
  free(b.s);
  return st;
}
