// The vehicle standing still: static equilibrium against the lever-arm split of the weight,
// no creep over 60 s, no chatter when a wheel starts or stops turning.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "mbobserver/models/vehicle_params.hpp"
#include "vehicle_sim.hpp"

using namespace mbo;
using namespace mbo::models;

TEST(VehicleStatic, AxleLoadsMatchTheLeverArmSplit) {
  for (auto name : {"sedan", "van"}) {
    const auto p = load_vehicle_params(test::vehicle_path(name));
    test::VehicleSim sim(build_vehicle(p));
    const auto& w = sim.out.wheel;
    const double front = w[FL].Fz + w[FR].Fz, rear = w[RL].Fz + w[RR].Fz;
    // Independent truth: moments of the weights (sprung at its CG, unsprung at the axles)
    // about each axle.
    const double front_ref = p.static_axle_load(0), rear_ref = p.static_axle_load(1);
    std::printf(
        "%s: front axle %.2f N (lever arms %.2f, %+.4f %%), rear %.2f N (%.2f, %+.4f %%), weight %.2f N; "
        "z %.4f m, pitch %.5f rad, roll %.1e rad, travels %.4f %.4f %.4f %.4f m\n",
        name, front, front_ref, 100 * (front / front_ref - 1), rear, rear_ref, 100 * (rear / rear_ref - 1),
        p.total_mass() * p.gravity_mps2, sim.out.position.z(), sim.out.pitch, sim.out.roll, w[FL].travel, w[FR].travel,
        w[RL].travel, w[RR].travel);
    EXPECT_NEAR(front / front_ref, 1, 0.01) << name;
    EXPECT_NEAR(rear / rear_ref, 1, 0.01) << name;
    EXPECT_NEAR(front + rear, p.total_mass() * p.gravity_mps2, 1e-6 * front);
    EXPECT_NEAR(w[FL].Fz, w[FR].Fz, 1e-6 * front);
    EXPECT_NEAR(w[RL].Fz, w[RR].Fz, 1e-6 * rear);
    // In equilibrium the first steps do not move it.
    for (int k = 0; k < 50; ++k) ASSERT_TRUE(sim.step({}));
    EXPECT_LT(sim.out.velocity.norm(), 1e-6);
  }
}

TEST(VehicleStatic, AtRestSixtySecondsNoCreep) {
  for (auto name : {"sedan", "van"}) {
    test::VehicleSim sim(build_vehicle(load_vehicle_params(test::vehicle_path(name))));
    const Eigen::Vector3d p0 = sim.out.position;
    const double yaw0 = sim.out.yaw;
    std::array<double, 4> spin0;
    for (int i = 0; i < 4; ++i) spin0[i] = sim.out.wheel[i].spin_angle;
    double max_drift = 0, max_speed = 0, max_spin = 0;
    for (int k = 0; k < 30000; ++k) {
      ASSERT_TRUE(sim.step({})) << k;
      max_drift = std::max(max_drift, (sim.out.position - p0).norm());
      max_speed = std::max(max_speed, sim.out.velocity.norm());
      for (int i = 0; i < 4; ++i) max_spin = std::max(max_spin, std::abs(sim.out.wheel[i].spin_angle - spin0[i]));
    }
    std::printf(
        "%s at rest 60 s: max drift %.2e m, yaw drift %.2e rad, max speed %.2e m/s, max spin drift %.2e rad, "
        "Newton mean %.2f max %d\n",
        name, max_drift, std::abs(sim.out.yaw - yaw0), max_speed, max_spin, sim.stats.mean_iterations(),
        sim.stats.max_iterations);
    EXPECT_LT(max_drift, 1e-6);
    EXPECT_LT(std::abs(sim.out.yaw - yaw0), 1e-8);
    EXPECT_LT(max_spin, 1e-6);
    EXPECT_EQ(sim.stats.failures, 0);
  }
}

// On a 5 % grade with the brakes applied the car holds, but the brake torque goes through zero
// smoothly (tanh of the spin rate over 1 rad/s) and the tyres carry the load as slip damping:
// both are viscous at zero speed, so the car creeps. Measured and bounded here.
TEST(VehicleStatic, BrakedOnAGradeCreepsSlowly) {
  auto p = load_vehicle_params(test::vehicle_path("sedan"));
  p.road.grade = 0.05;
  VehicleInputs in;
  in.brake_pressure = {5e6, 5e6, 5e6, 5e6};
  test::VehicleSim sim(build_vehicle(p), {}, in);
  const double x0 = sim.out.position.x();
  for (int k = 0; k < 5000; ++k) ASSERT_TRUE(sim.step(in));
  const double x1 = sim.out.position.x();
  for (int k = 0; k < 5000; ++k) ASSERT_TRUE(sim.step(in));
  const double creep = (sim.out.position.x() - x1) / 10.0;
  std::printf("braked on 5 %% grade (50 bar): settles by %.2e m in 10 s, then creeps %.2e m/s (%.1f mm per minute)\n",
              x1 - x0, creep, creep * 60e3);
  EXPECT_LT(creep, 0);  // downhill
  EXPECT_GT(creep, -0.01);  // held: less than 1 cm/s
}

// Starting from rest and braking to a stop: the wheel's spin rate has no step-to-step
// oscillation (the trapezoidal rule rings on stiff slip damping if the damping-to-inertia
// ratio dt c / 2I exceeds 1; here it is about 5 at standstill, and the ringing dies out).
TEST(VehicleStatic, StartAndStopWithoutChatter) {
  test::VehicleSim sim(build_vehicle(load_vehicle_params(test::vehicle_path("sedan"))));
  VehicleInputs drive;
  drive.drive_torque = {0, 0, 400, 400};
  VehicleInputs brake;
  brake.brake_pressure = {8e6, 8e6, 8e6, 8e6};
  std::vector<double> rate;
  double x_stop = 0;
  for (int k = 0; k < 2500; ++k) {
    ASSERT_TRUE(sim.step(k < 1000 ? drive : brake));
    rate.push_back(sim.out.wheel[RL].spin_rate);
    if (k == 1999) x_stop = sim.s.q[sim.v.wheels[RL].C];
  }
  // Where the rear wheel centre is after 1 s of braking and 1 s later (the body still rocks
  // in pitch for a while, so the wheel centre is the measure of standing still).
  const double moved = std::abs(sim.s.q[sim.v.wheels[RL].C] - x_stop);
  // Alternations: the step-to-step change of the spin rate flips sign on consecutive steps.
  auto alternations = [&](int from, int to) {
    int n = 0;
    for (int k = from + 2; k < to; ++k) {
      const double d1 = rate[k] - rate[k - 1], d0 = rate[k - 1] - rate[k - 2];
      if (d1 * d0 < 0 && std::abs(d1) > 1e-3) ++n;
    }
    return n;
  };
  const int start = alternations(25, 1000), stop = alternations(1025, 2500);
  std::printf(
      "start (400 N m on the rear wheels): speed %.2f m/s after 2 s, spin-rate alternations %d; "
      "stop (80 bar): alternations %d, rear wheel moves %.2e m between 1 and 2 s after braking\n",
      rate[999] * 0.31, start, stop, moved);
  EXPECT_EQ(start, 0);
  EXPECT_LE(stop, 3);
  EXPECT_LT(moved, 1e-3);
  EXPECT_LT(std::abs(rate.back()), 1e-3);
}
