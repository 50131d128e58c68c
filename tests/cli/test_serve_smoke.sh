#!/usr/bin/env bash
# `ravlt serve`'s cheap subset (tests/serve_check.py's checks predict, v2, errors, metrics, auth,
# max-body, overload and sigterm: the request parsing, the answers, the JSON / PNG / KServe
# encoders, the error paths, the queue and the shutdown with requests in flight; ~20 s under
# ASan), registered in every build: the sanitizer (ASan + UBSan, leaks checked at the
# servers' exit) and clang runs leave out the whole of test_serve (ctest label once), not
# this. The release suite runs both.
#   bash tests/cli/test_serve_smoke.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -euo pipefail
exec bash "$(dirname "$0")/test_serve.sh" "$1" "$2" "$3" predict tiles v2 errors metrics auth max-body overload sigterm
