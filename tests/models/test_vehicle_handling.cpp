// Handling against independent truth: the linear single-track model (steady cornering), mu g
// (braking), the analytic coast-down with rolling resistance and drag.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "mbobserver/models/vehicle_params.hpp"
#include "vehicle_sim.hpp"

using namespace mbo;
using namespace mbo::models;

namespace {

// The linear single-track model of a vehicle: total mass, CG lever arms and the axles'
// cornering stiffness (two tyres, slip stiffness per unit load times the static wheel load).
struct SingleTrack {
  double m, L, lf, lr, Cf, Cr;
  explicit SingleTrack(const VehicleParams& p) {
    m = p.total_mass();
    L = p.wheelbase();
    const double xg = p.vehicle_cg().x();
    lf = p.axles[0].x_m - xg;
    lr = xg - p.axles[1].x_m;
    Cf = 2 * p.axles[0].tyre.lateral.stiffness * p.static_wheel_load(FL);
    Cr = 2 * p.axles[1].tyre.lateral.stiffness * p.static_wheel_load(RL);
  }
  double understeer() const { return m / L * (lr / Cf - lf / Cr); }  // rad s^2/m
  double yaw_rate_gain(double v) const { return v / (L + understeer() * v * v); }
  double sideslip_gain(double v) const {  // beta / delta at the CG
    return (lr - lf * m * v * v / (L * Cr)) / (L + understeer() * v * v);
  }
};

ManoeuvreSpec circle(double speed, double steer) {
  ManoeuvreSpec m;
  m.kind = ManoeuvreKind::steady_circle;
  m.start.speed = speed;
  m.steer_rad = steer;
  m.steer_ramp_s = 1.5;
  m.duration_s = 8;
  return m;
}

struct CircleRun {
  test::StepStats stats;
  double yaw_rate = 0, yaw_rate_spread = 0, sideslip = 0, ay = 0, speed = 0;
};

CircleRun run_circle(const VehicleParams& p, double speed, double steer) {
  const ManoeuvreSpec m = circle(speed, steer);
  test::VehicleSim sim(build_vehicle(p), m.start);
  DriverState d;
  const double dt = 0.002;
  const int n = static_cast<int>(m.duration_s / dt), last = static_cast<int>(1.0 / dt);
  CircleRun r;
  double rmin = 1e9, rmax = -1e9;
  for (int k = 0; k < n; ++k) {
    auto in = manoeuvre_inputs(m, sim.v, sim.out, d, (k + 1) * dt, dt);
    EXPECT_TRUE(sim.step(in, dt));
    if (k >= n - last) {
      r.yaw_rate += sim.out.yaw_rate / last;
      r.sideslip += sim.out.sideslip / last;
      r.speed += sim.out.speed / last;
      rmin = std::min(rmin, sim.out.yaw_rate);
      rmax = std::max(rmax, sim.out.yaw_rate);
    }
  }
  r.yaw_rate_spread = rmax - rmin;
  r.ay = r.yaw_rate * r.speed;
  r.stats = sim.stats;
  return r;
}

}  // namespace

// Steady cornering at 0.15-0.3 g: yaw-rate gain of the 3-D model against the linear
// single-track model built from the same mass, geometry and the tyres' cornering stiffness.
TEST(VehicleHandling, SteadyCorneringYawRateGainMatchesSingleTrack) {
  struct Case {
    const char* vehicle;
    double speed, ay_g;
  };
  for (const Case c : {Case{"sedan", 15, 0.2}, Case{"sedan", 25, 0.3}, Case{"van", 20, 0.2}}) {
    const auto p = load_vehicle_params(test::vehicle_path(c.vehicle));
    const SingleTrack st(p);
    const double steer = c.ay_g * 9.81 / c.speed / st.yaw_rate_gain(c.speed);
    const CircleRun r = run_circle(p, c.speed, steer);
    const double gain = r.yaw_rate / steer, ref = st.yaw_rate_gain(r.speed);
    std::printf(
        "%s %.0f m/s, steer %.4f rad: a_y %.3f g, yaw-rate gain %.4f 1/s (single track %.4f, %+.2f %%), "
        "sideslip %.3f deg (single track %.3f), understeer gradient %.4f rad/g; Newton mean %.2f max %d\n",
        c.vehicle, c.speed, steer, r.ay / 9.81, gain, ref, 100 * (gain / ref - 1), r.sideslip * 180 / M_PI,
        st.sideslip_gain(r.speed) * steer * 180 / M_PI, st.understeer() * 9.81, r.stats.mean_iterations(),
        r.stats.max_iterations);
    EXPECT_LT(r.ay / 9.81, 0.31);
    EXPECT_LT(r.yaw_rate_spread, 0.01 * std::abs(r.yaw_rate));  // steady
    EXPECT_NEAR(gain / ref, 1, 0.10);
    EXPECT_EQ(r.stats.failures, 0);
  }
}

