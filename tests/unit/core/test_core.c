/* Core: status strings, context errors, arena, output files (rv_out_open), safetensors
 * reader/writer (files and pipes) and its validation of malformed files. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"
#include "core/fs.h"
#include "core/tensor.h"
#include "formats/weights.h"
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

static void test_status_and_ctx(void **state) {
  (void)state;
  assert_string_equal(rv_status_str(RV_OK), "ok");
  assert_string_equal(rv_status_str(RV_ERR_FORMAT), "malformed input");
  rv_ctx *ctx = rv_ctx_create();
  assert_non_null(ctx);
  assert_int_equal(rv_error(ctx, RV_ERR_IO, "file %s: line\nbreak", "x"), RV_ERR_IO);
  assert_string_equal(rv_ctx_errmsg(ctx), "file x: line break");
  rv_ctx_clear_error(ctx);
  assert_string_equal(rv_ctx_errmsg(ctx), "");
  rv_ctx_free(ctx);
}

static void test_arena(void **state) {
  (void)state;
  rv_arena *a = rv_arena_create(0);
  assert_non_null(a);
  float *p = rv_arena_floats(a, 10);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % 64, 0);
  rv_arena_mark m = rv_arena_get_mark(a);
  float *q = rv_arena_floats(a, (size_t)3 << 20); /* past 1 MB: a second block, or further
                                                  * into the reservation (core/arena.c) */
  assert_non_null(q);
  q[((size_t)3 << 20) - 1] = 1.0f;
  size_t cap = rv_arena_capacity(a);
  assert_true(rv_arena_peak(a) >= ((size_t)12 << 20));
  rv_arena_release(a, m);
  assert_true(rv_arena_used(a) < 1024);
  rv_arena_reset(a);
  assert_int_equal(rv_arena_used(a), 0);
  /* after reset the same requests are served without growing */
  assert_non_null(rv_arena_floats(a, 10));
  assert_non_null(rv_arena_floats(a, (size_t)3 << 20));
  assert_int_equal(rv_arena_capacity(a), cap);
  /* impossible sizes fail cleanly */
  assert_null(rv_arena_floats(a, SIZE_MAX / 2));
  rv_tensor t = rv_tensor_new(a, 1, -3, 4, 4);
  assert_null(t.data);
  t = rv_tensor_zeros(a, 2, 3, 5, 7);
  assert_non_null(t.data);
  assert_int_equal(rv_tensor_numel(t), 210);
  assert_true(*rv_tensor_at(t, 1, 2, 4, 6) == 0.0f);
  rv_arena_free(a);
}

static long file_size(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

/* Two rv_out_open of one path in one thread: distinct temporaries, the second does not
 * truncate the first's, the last committed content wins, no temporary is left, and the
 * file has the mode fopen "w" gives (0666 & umask). */
static void test_out_open_same_path(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  char dir[] = "/tmp/rv_test_out_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[64], ref[64];
  snprintf(path, sizeof path, "%s/out.json", dir);
  snprintf(ref, sizeof ref, "%s/ref", dir);
  rv_out_file a, b;
  assert_int_equal(rv_out_open(&a, path, ctx), RV_OK);
  assert_true(fputs("first", a.f) >= 0);
  assert_int_equal(fflush(a.f), 0);
  assert_int_equal(rv_out_open(&b, path, ctx), RV_OK);
  assert_string_not_equal(a.tmp, b.tmp);
  assert_non_null(strstr(a.tmp, RV_TMP_TAG));
  assert_int_equal(file_size(a.tmp), 5); /* not truncated by the second open */
  assert_true(fputs("second", b.f) >= 0);
  assert_int_equal(rv_out_close(&a, ctx), RV_OK);
  assert_int_equal(rv_out_close(&b, ctx), RV_OK);
  char got[16] = "";
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  assert_non_null(fgets(got, sizeof got, f));
  fclose(f);
  assert_string_equal(got, "second");
  /* an aborted third one leaves nothing either */
  rv_out_file c;
  assert_int_equal(rv_out_open(&c, path, ctx), RV_OK);
  rv_out_abort(&c);
  f = fopen(ref, "w");
  assert_non_null(f);
  fclose(f);
  struct stat sp, sr;
  assert_int_equal(stat(path, &sp), 0);
  assert_int_equal(stat(ref, &sr), 0);
  assert_int_equal(sp.st_mode, sr.st_mode);
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (strcmp(e->d_name, "out.json") && strcmp(e->d_name, "ref"))
      fail_msg("left in %s: %s", dir, e->d_name);
    n++;
  }
  closedir(d);
  assert_int_equal(n, 2);
  unlink(path);
  unlink(ref);
  rmdir(dir);
  rv_ctx_free(ctx);
}

