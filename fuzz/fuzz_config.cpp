// The daemon's configuration file on arbitrary bytes: load_daemon_config must accept it or
// refuse it with a ConfigError (the message that stops start-up: file, JSON pointer, why);
// any other exception, a crash, a leak or undefined behaviour is a finding. The file's
// references are kept to the shipped vehicles and DBC (a fuzzed path could name a FIFO or
// /dev/zero and hang the run): where the input is JSON, "vehicle" and "can"/"dbc" are reset
// to them unless they already name them.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/runtime/daemon.hpp"

namespace fs = std::filesystem;

namespace {
fs::path g_dir;

bool is_one_of(const nlohmann::json& v, std::initializer_list<const char*> names) {
  if (!v.is_string()) return false;
  for (const char* n : names)
    if (v.get<std::string>() == n) return true;
  return false;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/mbo-fuzz-config-XXXXXX";
  if (!::mkdtemp(tmpl)) std::abort();
  g_dir = tmpl;
  const fs::path root = MBO_ROOT_DIR;
  fs::create_directory_symlink(root / "config" / "vehicles", g_dir / "vehicles");
  fs::create_directory_symlink(root / "config" / "can", g_dir / "can");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_object()) {
    if (j.contains("vehicle") && !is_one_of(j["vehicle"], {"vehicles/sedan.json", "vehicles/van.json"}))
      j["vehicle"] = "vehicles/sedan.json";
    if (j.contains("can") && j["can"].is_object() && j["can"].contains("dbc")) {
      auto& d = j["can"]["dbc"];
      if (!d.is_array()) d = nlohmann::json::array({"can/vehicle.dbc"});
      for (auto& e : d)
        if (!is_one_of(e, {"can/vehicle.dbc"})) e = "can/vehicle.dbc";
    }
    text = j.dump();
  }
  const fs::path file = g_dir / "config.json";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  try {
    (void)mbo::runtime::load_daemon_config(file);
  } catch (const mbo::ConfigError&) {
  }
  return 0;
}
