// The error-state EKF of Sinigaglia 2016 3.3 and 4.5 on n observed independent coordinates:
//   errorEKF     e = [dz, dzd]         F = [I dt I; 0 I]                          (eq. (54))
//   errorEKF-FE  e = [dz, dzd, da]     da: acceleration (force) error, a random walk; the
//                velocity row carries the model's Jacobians dzdd/dz, dzdd/dzd (eq. (66)) when
//                they are given (Fig. 33, eqs. (125)-(126)). da may cover a subset of the
//                observed coordinates (`forced`): the wheels' unknown torque, say, without
//                a force error on the chassis position, which a GNSS outage leaves
//                unobservable.
//   + dp         FE may also estimate r inputs of the model (the road's friction), each a
//                random walk that enters the velocity row through B = dzdd/du, given with
//                the Jacobians: e = [dz, dzd, da, dp].
// The predicted error is zero after each correction of the model (eq. (57)); the plant noise
// is discretised once by Van Loan's method (eqs. (121)-(123)); measurements are fused one
// scalar at a time (eq. (124)), each behind a chi-square innovation gate.
#pragma once

#include <span>
#include <vector>

#include <Eigen/Dense>

#include "mbobserver/estimation/error_state.hpp"

namespace mbo::est {

using Eigen::MatrixXd;
using Eigen::VectorXd;

struct ErrorEkfSettings {
  bool force_error = false;
  // Continuous-time spectral densities: of the acceleration error (errorEKF, and the velocity
  // row of FE), and of the acceleration error's rate (FE), per observed coordinate.
  std::vector<double> accel_noise, accel_rate_noise;
  std::vector<double> initial_std_z, initial_std_zd, initial_std_a;
  // FE: which observed coordinates (indices 0..n-1) carry an acceleration error; empty: all.
  // accel_rate_noise and initial_std_a have one value per forced coordinate.
  std::vector<int> forced;
  // FE: estimated inputs (dp): spectral density of each one's rate, and its initial 1-sigma,
  // which is also the largest its 1-sigma may grow to while nothing observes it.
  std::vector<double> input_rate_noise, initial_std_p;
  // Estimated sensor parameters (biases, scale factors, a latency; errorEKF and FE alike):
  // spectral density of each one's rate and its initial 1-sigma, which is also the largest its
  // 1-sigma may grow to while nothing observes it.
  std::vector<double> sensor_rate_noise, initial_std_s;
  // Per sensor parameter, 1 / its correlation time (1/s): 0 (or none given) a random walk, > 0
  // a first-order Gauss-Markov process d/dt e = -e / tau + w (a GNSS receiver's error).
  std::vector<double> sensor_decay;
  double gate_sigma = 5;  // reject |innovation| > gate_sigma * sqrt(S); 0: no gate
  double max_variance = 1e12;  // variances are clipped here (bounded covariance)
};

struct UpdateResult {
  bool accepted = false;
  double innovation = 0;  // y - h - H e before the update
  double variance = 0;  // S = H P H' + r
  double test_ratio = 0;  // innovation^2 / (gate_sigma^2 S)
};

class ErrorEkf {
 public:
  ErrorEkf(int n, const ErrorEkfSettings& s, double dt);

  int dofs() const { return layout_.observed; }
  int size() const { return layout_.size(); }
  // Where each block of the error state lies.
  const ErrorStateLayout& layout() const { return layout_; }
  bool force_error() const { return settings_.force_error; }
  // FE: the observed coordinate (0..n-1) of each acceleration-error state layout().accel(k).
  const std::vector<int>& forced() const { return settings_.forced; }
  // FE: how many model inputs are estimated (the block layout().input()).
  int inputs() const { return layout_.inputs; }
  // How many sensor parameters are estimated (the block layout().sensor()).
  int sensor_parameters() const { return layout_.sensors; }

