// What the simulated car's sensors put out, from a state of the truth vehicle model: the
// typed measurements of core/measurement.hpp with noise, rates, quantisation, counter
// wrap-around, GNSS outages and jumps, and the error models of sensor_errors.hpp (IMU biases,
// bias instability, scale factors, cross-axis sensitivity and saturation; GNSS latency,
// accuracy classes with a time-correlated error, an optimistic or pessimistic reported sigma,
// multipath jumps; the tone wheel's tooth spacing; the sensors' own clocks and latencies, and
// the bus's receive-timestamp jitter and dropped frames). docs/simulation.md gives the
// equations. The experiments feed the samples to the observer directly; mbobserver-sim encodes
// the same samples into CAN frames, so both paths see one stream.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <GeographicLib/LocalCartesian.hpp>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/measurement.hpp"
#include "mbobserver/experiment/sensor_errors.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_outputs.hpp"

namespace mbo::exp {

struct GnssJump {
  double from = 0, to = 0;  // s
  double east = 0, north = 0;  // m added to the reported position
};

// When a sensor samples, and when what it sampled reaches the bus. Without a clock error the
// sensor samples at the simulation's steps (every 1/rate s); with one it samples at its own
// ticks offset + k / (rate (1 + ppm 1e-6)) and the truth is interpolated between steps.
struct SampleTiming {
  double latency_s = 0;  // from the sample to its frames on the bus
  double latency_jitter_s = 0;  // each sample later still by U(0, jitter) (a receiver's load)
  double clock_ppm = 0;  // the sensor's clock runs fast (+) or slow against the bus's
  double clock_offset_s = 0;  // its first tick
  bool own_clock() const { return clock_ppm != 0 || clock_offset_s != 0; }
};

// Random multipath: jumps start as a Poisson process, each moves the fixes by size_m in a
// random horizontal direction for an exponentially distributed time.
struct GnssMultipath {
  double rate_per_min = 0, size_m = 0, duration_s = 0;
};

struct SensorSimConfig {
  double lat0 = 43.4940, lon0 = -8.2470, alt0 = 50;  // ENU origin (Sinigaglia 2016 5.2: A Coruna)
  // IMU
  double imu_rate_hz = 500, accel_std = 0.5, gyro_std = 0.0002;
  Eigen::Vector3d imu_position = Eigen::Vector3d::Zero();
  Eigen::Matrix3d imu_rotation = Eigen::Matrix3d::Identity();
  ImuTriadErrors accel_errors, gyro_errors;
  SampleTiming imu_timing;
  // Hall wheel sensors
  double wheel_rate_hz = 500;
  int teeth = 40;
  std::uint64_t modulus = 65536;
  double wheel_extra_std = 0;  // rad of jitter on top of the quantisation (vibration)
  double tooth_error_std = 0;  // tooth spacing error, fraction of the pitch (1 sigma)
  SampleTiming wheel_timing;
  // GNSS
  double gnss_rate_hz = 50, position_std = 0.02, velocity_std = 0.1;
  double position_correlation_s = 0;  // Gauss-Markov time of the position error; 0: white
  double reported_std_factor = 1;  // the GST sigma sent is this times the true one
  std::string gnss_class;  // the accuracy class the defaults came from ("" none)
  Eigen::Vector3d antenna = Eigen::Vector3d::Zero();
  std::vector<std::pair<double, double>> outages;
  std::vector<GnssJump> jumps;
  GnssMultipath multipath;
  int fix_quality = 4;
  SampleTiming gnss_timing;  // latency: from the fix's epoch to its frames
  // The fixes reach the observer stamped at their epoch, not their arrival: the daemon's
  // serial NMEA receiver with "stamp": "fix_time" on a host kept on GNSS time. A CAN log
  // cannot carry it (its stamps are arrivals): mbobserver-sim refuses it.
  bool gnss_stamp_fix_time = false;
  // Driver inputs on the bus
  double inputs_rate_hz = 100;
  SampleTiming inputs_timing;
  // The bus
  double can_jitter_s = 0;  // receive timestamps late by U(0, jitter) (in arrival order)
  double can_drop_probability = 0;  // each frame lost with this probability
};

SensorSimConfig read_sensor_sim_config(const JsonReader& r);

// The frames the simulated sensors send, as the shipped DBC (config/can/vehicle.dbc) groups
// the channels: each is dropped, delayed and stamped as one.
enum class SimFrame : std::uint8_t {
  steering,
  drive_torques,
  brake_pressures,
  imu_accel,
  imu_gyro,
  wheel_counts,
  gnss_latitude,
  gnss_longitude,
  gnss_alt_vel,
  gnss_accuracy,
  count
};

class SensorSim {
 public:
  SensorSim(const models::Vehicle& truth, const SensorSimConfig& c, std::uint64_t seed);

