#include "vehicle_twin.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "mbobserver/experiment/vehicle_experiment.hpp"
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/forces.hpp"
#include "mbobserver/models/aero.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_outputs.hpp"
#include "simbody_vehicle.hpp"

namespace mbo::peers {
namespace {

using Eigen::Vector3d;
using Eigen::VectorXd;

Vector3d vec(const V3& a) { return {a[0], a[1], a[2]}; }
V3 arr(const Vector3d& v) { return {v.x(), v.y(), v.z()}; }

// The inputs of the recorded run, u_n at t = n dt, as functions of time: linear between the
// steps, except the steered carriers' angles, a cubic Hermite through the recorded angles and
// rates, so that the angle, its rate and its acceleration given to Simbody's prescribed motion
// are one function and its derivatives.
struct Schedule {
  double dt = 0;
  std::vector<VectorXd> u;
  std::array<int, 2> angle{-1, -1}, rate{-1, -1}, accel{-1, -1};

  void locate(double t, std::size_t& n, double& s) const {
    const double x = std::clamp(t / dt, 0.0, static_cast<double>(u.size() - 1));
    n = std::min(static_cast<std::size_t>(std::floor(x + 1e-9)), u.size() - 2);
    s = std::clamp(x - static_cast<double>(n), 0.0, 1.0);
  }
  void steering(double t, int wheel, double& a, double& r, double& acc) const {
    std::size_t n;
    double s;
    locate(t, n, s);
    const int ia = angle[wheel], ir = rate[wheel];
    const double p0 = u[n][ia], p1 = u[n + 1][ia], m0 = u[n][ir] * dt, m1 = u[n + 1][ir] * dt;
    const double s2 = s * s, s3 = s2 * s;
    a = (2 * s3 - 3 * s2 + 1) * p0 + (s3 - 2 * s2 + s) * m0 + (-2 * s3 + 3 * s2) * p1 + (s3 - s2) * m1;
    r = ((6 * s2 - 6 * s) * p0 + (3 * s2 - 4 * s + 1) * m0 + (-6 * s2 + 6 * s) * p1 + (3 * s2 - 2 * s) * m1) / dt;
    acc = ((12 * s - 6) * p0 + (6 * s - 4) * m0 + (-12 * s + 6) * p1 + (6 * s - 2) * m1) / (dt * dt);
  }
  void at(double t, VectorXd& out) const {
    std::size_t n;
    double s;
    locate(t, n, s);
    out = (1 - s) * u[n] + s * u[n + 1];
    for (int w = 0; w < 2; ++w)
      if (angle[w] >= 0) steering(t, w, out[angle[w]], out[rate[w]], out[accel[w]]);
  }
};

// mbobserver's force models on any state given as chassis and wheel kinematics: the vehicle
// model's own tyre objects, its coordinate spring-dampers and forces on the travels and
// spins, and its drag, evaluated on a coordinate vector filled from that state.
class TwinForces final : public VehicleForceModel {
 public:
  TwinForces(const models::Vehicle& v, const Schedule& s) : v_(v), sched_(s) {
    const auto& m = v.model;
    if (!m.point_forces.empty() || !m.body_torques.empty() || !m.spring_dampers.empty())
      throw std::invalid_argument("vehicle twin: the vehicle has force elements it does not carry over");
    x_ = m.x0;
    xd_ = VectorXd::Zero(m.nq + m.nconst);
    Q_ = VectorXd::Zero(m.nq);
  }

