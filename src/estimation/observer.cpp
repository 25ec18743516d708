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
    fs.accel_rate_noise.push_back(p.number_in(n, 0, kMaxPlantNoise));
    if (!i.has(n)) i.fail("missing \"" + n + "\"");
    fs.initial_std_a.push_back(i.positive_up_to(n, kMaxInitialStd));
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
  s.jacobian_max_change = fe.number_in("jacobian_max_change", 0, 1e6, 1.0);
  s.settled_weight = fe.boolean("settled_weight", false);
  const bool inertial_default = default_correction == ForceCorrection::inertial;
  s.force_correction =
      fe.choice("correction", {"inertial", "coordinates"}, inertial_default ? "inertial" : "coordinates") == "inertial"
          ? ForceCorrection::inertial
          : ForceCorrection::coordinates;
}

namespace {

// errorEKF reads a force_error block's inputs but does not use them, as the filter does.
ObserverSettings used_settings(ObserverSettings s) {
  if (!s.filter.force_error) {
    s.estimated_inputs.clear();
    s.input_min.clear();
    s.input_max.clear();
  }
  return s;
}

}  // namespace

MbObserver::MbObserver(const mb::Model& model, std::vector<std::shared_ptr<const Sensor>> sensors,
                       const ObserverSettings& settings, double dt)
    : m_(model),
      sensors_(std::move(sensors)),
      settings_(used_settings(settings)),
      dt_(dt),
      ws_(model),
      s_(mb::initial_state(model)),
      backup_(mb::initial_state(model)),
      ekf_(static_cast<int>(settings.observed.size()), settings.filter, dt),
      derivatives_(model, settings_.observed, settings_.estimated_inputs, settings_.jacobian_terms,
                   settings_.jacobian_period) {
  if (m_.z.empty()) throw std::invalid_argument("the observer needs a model with independent coordinates");
  derivatives_.settled_mass_inputs = settings_.settled_weight;
  for (int o : settings_.observed)
    if (o < 0 || o >= static_cast<int>(m_.z.size()))
      throw std::invalid_argument("observed coordinate index out of range");
  const int n = static_cast<int>(settings_.observed.size());
  xdd_ = VectorXd::Zero(m_.nq + m_.nconst);
  H_ = VectorXd::Zero(ekf_.size());
  hzdd_ = VectorXd::Zero(n);
  dq_ = tmp_q_ = qdd_before_ = VectorXd::Zero(m_.nq);
  A21_ = A22_ = MatrixXd::Zero(n, n);
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
  B_ = MatrixXd::Zero(n, static_cast<Eigen::Index>(r));
  input_error_ = input_base_ = VectorXd::Zero(static_cast<Eigen::Index>(r));
  const auto ns = static_cast<std::size_t>(ekf_.sensor_parameters());
  if (settings_.sensor_initial.size() != ns || settings_.sensor_min.size() != ns || settings_.sensor_max.size() != ns)
    throw std::invalid_argument("sensor parameters: one value and one range per filter state");
  for (std::size_t k = 0; k < ns; ++k)
    if (!(settings_.sensor_min[k] <= settings_.sensor_initial[k] &&
          settings_.sensor_initial[k] <= settings_.sensor_max[k]))
      throw std::invalid_argument("sensor parameters: a starting value outside its range");
  sensor_params_ = Eigen::Map<const VectorXd>(settings_.sensor_initial.data(), static_cast<Eigen::Index>(ns));
  sensor_keep_ = VectorXd::Ones(static_cast<Eigen::Index>(ns));
  for (std::size_t k = 0; k < settings_.filter.sensor_decay.size() && k < ns; ++k) {
    sensor_keep_[static_cast<Eigen::Index>(k)] = std::exp(-dt_ * settings_.filter.sensor_decay[k]);
    sensor_decays_ = sensor_decays_ || settings_.filter.sensor_decay[k] > 0;
  }
  tracked_value_ = VectorXd::Zero(static_cast<Eigen::Index>(ns));
  tracked_var_ = VectorXd::Constant(static_cast<Eigen::Index>(ns), -1.0);
  h_unit_ = VectorXd::Zero(ekf_.size());
}

void MbObserver::set_sensor_parameter(int k, double value, double var) {
  sensor_params_[k] = std::clamp(value, settings_.sensor_min[k], settings_.sensor_max[k]);
  if (var > 0) {
    auto& P = ekf_.covariance();
    const int i = ekf_.layout().sensor(k);
    P.row(i).setZero();
    P.col(i).setZero();
    P(i, i) = var;
    ekf_.forget_unmodelled(i);
  }
}

void MbObserver::track_sensor_parameter(int k, double value, double var) {
  if (!(var > 0) || !std::isfinite(value)) return;
  tracked_value_[k] = std::clamp(value, settings_.sensor_min[k], settings_.sensor_max[k]);
  tracked_var_[k] = var;
}

