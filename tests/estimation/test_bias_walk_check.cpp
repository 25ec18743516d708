// What the car's stops say of a learned gyro bias's random walk (bias_walk_check.hpp): the
// normalised innovation of the bias a stop measures, and the walk's scale it leads to.
#include <gtest/gtest.h>

#include "mbobserver/estimation/bias_walk_check.hpp"

using mbo::est::BiasWalkCheck;
using mbo::est::BiasWalkCheckConfig;

namespace {

// Moving until t0 with the bias at b0 +- sqrt(P0), then standing from t0 with bs +- sqrt(Ps)
// until t1, in 2 ms steps; returns the scale at t1.
double stop(BiasWalkCheck& c, double t0, double t1, double b0, double P0, double bs, double Ps) {
  double scale = 1;
  for (double t = t0 - 1; t < t0; t += 0.002) scale = c.update(t, false, b0, P0);
  for (double t = t0; t < t1; t += 0.002) scale = c.update(t, true, bs, Ps);
  return scale;
}

}  // namespace

TEST(BiasWalkCheck, AStopThatFindsTheBiasWhereItsSigmaSaidLeavesTheWalkAsConfigured) {
  BiasWalkCheck c;
  // 0.5 sigma off: NIS 0.25
  EXPECT_EQ(stop(c, 10, 13, 0.0, 1e-8, 0.5e-4, 1e-10), 1.0);
  EXPECT_EQ(c.stops_checked(), 1);
  EXPECT_NEAR(c.last_nis(), 2.5e-9 / (1e-8 - 1e-10), 1e-12);
}

TEST(BiasWalkCheck, AStopThatFindsItTenSigmaOffScalesTheWalkByItsNis) {
  BiasWalkCheck c;
  const double scale = stop(c, 10, 13, 0.0, 1e-8, 1e-3, 1e-10);  // 10 sigma: NIS 101
  EXPECT_NEAR(scale, 1e-6 / (1e-8 - 1e-10), 1e-9);
  EXPECT_EQ(c.scale(), scale);
  // the next stop judges the walk as scaled: consistent now, it stays
  EXPECT_EQ(stop(c, 30, 33, 1e-3, 1e-6, 1.5e-3, 1e-9), scale);
  // an inconsistent one again multiplies, up to max_scale of the configured walk
  EXPECT_EQ(stop(c, 50, 53, 0.0, 1e-8, 1e-2, 1e-10), BiasWalkCheckConfig{}.max_scale);
}

TEST(BiasWalkCheck, OnlyASettledStopThatTaughtTheBiasCounts) {
  BiasWalkCheck c;
  EXPECT_EQ(stop(c, 10, 11.5, 0.0, 1e-8, 1e-3, 1e-10), 1.0) << "1.5 s is not settled (2 s)";
  EXPECT_EQ(c.stops_checked(), 0);
  EXPECT_EQ(stop(c, 20, 23, 0.0, 1e-8, 1e-3, 0.8e-8), 1.0) << "the stop halved no variance";
  EXPECT_EQ(c.stops_checked(), 0);
  // a reset forgets the bias before it
  BiasWalkCheck d;
  for (double t = 0; t < 1; t += 0.002) d.update(t, false, 0.0, 1e-8);
  d.restart();
  for (double t = 1; t < 4; t += 0.002) d.update(t, true, 1e-3, 1e-10);
  EXPECT_EQ(d.stops_checked(), 0);
  // and nothing at all when off
  BiasWalkCheckConfig off;
  off.on = false;
  BiasWalkCheck e(off);
  EXPECT_EQ(stop(e, 10, 13, 0.0, 1e-8, 1e-3, 1e-10), 1.0);
}
