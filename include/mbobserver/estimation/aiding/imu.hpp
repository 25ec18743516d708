// IMU aiding (Sinigaglia 2016 4.3): three gyroscopes (eqs. (101)-(109)) and a three-axis
// accelerometer (eqs. (110)-(118)) on the chassis, each axis a scalar row. The unit decides
// whether the accelerometers can inform the filter at all (see use_accelerometers()).
#pragma once

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/aiding/aiding.hpp"
#include "mbobserver/models/vehicle.hpp"

namespace mbo::est::aiding {

struct ImuConfig {
  Eigen::Vector3d position = Eigen::Vector3d::Zero();  // vehicle frame, m
  Eigen::Matrix3d rotation = Eigen::Matrix3d::Identity();  // IMU axes in chassis axes
  double accel_std = 0.5, gyro_std = 0.0002;
  bool use_accel = true, use_gyro = true;
  // Which axes are fused. A row whose Jacobian on the observed coordinates is tiny (the roll
  // rate when roll is left to the model) would turn its noise into huge corrections of the
  // coordinates it barely touches: leave such axes out.
  std::array<bool, 3> gyro_axes{true, true, true}, accel_axes{true, true, true};
  bool accel_attitude = true;  // false: accelerometers inform accelerations only (FE)
  double timeout_s = 0.05;
  double gate_sigma = 5;
};

// The "imu" section of the observer; `default_gate` is the filter's.
ImuConfig read_imu_config(const JsonReader& section, double default_gate);

class ImuAiding {
 public:
  static constexpr Channel kFirst = Channel::accel_x;
  static constexpr std::size_t kChannels = index_of(Channel::gyro_z) - index_of(kFirst) + 1;

  ImuAiding(const ImuConfig& config, const models::Vehicle& vehicle);

  // The measurement models of accelerometer and gyroscope.
  void add_models(SensorModels& models) const;
  // Whether the accelerometers are fused, given what the filter estimates (`forced`: the
  // observed coordinates, 0..n-1, that carry an acceleration error).
  void use_accelerometers(const std::vector<int>& observed, bool force_error, const std::vector<int>& forced);

  static bool owns(Channel c) { return ChannelSamples<kFirst, kChannels>::owns(c); }
  bool hold(const Measurement& m) { return samples_.hold(m); }

  void gather(double t, MeasurementRows& rows);
  void account(SensorKind kind, const UpdateResult& u) { health_[slot(kind)].account(u); }
  void update_health(double t);
  const SourceHealth& health(SensorKind kind) const { return health_[slot(kind)]; }
  bool timed_out() const { return health_[0].timed_out() || health_[1].timed_out(); }
  bool accelerometers_fused() const { return use_accel_; }
  const ImuConfig& config() const { return cfg_; }

 private:
  static std::size_t slot(SensorKind k) { return k == SensorKind::accelerometer ? 0 : 1; }
  // Time of the oldest newest-sample over the fused axes (all axes when none is fused): one
  // dead axis is a timeout although the others still send.
  double oldest(Channel first, const std::array<bool, 3>& axes) const;

  ImuConfig cfg_;
  const models::Vehicle& vehicle_;
  ChannelSamples<kFirst, kChannels> samples_;
  bool use_accel_ = true;
  std::array<SourceHealth, 2> health_;  // accelerometer, gyroscope
};

}  // namespace mbo::est::aiding
