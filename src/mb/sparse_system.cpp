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
  // A diagonally dominant matrix on the pattern: Eigen factorises it without a zero pivot,
  // so every structural entry of L is placed.
  for (int k = 0; k < n; ++k)
    for (SparseMatrix::InnerIterator it(upper_, k); it; ++it) it.valueRef() = it.index() == k ? n + 1.0 : 1.0;
  ldlt_.plan(upper_);
  set_zero();
  work_.resize(n);
}

namespace detail {

void PreorderedLDLT::plan(const SparseMatrix& upper) {
  this->template factorize_preordered<true>(upper);
  if (this->info() != Eigen::Success) throw std::logic_error("SparseSystem: planning factorisation failed");
  const int n = static_cast<int>(upper.cols());
  const int* Lp = m_matrix.outerIndexPtr();
  const int* Li = m_matrix.innerIndexPtr();
  row_start_.assign(n + 1, 0);
  for (int i = 0; i < n; ++i)
    for (int p = Lp[i]; p < Lp[i] + m_nonZerosPerCol[i]; ++p) ++row_start_[Li[p] + 1];
  for (int k = 0; k < n; ++k) row_start_[k + 1] += row_start_[k];
  row_col_.assign(row_start_[n], 0);
  row_pos_.assign(row_start_[n], 0);
  std::vector<int> next(row_start_.begin(), row_start_.end() - 1);
  for (int i = 0; i < n; ++i)  // columns in increasing order: each row's list is topological
    for (int p = Lp[i]; p < Lp[i] + m_nonZerosPerCol[i]; ++p) {
      const int r = next[Li[p]]++;
      row_col_[r] = i;
      row_pos_[r] = p;
    }
  y_ = Eigen::VectorXd::Zero(n);
}

bool PreorderedLDLT::refactor(const SparseMatrix& upper) {
  // Row k of L solves L(0:k,0:k) D l = A(0:k,k) (up-looking, as Eigen's factorize_preordered).
  const int n = static_cast<int>(upper.cols());
  const int* Lp = m_matrix.outerIndexPtr();
  const int* Li = m_matrix.innerIndexPtr();
  double* Lx = m_matrix.valuePtr();
  double* D = m_diag.data();
  double* y = y_.data();
  const int* Ap = upper.outerIndexPtr();
  const int* Ai = upper.innerIndexPtr();
  const double* Ax = upper.valuePtr();
  for (int k = 0; k < n; ++k) {
    for (int a = Ap[k]; a < Ap[k + 1]; ++a) y[Ai[a]] += Ax[a];
    double d = y[k];
    y[k] = 0;
    for (int r = row_start_[k]; r < row_start_[k + 1]; ++r) {
      const int i = row_col_[r], end = row_pos_[r];
      const double yi = y[i];
      y[i] = 0;
      for (int p = Lp[i]; p < end; ++p) y[Li[p]] -= Lx[p] * yi;
      const double l = yi / D[i];
      d -= l * yi;
      Lx[end] = l;
    }
    D[k] = d;
    if (!(d > 0) || !std::isfinite(d)) {
      y_.setZero();
      return false;
    }
  }
  return true;
}

void PreorderedLDLT::solve_in_place(Eigen::VectorXd& x) const {
  const int n = static_cast<int>(x.size());
  const int* Lp = m_matrix.outerIndexPtr();
  const int* Li = m_matrix.innerIndexPtr();
  const double* Lx = m_matrix.valuePtr();
  const double* D = m_diag.data();
  double* v = x.data();
  // L y = x by rows (y_k = x_k - sum_j L_kj y_j), with the same four partial sums: by
  // columns, each scattered update of v waits for the previous store to the same entry.
  const int* cols = row_col_.data();
  const int* pos = row_pos_.data();
  for (int k = 0; k < n; ++k) {
    double s0 = v[k], s1 = 0, s2 = 0, s3 = 0;
    int r = row_start_[k];
    const int end = row_start_[k + 1];
    for (; r + 3 < end; r += 4) {
      s0 -= Lx[pos[r]] * v[cols[r]];
      s1 -= Lx[pos[r + 1]] * v[cols[r + 1]];
      s2 -= Lx[pos[r + 2]] * v[cols[r + 2]];
      s3 -= Lx[pos[r + 3]] * v[cols[r + 3]];
    }
    for (; r < end; ++r) s0 -= Lx[pos[r]] * v[cols[r]];
    v[k] = (s0 + s1) + (s2 + s3);
  }
  for (int j = 0; j < n; ++j) v[j] /= D[j];
  // L' x = y: row j of L' is column j of L. Four partial sums, so that the multiply-adds of a
  // row are not one chain of dependent operations.
  for (int j = n - 1; j >= 0; --j) {
    double s0 = v[j], s1 = 0, s2 = 0, s3 = 0;
    int p = Lp[j];
    const int end = Lp[j + 1];
    for (; p + 3 < end; p += 4) {
      s0 -= Lx[p] * v[Li[p]];
      s1 -= Lx[p + 1] * v[Li[p + 1]];
      s2 -= Lx[p + 2] * v[Li[p + 2]];
      s3 -= Lx[p + 3] * v[Li[p + 3]];
    }
    for (; p < end; ++p) s0 -= Lx[p] * v[Li[p]];
    v[j] = (s0 + s1) + (s2 + s3);
  }
}

void PreorderedLDLT::solve_rows_in_place(double* x, int ld, int k) const {
  const int n = static_cast<int>(m_diag.size());
  const int* Lp = m_matrix.outerIndexPtr();
  const int* Li = m_matrix.innerIndexPtr();
  const double* Lx = m_matrix.valuePtr();
  const double* D = m_diag.data();
  const int* cols = row_col_.data();
  const int* pos = row_pos_.data();
  for (int r = 0; r < n; ++r) {  // L y = x by rows
    double* xr = x + static_cast<std::ptrdiff_t>(r) * ld;
    for (int e = row_start_[r]; e < row_start_[r + 1]; ++e) {
      const double l = Lx[pos[e]];
      const double* xj = x + static_cast<std::ptrdiff_t>(cols[e]) * ld;
      for (int c = 0; c < k; ++c) xr[c] -= l * xj[c];
    }
  }
  for (int r = 0; r < n; ++r) {
    double* xr = x + static_cast<std::ptrdiff_t>(r) * ld;
    const double d = D[r];
    for (int c = 0; c < k; ++c) xr[c] /= d;
  }
  for (int j = n - 1; j >= 0; --j) {  // L' x = y
    double* xj = x + static_cast<std::ptrdiff_t>(j) * ld;
    for (int p = Lp[j]; p < Lp[j + 1]; ++p) {
      const double l = Lx[p];
      const double* xi = x + static_cast<std::ptrdiff_t>(Li[p]) * ld;
      for (int c = 0; c < k; ++c) xj[c] -= l * xi[c];
    }
  }
}

}  // namespace detail

