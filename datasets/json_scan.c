/* Strict streaming JSON scanner (see json_scan.h). */
#include "datasets/json_scan.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rv_jfail(rv_jcur *c, const char *fmt, ...) {
  if (!c->err[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
  }
  return 0;
}

void rv_jws(rv_jcur *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t')) c->p++;
}

int rv_jpeek(rv_jcur *c, char ch) {
  rv_jws(c);
  return c->p < c->end && *c->p == ch;
}

int rv_jexpect(rv_jcur *c, char ch) {
  if (!rv_jpeek(c, ch)) return rv_jfail(c, "expected '%c'", ch);
  c->p++;
  return 1;
}

int rv_jnumber(rv_jcur *c, double *v) {
  rv_jws(c);
  const char *s = c->p, *q = s;
  if (q < c->end && *q == '-') q++;
  if (q >= c->end || !isdigit((unsigned char)*q)) return rv_jfail(c, "expected a number");
  if (*q == '0')
    q++;
  else
    while (q < c->end && isdigit((unsigned char)*q)) q++;
  if (q < c->end && *q == '.') {
    q++;
    if (q >= c->end || !isdigit((unsigned char)*q)) return rv_jfail(c, "malformed number");
    while (q < c->end && isdigit((unsigned char)*q)) q++;
  }
  if (q < c->end && (*q == 'e' || *q == 'E')) {
    q++;
    if (q < c->end && (*q == '+' || *q == '-')) q++;
    if (q >= c->end || !isdigit((unsigned char)*q)) return rv_jfail(c, "malformed number");
    while (q < c->end && isdigit((unsigned char)*q)) q++;
  }
  size_t n = (size_t)(q - s);
  /* short plain integers: exact without strtod */
  if (n <= 15 && s[0] != '-') {
    int plain = 1;
    int64_t x = 0;
    for (size_t i = 0; i < n && plain; i++) {
      if (!isdigit((unsigned char)s[i])) plain = 0;
      else x = x * 10 + (s[i] - '0');
    }
    if (plain) {
      *v = (double)x;
      c->p = q;
      return 1;
    }
  }
  char buf[64];
  if (n < sizeof buf) {
    memcpy(buf, s, n);
    buf[n] = 0;
    *v = strtod(buf, NULL);
  } else {
    char *big = malloc(n + 1);
    if (!big) return rv_jfail(c, "out of memory");
    memcpy(big, s, n);
    big[n] = 0;
    *v = strtod(big, NULL);
    free(big);
  }
  c->p = q;
  return 1;
}

int rv_jstring(rv_jcur *c, char *out, size_t cap, size_t *len) {
  if (!rv_jpeek(c, '"')) return rv_jfail(c, "expected a string");
  c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != '"') {
    unsigned char ch = (unsigned char)*c->p++;
    if (ch < 0x20) return rv_jfail(c, "control character in a string");
    if (ch == '\\') {
      if (c->p >= c->end) return rv_jfail(c, "truncated string");
      char e = *c->p++;
      switch (e) {
        case '"': ch = '"'; break;
        case '\\': ch = '\\'; break;
        case '/': ch = '/'; break;
        case 'b': ch = '\b'; break;
        case 'f': ch = '\f'; break;
        case 'n': ch = '\n'; break;
        case 'r': ch = '\r'; break;
        case 't': ch = '\t'; break;
        case 'u': {
          unsigned v = 0;
          for (int k = 0; k < 4; k++) {
            if (c->p >= c->end || !isxdigit((unsigned char)*c->p)) return rv_jfail(c, "bad \\u escape");
            char h = *c->p++;
            v = v * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
          }
          ch = v < 0x80 ? (unsigned char)v : '?'; /* non-ASCII: kept as '?' (names only) */
          break;
        }
        default: return rv_jfail(c, "bad escape in a string");
      }
    }
    if (out) {
      if (n + 1 >= cap) return rv_jfail(c, "string too long");
      out[n] = (char)ch;
    }
    n++;
  }
  if (c->p >= c->end) return rv_jfail(c, "unterminated string");
  c->p++;
  if (out) out[n] = 0;
  if (len) *len = n;
  return 1;
}

static int skip_depth(rv_jcur *c, int depth);

