// Logging for every program: spdlog to stderr, or to the journal (with priorities) when
// the program runs under systemd with its stderr connected to journald.
#pragma once

#include <string_view>

#include <spdlog/spdlog.h>

namespace mbo {

// "trace", "debug", "info", "warn", "error", "critical", "off"; anything else is a ConfigError.
spdlog::level::level_enum parse_log_level(std::string_view name);

// Installs the default logger named after the program at the given level.
void setup_logging(std::string_view program, std::string_view level);

}  // namespace mbo