void MbObserver::apply_tracked_parameters() {
  auto& P = ekf_.covariance();
  for (int k = 0; k < tracked_var_.size(); ++k) {
    const double var = tracked_var_[k];
    if (var < 0) continue;
    tracked_var_[k] = -1;
    const int i = ekf_.layout().sensor(k);
    const double p = P(i, i), delta = tracked_value_[k] - sensor_params_[k];
    if (!(p > 0)) continue;
    if (var < p * (1 - 1e-6)) {
      // posterior (value, var) from the prior (params, p): K = 1 - var / p, nu = delta / K,
      // r = p (1 - K) / K; the states correlated with it move by P(:, i) / p * delta
      const double K = 1 - var / p;
      h_unit_.setZero();
      h_unit_[i] = 1;
      const bool was = ekf_.learning(i);
      ekf_.set_learning(i, true);
      const double e = ekf_.error()[i];  // 0 right after the prediction
      ekf_.update(h_unit_, (delta - e) / K + e, p * (1 - K) / K, 0);
      ekf_.set_learning(i, was);
    } else {
      const double f = std::sqrt(var / p);
      P.row(i) *= f;
      P.col(i) *= f;
      sensor_params_[k] = tracked_value_[k];
    }
  }
}

void MbObserver::set_input_variance(int k, double var) {
  auto& P = ekf_.covariance();
  const int i = ekf_.layout().input(k);
  P.row(i).setZero();
  P.col(i).setZero();
  P(i, i) = var;
  // the input keeps its value, and with it what the unmodelled biases did to it: S stays
}

void MbObserver::initialize(const mb::State& s) {
  s_ = s;
  // What the filter learned of the sensors is kept across a new start of the model: a gyro's
  // bias does not change because the model was reset.
  const auto S = ekf_.layout().sensor();
  tmp_s_ = ekf_.covariance().diagonal().segment(S.offset, S.size);
  ekf_.reset_covariance();
  for (int k = 0; k < S.size; ++k) ekf_.covariance()(S.offset + k, S.offset + k) = tmp_s_[k];
  input_error_.setZero();
  jacobians_trusted_ = false;  // those of the state before: not used until new ones are taken
  steps_ = 0;
}

int MbObserver::observed_index(int slot) const {
  for (std::size_t j = 0; j < settings_.observed.size(); ++j)
    if (m_.z[settings_.observed[j]] == slot) return static_cast<int>(j);
  return -1;
}

void MbObserver::restart_coordinate(int j) {
  const auto& L = ekf_.layout();
  const auto& f = settings_.filter;
  auto& P = ekf_.covariance();
  auto restart = [&](int i, double sd) {
    P.row(i).setZero();
    P.col(i).setZero();
    P(i, i) = sd * sd;
    ekf_.forget_unmodelled(i);
  };
  restart(L.z(j), f.initial_std_z[j]);
  restart(L.zd(j), f.initial_std_zd[j]);
  const auto& forced = ekf_.forced();
  for (std::size_t k = 0; k < forced.size(); ++k)
    if (forced[k] == j) restart(L.accel(static_cast<int>(k)), f.initial_std_a[k]);
}

void MbObserver::forget_force_error(int k) {
  if (settings_.force_correction != ForceCorrection::coordinates) return;
  const auto& L = ekf_.layout();
  const int j = ekf_.forced()[static_cast<std::size_t>(k)];
  // the coordinates correction puts dQ_z = Mbar da on the z slots only (correct())
  s_.Q_correction[m_.z[settings_.observed[j]]] = 0;
  auto& P = ekf_.covariance();
  const int i = L.accel(k);
  P.row(i).setZero();
  P.col(i).setZero();
  P(i, i) = settings_.filter.initial_std_a[static_cast<std::size_t>(k)] *
            settings_.filter.initial_std_a[static_cast<std::size_t>(k)];
  ekf_.forget_unmodelled(i);
}

void MbObserver::jacobian_row(const Gradients& g, VectorXd& H) {
  const auto& L = ekf_.layout();
  const int n = L.observed;
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
    H[L.z(j)] = hz;
    H[L.zd(j)] = hzd;
    hzdd_[j] = hzdd;
  }
  const auto& forced = ekf_.forced();
  for (int k = 0; k < L.forced; ++k) H[L.accel(k)] = hzdd_[forced[k]];
  for (int i = 0; i < g.dp.n; ++i) H[L.sensor(g.dp.slot[i])] += g.dp.value[i];
  // An acceleration measurement sees the errors of z and zd too, through the model's own
  // dynamics: dzdd = A21 dz + A22 dzd + da (Sinigaglia 2016 eq. (66)). Without these terms a
  // velocity error (a sideslip the tyres answer with a lateral force) would be read as a
  // force error.
  if (g.dqdd.n > 0 && uses_jacobians()) {
    H.segment(L.z().offset, n).noalias() += A21_.transpose() * hzdd_;
    H.segment(L.zd().offset, n).noalias() += A22_.transpose() * hzdd_;
    if (L.inputs > 0) H.segment(L.input().offset, L.inputs).noalias() += B_.transpose() * hzdd_;
  }
}

double MbObserver::predict_measurement(int sensor, int row) {
  ws_.x.head(m_.nq) = s_.q;
  ws_.xd.head(m_.nq) = s_.qd;
  xdd_.head(m_.nq) = s_.qdd;
  MeasureContext ctx{m_, ws_.x, ws_.xd, xdd_, &sensor_params_};
  return sensors_.at(sensor)->measure(ctx, row, nullptr);
}