int SparseSystem::factor_nonzeros() const { return static_cast<int>(ldlt_.matrixL().nestedExpression().nonZeros()); }

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

// An indefinite or singular matrix shows as a non-positive pivot of the LDL' factors.
bool SparseSystem::factorize() { return ldlt_.refactor(upper_); }

void SparseSystem::solve_columns(double* X, int ld, int k, double* scratch) const {
  for (int i = 0; i < n_; ++i)
    std::copy_n(X + static_cast<std::ptrdiff_t>(i) * ld, k, scratch + static_cast<std::ptrdiff_t>(perm_[i]) * ld);
  ldlt_.solve_rows_in_place(scratch, ld, k);
  for (int i = 0; i < n_; ++i)
    std::copy_n(scratch + static_cast<std::ptrdiff_t>(perm_[i]) * ld, k, X + static_cast<std::ptrdiff_t>(i) * ld);
}

void SparseSystem::solve(const Eigen::Ref<const Eigen::VectorXd>& b, Eigen::Ref<Eigen::VectorXd> x) {
  for (int i = 0; i < n_; ++i) work_[perm_[i]] = b[i];
  ldlt_.solve_in_place(work_);
  for (int i = 0; i < n_; ++i) x[i] = work_[perm_[i]];
}

}  // namespace mbo::mb
