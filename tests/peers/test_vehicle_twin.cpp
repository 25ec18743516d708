// The vehicle built twice (issue 22): our engine against the sedan built in Simbody
// (simbody_vehicle.hpp), both driven by the same recorded inputs and the same force models.
// The full comparison over every shipped manoeuvre is mbo_vehicle_twin (tests/peers/README.md);
// here the first 3 s of the ISO lane change at 80 km/h (into the first lane change). Ours at
// 2 ms differs from Simbody (RK-Merson 1e-7, itself 3e-7 m from a 1e-9 run) by the trapezoidal
// rule's error: at 0.5 ms the differences are 16 times smaller.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "vehicle_twin.hpp"

namespace mbo::peers {
namespace {

TEST(VehicleTwin, LaneChangeAgreesWithSimbody) {
  const TwinRun r = run_twin(std::string(MBO_SOURCE_DIR) + "/scenarios/vehicle_double_lane_change.json", 3, 0.002);
  ASSERT_EQ(r.ours.size(), r.simbody.size());
  ASSERT_EQ(r.ours.size(), 301u);
  const TwinDifference d = difference(r.ours, r.simbody);
  std::printf(
      "[ measured ] lane change 3 s, 2 ms: position %.2e m, yaw %.2e rad, pitch/roll %.2e rad, velocity %.2e m/s, "
      "travel %.2e m, tyre load %.2f N (of %.0f), spin rate %.3f rad/s (of %.0f), spin angle %.2e rad; Simbody %ld "
      "steps\n",
      d.position, d.yaw, d.pitch_roll, d.velocity, d.travel, d.load, d.load_scale, d.spin_rate, d.spin_rate_scale,
      d.spin, r.simbody_steps);
  // The car moved and turned: the comparison is not of two cars at rest.
  EXPECT_GT(r.ours.back().x - r.ours.front().x, 60);
  EXPECT_GT(d.load_scale, 4500);
  EXPECT_LT(d.position, 1e-4);
  EXPECT_LT(d.yaw, 1e-5);
  EXPECT_LT(d.pitch_roll, 3e-5);
  EXPECT_LT(d.velocity, 3e-3);
  EXPECT_LT(d.travel, 3e-5);
  EXPECT_LT(d.load, 3.0);
  EXPECT_LT(d.spin_rate, 0.5);
  EXPECT_LT(d.spin, 5e-3);
}

}  // namespace
}  // namespace mbo::peers
