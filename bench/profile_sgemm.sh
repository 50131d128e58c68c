#!/usr/bin/env bash
# Where the GEMM time goes: runs a command with bench/sgemm_profile.c preloaded and prints,
# at its exit, the cblas_sgemm calls grouped by shape with their time and rate (the
# AVX-512 1x1 kernel of kernels/ukernel.c does not go through cblas_sgemm: use `perf record`
# for the whole picture; bench/RESULTS.md has both for RAVLT-S). Not a test.
#
#   bash bench/profile_sgemm.sh build/ravlt bench ravlt-s-backbone --random-weights \
#        --size 512x512 --threads 2 --runs 5
set -euo pipefail
[ $# -gt 0 ] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
so=${TMPDIR:-/tmp}/ravlt-sgemm-profile.$$.so
trap 'rm -f "$so"' EXIT
gcc -O2 -fPIC -shared -fopenmp -o "$so" "$here/sgemm_profile.c" -ldl
if [ -z "${OPENBLAS_CORETYPE+x}" ] && grep -qw avx512f /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=SkylakeX
fi
LD_PRELOAD=$so "$@"
