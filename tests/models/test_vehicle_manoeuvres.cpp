// Whole manoeuvres: the ISO 3888-1 double lane change and the bump crossing keep the
// constraints satisfied and never fail to converge; Sinigaglia 2016's Table 4 runs; the step, the
// inputs and the virtual sensors allocate nothing; the IMU output matches the motion.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "alloc_count.hpp"
#include "mbobserver/models/vehicle_params.hpp"
#include "vehicle_sim.hpp"

using namespace mbo;
using namespace mbo::models;

namespace {

struct ManoeuvreRun {
  test::StepStats stats;
  double max_path_error = 0, max_ay = 0, max_travel = 0, min_speed = 1e9, max_speed = 0, max_fz = 0;
  double max_sideslip = 0;
  VehicleOutputs last;
};

ManoeuvreRun run(const VehicleParams& p, const Road& road, const nlohmann::json& spec) {
  Vehicle v = build_vehicle(p, road);
  const ManoeuvreSpec m = load_manoeuvre(JsonReader(spec, "test"), v);
  test::VehicleSim sim(std::move(v), m.start);
  sim.check_residuals = true;
  DriverState d;
  const double dt = 0.002;
  ManoeuvreRun r;
  for (int k = 0; k < static_cast<int>(m.duration_s / dt); ++k) {
    auto in = manoeuvre_inputs(m, sim.v, sim.out, d, (k + 1) * dt, dt);
    EXPECT_TRUE(sim.step(in, dt)) << "step " << k;
    const auto& o = sim.out;
    if (m.kind == ManoeuvreKind::double_lane_change)
      r.max_path_error =
          std::max(r.max_path_error, std::abs(o.cg_position.y() - lane_change_path(m, o.cg_position.x())));
    r.max_ay = std::max(r.max_ay, std::abs(o.yaw_rate * o.speed));
    r.min_speed = std::min(r.min_speed, o.speed);
    r.max_speed = std::max(r.max_speed, o.speed);
    r.max_sideslip = std::max(r.max_sideslip, std::abs(o.sideslip));
    for (const auto& w : o.wheel) {
      r.max_travel = std::max(r.max_travel, std::abs(w.travel));
      r.max_fz = std::max(r.max_fz, w.Fz);
    }
  }
  r.stats = sim.stats;
  r.last = sim.out;
  return r;
}

void report(const char* what, const ManoeuvreRun& r) {
  std::printf(
      "%s: %d steps, failures %d, Newton mean %.2f max %d; max |Phi| %.2e, |Phi_q qd + Phi_t| %.2e, "
      "|acc. residual| %.2e; speed %.2f-%.2f m/s, max |a_y| %.2f g, max |sideslip| %.2f deg, max |travel| "
      "%.3f m, max Fz %.0f N, max path error %.3f m\n",
      what, r.stats.steps, r.stats.failures, r.stats.mean_iterations(), r.stats.max_iterations, r.stats.max_phi,
      r.stats.max_vel, r.stats.max_acc, r.min_speed, r.max_speed, r.max_ay / 9.81, r.max_sideslip * 180 / M_PI,
      r.max_travel, r.max_fz, r.max_path_error);
}

void expect_clean(const ManoeuvreRun& r) {
  EXPECT_EQ(r.stats.failures, 0);
  EXPECT_LT(r.stats.max_phi, 1e-7);  // the Newton tolerance on the coordinates
  EXPECT_LT(r.stats.max_vel, 1e-8);
  EXPECT_LT(r.stats.max_acc, 1e-5);
}

Road bumps() {
  Road road;
  // Five 5 cm x 0.5 m speed bumps 12 m apart (Macchi 2010 ch. 9.3: the INSIA track's bumps).
  for (int k = 0; k < 5; ++k) road.bumps.push_back({20.0 + 12.0 * k, 0.05, 0.5});
  return road;
}

// scenarios/vehicle_braking.json's manoeuvre, 4 s: about three Newton iterations a step, the
// braked wheels near their peak slip.
nlohmann::json abs_braking() {
  return {{"type", "braking"},         {"speed_kmh", 100},     {"abs", true},
          {"brake_pressure_Pa", 12e6}, {"brake_start_s", 1.0}, {"duration_s", 4.0}};
}

}  // namespace

TEST(VehicleManoeuvres, DoubleLaneChangeAt80KmH) {
  for (auto name : {"sedan", "van"}) {
    const auto p = load_vehicle_params(test::vehicle_path(name));
    const ManoeuvreRun r = run(p, p.road, {{"type", "double_lane_change"}, {"speed_kmh", 80}});
    report((std::string(name) + " ISO 3888-1 at 80 km/h").c_str(), r);
    expect_clean(r);
    EXPECT_GT(r.max_ay, 3.0);  // it did change lanes
    EXPECT_LT(r.max_path_error, 1.5);  // and followed the path (pure pursuit cuts corners)
    EXPECT_NEAR(r.last.position.y(), 0, 0.5);  // back in the first lane
    // Two Newton iterations per step: the engine's extrapolating predictor (three with eq.
    // (18)'s Taylor predictor, whose error on the spinning wheels' unit vectors is 6e-4).
    EXPECT_LT(r.stats.mean_iterations(), 2.2);
  }
}

