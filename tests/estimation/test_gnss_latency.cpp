// The GNSS latency learned from the lag between the receiver's velocity and the model's
// (aiding/gnss_latency.hpp): the model's velocity history, the estimate on a drive whose speed
// and heading change, its 1-sigma against the spread over seeds, and what it does where the
// velocity does not change. The misfit is taken across the path: a lag shows where it turns.
#include <cmath>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "mbobserver/estimation/aiding/gnss_latency.hpp"

using namespace mbo::est::aiding;

namespace {

// A drive: speed 10 + 4 sin(0.5 t) m/s along a heading that turns as 0.8 sin(0.3 t) rad (up to
// 2.4 m/s^2 across the path).
void velocity(double t, double& ve, double& vn) {
  const double s = 10 + 4 * std::sin(0.5 * t), psi = 0.8 * std::sin(0.3 * t);
  ve = s * std::cos(psi), vn = s * std::sin(psi);
}

// Runs `seconds` of it at 2 ms steps with a receiver at `rate_hz`, latency `tau`, noise sigma_v.
// `heading_error`: the model's velocity turned by this (rad), as a gyro bias not yet learned turns it.
LatencyEstimator drive(double tau, double sigma_v, unsigned seed, double seconds, const LatencyEstimatorConfig& c,
                       double rate_hz = 10, double heading_error = 0) {
  LatencyEstimator est(c);
  VelocityHistory h(1024);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, sigma_v);
  const double dt = 0.002, period = 1 / rate_hz;
  double next = 1.0;
  for (int k = 0; k * dt <= seconds; ++k) {
    const double t = k * dt;
    double ve, vn;
    velocity(t, ve, vn);
    const double ce = std::cos(heading_error), se = std::sin(heading_error);
    h.push(t, ce * ve - se * vn, se * ve + ce * vn);
    if (t + 1e-9 >= next) {
      next += period;
      velocity(t - tau, ve, vn);
      est.observe(t, ve + noise(rng), vn + noise(rng), h);
    }
  }
  return est;
}

}  // namespace

TEST(GnssLatency, TheHistoryInterpolatesBetweenSteps) {
  VelocityHistory h(4);
  EXPECT_TRUE(h.empty());
  double ve = 0, vn = 0;
  EXPECT_FALSE(h.at(0, ve, vn));
  for (int k = 0; k < 6; ++k) h.push(0.002 * k, k, -2.0 * k);  // keeps the last 4: k = 2..5
  EXPECT_DOUBLE_EQ(h.newest_t(), 0.010);
  ASSERT_TRUE(h.at(0.005, ve, vn));
  EXPECT_NEAR(ve, 2.5, 1e-12);
  EXPECT_NEAR(vn, -5.0, 1e-12);
  EXPECT_FALSE(h.at(0.0039, ve, vn)) << "older than kept";
  EXPECT_FALSE(h.at(0.0101, ve, vn)) << "newer than kept";
  h.push(0.010, 99, 99);  // not after the newest: ignored
  ASSERT_TRUE(h.at(0.010, ve, vn));
  EXPECT_DOUBLE_EQ(ve, 5);
}

TEST(GnssLatency, FindsTheLatencyWhereThePathTurns) {
  LatencyEstimatorConfig c;
  c.velocity_std = 0.1;
  for (double tau : {0.0, 0.1, 0.23}) {
    const auto est = drive(tau, 0.1, 7, 120, c);
    EXPECT_NEAR(est.value(), tau, 4 * est.std()) << tau;
    EXPECT_LT(est.std(), 0.004) << tau;
    EXPECT_GT(est.std(), 1e-4) << tau;
  }
}

// A heading error of the model is the same misfit across the path at every lag. Turning one way
// it is also what a lag gives (0.02 rad at 0.24 rad/s is 0.083 s), so the estimate must not
// claim one; turning both ways tells them apart (a lag's misfit changes sign with the turn).
TEST(GnssLatency, AHeadingErrorIsNotALag) {
  LatencyEstimatorConfig c;
  c.velocity_std = 0.1;
  LatencyEstimator est(c);
  VelocityHistory h(1024);
  std::mt19937_64 rng(9);
  std::normal_distribution<double> noise(0, 0.1);
  const double tau = 0.1, heading_error = 0.02, speed = 10, dt = 0.002;
  double psi = 0;
  auto turn = [&](double rate, double seconds, double t0) {
    std::vector<std::pair<double, double>> psis;  // (t, psi) of the truth, for the lagged samples
    for (int k = 0; k * dt < seconds; ++k) {
      const double t = t0 + k * dt;
      psi += rate * dt;
      psis.emplace_back(t, psi);
      const double m = psi + heading_error;  // the model's heading
      h.push(t, speed * std::cos(m), speed * std::sin(m));
      if (k % 50 == 0 && static_cast<double>(psis.size()) * dt > 1) {
        const double lagged = psis[psis.size() - 1 - static_cast<std::size_t>(tau / dt)].second;
        est.observe(t, speed * std::cos(lagged) + noise(rng), speed * std::sin(lagged) + noise(rng), h);
      }
    }
  };
  turn(0.24, 60, 0);  // left only
  const double one_way = est.value(), one_way_std = est.std();
  EXPECT_TRUE(std::abs(one_way - tau) < 3 * one_way_std || one_way_std > 0.02)
      << "one way: " << one_way << " +- " << one_way_std;
  turn(-0.24, 60, 60);  // then right
  EXPECT_NEAR(est.value(), tau, 3 * est.std()) << "both ways";
  EXPECT_LT(est.std(), 0.005);
}

