#include "mbobserver/estimation/sensors/gnss.hpp"

#include <cmath>

namespace mbo::est {

double GnssPositionSensor::measure(const MeasureContext& c, int row, Gradients* g) const {
  const double latency = c.param(latency_param_, latency_);
  Eigen::Vector3d r = mb::evaluate(antenna_, c.x, 3);
  if (latency != 0 || latency_param_ >= 0) {
    const Eigen::Vector3d v = mb::evaluate(antenna_, c.xd, 3);
    r -= latency * v;
    if (g) g->dp.add(latency_param_, -v[row]);
  }
  if (g) {
    push_gradient(chassis_only_ ? origin_ : antenna_, Eigen::Vector3d::Unit(row), g->dq);
    if (latency != 0) push_gradient(antenna_, -latency * Eigen::Vector3d::Unit(row), g->dqd);
  }
  return r[row];
}

double GnssVelocitySensor::measure(const MeasureContext& c, int row, Gradients* g) const {
  // r_dot = r_CH_dot + x u_dot + y v_dot + z w_dot: linear in qd with the same coefficients.
  Eigen::Vector3d v = mb::evaluate(antenna_, c.xd, 3);
  if (g) push_gradient(antenna_, Eigen::Vector3d::Unit(row), g->dqd);
  const double latency = c.param(latency_param_, latency_);
  if (latency != 0 || latency_param_ >= 0) {
    const Eigen::Vector3d a = mb::evaluate(antenna_, c.xdd, 3);
    v -= latency * a;
    if (g) {
      push_gradient(antenna_, -latency * Eigen::Vector3d::Unit(row), g->dqdd);
      g->dp.add(latency_param_, -a[row]);
    }
  }
  return v[row];
}

double GnssCourseSensor::measure(const MeasureContext& c, int, Gradients* g) const {
  Eigen::Vector3d v = mb::evaluate(antenna_, c.xd, 3);
  const double latency = c.param(latency_param_, latency_);
  Eigen::Vector3d a = Eigen::Vector3d::Zero();
  if (latency != 0 || latency_param_ >= 0) {
    a = mb::evaluate(antenna_, c.xdd, 3);
    v -= latency * a;  // the course of `latency` ago
  }
  const double s2 = v.x() * v.x() + v.y() * v.y();
  if (g && yaw_ >= 0)
    g->dq.add(yaw_, 1.0);
  else if (g && s2 > 0)
    push_gradient(antenna_, Eigen::Vector3d(-v.y() / s2, v.x() / s2, 0), g->dqd);
  // d atan2(Y, X) / d latency with X = vx - latency ax, Y = vy - latency ay
  if (g && s2 > 0) g->dp.add(latency_param_, (v.y() * a.x() - v.x() * a.y()) / s2);
  return std::atan2(v.y(), v.x());
}

}  // namespace mbo::est
