// Wheel speeds as a production car's ABS/ESC unit broadcasts them (issue 20): the spin rate
// of each wheel relative to its carrier (the toothed ring turns with the hub, the sensor sits
// on the knuckle), in rad/s, or as a speed at the unit's own rolling radius r (km/h, m/s): the
// ECU multiplies the rate by a constant radius, whatever the tyre's load or slip. Rows:
//   0..3   h_w = k_w * qd[spin_w]           k_w = r_w for a speed, 1 for a spin rate
//   4..7   h_w = q[spin_w]                  the spin angle, for a zero-innovation hold: with no
//          Hall counts nothing measures the angle, whose variance would grow as q t^3 / 3
//          without bound (PX4's EKF2 fuses a fake position for the same reason)
// and the vehicle speed (the ABS reference speed) h = mean_w(k_w qd[spin_w]) over the wheels
// it is computed from.
#pragma once

#include <array>

#include "mbobserver/estimation/sensor.hpp"

namespace mbo::est {

class WheelSpeedSensor final : public Sensor {
 public:
  WheelSpeedSensor(const std::array<int, 4>& spin_slots, const std::array<double, 4>& gain)
      : slots_(spin_slots), gain_(gain) {}
  int rows() const override { return 8; }
  double measure(const MeasureContext& c, int row, Gradients* g) const override {
    if (row >= 4) {
      if (g) g->dq.add(slots_[row - 4], 1.0);
      return c.x[slots_[row - 4]];
    }
    if (g) g->dqd.add(slots_[row], gain_[row]);
    return gain_[row] * c.xd[slots_[row]];
  }

 private:
  std::array<int, 4> slots_;
  std::array<double, 4> gain_;
};

class VehicleSpeedSensor final : public Sensor {
 public:
  // `gain`: the radius each wheel counts with (0: not one of the wheels averaged).
  VehicleSpeedSensor(const std::array<int, 4>& spin_slots, const std::array<double, 4>& gain)
      : slots_(spin_slots), gain_(gain) {
    for (double k : gain_) n_ += k != 0;
  }
  int rows() const override { return 1; }
  double measure(const MeasureContext& c, int, Gradients* g) const override {
    double v = 0;
    for (int w = 0; w < 4; ++w) {
      if (gain_[w] == 0) continue;
      v += gain_[w] * c.xd[slots_[w]] / n_;
      if (g) g->dqd.add(slots_[w], gain_[w] / n_);
    }
    return v;
  }

 private:
  std::array<int, 4> slots_;
  std::array<double, 4> gain_;
  int n_ = 0;
};

}  // namespace mbo::est
