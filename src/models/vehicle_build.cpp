// The vehicle's topology in the engine's vocabulary (see vehicle.hpp for the description).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mbobserver/mb/builder.hpp"
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/forces.hpp"
#include "mbobserver/mb/kinematics.hpp"
#include "mbobserver/models/aero.hpp"
#include "mbobserver/models/vehicle.hpp"

namespace mbo::models {
namespace {

using Eigen::Matrix3d;
using Eigen::Vector3d;
using mb::CombinationTerm;
using mb::Factor;
using mb::FactorKind;

Matrix3d rot_zyx(double yaw, double pitch, double roll) {
  return (Eigen::AngleAxisd(yaw, Vector3d::UnitZ()) * Eigen::AngleAxisd(pitch, Vector3d::UnitY()) *
          Eigen::AngleAxisd(roll, Vector3d::UnitX()))
      .toRotationMatrix();
}

// Carrier frame relative to the chassis: E = Rz(delta) Rx(tilt); columns ex', ey', ez'.
Matrix3d carrier_frame(double delta, double tilt) {
  return (Eigen::AngleAxisd(delta, Vector3d::UnitZ()) * Eigen::AngleAxisd(tilt, Vector3d::UnitX())).toRotationMatrix();
}

// One chassis-axis component of a carrier axis: c * g(delta) along basis vector `basis`
// (0 = u, 1 = v, 2 = w), g = 1, cos or sin.
struct AxisTerm {
  double c;
  int kind;  // 0: constant, 1: cos(delta), 2: sin(delta)
  int basis;
};
using Axis = std::vector<AxisTerm>;

// ex' = (cd, sd, 0); ey' = (-sd ct, cd ct, st); ez' = (sd st, -cd st, ct), t = tilt.
std::array<Axis, 3> carrier_axes(double tilt) {
  const double ct = std::cos(tilt), st = std::sin(tilt);
  return {Axis{{1, 1, 0}, {1, 2, 1}}, Axis{{-ct, 2, 0}, {ct, 1, 1}, {st, 0, 2}},
          Axis{{st, 2, 0}, {-st, 1, 1}, {ct, 0, 2}}};
}

}  // namespace

mb::LinearVec Vehicle::chassis_point(const Vector3d& p) const {
  const Vector3d c = chassis_local(p);
  mb::LinearVec r;
  r.terms.push_back({P0, 1, 0});
  if (c.x() != 0) r.terms.push_back({u, c.x(), 0});
  if (c.y() != 0) r.terms.push_back({this->v, c.y(), 0});
  if (c.z() != 0) r.terms.push_back({w, c.z(), 0});
  return r;
}

Vehicle build_vehicle(const VehicleParams& p) { return build_vehicle(p, p.road); }

Vehicle build_vehicle(const VehicleParams& p, const Road& road_in) {
  Vehicle veh;
  veh.params = p;
  veh.road = std::make_shared<const Road>(road_in);
  veh.cg_chassis = p.cg_m;
  veh.cg_vehicle = p.vehicle_cg();

  mb::ModelBuilder b(p.name, 3);
  b.set_gravity({0, 0, -p.gravity_mps2});
  // Chassis: P0 at the sprung CG, yaw/pitch/roll, triad (design pose: vehicle frame = ground).
  const int P0 = b.point("P0", p.cg_m);
  const int yaw = b.scalar("yaw", 0, mb::ScalarKind::angle);
  const int pitch = b.scalar("pitch", 0, mb::ScalarKind::angle);
  const int roll = b.scalar("roll", 0, mb::ScalarKind::angle);
  const int u = b.vector("u", Vector3d::UnitX());
  const int v = b.vector("v", Vector3d::UnitY());
  const int w = b.vector("w", Vector3d::UnitZ());
  b.orientation_zyx(u, v, w, yaw, pitch, roll);
  mb::BodySpec ch;
  ch.name = "chassis";
  ch.mass = p.mass_kg;
  ch.origin = P0;
  ch.basis = {{u, -1}, {v, -1}, {w, -1}};
  ch.points[P0] = Vector3d::Zero();
  ch.vectors[u] = Vector3d::UnitX();
  ch.vectors[v] = Vector3d::UnitY();
  ch.vectors[w] = Vector3d::UnitZ();
  ch.inertia = p.inertia_kgm2;
  ch.rigid_constraints = false;  // the orientation constraints already make u, v, w a triad
  const int chassis = b.body(ch);
  const int U = b.entity(u).slot, V = b.entity(v).slot, W = b.entity(w).slot;
  const int basis_slot[3] = {U, V, W};

  // Inputs
  VehicleInputIndex in;
  for (int i = 0; i < kWheels; ++i) {
    if (!p.axles[axle_of(i)].steered) continue;
    const std::string n = kWheelNames[i];
    in.steer[i] = b.input("steer_" + n);
    in.steer_rate[i] = b.input("steer_rate_" + n);
    in.steer_accel[i] = b.input("steer_accel_" + n);
  }
  for (int i = 0; i < kWheels; ++i) in.drive[i] = b.input(std::string("drive_") + kWheelNames[i]);
  for (int i = 0; i < kWheels; ++i) in.brake[i] = b.input(std::string("brake_") + kWheelNames[i]);
  in.mu = b.input("mu");
  in.wind_x = b.input("wind_x");
  in.wind_y = b.input("wind_y");
  in.payload_front = b.input("payload_front");
  in.payload_rear = b.input("payload_rear");
  in.slip_stiffness = b.input("slip_stiffness");
  in.cornering_front = b.input("cornering_front");
  in.cornering_rear = b.input("cornering_rear");
  b.point_mass_input(chassis, p.payload_front() - p.cg_m, in.payload_front);
  b.point_mass_input(chassis, p.payload_rear() - p.cg_m, in.payload_rear);
  // A payload's settled weight on each tyre, by the lever rule between the axles and half to
  // each side (the payload points are on the centre line), as a scale of its static load.
  for (int i = 0; i < kWheels; ++i) in.tyre_load[i] = b.input(std::string("tyre_load_") + kWheelNames[i]);
  for (auto [input, at] :
       {std::pair{in.payload_front, p.payload_front()}, std::pair{in.payload_rear, p.payload_rear()}}) {
    for (int i = 0; i < kWheels; ++i)
      b.settled_load(input, in.tyre_load[i], p.wheel_load_per_kg(i, at.x()) / p.static_wheel_load(i));
  }

  std::array<int, kWheels> travel{}, spin{};
  for (int i = 0; i < kWheels; ++i) {
    const AxleParams& ax = p.axles[axle_of(i)];
    const std::string n = kWheelNames[i];
    const double side = side_of(i);
    WheelGeometry& g = veh.geometry[i];
    g.strut_point = p.wheel_centre(i) - p.cg_m;
    g.strut_axis = Vector3d(ax.suspension.axis.x(), side * ax.suspension.axis.y(), ax.suspension.axis.z());
    g.toe = -side * ax.toe_in_rad;  // toe-in turns the left wheel's nose right
    g.tilt = -side * ax.camber_rad;  // negative camber tilts the left wheel's top to -y
    g.static_rolling_radius = ax.tyre.effective_radius(p.static_wheel_load(i) / ax.tyre.radial_stiffness_N_per_m);

    // Strut: C = P0 + strut_point + s axis (chassis axes), s = travel (+ bump).
    const Vector3d C0 = p.cg_m + g.strut_point;
    const int C = b.point("C_" + n, C0);
    travel[i] = b.scalar("travel_" + n, 0, mb::ScalarKind::distance);
    b.point_on_line(C, b.body_point(chassis, g.strut_point), b.body_vector(chassis, g.strut_axis), travel[i]);

    // Steering angle: driven on steered wheels, a constant folded into coefficients elsewhere.
    int delta = -1;
    if (ax.steered) {
      delta = b.scalar("steer_" + n, g.toe, mb::ScalarKind::angle);
      b.driving(delta, in.steer[i], in.steer_rate[i], in.steer_accel[i]);
    }
    spin[i] = b.scalar("spin_" + n, 0, mb::ScalarKind::angle);

    // Carrier triad a = ey', r = ex', s = ez'. The wheel turns relative to it by theta, a rotor
    // coordinate (mb::Rotor): its spin is a scalar integrated with its rate, not a rotation of
    // unit vectors, which the trapezoidal rule would shorten to 2 atan(w dt / 2) per step.
    const Matrix3d E0 = carrier_frame(g.toe, g.tilt);
    const int a = b.vector("a_" + n, E0.col(1));
    const int r = b.vector("r_" + n, E0.col(0));
    const int s = b.vector("s_" + n, E0.col(2));
    const auto axes = carrier_axes(g.tilt);
    const int D = delta >= 0 ? b.entity(delta).slot : -1;
    const int T = b.entity(spin[i]).slot;
    // Terms of -axis for a combination "vec - axis = 0".
    auto append = [&](std::vector<CombinationTerm>& terms, const Axis& axis) {
      for (const auto& t : axis) {
        CombinationTerm ct;
        ct.c = -t.c;
        ct.nfactors = 0;
        if (t.kind > 0) {
          if (D >= 0) {
            ct.factors[ct.nfactors++] = {D, t.kind == 1 ? FactorKind::cos : FactorKind::sin};
          } else {
            ct.c *= t.kind == 1 ? std::cos(g.toe) : std::sin(g.toe);
          }
        }
        ct.vec = {basis_slot[t.basis], 1, 0};
        if (ct.c != 0) terms.push_back(ct);
      }
    };
    auto self = [&](int e) { return CombinationTerm{1, 0, {}, {b.entity(e).slot, 1, 0}}; };
    std::vector<CombinationTerm> ta{self(a)}, tr{self(r)}, ts{self(s)};
    append(ta, axes[1]);
    append(tr, axes[0]);
    append(ts, axes[2]);
    b.combination(std::move(ta), "axle " + n);
    b.combination(std::move(tr), "radial r " + n);
    b.combination(std::move(ts), "radial s " + n);

    mb::BodySpec wb;
    wb.name = "wheel_" + n;
    wb.mass = ax.unsprung_mass_kg;
    wb.origin = C;
    wb.basis = {{a, -1}, {r, -1}, {s, -1}};
    wb.points[C] = Vector3d::Zero();
    wb.vectors[a] = Vector3d::UnitY();
    wb.vectors[r] = Vector3d::UnitX();
    wb.vectors[s] = Vector3d::UnitZ();  // r x a = s
    wb.inertia = Vector3d(ax.diametral_inertia_kgm2, ax.spin_inertia_kgm2, ax.diametral_inertia_kgm2).asDiagonal();
    wb.rigid_constraints = false;
    b.body(wb);
    b.rotor(spin[i], r, s, ax.spin_inertia_kgm2);  // about s x r = a

    // Suspension forces on the travel: spring with preload, damper table, stops.
    const auto& su = ax.suspension;
    const int ts_slot = b.entity(travel[i]).slot;
    mb::CoordinateSpringDamper spring;
    spring.slot = ts_slot;
    spring.k = su.spring_N_per_m;
    spring.preload = su.preload_N ? *su.preload_N : p.static_sprung_load(i) / g.strut_axis.z();
    b.coordinate_spring_damper(spring);
    mb::CoordinateSpringDamper damper;
    damper.slot = ts_slot;
    damper.damper = su.damper;
    b.coordinate_spring_damper(damper);
    if (su.bump_stiffness_N_per_m > 0) {
      mb::CoordinateSpringDamper stop;
      stop.slot = ts_slot;
      const double c = su.bump_clearance_m;
      stop.spring.x = {c - 1, c, c + 1};
      stop.spring.y = {0, 0, su.bump_stiffness_N_per_m};
      b.coordinate_spring_damper(stop);
    }
    if (su.rebound_stiffness_N_per_m > 0) {
      mb::CoordinateSpringDamper stop;
      stop.slot = ts_slot;
      const double c = su.rebound_clearance_m;
      stop.spring.x = {-c - 1, -c, -c + 1};
      stop.spring.y = {-su.rebound_stiffness_N_per_m, 0, 0};
      b.coordinate_spring_damper(stop);
    }
    if (i % 2 == 1 && su.anti_roll_N_per_m > 0) {
      mb::CoordinateSpringDamper bar;
      bar.slot = b.entity(travel[i - 1]).slot;
      bar.slot2 = ts_slot;
      bar.k = su.anti_roll_N_per_m;
      b.coordinate_spring_damper(bar);
    }
    // Drive torque between wheel and carrier (the reaction is on the chassis).
    b.coordinate_force({T, 0, in.drive[i], 1});

    WheelSlots& ws = veh.wheels[i];
    ws.C = b.entity(C).slot;
    ws.a = b.entity(a).slot;
    ws.r = b.entity(r).slot;
    ws.s = b.entity(s).slot;
    ws.travel = ts_slot;
    ws.spin = T;
    ws.steer = D;
    WheelCoordinates wc{ws.C, ws.a, ws.r, ws.s, ws.spin};
    auto tyre = std::make_shared<const TyreForce>(
        ax.tyre, veh.road, wc, in.brake[i], ax.brake_gain_Nm_per_Pa, in.mu, in.slip_stiffness,
        axle_of(i) == 0 ? in.cornering_front : in.cornering_rear, in.tyre_load[i]);
    veh.tyres[i] = tyre;
    b.custom_force(tyre);
  }

  const double cda = p.drag_coefficient * p.frontal_area_m2;
  if (cda > 0) {
    Vector3d cp = p.pressure_centre_m ? Vector3d(*p.pressure_centre_m - p.cg_m) : Vector3d::Zero();
    b.custom_force(std::make_shared<const AeroDrag>(0.5 * p.air_density_kg_per_m3 * cda, cp, b.entity(P0).slot, U, V, W,
                                                    in.wind_x, in.wind_y));
  }

  std::vector<int> z{b.entity(P0).slot,  b.entity(P0).slot + 1, b.entity(P0).slot + 2,
                     b.entity(yaw).slot, b.entity(pitch).slot,  b.entity(roll).slot};
  for (int i = 0; i < kWheels; ++i) z.push_back(b.entity(travel[i]).slot);
  for (int i = 0; i < kWheels; ++i) z.push_back(b.entity(spin[i]).slot);
  b.independent(z);

  // Solver settings (vehicle file, defaults in VehicleParams). Newton stops when
  // ||dq||_inf <= 1e-6 (m, rad, unit-vector components). It converges linearly here, by about
  // 100 per iteration at 80 km/h (the tangent agrees with a finite-difference Jacobian of the
  // residual to 4e-5; the rate is the augmented-Lagrangian update's), so the error left is
  // ~1e-8, below the trapezoidal rule's own local error. With the engine's extrapolating
  // predictor and the wheels as rotors that is one iteration per step in the lane change (2.6
  // in the ABS stop; the observer's model, moved by its corrections, about 1.9). Measured over
  // the ISO lane change against tolerance 1e-10: positions within 6e-8 m, sideslip 2e-7 deg,
  // wheel speeds 7e-7 rad/s -- against 2e-2 m, 2.1e-3 deg and 0.04 rad/s between dt = 2 ms and
  // 1 ms (the driver's too). An undamped bounce loses 1.6 % of its energy in 10 s at this
  // tolerance, none at 1e-7 (tests/fidelity). The penalty keeps the engine's automatic scaling
  // (100 times the largest mass-matrix diagonal over dt^2/4).
  b.solver().tolerance = p.newton_tolerance;
  b.solver().max_iterations = p.newton_max_iterations;
  // Modified Newton (mb::step): fewer factorisations where the tyres saturate (ABS braking,
  // the circle); bench/bench_observer.cpp's FullNewton variant measures the gain (CHANGELOG
  // 0.10). The lane change's steps mostly take one iteration, so it gains nothing.
  b.solver().refresh_contraction = p.newton_refresh_contraction;
  b.solver().penalty_ratio = p.penalty_ratio;

  veh.model = std::move(b).build();
  const auto& m = veh.model;
  veh.P0 = m.entities[P0].slot;
  veh.x = veh.P0, veh.y = veh.P0 + 1, veh.z = veh.P0 + 2;
  veh.yaw = m.entities[yaw].slot;
  veh.pitch = m.entities[pitch].slot;
  veh.roll = m.entities[roll].slot;
  veh.u = m.entities[u].slot;
  veh.v = m.entities[v].slot;
  veh.w = m.entities[w].slot;
  veh.in = in;
  return veh;
}

SteerAngles ackermann(const VehicleParams& p, double delta) {
  // Inner and outer wheel of a turn about a centre on the rear axle's line: tan(delta_i) =
  // L tan(delta) / (L -+ h tan(delta)), h = half the front track; blended with parallel
  // steering by the Ackermann fraction.
  SteerAngles r;
  const double L = p.wheelbase(), h = p.axles[0].track_m / 2, A = p.ackermann;
  auto angle = [&](double d, double side) {
    double t = std::tan(d);
    return std::atan2(L * t, L - side * h * t);
  };
  auto slope = [&](double d, double side) {
    double t = std::tan(d), den = L - side * h * t, y = L * t / den;
    return 1 / (1 + y * y) * L * L / (den * den) * (1 + t * t);
  };
  for (int k = 0; k < 2; ++k) {
    const double side = k == 0 ? 1 : -1;  // left wheel: inner in a left turn
    const double e = 1e-5;
    r.angle[k] = delta + A * (angle(delta, side) - delta);
    r.d1[k] = 1 + A * (slope(delta, side) - 1);
    r.d2[k] = A * (slope(delta + e, side) - slope(delta - e, side)) / (2 * e);
  }
  return r;
}

void set_inputs(const Vehicle& v, const VehicleInputs& in, mb::State& s) {
  const auto& p = v.params;
  double d = std::clamp(in.steer, -p.max_steer_rad, p.max_steer_rad);
  double rate = std::abs(in.steer) > p.max_steer_rad ? 0.0 : in.steer_rate;
  double acc = std::abs(in.steer) > p.max_steer_rad ? 0.0 : in.steer_accel;
  SteerAngles sa = ackermann(p, d);
  for (int i = 0; i < 2; ++i) {
    if (v.in.steer[i] < 0) continue;
    s.u[v.in.steer[i]] = sa.angle[i] + v.geometry[i].toe;
    s.u[v.in.steer_rate[i]] = sa.d1[i] * rate;
    s.u[v.in.steer_accel[i]] = sa.d1[i] * acc + sa.d2[i] * rate * rate;
  }
  for (int i = 0; i < kWheels; ++i) {
    s.u[v.in.drive[i]] = in.drive_torque[i];
    s.u[v.in.brake[i]] = std::max(in.brake_pressure[i], 0.0);
  }
  s.u[v.in.mu] = std::isfinite(in.mu) && in.mu > 0 ? in.mu : 0.0;
  s.u[v.in.wind_x] = in.wind_x;
  s.u[v.in.wind_y] = in.wind_y;
  s.u[v.in.payload_front] = in.payload_front;
  s.u[v.in.payload_rear] = in.payload_rear;
  s.u[v.in.slip_stiffness] = in.slip_stiffness;
  s.u[v.in.cornering_front] = in.cornering_front;
  s.u[v.in.cornering_rear] = in.cornering_rear;
}

void pose_vehicle(const Vehicle& v, Eigen::VectorXd& q) {
  const Matrix3d R = rot_zyx(q[v.yaw], q[v.pitch], q[v.roll]);
  const Vector3d P0 = q.segment<3>(v.P0);
  q.segment<3>(v.u) = R.col(0);
  q.segment<3>(v.v) = R.col(1);
  q.segment<3>(v.w) = R.col(2);
  for (int i = 0; i < kWheels; ++i) {
    const auto& g = v.geometry[i];
    const auto& ws = v.wheels[i];
    const double delta = ws.steer >= 0 ? q[ws.steer] : g.toe;
    q.segment<3>(ws.C) = P0 + R * (g.strut_point + q[ws.travel] * g.strut_axis);
    const Matrix3d E = R * carrier_frame(delta, g.tilt);
    q.segment<3>(ws.a) = E.col(1);
    q.segment<3>(ws.r) = E.col(0);
    q.segment<3>(ws.s) = E.col(2);
  }
}

namespace {

// R' Q at zero velocity on the given independent coordinates (slots), after solving positions.
bool reduced_forces(const Vehicle& v, mb::State& s, mb::Workspace& ws, const std::vector<int>& cols,
                    Eigen::VectorXd& g) {
  const auto& m = v.model;
  if (!mb::solve_position(m, s.q, s.u, ws).converged) return false;
  mb::compute_R(m, ws);
  ws.xd.setZero();
  mb::generalized_forces(m, ws.x, ws.xd, s.u, s.t, false, ws.forces);
  for (std::size_t j = 0; j < cols.size(); ++j) {
    const int zj = static_cast<int>(std::find(m.z.begin(), m.z.end(), cols[j]) - m.z.begin());
    g[j] = ws.R.col(zj).dot(ws.forces.Q + s.Q_correction);
  }
  return true;
}

}  // namespace

double settle(const Vehicle& v, mb::State& s, mb::Workspace& ws) {
  std::vector<int> cols{v.z, v.pitch, v.roll};
  for (const auto& w : v.wheels) cols.push_back(w.travel);
  const int n = static_cast<int>(cols.size());
  s.qd.setZero();
  Eigen::VectorXd g(n), gp(n), dz(n);
  Eigen::MatrixXd J(n, n);
  double norm = 0;
  for (int it = 0; it < 40; ++it) {
    if (!reduced_forces(v, s, ws, cols, g)) throw std::runtime_error("settle: position problem failed");
    norm = g.lpNorm<Eigen::Infinity>();
    if (norm < 1e-6) break;
    const Eigen::VectorXd q0 = s.q;
    for (int j = 0; j < n; ++j) {
      const double e = 1e-7;
      s.q = q0;
      s.q[cols[j]] += e;
      if (!reduced_forces(v, s, ws, cols, gp)) throw std::runtime_error("settle: position problem failed");
      J.col(j) = (gp - g) / e;
    }
    s.q = q0;
    dz = -J.fullPivLu().solve(g);
    const double scale = std::max(1.0, dz.lpNorm<Eigen::Infinity>() / 0.05);  // at most 5 cm / rad per step
    for (int j = 0; j < n; ++j) s.q[cols[j]] += dz[j] / scale;
  }
  if (!reduced_forces(v, s, ws, cols, g)) throw std::runtime_error("settle: position problem failed");
  return g.lpNorm<Eigen::Infinity>();
}

mb::State start_vehicle(const Vehicle& v, mb::Workspace& ws, const VehicleStart& st, const VehicleInputs& inputs) {
  const auto& m = v.model;
  mb::State s = mb::initial_state(m);
  set_inputs(v, inputs, s);
  s.q[v.x] = st.x;
  s.q[v.y] = st.y;
  s.q[v.z] = v.road->height(st.x, st.y) + v.cg_chassis.z();
  s.q[v.yaw] = st.yaw;
  s.q[v.pitch] = s.q[v.roll] = 0;
  for (int i = 0; i < kWheels; ++i) {
    const auto& w = v.wheels[i];
    s.q[w.travel] = 0;
    s.q[w.spin] = 0;
    if (w.steer >= 0) s.q[w.steer] = s.u[v.in.steer[i]];
  }
  pose_vehicle(v, s.q);
  if (!mb::solve_position(m, s.q, s.u, ws).converged)
    throw std::runtime_error("start_vehicle: position problem failed");
  double residual = settle(v, s, ws);
  if (!(residual < 1e-3))
    throw std::runtime_error("start_vehicle: no static equilibrium (residual " + std::to_string(residual) + ")");
  // Rigid motion: forward and lateral speed in the heading's frame, yaw rate; wheels rolling freely.
  s.qd.setZero();
  s.qd[v.x] = st.speed * std::cos(st.yaw) - st.lateral_speed * std::sin(st.yaw);
  s.qd[v.y] = st.speed * std::sin(st.yaw) + st.lateral_speed * std::cos(st.yaw);
  s.qd[v.yaw] = st.yaw_rate;
  mb::factor_kinematics(m, s.q, ws);
  mb::solve_velocity(m, s.u, s.qd, ws);
  for (int i = 0; i < kWheels; ++i) {
    // Free rolling at the effective radius of the settled load.
    TyreResult tr;
    v.tyres[i]->compute(s.q, s.qd, s.u, tr);
    const auto& c = tr.c[tr.main];
    const double Re = c.Fz > 0 ? c.effective_radius : v.geometry[i].static_rolling_radius;
    s.qd[v.wheels[i].spin] = s.qd.segment<3>(v.wheels[i].C).dot(c.ex) / Re;
  }
  mb::solve_velocity(m, s.u, s.qd, ws);
  mb::initialize_accelerations(m, s, ws);
  return s;
}

}  // namespace mbo::models
