#include <algorithm>

#include <spdlog/spdlog.h>

#include "mbobserver/core/input_file.hpp"
#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/log.hpp"
#include "mbobserver/models/vehicle_params.hpp"
#include "mbobserver/runtime/daemon.hpp"

namespace mbo::runtime {
namespace {

// The filter uses what the bus carries (issue 20): the Hall unit only with counters mapped,
// the wheel-speed unit with the speeds mapped (in the units and steps of their signals), and
// the production inputs with the sections that say how to convert them.
void fit_observer_to_bus(const io::SignalMap& map, const JsonReader& root, est::VehicleObserverConfig& o) {
  auto mapping = [&](Channel ch) { return map.mapping(ch); };
  bool counters = false;
  for (int w = 0; w < 4; ++w)
    counters = counters || mapping(static_cast<Channel>(static_cast<int>(Channel::wheel_count_fl) + w));
  if (!counters) o.wheels.use = false;
  auto& ws = o.wheel_speeds;
  for (int w = 0; w < 4; ++w)
    if (const auto* m = mapping(static_cast<Channel>(static_cast<int>(Channel::wheel_speed_fl) + w))) {
      ws.present[w] = true;
      ws.linear[w] = m->dimension == io::Dimension::speed;
      ws.quantum[w] = m->quantum;
    }
  if (const auto* m = mapping(Channel::vehicle_speed)) {
    ws.vehicle_speed_present = true;
    ws.vehicle_speed_quantum = m->quantum;
  }
  const auto& b = o.bus_inputs;
  auto needs = [&](Channel ch, bool given, const char* section) {
    if (mapping(ch) && !given)
      root.at("can")
          .at("signals")
          .at(std::string(channel_name(ch)))
          .fail(std::string("needs the observer's \"") + section + "\" section to turn it into the model's inputs");
  };
  needs(Channel::steering_wheel_angle, b.steering_set, "steering");
  needs(Channel::engine_torque, b.driveline_set, "driveline");
  needs(Channel::brake_master_pressure, b.brakes_set, "brakes");
  needs(Channel::brake_switch, b.brakes_set, "brakes");
}

}  // namespace

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
    // The file named where the configuration names it (the vehicle file's own errors name
    // their pointer in it).
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) v.fail(path.string() + ": no such file");
    try {
      require_regular_file(path);
    } catch (const ConfigError& e) {
      v.fail(e.what());
    }
    c.vehicle = std::make_shared<const models::Vehicle>(models::build_vehicle(models::load_vehicle_params(path)));
    c.vehicle_sha256 = sha256_of_file(path);
  }
  c.signals = std::make_shared<const io::SignalMap>(io::SignalMap::from_config(root.at("can")));
  for (const auto& w : c.signals->dbc_warnings()) spdlog::warn("{}", w);
  if (auto g = root.find("gnss")) c.gnss_serial = io::read_gnss_serial_config(*g);
  c.observer = est::read_vehicle_observer_config(root.at("observer"), *c.vehicle);
  if (c.gnss_serial && c.gnss_serial->stamp_fix_time)
    est::aiding::check_fixes_stamped_at_their_time(c.observer.gnss, root.at("observer").at("gnss"),
                                                   "/gnss/stamp \"fix_time\"");
  c.notices = est::unmeasured_sensor_defaults(c.observer, root.at("observer"));
  // The wheel counters wrap where the DBC's signals do.
  for (int w = 0; w < 4; ++w) {
    auto m = c.signals->counter_modulus(static_cast<Channel>(static_cast<int>(Channel::wheel_count_fl) + w));
    if (m) c.observer.wheels.modulus[w] = *m;
  }
  fit_observer_to_bus(*c.signals, root, c.observer);
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
