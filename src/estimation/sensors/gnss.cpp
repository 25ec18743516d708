#include "mbobserver/estimation/sensors/gnss.hpp"

#include <cmath>

namespace mbo::est {

double GnssPositionSensor::measure(const MeasureContext& c, int row, Gradients* g) const {
  Eigen::Vector3d r = mb::evaluate(antenna_, c.x, 3);
  if (latency_ != 0) r -= latency_ * mb::evaluate(antenna_, c.xd, 3);
  if (g) {
    push_gradient(chassis_only_ ? origin_ : antenna_, Eigen::Vector3d::Unit(row), g->dq);
    if (latency_ != 0) push_gradient(antenna_, -latency_ * Eigen::Vector3d::Unit(row), g->dqd);
  }
  return r[row];
}

double GnssVelocitySensor::measure(const MeasureContext& c, int row, Gradients* g) const {
  // r_dot = r_CH_dot + x u_dot + y v_dot + z w_dot: linear in qd with the same coefficients.
  Eigen::Vector3d v = mb::evaluate(antenna_, c.xd, 3);
  if (g) push_gradient(antenna_, Eigen::Vector3d::Unit(row), g->dqd);
  return v[row];
}

double GnssCourseSensor::measure(const MeasureContext& c, int, Gradients* g) const {
  Eigen::Vector3d v = mb::evaluate(antenna_, c.xd, 3);
  const double s2 = v.x() * v.x() + v.y() * v.y();
  if (g && yaw_ >= 0)
    g->dq.add(yaw_, 1.0);
  else if (g && s2 > 0)
    push_gradient(antenna_, Eigen::Vector3d(-v.y() / s2, v.x() / s2, 0), g->dqd);
  return std::atan2(v.y(), v.x());
}

}  // namespace mbo::est
