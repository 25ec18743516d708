// The filter core: Van Loan against the closed form, scalar sequential updates against the
// batch Kalman update, the gate, and covariance health.
#include <random>

#include <gtest/gtest.h>

#include "mbobserver/estimation/error_ekf.hpp"

using namespace mbo::est;

TEST(VanLoan, DoubleIntegratorMatchesClosedForm) {
  // x = [p, v], v_dot = w, E[w w'] = q: W = q [dt^3/3 dt^2/2; dt^2/2 dt]
  Eigen::MatrixXd F(2, 2), G = Eigen::MatrixXd::Zero(2, 2);
  F << 0, 1, 0, 0;
  const double q = 3.7, dt = 0.02;
  G(1, 1) = q;
  Eigen::MatrixXd W = van_loan(F, G, dt), Wx(2, 2);
  Wx << q * dt * dt * dt / 3, q * dt * dt / 2, q * dt * dt / 2, q * dt;
  EXPECT_LT((W - Wx).cwiseAbs().maxCoeff(), 1e-15);
}

TEST(VanLoan, ConstantAccelerationMatchesClosedForm) {
  // x = [p, v, a], a_dot = w: W(0,0) = q dt^5/20, W(0,2) = q dt^3/6, W(2,2) = q dt
  Eigen::MatrixXd F = Eigen::MatrixXd::Zero(3, 3), G = Eigen::MatrixXd::Zero(3, 3);
  F(0, 1) = F(1, 2) = 1;
  const double q = 2.0, dt = 0.01;
  G(2, 2) = q;
  Eigen::MatrixXd W = van_loan(F, G, dt);
  EXPECT_NEAR(W(0, 0), q * std::pow(dt, 5) / 20, 1e-18);
  EXPECT_NEAR(W(0, 2), q * std::pow(dt, 3) / 6, 1e-16);
  EXPECT_NEAR(W(1, 1), q * std::pow(dt, 3) / 3, 1e-16);
  EXPECT_NEAR(W(2, 2), q * dt, 1e-15);
}

namespace {
ErrorEkfSettings settings(int n, bool fe) {
  ErrorEkfSettings s;
  s.force_error = fe;
  s.accel_noise.assign(n, 0.5);
  s.accel_rate_noise.assign(n, 2.0);
  s.initial_std_z.assign(n, 0.3);
  s.initial_std_zd.assign(n, 1.2);
  s.initial_std_a.assign(n, 3.0);
  s.gate_sigma = 0;
  return s;
}
}  // namespace

TEST(ErrorEkf, SequentialScalarUpdatesEqualTheBatchUpdate) {
  // seed 003 eq. (124): with a diagonal R, fusing rows one at a time gives the batch result.
  for (bool fe : {false, true}) {
    ErrorEkf f(3, settings(3, fe), 0.01);
    f.predict();
    const int N = f.size();
    Eigen::MatrixXd P0 = f.covariance();
    std::mt19937 rng(3);
    std::normal_distribution<double> nd;
    Eigen::MatrixXd H(4, N);
    for (int i = 0; i < H.size(); ++i) H.data()[i] = nd(rng);
    Eigen::VectorXd y(4), r(4);
    y << 0.3, -0.2, 0.05, 1.0;
    r << 0.01, 0.04, 0.02, 0.5;
    for (int i = 0; i < 4; ++i) f.update(H.row(i).transpose(), y[i], r[i]);
    Eigen::MatrixXd S = H * P0 * H.transpose();
    S.diagonal() += r;
    Eigen::MatrixXd K = P0 * H.transpose() * S.inverse();
    Eigen::VectorXd e = K * y;
    Eigen::MatrixXd P = P0 - K * H * P0;
    EXPECT_LT((f.error() - e).cwiseAbs().maxCoeff(), 1e-12) << fe;
    EXPECT_LT((f.covariance() - P).cwiseAbs().maxCoeff(), 1e-12) << fe;
  }
}

TEST(ErrorEkf, PredictIsFPFtPlusWAndZeroesTheError) {
  ErrorEkf f(2, settings(2, false), 0.05);
  Eigen::MatrixXd P0 = f.covariance();
  f.update(Eigen::VectorXd::Unit(4, 0), 0.1, 0.01);
  EXPECT_NE(f.error().norm(), 0);
  Eigen::MatrixXd P1 = f.covariance();
  f.predict();
  EXPECT_EQ(f.error().norm(), 0);  // eq. (57)
  Eigen::MatrixXd F = Eigen::MatrixXd::Identity(4, 4);
  F(0, 2) = F(1, 3) = 0.05;
  Eigen::MatrixXd expect = F * P1 * F.transpose() + f.plant_noise();
  EXPECT_LT((f.covariance() - expect).cwiseAbs().maxCoeff(), 1e-14);
  (void)P0;
}

TEST(ErrorEkf, GateRejectsOutliersAndKeepsTheState) {
  auto s = settings(1, false);
  s.gate_sigma = 3;
  ErrorEkf f(1, s, 0.01);
  f.predict();
  Eigen::VectorXd H = Eigen::VectorXd::Unit(2, 0);
  double S = f.covariance()(0, 0) + 0.01;
  auto bad = f.update(H, 10 * std::sqrt(S), 0.01);
  EXPECT_FALSE(bad.accepted);
  EXPECT_NEAR(bad.test_ratio, 100.0 / 9.0, 1e-12);
  EXPECT_EQ(f.error().norm(), 0);
  auto good = f.update(H, 1 * std::sqrt(S), 0.01);
  EXPECT_TRUE(good.accepted);
  EXPECT_NE(f.error().norm(), 0);
}

TEST(ErrorEkf, HealthDetectsNaNAndBounds) {
  ErrorEkf f(1, settings(1, false), 0.01);
  EXPECT_TRUE(f.healthy());
  f.covariance()(0, 0) = std::nan("");
  EXPECT_FALSE(f.healthy());
  f.reset_covariance();
  EXPECT_TRUE(f.healthy());
  f.covariance()(1, 1) = -1;
  EXPECT_FALSE(f.healthy());
}

TEST(ErrorEkf, CovarianceStaysSymmetricAndPositiveOverManySteps) {
  ErrorEkf f(3, settings(3, true), 0.002);
  std::mt19937 rng(5);
  std::normal_distribution<double> nd;
  for (int k = 0; k < 5000; ++k) {
    f.predict();
    Eigen::VectorXd H = Eigen::VectorXd::Zero(f.size());
    H[k % 3] = 1;
    H[3 + (k + 1) % 3] = 0.3 * nd(rng);
    f.update(H, 0.01 * nd(rng), 1e-4);
  }
  const auto& P = f.covariance();
  EXPECT_LT((P - P.transpose()).cwiseAbs().maxCoeff(), 1e-12 * P.cwiseAbs().maxCoeff());
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(P);
  EXPECT_GT(es.eigenvalues().minCoeff(), 0);
  EXPECT_TRUE(f.healthy());
}
