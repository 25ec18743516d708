// The multibody observer of Sinigaglia 2016 (Fig. 11, 4.5): each step integrates the (wrong) model,
// predicts the error covariance, fuses the available scalar measurements against the model's
// virtual measurements, and corrects the model (4.5.4). It works on any model the engine can
// describe; which independent coordinates are observed is configurable (4.1.2).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/error_ekf.hpp"
#include "mbobserver/estimation/sensor.hpp"
#include "mbobserver/mb/derivatives.hpp"
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/model.hpp"
#include "mbobserver/mb/state.hpp"
#include "mbobserver/mb/workspace.hpp"

namespace mbo::est {

enum class Correction {
  position_problem,  // 4.5.4: add the errors to z, solve the position and velocity problems
  velocity_approximation,  // Sinigaglia 2016 A.4.2 / eq. (59): dq = R dz, dqd = R dzd (no iteration)
};

// How errorEKF-FE turns its acceleration error into a generalised force (see correct()).
enum class ForceCorrection { inertial, coordinates };

// Which terms of dzdd/dz, dzdd/dzd errorEKF-FE differentiates (mb/derivatives.hpp):
//   all     eq. (67) re-evaluated along each perturbation: R, Rdot and Mbar move too
//   forces  Mbar and Rdot held at the state; the applied forces Q (and R' Q) differentiated
using JacobianTerms = mb::DerivativeTerms;

struct ObserverSettings {
  ErrorEkfSettings filter;
  std::vector<int> observed;  // indices into model.z
  Correction correction = Correction::position_problem;
  int jacobian_period = 1;  // FE: recompute dzdd/dz, dzdd/dzd every this many steps; 0: never
  // FE: an estimated load's column of B holds its settled weight on the tyres as well as its
  // inertia (mb::AccelerationDerivatives::settled_mass_inputs)
  bool settled_weight = false;
  JacobianTerms jacobian_terms = JacobianTerms::all;
  // FE: a new dzdd/dzd further than this (relative, Frobenius) from the last one is not used
  // for the period it covers; 0: always used.
  double jacobian_max_change = 1.0;
  ForceCorrection force_correction = ForceCorrection::inertial;
  // FE: inputs of the model (indices into State::u) the filter estimates, with the range each
  // estimate is held in; their noise is filter.input_rate_noise / initial_std_p. The caller
  // must set these inputs before every step (as it does all of State::u): the step adds the
  // estimate's error to the value it finds there. Unused with errorEKF.
  std::vector<int> estimated_inputs;
  std::vector<double> input_min, input_max;
  // Estimated sensor parameters (biases, scale factors, a latency), which sensors read by
  // index (MeasureContext::param): the value each starts from and the range it is held in;
  // their noise is filter.sensor_rate_noise / initial_std_s. errorEKF and FE alike.
  std::vector<double> sensor_initial, sensor_min, sensor_max;
};

// Bounds of the filter's configuration (docs/configuration.md), in the coordinates' own units:
// a plant noise's spectral density, and an initial 1-sigma, which must also leave its variance
// below max_variance (or the filter would call its own start diverged).
inline constexpr double kMaxPlantNoise = 1e8;
inline constexpr double kMaxInitialStd = 1e4;

// The coordinates of a "force_error" block that carry an acceleration error: those named in
// its "plant_noise" (each an observed one; "initial_std" names the same), in observed order.
// Fills fs.forced, fs.accel_rate_noise and fs.initial_std_a.
void read_forced_coordinates(const JsonReader& force_error, const std::vector<std::string>& observed,
                             ErrorEkfSettings& fs);

// The Jacobian and force-correction keys of a "force_error" block (jacobian_period,
// jacobian_terms, jacobian_max_change, correction); the defaults are the caller's: a linkage
// wants every term of eq. (67) each step, a vehicle the tyre forces' every few steps.
void read_force_error_settings(const JsonReader& force_error, ObserverSettings& s, int default_period,
                               JacobianTerms default_terms, ForceCorrection default_correction);

// One scalar measurement ready to fuse: sensor, row, value and noise variance.
struct ScalarMeasurement {
  int sensor = 0;
  int row = 0;
  double value = 0;
  double variance = 0;
  double gate_sigma = -1;  // < 0: the filter's gate
  double lag = -1;  // s: the sample's age at the step's time (its sensor adds its latency); < 0: none
  int unmodelled_bias = -1;  // the value is the truth plus this unmodelled bias (ErrorEkf::update)
  double unmodelled_coefficient = 1;  // ... times this
  bool unmodelled_per_lag = false;  // ... times d h / d latency (a latency not told: Gradients::dlag)
  int unmodelled_bias2 = -1;  // and this one
  double unmodelled_coefficient2 = 0;  // times this
};

struct ObserverStepReport {
  mb::StepResult model_step;
  bool correction_converged = true;
  int fused = 0, rejected = 0;
  int substeps = 1;  // > 1: the step needed smaller steps to converge
  bool healthy = true;
};

class MbObserver {
 public:
  MbObserver(const mb::Model& model, std::vector<std::shared_ptr<const Sensor>> sensors,
             const ObserverSettings& settings, double dt);

