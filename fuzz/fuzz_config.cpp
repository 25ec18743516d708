// The daemon's configuration file on arbitrary bytes: load_daemon_config must accept it or
// refuse it with a ConfigError (the message that stops start-up: file, JSON pointer, why);
// any other exception, a crash, a leak or undefined behaviour is a finding. Its "vehicle" and
// "can"/"dbc" references are kept to the shipped files (shipped_files.hpp).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/runtime/daemon.hpp"
#include "shipped_files.hpp"

namespace {
std::filesystem::path g_file;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_file =
      mbo::fuzz::scratch_folder("config", {{"vehicles", "config/vehicles"}, {"can", "config/can"}}) / "config.json";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = mbo::fuzz::with_shipped_files(data, size, [](nlohmann::json& j) {
    if (j.contains("vehicle")) mbo::fuzz::keep_to(j["vehicle"], {"vehicles/sedan.json", "vehicles/van.json"});
    if (j.contains("can") && j["can"].is_object() && j["can"].contains("dbc")) {
      auto& d = j["can"]["dbc"];
      if (!d.is_array()) d = nlohmann::json::array({"can/vehicle.dbc"});
      for (auto& e : d) mbo::fuzz::keep_to(e, {"can/vehicle.dbc"});
    }
  });
  std::ofstream(g_file, std::ios::binary | std::ios::trunc)
      .write(text.data(), static_cast<std::streamsize>(text.size()));
  try {
    (void)mbo::runtime::load_daemon_config(g_file);
  } catch (const mbo::ConfigError&) {
  }
  return 0;
}
