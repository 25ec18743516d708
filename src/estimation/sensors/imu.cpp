#include "mbobserver/estimation/sensors/imu.hpp"

namespace mbo::est {

double GyroSensor::measure(const MeasureContext& c, int row, Gradients* g) const {
  const Eigen::Vector3d u = c.x.segment<3>(f_.u), v = c.x.segment<3>(f_.v), w = c.x.segment<3>(f_.w);
  const Eigen::Vector3d ud = c.xd.segment<3>(f_.u), vd = c.xd.segment<3>(f_.v), wd = c.xd.segment<3>(f_.w);
  const Eigen::Vector3d omega(w.dot(vd), u.dot(wd), v.dot(ud));
  if (g) {
    // Row i of T' times the gradients of (omega_x, omega_y, omega_z), eq. (105).
    const double tx = Tt_(row, 0), ty = Tt_(row, 1), tz = Tt_(row, 2);
    for (int k = 0; k < 3; ++k) {
      g->dq.add(f_.w + k, tx * vd[k]);
      g->dqd.add(f_.v + k, tx * w[k]);
      g->dq.add(f_.u + k, ty * wd[k]);
      g->dqd.add(f_.w + k, ty * u[k]);
      g->dq.add(f_.v + k, tz * ud[k]);
      g->dqd.add(f_.u + k, tz * v[k]);
    }
  }
  // eq. (103): measured as T' omega + b, the bias estimated or constant
  if (g) g->dp.add(bias_param_[row], 1.0);
  return Tt_.row(row).dot(omega) + c.param(bias_param_[row], bias_[row]);
}

double AccelerometerSensor::measure(const MeasureContext& c, int row, Gradients* g) const {
  const Eigen::Matrix3d C = f_.rotation(c.x);
  const Eigen::Vector3d a = mb::evaluate(p_, c.xdd, 3) - g_;
  const Eigen::Vector3d local = C.transpose() * a;  // (u.a, v.a, w.a)
  if (g) {
    const int s[3] = {f_.u, f_.v, f_.w};
    for (int j = 0; j < 3 && attitude_; ++j) {
      const double t = Tt_(row, j);
      if (t == 0) continue;
      for (int k = 0; k < 3; ++k) g->dq.add(s[j] + k, t * a[k]);  // d(e_j . a)/d e_j = a
    }
    push_gradient(p_, C * Tt_.row(row).transpose(), g->dqdd);  // d/d r_P_ddot = C T e_row
  }
  if (g) g->dp.add(bias_param_[row], 1.0);
  return Tt_.row(row).dot(local) + c.param(bias_param_[row], bias_[row]);
}

}  // namespace mbo::est
