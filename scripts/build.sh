#!/usr/bin/env bash
# Configures and builds one configuration: scripts/build.sh [release|asan]
# release -> build/       (Release, programs + tests + bench)
# asan    -> build-asan/  (AddressSanitizer + UndefinedBehaviorSanitizer, tests only)
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
jobs=${MBO_JOBS:-$(nproc)}
case "$kind" in
  release)
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build -j"$jobs" ;;
  asan)
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
      -DMBO_SANITIZE=ON -DMBO_BUILD_BENCH=OFF >/dev/null
    cmake --build build-asan -j"$jobs" ;;
  *) echo "usage: scripts/build.sh [release|asan]" >&2; exit 2 ;;
esac
