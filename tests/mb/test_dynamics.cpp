// The ALI3-P trapezoidal step: analytic solutions, conservation, constraint residuals,
// singular positions, failure reporting, custom forces, and zero heap allocation per step.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "alloc_count.hpp"
#include "mbobserver/mb/builder.hpp"
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/forces.hpp"
#include "mbobserver/mb/kinematics.hpp"
#include "test_models.hpp"

using namespace mbo::mb;

namespace {

struct Sim {
  Model m;
  Workspace ws;
  State s;
  explicit Sim(Model model) : m(std::move(model)), ws(m), s(initial_state(m)) {}
  void start(const std::vector<double>& zd = {}) {
    if (!m.z.empty()) {
      EXPECT_TRUE(solve_position(m, s.q, s.u, ws).converged);
      for (std::size_t j = 0; j < zd.size(); ++j) s.qd[m.z[j]] = zd[j];
      solve_velocity(m, s.u, s.qd, ws);
    }
    initialize_accelerations(m, s, ws);
  }
  double energy() {
    ws.x.head(m.nq) = s.q;
    return kinetic_energy(m, ws.x, s.qd) + potential_energy(m, ws.x);
  }
};

struct Conservation {
  double max_phi = 0, max_vel = 0, max_acc = 0, max_dE = 0, max_dEdt = 0;
  int max_iterations = 0;
  bool all_converged = true;
  double z_min = 1e300, z_max = -1e300;
};

Conservation run(Sim& sim, double dt, double duration) {
  Conservation c;
  double E0 = sim.energy(), Eprev = E0;
  const int n = static_cast<int>(std::lround(duration / dt));
  for (int k = 0; k < n; ++k) {
    auto r = step(sim.m, sim.s, sim.ws, dt);
    c.all_converged = c.all_converged && r.converged;
    c.max_iterations = std::max(c.max_iterations, r.iterations);
    auto res = constraint_residuals(sim.m, sim.s, sim.ws);
    c.max_phi = std::max(c.max_phi, res.position);
    c.max_vel = std::max(c.max_vel, res.velocity);
    c.max_acc = std::max(c.max_acc, res.acceleration);
    double E = sim.energy();
    c.max_dE = std::max(c.max_dE, std::abs(E - E0));
    c.max_dEdt = std::max(c.max_dEdt, std::abs(E - Eprev) / dt);
    Eprev = E;
    if (!sim.m.z.empty()) {
      c.z_min = std::min(c.z_min, sim.s.q[sim.m.z[0]]);
      c.z_max = std::max(c.z_max, sim.s.q[sim.m.z[0]]);
    }
  }
  return c;
}

}  // namespace

// Farci 2019 Table 3.3 (slider-crank, gravity only, 30 s at 1 ms), best method (predictor-
// corrector): max ||Psi|| 3.0e-11, max |dE/dt| 3.1e-9 W. Measured here (Release, this
// machine): four-bar max|Phi| 1.2e-11, max|E-E0| 1.4e-2 J of 409 J, max|dE/dt| 0.20 W;
// slider-crank max|Phi| 3.9e-10, max|E-E0| 4.4e-4 J, max|dE/dt| 2.0e-3 W. The trapezoidal
// rule with projections keeps the energy bounded (no drift) but lets it oscillate by
// O(dt^2); the thesis's Lagrange-multiplier ODE at tight tolerance tracks it more closely.
TEST(Dynamics, FourBarUnderGravityThirtySeconds) {
  Sim sim(load_model(mbo::test::model_path("fourbar")));
  sim.start({1.0});
  auto c = run(sim, 1e-3, 30);
  std::printf(
      "fourbar 30 s @1 ms: max|Phi| %.2e  max|Phi_q qd| %.2e  max|acc| %.2e  max|E-E0| %.2e J  "
      "max|dE/dt| %.2e W  max iterations %d\n",
      c.max_phi, c.max_vel, c.max_acc, c.max_dE, c.max_dEdt, c.max_iterations);
  EXPECT_TRUE(c.all_converged);
  EXPECT_LT(c.max_phi, 1e-9);  // Newton stops at |dq| <= 1e-10, which leaves Phi of that order
  EXPECT_LT(c.max_vel, 5e-9);  // the projection stops at 1e-10 relative to |qd| (up to ~12 here)
  EXPECT_LT(c.max_acc, 1e-6);
  EXPECT_LT(c.max_dE / 409.5, 1e-4);  // bounded oscillation, no drift
  // The crank turned several times: the rocker went through its limit positions.
  EXPECT_GT(c.z_max - c.z_min, 4 * M_PI);
}

