#include "mbobserver/estimation/aiding/wheel_hall.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mbobserver/mb/kinematics.hpp"

namespace mbo::est::aiding {

WheelSensorConfig read_wheel_sensor_config(const JsonReader& w, double default_gate) {
  WheelSensorConfig W;
  W.teeth = static_cast<int>(w.integer("teeth", 1, 100000, 40));
  W.angle_std = w.positive_up_to("angle_std", 2 * M_PI, 2 * M_PI / W.teeth / std::sqrt(12.0));  // one tooth, uniform
  auto mod = static_cast<std::uint64_t>(w.integer("modulus", 2, 1LL << 32, 65536));
  W.modulus = {mod, mod, mod, mod};
  W.use = w.boolean("use", true);
  W.timeout_s = w.positive_up_to("timeout_s", 60, W.timeout_s);
  W.gate_sigma = w.number_in("gate_sigma", 0, kMaxGateSigma, default_gate);
  W.reset_after_rejection_s = w.positive_up_to("reset_after_rejection_s", 3600, W.reset_after_rejection_s);
  W.stuck_teeth = w.positive_up_to("stuck_teeth", 1e4, W.stuck_teeth);
  W.free_rolling_pressure = w.number_in("free_rolling_pressure_bar", 0, 1000, W.free_rolling_pressure / 1e5) * 1e5;
  W.max_speed = w.positive_up_to("max_speed", 1e4, W.max_speed);
  W.latency_s = w.number_in("latency_s", 0, 1, W.latency_s);
  W.scale = read_estimate_config(w, "estimate_scale", W.scale);
  if (W.scale.on && !(W.scale.min <= 1 && 1 <= W.scale.max)) w.at("estimate_scale").fail("[min, max] must hold 1");
  if (auto r = w.find("scale_release")) {
    auto& R = W.release;
    R.on = r->boolean("enabled", true);
    R.held_std = r->positive_up_to("held_std", 0.1, R.held_std);
    R.test_sigma = r->positive_up_to("test_sigma", 100, R.test_sigma);
    R.window_s = r->positive_up_to("window_s", 600, R.window_s);
    R.sustained_s = r->number_in("sustained_s", 0, 600, R.sustained_s);
    R.min_speed = r->number_in("min_speed", 0, 100, R.min_speed);
    R.max_accel = r->positive_up_to("max_accel", 100, R.max_accel);
    R.after_reset_s = r->number_in("after_reset_s", 0, 86400, R.after_reset_s);
    r->finish();
    if (R.on && !W.scale.on) r->fail("needs \"estimate_scale\": the scales it releases");
    if (R.on && !(R.held_std < W.scale.initial_std)) r->fail("\"held_std\" must be below estimate_scale's initial_std");
  }
  w.finish();
  return W;
}

WheelHallAiding::WheelHallAiding(const WheelSensorConfig& config, const models::Vehicle& vehicle)
    : cfg_(config), vehicle_(vehicle) {
  health_.set_timeout(cfg_.timeout_s);
}

void WheelHallAiding::declare_parameters(SensorParameters& list) {
  const auto& c = cfg_.scale;
  if (!c.on || !cfg_.use) return;
  // A tyre's effective radius moves with its load and speed, and a bus delays the counts,
  // which the scale (a constant of the Hall model) cannot follow: over the robustness suite
  // the learned scales settled 0.015-0.16 % from the truth's with a filter sigma of 0.01 %
  // (NEES 3-680). That floor is in the published sigma; learned means within 0.15 %.
  constexpr double kModelStd = 0.001, kConvergedStd = 0.0015;
  for (int w = 0; w < 4; ++w) {
    SensorParameter p{
        "wheel_scale_" + std::string(kWheelNames[w]), 1.0, c.initial_std, c.rate_noise, c.min, c.max, kConvergedStd};
    p.model_std = kModelStd;
    scale_param_[w] = list.add(p);
  }
}

void WheelHallAiding::add_models(SensorModels& models) const {
  std::array<int, 4> spins{};
  for (int w = 0; w < 4; ++w) spins[w] = vehicle_.wheels[w].spin;
  auto hall = std::make_shared<WheelHallSensor>(spins);
  hall->estimate_scale(scale_param_, &anchors_);
  hall->set_latency(cfg_.latency_s);
  models[index_of(SensorKind::wheel_hall)] = hall;
}

void WheelHallAiding::gather(double t, const mb::State& model, const models::VehicleInputs& inputs,
                             const Eigen::VectorXd& params, MeasurementRows& rows) {
  // The anchors of estimated scales follow the model every so often, so that the angle turned
  // since (the scale's Jacobian) stays bounded; the measurement itself is unchanged by it.
  constexpr double kReanchor_s = 10;
  double v = 0, ts = 0;
  const double tooth = 2 * M_PI / cfg_.teeth;
  radius_anchored_.fill(false);
  for (int w = 0; w < 4; ++w) {
    if (!samples_.take(static_cast<Channel>(index_of(kFirst) + w), t, v, ts)) continue;
    const double model_angle = model.q[vehicle_.wheels[w].spin];
    const long long count = std::llround(v);
    if (count != count_[w]) {
      if (stuck_[w]) unwrap_[w].reset();  // counting again: unwrapped anew near the model
      stuck_[w] = false;
      count_[w] = count;
      changed_t_[w] = ts;
      changed_model_angle_[w] = model_angle;
    } else if (inputs.brake_pressure[w] < cfg_.free_rolling_pressure &&
               std::abs(model_angle - changed_model_angle_[w]) > cfg_.stuck_teeth * tooth) {
      // A free-rolling wheel that the model has turned by several teeth, and the counter
      // has not moved; if another counter moves meanwhile, the car rolls: this one is stuck.
      for (int o = 0; o < 4; ++o) stuck_[w] = stuck_[w] || (o != w && changed_t_[o] > changed_t_[w]);
    }
    if (stuck_[w]) {
      health_.implausible();
      continue;
    }
    const bool anchor = !unwrap_[w];
    if (!unwrap_[w]) unwrap_[w].emplace(cfg_.teeth, cfg_.modulus[w]);
    const double angle = unwrap_[w]->angle(static_cast<std::uint32_t>(count), model_angle);
    if (anchor) {
      radius_anchor_[w] = model_angle;
      radius_anchored_[w] = true;
    }
    if (scale_param_[w] >= 0 && (anchor || ts - anchored_t_[w] > kReanchor_s)) {
      auto& a = anchors_[w];
      a.counts = anchor ? angle : a.counts + scale(w, params) * (model_angle - a.model);
      a.model = model_angle;
      anchored_t_[w] = ts;
    }
    if (angle_t_[w] >= 0 && ts > angle_t_[w] && std::abs(angle - angle_[w]) > cfg_.max_speed * (ts - angle_t_[w])) {
      // a counter that jumped: not a wheel's motion
      health_.implausible();
      unwrap_[w].reset();
      angle_t_[w] = -1;
      continue;
    }
    if (angle_t_[w] >= 0 && ts > angle_t_[w])
      rate_[w] = kRateKept * rate_[w] + kRateNew * (angle - angle_[w]) / (ts - angle_t_[w]);
    angle_[w] = angle;
    angle_t_[w] = ts;
    if (cfg_.use) {
      const bool radius = radius_considered(w);
      rows.add(SensorKind::wheel_hall, w, angle, cfg_.angle_std * cfg_.angle_std, cfg_.gate_sigma, -1,
               radius ? radius_bias_ : -1, model_angle - radius_anchor_[w]);
    }
  }
}

void WheelHallAiding::account(const ScalarMeasurement& m, const UpdateResult& u, double t, MbObserver& observer) {
  const int w = m.row;
  health_.account(w, u, t);
  // A wheel whose counts the gate rejects this long is reset to them: ABS cycles and wheel
  // spin outrun any plant noise.
  const double since = health_.row(w).rejected_since();
  if (!u.accepted && since >= 0 && t - since > cfg_.reset_after_rejection_s) {
    reset_wheel(w, observer);
    health_.restart_row(w);
  }
}

void WheelHallAiding::reset_wheel(int w, MbObserver& observer) {
  // The wheel's spin angle and speed from its Hall counts, the rest of the model kept.
  ++resets_;
  auto& s = observer.state();
  const int slot = vehicle_.wheels[w].spin;
  if (scale_param_[w] < 0) {
    s.q[slot] = angle_[w];
    s.qd[slot] = rate_[w];
  } else {  // the counts through the wheel's scale
    const double k = scale(w, observer.sensor_parameters());
    s.q[slot] = anchors_[w].model + (angle_[w] - anchors_[w].counts) / k;
    s.qd[slot] = rate_[w] / k;
  }
  mb::solve_position(vehicle_.model, s.q, s.u, observer.workspace());
  mb::solve_velocity(vehicle_.model, s.u, s.qd, observer.workspace());
  // the angle set from the counts: its sensitivity to the radius restarts at 0, here; the rate,
  // set from the counts' (1 + d) theta_dot, has -theta_dot
  radius_anchor_[w] = s.q[slot];
  const int j = observer.observed_index(slot);
  if (j >= 0) {
    observer.restart_coordinate(j);
    if (radius_considered(w))
      observer.filter().set_unmodelled(observer.filter().layout().zd(j), radius_bias_, -s.qd[slot]);
  }
}

void WheelHallAiding::align_start(mb::State& s) const {
  if (!cfg_.use) return;
  for (int w = 0; w < 4; ++w) {
    const auto& held = samples_.peek(static_cast<Channel>(index_of(kFirst) + w));
    if (held.t < 0 || !std::isfinite(held.value)) continue;
    const int slot = vehicle_.wheels[w].spin;
    HallUnwrapper fresh(cfg_.teeth, cfg_.modulus[w]);
    s.q[slot] = fresh.angle(static_cast<std::uint32_t>(std::llround(held.value)), s.q[slot]);
  }
}

void WheelHallAiding::forget_counts() {
  for (auto& h : unwrap_) h.reset();
}

void WheelHallAiding::forget_time() {
  samples_.forget();
  forget_counts();
  angle_t_.fill(-1);
  count_.fill(-1);
  changed_t_.fill(-1);
  stuck_.fill(false);
  health_.sampled(-1);
}

void WheelHallAiding::update_health(double t) {
  double oldest = std::numeric_limits<double>::infinity();
  for (int w = 0; w < 4; ++w)
    oldest = std::min(oldest, samples_.last_taken(static_cast<Channel>(index_of(kFirst) + w)));
  health_.sampled(oldest);
  health_.update(t);
}

}  // namespace mbo::est::aiding
