#include "mbobserver/models/vehicle_outputs.hpp"

#include <cmath>

namespace mbo::models {

using Eigen::Matrix3d;
using Eigen::Vector3d;

Matrix3d chassis_rotation(const Vehicle& v, const Eigen::VectorXd& q) {
  Matrix3d R;
  R.col(0) = q.segment<3>(v.u);
  R.col(1) = q.segment<3>(v.v);
  R.col(2) = q.segment<3>(v.w);
  return R;
}

Vector3d chassis_angular_velocity(const Vehicle& v, const Eigen::VectorXd& q, const Eigen::VectorXd& qd) {
  // omega = 1/2 sum e_k x e_k_dot for an orthonormal triad.
  Vector3d w = Vector3d::Zero();
  for (int b : {v.u, v.v, v.w}) w += q.segment<3>(b).cross(qd.segment<3>(b));
  return 0.5 * w;
}

void vehicle_outputs(const Vehicle& v, const mb::State& s, VehicleOutputs& o) {
  const auto& p = v.params;
  const Eigen::VectorXd& q = s.q;
  const Eigen::VectorXd& qd = s.qd;
  o.t = s.t;
  const Matrix3d R = chassis_rotation(v, q);
  o.position = q.segment<3>(v.P0);
  o.yaw = q[v.yaw];
  o.pitch = q[v.pitch];
  o.roll = q[v.roll];
  o.yaw_rate = qd[v.yaw];
  o.velocity = qd.segment<3>(v.P0);
  o.velocity_body = R.transpose() * o.velocity;
  o.angular_velocity_body = R.transpose() * chassis_angular_velocity(v, q, qd);
  // Whole-vehicle centre of gravity: sprung mass at P0, unsprung masses at the wheel centres.
  Vector3d mr = p.mass_kg * o.position, mv = p.mass_kg * o.velocity;
  for (int i = 0; i < kWheels; ++i) {
    const double mu = p.axles[axle_of(i)].unsprung_mass_kg;
    mr += mu * q.segment<3>(v.wheels[i].C);
    mv += mu * qd.segment<3>(v.wheels[i].C);
  }
  o.cg_position = mr / p.total_mass();
  o.cg_velocity = mv / p.total_mass();
  o.cg_velocity_body = R.transpose() * o.cg_velocity;
  const double c = std::cos(o.yaw), sn = std::sin(o.yaw);
  const double vx = c * o.cg_velocity.x() + sn * o.cg_velocity.y();
  const double vy = -sn * o.cg_velocity.x() + c * o.cg_velocity.y();
  o.speed = std::hypot(vx, vy);
  o.sideslip = o.speed > 0.1 ? std::atan2(vy, vx) : 0.0;
  if (o.speed > 0.1 && vx < 0) o.sideslip = std::atan2(-vy, -vx);  // reversing: angle to -heading

  for (int i = 0; i < kWheels; ++i) {
    const auto& ws = v.wheels[i];
    WheelOutputs& w = o.wheel[i];
    TyreResult tr;
    v.tyres[i]->compute(q, qd, s.u, tr);
    const ContactResult& m = tr.c[tr.main];
    w.slip_ratio = m.kappa;
    w.slip_angle = std::atan(m.tan_alpha);
    // Resultant on the wheel in the frame of the road plane under it (contact 0 is the plane).
    const Vector3d n0 = tr.c[0].contact.normal, ex0 = tr.c[0].ex, ey0 = tr.c[0].ey;
    Vector3d F = Vector3d::Zero();
    for (int k = 0; k < tr.n; ++k) F += tr.c[k].force;
    w.Fx = F.dot(ex0);
    w.Fy = F.dot(ey0);
    w.Fz = F.dot(n0);
    w.travel = q[ws.travel];
    w.travel_rate = qd[ws.travel];
    w.spin_angle = q[ws.spin];
    w.spin_rate = qd[ws.spin];
    w.wheel_speed = tr.Omega;
    w.steer = ws.steer >= 0 ? q[ws.steer] : v.geometry[i].toe;
    w.effective_radius = m.effective_radius;
    w.loaded_radius = m.contact.rho;
    w.contact = tr.Fz_total > 0;
    w.contact_point = m.contact.point;
  }
}

PointKinematics chassis_point_kinematics(const Vehicle& v, const mb::State& s, const Vector3d& point) {
  const Vector3d c = v.chassis_local(point);
  const int base[4] = {v.P0, v.u, v.v, v.w};
  const double coef[4] = {1, c.x(), c.y(), c.z()};
  PointKinematics k;
  k.position.setZero();
  k.velocity.setZero();
  k.acceleration.setZero();
  for (int b = 0; b < 4; ++b) {
    k.position += coef[b] * s.q.segment<3>(base[b]);
    k.velocity += coef[b] * s.qd.segment<3>(base[b]);
    k.acceleration += coef[b] * s.qdd.segment<3>(base[b]);
  }
  const Matrix3d R = chassis_rotation(v, s.q);
  k.velocity_body = R.transpose() * k.velocity;
  k.acceleration_body = R.transpose() * k.acceleration;
  k.specific_force_body = R.transpose() * (k.acceleration - v.model.gravity);
  return k;
}

}  // namespace mbo::models