static void test_safetensors_fixture(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w = NULL;
  const char *p = fixture_path("backbone/tiny/weights.safetensors");
  assert_int_equal(rv_weights_open(&w, p, ctx), RV_OK);
  assert_true(rv_weights_count(w) > 50);
  const rv_wtensor *t = rv_weights_find(w, "patch_embed.proj.0.weight");
  if (!t) t = rv_weights_find(w, "backbone.patch_embed.proj.0.weight");
  assert_non_null(t);
  assert_int_equal(t->dtype, RV_DT_F32);
  assert_int_equal(t->ndim, 4);
  assert_int_equal(t->shape[2], 3);
  rv_weights_free(w);
  rv_ctx_free(ctx);
}

static void test_safetensors_roundtrip(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w = rv_weights_new("mem");
  float a[6] = {1, 2, 3, 4, 5, 6};
  int64_t nbt = 42;
  uint16_t h[2] = {0x3c00, 0xc000}; /* 1.0, -2.0 in F16 */
  int64_t sa[2] = {2, 3}, sh[1] = {2};
  assert_int_equal(rv_weights_add(w, "a", RV_DT_F32, 2, sa, a, sizeof a, 0, ctx), RV_OK);
  assert_int_equal(rv_weights_add(w, "n", RV_DT_I64, 0, NULL, &nbt, 8, 0, ctx), RV_OK);
  assert_int_equal(rv_weights_add(w, "h", RV_DT_F16, 1, sh, h, 4, 0, ctx), RV_OK);
  assert_int_equal(rv_weights_set_meta(w, "config", "x = 1\n"), RV_OK);
  char path[] = "/tmp/rv_test_st_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(rv_safetensors_write(path, w, ctx), RV_OK);
  rv_weights_free(w);
  rv_weights *r = NULL;
  assert_int_equal(rv_safetensors_open(&r, path, ctx), RV_OK);
  assert_int_equal(rv_weights_count(r), 3);
  const rv_wtensor *t = rv_weights_find(r, "a");
  assert_non_null(t);
  assert_memory_equal(t->data, a, sizeof a);
  t = rv_weights_find(r, "n");
  assert_int_equal(t->ndim, 0);
  assert_int_equal(t->dtype, RV_DT_I64);
  float hf[2];
  rv_wtensor_to_f32(rv_weights_find(r, "h"), hf);
  assert_true(hf[0] == 1.0f && hf[1] == -2.0f);
  assert_string_equal(rv_weights_meta(r, "config"), "x = 1\n");
  rv_weights_free(r);
  unlink(path);
  rv_ctx_free(ctx);
}

/* A safetensors file through a FIFO (fed by a child process) is read, not mapped, by
 * rv_safetensors_open and by rv_weights_open (which does not sniff a pipe). */
