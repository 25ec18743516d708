// What one estimator step hands to the publisher: the corrected model's state, the virtual
// sensors, their 1-sigma, health and latency. Plain data with fixed size, so it crosses the
// estimator -> I/O queue without allocation. Serialised as `mbobserver.estimate/1`
// (docs/interfaces.md, docs/estimate.schema.json).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace mbo {

// Wheels are always ordered front-left, front-right, rear-left, rear-right.
using PerWheel = std::array<double, 4>;
inline constexpr std::array<std::string_view, 4> kWheelNames = {"fl", "fr", "rl", "rr"};

// Aiding sources with their own gate, counters and timeout (PX4 EKF2 style).
enum class SensorKind : std::uint8_t {
  gnss_position,
  gnss_velocity,
  gnss_course,
  accelerometer,
  gyroscope,
  wheel_hall,
  wheel_speed,  // a production car's wheel speeds (and the spin-angle hold without Hall counts)
  vehicle_speed,  // its ABS reference speed
  standstill,  // the zero angular-rate rows while the car stands (aiding/standstill.hpp)
  count
};
inline constexpr std::size_t kSensorKindCount = static_cast<std::size_t>(SensorKind::count);
inline constexpr std::array<std::string_view, kSensorKindCount> kSensorKindNames = {
    "gnss_pos", "gnss_vel", "gnss_course", "accel", "gyro", "wheels", "wheel_speeds", "vehicle_speed", "standstill"};

struct SensorHealth {
  double age_ms = -1;  // since the newest sample was received; -1: never received
  std::uint64_t fused = 0;  // scalar measurements fused since start
  std::uint64_t rejected = 0;  // scalar measurements rejected by the innovation gate
  double test_ratio = 0;  // low-pass filtered (innovation^2 / S) / gate threshold; > 1 rejects
  bool timed_out = true;  // no sample within the sensor's timeout
  // Consistency monitor: the largest over the rows of the low-passed normalised innovation
  // squared (1 for a consistent filter), and whether every row is within its limits.
  double nis = 0;
  bool consistent = true;
  std::uint64_t implausible = 0;  // samples not fused: at their DBC limit, stuck, out of physics
};

// Parameters the observer can learn while driving (self-calibration), in a fixed order so that
// the record keeps its fixed size. Sensor parameters: gyroscope and accelerometer biases (rad/s,
// m/s^2), each wheel's scale r_model / r_effective, the GNSS latency (s), the gyroscopes'
// scale-factor errors (a fraction). Model parameters: the loads (kg) at the front and rear
// payload points of the vehicle file, the tyres' stiffness scales.
inline constexpr std::array<std::string_view, 19> kCalibrationNames = {
    "gyro_bias_x",    "gyro_bias_y",    "gyro_bias_z",    "accel_bias_x",   "accel_bias_y",
    "accel_bias_z",   "wheel_scale_fl", "wheel_scale_fr", "wheel_scale_rl", "wheel_scale_rr",
    "gnss_latency",   "payload_front",  "payload_rear",   "slip_stiffness", "cornering_front",
    "cornering_rear", "gyro_scale_x",   "gyro_scale_y",   "gyro_scale_z"};
inline constexpr std::size_t kCalibrationCount = kCalibrationNames.size();

// The index of a parameter in kCalibrationNames; kCalibrationCount for a name not there.
constexpr std::size_t calibration_index(std::string_view name) {
  for (std::size_t i = 0; i < kCalibrationCount; ++i)
    if (kCalibrationNames[i] == name) return i;
  return kCalibrationCount;
}

struct Calibration {
  bool estimated = false;  // only estimated parameters are published
  bool converged = false;  // its 1-sigma is below the level that counts as learned
  double value = 0, std = 0;
};

// Fault bits of EstimateRecord::faults.
enum Fault : std::uint32_t {
  kFaultNone = 0,
  kFaultModelStepFailed = 1u << 0,  // the MB step did not converge this step
  kFaultDiverged = 1u << 1,  // NaN / negative variance / bound exceeded -> reset
  kFaultReset = 1u << 2,  // the filter was re-initialised this step
  kFaultGnssTimeout = 1u << 3,
  kFaultImuTimeout = 1u << 4,
  kFaultWheelTimeout = 1u << 5,
  kFaultInputTimeout = 1u << 6,  // steering / torque / brake inputs are stale
  kFaultCorrectionFailed = 1u << 7,  // the kinematic correction did not converge
  kFaultInputImplausible = 1u << 8,  // an input is held at its last plausible value
  kFaultInconsistent = 1u << 9,  // a fused source's innovations disagree with the model
  kFaultTimeJump = 1u << 10,  // the time base jumped: the observer starts again from the fixes
  // the sources forced a second reset within validity.reset_window_s: the model does not hold
  // them (a car or sensor the configuration does not describe), no output but the attitude is
  // valid until it has held them for that long
  kFaultRepeatedReset = 1u << 11,
};
inline constexpr std::array<std::string_view, 12> kFaultNames = {
    "model_step_failed", "diverged",      "reset",         "gnss_timeout",
    "imu_timeout",       "wheel_timeout", "input_timeout", "correction_failed",
    "input_implausible", "inconsistent",  "time_jump",     "repeated_reset"};

