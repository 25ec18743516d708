// The kinematic problems of Sinigaglia 2016 ch. 2.1.3 with the independent coordinates z held:
// position (eq. (9), Newton-Raphson), velocity (eq. (10)) and acceleration (eq. (11)), and the
// R matrix (qd = R zd, eq. (59)) with its time derivative (eq. (107)). The dependent
// coordinates are found from the normal equations Phi_qd' Phi_qd, whose pattern, ordering and
// symbolic factorisation are fixed in the Workspace, so redundant (but consistent)
// constraints are accepted.
#pragma once

#include <span>

#include "mbobserver/mb/model.hpp"
#include "mbobserver/mb/workspace.hpp"

namespace mbo::mb {

struct KinematicResult {
  bool converged = false;
  int iterations = 0;
  double residual = 0;  // ||Phi||_inf at the end
};

// Evaluates Phi_q at q and factorises the dependent normal equations; false if the
// independent coordinates do not determine the others there (singular position).
bool factor_kinematics(const Model& m, const VectorXd& q, Workspace& ws);

// Solves Phi(q) = 0 for the dependent coordinates of q (z entries are kept). On success the
// kinematic factorisation is left at the solution for the calls below.
KinematicResult solve_position(const Model& m, VectorXd& q, const VectorXd& u, Workspace& ws);

// The following need factor_kinematics (or solve_position) at q first.
// qd: the z entries are given, the dependent ones are solved (Phi_q qd = -Phi_t).
void solve_velocity(const Model& m, const VectorXd& u, VectorXd& qd, Workspace& ws);
// qdd: the z entries are given (Phi_q qdd = -Phi_q_dot qd - Phi_t_dot).
void solve_acceleration(const Model& m, const VectorXd& u, const VectorXd& qd, VectorXd& qdd, Workspace& ws);
// ws.R (nq x nz): column j is the velocity solution for a unit speed of z_j.
void compute_R(const Model& m, Workspace& ws);
// ws.Rdot = dR/dt along qd (needs ws.R).
void compute_Rdot(const Model& m, const VectorXd& qd, Workspace& ws);
// Only the columns `z_columns` (indices into m.z) of R and Rdot; the others are left as they
// were. An observer needs the columns of the coordinates it corrects, not all of them.
void compute_R(const Model& m, Workspace& ws, std::span<const int> z_columns);
void compute_Rdot(const Model& m, const VectorXd& qd, Workspace& ws, std::span<const int> z_columns);
// out (nq) = R' v on the z slots, zero on the dependent ones (a generalised force reduced to
// the independent coordinates) without forming R.
void apply_Rt(const Model& m, Workspace& ws, const VectorXd& v, VectorXd& out);

}  // namespace mbo::mb
