// A load's column of the model's Jacobian dzdd/du (mb/derivatives.hpp), which the observer's
// B holds for an estimated payload: its lasting effect on the accelerations, its inertia, not
// the instant heave and pitch its weight would start before the suspension takes it.
#include <cmath>

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
  // the same forces on more mass: dxdd/dm = -xdd / M, within what the unsprung masses and the
  // wheels' spin inertia make of M
  EXPECT_LT(b, 0);
  EXPECT_NEAR(b, -ax / p.total_mass(), 0.25 * ax / p.total_mass());
}
