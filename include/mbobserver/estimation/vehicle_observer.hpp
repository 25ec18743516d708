// The observer of Sinigaglia 2016 ch. 4 on the 3-D vehicle: the multibody model of models/vehicle
// corrected by errorEKF (or errorEKF-FE) from GNSS (position with lever arm, velocity, course),
// a chassis IMU (three gyroscopes, three accelerometers) and four Hall wheel sensors, each at
// its own rate (multirate: an absent sample is simply not fused). Robustness in the manner of
// PX4's EKF2: a gate per measurement with counters and a filtered test ratio per sensor,
// timeouts, bounded covariance, divergence detection with a counted re-initialisation from the
// sensors, and a validity flag per published output. The daemon and the experiments drive the
// same class with the same typed measurements.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <GeographicLib/LocalCartesian.hpp>

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/measurement.hpp"
#include "mbobserver/estimation/observer.hpp"
#include "mbobserver/estimation/sensors/wheel_hall.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_outputs.hpp"

namespace mbo::est {

struct GnssConfig {
  Eigen::Vector3d antenna = Eigen::Vector3d::Zero();  // vehicle frame, m
  double latency_s = 0;
  double position_std = 0.02, velocity_std = 0.1;  // used when the receiver gives no sigma
  bool use_position = true, use_velocity = true, use_course = true, use_gst = true;
  bool use_altitude = true;  // the vertical row of the fix (leave out when z is not observed)
  bool chassis_only = false;  // Sinigaglia 2016 eq. (89): correct the chassis position only
  double course_min_speed = 3.0;  // m/s; below it the course says nothing
  // rad, 1 sigma of the model's sideslip that turns course into heading: added to the course
  // row's variance (the model's sideslip error is in the heading it gives)
  double course_sideslip_std = 0.017453292519943295;
  double timeout_s = 0.5;
  double gate_sigma = 5;
  double reset_after_rejection_s = 3;  // continuous rejection this long: reset to the fix
  bool origin_from_first_fix = true;
  double lat0 = 0, lon0 = 0, alt0 = 0;
};

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

struct WheelSensorConfig {
  int teeth = 40;
  double angle_std =
      0.0453;  // rad: one tooth of 40, uniform (2 pi / 40 / sqrt(12)); the reader derives it from `teeth`
  std::array<std::uint64_t, 4> modulus{65536, 65536, 65536, 65536};
  bool use = true;
  double timeout_s = 0.1;
  double gate_sigma = 5;
  // A wheel whose counts the gate rejects this long is reset to them (its angle, its speed
  // from the counts, its covariance): ABS cycles and wheel spin outrun any plant noise.
  double reset_after_rejection_s = 0.1;
};

struct ValidityConfig {
  double max_position_std = 1.0;  // m
  double max_yaw_std = 0.0873;  // rad (5 deg)
  double max_velocity_std = 0.5;  // m/s
  double min_speed_for_sideslip = 1.0;
};

struct VehicleObserverConfig {
  std::string filter_type = "errorEKF";
  ObserverSettings settings;
  GnssConfig gnss;
  ImuConfig imu;
  WheelSensorConfig wheels;
  ValidityConfig validity;
  double input_timeout_s = 0.1;
};

// Reads the "observer" section for `vehicle` (observed coordinates by name: x y z yaw pitch
// roll travel_fl.. spin_fl..).
VehicleObserverConfig read_vehicle_observer_config(const JsonReader& section, const models::Vehicle& vehicle);

// Counters of a run.
struct VehicleObserverCounters {
  std::uint64_t steps = 0, resets = 0, model_step_failures = 0, correction_failures = 0;
  std::uint64_t wheel_resets = 0;  // a wheel reset to its Hall counts after rejections
  std::uint64_t samples_stale = 0;  // samples older than the previous step (late)
  std::uint64_t samples_invalid = 0;  // NaN / out of range
  std::uint64_t newton_iterations = 0;  // of the model steps (what a step's time goes with)
};

class VehicleObserver {
 public:
  VehicleObserver(std::shared_ptr<const models::Vehicle> vehicle, const VehicleObserverConfig& config, double dt);

  // Starts at a known pose (experiments that start from the truth).
  void start(const models::VehicleStart& start, double t0);
  bool started() const { return started_; }

  // A new sample: the newest of each channel is kept until a step uses it.
  void push(const Measurement& m);

  // Advances the model to t (one step of dt), fuses the samples not newer than t, corrects,
  // and fills the estimate. Before the first GNSS fix (when not started explicitly) the record
  // is not valid and the model does not move.
  const EstimateRecord& step(double t);

  const EstimateRecord& estimate() const { return rec_; }
  const models::Vehicle& vehicle() const { return *vehicle_; }
  const mb::State& state() const { return obs_->state(); }
  const MbObserver& observer() const { return *obs_; }
  const VehicleObserverCounters& counters() const { return counters_; }
  const models::VehicleOutputs& outputs() const { return out_; }
  // The scalar measurements of the last step, their sensor kinds and what the filter did.
  const std::vector<ScalarMeasurement>& last_measurements() const { return meas_; }
  const std::vector<int>& last_kinds() const { return meas_kind_; }
  const std::vector<UpdateResult>& last_results() const { return results_; }
  // ENU <-> geodetic of the origin in use (valid once started).
  const GeographicLib::LocalCartesian& geodesy() const { return enu_; }

 private:
  enum SensorId { kGnssPos = 0, kGnssVel, kGnssCourse, kGyro, kAccel, kWheel0 };
  struct Sample {
    double t = -1, value = 0;
    bool fresh = false;
  };
  bool take(Channel c, double t, double& value, double& time);
  void gather(double t);
  void try_start_from_gnss(double t);
  void reinitialise(double t, std::uint32_t why);
  void fill_record(double t);
  void account(int kind, const UpdateResult& u);

  std::shared_ptr<const models::Vehicle> vehicle_;
  VehicleObserverConfig cfg_;
  std::unique_ptr<MbObserver> obs_;
  GeographicLib::LocalCartesian enu_;
  bool origin_set_ = false, started_ = false, use_accel_ = true;

  std::array<Sample, kChannelCount> samples_{};
  std::array<std::optional<HallUnwrapper>, 4> hall_;
  std::array<double, 4> wheel_rejected_since_{-1, -1, -1, -1};
  std::array<double, 4> hall_prev_angle_{}, hall_prev_t_{-1, -1, -1, -1}, hall_rate_{};
  void reset_wheel(int w);
  models::VehicleInputs inputs_{};
  double last_steer_ = 0, last_steer_t_ = -1, last_input_t_ = -1;

  std::vector<ScalarMeasurement> meas_;
  std::vector<int> meas_kind_;
  std::vector<UpdateResult> results_;
  std::array<double, kSensorKindCount> last_sample_t_{};
  std::array<double, kChannelCount> channel_last_t_{};  // time of the last sample taken per channel
  std::array<double, kSensorKindCount> tr_max_{};
  double gnss_rejected_since_ = -1, last_fix_e_ = 0, last_fix_n_ = 0, last_fix_u_ = 0, last_fix_t_ = -1;
  double last_gnss_speed_ = 0, last_gnss_course_ = 0, last_fix_quality_ = 1;
  double gst_e_ = -1, gst_n_ = -1, gst_u_ = -1;
  bool have_course_ = false;
  std::uint32_t faults_ = 0;
  double t_ = 0;
  EstimateRecord rec_{};
  models::VehicleOutputs out_{};
  VehicleObserverCounters counters_{};
};

}  // namespace mbo::est
