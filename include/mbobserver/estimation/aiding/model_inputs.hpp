// The model's inputs as a source: the road-wheel steering angle (and its rate, differenced),
// the wheels' drive torques and brake pressures drive the model (models::VehicleInputs) rather
// than correct it, but they arrive, age and time out like any sensor.
#pragma once

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/aiding/aiding.hpp"
#include "mbobserver/models/vehicle.hpp"

namespace mbo::est::aiding {

struct InputsConfig {
  double timeout_s = 0.1;
};

// The "inputs" section of the observer.
InputsConfig read_inputs_config(const JsonReader& section);

class ModelInputs {
 public:
  static constexpr Channel kFirst = Channel::steer_angle;
  static constexpr std::size_t kChannels = index_of(Channel::brake_pressure_rr) - index_of(kFirst) + 1;

  explicit ModelInputs(const InputsConfig& config) : cfg_(config) {}

  static bool owns(Channel c) { return ChannelSamples<kFirst, kChannels>::owns(c); }
  bool hold(const Measurement& m) { return samples_.hold(m); }

  // Takes the samples received up to t: they act on the step to t.
  void gather(double t);
  models::VehicleInputs& inputs() { return inputs_; }
  const models::VehicleInputs& inputs() const { return inputs_; }
  // No input for longer than the timeout (or none yet) at t.
  bool timed_out(double t) const { return last_t_ < 0 || t - last_t_ > cfg_.timeout_s; }

 private:
  // the steering rate is a differenced signal: a little low-pass (kept, new)
  static constexpr double kSteerRateKept = 0.7, kSteerRateNew = 0.3;

  InputsConfig cfg_;
  ChannelSamples<kFirst, kChannels> samples_;
  models::VehicleInputs inputs_{};
  double last_steer_ = 0, last_steer_t_ = -1, last_t_ = -1;
};

}  // namespace mbo::est::aiding
