// Every analytic derivative of the constraint library against central finite differences,
// on every reference mechanism and on a 3-D model that uses every constraint kind.
#include <gtest/gtest.h>

#include "mbobserver/mb/constraints.hpp"
#include "test_models.hpp"

using namespace mbo::mb;

namespace {

std::vector<std::pair<std::string, Model>> all_models() {
  std::vector<std::pair<std::string, Model>> v;
  for (auto n : {"fourbar", "slider_crank", "double_pendulum", "spinning_top"})
    v.emplace_back(n, load_model(mbo::test::model_path(n)));
  v.emplace_back("kitchen_sink", mbo::test::kitchen_sink_model());
  return v;
}

Eigen::MatrixXd dense_jacobian(const Model& m, const VectorXd& x) {
  std::vector<double> J(m.jac.size());
  constraint_jacobian(m, x, J.data());
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(m.nc, m.nq);
  for (std::size_t e = 0; e < m.jac.size(); ++e) D(m.jac[e].row, m.jac[e].col) += J[e];
  return D;
}

VectorXd random_x(const Model& m, unsigned seed) {
  std::srand(seed);
  VectorXd x = m.x0;
  x.head(m.nq) += 0.3 * VectorXd::Random(m.nq);  // away from the constraint manifold on purpose
  return x;
}

}  // namespace

TEST(Constraints, JacobianMatchesFiniteDifferences) {
  for (auto& [name, m] : all_models()) {
    VectorXd u = VectorXd::Random(m.inputs.size());
    for (unsigned seed : {1u, 2u, 3u}) {
      VectorXd x = random_x(m, seed);
      Eigen::MatrixXd Ja = dense_jacobian(m, x), Jf(m.nc, m.nq);
      VectorXd p(m.nc), q(m.nc);
      const double h = 1e-6;
      for (int i = 0; i < m.nq; ++i) {
        VectorXd xp = x, xm = x;
        xp[i] += h;
        xm[i] -= h;
        constraint_values(m, xp, u, p);
        constraint_values(m, xm, u, q);
        Jf.col(i) = (p - q) / (2 * h);
      }
      double err = (Ja - Jf).cwiseAbs().maxCoeff();
      EXPECT_LT(err, 1e-7 * (1 + Ja.cwiseAbs().maxCoeff())) << name << " seed " << seed;
    }
  }
}

TEST(Constraints, HessianProductMatchesFiniteDifferences) {
  // sum_jk d2Phi/dx_j dx_k a_j b_k = d/dh [Phi_q(x + h b) a]
  for (auto& [name, m] : all_models()) {
    VectorXd x = random_x(m, 7);
    VectorXd a = VectorXd::Zero(x.size()), b = VectorXd::Zero(x.size());
    a.head(m.nq).setRandom();
    b.head(m.nq).setRandom();
    VectorXd B(m.nc);
    constraint_hessian_product(m, x, a, b, B);
    const double h = 1e-6;
    VectorXd xp = x + h * b, xm = x - h * b;
    VectorXd fd = (dense_jacobian(m, xp) - dense_jacobian(m, xm)) * a.head(m.nq) / (2 * h);
    EXPECT_LT((B - fd).cwiseAbs().maxCoeff(), 1e-6 * (1 + fd.cwiseAbs().maxCoeff())) << name;
    // symmetric in (a, b)
    VectorXd B2(m.nc);
    constraint_hessian_product(m, x, b, a, B2);
    EXPECT_LT((B - B2).cwiseAbs().maxCoeff(), 1e-12 * (1 + B.cwiseAbs().maxCoeff())) << name;
  }
}

TEST(Constraints, ValuesWithTheJacobianAreTheSeparateEvaluations) {
  for (auto& [name, m] : all_models()) {
    VectorXd u = VectorXd::Random(m.inputs.size());
    VectorXd x = random_x(m, 5);
    VectorXd phi(m.nc), phi2(m.nc);
    std::vector<double> J(m.jac.size()), J2(m.jac.size());
    constraint_values(m, x, u, phi);
    constraint_jacobian(m, x, J.data());
    constraint_values_jacobian(m, x, u, phi2, J2.data());
    for (int i = 0; i < m.nc; ++i) EXPECT_EQ(phi[i], phi2[i]) << name << " row " << i;
    for (std::size_t e = 0; e < J.size(); ++e) EXPECT_EQ(J[e], J2[e]) << name << " entry " << e;
  }
}

TEST(Constraints, HessianProductOfManyColumnsIsTheProductOfEach) {
  for (auto& [name, m] : all_models()) {
    VectorXd x = random_x(m, 9);
    VectorXd a = VectorXd::Zero(x.size());
    a.head(m.nq).setRandom();
    Eigen::MatrixXd B = Eigen::MatrixXd::Random(m.nq, 5);
    const std::vector<int> cols{4, 1, 3};  // a subset, out of order
    RowMatrix out(m.nc, 5);
    constraint_hessian_product_columns(m, x, a, B, cols, out);
    for (std::size_t c = 0; c < cols.size(); ++c) {
      VectorXd b = VectorXd::Zero(x.size()), one(m.nc);
      b.head(m.nq) = B.col(cols[c]);
      constraint_hessian_product(m, x, a, b, one);
      const double err = (out.col(static_cast<Eigen::Index>(c)) - one).cwiseAbs().maxCoeff();
      EXPECT_LT(err, 1e-13 * (1 + one.cwiseAbs().maxCoeff())) << name << " column " << cols[c];
    }
  }
}

TEST(Constraints, DrivingTimeTerms) {
  Model m = mbo::test::kitchen_sink_model();
  VectorXd u(3);
  u << 0.2, 0.5, -1.5;  // steer, steer_rate, steer_acc
  VectorXd pt(m.nc), ptt(m.nc), phi(m.nc);
  constraint_time_terms(m, u, pt, ptt);
  int row = -1;
  for (const auto& c : m.constraints)
    if (c.kind == ConstraintKind::driving) row = c.row;
  ASSERT_GE(row, 0);
  EXPECT_DOUBLE_EQ(pt[row], -0.5);
  EXPECT_DOUBLE_EQ(ptt[row], 1.5);
  VectorXd x = m.x0;
  x[m.coordinate("delta")] = 0.2;
  constraint_values(m, x, u, phi);
  EXPECT_NEAR(phi[row], 0, 1e-15);
}

TEST(Constraints, AngleConstraintIsWellConditionedAtEveryAngle) {
  // Sinigaglia 2016 eq. (21)-(22): a single sine or cosine form loses rank near 90 or 0 degrees.
  // The combined form keeps |dPhi/dtheta| = |A||B| at the solution for every crank angle.
  Model m = load_model(mbo::test::model_path("fourbar"));
  const int th = m.coordinate("theta"), x1 = m.coordinate("P1.x"), y1 = m.coordinate("P1.y");
  for (int k = 0; k < 72; ++k) {
    double a = k * 2 * M_PI / 72;
    VectorXd x = m.x0;
    x[th] = a;
    x[x1] = 2 * std::cos(a);
    x[y1] = 2 * std::sin(a);
    Eigen::MatrixXd J = dense_jacobian(m, x);
    int row = -1;
    for (const auto& c : m.constraints)
      if (c.kind == ConstraintKind::angle) row = c.row;
    EXPECT_NEAR(std::abs(J(row, th)), 2.0, 1e-12) << "angle " << a;
  }
}
