#include "simbody_vehicle.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <Simbody.h>

namespace mbo::peers {

using SimTK::MassProperties;
using SimTK::MobilizedBody;
using SimTK::Real;
using SimTK::Rotation;
using SimTK::Transform;
using SimTK::Vec3;

namespace {

Vec3 vec(const V3& a) { return Vec3(a[0], a[1], a[2]); }
V3 arr(const Vec3& v) { return {v[0], v[1], v[2]}; }

SimTK::Mat33 mat(const M33& m) {
  SimTK::Mat33 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r(i, j) = m[3 * i + j];
  return r;
}

M33 arr(const SimTK::Mat33& m) {
  M33 r{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r[3 * i + j] = m(i, j);
  return r;
}

// Rotations as plain row-major arrays: Simbody's transposed-rotation view (~R) trips GCC 12's
// -Warray-bounds when inlined here (as in simbody_peer.cpp).
M33 mul_transposed(const M33& a, const M33& b) {  // a' b
  M33 c{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) c[3 * i + j] += a[3 * k + i] * b[3 * k + j];
  return c;
}
M33 mul(const M33& a, const M33& b) {
  M33 c{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) c[3 * i + j] += a[3 * i + k] * b[3 * k + j];
  return c;
}
M33 rot_z(double t) { return {std::cos(t), -std::sin(t), 0, std::sin(t), std::cos(t), 0, 0, 0, 1}; }
M33 rot_x(double t) { return {1, 0, 0, 0, std::cos(t), -std::sin(t), 0, std::sin(t), std::cos(t)}; }
M33 identity() { return {1, 0, 0, 0, 1, 0, 0, 0, 1}; }
Rotation rotation(const M33& m) { return Rotation(mat(m), true); }

// A frame whose x axis is the unit vector d (a slider translates along its frame's x).
M33 x_along(const V3& d) { return arr(Rotation(SimTK::UnitVec3(vec(d)), SimTK::XAxis).asMat33()); }

// A pin turns about its frames' z axis; the spin pin's z is the carrier's y (the axle): this
// rotation of the carrier frame has z = y, x = x.
Rotation z_along_y() { return Rotation(-SimTK::Pi / 2, SimTK::XAxis); }

// The prescribed steering of one front carrier.
class SteeringMotion : public SimTK::Motion::Custom::Implementation {
 public:
  SteeringMotion(std::shared_ptr<const VehicleForceModel> f, int wheel) : f_(std::move(f)), wheel_(wheel) {}
  SimTK::Motion::Level getLevel(const SimTK::State&) const override { return SimTK::Motion::Position; }
  void calcPrescribedPosition(const SimTK::State& s, int, Real* q) const override { q[0] = eval(s, 0); }
  void calcPrescribedPositionDot(const SimTK::State& s, int, Real* q) const override { q[0] = eval(s, 1); }
  void calcPrescribedPositionDotDot(const SimTK::State& s, int, Real* q) const override { q[0] = eval(s, 2); }

 private:
  double eval(const SimTK::State& s, int order) const {
    double v[3];
    f_->steering(s.getTime(), wheel_, v[0], v[1], v[2]);
    return v[order];
  }
  std::shared_ptr<const VehicleForceModel> f_;
  int wheel_;
};

}  // namespace

struct SimbodyVehicle::Impl {
  SimTK::MultibodySystem system;
  SimTK::SimbodyMatterSubsystem matter{system};
  SimTK::GeneralForceSubsystem forces{system};
  std::shared_ptr<const VehicleForceModel> model;
  VehicleSpec spec;
  MobilizedBody::Free chassis;
  std::array<MobilizedBody::Slider, 4> strut;
  std::array<MobilizedBody, 4> carrier;  // the slider (rear) or the steering pin (front)
  std::array<MobilizedBody::Pin, 4> steer;  // front only
  std::array<MobilizedBody::Pin, 4> wheel;
  SimTK::State state;
  std::unique_ptr<SimTK::Integrator> integ;

