// The 3-D vehicle as an engine model (Sinigaglia 2016 ch. 2.3 and 4.1.1, built with natural
// coordinates plus relative ones):
//
//   chassis   reference point P0 at the sprung mass's centre of gravity and the unit triad
//             u, v, w (its x, y, z axes), tied to the yaw, pitch and roll coordinates by
//             orientation constraints (u v w = Rz(yaw) Ry(pitch) Rx(roll)), so that an
//             observer corrects yaw, pitch and roll directly (Sinigaglia 2016 4.2.4);
//   wheels    centre C on a strut: a line through a chassis point along a chassis-fixed axis,
//             with the travel s (+ bump) as its distance coordinate; the carrier triad (axle a,
//             radial r, s) as combinations of u, v, w with cos/sin factors of the steering
//             angle delta (front; driven from the steering input through the Ackermann
//             geometry); the wheel turns relative to the carrier by the spin angle theta, a
//             rotor coordinate (mb::Rotor: the spin's inertia and its gyroscopic coupling to
//             the carrier), so drive and brake torques on theta react on the chassis and the
//             angle advances by the integral of its rate (what a Hall sensor counts);
//   masses    the chassis (sprung mass, its inertia tensor about P0) and one body per wheel
//             holding the whole unsprung mass at C (wheel, tyre, carrier, half the links) with
//             the spin inertia of the rotating parts; kinematic camber and toe are constant.
//
// Independent coordinates z, in this order: x, y, z of P0; yaw, pitch, roll; the four travels;
// the four spin angles (wheel order FL, FR, RL, RR). 14 DOF; the steering is rheonomic.
#pragma once

#include <array>
#include <limits>
#include <memory>

#include "mbobserver/mb/model.hpp"
#include "mbobserver/mb/state.hpp"
#include "mbobserver/mb/workspace.hpp"
#include "mbobserver/models/tyre.hpp"
#include "mbobserver/models/vehicle_params.hpp"

namespace mbo::models {

struct WheelSlots {
  int C = -1, a = -1, r = -1, s = -1;  // first q slot of each 3-vector
  int travel = -1, spin = -1;  // q slots of the independent coordinates
  int steer = -1;  // q slot of the driven steering angle; -1: not steered
};

// Constant geometry of one wheel (chassis axes, from P0).
struct WheelGeometry {
  Eigen::Vector3d strut_point = Eigen::Vector3d::Zero();  // wheel centre at zero travel
  Eigen::Vector3d strut_axis = Eigen::Vector3d::UnitZ();  // unit, + bump
  double toe = 0;  // static steer angle of the carrier (rad, + nose left)
  double tilt = 0;  // rotation of the carrier about its x axis (rad; left wheel: -camber)
  double static_rolling_radius = 0.3;
};

struct VehicleInputIndex {
  std::array<int, kWheels> steer{-1, -1, -1, -1}, steer_rate{-1, -1, -1, -1},
      steer_accel{-1, -1, -1, -1};  // front wheels only
  std::array<int, kWheels> drive{}, brake{};
  int mu = -1, wind_x = -1, wind_y = -1;
  int payload_front = -1, payload_rear = -1;  // kg at VehicleParams::payload_front(), payload_rear()
  // scales of the tyres' stiffness: longitudinal (all four), cornering per axle
  int slip_stiffness = -1, cornering_front = -1, cornering_rear = -1;
  // scales of the load each tyre's horizontal forces see (the observer's sensitivity to a payload)
  std::array<int, kWheels> tyre_load{-1, -1, -1, -1};
};

struct Vehicle {
  VehicleParams params;
  std::shared_ptr<const Road> road;
  mb::Model model;

  // q slots of the chassis coordinates (x, y, z are P0's components)
  int x = -1, y = -1, z = -1, yaw = -1, pitch = -1, roll = -1;
  int P0 = -1, u = -1, v = -1, w = -1;  // first q slot of P0 and of each unit vector
  std::array<WheelSlots, kWheels> wheels;
  std::array<WheelGeometry, kWheels> geometry;
  VehicleInputIndex in;
  std::array<std::shared_ptr<const TyreForce>, kWheels> tyres;