void MbObserver::adopt_jacobians() {
  // A linearisation that moved by more than its own size over one period does not describe the
  // next one either: tyres crossing their force peak within an ABS lock/release cycle (dFx/dkappa
  // from -230 to +3 1/s and back). Such a period is predicted without the Jacobians, as
  // errorEKF-FE without them would (ABS braking: x 0.016 -> 0.007 m, and no longer 0.05-0.17 m
  // for periods of 5 or 50 steps); the lane change's and the circle's move by 5-11 % at most.
  const auto& d = derivatives_;
  const double change = (d.dzd - A22_).norm();
  jacobians_trusted_ = settings_.jacobian_max_change <= 0 || change <= settings_.jacobian_max_change * A22_.norm();
  A21_ = d.dz;  // the pair changes together, a whole period after the other
  A22_ = d.dzd;
  B_ = d.du;
}

void MbObserver::apply_input_error(int k) {
  // The estimate stays in its range; the error is what the range leaves of it.
  const double u = std::clamp(input_base_[k] + input_error_[k], settings_.input_min[k], settings_.input_max[k]);
  input_error_[k] = u - input_base_[k];
  s_.u[settings_.estimated_inputs[k]] = u;
}

void MbObserver::correct(ObserverStepReport& r) {
  const auto& L = ekf_.layout();
  const int n = L.observed;
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
    for (int k = 0; k < L.forced; ++k) tmp_q_ += e[L.accel(k)] * ws_.R.col(settings_.observed[forced[k]]);
    ws_.x.head(m_.nq) = s_.q;
    mb::rotor_mass(m_, ws_.x, derivatives_.M);  // the rotors' part of M at this configuration
    dq_.noalias() = derivatives_.M * tmp_q_;  // M R da
    if (settings_.force_correction == ForceCorrection::inertial) {
      s_.Q_correction += dq_;
    } else {
      mb::apply_Rt(m_, ws_, dq_, tmp_q_);  // Mbar da = R' M R da on the z slots
      s_.Q_correction += tmp_q_;
    }
  }
  for (Eigen::Index k = 0; k < input_error_.size(); ++k) {
    input_error_[k] += e[L.input(static_cast<int>(k))];
    apply_input_error(static_cast<int>(k));
  }
  for (int k = 0; k < L.sensors; ++k)  // a parameter never leaves its physical range
    sensor_params_[k] =
        std::clamp(sensor_params_[k] + e[L.sensor(k)], settings_.sensor_min[k], settings_.sensor_max[k]);
  if (settings_.correction == Correction::position_problem) {
    for (int j = 0; j < n; ++j) s_.q[m_.z[settings_.observed[j]]] += e[L.z(j)];
    auto k = mb::solve_position(m_, s_.q, s_.u, ws_);
    r.correction_converged = k.converged;
    for (int j = 0; j < n; ++j) s_.qd[m_.z[settings_.observed[j]]] += e[L.zd(j)];
    mb::solve_velocity(m_, s_.u, s_.qd, ws_);
  } else {
    // R is the one evaluated before the updates, at the predicted position.
    for (int j = 0; j < n; ++j) {
      s_.q += e[L.z(j)] * ws_.R.col(settings_.observed[j]);
      s_.qd += e[L.zd(j)] * ws_.R.col(settings_.observed[j]);
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
  if (ekf_.force_error() && mb::differentiate_accelerations(m_, s_, steps_, ws_, derivatives_)) adopt_jacobians();
  // B = dzdd/du is a tyre-force derivative like A22: where A22 jumps (ABS at the force peak)
  // it is not trusted either and leaves the transition (ABS braking: friction RMSE 0.038 with
  // it, 0.010 without). The input still moves then, through the correlations built before.
  if (uses_jacobians())
    ekf_.predict(&A21_, &A22_, B_.cols() > 0 ? &B_ : nullptr);
  else
    ekf_.predict();
  // a Gauss-Markov parameter's expected value decays as its error's transition does
  if (sensor_decays_) sensor_params_.array() *= sensor_keep_.array();
  apply_tracked_parameters();
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
    MeasureContext ctx{m_, ws_.x, ws_.xd, xdd_, &sensor_params_};
    for (const auto& meas : measurements) {
      const Sensor& sensor = *sensors_.at(meas.sensor);
      grad_.clear(m_.nq, ekf_.sensor_parameters());
      ctx.lag = meas.lag;
      double h = sensor.measure(ctx, meas.row, &grad_);
      double nu = meas.value - h;
      if (sensor.is_angle(meas.row)) nu = wrap_angle(nu);
      jacobian_row(grad_, H_);
      UpdateResult u = ekf_.update(H_, nu, meas.variance, meas.gate_sigma, meas.unmodelled_bias,
                                   meas.unmodelled_per_lag ? grad_.dlag : meas.unmodelled_coefficient,
                                   meas.unmodelled_bias2, meas.unmodelled_coefficient2);
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