TEST(VehicleManoeuvres, ModifiedNewtonKeepsTheTrajectoryWithFewerTangents) {
  // ABS braking from 100 km/h (scenarios/vehicle_braking.json): about three Newton iterations
  // a step, the wheels near their peak slip. Keeping the first tangent while the corrections
  // shrink fourfold (the vehicles' default) must leave the trajectory where a new tangent every
  // iteration puts it, to the tolerance's effect, with fewer factorisations.
  auto p = load_vehicle_params(test::vehicle_path("sedan"));
  const nlohmann::json spec = abs_braking();
  ASSERT_GT(p.newton_refresh_contraction, 0);
  const ManoeuvreRun modified = run(p, p.road, spec);
  p.newton_refresh_contraction = 0;
  const ManoeuvreRun full = run(p, p.road, spec);
  std::printf(
      "[ measured ] ABS braking: Newton %.2f / %.2f iterations a step, %.2f / %.2f tangents (modified / full); "
      "position %.2e m, speed %.2e m/s apart\n",
      modified.stats.mean_iterations(), full.stats.mean_iterations(),
      double(modified.stats.total_tangents) / modified.stats.steps,
      double(full.stats.total_tangents) / full.stats.steps, (modified.last.cg_position - full.last.cg_position).norm(),
      std::abs(modified.last.speed - full.last.speed));
  expect_clean(modified);
  EXPECT_EQ(full.stats.total_tangents, full.stats.total_iterations);
  EXPECT_LT(modified.stats.total_tangents, 0.6 * full.stats.total_tangents);
  EXPECT_LT(modified.stats.mean_iterations(), 1.2 * full.stats.mean_iterations());
  EXPECT_LT((modified.last.cg_position - full.last.cg_position).norm(), 1e-3);
  EXPECT_LT(std::abs(modified.last.speed - full.last.speed), 1e-3);
}

TEST(VehicleManoeuvres, ExtrapolatedCorrectionsHalveTheSlowestSteps) {
  // The same ABS braking: a braked wheel near its peak slip converges by 0.77 a correction,
  // up to 27 iterations a step (the limit is 30). Aitken's extrapolation of the corrections
  // (mb::step) must bound that without moving the trajectory beyond the tolerance's effect.
  const auto p = load_vehicle_params(test::vehicle_path("sedan"));
  const nlohmann::json spec = abs_braking();
  auto run_with = [&](bool extrapolate) {
    Vehicle v = build_vehicle(p, p.road);
    v.model.solver.extrapolate = extrapolate;
    const ManoeuvreSpec m = load_manoeuvre(JsonReader(spec, "test"), v);
    test::VehicleSim sim(std::move(v), m.start);
    DriverState d;
    for (int k = 0; k < static_cast<int>(m.duration_s / 0.002); ++k)
      EXPECT_TRUE(sim.step(manoeuvre_inputs(m, sim.v, sim.out, d, (k + 1) * 0.002, 0.002), 0.002)) << k;
    return std::make_pair(sim.stats, sim.out);
  };
  const auto [with, out_with] = run_with(true);
  const auto [without, out_without] = run_with(false);
  std::printf(
      "[ measured ] ABS braking: Newton mean %.2f max %d with the extrapolation, %.2f max %d without; "
      "position %.2e m apart\n",
      with.mean_iterations(), with.max_iterations, without.mean_iterations(), without.max_iterations,
      (out_with.cg_position - out_without.cg_position).norm());
  EXPECT_GT(without.max_iterations, 18);
  EXPECT_LT(with.max_iterations, 0.65 * without.max_iterations);
  EXPECT_LT(with.mean_iterations(), without.mean_iterations());
  EXPECT_LT((out_with.cg_position - out_without.cg_position).norm(), 1e-3);
}

TEST(VehicleManoeuvres, BumpCrossing) {
  struct Case {
    const char* vehicle;
    double kmh;
  };
  for (const Case c : {Case{"sedan", 30}, Case{"van", 15}}) {
    const auto p = load_vehicle_params(test::vehicle_path(c.vehicle));
    const double duration = 80 / (c.kmh / 3.6);  // 80 m: over all five bumps
    const ManoeuvreRun r = run(p, bumps(), {{"type", "bump_crossing"}, {"speed_kmh", c.kmh}, {"duration_s", duration}});
    report((std::string(c.vehicle) + " over five 5 cm bumps at " + std::to_string(int(c.kmh)) + " km/h").c_str(), r);
    expect_clean(r);
    EXPECT_GT(r.last.position.x(), 20 + 4 * 12 + 5);  // past the last bump
    EXPECT_GT(r.max_travel, 0.01);  // the suspension worked
    EXPECT_GT(r.max_fz, 1.3 * p.static_wheel_load(FL));
  }
}

