/* mmcv Python-literal config parser: exact agreement with Python's own evaluation
 * (tests/data/pyconfig/NAME.json from tools/pyconfig_to_json.py) on the e2e fixtures' training configs
 * and on a file using every accepted construct; every fixture config and checkpoint meta
 * config parses; malformed snippets fail with "name:line:col: message". */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"
#include "formats/pth.h"
#include "formats/pyconfig.h"

#include <dirent.h>

static void expect_equal_trees(const cJSON *got, const cJSON *want, const char *what) {
  /* same top-level names in the same order, and equal values */
  const cJSON *g = got->child, *w = want->child;
  for (; g && w; g = g->next, w = w->next) {
    if (strcmp(g->string, w->string)) fail_msg("%s: top-level name '%s', want '%s'", what, g->string, w->string);
    if (!cJSON_Compare(g, w, 1)) {
      char *a = cJSON_PrintUnformatted(g), *b = cJSON_PrintUnformatted(w);
      print_message("got:  %.2000s\nwant: %.2000s\n", a, b);
      free(a);
      free(b);
      fail_msg("%s: '%s' differs from Python's value", what, g->string);
    }
  }
  if (g || w) fail_msg("%s: different number of top-level names", what);
}

static void test_reference_configs(void **state) {
  (void)state;
  /* NAME.json holds Python's evaluation of NAME.py beside it, or of the e2e fixture's
   * training config (tests/fixtures/e2e/NAME/train_config.py) when there is no NAME.py */
  DIR *d = opendir(data_path("pyconfig"));
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  rv_ctx *ctx = rv_ctx_create();
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".json")) continue;
    char rel[512];
    snprintf(rel, sizeof rel, "pyconfig/%.*s.py", (int)(l - 5), e->d_name);
    char *txt = test_read_text(data_path(rel));
    if (!txt) {
      snprintf(rel, sizeof rel, "e2e/%.*s/train_config.py", (int)(l - 5), e->d_name);
      txt = test_read_text(fixture_path(rel));
    }
    if (!txt) fail_msg("%s: neither pyconfig/%.*s.py nor %s exists", e->d_name, (int)(l - 5), e->d_name, rel);
    snprintf(rel, sizeof rel, "pyconfig/%.300s", e->d_name);
    char *js = test_read_text(data_path(rel));
    assert_non_null(js);
    cJSON *want = cJSON_Parse(js);
    assert_non_null(want);
    cJSON *got = NULL;
    rv_status st = rv_pyconfig_parse(&got, txt, e->d_name, ctx);
    if (st != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
    expect_equal_trees(got, want, e->d_name);
    cJSON_Delete(got);
    cJSON_Delete(want);
    free(js);
    free(txt);
    n++;
  }
  closedir(d);
  assert_true(n >= 6);
  print_message("  %d configs equal to Python's evaluation\n", n);
  rv_ctx_free(ctx);
}

static const cJSON *at(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!v) fail_msg("key '%s' missing", k);
  return v;
}

static void test_fixture_configs(void **state) {
  (void)state;
  DIR *d = opendir(fixture_path("e2e"));
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  rv_ctx *ctx = rv_ctx_create();
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char rel[512];
    snprintf(rel, sizeof rel, "e2e/%.200s/train_config.py", e->d_name);
    char *txt = test_read_text(fixture_path(rel));
    if (!txt) continue;
    cJSON *a = NULL, *b = NULL;
    if (rv_pyconfig_parse(&a, txt, rel, ctx) != RV_OK) fail_msg("%s", rv_ctx_errmsg(ctx));
    const cJSON *model = at(a, "model");
    assert_true(cJSON_IsString(at(model, "type")));
    const cJSON *bb = at(model, "backbone");
    assert_true(cJSON_IsString(at(bb, "type")));
    assert_int_equal(cJSON_GetArraySize(at(bb, "embed_dims")), 4);
    assert_true(cJSON_IsArray(at(a, "test_pipeline")));
    assert_true(cJSON_IsArray(at(at(a, "img_norm_cfg"), "mean")));
    /* the checkpoint's meta config is the same text, so the same tree */
    snprintf(rel, sizeof rel, "e2e/%.200s/checkpoint.pth", e->d_name);
    rv_weights *w = NULL;
    if (path_exists(fixture_path(rel))) {
      assert_int_equal(rv_pth_load(&w, fixture_path(rel), ctx), RV_OK);
      assert_int_equal(rv_pyconfig_parse(&b, rv_weights_meta(w, "config"), rel, ctx), RV_OK);
      assert_true(cJSON_Compare(a, b, 1));
      rv_weights_free(w);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    free(txt);
    n++;
  }
  closedir(d);
  assert_true(n > 0);
  rv_ctx_free(ctx);
}

