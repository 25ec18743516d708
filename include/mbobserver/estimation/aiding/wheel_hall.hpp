// Wheel aiding from Hall-effect tooth counters (Sinigaglia 2016 4.4): each wheel's counter is
// unwrapped into a continuous spin angle near the model's (HallUnwrapper) and fused as one
// scalar row. A wheel whose counts the gate rejects for longer than reset_after_rejection_s
// (ABS cycles and wheel spin outrun any plant noise) is reset to them: its spin angle and its
// speed from the counts, and its error-state entries back to their initial variance.
#pragma once

#include <optional>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/aiding/aiding.hpp"
#include "mbobserver/estimation/scale_release.hpp"
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
  // A counter that stands still while the others count and the model has turned its wheel by
  // more than stuck_teeth teeth, with less brake pressure than free_rolling_pressure on it (no
  // lock), is stuck: its counts are not fused, and the wheel is not reset to them.
  double stuck_teeth = 3;
  double free_rolling_pressure = 1e5;  // Pa
  // Counts implying a wheel faster than this (rad/s) are a glitch: not fused, and the
  // counter is unwrapped anew near the model's angle.
  double max_speed = 400;
  // s: how late the counts reach the filter beyond their receive stamp's age (a gateway, the
  // sending ECU's cycle); the rows compare them with the wheel's angle that long ago.
  double latency_s = 0;
  // Each wheel's scale r_model / r_effective estimated (off unless configured): tyres of
  // another size, pressure or wear than the vehicle file says.
  EstimateConfig scale{false, 0.01, 1e-9, 0.9, 1.1};
  // The scales held at 1 until the fixes show the wheels are not the file's ("scale_release").
  ScaleReleaseConfig release;
};

// The "wheels" section of the observer; `default_gate` is the filter's.
WheelSensorConfig read_wheel_sensor_config(const JsonReader& section, double default_gate);

class WheelHallAiding {
 public:
  static constexpr Channel kFirst = Channel::wheel_count_fl;
  static constexpr std::size_t kChannels = 4;

  WheelHallAiding(const WheelSensorConfig& config, const models::Vehicle& vehicle);

  // The scales it estimates, if configured (call before add_models).
  void declare_parameters(SensorParameters& list);
  // The measurement model of wheel_hall: one row per wheel (fl, fr, rl, rr).
  void add_models(SensorModels& models) const;

  static bool owns(Channel c) { return ChannelSamples<kFirst, kChannels>::owns(c); }
  bool hold(const Measurement& m) { return samples_.hold(m); }

  // The rows of the counts received up to t, unwrapped near the model's spin angles; the
  // brake pressures tell a locked wheel from a stuck counter; `params` are the current sensor
  // parameters (the scales, to move the anchors).
  void gather(double t, const mb::State& model, const models::VehicleInputs& inputs, const Eigen::VectorXd& params,
              MeasurementRows& rows);
  // The tyres' rolling radius, where the scales are not estimated, as an unmodelled bias of
  // that index (ErrorEkf::set_unmodelled_biases): a common relative error d of the effective
  // radius, r_model / r_effective = 1 + d, makes a counter's angle the model's true one plus
  // d times the angle turned since its anchor. Each wheel's anchor is where its counts were
  // last unwrapped anew: there the counts and the model's angle agree and the angle's
  // sensitivity to d is zero (VehicleObserver forgets it there: anchored()).
  void consider_radius(int index) { radius_bias_ = index; }
  int considered_radius() const { return radius_bias_; }
  // The scales' rows measure the angle turned since their anchor: the next counts anchor anew.
  void restart_scale_anchors() { anchored_t_.fill(-std::numeric_limits<double>::infinity()); }
  // The scales held (ScaleRelease): the rows consider the radius as if no scale were estimated.
  void hold_scales(bool held) { scales_held_ = held; }
  // Wheel w's spin sensitivities were restarted at `model` (another unit's reset): its radius
  // coefficient restarts there too.
  void restart_radius(int w, const mb::State& model) { radius_anchor_[w] = model.q[vehicle_.wheels[w].spin]; }
  // Wheels whose unmodelled-radius anchor the last gather set anew (their angle's sensitivity
  // to the radius is to be forgotten).
  const std::array<bool, 4>& anchored() const { return radius_anchored_; }
  // What the filter did with wheel row m at time t; a wheel rejected for too long is reset in
  // `observer` at once.
  void account(const ScalarMeasurement& m, const UpdateResult& u, double t, MbObserver& observer);
  // After a re-initialisation of the model: counts are unwrapped anew near its angles.
  void forget_counts();
  // At a start of the model: its spin angles where the newest counts put them (the counter's
  // angle, unwrapped near the model's), so that the first rows agree with the counts however
  // long after the first count the model starts. A start from three agreeing fixes comes
  // 40 ms in: 2.8 rad at 80 km/h, which the gate rejected for 0.1 s until the wheels' reset.
  void align_start(mb::State& s) const;
  void set_monitor(const MonitorConfig& c) { health_.set_monitor(c); }
  void restart_monitor() { health_.restart_monitor(); }
  // After a jump of the time base: the samples held and the counts' history are of another time.
  void forget_time();
  // Whether wheel w's counter is taken as stuck now.
  bool stuck(int w) const { return stuck_[w]; }
  // Wheel w's scale parameter (-1: not estimated) and its anchor: the physical spin angle is
  // anchor.counts + s (theta - anchor.model), the physical spin rate s theta_dot.
  int scale_param(int w) const { return scale_param_[w]; }
  const HallAnchor& anchor(int w) const { return anchors_[w]; }

  void update_health(double t);
  const SourceHealth& health() const { return health_; }
  bool timed_out() const { return health_.timed_out(); }
  std::uint64_t resets() const { return resets_; }
  const WheelSensorConfig& config() const { return cfg_; }

 private:
  void reset_wheel(int w, MbObserver& observer);
  double scale(int w, const Eigen::VectorXd& params) const {
    return scale_param_[w] < 0 ? 1.0 : params[scale_param_[w]];
  }

  // the counts' own speed: a low-pass of their differences (kept, new)
  static constexpr double kRateKept = 0.8, kRateNew = 0.2;

  WheelSensorConfig cfg_;
  const models::Vehicle& vehicle_;
  ChannelSamples<kFirst, kChannels> samples_;
  std::array<std::optional<HallUnwrapper>, 4> unwrap_;
  std::array<double, 4> angle_{}, angle_t_{-1, -1, -1, -1}, rate_{};  // from the counts
  // the last raw count, when it last changed and where the model's wheel was then
  std::array<long long, 4> count_{-1, -1, -1, -1};
  std::array<double, 4> changed_t_{-1, -1, -1, -1}, changed_model_angle_{};
  std::array<bool, 4> stuck_{};
  std::uint64_t resets_ = 0;
  // with the scales estimated: each wheel's anchor, and when it was last moved up to the model
  std::array<int, 4> scale_param_{-1, -1, -1, -1};
  std::array<HallAnchor, 4> anchors_{};
  int radius_bias_ = -1;  // the unmodelled radius's index, -1: none
  bool scales_held_ = false;
  bool radius_considered(int w) const { return radius_bias_ >= 0 && (scale_param_[w] < 0 || scales_held_); }
  std::array<double, 4> radius_anchor_{};  // model spin angle at which the radius's coefficient is 0
  std::array<bool, 4> radius_anchored_{};
  std::array<double, 4> anchored_t_{-1, -1, -1, -1};
  SourceHealth health_;
};

}  // namespace mbo::est::aiding
