#include "mbobserver/estimation/observer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mbobserver/mb/forces.hpp"
#include "mbobserver/mb/kinematics.hpp"

namespace mbo::est {

void read_forced_coordinates(const JsonReader& fe, const std::vector<std::string>& observed, ErrorEkfSettings& fs) {
  auto p = fe.at("plant_noise");
  auto i = fe.at("initial_std");
  fs.forced.clear();
  fs.accel_rate_noise.clear();
  fs.initial_std_a.clear();
  for (std::size_t j = 0; j < observed.size(); ++j) {
    const std::string& n = observed[j];
    if (!p.has(n)) {
      if (i.has(n)) i.fail("\"" + n + "\" has no force error (it is not in plant_noise)");
      continue;
    }
    fs.forced.push_back(static_cast<int>(j));
    fs.accel_rate_noise.push_back(p.non_negative(n));
    if (!i.has(n)) i.fail("missing \"" + n + "\"");
    fs.initial_std_a.push_back(i.positive(n));
  }
  p.finish();  // a name that is not an observed coordinate is an unknown key
  i.finish();
  if (fs.forced.empty()) p.fail("names no observed coordinate");
}

void read_force_error_settings(const JsonReader& fe, ObserverSettings& s, int default_period,
                               JacobianTerms default_terms, ForceCorrection default_correction) {
  s.jacobian_period = static_cast<int>(fe.integer("jacobian_period", 0, 1000000, default_period));
  const bool all_default = default_terms == JacobianTerms::all;
  s.jacobian_terms = fe.choice("jacobian_terms", {"all", "forces"}, all_default ? "all" : "forces") == "all"
                         ? JacobianTerms::all
                         : JacobianTerms::forces;
  s.jacobian_max_change = fe.non_negative("jacobian_max_change", 1.0);
  const bool inertial_default = default_correction == ForceCorrection::inertial;
  s.force_correction =
      fe.choice("correction", {"inertial", "coordinates"}, inertial_default ? "inertial" : "coordinates") == "inertial"
          ? ForceCorrection::inertial
          : ForceCorrection::coordinates;
}

MbObserver::MbObserver(const mb::Model& model, std::vector<std::shared_ptr<const Sensor>> sensors,
                       const ObserverSettings& settings, double dt)
    : m_(model),
      sensors_(std::move(sensors)),
      settings_(settings),
      dt_(dt),
      ws_(model),
      s_(mb::initial_state(model)),
      backup_(mb::initial_state(model)),
      ekf_(static_cast<int>(settings.observed.size()), settings.filter, dt) {
  if (m_.z.empty()) throw std::invalid_argument("the observer needs a model with independent coordinates");
  for (int o : settings_.observed)
    if (o < 0 || o >= static_cast<int>(m_.z.size()))
      throw std::invalid_argument("observed coordinate index out of range");
  const int n = static_cast<int>(settings_.observed.size());
  xdd_ = VectorXd::Zero(m_.nq + m_.nconst);
  H_ = VectorXd::Zero(ekf_.size());
  hzdd_ = VectorXd::Zero(n);
  dq_ = dqd_ = qp_ = qdp_ = VectorXd::Zero(m_.nq);
  zdd0_ = zdd1_ = VectorXd::Zero(m_.z.size());
  A21_ = A22_ = A21n_ = A22n_ = MatrixXd::Zero(n, n);
  if (!ekf_.force_error()) {  // errorEKF: read but not used, as the filter does
    settings_.estimated_inputs.clear();
    settings_.input_min.clear();
    settings_.input_max.clear();
  }
  const auto r = settings_.estimated_inputs.size();
  if (static_cast<int>(r) != ekf_.inputs()) throw std::invalid_argument("estimated inputs: one filter state per input");
  if (r > 0 && settings_.jacobian_period <= 0)
    throw std::invalid_argument("estimated inputs need a jacobian_period: B = dzdd/du is taken with the Jacobians");
  if (settings_.input_min.size() != r || settings_.input_max.size() != r)
    throw std::invalid_argument("estimated inputs: one range per input");
  for (std::size_t k = 0; k < r; ++k)
    if (settings_.estimated_inputs[k] < 0 || settings_.estimated_inputs[k] >= static_cast<int>(s_.u.size()) ||
        !(settings_.input_min[k] <= settings_.input_max[k]))
      throw std::invalid_argument("estimated inputs: input out of range or empty range");
  B_ = Bn_ = MatrixXd::Zero(n, static_cast<Eigen::Index>(r));
  input_error_ = input_base_ = VectorXd::Zero(static_cast<Eigen::Index>(r));
  Mbar_ = MatrixXd::Zero(m_.z.size(), m_.z.size());
  tmp_mq_ = MatrixXd::Zero(m_.nq, m_.z.size());
  M_ = MatrixXd::Zero(m_.nq, m_.nq);
  for (std::size_t e = 0; e < m_.mass.size(); ++e) M_(m_.mass[e].row, m_.mass[e].col) += m_.mass_values[e];
  mb::rotor_mass(m_, m_.x0, M_);  // and again wherever M_ is used: the rotors' part moves
  mbar_ldlt_.compute(MatrixXd::Identity(m_.z.size(), m_.z.size()));
  rhs_z_ = VectorXd::Zero(m_.z.size());
  Q0_ = qd0_ = q0_ = VectorXd::Zero(m_.nq);
  u0_ = s_.u;
  rq0_ = VectorXd::Zero(m_.z.size());
  Robs_ = MatrixXd::Zero(m_.nq, n);
  tmp_q_ = qdd_before_ = VectorXd::Zero(m_.nq);
}

void MbObserver::initialize(const mb::State& s) {
  s_ = s;
  ekf_.reset_covariance();
  input_error_.setZero();
  jacobians_trusted_ = false;  // those of the state before: not used until new ones are taken
  steps_ = 0;
}

void MbObserver::jacobian_row(const Gradients& g, VectorXd& H) {
  const int n = static_cast<int>(settings_.observed.size());
  H.setZero();
  for (int j = 0; j < n; ++j) {
    const int c = settings_.observed[j];
    double hz = 0, hzd = 0, hzdd = 0;
    for (int i = 0; i < g.dq.n; ++i) hz += g.dq.value[i] * ws_.R(g.dq.slot[i], c);
    for (int i = 0; i < g.dqd.n; ++i) {
      hz += g.dqd.value[i] * ws_.Rdot(g.dqd.slot[i], c);
      hzd += g.dqd.value[i] * ws_.R(g.dqd.slot[i], c);
    }
    for (int i = 0; i < g.dqdd.n; ++i) hzdd += g.dqdd.value[i] * ws_.R(g.dqdd.slot[i], c);
    H[j] = hz;
    H[n + j] = hzd;
    hzdd_[j] = hzdd;
  }
  const auto& forced = ekf_.forced();
  for (std::size_t k = 0; k < forced.size(); ++k) H[2 * n + k] = hzdd_[forced[k]];
  // An acceleration measurement sees the errors of z and zd too, through the model's own
  // dynamics: dzdd = A21 dz + A22 dzd + da (Sinigaglia 2016 eq. (66)). Without these terms a
  // velocity error (a sideslip the tyres answer with a lateral force) would be read as a
  // force error.
  if (g.dqdd.n > 0 && uses_jacobians()) {
    H.head(n).noalias() += A21_.transpose() * hzdd_;
    H.segment(n, n).noalias() += A22_.transpose() * hzdd_;
    if (B_.cols() > 0) H.segment(ekf_.inputs_offset(), B_.cols()).noalias() += B_.transpose() * hzdd_;
  }
}

double MbObserver::predict_measurement(int sensor, int row) {
  ws_.x.head(m_.nq) = s_.q;
  ws_.xd.head(m_.nq) = s_.qd;
  xdd_.head(m_.nq) = s_.qdd;
  MeasureContext ctx{m_, ws_.x, ws_.xd, xdd_};
  return sensors_.at(sensor)->measure(ctx, row, nullptr);
}

void MbObserver::reduced_acceleration(const VectorXd& q, const VectorXd& qd, VectorXd& zdd) {
  // Sinigaglia 2016 eq. (67): zdd = (R' M R)^-1 R' (Q - M Rdot zd)
  mb::factor_kinematics(m_, q, ws_);
  mb::compute_R(m_, ws_);
  mb::compute_Rdot(m_, qd, ws_);
  ws_.x.head(m_.nq) = q;
  ws_.xd.head(m_.nq) = qd;
  mb::rotor_mass(m_, ws_.x, M_);
  mb::generalized_forces(m_, ws_.x, ws_.xd, s_.u, s_.t, false, ws_.forces);
  for (std::size_t j = 0; j < m_.z.size(); ++j) rhs_z_[j] = qd[m_.z[j]];
  tmp_q_.noalias() = ws_.Rdot * rhs_z_;
  dq_.noalias() = M_ * tmp_q_;
  dq_ = ws_.forces.Q + s_.Q_correction - dq_;
  tmp_q_.setZero();
  mb::rotor_inertia(m_, ws_.x, ws_.xd, nullptr, tmp_q_);  // the rotors' gyroscopic terms
  dq_ -= tmp_q_;
  rhs_z_.noalias() = ws_.R.transpose() * dq_;
  tmp_mq_.noalias() = M_ * ws_.R;
  Mbar_.noalias() = ws_.R.transpose() * tmp_mq_;
  mbar_ldlt_.compute(Mbar_);
  zdd = mbar_ldlt_.solve(rhs_z_);
}

void MbObserver::model_jacobians() {
  // dzdd/dz and dzdd/dzd of the observed coordinates by one-sided differences of eq. (67).
  const int n = static_cast<int>(settings_.observed.size());
  reduced_acceleration(s_.q, s_.qd, zdd0_);
  for (int j = 0; j < n; ++j) {
    const int zi = m_.z[settings_.observed[j]];
    const double h = 1e-6 * std::max(1.0, std::abs(s_.q[zi]));
    qp_ = s_.q;
    qp_[zi] += h;
    mb::solve_position(m_, qp_, s_.u, ws_);
    qdp_ = s_.qd;
    mb::solve_velocity(m_, s_.u, qdp_, ws_);
    reduced_acceleration(qp_, qdp_, zdd1_);
    for (int i = 0; i < n; ++i) A21n_(i, j) = (zdd1_[settings_.observed[i]] - zdd0_[settings_.observed[i]]) / h;
    const double hd = 1e-6 * std::max(1.0, std::abs(s_.qd[zi]));
    mb::factor_kinematics(m_, s_.q, ws_);
    qdp_ = s_.qd;
    qdp_[zi] += hd;
    mb::solve_velocity(m_, s_.u, qdp_, ws_);
    reduced_acceleration(s_.q, qdp_, zdd1_);
    for (int i = 0; i < n; ++i) A22n_(i, j) = (zdd1_[settings_.observed[i]] - zdd0_[settings_.observed[i]]) / hd;
  }
  for (Eigen::Index k = 0; k < Bn_.cols(); ++k) {
    double& u = s_.u[settings_.estimated_inputs[k]];
    const double u0 = u, h = 1e-6 * std::max(1.0, std::abs(u));
    u = u0 + h;
    reduced_acceleration(s_.q, s_.qd, zdd1_);
    u = u0;
    for (int i = 0; i < n; ++i) Bn_(i, k) = (zdd1_[settings_.observed[i]] - zdd0_[settings_.observed[i]]) / h;
  }
  adopt_jacobians();
}

void MbObserver::adopt_jacobians() {
  // A linearisation that moved by more than its own size over one period does not describe the
  // next one either: tyres crossing their force peak within an ABS lock/release cycle (dFx/dkappa
  // from -230 to +3 1/s and back). Such a period is predicted without the Jacobians, as
  // errorEKF-FE without them would (ABS braking: x 0.016 -> 0.007 m, and no longer 0.05-0.17 m
  // for periods of 5 or 50 steps); the lane change's and the circle's move by 5-11 % at most.
  const double change = (A22n_ - A22_).norm();
  jacobians_trusted_ = settings_.jacobian_max_change <= 0 || change <= settings_.jacobian_max_change * A22_.norm();
  A21_ = A21n_;  // the pair changes together, a whole period after the other
  A22_ = A22n_;
  B_ = Bn_;
}

// eq. (67), zdd = Mbar^-1 R' (Q - M Rdot zd), linearised with Mbar held at the state:
//   velocity:  dzdd = Mbar^-1 R' (dQ - M Rdot dzd)          (Rdot's own change left out)
//   position:  dzdd = Mbar^-1 d(R' Q)                        (M Rdot zd's change left out)
// along consistent motions: qd + hd R_j (R spans the constraints' null space), and q + h R_j
// with the velocities projected there. d(R' Q) keeps R's change: a wheel's forces sit on
// vectors that turn with it, and only R(q + h R_j)' Q(q + h R_j) sees that the torque about its
// axle does not change with its spin angle. What is left out, the change of Mbar and of the
// inertia terms, is a linkage's (use `all` there), not a tyre's: a tyre's slip answers a wheel
// spin rate in a fraction of a step. The velocity half saves the base state; the position
// columns differentiate about that base, on the next steps, to spread the cost; the filter
// takes the new pair once both halves are done. The FE force correction is left out: with
// `coordinates` it sits on z slots (R' Q_c does not change); with `inertial` (M R da) its
// change with the configuration is dropped.
void MbObserver::force_jacobian_forces(const VectorXd& q, const VectorXd& qd) {
  ws_.x.head(m_.nq) = q;
  ws_.xd.head(m_.nq) = qd;
  mb::generalized_forces(m_, ws_.x, ws_.xd, u0_, t0_, false, ws_.forces);
}

void MbObserver::force_jacobian_column(double step, MatrixXd& A, int j) {
  zdd1_ = mbar_ldlt_.solve(rhs_z_);
  for (int i = 0; i < A.rows(); ++i) A(i, j) = zdd1_[settings_.observed[i]] / step;
}

void MbObserver::force_jacobians_velocity() {
  const int n = static_cast<int>(settings_.observed.size());
  q0_ = s_.q;
  u0_ = s_.u;
  t0_ = s_.t;
  mb::factor_kinematics(m_, q0_, ws_);
  mb::compute_R(m_, ws_);
  mb::compute_Rdot(m_, s_.qd, ws_);
  ws_.x.head(m_.nq) = q0_;
  mb::rotor_mass(m_, ws_.x, M_);
  tmp_mq_.noalias() = M_ * ws_.R;
  Mbar_.noalias() = ws_.R.transpose() * tmp_mq_;
  mbar_ldlt_.compute(Mbar_);
  for (int j = 0; j < n; ++j) Robs_.col(j) = ws_.R.col(settings_.observed[j]);
  // The base velocities projected as the perturbed ones will be: the step leaves them
  // consistent only to its tolerance, which a difference over h = 1e-6 would amplify.
  qd0_ = s_.qd;
  mb::solve_velocity(m_, u0_, qd0_, ws_);
  force_jacobian_forces(q0_, qd0_);
  Q0_ = ws_.forces.Q;
  rq0_.noalias() = ws_.R.transpose() * Q0_;
  for (int j = 0; j < n; ++j) {
    const double hd = 1e-6 * std::max(1.0, std::abs(qd0_[m_.z[settings_.observed[j]]]));
    qdp_ = qd0_ + hd * Robs_.col(j);
    force_jacobian_forces(q0_, qdp_);
    dq_.noalias() = M_ * ws_.Rdot.col(settings_.observed[j]);
    dq_ *= -hd;
    dq_ += ws_.forces.Q;
    dq_ -= Q0_;
    rhs_z_.noalias() = ws_.R.transpose() * dq_;
    force_jacobian_column(hd, A22n_, j);
  }
  // dzdd/du = Mbar^-1 R' dQ/du: an input moves the applied forces only.
  for (Eigen::Index k = 0; k < Bn_.cols(); ++k) {
    double& u = u0_[settings_.estimated_inputs[k]];
    const double u0 = u, h = 1e-6 * std::max(1.0, std::abs(u));
    u = u0 + h;
    force_jacobian_forces(q0_, qd0_);
    u = u0;
    dq_ = ws_.forces.Q - Q0_;
    rhs_z_.noalias() = ws_.R.transpose() * dq_;
    force_jacobian_column(h, Bn_, static_cast<int>(k));
  }
}

void MbObserver::force_jacobians_position(int first, int last) {
  for (int j = first; j < last; ++j) {
    const double h = 1e-6 * std::max(1.0, std::abs(q0_[m_.z[settings_.observed[j]]]));
    qp_ = q0_ + h * Robs_.col(j);
    qdp_ = qd0_;
    mb::factor_kinematics(m_, qp_, ws_);
    mb::solve_velocity(m_, u0_, qdp_, ws_);
    mb::compute_R(m_, ws_);
    force_jacobian_forces(qp_, qdp_);
    rhs_z_.noalias() = ws_.R.transpose() * ws_.forces.Q;
    rhs_z_ -= rq0_;
    force_jacobian_column(h, A21n_, j);
  }
  if (last == static_cast<int>(settings_.observed.size())) adopt_jacobians();
}

void MbObserver::apply_input_error(int k) {
  // The estimate stays in its range; the error is what the range leaves of it.
  const double u = std::clamp(input_base_[k] + input_error_[k], settings_.input_min[k], settings_.input_max[k]);
  input_error_[k] = u - input_base_[k];
  s_.u[settings_.estimated_inputs[k]] = u;
}

void MbObserver::correct(ObserverStepReport& r) {
  const int n = static_cast<int>(settings_.observed.size());
  const VectorXd& e = ekf_.error();
  // Done first, while the kinematic factorisation is still the one R was computed with.
  if (ekf_.force_error()) {
    const auto& forced = ekf_.forced();
    // The acceleration error becomes a generalised force that stays in the model (Sinigaglia 2016
    // Fig. 33, eqs. (125)-(126)) such that R' dQ = Mbar da, Mbar = R' M R. Two choices of dQ:
    //  inertial:     dQ = M R da, an inertia-weighted force over all coordinates (what a mass
    //                or inertia error produces, a fraction of M qdd);
    //  coordinates:  dQ on the independent coordinates themselves, dQ_z = Mbar da (R has
    //                identity rows at z), so a torque on a crank angle stays a torque on it and
    //                a force along x stays along x as the mechanism moves (a "front wind").
    tmp_q_.setZero();
    for (std::size_t k = 0; k < forced.size(); ++k) tmp_q_ += e[2 * n + k] * ws_.R.col(settings_.observed[forced[k]]);
    ws_.x.head(m_.nq) = s_.q;
    mb::rotor_mass(m_, ws_.x, M_);
    dq_.noalias() = M_ * tmp_q_;  // M R da
    if (settings_.force_correction == ForceCorrection::inertial) {
      s_.Q_correction += dq_;
    } else {
      mb::apply_Rt(m_, ws_, dq_, tmp_q_);  // Mbar da = R' M R da on the z slots
      s_.Q_correction += tmp_q_;
    }
  }
  for (Eigen::Index k = 0; k < input_error_.size(); ++k) {
    input_error_[k] += e[ekf_.inputs_offset() + k];
    apply_input_error(static_cast<int>(k));
  }
  if (settings_.correction == Correction::position_problem) {
    for (int j = 0; j < n; ++j) s_.q[m_.z[settings_.observed[j]]] += e[j];
    auto k = mb::solve_position(m_, s_.q, s_.u, ws_);
    r.correction_converged = k.converged;
    for (int j = 0; j < n; ++j) s_.qd[m_.z[settings_.observed[j]]] += e[n + j];
    mb::solve_velocity(m_, s_.u, s_.qd, ws_);
  } else {
    // R is the one evaluated before the updates, at the predicted position.
    for (int j = 0; j < n; ++j) {
      s_.q += e[j] * ws_.R.col(settings_.observed[j]);
      s_.qd += e[n + j] * ws_.R.col(settings_.observed[j]);
    }
    mb::factor_kinematics(m_, s_.q, ws_);
  }
  // Accelerations consistent with the corrected positions and velocities (z_dd kept).
  qdd_before_ = s_.qdd;
  mb::solve_acceleration(m_, s_.u, s_.qd, s_.qdd, ws_);
  // The correction moves the trajectory, not its trend: the model step's predictor history
  // (accelerations of the last steps, mb::step) moves with it, or the next step extrapolates
  // the jump (lane change: 2.5 Newton iterations per step instead of 2).
  s_.qdd_prev += s_.qdd - qdd_before_;
  s_.qdd_prev2 += s_.qdd - qdd_before_;
  ekf_.reset_error();
}

ObserverStepReport MbObserver::step(const std::vector<ScalarMeasurement>& measurements,
                                    std::vector<UpdateResult>* results) {
  ObserverStepReport r;
  for (Eigen::Index k = 0; k < input_error_.size(); ++k) {
    input_base_[k] = s_.u[settings_.estimated_inputs[k]];
    apply_input_error(static_cast<int>(k));
  }
  // A step whose Newton iteration does not converge (a hard transient after a correction:
  // a wheel locking, a tyre lifting) is retried from the same state as 2, then 4 substeps
  // before it is reported; the inputs hold over the step.
  backup_ = s_;
  r.model_step = mb::step(m_, s_, ws_, dt_);
  for (int n = 2; !r.model_step.converged && n <= 4; n *= 2) {
    s_ = backup_;
    r.substeps = n;
    for (int k = 0; k < n; ++k) {
      r.model_step = mb::step(m_, s_, ws_, dt_ / n);
      if (!r.model_step.converged) break;
    }
  }
  if (ekf_.force_error() && settings_.jacobian_period > 0) {
    const long phase = steps_ % settings_.jacobian_period;
    if (settings_.jacobian_terms == JacobianTerms::all) {
      if (phase == 0) model_jacobians();
    } else {
      // Spread over three steps where the period allows: the velocity columns, then half of
      // the position columns on each of the next two (about 50 us each on the sedan).
      const int n = static_cast<int>(settings_.observed.size());
      const int half = settings_.jacobian_period >= 3 ? n / 2 : n;
      if (phase == 0) force_jacobians_velocity();
      if (phase == 0 && settings_.jacobian_period < 3) force_jacobians_position(0, n);
      if (phase == 1 && settings_.jacobian_period >= 3) force_jacobians_position(0, half);
      if (phase == 2 && settings_.jacobian_period >= 3) force_jacobians_position(half, n);
    }
  }
  // B = dzdd/du is a tyre-force derivative like A22: where A22 jumps (ABS at the force peak)
  // it is not trusted either and leaves the transition (ABS braking: friction RMSE 0.038 with
  // it, 0.010 without). The input still moves then, through the correlations built before.
  if (uses_jacobians())
    ekf_.predict(&A21_, &A22_, B_.cols() > 0 ? &B_ : nullptr);
  else
    ekf_.predict();
  if (results) results->clear();
  // Jacobian rows need R and Rdot at the predicted state.
  const bool kin_ok = mb::factor_kinematics(m_, s_.q, ws_);
  // The columns of R and Rdot of the observed coordinates are all the filter needs (H, the
  // correction; FE's force correction reduces M R da without forming R: mb::apply_Rt).
  const std::span<const int> cols(settings_.observed);
  if (!measurements.empty() && kin_ok) {
    mb::compute_R(m_, ws_, cols);
    mb::compute_Rdot(m_, s_.qd, ws_, cols);
    ws_.x.head(m_.nq) = s_.q;
    ws_.xd.head(m_.nq) = s_.qd;
    xdd_.head(m_.nq) = s_.qdd;
    MeasureContext ctx{m_, ws_.x, ws_.xd, xdd_};
    for (const auto& meas : measurements) {
      const Sensor& sensor = *sensors_.at(meas.sensor);
      grad_.clear(m_.nq);
      double h = sensor.measure(ctx, meas.row, &grad_);
      double nu = meas.value - h;
      if (sensor.is_angle(meas.row)) nu = wrap_angle(nu);
      jacobian_row(grad_, H_);
      UpdateResult u = ekf_.update(H_, nu, meas.variance, meas.gate_sigma);
      if (u.accepted)
        ++r.fused;
      else
        ++r.rejected;
      if (results) results->push_back(u);
    }
  } else if (!kin_ok) {
    r.correction_converged = false;
  } else {
    mb::compute_R(m_, ws_, cols);
  }
  correct(r);
  r.healthy = ekf_.healthy() && r.model_step.converged && r.correction_converged;
  ++steps_;
  return r;
}

}  // namespace mbo::est
