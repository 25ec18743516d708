// The whiteness test and NEES on signals whose answer is known.
#include <random>

#include <gtest/gtest.h>

#include "mbobserver/estimation/consistency.hpp"
#include "mbobserver/estimation/error_ekf.hpp"

using namespace mbo::est;

TEST(Whiteness, WhiteNoisePassesMostOfTheTime) {
  int passed = 0;
  for (unsigned seed = 0; seed < 200; ++seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> nd;
    std::vector<double> x(2000);
    for (auto& v : x) v = nd(rng);
    passed += whiteness_test(x).white;
  }
  // a 95 % test: about 190 of 200 pass; fewer than 180 would mean a wrong bound
  EXPECT_GE(passed, 180);
  EXPECT_LE(passed, 200);
}

TEST(Whiteness, CorrelatedNoiseFails) {
  std::mt19937 rng(1);
  std::normal_distribution<double> nd;
  std::vector<double> x(2000);
  double prev = 0;
  for (auto& v : x) v = prev = 0.8 * prev + nd(rng);  // AR(1): red spectrum
  auto r = whiteness_test(x);
  EXPECT_FALSE(r.white);
  EXPECT_GT(r.max_deviation, 3 * r.bound);
}

TEST(Whiteness, TooFewSamplesIsNotWhite) {
  auto r = whiteness_test({1, 2, 3});
  EXPECT_FALSE(r.white);
}

TEST(Nees, ConsistentLinearFilterAveragesTheStateDimension) {
  // A Kalman filter on a simulated double integrator with the true noise: mean NEES ~ 2.
  const double dt = 0.01, q = 1.0, r = 0.01;
  ErrorEkfSettings s;
  s.accel_noise = {q};
  s.initial_std_z = {1};
  s.initial_std_zd = {1};
  s.gate_sigma = 0;
  std::mt19937 rng(7);
  std::normal_distribution<double> nd;
  double sum = 0;
  long n = 0;
  for (int run = 0; run < 20; ++run) {
    ErrorEkf f(1, s, dt);
    Eigen::Vector2d x(nd(rng), nd(rng)), xh(0, 0);
    Eigen::LLT<Eigen::MatrixXd> W(f.plant_noise());
    for (int k = 0; k < 500; ++k) {
      x = Eigen::Vector2d(x[0] + dt * x[1], x[1]) + Eigen::MatrixXd(W.matrixL()) * Eigen::Vector2d(nd(rng), nd(rng));
      xh = Eigen::Vector2d(xh[0] + dt * xh[1], xh[1]);
      f.predict();
      f.update(Eigen::Vector2d(1, 0), x[0] + std::sqrt(r) * nd(rng) - xh[0], r);
      xh += f.error();
      if (k > 50) sum += nees(x - xh, f.covariance()), ++n;
    }
  }
  auto [lo, hi] = nees_interval(2, n);
  double mean = sum / n;
  EXPECT_GT(mean, 1.8);
  EXPECT_LT(mean, 2.2);
  EXPECT_LT(lo, 2.0);
  EXPECT_GT(hi, 2.0);
}
