#include "simbody_peer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <Simbody.h>

namespace mbo::peers {

using SimTK::Inertia;
using SimTK::MassProperties;
using SimTK::MobilizedBody;
using SimTK::Rotation;
using SimTK::Transform;
using SimTK::UnitVec3;

namespace {

// One tracked vector: a station of a body (a point in ground) or one of its axes.
struct Tracked {
  int body;  // index into Impl::bodies
  SimTK::Vec3 station;
  int axis = -1;  // >= 0: the body's axis `axis` instead of a station
};

// Uniform slender bar of length l along the body x axis from the body origin: inertia about
// the origin m l^2/3 about y and z (about its own axis it has none, which a planar pin never
// uses).
MassProperties slender_bar(double m, double l) {
  return MassProperties(m, SimTK::Vec3(l / 2, 0, 0), Inertia(SimTK::Vec3(0, m * l * l / 3, m * l * l / 3)));
}

Rotation rotation_of(const Mat3& r) {
  SimTK::Mat33 m;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) m(i, j) = r[3 * i + j];
  return Rotation(m);  // re-orthonormalises; r is orthonormal to rounding already
}

}  // namespace

struct SimbodyPeer::Impl {
  SimTK::MultibodySystem system;
  SimTK::SimbodyMatterSubsystem matter{system};
  SimTK::GeneralForceSubsystem forces{system};
  std::vector<MobilizedBody> bodies;
  std::vector<Tracked> tracked;
  SimTK::State state;
  std::unique_ptr<SimTK::Integrator> integ;

  void gravity(const SimTK::Vec3& g) { SimTK::Force::UniformGravity(forces, matter, g); }

  // Realises the topology and returns the default state for the caller to set q and u in.
  SimTK::State& start() {
    state = system.realizeTopology();
    return state;
  }

  void finish(const SimbodyOptions& opt) {
    system.realize(state, SimTK::Stage::Position);
    // Closed loops: the initial state is assembled analytically; project it onto the
    // constraint manifold to the integrator's tolerance before starting.
    if (matter.getNumConstraints() > 0) system.project(state, opt.constraint_tolerance);
    integ = std::make_unique<SimTK::RungeKuttaMersonIntegrator>(system);
    if (opt.fixed_step > 0) {
      integ->setFixedStepSize(opt.fixed_step);
      // Fixed steps are accepted whatever the error estimate; a loose accuracy keeps the
      // integrator from reporting failures it cannot act on.
      integ->setAccuracy(1e-2);
      integ->setConstraintTolerance(std::max(opt.constraint_tolerance, 1e-10));
    } else {
      integ->setAccuracy(opt.accuracy);
      integ->setConstraintTolerance(opt.constraint_tolerance);
      integ->setUseInfinityNorm(true);
    }
    integ->initialize(state);
  }
};

SimbodyPeer::SimbodyPeer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SimbodyPeer::~SimbodyPeer() = default;

std::unique_ptr<SimbodyPeer> SimbodyPeer::double_pendulum(const DoublePendulumSpec& s, const SimbodyOptions& opt) {
  auto p = std::make_unique<Impl>();
  p->gravity(SimTK::Vec3(0, -s.g, 0));
  // Pins about z; a pin's angle is that of the body x axis from its parent's x axis, so
  // q1 = theta1 and q2 = theta2 - theta1.
  MobilizedBody::Pin b1(p->matter.Ground(), Transform(), slender_bar(s.m1, s.l1), Transform());
  MobilizedBody::Pin b2(b1, Transform(SimTK::Vec3(s.l1, 0, 0)), slender_bar(s.m2, s.l2), Transform());
  p->bodies = {b1, b2};
  p->tracked = {{0, SimTK::Vec3(s.l1, 0, 0)}, {1, SimTK::Vec3(s.l2, 0, 0)}};
  SimTK::State& st = p->start();
  b1.setOneQ(st, 0, s.theta1);
  b2.setOneQ(st, 0, s.theta2 - s.theta1);
  b1.setOneU(st, 0, s.omega1);
  b2.setOneU(st, 0, s.omega2 - s.omega1);
  p->finish(opt);
  return std::unique_ptr<SimbodyPeer>(new SimbodyPeer(std::move(p)));
}