  void loads(double t, const ChassisState& c, const std::array<WheelState, 4>& w, ChassisLoads& cl,
             std::array<WheelLoads, 4>& wl) const override {
    const auto& m = v_.model;
    fill(t, c, w);
    for (int i = 0; i < 4; ++i) {
      models::TyreResult tr;
      v_.tyres[i]->compute(x_, xd_, u_, tr);
      WheelLoads& l = wl[i];
      l = WheelLoads{};
      l.n = tr.n;
      for (int k = 0; k < tr.n; ++k) {
        l.force[k] = arr(tr.c[k].force);
        l.point[k] = arr(tr.c[k].contact.point);
      }
      l.torque = arr(tr.rolling_torque * vec(w[i].a));
      l.spin_torque = tr.brake_torque;
    }
    // Coordinate forces (drive torques) and spring-dampers (suspension) as forces.cpp has them.
    Q_.setZero();
    for (const auto& f : m.coordinate_forces) Q_[f.slot] += f.constant + (f.input >= 0 ? f.gain * u_[f.input] : 0.0);
    for (const auto& s : m.coordinate_spring_dampers) {
      const double d = x_[s.slot] - (s.slot2 >= 0 ? x_[s.slot2] : 0.0);
      const double dd = xd_[s.slot] - (s.slot2 >= 0 ? xd_[s.slot2] : 0.0);
      const double e = d - s.x0;
      const double f = s.preload + (s.spring.empty() ? s.k * e : s.spring.value(e)) +
                       (s.damper.empty() ? s.c * dd : s.damper.value(dd));
      Q_[s.slot] -= f;
      if (s.slot2 >= 0) Q_[s.slot2] += f;
    }
    for (int i = 0; i < 4; ++i) {
      wl[i].spin_torque += Q_[v_.wheels[i].spin];
      wl[i].strut_force = Q_[v_.wheels[i].travel];
    }
    cl = ChassisLoads{};
    cl.point = c.P0;
    for (const auto& f : m.custom_forces) {
      const auto* aero = dynamic_cast<const models::AeroDrag*>(f.get());
      if (!aero) continue;
      Q_.setZero();
      mb::ForceSink sink(Q_, m.nq, nullptr, nullptr);
      aero->evaluate(m, x_, xd_, u_, t, sink);
      cl.force = arr(Q_.segment<3>(v_.P0));
      Eigen::Matrix3d R;
      R << c.R[0], c.R[1], c.R[2], c.R[3], c.R[4], c.R[5], c.R[6], c.R[7], c.R[8];
      cl.point = arr(vec(c.P0) + R * aero->point());
    }
  }

  void steering(double t, int wheel, double& a, double& r, double& acc) const override {
    sched_.steering(t, wheel, a, r, acc);
  }

  // The tyre loads Fz of a state.
  std::array<double, 4> tyre_loads(double t, const ChassisState& c, const std::array<WheelState, 4>& w) const {
    fill(t, c, w);
    std::array<double, 4> fz{};
    for (int i = 0; i < 4; ++i) {
      models::TyreResult tr;
      v_.tyres[i]->compute(x_, xd_, u_, tr);
      fz[i] = tr.Fz_total;
    }
    return fz;
  }

 private:
  void fill(double t, const ChassisState& c, const std::array<WheelState, 4>& w) const {
    sched_.at(t, u_);
    x_.segment<3>(v_.P0) = vec(c.P0);
    xd_.segment<3>(v_.P0) = vec(c.v);
    const Vector3d om = vec(c.w);
    const int axes[3] = {v_.u, v_.v, v_.w};
    for (int k = 0; k < 3; ++k) {
      const Vector3d e(c.R[k], c.R[3 + k], c.R[6 + k]);
      x_.segment<3>(axes[k]) = e;
      xd_.segment<3>(axes[k]) = om.cross(e);
    }
    for (int i = 0; i < 4; ++i) {
      const auto& s = v_.wheels[i];
      const WheelState& ws = w[i];
      x_.segment<3>(s.C) = vec(ws.C), xd_.segment<3>(s.C) = vec(ws.Cd);
      x_.segment<3>(s.a) = vec(ws.a), xd_.segment<3>(s.a) = vec(ws.ad);
      x_.segment<3>(s.r) = vec(ws.r), xd_.segment<3>(s.r) = vec(ws.rd);
      x_.segment<3>(s.s) = vec(ws.s), xd_.segment<3>(s.s) = vec(ws.sd);
      x_[s.spin] = ws.spin, xd_[s.spin] = ws.spin_rate;
      x_[s.travel] = ws.travel, xd_[s.travel] = ws.travel_rate;
    }
  }

