// The filter core: Van Loan against the closed form, scalar sequential updates against the
// batch Kalman update, the gate, and covariance health.
#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/error_ekf.hpp"
#include "mbobserver/estimation/observer.hpp"

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
  // Sinigaglia 2016 eq. (124): with a diagonal R, fusing rows one at a time gives the batch result.
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

TEST(ErrorEkf, AccelNoiseScaleScalesOnlyThatCoordinatesVanLoanBlock) {
  // Two FE filters from the same covariance: the one whose coordinate 1 has its acceleration
  // noise scaled by k must differ from the other by exactly (k - 1) q [dt^3/3 dt^2/2; dt^2/2 dt]
  // on coordinate 1's (z, zd) block, and nowhere else (the force errors keep their own noise).
  const double dt = 0.01, k = 0.05;
  ErrorEkf a(2, settings(2, true), dt), b(2, settings(2, true), dt);
  b.set_accel_noise_scale(1, k);
  EXPECT_EQ(b.accel_noise_scale(1), k);
  a.predict();
  b.predict();
  Eigen::MatrixXd D = b.covariance() - a.covariance();
  const double q = settings(2, true).accel_noise[1];
  const auto& L = a.layout();
  EXPECT_NEAR(D(L.z(1), L.z(1)), (k - 1) * q * dt * dt * dt / 3, 1e-15);
  EXPECT_NEAR(D(L.z(1), L.zd(1)), (k - 1) * q * dt * dt / 2, 1e-15);
  EXPECT_NEAR(D(L.zd(1), L.z(1)), (k - 1) * q * dt * dt / 2, 1e-15);
  EXPECT_NEAR(D(L.zd(1), L.zd(1)), (k - 1) * q * dt, 1e-15);
  D(L.z(1), L.z(1)) = D(L.z(1), L.zd(1)) = D(L.zd(1), L.z(1)) = D(L.zd(1), L.zd(1)) = 0;
  EXPECT_EQ(D.cwiseAbs().maxCoeff(), 0);
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

TEST(ErrorEkf, ForceErrorOnASubsetPredictsWithItsOwnTransition) {
  // n = 2 coordinates, an acceleration error on the second only: e = [dz0 dz1 dzd0 dzd1 da1].
  const double dt = 0.01, q = 0.5, qa = 2.0;
  ErrorEkfSettings s = settings(2, true);
  s.forced = {1};
  s.accel_rate_noise = {qa};
  s.initial_std_a = {3.0};
  ErrorEkf f(2, s, dt);
  ASSERT_EQ(f.size(), 5);
  Eigen::MatrixXd P0 = f.covariance();
  EXPECT_DOUBLE_EQ(P0(4, 4), 9.0);
  f.predict();
  // closed forms: double integrator on z0; constant acceleration on z1 (W of the tests above)
  Eigen::MatrixXd F = Eigen::MatrixXd::Identity(5, 5);
  F(0, 2) = F(1, 3) = F(3, 4) = dt;
  F(1, 4) = dt * dt / 2;
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(5, 5);
  W(0, 0) = q * std::pow(dt, 3) / 3, W(0, 2) = W(2, 0) = q * dt * dt / 2, W(2, 2) = q * dt;
  W(1, 1) = q * std::pow(dt, 3) / 3 + qa * std::pow(dt, 5) / 20;
  W(1, 3) = W(3, 1) = q * dt * dt / 2 + qa * std::pow(dt, 4) / 8;
  W(1, 4) = W(4, 1) = qa * std::pow(dt, 3) / 6;
  W(3, 3) = q * dt + qa * std::pow(dt, 3) / 3;
  W(3, 4) = W(4, 3) = qa * dt * dt / 2;
  W(4, 4) = qa * dt;
  EXPECT_LT((f.covariance() - (F * P0 * F.transpose() + W)).cwiseAbs().maxCoeff(), 1e-14);
}

TEST(ErrorEkf, ForceErrorOnASubsetLearnsAConstantUnknownAcceleration) {
  // A model of two free points whose second feels an unknown 2 m/s^2; positions measured at
  // 100 Hz with 1 cm noise. The model is corrected every step and the estimated acceleration
  // error stays in it as a force (eq. (125)): it must converge to 2 on the forced coordinate.
  const double dt = 0.01, a_true = 2.0, sigma = 0.01;
  ErrorEkfSettings s = settings(2, true);
  s.forced = {1};
  s.accel_rate_noise = {0.01};
  s.initial_std_a = {3.0};
  ErrorEkf f(2, s, dt);
  Eigen::Vector2d z_true(0, 0), zd_true(1, 0), z(0, 0), zd(1, 0);
  double force = 0;
  std::mt19937 rng(7);
  std::normal_distribution<double> nd(0, sigma);
  for (int k = 0; k < 2000; ++k) {
    zd_true[1] += a_true * dt, z_true += zd_true * dt;  // symplectic Euler for both
    zd[1] += force * dt, z += zd * dt;
    f.predict();
    for (int i = 0; i < 2; ++i) f.update(Eigen::VectorXd::Unit(5, i), z_true[i] + nd(rng) - z[i], sigma * sigma);
    z += f.error().head(2), zd += f.error().segment(2, 2), force += f.error()[4];
    f.reset_error();
  }
  EXPECT_NEAR(force, a_true, 0.1);
  EXPECT_LT((z - z_true).norm(), 4 * sigma);
  EXPECT_THROW(
      [&] {
        ErrorEkfSettings bad = s;
        bad.forced = {2};  // not an observed coordinate
        ErrorEkf g(2, bad, dt);
      }(),
      std::invalid_argument);
}

TEST(ForceErrorConfig, NamesTheForcedCoordinatesInObservedOrder) {
  const std::vector<std::string> observed = {"x", "y", "spin_fl", "spin_fr"};
  auto read = [&](const std::string& text) {
    const auto doc = mbo::parse_json_text(text, "cfg.json");
    ErrorEkfSettings s;
    read_forced_coordinates(mbo::JsonReader(doc, "cfg.json", "/force_error"), observed, s);
    return s;
  };
  auto s = read(R"({"plant_noise": {"spin_fr": 5, "spin_fl": 10},
                                    "initial_std": {"spin_fl": 1, "spin_fr": 2}})");
  EXPECT_EQ(s.forced, (std::vector<int>{2, 3}));
  EXPECT_EQ(s.accel_rate_noise, (std::vector<double>{10, 5}));
  EXPECT_EQ(s.initial_std_a, (std::vector<double>{1, 2}));
  auto error = [&](const std::string& text) {
    try {
      read(text);
    } catch (const mbo::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error(R"({"plant_noise": {"yaw": 1}, "initial_std": {"yaw": 1}})").find("/force_error/plant_noise"),
            std::string::npos);  // yaw is not observed: an unknown key
  EXPECT_NE(error(R"({"plant_noise": {"x": 1}, "initial_std": {"x": 1, "y": 1}})").find("\"y\" has no force error"),
            std::string::npos);
  EXPECT_NE(error(R"({"plant_noise": {"x": 1}, "initial_std": {}})").find("missing \"x\""), std::string::npos);
  EXPECT_NE(error(R"({"plant_noise": {}, "initial_std": {}})").find("names no observed coordinate"), std::string::npos);
}

TEST(ErrorEkf, StiffModelJacobianTakenByTheModelsTrapezoidalRuleStaysBounded) {
  // One coordinate whose velocity error decays at rate k = 5000 1/s (a tyre's slip at
  // walking pace): dt k = 10. By the trapezoidal rule the velocity row is
  // (1 + dt k/2)^-1 ([dt/2 A21, 1 - dt k/2, dt] + dt/2 A21 [1 dt dt^2/2]), so the velocity
  // factor is about -2/3; to first order in dt it would be 1 - dt k = -9, 81-fold growth.
  const double dt = 0.002, k = 5000, a21 = -300;
  ErrorEkfSettings s = settings(1, true);
  ErrorEkf f(1, s, dt);
  Eigen::MatrixXd A21(1, 1), A22(1, 1);
  A21 << a21;
  A22 << -k;
  auto& P = f.covariance();
  P.setZero();
  P(1, 1) = 1.0;  // velocity error only
  const Eigen::MatrixXd W = f.plant_noise();
  f.predict(&A21, &A22);
  const double phi_vv = (1 - dt * k / 2 + dt / 2 * a21 * dt) / (1 + dt * k / 2);
  EXPECT_NEAR(f.covariance()(1, 1), phi_vv * phi_vv + W(1, 1), 1e-12);
  EXPECT_NEAR(f.covariance()(0, 1), dt * phi_vv + W(0, 1), 1e-12);  // position row unchanged: [1 dt dt^2/2]
  for (int i = 0; i < 500; ++i) f.predict(&A21, &A22);
  EXPECT_LT(f.covariance()(1, 1), 1.0);  // bounded by the plant noise, not amplified
  EXPECT_TRUE(f.healthy());
  // A mode growing at exactly 2/dt makes the implicit matrix singular: that step falls back
  // to the transition without the Jacobians instead of filling P with inf.
  A22 << 2 / dt;
  P.setIdentity();
  f.predict(&A21, &A22);
  EXPECT_TRUE(f.covariance().allFinite());
  EXPECT_TRUE(f.healthy());
}

// errorEKF-FE on one coordinate with a force error and one estimated input.
ErrorEkfSettings one_coordinate_with_an_input(double input_rate_noise, double initial_std_p) {
  ErrorEkfSettings s;
  s.force_error = true;
  s.accel_noise = {0.5};
  s.initial_std_z = {0.1};
  s.initial_std_zd = {0.2};
  s.accel_rate_noise = {1.0};
  s.initial_std_a = {0.3};
  s.input_rate_noise = {input_rate_noise};
  s.initial_std_p = {initial_std_p};
  return s;
}

TEST(ErrorEkf, PredictWithEveryBlockIsTheDenseFPFtPlusW) {
  // predict() multiplies only F's kinematic rows, the rest of F being diagonal (random walks,
  // Gauss-Markov decays): with the model's Jacobians, B, inputs and decaying sensor
  // parameters, the result must be the dense F P F' + W from a correlated P.
  const int n = 3, r = 2, ns = 2;
  const double dt = 0.01;
  ErrorEkfSettings s = settings(n, true);
  s.input_rate_noise.assign(r, 0.01);
  s.initial_std_p.assign(r, 0.5);
  s.sensor_rate_noise.assign(ns, 1e-4);
  s.initial_std_s.assign(ns, 0.2);
  s.sensor_decay = {0.5, 2.0};
  ErrorEkf f(n, s, dt);
  const int N = f.size();
  ASSERT_EQ(N, 3 * n + r + ns);
  std::mt19937 rng(7);
  std::normal_distribution<double> nd;
  for (int k = 0; k < 3 * N; ++k) {  // a correlated P, every variance well below its start
    Eigen::VectorXd h(N);
    for (int i = 0; i < N; ++i) h[i] = nd(rng);
    f.update(h, 0.1 * nd(rng), 0.01, 0);
  }
  const Eigen::MatrixXd P1 = f.covariance();
  Eigen::MatrixXd A21(n, n), A22(n, n), B(n, r);
  for (auto* M : {&A21, &A22, &B})
    for (int i = 0; i < M->size(); ++i) M->data()[i] = 3 * nd(rng);
  f.predict(&A21, &A22, &B);
  const Eigen::MatrixXd& F = f.transition();
  EXPECT_NE(F.block(f.layout().zd(0), f.layout().input(0), n, r).cwiseAbs().maxCoeff(), 0);  // B entered
  EXPECT_NEAR(F(f.layout().sensor(1), f.layout().sensor(1)), std::exp(-2.0 * dt), 1e-15);
  const Eigen::MatrixXd expect = F * P1 * F.transpose() + f.plant_noise();
  EXPECT_LT((f.covariance() - expect).cwiseAbs().maxCoeff(), 1e-13 * expect.cwiseAbs().maxCoeff());
}

TEST(ErrorEkf, AnEstimatedInputAcceleratesThroughBAndIsNeverLessKnownThanAtTheStart) {
  // e = [dz, dzd, da, dp]: dp enters as B dp does in dzdd, so one predict from a diagonal P
  // gives cov(dz, dp) = dt^2/2 B sp^2 and cov(dzd, dp) = dt B sp^2 (the plant noise has no
  // cross term with dp), both then scaled by c = sqrt(sp^2 / (sp^2 + q dt)) as dp's variance
  // is brought back to its initial one. Unobserved, it stays there, P staying positive.
  ErrorEkfSettings s = one_coordinate_with_an_input(0.01, 0.05);
  const double dt = 0.01, b = 2.5, sp2 = 0.05 * 0.05;
  ErrorEkf f(1, s, dt);
  ASSERT_EQ(f.size(), 4);
  ASSERT_EQ(f.layout().input().offset, 3);
  Eigen::MatrixXd B(1, 1);
  B << b;
  f.predict(nullptr, nullptr, &B);
  const auto& P = f.covariance();
  const double c = std::sqrt(sp2 / (sp2 + 0.01 * dt));
  EXPECT_NEAR(P(0, 3), c * 0.5 * dt * dt * b * sp2, 1e-15);
  EXPECT_NEAR(P(1, 3), c * dt * b * sp2, 1e-15);
  EXPECT_NEAR(P(3, 3), sp2, 1e-15);  // sp2 + q dt, scaled back to sp2
  for (int k = 0; k < 2000; ++k) f.predict(nullptr, nullptr, &B);
  EXPECT_NEAR(f.covariance()(3, 3), sp2, 1e-15);
  EXPECT_GT(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(f.covariance()).eigenvalues().minCoeff(), 0.0);
  // A velocity measurement then informs dp through the correlation B built.
  Eigen::VectorXd H = Eigen::VectorXd::Zero(4);
  H[1] = 1;
  const double before = f.covariance()(3, 3);
  f.update(H, 0.05, 1e-4, 0);
  EXPECT_LT(f.covariance()(3, 3), before);
  EXPECT_GT(f.error()[3], 0.0);  // a faster-than-predicted motion: more input (B > 0)
  ErrorEkfSettings plain = s;
  plain.force_error = false;
  EXPECT_EQ(ErrorEkf(1, plain, dt).size(), 2);  // errorEKF: read but not used, like the force error
  ErrorEkfSettings pinned = s;
  pinned.initial_std_p = {0};  // its variance's ceiling too: 0 would pin it
  EXPECT_THROW(ErrorEkf(1, pinned, dt), std::invalid_argument);
}

TEST(ErrorEkf, AnEstimatedInputIsTakenByTheTrapezoidalRuleWithTheJacobians) {
  // n = 1 with dzdd = a dz + b dzd + da + B dp: the trapezoidal rule gives dp's column
  //   dz+  = dt^2/2 B,   dzd+ = (dt B + dt/2 a dz+) / (1 - dt/2 b).
  // From P = e_p e_p' (no plant noise on the cross terms), P+ - W = f f' with f = F e_p, f_p = 1.
  ErrorEkfSettings s = one_coordinate_with_an_input(0.0, 1.0);
  const double dt = 0.002, a = -40, b = -300, beta = -250;
  ErrorEkf f(1, s, dt);
  Eigen::MatrixXd A21(1, 1), A22(1, 1), B(1, 1);
  A21 << a;
  A22 << b;
  B << beta;
  f.covariance().setZero();
  f.covariance()(3, 3) = 1;
  f.predict(&A21, &A22, &B);
  const Eigen::MatrixXd P = f.covariance() - f.plant_noise();
  const double dz = 0.5 * dt * dt * beta, dzd = (dt * beta + 0.5 * dt * a * dz) / (1 - 0.5 * dt * b);
  EXPECT_NEAR(P(0, 3), dz, 1e-15);
  EXPECT_NEAR(P(1, 3), dzd, 1e-15);
  EXPECT_NEAR(P(1, 1), dzd * dzd, 1e-15);
}

// A Gauss-Markov sensor parameter (a receiver's wandering error): its transition is
// exp(-dt / tau), Van Loan's noise is q tau / 2 (1 - exp(-2 dt / tau)), and with nothing
// observing it its variance settles at q tau / 2 = sigma^2 for q = 2 sigma^2 / tau, where a
// random walk's would grow without bound (here: to its ceiling, the initial variance).
TEST(ErrorEkf, AGaussMarkovSensorParameterDecaysAndSettlesAtItsVariance) {
  const double dt = 0.01, tau = 2.0, sigma = 1.5, q = 2 * sigma * sigma / tau;
  ErrorEkfSettings s = settings(1, false);
  s.sensor_rate_noise = {q};
  s.initial_std_s = {sigma};
  s.sensor_decay = {1 / tau};
  ErrorEkf f(1, s, dt);
  const int i = f.layout().sensor(0);
  EXPECT_NEAR(f.plant_noise()(i, i), q * tau / 2 * (1 - std::exp(-2 * dt / tau)), 1e-15);
  f.covariance().setZero();
  f.covariance()(i, i) = 1;
  f.predict();
  EXPECT_NEAR(f.covariance()(i, i) - f.plant_noise()(i, i), std::exp(-2 * dt / tau), 1e-14);
  f.covariance()(i, i) = 0;
  for (int k = 0; k < static_cast<int>(10 * tau / dt); ++k) f.predict();
  EXPECT_NEAR(f.covariance()(i, i), sigma * sigma, 1e-6 * sigma * sigma);
  s.sensor_decay = {-1.0};
  EXPECT_THROW(ErrorEkf(1, s, dt), std::invalid_argument);
}

// Schmidt's consider update (Schmidt 1966): with the sensor block not learning, a measurement
// leaves the parameters' estimates at zero, and the covariance is Joseph's form for the gain
// whose sensor rows are zero, computed here densely: (I - K H) P (I - K H)' + K r K'.
TEST(ErrorEkf, AConsideredSensorBlockKeepsItsEstimateAndJosephsCovariance) {
  ErrorEkfSettings s = settings(2, false);
  s.sensor_rate_noise = {1e-6, 1e-6};
  s.initial_std_s = {0.5, 0.2};
  ErrorEkf learning(2, s, 0.01), considering(2, s, 0.01);
  ASSERT_EQ(considering.sensor_parameters(), 2);
  const int n = considering.size();
  // correlate the parameters with the coordinates, as a drive would
  for (auto* f : {&learning, &considering}) {
    f->covariance()(0, 4) = f->covariance()(4, 0) = 0.05;
    f->covariance()(1, 5) = f->covariance()(5, 1) = -0.02;
  }
  considering.set_sensor_learning(false);
  Eigen::VectorXd H = Eigen::VectorXd::Zero(n);
  H[0] = 1, H[4] = 0.7, H[5] = -0.3;  // a row that sees z0 and both parameters
  const double r = 0.01, y = 0.4;
  const Eigen::MatrixXd P = considering.covariance();
  const auto u = considering.update(H, y, r, 0);
  ASSERT_TRUE(u.accepted);
  learning.update(H, y, r, 0);
  const auto S = considering.layout().sensor();
  EXPECT_EQ(considering.error().segment(S.offset, S.size).norm(), 0.0);
  EXPECT_GT(learning.error().segment(S.offset, S.size).norm(), 1e-3) << "learning moves them";
  Eigen::VectorXd K = P * H / (H.dot(P * H) + r);
  K.segment(S.offset, S.size).setZero();
  const Eigen::MatrixXd IKH = Eigen::MatrixXd::Identity(n, n) - K * H.transpose();
  const Eigen::MatrixXd joseph = IKH * P * IKH.transpose() + K * r * K.transpose();
  EXPECT_LT((considering.covariance() - joseph).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_NEAR(considering.error()[0], K[0] * y, 1e-15);
  // the parameters' own block is untouched where learning shrinks it; one update leaves the
  // coordinates' block as learning does (it differs from the next update on)
  for (int i = S.offset; i < S.end(); ++i) {
    EXPECT_DOUBLE_EQ(considering.covariance()(i, i), P(i, i));
    EXPECT_LT(learning.covariance()(i, i), P(i, i));
  }
  EXPECT_NEAR(considering.covariance()(0, 0), learning.covariance()(0, 0), 1e-15);
}

// The consider update per parameter (ErrorEkf::set_learning): a considered input keeps its
// estimate while a learning sensor parameter beside it moves, the covariance is Joseph's form
// for the gain with only the input's row zeroed, and only parameters can be considered.
TEST(ErrorEkf, EachParameterCanBeConsideredOnItsOwn) {
  ErrorEkfSettings s = one_coordinate_with_an_input(0.0, 0.5);
  s.sensor_rate_noise = {0.0};
  s.initial_std_s = {0.2};
  s.gate_sigma = 0;
  ErrorEkf f(1, s, 0.01);
  const int n = f.size(), input = f.layout().input().offset, sensor = f.layout().sensor().offset;
  ASSERT_EQ(n, 5);
  f.covariance()(0, input) = f.covariance()(input, 0) = 0.02;
  f.covariance()(0, sensor) = f.covariance()(sensor, 0) = -0.01;
  EXPECT_THROW(f.set_learning(0, false), std::out_of_range) << "a coordinate always learns";
  f.set_learning(input, false);
  EXPECT_FALSE(f.learning(input));
  EXPECT_TRUE(f.learning(sensor));
  EXPECT_TRUE(f.sensor_learning());
  Eigen::VectorXd H = Eigen::VectorXd::Zero(n);
  H[0] = 1, H[input] = 0.4, H[sensor] = 0.8;
  const double r = 0.01, y = 0.3;
  const Eigen::MatrixXd P = f.covariance();
  ASSERT_TRUE(f.update(H, y, r, 0).accepted);
  EXPECT_EQ(f.error()[input], 0.0);
  EXPECT_NE(f.error()[sensor], 0.0);
  Eigen::VectorXd K = P * H / (H.dot(P * H) + r);
  K[input] = 0;
  const Eigen::MatrixXd IKH = Eigen::MatrixXd::Identity(n, n) - K * H.transpose();
  const Eigen::MatrixXd joseph = IKH * P * IKH.transpose() + K * r * K.transpose();
  EXPECT_LT((f.covariance() - joseph).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_DOUBLE_EQ(f.covariance()(input, input), P(input, input)) << "its variance does not collapse";
  // learning again: the plain update
  f.set_learning(input, true);
  f.set_sensor_learning(false);
  EXPECT_FALSE(f.sensor_learning());
  EXPECT_TRUE(f.learning(input));
  f.reset_error();
  ASSERT_TRUE(f.update(H, y, r, 0).accepted);
  EXPECT_NE(f.error()[input], 0.0);
  EXPECT_EQ(f.error()[sensor], 0.0);
}

// Two parameters learning along a direction only (ErrorEkf::set_learning_along; the payloads
// in cornering): their correction lies along (da, db) whatever the row, the covariance is
// Joseph's form for that gain (their rows of P H' projected on the direction), computed here
// densely, with a third parameter considered beside them; off again, the plain update.
TEST(ErrorEkf, TwoParametersLearnAlongADirectionWithJosephsCovariance) {
  ErrorEkfSettings s = settings(1, false);
  s.sensor_rate_noise = {0.0, 0.0, 0.0};
  s.initial_std_s = {0.5, 0.4, 0.3};
  s.gate_sigma = 0;
  ErrorEkf f(1, s, 0.01);
  const int n = f.size(), a = f.layout().sensor(0), b = f.layout().sensor(1), c = f.layout().sensor(2);
  f.covariance()(0, a) = f.covariance()(a, 0) = 0.03;
  f.covariance()(0, b) = f.covariance()(b, 0) = -0.02;
  f.covariance()(a, b) = f.covariance()(b, a) = 0.01;
  f.covariance()(0, c) = f.covariance()(c, 0) = 0.015;
  f.set_learning(c, false);
  const double da = 0.9, db = 0.2;  // normalised inside
  f.set_learning_along(a, b, da, db);
  Eigen::VectorXd H = Eigen::VectorXd::Zero(n);
  H[0] = 1, H[a] = 0.6, H[b] = 0.9, H[c] = -0.4;  // a row that tells a from b
  const double r = 0.01, y = 0.3;
  const Eigen::MatrixXd P = f.covariance();
  ASSERT_TRUE(f.update(H, y, r, 0).accepted);
  const Eigen::Vector2d dir = Eigen::Vector2d(da, db).normalized();
  const Eigen::Vector2d moved(f.error()[a], f.error()[b]);
  EXPECT_GT(moved.norm(), 1e-3);
  EXPECT_LT(std::abs(moved.x() * dir.y() - moved.y() * dir.x()), 1e-15) << "along the direction only";
  EXPECT_EQ(f.error()[c], 0.0);
  Eigen::VectorXd K = P * H / (H.dot(P * H) + r);
  K[c] = 0;
  const double along = dir.dot(Eigen::Vector2d(K[a], K[b]));
  K[a] = along * dir.x(), K[b] = along * dir.y();
  const Eigen::MatrixXd IKH = Eigen::MatrixXd::Identity(n, n) - K * H.transpose();
  const Eigen::MatrixXd joseph = IKH * P * IKH.transpose() + K * r * K.transpose();
  EXPECT_LT((f.covariance() - joseph).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_NEAR(f.error()[0], K[0] * y, 1e-15);
  // the split's variance does not collapse as the plain update's would
  const Eigen::Vector2d across(-dir.y(), dir.x());
  const auto split_var = [&](const Eigen::MatrixXd& M) {
    Eigen::Matrix2d B;
    B << M(a, a), M(a, b), M(b, a), M(b, b);
    return across.dot(B * across);
  };
  ErrorEkf plain(1, s, 0.01);
  plain.covariance() = P;
  ASSERT_TRUE(plain.update(H, y, r, 0).accepted);
  EXPECT_GT(split_var(f.covariance()), split_var(plain.covariance()) * 1.05);
  // off: the plain update (c still considered)
  f.set_learning_along(-1, -1, 0, 0);
  f.reset_error();
  f.covariance() = P;
  ErrorEkf reference(1, s, 0.01);
  reference.covariance() = P;
  reference.set_learning(c, false);
  ASSERT_TRUE(f.update(H, y, r, 0).accepted);
  ASSERT_TRUE(reference.update(H, y, r, 0).accepted);
  EXPECT_LT((f.covariance() - reference.covariance()).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_LT((f.error() - reference.error()).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_THROW(f.set_learning_along(0, a, 1, 1), std::out_of_range) << "a coordinate learns as it must";
}

// A state set from a measurement that reads the truth plus c b has the sensitivity -c to b
// (set_unmodelled): the next such measurement of it then adds nothing to the sensitivity (H S +
// c = 0), and one with the opposite sign would (a start's sign checked against its rows').
TEST(ErrorEkf, AStateSetFromABiasedRowHasThatRowsSensitivity) {
  const int n = 2;
  ErrorEkf f(n, settings(n, false), 0.01);
  f.set_unmodelled_biases({0.5});
  const int N = f.size();
  Eigen::VectorXd H = Eigen::VectorXd::Zero(N);
  H[f.layout().z(0)] = 1;
  const double c = -7.5;  // a fix's -v
  f.predict();  // the coordinate and its rate correlated
  f.set_unmodelled(f.layout().z(0), 0, -c);
  f.update(H, 0.0, 0.01, 0, 0, c);
  EXPECT_NEAR(f.unmodelled_covariance(f.layout().z(0), f.layout().z(0)), c * c * 0.25, 1e-12);
  EXPECT_EQ(f.unmodelled_covariance(f.layout().zd(0), f.layout().zd(0)), 0.0) << "nothing else learned of it";
  f.set_unmodelled(f.layout().z(0), 0, c);  // the wrong sign
  f.update(H, 0.0, 0.01, 0, 0, c);
  EXPECT_GT(f.unmodelled_covariance(f.layout().zd(0), f.layout().zd(0)), 0.0);
  f.set_unmodelled(f.layout().z(0), 5, 1.0);  // no such bias: ignored
}

TEST(ErrorEkf, AnUnmodelledBiasAddsWhatItDoesToTheEstimatesToTheirCovariance) {
  // Consider analysis: the filter ignores a bias b on one measurement row, so its estimate
  // moves by S b, with S carried through each prediction and accepted update. The filter is
  // linear in its measurements (its gains do not depend on them): run it twice on the same
  // measurements, once with c_k b added to that row (c_k its coefficient, as a scale error's
  // row has), and the estimates must differ by exactly S b
  // (S being the sensitivity of x - x_hat, with the opposite sign; their products are the same),
  // whatever the transition (plain, with the model's Jacobians and B) and the gain (Kalman's, or
  // Schmidt's while a parameter is considered).
  for (bool fe : {false, true}) {
    const int n = 2;
    const double dt = 0.01, b = 0.37, sigma = 0.8;
    ErrorEkfSettings s = settings(n, fe);
    s.sensor_rate_noise = {1e-4};
    s.initial_std_s = {0.2};
    if (fe) s.input_rate_noise = {0.01}, s.initial_std_p = {0.5};
    // a second bias on the same row (a gyro's scale error: its coefficient is the rate read)
    const double b2 = -0.21, sigma2 = 0.3;
    ErrorEkf clean(n, s, dt), biased(n, s, dt), biased2(n, s, dt);
    for (auto* f : {&clean, &biased, &biased2}) {
      f->set_unmodelled_biases({sigma, sigma2});
      if (fe) f->set_learning(f->layout().sensor(0), false);  // Schmidt's gain
    }
    const int N = clean.size();
    Eigen::VectorXd x_clean = Eigen::VectorXd::Zero(N), x_biased = x_clean, x_biased2 = x_clean;
    Eigen::MatrixXd A21(n, n), A22(n, n), B(n, 1);
    A21 << -4, 1, 0.5, -2;
    A22 << -0.3, 0.1, 0, -0.8;
    B << 1.5, -0.5;
    std::mt19937 rng(11);
    std::normal_distribution<double> nd;
    Eigen::VectorXd H_pos = Eigen::VectorXd::Zero(N), H_rate = Eigen::VectorXd::Zero(N);
    H_pos[clean.layout().z(0)] = 1;  // a fix of coordinate 0
    H_pos[clean.layout().z(1)] = 0.3;
    H_rate[clean.layout().zd(1)] = 1;  // a rate gyro on coordinate 1, biased
    H_rate[clean.layout().sensor(0)] = 1;
    for (int k = 0; k < 300; ++k) {
      const double y_pos = nd(rng), y_rate = 0.1 * nd(rng);
      for (auto [f, x, bias, bias2] : {std::tuple{&clean, &x_clean, 0.0, 0.0}, std::tuple{&biased, &x_biased, b, 0.0},
                                       std::tuple{&biased2, &x_biased2, 0.0, b2}}) {
        if (fe)
          f->predict(&A21, &A22, &B);
        else
          f->predict();
        *x = f->transition() * *x;  // the model's own step of the estimate
        // a scale error's row: the bias times what the row measures, here a varying coefficient
        const double c = 1 + 0.5 * std::sin(0.05 * k);
        const double c2 = 1 + y_rate;
        f->update(H_rate, y_rate + c * bias + c2 * bias2 - H_rate.dot(*x), 0.01, 0, 0, c, 1, c2);
        if (k % 10 == 0) f->update(H_pos, y_pos - H_pos.dot(*x), 0.04, 0);
        *x += f->error();  // the model corrected (eq. (57))
        f->reset_error();
      }
    }
    const Eigen::VectorXd S = (x_biased - x_clean) / b;  // the sensitivity, by difference
    const Eigen::VectorXd S2 = (x_biased2 - x_clean) / b2;
    ASSERT_GT(S.cwiseAbs().maxCoeff(), 0.1) << "the bias moves the estimates";
    ASSERT_GT(S2.cwiseAbs().maxCoeff(), 0.1) << "the second bias moves the estimates";
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j)
        EXPECT_NEAR(biased.unmodelled_covariance(i, j), S[i] * S[j] * sigma * sigma + S2[i] * S2[j] * sigma2 * sigma2,
                    1e-9)
            << fe << " " << i << j;
    EXPECT_EQ(biased.covariance(), clean.covariance()) << "the filter itself is the same";
    const double kept = biased.unmodelled_covariance(0, 0);
    biased.reset_covariance();  // a new start keeps what the model carries of the bias
    EXPECT_EQ(biased.unmodelled_covariance(0, 0), kept);
    biased.forget_unmodelled(0);  // a state set anew owes it nothing
    EXPECT_EQ(biased.unmodelled_covariance(0, 0), 0.0);
    EXPECT_EQ(biased.unmodelled_covariance(0, 1), 0.0);
    // A start from a fix sets the motion anew; the sensor parameter (and the input) it keeps
    // still hold what the bias moved them by, S b by difference above: their part stays.
    std::vector<int> kept_states;  // those the biases moved (a considered one they do not)
    for (int i : {biased2.layout().sensor(0), fe ? biased2.layout().input(0) : -1})
      if (i >= 0 && std::abs(S[i]) + std::abs(S2[i]) > 1e-3) kept_states.push_back(i);
    ASSERT_FALSE(kept_states.empty()) << "the biases moved a parameter";
    std::vector<double> kept_var;
    for (int i : kept_states) kept_var.push_back(biased2.unmodelled_covariance(i, i));
    biased2.reset_covariance();
    biased2.forget_unmodelled_motion();
    for (std::size_t k = 0; k < kept_states.size(); ++k) {
      const int i = kept_states[k];
      EXPECT_NEAR(biased2.unmodelled_covariance(i, i), S[i] * S[i] * sigma * sigma + S2[i] * S2[i] * sigma2 * sigma2,
                  1e-9)
          << fe << " " << i;
      EXPECT_EQ(biased2.unmodelled_covariance(i, i), kept_var[k]);
    }
    for (int i = 0; i < biased2.layout().input().offset; ++i)
      EXPECT_EQ(biased2.unmodelled_covariance(i, i), 0.0) << "the motion set anew owes it nothing: " << i;
  }
}

// estimate_unmodelled: a bias the filter considered (it ignored it, and carried what it did to
// the estimates in S) becomes a state. The joint covariance of the error and the bias is then
// [P + S s2 S', S s2; s2 S', s2] (s2 the bias's variance), which a Monte Carlo of the linear
// filter must show: truths drawn from the filter's own model (initial P, plant noise W, a
// constant bias on the rate row), their errors' covariance at the release, and again after the
// rate row has learned the bias for a while (the released filter stays consistent). Reopening
// the bias's variance without its correlations (what the scales' release did before) fails it.
TEST(ErrorEkf, AConsideredBiasMadeAStateTakesTheErrorItMadeAsItsCorrelations) {
  const int n = 1, runs = 3000;
  const double dt = 0.01, sigma_b = 0.4, r_rate = 0.01, r_pos = 0.04;
  ErrorEkfSettings s = settings(n, false);
  s.sensor_rate_noise = {0.0};
  s.initial_std_s = {sigma_b};
  std::mt19937 rng(7);
  std::normal_distribution<double> nd;
  for (bool promote : {true, false}) {
    Eigen::MatrixXd at_release, later, P_release, P_later;
    std::vector<Eigen::VectorXd> e_release, e_later;
    for (int run = 0; run < runs; ++run) {
      ErrorEkf f(n, s, dt);
      f.set_unmodelled_biases({sigma_b});
      const int N = f.size(), iz = f.layout().z(0), izd = f.layout().zd(0), ib = f.layout().sensor(0);
      // the truth: drawn from the prior, moved by the filter's transition and plant noise
      const Eigen::MatrixXd L0 = Eigen::MatrixXd(f.covariance().llt().matrixL());
      Eigen::VectorXd X = Eigen::VectorXd::Zero(N), x = Eigen::VectorXd::Zero(N);
      for (int i = 0; i < N; ++i) X[i] = nd(rng);
      X = (L0 * X).eval();
      X[ib] = sigma_b * nd(rng);  // the bias
      Eigen::VectorXd H_rate = Eigen::VectorXd::Zero(N), H_pos = Eigen::VectorXd::Zero(N);
      H_rate[izd] = 1;
      H_pos[iz] = 1;
      for (int k = 0; k < 300; ++k) {
        const bool released = k >= 150;
        if (k == 150) {
          if (promote) {
            const int into[] = {ib};
            f.estimate_unmodelled(0, into, sigma_b * sigma_b, 0.0);
          } else {
            auto& P = f.covariance();
            P.row(ib).setZero();
            P.col(ib).setZero();
            P(ib, ib) = sigma_b * sigma_b;
          }
          e_release.push_back(X - x);
          if (run == 0) P_release = f.covariance();
          if (promote && run == 0) {
            EXPECT_EQ(f.unmodelled_covariance(iz, iz), 0.0) << "no longer considered";
          }
        }
        f.predict();
        const Eigen::MatrixXd W = f.plant_noise();
        Eigen::LDLT<Eigen::MatrixXd> ldlt(W);
        Eigen::VectorXd w(N);
        for (int i = 0; i < N; ++i) w[i] = nd(rng);
        const Eigen::VectorXd dw =
            ldlt.transpositionsP().transpose() *
            (Eigen::MatrixXd(ldlt.matrixL()) * (ldlt.vectorD().cwiseMax(0).cwiseSqrt().asDiagonal() * w));
        X = f.transition() * X + dw;
        x = f.transition() * x;
        // the rate row reads the truth's rate plus the bias; considered until released
        const double y_rate = X[izd] + X[ib] + std::sqrt(r_rate) * nd(rng);
        H_rate[ib] = released ? 1 : 0;
        f.update(H_rate, y_rate - H_rate.dot(x), r_rate, 0, released ? -1 : 0, 1);
        if (k % 10 == 0) f.update(H_pos, X[iz] + std::sqrt(r_pos) * nd(rng) - H_pos.dot(x), r_pos, 0);
        x += f.error();
        f.reset_error();
      }
      e_later.push_back(X - x);
      if (run == 0) P_later = f.covariance();
    }
    auto empirical = [](const std::vector<Eigen::VectorXd>& e) {
      Eigen::MatrixXd C = Eigen::MatrixXd::Zero(e[0].size(), e[0].size());
      for (const auto& v : e) C += v * v.transpose();
      return Eigen::MatrixXd(C / static_cast<double>(e.size()));
    };
    at_release = empirical(e_release);
    later = empirical(e_later);
    // the sampling error of a variance over 3000 runs is sqrt(2/3000) = 2.6 %; of a covariance
    // term, relative to sqrt(P_ii P_jj), 1.8 %
    const int idx[] = {0, 1, 2};
    double worst_release = 0, worst_later = 0;
    for (int i : idx)
      for (int j : idx) {
        const double scale = std::sqrt(P_release(i, i) * P_release(j, j));
        worst_release = std::max(worst_release, std::abs(at_release(i, j) - P_release(i, j)) / scale);
        const double scale_l = std::sqrt(P_later(i, i) * P_later(j, j));
        worst_later = std::max(worst_later, std::abs(later(i, j) - P_later(i, j)) / scale_l);
      }
    if (promote) {
      EXPECT_LT(worst_release, 0.1) << "at the release\n" << at_release << "\nP\n" << P_release;
      EXPECT_LT(worst_later, 0.1) << "learned since\n" << later << "\nP\n" << P_later;
      EXPECT_LT(P_later(2, 2), 0.1 * sigma_b * sigma_b) << "the rate row taught the bias";
    } else {
      EXPECT_GT(worst_release, 0.3) << "the reopened bias without its correlations is not the error's covariance";
    }
  }
}