  Eigen::Vector3d cg_chassis = Eigen::Vector3d::Zero();  // P0 in the vehicle frame
  Eigen::Vector3d cg_vehicle = Eigen::Vector3d::Zero();  // whole-vehicle CG at design

  // A chassis point given in the vehicle frame, as a linear vector P0 + c_u u + c_v v + c_w w
  // over q (resolved slots, usable in measurement models: Sinigaglia 2016 eq. (80)).
  mb::LinearVec chassis_point(const Eigen::Vector3d& vehicle_frame) const;
  // The same point's local coordinates along u, v, w.
  Eigen::Vector3d chassis_local(const Eigen::Vector3d& vehicle_frame) const { return vehicle_frame - cg_chassis; }
};

// Builds the model of `p` on its own road, or on `road`.
Vehicle build_vehicle(const VehicleParams& p);
Vehicle build_vehicle(const VehicleParams& p, const Road& road);

// What the driver and the powertrain do.
struct VehicleInputs {
  double steer = 0;  // road-wheel angle of the single-track equivalent (rad, + left)
  double steer_rate = 0;  // rad/s
  double steer_accel = 0;  // rad/s^2 (enters the acceleration level of the driving constraint)
  std::array<double, kWheels> drive_torque{};  // N m on each wheel, + forward
  std::array<double, kWheels> brake_pressure{};  // Pa; torque = pressure * axle gain
  double mu = std::numeric_limits<double>::quiet_NaN();  // friction override; NaN: the tyres' own
  double wind_x = 0, wind_y = 0;  // air velocity over ground (m/s, ENU)
  double payload_front = 0, payload_rear = 0;  // kg added at the payload points
  double slip_stiffness = 1, cornering_front = 1, cornering_rear = 1;  // times the tyres' own
};

// Writes the inputs into s.u: the steering through the Ackermann geometry (+ static toe), rates
// and accelerations by the chain rule; steering clamped to max_angle_rad. Allocation-free.
void set_inputs(const Vehicle& v, const VehicleInputs& in, mb::State& s);

// Left and right road-wheel angles (rad) for the single-track angle `delta`, without toe, with
// their first and second derivatives in delta.
struct SteerAngles {
  std::array<double, 2> angle{}, d1{}, d2{};
};
SteerAngles ackermann(const VehicleParams& p, double delta);

// Where and how fast the vehicle starts.
struct VehicleStart {
  double x = 0, y = 0;  // P0 over ground (m, ENU)
  double yaw = 0;  // rad, from east towards north
  double speed = 0;  // forward speed (m/s), wheels rolling freely
  double yaw_rate = 0;  // rad/s (steady cornering starts)
  double lateral_speed = 0;  // P0's speed to the left (m/s): a start in a turn, sideslipping
};

// A consistent state: the design configuration moved to `start`, the vertical coordinates
// (z, pitch, roll, travels) in static equilibrium on the road, velocities of a rigid motion
// with free-rolling wheels, accelerations initialised. Throws std::runtime_error if the
// equilibrium is not found.
mb::State start_vehicle(const Vehicle& v, mb::Workspace& ws, const VehicleStart& start,
                        const VehicleInputs& inputs = {});

// All coordinates from the independent ones and the steering angles already in q (exact
// formulas of the constraints; the kinematic solver then only polishes).
void pose_vehicle(const Vehicle& v, Eigen::VectorXd& q);

// Static equilibrium of the vertical coordinates at the state's x, y, yaw (velocities zero
// during the search): Newton on R' Q = 0 with a finite-difference Jacobian. Returns the
// largest remaining generalised force (N or N m).
double settle(const Vehicle& v, mb::State& s, mb::Workspace& ws);

}  // namespace mbo::models
