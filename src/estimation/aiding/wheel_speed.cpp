#include "mbobserver/estimation/aiding/wheel_speed.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mbobserver/estimation/sensors/wheel_speed.hpp"
#include "mbobserver/mb/kinematics.hpp"

namespace mbo::est::aiding {

WheelSpeedConfig read_wheel_speed_config(const JsonReader& w, double default_gate) {
  WheelSpeedConfig c;
  // the ranges of the Hall unit's keys (wheel_hall.cpp), docs/configuration.md
  c.rolling_radius = w.number_in("rolling_radius_m", 0, 2, c.rolling_radius);  // 0: the tyre's
  c.speed_std = w.number_in("speed_std", 0, 100, c.speed_std);
  c.use = w.boolean("use", c.use);
  c.use_vehicle_speed = w.boolean("use_vehicle_speed", c.use_vehicle_speed);
  c.timeout_s = w.positive_up_to("timeout_s", 60, c.timeout_s);
  c.gate_sigma = w.number_in("gate_sigma", 0, kMaxGateSigma, default_gate);
  c.reset_after_rejection_s = w.positive_up_to("reset_after_rejection_s", 3600, c.reset_after_rejection_s);
  c.angle_hold_std = w.number_in("angle_hold_std", 0, 1000, c.angle_hold_std);
  c.max_speed = w.positive_up_to("max_speed", 1e4, c.max_speed);
  w.finish();
  return c;
}

WheelSpeedAiding::WheelSpeedAiding(const WheelSpeedConfig& config, const models::Vehicle& vehicle)
    : cfg_(config), vehicle_(vehicle) {
  const double r = cfg_.rolling_radius > 0 ? cfg_.rolling_radius : vehicle.params.axles[0].tyre.radius_m;
  for (int w = 0; w < 4; ++w) {
    gain_[w] = cfg_.linear[w] ? r : 1.0;
    // one raw step, uniform (q^2 / 12), and the sensor's own noise, in the channel's units
    const double own = cfg_.speed_std / (cfg_.linear[w] ? 1.0 : r);
    variance_[w] = cfg_.quantum[w] * cfg_.quantum[w] / 12 + own * own;
    active_ = active_ || (cfg_.use && cfg_.present[w]);
  }
  const double own = cfg_.vehicle_speed_linear ? cfg_.speed_std : cfg_.speed_std / r;
  vehicle_variance_ = cfg_.vehicle_speed_quantum * cfg_.vehicle_speed_quantum / 12 + own * own;
  active_ = active_ || (cfg_.use_vehicle_speed && cfg_.vehicle_speed_present);
  wheels_.set_timeout(cfg_.timeout_s);
  speed_.set_timeout(cfg_.timeout_s);
}

void WheelSpeedAiding::add_models(SensorModels& models) const {
  std::array<int, 4> spins{};
  for (int w = 0; w < 4; ++w) spins[w] = vehicle_.wheels[w].spin;
  models[index_of(SensorKind::wheel_speed)] = std::make_shared<WheelSpeedSensor>(spins, gain_);
  const double r = cfg_.rolling_radius > 0 ? cfg_.rolling_radius : vehicle_.params.axles[0].tyre.radius_m;
  const double k = cfg_.vehicle_speed_linear ? r : 1.0;
  models[index_of(SensorKind::vehicle_speed)] = std::make_shared<VehicleSpeedSensor>(spins, std::array{k, k, k, k});
}

bool WheelSpeedAiding::hold(const Measurement& m) {
  const std::size_t k = index_of(m.channel) - index_of(kFirst);
  const double rate = k < 4 ? std::abs(m.value) / gain_[k] : 0;
  if ((m.flags & kAtLimit) || rate > cfg_.max_speed) {
    (k < 4 ? wheels_ : speed_).implausible();
    return true;  // not stale: dropped
  }
  return samples_.hold(m);
}

void WheelSpeedAiding::gather(double t, double dt, const mb::State& model, const std::array<bool, 4>& hall_fused,
                              MeasurementRows& rows) {
  double v = 0, ts = 0;
  for (int w = 0; w < 4; ++w) {
    const bool sampled = samples_.take(static_cast<Channel>(index_of(kFirst) + w), t, v, ts);
    if (sampled) last_[w] = v;
    if (!cfg_.use || !cfg_.present[w]) continue;
    if (sampled) rows.add(SensorKind::wheel_speed, w, v, variance_[w], cfg_.gate_sigma, -1, radius_bias_, v);
    // The angle hold, with every speed sample: the model's own angle where the step is about
    // to take it (the rows are fused after the model steps), so that the innovation is the
    // step's second-order remainder (1e-4 rad at 100 rad/s^2) against a sigma of a radian.
    if (sampled && !hall_fused[w] && cfg_.angle_hold_std > 0) {
      const int slot = vehicle_.wheels[w].spin;
      const double ahead = model.q[slot] + model.qd[slot] * dt + 0.5 * model.qdd[slot] * dt * dt;
      rows.add(SensorKind::wheel_speed, 4 + w, ahead, cfg_.angle_hold_std * cfg_.angle_hold_std, 0);
    }
  }
  if (samples_.take(Channel::vehicle_speed, t, v, ts) && cfg_.use_vehicle_speed && cfg_.vehicle_speed_present)
    rows.add(SensorKind::vehicle_speed, 0, v, vehicle_variance_, cfg_.gate_sigma, -1, radius_bias_, v);
}

void WheelSpeedAiding::account(const ScalarMeasurement& m, const UpdateResult& u, double t, MbObserver& observer) {
  if (MeasurementRows::kind(m) == SensorKind::vehicle_speed) {
    speed_.account(0, u, t);
    return;
  }
  const int w = m.row;
  if (w >= 4) return;  // an angle hold: not a measurement
  wheels_.account(w, u, t);
  // A wheel whose speeds the gate rejects this long (ABS, wheel spin) takes its measured speed.
  const double since = wheels_.row(w).rejected_since();
  if (!u.accepted && since >= 0 && t - since > cfg_.reset_after_rejection_s) {
    ++resets_;
    auto& s = observer.state();
    const int slot = vehicle_.wheels[w].spin;
    s.qd[slot] = last_[w] / gain_[w];
    mb::solve_velocity(vehicle_.model, s.u, s.qd, observer.workspace());
    const int j = observer.observed_index(slot);
    if (j >= 0) {
      observer.restart_coordinate(j);
      // set from a speed that reads (1 + d) times the truth
      if (radius_bias_ >= 0)
        observer.filter().set_unmodelled(observer.filter().layout().zd(j), radius_bias_, -s.qd[slot]);
    }
    wheels_.restart_row(w);
  }
}

void WheelSpeedAiding::set_monitor(const MonitorConfig& c) {
  wheels_.set_monitor(c);
  speed_.set_monitor(c);
}

void WheelSpeedAiding::restart_monitor() {
  wheels_.restart_monitor();
  speed_.restart_monitor();
}

void WheelSpeedAiding::forget_time() {
  samples_.forget();
  wheels_.sampled(-1);
  speed_.sampled(-1);
}

bool WheelSpeedAiding::timed_out() const {
  bool any = false;
  for (bool p : cfg_.present) any = any || p;
  return (cfg_.use && any && wheels_.timed_out()) ||
         (cfg_.use_vehicle_speed && cfg_.vehicle_speed_present && speed_.timed_out());
}

void WheelSpeedAiding::update_health(double t) {
  // the wheels time out with the oldest of the wheels the bus has
  double oldest = std::numeric_limits<double>::infinity();
  bool any = false;
  for (int w = 0; w < 4; ++w)
    if (cfg_.present[w]) {
      oldest = std::min(oldest, samples_.last_taken(static_cast<Channel>(index_of(kFirst) + w)));
      any = true;
    }
  wheels_.sampled(any ? oldest : -1);
  wheels_.update(t);
  speed_.sampled(samples_.last_taken(Channel::vehicle_speed));
  speed_.update(t);
}

}  // namespace mbo::est::aiding
