#include "mbobserver/core/log.hpp"

#include <cstdlib>
#include <memory>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/systemd_sink.h>

#include "mbobserver/core/json_reader.hpp"

namespace mbo {

spdlog::level::level_enum parse_log_level(std::string_view name) {
  static constexpr std::string_view names[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  for (int i = 0; i < 7; ++i)
    if (name == names[i]) return static_cast<spdlog::level::level_enum>(i);
  throw ConfigError("unknown log level \"" + std::string(name) +
                    "\" (expected trace, debug, info, warn, error, critical or off)");
}

void setup_logging(std::string_view program, std::string_view level) {
  std::shared_ptr<spdlog::logger> logger;
  // systemd sets JOURNAL_STREAM when stderr goes to the journal (systemd.exec(5)); then the
  // journal keeps time and unit, and we give it the priority of each line.
  if (std::getenv("JOURNAL_STREAM") != nullptr) {
    auto sink = std::make_shared<spdlog::sinks::systemd_sink_mt>(std::string(program));
    logger = std::make_shared<spdlog::logger>(std::string(program), sink);
    logger->set_pattern("%v");
  } else {
    logger = std::make_shared<spdlog::logger>(std::string(program), std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %n %l: %v");
  }
  logger->set_level(parse_log_level(level));
  spdlog::set_default_logger(logger);
}

}  // namespace mbo
