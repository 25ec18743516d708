#include "mbobserver/estimation/aiding/model_inputs.hpp"

#include <algorithm>
#include <cmath>

namespace mbo::est::aiding {

InputsConfig read_inputs_config(const JsonReader& in) {
  InputsConfig c;
  c.timeout_s = in.positive_up_to("timeout_s", 60, c.timeout_s);
  c.max_steer_rate = in.positive_up_to("max_steer_rate_deg_s", 1e5, c.max_steer_rate * 180 / M_PI) * M_PI / 180;
  c.max_torque_rate = in.positive_up_to("max_torque_rate", 1e8, c.max_torque_rate);
  c.max_pressure_rate = in.positive_up_to("max_pressure_rate_bar_s", 1e6, c.max_pressure_rate / 1e5) * 1e5;
  c.guess_noise_scale = in.number_in("guess_noise_scale", 1, 1e6, c.guess_noise_scale);
  c.latency_s = in.number_in("latency_s", 0, 0.2, c.latency_s);
  in.finish();
  return c;
}

double ModelInputs::max_rate(Channel c) const {
  if (c == Channel::steer_angle) return cfg_.max_steer_rate;
  if (index_of(c) >= index_of(Channel::brake_pressure_fl)) return cfg_.max_pressure_rate;
  return cfg_.max_torque_rate;
}

bool ModelInputs::hold(const Measurement& m) {
  if (m.t < samples_.peek(m.channel).t) return false;
  const std::size_t k = index_of(m.channel) - index_of(kFirst);
  // A signal on its DBC limit is a saturated or glitched node (a steering angle of 65.5 deg);
  // a jump beyond the fastest the input can move is a glitch too. Either way the model keeps
  // the last plausible value: a wrong input would drive it metres away within a second.
  const bool jump =
      have_good_[k] && std::abs(m.value - good_[k]) > max_rate(m.channel) * std::max(0.0, m.t - good_t_[k]);
  if ((m.flags & kAtLimit) || jump) {
    ++implausible_;
    holding_[k] = true;
    return true;
  }
  good_[k] = m.value, good_t_[k] = m.t;
  have_good_[k] = true;
  holding_[k] = false;
  return samples_.hold(m);
}

bool ModelInputs::timed_out(double t) const {
  if (last_t_ < 0) return true;
  for (std::size_t k = 0; k < kChannels; ++k)
    if (taken_t_[k] >= 0 && t - taken_t_[k] > cfg_.timeout_s) return true;
  return false;
}

bool ModelInputs::implausible() const {
  for (bool h : holding_)
    if (h) return true;
  return false;
}

void ModelInputs::gather(double t) {
  double v = 0, ts = 0;
  if (samples_.take(Channel::steer_angle, t, v, ts)) {
    const double read_t = ts - cfg_.latency_s;  // the angle's own time; ts stays its arrival's
    if (last_steer_t_ >= 0 && read_t > last_steer_t_) {
      const double rate = (v - last_steer_) / (read_t - last_steer_t_);
      inputs_.steer_rate = std::clamp(kSteerRateKept * inputs_.steer_rate + kSteerRateNew * rate, -cfg_.max_steer_rate,
                                      cfg_.max_steer_rate);
    }
    last_steer_ = v;
    last_steer_t_ = read_t;
    last_t_ = ts;
    taken_t_[0] = ts;
  }
  if (last_steer_t_ >= 0) {
    // The angle at the step's end, not at its sample's time: held, a 100 Hz angle lags the
    // wheel by half its period on average, and at a lane change's steering rates that is a
    // tyre Fy error of 10 N at the front (5 N at the rear, which is not steered). Carried
    // forward with the differenced rate over at most kSteerHorizon_s (then it is a guess).
    // A held (implausible) angle stays where it was.
    // A late angle is carried over its latency as well: steer(t) = steer(t - L) + L rate,
    // first order, as the late Hall counts are (wheel_hall.hpp).
    const double age = holding_[0] ? 0.0 : std::clamp(t - last_steer_t_, 0.0, kSteerHorizon_s + cfg_.latency_s);
    double steer = last_steer_ + inputs_.steer_rate * age;
    // The model's wheels turn no faster than a steering can: an angle that comes back after a
    // hold or a timeout far from the last one (the mixed drive's car park: 0.64 rad after
    // 0.18 s held) is reached at max_steer_rate, not in one step, which the model's driving
    // constraint cannot follow (its Newton iteration failed, and the open loop's: a reset).
    if (model_steer_t_ >= 0 && t > model_steer_t_) {
      const double reach = cfg_.max_steer_rate * (t - model_steer_t_);
      steer = std::clamp(steer, inputs_.steer - reach, inputs_.steer + reach);
    }
    inputs_.steer = steer;
    model_steer_t_ = t;
  }
  for (int w = 0; w < 4; ++w) {
    const auto torque = static_cast<Channel>(index_of(Channel::drive_torque_fl) + w);
    const auto pressure = static_cast<Channel>(index_of(Channel::brake_pressure_fl) + w);
    if (samples_.take(torque, t, v, ts))
      inputs_.drive_torque[w] = v, last_t_ = taken_t_[index_of(torque) - index_of(kFirst)] = ts;
    if (samples_.take(pressure, t, v, ts))
      inputs_.brake_pressure[w] = v, last_t_ = taken_t_[index_of(pressure) - index_of(kFirst)] = ts;
  }
}

}  // namespace mbo::est::aiding
