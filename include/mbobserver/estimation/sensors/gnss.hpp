// GNSS aiding of a vehicle (Sinigaglia 2016 4.2): antenna position with its lever arm (eqs. (83)-(89)),
// antenna velocity from speed and course (eqs. (90)-(94)), and course over ground. The model's
// global frame is the local East-North-Up frame of the fix's origin (eqs. (80)-(82); the
// conversion is GeographicLib's LocalCartesian, done before the measurement reaches here).
#pragma once

#include "mbobserver/estimation/sensors/chassis.hpp"

namespace mbo::est {

// h = r_antenna = r_CH + C lever (3 rows: east, north, up). The full Jacobian includes the
// lever-arm term through u, v, w; `chassis_only` reproduces the thesis's choice (eq. (89)) of
// correcting the chassis position only.
class GnssPositionSensor final : public Sensor {
 public:
  // `latency`: the fix describes where the antenna was that long before it was received, and
  // the sample's age at the step (MeasureContext::lag) adds to it: the model's antenna is moved
  // back by L v - L^2/2 a over the whole lag L.
  GnssPositionSensor(mb::LinearVec antenna, bool chassis_only, mb::LinearVec chassis_origin, double latency = 0)
      : antenna_(std::move(antenna)),
        origin_(std::move(chassis_origin)),
        chassis_only_(chassis_only),
        latency_(latency) {}
  int rows() const override { return 3; }
  double measure(const MeasureContext& c, int row, Gradients* g) const override;
  // The latency is estimated as sensor parameter `param` (d h / d latency = -v_antenna).
  void estimate_latency(int param) { latency_param_ = param; }
  // The receiver's east and north error are sensor parameters `param` and `param` + 1: h += e.
  void estimate_error(int param) { error_param_ = param; }

 private:
  mb::LinearVec antenna_, origin_;
  bool chassis_only_;
  double latency_;
  int latency_param_ = -1, error_param_ = -1;
};

// h = horizontal velocity of the antenna (2 rows: east, north), with the lever-arm velocity
// terms of eq. (94). The receiver's speed and course are turned into these two components.
// With a latency (configured, or estimated as a sensor parameter) the receiver's velocity is
// that of `latency` ago: h = v - latency a, to first order.
class GnssVelocitySensor final : public Sensor {
 public:
  explicit GnssVelocitySensor(mb::LinearVec antenna, double latency = 0, int latency_param = -1)
      : antenna_(std::move(antenna)), latency_(latency), latency_param_(latency_param) {}
  int rows() const override { return 2; }
  double measure(const MeasureContext& c, int row, Gradients* g) const override;

 private:
  mb::LinearVec antenna_;
  double latency_;
  int latency_param_;
};

// Course over ground as a heading measurement (Sinigaglia 2016 4.2.4), without pretending that course
// and yaw are equal (eqs. (95)-(96)): h = atan2(v_N, v_E) of the model's antenna, that is the
// model's yaw plus its own sideslip at the antenna, so the innovation compares like with like.
// With `yaw_slot` given, the Jacobian row is that of the yaw alone (the sideslip taken from the
// model, as known): the course then turns into a yaw correction, which is what makes the
// heading observable to an errorEKF whose transition knows nothing of tyres. Without it the
// row is the exact one on the antenna's velocity. Only meaningful above a speed, which the
// caller enforces.
class GnssCourseSensor final : public Sensor {
 public:
  explicit GnssCourseSensor(mb::LinearVec antenna, int yaw_slot = -1, double latency = 0, int latency_param = -1)
      : antenna_(std::move(antenna)), yaw_(yaw_slot), latency_(latency), latency_param_(latency_param) {}
  int rows() const override { return 1; }
  double measure(const MeasureContext& c, int row, Gradients* g) const override;
  bool is_angle(int) const override { return true; }

 private:
  mb::LinearVec antenna_;
  int yaw_;
  double latency_;
  int latency_param_;
};

// Converts a receiver's course over ground (clockwise from true north, rad) to the model's
// heading convention (counter-clockwise from east).
inline double course_to_heading(double cog) { return wrap_angle(M_PI / 2 - cog); }

}  // namespace mbo::est
