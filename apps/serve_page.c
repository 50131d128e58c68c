/* `ravlt serve`'s web page, GET /: apps/serve_page.html compiled into the binary (the
 * assembler's .incbin, as apps/demo_model.c embeds the demo models; no file is read at run
 * time, nothing is fetched from elsewhere), with the served models and streams written into
 * it once at start-up: the HTML the server sends names them, the script only adds to it. */
#include "apps/serve.h"

#include <stdlib.h>
#include <string.h>

#ifndef RV_SERVE_PAGE_FILE
#error "RV_SERVE_PAGE_FILE: the path of apps/serve_page.html (set by CMakeLists.txt)"
#endif

__asm__(".pushsection .rodata\n"
        ".balign 16\n"
        ".type rv_serve_page_begin, @object\n"
        "rv_serve_page_begin:\n"
        ".incbin \"" RV_SERVE_PAGE_FILE "\"\n"
        ".type rv_serve_page_end, @object\n"
        "rv_serve_page_end:\n"
        ".byte 0\n"
        ".popsection\n");
extern const char rv_serve_page_begin[], rv_serve_page_end[];

static void html(srv_buf *b, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&': srv_buf_str(b, "&amp;"); break;
    case '<': srv_buf_str(b, "&lt;"); break;
    case '>': srv_buf_str(b, "&gt;"); break;
    case '"': srv_buf_str(b, "&quot;"); break;
    case '\'': srv_buf_str(b, "&#39;"); break;
    default: srv_buf_put(b, s, 1);
    }
  }
}

static void models(srv_buf *b, const rv_srv *s) {
  for (int i = 0; i < s->n_models; i++) {
    const srv_model *M = &s->models[i];
    const char *task = M->task == RV_TASK_DETECT ? "detection" : "segmentation";
    srv_buf_str(b, "<option value=\"");
    html(b, M->name);
    srv_buf_printf(b, "\" data-task=\"%s\">", task);
    html(b, M->name);
    srv_buf_printf(b, " (%s, %d classes)</option>", task, M->n_classes);
  }
}

static void streams(srv_buf *b, const rv_srv *s) {
  if (!s->n_streams) srv_buf_str(b, "<p class=\"none\">No streams (ravlt serve --stream NAME=INPUT).</p>");
  for (int i = 0; i < s->n_streams; i++) {
    const char *name = srv_stream_name(s->streams[i]); /* letters, digits, '_', '-' */
    srv_buf_str(b, "<div class=\"stream\" data-state=\"running\" data-name=\"");
    html(b, name);
    srv_buf_str(b, "\"><h3>");
    html(b, name);
    srv_buf_str(b, "</h3><img alt=\"live view of ");
    html(b, name);
    srv_buf_str(b, "\" src=\"/streams/");
    html(b, name);
    srv_buf_str(b, ".mjpg\"><div class=\"figs\"><span><b data-k=\"fps\">-</b> fps</span><span>latency <b data-k=\"latency\">-</b></span>"
                   "<span>drops <b data-k=\"drops\">-</b></span><span>frames <b data-k=\"frames\">-</b></span>"
                   "<span data-k=\"state\">running</span></div><div class=\"last\">waiting for the first frame</div></div>");
  }
}

char *srv_page_build(const rv_srv *s, size_t *len) {
  srv_buf b = {0};
  const char *p = rv_serve_page_begin, *end = rv_serve_page_end;
  while (p < end) {
    const char *m = strstr(p, "{{");
    if (!m || m >= end) {
      srv_buf_put(&b, p, (size_t)(end - p));
      break;
    }
    srv_buf_put(&b, p, (size_t)(m - p));
    if (!strncmp(m, "{{MODELS}}", 10)) {
      models(&b, s);
      p = m + 10;
    } else if (!strncmp(m, "{{STREAMS}}", 11)) {
      streams(&b, s);
      p = m + 11;
    } else {
      srv_buf_put(&b, m, 2);
      p = m + 2;
    }
  }
  if (b.oom || !b.d) {
    free(b.d);
    return NULL;
  }
  *len = b.n;
  return b.d;
}
