// mbobserver-bench's main: Google Benchmark's own (benchmark_main) plus the conventions every
// program of the project keeps (docs/interfaces.md): --help and --version on stdout, exit code 2
// on an unknown option. The benchmarks register themselves in bench_<layer>.cpp.
#include <cstdio>
#include <string_view>

#include <benchmark/benchmark.h>

#include "mbobserver/core/program.hpp"
#include "mbobserver/core/version.hpp"

namespace {

// The layout of CLI11's help, which the other programs print, so help2man reads all the same.
void print_help() {
  std::printf(
      "The speed of mbobserver's steps, parsers and publisher (Google Benchmark)\n"
      "Usage: mbobserver-bench [OPTIONS]\n"
      "\n"
      "Options:\n"
      "  -h,--help                   Print this help message and exit\n"
      "  --version                   Display program version information and exit\n"
      "  --benchmark_list_tests={true|false}\n"
      "                              list the benchmarks' names and exit\n"
      "  --benchmark_filter=REGEX    run only the benchmarks whose name matches REGEX\n"
      "  --benchmark_min_time=SECONDS\n"
      "                              least time per benchmark (not for those with a fixed iteration count)\n"
      "  --benchmark_min_warmup_time=SECONDS\n"
      "                              run each benchmark this long before measuring\n"
      "  --benchmark_repetitions=N   repeat each benchmark N times, with mean, median, stddev and cv\n"
      "  --benchmark_enable_random_interleaving={true|false}\n"
      "                              run the repetitions of all benchmarks in random order\n"
      "  --benchmark_report_aggregates_only={true|false}\n"
      "                              report only the aggregates of repetitions (console and file)\n"
      "  --benchmark_display_aggregates_only={true|false}\n"
      "                              show only the aggregates on the console\n"
      "  --benchmark_format={console|json|csv}\n"
      "                              format of the report on stdout\n"
      "  --benchmark_out=FILE        also write the report to FILE\n"
      "  --benchmark_out_format={json|console|csv}\n"
      "                              format of FILE (default json)\n"
      "  --benchmark_color={auto|true|false}\n"
      "                              colours on the console\n"
      "  --benchmark_counters_tabular={true|false}\n"
      "                              counters (p50_us, p99_us, ...) as table columns\n"
      "  --benchmark_context=KEY=VALUE,...\n"
      "                              extra key/value pairs in the report's context\n"
      "  --benchmark_time_unit={ns|us|ms|s}\n"
      "                              unit of the time columns\n"
      "  --v=LEVEL                   verbosity of Google Benchmark's log\n");
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      print_help();
      return mbo::kExitOk;
    }
    if (arg == "--version") {
      std::printf("mbobserver-bench (mbobserver) %s\nCopyright (c) the mbobserver developers. MIT licence.\n",
                  std::string(mbo::kVersion).c_str());
      return mbo::kExitOk;
    }
  }
  benchmark::Initialize(&argc, argv, print_help);
  // Initialize leaves what it did not recognise; refused in the other programs' words.
  if (argc > 1) {
    std::fprintf(stderr, "mbobserver-bench: unknown option %s (see --help)\n", argv[1]);
    return mbo::kExitUsage;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return mbo::kExitOk;
}
