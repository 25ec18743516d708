// Each mechanism sensor's analytic gradients against finite differences, and the whole Jacobian
// row on z, zd through R and Rdot against finite differences of the kinematic problems.
#include <gtest/gtest.h>

#include "mbobserver/estimation/sensors/mechanism_sensors.hpp"
#include "mbobserver/mb/kinematics.hpp"
#include "mbobserver/mb/model_json.hpp"
#include "mbobserver/mb/state.hpp"
#include "test_models.hpp"

using namespace mbo;
using namespace mbo::est;

namespace {

struct Case {
  std::string name;
  mb::Model m;
  std::vector<std::shared_ptr<Sensor>> sensors;
};

Case fourbar_case() {
  Case c{"fourbar", mb::load_model(test::model_path("fourbar")), {}};
  const auto& rod = c.m.bodies[1];
  c.sensors.push_back(std::make_shared<EncoderSensor>(c.m.coordinate("theta"), true));
  c.sensors.push_back(std::make_shared<BodyAngleSensor>(rod.basis[0], 0.2));
  c.sensors.push_back(std::make_shared<PlanarGyroSensor>(rod.basis[0], 0.0));
  c.sensors.push_back(
      std::make_shared<PlanarAccelerometerSensor>(mb::body_point(rod, {3, 0.5, 0}), rod.basis[0], 0.7, c.m.gravity));
  return c;
}

}  // namespace

TEST(MechanismSensors, GradientsMatchFiniteDifferences) {
  Case c = fourbar_case();
  const auto& m = c.m;
  std::srand(11);
  VectorXd x = m.x0, xd = VectorXd::Zero(x.size()), xdd = VectorXd::Zero(x.size());
  x.head(m.nq) += 0.2 * VectorXd::Random(m.nq);
  xd.head(m.nq).setRandom();
  xdd.head(m.nq).setRandom();
  for (std::size_t si = 0; si < c.sensors.size(); ++si) {
    Gradients g;
    g.clear(m.nq);
    MeasureContext ctx{m, x, xd, xdd};
    c.sensors[si]->measure(ctx, 0, &g);
    auto dense = [&](const SparseGradient& sg) {
      VectorXd v = VectorXd::Zero(m.nq);
      for (int i = 0; i < sg.n; ++i) v[sg.slot[i]] += sg.value[i];
      return v;
    };
    VectorXd a[3] = {dense(g.dq), dense(g.dqd), dense(g.dqdd)};
    VectorXd* vars[3] = {&x, &xd, &xdd};
    for (int w = 0; w < 3; ++w) {
      for (int i = 0; i < m.nq; ++i) {
        const double h = 1e-6;
        VectorXd save = *vars[w];
        (*vars[w])[i] += h;
        double p = c.sensors[si]->measure({m, x, xd, xdd}, 0, nullptr);
        (*vars[w])[i] -= 2 * h;
        double q = c.sensors[si]->measure({m, x, xd, xdd}, 0, nullptr);
        *vars[w] = save;
        double d = c.sensors[si]->is_angle(0) ? wrap_angle(p - q) : p - q;
        EXPECT_NEAR(a[w][i], d / (2 * h), 1e-6 * (1 + std::abs(a[w][i])))
            << "sensor " << si << " wrt " << w << " slot " << i;
      }
    }
  }
}

TEST(MechanismSensors, JacobianRowThroughRMatchesTheKinematicProblems) {
  // dh/dz = dh/dq R + dh/dqd Rdot and dh/dzd = dh/dqd R, checked by moving z (with zd fixed)
  // and zd through the position and velocity problems.
  Case c = fourbar_case();
  const auto& m = c.m;
  mb::Workspace ws(m);
  mb::State s = mb::initial_state(m);
  ASSERT_TRUE(mb::solve_position(m, s.q, s.u, ws).converged);
  s.qd[m.z[0]] = 1.3;
  mb::solve_velocity(m, s.u, s.qd, ws);
  mb::compute_R(m, ws);
  mb::compute_Rdot(m, s.qd, ws);
  auto eval = [&](const VectorXd& q, const VectorXd& qd, Sensor& sn, Gradients* g) {
    VectorXd x = m.x0, xd = VectorXd::Zero(x.size()), xdd = VectorXd::Zero(x.size());
    x.head(m.nq) = q;
    xd.head(m.nq) = qd;
    return sn.measure({m, x, xd, xdd}, 0, g);
  };
  for (std::size_t si = 0; si < 3; ++si) {  // the accelerometer also needs qdd: checked above
    Gradients g;
    g.clear(m.nq);
    eval(s.q, s.qd, *c.sensors[si], &g);
    double hz = 0, hzd = 0;
    for (int i = 0; i < g.dq.n; ++i) hz += g.dq.value[i] * ws.R(g.dq.slot[i], 0);
    for (int i = 0; i < g.dqd.n; ++i)
      hz += g.dqd.value[i] * ws.Rdot(g.dqd.slot[i], 0), hzd += g.dqd.value[i] * ws.R(g.dqd.slot[i], 0);
    const double h = 1e-6;
    auto at = [&](double dz, double dzd) {
      VectorXd q = s.q, qd = s.qd;
      q[m.z[0]] += dz;
      mb::Workspace w2(m);
      EXPECT_TRUE(mb::solve_position(m, q, s.u, w2).converged);
      qd[m.z[0]] += dzd;
      mb::solve_velocity(m, s.u, qd, w2);
      return eval(q, qd, *c.sensors[si], nullptr);
    };
    double fz = (at(h, 0) - at(-h, 0)) / (2 * h), fzd = (at(0, h) - at(0, -h)) / (2 * h);
    EXPECT_NEAR(hz, fz, 1e-6 * (1 + std::abs(fz))) << "sensor " << si;
    EXPECT_NEAR(hzd, fzd, 1e-6 * (1 + std::abs(fzd))) << "sensor " << si;
  }
}
