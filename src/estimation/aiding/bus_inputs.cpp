#include "mbobserver/estimation/aiding/bus_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace mbo::est::aiding {
namespace {

constexpr double kDeg = M_PI / 180;

Lookup read_table(const JsonReader& t, const char* x_key, double x_scale, const char* y_key, double y_scale) {
  Lookup l;
  l.x = t.at(x_key).as_numbers();
  l.y = t.at(y_key).as_numbers();
  if (l.x.size() < 2 || l.x.size() != l.y.size())
    t.fail(std::string("\"") + x_key + "\" and \"" + y_key + "\" need the same number of points, at least 2");
  for (std::size_t i = 1; i < l.x.size(); ++i)
    if (!(l.x[i] > l.x[i - 1])) t.at(x_key).fail("must increase");
  for (auto& v : l.x) v *= x_scale;
  for (auto& v : l.y) v *= y_scale;
  t.finish();
  return l;
}

}  // namespace

double Lookup::operator()(double v) const {
  if (v <= x.front()) return y.front();
  if (v >= x.back()) return y.back();
  const auto i = static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), v) - x.begin());
  const double a = (v - x[i - 1]) / (x[i] - x[i - 1]);
  return y[i - 1] + a * (y[i] - y[i - 1]);
}

double Lookup::slope(double v) const {
  if (v <= x.front() || v >= x.back()) return 0;
  const auto i = static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), v) - x.begin());
  return (y[i] - y[i - 1]) / (x[i] - x[i - 1]);
}

double road_wheel_angle_std(const SteeringConfig& c) {
  double slope = c.ratio > 0 ? 1 / c.ratio : 0;
  for (std::size_t i = 1; i < c.table.x.size(); ++i)
    slope = std::max(slope, std::abs((c.table.y[i] - c.table.y[i - 1]) / (c.table.x[i] - c.table.x[i - 1])));
  return c.resolution / std::sqrt(12.0) * slope;  // a uniform error over one quantum
}

