// What a sensor model is to the observer (Sinigaglia 2016 3.3, 4.2-4.4): a measurement function
// h(q, qd, qdd) of the multibody state, one or more scalar rows, with its analytic gradients
// with respect to q, qd and qdd. The filter turns them into a Jacobian row on the independent
// coordinates with the chain rule through R (Sinigaglia 2016 eqs. (85), (106)-(108)):
//   dh/dz = dh/dq R + dh/dqd Rdot,  dh/dzd = dh/dqd R,  dh/dzdd = dh/dqdd R.
// One file per sensor kind under sensors/, in the manner of PX4 EKF2's aiding sources.
#pragma once

#include <array>
#include <string>

#include <Eigen/Dense>

#include "mbobserver/mb/model.hpp"

namespace mbo::est {

using Eigen::VectorXd;

// A sparse gradient over q slots with a fixed capacity (no allocation per evaluation).
struct SparseGradient {
  static constexpr int kCapacity = 64;
  std::array<int, kCapacity> slot{};
  std::array<double, kCapacity> value{};
  int n = 0;
  int nq = 0;  // slots >= nq (constants) are dropped
  void clear(int nq_) { n = 0, nq = nq_; }
  void add(int s, double v) {
    if (s < 0 || s >= nq || v == 0) return;
    for (int i = 0; i < n; ++i)
      if (slot[i] == s) {
        value[i] += v;
        return;
      }
    if (n == kCapacity) throw std::length_error("SparseGradient capacity exceeded");
    slot[n] = s;
    value[n++] = v;
  }
};

// dp: over the estimated sensor parameters (biases, scale factors, a latency), by index.
struct Gradients {
  SparseGradient dq, dqd, dqdd, dp;
  // d h / d latency, by a sensor whose rows describe the model a latency ago (GNSS): the
  // coefficient of a latency it is not told (ScalarMeasurement::unmodelled_per_lag)
  double dlag = 0;
  void clear(int nq, int np = SparseGradient::kCapacity) {
    dq.clear(nq), dqd.clear(nq), dqdd.clear(nq), dp.clear(np);
    dlag = 0;
  }
};

// The model state a sensor reads: x = [q; constants], xd = [qd; 0], xdd = [qdd; 0], and the
// current values of the estimated sensor parameters (null: none are estimated).
struct MeasureContext {
  const mb::Model& model;
  const VectorXd& x;
  const VectorXd& xd;
  const VectorXd& xdd;
  const VectorXd* params = nullptr;
  // How long before the model's time the sample was received (its age when the step fuses it),
  // s; a sensor with a latency adds it. < 0: none given.
  double lag = -1;
  // Parameter k's value, or `fallback` when it is not estimated (k < 0).
  double param(int k, double fallback) const { return k >= 0 && params ? (*params)[k] : fallback; }
};

class Sensor {
 public:
  virtual ~Sensor() = default;
  virtual int rows() const = 0;
  // Predicted measurement of `row`; fills `g` (already cleared) when it is not null.
  virtual double measure(const MeasureContext& c, int row, Gradients* g) const = 0;
  // Angle rows: innovations are wrapped to (-pi, pi].
  virtual bool is_angle(int /*row*/) const { return false; }
};

inline double wrap_angle(double a) {
  a = std::remainder(a, 2 * M_PI);
  return a <= -M_PI ? a + 2 * M_PI : a;
}

}  // namespace mbo::est