namespace {

struct BrakingRun {
  double t25 = NAN, t10 = NAN;  // when the speed crosses 25 and 10 m/s
  double worst_friction = 0;  // max over steps and wheels of |F_t| / (mu peak_factor Fz)
  test::StepStats stats;
};

BrakingRun run_braking(const VehicleParams& p, double pressure, bool abs, double mu) {
  ManoeuvreSpec m;
  m.kind = ManoeuvreKind::braking;
  m.start.speed = 100 / 3.6;
  m.brake_start_s = 0.5;
  m.brake_pressure_Pa = pressure;
  m.abs = abs;
  m.mu = mu;
  m.duration_s = 6;
  test::VehicleSim sim(build_vehicle(p), m.start);
  DriverState d;
  const double dt = 0.002;
  BrakingRun r;
  double prev_v = sim.out.speed, prev_t = 0;
  for (int k = 0; k < static_cast<int>(m.duration_s / dt); ++k) {
    const double t = (k + 1) * dt;
    auto in = manoeuvre_inputs(m, sim.v, sim.out, d, t, dt);
    EXPECT_TRUE(sim.step(in, dt)) << k;
    const double v = sim.out.speed;
    for (double level : {25.0, 10.0}) {
      double& slot = level == 25.0 ? r.t25 : r.t10;
      if (std::isnan(slot) && prev_v > level && v <= level) slot = prev_t + dt * (prev_v - level) / (prev_v - v);
    }
    prev_v = v;
    prev_t = t;
    for (int i = 0; i < kWheels; ++i) {
      const auto& w = sim.out.wheel[i];
      const double pf =
          std::max(p.axles[axle_of(i)].tyre.longitudinal.peak_factor, p.axles[axle_of(i)].tyre.lateral.peak_factor);
      if (w.Fz > 1) r.worst_friction = std::max(r.worst_friction, std::hypot(w.Fx, w.Fy) / (mu * pf * w.Fz));
    }
  }
  r.stats = sim.stats;
  return r;
}

// Time to slow from 25 to 10 m/s at deceleration a0 + k v^2.
double analytic_time(double a0, double k) {
  const double s = std::sqrt(a0 * k);
  return (std::atan(25 * std::sqrt(k / a0)) - std::atan(10 * std::sqrt(k / a0))) / s;
}

}  // namespace

// Braking from 100 km/h with locked wheels and with an ideal ABS (slip held at 90 % of the
// peak), on mu = 1 and mu = 0.5: the deceleration between 25 and 10 m/s against the tyre's
// own force level (locked: the Magic Formula at slip -1; ABS: at 90 % of the peak slip) times
// mu g, plus drag; and at no step does a tyre's horizontal force exceed mu Fz times its peak
// factor (the combined-slip model's bound).
TEST(VehicleHandling, BrakingDecelerationIsMuG) {
  const auto p = load_vehicle_params(test::vehicle_path("sedan"));
  const auto& t = p.axles[0].tyre;
  const TyreModel tm(t);
  const double k = 0.5 * p.air_density_kg_per_m3 * p.drag_coefficient * p.frontal_area_m2 / p.total_mass();
  for (double mu : {1.0, 0.5}) {
    for (bool abs : {false, true}) {
      // Locked: kappa = -1 -> B x with B = stiffness / (C mu peak_factor).
      const double level =
          abs ? mf_shape(0.9 * tm.ypx, t.longitudinal.C, t.longitudinal.E)
              : mf_shape(t.longitudinal.stiffness / (t.longitudinal.C * mu), t.longitudinal.C, t.longitudinal.E);
      const double a0 = mu * level * p.gravity_mps2;
      const BrakingRun r = run_braking(p, abs ? 1.2e7 : 1.5e7, abs, mu);
      const double t_ref = analytic_time(a0, k), t_sim = r.t10 - r.t25;
      const double decel = 15 / t_sim;
      std::printf(
          "mu %.1f %s: 25->10 m/s in %.4f s (analytic %.4f s, %+.2f %%), mean deceleration %.3f m/s^2 = %.3f mu g "
          "(tyre level %.3f); max |F|/(mu Fz) %.6f; Newton mean %.2f max %d\n",
          mu, abs ? "ABS   " : "locked", t_sim, t_ref, 100 * (t_sim / t_ref - 1), decel, decel / (mu * p.gravity_mps2),
          level, r.worst_friction, r.stats.mean_iterations(), r.stats.max_iterations);
      EXPECT_NEAR(t_sim / t_ref, 1, abs ? 0.03 : 0.02);
      EXPECT_LE(r.worst_friction, 1 + 1e-9);
      EXPECT_EQ(r.stats.failures, 0);
    }
  }
}

