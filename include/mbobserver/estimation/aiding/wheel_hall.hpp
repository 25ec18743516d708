// Wheel aiding from Hall-effect tooth counters (Sinigaglia 2016 4.4): each wheel's counter is
// unwrapped into a continuous spin angle near the model's (HallUnwrapper) and fused as one
// scalar row. A wheel whose counts the gate rejects for longer than reset_after_rejection_s
// (ABS cycles and wheel spin outrun any plant noise) is reset to them: its spin angle and its
// speed from the counts, and its error-state entries back to their initial variance.
#pragma once

#include <optional>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/aiding/aiding.hpp"
#include "mbobserver/estimation/sensors/wheel_hall.hpp"
#include "mbobserver/models/vehicle.hpp"

namespace mbo::est::aiding {

struct WheelSensorConfig {
  int teeth = 40;
  // rad: one tooth of 40, uniform (2 pi / 40 / sqrt(12)); the reader derives it from `teeth`
  double angle_std = 0.0453;
  std::array<std::uint64_t, 4> modulus{65536, 65536, 65536, 65536};
  bool use = true;
  double timeout_s = 0.1;
  double gate_sigma = 5;
  double reset_after_rejection_s = 0.1;
};

// The "wheels" section of the observer; `default_gate` is the filter's.
WheelSensorConfig read_wheel_sensor_config(const JsonReader& section, double default_gate);

class WheelHallAiding {
 public:
  static constexpr Channel kFirst = Channel::wheel_count_fl;
  static constexpr std::size_t kChannels = 4;

  WheelHallAiding(const WheelSensorConfig& config, const models::Vehicle& vehicle);

  // The measurement model of wheel_hall: one row per wheel (fl, fr, rl, rr).
  void add_models(SensorModels& models) const;

  static bool owns(Channel c) { return ChannelSamples<kFirst, kChannels>::owns(c); }
  bool hold(const Measurement& m) { return samples_.hold(m); }

  // The rows of the counts received up to t, unwrapped near the model's spin angles.
  void gather(double t, const mb::State& model, MeasurementRows& rows);
  // What the filter did with wheel row m at time t; a wheel rejected for too long is reset in
  // `observer` at once.
  void account(const ScalarMeasurement& m, const UpdateResult& u, double t, MbObserver& observer);
  // After a re-initialisation of the model: counts are unwrapped anew near its angles.
  void forget_counts();

  void update_health(double t);
  const SourceHealth& health() const { return health_; }
  bool timed_out() const { return health_.timed_out(); }
  std::uint64_t resets() const { return resets_; }
  const WheelSensorConfig& config() const { return cfg_; }

 private:
  void reset_wheel(int w, MbObserver& observer);

  // the counts' own speed: a low-pass of their differences (kept, new)
  static constexpr double kRateKept = 0.8, kRateNew = 0.2;

  WheelSensorConfig cfg_;
  const models::Vehicle& vehicle_;
  ChannelSamples<kFirst, kChannels> samples_;
  std::array<std::optional<HallUnwrapper>, 4> unwrap_;
  std::array<double, 4> angle_{}, angle_t_{-1, -1, -1, -1}, rate_{};  // from the counts
  std::array<double, 4> rejected_since_{-1, -1, -1, -1};
  std::uint64_t resets_ = 0;
  SourceHealth health_;
};

}  // namespace mbo::est::aiding
