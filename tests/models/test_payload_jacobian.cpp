// A load's column of the model's Jacobian dzdd/du (mb/derivatives.hpp), which the observer's
// B holds for an estimated payload: its lasting effect on the accelerations, its inertia and
// what its settled weight does to the tyres' grip (settled_mass_inputs), not the instant heave
// and pitch its weight would start before the suspension takes it.
#include <array>
#include <cmath>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "mbobserver/mb/derivatives.hpp"
#include "mbobserver/models/vehicle_params.hpp"
#include "vehicle_sim.hpp"

using namespace mbo;
using namespace mbo::models;

namespace {

// The payload_front column over every independent coordinate, taken with `forces` terms.
Eigen::VectorXd payload_column(test::VehicleSim& sim, bool persistent) {
  std::vector<int> all(sim.v.model.z.size());
  for (std::size_t j = 0; j < all.size(); ++j) all[j] = static_cast<int>(j);
  mb::AccelerationDerivatives d(sim.v.model, all, {sim.v.in.payload_front}, mb::DerivativeTerms::forces, 1);
  d.persistent_mass_inputs = persistent;
  EXPECT_TRUE(mb::differentiate_accelerations(sim.v.model, sim.s, 0, sim.ws, d));
  return d.du.col(0);
}

}  // namespace

TEST(PayloadJacobian, ALoadOnAStandingCarAcceleratesNothingThatLasts) {
  test::VehicleSim sim(build_vehicle(load_vehicle_params(test::vehicle_path("sedan"))));
  for (int k = 0; k < 500; ++k) ASSERT_TRUE(sim.step({}));  // settled on its springs
  const auto& v = sim.v;
  auto index = [&](int slot) {
    for (std::size_t j = 0; j < v.model.z.size(); ++j)
      if (v.model.z[j] == slot) return static_cast<Eigen::Index>(j);
    return Eigen::Index{-1};
  };
  const Eigen::VectorXd lasting = payload_column(sim, true), instant = payload_column(sim, false);
  // standing: qdd ~ 0, so the inertia moves nothing
  EXPECT_LT(lasting.cwiseAbs().maxCoeff(), 1e-6);
  // the weight alone would drop the chassis (z) at once, g per total mass
  EXPECT_LT(instant[index(v.z)], -1e-4);
  EXPECT_GT(std::abs(instant[index(v.z)]), 100 * std::abs(lasting[index(v.z)]));
}

TEST(PayloadJacobian, ALoadSlowsAnAcceleratingCarInProportion) {
  const auto p = load_vehicle_params(test::vehicle_path("sedan"));
  test::VehicleSim sim(build_vehicle(p), VehicleStart{0, 0, 0, 10, 0});
  VehicleInputs in;
  in.drive_torque = {0, 0, 600, 600};  // rear-wheel drive
  for (int k = 0; k < 500; ++k) ASSERT_TRUE(sim.step(in));
  const auto& v = sim.v;
  Eigen::Index ix = -1;
  for (std::size_t j = 0; j < v.model.z.size(); ++j)
    if (v.model.z[j] == v.x) ix = static_cast<Eigen::Index>(j);
  const double ax = sim.s.qdd[v.x];
  ASSERT_GT(ax, 0.5);
  const double b = payload_column(sim, true)[ix];
  // more mass, and more grip on the driven rear tyres at their slip (the load's settled share
  // over their load): dxdd/dm = (dFx - xdd) / M, within what the unsprung masses and the
  // wheels' spin inertia make of M
  const double rear_share = (p.axles[0].x_m - p.payload_front().x()) / p.wheelbase();
  const double dfx =
      (sim.out.wheel[RL].Fx + sim.out.wheel[RR].Fx) * rear_share * p.gravity_mps2 / 2 / p.static_wheel_load(RL);
  std::printf("dxdd/dm %.3g, expected %.3g (inertia %.3g, rear tyres' grip %.3g)\n", b, (dfx - ax) / p.total_mass(),
              -ax / p.total_mass(), dfx / p.total_mass());
  EXPECT_LT(b, 0);
  EXPECT_NEAR(b, (dfx - ax) / p.total_mass(), 0.25 * ax / p.total_mass());
}