// Which published outputs may be trusted now.
struct Validity {
  bool position = false;  // GNSS fused recently, or dead reckoning within its bound
  bool heading = false;
  bool velocity = false;
  bool attitude = false;
  bool virtual_sensors = false;  // sideslip, slips, travels, wheel speeds, accelerations
  // the tyre forces: virtual_sensors and every std.tyre_fx and std.tyre_fy under
  // validity.max_tyre_force_std, the payload's uncertainty included (a load not known is a
  // force not known: a tyre's force at a given slip scales with its load)
  bool tyre_forces = false;
  // the tyre loads: virtual_sensors and every std.tyre_fz under validity.max_tyre_load_std,
  // the payload's uncertainty included (a car whose load is not known has loads not known)
  bool tyre_loads = false;
};

struct EstimateRecord {
  std::uint64_t seq = 0;
  double t = 0;  // estimator time, s (the step's time on the source clock)
  double t_wall = 0;  // wall clock (UNIX seconds) when the step finished

  // Chassis reference point in the local East-North-Up frame; angles ZYX (yaw about Up).
  double x = 0, y = 0, z = 0;
  double yaw = 0, pitch = 0, roll = 0;
  double vx = 0, vy = 0, vz = 0;  // ENU velocity of the reference point
  double v_long = 0, v_lat = 0;  // same velocity in the chassis frame (forward, left)
  double yaw_rate = 0;
  // Acceleration of the reference point in the chassis frame (forward, left), m/s^2, and the
  // yaw acceleration, rad/s^2.
  double a_long = 0, a_lat = 0, yaw_accel = 0;
  // The reference point in WGS84 (deg, deg, m above the ellipsoid), and the origin of the
  // East-North-Up frame x, y, z are in.
  double lat = 0, lon = 0, alt = 0;
  double origin_lat = 0, origin_lon = 0, origin_alt = 0;

  // Virtual sensors, evaluated on the corrected model.
  double sideslip_deg = 0;  // at the centre of gravity
  PerWheel tyre_fx{}, tyre_fy{}, tyre_fz{};  // N, in the tyre's road frame
  PerWheel slip_ratio{}, slip_angle_deg{};
  PerWheel suspension_travel{};  // m, positive in compression from the design position
  PerWheel wheel_spin_angle{}, wheel_speed{};  // spin angle (rad) and rate (rad/s) relative to the carrier
  double friction = 0;  // road friction the tyres compute with (estimated, or as configured)
  double mass = 0;  // kg: the vehicle file's mass and the payload estimated (or none)

  // 1-sigma from the filter covariance (propagated through the model where needed).
  double std_x = 0, std_y = 0, std_yaw = 0, std_vx = 0, std_vy = 0, std_sideslip_deg = 0;
  double std_friction = -1;  // -1: the friction is not estimated
  // 1-sigma of every other published virtual sensor and of the accelerations, propagated from
  // the covariance through each output's Jacobian (estimation/output_sigma.hpp); -1: unknown.
  PerWheel std_tyre_fx{}, std_tyre_fy{}, std_tyre_fz{}, std_slip_ratio{}, std_slip_angle_deg{};
  PerWheel std_suspension_travel{}, std_wheel_spin_angle{}, std_wheel_speed{};
  double std_a_long = -1, std_a_lat = -1, std_yaw_accel = -1;

  bool valid = false;  // all of `validity` and no fault that invalidates the estimate
  Validity validity{};
  std::uint32_t faults = 0;
  std::uint64_t resets = 0;
  std::array<SensorHealth, kSensorKindCount> sensors{};
  std::array<Calibration, kCalibrationCount> calibration{};

  // Latency, microseconds: newest frame used -> step start, step compute, step end -> sent.
  // The estimator fills the first two; the publisher fills step_to_send_us just before the
  // datagram is handed to the kernel, from step_end_mono_ns.
  double frame_to_step_us = 0, step_compute_us = 0, step_to_send_us = 0;
  double wakeup_lateness_us = 0;  // step start after its fixed-step deadline (status only)
  std::int64_t step_end_mono_ns = 0;  // CLOCK_MONOTONIC at the end of the step; 0: unknown
};

}  // namespace mbo
