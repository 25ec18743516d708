// A vehicle file (docs/vehicle-format.md) on arbitrary bytes: it must be read and built into
// a multibody model, or refused with a ConfigError naming the file, the JSON pointer and why;
// any other exception, a crash, a leak or undefined behaviour is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_params.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto doc = mbo::parse_json_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    (void)mbo::models::build_vehicle(mbo::models::vehicle_params_from_json(doc, "fuzz.json"));
  } catch (const mbo::ConfigError&) {
  }
  return 0;
}
