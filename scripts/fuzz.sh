#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan + UBSan) in build-fuzz/ and runs each for a
# short fixed budget. Fails on any crash, hang (-timeout), leak or memory blow-up.
# New inputs go to a scratch folder first; only those that add coverage are merged into the
# committed seed corpus fuzz/corpus/<target>/.
#   MBO_FUZZ_SECONDS (default 15): budget per target (CI took 62 to 83 of its 90 minutes on these
#   machines; a longer local run: MBO_FUZZ_SECONDS=600 bash scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${MBO_FUZZ_SECONDS:-15}
jobs=${MBO_JOBS:-$(nproc)}
targets=(dbc candump asc nmea config vehicle scenario calibration)

# -O1 -g1 as the ASan build: a third of CI's fuzz stage was compiling at -O2 -g, and libFuzzer
# finds the same crashes at -O1 (it is the level its documentation builds with).
CC=clang CXX=clang++ cmake -S fuzz -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
cmake --build build-fuzz -j"$jobs" >/dev/null

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p build-fuzz/artifacts
for t in "${targets[@]}"; do
  corpus=fuzz/corpus/$t
  scratch=build-fuzz/scratch/$t
  rm -rf "$scratch"
  mkdir -p "$scratch" "$corpus"
  echo "fuzz: $t for ${budget}s"
  # The first folder receives new inputs; the corpus is read as seeds.
  if ! ./build-fuzz/fuzz_"$t" -max_total_time="$budget" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/"$t"- \
      "$scratch" "$corpus" >build-fuzz/"$t".log 2>&1; then
    tail -n 60 build-fuzz/"$t".log >&2
    echo "fuzz: $t FAILED (log: build-fuzz/$t.log, reproducer in build-fuzz/artifacts/)" >&2
    exit 1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" build-fuzz/"$t".log | tr '\n' ' '
  echo
  before=$(find "$corpus" -type f | wc -l)
  ./build-fuzz/fuzz_"$t" -merge=1 "$corpus" "$scratch" >build-fuzz/"$t"-merge.log 2>&1
  after=$(find "$corpus" -type f | wc -l)
  echo "fuzz: $t corpus $before -> $after files"
done
echo "fuzz: all targets clean"
