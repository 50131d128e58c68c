/* mmcv Python-literal config parser (see pyconfig.h): a one-token-lookahead tokenizer and a
 * recursive-descent parser with a depth limit, building cJSON directly. */
#include "formats/pyconfig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 200
#define MAX_RANGE 1000000

typedef enum { T_EOF, T_NEWLINE, T_NAME, T_NUMBER, T_STRING, T_PUNCT } tok_type;

typedef struct {
  const char *s;
  size_t n, pos;
  int line;
  size_t line_start;
  int nest;           /* bracket depth: newlines are insignificant inside brackets */
  int depth;          /* parser recursion depth */
  const char *name;
  rv_ctx *ctx;
  rv_status err;      /* first error */
  cJSON *root;
  /* current token */
  tok_type t;
  char punct;
  int tline, tcol;
  const char *tstart;
  size_t tlen;
  double num;
  int is_int;
  long long ival;
  char *str;          /* decoded string literal (T_STRING) */
  size_t slen, scap;
} parser;

__attribute__((format(printf, 2, 3))) static rv_status perr(parser *p, const char *fmt, ...) {
  if (p->err != RV_OK) return p->err;
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  p->err = rv_error(p->ctx, RV_ERR_FORMAT, "%s:%d:%d: %s", p->name, p->tline, p->tcol, msg);
  return p->err;
}

static rv_status nomem(parser *p) {
  if (p->err == RV_OK) p->err = rv_error(p->ctx, RV_ERR_NOMEM, "%s: out of memory", p->name);
  return p->err;
}

/* ---- tokenizer ------------------------------------------------------------------------- */

