// What the simulated car's sensors put out, from a state of the truth vehicle model: the
// typed measurements of core/measurement.hpp with noise, rates, quantisation, counter
// wrap-around, GNSS outages and jumps. The experiments feed them to the observer directly;
// mbobserver-sim encodes the same samples into CAN frames, so both paths see one stream.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include <GeographicLib/LocalCartesian.hpp>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/measurement.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_outputs.hpp"

namespace mbo::exp {

struct GnssJump {
  double from = 0, to = 0;  // s
  double east = 0, north = 0;  // m added to the reported position
};

struct SensorSimConfig {
  double lat0 = 43.4940, lon0 = -8.2470, alt0 = 50;  // ENU origin (Sinigaglia 2016 5.2: A Coruna)
  // IMU
  double imu_rate_hz = 500, accel_std = 0.5, gyro_std = 0.0002;
  Eigen::Vector3d imu_position = Eigen::Vector3d::Zero();
  Eigen::Matrix3d imu_rotation = Eigen::Matrix3d::Identity();
  // Hall wheel sensors
  double wheel_rate_hz = 500;
  int teeth = 40;
  std::uint64_t modulus = 65536;
  double wheel_extra_std = 0;  // rad of jitter on top of the quantisation (vibration)
  // GNSS
  double gnss_rate_hz = 50, position_std = 0.02, velocity_std = 0.1;
  Eigen::Vector3d antenna = Eigen::Vector3d::Zero();
  std::vector<std::pair<double, double>> outages;
  std::vector<GnssJump> jumps;
  int fix_quality = 4;
  // Driver inputs on the bus
  double inputs_rate_hz = 100;
};

SensorSimConfig read_sensor_sim_config(const JsonReader& r);

class SensorSim {
 public:
  SensorSim(const models::Vehicle& truth, const SensorSimConfig& c, std::uint64_t seed);

  // The truth's state at the start: the Hall sensors' angles begin at its spin angles.
  void start(const mb::State& truth);
  // Samples due at time t (after the truth stepped to t), appended to `out`. Call it after
  // every step of the truth: the Hall sensors integrate the wheels' spin rates over each step.
  // Without start(), the first call starts the sensors at that state.
  void sample(double t, const mb::State& truth, const models::VehicleInputs& inputs, std::vector<Measurement>& out);

  // The angle (rad) each Hall sensor has turned to: the integral of the wheel's spin rate
  // relative to its carrier, exact for the rate's cubic Hermite interpolant through the
  // truth's rates and accelerations at the steps, independent of the model's own angle.
  const std::array<double, 4>& wheel_angles() const { return angle_; }

  const SensorSimConfig& config() const { return c_; }
  const GeographicLib::LocalCartesian& geodesy() const { return enu_; }

 private:
  bool due(double t, double rate, long& next);
  const models::Vehicle& v_;
  SensorSimConfig c_;
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
  GeographicLib::LocalCartesian enu_;
  long next_imu_ = 0, next_wheel_ = 0, next_gnss_ = 0, next_inputs_ = 0;
  bool started_ = false;
  double last_t_ = 0;
  std::array<double, 4> angle_{}, rate_{}, accel_{};  // Hall angles; spin rates and accelerations at last_t_
  models::VehicleOutputs out_;
};

}  // namespace mbo::exp
