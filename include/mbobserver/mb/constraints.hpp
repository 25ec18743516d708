// Evaluation of the constraint library: Phi (eq. (7)), its Jacobian Phi_q, the bilinear form
// of its second derivatives, and the time terms of rheonomic constraints. Phi_q_dot * qd of
// the acceleration problem (eq. (11)) is hessian_product(qd, qd); Phi_q_dot * R is
// hessian_product(qd, R_j) column by column (Sinigaglia 2016 eq. (107)).
#pragma once

#include <span>

#include "mbobserver/mb/model.hpp"

namespace mbo::mb {

// Loads a 2- or 3-component entity of x as a 3-vector (z = 0 in planar models).
inline Vector3d load(const VectorXd& x, int slot, int dim) {
  return dim == 3 ? Vector3d(x[slot], x[slot + 1], x[slot + 2]) : Vector3d(x[slot], x[slot + 1], 0);
}

// (a I + b [ez x]) v
inline Vector3d apply(const LinearTerm& t, const Vector3d& v) { return t.a * v + t.b * Vector3d(-v.y(), v.x(), 0); }

Vector3d evaluate(const LinearVec& v, const VectorXd& x, int dim);

// Phi(x) with the driving inputs `u`.
void constraint_values(const Model& m, const VectorXd& x, const VectorXd& u, VectorXd& phi);

// Phi_q: values of the unique entries m.jac (size m.jac.size()).
void constraint_jacobian(const Model& m, const VectorXd& x, double* jac_values);

// Phi and Phi_q together, from one evaluation of the entities (equal to the two calls above).
void constraint_values_jacobian(const Model& m, const VectorXd& x, const VectorXd& u, VectorXd& phi,
                                double* jac_values);

// out = sum_jk d2Phi/dx_j dx_k a_j b_k; a and b are over x (their constant part must be zero).
void constraint_hessian_product(const Model& m, const VectorXd& x, const VectorXd& a, const VectorXd& b, VectorXd& out);

// The same for several b at once: out(i, c) = sum_jk d2Phi_i/dx_j dx_k a_j B(k, cols[c]) for
// c < cols.size(), B over q (nq rows; constant slots count as zero). What depends on x and a
// is evaluated once per constraint (Rdot, column by column, Sinigaglia 2016 eq. (107)).
void constraint_hessian_product_columns(const Model& m, const VectorXd& x, const VectorXd& a, const Eigen::MatrixXd& B,
                                        std::span<const int> cols, RowMatrix& out);

// Phi_t and Phi_tt of the driving constraints (zero rows elsewhere).
void constraint_time_terms(const Model& m, const VectorXd& u, VectorXd& phi_t, VectorXd& phi_tt);

// Records the Jacobian's write sequence as (row, column) pairs (columns < nq only).
std::vector<Model::Entry> record_jacobian_pattern(const Model& m, const VectorXd& x);

}  // namespace mbo::mb
