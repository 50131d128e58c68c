/* LD_PRELOAD shim for bench/profile_sgemm.sh: times every cblas_sgemm call of the program
 * it is loaded into, groups them by (transposes, m, n, k) and prints at exit the total
 * time and the rate of each shape taking over 0.2% of the GEMM time. Calls made inside
 * an OpenMP parallel region (the attention tiles) run one per thread at once: their rows
 * show m negative and their times summed over the threads. Not part of the build. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <time.h>

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
enum { MAX_SHAPES = 1024 };
static struct {
  int ta, tb, m, n, k;
  long calls;
  double sec;
} shapes[MAX_SHAPES];
static int n_shapes;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc) {
  static sgemm_fn real;
  if (!real) real = (sgemm_fn)dlsym(RTLD_NEXT, "cblas_sgemm");
  const int key_m = omp_in_parallel() ? -m : m;
  const double t0 = now();
  real(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  const double dt = now() - t0;
#pragma omp critical(sgemm_profile)
  {
    int i = 0;
    while (i < n_shapes && !(shapes[i].ta == ta && shapes[i].tb == tb && shapes[i].m == key_m &&
                             shapes[i].n == n && shapes[i].k == k))
      i++;
    if (i == n_shapes && n_shapes < MAX_SHAPES) {
      shapes[i].ta = ta, shapes[i].tb = tb, shapes[i].m = key_m, shapes[i].n = n;
      shapes[i].k = k;
      n_shapes++;
    }
    if (i < MAX_SHAPES) shapes[i].calls++, shapes[i].sec += dt;
  }
}

__attribute__((destructor)) static void report(void) {
  double total = 0;
  for (int i = 0; i < n_shapes; i++) total += shapes[i].sec;
  fprintf(stderr, "# cblas_sgemm: %.1f ms in all (parallel-region calls summed over threads)\n",
          total * 1e3);
  fprintf(stderr, "# trans        m        n        k    calls       ms  GMAC/s\n");
  for (int i = 0; i < n_shapes; i++) {
    if (shapes[i].sec < 0.002 * total) continue;
    const double m = shapes[i].m < 0 ? -shapes[i].m : shapes[i].m;
    const double gmacs = m * shapes[i].n * shapes[i].k * shapes[i].calls / shapes[i].sec / 1e9;
    fprintf(stderr, "  %c%c     %7d  %7d  %7d  %7ld  %7.1f  %6.1f\n",
            shapes[i].ta == 112 ? 'T' : 'N', shapes[i].tb == 112 ? 'T' : 'N', shapes[i].m,
            shapes[i].n, shapes[i].k, shapes[i].calls, shapes[i].sec * 1e3, gmacs);
  }
}