std::unique_ptr<SimbodyPeer> SimbodyPeer::spinning_top(const TopSpec& s, const SimbodyOptions& opt) {
  auto p = std::make_unique<Impl>();
  p->gravity(SimTK::Vec3(0, 0, -s.g));
  // Body frame: origin at the fixed point, axes u, v, w; inertia shifted from the centre of
  // gravity to the origin (parallel axes).
  const double h = s.com_height, it = s.inertia_transverse + s.mass * h * h;
  MassProperties mp(s.mass, SimTK::Vec3(0, 0, h), Inertia(SimTK::Vec3(it, it, s.inertia_axial)));
  MobilizedBody::Ball top(p->matter.Ground(), Transform(), mp, Transform());
  p->bodies = {top};
  p->tracked = {{0, SimTK::Vec3(0), 0}, {0, SimTK::Vec3(0), 1}, {0, SimTK::Vec3(0), 2}};
  SimTK::State& st = p->start();
  const Rotation r = Rotation(s.yaw, SimTK::ZAxis) * Rotation(s.pitch, SimTK::YAxis) * Rotation(s.roll, SimTK::XAxis);
  top.setQToFitRotation(st, r);
  p->system.realize(st, SimTK::Stage::Position);
  top.setUToFitAngularVelocity(st, SimTK::Vec3(s.omega[0], s.omega[1], s.omega[2]));
  p->finish(opt);
  return std::unique_ptr<SimbodyPeer>(new SimbodyPeer(std::move(p)));
}

Vec3 fourbar_p2(const FourBarSpec& s) {
  const double p1x = s.ax + s.l1 * std::cos(s.theta), p1y = s.l1 * std::sin(s.theta);
  const double dx = s.bx - p1x, dy = -p1y, d = std::hypot(dx, dy);
  const double a = (s.l2 * s.l2 - s.l3 * s.l3 + d * d) / (2 * d);
  const double hh = std::sqrt(std::max(0.0, s.l2 * s.l2 - a * a));
  const double cx = p1x + a * dx / d, cy = p1y + a * dy / d;
  // The two intersections are c +- h * perp(d); take the upper one.
  Vec3 u{cx - hh * dy / d, cy + hh * dx / d, 0}, v{cx + hh * dy / d, cy - hh * dx / d, 0};
  return u[1] >= v[1] ? u : v;
}

std::unique_ptr<SimbodyPeer> SimbodyPeer::fourbar(const FourBarSpec& s, const SimbodyOptions& opt) {
  auto p = std::make_unique<Impl>();
  p->gravity(SimTK::Vec3(0, -s.g, 0));
  // Crank and coupler as a chain of pins from A, the rocker pinned at B with its x axis from
  // B to P2; the loop is closed at P2 by keeping the coupler's end on the rocker's z line
  // through P2 (two equations, none redundant, as in the planar mechanism).
  MobilizedBody::Pin crank(p->matter.Ground(), Transform(SimTK::Vec3(s.ax, 0, 0)), slender_bar(s.m1, s.l1),
                           Transform());
  MobilizedBody::Pin coupler(crank, Transform(SimTK::Vec3(s.l1, 0, 0)), slender_bar(s.m2, s.l2), Transform());
  MobilizedBody::Pin rocker(p->matter.Ground(), Transform(SimTK::Vec3(s.bx, 0, 0)), slender_bar(s.m3, s.l3),
                            Transform());
  SimTK::Constraint::PointOnLine(rocker, UnitVec3(0, 0, 1), SimTK::Vec3(s.l3, 0, 0), coupler, SimTK::Vec3(s.l2, 0, 0));
  p->bodies = {crank, coupler, rocker};
  p->tracked = {{0, SimTK::Vec3(s.l1, 0, 0)}, {1, SimTK::Vec3(s.l2, 0, 0)}};
  SimTK::State& st = p->start();
  const Vec3 p2 = fourbar_p2(s);
  const double p1x = s.ax + s.l1 * std::cos(s.theta), p1y = s.l1 * std::sin(s.theta);
  crank.setOneQ(st, 0, s.theta);
  coupler.setOneQ(st, 0, std::atan2(p2[1] - p1y, p2[0] - p1x) - s.theta);
  rocker.setOneQ(st, 0, std::atan2(p2[1], p2[0] - s.bx));
  p->finish(opt);
  return std::unique_ptr<SimbodyPeer>(new SimbodyPeer(std::move(p)));
}

std::unique_ptr<SimbodyPeer> SimbodyPeer::slider_crank(const SliderCrankSpec& s, const SimbodyOptions& opt) {
  auto p = std::make_unique<Impl>();
  p->gravity(SimTK::Vec3(0, -s.g, 0));
  // Crank and rod pinned in a chain from O, the slider on its own x-axis slider joint; the
  // rod's end is kept on the slider's z line (two equations).
  MobilizedBody::Pin crank(p->matter.Ground(), Transform(), slender_bar(s.m_crank, s.r), Transform());
  MobilizedBody::Pin rod(crank, Transform(SimTK::Vec3(s.r, 0, 0)), slender_bar(s.m_rod, s.l), Transform());
  MobilizedBody::Slider slider(p->matter.Ground(), Transform(), MassProperties(s.m_slider, SimTK::Vec3(0), Inertia(0)),
                               Transform());
  SimTK::Constraint::PointOnLine(slider, UnitVec3(0, 0, 1), SimTK::Vec3(0), rod, SimTK::Vec3(s.l, 0, 0));
  p->bodies = {crank, rod, slider};
  p->tracked = {{0, SimTK::Vec3(s.r, 0, 0)}, {1, SimTK::Vec3(s.l, 0, 0)}};
  SimTK::State& st = p->start();
  // Rod angle from the x axis: sin(phi) = -r sin(theta) / l (P2 on the x axis, P2.x > 0).
  const double phi = std::asin(-s.r * std::sin(s.theta) / s.l);
  crank.setOneQ(st, 0, s.theta);
  rod.setOneQ(st, 0, phi - s.theta);
  slider.setOneQ(st, 0, s.r * std::cos(s.theta) + s.l * std::cos(phi));
  p->finish(opt);
  return std::unique_ptr<SimbodyPeer>(new SimbodyPeer(std::move(p)));
}

