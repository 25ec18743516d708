// The fixed-pattern sparse LDL' against dense Eigen: solutions, repeated numeric
// refactorisation of new values on the same pattern, and failure on indefinite or NaN input.
#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "mbobserver/mb/sparse_system.hpp"

using mbo::mb::SparseSystem;

namespace {

// A random symmetric pattern (a band plus scattered couplings, like a tangent's bodies and
// constraints) and SPD values on it: B' B restricted to the pattern is not SPD in general,
// so take a diagonally dominant matrix with random signs instead.
struct Problem {
  int n = 0;
  std::vector<std::pair<int, int>> entries;
  Eigen::MatrixXd dense;
};

Problem random_problem(int n, unsigned seed, double dominance) {
  Problem p;
  p.n = n;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, n - 1);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  for (int i = 0; i + 1 < n; ++i) p.entries.emplace_back(i, i + 1);
  for (int k = 0; k < 3 * n; ++k) {
    int i = pick(rng), j = pick(rng);
    if (i != j) p.entries.emplace_back(i, j);
  }
  p.dense = Eigen::MatrixXd::Zero(n, n);
  for (auto [i, j] : p.entries) p.dense(i, j) = p.dense(j, i) = val(rng);
  for (int i = 0; i < n; ++i) p.dense(i, i) = dominance * (p.dense.row(i).cwiseAbs().sum() + 0.1);
  return p;
}

void load(SparseSystem& S, const Problem& p) {
  S.set_zero();
  for (int i = 0; i < p.n; ++i) S.add(S.slot(i, i), p.dense(i, i));
  std::vector<std::pair<int, int>> seen;
  for (auto [i, j] : p.entries) {
    int s = S.slot(i, j);
    ASSERT_GE(s, 0);
    // duplicates in the entry list share a slot: add each pair's value once
    auto key = std::minmax(i, j);
    if (std::find(seen.begin(), seen.end(), std::pair<int, int>(key.first, key.second)) != seen.end()) continue;
    seen.emplace_back(key.first, key.second);
    S.add(s, p.dense(i, j));
  }
}

}  // namespace

TEST(SparseSystem, SolvesLikeDenseAcrossRefactorisations) {
  for (unsigned seed : {1u, 2u, 3u}) {
    Problem p = random_problem(60, seed, 1.5);
    SparseSystem S;
    S.build(p.n, p.entries);
    for (int round = 0; round < 3; ++round) {
      // new values on the same pattern each round
      Problem q = random_problem(60, seed, 1.5 + round);
      q.entries = p.entries;
      Eigen::MatrixXd D = Eigen::MatrixXd::Zero(p.n, p.n);
      std::mt19937 rng(100 * seed + round);
      std::uniform_real_distribution<double> val(-1.0, 1.0);
      for (auto [i, j] : p.entries) D(i, j) = D(j, i) = val(rng);
      for (int i = 0; i < p.n; ++i) D(i, i) = (2.0 + round) * (D.row(i).cwiseAbs().sum() + 0.1);
      q.dense = D;
      load(S, q);
      ASSERT_TRUE(S.factorize()) << seed << " round " << round;
      Eigen::VectorXd b = Eigen::VectorXd::LinSpaced(p.n, -1.0, 2.0), x(p.n);
      S.solve(b, x);
      Eigen::VectorXd ref = D.ldlt().solve(b);
      EXPECT_LT((x - ref).cwiseAbs().maxCoeff(), 1e-12 * (1 + ref.cwiseAbs().maxCoeff())) << seed << " round " << round;
      S.solve(b, b);  // aliasing allowed
      EXPECT_EQ(b, x);
    }
  }
}

TEST(SparseSystem, SolvesManyRightHandSidesLikeOneAtATime) {
  Problem p = random_problem(59, 7u, 2.0);
  SparseSystem S;
  S.build(p.n, p.entries);
  load(S, p);
  ASSERT_TRUE(S.factorize());
  const int ld = 14, k = 10;  // as the kinematic system: 10 of 14 columns of R
  using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  RowMatrix X = RowMatrix::Random(p.n, ld), scratch(p.n, ld);
  const RowMatrix B = X;
  S.solve_columns(X.data(), ld, k, scratch.data());
  for (int c = 0; c < ld; ++c) {
    if (c >= k) {
      EXPECT_EQ(X.col(c), B.col(c)) << "column " << c << " is past k: untouched";
      continue;
    }
    Eigen::VectorXd x(p.n);
    S.solve(B.col(c), x);
    EXPECT_LT((X.col(c) - x).cwiseAbs().maxCoeff(), 1e-13 * (1 + x.cwiseAbs().maxCoeff())) << "column " << c;
    EXPECT_LT((p.dense * X.col(c) - B.col(c)).cwiseAbs().maxCoeff(), 1e-11) << "column " << c;
  }
}

TEST(SparseSystem, RejectsIndefiniteAndNaNThenRecovers) {
  Problem p = random_problem(40, 7, 1.5);
  SparseSystem S;
  S.build(p.n, p.entries);
  Problem bad = p;
  bad.dense(17, 17) = -5;  // a negative pivot somewhere
  load(S, bad);
  EXPECT_FALSE(S.factorize());
  bad = p;
  bad.dense(3, 3) = std::nan("");
  load(S, bad);
  EXPECT_FALSE(S.factorize());
  load(S, p);  // a failed factorisation leaves nothing behind
  ASSERT_TRUE(S.factorize());
  Eigen::VectorXd b = Eigen::VectorXd::Ones(p.n), x(p.n);
  S.solve(b, x);
  EXPECT_LT((p.dense * x - b).cwiseAbs().maxCoeff(), 1e-12);
}