static void test_safetensors_fifo(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w = rv_weights_new("mem");
  float a[5] = {1, -2, 3, -4, 5};
  int64_t sa[1] = {5};
  assert_int_equal(rv_weights_add(w, "a", RV_DT_F32, 1, sa, a, sizeof a, 0, ctx), RV_OK);
  assert_int_equal(rv_weights_set_meta(w, "config", "fifo"), RV_OK);
  char dir[] = "/tmp/rv_test_fifo_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char file[64], fifo[64];
  snprintf(file, sizeof file, "%s/w.safetensors", dir);
  snprintf(fifo, sizeof fifo, "%s/pipe", dir);
  assert_int_equal(rv_safetensors_write(file, w, ctx), RV_OK);
  rv_weights_free(w);
  unsigned char buf[4096];
  FILE *f = fopen(file, "rb");
  assert_non_null(f);
  size_t len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  assert_true(len > 8 && len < sizeof buf); /* less than a pipe's buffer */
  assert_int_equal(mkfifo(fifo, 0600), 0);
  for (int pass = 0; pass < 2; pass++) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      alarm(60); /* never left blocked in open if the reader failed first */
      int fd = open(fifo, O_WRONLY);
      int ok = fd >= 0 && write(fd, buf, len) == (ssize_t)len;
      _exit(ok && close(fd) == 0 ? 0 : 1);
    }
    rv_weights *r = NULL;
    rv_status st = pass ? rv_weights_open(&r, fifo, ctx) : rv_safetensors_open(&r, fifo, ctx);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (st != RV_OK) print_error("pass %d: %s\n", pass, rv_ctx_errmsg(ctx));
    assert_int_equal(st, RV_OK);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    const rv_wtensor *t = rv_weights_find(r, "a");
    assert_non_null(t);
    assert_int_equal(t->nbytes, sizeof a);
    assert_memory_equal(t->data, a, sizeof a);
    assert_string_equal(rv_weights_meta(r, "config"), "fifo");
    rv_weights_free(r);
  }
  /* a folder is refused by name */
  rv_weights *r = NULL;
  assert_int_equal(rv_weights_open(&r, dir, ctx), RV_ERR_IO);
  assert_null(r);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), dir));
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "folder"));
  unlink(fifo);
  unlink(file);
  rmdir(dir);
  rv_ctx_free(ctx);
}

static rv_status parse_str(const char *hdr, size_t data_len, rv_ctx *ctx) {
  size_t hl = strlen(hdr);
  unsigned char *buf = calloc(1, 8 + hl + data_len);
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(buf + 8, hdr, hl);
  rv_weights *w = NULL;
  rv_status st = rv_safetensors_parse(&w, buf, 8 + hl + data_len, "bad.safetensors", ctx);
  rv_weights_free(w);
  free(buf);
  return st;
}

static void test_safetensors_malformed(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w = NULL;
  assert_int_equal(rv_safetensors_parse(&w, "abc", 3, "short", ctx), RV_ERR_FORMAT);
  assert_null(w);
  unsigned char huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{', '}'};
  assert_int_equal(rv_safetensors_parse(&w, huge, 16, "huge", ctx), RV_ERR_FORMAT);
  assert_int_equal(parse_str("{not json", 0, ctx), RV_ERR_FORMAT);
  assert_int_equal(parse_str("[1,2]", 0, ctx), RV_ERR_FORMAT);
  assert_int_equal(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, ctx), RV_ERR_FORMAT);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "bad.safetensors"));
  assert_int_equal(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, ctx), RV_ERR_FORMAT);
  assert_int_equal(parse_str("{\"a\":{\"dtype\":\"X9\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, ctx), RV_ERR_UNSUPPORTED);
  assert_int_equal(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, ctx), RV_ERR_FORMAT);
  assert_int_equal(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,8]}}", 8, ctx), RV_ERR_FORMAT);
  assert_int_equal(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, ctx), RV_ERR_FORMAT);
  assert_int_equal(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, ctx), RV_ERR_FORMAT);
  assert_int_equal(parse_str("{\"__metadata__\":{\"k\":3}}", 0, ctx), RV_ERR_FORMAT);
  assert_int_equal(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, ctx), RV_OK);
  /* missing file and legacy pickle */
  assert_int_equal(rv_weights_open(&w, "/nonexistent/x.safetensors", ctx), RV_ERR_IO);
  char path[] = "/tmp/rv_test_legacy_XXXXXX";
  int fd = mkstemp(path);
  assert_int_equal(write(fd, "\x80\x02\x8a\x0a", 4), 4);
  close(fd);
  assert_int_equal(rv_weights_open(&w, path, ctx), RV_ERR_UNSUPPORTED);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "legacy"));
  unlink(path);
  rv_ctx_free(ctx);
}