// Its 1-sigma is what the estimates' spread over seeds is (NEES near 1).
TEST(GnssLatency, ItsSigmaIsTheSpreadOverSeeds) {
  LatencyEstimatorConfig c;
  c.velocity_std = 0.1;
  double nees = 0;
  const int seeds = 40;
  for (int s = 0; s < seeds; ++s) {
    const auto est = drive(0.1, 0.1, static_cast<unsigned>(s + 1), 30, c);
    const double e = (est.value() - 0.1) / est.std();
    nees += e * e / seeds;
  }
  EXPECT_GT(nees, 0.4);
  EXPECT_LT(nees, 2.0);
}

// A receiver velocity error that lasts (a Gauss-Markov error of 0.1 m/s across the path with a
// 3-s correlation time, as a model's sideslip error lasts for a turn) on top of the white
// noise: counted as independent samples the misfits made the sigma too small (NEES 24.6 over
// these seeds); their batch means widen it (2.6: a minute gives them some 20 blocks, whose own
// spread leaves the NEES above 1).
TEST(GnssLatency, ItsSigmaHoldsAnErrorThatLasts) {
  LatencyEstimatorConfig c;
  c.velocity_std = 0.1;
  double nees = 0;
  const int seeds = 30;
  for (int s = 0; s < seeds; ++s) {
    LatencyEstimator est(c);
    VelocityHistory h(1024);
    std::mt19937_64 rng(static_cast<unsigned>(100 + s));
    std::normal_distribution<double> noise(0, 0.1), unit(0, 1);
    const double dt = 0.002, tau = 0.1, corr = 3.0, a = std::exp(-0.1 / corr);
    double slow = 0.1 * unit(rng), next = 1.0;
    for (int k = 0; k * dt <= 60; ++k) {
      const double t = k * dt;
      double ve, vn;
      velocity(t, ve, vn);
      h.push(t, ve, vn);
      if (t + 1e-9 >= next) {
        next += 0.1;
        slow = a * slow + 0.1 * std::sqrt(1 - a * a) * unit(rng);
        velocity(t - tau, ve, vn);
        const double g = std::hypot(ve, vn);
        est.observe(t, ve - slow * vn / g + noise(rng), vn + slow * ve / g + noise(rng), h);
      }
    }
    const double e = (est.value() - tau) / est.std();
    nees += e * e / seeds;
  }
  std::printf("latency NEES with a lasting error: %.2f\n", nees);
  EXPECT_LT(nees, 4.0);
}

// At constant velocity every lag fits alike: the estimate stays at its prior, as unsure.
TEST(GnssLatency, ConstantVelocityTeachesNothing) {
  LatencyEstimatorConfig c;
  c.initial = 0.05;
  c.initial_std = 0.03;
  LatencyEstimator est(c);
  VelocityHistory h(1024);
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 0.1);
  for (int k = 0; k < 60000; ++k) {
    const double t = 0.002 * k;
    h.push(t, 20, 5);
    if (k % 50 == 0 && t > 1) est.observe(t, 20 + noise(rng), 5 + noise(rng), h);
  }
  EXPECT_NEAR(est.value(), 0.05, 0.01);
  EXPECT_GT(est.std(), 0.02);
  EXPECT_LE(est.std(), 0.03);
  EXPECT_GT(est.evidence(), 100);
}

// A restored calibration centres the prior; a slow car says nothing.
TEST(GnssLatency, RestoredAndSlowSamples) {
  LatencyEstimatorConfig c;
  LatencyEstimator est(c);
  est.restore(0.12, 0.004);
  EXPECT_DOUBLE_EQ(est.value(), 0.12);
  EXPECT_DOUBLE_EQ(est.std(), 0.004);
  est.restore(0.12, 1.0);  // never less sure than the configured start
  EXPECT_DOUBLE_EQ(est.std(), c.initial_std);
  VelocityHistory h(1024);
  for (int k = 0; k < 1000; ++k) h.push(0.002 * k, 0.1, 0);
  est.observe(1.5, 0.2, 0, h);
  EXPECT_EQ(est.evidence(), 0) << "below min_speed";
  est.observe(0.3, 5, 0, h);
  EXPECT_EQ(est.evidence(), 0) << "older than the history's longest lag";
}
