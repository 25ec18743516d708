// The conventions every program shares (docs/interfaces.md): --help, --log-level, and exit codes
// 0 on success, 2 on bad usage / config / input file (one line naming the file and place),
// 1 on a runtime failure.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace mbo {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitUsage = 2;

struct CommonOptions {
  std::string log_level = "info";
};

// Adds --log-level and --version.
void add_common_options(CLI::App& app, CommonOptions& options);

// Parses the command line and runs `body`, mapping CLI11 parse errors and ConfigError to
// exit code 2 and any other exception to 1, each as one line on stderr.
int run_program(CLI::App& app, int argc, char** argv, CommonOptions& options, const std::function<int()>& body);

}  // namespace mbo
