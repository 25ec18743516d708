// The plant noise's adaptation to the GNSS innovations: it falls while they are white and
// consistent, rises and remembers a floor when they drift, and goes back to the configured
// noise when no fix says anything.
#include <random>

#include <gtest/gtest.h>

#include "mbobserver/estimation/plant_noise_adaptation.hpp"

using mbo::est::PlantNoiseAdaptation;
using mbo::est::PlantNoiseAdaptationConfig;

namespace {

PlantNoiseAdaptationConfig on() {
  PlantNoiseAdaptationConfig c;
  c.on = true;
  c.min_scale = 1e-4;
  c.fall_s = 0.25;
  return c;
}

// `seconds` of 50 Hz fixes, the four GNSS rows each with unit variance, innovations N(bias, 1), on a
// 500 Hz step; t advances.
void drive(PlantNoiseAdaptation& a, double& t, double seconds, double bias, std::mt19937& rng) {
  std::normal_distribution<double> n(bias, 1);
  const double dt = 0.002;
  for (int k = 0; k < static_cast<int>(seconds / dt + 0.5); ++k) {
    t += dt;
    if (k % 10 == 0)
      for (int r = 0; r < PlantNoiseAdaptation::kGnssRows; ++r) a.observe(r, n(rng), 1.0, t);
    a.advance(t, dt);
  }
}

// An adaptation that has seen `seconds` of white innovations from seed `seed`.
PlantNoiseAdaptation settled(unsigned seed, double& t, std::mt19937& rng, double seconds = 10) {
  PlantNoiseAdaptation a(on());
  rng.seed(seed);
  t = 0;
  drive(a, t, seconds, 0, rng);
  return a;
}

}  // namespace

TEST(PlantNoiseAdaptation, FallsToItsFloorWhileTheInnovationsAreWhite) {
  PlantNoiseAdaptation a(on());
  std::mt19937 rng(7);
  double t = 0;
  drive(a, t, 0.9, 0, rng);
  EXPECT_EQ(a.scale(), 1.0);  // the window is not full yet: no evidence
  drive(a, t, 10, 0, rng);
  EXPECT_EQ(a.scale(), 1e-4);
  EXPECT_NEAR(a.mean_nis(), 1.0, 0.35);
}

TEST(PlantNoiseAdaptation, ADriftTheNisMissesRaisesItAndSetsAFloor) {
  std::mt19937 rng;
  double t = 0;
  auto a = settled(3, t, rng);
  ASSERT_EQ(a.scale(), 1e-4);
  // a bias of 0.7 sigma: the NIS mean 1.5, at the limit, but the means 5 standard errors out
  drive(a, t, 1.5, 0.7, rng);  // shorter than sustained_s
  EXPECT_GT(a.bias_test(), 4.0);
  EXPECT_GT(a.scale(), 0.01);  // rising by e every rise_s since the test failed
  EXPECT_GE(a.floor(), 0.9e-3);  // ten times where it failed, less what it forgot since
  const double floor = a.floor();
  drive(a, t, 5, 0, rng);  // white again: it falls, but only to the floor it remembers
  EXPECT_LT(a.scale(), 0.2);
  EXPECT_GE(a.scale(), 0.9 * floor);
  drive(a, t, 300, 0, rng);  // forgotten over floor_memory_s
  EXPECT_EQ(a.scale(), 1e-4);
  // a drift that lasts: the model is not this car, the configured noise is the floor, and a
  // restart (a reset of the model) does not forget it
  drive(a, t, 4, 0.7, rng);
  EXPECT_GT(a.floor(), 0.9);
  a.restart();
  drive(a, t, 5, 0, rng);
  EXPECT_GT(a.scale(), 0.8);
}

TEST(PlantNoiseAdaptation, WithoutFixesItReturnsToTheConfiguredNoise) {
  std::mt19937 rng;
  double t = 0;
  auto a = settled(5, t, rng);
  ASSERT_EQ(a.scale(), 1e-4);
  for (int k = 0; k < 2000; ++k) t += 0.002, a.advance(t, 0.002);  // a 4 s outage
  EXPECT_EQ(a.scale(), 1.0);
  a.restart();
  EXPECT_EQ(a.scale(), 1.0);
}

TEST(PlantNoiseAdaptation, OffItStaysAtOne) {
  auto c = on();
  c.on = false;
  PlantNoiseAdaptation a(c);
  std::mt19937 rng(1);
  double t = 0;
  drive(a, t, 10, 0, rng);
  EXPECT_EQ(a.scale(), 1.0);
}

TEST(PlantNoiseAdaptation, ADriftOfTheYawGyroAloneRaisesIt) {
  // A wrong lateral model that the GNSS takes for a heading error shows in the gyro's rows.
  PlantNoiseAdaptation a(on());
  std::mt19937 rng(11);
  std::normal_distribution<double> white(0, 1), drifting(0.5, 1);
  double t = 0;
  auto run = [&](double seconds, std::normal_distribution<double>& gyro) {
    for (int k = 0; k < static_cast<int>(seconds / 0.002 + 0.5); ++k) {
      t += 0.002;
      if (k % 10 == 0)
        for (int r = 0; r < PlantNoiseAdaptation::kGnssRows; ++r) a.observe(r, white(rng), 1.0, t);
      a.observe(PlantNoiseAdaptation::kGyroRow, gyro(rng), 1.0, t);
      a.advance(t, 0.002);
    }
  };
  run(10, white);
  ASSERT_EQ(a.scale(), 1e-4);
  run(1.5, drifting);
  EXPECT_GT(a.bias_test(), 4.0);
  EXPECT_GT(a.scale(), 1e-3);
}

TEST(PlantNoiseAdaptation, ATyreAtItsLimitPutsItBackToTheConfiguredNoise) {
  // ABS braking: the model's force depends on a friction the innovations cannot check.
  std::mt19937 rng;
  double t = 0;
  auto a = settled(13, t, rng);
  ASSERT_LT(a.scale(), 0.01);
  t += 0.002;
  a.advance(t, 0.002, true);
  EXPECT_EQ(a.scale(), 1.0);
  drive(a, t, 10, 0, rng);  // back in the tyres' linear range: it falls again (to a floor a
  EXPECT_LT(a.scale(), 0.01);  // chance failure of the 4-sigma test may have left)
}
