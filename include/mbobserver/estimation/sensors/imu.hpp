// Inertial measurement unit on the chassis (Sinigaglia 2016 4.3): three gyroscopes (eqs. (101)-(109))
// and a three-axis accelerometer (eqs. (110)-(118)), mounted at a chassis point with a
// rotation T (columns: IMU axes in chassis axes).
#pragma once

#include <array>

#include "mbobserver/estimation/sensors/chassis.hpp"

namespace mbo::est {

// omega_chassis = [w . v_dot, u . w_dot, v . u_dot] (eq. (101) with i, j, k = u, v, w),
// measured as T' omega_chassis + bias (eq. (103)), plus s T' omega_chassis for an estimated
// scale-factor error s above a rate of kScaleKnee (GyroSensor::measure).
class GyroSensor final : public Sensor {
 public:
  GyroSensor(ChassisFrame f, const Eigen::Matrix3d& T, const Eigen::Vector3d& bias)
      : f_(f), Tt_(T.transpose()), bias_(bias) {}
  int rows() const override { return 3; }
  double measure(const MeasureContext& c, int row, Gradients* g) const override;
  // The axes whose bias the filter estimates: their sensor-parameter index (-1: the
  // constant bias given at construction).
  void estimate_bias(const std::array<int, 3>& params) { bias_param_ = params; }
  // The axes whose scale-factor error the filter estimates (-1: the axis reads T' omega exactly).
  void estimate_scale(const std::array<int, 3>& params) { scale_param_ = params; }
  // rad/s (0.57 deg/s): the rate below which the scale's reading fades out
  static constexpr double kScaleKnee = 0.01;

 private:
  ChassisFrame f_;
  Eigen::Matrix3d Tt_;
  Eigen::Vector3d bias_;
  std::array<int, 3> bias_param_{-1, -1, -1}, scale_param_{-1, -1, -1};
  static constexpr double kScaleKnee2 = kScaleKnee * kScaleKnee;
};

// Specific force a = T' C' (r_P_ddot - g) (eqs. (110)-(113)): its dependence on the attitude
// through C is what gives pitch and roll (eqs. (115)-(118)); its dependence on the
// accelerations is used by errorEKF-FE.
class AccelerometerSensor final : public Sensor {
 public:
  // `attitude_jacobian` false: the row is taken to inform the accelerations only (errorEKF-FE),
  // as Sinigaglia 2016 eq. (89) takes the GNSS fix to place the chassis and not to turn it; the
  // measurement itself is unchanged.
  AccelerometerSensor(ChassisFrame f, mb::LinearVec point, const Eigen::Matrix3d& T, const Eigen::Vector3d& gravity,
                      const Eigen::Vector3d& bias, bool attitude_jacobian = true)
      : f_(f), p_(std::move(point)), Tt_(T.transpose()), g_(gravity), bias_(bias), attitude_(attitude_jacobian) {}
  int rows() const override { return 3; }
  double measure(const MeasureContext& c, int row, Gradients* g) const override;
  void estimate_bias(const std::array<int, 3>& params) { bias_param_ = params; }

 private:
  std::array<int, 3> bias_param_{-1, -1, -1};
  ChassisFrame f_;
  mb::LinearVec p_;
  Eigen::Matrix3d Tt_;
  Eigen::Vector3d g_, bias_;
  bool attitude_;
};

}  // namespace mbo::est
