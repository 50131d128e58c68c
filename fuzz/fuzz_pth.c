/* libFuzzer target: the .pth checkpoint reader (rv_pth_load_buffer).
 *
 * The first input byte picks the mode:
 *   even: the rest is a whole checkpoint zip (zip structure, entries, CRCs, then the pickle);
 *   odd:  the rest is a data.pkl, wrapped here into a valid stored zip named "archive/"
 *         beside storages archive/data/0..15 (4096 bytes each, byte i = i & 0xff) and a
 *         byteorder entry ("little", or "big" when the first byte is 3 mod 4), so the
 *         mutations reach tensor reconstruction instead of dying on the CRC check.
 * Every accepted tensor is read in full. */
#include "formats/pth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NST 16
#define ST_BYTES 4096

static uint32_t crc_table[256]; /* harness-only state, filled once */

static uint32_t crc32_of(const uint8_t *p, size_t n) {
  if (!crc_table[1])
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
      crc_table[i] = c;
    }
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

typedef struct { uint8_t *p; size_t n, cap; } buf;
static void put(buf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    size_t nc = b->cap ? b->cap : 1 << 16;
    while (nc < b->n + n) nc *= 2;
    b->p = realloc(b->p, nc);
    if (!b->p) abort();
    b->cap = nc;
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}
static void u16(buf *b, unsigned v) { uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)}; put(b, x, 2); }
static void u32(buf *b, uint32_t v) { uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)}; put(b, x, 4); }

typedef struct { const char *name; const uint8_t *data; size_t n; } entry;

/* A stored (uncompressed) zip of the entries. */
static void make_zip(buf *z, const entry *e, int count) {
  size_t off[NST + 4];
  uint32_t crc[NST + 4];
  for (int i = 0; i < count; i++) {
    off[i] = z->n;
    crc[i] = crc32_of(e[i].data, e[i].n);
    size_t nl = strlen(e[i].name);
    u32(z, 0x04034b50u); u16(z, 20); u16(z, 0); u16(z, 0); u16(z, 0); u16(z, 0x21);
    u32(z, crc[i]); u32(z, (uint32_t)e[i].n); u32(z, (uint32_t)e[i].n); u16(z, (unsigned)nl); u16(z, 0);
    put(z, e[i].name, nl);
    put(z, e[i].data, e[i].n);
  }
  size_t cd = z->n;
  for (int i = 0; i < count; i++) {
    size_t nl = strlen(e[i].name);
    u32(z, 0x02014b50u); u16(z, 20); u16(z, 20); u16(z, 0); u16(z, 0); u16(z, 0); u16(z, 0x21);
    u32(z, crc[i]); u32(z, (uint32_t)e[i].n); u32(z, (uint32_t)e[i].n); u16(z, (unsigned)nl);
    u16(z, 0); u16(z, 0); u16(z, 0); u16(z, 0); u32(z, 0); u32(z, (uint32_t)off[i]);
    put(z, e[i].name, nl);
  }
  size_t cdlen = z->n - cd;
  u32(z, 0x06054b50u); u16(z, 0); u16(z, 0); u16(z, (unsigned)count); u16(z, (unsigned)count);
  u32(z, (uint32_t)cdlen); u32(z, (uint32_t)cd); u16(z, 0);
}

static void check(const uint8_t *img, size_t n) {
  rv_ctx *ctx = rv_ctx_create();
  rv_weights *w = NULL;
  if (rv_pth_load_buffer(&w, img, n, "fuzz.pth", ctx) == RV_OK) {
    volatile unsigned sum = 0;
    for (int i = 0; i < rv_weights_count(w); i++) {
      const rv_wtensor *t = rv_weights_get(w, i);
      if (t->nbytes != rv_wtensor_numel(t) * rv_dtype_size(t->dtype)) abort();
      const uint8_t *p = t->data;
      for (size_t k = 0; k < t->nbytes; k++) sum += p[k];
    }
    (void)sum;
    for (int i = 0; i < rv_weights_meta_count(w); i++)
      if (!rv_weights_meta(w, rv_weights_meta_key(w, i))) abort();
    rv_weights_free(w);
  } else if (w || rv_ctx_errmsg(ctx)[0] == 0) {
    abort();
  }
  rv_ctx_free(ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (!(data[0] & 1)) {
    check(data + 1, size - 1);
    return 0;
  }
  uint8_t *st = malloc(ST_BYTES);
  if (!st) abort();
  for (int i = 0; i < ST_BYTES; i++) st[i] = (uint8_t)i;
  char names[NST][32];
  entry e[NST + 3];
  int k = 0;
  e[k++] = (entry){"archive/data.pkl", data + 1, size - 1};
  e[k++] = (entry){"archive/byteorder", (const uint8_t *)((data[0] & 3) == 3 ? "big" : "little"),
                   (data[0] & 3) == 3 ? 3u : 6u};
  for (int i = 0; i < NST; i++) {
    snprintf(names[i], sizeof names[i], "archive/data/%d", i);
    e[k++] = (entry){names[i], st, ST_BYTES};
  }
  e[k++] = (entry){"archive/version", (const uint8_t *)"3\n", 2};
  buf z = {0};
  make_zip(&z, e, k);
  check(z.p, z.n);
  free(z.p);
  free(st);
  return 0;
}
