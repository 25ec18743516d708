#include "mbobserver/estimation/error_ekf.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <unsupported/Eigen/MatrixFunctions>

namespace mbo::est {
namespace {

// The smallest pivot of I - dt/2 A22 below which the trapezoidal transition is not formed.
constexpr double kSingularPivot = 1e-6;

}  // namespace

MatrixXd van_loan(const MatrixXd& F, const MatrixXd& GWcGt, double dt) {
  const Eigen::Index n = F.rows();
  MatrixXd M = MatrixXd::Zero(2 * n, 2 * n);
  M.topLeftCorner(n, n) = -F * dt;
  M.topRightCorner(n, n) = GWcGt * dt;
  M.bottomRightCorner(n, n) = F.transpose() * dt;
  MatrixXd E = M.exp();
  MatrixXd Phi = E.bottomRightCorner(n, n).transpose();
  MatrixXd W = Phi * E.topRightCorner(n, n);
  return 0.5 * (W + W.transpose());
}

ErrorEkf::ErrorEkf(int n, const ErrorEkfSettings& s, double dt) : settings_(s), dt_(dt) {
  auto& forced = settings_.forced;
  if (!s.force_error) {
    // errorEKF: a force_error block's coordinates and inputs are read but not used
    forced.clear();
    settings_.input_rate_noise.clear();
    settings_.initial_std_p.clear();
  } else if (forced.empty()) {
    for (int i = 0; i < n; ++i) forced.push_back(i);
  }
  for (std::size_t k = 0; k < forced.size(); ++k)
    if (forced[k] < 0 || forced[k] >= n || (k > 0 && forced[k] <= forced[k - 1]))
      throw std::invalid_argument("force error: coordinates must be distinct observed ones, in order");
  const int m = static_cast<int>(forced.size());
  const int r = static_cast<int>(settings_.input_rate_noise.size());
  const int ns = static_cast<int>(settings_.sensor_rate_noise.size());
  layout_ = {n, m, r, ns};
  const auto& L = layout_;
  const int N = L.size();
  auto check = [&](const std::vector<double>& v, const char* what, int size) {
    if (static_cast<int>(v.size()) != size)
      throw std::invalid_argument(std::string(what) + ": expected " + std::to_string(size) + " values");
    for (double x : v)
      if (!(x >= 0) || !std::isfinite(x)) throw std::invalid_argument(std::string(what) + ": must be >= 0");
  };
  check(s.accel_noise, "plant noise (acceleration)", n);
  check(s.initial_std_z, "initial std of z", n);
  check(s.initial_std_zd, "initial std of zd", n);
  if (s.force_error) {
    check(s.accel_rate_noise, "plant noise (acceleration error rate)", m);
    check(s.initial_std_a, "initial std of the acceleration error", m);
    check(s.input_rate_noise, "plant noise (estimated input rate)", r);
    check(s.initial_std_p, "initial std of the estimated inputs", r);
    for (double x : s.initial_std_p)  // also the ceiling of its variance: 0 would pin it
      if (!(x > 0)) throw std::invalid_argument("initial std of the estimated inputs: must be > 0");
  }
  check(s.initial_std_s, "initial std of the sensor parameters", ns);
  check(s.sensor_rate_noise, "plant noise (sensor parameter rate)", ns);
  for (double x : s.initial_std_s)
    if (!(x > 0)) throw std::invalid_argument("initial std of the sensor parameters: must be > 0");
  // Continuous model: d/dt [dz, dzd, da] = [dzd, da, w_a], with w on dzd as well.
  MatrixXd Fc = MatrixXd::Zero(N, N), Q = MatrixXd::Zero(N, N);
  for (int i = 0; i < n; ++i) {
    Fc(L.z(i), L.zd(i)) = 1;
    Q(L.zd(i), L.zd(i)) = s.accel_noise[i];
  }
  for (int k = 0; k < m; ++k) {
    Fc(L.zd(forced[k]), L.accel(k)) = 1;
    Q(L.accel(k), L.accel(k)) = s.accel_rate_noise[k];
  }
  for (int k = 0; k < r; ++k) Q(L.input(k), L.input(k)) = s.input_rate_noise[k];
  for (int k = 0; k < ns; ++k) Q(L.sensor(k), L.sensor(k)) = s.sensor_rate_noise[k];
  if (!s.sensor_decay.empty()) {
    check(s.sensor_decay, "decay rate of the sensor parameters", ns);
    // Gauss-Markov: F = -1/tau, and Van Loan's W gives its exact q tau/2 (1 - exp(-2 dt/tau))
    for (int k = 0; k < ns; ++k) Fc(L.sensor(k), L.sensor(k)) = -s.sensor_decay[k];
  }
  F_ = (Fc * dt).exp();
  // Past [z, zd] (accelerations, inputs, sensor parameters: random walks and Gauss-Markov
  // decays) F is diagonal and no state outside feeds them; propagate() relies on it.
  const int kin = L.kinematic().size;
  f_tail_ = F_.diagonal().tail(N - kin);
  MatrixXd off = F_.bottomRows(N - kin);
  off.rightCols(N - kin).diagonal().setZero();
  if (off.size() > 0 && off.cwiseAbs().maxCoeff() > 0)
    throw std::logic_error("ErrorEkf: F is not diagonal past [z, zd]");
  W_ = van_loan(Fc, Q, dt);
  P0_ = MatrixXd::Zero(N, N);
  for (int i = 0; i < n; ++i) {
    P0_(L.z(i), L.z(i)) = s.initial_std_z[i] * s.initial_std_z[i];
    P0_(L.zd(i), L.zd(i)) = s.initial_std_zd[i] * s.initial_std_zd[i];
  }
  for (int k = 0; k < m; ++k) P0_(L.accel(k), L.accel(k)) = s.initial_std_a[k] * s.initial_std_a[k];
  for (int k = 0; k < r; ++k) P0_(L.input(k), L.input(k)) = s.initial_std_p[k] * s.initial_std_p[k];
  for (int k = 0; k < ns; ++k) P0_(L.sensor(k), L.sensor(k)) = s.initial_std_s[k] * s.initial_std_s[k];
  P_ = P0_;
  tmp_ = MatrixXd::Zero(N, N);
  Fj_ = F_;
  Bm_ = MatrixXd::Identity(n, n);
  lu_ = Eigen::PartialPivLU<MatrixXd>(n);
  Vrows_ = MatrixXd::Zero(n, N);
  e_ = VectorXd::Zero(N);
  b_ = VectorXd::Zero(N);
  bt_ = VectorXd::Zero(N);
  boost_ = VectorXd::Zero(layout_.forced);
  accel_scale_ = VectorXd::Ones(n);
  sensor_scale_ = VectorXd::Ones(ns);
  learn_ = VectorXd::Ones(N);
  considered_states_.reserve(static_cast<std::size_t>(N));
  held_states_.reserve(static_cast<std::size_t>(N) + 2);
}

void ErrorEkf::set_learning_along(int a, int b, double da, double db) {
  const double n = std::hypot(da, db);
  if (a < 0 || b < 0 || a == b || !(n > 0)) {
    along_a_ = along_b_ = -1;
    return;
  }
  if (a < layout_.input().offset || a >= layout_.size() || b < layout_.input().offset || b >= layout_.size())
    throw std::out_of_range("only estimated inputs or sensor parameters can learn along a direction");
  along_a_ = a, along_b_ = b, along_da_ = da / n, along_db_ = db / n;
}

void ErrorEkf::set_learning(int state, bool on) {
  if (state < layout_.input().offset || state >= layout_.size())
    throw std::out_of_range("only an estimated input or a sensor parameter can be considered");
  if ((learn_[state] != 0) == on) return;
  learn_[state] = on ? 1 : 0;
  considered_ += on ? -1 : 1;
  considered_stale_ = true;
}

void ErrorEkf::set_sensor_learning(bool on) {
  const ErrorBlock s = layout_.sensor();
  for (int i = s.offset; i < s.end(); ++i) set_learning(i, on);
}

bool ErrorEkf::sensor_learning() const {
  const ErrorBlock s = layout_.sensor();
  return s.size == 0 || learn_.segment(s.offset, s.size).minCoeff() > 0;
}

void ErrorEkf::propagate(const MatrixXd& F) {
  // P <- F P F' with F = [F_k; 0 diag(f)]: only the kinematic rows F_k = F(0:k, :) are full
  // (the model's Jacobians, B), so with T = F_k P (k x N):
  //   P_kk = T F_k',  P_kt = T(:, t) diag(f),  P_tt = diag(f) P_tt diag(f).
  // k N^2 + k^2 N multiply-adds instead of 2 N^3 (the learning vehicle: k = 28 of N = 58).
  with_jacobians_ = &F == &Fj_;
  const int k = layout_.kinematic().size, N = static_cast<int>(P_.rows()), t = N - k;
  auto T = tmp_.topRows(k);
  T.noalias() = F.topRows(k) * P_;
  P_.bottomRightCorner(t, t) = f_tail_.asDiagonal() * P_.bottomRightCorner(t, t) * f_tail_.asDiagonal();
  P_.topLeftCorner(k, k).noalias() = T * F.topRows(k).transpose();
  P_.topRightCorner(k, t) = T.rightCols(t) * f_tail_.asDiagonal();
  P_.bottomLeftCorner(t, k) = P_.topRightCorner(k, t).transpose();
  if (S_.cols() > 0) {
    S_next_.topRows(k).noalias() = F.topRows(k) * S_;
    S_next_.bottomRows(t) = f_tail_.asDiagonal() * S_.bottomRows(t);
    S_.swap(S_next_);
  }
}

void ErrorEkf::set_unmodelled_biases(const std::vector<double>& sigma) {
  bias_std_ = sigma;
  const auto m = static_cast<Eigen::Index>(sigma.size());
  S_ = MatrixXd::Zero(P_.rows(), m);
  S_next_ = MatrixXd::Zero(P_.rows(), m);
  hs_ = Eigen::RowVectorXd::Zero(m);
}

void ErrorEkf::estimate_unmodelled(int k, std::span<const int> into, double common_var, double own_var) {
  if (k < 0 || k >= S_.cols() || !(common_var >= 0) || !(own_var >= 0)) return;
  MatrixXd& P = covariance();
  auto u = S_.col(k);  // the error's sensitivity to the bias; the new states' is 1
  for (const int i : into) {
    P.row(i).setZero();
    P.col(i).setZero();
    u[i] = 1;
  }
  P.noalias() += common_var * u * u.transpose();  // Cov(S b, S b) = S var(b) S'
  for (const int i : into) P(i, i) += own_var;
  u.setZero();
}

double ErrorEkf::unmodelled_covariance(int i, int j) const {
  double c = 0;
  for (std::size_t k = 0; k < bias_std_.size(); ++k) {
    const auto kk = static_cast<Eigen::Index>(k);
    c += S_(i, kk) * S_(j, kk) * bias_std_[k] * bias_std_[k];
  }
  return c;
}

void ErrorEkf::predict(const MatrixXd* A21, const MatrixXd* A22, const MatrixXd* B) {
  e_.setZero();  // eq. (57): the model was corrected, so the predicted error is zero
  mirror_lower();
  const ErrorBlock z = layout_.z(), zd = layout_.zd();
  const int p0 = layout_.input().offset, r = inputs();
  const bool with_inputs = settings_.force_error && B && r > 0;
  if (settings_.force_error && (A21 || A22 || with_inputs)) {
    // An input error dp accelerates as an acceleration error does: dzdd = B dp.
    auto plain = [&] {
      Fj_ = F_;
      if (with_inputs) {
        Fj_.block(z.offset, p0, z.size, r) = (0.5 * dt_ * dt_) * *B;
        Fj_.block(zd.offset, p0, zd.size, r) = dt_ * *B;
      }
    };
    plain();
    if (A21 || A22) {
      // F with the model's Jacobians J = [A21 A22] in the velocity row, by the trapezoidal rule
      // the model's integrator uses (mb::step; Sinigaglia 2016 eqs. (39)-(42)):
      //   (I - dt/2 A22) dzd+ = F_v e + dt/2 A22 dzd + dt/2 A21 (dz + dz+),  dz+ = F_z e.
      // A tyre's slip is a mode far faster than the step (tau = I v / (C r^2), under a
      // millisecond at walking pace): to first order in dt its factor 1 - dt/tau would amplify
      // it; here it is (1 - dt/2tau) / (1 + dt/2tau), as in the model, never above 1 in size.
      Vrows_ = Fj_.middleRows(zd.offset, zd.size);
      Bm_.setIdentity();
      if (A21) {
        Vrows_.middleCols(z.offset, z.size) += (0.5 * dt_) * *A21;
        Vrows_.noalias() += (0.5 * dt_ * *A21) * Fj_.middleRows(z.offset, z.size);
      }
      if (A22) {
        Vrows_.middleCols(zd.offset, zd.size) += (0.5 * dt_) * *A22;
        Bm_ -= (0.5 * dt_) * *A22;
      }
      lu_.compute(Bm_);
      // A mode growing at 2/dt (a tyre far past its force peak at walking pace) makes
      // I - dt/2 A22 singular: that step keeps the transition without the Jacobians.
      const double pivot = lu_.matrixLU().diagonal().cwiseAbs().minCoeff();
      if (pivot > kSingularPivot) Fj_.middleRows(zd.offset, zd.size).noalias() = lu_.solve(Vrows_);
      if (!(pivot > kSingularPivot) || !Fj_.allFinite()) plain();
    }
    propagate(Fj_);
  } else {
    propagate(F_);
  }
  if (noise_scale_ == 1)
    P_ += W_;
  else
    P_ += noise_scale_ * W_;
  for (int k = 0; k < layout_.forced; ++k) P_(layout_.accel(k), layout_.accel(k)) += boost_[k] * dt_;
  for (Eigen::Index k = 0; k < sensor_scale_.size(); ++k)
    if (sensor_scale_[k] != 1) {
      // a parameter's W entry is its own (F is diagonal there): the added walk is (scale - 1) W
      const int s = layout_.sensor(static_cast<int>(k));
      P_(s, s) += (sensor_scale_[k] - 1) * noise_scale_ * W_(s, s);
    }
  if (planar_.ix >= 0 && (planar_.k_long != 1 || planar_.k_lat != 1)) {
    // dQc = q_min [(k_long - 1) t t' + (k_lat - 1) n n'], t = (cos psi, sin psi), n = (-sin psi,
    // cos psi), entering each (z, zd) pair of blocks as q does: [dt^3/3 dt^2/2; dt^2/2 dt].
    const int ix = planar_.ix, iy = planar_.iy;
    const double q = noise_scale_ * std::min(settings_.accel_noise[static_cast<std::size_t>(ix)],
                                             settings_.accel_noise[static_cast<std::size_t>(iy)]);
    const double c = std::cos(planar_.psi), sn = std::sin(planar_.psi);
    const double t[2] = {c, sn}, nv[2] = {-sn, c};
    const int idx[2] = {ix, iy};
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) {
        const double dq = q * ((planar_.k_long - 1) * t[a] * t[b] + (planar_.k_lat - 1) * nv[a] * nv[b]);
        const int za = layout_.z(idx[a]), zb = layout_.z(idx[b]), va = layout_.zd(idx[a]), vb = layout_.zd(idx[b]);
        P_(za, zb) += dq * dt_ * dt_ * dt_ / 3;
        P_(za, vb) += dq * dt_ * dt_ / 2;
        P_(va, zb) += dq * dt_ * dt_ / 2;
        P_(va, vb) += dq * dt_;
      }
  }
  for (int i = 0; i < layout_.observed; ++i) {
    if (accel_scale_[i] == 1) continue;
    // The acceleration noise q of coordinate i enters W only through its own (z, zd) block,
    // q [dt^3/3 dt^2/2; dt^2/2 dt] (Van Loan, eqs. (121)-(123), as zd feeds nothing else):
    // this adds (k - 1) times that block.
    const double q = (accel_scale_[i] - 1) * noise_scale_ * settings_.accel_noise[static_cast<std::size_t>(i)];
    const int a = layout_.z(i), b = layout_.zd(i);
    P_(a, a) += q * dt_ * dt_ * dt_ / 3;
    P_(a, b) += q * dt_ * dt_ / 2;
    P_(b, a) += q * dt_ * dt_ / 2;
    P_(b, b) += q * dt_;
  }
  for (int i = 0; i < P_.rows(); ++i) {
    P_(i, i) = std::min(P_(i, i), settings_.max_variance);
    for (int j = i + 1; j < P_.cols(); ++j) P_(i, j) = P_(j, i) = 0.5 * (P_(i, j) + P_(j, i));
  }
  // An input or a sensor parameter nothing observes (the friction while the tyres grip far from
  // their limit, a gyro bias while the car stands) is no less known than at the start: its row
  // and column are scaled back, which keeps P positive.
  for (int i = p0; i < layout_.size(); ++i) {
    if (P_(i, i) <= P0_(i, i)) continue;
    const double f = std::sqrt(P0_(i, i) / P_(i, i));
    P_.row(i) *= f;
    P_.col(i) *= f;
  }
}

