#include "mbobserver/experiment/production_bus.hpp"

#include <algorithm>
#include <cmath>

namespace mbo::exp {
namespace {
constexpr double kDeg = M_PI / 180;
double quantise(double v, double q) { return q > 0 ? std::round(v / q) * q : v; }
}  // namespace

ProductionBusConfig read_production_bus_config(const JsonReader& r) {
  ProductionBusConfig c;
  if (auto w = r.find("wheel_speeds")) {
    c.wheel_rate_hz = w->positive("rate_hz", c.wheel_rate_hz);
    c.speed_quantum_kmh = w->non_negative("quantum_kmh", c.speed_quantum_kmh);
    c.rolling_radius = w->positive("rolling_radius_m", c.rolling_radius);
    w->finish();
  }
  if (auto s = r.find("steering_wheel")) {
    c.steering_rate_hz = s->positive("rate_hz", c.steering_rate_hz);
    c.steering_ratio = s->number_in("ratio", 1, 100, c.steering_ratio);
    c.steering_quantum_deg = s->non_negative("quantum_deg", c.steering_quantum_deg);
    s->finish();
  }
  if (auto e = r.find("engine")) {
    c.engine_rate_hz = e->positive("rate_hz", c.engine_rate_hz);
    if (e->has("gear_ratios")) c.gear_ratios = e->at("gear_ratios").as_numbers();
    if (e->has("upshift_kmh")) c.upshift_kmh = e->at("upshift_kmh").as_numbers();
    if (c.gear_ratios.empty() || c.upshift_kmh.size() + 1 != c.gear_ratios.size())
      e->fail("needs one more gear ratio than upshift speeds");
    c.final_drive = e->positive("final_drive", c.final_drive);
    c.layout = e->choice("layout", {"FWD", "RWD", "AWD"}, c.layout);
    e->finish();
  }
  if (auto b = r.find("brakes")) {
    c.brake_rate_hz = b->positive("rate_hz", c.brake_rate_hz);
    c.front_ratio = b->positive("front_ratio", c.front_ratio);
    c.rear_ratio = b->positive("rear_ratio", c.rear_ratio);
    c.pressure_quantum_bar = b->non_negative("quantum_bar", c.pressure_quantum_bar);
    b->finish();
  }
  r.finish();
  return c;
}

void fit_observer_to_production_bus(const ProductionBusConfig& c, est::VehicleObserverConfig& o) {
  o.wheels.use = false;
  auto& w = o.wheel_speeds;
  w.present.fill(true);
  w.linear.fill(true);
  w.quantum.fill(c.speed_quantum_kmh / 3.6);
  w.rolling_radius = c.rolling_radius;
  auto& b = o.bus_inputs;
  b.steering_set = b.driveline_set = b.brakes_set = true;
  b.steering.ratio = c.steering_ratio;
  b.steering.resolution = c.steering_quantum_deg * kDeg;
  b.driveline.layout = c.layout == "FWD"   ? est::aiding::DrivelineLayout::fwd
                       : c.layout == "RWD" ? est::aiding::DrivelineLayout::rwd
                                           : est::aiding::DrivelineLayout::awd;
  b.driveline.front_share = 0.5;
  b.driveline.gear_ratios.clear();
  for (std::size_t g = 0; g < c.gear_ratios.size(); ++g)
    b.driveline.gear_ratios.emplace_back(static_cast<long long>(g + 1), c.gear_ratios[g]);
  b.driveline.final_drive = c.final_drive;
  b.brakes.front_ratio = c.front_ratio;
  b.brakes.rear_ratio = c.rear_ratio;
}

bool replaced_by_production_bus(Channel c) {
  const auto i = static_cast<std::size_t>(c);
  return (i >= static_cast<std::size_t>(Channel::wheel_count_fl) &&
          i <= static_cast<std::size_t>(Channel::brake_pressure_rr));
}

bool ProductionBusSim::due(double t, double rate, long& next) {
  if (t + 1e-9 < next / rate) return false;
  next = static_cast<long>(std::floor(t * rate + 1e-6)) + 1;
  return true;
}

void ProductionBusSim::sample(double t, const mb::State& s, const models::VehicleInputs& in, double speed,
                              std::vector<Measurement>& out) {
  auto put = [&](Channel c, double v) { out.push_back({t, c, v}); };
  if (due(t, c_.wheel_rate_hz, next_wheel_)) {
    // the ABS unit: spin rate (on the knuckle, relative to the carrier) x its own radius
    const double q = c_.speed_quantum_kmh / 3.6;
    for (int w = 0; w < 4; ++w)
      put(static_cast<Channel>(static_cast<int>(Channel::wheel_speed_fl) + w),
          quantise(s.qd[v_.wheels[w].spin] * c_.rolling_radius, q));
  }
  if (due(t, c_.steering_rate_hz, next_steer_))
    put(Channel::steering_wheel_angle, quantise(in.steer * c_.steering_ratio, c_.steering_quantum_deg * kDeg));
  if (due(t, c_.engine_rate_hz, next_engine_)) {
    std::size_t gear = 0;
    while (gear < c_.upshift_kmh.size() && speed * 3.6 > c_.upshift_kmh[gear]) ++gear;
    double total = 0;
    for (double T : in.drive_torque) total += T;
    put(Channel::gear, static_cast<double>(gear + 1));
    put(Channel::engine_torque, total / (c_.gear_ratios[gear] * c_.final_drive * c_.efficiency));
  }
  if (due(t, c_.brake_rate_hz, next_brake_)) {
    double master = 0;
    for (int w = 0; w < 4; ++w)
      master = std::max(master, in.brake_pressure[w] / (w < 2 ? c_.front_ratio : c_.rear_ratio));
    put(Channel::brake_master_pressure, quantise(master, c_.pressure_quantum_bar * 1e5));
  }
}

}  // namespace mbo::exp
