#include "mbobserver/mb/sparse_system.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <Eigen/OrderingMethods>

namespace mbo::mb {

void SparseSystem::build(int n, const std::vector<std::pair<int, int>>& entries) {
  n_ = n;
  // Fill-reducing ordering (AMD) on the symmetric pattern, computed once.
  std::vector<Eigen::Triplet<double, int>> t;
  t.reserve(entries.size() * 2 + n);
  for (int i = 0; i < n; ++i) t.emplace_back(i, i, 1.0);
  for (auto [i, j] : entries) {
    if (i < 0 || j < 0 || i >= n || j >= n) throw std::logic_error("SparseSystem: entry out of range");
    t.emplace_back(i, j, 1.0);
    t.emplace_back(j, i, 1.0);
  }
  SparseMatrix full(n, n);
  full.setFromTriplets(t.begin(), t.end());
  Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> p;
  Eigen::AMDOrdering<int> amd;
  amd(full.selfadjointView<Eigen::Lower>(), p);  // p: new -> old? Eigen returns perm with P*A*P'
  // Eigen's ordering returns `perm` such that the factorised matrix is P^{-1} A P^{-T}... use its
  // inverse as SimplicialCholesky does: m_P = perm.inverse().
  Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> pinv = p.inverse();
  perm_.assign(n, 0);
  for (int i = 0; i < n; ++i) perm_[i] = pinv.indices()[i];

  std::vector<Eigen::Triplet<double, int>> u;
  u.reserve(t.size());
  for (auto& e : t) {
    int a = perm_[e.row()], b = perm_[e.col()];
    if (a <= b) u.emplace_back(a, b, 0.0);
  }
  upper_.resize(n, n);
  upper_.setFromTriplets(u.begin(), u.end());
  upper_.makeCompressed();
  ldlt_.analyzePattern(upper_);
  work_.resize(n);
}

int SparseSystem::factor_nonzeros() const {
  return static_cast<int>(ldlt_.matrixL().nestedExpression().nonZeros());
}

int SparseSystem::slot(int i, int j) const {
  int a = perm_[i], b = perm_[j];
  if (a > b) std::swap(a, b);
  const int* outer = upper_.outerIndexPtr();
  const int* inner = upper_.innerIndexPtr();
  const int* begin = inner + outer[b];
  const int* end = inner + outer[b + 1];
  const int* it = std::lower_bound(begin, end, a);
  if (it == end || *it != a) return -1;
  return static_cast<int>(it - inner);
}

void SparseSystem::set_zero() { std::fill_n(upper_.valuePtr(), upper_.nonZeros(), 0.0); }

bool SparseSystem::factorize() {
  ldlt_.refactor(upper_);
  if (ldlt_.info() != Eigen::Success) return false;
  // An indefinite or singular matrix shows as a non-positive pivot of the LDL' factors.
  const auto& d = ldlt_.diagonal();
  for (int i = 0; i < n_; ++i)
    if (!(d[i] > 0) || !std::isfinite(d[i])) return false;
  return true;
}

void SparseSystem::solve(const Eigen::Ref<const Eigen::VectorXd>& b, Eigen::Ref<Eigen::VectorXd> x) {
  for (int i = 0; i < n_; ++i) work_[perm_[i]] = b[i];
  ldlt_.matrixL().solveInPlace(work_);
  work_.array() /= ldlt_.diagonal().array();
  ldlt_.matrixU().solveInPlace(work_);
  for (int i = 0; i < n_; ++i) x[i] = work_[perm_[i]];
}

}  // namespace mbo::mb
