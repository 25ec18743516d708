// An experiment scenario (docs/interfaces.md; mechanism or "kind": "vehicle") on arbitrary bytes:
// it must load, with its models, sensors and filter, or be refused with a ConfigError; any
// other exception, a crash, a leak or undefined behaviour is a finding. The model and vehicle
// files its "truth" and "model" name are kept to the shipped ones (shipped_files.hpp).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/experiment/scenario.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"
#include "shipped_files.hpp"

namespace {
std::filesystem::path g_file;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // scenarios/ beside config/, as in the repository ("../config/...")
  const auto dir = mbo::fuzz::scratch_folder("scenario", {{"config", "config"}});
  std::filesystem::create_directory(dir / "scenarios");
  g_file = dir / "scenarios" / "scenario.json";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = mbo::fuzz::with_shipped_files(data, size, [](nlohmann::json& j) {
    for (const char* side : {"truth", "model"}) {
      if (!j.contains(side) || !j[side].is_object()) continue;
      auto& s = j[side];
      if (s.contains("model"))
        mbo::fuzz::keep_to(s["model"], {"../config/models/fourbar.json", "../config/models/slider_crank.json",
                                        "../config/models/double_pendulum.json", "../config/models/spinning_top.json"});
      if (s.contains("vehicle"))
        mbo::fuzz::keep_to(s["vehicle"], {"../config/vehicles/sedan.json", "../config/vehicles/van.json"});
    }
  });
  std::ofstream(g_file, std::ios::binary | std::ios::trunc)
      .write(text.data(), static_cast<std::streamsize>(text.size()));
  try {
    if (mbo::exp::is_vehicle_scenario(g_file))
      (void)mbo::exp::load_vehicle_scenario(g_file);
    else
      (void)mbo::exp::load_scenario(g_file);
  } catch (const mbo::ConfigError&) {
  }
  return 0;
}
