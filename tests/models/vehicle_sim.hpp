// A vehicle simulation for the tests: the model, its workspace and state, a step that records
// what the checks need (Newton iterations, convergence, constraint residuals).
#pragma once

#include <algorithm>
#include <string>

#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/workspace.hpp"
#include "mbobserver/models/manoeuvres.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_outputs.hpp"

namespace mbo::test {

inline std::string vehicle_path(const std::string& name) {
  return std::string(MBO_SOURCE_DIR) + "/config/vehicles/" + name + ".json";
}

struct StepStats {
  int steps = 0, failures = 0, max_iterations = 0, last_iterations = 0;
  long total_iterations = 0, total_tangents = 0;
  double max_phi = 0, max_vel = 0, max_acc = 0;
  double mean_iterations() const { return steps ? double(total_iterations) / steps : 0; }
};

struct VehicleSim {
  models::Vehicle v;
  mb::Workspace ws;
  mb::State s;
  models::VehicleOutputs out;
  StepStats stats;
  bool check_residuals = false;

  explicit VehicleSim(models::Vehicle veh, const models::VehicleStart& start = {}, const models::VehicleInputs& in = {})
      : v(std::move(veh)), ws(v.model), s(models::start_vehicle(v, ws, start, in)) {
    models::vehicle_outputs(v, s, out);
  }

  bool step(const models::VehicleInputs& in, double dt = 0.002) {
    models::set_inputs(v, in, s);
    auto r = mb::step(v.model, s, ws, dt);
    ++stats.steps;
    stats.failures += !r.converged;
    stats.max_iterations = std::max(stats.max_iterations, r.iterations);
    stats.total_iterations += r.iterations;
    stats.total_tangents += r.tangents;
    stats.last_iterations = r.iterations;
    if (check_residuals) {
      auto c = mb::constraint_residuals(v.model, s, ws);
      stats.max_phi = std::max(stats.max_phi, c.position);
      stats.max_vel = std::max(stats.max_vel, c.velocity);
      stats.max_acc = std::max(stats.max_acc, c.acceleration);
    }
    models::vehicle_outputs(v, s, out);
    return r.converged;
  }
};

}  // namespace mbo::test
