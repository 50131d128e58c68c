/* GEMM: row-major C = alpha * op(A) * op(B) + beta * C via OpenBLAS, and a naive twin.
 * op(A) is [m x k] (A stored [m x k], lda >= k, or transposed: stored [k x m], lda >= m);
 * op(B) is [k x n] likewise. rv_gemm_f32 splits itself among the calling thread's OpenMP team
 * (called inside a parallel region it runs on the calling thread); OpenBLAS never threads. */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include "kernels/ops.h"

#include <cblas.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* One block: C[m x n] of a GEMM on the calling thread alone. OpenBLAS's OpenMP build starts
 * threads of its own (exec_blas) when the caller's omp_get_max_threads() exceeds 1 outside a
 * parallel region; that path has one shared work buffer (calls from two threads wait for it,
 * spinning: 85% of the time of 8 threads sharing a model was there) and a process-wide thread
 * count that concurrent callers with different counts rewrite under each other. Here the
 * thread's count is 1 for the call, so OpenBLAS takes its serial path and touches neither. */
typedef struct {
  void (*set)(int);
  int (*get)(void);
} other_omp; /* libgomp's thread count functions where OpenBLAS's runtime is not ours */
static other_omp find_other_omp(void);

static void gemm_serial(const other_omp *o, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n,
                        int k, float alpha, const float *a, int lda, const float *b, int ldb,
                        float beta, float *c, int ldc) {
  const int other = o->set ? o->get() : 1;
  if (other != 1) o->set(1);
#ifdef _OPENMP
  const int saved = omp_get_max_threads();
  if (saved != 1) omp_set_num_threads(1);
#endif
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#ifdef _OPENMP
  if (saved != 1) omp_set_num_threads(saved);
#endif
  if (other != 1) o->set(other);
}

/* The split of a GEMM: the larger of C's two dimensions cut into R contiguous ranges, aligned
 * to 16, R = min(the machine's online CPUs, that dimension / GEMM_MIN_RANGE): a property of
 * the shape and the machine, never of the thread count nor of the process's CPU affinity (the
 * ranks of an MPI job bound to a core each compute the bits of one unbound process). The calling thread's OpenMP team (its
 * omp_get_max_threads(): the call's share, core/rv.h "Calls") shares the ranges; a team of one
 * (a call's share of 1, or inside a parallel region) runs them one after another. Each range
 * is one serial OpenBLAS call, so its bits are those of that call whoever runs it: the result
 * is the same for 1 thread or 16, alone or beside other calls (OpenBLAS's results depend on
 * how a product is split, with its SkylakeX and Haswell kernels alike). Products under 2^20
 * multiply-adds are one call. A range packs the operand it shares with the others again (the
 * cost of splitting outside OpenBLAS, which shares its packed panels among its own threads):
 * ranges of at least GEMM_MIN_RANGE rows / columns keep that to a few percent where blocks of
 * 64 cost 5-65% on this library's shapes (bench/RESULTS.md). */
enum { GEMM_MIN_WORK = 1 << 20, GEMM_MIN_RANGE = 192 };

/* The machine's online CPUs, read once (sysconf reads /sys on each call): a constant of the
 * machine memoised, not state (a race stores the same value twice). */
static int machine_cpus(void) {
  static int cpus; /* 0: not read yet */
  int n = __atomic_load_n(&cpus, __ATOMIC_RELAXED);
  if (n > 0) return n;
  long v = sysconf(_SC_NPROCESSORS_ONLN);
  n = v < 1 ? 1 : v > 4096 ? 4096 : (int)v;
  __atomic_store_n(&cpus, n, __ATOMIC_RELAXED);
  return n;
}

void rv_gemm_f32(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc) {
  RV_ASSERT(m >= 0 && n >= 0 && k >= 0);
  if (m == 0 || n == 0) return;
  if (k == 0) { /* C = beta * C (BLAS implementations differ on k == 0) */
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        float *cp = &c[(size_t)i * ldc + j];
        *cp = beta == 0.0f ? 0.0f : beta * *cp;
      }
    return;
  }
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  const other_omp gomp = find_other_omp(); /* once per GEMM (a dlopen in clang builds) */
  const int by_cols = n >= m, len = by_cols ? n : m;
  int ranges = len / GEMM_MIN_RANGE, team = 1;
#ifdef _OPENMP
  if (ranges > machine_cpus()) ranges = machine_cpus();
  if (!omp_in_parallel()) team = omp_get_max_threads();
#else
  ranges = 1;
