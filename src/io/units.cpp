#include "mbobserver/io/units.hpp"

#include <numbers>

namespace mbo::io {

namespace {

constexpr double kDeg = std::numbers::pi / 180.0;
constexpr double kG = 9.80665;  // standard gravity (CGPM 1901), m/s^2

struct Entry {
  std::string_view text;
  Unit unit;
};

// UTF-8 and cp1252 spellings of the degree and superscript-two signs appear in real DBCs.
constexpr Entry kUnits[] = {
    {"count", {Dimension::count, 1}},
    {"counts", {Dimension::count, 1}},
    {"cnt", {Dimension::count, 1}},
    {"tick", {Dimension::count, 1}},
    {"ticks", {Dimension::count, 1}},
    {"pulse", {Dimension::count, 1}},
    {"pulses", {Dimension::count, 1}},
    {"teeth", {Dimension::count, 1}},
    {"-", {Dimension::count, 1}},
    {"1", {Dimension::count, 1}},

    {"m/s^2", {Dimension::acceleration, 1}},
    {"m/s2", {Dimension::acceleration, 1}},
    {"m/s\xC2\xB2", {Dimension::acceleration, 1}},
    {"m/s\xB2", {Dimension::acceleration, 1}},
    {"m/s/s", {Dimension::acceleration, 1}},
    {"m/(s^2)", {Dimension::acceleration, 1}},
    {"mps2", {Dimension::acceleration, 1}},
    {"g", {Dimension::acceleration, kG}},
    {"mg", {Dimension::acceleration, kG / 1000}},

    {"rad/s", {Dimension::angular_rate, 1}},
    {"mrad/s", {Dimension::angular_rate, 1e-3}},
    {"deg/s", {Dimension::angular_rate, kDeg}},
    {"dps", {Dimension::angular_rate, kDeg}},
    {"\xC2\xB0/s", {Dimension::angular_rate, kDeg}},
    {"\xB0/s", {Dimension::angular_rate, kDeg}},
    {"rpm", {Dimension::angular_rate, 2 * std::numbers::pi / 60}},

    {"rad", {Dimension::angle, 1}},
    {"mrad", {Dimension::angle, 1e-3}},
    {"deg", {Dimension::angle, kDeg}},
    {"degree", {Dimension::angle, kDeg}},
    {"degrees", {Dimension::angle, kDeg}},
    {"\xC2\xB0", {Dimension::angle, kDeg}},
    {"\xB0", {Dimension::angle, kDeg}},

    {"m", {Dimension::length, 1}},
    {"cm", {Dimension::length, 0.01}},
    {"mm", {Dimension::length, 0.001}},
    {"km", {Dimension::length, 1000}},
    {"ft", {Dimension::length, 0.3048}},

    {"m/s", {Dimension::speed, 1}},
    {"cm/s", {Dimension::speed, 0.01}},
    {"km/h", {Dimension::speed, 1 / 3.6}},
    {"kph", {Dimension::speed, 1 / 3.6}},
    {"kmh", {Dimension::speed, 1 / 3.6}},
    {"mph", {Dimension::speed, 0.44704}},
    {"kn", {Dimension::speed, 1852.0 / 3600}},
    {"knot", {Dimension::speed, 1852.0 / 3600}},
    {"knots", {Dimension::speed, 1852.0 / 3600}},

    {"Pa", {Dimension::pressure, 1}},
    {"hPa", {Dimension::pressure, 100}},
    {"kPa", {Dimension::pressure, 1000}},
    {"MPa", {Dimension::pressure, 1e6}},
    {"mbar", {Dimension::pressure, 100}},
    {"bar", {Dimension::pressure, 1e5}},
    {"psi", {Dimension::pressure, 6894.757293168361}},

    {"Nm", {Dimension::torque, 1}},
    {"N*m", {Dimension::torque, 1}},
    {"N.m", {Dimension::torque, 1}},
    {"N m", {Dimension::torque, 1}},
    {"N\xC2\xB7m", {Dimension::torque, 1}},
    {"kNm", {Dimension::torque, 1000}},
};

constexpr std::size_t index_of_channel(Channel c) { return static_cast<std::size_t>(c); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<Unit> find_unit(std::string_view text) {
  text = trim(text);
  for (const auto& e : kUnits)
    if (e.text == text) return e.unit;
  return std::nullopt;
}

ChannelUnit channel_unit(Channel c) {
  switch (c) {
    case Channel::accel_x:
    case Channel::accel_y:
    case Channel::accel_z:
      return {Dimension::acceleration, 1, "m/s^2"};
    case Channel::gyro_x:
    case Channel::gyro_y:
    case Channel::gyro_z:
      return {Dimension::angular_rate, 1, "rad/s"};
    case Channel::wheel_count_fl:
    case Channel::wheel_count_fr:
    case Channel::wheel_count_rl:
    case Channel::wheel_count_rr:
    case Channel::gnss_fix_quality:
    case Channel::gear:
    case Channel::brake_switch:
    case Channel::count:
      return {Dimension::count, 1, "count"};
    case Channel::wheel_speed_fl:
    case Channel::wheel_speed_fr:
    case Channel::wheel_speed_rl:
    case Channel::wheel_speed_rr:
    case Channel::steering_wheel_rate:
      return {Dimension::angular_rate, 1, "rad/s"};
    case Channel::steering_wheel_angle:
    case Channel::steer_angle:
    case Channel::gnss_course:
      return {Dimension::angle, 1, "rad"};
    case Channel::drive_torque_fl:
    case Channel::drive_torque_fr:
    case Channel::drive_torque_rl:
    case Channel::drive_torque_rr:
    case Channel::engine_torque:
      return {Dimension::torque, 1, "N*m"};
    case Channel::brake_pressure_fl:
    case Channel::brake_pressure_fr:
    case Channel::brake_pressure_rl:
    case Channel::brake_pressure_rr:
    case Channel::brake_master_pressure:
      return {Dimension::pressure, 1, "Pa"};
    case Channel::gnss_lat:
    case Channel::gnss_lon:
      return {Dimension::angle, kDeg, "deg"};
    case Channel::gnss_alt:
    case Channel::gnss_std_lat:
    case Channel::gnss_std_lon:
    case Channel::gnss_std_alt:
      return {Dimension::length, 1, "m"};
    case Channel::gnss_speed:
    case Channel::vehicle_speed:
      return {Dimension::speed, 1, "m/s"};
  }
  return {Dimension::count, 1, "count"};
}

std::optional<ChannelUnit> alternative_channel_unit(Channel c) {
  // An ABS unit gives wheel speeds as spin (rpm) or as a speed at its rolling radius (km/h).
  if (index_of_channel(c) >= index_of_channel(Channel::wheel_speed_fl) &&
      index_of_channel(c) <= index_of_channel(Channel::wheel_speed_rr))
    return ChannelUnit{Dimension::speed, 1, "m/s"};
  return std::nullopt;
}

std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::count:
      return "a count";
    case Dimension::acceleration:
      return "an acceleration";
    case Dimension::angular_rate:
      return "an angular rate";
    case Dimension::angle:
      return "an angle";
    case Dimension::length:
      return "a length";
    case Dimension::speed:
      return "a speed";
    case Dimension::pressure:
      return "a pressure";
    case Dimension::torque:
      return "a torque";
  }
  return "?";
}

std::string known_units(Dimension d) {
  std::string out;
  for (const auto& e : kUnits) {
    if (e.unit.dimension != d) continue;
    bool ascii = true;
    for (char c : e.text) ascii &= static_cast<unsigned char>(c) < 0x80;
    if (!ascii) continue;
    if (!out.empty()) out += ", ";
    out += e.text;
  }
  return out;
}

}  // namespace mbo::io