/* safetensors: overlapping, holed and in-range data_offsets (the format: the tensors tile the
 * data section, no overlap, no hole) */
static rv_status parse_st(const char *hdr, size_t data_len) {
  unsigned char buf[512] = {0};
  size_t h = strlen(hdr);
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
  memcpy(buf + 8, hdr, h);
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w = NULL;
  rv_status st = rv_safetensors_parse(&w, buf, 8 + h + data_len, "t.safetensors", ctx);
  if (st != RV_OK) assert_non_null(strstr(rv_ctx_errmsg(ctx), "t.safetensors"));
  rv_weights_free(w);
  rv_ctx_free(ctx);
  return st;
}

static void test_safetensors_offsets(void **state) {
  (void)state;
  assert_int_equal(parse_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                            "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12), RV_OK);
  /* listed out of order but tiling: fine */
  assert_int_equal(parse_st("{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
                            "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12), RV_OK);
  /* overlap */
  assert_int_equal(parse_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                            "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12), RV_ERR_FORMAT);
  /* the same bytes twice */
  assert_int_equal(parse_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                            "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8), RV_ERR_FORMAT);
  /* a hole */
  assert_int_equal(parse_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                            "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12), RV_ERR_FORMAT);
}

/* The writer: a symlink is written through (the link stays a link), a FIFO is written in
 * place (never replaced), a folder is an error naming the path, "-" is stdout; rv_out_check
 * refuses a missing folder naming the user's path; rv_out_sweep removes a dead process's
 * temporary and keeps a live one's. */
static void test_out_kinds(void **state) {
  (void)state;
  rv_ctx *ctx = rv_ctx_create();
  char dir[] = "/tmp/rv_test_kinds_XXXXXX", p[256], q[256];
  assert_non_null(mkdtemp(dir));
  /* symlink */
  snprintf(p, sizeof p, "%s/real.json", dir);
  snprintf(q, sizeof q, "%s/link.json", dir);
  assert_int_equal(symlink("real.json", q), 0); /* dangling, relative */
  rv_out_file o;
  assert_int_equal(rv_out_open(&o, q, ctx), RV_OK);
  assert_int_equal(o.kind, RV_OUT_FILE);
  fputs("[]", o.f);
  assert_int_equal(rv_out_close(&o, ctx), RV_OK);
  struct stat sb;
  assert_int_equal(lstat(q, &sb), 0);
  assert_true(S_ISLNK(sb.st_mode));
  assert_int_equal(file_size(p), 2);
  /* FIFO: a reader child, the FIFO stays a FIFO */
  snprintf(p, sizeof p, "%s/fifo", dir);
  assert_int_equal(mkfifo(p, 0600), 0);
  pid_t child = fork();
  if (child == 0) {
    FILE *f = fopen(p, "r");
    char b[16] = "";
    size_t n = f ? fread(b, 1, sizeof b, f) : 0;
    _exit(n == 5 && !memcmp(b, "hello", 5) ? 0 : 1);
  }
  assert_int_equal(rv_out_open(&o, p, ctx), RV_OK);
  assert_int_equal(o.kind, RV_OUT_STREAM);
  fputs("hello", o.f);
  assert_int_equal(rv_out_close(&o, ctx), RV_OK);
  int wst = 0;
  assert_int_equal(waitpid(child, &wst, 0), child);
  assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
  assert_int_equal(stat(p, &sb), 0);
  assert_true(S_ISFIFO(sb.st_mode));
  /* folder */
  assert_int_equal(rv_out_open(&o, dir, ctx), RV_ERR_IO);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), "is a folder"));
  assert_int_equal(rv_out_check(dir, ctx), RV_ERR_IO);
  /* "-" */
  assert_int_equal(rv_out_open(&o, "-", ctx), RV_OK);
  assert_int_equal(o.kind, RV_OUT_STDOUT);
  assert_ptr_equal(o.f, stdout);
  assert_int_equal(rv_out_close(&o, ctx), RV_OK);
  /* a missing folder: checked, named */
  snprintf(p, sizeof p, "%s/no/such/r.json", dir);
  assert_int_equal(rv_out_check(p, ctx), RV_ERR_IO);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), p));
  assert_int_equal(rv_out_open(&o, p, ctx), RV_ERR_IO);
  assert_non_null(strstr(rv_ctx_errmsg(ctx), p));
  assert_null(strstr(rv_ctx_errmsg(ctx), RV_TMP_TAG));
  /* sweep: what it cannot lock stays, whatever the PID in the name says (issue 43: another
   * PID namespace or host); an unlocked one with data goes, even named after a live PID */
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, &wst, 0);
  snprintf(p, sizeof p, "%s/.x.png" RV_TMP_TAG "%ld.0", dir, (long)dead);
  snprintf(q, sizeof q, "%s/.x.png" RV_TMP_TAG "%ld.0", dir, (long)getpid());
  FILE *f = fopen(p, "w");
  fputs("x", f);
  fclose(f);
  fclose(fopen(q, "w"));
  char r[256], stem[200];
  snprintf(r, sizeof r, "%s/.y.png" RV_TMP_TAG "1.0", dir); /* PID 1 runs: no matter */
  f = fopen(r, "w");
  fputs("x", f);
  fclose(f);
  assert_int_equal(rv_out_sweep(dir), 2);
  assert_int_equal(access(p, F_OK), -1);
  assert_int_equal(access(r, F_OK), -1);
  assert_int_equal(access(q, F_OK), 0); /* ours */
  unlink(q);
  /* a live writer in another process: its temporary (locked from creation) stays, even
   * renamed after a dead PID; once it is killed, the next sweep removes it */
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  snprintf(stem, sizeof stem, "%s/.z.json" RV_TMP_TAG "%ld", dir, (long)dead); /* a dead PID's name */
  pid_t w = fork();
  if (w == 0) {
    char name[512];
    int fd = rv_create_unique(name, sizeof name, stem, "");
    if (fd < 0 || write(fd, "{}", 2) != 2) _exit(1);
    /* rv_create_unique names it STEM.<pid>.0: rename to the dead PID's name for the test */
    char dead_name[600];
    snprintf(dead_name, sizeof dead_name, "%s.0", stem);
    if (rename(name, dead_name) != 0) _exit(1);
    if (write(pfd[1], "k", 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char k;
  assert_int_equal(read(pfd[0], &k, 1), 1);
  snprintf(p, sizeof p, "%s.0", stem);
  assert_int_equal(access(p, F_OK), 0);
  assert_int_equal(rv_out_sweep(dir), 0);
  assert_int_equal(access(p, F_OK), 0);
  kill(w, SIGKILL);
  waitpid(w, &wst, 0);
  assert_int_equal(rv_out_sweep(dir), 1);
  assert_int_equal(access(p, F_OK), -1);
  close(pfd[0]);
  close(pfd[1]);
  /* an empty unlocked file may be a writer's between its creation and its lock: kept while
   * young, removed once older than RV_SWEEP_EMPTY_AGE */
  snprintf(p, sizeof p, "%s/.e.png" RV_TMP_TAG "%ld.0", dir, (long)dead);
  fclose(fopen(p, "w"));
  assert_int_equal(rv_out_sweep(dir), 0);
  struct timespec old[2] = {{time(NULL) - RV_SWEEP_EMPTY_AGE - 5, 0}, {time(NULL) - RV_SWEEP_EMPTY_AGE - 5, 0}};
  assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
  assert_int_equal(rv_out_sweep(dir), 1);
  assert_int_equal(rv_same_file(dir, dir), 1);
  snprintf(p, sizeof p, "rm -rf '%s'", dir);
  assert_int_equal(system(p), 0);
  rv_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_and_ctx),
      cmocka_unit_test(test_arena),
      cmocka_unit_test(test_out_open_same_path),
      cmocka_unit_test(test_out_kinds),
      cmocka_unit_test(test_safetensors_offsets),
      cmocka_unit_test(test_safetensors_fixture),
      cmocka_unit_test(test_safetensors_roundtrip),
      cmocka_unit_test(test_safetensors_fifo),
      cmocka_unit_test(test_safetensors_malformed),
  };
  return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
