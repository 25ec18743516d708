// main() of mbobserver-bench: bench/CMakeLists.txt links benchmark::benchmark (which has
// none) and globs bench_*.cpp, so exactly one file defines it. Other layers' bench files
// must not use BENCHMARK_MAIN().
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
