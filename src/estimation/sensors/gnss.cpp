#include "mbobserver/estimation/sensors/gnss.hpp"

#include <algorithm>
#include <cmath>

namespace mbo::est {

double GnssPositionSensor::measure(const MeasureContext& c, int row, Gradients* g) const {
  const double latency = std::max(c.lag, 0.0) + c.param(latency_param_, latency_);
  Eigen::Vector3d r = mb::evaluate(antenna_, c.x, 3);
  if (latency != 0 || latency_param_ >= 0 || g) {
    // r(t - L) = r - L v + L^2/2 a: the second-order term is 4.5 cm at 0.1 s in a 9 m/s^2 stop
    const Eigen::Vector3d v = mb::evaluate(antenna_, c.xd, 3), a = mb::evaluate(antenna_, c.xdd, 3);
    r += -latency * v + 0.5 * latency * latency * a;
    if (g) {
      g->dlag = -v[row] + latency * a[row];
      g->dp.add(latency_param_, g->dlag);
    }
  }
  if (g) {
    push_gradient(chassis_only_ ? origin_ : antenna_, Eigen::Vector3d::Unit(row), g->dq);
    if (latency != 0) {
      push_gradient(antenna_, -latency * Eigen::Vector3d::Unit(row), g->dqd);
      push_gradient(antenna_, 0.5 * latency * latency * Eigen::Vector3d::Unit(row), g->dqdd);
    }
  }
  if (error_param_ >= 0 && row < 2) {
    if (g) g->dp.add(error_param_ + row, 1.0);
    return r[row] + c.param(error_param_ + row, 0.0);
  }
  return r[row];
}

double GnssVelocitySensor::measure(const MeasureContext& c, int row, Gradients* g) const {
  // r_dot = r_CH_dot + x u_dot + y v_dot + z w_dot: linear in qd with the same coefficients.
  Eigen::Vector3d v = mb::evaluate(antenna_, c.xd, 3);
  if (g) push_gradient(antenna_, Eigen::Vector3d::Unit(row), g->dqd);
  const double latency = std::max(c.lag, 0.0) + c.param(latency_param_, latency_);
  if (latency != 0 || latency_param_ >= 0) {
    const Eigen::Vector3d a = mb::evaluate(antenna_, c.xdd, 3);
    v -= latency * a;
    if (g) {
      push_gradient(antenna_, -latency * Eigen::Vector3d::Unit(row), g->dqdd);
      g->dp.add(latency_param_, -a[row]);
    }
  }
  if (g) g->dlag = -mb::evaluate(antenna_, c.xdd, 3)[row];
  return v[row];
}

double GnssCourseSensor::measure(const MeasureContext& c, int, Gradients* g) const {
  Eigen::Vector3d v = mb::evaluate(antenna_, c.xd, 3);
  const double latency = std::max(c.lag, 0.0) + c.param(latency_param_, latency_);
  Eigen::Vector3d a = Eigen::Vector3d::Zero();
  if (latency != 0 || latency_param_ >= 0 || g) a = mb::evaluate(antenna_, c.xdd, 3);
  v -= latency * a;  // the course of `latency` ago
  const double s2 = v.x() * v.x() + v.y() * v.y();
  if (g && yaw_ >= 0)
    g->dq.add(yaw_, 1.0);
  else if (g && s2 > 0) {
    const Eigen::Vector3d d(-v.y() / s2, v.x() / s2, 0);  // d atan2 / d (vx, vy)
    push_gradient(antenna_, d, g->dqd);
    if (latency != 0) push_gradient(antenna_, -latency * d, g->dqdd);  // through v - latency a
  }
  // d atan2(Y, X) / d latency with X = vx - latency ax, Y = vy - latency ay
  if (g && s2 > 0) {
    g->dlag = (v.y() * a.x() - v.x() * a.y()) / s2;
    g->dp.add(latency_param_, g->dlag);
  }
  return std::atan2(v.y(), v.x());
}

}  // namespace mbo::est
