#include "mbobserver/core/program.hpp"

#include <cstdio>
#include <exception>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/log.hpp"
#include "mbobserver/core/version.hpp"

namespace mbo {

void add_common_options(CLI::App& app, CommonOptions& options) {
  // Wide enough that an option and its description never touch (help2man splits them at two
  // spaces or a line break; mbobserver-listen's "--only TEXT:{all,estimate,status}=all" needs 42).
  app.get_formatter()->column_width(44);
  app.add_option("--log-level", options.log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
  // GNU style (GNU coding standards, "--version"): "program (package) version" first, the
  // version after the last space; help2man reads it for the man pages' header.
  app.set_version_flag("--version", app.get_name() + " (mbobserver) " + std::string(kVersion) +
                                        "\nCopyright (c) the mbobserver developers. MIT licence.");
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
