// What the observer's self-calibration should have learned in a vehicle scenario, and how far
// its published values and 1-sigma are from it: per parameter of kCalibrationNames, the
// truth value, the RMSE of value - truth and the NEES (value - truth)^2 / std^2 (1 for an
// honest std, issue 18's acceptance: within [0.5, 2]), and the share of the steps on which it
// was flagged converged while more than kFalseConvergedSigmas of its std off: a calibration
// file keeps such a value as learned, and the next drive starts from it. docs/interfaces.md
// "Report".
#pragma once

#include <array>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/experiment/false_valid.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"

namespace mbo::exp {

// Each parameter's value in the scenario's truth now, NaN where none can be defined (see the
// definition). `truth` is the run's truth drive (its sensors' biases now) and `speed` the
// truth's forward speed (the tyres' radius grows with it).
std::array<double, kCalibrationCount> calibration_truth(const VehicleScenario& sc, const TruthDrive& truth,
                                                        double speed);

// A converged parameter this many of its published sigma off its truth is falsely converged
// (the outputs' false-valid bound).
constexpr double kFalseConvergedSigmas = kFalseValidSigmas;

// The error of each estimated parameter against its truth over the scored steps.
class CalibrationScore {
 public:
  // One step: the published calibration and its truth.
  void add(const std::array<Calibration, kCalibrationCount>& published,
           const std::array<double, kCalibrationCount>& truth);
  // Adds truth (the last step's), rmse, nees and false_converged (a share of the scored steps)
  // to each parameter's block under `calibration` that has a truth and a scored step.
  void report(nlohmann::json& calibration) const;

 private:
  std::array<double, kCalibrationCount> sq_{}, nees_{}, truth_{};
  std::array<long, kCalibrationCount> n_{}, false_converged_{};
};

}  // namespace mbo::exp
