// An experiment scenario (INTERFACES.md; mechanism or "kind": "vehicle") on arbitrary bytes:
// it must load, with its models, sensors and filter, or be refused with a ConfigError; any
// other exception, a crash, a leak or undefined behaviour is a finding. The model and
// vehicle files it names are kept to the shipped ones (a fuzzed path could name a FIFO or
// /dev/zero and hang the run): where the input is JSON, "truth" and "model" get a shipped
// file unless they already name one.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/experiment/scenario.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"

namespace fs = std::filesystem;

namespace {
fs::path g_file;

void keep_to(nlohmann::json& section, const char* key, std::initializer_list<const char*> shipped) {
  if (!section.is_object() || !section.contains(key)) return;
  auto& v = section[key];
  if (v.is_string())
    for (const char* s : shipped)
      if (v.get<std::string>() == s) return;
  v = *shipped.begin();
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/mbo-fuzz-scenario-XXXXXX";
  if (!::mkdtemp(tmpl)) std::abort();
  const fs::path dir = tmpl;
  fs::create_directory(dir / "scenarios");
  fs::create_directory_symlink(fs::path(MBO_ROOT_DIR) / "config", dir / "config");
  g_file = dir / "scenarios" / "scenario.json";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_object()) {
    for (const char* side : {"truth", "model"}) {
      if (!j.contains(side)) continue;
      keep_to(j[side], "model", {"../config/models/fourbar.json", "../config/models/slider_crank.json",
                                 "../config/models/double_pendulum.json", "../config/models/spinning_top.json"});
      keep_to(j[side], "vehicle", {"../config/vehicles/sedan.json", "../config/vehicles/van.json"});
    }
    text = j.dump();
  }
  {
    std::ofstream out(g_file, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  try {
    if (mbo::exp::is_vehicle_scenario(g_file))
      (void)mbo::exp::load_vehicle_scenario(g_file);
    else
      (void)mbo::exp::load_scenario(g_file);
  } catch (const mbo::ConfigError&) {
  }
  return 0;
}