  const models::Vehicle& v_;
  const Schedule& sched_;
  mutable VectorXd x_, xd_, Q_, u_;
};

// Our state as the twin's kinematics.
void kinematics(const models::Vehicle& v, const mb::State& s, ChassisState& c, std::array<WheelState, 4>& w) {
  c.P0 = arr(s.q.segment<3>(v.P0));
  c.v = arr(s.qd.segment<3>(v.P0));
  const Eigen::Matrix3d R = models::chassis_rotation(v, s.q);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) c.R[3 * i + j] = R(i, j);
  c.w = arr(models::chassis_angular_velocity(v, s.q, s.qd));
  for (int i = 0; i < 4; ++i) {
    const auto& sl = v.wheels[i];
    WheelState& ws = w[i];
    ws.C = arr(s.q.segment<3>(sl.C)), ws.Cd = arr(s.qd.segment<3>(sl.C));
    ws.a = arr(s.q.segment<3>(sl.a)), ws.ad = arr(s.qd.segment<3>(sl.a));
    ws.r = arr(s.q.segment<3>(sl.r)), ws.rd = arr(s.qd.segment<3>(sl.r));
    ws.s = arr(s.q.segment<3>(sl.s)), ws.sd = arr(s.qd.segment<3>(sl.s));
    ws.spin = s.q[sl.spin], ws.spin_rate = s.qd[sl.spin];
    ws.travel = s.q[sl.travel], ws.travel_rate = s.qd[sl.travel];
    ws.steer = sl.steer >= 0 ? s.q[sl.steer] : v.geometry[i].toe;
  }
}

TwinSample sample(double t, const ChassisState& c, const std::array<WheelState, 4>& w, const TwinForces& f) {
  TwinSample s;
  s.t = t;
  s.x = c.P0[0], s.y = c.P0[1], s.z = c.P0[2];
  s.yaw = std::atan2(c.R[3], c.R[0]);
  s.pitch = -std::asin(std::clamp(c.R[6], -1.0, 1.0));
  s.roll = std::atan2(c.R[7], c.R[8]);
  s.vx = c.v[0], s.vy = c.v[1], s.yaw_rate = c.w[2];
  s.load = f.tyre_loads(t, c, w);
  for (int i = 0; i < 4; ++i) {
    s.travel[i] = w[i].travel;
    s.spin_rate[i] = w[i].spin_rate;
    s.spin[i] = w[i].spin;
  }
  return s;
}

}  // namespace

TwinDifference difference(const std::vector<TwinSample>& a, const std::vector<TwinSample>& b) {
  TwinDifference d;
  const std::size_t n = std::min(a.size(), b.size());
  auto up = [](double& m, double v) { m = std::max(m, std::abs(v)); };
  for (std::size_t k = 0; k < n; ++k) {
    const TwinSample &p = a[k], &q = b[k];
    up(d.position, std::hypot(p.x - q.x, p.y - q.y));
    up(d.position, p.z - q.z);
    up(d.yaw, std::remainder(p.yaw - q.yaw, 2 * M_PI));
    up(d.pitch_roll, p.pitch - q.pitch);
    up(d.pitch_roll, p.roll - q.roll);
    up(d.velocity, std::hypot(p.vx - q.vx, p.vy - q.vy));
    up(d.yaw_rate, p.yaw_rate - q.yaw_rate);
    for (int i = 0; i < 4; ++i) {
      up(d.travel, p.travel[i] - q.travel[i]);
      up(d.load, p.load[i] - q.load[i]);
      up(d.spin_rate, p.spin_rate[i] - q.spin_rate[i]);
      up(d.spin, p.spin[i] - q.spin[i]);
      up(d.load_scale, q.load[i]);
      up(d.spin_rate_scale, q.spin_rate[i]);
    }
  }
  return d;
}

