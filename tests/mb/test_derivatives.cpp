// The reduced accelerations' derivatives (mb/derivatives.hpp) against the linearised double
// pendulum in closed form, and the phase schedule that spreads a set over steps.
#include <cmath>

#include <gtest/gtest.h>

#include "alloc_count.hpp"
#include "mbobserver/mb/derivatives.hpp"
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/kinematics.hpp"
#include "test_models.hpp"

using namespace mbo::mb;

namespace {

// The double pendulum of config/models/double_pendulum.json (two uniform 1 m, 1 kg bars)
// hanging straight down at rest, or moving.
struct Pendulum {
  Model m = load_model(mbo::test::model_path("double_pendulum"));
  Workspace ws{m};
  State s = initial_state(m);
  Pendulum(double t1, double t2, double w1 = 0, double w2 = 0) {
    s.q[m.z[0]] = t1;
    s.q[m.z[1]] = t2;
    EXPECT_TRUE(solve_position(m, s.q, s.u, ws).converged);
    s.qd[m.z[0]] = w1;
    s.qd[m.z[1]] = w2;
    solve_velocity(m, s.u, s.qd, ws);
    initialize_accelerations(m, s, ws);
  }
};

// Hanging down (theta = -pi/2), m = l = 1: M = [4/3 1/2; 1/2 1/3] (bar 1 about O, bar 2 about
// its centre plus its centre's motion), V = m g l (3/2 sin t1 + 1/2 sin t2), so K = m g l
// diag(3/2, 1/2) and zdd = -M^-1 K dz; no velocity term at rest.
Eigen::Matrix2d hanging_stiffness_over_mass() {
  const double g = 9.81;
  Eigen::Matrix2d M, K;
  M << 4.0 / 3, 0.5, 0.5, 1.0 / 3;
  K << 1.5 * g, 0, 0, 0.5 * g;
  return -M.inverse() * K;
}

}  // namespace

TEST(AccelerationDerivatives, AllTermsMatchTheLinearisedPendulum) {
  Pendulum p(-M_PI / 2, -M_PI / 2);
  AccelerationDerivatives d(p.m, {0, 1}, {}, DerivativeTerms::all, 1);
  ASSERT_TRUE(differentiate_accelerations(p.m, p.s, 0, p.ws, d));
  const Eigen::Matrix2d A = hanging_stiffness_over_mass();
  EXPECT_LT((d.dz - A).norm(), 1e-4 * A.norm()) << d.dz << "\nexpected\n" << A;
  EXPECT_LT(d.dzd.norm(), 1e-6);
}

TEST(AccelerationDerivatives, ForcesOnlyMatchTheAllTermsWhereTheInertiaDoesNotMove) {
  // At rest the held Mbar and Rdot are exact: the two ways agree with each other and with the
  // closed form.
  Pendulum p(-M_PI / 2, -M_PI / 2);
  AccelerationDerivatives d(p.m, {0, 1}, {}, DerivativeTerms::forces, 1);
  ASSERT_TRUE(differentiate_accelerations(p.m, p.s, 0, p.ws, d));
  const Eigen::Matrix2d A = hanging_stiffness_over_mass();
  EXPECT_LT((d.dz - A).norm(), 1e-4 * A.norm()) << d.dz;
}

TEST(AccelerationDerivatives, VelocityColumnsSeeTheCoriolisTerms) {
  // Swinging, the bars' centripetal coupling makes zdd depend on zd: both ways find it, and
  // `all` agrees with differences of zdd itself.
  Pendulum p(-1.2, -1.9, 1.5, -0.7);
  AccelerationDerivatives all(p.m, {0, 1}, {}, DerivativeTerms::all, 1);
  ASSERT_TRUE(differentiate_accelerations(p.m, p.s, 0, p.ws, all));
  EXPECT_GT(all.dzd.norm(), 0.1);
  VectorXd zdd0(2), zdd1(2);
  reduced_accelerations(p.m, p.s, p.s.q, p.s.qd, p.ws, all, zdd0);
  for (int j = 0; j < 2; ++j) {
    const double h = 1e-5;
    VectorXd qd = p.s.qd;
    qd[p.m.z[j]] += h;
    factor_kinematics(p.m, p.s.q, p.ws);
    solve_velocity(p.m, p.s.u, qd, p.ws);
    reduced_accelerations(p.m, p.s, p.s.q, qd, p.ws, all, zdd1);
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(all.dzd(i, j), (zdd1[i] - zdd0[i]) / h, 1e-3) << i << "," << j;
  }
}

TEST(AccelerationDerivatives, ForcesOnlyAreSpreadOverThreeStepsAndAllocateNothing) {
  Pendulum p(-1.0, -2.0, 0.3, 0.1);
  AccelerationDerivatives d(p.m, {0, 1}, {}, DerivativeTerms::forces, 25);
  std::vector<long> complete;
  complete.reserve(8);
  mbo::test::alloc_count_start();
  for (long step = 0; step < 60; ++step)
    if (differentiate_accelerations(p.m, p.s, step, p.ws, d)) complete.push_back(step);
  EXPECT_EQ(mbo::test::alloc_count_stop(), 0);
  EXPECT_EQ(complete, (std::vector<long>{2, 27, 52}));  // the second position half ends a set
  AccelerationDerivatives every_step(p.m, {0, 1}, {}, DerivativeTerms::forces, 2);
  EXPECT_TRUE(differentiate_accelerations(p.m, p.s, 0, p.ws, every_step));
  EXPECT_FALSE(differentiate_accelerations(p.m, p.s, 1, p.ws, every_step));
  AccelerationDerivatives all(p.m, {0, 1}, {}, DerivativeTerms::all, 5);
  EXPECT_FALSE(differentiate_accelerations(p.m, p.s, 3, p.ws, all));
  EXPECT_TRUE(differentiate_accelerations(p.m, p.s, 5, p.ws, all));
}