  // The truth's state and inputs at the start (t = 0): the Hall sensors' angles begin at its
  // spin angles, and the sensors with clocks of their own interpolate from it until the first
  // step. Without start(), the first sample() starts the sensors at that state.
  void start(const mb::State& truth, const models::VehicleInputs& inputs = {});
  // Samples whose frames arrive by time t (after the truth stepped to t), appended to `out` in
  // the order of their receive times (Measurement::t). Call it after every step of the truth:
  // the Hall sensors integrate the wheels' spin rates over each step.
  void sample(double t, const mb::State& truth, const models::VehicleInputs& inputs, std::vector<Measurement>& out);

  // The angle (rad) each Hall sensor has turned to: the integral of the wheel's spin rate
  // relative to its carrier, exact for the rate's cubic Hermite interpolant through the
  // truth's rates and accelerations at the steps, independent of the model's own angle.
  const std::array<double, 4>& wheel_angles() const { return angle_; }

  const SensorSimConfig& config() const { return c_; }
  const GeographicLib::LocalCartesian& geodesy() const { return enu_; }
  // The gyroscopes' (rad/s) and accelerometers' (m/s^2) biases in the sensor's axes as of the
  // last IMU sample: the turn-on bias plus the in-run Gauss-Markov bias (sensor_errors.hpp).
  Eigen::Vector3d gyro_bias() const;
  Eigen::Vector3d accel_bias() const;
  // Frames lost on the bus so far.
  std::uint64_t dropped_frames() const { return dropped_; }

 private:
  // What a sensor group senses of the truth at one time, before its errors.
  struct Imu {
    Eigen::Vector3d accel = Eigen::Vector3d::Zero(), gyro = Eigen::Vector3d::Zero();
  };
  struct Gnss {
    Eigen::Vector3d position = Eigen::Vector3d::Zero(), velocity = Eigen::Vector3d::Zero();  // antenna, ENU
  };
  struct Signals {
    double t = 0;
    models::VehicleInputs inputs;
    Imu imu;
    std::array<double, 4> wheel{};
    Gnss gnss;
  };
  enum Group { kInputs, kImu, kWheels, kGnss, kGroups };
  struct Pending {
    double bus = 0;  // arrival on the bus
    std::uint64_t order = 0;  // generation order, for a stable sort
    std::uint64_t frame = 0;  // the frame it travels in
    Measurement m;
    double fix = -1;  // >= 0: the measurement is stamped at this epoch, not its arrival
  };

  void sense(Group g, const mb::State& s, const models::VehicleInputs& in, Signals& out) const;
  static Signals interpolate(Group g, const Signals& a, const Signals& b, double t);
  // The group's sample at sample time ts, with its errors, into pending_.
  void emit(Group g, double ts, const Signals& sig);
  void put(SimFrame f, double bus, Channel c, double v);
  bool due(double t, double rate, long& next);

  const models::Vehicle& v_;
  SensorSimConfig c_;
  std::mt19937_64 rng_;  // the white noise of every scenario (IMU, Hall jitter, GNSS)
  std::normal_distribution<double> normal_{0.0, 1.0};
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  GeographicLib::LocalCartesian enu_;
  long next_[kGroups] = {0, 0, 0, 0};
  double rate_[kGroups] = {0, 0, 0, 0};
  SampleTiming timing_[kGroups];
  Signals prev_[kGroups], cur_[kGroups];
  bool started_ = false;
  double last_t_ = 0;
  // Hall angles; spin rates and accelerations at last_t_
  std::array<double, 4> angle_{}, spin_rate_{}, spin_accel_{};
  // error processes, each on its own stream
  ImuBiasDrift accel_drift_, gyro_drift_;
  double last_imu_sample_ = -1;
  std::array<ToothWheel, 4> tone_;
  std::mt19937_64 gnss_rng_, multipath_rng_, bus_rng_, latency_rng_;
  double fix_stamp_ = -1;  // the epoch put() stamps the GNSS group's measurements at (-1: none)
  std::array<GaussMarkov, 3> gnss_error_;
  double last_fix_ = -1;
  double multipath_next_ = -1, multipath_until_ = -1, multipath_e_ = 0, multipath_n_ = 0;
  // frames on their way, in the order they were made
  std::vector<Pending> pending_, arrived_;
  std::uint64_t order_ = 0;
  std::array<bool, static_cast<std::size_t>(SimFrame::count)> drop_now_{};
  std::array<std::uint64_t, static_cast<std::size_t>(SimFrame::count)> frame_id_{};
  std::uint64_t next_frame_ = 0;
  std::vector<std::pair<std::uint64_t, double>> stamps_;  // frame, receive stamp
  double last_receive_ = -1e300;
  std::uint64_t dropped_ = 0;
};

}  // namespace mbo::exp
