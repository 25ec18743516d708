#include "mbobserver/core/program.hpp"

#include <cstdio>
#include <exception>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/log.hpp"
#include "mbobserver/core/version.hpp"

namespace mbo {

void add_common_options(CLI::App& app, CommonOptions& options) {
  app.add_option("--log-level", options.log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
  app.set_version_flag("--version", std::string(kVersion));
}

int run_program(CLI::App& app, int argc, char** argv, CommonOptions& options, const std::function<int()>& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", app.get_name().c_str(), e.what());
    return kExitUsage;
  }
  try {
    setup_logging(app.get_name(), options.log_level);
    return body();
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", app.get_name().c_str(), e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", app.get_name().c_str(), e.what());
    return kExitRuntime;
  }
}

}  // namespace mbo