#endif
  if (ranges < 2 || (double)m * n * k < GEMM_MIN_WORK) {
    gemm_serial(&gomp, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (team > ranges) team = ranges;
  const int units = (len + 15) / 16;
#pragma omp parallel for schedule(static) num_threads(team) if (team > 1)
  for (int r = 0; r < ranges; r++) {
    const int o = 16 * (int)((long)r * units / ranges);
    const int e = r + 1 == ranges ? len : 16 * (int)((long)(r + 1) * units / ranges);
    if (by_cols) /* columns o..e of B and C */
      gemm_serial(&gomp, ta, tb, m, e - o, k, alpha, a, lda, trans_b ? b + (size_t)o * ldb : b + o,
                  ldb, beta, c + o, ldc);
    else /* rows o..e of A and C */
      gemm_serial(&gomp, ta, tb, e - o, n, k, alpha, trans_a ? a + o : a + (size_t)o * lda, lda, b,
                  ldb, beta, c + (size_t)o * ldc, ldc);
  }
}

/* OpenBLAS's OpenMP build runs a GEMM called from inside a parallel region on the calling
 * thread alone (its num_cpu_avail(): omp_in_parallel(), omp_get_max_threads()), but it asks
 * its own OpenMP runtime, libgomp. Where ours is another (a clang build: LLVM's libomp) and
 * OpenBLAS's omp_* calls bind to libgomp (a Python whose numpy loaded OpenBLAS before the
 * library), it cannot see our regions: each thread's GEMM forked a libgomp team of its own
 * (oversubscription), and OpenBLAS's Haswell kernels give bits that depend on how a GEMM is
 * split among threads, so the library in Python and the executable disagreed on a label or
 * two (test_python, clang build). rv_blas_serial_begin sets libgomp's thread count of the
 * calling thread to 1 in that case (no-op where libgomp is not loaded or is our runtime);
 * rv_blas_serial_end restores it. Called by each thread of a region that calls BLAS. */
static other_omp find_other_omp(void) {
  other_omp o = {NULL, NULL};
#if defined(_OPENMP) && !defined(__clang__)
  return o; /* GCC's OpenMP runtime is libgomp: OpenBLAS's own (the check below, at no cost) */
#endif
  void *h = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return o;
  void (*set)(int) = (void (*)(int))(uintptr_t)dlsym(h, "omp_set_num_threads");
  int (*get)(void) = (int (*)(void))(uintptr_t)dlsym(h, "omp_get_max_threads");
  dlclose(h); /* a NOLOAD handle: libgomp stays loaded by whoever loaded it */
#ifdef _OPENMP
  if (set == omp_set_num_threads) return o; /* one runtime: OpenBLAS sees the region */
#endif
  if (set && get) {
    o.set = set;
    o.get = get;
  }
  return o;
}

void rv_blas_serial_begin(rv_blas_serial *g) {
  const other_omp o = find_other_omp();
  g->set = NULL;
  g->saved = 0;
  if (!o.set) return;
  g->set = (void *)(uintptr_t)o.set;
  g->saved = o.get();
  o.set(1);
}

void rv_blas_serial_end(const rv_blas_serial *g) {
  if (g->set) ((void (*)(int))(uintptr_t)g->set)(g->saved);
}

/* ---- OpenBLAS kernel selection --------------------------------------------------------
 * DYNAMIC_ARCH builds of OpenBLAS (Debian's) choose kernels from a CPU table fixed at their
 * release. CPUs newer than the table fall back to the generic Prescott (SSE3) kernels:
 * OpenBLAS 0.3.21 on an Emerald Rapids Xeon runs sgemm 5-7x slower than with its SkylakeX
 * kernels. These hooks exist only in DYNAMIC_ARCH builds, hence weak references. */
extern void gotoblas_dynamic_init(void) __attribute__((weak));
extern void gotoblas_dynamic_quit(void) __attribute__((weak));
extern char *openblas_get_corename(void) __attribute__((weak));

static int is_generic_core(const char *name) {
  static const char *const generic[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                                        "Atom", "Katmai", "Coppermine", "Northwood", "Banias"};
  for (size_t i = 0; i < sizeof generic / sizeof generic[0]; i++)
    if (!strcmp(name, generic[i])) return 1;
  return 0;
}

const char *rv_blas_init(void) {
  const char *cur = openblas_get_corename ? openblas_get_corename() : "unknown";
#if defined(__x86_64__) && defined(__GNUC__)
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || !openblas_get_corename) return cur;
  if (getenv("OPENBLAS_CORETYPE")) return cur; /* the user's choice wins */
  const char *want = NULL;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    want = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    want = "Haswell";
  else if (__builtin_cpu_supports("avx"))
    want = "Sandybridge";
  int upgrade = want && (is_generic_core(cur) ||
                         (!strcmp(cur, "Sandybridge") && strcmp(want, "Sandybridge")));
  if (!upgrade) return cur;
  if (setenv("OPENBLAS_CORETYPE", want, 1) != 0) return cur;
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  cur = openblas_get_corename();
#endif
  return cur;
}
