// What an experiment run scores and how it is reported, the same for a mechanism scenario
// (runner.cpp) and a vehicle scenario (vehicle_experiment.cpp): docs/interfaces.md "Report".
//
// The sections every report has, from what the run adds step by step:
//   rmse, max_abs   errors of the named quantities, observer and open-loop model;
//   dof_rmse        errors of the model's independent coordinates z and their rates zd;
//   consistency     mean NEES of the observed block with its 95 % interval (Sinigaglia 2016
//                   3.3.3) and the whiteness of each innovation sequence (mean, rms, the
//                   normalised cumulative periodogram test);
//   sensors         measurements fused and rejected per sensor;
//   timing_us       percentiles of the step times;
//   failures        the caller's counters;
//   false_valid     where the run scores its outputs' validity flags (vehicle runs): how often
//                   a flag was set while its output was wrong (false_valid.hpp).
// A run adds what only it has (observability, GNSS outages, ...) to the report afterwards.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "mbobserver/experiment/error_stats.hpp"
#include "mbobserver/experiment/false_valid.hpp"
#include "mbobserver/mb/model.hpp"
#include "mbobserver/mb/state.hpp"

namespace mbo::exp {

// The report's first keys: what was run.
struct RunHeader {
  std::string scenario, filter;
  std::uint64_t seed = 0;
  long steps = 0;
  double duration = 0, dt = 0, metrics_from = 0;
};

class ReportWriter {
 public:
  // `quantities`: the names scored; `truth` and `model`: the models whose independent
  // coordinates are compared (the same topology, maybe other slots); `observed`: the indices
  // into z of the coordinates the filter estimates (the NEES block); `sensors`: the names the
  // fused / rejected counts are reported under.
  ReportWriter(std::vector<std::string> quantities, const mb::Model& truth, const mb::Model& model,
               std::vector<int> observed, std::vector<std::string> sensors);

  // One step's error of quantity i: observer and open loop, each already estimate - truth.
  void add_quantity(std::size_t i, double observer_error, double open_loop_error) {
    observer_[i].add(observer_error);
    open_loop_[i].add(open_loop_error);
  }
  // One step's coordinate errors of the observer and the open loop, and the NEES of the
  // observer's observed block against the top-left block of its error covariance.
  void add_coordinates(const mb::State& truth, const mb::State& observer, const mb::State& open_loop,
                       const Eigen::MatrixXd& covariance);
  // The innovation sequence reported under `key` (created empty on first use).
  std::vector<double>& innovations(const std::string& key) { return innovations_[key]; }
  // A measurement of sensor i: fused, or rejected by the gate.
  void count_measurement(std::size_t sensor, bool fused) { ++(fused ? fused_ : rejected_)[sensor]; }
  // The step times reported under timing_us.<name>, us.
  std::vector<double>& timing(const std::string& name) { return timing_[name]; }
  // The validity flags' false-valid rate, reported once it has a step.
  FalseValidRate& false_valid() { return false_valid_; }

  nlohmann::json write(const RunHeader& header, const nlohmann::json& failures) const;

 private:
  bool angle_slot(int slot) const;

  std::vector<std::string> names_;
  const mb::Model& truth_;
  const mb::Model& model_;
  std::vector<int> observed_;
  std::vector<std::string> sensors_;
  std::vector<ErrorStats> observer_, open_loop_;
  std::vector<ErrorStats> z_observer_, zd_observer_, z_open_loop_, zd_open_loop_;
  std::vector<bool> z_angle_;  // model.z[j] is an angle
  Eigen::VectorXd e_;  // NEES error of the observed block: [z; zd]
  double nees_sum_ = 0;
  long nees_n_ = 0;
  std::map<std::string, std::vector<double>> innovations_;
  std::vector<long> fused_, rejected_;
  std::map<std::string, std::vector<double>> timing_;
  FalseValidRate false_valid_;
};

}  // namespace mbo::exp