// Coasting from 30 m/s with no inputs: M_eff dv/dt = -f_r M g - 1/2 rho Cd A v^2 with
// M_eff = M + sum I_spin / (rho_loaded R_eff), solved in closed form.
TEST(VehicleHandling, CoastDownMatchesAnalyticResistance) {
  for (auto name : {"sedan", "van"}) {
    const auto p = load_vehicle_params(test::vehicle_path(name));
    VehicleStart st;
    st.speed = 30;
    test::VehicleSim sim(build_vehicle(p), st);
    double meff = p.total_mass();
    double fr_force = 0;
    for (int i = 0; i < kWheels; ++i) {
      const auto& w = sim.out.wheel[i];
      const auto& ax = p.axles[axle_of(i)];
      meff += ax.spin_inertia_kgm2 / (w.loaded_radius * w.effective_radius);
      fr_force += ax.tyre.rolling_resistance * w.Fz;
    }
    const double a = fr_force / meff;
    const double b = 0.5 * p.air_density_kg_per_m3 * p.drag_coefficient * p.frontal_area_m2 / meff;
    auto v_ref = [&](double t) {
      return std::sqrt(a / b) * std::tan(std::atan(30 * std::sqrt(b / a)) - std::sqrt(a * b) * t);
    };
    double worst = 0;
    for (int k = 1; k <= 15000; ++k) {
      ASSERT_TRUE(sim.step({})) << k;
      if (k % 2500 == 0) {
        const double t = k * 0.002, v = sim.out.speed, ref = v_ref(t);
        worst = std::max(worst, std::abs(v / ref - 1));
        std::printf("%s coast-down t %4.1f s: v %.4f m/s, analytic %.4f m/s (%+.3f %%)\n", name, t, v, ref,
                    100 * (v / ref - 1));
      }
    }
    EXPECT_LT(worst, 0.002) << name;
  }
}

// A start in a turn (a reset the fixes force while cornering): the reference point moves at the
// forward and lateral speed given, in the heading's frame, and the chassis turns at the yaw rate.
// Started straight ahead instead, the car drawn from the prior, reset 7 deg into a roundabout,
// published a sideslip 4.9 deg off.
TEST(VehicleHandling, AStartInATurnMovesAtItsSpeedsAndYawRate) {
  const auto p = load_vehicle_params(test::vehicle_path("sedan"));
  VehicleStart st;
  st.yaw = 0.7;
  st.speed = 10;
  st.lateral_speed = -0.6;
  st.yaw_rate = 0.4;
  test::VehicleSim sim(build_vehicle(p), st);
  EXPECT_NEAR(sim.out.velocity_body.x(), 10, 1e-6);
  EXPECT_NEAR(sim.out.velocity_body.y(), -0.6, 1e-6);
  EXPECT_NEAR(sim.out.yaw_rate, 0.4, 1e-9);
  EXPECT_NEAR(sim.s.qd[sim.v.x], 10 * std::cos(0.7) + 0.6 * std::sin(0.7), 1e-9);
  EXPECT_NEAR(sim.s.qd[sim.v.y], 10 * std::sin(0.7) - 0.6 * std::cos(0.7), 1e-9);
}