TwinRun run_twin(const std::string& file, double duration, double dt, double accuracy) {
  const auto sc = exp::load_vehicle_scenario(file);
  const models::Vehicle& v = *sc.truth;
  const auto& m = v.model;
  TwinRun run;
  run.scenario = sc.file.filename().string();
  run.duration = duration > 0 ? duration : sc.duration;
  run.dt = dt > 0 ? dt : sc.dt;

  // 1. The truth with its closed-loop driver, as TruthDrive drives it; its inputs recorded.
  Schedule sched;
  sched.dt = sc.dt;
  for (int w = 0; w < 2; ++w)
    if (v.in.steer[w] >= 0)
      sched.angle[w] = v.in.steer[w], sched.rate[w] = v.in.steer_rate[w], sched.accel[w] = v.in.steer_accel[w];
  mb::Workspace ws(m);
  models::DriverState driver{};
  models::VehicleOutputs out{};
  auto in = models::manoeuvre_inputs(sc.manoeuvre, v, out, driver, 0, sc.dt);
  const mb::State start = models::start_vehicle(v, ws, sc.manoeuvre.start, in);
  {
    mb::State s = start;
    models::vehicle_outputs(v, s, out);
    sched.u.push_back(s.u);
    const int steps = static_cast<int>(std::lround(run.duration / sc.dt));
    for (int n = 1; n <= steps + 1; ++n) {
      in = models::manoeuvre_inputs(sc.manoeuvre, v, out, driver, n * sc.dt, sc.dt);
      models::set_inputs(v, in, s);
      sched.u.push_back(s.u);
      if (!mb::step(m, s, ws, sc.dt).converged) throw std::runtime_error(run.scenario + ": the truth failed");
      models::vehicle_outputs(v, s, out);
    }
  }
  auto forces = std::make_shared<TwinForces>(v, sched);

  // 2. Ours, open loop on the recorded inputs at dt.
  constexpr double kSample = 0.01;
  const int samples = static_cast<int>(std::lround(run.duration / kSample));
  {
    mb::State s = start;
    ChassisState c;
    std::array<WheelState, 4> w;
    kinematics(v, s, c, w);
    run.ours.push_back(sample(0, c, w, *forces));
    const int per = static_cast<int>(std::lround(kSample / run.dt));
    if (std::abs(per * run.dt - kSample) > 1e-12) throw std::invalid_argument("vehicle twin: dt must divide 10 ms");
    for (int k = 1; k <= samples; ++k) {
      for (int j = 1; j <= per; ++j) {
        sched.at(((k - 1) * per + j) * run.dt, s.u);
        if (!mb::step(m, s, ws, run.dt).converged) throw std::runtime_error(run.scenario + ": our replay failed");
      }
      kinematics(v, s, c, w);
      run.ours.push_back(sample(k * kSample, c, w, *forces));
    }
  }

  // 3. Simbody, from the same start.
  VehicleSpec spec;
  const auto& p = v.params;
  spec.mass = p.mass_kg;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) spec.inertia[3 * i + j] = p.inertia_kgm2(i, j);
  spec.gravity = p.gravity_mps2;
  for (int i = 0; i < 4; ++i) {
    const auto& g = v.geometry[i];
    const auto& ax = p.axles[models::axle_of(i)];
    WheelSpec& w = spec.wheels[i];
    w.strut_point = arr(g.strut_point);
    w.strut_axis = arr(g.strut_axis);
    w.tilt = g.tilt;
    w.toe = g.toe;
    w.steered = v.wheels[i].steer >= 0;
    w.mass = ax.unsprung_mass_kg;
    w.spin_inertia = ax.spin_inertia_kgm2;
    w.diametral_inertia = ax.diametral_inertia_kgm2;
  }
  VehicleInitial init;
  std::array<WheelState, 4> w0;
  kinematics(v, start, init.chassis, w0);
  for (int i = 0; i < 4; ++i) {
    init.travel[i] = w0[i].travel, init.travel_rate[i] = w0[i].travel_rate;
    init.spin[i] = w0[i].spin, init.spin_rate[i] = w0[i].spin_rate;
  }
  auto sb = SimbodyVehicle::create(spec, init, forces, accuracy);
  {
    ChassisState c;
    std::array<WheelState, 4> w;
    sb->read(c, w);
    run.simbody.push_back(sample(0, c, w, *forces));
    for (int k = 1; k <= samples; ++k) {
      sb->advance_to(k * kSample);
      sb->read(c, w);
      run.simbody.push_back(sample(k * kSample, c, w, *forces));
    }
  }
  run.simbody_steps = sb->steps_taken();
  return run;
}

}  // namespace mbo::peers
