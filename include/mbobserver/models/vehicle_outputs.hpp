// The vehicle's virtual sensors, read from a state of its model: what the observer publishes
// (sideslip, tyre forces and loads, slips, suspension travel) and what its sensor models
// compare with measurements (positions, velocities, angular velocity, the specific force at
// the IMU). Plain structs, computed without heap allocation.
#pragma once

#include <array>

#include <Eigen/Dense>

#include "mbobserver/mb/state.hpp"
#include "mbobserver/models/vehicle.hpp"

namespace mbo::models {

struct WheelOutputs {
  double slip_ratio = 0;  // kappa of the contact carrying most load (+ driving)
  double slip_angle = 0;  // alpha (rad; + gives + Fy)
  double Fx = 0, Fy = 0, Fz = 0;  // N, sum over contacts, in the tyre frame on the road plane
  double travel = 0, travel_rate = 0;  // m, m/s (+ bump)
  double spin_angle = 0, spin_rate = 0;  // theta, theta_dot relative to the carrier
  double wheel_speed = 0;  // spin rate about the axle over ground (rad/s)
  double steer = 0;  // carrier angle about the chassis z axis (rad, toe included)
  double effective_radius = 0, loaded_radius = 0;  // m
  bool contact = false;
  Eigen::Vector3d contact_point = Eigen::Vector3d::Zero();
};

struct VehicleOutputs {
  double t = 0;
  Eigen::Vector3d position = Eigen::Vector3d::Zero();  // P0 (sprung CG), ENU
  double yaw = 0, pitch = 0, roll = 0;  // rad
  Eigen::Vector3d velocity = Eigen::Vector3d::Zero();  // P0, ENU
  Eigen::Vector3d velocity_body = Eigen::Vector3d::Zero();  // P0, chassis axes
  Eigen::Vector3d cg_position = Eigen::Vector3d::Zero();  // whole vehicle, ENU
  Eigen::Vector3d cg_velocity = Eigen::Vector3d::Zero();
  Eigen::Vector3d cg_velocity_body = Eigen::Vector3d::Zero();
  Eigen::Vector3d angular_velocity_body = Eigen::Vector3d::Zero();  // rad/s, chassis axes
  double yaw_rate = 0;  // d(yaw)/dt
  double speed = 0;  // horizontal speed of the whole-vehicle CG
  double sideslip = 0;  // rad, at the whole-vehicle CG, in the yaw frame (ISO 8855); 0 below 0.1 m/s
  std::array<WheelOutputs, kWheels> wheel;
};

void vehicle_outputs(const Vehicle& v, const mb::State& s, VehicleOutputs& out);
inline VehicleOutputs vehicle_outputs(const Vehicle& v, const mb::State& s) {
  VehicleOutputs o;
  vehicle_outputs(v, s, o);
  return o;
}

// Kinematics of a chassis point given in the vehicle frame (an IMU, a GNSS antenna).
// Needs s.qdd for the acceleration (the engine's step leaves consistent accelerations).
struct PointKinematics {
  Eigen::Vector3d position, velocity, acceleration;  // ENU
  Eigen::Vector3d velocity_body, acceleration_body;  // chassis axes
  Eigen::Vector3d specific_force_body;  // what an accelerometer reads: R' (a - g)
};
PointKinematics chassis_point_kinematics(const Vehicle& v, const mb::State& s,
                                         const Eigen::Vector3d& vehicle_frame_point);

// Chassis rotation matrix [u v w] and angular velocity (ENU) from the triad.
Eigen::Matrix3d chassis_rotation(const Vehicle& v, const Eigen::VectorXd& q);
Eigen::Vector3d chassis_angular_velocity(const Vehicle& v, const Eigen::VectorXd& q, const Eigen::VectorXd& qd);

}  // namespace mbo::models