void read_bus_inputs_config(const JsonReader& obs, BusInputsConfig& c) {
  if (auto s = obs.find("steering")) {
    c.steering_set = true;
    if (s->has("ratio") == s->has("table")) s->fail("give either \"ratio\" or \"table\"");
    if (s->has("ratio")) c.steering.ratio = s->number_in("ratio", 1, 100);
    if (auto t = s->find("table"))
      c.steering.table = read_table(*t, "steering_wheel_deg", kDeg, "road_wheel_deg", kDeg);
    c.steering.resolution = s->number_in("resolution_deg", 0, 90, 0) * kDeg;
    s->finish();
  }
  if (auto d = obs.find("driveline")) {
    c.driveline_set = true;
    auto& D = c.driveline;
    const std::string layout = d->choice("layout", {"FWD", "RWD", "AWD"});
    D.layout = layout == "FWD" ? DrivelineLayout::fwd : layout == "RWD" ? DrivelineLayout::rwd : DrivelineLayout::awd;
    if (auto g = d->find("gear_ratios")) {
      for (const auto& code : g->keys()) {
        std::size_t used = 0;
        long long n = 0;
        try {
          n = std::stoll(code, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != code.size() || code.empty()) g->at(code).fail("a gear is named by the integer the bus sends");
        D.gear_ratios.emplace_back(n, g->number(code));
      }
      g->finish();
    }
    D.fixed_ratio = d->number("fixed_ratio", D.fixed_ratio);
    D.final_drive = d->positive("final_drive", D.final_drive);
    D.efficiency = d->number_in("efficiency", 0.1, 1, D.efficiency);
    if (D.layout == DrivelineLayout::awd) {
      if (auto cs = d->find("centre_split"))
        D.front_share_by_speed = read_table(*cs, "speed_kmh", 1 / 3.6, "front_share", 1);
      else
        D.front_share = d->number_in("front_share", 0, 1, D.front_share);
    }
    d->finish();
  }
  if (auto b = obs.find("brakes")) {
    c.brakes_set = true;
    auto& B = c.brakes;
    B.front_ratio = b->non_negative("front_ratio", B.front_ratio);
    B.rear_ratio = b->non_negative("rear_ratio", B.rear_ratio);
    B.switch_deceleration = b->non_negative("switch_deceleration", B.switch_deceleration);
    B.switch_ramp_s = b->positive("switch_ramp_s", B.switch_ramp_s);
    B.abs = b->boolean("abs", B.abs);
    B.abs_force_fraction = b->number_in("abs_force_fraction", 0.1, 1, B.abs_force_fraction);
    B.abs_force_error = b->number_in("abs_force_error", 0, 1e4, B.abs_force_error);
    b->finish();
  }
}

BusInputs::BusInputs(const BusInputsConfig& config, const models::Vehicle& vehicle) : cfg_(config), vehicle_(vehicle) {}

double BusInputs::road_wheel_angle(double swa) const {
  return cfg_.steering.ratio > 0 ? swa / cfg_.steering.ratio : cfg_.steering.table(swa);
}

double BusInputs::road_wheel_rate(double swa, double swa_rate) const {
  return cfg_.steering.ratio > 0 ? swa_rate / cfg_.steering.ratio : cfg_.steering.table.slope(swa) * swa_rate;
}

double BusInputs::gear_ratio(double code, bool& known) const {
  known = true;
  if (cfg_.driveline.gear_ratios.empty()) return cfg_.driveline.fixed_ratio;
  const long long n = std::llround(code);
  for (const auto& [c, r] : cfg_.driveline.gear_ratios)
    if (c == n) return r;
  known = false;  // neutral, park, or a code without a ratio: no torque reaches the wheels
  return 0;
}

std::array<double, 4> BusInputs::wheel_torques(double engine, double ratio, double speed) const {
  const auto& D = cfg_.driveline;
  const double total = engine * ratio * D.final_drive * D.efficiency;
  double front = D.layout == DrivelineLayout::fwd ? 1.0 : D.layout == DrivelineLayout::rwd ? 0.0 : D.front_share;
  if (D.layout == DrivelineLayout::awd && !D.front_share_by_speed.x.empty()) front = D.front_share_by_speed(speed);
  return {0.5 * front * total, 0.5 * front * total, 0.5 * (1 - front) * total, 0.5 * (1 - front) * total};
}

void BusInputs::convert(double t, double speed, ModelInputs& inputs) {
  double v = 0, ts = 0;
  auto put = [&](Channel c, double value, double time, std::uint8_t flags) {
    inputs.hold(Measurement{time, c, value, flags});
  };
  auto flag = [&](Channel c) { return flags_[index_of(c) - index_of(kFirst)]; };
  if (samples_.take(Channel::steering_wheel_rate, t, v, ts)) {
    rate_ = v;
    have_rate_ = true;
  }
  if (samples_.take(Channel::steering_wheel_angle, t, v, ts)) {
    swa_ = v;
    put(Channel::steer_angle, road_wheel_angle(v), ts, flag(Channel::steering_wheel_angle));
  }
  bool torque_new = false;
  double torque_t = -1;
  if (samples_.take(Channel::engine_torque, t, v, ts))
    engine_torque_ = v, have_torque_ = true, torque_new = true, torque_t = ts;
  if (samples_.take(Channel::gear, t, v, ts))
    gear_ = v, have_gear_ = true, torque_new = true, torque_t = std::max(torque_t, ts);
  if (torque_new && have_torque_ && (have_gear_ || cfg_.driveline.gear_ratios.empty())) {
    bool known = true;
    const double ratio = gear_ratio(gear_, known);
    const auto T = wheel_torques(engine_torque_, ratio, speed);
    for (int w = 0; w < 4; ++w)
      put(static_cast<Channel>(index_of(Channel::drive_torque_fl) + w), T[w], torque_t,
          static_cast<std::uint8_t>(flag(Channel::engine_torque) | flag(Channel::gear)));
  }
  auto pressures = [&](double front, double rear, double time, std::uint8_t f) {
    for (int w = 0; w < 4; ++w)
      put(static_cast<Channel>(index_of(Channel::brake_pressure_fl) + w), w < 2 ? front : rear, time, f);
  };
  if (samples_.take(Channel::brake_master_pressure, t, v, ts))
    pressures(v * cfg_.brakes.front_ratio, v * cfg_.brakes.rear_ratio, ts, flag(Channel::brake_master_pressure));
  if (samples_.take(Channel::brake_switch, t, v, ts)) {
    const bool on = v >= 0.5;
    if (!on) {
      switch_on_t_ = -1;
      pressures(0, 0, ts, 0);
    } else {
      if (switch_on_t_ < 0) switch_on_t_ = ts;
      // the pressures whose brake torques decelerate the car's mass at d: sum over the wheels
      // of gain_axle x p_axle = m d r, with p_axle = p x the axle's line ratio
      const auto& p = vehicle_.params;
      const double d =
          cfg_.brakes.switch_deceleration * std::clamp((ts - switch_on_t_) / cfg_.brakes.switch_ramp_s, 0.0, 1.0);
      const double per_pa = 2 * p.axles[0].brake_gain_Nm_per_Pa * cfg_.brakes.front_ratio +
                            2 * p.axles[1].brake_gain_Nm_per_Pa * cfg_.brakes.rear_ratio;
      const double master = per_pa > 0 ? p.total_mass() * d * p.axles[0].tyre.radius_m / per_pa : 0;
      pressures(master * cfg_.brakes.front_ratio, master * cfg_.brakes.rear_ratio, ts, 0);
    }
  }
}

void BusInputs::apply_rate(models::VehicleInputs& inputs) const {
  if (have_rate_) inputs.steer_rate = road_wheel_rate(swa_, rate_);
}

bool BusInputs::apply_abs(const models::VehicleOutputs& model, double mu, models::VehicleInputs& inputs) const {
  if (!cfg_.brakes_set || !cfg_.brakes.abs || model.speed < 2) return false;
  bool limited = false;
  const auto& p = vehicle_.params;
  for (int w = 0; w < models::kWheels; ++w) {
    const auto& tm = vehicle_.tyres[static_cast<std::size_t>(w)]->model();
    const double Fz = std::max(model.wheel[static_cast<std::size_t>(w)].Fz, 0.0);
    const double m = mu > 0 ? mu : tm.p.mu;
    const double peak = tm.mu_effective(m, Fz) * tm.p.longitudinal.peak_factor * Fz;
    const double gain = p.axles[static_cast<std::size_t>(models::axle_of(w))].brake_gain_Nm_per_Pa;
    if (gain <= 0) continue;
    auto& pw = inputs.brake_pressure[static_cast<std::size_t>(w)];
    const double limit = cfg_.brakes.abs_force_fraction * peak * tm.p.radius_m / gain;
    if (pw > limit) pw = limit, limited = true;
  }
  return limited;
}

}  // namespace mbo::est::aiding