TEST(Dynamics, SliderCrankThroughDeadCentres) {
  Sim sim(load_model(mbo::test::model_path("slider_crank")));
  sim.start({0.0});  // released at rest from the dead centre (Farci 2019 Table 3.2)
  auto c = run(sim, 1e-3, 30);
  std::printf(
      "slider-crank 30 s @1 ms: max|Phi| %.2e  max|Phi_q qd| %.2e  max|acc| %.2e  max|E-E0| %.2e J  "
      "max|dE/dt| %.2e W  max iterations %d  theta in [%.2f, %.2f]\n",
      c.max_phi, c.max_vel, c.max_acc, c.max_dE, c.max_dEdt, c.max_iterations, c.z_min, c.z_max);
  EXPECT_TRUE(c.all_converged);
  EXPECT_LT(c.max_phi, 1e-9);
  EXPECT_LT(c.max_vel, 5e-9);
  EXPECT_LT(c.max_dE, 1e-3);
  // Energy is conserved, so it swings exactly to theta = -pi (the other dead centre) and back
  // to 0, again and again: it reaches both singular positions every period.
  EXPECT_LT(c.z_min, -M_PI + 1e-3);
  EXPECT_GT(c.z_max, -1e-3);
}

TEST(Dynamics, PendulumPeriodMatchesAnalyticSolution) {
  // One uniform bar pinned at one end: T0 = 2 pi sqrt(2 L / (3 g)), with the finite-amplitude
  // correction 1 + th0^2/16 + 11 th0^4/3072.
  ModelBuilder b("pendulum", 2);
  const double L = 1.0, g = 9.81, th0 = 0.05;
  b.set_gravity({0, -g, 0});
  int O = b.point("O", {0, 0, 0}, true);
  int P = b.point("P", {L * std::sin(th0), -L * std::cos(th0), 0});
  int X = b.vector("X", {1, 0, 0}, true);
  int th = b.scalar("theta", th0 - M_PI / 2, ScalarKind::angle);
  BodySpec s;
  s.name = "bar";
  s.mass = 2;
  s.origin = O;
  s.basis = {{O, P}};
  s.points = {{O, {0, 0, 0}}, {P, {L, 0, 0}}};
  s.com = {L / 2, 0, 0};
  s.inertia(2, 2) = 2 * L * L / 12;
  b.body(s);
  b.angle(th, b.of(X), b.difference(O, P), {}, "theta");
  b.independent({b.entity(th).slot});
  Sim sim(std::move(b).build());
  sim.start();
  const double dt = 1e-3;
  double prev = sim.s.q[sim.m.z[0]] + M_PI / 2, t_prev = 0;
  std::vector<double> crossings;
  while (sim.s.t < 12) {
    ASSERT_TRUE(step(sim.m, sim.s, sim.ws, dt).converged);
    double a = sim.s.q[sim.m.z[0]] + M_PI / 2;
    if (prev > 0 && a <= 0) crossings.push_back(t_prev + dt * prev / (prev - a));
    prev = a;
    t_prev = sim.s.t;
  }
  ASSERT_GE(crossings.size(), 4u);
  double T = (crossings.back() - crossings.front()) / (crossings.size() - 1);
  double T0 = 2 * M_PI * std::sqrt(2 * L / (3 * g));
  double Texact = T0 * (1 + th0 * th0 / 16 + 11 * std::pow(th0, 4) / 3072);
  std::printf("pendulum period %.7f s, analytic %.7f s, relative error %.2e\n", T, Texact, T / Texact - 1);
  EXPECT_LT(std::abs(T / Texact - 1), 1e-5);
}