std::unique_ptr<SimbodyPeer> SimbodyPeer::chain(const ChainSpec& s, const SimbodyOptions& opt) {
  if (s.n < 1) throw std::invalid_argument("chain: n must be >= 1");
  auto p = std::make_unique<Impl>();
  p->gravity(SimTK::Vec3(0, 0, -s.g));
  // Body frame: origin at the near joint, x along the link; cylinder inertia shifted from
  // the centre (L/2 along x) to the origin.
  const double ia = s.inertia_axial(), it = s.inertia_transverse() + s.mass * s.length * s.length / 4;
  const MassProperties mp(s.mass, SimTK::Vec3(s.length / 2, 0, 0), Inertia(SimTK::Vec3(ia, it, it)));
  MobilizedBody parent = p->matter.Ground();
  for (int i = 1; i <= s.n; ++i) {
    const Transform x_pf = i == 1 ? Transform() : Transform(SimTK::Vec3(s.length, 0, 0));
    MobilizedBody::Ball b(parent, x_pf, mp, Transform());
    p->bodies.push_back(b);
    p->tracked.push_back({i - 1, SimTK::Vec3(s.length, 0, 0)});
    parent = b;
  }
  SimTK::State& st = p->start();
  // Relative rotations R_{i-1}' R_i, formed in plain arrays: Simbody's transposed-rotation
  // view (~R) trips GCC 12's -Warray-bounds when inlined here.
  Mat3 prev{1, 0, 0, 0, 1, 0, 0, 0, 1};
  for (int i = 1; i <= s.n; ++i) {
    const Mat3 r = chain_initial_rotation(s, i);
    Mat3 rel{};
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        for (int k = 0; k < 3; ++k) rel[3 * a + b] += prev[3 * k + a] * r[3 * k + b];
    p->bodies[i - 1].setQToFitRotation(st, rotation_of(rel));
    prev = r;
  }
  p->finish(opt);
  return std::unique_ptr<SimbodyPeer>(new SimbodyPeer(std::move(p)));
}

double SimbodyPeer::time() const { return impl_->integ->getTime(); }

void SimbodyPeer::advance_to(double t) {
  auto& in = *impl_->integ;
  while (in.getTime() < t) {
    const auto status = in.stepTo(t, t);
    if (status == SimTK::Integrator::EndOfSimulation) throw std::runtime_error("Simbody integration ended early");
  }
}

void SimbodyPeer::step(double dt) { impl_->integ->stepBy(dt); }

void SimbodyPeer::evaluate_dynamics() {
  SimTK::State& st = impl_->state;
  st.updQ() = impl_->integ->getState().getQ();
  st.updU() = impl_->integ->getState().getU();
  impl_->system.realize(st, SimTK::Stage::Acceleration);
}

int SimbodyPeer::tracked_count() const { return static_cast<int>(impl_->tracked.size()); }

std::vector<double> SimbodyPeer::tracked() const {
  const SimTK::State& st = impl_->integ->getState();
  impl_->system.realize(st, SimTK::Stage::Position);
  std::vector<double> out;
  out.reserve(3 * impl_->tracked.size());
  for (const auto& t : impl_->tracked) {
    const MobilizedBody& b = impl_->bodies[t.body];
    SimTK::Vec3 v;
    if (t.axis >= 0) {
      SimTK::Vec3 e(0);
      e[t.axis] = 1;
      v = b.getBodyRotation(st) * e;
    } else
      v = b.findStationLocationInGround(st, t.station);
    out.insert(out.end(), {v[0], v[1], v[2]});
  }
  return out;
}

double SimbodyPeer::energy() const {
  const SimTK::State& st = impl_->integ->getState();
  impl_->system.realize(st, SimTK::Stage::Dynamics);
  return impl_->system.calcEnergy(st);
}

double SimbodyPeer::constraint_error() const {
  const SimTK::State& st = impl_->integ->getState();
  impl_->system.realize(st, SimTK::Stage::Position);
  const SimTK::Vector& e = st.getQErr();
  double m = 0;
  for (int i = 0; i < e.size(); ++i) m = std::max(m, std::abs(e[i]));
  return m;
}

long SimbodyPeer::steps_taken() const { return impl_->integ->getNumStepsTaken(); }

int SimbodyPeer::coordinates() const { return impl_->integ->getState().getNQ(); }

}  // namespace mbo::peers
