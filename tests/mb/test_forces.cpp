// Mass matrix and generalised forces against the thesis's MATLAB code, and the force elements'
// stiffness and damping against finite differences.
#include <gtest/gtest.h>

#include "mbobserver/mb/builder.hpp"
#include "mbobserver/mb/constraints.hpp"
#include "mbobserver/mb/forces.hpp"
#include "test_models.hpp"

using namespace mbo::mb;

namespace {

Eigen::MatrixXd dense_mass(const Model& m) {
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(m.nq, m.nq);
  for (std::size_t e = 0; e < m.mass.size(); ++e) M(m.mass[e].row, m.mass[e].col) += m.mass_values[e];
  return M;
}

Eigen::MatrixXd dense(const Model& m, const std::vector<Model::Entry>& pat, const std::vector<double>& v) {
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(m.nq, m.nq);
  for (std::size_t e = 0; e < pat.size(); ++e) D(pat[e].row, pat[e].col) += v[e];
  return D;
}

}  // namespace

TEST(Forces, FourBarMassMatrixAndGravityMatchSeedAppendix) {
  // Sinigaglia 2016 A.3.1 (mass_forces): slender bars M_i = m_i/6 [2 0 1 0; 0 2 0 1; 1 0 2 0; 0 1 0 2],
  // assembled on (x1, y1, x2, y2, phi); gravity Q_i = -m_i g/2 on each end.
  Model m = load_model(mbo::test::model_path("fourbar"));
  const double m1 = 2, m2 = 8, m3 = 5, g = 9.806;
  auto bar = [](double mass) {
    Eigen::Matrix4d B;
    B << 2, 0, 1, 0, 0, 2, 0, 1, 1, 0, 2, 0, 0, 1, 0, 2;
    return Eigen::Matrix4d(B * mass / 6);
  };
  Eigen::MatrixXd Ms = Eigen::MatrixXd::Zero(5, 5);
  Ms.block(0, 0, 2, 2) = bar(m1).block(2, 2, 2, 2);
  Ms.block(2, 2, 2, 2) = bar(m3).block(0, 0, 2, 2);
  Ms.block(0, 0, 4, 4) += bar(m2);
  EXPECT_LT((dense_mass(m) - Ms).cwiseAbs().maxCoeff(), 1e-12);
  VectorXd Qs(5);
  Qs << 0, -(m1 + m2) * g / 2, 0, -(m2 + m3) * g / 2, 0;
  EXPECT_LT((m.Q_gravity - Qs).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(Forces, SpatialBodyKineticEnergyEqualsRigidBodyFormula) {
  // 1/2 qd' M qd must equal 1/2 m |v_G|^2 + 1/2 omega' I_G omega for a rigid motion.
  Model m = load_model(mbo::test::model_path("spinning_top"));
  Eigen::Matrix3d R;  // columns u, v, w at the model's initial position
  for (int k = 0; k < 3; ++k) R.col(k) = load(m.x0, m.entities[m.entity(std::string("uvw").substr(k, 1))].slot, 3);
  Vector3d omega(0.7, -1.1, 3.0);
  VectorXd qd = VectorXd::Zero(m.nq);
  for (int k = 0; k < 3; ++k) {
    Vector3d d = omega.cross(R.col(k));
    int s = m.entities[m.entity(std::string("uvw").substr(k, 1))].slot;
    qd.segment(s, 3) = d;
  }
  const Vector3d com_local(0, 0, 0.05);
  Vector3d vG = omega.cross(R * com_local);  // O is fixed
  Eigen::Matrix3d IG = Eigen::Vector3d(0.002, 0.002, 0.004).asDiagonal();
  Vector3d wl = R.transpose() * omega;
  double T = 0.5 * 1.0 * vG.squaredNorm() + 0.5 * wl.dot(IG * wl);
  EXPECT_NEAR(kinetic_energy(m, m.x0, qd), T, 1e-12);
}

TEST(Forces, SpringDamperStiffnessAndDampingMatchFiniteDifferences) {
  ModelBuilder b("springs", 3);
  int p = b.point("p", {0.1, 0.2, 0.3});
  int q = b.point("q", {1.0, -0.4, 0.8});
  int g = b.point("g", {0, 0, 0}, true);
  int s1 = b.scalar("s1", 0.3, ScalarKind::distance);
  int s2 = b.scalar("s2", -0.1, ScalarKind::distance);
  SpringDamper sd;
  sd.p1 = b.of(p);
  sd.p2 = ModelBuilder::sum(b.of(q), b.of(g), 1);
  sd.k = 1234;
  sd.l0 = 0.5;
  sd.preload = 40;
  b.spring_damper(sd);
  SpringDamper tab;  // piecewise-linear spring and damper between p and q
  tab.p1 = b.of(q);
  tab.p2 = b.of(p);
  tab.l0 = 0.9;
  tab.spring = {{-0.2, 0, 0.3}, {-500, 0, 2000}};
  tab.damper = {{-1, 0, 1}, {-300, 0, 900}};
  b.spring_damper(tab);
  CoordinateSpringDamper c;
  c.slot = b.entity(s1).slot;
  c.slot2 = b.entity(s2).slot;
  c.spring = {{-1, 0, 1}, {-100, 0, 300}};
  c.damper = {{-1, 0, 1}, {-50, 0, 20}};
  c.preload = 3;
  b.coordinate_spring_damper(c);
  Model m = std::move(b).build();
  VectorXd x = m.x0, xd = VectorXd::Zero(x.size());
  xd.head(m.nq).setRandom();
  VectorXd u;
  auto F = make_force_buffers(m);
  generalized_forces(m, x, xd, u, 0, true, F);
  Eigen::MatrixXd K = dense(m, m.force_K, F.K), C = dense(m, m.force_C, F.C);
  Eigen::MatrixXd Kfd(m.nq, m.nq), Cfd(m.nq, m.nq);
  const double h = 1e-6;
  auto Fp = F, Fm = F;
  for (int i = 0; i < m.nq; ++i) {
    VectorXd xp = x, xm = x;
    xp[i] += h, xm[i] -= h;
    // stiffness at zero velocity (the velocity-direction coupling of the damper is not in K)
    VectorXd z = VectorXd::Zero(x.size());
    generalized_forces(m, xp, z, u, 0, false, Fp);
    generalized_forces(m, xm, z, u, 0, false, Fm);
    Kfd.col(i) = -(Fp.Q - Fm.Q) / (2 * h);
    VectorXd vp = xd, vm = xd;
    vp[i] += h, vm[i] -= h;
    generalized_forces(m, x, vp, u, 0, false, Fp);
    generalized_forces(m, x, vm, u, 0, false, Fm);
    Cfd.col(i) = -(Fp.Q - Fm.Q) / (2 * h);
  }
  VectorXd z = VectorXd::Zero(x.size());
  generalized_forces(m, x, z, u, 0, true, F);
  K = dense(m, m.force_K, F.K);
  EXPECT_LT((K - Kfd).cwiseAbs().maxCoeff(), 1e-5 * (1 + Kfd.cwiseAbs().maxCoeff()));
  EXPECT_LT((C - Cfd).cwiseAbs().maxCoeff(), 1e-5 * (1 + Cfd.cwiseAbs().maxCoeff()));
  EXPECT_GT(K.cwiseAbs().maxCoeff(), 100);  // the test compares something
}

TEST(Forces, BodyTorqueDoesTheVirtualPowerOfATorque) {
  // Q . qd = T . omega for every rigid velocity of the body.
  Model base = load_model(mbo::test::model_path("spinning_top"));
  ModelBuilder b("torque", 3);
  int O = b.point("O", {0, 0, 0}, true);
  Eigen::Matrix3d R = Eigen::AngleAxisd(0.4, Vector3d(1, 2, 3).normalized()).toRotationMatrix();
  int u = b.vector("u", R.col(0)), v = b.vector("v", R.col(1)), w = b.vector("w", R.col(2));
  BodySpec s;
  s.name = "body";
  s.mass = 1;
  s.origin = O;
  s.basis = {{u, -1}, {v, -1}, {w, -1}};
  s.points[O] = Vector3d::Zero();
  s.vectors = {{u, Vector3d::UnitX()}, {v, Vector3d::UnitY()}, {w, Vector3d::UnitZ()}};
  s.inertia = Eigen::Matrix3d::Identity();
  int body = b.body(s);
  Vector3d T(0.3, -2.0, 1.5);
  b.body_torque(body, T, {-1, -1, -1});
  Model m = std::move(b).build();
  auto F = make_force_buffers(m);
  VectorXd xd = VectorXd::Zero(m.x0.size()), u0;
  generalized_forces(m, m.x0, xd, u0, 0, false, F);
  for (Vector3d omega : {Vector3d(1, 0, 0), Vector3d(0.3, -0.7, 2.0)}) {
    VectorXd qd = VectorXd::Zero(m.nq);
    for (int k = 0; k < 3; ++k) qd.segment(3 * k, 3) = omega.cross(R.col(k));
    EXPECT_NEAR(F.Q.dot(qd), T.dot(omega), 1e-12);
  }
  (void)base;
}
