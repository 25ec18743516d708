// The quantities of a vehicle that are scored against the truth (docs/interfaces.md "Report"),
// defined once for every program that names them:
//   mbobserver-experiment  the report's rmse / max_abs keys and the --trace columns;
//   mbobserver-sim         the columns of the truth CSV (after "t");
//   mbobserver-eval        where each sits in an estimate record, and its truth column.
#pragma once

#include <string>
#include <vector>

#include "mbobserver/mb/state.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_outputs.hpp"

namespace mbo::exp {

struct VehicleQuantity {
  std::string name;  // report key and truth CSV column, e.g. "x", "wheel_speed_fl"
  bool angle = false;  // radians: an error is wrapped to (-pi, pi]
  bool scored = true;  // false: a truth CSV column only (vz, speed)
  bool in_truth_csv = true;  // false: not written by mbobserver-sim (friction, an input)
  bool moving_only = false;  // scored only above the scenario's sideslip_min_speed (sideslip)
  // In an mbobserver.estimate/1 record: "<group>.<key>", element `wheel` of an array when >= 0.
  std::string estimate_group, estimate_key;
  int wheel = -1;  // 0..3: fl, fr, rl, rr
  // The value of a vehicle's state and outputs.
  double (*get)(const models::Vehicle& vehicle, const mb::State& state, const models::VehicleOutputs& outputs,
                int wheel) = nullptr;
  double value(const models::Vehicle& v, const mb::State& s, const models::VehicleOutputs& o) const {
    return get(v, s, o, wheel);
  }
};

// Every quantity in truth CSV order: the chassis ones, then each per-wheel one for fl, fr, rl, rr.
const std::vector<VehicleQuantity>& vehicle_quantities();

}  // namespace mbo::exp