  // P = F P F' + W with the error reset to zero. A21 = dzdd/dz, A22 = dzdd/dzd (n x n) may be
  // given for errorEKF-FE, and B = dzdd/du (n x inputs()) when it estimates inputs.
  void predict(const MatrixXd* A21 = nullptr, const MatrixXd* A22 = nullptr, const MatrixXd* B = nullptr);
  // The plant noise W is multiplied by this in the predictions that follow (1: as configured):
  // a model driven by a guessed input (one held at its last plausible value) is less sure of
  // where it goes.
  void set_plant_noise_scale(double k) { noise_scale_ = k; }
  // FE: an added spectral density q (of the rate, as `force_error.plant_noise`) on acceleration
  // error k in the predictions that follow (0: none): while the model runs on an input it
  // guesses (the car's ABS, on a production bus), its force error wanders faster.
  void set_accel_noise_boost(int k, double q) { boost_[k] = q; }
  // The acceleration noise (`plant_noise`) of observed coordinate i is multiplied by k in the
  // predictions that follow (1: as configured): the adaptation of the plant noise to what the
  // innovations show of the model (plant_noise_adaptation.hpp).
  void set_accel_noise_scale(int i, double k) { accel_scale_[i] = k; }
  // The same for a horizontal pair of coordinates (ix, iy) split along a heading psi: their
  // acceleration noise along (cos psi, sin psi) is multiplied by k_long and across it by
  // k_lat (the smaller q of the two is what is scaled, so the noise stays positive).
  void set_planar_noise_scale(int ix, int iy, double psi, double k_long, double k_lat) {
    planar_ = {ix, iy, psi, k_long, k_lat};
  }
  double accel_noise_scale(int i) const { return accel_scale_[i]; }
  // The random walk (`sensor_rate_noise`) of sensor parameter k is multiplied by `scale` in the
  // predictions that follow (1: as configured): a gyro bias that wanders faster than its
  // configuration says (BiasWalkCheck).
  void set_sensor_noise_scale(int k, double scale) { sensor_scale_[k] = scale; }

  // One scalar measurement: H over the error state, `innovation` = y - h(model), r its noise
  // variance. The update is skipped (and reported) when the gate rejects it.
  // `gate_sigma` < 0 uses the settings' gate; 0 disables it for this measurement.
  // `considered`: the measurement is the truth plus `coefficient` times the unmodelled bias of
  // that index (set_unmodelled_biases), -1 none.
  // `considered2`, `coefficient2`: a second one (a gyro's bias and its scale factor's error).
  UpdateResult update(const Eigen::Ref<const VectorXd>& H, double innovation, double r, double gate_sigma = -1,
                      int considered = -1, double coefficient = 1, int considered2 = -1, double coefficient2 = 0);

  // Biases of the sensors that the filter neither estimates nor lets change its gains (a
  // gyroscope's turn-on bias where it is not learned), with their 1-sigma: a consider analysis
  // (Bierman 1977, ch. VIII; Maybeck 1979, 6.11). The error x - x_hat this filter estimates
  // (the correction e) is, on a sensor biased by b, its own plus S b, with the sensitivity S
  // (size() x biases) carried as the error is: S <- F S in each prediction, S <- S - K (H S + c)
  // in each accepted update of a row that measures the truth plus c_k times bias k (c = c_k e_k';
  // a scale error's row: c_k the measured quantity). The
  // estimates do not change; the error's covariance is P + S diag(sigma^2) S'
  // (unmodelled_covariance), which a published 1-sigma may carry. A new start
  // (reset_covariance) keeps S, for a start that keeps the model's state; one from a fix owes
  // nothing to the bias in the motion it sets (forget_unmodelled_motion()). Kept across a start
  // from a fix, the motion's S would not be pessimistic: its old part, decayed by the new
  // gains, may cancel what the bias adds since.
  void set_unmodelled_biases(const std::vector<double>& sigma);
  int unmodelled_biases() const { return static_cast<int>(bias_std_.size()); }
  // (S diag(sigma^2) S')(i, j): what the unmodelled biases add to P(i, j).
  double unmodelled_covariance(int i, int j) const;
  // State i is set anew, from nothing the filter fused (its row and column of P reset to a
  // prior): its sensitivity to the biases is zero.
  void forget_unmodelled(int i) {
    if (S_.cols() > 0) S_.row(i).setZero();
  }
  void forget_unmodelled() { S_.setZero(); }
  // A new start from a fix: the motion's states (z, zd and the force errors, set anew) owe
  // nothing to the biases; the estimated inputs and sensor parameters, which the start keeps
  // with their variances, still carry what the biases did to them. Forgotten with the rest, a
  // wheel scale that a receiver's unconfigured 0.1 s lag had taught 5 % wrong at the first
  // pull-away published a sigma of 0.0016 instead of 0.026 after the reset that lag forced, and
  // "converged" (the combined robustness drive with the car learned: scale NEES 1200).
  void forget_unmodelled_motion() {
    if (S_.cols() > 0) S_.topRows(layout_.input().offset).setZero();
  }
  // State i set from a measurement that carries bias k times `coefficient`: its sensitivity.
  void set_unmodelled(int i, int k, double coefficient) {
    if (k >= 0 && k < S_.cols()) S_(i, k) = coefficient;
  }
  // The unmodelled bias k becomes estimated, in the states `into` (sensor parameters whose error
  // is the bias plus each one's own, of variance own_var; their old rows of P are dropped): the
  // part of the error it made, S_k b with b ~ N(0, common_var), joins P with its correlations
  // to them, as if the bias had been a state from the start (Schmidt's considered state turned
  // into a learning one), and leaves unmodelled_covariance. A fix that disagrees with what the
  // bias moved then corrects both the state and the bias, as one that came while it learned.
  void estimate_unmodelled(int k, std::span<const int> into, double common_var, double own_var);

