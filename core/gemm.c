/* GEMM: row-major C = alpha * op(A) * op(B) + beta * C via OpenBLAS, and a naive twin.
 * op(A) is [m x k] (A stored [m x k], lda >= k, or transposed: stored [k x m], lda >= m);
 * op(B) is [k x n] likewise. Never called from inside an OpenMP parallel region. */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include "core/ops.h"

#include <cblas.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

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
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
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
void rv_blas_serial_begin(rv_blas_serial *g) {
  g->set = NULL;
  g->saved = 0;
  void *h = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return;
  void (*set)(int) = (void (*)(int))(uintptr_t)dlsym(h, "omp_set_num_threads");
  int (*get)(void) = (int (*)(void))(uintptr_t)dlsym(h, "omp_get_max_threads");
  dlclose(h); /* a NOLOAD handle: libgomp stays loaded by whoever loaded it */
#ifdef _OPENMP
  if (set == omp_set_num_threads) return; /* one runtime: OpenBLAS sees the region */
#endif
  if (!set || !get) return;
  g->set = (void *)(uintptr_t)set;
  g->saved = get();
  set(1);
}

void rv_blas_serial_end(const rv_blas_serial *g) {
  if (g->set) ((void (*)(int))(uintptr_t)g->set)(g->saved);
}

/* Reference: plain triple loop, double accumulation. beta == 0 ignores C's old contents
 * (as BLAS does, so NaN garbage in C does not propagate). */
void rv_gemm_naive_f32(int trans_a, int trans_b, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc) {
  RV_ASSERT(m >= 0 && n >= 0 && k >= 0);
  for (int i = 0; i < m; i++) {
    for (int j = 0; j < n; j++) {
      double s = 0.0;
      for (int p = 0; p < k; p++) {
        float av = trans_a ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
        float bv = trans_b ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
        s += (double)av * (double)bv;
      }
      float *cp = &c[(size_t)i * ldc + j];
      *cp = (float)(alpha * s + (beta == 0.0f ? 0.0 : (double)beta * (double)*cp));
    }
  }
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
