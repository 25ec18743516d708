// The test that releases held wheel scales (scale_release.hpp): the along-track GNSS velocity
// innovations of a consistent filter leave them held; a bias of one sigma releases them
// once a window's mean has shown it for sustained_s.
#include <gtest/gtest.h>

#include <random>

#include "mbobserver/estimation/scale_release.hpp"

using mbo::est::ScaleRelease;
using mbo::est::ScaleReleaseConfig;

namespace {

ScaleReleaseConfig on() {
  ScaleReleaseConfig c;  // window 2 s, 4 sigma for 1 s
  c.on = true;
  return c;
}

// Unit-variance innovations plus `bias` at 10 Hz from t0 to t1; returns the first time the
// scales are released, -1 if not.
double drive(ScaleRelease& r, double t0, double t1, double bias, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> n(0, 1);
  for (double t = t0; t < t1; t += 0.1) {
    r.observe(n(gen) + bias, t);
    if (r.released()) return t;
  }
  return -1;
}

}  // namespace

TEST(ScaleRelease, ConsistentInnovationsKeepTheScalesHeld) {
  // 20 drives of 10 min: a 4-sigma mean for 1 s is what white noise does not do
  for (unsigned seed = 1; seed <= 20; ++seed) {
    ScaleRelease r(on());
    EXPECT_LT(drive(r, 0, 600, 0.0, seed), 0.0) << "seed " << seed << ", test " << r.test();
    EXPECT_FALSE(r.released());
  }
}

TEST(ScaleRelease, ABiasOfOneSigmaReleasesThemAfterAWindowAndTheSustainedTime) {
  ScaleRelease r(on());
  // the mean of a 2 s window at 10 Hz has a standard error of about 0.22: 1 sigma is 4.5 of them
  const double t = drive(r, 10, 40, 1.0, 7);
  ASSERT_GE(t, 0.0) << "test " << r.test();
  EXPECT_GE(t, 10 + 2 + 1 - 1e-9) << "before a window's mean had been failing for 1 s";
  EXPECT_LT(t, 20.0);
  EXPECT_TRUE(r.released());
  // released stays released
  r.observe(0.0, 100);
  EXPECT_TRUE(r.released());
}

TEST(ScaleRelease, APauseInTheSamplesStartsTheSustainedTimeAnew) {
  ScaleRelease r(on());
  // a strong bias for 2.5 s: failing from the window's end at 2 s, 0.5 s, then a stop
  for (double t = 0; t < 2.55; t += 0.1) r.observe(3.0, t);
  EXPECT_GT(r.test(), 4.0);
  EXPECT_FALSE(r.released());
  // at speed again 10 s later, consistent: the old mean is forgotten, nothing released
  EXPECT_LT(drive(r, 12.5, 60, 0.0, 5), 0.0) << r.test();
  // the same bias without the stop releases
  ScaleRelease s(on());
  for (double t = 0; t < 3.55 && !s.released(); t += 0.1) s.observe(3.0, t);
  EXPECT_TRUE(s.released());
}

TEST(ScaleRelease, OffOrReleasedByACalibrationItDoesNothingMore) {
  ScaleReleaseConfig c = on();
  c.on = false;
  ScaleRelease off(c);
  EXPECT_LT(drive(off, 0, 30, 3.0, 3), 0.0);
  ScaleRelease r(on());
  r.release();
  EXPECT_TRUE(r.released());
  r.observe(1.0, 0.1);  // observing after the release changes nothing
  EXPECT_EQ(r.test(), 0.0);
}
