#include "mbobserver/mb/kinematics.hpp"

#include <cmath>
#include <stdexcept>

#include "mbobserver/mb/constraints.hpp"
#include "mbobserver/mb/state.hpp"

namespace mbo::mb {
namespace {

void load_x(const Model& m, const VectorXd& q, Workspace& ws) { ws.x.head(m.nq) = q; }

// out_d = Phi_qd' v (v over constraint rows)
void jt_dep(const Model& m, const Workspace& ws, const VectorXd& v, VectorXd& out_d) {
  out_d.setZero();
  for (std::size_t e = 0; e < m.jac.size(); ++e) {
    int d = ws.dep_index[m.jac[e].col];
    if (d >= 0) out_d[d] += ws.jac[e] * v[m.jac[e].row];
  }
}

// out += Phi_q[:, cols of z] * vz  where vz is given over q (only z entries used)
void j_z(const Model& m, const Workspace& ws, const VectorXd& v, VectorXd& out) {
  for (std::size_t e = 0; e < m.jac.size(); ++e)
    if (ws.dep_index[m.jac[e].col] < 0) out[m.jac[e].row] += ws.jac[e] * v[m.jac[e].col];
}

}  // namespace

State initial_state(const Model& m) {
  State s;
  s.q = m.x0.head(m.nq);
  s.qd = VectorXd::Zero(m.nq);
  s.qdd = VectorXd::Zero(m.nq);
  s.lambda = VectorXd::Zero(m.nc);
  s.u = VectorXd::Zero(m.inputs.size());
  s.Q_correction = VectorXd::Zero(m.nq);
  s.qdd_prev = VectorXd::Zero(m.nq);
  s.qdd_prev2 = VectorXd::Zero(m.nq);
  return s;
}

namespace {
void require_kinematics(const Workspace& ws) {
  if (!ws.has_kinematics) throw std::logic_error("model has no kinematic solver (no independent coordinates declared)");
}

// Phi_qd' Phi_qd from the Jacobian in ws.jac.
bool factor_normal_equations(Workspace& ws) {
  ws.kin.set_zero();
  for (const auto& p : ws.kin_slots) ws.kin.add(p.slot, ws.jac[p.e1] * ws.jac[p.e2]);
  return ws.kin.factorize();
}
}  // namespace

bool factor_kinematics(const Model& m, const VectorXd& q, Workspace& ws) {
  require_kinematics(ws);
  load_x(m, q, ws);
  constraint_jacobian(m, ws.x, ws.jac.data());
  return factor_normal_equations(ws);
}

KinematicResult solve_position(const Model& m, VectorXd& q, const VectorXd& u, Workspace& ws) {
  KinematicResult r;
  require_kinematics(ws);
  for (r.iterations = 0; r.iterations <= m.solver.kinematic_max_iterations; ++r.iterations) {
    load_x(m, q, ws);
    constraint_values_jacobian(m, ws.x, u, ws.phi, ws.jac.data());
    r.residual = m.nc ? ws.phi.lpNorm<Eigen::Infinity>() : 0.0;
    if (!std::isfinite(r.residual)) return r;
    bool done = r.residual <= m.solver.kinematic_tolerance;
    if (!factor_normal_equations(ws)) return r;
    if (done) {
      r.converged = true;
      return r;
    }
    jt_dep(m, ws, ws.phi, ws.kd);
    ws.kin.solve(ws.kd, ws.kd);
    for (std::size_t d = 0; d < ws.dep_slots.size(); ++d) q[ws.dep_slots[d]] -= ws.kd[d];
  }
  return r;
}

void solve_velocity(const Model& m, const VectorXd& u, VectorXd& qd, Workspace& ws) {
  constraint_time_terms(m, u, ws.phi_t, ws.phi_tt);
  ws.kc = ws.phi_t;
  j_z(m, ws, qd, ws.kc);
  jt_dep(m, ws, ws.kc, ws.kd);
  ws.kin.solve(ws.kd, ws.kd);
  for (std::size_t d = 0; d < ws.dep_slots.size(); ++d) qd[ws.dep_slots[d]] = -ws.kd[d];
}

void solve_acceleration(const Model& m, const VectorXd& u, const VectorXd& qd, VectorXd& qdd, Workspace& ws) {
  constraint_time_terms(m, u, ws.phi_t, ws.phi_tt);
  ws.xd.head(m.nq) = qd;
  constraint_hessian_product(m, ws.x, ws.xd, ws.xd, ws.hv);
  ws.kc = ws.hv + ws.phi_tt;
  j_z(m, ws, qdd, ws.kc);
  jt_dep(m, ws, ws.kc, ws.kd);
  ws.kin.solve(ws.kd, ws.kd);
  for (std::size_t d = 0; d < ws.dep_slots.size(); ++d) qdd[ws.dep_slots[d]] = -ws.kd[d];
}

namespace {
// out (dependent x k) = Phi_qd' kcols (nc x k), both row-major: one pass over the Jacobian.
void jt_dep_columns(const Model& m, Workspace& ws, int k) {
  ws.kRHS.leftCols(k).setZero();
  for (std::size_t e = 0; e < m.jac.size(); ++e) {
    const int d = ws.dep_index[m.jac[e].col];
    if (d >= 0) ws.kRHS.row(d).head(k) += ws.jac[e] * ws.kcols.row(m.jac[e].row).head(k);
  }
}

// -(Phi_qd' Phi_qd)^-1 kRHS into the dependent rows of the columns z_columns of `out`.
void solve_dependent_columns(Workspace& ws, std::span<const int> z_columns, Eigen::MatrixXd& out) {
  const int k = static_cast<int>(z_columns.size());
  const int ld = static_cast<int>(ws.kRHS.cols());
  ws.kin.solve_columns(ws.kRHS.data(), ld, k, ws.kscratch.data());
  for (int c = 0; c < k; ++c) {
    const int j = z_columns[c];
    out.col(j).setZero();
    for (std::size_t d = 0; d < ws.dep_slots.size(); ++d)
      out(ws.dep_slots[d], j) = -ws.kRHS(static_cast<Eigen::Index>(d), c);
  }
}
}  // namespace

// R_d = -(Phi_qd' Phi_qd)^-1 Phi_qd' Phi_qz (Sinigaglia 2016 eq. (85)), every requested column in one
// multi-right-hand-side solve.
void compute_R(const Model& m, Workspace& ws, std::span<const int> z_columns) {
  const int k = static_cast<int>(z_columns.size());
  ws.kcols.leftCols(k).setZero();
  for (int c = 0; c < k; ++c) ws.r_column[m.z[z_columns[c]]] = c;
  for (std::size_t e = 0; e < m.jac.size(); ++e)
    if (const int c = ws.r_column[m.jac[e].col]; c >= 0) ws.kcols(m.jac[e].row, c) += ws.jac[e];
  for (int c = 0; c < k; ++c) ws.r_column[m.z[z_columns[c]]] = -1;
  jt_dep_columns(m, ws, k);
  solve_dependent_columns(ws, z_columns, ws.R);
  for (const int j : z_columns) ws.R(m.z[j], j) = 1;
}

void compute_Rdot(const Model& m, const VectorXd& qd, Workspace& ws, std::span<const int> z_columns) {
  // Phi_q R = 0  =>  Phi_q Rdot = -Phi_q_dot R, with Rdot's z rows zero.
  const int k = static_cast<int>(z_columns.size());
  ws.xd.head(m.nq) = qd;
  constraint_hessian_product_columns(m, ws.x, ws.xd, ws.R, z_columns, ws.kcols);
  jt_dep_columns(m, ws, k);
  solve_dependent_columns(ws, z_columns, ws.Rdot);
}

void apply_Rt(const Model& m, Workspace& ws, const VectorXd& v, VectorXd& out) {
  // R' v = v_z + R_d' v_d with R_d = -(Phi_qd' Phi_qd)^-1 Phi_qd' Phi_qz:
  //      = v_z - Phi_qz' Phi_qd (Phi_qd' Phi_qd)^-1 v_d, one solve instead of nz.
  for (std::size_t d = 0; d < ws.dep_slots.size(); ++d) ws.kd[d] = v[ws.dep_slots[d]];
  ws.kin.solve(ws.kd, ws.kd);
  ws.kc.setZero();
  for (std::size_t e = 0; e < m.jac.size(); ++e) {
    const int d = ws.dep_index[m.jac[e].col];
    if (d >= 0) ws.kc[m.jac[e].row] += ws.jac[e] * ws.kd[d];
  }
  out.setZero();
  for (const int slot : m.z) out[slot] = v[slot];
  for (std::size_t e = 0; e < m.jac.size(); ++e)
    if (ws.dep_index[m.jac[e].col] < 0) out[m.jac[e].col] -= ws.jac[e] * ws.kc[m.jac[e].row];
}

void compute_R(const Model& m, Workspace& ws) { compute_R(m, ws, ws.all_z); }

void compute_Rdot(const Model& m, const VectorXd& qd, Workspace& ws) { compute_Rdot(m, qd, ws, ws.all_z); }

}  // namespace mbo::mb