static int skip_container(rv_jcur *c, char close, int depth) {
  if (depth > 64) return rv_jfail(c, "nesting too deep");
  c->p++;
  if (rv_jpeek(c, close)) {
    c->p++;
    return 1;
  }
  for (;;) {
    if (close == '}' && (!rv_jstring(c, NULL, 0, NULL) || !rv_jexpect(c, ':'))) return 0;
    if (!skip_depth(c, depth + 1)) return 0;
    int r = rv_jnext(c, close);
    if (r < 0) return 0;
    if (r == 0) return 1;
  }
}

static int skip_depth(rv_jcur *c, int depth) {
  rv_jws(c);
  if (c->p >= c->end) return rv_jfail(c, "unexpected end");
  char ch = *c->p;
  if (ch == '"') return rv_jstring(c, NULL, 0, NULL);
  if (ch == '{') return skip_container(c, '}', depth);
  if (ch == '[') return skip_container(c, ']', depth);
  static const char *const lits[3] = {"true", "false", "null"};
  for (int i = 0; i < 3; i++) {
    size_t l = strlen(lits[i]);
    if ((size_t)(c->end - c->p) >= l && memcmp(c->p, lits[i], l) == 0) {
      c->p += l;
      return 1;
    }
  }
  double v;
  return rv_jnumber(c, &v);
}

int rv_jskip(rv_jcur *c) { return skip_depth(c, 0); }

int rv_jkey(rv_jcur *c, char *k, size_t cap, size_t *kl) {
  rv_jws(c);
  const char *s = c->p;
  if (!rv_jstring(c, NULL, 0, NULL)) return 0;
  rv_jcur sub = {s, c->p, ""};
  if (!rv_jstring(&sub, k, cap, kl)) {
    k[0] = 0;
    *kl = 0;
  }
  return rv_jexpect(c, ':');
}

int rv_jkey_is(const char *k, size_t kl, const char *want) { return kl == strlen(want) && memcmp(k, want, kl) == 0; }

int rv_jnext(rv_jcur *c, char close) {
  rv_jws(c);
  if (c->p < c->end && *c->p == ',') {
    c->p++;
    return 1;
  }
  if (c->p < c->end && *c->p == close) {
    c->p++;
    return 0;
  }
  rv_jfail(c, "expected ',' or '%c'", close);
  return -1;
}

int rv_jsplit_list(rv_jcur *c, const char ***out, size_t *nout) {
  *out = NULL;
  *nout = 0;
  if (!rv_jexpect(c, '[')) return 0;
  size_t cap = 1024, n = 0;
  const char **starts = malloc(sizeof *starts * (cap + 1));
  if (!starts) return rv_jfail(c, "out of memory");
  if (rv_jpeek(c, ']')) {
    c->p++;
    starts[0] = c->p;
    *out = starts;
    return 1;
  }
  int depth = 0, instr = 0;
  const char *s = c->p, *p = c->p;
  for (; p < c->end; p++) {
    char ch = *p;
    if (instr) {
      if (ch == '\\') p++;
      else if (ch == '"') instr = 0;
      continue;
    }
    if (ch == '"') instr = 1;
    else if (ch == '{' || ch == '[') depth++;
    else if ((ch == '}' || ch == ']') && depth > 0) depth--;
    else if ((ch == ',' || ch == ']') && depth == 0) {
      if (n == cap) {
        cap *= 2;
        const char **ns = realloc(starts, sizeof *starts * (cap + 1));
        if (!ns) {
          free(starts);
          return rv_jfail(c, "out of memory");
        }
        starts = ns;
      }
      starts[n++] = s;
      s = p + 1;
      if (ch == ']') {
        starts[n] = p + 1;
        c->p = p + 1;
        *out = starts;
        *nout = n;
        return 1;
      }
    }
  }
  free(starts);
  c->p = c->end;
  return rv_jfail(c, "unterminated list");
}

rv_status rv_jsyntax_error(rv_ctx *ctx, const char *name, const char *json, const char *at, const char *what) {
  size_t line = 1, col = 1;
  for (const char *q = json; q < at; q++) {
    if (*q == '\n') {
      line++;
      col = 1;
    } else
      col++;
  }
  return rv_error(ctx, RV_ERR_FORMAT, "%s: malformed JSON near line %zu column %zu (%s)", name, line, col, what);
}