UpdateResult ErrorEkf::update(const Eigen::Ref<const VectorXd>& H, double innovation, double r, double gate_sigma,
                              int considered, double coefficient, int considered2, double coefficient2) {
  UpdateResult u;
  b_.noalias() = P_.selfadjointView<Eigen::Lower>() * H;
  u.variance = H.dot(b_) + r;
  u.innovation = innovation - H.dot(e_);
  if (!(u.variance > 0) || !std::isfinite(u.innovation)) return u;
  const double gs = gate_sigma < 0 ? settings_.gate_sigma : gate_sigma;
  const double g2 = gs * gs;
  u.test_ratio = g2 > 0 ? u.innovation * u.innovation / (g2 * u.variance) : 0;
  if (g2 > 0 && u.test_ratio > 1) return u;  // rejected by the gate
  // the pair learning along a direction, where both learn: its gain across it held
  const bool along = along_a_ >= 0 && learn_[along_a_] != 0 && learn_[along_b_] != 0;
  const bool held = considered_ > 0 || along;
  if (held) {
    if (considered_ > 0)
      bt_ = b_.cwiseProduct(learn_);  // into bt_'s own storage: no allocation
    else
      bt_ = b_;
    if (along) {
      const double k = along_da_ * b_[along_a_] + along_db_ * b_[along_b_];
      bt_[along_a_] = along_da_ * k, bt_[along_b_] = along_db_ * k;
    }
  }
  if (S_.cols() > 0) {
    // the error's sensitivity to the unmodelled biases through this update: S - K (H S + c),
    // K the gain used below (P H' / S, or Schmidt's with the considered rows zeroed)
    hs_.noalias() = H.transpose() * S_;
    if (considered >= 0 && considered < S_.cols()) hs_[considered] += coefficient;
    if (considered2 >= 0 && considered2 < S_.cols()) hs_[considered2] += coefficient2;
    S_.noalias() -= ((held ? bt_ : b_) / u.variance) * hs_;
  }
  if (held) {
    // Schmidt 1966: K = bt / S with the considered rows of b = P H' zeroed (and the pair's
    // part across its direction); Joseph's form for that gain, P - K H P - P H' K' + K S K',
    // is P - (bt b' + b bt' - bt bt') / S = P - (b b' - d d') / S with d = b - bt, nonzero on
    // the held rows only: a symmetric rank-one update and d d' / S on the held block.
    e_ += bt_ * (u.innovation / u.variance);
    P_.selfadjointView<Eigen::Lower>().rankUpdate(b_, -1 / u.variance);
    if (considered_stale_) {
      considered_states_.clear();  // within the reserved capacity: no allocation
      for (int i = 0; i < learn_.size(); ++i)
        if (learn_[i] == 0) considered_states_.push_back(i);
      considered_stale_ = false;
    }
    if (along) {
      held_states_.assign(considered_states_.begin(), considered_states_.end());  // no allocation
      for (int i : {along_a_, along_b_})
        held_states_.insert(std::upper_bound(held_states_.begin(), held_states_.end(), i), i);
    }
    const auto& rows = along ? held_states_ : considered_states_;  // ascending: P's lower triangle
    const double inv = 1 / u.variance;
    for (std::size_t p = 0; p < rows.size(); ++p) {
      const int i = rows[p];
      const double di = (b_[i] - bt_[i]) * inv;
      for (std::size_t q = 0; q <= p; ++q) {
        const int j = rows[q];
        P_(i, j) += di * (b_[j] - bt_[j]);
      }
    }
    upper_stale_ = true;
    u.accepted = true;
    return u;
  }
  // eq. (124): L = P H' / S ; e += L nu ; P -= L H P (= b b' / S), kept symmetric
  e_ += b_ * (u.innovation / u.variance);
  P_.selfadjointView<Eigen::Lower>().rankUpdate(b_, -1 / u.variance);
  upper_stale_ = true;
  u.accepted = true;
  return u;
}

void ErrorEkf::mirror_lower() const {
  if (!upper_stale_) return;
  const Eigen::Index N = P_.rows();
  for (Eigen::Index j = 1; j < N; ++j)
    for (Eigen::Index i = 0; i < j; ++i) P_(i, j) = P_(j, i);
  upper_stale_ = false;
}

bool ErrorEkf::healthy() const {
  for (int i = 0; i < P_.rows(); ++i) {
    const double v = P_(i, i);
    if (!(v > 0) || !std::isfinite(v) || v >= settings_.max_variance) return false;
  }
  return e_.allFinite();
}

void ErrorEkf::reset_covariance() {
  P_ = P0_;
  upper_stale_ = false;
  e_.setZero();
  if (!S_.allFinite()) S_.setZero();  // a diverged filter's sensitivity says nothing
}

}  // namespace mbo::est
