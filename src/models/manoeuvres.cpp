#include "mbobserver/models/manoeuvres.hpp"

#include <algorithm>
#include <cmath>

namespace mbo::models {
namespace {

double smoothstep(double x) {
  x = std::clamp(x, 0.0, 1.0);
  return x * x * (3 - 2 * x);
}

// Speed controller: wheel torques (drive) or brake pressures for a target speed.
void hold_speed(const ManoeuvreSpec& m, const Vehicle& v, const VehicleOutputs& o, DriverState& d, double target,
                double dt, VehicleInputs& in) {
  const auto& p = v.params;
  const double M = p.total_mass();
  const double R = p.axles[1].tyre.radius_m;
  const double err = target - o.speed;
  // Response time about 1 s; integral over 4 s; feed-forward of the resistances.
  const double kp = M * R / 1.0, ki = kp / 4.0;
  d.speed_integral = std::clamp(d.speed_integral + err * dt, -2.0, 2.0);
  const double fr = p.axles[1].tyre.rolling_resistance * M * p.gravity_mps2;
  const double drag = 0.5 * p.air_density_kg_per_m3 * p.drag_coefficient * p.frontal_area_m2 * o.speed * o.speed;
  double torque = kp * err + ki * d.speed_integral + (fr + drag) * R;
  int ndriven = 0;
  for (bool b : m.driven) ndriven += b;
  if (torque >= 0) {
    for (int i = 0; i < kWheels; ++i) in.drive_torque[i] = m.driven[i] ? torque / ndriven : 0.0;
  } else {
    // Brake 60/40 front/rear by torque.
    for (int i = 0; i < kWheels; ++i) {
      const double share = axle_of(i) == 0 ? 0.3 : 0.2;
      const double gain = p.axles[axle_of(i)].brake_gain_Nm_per_Pa;
      in.brake_pressure[i] = gain > 0 ? -torque * share / gain : 0.0;
    }
  }
}

// First-order steering actuator (50 ms) so that the driving constraint gets a smooth angle
// with a consistent rate: tau s' + s = command integrated by the trapezoidal rule, so that
// the angle's step is the mean of the rates given at both ends (the engine's rule). An Euler
// step with the rate taken after it gave steps 4 % off their rates in the lane change.
void steer_to(double command, double dt, DriverState& d, VehicleInputs& in) {
  const double tau = 0.05;
  const double prev_rate = d.steer_rate;
  d.steer = (d.steer + 0.5 * dt * prev_rate + 0.5 * dt / tau * command) / (1 + 0.5 * dt / tau);
  d.steer_rate = (command - d.steer) / tau;
  in.steer = d.steer;
  in.steer_rate = d.steer_rate;
  in.steer_accel = (d.steer_rate - prev_rate) / dt;
}

}  // namespace

const char* manoeuvre_name(ManoeuvreKind k) {
  switch (k) {
    case ManoeuvreKind::constant:
      return "constant";
    case ManoeuvreKind::straight_acceleration:
      return "straight_acceleration";
    case ManoeuvreKind::steady_circle:
      return "steady_circle";
    case ManoeuvreKind::double_lane_change:
      return "double_lane_change";
    case ManoeuvreKind::braking:
      return "braking";
    case ManoeuvreKind::bump_crossing:
      return "bump_crossing";
    case ManoeuvreKind::coast_down:
      return "coast_down";
    case ManoeuvreKind::seed003_straight:
      return "seed003_straight";
    case ManoeuvreKind::seed003_circle:
      return "seed003_circle";
    case ManoeuvreKind::mixed_drive:
      return "mixed_drive";
  }
  return "?";
}

double lane_change_path(const ManoeuvreSpec& m, double x) {
  // ISO 3888-1 sections along x from the entry: 1 (15 m, in lane), 2 (30 m, change),
  // 3 (25 m, offset lane), 4 (25 m, change back), 5-6 (30 m, in lane). The centre line of the
  // offset lane is taken 3.5 m to the left (the standard's lane offset), the changes are
  // smoothsteps.
  const double s = x - m.path_start_x_m;
  if (s < 15) return 0;
  if (s < 45) return m.lane_offset_m * smoothstep((s - 15) / 30);
  if (s < 70) return m.lane_offset_m;
  if (s < 95) return m.lane_offset_m * (1 - smoothstep((s - 70) / 25));
  return 0;
}

namespace {

// Ideal ABS: integral control of each wheel's slip ratio at 90 % of the tyre's peak slip, the
// pressure at most `ceiling`.
void abs_brake(const ManoeuvreSpec& m, const Vehicle& v, const VehicleOutputs& o, DriverState& d, double ceiling,
               double dt, VehicleInputs& in) {
  const auto& p = v.params;
  for (int i = 0; i < kWheels; ++i) {
    const auto& w = o.wheel[i];
    const auto& tm = v.tyres[i]->model();
    const double mu = std::isfinite(m.mu) ? m.mu : tm.p.mu;
    const double target_slip = -0.9 * tm.peak_slip_ratio(mu, std::max(w.Fz, 1.0));
    const double gain = p.axles[axle_of(i)].brake_gain_Nm_per_Pa;
    // Integral control: the brake torque moves at 4000 Fz R per second per unit slip error
    // (a slip error of 0.05 moves it by the tyre's load torque Fz R in 5 ms).
    const double rate = 4e3 * w.Fz * tm.p.radius_m / std::max(gain, 1e-12) * (w.slip_ratio - target_slip);
    d.brake[i] = std::clamp(d.brake[i] + rate * dt, 0.0, ceiling);
    if (o.speed < 2) d.brake[i] = ceiling;  // ABS off at walking speed
    in.brake_pressure[i] = d.brake[i];
  }
}

// Pure pursuit (Coulter 1992) from the rear axle at (xr, yr) to the point (xt, yt): the
// steering command.
double pure_pursuit(const Vehicle& v, const VehicleOutputs& o, double xr, double yr, double xt, double yt) {
  const double alpha = std::atan2(yt - yr, xt - xr) - o.yaw;
  return std::atan(2 * v.params.wheelbase() * std::sin(alpha) / std::hypot(xt - xr, yt - yr));
}

// The mixed drive's driver: pure pursuit on the route; the speed controller on the route's
// speed a second ahead, rising at most at accel_mps2, and down to each stop on a braking
// curve; at a stop the brakes hold the car for the stop's dwell; at a hard brake the ideal ABS
// at 120 bar until the brake's speed.
void drive_route(const ManoeuvreSpec& m, const Vehicle& v, const VehicleOutputs& o, DriverState& d, double t, double dt,
                 VehicleInputs& in) {
  const Route& r = *m.route;
  const auto& p = v.params;
  const double c = std::cos(o.yaw), s = std::sin(o.yaw);
  const double back = p.axles[1].x_m - v.cg_chassis.x();
  const double xr = o.position.x() + back * c, yr = o.position.y() + back * s;
  d.route_i = r.nearest(xr, yr, d.route_i, 80);
  const double here = r.s[d.route_i];
  double xt, yt;
  r.at(here + std::max(4.0, 0.6 * o.speed), xt, yt);
  steer_to(pure_pursuit(v, o, xr, yr, xt, yt), dt, d, in);
  if (d.hard_brake_i < r.hard_brakes.size() && here >= r.hard_brakes[d.hard_brake_i].s) {
    if (o.speed > r.hard_brakes[d.hard_brake_i].until_mps) {
      abs_brake(m, v, o, d, 1.2e7, dt, in);
      return;
    }
    ++d.hard_brake_i;
    d.target = o.speed;
    d.speed_integral = 0;
  }
  const double stop_decel = 2.0, hold_Pa = 3e6;
  double aim = r.speed_at(here + std::max(3.0, o.speed));
  if (d.stop_i < r.stops.size()) {
    const auto& stop = r.stops[d.stop_i];
    const double to_go = stop.s - here;
    aim = std::min(aim, std::sqrt(2 * stop_decel * std::max(0.0, to_go - 0.5)));
    if (d.stopped_at < 0 && to_go < 3 && o.speed < 0.3) d.stopped_at = t;
    if (d.stopped_at >= 0) {
      if (stop.dwell < 0 || t - d.stopped_at < stop.dwell) {
        in.brake_pressure.fill(hold_Pa);
        d.target = 0;
        d.speed_integral = 0;
        return;
      }
      ++d.stop_i;
      d.stopped_at = -1;
    }
  }
  d.target = aim < d.target ? aim : std::min(aim, d.target + m.accel_mps2 * dt);
  hold_speed(m, v, o, d, d.target, dt, in);
}

}  // namespace

// Ideal traction control: integral control of each driven wheel's slip ratio at 90 % of the
// tyre's peak slip, the mirror of the ideal ABS below; the torque asked is the ceiling.
void traction_control(const ManoeuvreSpec& m, const Vehicle& v, const VehicleOutputs& o, DriverState& d, double dt,
                      VehicleInputs& in) {
  for (int i = 0; i < kWheels; ++i) {
    const double asked = in.drive_torque[i];
    if (asked <= 0) {
      d.drive[i] = 0;
      continue;
    }
    const auto& w = o.wheel[i];
    const auto& tm = v.tyres[i]->model();
    const double mu = std::isfinite(m.mu) ? m.mu : tm.p.mu;
    const double target_slip = 0.9 * tm.peak_slip_ratio(mu, std::max(w.Fz, 1.0));
    // the torque moves at 100 Fz R per second per unit slip error: fast enough to hold the
    // slip through the launch, slow enough not to chatter at the 2 ms step (at the ABS's
    // 4000 the drive torque limit-cycles at 50 Hz, a wheel acceleration of 100 rad/s^2 rms)
    const double rate = 100 * w.Fz * tm.p.radius_m * (target_slip - w.slip_ratio);
    d.drive[i] = std::clamp(d.drive[i] + rate * dt, 0.0, asked);
    if (o.speed < 0.5) d.drive[i] = std::min(asked, std::max(d.drive[i], 0.5 * asked));  // slip is ill-defined at rest
    in.drive_torque[i] = d.drive[i];
  }
}

VehicleInputs manoeuvre_inputs(const ManoeuvreSpec& m, const Vehicle& v, const VehicleOutputs& o, DriverState& d,
                               double t, double dt) {
  const auto& p = v.params;
  VehicleInputs in;
  in.mu = m.mu;
  const double target = std::isfinite(m.target_speed_mps) ? m.target_speed_mps : m.start.speed;
  if (!d.started) {
    d = DriverState{};
    d.started = true;
  }
  switch (m.kind) {
    case ManoeuvreKind::constant:
      in.steer = m.steer_rad;
      for (int i = 0; i < kWheels; ++i) in.drive_torque[i] = m.driven[i] ? m.drive_torque_Nm : 0.0;
      break;
    case ManoeuvreKind::straight_acceleration:
      for (int i = 0; i < kWheels; ++i) in.drive_torque[i] = m.driven[i] ? m.drive_torque_Nm : 0.0;
      break;
    case ManoeuvreKind::seed003_straight:
    case ManoeuvreKind::seed003_circle: {
      // Sinigaglia 2016 Table 4: 100 N m on every wheel (drive_torque_Nm); the circle turns the rack 0.01 m. (The
      // seed's straight run needed -0.004 m of rack to cancel its hub misalignment; this model
      // has none, so it steers straight.)
      const double steer = m.kind == ManoeuvreKind::seed003_circle ? 0.01 * p.rack_gain_rad_per_m : 0.0;
      const double ramp = smoothstep(t / 0.5);
      in.steer = steer * ramp;
      in.steer_rate = t < 0.5 ? steer * 6 * (t / 0.5) * (1 - t / 0.5) / 0.5 : 0.0;
      for (double& T : in.drive_torque) T = m.drive_torque_Nm;
      break;
    }
    case ManoeuvreKind::steady_circle: {
      double steer = m.steer_rad;
      if (m.radius_m > 0) steer = std::atan(p.wheelbase() / m.radius_m);
      const double x = t / m.steer_ramp_s;
      in.steer = steer * smoothstep(x);
      in.steer_rate = x < 1 ? steer * 6 * x * (1 - x) / m.steer_ramp_s : 0.0;
      in.steer_accel = x < 1 ? steer * 6 * (1 - 2 * x) / (m.steer_ramp_s * m.steer_ramp_s) : 0.0;
      hold_speed(m, v, o, d, target, dt, in);
      break;
    }
    case ManoeuvreKind::double_lane_change: {
      // Pure pursuit from the rear axle to the path point one look-ahead distance ahead.
      const double L = p.wheelbase();
      const double c = std::cos(o.yaw), s = std::sin(o.yaw);
      const double back = p.axles[1].x_m - v.cg_chassis.x();
      const double xr = o.position.x() + back * c, yr = o.position.y() + back * s;
      const double ld = std::max(6.0, 0.7 * o.speed);
      const double xt = xr + ld, yt = lane_change_path(m, xt);
      const double alpha = std::atan2(yt - yr, xt - xr) - o.yaw;
      const double cmd = std::atan(2 * L * std::sin(alpha) / std::hypot(xt - xr, yt - yr));
      steer_to(cmd, dt, d, in);
      hold_speed(m, v, o, d, target, dt, in);
      break;
    }
    case ManoeuvreKind::braking: {
      if (t < m.brake_start_s) {
        hold_speed(m, v, o, d, target, dt, in);
        break;
      }
      const double ramp = std::clamp((t - m.brake_start_s) / m.brake_ramp_s, 0.0, 1.0);
      if (m.abs) {
        abs_brake(m, v, o, d, ramp * m.brake_pressure_Pa, dt, in);
        break;
      }
      for (int i = 0; i < kWheels; ++i) in.brake_pressure[i] = ramp * m.brake_pressure_Pa;
      break;
    }
    case ManoeuvreKind::bump_crossing:
      hold_speed(m, v, o, d, target, dt, in);
      break;
    case ManoeuvreKind::coast_down:
      break;
    case ManoeuvreKind::mixed_drive:
      drive_route(m, v, o, d, t, dt, in);
      break;
  }
  if (m.traction_control && (m.kind == ManoeuvreKind::constant || m.kind == ManoeuvreKind::straight_acceleration ||
                             m.kind == ManoeuvreKind::seed003_straight || m.kind == ManoeuvreKind::seed003_circle))
    traction_control(m, v, o, d, dt, in);
  return in;
}

ManoeuvreSpec load_manoeuvre(const JsonReader& r, const Vehicle& v) {
  ManoeuvreSpec m;
  const std::string type =
      r.choice("type", {"constant", "straight_acceleration", "steady_circle", "double_lane_change", "braking",
                        "bump_crossing", "coast_down", "seed003_straight", "seed003_circle", "mixed_drive"});
  for (auto k : {ManoeuvreKind::constant, ManoeuvreKind::straight_acceleration, ManoeuvreKind::steady_circle,
                 ManoeuvreKind::double_lane_change, ManoeuvreKind::braking, ManoeuvreKind::bump_crossing,
                 ManoeuvreKind::coast_down, ManoeuvreKind::seed003_straight, ManoeuvreKind::seed003_circle,
                 ManoeuvreKind::mixed_drive})
    if (type == manoeuvre_name(k)) m.kind = k;
  // Defaults per kind (issue 5 and Sinigaglia 2016 Table 4).
  switch (m.kind) {
    case ManoeuvreKind::double_lane_change:
      m.start.speed = 80 / 3.6, m.duration_s = 8;
      break;
    case ManoeuvreKind::braking:
      m.start.speed = 100 / 3.6, m.duration_s = 6, m.brake_pressure_Pa = 1.2e7;
      break;
    case ManoeuvreKind::bump_crossing:
      m.start.speed = 15 / 3.6, m.duration_s = 8;
      break;
    case ManoeuvreKind::coast_down:
      m.start.speed = 30, m.duration_s = 30;
      break;
    case ManoeuvreKind::seed003_straight:
    case ManoeuvreKind::seed003_circle:
      m.duration_s = 20;
      m.drive_torque_Nm = 100;
      m.driven = {true, true, true, true};
      break;
    case ManoeuvreKind::mixed_drive:
      m.start.speed = 0, m.duration_s = 300;
      break;
    default:
      break;
  }
  m.duration_s = r.positive("duration_s", m.duration_s);
  if (r.has("speed_kmh") && r.has("speed_mps")) r.fail("give speed_kmh or speed_mps, not both");
  if (r.has("speed_kmh")) m.start.speed = r.non_negative("speed_kmh") / 3.6;
  if (r.has("speed_mps")) m.start.speed = r.non_negative("speed_mps");
  if (r.has("target_speed_mps")) m.target_speed_mps = r.non_negative("target_speed_mps");
  if (auto s = r.find("start")) {
    m.start.x = s->number("x_m", 0.0);
    m.start.y = s->number("y_m", 0.0);
    m.start.yaw = s->number("yaw_rad", 0.0);
    s->finish();
  }
  m.steer_rad = r.number_in("steer_rad", -v.params.max_steer_rad, v.params.max_steer_rad, 0.0);
  m.radius_m = r.non_negative("radius_m", 0.0);
  m.steer_ramp_s = r.positive("steer_ramp_s", m.steer_ramp_s);
  m.drive_torque_Nm = r.number("drive_torque_Nm", m.drive_torque_Nm);
  if (r.has("driven")) {
    const std::string d = r.choice("driven", {"front", "rear", "all"});
    m.driven = {d != "rear", d != "rear", d != "front", d != "front"};
  }
  m.brake_start_s = r.non_negative("brake_start_s", m.brake_start_s);
  m.brake_pressure_Pa = r.non_negative("brake_pressure_Pa", m.brake_pressure_Pa);
  m.brake_ramp_s = r.positive("brake_ramp_s", m.brake_ramp_s);
  m.abs = r.boolean("abs", m.abs);
  m.traction_control = r.boolean("traction_control", m.traction_control);
  m.lane_offset_m = r.number("lane_offset_m", m.lane_offset_m);
  m.path_start_x_m = r.number("path_start_x_m", m.path_start_x_m);
  if (r.has("mu")) m.mu = r.number_in("mu", 0.01, 3.0);
  m.accel_mps2 = r.positive("accel_mps2", m.accel_mps2);
  if (m.kind == ManoeuvreKind::mixed_drive)
    m.route = std::make_shared<const Route>(
        build_route(mixed_drive_legs(m.lane_offset_m), m.start.x, m.start.y, m.start.yaw, 3.0, 2.0));
  if (m.kind == ManoeuvreKind::seed003_circle && !(v.params.rack_gain_rad_per_m > 0))
    r.fail("seed003_circle needs steering.rack_gain_rad_per_m in the vehicle file");
  r.finish();
  return m;
}

}  // namespace mbo::models
