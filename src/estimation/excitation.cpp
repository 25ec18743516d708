#include "mbobserver/estimation/excitation.hpp"

#include <cmath>

namespace mbo::est {

Excitation excitation_of(std::string_view p) {
  if (p.starts_with("payload") || p == "slip_stiffness") return Excitation::longitudinal;
  if (p.starts_with("cornering")) return Excitation::lateral;
  return Excitation::always;
}

void ExcitationMonitor::update(double speed, double a_long, double a_lat, double dt) {
  if (!std::isfinite(speed) || !std::isfinite(a_long) || !std::isfinite(a_lat)) return;
  if (!started_) {
    speed_ = speed, a_long_ = a_long, a_lat_ = a_lat;
    started_ = true;
    return;
  }
  const double k = dt > 0 ? 1 - std::exp(-dt / c_.time_constant_s) : 0;
  speed_ += k * (speed - speed_);
  a_long_ += k * (a_long - a_long_);
  a_lat_ += k * (a_lat - a_lat_);
}

bool ExcitationMonitor::excited(Excitation e) const {
  if (!c_.on || e == Excitation::always) return true;
  if (!started_ || std::abs(speed_) < c_.min_speed) return false;
  switch (e) {
    case Excitation::longitudinal:
      return std::abs(a_long_) >= c_.min_accel;
    case Excitation::lateral:
      return std::abs(a_lat_) >= c_.min_accel;
    case Excitation::always:
      break;
  }
  return true;
}

}  // namespace mbo::est
