// A small program with the shared conventions (run_program + JsonReader) reading a config of
// a known shape, so tests can check exit codes and messages end to end.
#include <iostream>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/program.hpp"

int main(int argc, char** argv) {
  CLI::App app{"config probe", "mbo_config_probe"};
  mbo::CommonOptions common;
  mbo::add_common_options(app, common);
  std::string file;
  app.add_option("config", file, "configuration file")->required();
  return mbo::run_program(app, argc, argv, common, [&] {
    auto root = mbo::JsonReader::from_file(file);
    double dt = root.positive("dt");
    auto filter = root.at("filter");
    auto noise = filter.at("plant_noise");
    double zdd = noise.non_negative("zdd");
    std::string type = filter.choice("type", {"errorEKF", "errorEKF-FE"});
    noise.finish();
    filter.finish();
    root.finish();
    std::cout << "dt=" << dt << " zdd=" << zdd << " type=" << type << "\n";
    return 0;
  });
}