  // Schmidt's "consider" update (Schmidt 1966): while a parameter (an estimated input, layout()
  // .input(k), or a sensor parameter, layout().sensor(k)) is not learning, measurements leave
  // its estimate where it is (its gain is zero) and keep its covariance and correlations exact
  // for that suboptimal gain, so it learns only from data and motion that can teach it
  // (VehicleObserver decides when: good fixes, an exciting manoeuvre).
  void set_learning(int state, bool on);
  bool learning(int state) const { return learn_[state] != 0; }
  // Two learning states a, b that move only along (da, db) (normalised here): the gain's
  // component across it is held, as a considered state's gain is (Schmidt), and P stays exact
  // for that gain. Off with a = -1. E.g. the two payloads in cornering, which shows their sum
  // and not their split.
  void set_learning_along(int a, int b, double da, double db);
  // The whole sensor block at once.
  void set_sensor_learning(bool on);
  bool sensor_learning() const;

  // After the model has been corrected with error(): the error is zero again.
  void reset_error() { e_.setZero(); }
  const VectorXd& error() const { return e_; }
  const MatrixXd& covariance() const {
    mirror_lower();
    return P_;
  }
  MatrixXd& covariance() {
    mirror_lower();
    return P_;
  }
  const MatrixXd& plant_noise() const { return W_; }
  // The transition the last predict() applied (F, or F with the model's Jacobians and B).
  const MatrixXd& transition() const { return with_jacobians_ ? Fj_ : F_; }

  // NaN, a non-positive variance or a variance at its bound: the filter has diverged.
  bool healthy() const;
  void reset_covariance();

 private:
  void propagate(const MatrixXd& F);
  // The updates write P's lower triangle only (a symmetric rank update costs half a full one);
  // the upper one is copied from it before P is read whole.
  void mirror_lower() const;

  ErrorEkfSettings settings_;
  ErrorStateLayout layout_;
  double dt_;
  MatrixXd F_, Fj_, W_, P0_, tmp_, Bm_, Vrows_;
  mutable MatrixXd P_;
  mutable bool upper_stale_ = false;  // the updates since the last mirror_lower() left it behind
  VectorXd f_tail_;  // the diagonal of F past [z, zd], where F is diagonal (propagate())
  bool with_jacobians_ = false;  // the last predict() applied Fj_ (a flag, not a pointer: copies stay right)
  Eigen::PartialPivLU<MatrixXd> lu_;
  VectorXd e_, b_, bt_;
  MatrixXd S_, S_next_;  // the sensitivity to the unmodelled biases, and its propagation buffer
  Eigen::RowVectorXd hs_;  // H S + c of an update
  std::vector<double> bias_std_;
  VectorXd boost_;  // per acceleration error, see set_accel_noise_boost
  VectorXd accel_scale_;  // per observed coordinate, see set_accel_noise_scale
  VectorXd sensor_scale_;  // per sensor parameter, see set_sensor_noise_scale
  struct Planar {
    int ix = -1, iy = -1;
    double psi = 0, k_long = 1, k_lat = 1;
  } planar_;  // see set_planar_noise_scale
  double noise_scale_ = 1;
  VectorXd learn_;  // per state: 1 learns, 0 is considered (only parameters are ever 0)
  int considered_ = 0;  // how many are 0
  std::vector<int> considered_states_;  // their indices, ascending (capacity reserved: N)
  bool considered_stale_ = false;  // learn_ changed since they were listed
  int along_a_ = -1, along_b_ = -1;  // set_learning_along
  double along_da_ = 0, along_db_ = 0;
  std::vector<int> held_states_;  // considered states and the pair, ascending (capacity N + 2)
};

// Van Loan's method (Sinigaglia 2016 eqs. (121)-(123)): the discrete plant noise W_k of
// x_dot = F x + G w, E[w w'] = Wc delta, over a step dt.
MatrixXd van_loan(const MatrixXd& F, const MatrixXd& GWcGt, double dt);

}  // namespace mbo::est
