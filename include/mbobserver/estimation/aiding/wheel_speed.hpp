// Wheel aiding from a production car's bus (issue 20): the ABS/ESC unit's four wheel speeds
// (rad/s of spin, or a speed at its rolling radius) and its reference vehicle speed, each a
// scalar row with its own noise: the signal's quantisation (one raw step q, uniform:
// q^2 / 12) plus any noise of the sensor's own. As the Hall unit (wheel_hall.hpp), a wheel the
// gate rejects for longer than reset_after_rejection_s (ABS cycles outrun the plant noise) is
// reset to its measured speed. Without Hall counts, nothing measures a spin angle: each
// wheel's angle is held by a zero-innovation row of angle_hold_std, so that its variance stays
// bounded (the angle itself enters no tyre force).
#pragma once

#include <array>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/aiding/aiding.hpp"
#include "mbobserver/models/vehicle.hpp"

namespace mbo::est::aiding {

struct WheelSpeedConfig {
  // Which channels the bus has (the daemon sets them from the CAN mapping, a scenario from its
  // simulated bus): none present, the unit fuses nothing and never times out.
  std::array<bool, 4> present{};
  bool vehicle_speed_present = false;
  // Per wheel: the values are a speed at `rolling_radius` (m/s) rather than a spin rate
  // (rad/s); one raw step of the signal in those units (0: none).
  std::array<bool, 4> linear{};
  std::array<double, 4> quantum{};
  bool vehicle_speed_linear = true;
  double vehicle_speed_quantum = 0;
  double rolling_radius = 0;  // m, the ECU's; 0: the tyre's unloaded radius
  // m/s (rad/s times the radius) of noise besides the quantisation: an ABS unit's speed is
  // filtered and its tooth ring's pitch varies. On the production scenarios 0.01 gave the snow
  // circle's tyre Fx 13.4 N (3 seeds; its walking-pace start, where 0.03 km/h is a large slip),
  // 0.03 ABS braking's x 0.0069 m (2 seeds); 0.02 gives 10.9 N and 0.0060 m (3 seeds).
  double speed_std = 0.02;
  bool use = true, use_vehicle_speed = true;
  double timeout_s = 0.1;
  double gate_sigma = 5;
  double reset_after_rejection_s = 0.1;
  double angle_hold_std = 1.0;  // rad; 0: no hold (the spins' angles are measured otherwise)
  double max_speed = 400;  // rad/s: faster is a glitch, not fused
};

// The "wheel_speeds" section of the observer; `default_gate` is the filter's.
WheelSpeedConfig read_wheel_speed_config(const JsonReader& section, double default_gate);

class WheelSpeedAiding {
 public:
  static constexpr Channel kFirst = Channel::wheel_speed_fl;
  static constexpr std::size_t kChannels = 5;  // four wheels and the vehicle speed

  WheelSpeedAiding(const WheelSpeedConfig& config, const models::Vehicle& vehicle);

  void add_models(SensorModels& models) const;
  static bool owns(Channel c) { return ChannelSamples<kFirst, kChannels>::owns(c); }
  // A sample on its DBC limit or beyond max_speed is counted implausible and not kept.
  bool hold(const Measurement& m);

  // Whether the unit fuses anything (some channel present and used).
  bool active() const { return active_; }
  // The tyres' rolling radius as an unmodelled bias of that index (WheelHallAiding::
  // consider_radius): r_model / r_effective = 1 + d makes each speed the truth times 1 + d.
  void consider_radius(int index) { radius_bias_ = index; }
  // The rows of the speeds received up to t, and the angle holds of wheels whose spin angle
  // nothing else measures (`hall_fused[w]`).
  void gather(double t, double dt, const mb::State& model, const std::array<bool, 4>& hall_fused,
              MeasurementRows& rows);
  void account(const ScalarMeasurement& m, const UpdateResult& u, double t, MbObserver& observer);
  void set_monitor(const MonitorConfig& c);
  void restart_monitor();
  void forget_time();
  void update_health(double t);
  const SourceHealth& health(SensorKind kind) const { return kind == SensorKind::vehicle_speed ? speed_ : wheels_; }
  bool timed_out() const;
  std::uint64_t resets() const { return resets_; }
  const WheelSpeedConfig& config() const { return cfg_; }
  // m/s per rad/s of wheel w's values (1 for a spin rate)
  double gain(int w) const { return gain_[w]; }

 private:
  WheelSpeedConfig cfg_;
  const models::Vehicle& vehicle_;
  std::array<double, 4> gain_{};
  int radius_bias_ = -1;
  std::array<double, 4> variance_{};
  double vehicle_variance_ = 0;
  bool active_ = false;
  ChannelSamples<kFirst, kChannels> samples_;
  std::array<double, 4> last_{};  // the newest speed of each wheel, its own units
  std::uint64_t resets_ = 0;
  SourceHealth wheels_, speed_;
};

}  // namespace mbo::est::aiding
