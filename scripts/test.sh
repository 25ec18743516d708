#!/usr/bin/env bash
# README command 2: installs what is needed, builds, runs the whole test suite, then the same
# suite under AddressSanitizer + UndefinedBehaviorSanitizer, then the fuzz targets for a
# short fixed budget. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${MBO_JOBS:-$(nproc)}

bash scripts/install-deps.sh

echo "== code format (.clang-format)"
bash scripts/check-format.sh

echo "== release build and tests"
bash scripts/build.sh release
(cd build && ctest -j"$jobs" --output-on-failure --no-tests=error)

echo "== sanitizer build and tests (ASan + UBSan)"
bash scripts/build.sh asan
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && MBO_SANITIZED_RUN=1 ctest -j"$jobs" --output-on-failure --no-tests=error)

if [ -x scripts/fuzz.sh ]; then
  echo "== fuzz targets (short fixed budget)"
  bash scripts/fuzz.sh
fi
echo "== all tests passed"