static void test_errors(void **state) {
  (void)state;
  char deep[700];
  strcpy(deep, "a = ");
  for (int i = 0; i < 300; i++) strcat(deep, "[");
  for (int i = 0; i < 300; i++) strcat(deep, "]");
  const struct { const char *text, *msg; } cases[] = {
      {"a = 1 * 2", "s:1:7: operator '*' is not supported"},
      {"a = 1 + 2", "s:1:7: expected end of line, found '+'"},
      {"a = dict(x=1", "s:1:13: expected ',' or ')', found end of input"},
      {"a = [1, 2\n\n", "s:3:1: expected ',' or ']', found end of input"},
      {"a = foo(1)", "s:1:5: call of 'foo' is not supported"},
      {"a = b", "s:1:5: name 'b' is not defined"},
      {"x = 1\nimport os", "s:2:1: 'import' statements are not supported"},
      {"a = 'abc", "unterminated string"},
      {"a = '''abc\n", "unterminated string"},
      {"a = \"x\ny\"", "s:1:5: unterminated string (line break"},
      {"a = b'x'", "bytes literals are not supported"},
      {"a = f'x'", "f-strings are not supported"},
      {"a = 1\n  b = 2", "s:2:3: unexpected indentation"},
      {"a = {[1]: 2}", "s:1:6: dict keys must be strings or integers"},
      {"a = 1 2", "s:1:7: unexpected a number after a value"},
      {"a = dict(1)", "s:1:10: dict(...) takes keyword arguments only"},
      {"a = 1\nb = a.c", "s:2:6: '.' after a name is not supported"},
      {"a = 0x", "bad number literal"},
      {"a = 1.2.3", "bad number literal"},
      {"a = 12abc", "bad number literal"},
      {"a = 1j", "bad number literal"},
      {"a = -'x'", "unary '-' needs a number"},
      {"a = range(10000000)", "too long"},
      {"a = range(1.5)", "range() needs integer arguments"},
      {"a = range(1, 2, 0)", "step must not be zero"},
      {"a = range(222222222222222222222222222222, 2)", "range() needs integer arguments"}, /* fuzz */
      {"a = {1e300: 1}", "dict keys must be strings or integers"},
      {deep, "s:1:205: nesting deeper than 200 levels"},
      {"a = '\\x4'", "bad \\x escape"},
      {"a = '\\0'", "NUL character in a string"},
      {"a = '\\N{DASH}'", "not supported"},
      {"a = '\\ud800'", "invalid code point"},
      {"a = 1 = 2", "chained assignment is not supported"},
      {"= 1", "s:1:1: expected 'name = value', found '='"},
      {"a = $", "s:1:5: unexpected character '$'"},
      {"a = (1 2)", "unexpected a number after a value"},
      {"a = \xc3\xa9", "non-ASCII character outside a string"},
      {"a =", "s:1:4: expected a value, found end of input"},
      {"a = [1,,2]", "expected a value, found ','"},
      {"a = x = 1", "name 'x' is not defined"},
      {"a = list(1)", "list() needs a list"},
      {"a = dict(b=1)[0]", "unexpected '[' after a value"},
      {"a = {'k' 1}", "s:1:10: unexpected a number after a value"},
      {"a = {'k': 1 'j': 2}", "s:1:13: unexpected a string after a value"},
  };
  rv_ctx *ctx = rv_ctx_create();
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cJSON *o = (cJSON *)1;
    rv_status st = rv_pyconfig_parse(&o, cases[i].text, "s", ctx);
    const char *m = rv_ctx_errmsg(ctx);
    if (st != RV_ERR_FORMAT || !strstr(m, cases[i].msg) || strncmp(m, "s:", 2))
      fail_msg("case %zu '%.40s': status %d '%s', want '%s'", i, cases[i].text, st, m, cases[i].msg);
    assert_null(o);
    assert_null(strchr(m, '\n'));
  }
  /* a NUL inside the text, and empty input */
  cJSON *o = NULL;
  assert_int_equal(rv_pyconfig_parse_len(&o, "a = 1\0b = 2", 11, "s", ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "s:1:6: NUL byte"));
  assert_int_equal(rv_pyconfig_parse(&o, "", "s", ctx), RV_OK);
  assert_null(o->child);
  cJSON_Delete(o);
  assert_int_equal(rv_pyconfig_parse(&o, NULL, "s", ctx), RV_OK);
  cJSON_Delete(o);
  /* a byte order mark, CRLF line ends, a comment on the last line without a newline */
  assert_int_equal(rv_pyconfig_parse(&o, "\xef\xbb\xbf" "a = dict(\r\n  b=1)\r\nc = 2 # end", "s", ctx), RV_OK);
  assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "a"), "b")->valueint, 1);
  assert_int_equal(cJSON_GetObjectItem(o, "c")->valueint, 2);
  cJSON_Delete(o);
  rv_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_configs),
      cmocka_unit_test(test_fixture_configs),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
