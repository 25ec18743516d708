// Sensors of planar mechanisms (issue 4): an encoder on a coordinate, the absolute angle of a
// body's direction, a gyroscope on a planar body and a planar accelerometer at a body point.
#pragma once

#include "mbobserver/estimation/sensor.hpp"

namespace mbo::est {

// h = q_i (an encoder on a joint angle or a linear encoder on a distance coordinate; Sinigaglia 2016
// eq. (56)). `angle` wraps its innovation.
class EncoderSensor final : public Sensor {
 public:
  EncoderSensor(int slot, bool angle) : slot_(slot), angle_(angle) {}
  int rows() const override { return 1; }
  double measure(const MeasureContext& c, int, Gradients* g) const override;
  bool is_angle(int) const override { return angle_; }

 private:
  int slot_;
  bool angle_;
};

// h = atan2(e_y, e_x): absolute angle of the direction e (a body's basis vector) in the plane.
class BodyAngleSensor final : public Sensor {
 public:
  BodyAngleSensor(mb::LinearVec e, double offset) : e_(std::move(e)), offset_(offset) {}
  int rows() const override { return 1; }
  double measure(const MeasureContext& c, int, Gradients* g) const override;
  bool is_angle(int) const override { return true; }

 private:
  mb::LinearVec e_;
  double offset_;
};

// h = (e x e_dot)_z / |e|^2: angular rate of a planar body whose basis vector is e
// (the planar form of Sinigaglia 2016 eq. (101)).
class PlanarGyroSensor final : public Sensor {
 public:
  PlanarGyroSensor(mb::LinearVec e, double bias) : e_(std::move(e)), bias_(bias) {}
  int rows() const override { return 1; }
  double measure(const MeasureContext& c, int, Gradients* g) const override;

 private:
  mb::LinearVec e_;
  double bias_;
};

// h = n . (r_P_ddot - g): specific force along a sensing axis fixed on a planar body, at the
// body point P (Sinigaglia 2016 eqs. (110)-(113) in two dimensions). n = (cos b e + sin b perp(e))/|e|.
class PlanarAccelerometerSensor final : public Sensor {
 public:
  PlanarAccelerometerSensor(mb::LinearVec point, mb::LinearVec e, double axis_angle, Eigen::Vector3d gravity)
      : p_(std::move(point)), e_(std::move(e)), c_(std::cos(axis_angle)), s_(std::sin(axis_angle)), g_(gravity) {}
  int rows() const override { return 1; }
  double measure(const MeasureContext& c, int, Gradients* g) const override;

 private:
  mb::LinearVec p_, e_;
  double c_, s_;
  Eigen::Vector3d g_;
};

}  // namespace mbo::est