  void read(const SimTK::State& s, ChassisState& c, std::array<WheelState, 4>& w) const {
    c.P0 = arr(chassis.getBodyOriginLocation(s));
    c.R = arr(chassis.getBodyRotation(s).asMat33());
    c.v = arr(chassis.getBodyOriginVelocity(s));
    c.w = arr(chassis.getBodyAngularVelocity(s));
    for (int i = 0; i < 4; ++i) {
      WheelState& ws = w[i];
      const Rotation R = carrier[i].getBodyRotation(s);
      const Vec3 om = carrier[i].getBodyAngularVelocity(s);
      const Vec3 r = R.x(), a = R.y(), sv = R.z();
      ws.a = arr(a), ws.r = arr(r), ws.s = arr(sv);
      ws.ad = arr(om % a), ws.rd = arr(om % r), ws.sd = arr(om % sv);
      ws.C = arr(wheel[i].getBodyOriginLocation(s));
      ws.Cd = arr(wheel[i].getBodyOriginVelocity(s));
      ws.spin = wheel[i].getOneQ(s, 0);
      ws.spin_rate = wheel[i].getOneU(s, 0);
      ws.travel = strut[i].getOneQ(s, 0);
      ws.travel_rate = strut[i].getOneU(s, 0);
      ws.steer = spec.wheels[i].steered ? steer[i].getOneQ(s, 0) : spec.wheels[i].toe;
    }
  }
};

namespace {

class VehicleLoads : public SimTK::Force::Custom::Implementation {
 public:
  explicit VehicleLoads(const SimbodyVehicle::Impl& v) : v_(v) {}
  void calcForce(const SimTK::State& s, SimTK::Vector_<SimTK::SpatialVec>& body, SimTK::Vector_<Vec3>&,
                 SimTK::Vector& mobility) const override {
    ChassisState c;
    std::array<WheelState, 4> w;
    v_.read(s, c, w);
    ChassisLoads cl;
    std::array<WheelLoads, 4> wl;
    v_.model->loads(s.getTime(), c, w, cl, wl);
    v_.chassis.applyForceToBodyPoint(s, v_.chassis.findStationAtGroundPoint(s, vec(cl.point)), vec(cl.force), body);
    for (int i = 0; i < 4; ++i) {
      const auto& l = wl[i];
      for (int k = 0; k < l.n; ++k)
        v_.wheel[i].applyForceToBodyPoint(s, v_.wheel[i].findStationAtGroundPoint(s, vec(l.point[k])), vec(l.force[k]),
                                          body);
      v_.wheel[i].applyBodyTorque(s, vec(l.torque), body);
      v_.wheel[i].applyOneMobilityForce(s, 0, l.spin_torque, mobility);
      v_.strut[i].applyOneMobilityForce(s, 0, l.strut_force, mobility);
    }
  }
  Real calcPotentialEnergy(const SimTK::State&) const override { return 0; }

