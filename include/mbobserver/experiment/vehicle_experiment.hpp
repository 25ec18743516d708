// Vehicle scenarios (scenarios/vehicle_*.json): a truth vehicle driven through a manoeuvre by
// a closed-loop driver, the same vehicle with a friction error run open loop on the measured
// inputs, and that wrong vehicle corrected by the VehicleObserver from the simulated sensors
// (Sinigaglia 2016 ch. 5). The truth drive is shared with mbobserver-sim.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "mbobserver/estimation/vehicle_observer.hpp"
#include "mbobserver/experiment/perturbation.hpp"
#include "mbobserver/experiment/production_bus.hpp"
#include "mbobserver/experiment/runner.hpp"
#include "mbobserver/experiment/sensor_sim.hpp"
#include "mbobserver/models/manoeuvres.hpp"

namespace mbo::exp {

struct VehicleScenario {
  std::filesystem::path file;
  std::string description;
  double dt = 0.002, duration = 10, metrics_from = 0;
  std::uint64_t seed = 1;
  std::shared_ptr<const models::Vehicle> truth, model;
  double truth_mu = std::numeric_limits<double>::quiet_NaN(), model_mu = std::numeric_limits<double>::quiet_NaN();
  models::ManoeuvreSpec manoeuvre;
  SensorSimConfig sensors;
  std::optional<ProductionBusConfig> production_bus;  // the bus of a production car instead
  est::VehicleObserverConfig observer;
  bool start_from_truth = true;  // false: the observer starts from the first GNSS fix
  // The observer's and the open loop's model is the truth's car as drawn for the run, with the
  // same sensors: what the observer does with a perfect model (the suite's noise floor).
  bool model_is_truth = false;
  double sideslip_min_speed = 5;  // m/s, sideslip is scored above it
  // The "perturb" block: the truth's parameters and the sensors' errors drawn per run, from the
  // sensors block as read (sensors_json).
  std::vector<Perturbation> perturb;
  nlohmann::json sensors_json;
  // In a scenario realised for one run (realise_scenario): the values drawn, by name.
  nlohmann::json drawn;
};

// True when the file says "kind": "vehicle".
bool is_vehicle_scenario(const std::filesystem::path& file);
// `observer_patch`: a JSON merge patch (RFC 7396) applied to the scenario's "observer" block
// before it is read, so that one suite runs under another observer configuration (e.g.
// scenarios/patches/self_calibration.json) without copies of its scenarios.
VehicleScenario load_vehicle_scenario(const std::filesystem::path& file,
                                      const nlohmann::json* observer_patch = nullptr);
// The scenario one run with `seed` drives: the truth and its sensors with the perturb block's
// draws in (perturbation.hpp); the scenario itself when it has no perturb block.
VehicleScenario realise_scenario(const VehicleScenario& sc, std::uint64_t seed);

// The truth vehicle and its sensors, one step at a time.
class TruthDrive {
 public:
  TruthDrive(const VehicleScenario& sc, std::uint64_t seed);
  // Steps the truth to the next time and appends the sensor samples due then to `out`.
  void advance(std::vector<Measurement>& out);
  double t() const { return t_; }
  bool done() const { return t_ + 0.5 * sc_.dt >= sc_.duration; }
  const mb::State& state() const { return s_; }
  // The truth's outputs as the model's are defined: the position and velocity of the body
  // point that is the model file's reference point (its sprung CG), the speed and sideslip at
  // the model file's whole-vehicle CG. A truth whose load moved its CG (a payload, cg_x_m) is
  // scored where the model is, not 0.15 m away along the car (scored_outputs()).
  const models::VehicleOutputs& outputs() const { return scored_; }
  const models::VehicleInputs& inputs() const { return in_; }
  const SensorSim& sensors() const { return sim_; }

 private:
  const VehicleScenario& sc_;
  mb::Workspace ws_;
  mb::State s_;
  models::DriverState driver_{};
  models::VehicleOutputs o_{}, scored_{};
  models::VehicleInputs in_{};
  SensorSim sim_;
  std::optional<ProductionBusSim> bus_;
  double t_ = 0;
};

// `o` (the truth's own outputs) moved to the model file's points: position and velocity to the
// body point at the model's sprung CG (its P0), speed and sideslip to the body point at the
// model's whole-vehicle CG. Identity when both files put them where the truth's are.
void score_at_model_points(const models::Vehicle& truth, const models::Vehicle& model, const mb::State& s,
                           models::VehicleOutputs& o);

nlohmann::json run_vehicle_experiment(const VehicleScenario& sc, const RunOptions& options);

}  // namespace mbo::exp
