// Hall-effect wheel sensor (Sinigaglia 2016 4.4): a toothed disc (40 holes in the thesis, 9 degrees
// each) counted on the carrier, so it measures the wheel's spin angle relative to the carrier,
// which is the model's spin coordinate (eqs. (119)-(120)). The counter's quantisation and
// wrap-around are undone by HallUnwrapper before the measurement reaches the filter.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "mbobserver/estimation/sensor.hpp"

namespace mbo::est {

// Where a wheel's counted angle and the model's spin angle were together (the unwrapped
// count's angle and the model's angle at the same moment): with a scale s between them,
// counted = counts + s (model angle - model).
struct HallAnchor {
  double counts = 0, model = 0;
};

// One row per wheel (fl, fr, rl, rr): h_w = the spin coordinate of wheel w. When the wheels'
// scales are estimated, h_w = counts_w + s_w (theta_w - model_w) about the anchors the aiding
// unit keeps: s_w = r_model / r_effective, a tyre 1 % smaller than the vehicle file says turns
// 1 % more often per metre (Sinigaglia 2016 4.4 with the radius as a sensor parameter).
class WheelHallSensor final : public Sensor {
 public:
  explicit WheelHallSensor(const std::array<int, 4>& spin_slots) : slots_(spin_slots) {}
  int rows() const override { return 4; }
  double measure(const MeasureContext& c, int row, Gradients* g) const override {
    const int slot = slots_[row], k = scale_param_[row];
    // Counts that reach the filter L late are the wheel's angle L ago, theta - L omega. Under
    // drive and braking the slip is what a late count hides: 10 ms on a CAN bus taught a slip
    // stiffness 1.25 for 1. First order only, unlike the GNSS rows: the second-order term
    // carries the wheel's spin acceleration, whose vibration took the CAN drive's front Fx
    // 94 -> 184 N (first order: 42 N).
    const double L = std::max(c.lag, 0.0) + latency_;
    const double angle = c.x[slot] - L * c.xd[slot];
    const double s = k < 0 ? 1.0 : c.param(k, 1.0);
    if (g) {
      g->dq.add(slot, s);
      if (L != 0) g->dqd.add(slot, -L * s);
    }
    if (k < 0) return angle;
    const HallAnchor& a = (*anchors_)[row];
    const double turned = angle - a.model;
    if (g) g->dp.add(k, turned);
    return a.counts + s * turned;
  }
  // s: how long after the wheel turned its count reaches the filter (a bus, a gateway)
  void set_latency(double latency_s) { latency_ = latency_s; }
  // The scales are sensor parameters `params` (-1: not estimated), about `anchors`.
  void estimate_scale(const std::array<int, 4>& params, const std::array<HallAnchor, 4>* anchors) {
    scale_param_ = params;
    anchors_ = anchors;
  }

 private:
  std::array<int, 4> slots_;
  double latency_ = 0;
  std::array<int, 4> scale_param_{-1, -1, -1, -1};
  const std::array<HallAnchor, 4>* anchors_ = nullptr;
};

// Turns a wrapping tooth counter into a continuous wheel angle. The model's spin angle is
// defined with its zero at the counter's zero tooth, so a count n says the angle is in
// [n, n + 1) teeth: the measurement is the middle of that interval, unbiased, with the
// uniform quantisation error of one tooth (Sinigaglia 2016 4.4: 9 degrees for 40 holes). The first
// count picks the number of counter wraps that puts it nearest the model's angle; later counts
// add their wrapped difference (a jump of more than half the counter's range between two
// samples cannot be told from a wrap: it is taken as the shorter way round).
class HallUnwrapper {
 public:
  HallUnwrapper(int teeth, std::uint64_t modulus) : teeth_(teeth), modulus_(modulus) {}
  bool started() const { return started_; }
  // Returns the wheel angle (rad) for a new raw count.
  double angle(std::uint32_t count, double model_angle) {
    const double step = 2 * M_PI / teeth_;
    if (!started_) {
      started_ = true;
      const double range = static_cast<double>(modulus_) * step;
      const double first = (count + 0.5) * step;
      total_ = 0;
      offset_ = first + std::round((model_angle - first) / range) * range;
    } else {
      long long d = static_cast<long long>(count) - static_cast<long long>(last_);
      const auto m = static_cast<long long>(modulus_);
      d = ((d % m) + m) % m;
      if (d > m / 2) d -= m;
      total_ += d;
    }
    last_ = count;
    return offset_ + total_ * step;
  }
  void reset() { started_ = false; }
  // Noise of one count: uniform quantisation over one tooth.
  double quantisation_std() const { return 2 * M_PI / teeth_ / std::sqrt(12.0); }

 private:
  int teeth_;
  std::uint64_t modulus_;  // up to 2^32 (a full 32-bit counter)
  bool started_ = false;
  std::uint32_t last_ = 0;
  long long total_ = 0;
  double offset_ = 0;
};

}  // namespace mbo::est
