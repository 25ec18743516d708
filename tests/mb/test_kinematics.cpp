// The kinematic problems and the R matrix: constraints satisfied, Phi_q R = 0, R and its time
// derivative against finite differences of the position problem.
#include <algorithm>

#include <gtest/gtest.h>

#include "mbobserver/mb/constraints.hpp"
#include "mbobserver/mb/kinematics.hpp"
#include "mbobserver/mb/state.hpp"
#include "test_models.hpp"

using namespace mbo::mb;

namespace {

std::vector<std::pair<std::string, Model>> kinematic_models() {
  std::vector<std::pair<std::string, Model>> v;
  for (auto n : {"fourbar", "slider_crank", "double_pendulum", "spinning_top"})
    v.emplace_back(n, load_model(mbo::test::model_path(n)));
  v.emplace_back("kitchen_sink", mbo::test::kitchen_sink_model());
  return v;
}

VectorXd inputs_of(const Model& m) {
  VectorXd u = VectorXd::Zero(m.inputs.size());
  int s = m.input("steer");
  if (s >= 0) u[s] = 0.1, u[m.input("steer_rate")] = 0.3, u[m.input("steer_acc")] = -0.7;
  return u;
}

Eigen::MatrixXd dense_jacobian(const Model& m, Workspace& ws) {
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(m.nc, m.nq);
  for (std::size_t e = 0; e < m.jac.size(); ++e) D(m.jac[e].row, m.jac[e].col) += ws.jac[e];
  return D;
}

// A model placed on its constraints (the position problem from its initial values) with R.
struct Placed {
  Workspace ws;
  State s;
  VectorXd u;
  bool converged;
  explicit Placed(const Model& m) : ws(m), s(initial_state(m)), u(inputs_of(m)) {
    converged = solve_position(m, s.q, u, ws).converged;
    compute_R(m, ws);
  }
};

}  // namespace

TEST(Kinematics, PositionVelocityAccelerationProblems) {
  for (auto& [name, m] : kinematic_models()) {
    Workspace ws(m);
    State s = initial_state(m);
    s.u = inputs_of(m);
    auto r = solve_position(m, s.q, s.u, ws);
    ASSERT_TRUE(r.converged) << name << " residual " << r.residual;
    EXPECT_LT(r.residual, 1e-12) << name;
    for (std::size_t j = 0; j < m.z.size(); ++j) s.qd[m.z[j]] = 0.5 + 0.25 * j, s.qdd[m.z[j]] = -0.3 + 0.2 * j;
    solve_velocity(m, s.u, s.qd, ws);
    solve_acceleration(m, s.u, s.qd, s.qdd, ws);
    VectorXd pt(m.nc), ptt(m.nc), hv(m.nc);
    constraint_time_terms(m, s.u, pt, ptt);
    Eigen::MatrixXd J = dense_jacobian(m, ws);
    EXPECT_LT((J * s.qd + pt).cwiseAbs().maxCoeff(), 1e-12) << name;
    VectorXd x = m.x0, xd = VectorXd::Zero(x.size());
    x.head(m.nq) = s.q;
    xd.head(m.nq) = s.qd;
    constraint_hessian_product(m, x, xd, xd, hv);
    EXPECT_LT((J * s.qdd + hv + ptt).cwiseAbs().maxCoeff(), 1e-10) << name;
  }
}

TEST(Kinematics, RMatrixIsTheNullSpaceAndMatchesFiniteDifferences) {
  for (auto& [name, m] : kinematic_models()) {
    Placed p(m);
    ASSERT_TRUE(p.converged) << name;
    auto& [ws, s, u, converged] = p;
    Eigen::MatrixXd R = ws.R;
    Eigen::MatrixXd J = dense_jacobian(m, ws);
    EXPECT_LT((J * R).cwiseAbs().maxCoeff(), 1e-12) << name << ": Phi_q R != 0";
    const double h = 1e-6;
    for (std::size_t j = 0; j < m.z.size(); ++j) {
      VectorXd qp = s.q, qm = s.q;
      qp[m.z[j]] += h;
      qm[m.z[j]] -= h;
      ASSERT_TRUE(solve_position(m, qp, u, ws).converged);
      ASSERT_TRUE(solve_position(m, qm, u, ws).converged);
      VectorXd fd = (qp - qm) / (2 * h);
      EXPECT_LT((R.col(j) - fd).cwiseAbs().maxCoeff(), 1e-7 * (1 + fd.cwiseAbs().maxCoeff()))
          << name << " column " << j;
    }
  }
}

TEST(Kinematics, RdotMatchesFiniteDifferences) {
  for (auto& [name, m] : kinematic_models()) {
    Workspace ws(m);
    State s = initial_state(m);
    VectorXd u = inputs_of(m);
    u.setZero();  // keep driven coordinates still: R changes only through the motion of z
    ASSERT_TRUE(solve_position(m, s.q, u, ws).converged);
    VectorXd zd = VectorXd::LinSpaced(m.z.size(), 0.4, -0.6);
    compute_R(m, ws);
    VectorXd qd = ws.R * zd;
    compute_Rdot(m, qd, ws);
    Eigen::MatrixXd Rdot = ws.Rdot;
    // R along the path q(t) with z(t) = z0 + t zd
    auto R_at = [&](double t) {
      VectorXd q = s.q;
      for (std::size_t j = 0; j < m.z.size(); ++j) q[m.z[j]] += t * zd[j];
      EXPECT_TRUE(solve_position(m, q, u, ws).converged);
      compute_R(m, ws);
      return Eigen::MatrixXd(ws.R);
    };
    const double h = 1e-5;
    Eigen::MatrixXd fd = (R_at(h) - R_at(-h)) / (2 * h);
    EXPECT_LT((Rdot - fd).cwiseAbs().maxCoeff(), 1e-6 * (1 + fd.cwiseAbs().maxCoeff())) << name;
  }
}

TEST(Kinematics, RTransposeProductMatchesTheFormedR) {
  // apply_Rt reduces a generalised force to the independent coordinates with one solve; it
  // must equal R' v with R formed column by column.
  for (auto& [name, m] : kinematic_models()) {
    Placed p(m);
    ASSERT_TRUE(p.converged) << name;
    auto& ws = p.ws;
    VectorXd v = VectorXd::LinSpaced(m.nq, -2.0, 3.0), out(m.nq);
    VectorXd expected = ws.R.transpose() * v;
    apply_Rt(m, ws, v, out);
    double scale = 1 + expected.cwiseAbs().maxCoeff();
    for (std::size_t j = 0; j < m.z.size(); ++j)
      EXPECT_NEAR(out[m.z[j]], expected[j], 1e-12 * scale) << name << " z " << j;
    for (int i = 0; i < m.nq; ++i)
      if (std::find(m.z.begin(), m.z.end(), i) == m.z.end()) {
        EXPECT_EQ(out[i], 0.0) << name << " dependent slot " << i;
      }
  }
}
