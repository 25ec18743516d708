#include "mbobserver/estimation/aiding/wheel_hall.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mbobserver/mb/kinematics.hpp"

namespace mbo::est::aiding {

WheelSensorConfig read_wheel_sensor_config(const JsonReader& w, double default_gate) {
  WheelSensorConfig W;
  W.teeth = static_cast<int>(w.integer("teeth", 1, 100000, 40));
  W.angle_std = w.positive("angle_std", 2 * M_PI / W.teeth / std::sqrt(12.0));  // one tooth, uniform
  auto mod = static_cast<std::uint64_t>(w.integer("modulus", 2, 1LL << 32, 65536));
  W.modulus = {mod, mod, mod, mod};
  W.use = w.boolean("use", true);
  W.timeout_s = w.positive("timeout_s", W.timeout_s);
  W.gate_sigma = w.non_negative("gate_sigma", default_gate);
  W.reset_after_rejection_s = w.positive("reset_after_rejection_s", W.reset_after_rejection_s);
  w.finish();
  return W;
}

WheelHallAiding::WheelHallAiding(const WheelSensorConfig& config, const models::Vehicle& vehicle)
    : cfg_(config), vehicle_(vehicle) {
  health_.set_timeout(cfg_.timeout_s);
}

void WheelHallAiding::add_models(SensorModels& models) const {
  std::array<int, 4> spins{};
  for (int w = 0; w < 4; ++w) spins[w] = vehicle_.wheels[w].spin;
  models[index_of(SensorKind::wheel_hall)] = std::make_shared<WheelHallSensor>(spins);
}

void WheelHallAiding::gather(double t, const mb::State& model, MeasurementRows& rows) {
  double v = 0, ts = 0;
  for (int w = 0; w < 4; ++w) {
    if (!samples_.take(static_cast<Channel>(index_of(kFirst) + w), t, v, ts)) continue;
    if (!unwrap_[w]) unwrap_[w].emplace(cfg_.teeth, cfg_.modulus[w]);
    const double model_angle = model.q[vehicle_.wheels[w].spin];
    const double angle = unwrap_[w]->angle(static_cast<std::uint32_t>(std::llround(v)), model_angle);
    if (angle_t_[w] >= 0 && ts > angle_t_[w])
      rate_[w] = kRateKept * rate_[w] + kRateNew * (angle - angle_[w]) / (ts - angle_t_[w]);
    angle_[w] = angle;
    angle_t_[w] = ts;
    if (cfg_.use) rows.add(SensorKind::wheel_hall, w, angle, cfg_.angle_std * cfg_.angle_std, cfg_.gate_sigma);
  }
}

void WheelHallAiding::account(const ScalarMeasurement& m, const UpdateResult& u, double t, MbObserver& observer) {
  health_.account(u);
  const int w = m.row;
  if (u.accepted)
    rejected_since_[w] = -1;
  else if (rejected_since_[w] < 0)
    rejected_since_[w] = t;
  else if (t - rejected_since_[w] > cfg_.reset_after_rejection_s)
    reset_wheel(w, observer), rejected_since_[w] = -1;
}

void WheelHallAiding::reset_wheel(int w, MbObserver& observer) {
  // The wheel's spin angle and speed from its Hall counts, the rest of the model kept.
  ++resets_;
  auto& s = observer.state();
  const int slot = vehicle_.wheels[w].spin;
  s.q[slot] = angle_[w];
  s.qd[slot] = rate_[w];
  mb::solve_position(vehicle_.model, s.q, s.u, observer.workspace());
  mb::solve_velocity(vehicle_.model, s.u, s.qd, observer.workspace());
  const int j = observer.observed_index(slot);
  if (j >= 0) observer.restart_coordinate(j);
}

void WheelHallAiding::forget_counts() {
  for (auto& h : unwrap_) h.reset();
}

void WheelHallAiding::update_health(double t) {
  double oldest = std::numeric_limits<double>::infinity();
  for (int w = 0; w < 4; ++w)
    oldest = std::min(oldest, samples_.last_taken(static_cast<Channel>(index_of(kFirst) + w)));
  health_.sampled(oldest);
  health_.update(t);
}

}  // namespace mbo::est::aiding