TEST(Dynamics, HarmonicOscillatorAndFreeFall) {
  // A point mass on a line through a fixed point with a spring on its distance coordinate:
  // s(t) = s0 cos(w t). A second mass falls freely: the trapezoidal rule is exact for constant
  // acceleration.
  ModelBuilder b("oscillator", 3);
  b.set_gravity({0, 0, -9.81});
  int O = b.point("O", {0, 0, 0}, true);
  int d = b.vector("d", {1, 0, 0}, true);
  const double s0 = 0.2, k = 400, mass = 4;
  int P = b.point("P", {s0, 0, 0});
  int s = b.scalar("s", s0, ScalarKind::distance);
  b.point_on_line(P, b.of(O), b.of(d), s);
  BodySpec pm;
  pm.name = "mass";
  pm.mass = mass;
  pm.origin = P;
  b.body(pm);
  CoordinateSpringDamper sp;
  sp.slot = b.entity(s).slot;
  sp.k = k;
  b.coordinate_spring_damper(sp);
  int F = b.point("F", {0, 0, 10});
  BodySpec fm;
  fm.name = "faller";
  fm.mass = 1;
  fm.origin = F;
  b.body(fm);
  Model m = std::move(b).build();
  Sim sim(std::move(m));
  // no gravity along the line: remove it from P by construction (line along x)
  sim.start();
  const double w = std::sqrt(k / mass), dt = 1e-3;
  double max_err = 0, E0 = sim.energy(), max_dE = 0;
  const int fz = sim.m.coordinate("F.z");
  double max_fall = 0;
  for (int i = 0; i < 10000; ++i) {
    ASSERT_TRUE(step(sim.m, sim.s, sim.ws, dt).converged);
    double t = sim.s.t;
    max_err = std::max(max_err, std::abs(sim.s.q[sim.m.coordinate("s")] - s0 * std::cos(w * t)));
    max_fall = std::max(max_fall, std::abs(sim.s.q[fz] - (10 - 0.5 * 9.81 * t * t)));
    max_dE = std::max(max_dE, std::abs(sim.energy() - E0));
  }
  // trapezoidal phase error ~ t w^3 dt^2 / 12 = 0.083 rad s... over 10 s: 10 * 1000 * 1e-6 / 12
  std::printf("oscillator: max |s - s_exact| %.2e m (amplitude %.1f), max |E-E0| %.2e J, free fall error %.2e m\n",
              max_err, s0, max_dE, max_fall);
  EXPECT_LT(max_err, 1e-3 * s0 + 2e-4);
  EXPECT_LT(max_fall, 1e-9 * 500);  // round-off of qdd = 4/dt^2 q + ... over 490 m of fall
  EXPECT_LT(max_dE / E0, 1e-6);
}

TEST(Dynamics, NonConvergenceIsReported) {
  Sim sim(load_model(mbo::test::model_path("slider_crank")));
  sim.start({3.0});
  Model m2 = sim.m;
  m2.solver.max_iterations = 1;
  m2.solver.tolerance = 1e-300;
  auto r = step(m2, sim.s, sim.ws, 1e-2);
  EXPECT_FALSE(r.converged);
  EXPECT_GT(r.dq_norm, 0);
}

namespace {
// A linear spring on one coordinate as a custom force, with its stiffness and damping.
class CoordinateSpring final : public CustomForce {
 public:
  CoordinateSpring(int slot, double k, double c) : slot_(slot), k_(k), c_(c) {}
  std::vector<int> coordinates() const override { return {slot_}; }
  void evaluate(const Model&, const VectorXd& x, const VectorXd& xd, const VectorXd&, double,
                ForceSink& out) const override {
    out.add(slot_, -k_ * x[slot_] - c_ * xd[slot_]);
    if (out.jacobians()) {
      out.K()(0, 0) = k_;
      out.C()(0, 0) = c_;
    }
  }

 private:
  int slot_;
  double k_, c_;
};

Model oscillator(bool custom) {
  ModelBuilder b("osc", 2);
  int O = b.point("O", {0, 0, 0}, true);
  int d = b.vector("d", {0.6, 0.8, 0}, true);
  int P = b.point("P", {0.06, 0.08, 0});
  int s = b.scalar("s", 0.1, ScalarKind::distance);
  b.point_on_line(P, b.of(O), b.of(d), s);
  BodySpec pm;
  pm.name = "m";
  pm.mass = 2;
  pm.origin = P;
  b.body(pm);
  if (custom) {
    b.custom_force(std::make_shared<CoordinateSpring>(b.entity(s).slot, 5e4, 30));
  } else {
    CoordinateSpringDamper c;
    c.slot = b.entity(s).slot;
    c.k = 5e4;
    c.c = 30;
    b.coordinate_spring_damper(c);
  }
  b.independent({b.entity(s).slot});
  return std::move(b).build();
}
}  // namespace

