// Unit strings as DBC files write them, and the SI units of the measurement channels
// (core/measurement.hpp). Conversions are exact factors; no unit here needs an offset.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "mbobserver/core/measurement.hpp"

namespace mbo::io {

enum class Dimension { count, acceleration, angular_rate, angle, length, speed, pressure, torque };

struct Unit {
  Dimension dimension = Dimension::count;
  double to_base = 1;  // multiply a value in this unit to get the dimension's SI base unit
};

// "deg/s" -> {angular_rate, pi/180}. Known spellings include the degree sign in UTF-8 and
// cp1252 ("°/s"), "m/s^2"/"m/s2"/"m/s²", "km/h"/"kph", "bar"/"kPa"/"psi", "Nm"/"N*m", "g".
// Matching is exact (case matters: "mbar" is not "Mbar"); surrounding blanks are ignored.
std::optional<Unit> find_unit(std::string_view text);

// The unit a channel's values are in: SI except latitude/longitude (degrees).
struct ChannelUnit {
  Dimension dimension;
  double to_base;  // 1 for SI channels, pi/180 for degrees
  std::string_view name;  // "rad/s", "deg", "count", ...
};
ChannelUnit channel_unit(Channel c);
// A second dimension a channel accepts (wheel speeds: m/s at the rolling radius besides rad/s
// of spin); the mapping's unit decides which one its values are in.
std::optional<ChannelUnit> alternative_channel_unit(Channel c);

std::string_view dimension_name(Dimension d);  // "an angular rate", ...

// Every known unit of a dimension, for error messages: "rad/s, deg/s, dps, rpm, ...".
std::string known_units(Dimension d);

}  // namespace mbo::io
