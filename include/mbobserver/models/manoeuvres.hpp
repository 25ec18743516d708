// Inputs for the standard manoeuvres, from a closed-loop driver where the manoeuvre needs one:
// a speed controller (PI with drag and rolling-resistance feed-forward, braking through the
// brake gains when the torque asked is negative) and a path-following steering controller
// (pure pursuit on the rear axle, Coulter 1992) for the ISO 3888-1 double lane change.
//
//   constant               fixed steering and torques (a scenario's own inputs)
//   straight_acceleration  from rest, a drive torque on the driven wheels
//   steady_circle          constant steering (or the Ackermann angle of a radius), speed held
//   double_lane_change     ISO 3888-1 path at a held speed (80 km/h by default)
//   braking                from a speed, a brake-pressure step (or an ideal ABS holding each
//                          wheel at 90 % of the peak slip ratio)
//   bump_crossing          straight at a held speed over the road's bumps
//   coast_down             from a speed, no inputs
//   seed003_straight       Sinigaglia 2016 Table 4: 100 N m on each wheel, 20 s, straight
//   seed003_circle         the same with the rack 0.01 m off centre (x the rack gain)
//   mixed_drive            several minutes on a route (route.hpp): pull-away, urban
//                          stop-and-go, a roundabout, a highway with lane changes and an
//                          emergency brake, a car park; pure pursuit on the route, the speed
//                          controller on the route's speeds with stops held on the brakes
#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/models/route.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_outputs.hpp"

namespace mbo::models {

enum class ManoeuvreKind {
  constant,
  straight_acceleration,
  steady_circle,
  double_lane_change,
  braking,
  bump_crossing,
  coast_down,
  seed003_straight,
  seed003_circle,
  mixed_drive,
};

struct ManoeuvreSpec {
  ManoeuvreKind kind = ManoeuvreKind::constant;
  double duration_s = 10;
  VehicleStart start;  // speed: the initial speed
  double target_speed_mps = std::numeric_limits<double>::quiet_NaN();  // NaN: start.speed
  double steer_rad = 0;  // constant, steady_circle
  double radius_m = 0;  // steady_circle: > 0 replaces steer_rad
  double steer_ramp_s = 1;  // steady_circle: steering ramped in over this time
  double drive_torque_Nm = 0;  // per driven wheel (constant, straight_acceleration)
  std::array<bool, kWheels> driven{false, false, true, true};
  double brake_start_s = 1;  // braking
  double brake_pressure_Pa = 0;  // braking: step value (also the ABS ceiling)
  double brake_ramp_s = 0.15;
  bool abs = false;
  bool traction_control = false;  // drive torque limited to 90 % of the peak slip
                                  // (constant, straight_acceleration, seed003_*)
  double lane_offset_m = 3.5;  // double_lane_change
  double path_start_x_m = 20;  // where section 1 begins along x
  double mu = std::numeric_limits<double>::quiet_NaN();  // friction override
  std::shared_ptr<const Route> route;  // mixed_drive
  double accel_mps2 = 1.8;  // mixed_drive: the driver's acceleration towards a higher speed
};

// State of the closed-loop driver between steps (no allocation).
struct DriverState {
  double speed_integral = 0;
  double steer = 0, steer_rate = 0;  // filtered steering
  std::array<double, kWheels> brake{};  // ABS pressures
  std::array<double, kWheels> drive{};  // traction-control torques
  bool started = false;
  // mixed_drive: where on the route, the speed aimed at (rate-limited), the next stop and hard
  // brake, and since when the car has stood at the stop
  std::size_t route_i = 0, stop_i = 0, hard_brake_i = 0;
  double target = 0, stopped_at = -1;
};

// The ISO 3888-1 reference path: lateral position of the centre line at distance x.
double lane_change_path(const ManoeuvreSpec& m, double x);

// Inputs at time t (the state's outputs o at t - dt); dt is the step.
VehicleInputs manoeuvre_inputs(const ManoeuvreSpec& m, const Vehicle& v, const VehicleOutputs& o, DriverState& d,
                               double t, double dt);

ManoeuvreSpec load_manoeuvre(const JsonReader& r, const Vehicle& v);
const char* manoeuvre_name(ManoeuvreKind k);

}  // namespace mbo::models