static int is_ident0(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_ident(int c) { return is_ident0(c) || is_digit(c); }
static int peekc(const parser *p, size_t k) { return p->pos + k < p->n ? (unsigned char)p->s[p->pos + k] : -1; }

static void newline_at(parser *p) {
  p->line++;
  p->line_start = p->pos;
}

static int sput(parser *p, const char *c, size_t k) {
  if (p->slen + k + 1 > p->scap) {
    size_t nc = p->scap ? p->scap * 2 : 64;
    while (nc < p->slen + k + 1) nc *= 2;
    char *q = realloc(p->str, nc);
    if (!q) return -1;
    p->str = q;
    p->scap = nc;
  }
  memcpy(p->str + p->slen, c, k);
  p->slen += k;
  p->str[p->slen] = 0;
  return 0;
}

static int put_utf8(parser *p, unsigned long cp) {
  char b[4];
  size_t k;
  if (cp < 0x80) { b[0] = (char)cp; k = 1; }
  else if (cp < 0x800) { b[0] = (char)(0xc0 | (cp >> 6)); b[1] = (char)(0x80 | (cp & 0x3f)); k = 2; }
  else if (cp < 0x10000) {
    b[0] = (char)(0xe0 | (cp >> 12)); b[1] = (char)(0x80 | ((cp >> 6) & 0x3f)); b[2] = (char)(0x80 | (cp & 0x3f)); k = 3;
  } else {
    b[0] = (char)(0xf0 | (cp >> 18)); b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    b[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); b[3] = (char)(0x80 | (cp & 0x3f)); k = 4;
  }
  return sput(p, b, k);
}

static int hexval(int c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A string literal starting at p->pos (after any prefix); appends its value to p->str. */
static rv_status lex_string(parser *p, int raw) {
  int q = peekc(p, 0);
  int triple = peekc(p, 1) == q && peekc(p, 2) == q;
  p->pos += triple ? 3 : 1;
  for (;;) {
    int c = peekc(p, 0);
    if (c < 0) return perr(p, "unterminated string");
    if (c == 0) return perr(p, "NUL byte in a string");
    if (c == q && (!triple || (peekc(p, 1) == q && peekc(p, 2) == q))) {
      p->pos += triple ? 3 : 1;
      return RV_OK;
    }
    if (c == '\n') {
      if (!triple) return perr(p, "unterminated string (line break inside '...')");
      p->pos++;
      newline_at(p);
      if (sput(p, "\n", 1)) return nomem(p);
      continue;
    }
    if (c != '\\') {
      char ch = (char)c;
      if (sput(p, &ch, 1)) return nomem(p);
      p->pos++;
      continue;
    }
    int e = peekc(p, 1);
    if (e < 0) return perr(p, "unterminated string");
    if (raw) { /* a backslash stays, and protects the next character */
      char two[2] = {'\\', (char)e};
      if (e == 0) return perr(p, "NUL byte in a string");
      if (sput(p, two, 2)) return nomem(p);
      p->pos += 2;
      if (e == '\n') newline_at(p);
      continue;
    }
    p->pos += 2;
    unsigned long cp;
    const char *simple = NULL;
    switch (e) {
    case '\n': newline_at(p); continue; /* line continuation inside the literal */
    case '\\': simple = "\\"; break;
    case '\'': simple = "'"; break;
    case '"': simple = "\""; break;
    case 'n': simple = "\n"; break;
    case 't': simple = "\t"; break;
    case 'r': simple = "\r"; break;
    case 'a': simple = "\a"; break;
    case 'b': simple = "\b"; break;
    case 'f': simple = "\f"; break;
    case 'v': simple = "\v"; break;
    case 'x': case 'u': case 'U': {
      int nd = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      cp = 0;
      for (int i = 0; i < nd; i++) {
        int h = hexval(peekc(p, 0));
        if (h < 0) return perr(p, "bad \\%c escape", e);
        cp = cp * 16 + (unsigned long)h;
        p->pos++;
      }
      if (cp == 0) return perr(p, "NUL character in a string");
      if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return perr(p, "invalid code point in \\%c escape", e);
      if (put_utf8(p, cp)) return nomem(p);
      continue;
    }
    case 'N': return perr(p, "\\N{...} escapes are not supported");
    default:
      if (e >= '0' && e <= '7') { /* up to three octal digits */
        cp = (unsigned long)(e - '0');
        for (int i = 0; i < 2 && peekc(p, 0) >= '0' && peekc(p, 0) <= '7'; i++) cp = cp * 8 + (unsigned long)(p->s[p->pos++] - '0');
        if (cp == 0) return perr(p, "NUL character in a string");
        if (put_utf8(p, cp)) return nomem(p);
        continue;
      }
      { /* unknown escape: Python keeps the backslash */
        char two[2] = {'\\', (char)e};
        if (e == 0) return perr(p, "NUL byte in a string");
        if (sput(p, two, 2)) return nomem(p);
      }
      continue;
    }
    if (sput(p, simple, 1)) return nomem(p);
  }
}

static rv_status lex_number(parser *p) {
  size_t b = p->pos;
  char buf[128];
  size_t k = 0;
  int isfloat = 0, base = 10;
  if (peekc(p, 0) == '0' && (peekc(p, 1) == 'x' || peekc(p, 1) == 'X' || peekc(p, 1) == 'o' ||
                              peekc(p, 1) == 'O' || peekc(p, 1) == 'b' || peekc(p, 1) == 'B')) {
    int c = peekc(p, 1) | 0x20;
    base = c == 'x' ? 16 : c == 'o' ? 8 : 2;
    p->pos += 2;
  }
  for (;;) {
    int c = peekc(p, 0);
    if (c == '_') { p->pos++; continue; }
    int ok = base == 16 ? hexval(c) >= 0 : is_digit(c);
    if (base == 10 && (c == '.' || c == 'e' || c == 'E')) {
      ok = 1;
      isfloat = 1;
      if ((c == 'e' || c == 'E') && (peekc(p, 1) == '+' || peekc(p, 1) == '-')) {
        if (k + 2 >= sizeof buf) return perr(p, "number too long");
        buf[k++] = (char)c;
        p->pos++;
        c = peekc(p, 0);
      }
    }
    if (!ok) break;
    if (k + 2 >= sizeof buf) return perr(p, "number too long");
    buf[k++] = (char)c;
    p->pos++;
  }
  buf[k] = 0;
  if (is_ident(peekc(p, 0))) return perr(p, "bad number literal '%.*s'", (int)(p->pos - b + 1), p->s + b);
  if (k == 0) return perr(p, "bad number literal");
  char *end;
  errno = 0;
  if (isfloat) {
    p->num = strtod(buf, &end);
    p->is_int = 0;
  } else {
    p->ival = strtoll(buf, &end, base);
    if (errno == ERANGE) { /* Python ints are unbounded: keep the float value */
      p->num = base == 10 ? strtod(buf, NULL) : (double)strtoull(buf, NULL, base);
      p->is_int = 0;
      errno = 0;
    } else {
      p->num = (double)p->ival;
      p->is_int = 1;
    }
  }
  if (*end || errno) return perr(p, "bad number literal '%s'", buf);
  p->t = T_NUMBER;
  return RV_OK;
}

/* Scan the next token into p->t. */
static rv_status next(parser *p) {
  if (p->err) return p->err;
  for (;;) {
    int c = peekc(p, 0);
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f') { p->pos++; continue; }
    if (c == '#') { while (peekc(p, 0) >= 0 && peekc(p, 0) != '\n') p->pos++; continue; }
    if (c == '\\' && (peekc(p, 1) == '\n' || (peekc(p, 1) == '\r' && peekc(p, 2) == '\n'))) {
      p->pos += peekc(p, 1) == '\n' ? 2 : 3;
      newline_at(p);
      continue;
    }
    if (c == '\n' && p->nest > 0) { p->pos++; newline_at(p); continue; }
    break;
  }
  p->tline = p->line;
  p->tcol = (int)(p->pos - p->line_start) + 1;
  p->tstart = p->s + p->pos;
  size_t b = p->pos;
  int c = peekc(p, 0);
  if (c < 0) { p->t = T_EOF; p->tlen = 0; return RV_OK; }
  if (c == '\n' || c == ';') {
    p->pos++;
    if (c == '\n') newline_at(p);
    p->t = T_NEWLINE;
  } else if (is_ident0(c)) {
    while (is_ident(peekc(p, 0))) p->pos++;
    size_t len = p->pos - b;
    int q = peekc(p, 0);
    if ((q == '\'' || q == '"') && len <= 2) { /* string prefix */
      int raw = 0, other = 0;
      for (size_t i = 0; i < len; i++) {
        int pc = p->s[b + i] | 0x20;
        if (pc == 'r') raw = 1;
        else if (pc != 'u') other = pc;
      }
      if (other == 'b') return perr(p, "bytes literals are not supported");
      if (other == 'f') return perr(p, "f-strings are not supported");
      if (other) return perr(p, "unknown string prefix '%.*s'", (int)len, p->s + b);
      p->slen = 0;
      if (sput(p, "", 0)) return nomem(p);
      RV_TRY(lex_string(p, raw));
      p->t = T_STRING;
    } else {
      p->t = T_NAME;
    }
  } else if (is_digit(c) || (c == '.' && is_digit(peekc(p, 1)))) {
    RV_TRY(lex_number(p));
  } else if (c == '\'' || c == '"') {
    p->slen = 0;
    if (sput(p, "", 0)) return nomem(p);
    RV_TRY(lex_string(p, 0));
    p->t = T_STRING;
  } else if (strchr("()[]{},:=-+.", c) && c) {
    p->pos++;
    p->t = T_PUNCT;
    p->punct = (char)c;
    if (c == '(' || c == '[' || c == '{') p->nest++;
    if ((c == ')' || c == ']' || c == '}') && p->nest > 0) p->nest--;
  } else if (c == 0) {
    return perr(p, "NUL byte in the text");
  } else if (c >= 0x80) {
    return perr(p, "unexpected non-ASCII character outside a string");
  } else if (strchr("*/%@&|^~<>!", c)) {
    return perr(p, "operator '%c' is not supported (only literals)", c);
  } else {
    return perr(p, "unexpected character '%c'", c);
  }
  p->tlen = p->pos - b;
  return RV_OK;
}

static int is_p(const parser *p, char c) { return p->t == T_PUNCT && p->punct == c; }
static int is_name(const parser *p, const char *s) {
  return p->t == T_NAME && p->tlen == strlen(s) && memcmp(p->tstart, s, p->tlen) == 0;
}

static const char *tok_desc(const parser *p, char *buf, size_t cap) {
  switch (p->t) {
  case T_EOF: return "end of input";
  case T_NEWLINE: return "end of line";
  case T_STRING: return "a string";
  case T_NUMBER: return "a number";
  default:
    snprintf(buf, cap, "'%.*s'", (int)(p->tlen > 40 ? 40 : p->tlen), p->tstart);
    return buf;
  }
}

static rv_status expect(parser *p, char c) {
  char b[64];
  if (!is_p(p, c)) return perr(p, "expected '%c', found %s", c, tok_desc(p, b, sizeof b));
  return next(p);
}

/* ---- parser ------------------------------------------------------------------------------ */

static rv_status parse_expr(parser *p, cJSON **out);

/* 1 and *v = d if d is an integer of magnitude below 9e15 (range-checked before the cast). */
static int exact_int(double d, long long *v) {
  if (!(d > -9.0e15 && d < 9.0e15) || d != (double)(long long)d) return 0;
  *v = (long long)d;
  return 1;
}

/* Add item under key to obj (a later duplicate replaces the value in place, like Python). */
static rv_status obj_set(parser *p, cJSON *obj, const char *key, cJSON *item) {
  if (cJSON_GetObjectItemCaseSensitive(obj, key)) {
    if (!cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item)) { cJSON_Delete(item); return nomem(p); }
  } else if (!cJSON_AddItemToObject(obj, key, item)) {
    cJSON_Delete(item);
    return nomem(p);
  }
  return RV_OK;
}

/* Items up to `close`, comma separated, trailing comma allowed. Sets *saw_comma. */
static rv_status parse_seq(parser *p, cJSON *arr, char close, int *saw_comma) {
  *saw_comma = 0;
  while (!is_p(p, close)) {
    cJSON *v = NULL;
    RV_TRY(parse_expr(p, &v));
    if (!cJSON_AddItemToArray(arr, v)) { cJSON_Delete(v); return nomem(p); }
    if (is_p(p, ',')) { *saw_comma = 1; RV_TRY(next(p)); continue; }
    if (!is_p(p, close)) {
      char b[64];
      return perr(p, "expected ',' or '%c', found %s", close, tok_desc(p, b, sizeof b));
    }
  }
  return next(p);
}

static rv_status parse_dict_call(parser *p, cJSON *obj) {
  while (!is_p(p, ')')) {
    char b[64];
    if (p->t != T_NAME) {
      if (is_p(p, '-') || is_p(p, '+')) return perr(p, "expected 'key=value' in dict(...)");
      return perr(p, "dict(...) takes keyword arguments only, found %s", tok_desc(p, b, sizeof b));
    }
    char key[256];
    if (p->tlen >= sizeof key) return perr(p, "keyword too long");
    memcpy(key, p->tstart, p->tlen);
    key[p->tlen] = 0;
    RV_TRY(next(p));
    RV_TRY(expect(p, '='));
    cJSON *v = NULL;
    RV_TRY(parse_expr(p, &v));
    RV_TRY(obj_set(p, obj, key, v));
    if (is_p(p, ',')) { RV_TRY(next(p)); continue; }
    if (!is_p(p, ')')) return perr(p, "expected ',' or ')', found %s", tok_desc(p, b, sizeof b));
  }
  return next(p);
}

static rv_status parse_dict_literal(parser *p, cJSON *obj) {
  while (!is_p(p, '}')) {
    char b[64];
    int kline = p->tline, kcol = p->tcol;
    cJSON *k = NULL;
    RV_TRY(parse_expr(p, &k));
    char num[64];
    const char *key = NULL;
    long long ik;
    if (cJSON_IsString(k)) key = k->valuestring;
    else if (cJSON_IsNumber(k) && exact_int(k->valuedouble, &ik)) {
      snprintf(num, sizeof num, "%lld", ik);
      key = num;
    }
    if (!key) {
      cJSON_Delete(k);
      p->tline = kline;
      p->tcol = kcol;
      return perr(p, "dict keys must be strings or integers");
    }
    rv_status st = expect(p, ':');
    cJSON *v = NULL;
    if (st == RV_OK) st = parse_expr(p, &v);
    if (st == RV_OK) st = obj_set(p, obj, key, v);
    cJSON_Delete(k);
    RV_TRY(st);
    if (is_p(p, ',')) { RV_TRY(next(p)); continue; }
    if (!is_p(p, '}')) return perr(p, "expected ',' or '}', found %s", tok_desc(p, b, sizeof b));
  }
  return next(p);
}

static rv_status int_arg(parser *p, long long *v) {
  cJSON *x = NULL;
  RV_TRY(parse_expr(p, &x));
  int ok = cJSON_IsNumber(x) && exact_int(x->valuedouble, v);
  cJSON_Delete(x);
  return ok ? RV_OK : perr(p, "range() needs integer arguments");
}

static rv_status parse_range(parser *p, cJSON *arr) {
  long long a[3] = {0, 0, 1};
  int n = 0;
  while (!is_p(p, ')')) {
    if (n == 3) return perr(p, "range() takes at most 3 arguments");
    RV_TRY(int_arg(p, &a[n++]));
    if (is_p(p, ',')) RV_TRY(next(p));
    else if (!is_p(p, ')')) return perr(p, "expected ',' or ')' in range()");
  }
  RV_TRY(next(p));
  if (n == 0) return perr(p, "range() needs an argument");
  long long start = n == 1 ? 0 : a[0], stop = n == 1 ? a[0] : a[1], step = n == 3 ? a[2] : 1;
  if (step == 0) return perr(p, "range() step must not be zero");
  long long count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                             : (start > stop ? (start - stop - step - 1) / -step : 0);
  if (count > MAX_RANGE) return perr(p, "range() of %lld items is too long", count);
  for (long long i = 0; i < count; i++) {
    cJSON *v = cJSON_CreateNumber((double)(start + i * step));
    if (!v || !cJSON_AddItemToArray(arr, v)) { cJSON_Delete(v); return nomem(p); }
  }
  return RV_OK;
}

static rv_status parse_atom(parser *p, cJSON **out) {
  char b[64];
  if (p->t == T_NUMBER) {
    *out = cJSON_CreateNumber(p->num);
    if (!*out) return nomem(p);
    return next(p);
  }
  if (p->t == T_STRING) { /* adjacent literals concatenate */
    char *acc = NULL;
    size_t alen = 0;
    while (p->t == T_STRING) {
      char *na = realloc(acc, alen + p->slen + 1);
      if (!na) { free(acc); return nomem(p); }
      acc = na;
      memcpy(acc + alen, p->str, p->slen + 1);
      alen += p->slen;
      if (next(p) != RV_OK) { free(acc); return p->err; }
    }
    *out = cJSON_CreateString(acc);
    free(acc);
    return *out ? RV_OK : nomem(p);
  }
  if (p->t == T_NAME) {
    if (is_name(p, "True") || is_name(p, "False")) {
      *out = cJSON_CreateBool(is_name(p, "True"));
      return *out ? next(p) : nomem(p);
    }
    if (is_name(p, "None")) {
      *out = cJSON_CreateNull();
      return *out ? next(p) : nomem(p);
    }
    char nm[128];
    snprintf(nm, sizeof nm, "%.*s", (int)(p->tlen > 100 ? 100 : p->tlen), p->tstart);
    int nline = p->tline, ncol = p->tcol;
    RV_TRY(next(p));
    if (is_p(p, '(')) {
      int isdict = strcmp(nm, "dict") == 0, isrange = strcmp(nm, "range") == 0;
      int islist = strcmp(nm, "list") == 0 || strcmp(nm, "tuple") == 0;
      if (!isdict && !isrange && !islist) {
        p->tline = nline;
        p->tcol = ncol;
        return perr(p, "call of '%s' is not supported (only dict, range, list, tuple)", nm);
      }
      RV_TRY(next(p));
      *out = isdict ? cJSON_CreateObject() : cJSON_CreateArray();
      if (!*out) return nomem(p);
      if (isdict) return parse_dict_call(p, *out);
      if (isrange) return parse_range(p, *out);
      if (is_p(p, ')')) return next(p); /* list() / tuple() */
      cJSON *x = NULL; /* list(iterable) / tuple(iterable): an array stays an array */
      RV_TRY(parse_expr(p, &x));
      if (!cJSON_IsArray(x)) {
        cJSON_Delete(x);
        return perr(p, "%s() needs a list, tuple or range", nm);
      }
      cJSON_Delete(*out);
      *out = x;
      return expect(p, ')');
    }
    if (is_p(p, '.') || is_p(p, '[')) {
      return perr(p, "'%c' after a name is not supported (no attribute access or indexing)", p->punct);
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p->root, nm);
    if (!v) {
      p->tline = nline;
      p->tcol = ncol;
      return perr(p, "name '%s' is not defined", nm);
    }
    *out = cJSON_Duplicate(v, 1);
    return *out ? RV_OK : nomem(p);
  }
  if (is_p(p, '[')) {
    RV_TRY(next(p));
    *out = cJSON_CreateArray();
    if (!*out) return nomem(p);
    int comma;
    return parse_seq(p, *out, ']', &comma);
  }
  if (is_p(p, '{')) {
    RV_TRY(next(p));
    *out = cJSON_CreateObject();
    if (!*out) return nomem(p);
    return parse_dict_literal(p, *out);
  }
  if (is_p(p, '(')) { /* (), (x) or a tuple */
    RV_TRY(next(p));
    if (is_p(p, ')')) {
      *out = cJSON_CreateArray();
      return *out ? next(p) : nomem(p);
    }
    cJSON *first = NULL;
    RV_TRY(parse_expr(p, &first));
    if (is_p(p, ')')) { *out = first; return next(p); }
    if (!is_p(p, ',')) {
      cJSON_Delete(first);
      return perr(p, "expected ',' or ')', found %s", tok_desc(p, b, sizeof b));
    }
    *out = cJSON_CreateArray();
    if (!*out || !cJSON_AddItemToArray(*out, first)) { cJSON_Delete(first); return nomem(p); }
    RV_TRY(next(p));
    int comma;
    return parse_seq(p, *out, ')', &comma);
  }
  return perr(p, "expected a value, found %s", tok_desc(p, b, sizeof b));
}

static rv_status parse_expr(parser *p, cJSON **out) {
  *out = NULL;
  if (++p->depth > MAX_DEPTH) return perr(p, "nesting deeper than %d levels", MAX_DEPTH);
  rv_status st;
  if (is_p(p, '-') || is_p(p, '+')) {
    int neg = p->punct == '-';
    st = next(p);
    if (st == RV_OK) st = parse_expr(p, out);
    if (st == RV_OK && !cJSON_IsNumber(*out)) st = perr(p, "unary '%c' needs a number", neg ? '-' : '+');
    if (st == RV_OK && neg) cJSON_SetNumberValue(*out, -(*out)->valuedouble);
  } else {
    st = parse_atom(p, out);
  }
  p->depth--;
  if (st != RV_OK) {
    cJSON_Delete(*out);
    *out = NULL;
    return st;
  }
  char b[64];
  if (p->t == T_NUMBER || p->t == T_STRING || p->t == T_NAME || is_p(p, '(') || is_p(p, '[')) {
    cJSON_Delete(*out);
    *out = NULL;
    return perr(p, "unexpected %s after a value (missing ','?)", tok_desc(p, b, sizeof b));
  }
  if (is_p(p, '.')) {
    cJSON_Delete(*out);
    *out = NULL;
    return perr(p, "attribute access is not supported");
  }
  return RV_OK;
}

static rv_status parse_statement(parser *p) {
  char b[64];
  if (p->t != T_NAME) return perr(p, "expected 'name = value', found %s", tok_desc(p, b, sizeof b));
  char name[256];
  if (p->tlen >= sizeof name) return perr(p, "name too long");
  memcpy(name, p->tstart, p->tlen);
  name[p->tlen] = 0;
  if (!strcmp(name, "import") || !strcmp(name, "from") || !strcmp(name, "def") || !strcmp(name, "class") ||
      !strcmp(name, "if") || !strcmp(name, "for") || !strcmp(name, "with"))
    return perr(p, "'%s' statements are not supported (only 'name = value')", name);
  RV_TRY(next(p));
  RV_TRY(expect(p, '='));
  cJSON *v = NULL;
  RV_TRY(parse_expr(p, &v));
  if (is_p(p, ',')) { /* a bare tuple: x = 1, 2 */
    cJSON *arr = cJSON_CreateArray();
    if (!arr || !cJSON_AddItemToArray(arr, v)) { cJSON_Delete(v); cJSON_Delete(arr); return nomem(p); }
    v = arr;
    rv_status st = next(p);
    while (st == RV_OK && p->t != T_NEWLINE && p->t != T_EOF) {
      cJSON *x = NULL;
      st = parse_expr(p, &x);
      if (st == RV_OK && !cJSON_AddItemToArray(arr, x)) { cJSON_Delete(x); st = nomem(p); }
      if (st == RV_OK && is_p(p, ',')) st = next(p);
      else if (st == RV_OK && p->t != T_NEWLINE && p->t != T_EOF)
        st = perr(p, "expected ',' or end of line, found %s", tok_desc(p, b, sizeof b));
    }
    if (st != RV_OK) { cJSON_Delete(v); return st; }
  }
  if (p->t != T_NEWLINE && p->t != T_EOF) {
    cJSON_Delete(v);
    if (is_p(p, '=')) return perr(p, "chained assignment is not supported");
    return perr(p, "expected end of line, found %s", tok_desc(p, b, sizeof b));
  }
  return obj_set(p, p->root, name, v);
}

rv_status rv_pyconfig_parse_len(cJSON **out, const char *text, size_t len, const char *name, rv_ctx *ctx) {
  *out = NULL;
  parser p;
  memset(&p, 0, sizeof p);
  p.s = text ? text : "";
  p.n = text ? len : 0;
  p.line = 1;
  p.name = name ? name : "(config)";
  p.ctx = ctx;
  p.tline = 1;
  p.tcol = 1;
  p.root = cJSON_CreateObject();
  if (!p.root) return rv_error(ctx, RV_ERR_NOMEM, "%s: out of memory", p.name);
  /* a UTF-8 byte order mark is allowed at the start */
  if (p.n >= 3 && memcmp(p.s, "\xef\xbb\xbf", 3) == 0) p.pos = p.line_start = 3;
  rv_status st = next(&p);
  int after_semicolon = 0;
  while (st == RV_OK && p.t != T_EOF) {
    if (p.t == T_NEWLINE) {
      after_semicolon = *p.tstart == ';';
      st = next(&p);
      continue;
    }
    if (p.tcol != 1 && !after_semicolon) { st = perr(&p, "unexpected indentation"); break; }
    st = parse_statement(&p);
  }
  free(p.str);
  if (st != RV_OK) {
    cJSON_Delete(p.root);
    return st;
  }
  *out = p.root;
  return RV_OK;
}

rv_status rv_pyconfig_parse(cJSON **out, const char *text, const char *name, rv_ctx *ctx) {
  return rv_pyconfig_parse_len(out, text, text ? strlen(text) : 0, name, ctx);
}
