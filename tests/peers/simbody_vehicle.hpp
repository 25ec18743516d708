// The vehicle built a second time, in Simbody (issue 22): the sedan's multibody structure in
// joint coordinates, integrated by Simbody's error-controlled Runge-Kutta, with the forces
// (tyres, suspension, drag, drive and brake torques) supplied by a VehicleForceModel, which
// vehicle_twin.cpp implements with mbobserver's own force models. Nothing of the engine is
// shared: not the coordinates, the constraints, the mass matrices or the integrator.
//
//   chassis   a free body at the sprung centre of gravity P0, axes x forward, y left, z up;
//   strut     per wheel, a slider along the strut axis from the chassis point of the wheel
//             centre at zero travel (q = the travel, + bump);
//   steering  front wheels: a pin about the chassis z axis through the wheel centre whose angle
//             is prescribed (the driving constraint's input), after the strut; the carrier is
//             then Rz(steer) Rx(tilt) in chassis axes, as in vehicle_build.cpp;
//   spin      a pin about the carrier's y axis (the axle a): the wheel, holding the whole
//             unsprung mass at the wheel centre with the spin and diametral inertias.
// The uprights and carriers are massless frames between the joints.
//
// Simbody's headers do not compile as C++20, so this header (like simbody_peer.hpp) exposes
// no Simbody or Eigen type; vectors are 3 doubles, rotations 9 (row-major).
#pragma once

#include <array>
#include <memory>

namespace mbo::peers {

using V3 = std::array<double, 3>;
using M33 = std::array<double, 9>;  // row-major

struct WheelSpec {
  V3 strut_point{};  // wheel centre at zero travel, from P0, chassis axes
  V3 strut_axis{0, 0, 1};  // unit, + bump
  double tilt = 0;  // carrier's rotation about its x axis (rad)
  double toe = 0;  // static steer of an unsteered carrier (rad)
  bool steered = false;
  double mass = 0, spin_inertia = 0, diametral_inertia = 0;
};

struct VehicleSpec {
  double mass = 0;  // sprung
  M33 inertia{};  // about P0, chassis axes
  double gravity = 9.81;
  std::array<WheelSpec, 4> wheels;  // FL, FR, RL, RR
};

// Everything the force models read, in the ground frame.
struct ChassisState {
  V3 P0{}, v{}, w{};  // position and velocity of P0, angular velocity
  M33 R{};  // chassis axes as columns
};
struct WheelState {
  V3 C{}, Cd{};  // wheel centre
  V3 a{}, r{}, s{};  // the carrier's triad (axle, radial x, radial z)
  V3 ad{}, rd{}, sd{};
  double spin = 0, spin_rate = 0;  // theta, theta_dot relative to the carrier
  double travel = 0, travel_rate = 0;
  double steer = 0;  // the carrier's angle about the chassis z axis (toe included)
};

// What they give back.
struct WheelLoads {
  int n = 0;  // contacts
  std::array<V3, 3> force{}, point{};  // on the wheel, at ground points
  V3 torque{};  // on the wheel (rolling resistance)
  double spin_torque = 0;  // between carrier and wheel, on theta (drive and brake)
  double strut_force = 0;  // generalised force on the travel (springs, dampers, stops, bars)
};
struct ChassisLoads {
  V3 force{}, point{};  // drag, at a ground point
};

class VehicleForceModel {
 public:
  virtual ~VehicleForceModel() = default;
  virtual void loads(double t, const ChassisState& chassis, const std::array<WheelState, 4>& wheels,
                     ChassisLoads& on_chassis, std::array<WheelLoads, 4>& on_wheels) const = 0;
  // The prescribed angle of a steered carrier (toe included) and its first two derivatives.
  virtual void steering(double t, int wheel, double& angle, double& rate, double& accel) const = 0;
};

struct VehicleInitial {
  ChassisState chassis;
  std::array<double, 4> travel{}, travel_rate{}, spin{}, spin_rate{};
};

class SimbodyVehicle {
 public:
  // accuracy: RK-Merson's relative error per step (infinity norm).
  static std::unique_ptr<SimbodyVehicle> create(const VehicleSpec& spec, const VehicleInitial& start,
                                                std::shared_ptr<const VehicleForceModel> forces,
                                                double accuracy = 1e-7);
  ~SimbodyVehicle();
  SimbodyVehicle(const SimbodyVehicle&) = delete;
  SimbodyVehicle& operator=(const SimbodyVehicle&) = delete;

  double time() const;
  void advance_to(double t);  // integrates up to exactly t
  void read(ChassisState& chassis, std::array<WheelState, 4>& wheels) const;
  long steps_taken() const;

  struct Impl;  // Simbody's side, in simbody_vehicle.cpp

 private:
  explicit SimbodyVehicle(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mbo::peers
