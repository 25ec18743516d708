#include "mbobserver/mb/derivatives.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/forces.hpp"
#include "mbobserver/mb/kinematics.hpp"

namespace mbo::mb {
namespace {

// One-sided differences with a step of this size relative to the coordinate (at least 1): the
// square root of the Newton tolerance the perturbed states are solved to would be larger, but
// the forces-only columns are exact to rounding, and eq. (67) in full is solved to 1e-10.
constexpr double kRelativeStep = 1e-6;

double step_for(double value) { return kRelativeStep * std::max(1.0, std::abs(value)); }

int rows(const AccelerationDerivatives& d) { return static_cast<int>(d.columns.size()); }

// M(u) as the dynamics use it (mass parameters included), without the rotors' coupling.
void assemble_mass(const Model& m, const VectorXd& u, Eigen::MatrixXd& M) {
  M.setZero();
  for (std::size_t e = 0; e < m.mass.size(); ++e) M(m.mass[e].row, m.mass[e].col) += m.mass_values[e];
  for (const auto& p : m.mass_parameters)
    if (const double k = u[p.input]; k != 0)
      for (std::size_t e = 0; e < m.mass.size(); ++e) M(m.mass[e].row, m.mass[e].col) += k * p.mass_values[e];
}

// eq. (67) at (q, qd) with inputs u at time t and the force correction Qc.
void accelerations_at(const Model& m, const VectorXd& q, const VectorXd& qd, const VectorXd& u, double t,
                      const VectorXd& Qc, Workspace& ws, AccelerationDerivatives& d, VectorXd& zdd) {
  factor_kinematics(m, q, ws);
  compute_R(m, ws);
  compute_Rdot(m, qd, ws);
  ws.x.head(m.nq) = q;
  ws.xd.head(m.nq) = qd;
  if (!m.mass_parameters.empty()) assemble_mass(m, u, d.M);  // an input may be a mass
  rotor_mass(m, ws.x, d.M);  // the rotors' coupling moves with the configuration
  generalized_forces(m, ws.x, ws.xd, u, t, false, ws.forces);
  for (std::size_t j = 0; j < m.z.size(); ++j) d.rhs_z[j] = qd[m.z[j]];
  d.tmp_q.noalias() = ws.Rdot * d.rhs_z;
  d.dQ.noalias() = d.M * d.tmp_q;
  d.dQ = ws.forces.Q + Qc - d.dQ;
  d.tmp_q.setZero();
  rotor_inertia(m, ws.x, ws.xd, nullptr, d.tmp_q);  // the rotors' gyroscopic terms
  d.dQ -= d.tmp_q;
  d.rhs_z.noalias() = ws.R.transpose() * d.dQ;
  d.MR.noalias() = d.M * ws.R;
  d.Mbar.noalias() = ws.R.transpose() * d.MR;
  d.mbar_ldlt.compute(d.Mbar);
  zdd = d.mbar_ldlt.solve(d.rhs_z);
}

// Column j of `out` from the difference zdd1 - zdd0 over `h`, on the rows of d.columns.
void difference_column(AccelerationDerivatives& d, double h, Eigen::MatrixXd& out, int j) {
  for (int i = 0; i < rows(d); ++i) out(i, j) = (d.zdd1[d.columns[i]] - d.zdd0[d.columns[i]]) / h;
}

// All of eq. (67) along each perturbation, in one call.
void differentiate_all_terms(const Model& m, const State& s, Workspace& ws, AccelerationDerivatives& d) {
  d.u0 = s.u;
  accelerations_at(m, s.q, s.qd, d.u0, s.t, s.Q_correction, ws, d, d.zdd0);
  for (int j = 0; j < rows(d); ++j) {
    const int zi = m.z[d.columns[j]];
    const double h = step_for(s.q[zi]);
    d.qp = s.q;
    d.qp[zi] += h;
    solve_position(m, d.qp, d.u0, ws);
    d.qdp = s.qd;
    solve_velocity(m, d.u0, d.qdp, ws);
    accelerations_at(m, d.qp, d.qdp, d.u0, s.t, s.Q_correction, ws, d, d.zdd1);
    difference_column(d, h, d.dz, j);
    const double hd = step_for(s.qd[zi]);
    factor_kinematics(m, s.q, ws);
    d.qdp = s.qd;
    d.qdp[zi] += hd;
    solve_velocity(m, d.u0, d.qdp, ws);
    accelerations_at(m, s.q, d.qdp, d.u0, s.t, s.Q_correction, ws, d, d.zdd1);
    difference_column(d, hd, d.dzd, j);
  }
  for (int k = 0; k < static_cast<int>(d.inputs.size()); ++k) {
    double& u = d.u0[d.inputs[k]];
    const double base = u, h = step_for(u);
    u = base + h;
    accelerations_at(m, s.q, s.qd, d.u0, s.t, s.Q_correction, ws, d, d.zdd1);
    u = base;
    difference_column(d, h, d.du, k);
  }
}

// eq. (67) linearised with Mbar held at the base state:
//   velocity:  dzdd = Mbar^-1 R' (dQ - M Rdot dzd)          (Rdot's own change left out)
//   position:  dzdd = Mbar^-1 d(R' Q)                        (M Rdot zd's change left out)
// along consistent motions: qd + hd R_j (R spans the constraints' null space), and q + h R_j
// with the velocities projected there. d(R' Q) keeps R's change: a wheel's forces sit on
// vectors that turn with it, and only R(q + h R_j)' Q(q + h R_j) sees that the torque about its
// axle does not change with its spin angle. What is left out, the change of Mbar and of the
// inertia terms, is a linkage's (use `all` there), not a tyre's: a tyre's slip answers a wheel
// spin rate in a fraction of a step. The FE force correction is left out: on z slots R' Q_c
// does not change; as M R da its change with the configuration is dropped.
void applied_forces(const Model& m, const VectorXd& q, const VectorXd& qd, Workspace& ws,
                    const AccelerationDerivatives& d) {
  ws.x.head(m.nq) = q;
  ws.xd.head(m.nq) = qd;
  generalized_forces(m, ws.x, ws.xd, d.u0, d.t0, false, ws.forces);
}

void solve_column(AccelerationDerivatives& d, double h, Eigen::MatrixXd& out, int j) {
  d.zdd1 = d.mbar_ldlt.solve(d.rhs_z);
  for (int i = 0; i < out.rows(); ++i) out(i, j) = d.zdd1[d.columns[i]] / h;
}

// The velocity columns and the inputs' columns; saves the base state for the position columns.
void differentiate_forces_velocity(const Model& m, const State& s, Workspace& ws, AccelerationDerivatives& d) {
  d.q0 = s.q;
  d.u0 = s.u;
  d.t0 = s.t;
  factor_kinematics(m, d.q0, ws);
  compute_R(m, ws);
  compute_Rdot(m, s.qd, ws);
  ws.x.head(m.nq) = d.q0;
  if (!m.mass_parameters.empty()) assemble_mass(m, d.u0, d.M);
  rotor_mass(m, ws.x, d.M);
  d.MR.noalias() = d.M * ws.R;
  d.Mbar.noalias() = ws.R.transpose() * d.MR;
  d.mbar_ldlt.compute(d.Mbar);
  for (int j = 0; j < rows(d); ++j) d.Rcols.col(j) = ws.R.col(d.columns[j]);
  // The base velocities projected as the perturbed ones will be: the step leaves them
  // consistent only to its tolerance, which a difference over h = 1e-6 would amplify.
  d.qd0 = s.qd;
  solve_velocity(m, d.u0, d.qd0, ws);
  applied_forces(m, d.q0, d.qd0, ws, d);
  d.Q0 = ws.forces.Q;
  d.RtQ0.noalias() = ws.R.transpose() * d.Q0;
  for (int j = 0; j < rows(d); ++j) {
    const double hd = step_for(d.qd0[m.z[d.columns[j]]]);
    d.qdp = d.qd0 + hd * d.Rcols.col(j);
    applied_forces(m, d.q0, d.qdp, ws, d);
    d.dQ.noalias() = d.M * ws.Rdot.col(d.columns[j]);
    d.dQ *= -hd;
    d.dQ += ws.forces.Q;
    d.dQ -= d.Q0;
    d.rhs_z.noalias() = ws.R.transpose() * d.dQ;
    solve_column(d, hd, d.dzd, j);
  }
  // dzdd/du = Mbar^-1 R' dQ/du: an input moves the applied forces only.
  for (int k = 0; k < static_cast<int>(d.inputs.size()); ++k) {
    double& u = d.u0[d.inputs[k]];
    const double base = u, h = step_for(u);
    const Model::MassParameter* mass = nullptr;
    for (const auto& p : m.mass_parameters)
      if (p.input == d.inputs[k]) mass = &p;
    if (mass && d.persistent_mass_inputs) {
      // A load's weight moves the static wheel loads through the travels, which the model's own
      // state carries after the load changes; as an instant force on the chassis it starts a
      // heave and pitch transient that B, held for a period and fused as persistent, would
      // read as a lasting push along x (a matched car's loads came out front -356 kg, rear
      // +537 kg +- 23 kg on the mixed drive). What lasts is its inertia, -dM qdd, and what its
      // settled weight does to the forces that read it (a tyre's grip at its slip): those
      // inputs moved as h kg would move them once the travels have taken the weight.
      if (d.settled_mass_inputs && !mass->settled_load.empty()) {
        std::array<double, Model::kMaxSettledLoads> saved{};
        for (std::size_t l = 0; l < mass->settled_load.size(); ++l) {
          auto [input, per_unit] = mass->settled_load[l];
          saved[l] = d.u0[input];
          d.u0[input] = (saved[l] > 0 ? saved[l] : 1.0) + h * per_unit;  // a scale: <= 0 reads as 1
        }
        applied_forces(m, d.q0, d.qd0, ws, d);
        for (std::size_t l = 0; l < mass->settled_load.size(); ++l) d.u0[mass->settled_load[l].first] = saved[l];
        d.dQ = ws.forces.Q - d.Q0;
      } else {
        d.dQ.setZero();
      }
    } else {
      u = base + h;
      applied_forces(m, d.q0, d.qd0, ws, d);
      u = base;
      d.dQ = ws.forces.Q - d.Q0;
    }
    if (mass)  // Q holds a mass input's weight; its inertia -dM qdd:
      for (std::size_t e = 0; e < m.mass.size(); ++e)
        d.dQ[m.mass[e].row] -= h * mass->mass_values[e] * s.qdd[m.mass[e].col];
    d.rhs_z.noalias() = ws.R.transpose() * d.dQ;
    solve_column(d, h, d.du, k);
  }
}

// Position columns first..last-1 about the base saved by the velocity piece.
void differentiate_forces_position(const Model& m, Workspace& ws, AccelerationDerivatives& d, int first, int last) {
  for (int j = first; j < last; ++j) {
    const double h = step_for(d.q0[m.z[d.columns[j]]]);
    d.qp = d.q0 + h * d.Rcols.col(j);
    d.qdp = d.qd0;
    factor_kinematics(m, d.qp, ws);
    solve_velocity(m, d.u0, d.qdp, ws);
    compute_R(m, ws);
    applied_forces(m, d.qp, d.qdp, ws, d);
    d.rhs_z.noalias() = ws.R.transpose() * ws.forces.Q;
    d.rhs_z -= d.RtQ0;
    solve_column(d, h, d.dz, j);
  }
}

}  // namespace

AccelerationDerivatives::AccelerationDerivatives(const Model& m, std::vector<int> cols, std::vector<int> ins,
                                                 DerivativeTerms t, int p)
    : columns(std::move(cols)), inputs(std::move(ins)), terms(t), period(p) {
  const auto n = static_cast<Eigen::Index>(columns.size());
  const auto nz = static_cast<Eigen::Index>(m.z.size());
  dz = dzd = Eigen::MatrixXd::Zero(n, n);
  du = Eigen::MatrixXd::Zero(n, static_cast<Eigen::Index>(inputs.size()));
  M = Eigen::MatrixXd::Zero(m.nq, m.nq);
  assemble_mass(m, Eigen::VectorXd::Zero(static_cast<Eigen::Index>(m.inputs.size())), M);
  rotor_mass(m, m.x0, M);  // and again wherever M is used: the rotors' part moves
  Mbar = Eigen::MatrixXd::Zero(nz, nz);
  MR = Eigen::MatrixXd::Zero(m.nq, nz);
  Rcols = Eigen::MatrixXd::Zero(m.nq, n);
  mbar_ldlt.compute(Eigen::MatrixXd::Identity(nz, nz));
  q0 = qd0 = Q0 = qp = qdp = dQ = tmp_q = Eigen::VectorXd::Zero(m.nq);
  u0 = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(m.inputs.size()));
  RtQ0 = rhs_z = zdd0 = zdd1 = Eigen::VectorXd::Zero(nz);
}

