// A three-simulation experiment (docs/interfaces.md "Scenario file"): a truth model, a wrong model
// run open loop, and the wrong model corrected by the observer, with the sensors that link
// truth and observer, the filter, and the quantities to score.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/observer.hpp"
#include "mbobserver/estimation/sensor.hpp"
#include "mbobserver/mb/model.hpp"
#include "mbobserver/mb/state.hpp"
#include "mbobserver/mb/workspace.hpp"

namespace mbo::exp {

// Piecewise-constant ("<input>_steps": [[t, v], ...], v holds from t) or piecewise-linear
// ("<input>_ramp") input schedule.
struct InputTable {
  int input = -1;
  bool ramp = false;
  std::vector<double> t, v;
  double value(double time) const;
  double rate(double time) const;  // 0 for steps
};

// Writes each table's value at time t into the state's inputs.
void apply_inputs(const std::vector<InputTable>& tables, double t, mb::State& s);

// A simulated model of an experiment (truth or model): its state at the independent
// coordinates z0 and rates zd0; start() solves the rest once the inputs are set.
struct SimulatedModel {
  const mb::Model& m;
  mb::Workspace ws;
  mb::State s;
  SimulatedModel(const mb::Model& model, const std::vector<double>& z0, const std::vector<double>& zd0);
  // Position, velocity and accelerations; throws when the position problem does not converge.
  void start();
};

// One sensor of the scenario: how to build it on a model, its noise and rate.
struct SensorSpec {
  std::string name;  // for reports: "<type> <target>"
  std::string type;
  JsonReader params;  // the sensor's JSON object, for the factory
  double noise_std = 0;
  double rate_hz = 0;
  double quantum = 0;  // measurement resolution; 0: none
  double start = 0;  // s, first sample time
  std::vector<std::pair<double, double>> outages;  // [from, to) without samples
};

// Builds a sensor on `model` from its spec (ConfigError naming the scenario place on unknown
// names). Extended by the vehicle layer through `register_sensor_factory`.
using SensorFactory = std::function<std::shared_ptr<const est::Sensor>(const SensorSpec&, const mb::Model&)>;
void register_sensor_factory(const std::string& type, SensorFactory f);
std::shared_ptr<const est::Sensor> make_sensor(const SensorSpec& spec, const mb::Model& model);

// A scored quantity: evaluated on a model state.
struct Quantity {
  std::string name;
  bool angle = false;  // errors wrapped to (-pi, pi]
  std::function<double(const mb::Model&, const mb::State&)> eval;
};

struct Scenario {
  std::filesystem::path file;
  std::string description;
  double dt = 0, duration = 0, metrics_from = 0;
  std::uint64_t seed = 1;

  mb::Model truth, model;
  std::vector<double> truth_z0, truth_zd0, model_z0, model_zd0;
  std::vector<InputTable> truth_inputs, model_inputs;
  bool model_inputs_from_truth = false;  // the model receives the truth's inputs (as measured)

  std::vector<SensorSpec> sensors;
  std::string filter_type;  // "errorEKF" | "errorEKF-FE"
  est::ObserverSettings filter;
  std::vector<double> fe_accel_noise;  // errorEKF-FE's own acceleration noise (empty: the same)
  std::vector<Quantity> quantities;
};

Scenario load_scenario(const std::filesystem::path& file);

// The independent coordinate set of a model as names, for reports.
std::vector<std::string> z_names(const mb::Model& m);

}  // namespace mbo::exp