// The settled weight the observer's B reads (mb::Model::MassParameter::settled_load: the
// lever rule between the axles, half to each side) against the model's own physics: the same
// car standing, loaded, left to settle on its springs.
TEST(PayloadJacobian, TheSettledLoadIsTheWeightEachTyreTakes) {
  const auto p = load_vehicle_params(test::vehicle_path("sedan"));
  const Vehicle v = build_vehicle(p);
  for (const bool rear : {false, true}) {
    test::VehicleSim sim(v);
    for (int k = 0; k < 500; ++k) ASSERT_TRUE(sim.step({}));
    std::array<double, kWheels> before{};
    for (int w = 0; w < kWheels; ++w) before[static_cast<std::size_t>(w)] = sim.out.wheel[w].Fz;
    VehicleInputs in;
    (rear ? in.payload_rear : in.payload_front) = 100;
    for (int k = 0; k < 3000; ++k) ASSERT_TRUE(sim.step(in));
    const int input = rear ? v.in.payload_rear : v.in.payload_front;
    for (const auto& mp : v.model.mass_parameters) {
      if (mp.input != input) continue;
      ASSERT_EQ(mp.settled_load.size(), static_cast<std::size_t>(kWheels));
      for (int w = 0; w < kWheels; ++w) {
        const auto [load, per_kg] = mp.settled_load[static_cast<std::size_t>(w)];
        EXPECT_EQ(load, v.in.tyre_load[static_cast<std::size_t>(w)]);
        const double settled = sim.out.wheel[w].Fz - before[static_cast<std::size_t>(w)];
        const double read = 100 * per_kg * p.static_wheel_load(w);
        std::printf("%s payload 100 kg, wheel %s: settled %+.1f N, B reads %+.1f N\n", rear ? "rear" : "front",
                    kWheelNames[w], settled, read);
        EXPECT_NEAR(read, settled, 0.03 * 100 * p.gravity_mps2) << kWheelNames[w];
      }
    }
  }
}

// In a steady turn each axle's lateral force is its load times a_y / g, and a tyre's force at
// its slip is its load times a stiffness per unit load: a load over the rear axle brings the
// grip it needs to follow the turn. The column's tyre part (the settled load) and the load's
// own inertia then cancel in the yaw acceleration, where the inertia alone would turn the
// nose in.
TEST(PayloadJacobian, ALoadOverTheRearAxleBringsTheGripItNeedsInATurn) {
  const auto p = load_vehicle_params(test::vehicle_path("sedan"));
  VehicleInputs in;
  in.steer = 0.04;  // left
  in.drive_torque = {0, 0, 60, 60};
  test::VehicleSim sim(build_vehicle(p), VehicleStart{0, 0, 0, 15, 0}, in);
  for (int k = 0; k < 2000; ++k) ASSERT_TRUE(sim.step(in));
  const auto& v = sim.v;
  const double fy_rear = sim.out.wheel[RL].Fy + sim.out.wheel[RR].Fy;
  ASSERT_GT(fy_rear, 1000);  // toward the centre of the left turn
  mb::Model inertia_only = v.model;
  for (auto& mp : inertia_only.mass_parameters) mp.settled_load.clear();
  auto yaw_column = [&](const mb::Model& m) {
    std::vector<int> all(m.z.size());
    for (std::size_t j = 0; j < all.size(); ++j) all[j] = static_cast<int>(j);
    mb::AccelerationDerivatives d(m, all, {v.in.payload_rear}, mb::DerivativeTerms::forces, 1);
    EXPECT_TRUE(mb::differentiate_accelerations(m, sim.s, 0, sim.ws, d));
    for (std::size_t j = 0; j < m.z.size(); ++j)
      if (m.z[j] == v.yaw) return d.du(static_cast<Eigen::Index>(j), 0);
    return 0.0;
  };
  const double settled = yaw_column(v.model), inertia = yaw_column(inertia_only);
  // per kg each rear tyre's force grows by its share g / 2 over its load, behind the CG by the
  // rear axle's arm: a yaw moment -l_r dFy about an inertia near the chassis's
  const double l_r = p.cg_m.x() - p.axles[1].x_m;
  const double dfy = fy_rear * p.gravity_mps2 / 2 / p.static_wheel_load(RL);
  double izz = p.inertia_kgm2(2, 2);  // the sprung mass's, and the unsprung masses' along x
  for (const auto& a : p.axles) izz += 2 * a.unsprung_mass_kg * (a.x_m - p.cg_m.x()) * (a.x_m - p.cg_m.x());
  const double tyres = -l_r * dfy / izz;
  std::printf(
      "rear Fy %.0f N; yaw acceleration per kg of rear load: inertia alone %.3g, with the settled load %.3g "
      "rad/s^2 (the tyres' part %.3g, by lever arm and inertia %.3g)\n",
      fy_rear, inertia, settled, settled - inertia, tyres);
  EXPECT_GT(inertia, 0);  // the load's inertia alone turns the nose in
  EXPECT_NEAR(settled - inertia, tyres, 0.3 * std::abs(tyres));
  EXPECT_LT(std::abs(settled), 0.1 * std::abs(inertia));
}
