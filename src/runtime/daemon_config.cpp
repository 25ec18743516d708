#include <algorithm>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/log.hpp"
#include "mbobserver/models/vehicle_params.hpp"
#include "mbobserver/runtime/daemon.hpp"

namespace mbo::runtime {

DaemonConfig load_daemon_config(const std::filesystem::path& file) {
  DaemonConfig c;
  c.file = file;
  auto root = JsonReader::from_file(file);
  if (root.has("log_level")) {
    c.log_level = root.string("log_level");
    try {
      parse_log_level(c.log_level);
    } catch (const ConfigError& e) {
      root.at("log_level").fail(e.what());
    }
  }
  if (root.has("description")) root.string("description");
  {
    auto v = root.at("vehicle");
    auto path = root.directory() / v.as_string();
    c.vehicle = std::make_shared<const models::Vehicle>(models::build_vehicle(models::load_vehicle_params(path)));
    c.vehicle_sha256 = sha256_of_file(path);
  }
  c.signals = std::make_shared<const io::SignalMap>(io::SignalMap::from_config(root.at("can")));
  if (auto g = root.find("gnss")) c.gnss_serial = io::read_gnss_serial_config(*g);
  c.observer = est::read_vehicle_observer_config(root.at("observer"), *c.vehicle);
  // The wheel counters wrap where the DBC's signals do.
  for (int w = 0; w < 4; ++w) {
    auto m = c.signals->counter_modulus(static_cast<Channel>(static_cast<int>(Channel::wheel_count_fl) + w));
    if (m) c.observer.wheels.modulus[w] = *m;
  }
  c.publish = root.has("publish") ? read_publish_config(root.at("publish")) : PublishConfig{};
  c.runtime = root.has("runtime") ? read_runtime_config(root.at("runtime")) : RuntimeConfig{};
  if (auto cal = root.find("calibration"))
    c.calibration = read_calibration_config(&*cal);
  else
    c.calibration = read_calibration_config(nullptr);
  root.finish();
  return c;
}

}  // namespace mbo::runtime
