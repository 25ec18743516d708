#include "fidelity.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "mbobserver/experiment/scenario.hpp"
#include "mbobserver/experiment/sensor_sim.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/forces.hpp"
#include "mbobserver/mb/kinematics.hpp"
#include "mbobserver/mb/model_json.hpp"
#include "mbobserver/models/manoeuvres.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_outputs.hpp"
#include "mbobserver/models/vehicle_params.hpp"

namespace mbo::fidelity {
namespace {

using Eigen::Vector3d;
using models::FL;
using models::kWheels;
constexpr double kG = 9.81;

models::VehicleParams sedan() {
  return models::load_vehicle_params(std::string(MBO_SOURCE_DIR) + "/config/vehicles/sedan.json");
}

int steps_for(double seconds, double dt) { return static_cast<int>(std::lround(seconds / dt)); }

// The sedan driven through a manoeuvre, as TruthDrive does.
struct Drive {
  models::Vehicle v;
  mb::Workspace ws;
  models::ManoeuvreSpec m;
  double dt;
  models::DriverState driver{};
  models::VehicleOutputs out{};
  models::VehicleInputs in{};
  mb::State s;
  int k = 0;

  Drive(models::Vehicle veh, const models::ManoeuvreSpec& man, double step)
      : v(std::move(veh)), ws(v.model), m(man), dt(step) {
    in = models::manoeuvre_inputs(m, v, out, driver, 0, dt);
    s = models::start_vehicle(v, ws, m.start, in);
    models::vehicle_outputs(v, s, out);
  }
  double t() const { return k * dt; }
  void step() {
    ++k;
    in = models::manoeuvre_inputs(m, v, out, driver, t(), dt);
    models::set_inputs(v, in, s);
    if (!mb::step(v.model, s, ws, dt).converged)
      throw std::runtime_error("fidelity: the vehicle failed to converge at t = " + std::to_string(t()) + " s");
    models::vehicle_outputs(v, s, out);
  }
  void run(double seconds) {
    for (int n = steps_for(seconds, dt); n > 0; --n) step();
  }
  // Acceleration of the whole car's centre of gravity (ENU).
  Vector3d cg_acceleration() const {
    const auto& p = v.params;
    Vector3d a = p.mass_kg * s.qdd.segment<3>(v.P0);
    for (int i = 0; i < kWheels; ++i)
      a += p.axles[models::axle_of(i)].unsprung_mass_kg * s.qdd.segment<3>(v.wheels[i].C);
    return a / p.total_mass();
  }
};

models::ManoeuvreSpec held_speed(double speed, double steer, double duration) {
  models::ManoeuvreSpec m;
  m.kind = models::ManoeuvreKind::steady_circle;
  m.start.speed = speed;
  m.steer_rad = steer;
  m.steer_ramp_s = 1.5;
  m.duration_s = duration;
  return m;
}

// The linear single-track model of a vehicle (as tests/models/test_vehicle_handling.cpp).
struct SingleTrack {
  double m, L, lf, lr, Cf, Cr;
  explicit SingleTrack(const models::VehicleParams& p) {
    m = p.total_mass();
    L = p.wheelbase();
    const double xg = p.vehicle_cg().x();
    lf = p.axles[0].x_m - xg;
    lr = xg - p.axles[1].x_m;
    Cf = 2 * p.axles[0].tyre.lateral.stiffness * p.static_wheel_load(models::FL);
    Cr = 2 * p.axles[1].tyre.lateral.stiffness * p.static_wheel_load(models::RL);
  }
  double understeer() const { return m / L * (lr / Cf - lf / Cr); }  // rad s^2/m
  double yaw_rate_gain(double v) const { return v / (L + understeer() * v * v); }
  double sideslip_gain(double v) const { return (lr - lf * m * v * v / (L * Cr)) / (L + understeer() * v * v); }
};

// Integral over [0, h] of the cubic with values w0, w1 and slopes a0, a1 at its ends, by
// 3-point Gauss-Legendre (exact for a cubic): an independent check of the closed form.
double hermite_integral_gauss(double h, double w0, double w1, double a0, double a1) {
  static const double x[3] = {-std::sqrt(0.6), 0, std::sqrt(0.6)}, wt[3] = {5.0 / 9, 8.0 / 9, 5.0 / 9};
  double sum = 0;
  for (int i = 0; i < 3; ++i) {
    const double s = 0.5 * (x[i] + 1);  // in [0, 1]
    const double h00 = 2 * s * s * s - 3 * s * s + 1, h10 = s * s * s - 2 * s * s + s;
    const double h01 = -2 * s * s * s + 3 * s * s, h11 = s * s * s - s * s;
    sum += wt[i] * (h00 * w0 + h10 * h * a0 + h01 * w1 + h11 * h * a1);
  }
  return 0.5 * h * sum;
}

}  // namespace

SpinRate spin_rate(const Options& o, double speed_kmh) {
  Drive d(models::build_vehicle(sedan()), held_speed(speed_kmh / 3.6, 0, 2), o.dt);
  d.run(0.5);
  SpinRate r;
  r.speed_kmh = speed_kmh;
  std::array<double, kWheels> theta0{}, integral{};
  for (int i = 0; i < kWheels; ++i) theta0[i] = d.s.q[d.v.wheels[i].spin];
  for (int n = steps_for(1.0, o.dt); n > 0; --n) {
    std::array<double, kWheels> th{}, w{}, a{};
    for (int i = 0; i < kWheels; ++i) {
      const int slot = d.v.wheels[i].spin;
      th[i] = d.s.q[slot], w[i] = d.s.qd[slot], a[i] = d.s.qdd[slot];
    }
    d.step();
    for (int i = 0; i < kWheels; ++i) {
      const int slot = d.v.wheels[i].spin;
      const double mean_rate = 0.5 * (w[i] + d.s.qd[slot]);
      r.step_error = std::max(r.step_error, std::abs((d.s.q[slot] - th[i]) / (o.dt * mean_rate) - 1));
      integral[i] += hermite_integral_gauss(o.dt, w[i], d.s.qd[slot], a[i], d.s.qdd[slot]);
    }
  }
  for (int i = 0; i < kWheels; ++i)
    r.window_error = std::max(r.window_error, std::abs((d.s.q[d.v.wheels[i].spin] - theta0[i]) / integral[i] - 1));
  r.rate = d.s.qd[d.v.wheels[FL].spin];
  return r;
}

FreeSpin free_spin(const Options& o) {
  auto p = sedan();
  p.gravity_mps2 = 0;
  p.drag_coefficient = 0;
  for (auto& a : p.axles) a.suspension.preload_N = 0.0;
  p.road.z0_m = -10;  // far below: no contact
  const auto v = models::build_vehicle(p);
  const auto& m = v.model;
  mb::Workspace ws(m);
  mb::State s = mb::initial_state(m);
  models::set_inputs(v, {}, s);
  s.q[v.z] = v.cg_chassis.z();  // the design pose: every spring at rest, nothing acts
  for (int i = 0; i < kWheels; ++i)
    if (v.wheels[i].steer >= 0) s.q[v.wheels[i].steer] = s.u[v.in.steer[i]];
  models::pose_vehicle(v, s.q);
  if (!mb::solve_position(m, s.q, s.u, ws).converged) throw std::runtime_error("free_spin: position problem failed");
  const double speed = 80 / 3.6, w = speed / p.axles[0].tyre.radius_m;
  s.qd.setZero();
  s.qd[v.x] = speed;
  for (int i = 0; i < kWheels; ++i) s.qd[v.wheels[i].spin] = w;
  mb::factor_kinematics(m, s.q, ws);
  mb::solve_velocity(m, s.u, s.qd, ws);
  mb::initialize_accelerations(m, s, ws);
  const int slot = v.wheels[FL].spin;
  const double th0 = s.q[slot];
  for (int n = steps_for(1.0, o.dt); n > 0; --n)
    if (!mb::step(m, s, ws, o.dt).converged) throw std::runtime_error("free_spin: step failed");
  FreeSpin r;
  r.rate = w;
  r.angle = s.q[slot] - th0;
  r.expected = w * s.t;
  r.rate_drift = s.qd[slot] / w - 1;
  return r;
}

// The sedan as the linear single-track model sees it: no static toe (which turns the lateral
// load transfer into axle forces), no drag and no rolling resistance (whose moments move load
// from the front axle to the rear at speed, changing the axle cornering stiffnesses).
models::VehicleParams single_track_sedan() {
  auto p = sedan();
  for (auto& a : p.axles) {
    a.toe_in_rad = 0;
    a.tyre.rolling_resistance = 0;
  }
  p.drag_coefficient = 0;
  return p;
}

Cornering cornering(const Options& o, double speed, double ay_g, bool as_shipped) {
  const auto p = as_shipped ? sedan() : single_track_sedan();
  const SingleTrack st(p);
  Cornering c;
  c.speed = speed;
  c.steer = ay_g * kG / speed / st.yaw_rate_gain(speed);
  Drive d(models::build_vehicle(p), held_speed(speed, c.steer, 6), o.dt);
  d.run(5);
  const int last = steps_for(1.0, o.dt);
  double r = 0, beta = 0, v = 0, rmin = 1e9, rmax = -1e9;
  for (int n = 0; n < last; ++n) {
    d.step();
    r += d.out.yaw_rate / last;
    beta += d.out.sideslip / last;
    v += d.out.speed / last;
    rmin = std::min(rmin, d.out.yaw_rate);
    rmax = std::max(rmax, d.out.yaw_rate);
  }
  c.ay_g = r * v / kG;
  c.yaw_rate_gain = r / c.steer;
  c.yaw_rate_gain_ref = st.yaw_rate_gain(v);
  c.sideslip_deg = beta * 180 / M_PI;
  c.sideslip_ref_deg = st.sideslip_gain(v) * c.steer * 180 / M_PI;
  c.spread = (rmax - rmin) / std::abs(r);
  return c;
}

Understeer understeer(const Cornering& a, const Cornering& b) {
  // delta = L / R + K a_y in a steady turn, R = v / r.
  const SingleTrack st(sedan());
  auto excess = [&](const Cornering& c) {
    const double r = c.yaw_rate_gain * c.steer, v = c.ay_g * kG / r;
    return c.steer - st.L * r / v;
  };
  return {(excess(b) - excess(a)) / (b.ay_g - a.ay_g), st.understeer() * kG};
}

Understeer understeer(const Options& o, bool as_shipped) {
  return understeer(cornering(o, 20, 0.05, as_shipped), cornering(o, 20, 0.1, as_shipped));
}

CoastDown coast_down(const Options& o) {
  const auto p = sedan();
  models::ManoeuvreSpec m;
  m.kind = models::ManoeuvreKind::coast_down;
  m.start.speed = 30;
  Drive d(models::build_vehicle(p), m, o.dt);
  double meff = p.total_mass(), fr_force = 0;
  for (int i = 0; i < kWheels; ++i) {
    const auto& w = d.out.wheel[i];
    const auto& ax = p.axles[models::axle_of(i)];
    meff += ax.spin_inertia_kgm2 / (w.loaded_radius * w.effective_radius);
    fr_force += ax.tyre.rolling_resistance * w.Fz;
  }
  const double a = fr_force / meff;
  const double b = 0.5 * p.air_density_kg_per_m3 * p.drag_coefficient * p.frontal_area_m2 / meff;
  auto v_ref = [&](double t) {
    return std::sqrt(a / b) * std::tan(std::atan(30 * std::sqrt(b / a)) - std::sqrt(a * b) * t);
  };
  CoastDown c;
  c.duration = o.short_run ? 10 : 20;
  for (int k = 1; k <= 4; ++k) {
    d.run(c.duration / 4);
    c.speed_end = d.out.speed;
    c.ref_end = v_ref(d.t());
    c.worst = std::max(c.worst, std::abs(c.speed_end / c.ref_end - 1));
  }
  return c;
}

LoadTransfer longitudinal_transfer(const Options& o) {
  const auto p = sedan();
  const auto veh = models::build_vehicle(p);
  const double M = p.total_mass();
  // Where the centre of gravity G stands between the axles' contacts (along the heading), and
  // the front axle's load: the model's own at rest, then under way.
  struct Lever {
    double lr = 0, L = 0;
  };
  auto lever = [](const Drive& d) {
    const double c = std::cos(d.out.yaw), sn = std::sin(d.out.yaw);
    auto along = [&](const Vector3d& r) { return c * r.x() + sn * r.y(); };
    const double xf = 0.5 * (along(d.out.wheel[0].contact_point) + along(d.out.wheel[1].contact_point));
    const double xr = 0.5 * (along(d.out.wheel[2].contact_point) + along(d.out.wheel[3].contact_point));
    return Lever{along(d.out.cg_position) - xr, xf - xr};
  };
  models::ManoeuvreSpec rest;
  rest.kind = models::ManoeuvreKind::constant;
  double front_rest = 0;
  Lever lever_rest;
  {
    Drive r(veh, rest, o.dt);
    front_rest = r.out.wheel[0].Fz + r.out.wheel[1].Fz;
    lever_rest = lever(r);
  }
  models::ManoeuvreSpec m;
  m.kind = models::ManoeuvreKind::constant;
  m.start.speed = 10;
  m.drive_torque_Nm = 500;
  m.driven = {false, false, true, true};
  Drive d(veh, m, o.dt);
  d.run(o.short_run ? 1.5 : 2.5);
  const int n = steps_for(0.5, o.dt);
  LoadTransfer lt;
  for (int k = 0; k < n; ++k) {
    d.step();
    const double c = std::cos(d.out.yaw), sn = std::sin(d.out.yaw);
    const Vector3d acc = d.cg_acceleration();
    const double ax = c * acc.x() + sn * acc.y();
    const double h = d.out.cg_position.z() - d.v.road->height(d.out.cg_position.x(), d.out.cg_position.y());
    const Lever l = lever(d);
    // What the static formula leaves out, about the lateral axis: the spin angular momentum
    // J (theta_ddot + pitch_ddot) of the wheels and the chassis' I_yy pitch_ddot, the
    // rolling-resistance moments on the wheels, the drag's moment about the ground (it acts at
    // the sprung centre of gravity) and the shift of G between the axles as the body pitches.
    double dH = p.inertia_kgm2(1, 1) * d.s.qdd[d.v.pitch], roll = 0;
    for (int i = 0; i < kWheels; ++i) {
      models::TyreResult tr;
      d.v.tyres[i]->compute(d.s.q, d.s.qd, d.s.u, tr);
      dH += p.axles[models::axle_of(i)].spin_inertia_kgm2 * (d.s.qdd[d.v.wheels[i].spin] + d.s.qdd[d.v.pitch]);
      roll += tr.rolling_torque;
    }
    const double v = d.out.speed;
    const double drag = 0.5 * p.air_density_kg_per_m3 * p.drag_coefficient * p.frontal_area_m2 * v * v *
                        (d.s.q[d.v.z] - d.v.road->height(d.s.q[d.v.x], d.s.q[d.v.y]));
    lt.accel += ax / n;
    lt.measured += (d.out.wheel[0].Fz + d.out.wheel[1].Fz - front_rest) / n;
    lt.formula += -M * ax * h / l.L / n;
    lt.balance +=
        (M * p.gravity_mps2 * (l.lr / l.L - lever_rest.lr / lever_rest.L) - (M * ax * h + drag + dH - roll) / l.L) / n;
  }
  return lt;
}

LoadTransfer lateral_transfer(const Options& o) {
  const auto p = sedan();
  const SingleTrack st(p);
  const double speed = 20, steer = 0.4 * kG / speed / st.yaw_rate_gain(speed);
  Drive d(models::build_vehicle(p), held_speed(speed, steer, 6), o.dt);
  d.run(o.short_run ? 3.5 : 5);
  const int n = steps_for(0.5, o.dt);
  LoadTransfer lt;
  double moment = 0, ay = 0, h = 0, gyro = 0;
  const double M = p.total_mass();
  for (int k = 0; k < n; ++k) {
    d.step();
    const double c = std::cos(d.out.yaw), sn = std::sin(d.out.yaw);
    const Vector3d G = d.out.cg_position, acc = d.cg_acceleration();
    ay += (-sn * acc.x() + c * acc.y()) / n;
    h += (G.z() - d.v.road->height(G.x(), G.y())) / n;
    for (int i = 0; i < kWheels; ++i) {
      const Vector3d r = d.out.wheel[i].contact_point - G;
      moment += d.out.wheel[i].Fz * (-sn * r.x() + c * r.y()) / n;
      // the spin angular momentum J Omega a (a to the left) turned by the yaw rate r:
      // d/dt = r z x (J Omega y) = -r J Omega x
      gyro += -d.out.yaw_rate * p.axles[models::axle_of(i)].spin_inertia_kgm2 * d.out.wheel[i].wheel_speed / n;
    }
  }
  // Moments about the car's centre of gravity, x forward: sum (y_i - y_G) Fz_i + h sum Fy_i =
  // dH_x/dt, sum Fy_i = M a_y.
  lt.accel = ay;
  lt.measured = moment;
  lt.formula = -M * ay * h;
  lt.balance = -M * ay * h + gyro;
  return lt;
}

Bounce bounce(const Options& o) {
  auto p = sedan();
  p.drag_coefficient = 0;
  for (auto& a : p.axles) {
    a.suspension.damper.x = {-1, 1};
    a.suspension.damper.y = {0, 0};
    a.tyre.radial_damping_Ns_per_m = 0;
    a.tyre.rolling_resistance = 0;
    a.tyre.mu = 1e-6;  // no tangential forces: nothing dissipates
  }
  const auto v = models::build_vehicle(p);
  const auto& m = v.model;
  mb::Workspace ws(m);
  mb::State s = models::start_vehicle(v, ws, {});
  auto energy = [&] {
    ws.x.head(m.nq) = s.q;
    double E = mb::kinetic_energy(m, ws.x, s.qd) + mb::potential_energy(m, ws.x);
    for (int i = 0; i < kWheels; ++i) {  // the tyres' radial springs
      models::TyreResult tr;
      v.tyres[i]->compute(s.q, s.qd, s.u, tr);
      const double k = p.axles[models::axle_of(i)].tyre.radial_stiffness_N_per_m;
      for (int c = 0; c < tr.n; ++c) {
        const double pen = std::max(tr.c[c].contact.penetration, 0.0);
        E += 0.5 * k * pen * pen;
      }
    }
    return E;
  };
  const double E_rest = energy();
  s.q[v.z] += 0.02;
  models::pose_vehicle(v, s.q);
  if (!mb::solve_position(m, s.q, s.u, ws).converged) throw std::runtime_error("bounce: position problem failed");
  s.qd.setZero();
  mb::initialize_accelerations(m, s, ws);
  Bounce b;
  const double E0 = energy();
  b.bounce_energy = E0 - E_rest;
  b.duration = o.short_run ? 4 : 10;
  for (int n = steps_for(b.duration, o.dt); n > 0; --n) {
    if (!mb::step(m, s, ws, o.dt).converged) throw std::runtime_error("bounce: step failed");
    b.drift = std::max(b.drift, std::abs(energy() - E0));
  }
  return b;
}

CountSpeed count_speed(const Options& o, double speed_kmh) {
  Drive d(models::build_vehicle(sedan()), held_speed(speed_kmh / 3.6, 0, 12), o.dt);
  exp::SensorSimConfig cfg;  // 40 teeth at 500 Hz, 16-bit counters
  exp::SensorSim sim(d.v, cfg, 1);
  sim.start(d.s);
  std::vector<Measurement> meas;
  CountSpeed c;
  c.speed_kmh = speed_kmh;
  c.duration = o.short_run ? 3 : 10;
  const double settle = 1;
  bool first = true;
  long long total = 0, last_raw = 0;
  double t0 = 0, t1 = 0, th0 = 0, th1 = 0, speed = 0, slip = 0;
  int nsum = 0;
  while (d.t() < settle + c.duration - 0.5 * o.dt) {
    d.step();
    meas.clear();
    sim.sample(d.t(), d.s, d.in, meas);
    if (d.t() < settle - 0.5 * o.dt) continue;
    speed += d.out.speed, slip += d.out.wheel[FL].slip_ratio, ++nsum;
    for (const auto& mm : meas) {
      if (mm.channel != Channel::wheel_count_fl) continue;
      const auto raw = static_cast<long long>(mm.value);
      if (first) {
        first = false;
        t0 = d.t(), th0 = d.s.q[d.v.wheels[FL].spin];
      } else {
        const long long mod = static_cast<long long>(cfg.modulus);
        long long dc = ((raw - last_raw) % mod + mod) % mod;
        if (dc > mod / 2) dc -= mod;
        total += dc;
        t1 = d.t(), th1 = d.s.q[d.v.wheels[FL].spin];
      }
      last_raw = raw;
    }
  }
  c.rate_counts = total * 2 * M_PI / cfg.teeth / (t1 - t0);
  c.rate_truth = (th1 - th0) / (t1 - t0);
  c.speed_counts = c.rate_counts * d.out.wheel[FL].effective_radius;
  c.speed_truth = speed / nsum;
  c.slip = slip / nsum;
  return c;
}

HallExactness hall_exactness(const Options& o) {
  auto sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/vehicle_braking.json");
  sc.dt = o.dt;
  exp::TruthDrive drive(sc, 1);
  const auto& v = *sc.truth;
  const double tooth = 2 * M_PI / sc.sensors.teeth;
  const auto mod = static_cast<long long>(sc.sensors.modulus);
  std::array<double, kWheels> angle{}, w{}, a{};
  for (int i = 0; i < kWheels; ++i) {
    const int slot = v.wheels[i].spin;
    angle[i] = drive.state().q[slot], w[i] = drive.state().qd[slot], a[i] = drive.state().qdd[slot];
  }
  HallExactness h;
  std::vector<Measurement> meas;
  const double until = o.short_run ? 2.0 : 4.0;  // the stop begins at 1 s; ABS cycles after it
  while (drive.t() < until - 0.5 * o.dt) {
    const double t_prev = drive.t();
    meas.clear();
    drive.advance(meas);
    const double dt = drive.t() - t_prev;
    const auto& s = drive.state();
    for (int i = 0; i < kWheels; ++i) {
      const int slot = v.wheels[i].spin;
      angle[i] += hermite_integral_gauss(dt, w[i], s.qd[slot], a[i], s.qdd[slot]);
      w[i] = s.qd[slot], a[i] = s.qdd[slot];
      h.model_angle_gap = std::max(h.model_angle_gap, std::abs(drive.sensors().wheel_angles()[i] - s.q[slot]));
    }
    for (const auto& m : meas) {
      const int i = static_cast<int>(m.channel) - static_cast<int>(Channel::wheel_count_fl);
      if (i < 0 || i >= kWheels) continue;
      ++h.samples;
      const double x = angle[i] / tooth;
      if (std::abs(x - std::round(x)) < 1e-9 / tooth) {
        ++h.ambiguous;
        continue;
      }
      const auto n = static_cast<long long>(std::floor(x));
      if (static_cast<long long>(m.value) != ((n % mod) + mod) % mod) ++h.mismatches;
    }
  }
  return h;
}

namespace {

// Accumulates an angle coordinate's steps against its rate.
struct LagMeter {
  double dt;
  RotationLag r;
  void add(double a0, double a1, double w0, double w1) {
    const double mean = 0.5 * (w0 + w1);
    r.accumulated += mean * dt - (a1 - a0);
    if (std::abs(mean) > r.max_rate) {
      r.max_rate = std::abs(mean);
      r.step_shortfall = std::abs(mean) > 1e-9 ? 1 - (a1 - a0) / (mean * dt) : 0.0;
      r.expected = mean * mean * dt * dt / 12;
    }
  }
};

// A mechanism scenario's truth run at dt; returns the meter of the coordinate `angle`.
RotationLag mechanism(const exp::Scenario& sc, const std::string& angle, double dt, double duration, bool fine) {
  auto run = [&](double h, LagMeter* meter) {
    exp::SimulatedModel t(sc.truth, sc.truth_z0, sc.truth_zd0);
    exp::apply_inputs(sc.truth_inputs, 0, t.s);
    t.start();
    const int slot = sc.truth.coordinate(angle);
    for (int n = 1, steps = steps_for(duration, h); n <= steps; ++n) {
      const double a0 = t.s.q[slot], w0 = t.s.qd[slot];
      exp::apply_inputs(sc.truth_inputs, n * h, t.s);
      if (!mb::step(sc.truth, t.s, t.ws, h).converged) throw std::runtime_error("mechanism: step failed");
      if (meter) meter->add(a0, t.s.q[slot], w0, t.s.qd[slot]);
    }
    return t.s.q[slot];
  };
  LagMeter m{dt, {}};
  const double coarse = run(dt, &m);
  if (fine) m.r.against_fine = coarse - run(dt / 20, nullptr);
  return m.r;
}

}  // namespace

RotationLag chassis_yaw(const Options& o) {
  const auto p = sedan();
  Drive d(models::build_vehicle(p), held_speed(5, p.max_steer_rad, 6), o.dt);
  LagMeter m{o.dt, {}};
  for (int n = steps_for(6, o.dt); n > 0; --n) {
    const double a0 = d.s.q[d.v.yaw], w0 = d.s.qd[d.v.yaw];
    d.step();
    m.add(a0, d.s.q[d.v.yaw], w0, d.s.qd[d.v.yaw]);
  }
  return m.r;
}

RotationLag steering(const Options& o) {
  models::ManoeuvreSpec lc;
  lc.kind = models::ManoeuvreKind::double_lane_change;
  lc.start.speed = 80 / 3.6;
  Drive d(models::build_vehicle(sedan()), lc, o.dt);
  LagMeter m{o.dt, {}};
  const int slot = d.v.wheels[FL].steer;
  for (int n = steps_for(8, o.dt); n > 0; --n) {
    const double a0 = d.s.q[slot], w0 = d.s.qd[slot];
    d.step();
    m.add(a0, d.s.q[slot], w0, d.s.qd[slot]);
  }
  return m.r;
}

RotationLag fourbar_crank(const Options& o, bool fine) {
  const auto sc = exp::load_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/fourbar_sinigaglia.json");
  return mechanism(sc, "theta", o.dt, o.short_run ? 5 : 10, fine);
}

RotationLag slider_crank(const Options& o, bool fine) {
  exp::Scenario sc;
  sc.truth = mb::load_model(std::string(MBO_SOURCE_DIR) + "/config/models/slider_crank.json");
  sc.truth_z0 = {0.0};
  sc.truth_zd0 = {0.0};
  return mechanism(sc, "theta", o.dt, o.short_run ? 5 : 10, fine);
}

}  // namespace mbo::fidelity
