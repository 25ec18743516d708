// The typed, time-stamped measurement that crosses from the io layer (CAN frames decoded
// with a DBC, NMEA sentences) to the estimator. io knows nothing of the multibody model; the
// estimator knows nothing of CAN: this header is all they share.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mbo {

// Every quantity the observer can receive. Units are SI and fixed here; the signal mapping
// converts DBC units into them (docs/interfaces.md "Configuration").
enum class Channel : std::uint8_t {
  accel_x,  // m/s^2, specific force along the IMU's x axis (gravity included, as sensed)
  accel_y,
  accel_z,
  gyro_x,  // rad/s about the IMU's x axis
  gyro_y,
  gyro_z,
  wheel_count_fl,  // raw Hall tooth counter (wraps at the counter's modulus)
  wheel_count_fr,
  wheel_count_rl,
  wheel_count_rr,
  steer_angle,  // rad, road-wheel steering angle, positive to the left
  drive_torque_fl,  // N*m applied at the wheel, positive forward
  drive_torque_fr,
  drive_torque_rl,
  drive_torque_rr,
  brake_pressure_fl,  // Pa
  brake_pressure_fr,
  brake_pressure_rl,
  brake_pressure_rr,
  gnss_lat,  // deg, WGS84
  gnss_lon,  // deg, WGS84
  gnss_alt,  // m, height above the ellipsoid
  gnss_speed,  // m/s, speed over ground
  gnss_course,  // rad, course over ground, clockwise from true north, in [0, 2*pi)
  gnss_std_lat,  // m, 1-sigma (NMEA GST)
  gnss_std_lon,
  gnss_std_alt,
  gnss_fix_quality,  // 0 none, 1 GPS, 2 DGPS, 4 RTK fixed, 5 RTK float (NMEA GGA)
  // What a production car's ABS/ESC, steering and powertrain units broadcast (issue 20):
  wheel_speed_fl,  // rad/s of spin, or m/s at the ECU's rolling radius (the mapping's unit says which)
  wheel_speed_fr,
  wheel_speed_rl,
  wheel_speed_rr,
  vehicle_speed,  // m/s, the ABS reference speed (from the wheels)
  steering_wheel_angle,  // rad at the steering wheel, positive to the left
  steering_wheel_rate,  // rad/s at the steering wheel
  engine_torque,  // N*m at the engine or motor shaft
  gear,  // the gear engaged, as the bus codes it (observer.driveline.gear_ratios says each ratio)
  brake_master_pressure,  // Pa in the master cylinder
  brake_switch,  // 0 released, else pressed
  count
};

inline constexpr std::size_t kChannelCount = static_cast<std::size_t>(Channel::count);

// Times closer than this are the same instant: a sample stamped at a step's time belongs to
// that step. Logs resolve 1 us; a double at UNIX-epoch seconds resolves 0.24 us, so the step
// times t0 + k dt and the parsed stamps may differ by an ulp or two.
inline constexpr double kSameInstant_s = 5e-7;

// Names used in configuration files and JSON output.
inline constexpr std::array<std::string_view, kChannelCount> kChannelNames = {"accel_x",
                                                                              "accel_y",
                                                                              "accel_z",
                                                                              "gyro_x",
                                                                              "gyro_y",
                                                                              "gyro_z",
                                                                              "wheel_count_fl",
                                                                              "wheel_count_fr",
                                                                              "wheel_count_rl",
                                                                              "wheel_count_rr",
                                                                              "steer_angle",
                                                                              "drive_torque_fl",
                                                                              "drive_torque_fr",
                                                                              "drive_torque_rl",
                                                                              "drive_torque_rr",
                                                                              "brake_pressure_fl",
                                                                              "brake_pressure_fr",
                                                                              "brake_pressure_rl",
                                                                              "brake_pressure_rr",
                                                                              "gnss_lat",
                                                                              "gnss_lon",
                                                                              "gnss_alt",
                                                                              "gnss_speed",
                                                                              "gnss_course",
                                                                              "gnss_std_lat",
                                                                              "gnss_std_lon",
                                                                              "gnss_std_alt",
                                                                              "gnss_fix_quality",
                                                                              "wheel_speed_fl",
                                                                              "wheel_speed_fr",
                                                                              "wheel_speed_rl",
                                                                              "wheel_speed_rr",
                                                                              "vehicle_speed",
                                                                              "steering_wheel_angle",
                                                                              "steering_wheel_rate",
                                                                              "engine_torque",
                                                                              "gear",
                                                                              "brake_master_pressure",
                                                                              "brake_switch"};

inline constexpr std::string_view channel_name(Channel c) { return kChannelNames[static_cast<std::size_t>(c)]; }

inline std::optional<Channel> channel_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kChannelCount; ++i)
    if (kChannelNames[i] == name) return static_cast<Channel>(i);
  return std::nullopt;
}

// One scalar sample. `t` is the receive time in seconds on the clock of the source (the log's
// timestamps on replay, CLOCK_MONOTONIC-based kernel timestamps live); samples decoded from
// the same frame or sentence share `t`.
struct Measurement {
  double t = 0;
  Channel channel = Channel::count;
  double value = 0;
  std::uint8_t flags = 0;  // kAtLimit
};

// Measurement::flags: the signal sat on its DBC range's minimum or maximum, where a saturated
// sensor or a glitched node leaves it (decoding flags it; the estimator decides what it means).
inline constexpr std::uint8_t kAtLimit = 1;

}  // namespace mbo
