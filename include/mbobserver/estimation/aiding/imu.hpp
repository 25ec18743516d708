// IMU aiding (Sinigaglia 2016 4.3): three gyroscopes (eqs. (101)-(109)) and a three-axis
// accelerometer (eqs. (110)-(118)) on the chassis, each axis a scalar row. The unit decides
// whether the accelerometers can inform the filter at all (see use_accelerometers()).
#pragma once

#include <cmath>

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
  // An axis that repeats the same value for this long is stuck (a real sensor's noise moves
  // it every sample); 0: no such check.
  double stuck_after_s = 0.05;
  // The biases the filter estimates, for the fused axes (off unless configured): gyroscopes in
  // rad/s (configured in deg/s), accelerometers in m/s^2. An uncalibrated MEMS gyro's turn-on
  // bias is a fraction of a degree per second; its instability a hundredth.
  EstimateConfig gyro_bias{false, 0.5 * M_PI / 180, 3e-9, -5 * M_PI / 180, 5 * M_PI / 180};
  EstimateConfig accel_bias{false, 0.3, 1e-6, -2, 2};
  // rad/s (configured in deg/s): the gyroscopes' turn-on bias, 1-sigma per fused axis, where
  // it is not estimated. The published sigmas carry what it would do to the estimates (a
  // consider analysis, ErrorEkf::set_unmodelled_biases); the estimates are those of a gyro
  // without one. 0: the gyro is taken as calibrated. The default is an automotive MEMS part's
  // (0.3 deg/s): a gyro nobody calibrated is the common case, and taken as calibrated its bias
  // left the heading flagged valid while 4 sigma off on a quarter of the robustness suite's
  // steps on four drives.
  double gyro_bias_std = 0.3 * M_PI / 180;
  // The gyroscopes' scale-factor error, 1-sigma relative per fused axis (an automotive MEMS
  // part: 0.5-2 %), where it is not estimated: the published sigmas carry it as
  // gyro_bias_std's (coefficient: the measured rate), and so do the learned gyro biases' (a
  // bias learned in turns of one sense takes the scale error for bias). 0: the scale is exact.
  double gyro_scale_std = 0;
  // The scale-factor errors the filter estimates (omega_meas = (1 + s) omega + b), for the fused
  // axes (off unless configured): a fraction. A turn teaches it (its row's d/ds is the rate):
  // the heading the fixes give after a turn of angle psi differs from the gyro's by s psi.
  EstimateConfig gyro_scale{false, 0.005, 1e-10, -0.05, 0.05};
};

// The "imu" section of the observer; `default_gate` is the filter's.
ImuConfig read_imu_config(const JsonReader& section, double default_gate);

class ImuAiding {
 public:
  static constexpr Channel kFirst = Channel::accel_x;
  static constexpr std::size_t kChannels = index_of(Channel::gyro_z) - index_of(kFirst) + 1;

  ImuAiding(const ImuConfig& config, const models::Vehicle& vehicle);

  // The biases and scale factors it estimates, in the error state's sensor block (call before
  // add_models).
  void declare_parameters(SensorParameters& list);
  // Appends the 1-sigma of the gyro biases it neither estimates nor takes as zero
  // (gyro_bias_std); their index in `sigma` is the one its rows carry.
  void declare_unmodelled(std::vector<double>& sigma);
  // The measurement models of accelerometer and gyroscope.
  void add_models(SensorModels& models) const;
  // Whether the accelerometers are fused, given what the filter estimates (`forced`: the
  // observed coordinates, 0..n-1, that carry an acceleration error).
  void use_accelerometers(const std::vector<int>& observed, bool force_error, const std::vector<int>& forced);

  static bool owns(Channel c) { return ChannelSamples<kFirst, kChannels>::owns(c); }
  // Keeps m for the next step unless it is implausible (on its DBC limit, or stuck), which is
  // counted and dropped. False: m is older than the sample held (stale).
  bool hold(const Measurement& m);

  void gather(double t, MeasurementRows& rows);
  void account(const ScalarMeasurement& m, const UpdateResult& u, double t) {
    health_[slot(MeasurementRows::kind(m))].account(m.row, u, t);
  }
  void set_monitor(const MonitorConfig& c) {
    for (auto& h : health_) h.set_monitor(c);
  }
  void restart_monitor() {
    for (auto& h : health_) h.restart_monitor();
  }
  // After a jump of the time base: the samples held are of another time.
  void forget_time() {
    samples_.forget();
    same_since_.fill(-1);
    for (auto& h : health_) h.sampled(-1);
  }
  void update_health(double t);
  const SourceHealth& health(SensorKind kind) const { return health_[slot(kind)]; }
  bool timed_out() const { return health_[0].timed_out() || health_[1].timed_out(); }
  bool accelerometers_fused() const { return use_accel_; }
  // Whether this step's accelerometer samples become rows (true unless closed by the observer:
  // with `brakes.abs_force_error` they measure the chassis's force error only while the car's
  // ABS, modelled, limits a wheel).
  void set_accelerometers_open(bool open) { accel_open_ = open; }
  // While the car stands (StandstillAiding) a gyro axis reads its bias and nothing else: its
  // row is fused only where that bias is learned.
  void set_standing(bool standing) { standing_ = standing; }
  const ImuConfig& config() const { return cfg_; }
  // Gyro axis k's bias in the sensor parameters (-1: not estimated).
  int gyro_bias_param(int k) const { return gyro_bias_param_[k]; }

 private:
  static std::size_t slot(SensorKind k) { return k == SensorKind::accelerometer ? 0 : 1; }
  // Time of the oldest newest-sample over the fused axes (all axes when none is fused): one
  // dead axis is a timeout although the others still send.
  double oldest(Channel first, const std::array<bool, 3>& axes) const;

  ImuConfig cfg_;
  const models::Vehicle& vehicle_;
  ChannelSamples<kFirst, kChannels> samples_;
  // per axis: the value repeated and since when
  std::array<double, kChannels> same_value_{}, same_since_{};
  bool use_accel_ = true;
  bool accel_open_ = true;
  bool standing_ = false;
  std::array<SourceHealth, 2> health_;  // accelerometer, gyroscope
  std::array<int, 3> gyro_bias_param_{-1, -1, -1}, accel_bias_param_{-1, -1, -1}, gyro_scale_param_{-1, -1, -1};
  // per gyro axis: the index of its unmodelled bias and of its unmodelled scale error
  std::array<int, 3> unmodelled_{-1, -1, -1}, unmodelled_scale_{-1, -1, -1};
};

}  // namespace mbo::est::aiding
