// One step of the index-3 augmented Lagrangian formulation with mass-damping-stiffness
// orthogonal projections of velocities and accelerations, integrated with the implicit
// trapezoidal rule (Sinigaglia 2016 eqs. (39)-(42), with the corrector of eq. (19) as corrected in
// docs/references.md). The tangent matrix is sparse and symmetric; its pattern and ordering are
// fixed in the Workspace and it is refactorised numerically at each Newton iteration.
#pragma once

#include "mbobserver/mb/model.hpp"
#include "mbobserver/mb/state.hpp"
#include "mbobserver/mb/workspace.hpp"

namespace mbo::mb {

struct StepResult {
  bool converged = false;  // false: the Newton iteration did not meet the tolerance, or the
                           // tangent matrix could not be factorised; the state holds the
                           // last iterate and must not be trusted
  int iterations = 0;
  int tangents = 0;  // tangents assembled and factorised (fewer than iterations: modified Newton)
  double dq_norm = 0;  // ||dq||_inf of the last Newton correction
  double phi_norm = 0;  // ||Phi||_inf at the end of the step
};

// Advances `s` from s.t to s.t + dt with the inputs s.u (their values at s.t + dt).
StepResult step(const Model& m, State& s, Workspace& ws, double dt);

// Consistent accelerations (and multipliers) at the current q, qd: the same formulation with
// the projections only, used once before the first step.
void initialize_accelerations(const Model& m, State& s, Workspace& ws);

// Lagrange's equations of the rotors' kinetic energy beyond the constant mass matrix
// (model.hpp, Rotor): out += J (e1 . e2_ddot + e1_dot . e2_dot) on theta, J (theta_ddot e1 +
// theta_dot e1_dot) on e2, -J theta_dot e2_dot on e1. x, xd over [q; constants]; qdd over q,
// or nullptr for the velocity terms alone.
void rotor_inertia(const Model& m, const VectorXd& x, const VectorXd& xd, const VectorXd* qdd, VectorXd& out);

// The rotors' coupling inertia J e1 between theta and e2 at x, written into a dense nq x nq
// mass matrix that holds the constant part (Model::mass) already.
void rotor_mass(const Model& m, const VectorXd& x, Eigen::MatrixXd& M);

// ||Phi||, ||Phi_q qd + Phi_t||, ||Phi_q qdd + Phi_q_dot qd + Phi_tt|| (infinity norms).
struct ConstraintResiduals {
  double position = 0, velocity = 0, acceleration = 0;
};
ConstraintResiduals constraint_residuals(const Model& m, const State& s, Workspace& ws);

}  // namespace mbo::mb
