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
  // The fastest each input can change (a plausibility bound, not a model): a sample that
  // moved further from the last plausible one than this allows, or sits on its DBC limit, is
  // held at the last plausible value. Road-wheel steering rad/s, drive torque N m/s, brake
  // pressure Pa/s.
  double max_steer_rate = 3.5, max_torque_rate = 5e4, max_pressure_rate = 3e9;
  // While an input is held or has timed out the model runs on a guess: the filter's plant
  // noise is multiplied by this, so its sigma stays honest and the sensors pull harder.
  double guess_noise_scale = 25;
  // How late the driver inputs reach the observer (a gateway's or the bus's delay, s): a
  // sample stamped at t holds the input of t - latency_s. The steering angle is carried to
  // the step's time with its rate over that much more; torques and pressures stay as they come.
  double latency_s = 0;
};

// The "inputs" section of the observer.
InputsConfig read_inputs_config(const JsonReader& section);

class ModelInputs {
 public:
  static constexpr Channel kFirst = Channel::steer_angle;
  static constexpr std::size_t kChannels = index_of(Channel::brake_pressure_rr) - index_of(kFirst) + 1;

  explicit ModelInputs(const InputsConfig& config) : cfg_(config) { taken_t_.fill(-1); }

  static bool owns(Channel c) { return ChannelSamples<kFirst, kChannels>::owns(c); }
  // Keeps m for the next step if it is plausible; an implausible sample is counted and
  // dropped, so the input keeps its last plausible value. False: m is older than the sample
  // held (stale).
  bool hold(const Measurement& m);

  // Takes the samples received up to t: they act on the step to t.
  void gather(double t);
  // Whether some input is being held at its last plausible value (until a plausible sample of
  // it comes).
  bool implausible() const;
  std::uint64_t implausible_samples() const { return implausible_; }
  // After a jump of the time base: the samples held and their times are of another time (the
  // inputs keep their values until new ones come).
  void forget_time() {
    samples_.forget();
    have_good_.fill(false);
    holding_.fill(false);
    taken_t_.fill(-1);
    last_steer_t_ = last_t_ = model_steer_t_ = -1;
  }
  models::VehicleInputs& inputs() { return inputs_; }
  const models::VehicleInputs& inputs() const { return inputs_; }
  // At t: no input yet, or an input that has come before has been silent for longer than the
  // timeout (each input on its own: a steering angle that stops is not kept alive by the
  // torques that still come).
  bool timed_out(double t) const;
  // The model runs on a guessed input: one held at its last plausible value, or timed out.
  bool guessing(double t) const { return implausible() || timed_out(t); }

 private:
  // the steering rate is a differenced signal: a little low-pass (kept, new)
  static constexpr double kSteerRateKept = 0.7, kSteerRateNew = 0.3;
  // the angle is carried forward with that rate over at most this (two periods at 100 Hz)
  static constexpr double kSteerHorizon_s = 0.02;

  double max_rate(Channel c) const;

  InputsConfig cfg_;
  ChannelSamples<kFirst, kChannels> samples_;
  models::VehicleInputs inputs_{};
  double last_steer_ = 0, last_steer_t_ = -1, last_t_ = -1;
  double model_steer_t_ = -1;  // when the model's angle was last set (-1: take the next as it is)
  // per channel: the last plausible value and its time, and whether the newest was not
  std::array<double, kChannels> good_{}, good_t_{};
  std::array<bool, kChannels> have_good_{}, holding_{};
  std::array<double, kChannels> taken_t_{};  // -1: never
  std::uint64_t implausible_ = 0;
};

}  // namespace mbo::est::aiding