  // Starts from a consistent state of the model (positions, velocities, accelerations).
  void initialize(const mb::State& s);

  // Inputs for the next step go in state().u before step().
  mb::State& state() { return s_; }
  const mb::State& state() const { return s_; }
  const mb::Model& model() const { return m_; }
  mb::Workspace& workspace() { return ws_; }
  const mb::Workspace& workspace() const { return ws_; }
  const ObserverSettings& settings() const { return settings_; }
  const ErrorEkf& filter() const { return ekf_; }
  ErrorEkf& filter() { return ekf_; }

  // Integrates one step, predicts, fuses `measurements` (all taken at the new time), corrects.
  // `results`, if not null, receives one UpdateResult per measurement.
  ObserverStepReport step(const std::vector<ScalarMeasurement>& measurements,
                          std::vector<UpdateResult>* results = nullptr);

  // The virtual measurement of (sensor, row) on the current model state.
  double predict_measurement(int sensor, int row);

  // Gives the covariance of the observed [z, zd] (and FE's a) as diagonal standard deviations.
  VectorXd std_dev() const { return ekf_.covariance().diagonal().cwiseSqrt(); }
  const std::vector<int>& observed() const { return settings_.observed; }
  // The error state's blocks (the filter's).
  const ErrorStateLayout& layout() const { return ekf_.layout(); }
  // Observed coordinate (0..n-1) of the independent coordinate at q slot `slot`; -1: not observed.
  int observed_index(int slot) const;
  // Forgets what the filter knew of observed coordinate j: its position and velocity errors and
  // its acceleration error (FE) back to their initial variance, uncorrelated with the rest (a
  // coordinate reset from its sensor, as PX4's EKF2 resets a state from its aiding source).
  void restart_coordinate(int j);
  // FE with the "coordinates" correction: drops acceleration error k, the generalised force it
  // left on its coordinate, and its variance back to the initial one (its estimate was of a
  // guessed input that is no longer guessed; the car's ABS has let go). Other modes: nothing.
  void forget_force_error(int k);
  // FE: the model's Jacobians dzdd/dz, dzdd/dzd (observed x observed) last computed.
  const MatrixXd& jacobian_position() const { return A21_; }
  const MatrixXd& jacobian_velocity() const { return A22_; }
  // Whether the transition uses them this period (see jacobian_max_change).
  bool jacobians_trusted() const { return jacobians_trusted_; }
  // FE: dzdd/du of the estimated inputs (observed x inputs), computed with the Jacobians.
  const MatrixXd& input_jacobian() const { return B_; }
  // FE: what the filter adds to each estimated input (the caller's value + this is used).
  const VectorXd& input_error() const { return input_error_; }
  // The estimated sensor parameters' current values, and a value set from outside (a saved
  // calibration), held in its range; its variance is set to var if var > 0.
  const VectorXd& sensor_parameters() const { return sensor_params_; }
  void set_sensor_parameter(int k, double value, double var = -1);
  // A parameter another estimator keeps (the GNSS latency), which the filter only considers:
  // its value and variance in the next step. Where the estimator knows more than the filter, a
  // scalar update on the parameter with the gain and innovation that give exactly that mean and
  // variance moves the states correlated with it (a start placed with the old latency, along
  // the track); where it knows less, the row and column are scaled (correlations kept).
  void track_sensor_parameter(int k, double value, double var);
  // FE: estimated input k's variance, uncorrelated with the rest (a saved calibration's).
  void set_input_variance(int k, double var);

 private:
  void jacobian_row(const Gradients& g, VectorXd& H);
  void apply_tracked_parameters();
  bool uses_jacobians() const { return ekf_.force_error() && settings_.jacobian_period > 0 && jacobians_trusted_; }
  void correct(ObserverStepReport& r);
  void apply_input_error(int k);
  void adopt_jacobians();

  const mb::Model& m_;
  std::vector<std::shared_ptr<const Sensor>> sensors_;
  ObserverSettings settings_;
  double dt_;
  mb::Workspace ws_;
  mb::State s_, backup_;
  ErrorEkf ekf_;
  // FE: dzdd/dz, dzdd/dzd, dzdd/du differenced on the model, and the set the transition uses
  mb::AccelerationDerivatives derivatives_;
  MatrixXd A21_, A22_, B_;
  // scratch
  VectorXd xdd_, H_, hzdd_, dq_, tmp_q_, qdd_before_;
  Gradients grad_;
  VectorXd input_error_, input_base_;
  VectorXd sensor_params_, tmp_s_;
  VectorXd sensor_keep_;  // per step exp(-dt / tau) of a Gauss-Markov parameter, 1 of a random walk
  bool sensor_decays_ = false;
  VectorXd tracked_value_, tracked_var_;  // per sensor parameter: pending, var < 0 none
  VectorXd h_unit_;
  long steps_ = 0;
  bool jacobians_trusted_ = false;  // the first pair has nothing to be compared with
};

}  // namespace mbo::est
