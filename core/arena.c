/* Activation arena: a list of blocks, bump allocation, reset keeps the blocks.
 *
 * The first block of an arena created without an initial size is a reservation of
 * RESERVE_BYTES of address space (mmap, MAP_NORESERVE): pages become memory only when
 * touched, so one contiguous block serves every forward pass and the resident memory is
 * the true peak of the allocations. Growing by separate blocks instead leaves the tail of
 * each outgrown block unused but resident (RAVLT-S at 512x512: 132 MB of bump peak in
 * blocks of 200 MB, against 82 MB in one block). Where the reservation is refused (strict
 * overcommit, a small address-space limit) or outgrown, blocks are allocated as before:
 * double the capacity at least. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "core/tensor.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RV_ARENA_MAX_BLOCKS 48
#define RESERVE_BYTES ((size_t)32 << 30)

struct rv_arena {
  char *block[RV_ARENA_MAX_BLOCKS];
  size_t size[RV_ARENA_MAX_BLOCKS];
  int mapped; /* block 0 is the mmap reservation */
  int nblocks;
  size_t cur;      /* index of the block being filled */
  size_t used;     /* bytes used in block cur */
  size_t peak;
};

rv_arena *rv_arena_create(size_t initial_bytes) {
  rv_arena *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  if (initial_bytes) {
    a->block[0] = rv_malloc(initial_bytes);
    if (!a->block[0]) { free(a); return NULL; }
    a->size[0] = initial_bytes;
    a->nblocks = 1;
  }
  return a;
}

void rv_arena_free(rv_arena *a) {
  if (!a) return;
  for (int i = 0; i < a->nblocks; i++) {
    if (i == 0 && a->mapped)
      munmap(a->block[0], a->size[0]);
    else
      rv_free(a->block[i]);
  }
  free(a);
}

/* The reservation as block 0, if the system grants it. */
static int reserve(rv_arena *a, size_t need) {
#if defined(MAP_NORESERVE) && defined(MAP_ANONYMOUS)
  if (need > RESERVE_BYTES) return 0;
  void *p = mmap(NULL, RESERVE_BYTES, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return 0;
  a->block[0] = p;
  a->size[0] = RESERVE_BYTES;
  a->nblocks = 1;
  a->mapped = 1;
  a->cur = 0;
  a->used = 0;
  return 1;
#else
  (void)a, (void)need;
  return 0;
#endif
}

size_t rv_arena_used(const rv_arena *a) {
  size_t u = 0;
  for (size_t i = 0; i < a->cur && i < (size_t)a->nblocks; i++) u += a->size[i];
  return u + a->used;
}

size_t rv_arena_peak(const rv_arena *a) { return a->peak; }

size_t rv_arena_capacity(const rv_arena *a) {
  size_t c = 0;
  for (int i = 0; i < a->nblocks; i++) c += a->size[i];
  return c;
}

void *rv_arena_alloc(rv_arena *a, size_t bytes) {
  size_t need = (bytes + 63) & ~(size_t)63;
  if (need < bytes) return NULL;
  if (need == 0) need = 64;
  for (;;) {
    if (a->cur < (size_t)a->nblocks) {
      if (a->size[a->cur] - a->used >= need) {
        void *p = a->block[a->cur] + a->used;
        a->used += need;
        size_t u = rv_arena_used(a);
        if (u > a->peak) a->peak = u;
        return p;
      }
      /* does not fit: move on to the next block (the tail of this one is wasted) */
      if (a->cur + 1 < (size_t)a->nblocks) {
        a->cur++;
        a->used = 0;
        continue;
      }
    }
    if (a->nblocks == 0 && reserve(a, need)) continue;
    if (a->nblocks >= RV_ARENA_MAX_BLOCKS) return NULL;
    size_t total = rv_arena_capacity(a);
    size_t sz = total > need ? total : need; /* double the capacity at least */
    if (sz < ((size_t)1 << 20)) sz = (size_t)1 << 20;
    char *b = rv_malloc(sz);
    if (!b) return NULL;
    a->block[a->nblocks] = b;
    a->size[a->nblocks] = sz;
    a->nblocks++;
    if (a->nblocks == 1) a->cur = 0;
    else { a->cur = (size_t)a->nblocks - 1; }
    a->used = 0;
  }
}

float *rv_arena_floats(rv_arena *a, size_t count) {
  size_t b;
  if (rv_mul_size(count, sizeof(float), &b)) return NULL;
  return rv_arena_alloc(a, b);
}

void rv_arena_reset(rv_arena *a) {
  a->cur = 0;
  a->used = 0;
}

rv_arena_mark rv_arena_get_mark(const rv_arena *a) {
  rv_arena_mark m = {a->cur, a->used};
  return m;
}

void rv_arena_release(rv_arena *a, rv_arena_mark m) {
  a->cur = m.block;
  a->used = m.used;
}

rv_tensor rv_tensor_new(rv_arena *a, int n, int c, int h, int w) {
  rv_tensor t = {NULL, n, c, h, w};
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0) return t;
  size_t cnt;
  if (rv_mul_size((size_t)n, (size_t)c, &cnt) || rv_mul_size(cnt, (size_t)h, &cnt) ||
      rv_mul_size(cnt, (size_t)w, &cnt))
    return t;
  t.data = rv_arena_floats(a, cnt);
  return t;
}

rv_tensor rv_tensor_zeros(rv_arena *a, int n, int c, int h, int w) {
  rv_tensor t = rv_tensor_new(a, n, c, h, w);
  if (t.data) memset(t.data, 0, rv_tensor_numel(t) * sizeof(float));
  return t;
}