TEST(VehicleManoeuvres, Seed003TableFour) {
  const auto p = load_vehicle_params(test::vehicle_path("sedan"));
  for (auto kind : {"seed003_straight", "seed003_circle"}) {
    const ManoeuvreRun r = run(p, p.road, {{"type", kind}});
    report(kind, r);
    expect_clean(r);
    // 100 N m on each wheel for 20 s from rest: (4 x 100 / 0.31 - rolling resistance 152 N -
    // drag) / 1560 kg ~ 0.7 m/s^2.
    EXPECT_GT(r.last.speed, 12);
    if (std::string(kind) == "seed003_circle") {
      EXPECT_GT(r.last.yaw_rate, 0.1);
    } else {
      EXPECT_NEAR(r.last.position.y(), 0, 1e-6);
    }
  }
}

// The observer calls set_inputs, step and the virtual sensors every 2 ms: after the first
// step none of them may touch the heap.
TEST(VehicleManoeuvres, StepAndOutputsAllocateNothing) {
  const auto p = load_vehicle_params(test::vehicle_path("sedan"));
  Vehicle v = build_vehicle(p, bumps());
  const ManoeuvreSpec m = load_manoeuvre(JsonReader(nlohmann::json{{"type", "double_lane_change"}}, "t"), v);
  test::VehicleSim sim(std::move(v), m.start);
  DriverState d;
  VehicleInputs in = manoeuvre_inputs(m, sim.v, sim.out, d, 0.002, 0.002);
  sim.step(in);
  test::alloc_count_start();
  for (int k = 1; k < 1000; ++k) {
    in = manoeuvre_inputs(m, sim.v, sim.out, d, (k + 1) * 0.002, 0.002);
    set_inputs(sim.v, in, sim.s);
    mb::step(sim.v.model, sim.s, sim.ws, 0.002);
    vehicle_outputs(sim.v, sim.s, sim.out);
    auto imu = chassis_point_kinematics(sim.v, sim.s, {1.2, 0.3, 0.4});
    (void)imu;
  }
  EXPECT_EQ(test::alloc_count_stop(), 0);
}

// The accelerometer and gyro outputs at a chassis point agree with the motion: the point's
// acceleration with the time derivative of its velocity, the body angular velocity's z with
// the yaw rate on flat ground, the specific force with gravity at rest.
TEST(VehicleManoeuvres, ImuOutputsMatchTheMotion) {
  const auto p = load_vehicle_params(test::vehicle_path("sedan"));
  const ManoeuvreSpec m =
      load_manoeuvre(JsonReader(nlohmann::json{{"type", "double_lane_change"}}, "t"), build_vehicle(p));
  const Eigen::Vector3d imu(1.9, 0.35, 0.45);  // vehicle frame
  {
    test::VehicleSim rest(build_vehicle(p));
    auto k0 = chassis_point_kinematics(rest.v, rest.s, imu);
    EXPECT_LT((k0.specific_force_body - Eigen::Vector3d(0, 0, 9.81)).norm(), 1e-3) << k0.specific_force_body;
  }
  test::VehicleSim sim(build_vehicle(p), m.start);
  DriverState d;
  double worst = 0, worst_gyro = 0, peak = 0;
  for (int k = 0; k < 2500; ++k) {
    auto in = manoeuvre_inputs(m, sim.v, sim.out, d, (k + 1) * 0.002, 0.002);
    auto before = chassis_point_kinematics(sim.v, sim.s, imu);
    ASSERT_TRUE(sim.step(in));
    auto after = chassis_point_kinematics(sim.v, sim.s, imu);
    // Trapezoidal rule: v1 - v0 = dt/2 (a0 + a1), up to the projections of velocities and
    // accelerations onto the constraints that follow each step.
    Eigen::Vector3d fd = (after.velocity - before.velocity) / 0.002,
                    mean = 0.5 * (after.acceleration + before.acceleration);
    worst = std::max(worst, (fd - mean).norm());
    peak = std::max(peak, after.acceleration.norm());
    const Eigen::Vector3d w = sim.out.angular_velocity_body;
    // yaw rate = (sin(roll) w_y + cos(roll) w_z) / cos(pitch)
    const double yaw_rate = (std::sin(sim.out.roll) * w.y() + std::cos(sim.out.roll) * w.z()) / std::cos(sim.out.pitch);
    worst_gyro = std::max(worst_gyro, std::abs(yaw_rate - sim.out.yaw_rate));
  }
  std::printf("IMU: |dv/dt - mean a| <= %.2e m/s^2 (peak |a| %.2f m/s^2); gyro vs yaw rate <= %.2e rad/s\n", worst,
              peak, worst_gyro);
  EXPECT_LT(worst, 1e-3 * std::max(1.0, peak));
  EXPECT_LT(worst_gyro, 1e-8);
}
