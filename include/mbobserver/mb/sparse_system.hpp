// A symmetric positive-definite sparse system whose pattern is fixed when the model is built:
// the fill-reducing ordering and the symbolic factorisation are done once, each later
// factorisation is numeric only and allocates nothing (Eigen's SimplicialLDLT::factorize
// builds a temporary matrix on every call, so we permute once and call its preordered path).
#pragma once

#include <utility>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>

namespace mbo::mb {

using SparseMatrix = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;

namespace detail {
// Eigen's up-looking LDL' (SimplicialLDLT) on an already permuted upper triangle, with the
// pattern of every row of L computed once: Eigen's factorize walks the elimination tree for
// each row on every call, although the pattern never changes. plan() records, after one
// factorisation by Eigen, the columns of each row of L in topological (increasing) order and
// where each entry is stored; refactor() then runs the same arithmetic in the same order into
// Eigen's own storage, so matrixL() and the solves are Eigen's.
class PreorderedLDLT : public Eigen::SimplicialLDLT<SparseMatrix, Eigen::Upper, Eigen::NaturalOrdering<int>> {
 public:
  // Eigen's factorisation of `upper`, then the row patterns of L.
  void plan(const SparseMatrix& upper);
  // Numeric factorisation; false at a non-positive or non-finite pivot.
  bool refactor(const SparseMatrix& upper);
  // vectorD() returns a copy (an allocation per call); the factor's own storage instead.
  const Eigen::VectorXd& diagonal() const { return this->m_diag; }
  // x := (L D L')^-1 x in the factorised order.
  void solve_in_place(Eigen::VectorXd& x) const;
  // The same for k right-hand sides at once, stored by rows (row i at x + i * ld): one pass
  // over L for all of them.
  void solve_rows_in_place(double* x, int ld, int k) const;

 private:
  std::vector<int> row_start_, row_col_, row_pos_;  // row k: columns row_col_[r], entry row_pos_[r]
  Eigen::VectorXd y_;
};
}  // namespace detail

class SparseSystem {
 public:
  SparseSystem() = default;

  // `entries` lists (row, col) pairs that may be non-zero (either triangle; duplicates fine).
  // Every diagonal entry is always part of the pattern.
  void build(int n, const std::vector<std::pair<int, int>>& entries);

  int size() const { return n_; }
  int nonzeros() const { return static_cast<int>(upper_.nonZeros()); }
  int factor_nonzeros() const;

  // Storage slot of entry (i, j) (or (j, i)) in values(); -1 if not in the pattern.
  int slot(int i, int j) const;
  double* values() { return upper_.valuePtr(); }
  void set_zero();
  void add(int slot, double v) { upper_.valuePtr()[slot] += v; }

  // Numeric factorisation; false if the matrix is not positive definite (or NaN).
  bool factorize();
  // x = A^{-1} b using the last factorisation; x and b may alias.
  void solve(const Eigen::Ref<const Eigen::VectorXd>& b, Eigen::Ref<Eigen::VectorXd> x);
  // X = A^{-1} X for the first k columns of a row-major n x ld matrix (several right-hand
  // sides in one pass over the factor); `scratch` is another n x ld row-major buffer.
  void solve_columns(double* X, int ld, int k, double* scratch) const;

 private:
  int n_ = 0;
  std::vector<int> perm_;  // perm_[i]: position of coordinate i in the factorised order
  SparseMatrix upper_;  // upper triangle in the permuted order
  detail::PreorderedLDLT ldlt_;
  Eigen::VectorXd work_;
};

}  // namespace mbo::mb
