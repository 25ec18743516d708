// Standstill aiding: a zero angular-rate update (ZARU) while the car stands, as PX4's EKF2
// fuses a zero velocity while its vehicle is at rest. A car whose four wheels have not turned
// for still_for_s, whose model is at rest and whose receiver (while its fixes come) says so
// too, cannot rotate: one row per fused gyro axis and step says the chassis's rate about that
// axis is zero. While it stands, the gyroscope's own row of that axis reads its bias and
// nothing else: it is fused only where the bias is learned (it then teaches the bias), and
// left out where it is not, so that the model does not turn with a bias nobody learns.
//
// Without it, the model at rest followed the gyro: the robustness suite's sensors-from-prior
// drive with the learned-car patch (its gyro drifting faster than the patch's random walk)
// turned its heading 0.07 deg in a 6 s stop and 0.27 deg in the 15 s one, while its sigma said
// 0.01-0.02 deg: 43 % of the steps flagged valid while 4 sigma off, half of them at rest.
#pragma once

#include <array>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/aiding/aiding.hpp"
#include "mbobserver/estimation/bias_walk_check.hpp"
#include "mbobserver/models/vehicle.hpp"

namespace mbo::est::aiding {

struct StandstillConfig {
  bool use = true;
  // s the wheels must not have turned: at 0.1 m/s a 40-tooth wheel counts a tooth every 0.5 s
  double still_for_s = 1.0;
  // Hall counts within this many teeth of where the still time began (a counter at a tooth's
  // edge may toggle on the car's vibration)
  int counts_tolerance = 1;
  double max_wheel_speed = 0.05;  // rad/s (or m/s for a signal at a radius): a production bus's
  double max_vehicle_speed = 0.05;  // m/s: its ABS reference speed
  // m/s: the receiver's speed while fixes come (wheels locked on ice turn no tooth), at least
  // 5 of its velocity's sigmas (the speed of a receiver at rest is that noise's magnitude,
  // over 5 sigma once in 3e5 samples), and the model's chassis speed (an outage with locked
  // wheels still leaves the model sliding)
  double max_gnss_speed = 0.2;
  double max_model_speed = 0.2;
  // rad/s: a fused gyro axis reading more than this turns (a car creeping on full lock below
  // what an ABS unit's wheel speeds show: 0.06 rad/s at 0.3 m/s), whatever the wheels say; an
  // automotive MEMS gyro's bias is under half of it
  double max_gyro_rate = 0.02;
  // sigmas of the gyro's noise (imu.gyro_std) by which a fused axis's reading may depart from
  // its mean since the gyro last moved: a car pulling away on a turned wheel turns before the
  // Hall counts or max_gyro_rate show it (the matched mixed drive's stop ending at 77 s: the
  // zero-rate rows held the rate at 0 until a tooth moved and left the heading 1.9 mrad off for
  // 10 s; the bias, whatever it is, is the mean). 0: no such test
  double gyro_change_sigma = 5;
  // rad/s: 1-sigma of each zero-rate row, per step (a car standing with its engine running
  // and people getting in rocks on its springs about a rate of zero mean)
  double rate_std = 1e-4;
  double gate_sigma = 5;
  // what each stop says of a learned gyro bias's random walk (bias_walk_check.hpp)
  BiasWalkCheckConfig bias_walk;
};

// The "standstill" section of the observer; `default_gate` is the filter's.
StandstillConfig read_standstill_config(const JsonReader& section, double default_gate);

class StandstillAiding {
 public:
  // `gyro_axes`: the gyro axes the IMU unit fuses (their zero-rate rows, in the IMU's axes
  // `rotation`); `modulus`: the Hall counters' wrap; `gnss_velocity_std`: the receiver's
  // velocity sigma per axis, m/s; `gyro_std`: the gyro's noise per sample, rad/s.
  StandstillAiding(const StandstillConfig& config, const models::Vehicle& vehicle, const Eigen::Matrix3d& rotation,
                   const std::array<bool, 3>& gyro_axes, const std::array<std::uint64_t, 4>& modulus,
                   double gnss_velocity_std, double gyro_std);

  // The zero-rate rows' model: the chassis's rates in the IMU's axes, without bias.
  void add_models(SensorModels& models) const;
  // Watches the samples that say whether the car moves (Hall counts, wheel and vehicle speeds,
  // the receiver's speed, the gyro's rates); the units that own them still take them.
  void observe(const Measurement& m);
  // Whether the car stands at time t, with the model's chassis speed `model_speed` (m/s):
  // every wheel source that sends has its four wheels still for still_for_s, and the others
  // agree. Sets what standing() returns.
  bool decide(double t, double model_speed);
  bool standing() const { return standing_; }
  // The zero-rate rows of a step where the car stands.
  void gather(MeasurementRows& rows) const;
  void account(const ScalarMeasurement& m, const UpdateResult& u, double t) { health_.account(m.row, u, t); }
  void set_monitor(const MonitorConfig& c) { health_.set_monitor(c); }
  void restart_monitor() { health_.restart_monitor(); }
  // After a jump of the time base: what was seen is of another time.
  void forget_time();
  void update_health(double t);
  const SourceHealth& health() const { return health_; }
  const StandstillConfig& config() const { return cfg_; }

 private:
  // A source's four wheels: since when each is still (-1: never seen), the newest sample's time.
  struct Wheels {
    std::array<double, 4> still_since{-1, -1, -1, -1}, last_t{-1, -1, -1, -1};
    bool still(double t, double still_for, double timeout) const;
  };
  StandstillConfig cfg_;
  const models::Vehicle& vehicle_;
  Eigen::Matrix3d rotation_;
  std::array<bool, 3> axes_;
  std::array<std::uint64_t, 4> modulus_;
  double gnss_speed_limit_ = 0;
  std::array<double, 4> ref_counts_{};
  Wheels hall_, speeds_;
  double speed_still_since_ = -1, speed_last_t_ = -1;  // the vehicle speed signal
  double gnss_moving_t_ = -1, gnss_last_t_ = -1;  // the receiver's last speed over the limit
  double gyro_moving_t_ = -1;  // a fused axis's last reading over max_gyro_rate, or off its mean
  // per axis: the gyro's mean since it last moved, over how many samples (capped: a mean of the
  // last few seconds, as the bias wanders)
  std::array<double, 3> gyro_mean_{};
  std::array<int, 3> gyro_samples_{};
  double gyro_change_limit_ = 0;  // rad/s, gyro_change_sigma x gyro_std
  bool standing_ = false;
  SourceHealth health_;
};

}  // namespace mbo::est::aiding
