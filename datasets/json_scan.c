/* Strict streaming JSON scanner (see json_scan.h). */
#include "datasets/json_scan.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
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
  const char *s = c->p, *q = s, *end = c->end;
  /* one pass: the grammar, and the digits into an integer while there are at most 15 */
  int neg = 0, digits = 0, frac = 0, simple = 1;
  uint64_t x = 0;
  if (q < end && *q == '-') {
    neg = 1;
    q++;
  }
  if (q >= end || (unsigned)(*q - '0') > 9) return rv_jfail(c, "expected a number");
  if (*q == '0') {
    q++;
    digits = 1;
  } else
    for (; q < end && (unsigned)(*q - '0') <= 9; q++, digits++) x = x * 10 + (uint64_t)(*q - '0');
  if (q < end && *q == '.') {
    q++;
    if (q >= end || (unsigned)(*q - '0') > 9) return rv_jfail(c, "malformed number");
    for (; q < end && (unsigned)(*q - '0') <= 9; q++, frac++)
      if (digits + frac < 20) x = x * 10 + (uint64_t)(*q - '0'); /* 19 digits fit in uint64 */
  }
  if (q < end && (*q == 'e' || *q == 'E')) {
    simple = 0;
    q++;
    if (q < end && (*q == '+' || *q == '-')) q++;
    if (q >= end || (unsigned)(*q - '0') > 9) return rv_jfail(c, "malformed number");
    while (q < end && (unsigned)(*q - '0') <= 9) q++;
  }
  /* At most 15 digits and no exponent: the integer of the digits and 10^frac (frac <= 15)
   * are exact doubles, so one correctly rounded division gives the value strtod gives
   * (Clinger's fast path). */
  if (simple && digits + frac <= 15) {
    static const double P10[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    double d = (double)x;
    if (frac) d /= P10[frac];
    *v = neg ? -d : d;
    c->p = q;
    return 1;
  }
#if LDBL_MANT_DIG >= 64
  /* 16 to 19 digits and no exponent (scores and boxes as Python writes float32 values): the
   * digits' integer and 10^frac (frac <= 19) are exact in long double, so x / 10^frac is rounded
   * once there; rounding that to double gives the correctly rounded value unless it lies
   * exactly halfway between two doubles (where double rounding can differ), which goes to
   * strtod. */
  if (simple && digits + frac <= 19) {
    static const long double P10L[20] = {1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
                                         1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L};
    long double ql = (long double)x;
    if (frac) ql /= P10L[frac];
    double d = (double)ql;
    int halfway = 0;
    if ((long double)d != ql) {
      double o = nextafter(d, ql > (long double)d ? INFINITY : -INFINITY);
      halfway = ((long double)d + (long double)o) / 2 == ql;
    }
    if (!halfway) {
      *v = neg ? -d : d;
      c->p = q;
      return 1;
    }
  }
#endif
  size_t n = (size_t)(q - s);
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

/* The string at c->p into out (cap bytes with the NUL; out NULL: skip). overlong NULL: a
 * string that does not fit fails; otherwise it is scanned to its end, *overlong set. */
static int jstring(rv_jcur *c, char *out, size_t cap, size_t *len, int *overlong) {
  if (!rv_jpeek(c, '"')) return rv_jfail(c, "expected a string");
  c->p++;
  size_t n = 0;
  const char *p = c->p, *end = c->end;
  for (;;) {
    /* plain run: no quote, backslash or control character */
    const char *r = p;
    /* 8 bytes at a time while none is a quote, a backslash or below 0x20 (SWAR tests) */
    while (end - r >= 8) {
      uint64_t x;
      memcpy(&x, r, 8);
      const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
      uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
      uint64_t hit = ((q - ones) & ~q) | ((b - ones) & ~b) | ((x - ones * 0x20) & ~x);
      if (hit & highs) break;
      r += 8;
    }
    while (r < end && *r != '"' && *r != '\\' && (unsigned char)*r >= 0x20) r++;
    size_t k = (size_t)(r - p);
    if (out && k) {
      if (n + k >= cap) {
        if (!overlong) return c->p = r, rv_jfail(c, "string too long");
        *overlong = 1;
        out = NULL;
      } else
        memcpy(out + n, p, k);
    }
    n += k;
    p = r;
    if (p >= end) {
      c->p = p;
      return rv_jfail(c, "unterminated string");
    }
    unsigned char ch = (unsigned char)*p++;
    if (ch == '"') break;
    if (ch < 0x20) {
      c->p = p;
      return rv_jfail(c, "control character in a string");
    }
    /* an escape */
    if (p >= end) {
      c->p = p;
      return rv_jfail(c, "truncated string");
    }
    char e = *p++;
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
        for (int i = 0; i < 4; i++) {
          if (p >= end || !isxdigit((unsigned char)*p)) return c->p = p, rv_jfail(c, "bad \\u escape");
          char h = *p++;
          v = v * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
        }
        ch = v < 0x80 ? (unsigned char)v : '?'; /* non-ASCII: kept as '?' (names only) */
        break;
      }
      default: return c->p = p, rv_jfail(c, "bad escape in a string");
    }
    if (out) {
      if (n + 1 >= cap) {
        if (!overlong) return c->p = p, rv_jfail(c, "string too long");
        *overlong = 1;
        out = NULL;
      } else
        out[n] = (char)ch;
    }
    n++;
  }
  c->p = p;
  if (out) out[n] = 0;
  if (len) *len = n;
  return 1;
}

int rv_jstring(rv_jcur *c, char *out, size_t cap, size_t *len) { return jstring(c, out, cap, len, NULL); }

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
  int overlong = 0;
  if (!jstring(c, k, cap, kl, &overlong)) return 0;
  if (overlong) {
    k[0] = 0;
    *kl = 0;
  }
  return rv_jexpect(c, ':');
}

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
  /* structural characters outside strings; inside a string, jump to the next quote (memchr)
   * and look back over the backslashes to tell an escaped quote from the closing one */
  static const unsigned char SPECIAL[256] = {['"'] = 1, ['{'] = 2, ['['] = 2, ['}'] = 3, [']'] = 4, [','] = 5};
  int depth = 0;
  const char *s = c->p, *p = c->p, *end = c->end;
  for (; p < end; p++) {
    unsigned char kind = SPECIAL[(unsigned char)*p];
    if (!kind) continue;
    if (kind == 1) {
      const char *from = p + 1;
      for (;;) {
        const char *q = memchr(from, '"', (size_t)(end - from));
        if (!q) {
          p = end;
          break;
        }
        size_t bs = 0;
        while (q - bs > from && q[-1 - (ptrdiff_t)bs] == '\\') bs++;
        if (bs % 2 == 0) {
          p = q;
          break;
        }
        from = q + 1;
      }
      if (p >= end) break;
    } else if (kind == 2)
      depth++;
    else if ((kind == 3 || kind == 4) && depth > 0) /* '}' or ']' closing a nested value */
      depth--;
    else if (kind != 3 && depth == 0) { /* ',' or ']' at the top */
      char ch = *p;
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
