#include "mbobserver/mb/dynamics.hpp"

#include <algorithm>
#include <cmath>

#include "mbobserver/mb/constraints.hpp"
#include "mbobserver/mb/forces.hpp"

namespace mbo::mb {
namespace {

// out = M(u) v
void mass_times(const Model& m, const VectorXd& u, const VectorXd& v, VectorXd& out) {
  out.setZero();
  for (std::size_t e = 0; e < m.mass.size(); ++e) out[m.mass[e].row] += m.mass_values[e] * v[m.mass[e].col];
  for (const auto& p : m.mass_parameters) {
    const double k = u[p.input];
    if (k == 0) continue;
    for (std::size_t e = 0; e < m.mass.size(); ++e) out[m.mass[e].row] += k * p.mass_values[e] * v[m.mass[e].col];
  }
}

// out += s * Phi_q' w
void add_jt(const Model& m, const Workspace& ws, const VectorXd& w, double s, VectorXd& out) {
  for (std::size_t e = 0; e < m.jac.size(); ++e) out[m.jac[e].col] += s * ws.jac[e] * w[m.jac[e].row];
}

// out = Phi_q v
void jv(const Model& m, const Workspace& ws, const VectorXd& v, VectorXd& out) {
  out.setZero();
  for (std::size_t e = 0; e < m.jac.size(); ++e) out[m.jac[e].row] += ws.jac[e] * v[m.jac[e].col];
}

// Coefficients of T = M + c C + k K + j alpha Phi_q' Phi_q: the tangent of eq. (41)-(42) has
// c = dt/2, k = j = dt^2/4; the initial accelerations use c = k = 0, j = 1.
struct Coefficients {
  double c, k, j;
  double alpha;
};

// Evaluates the forces (with their Jacobians) at ws.x, ws.xd and assembles T with the Phi_q
// in ws.jac, and factorises it. Returns false if T is not positive definite.
bool assemble_tangent(const Model& m, const State& s, Workspace& ws, Coefficients co) {
  const double a = co.alpha;
  generalized_forces(m, ws.x, ws.xd, s.u, s.t, true, ws.forces);
  SparseSystem& T = ws.tangent;
  T.set_zero();
  for (const auto& e : ws.mass_slots) T.add(e.slot, m.mass_values[e.entry]);
  for (const auto& p : m.mass_parameters)
    if (const double k = s.u[p.input]; k != 0)
      for (const auto& e : ws.mass_slots) T.add(e.slot, k * p.mass_values[e.entry]);
  for (const auto& p : ws.jtj_slots) T.add(p.slot, co.j * a * ws.jac[p.e1] * ws.jac[p.e2]);
  for (const auto& e : ws.K_slots) T.add(e.slot, co.k * e.weight * ws.forces.K[e.entry]);
  for (const auto& e : ws.C_slots) T.add(e.slot, co.c * e.weight * ws.forces.C[e.entry]);
  // Rotors: the inertia J e1 between theta and e2 (weight 1, like M), and the symmetric part of
  // d/d(qd) of their gyroscopic terms, J e1_dot on the same entries (weight dt/2); the rest of
  // that derivative is skew (theta_dot J on e1-e2, J e2_dot on theta-e1) and cannot enter a
  // symmetric tangent, nor can the small d/dq terms (J theta_ddot, J e2_ddot; weight dt^2/4).
  for (std::size_t i = 0; i < m.rotors.size(); ++i) {
    const Rotor& r = m.rotors[i];
    for (int k = 0; k < 3; ++k)
      if (ws.rotor_slots[i][k] >= 0) T.add(ws.rotor_slots[i][k], r.J * (ws.x[r.e1 + k] + co.c * ws.xd[r.e1 + k]));
  }
  for (std::size_t f = 0; f < ws.custom_slots.size(); ++f) {
    const double* K = ws.forces.custom_K[f].data();
    const double* C = ws.forces.custom_C[f].data();
    for (const auto& e : ws.custom_slots[f]) T.add(e.slot, e.weight * (co.k * K[e.entry] + co.c * C[e.entry]));
  }
  return T.factorize();
}

// Mass-damping-stiffness orthogonal projections of velocities and accelerations (eq. (42)):
// T qd = T qd* - dt^2/4 alpha Phi_q' (Phi_q qd* + Phi_t), i.e. qd = qd* - T^-1 dt^2/4 alpha
// Phi_q' r with r the velocity-constraint residual (and the same for qdd). Phi_q is that of the
// converged position; T is the last factorised tangent (its position differs from the
// converged one by less than the Newton tolerance, or with the modified iteration by up to the
// corrections since it was factorised): the correction form needs no product with T, so the
// fixed point is r = 0 exactly whatever T was factorised at, though where on the constraint
// manifold it lies follows T (step()). With a finite penalty one projection leaves a residual
// of order M / (alpha dt^2/4 Phi_q'Phi_q) times the violation; the projection is repeated
// until the velocity and acceleration constraints hold to 1e-10 relative (two repeats at the
// engine's default penalty; 1e-12 took three, a sixth of a vehicle step, for residuals far
// below the Newton tolerance's effect).
void project(const Model& m, State& s, Workspace& ws, Coefficients co) {
  constexpr double kProjectionTolerance = 1e-10;
  const double a = co.alpha;
  constexpr int kRepeats = 6;
  constraint_time_terms(m, s.u, ws.phi_t, ws.phi_tt);
  for (int it = 0; it < kRepeats; ++it) {
    jv(m, ws, s.qd, ws.kc_dyn);
    ws.kc_dyn += ws.phi_t;
    if (ws.kc_dyn.lpNorm<Eigen::Infinity>() <= kProjectionTolerance * (1 + s.qd.lpNorm<Eigen::Infinity>())) break;
    ws.tmp.setZero();
    add_jt(m, ws, ws.kc_dyn, -co.j * a, ws.tmp);
    ws.tangent.solve(ws.tmp, ws.dq);
    s.qd += ws.dq;
  }
  ws.xd.head(m.nq) = s.qd;
  constraint_hessian_product(m, ws.x, ws.xd, ws.xd, ws.phi);  // phi as scratch: Phi_q_dot qd
  ws.phi += ws.phi_tt;
  for (int it = 0; it < kRepeats; ++it) {
    jv(m, ws, s.qdd, ws.kc_dyn);
    ws.kc_dyn += ws.phi;
    if (ws.kc_dyn.lpNorm<Eigen::Infinity>() <= kProjectionTolerance * (1 + s.qdd.lpNorm<Eigen::Infinity>())) break;
    ws.tmp.setZero();
    add_jt(m, ws, ws.kc_dyn, -co.j * a, ws.tmp);
    ws.tangent.solve(ws.tmp, ws.dq);
    s.qdd += ws.dq;
  }
}

}  // namespace

StepResult step(const Model& m, State& s, Workspace& ws, double dt) {
  StepResult r;
  const double a = m.penalty_for(dt), h2 = dt * dt / 4;
  const Coefficients co{dt / 2, h2, h2, a};
  // Trapezoidal rule (eq. (40)): qd = 2/dt q + qd_hat, qdd = 4/dt^2 q + qdd_hat.
  ws.qd_hat = -(2 / dt) * s.q - s.qd;
  ws.qdd_hat = -(4 / (dt * dt)) * s.q - (4 / dt) * s.qd - s.qdd;
  // Predictor. The trapezoidal rule gives q_{n+1} = q_n + dt qd_n + dt^2/4 (qdd_n + qdd_{n+1})
  // exactly, so eq. (18)'s q_n + dt qd_n + dt^2/2 qdd_n misses dt^2/4 (qdd_{n+1} - qdd_n):
  // 6e-4 on unit vectors spinning at 70 rad/s (a wheel before it was a rotor), where Newton
  // contracts by about 100 per iteration, hence three iterations to 1e-7. qdd_{n+1} is
  // extrapolated from the last three steps' accelerations (quadratically: 3 qdd_n - 3 qdd_{n-1}
  // + qdd_{n-2}), which leaves dt^2/4 times their third difference (2e-5 on that wheel): two
  // iterations to 1e-6. With the wheels as rotors the lane change takes one.
  if (s.qdd_prev.size() != m.nq || s.qdd_prev2.size() != m.nq) {  // a State not from initial_state()
    s.qdd_prev.setZero(m.nq);
    s.qdd_prev2.setZero(m.nq);
    s.history = 0;
  }
  if (s.history > 0 && s.history_dt != dt) s.history = 0;  // substeps, or a new step size
  if (s.history >= 2)
    s.q += dt * s.qd + (0.5 * dt * dt) * s.qdd + (0.25 * dt * dt) * (2 * s.qdd - 3 * s.qdd_prev + s.qdd_prev2);
  else if (s.history == 1)
    s.q += dt * s.qd + (0.5 * dt * dt) * s.qdd + (0.25 * dt * dt) * (s.qdd - s.qdd_prev);
  else
    s.q += dt * s.qd + (0.5 * dt * dt) * s.qdd;
  s.qdd_prev2.swap(s.qdd_prev);
  s.qdd_prev = s.qdd;
  s.history = std::min(s.history + 1, 2);
  s.history_dt = dt;
  s.t += dt;
  // Modified Newton (m.solver.refresh_contraction > 0): a tangent (the first iteration's, or
  // the last refreshed one) is kept while the corrections shrink by that factor or better.
  // Where the tangent is approximate anyway (a vehicle: the tyres' slip damping blends to the secant past half the
  // peak, models::evaluate_tyre) Newton converges linearly, about 10x per iteration, and a
  // new tangent within the step barely changes that rate but costs a force Jacobian, its
  // assembly and a factorisation (ABS braking: 3 iterations a step). Where the rate is worse (a
  // braked wheel near the peak: 0.77) the tangent is refreshed every iteration: kept there, the
  // ABS braking's truth car failed to converge in 25 iterations. The residual is exact, so the
  // position is the same to the tolerance; the projections below are not: their direction is
  // T^-1 Phi_q', and a tangent from the predictor's position instead of the converged one put
  // the four-bar 3e-5 off and raised a Simbody chain's energy drift from 2e-6 to 7e-5 J in
  // 10 s. Hence off (0) for mechanisms, whose tolerance is 1e-10, and 0.25 for vehicles.
  constexpr double kAlignment = 0.9, kMaxExtrapolation = 5;  // the acceleration below
  bool refresh = true, plain_before = true;
  double rate_before = -1;
  for (r.iterations = 1; r.iterations <= m.solver.max_iterations; ++r.iterations) {
    s.qd = (2 / dt) * s.q + ws.qd_hat;
    s.qdd = (4 / (dt * dt)) * s.q + ws.qdd_hat;
    ws.x.head(m.nq) = s.q;
    ws.xd.head(m.nq) = s.qd;
    constraint_values_jacobian(m, ws.x, s.u, ws.phi, ws.jac.data());
    // eq. (39): lambda*_{i+1} = lambda*_i + alpha Phi_{i+1}, then the residual carries
    // Phi_q' (lambda* + alpha Phi) (Bayo & Ledesma; Sinigaglia 2016 A.3.2). Using lambda* alone in
    // the residual makes the multiplier error obey mu_{i+1} = mu_i - mu_{i-1}: a six-cycle
    // that never converges. The update follows each Newton correction (ALI3-P), so the
    // predictor's Phi is not added: with it, the first correction removes twice the
    // predictor's violation (the tangent carries alpha Phi_q'Phi_q once) and the second
    // iteration starts from -Phi, one iteration lost per step.
    if (r.iterations > 1) s.lambda += a * ws.phi;
    if (refresh) {
      ++r.tangents;
      if (!assemble_tangent(m, s, ws, co)) {
        r.converged = false;
        r.phi_norm = ws.phi.lpNorm<Eigen::Infinity>();
        return r;
      }
    } else {
      generalized_forces(m, ws.x, ws.xd, s.u, s.t, false, ws.forces);
    }
    // f = dt^2/4 (M qdd + Phi_q' (alpha Phi + lambda) - Q), eq. (41)
    mass_times(m, s.u, s.qdd, ws.res);
    rotor_inertia(m, ws.x, ws.xd, &s.qdd, ws.res);
    ws.hv = s.lambda + a * ws.phi;
    add_jt(m, ws, ws.hv, 1.0, ws.res);
    ws.res -= ws.forces.Q + s.Q_correction;
    ws.res *= -h2;
    ws.tangent.solve(ws.res, ws.dq);
    const double previous = r.dq_norm;
    r.dq_norm = ws.dq.lpNorm<Eigen::Infinity>();
    // Where the iteration converges linearly along one direction (a braked wheel near its
    // peak slip, the tangent's secant slip damping: 0.77 a correction, up to 27 iterations),
    // the corrections form a geometric series whose sum is the last one over 1 - rate
    // (Aitken's extrapolation; Anderson acceleration of depth one for corrections this
    // aligned). The rate is measured between two corrections taken plain, and used only when
    // the pair before gave the same rate to 0.1: Newton with an exact tangent (a mechanism)
    // shows shrinking ratios and is never extrapolated, and after an extrapolated correction
    // the next ratio says nothing of the iteration's rate. Capped at 5 (rate 0.8); a wrong
    // extrapolation shows as a next correction that turns back or grows, which is taken plain
    // and refreshes the tangent. ABS braking: at most 15 iterations a step instead of 27.
    double extrapolation = 1, rate = -1;
    if (m.solver.extrapolate && plain_before && r.iterations > 1 && r.dq_norm > m.solver.tolerance) {
      const double pp = ws.dq_prev.squaredNorm(), pd = ws.dq_prev.dot(ws.dq);
      if (pd > kAlignment * std::sqrt(pp * ws.dq.squaredNorm())) rate = pd / pp;
      if (rate > 0.2 && rate < 0.95 && std::abs(rate - rate_before) < 0.1)
        extrapolation = std::min(1 / (1 - rate), kMaxExtrapolation);
    }
    plain_before = extrapolation == 1;
    rate_before = rate;
    ws.dq_prev = ws.dq;
    if (extrapolation != 1) ws.dq *= extrapolation;
    s.q += ws.dq;
    refresh =
        m.solver.refresh_contraction <= 0 || (r.iterations > 1 && r.dq_norm > m.solver.refresh_contraction * previous);
    if (!std::isfinite(r.dq_norm)) return r;
    if (r.dq_norm <= m.solver.tolerance) {
      r.converged = true;
      break;
    }
  }
  s.qd = (2 / dt) * s.q + ws.qd_hat;
  s.qdd = (4 / (dt * dt)) * s.q + ws.qdd_hat;
  ws.x.head(m.nq) = s.q;
  ws.xd.head(m.nq) = s.qd;
  constraint_values_jacobian(m, ws.x, s.u, ws.phi, ws.jac.data());
  r.phi_norm = m.nc ? ws.phi.lpNorm<Eigen::Infinity>() : 0.0;
  // Projections: Phi_q at the converged position, the last iteration's factorisation.
  project(m, s, ws, co);
  if (!r.converged) r.iterations = m.solver.max_iterations;
  return r;
}

void initialize_accelerations(const Model& m, State& s, Workspace& ws) {
  // Augmented Lagrangian on the accelerations (Bayo & Ledesma): (M + alpha Phi_q'Phi_q) qdd =
  // Q - Phi_q' lambda - alpha Phi_q' (Phi_q_dot qd + Phi_tt), lambda += alpha * residual.
  const double a = m.solver.penalty > 0 ? m.solver.penalty : 1e4 * m.mass_scale;
  const Coefficients co{0, 0, 1, a};
  ws.x.head(m.nq) = s.q;
  ws.xd.head(m.nq) = s.qd;
  constraint_jacobian(m, ws.x, ws.jac.data());
  if (!assemble_tangent(m, s, ws, co)) return;
  constraint_time_terms(m, s.u, ws.phi_t, ws.phi_tt);
  constraint_hessian_product(m, ws.x, ws.xd, ws.xd, ws.phi);
  ws.phi += ws.phi_tt;  // c = Phi_q_dot qd + Phi_tt
  s.lambda.setZero();
  s.history = 0;
  ws.tmp2.setZero();
  rotor_inertia(m, ws.x, ws.xd, nullptr, ws.tmp2);  // the rotors' gyroscopic terms
  for (int it = 0; it < 50; ++it) {
    ws.tmp = ws.forces.Q + s.Q_correction - ws.tmp2;
    ws.kc_dyn = s.lambda + a * ws.phi;
    add_jt(m, ws, ws.kc_dyn, -1.0, ws.tmp);
    ws.tangent.solve(ws.tmp, s.qdd);
    jv(m, ws, s.qdd, ws.hv);
    ws.hv += ws.phi;
    s.lambda += a * ws.hv;
    if (ws.hv.lpNorm<Eigen::Infinity>() < 1e-13 * std::max(1.0, s.qdd.lpNorm<Eigen::Infinity>())) break;
  }
}

void rotor_inertia(const Model& m, const VectorXd& x, const VectorXd& xd, const VectorXd* qdd, VectorXd& out) {
  for (const Rotor& r : m.rotors) {
    const Vector3d e1 = x.segment<3>(r.e1), e1d = xd.segment<3>(r.e1), e2d = xd.segment<3>(r.e2);
    const double thd = xd[r.theta];
    const double J = r.J;
    Vector3d e2dd = Vector3d::Zero();
    double thdd = 0;
    if (qdd) {
      if (r.e2 < m.nq) e2dd = qdd->segment<3>(r.e2);
      thdd = (*qdd)[r.theta];
    }
    out[r.theta] += J * (e1.dot(e2dd) + e1d.dot(e2d));
    if (r.e2 < m.nq) out.segment<3>(r.e2) += J * (thdd * e1 + thd * e1d);
    if (r.e1 < m.nq) out.segment<3>(r.e1) -= J * thd * e2d;
  }
}

void rotor_mass(const Model& m, const VectorXd& x, Eigen::MatrixXd& M) {
  for (const Rotor& r : m.rotors)
    for (int k = 0; k < 3; ++k)
      if (r.e2 + k < m.nq) M(r.theta, r.e2 + k) = M(r.e2 + k, r.theta) = r.J * x[r.e1 + k];
}

ConstraintResiduals constraint_residuals(const Model& m, const State& s, Workspace& ws) {
  ConstraintResiduals c;
  if (m.nc == 0) return c;
  ws.x.head(m.nq) = s.q;
  ws.xd.head(m.nq) = s.qd;
  constraint_values(m, ws.x, s.u, ws.phi);
  c.position = ws.phi.lpNorm<Eigen::Infinity>();
  constraint_jacobian(m, ws.x, ws.jac.data());
  constraint_time_terms(m, s.u, ws.phi_t, ws.phi_tt);
  jv(m, ws, s.qd, ws.hv);
  c.velocity = (ws.hv + ws.phi_t).lpNorm<Eigen::Infinity>();
  constraint_hessian_product(m, ws.x, ws.xd, ws.xd, ws.hv);
  jv(m, ws, s.qdd, ws.phi);
  c.acceleration = (ws.phi + ws.hv + ws.phi_tt).lpNorm<Eigen::Infinity>();
  return c;
}

}  // namespace mbo::mb