TEST(Dynamics, CustomForceEntersTheTangentLikeABuiltIn) {
  Sim a(oscillator(false)), c(oscillator(true));
  a.start();
  c.start();
  int max_it_a = 0, max_it_c = 0;
  for (int i = 0; i < 2000; ++i) {
    auto ra = step(a.m, a.s, a.ws, 1e-3);
    auto rc = step(c.m, c.s, c.ws, 1e-3);
    ASSERT_TRUE(ra.converged && rc.converged);
    max_it_a = std::max(max_it_a, ra.iterations);
    max_it_c = std::max(max_it_c, rc.iterations);
  }
  EXPECT_LT((a.s.q - c.s.q).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_EQ(max_it_a, max_it_c);  // same tangent, same Newton iterations
}

TEST(Dynamics, DrivenCoordinateFollowsItsInput) {
  Sim sim(mbo::test::kitchen_sink_model());
  const int is = sim.m.input("steer"), ir = sim.m.input("steer_rate"), ia = sim.m.input("steer_acc");
  sim.s.u[is] = 0.1;
  sim.start(std::vector<double>(sim.m.z.size(), 0.1));
  const int delta = sim.m.coordinate("delta");
  double max_err = 0, max_phi = 0;
  for (int i = 1; i <= 1000; ++i) {
    double t = i * 1e-3;
    sim.s.u[is] = 0.1 + 0.2 * std::sin(3 * t);
    sim.s.u[ir] = 0.6 * std::cos(3 * t);
    sim.s.u[ia] = -1.8 * std::sin(3 * t);
    auto r = step(sim.m, sim.s, sim.ws, 1e-3);
    ASSERT_TRUE(r.converged) << "step " << i;
    max_err = std::max({max_err, std::abs(sim.s.q[delta] - sim.s.u[is]), std::abs(sim.s.qd[delta] - sim.s.u[ir])});
    max_phi = std::max(max_phi, constraint_residuals(sim.m, sim.s, sim.ws).position);
  }
  EXPECT_LT(max_err, 1e-8);
  EXPECT_LT(max_phi, 1e-9);
}

TEST(Dynamics, PredictorHistoryRestartsWhenTheStepChanges) {
  // step() extrapolates the accelerations of the steps before (see its predictor); a history
  // taken with another step size (substeps after a failed step) must not be used.
  Sim sim(load_model(mbo::test::model_path("fourbar")));
  sim.start({1.0});
  EXPECT_EQ(sim.s.history, 0);
  step(sim.m, sim.s, sim.ws, 2e-3);
  EXPECT_EQ(sim.s.history, 1);
  step(sim.m, sim.s, sim.ws, 2e-3);
  step(sim.m, sim.s, sim.ws, 2e-3);
  EXPECT_EQ(sim.s.history, 2);
  EXPECT_EQ(sim.s.history_dt, 2e-3);
  step(sim.m, sim.s, sim.ws, 1e-3);
  EXPECT_EQ(sim.s.history, 1);
  EXPECT_EQ(sim.s.history_dt, 1e-3);
  initialize_accelerations(sim.m, sim.s, sim.ws);
  EXPECT_EQ(sim.s.history, 0);
  // Same trajectory with and without the history, to the Newton tolerance.
  Sim a(load_model(mbo::test::model_path("fourbar"))), b(load_model(mbo::test::model_path("fourbar")));
  a.start({1.0});
  b.start({1.0});
  for (int k = 0; k < 1000; ++k) {
    ASSERT_TRUE(step(a.m, a.s, a.ws, 2e-3).converged);
    b.s.history = 0;
    ASSERT_TRUE(step(b.m, b.s, b.ws, 2e-3).converged);
  }
  EXPECT_LT((a.s.q - b.s.q).lpNorm<Eigen::Infinity>(), 1e-8);
}

TEST(Dynamics, StepAllocatesNothingAfterTheFirst) {
  for (Model m : {load_model(mbo::test::model_path("fourbar")), load_model(mbo::test::model_path("slider_crank")),
                  mbo::test::kitchen_sink_model()}) {
    Sim sim(std::move(m));
    sim.start(std::vector<double>(sim.m.z.size(), 0.5));
    step(sim.m, sim.s, sim.ws, 1e-3);
    mbo::test::alloc_count_start();
    for (int i = 0; i < 200; ++i) step(sim.m, sim.s, sim.ws, 1e-3);
    solve_position(sim.m, sim.s.q, sim.s.u, sim.ws);
    solve_velocity(sim.m, sim.s.u, sim.s.qd, sim.ws);
    compute_R(sim.m, sim.ws);
    compute_Rdot(sim.m, sim.s.qd, sim.ws);
    long n = mbo::test::alloc_count_stop();
    EXPECT_EQ(n, 0) << sim.m.name;
  }
}

TEST(Dynamics, AllocationCounterSeesEigenAllocations) {
  // The proof above is only worth something if the counter sees Eigen's heap use.
  mbo::test::alloc_count_start();
  Eigen::VectorXd v = Eigen::VectorXd::Ones(1000);
  long n = mbo::test::alloc_count_stop();
  EXPECT_GE(n, 1);
  EXPECT_EQ(v.sum(), 1000);
}

// A rotor (mb::Rotor) on a carrier at rest under a constant torque T: its spin is a scalar
// integrated by the trapezoidal rule, exact for a constant acceleration, so after 1 s from
// w0 the rate is w0 + T/J and the angle w0 + T/(2J) at every step size and speed. The same
// wheel carried by unit vectors r, s = R(theta)(e1, e2) (the vehicle before rotors) reached
// 89.75 instead of 90 rad/s from 70 at 2 ms (a response to torque (w dt)^2 / 2 too slow) and
// turned 0.17 % short of the integral of its rate.
TEST(Dynamics, RotorSpinIsExactUnderAConstantTorque) {
  for (double dt : {1e-3, 2e-3, 5e-3}) {
    for (double w0 : {70.0, 140.0}) {
      ModelBuilder b("rotor", 3);
      const int C = b.point("C", Vector3d::Zero(), true);
      const int a = b.vector("a", Vector3d::UnitY(), true), e1 = b.vector("e1", Vector3d::UnitX(), true);
      const int e2 = b.vector("e2", Vector3d::UnitZ(), true);
      const int th = b.scalar("theta", 0.3, ScalarKind::angle);
      BodySpec w;
      w.name = "wheel";
      w.mass = 20;
      w.origin = C;
      w.basis = {{e1, -1}, {a, -1}, {e2, -1}};
      w.vectors = {{e1, Vector3d::UnitX()}, {a, Vector3d::UnitY()}, {e2, Vector3d::UnitZ()}};
      w.inertia = Vector3d(0.6, 1.0, 0.6).asDiagonal();
      w.rigid_constraints = false;
      b.body(w);
      b.rotor(th, e1, e2, 1.0);  // about e2 x e1 = a
      b.coordinate_force({b.entity(th).slot, 20.0, -1, 1});
      b.independent({b.entity(th).slot});
      Sim sim(std::move(b).build());
      sim.start({w0});
      const int T = sim.m.coordinate("theta");
      const int n = static_cast<int>(std::lround(1.0 / dt));
      for (int k = 0; k < n; ++k) ASSERT_TRUE(step(sim.m, sim.s, sim.ws, dt).converged);
      EXPECT_NEAR(sim.s.qd[T], w0 + 20, 1e-9 * w0) << dt << " " << w0;
      EXPECT_NEAR(sim.s.q[T], 0.3 + w0 + 10, 1e-9 * w0) << dt << " " << w0;
      EXPECT_NEAR(sim.s.qdd[T], 20, 1e-9);
      EXPECT_NEAR(sim.energy(), 0.5 * (w0 + 20) * (w0 + 20), 1e-9 * w0 * w0);
    }
  }
}