 private:
  const SimbodyVehicle::Impl& v_;
};

}  // namespace

SimbodyVehicle::SimbodyVehicle(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SimbodyVehicle::~SimbodyVehicle() = default;

std::unique_ptr<SimbodyVehicle> SimbodyVehicle::create(const VehicleSpec& spec, const VehicleInitial& start,
                                                       std::shared_ptr<const VehicleForceModel> forces,
                                                       double accuracy) {
  auto p = std::make_unique<Impl>();
  p->model = std::move(forces);
  p->spec = spec;
  SimTK::Force::UniformGravity(p->forces, p->matter, Vec3(0, 0, -spec.gravity));
  const SimTK::Mat33 I = mat(spec.inertia);
  p->chassis = MobilizedBody::Free(p->matter.Ground(), Transform(),
                                   MassProperties(spec.mass, Vec3(0), SimTK::Inertia(I)), Transform());
  const MassProperties massless(0, Vec3(0), SimTK::Inertia(0));
  for (int i = 0; i < 4; ++i) {
    const WheelSpec& ws = spec.wheels[i];
    // Strut: the slider's frames have x along the strut axis; the body after it is the upright
    // (chassis-parallel) of a steered wheel, or the carrier Rz(toe) Rx(tilt) of the others.
    // (R_PB = R_PF R_FM R_BM', R_FM = I for a slider at any travel.)
    const M33 Rs = x_along(ws.strut_axis);
    const M33 after_strut = ws.steered ? identity() : mul(rot_z(ws.toe), rot_x(ws.tilt));
    p->strut[i] = MobilizedBody::Slider(p->chassis, Transform(rotation(Rs), vec(ws.strut_point)), massless,
                                        Transform(rotation(mul_transposed(after_strut, Rs)), Vec3(0)));
    if (ws.steered) {
      // Steering pin about the chassis z axis through the wheel centre; the carrier is
      // Rz(steer) Rx(tilt) in chassis axes.
      p->steer[i] =
          MobilizedBody::Pin(p->strut[i], Transform(), massless, Transform(rotation(rot_x(-ws.tilt)), Vec3(0)));
      SimTK::Motion::Custom(p->steer[i], new SteeringMotion(p->model, i));
      p->carrier[i] = p->steer[i];
    } else {
      p->carrier[i] = p->strut[i];
    }
    const SimTK::Inertia Iw(Vec3(ws.diametral_inertia, ws.spin_inertia, ws.diametral_inertia));
    p->wheel[i] = MobilizedBody::Pin(p->carrier[i], Transform(z_along_y(), Vec3(0)),
                                     MassProperties(ws.mass, Vec3(0), Iw), Transform(z_along_y(), Vec3(0)));
  }
  SimTK::Force::Custom(p->forces, new VehicleLoads(*p));
  SimTK::State& st = p->state;
  st = p->system.realizeTopology();
  const auto& c = start.chassis;
  p->chassis.setQToFitTransform(st, Transform(rotation(c.R), vec(c.P0)));
  for (int i = 0; i < 4; ++i) {
    p->strut[i].setOneQ(st, 0, start.travel[i]);
    p->wheel[i].setOneQ(st, 0, start.spin[i]);
  }
  p->system.realize(st, SimTK::Stage::Position);
  p->chassis.setUToFitVelocity(st, SimTK::SpatialVec(vec(c.w), vec(c.v)));
  for (int i = 0; i < 4; ++i) {
    p->strut[i].setOneU(st, 0, start.travel_rate[i]);
    p->wheel[i].setOneU(st, 0, start.spin_rate[i]);
  }
  p->system.realize(st, SimTK::Stage::Velocity);
  p->integ = std::make_unique<SimTK::RungeKuttaMersonIntegrator>(p->system);
  p->integ->setAccuracy(accuracy);
  p->integ->setUseInfinityNorm(true);
  p->integ->initialize(st);
  return std::unique_ptr<SimbodyVehicle>(new SimbodyVehicle(std::move(p)));
}

double SimbodyVehicle::time() const { return impl_->integ->getTime(); }

void SimbodyVehicle::advance_to(double t) {
  auto& in = *impl_->integ;
  while (in.getTime() < t) {
    const auto status = in.stepTo(t, t);
    if (status == SimTK::Integrator::EndOfSimulation) throw std::runtime_error("Simbody integration ended early");
  }
}

void SimbodyVehicle::read(ChassisState& chassis, std::array<WheelState, 4>& wheels) const {
  const SimTK::State& st = impl_->integ->getState();
  impl_->system.realize(st, SimTK::Stage::Velocity);
  impl_->read(st, chassis, wheels);
}

long SimbodyVehicle::steps_taken() const { return impl_->integ->getNumStepsTaken(); }

}  // namespace mbo::peers