void reduced_accelerations(const Model& m, const State& s, const VectorXd& q, const VectorXd& qd, Workspace& ws,
                           AccelerationDerivatives& d, VectorXd& zdd) {
  accelerations_at(m, q, qd, s.u, s.t, s.Q_correction, ws, d, zdd);
}

bool differentiate_accelerations(const Model& m, const State& s, long step, Workspace& ws, AccelerationDerivatives& d) {
  if (d.period <= 0) return false;
  const long phase = step % d.period;
  if (d.terms == DerivativeTerms::all) {
    if (phase != 0) return false;
    differentiate_all_terms(m, s, ws, d);
    return true;
  }
  // Spread over three steps where the period allows: the velocity columns, then half of the
  // position columns on each of the next two (about 50 us each on the sedan).
  const int n = rows(d);
  const bool spread = d.period >= 3;
  const int half = spread ? n / 2 : n;
  if (phase == 0) {
    differentiate_forces_velocity(m, s, ws, d);
    if (spread) return false;
    differentiate_forces_position(m, ws, d, 0, n);
    return true;
  }
  if (!spread) return false;
  if (phase == 1) differentiate_forces_position(m, ws, d, 0, half);
  if (phase == 2) differentiate_forces_position(m, ws, d, half, n);
  // a set is complete once its last column is in (with n = 1 the first half is empty)
  return (phase == 1 && half == n) || phase == 2;
}

}  // namespace mbo::mb
