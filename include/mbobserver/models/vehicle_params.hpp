// The parameters of a vehicle as read from config/vehicles/<name>.json (format and units:
// docs/vehicle-format.md). Reading is strict: an unknown key, a missing one, a value out of
// range or data that contradict each other (negative mass, centre of gravity outside the
// wheelbase, a wheel inside the chassis, a damper that pushes the way it moves) is a
// ConfigError naming the file and the JSON pointer.
//
// Vehicle frame (ISO 8855): x forward, y left, z up, fixed to the chassis; z = 0 is the ground
// at the design ride height; the origin along x and y is the file's choice (both shipped files
// put it on the ground at the centre of the rear axle, like Macchi 2010 ch. 5.2.1).
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "mbobserver/mb/model.hpp"
#include "mbobserver/models/road.hpp"
#include "mbobserver/models/tyre.hpp"

namespace mbo::models {

enum Wheel : int { FL = 0, FR = 1, RL = 2, RR = 3 };
inline constexpr int kWheels = 4;
inline constexpr const char* kWheelNames[kWheels] = {"fl", "fr", "rl", "rr"};
inline int axle_of(int wheel) { return wheel / 2; }  // 0 front, 1 rear
inline double side_of(int wheel) { return wheel % 2 == 0 ? 1.0 : -1.0; }  // +1 left

struct SuspensionParams {
  double spring_N_per_m = 0;
  std::optional<double> preload_N;  // spring force at the design position; absent: the
                                    // static load of the sprung mass on that corner
  mb::Table damper;  // force (N, + resists compression) vs travel rate
                     // (m/s, + compression)
  double bump_clearance_m = 0.08, bump_stiffness_N_per_m = 0;  // 0: no bump stop
  double rebound_clearance_m = 0.10, rebound_stiffness_N_per_m = 0;  // 0: no rebound stop
  double anti_roll_N_per_m = 0;  // left-right coupling on the travel difference
  Eigen::Vector3d axis = Eigen::Vector3d::UnitZ();  // strut axis (left wheel; right mirrored)
};

struct AxleParams {
  double x_m = 0;  // axle position along the vehicle x axis
  double track_m = 1.5;
  double unsprung_mass_kg = 40;  // per wheel: wheel, tyre, carrier, half the links
  double spin_inertia_kgm2 = 1;  // per wheel, about the axle
  double diametral_inertia_kgm2 = 0.5;
  double toe_in_rad = 0, camber_rad = 0;  // static; + toe-in, - camber = top inwards
  bool steered = false;
  double brake_gain_Nm_per_Pa = 0;
  SuspensionParams suspension;
  TyreParams tyre;
};

struct VehicleParams {
  std::string name, description, file;
  std::vector<std::string> sources;
  // Chassis (sprung mass)
  double mass_kg = 0;
  Eigen::Vector3d cg_m = Eigen::Vector3d::Zero();  // vehicle frame
  Eigen::Matrix3d inertia_kgm2 = Eigen::Matrix3d::Zero();  // about the sprung CG, chassis axes
  double width_m = 1.8;
  std::array<AxleParams, 2> axles;  // front, rear
  // Steering: road-wheel angle of the input -> left and right wheel angles.
  double ackermann = 1;  // 0 parallel steer, 1 full Ackermann
  double rack_gain_rad_per_m = 0;  // road-wheel angle per rack travel (Sinigaglia 2016 Table 4)
  double max_steer_rad = 0.6;
  // Aerodynamics
  double drag_coefficient = 0, frontal_area_m2 = 0, air_density_kg_per_m3 = 1.2;
  std::optional<Eigen::Vector3d> pressure_centre_m;  // absent: at the sprung CG
  double gravity_mps2 = 9.81;
  Road road;
  // Solver settings (see vehicle_build: why these values)
  double newton_tolerance = 1e-6;
  int newton_max_iterations = 30;
  double newton_refresh_contraction = 0.25;
  double penalty_ratio = 100;

  // Where a payload sits (vehicle frame): the front seats and the rear seats or boot, at the
  // sprung CG's height. The model carries a point mass at each whose mass is an input
  // (payload_front, payload_rear, kg; 0 as built), so that the observer can estimate the load
  // a car carries and where: any mass and CG x between the two points.
  Eigen::Vector3d payload_front() const { return {axles[0].x_m - 0.35 * wheelbase(), 0, cg_m.z()}; }
  Eigen::Vector3d payload_rear() const { return {axles[1].x_m, 0, cg_m.z()}; }

  double wheelbase() const { return axles[0].x_m - axles[1].x_m; }
  double total_mass() const { return mass_kg + 2 * (axles[0].unsprung_mass_kg + axles[1].unsprung_mass_kg); }
  // Centre of gravity of the whole vehicle at design, with the unsprung masses at the wheel
  // centres (height: the tyre's unloaded radius, the design height to within millimetres).
  Eigen::Vector3d vehicle_cg() const;
  // Static axle loads (N) from the lever-arm split of the total weight.
  double static_axle_load(int axle) const;
  // Static load on one wheel (N) and the part of it carried by the spring.
  double static_wheel_load(int wheel) const { return static_axle_load(axle_of(wheel)) / 2; }
  // The weight (N per kg) a mass on the centre line at x (vehicle frame) puts on a wheel once
  // the suspension has taken it: the lever rule between the axles, half to each side.
  double wheel_load_per_kg(int wheel, double x) const {
    const double front = (x - axles[1].x_m) / (axles[0].x_m - axles[1].x_m);
    return gravity_mps2 * (axle_of(wheel) == 0 ? front : 1 - front) / 2;
  }
  double static_sprung_load(int wheel) const;
  // Design position of a wheel centre in the vehicle frame (loaded radius at static load).
  Eigen::Vector3d wheel_centre(int wheel) const;
};

VehicleParams load_vehicle_params(const std::filesystem::path& file);
VehicleParams vehicle_params_from_json(const nlohmann::json& doc, const std::string& file);

}  // namespace mbo::models
