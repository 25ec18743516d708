// Our engine against an independent peer: Debian's Simbody 3.7 (issue 3, "Checks"). Simbody
// uses joint coordinates, O(n) recursive dynamics and an error-controlled explicit
// Runge-Kutta (RK-Merson) at accuracy 1e-12 here, so it is the reference; our trapezoidal
// rule is second order, so the differences shrink 4x when dt halves.
//
// The figures in the comments were measured with mbo_peer_divergence (same directory), which
// prints the running maximum of the differences for dt = 1e-3 .. 1e-4 up to a chosen
// horizon. "Difference" is the largest absolute difference of any component of the tracked
// points (m) or unit vectors, sampled every 10 ms.
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "engine_runs.hpp"
#include "simbody_peer.hpp"

namespace mbo::peers {
namespace {

const std::string kModels = std::string(MBO_SOURCE_DIR) + "/config/models";

SimbodyOptions reference() {
  SimbodyOptions o;
  o.accuracy = 1e-12;
  o.constraint_tolerance = 1e-12;
  return o;
}

// 50 rad/s about the initial symmetry axis w0 = (sin 0.3, 0, cos 0.3): a fast top, far from
// the ZYX singularity (pitch stays within about +-0.35 rad while the spin winds yaw up).
TopSpec fast_top() {
  TopSpec s;
  s.omega = {50 * std::sin(0.3), 0, 50 * std::cos(0.3)};
  return s;
}

struct Comparison {
  double max_difference = 0;  // over the samples up to the horizon
  double ours_drift = 0;  // max |E - E0| of our engine
  double peer_drift = 0;  // max |E - E0| of Simbody
  bool converged = true;  // every step of ours
};

// Prints the measured figures next to the test's output, so that the comments can be checked.
Comparison compare(EngineRun& ours, SimbodyPeer& peer, double dt, double horizon) {
  constexpr double kSample = 0.01;
  Comparison c;
  const double e0 = ours.energy(), p0 = peer.energy();
  c.max_difference = max_abs_difference(ours.tracked_values(), peer.tracked());
  const int n = static_cast<int>(std::lround(horizon / kSample));
  for (int k = 1; k <= n; ++k) {
    if (!ours.advance_to(k * kSample, dt)) {
      c.converged = false;
      break;
    }
    peer.advance_to(k * kSample);
    c.max_difference = std::max(c.max_difference, max_abs_difference(ours.tracked_values(), peer.tracked()));
    c.ours_drift = std::max(c.ours_drift, std::abs(ours.energy() - e0));
    c.peer_drift = std::max(c.peer_drift, std::abs(peer.energy() - p0));
  }
  std::printf(
      "[ measured ] %s dt %g over %g s: max difference %.3g, |E-E0| ours %.3g J, "
      "Simbody %.3g J (E0 %.4g J)\n",
      ours.model.name.c_str(), dt, horizon, c.max_difference, c.ours_drift, c.peer_drift, e0);
  return c;
}

// Same masses, geometry, gravity and initial conditions: equal positions and energies at t = 0.
// (This is what first failed: a body attached to a fixed point had that point's mass terms on
// the wrong coordinates, and the double pendulum started with -8.13 J instead of -12.26 J.)
TEST(SimbodyPeer, InitialStatesAgree) {
  auto check = [](EngineRun& ours, SimbodyPeer& peer, const char* what) {
    EXPECT_LT(max_abs_difference(ours.tracked_values(), peer.tracked()), 1e-10) << what;
    EXPECT_NEAR(ours.energy(), peer.energy(), 1e-10 * (1 + std::abs(peer.energy()))) << what;
  };
  check(*engine_double_pendulum(kModels, {}), *SimbodyPeer::double_pendulum({}), "double pendulum");
  check(*engine_spinning_top(kModels, fast_top()), *SimbodyPeer::spinning_top(fast_top()), "top");
  // Our position problem from the JSON's rough guess against the analytic loop closure.
  check(*engine_fourbar(kModels, {}), *SimbodyPeer::fourbar({}), "four-bar");
  check(*engine_slider_crank(kModels, {}), *SimbodyPeer::slider_crank({}), "slider-crank");
  for (int n : {1, 4, 16}) check(*engine_chain(ChainSpec{n}), *SimbodyPeer::chain(ChainSpec{n}), "chain");
}

// Double pendulum started 1.0 and 0.5 rad from hanging, at rest. At this energy its motion is
// not chaotic over tens of seconds: the difference grows about linearly and shrinks as dt^2
// (max over 3 / 10 / 30 s: dt = 1e-3: 3.7e-5, 1.08e-4, 3.2e-4 m; dt = 1e-4: 3.7e-7, 1.08e-6,
// 3.4e-6 m), so 10 s (3 s for the fine step, to keep the test short) is well inside
// agreement.
TEST(SimbodyPeer, DoublePendulumAgrees) {
  {
    auto ours = engine_double_pendulum(kModels, {});
    auto peer = SimbodyPeer::double_pendulum({}, reference());
    const Comparison c = compare(*ours, *peer, 1e-3, 10);
    ASSERT_TRUE(c.converged);
    EXPECT_LT(c.max_difference, 3e-4);  // measured 1.08e-4 m
    EXPECT_LT(c.ours_drift, 3e-4);  // measured 1.01e-4 J (E0 = -12.26 J)
    EXPECT_LT(c.peer_drift, 1e-10);  // measured 2.2e-12 J
  }
  {
    auto ours = engine_double_pendulum(kModels, {});
    auto peer = SimbodyPeer::double_pendulum({}, reference());
    const Comparison c = compare(*ours, *peer, 1e-4, 3);
    ASSERT_TRUE(c.converged);
    EXPECT_LT(c.max_difference, 1e-6);  // measured 3.7e-7 m (1e-3 over 3 s: 3.7e-5 m)
    EXPECT_LT(c.ours_drift, 3e-6);
  }
}

// Heavy top spinning at 50 rad/s. The difference is the trapezoidal rule's phase lag of the
// spin: per step the rule turns by 2 atan(w dt / 2) instead of w dt, a lag of (w dt)^3 / 12,
// so after t seconds the body axes u, v (normal to the spin) are off by w^3 dt^2 t / 12.
// Measured max over 1 / 3 / 10 s: dt = 1e-3: 1.03e-2, 3.06e-2, 0.102; dt = 1e-4: 1.03e-4,
// 3.05e-4, 1.02e-3 (Simbody's own 1e-10 and 1e-12 runs differ by 1.8e-7 over 10 s).
TEST(SimbodyPeer, SpinningTopAgreesUpToTheTrapezoidalPhaseLag) {
  const double w = 50;
  {
    auto ours = engine_spinning_top(kModels, fast_top());
    auto peer = SimbodyPeer::spinning_top(fast_top(), reference());
    const Comparison c = compare(*ours, *peer, 1e-4, 3);
    ASSERT_TRUE(c.converged);
    EXPECT_LT(c.max_difference, 6e-4);  // measured 3.05e-4
    EXPECT_LT(c.ours_drift, 1e-6);  // measured 7.3e-8 J (E0 = 5.47 J)
    EXPECT_LT(c.peer_drift, 1e-10);
  }
  {
    const double dt = 1e-3, t = 1;
    auto ours = engine_spinning_top(kModels, fast_top());
    auto peer = SimbodyPeer::spinning_top(fast_top(), reference());
    const Comparison c = compare(*ours, *peer, dt, t);
    ASSERT_TRUE(c.converged);
    const double lag = w * w * w * dt * dt * t / 12;  // 1.04e-2 rad
    EXPECT_NEAR(c.max_difference / lag, 1.0, 0.1);  // measured 1.03e-2 / 1.04e-2
  }
}

// The same top as a gimbal and a rotor (engine_gyroscope, mb::Rotor): the spin is a scalar
// integrated with its rate, so the phase lag above is gone and what is left is the trapezoidal
// rule's error on the precession and nutation. The top's axes u, v, w, measured max over
// 1 / 3 s: dt = 1e-3: 4.6e-4, 1.5e-3; dt = 1e-4: 1.7e-6, 5.2e-6 (the unit-vector top: 1.0e-2,
// 3.1e-2 at 1e-3). Energy: 1.3e-5 / 1.6e-5 J at 1e-3 over 1 / 3 s (E0 = 5.47 J).
TEST(SimbodyPeer, GyroscopeAgreesWithoutThePhaseLag) {
  auto ours = engine_gyroscope(fast_top());
  auto peer = SimbodyPeer::spinning_top(fast_top(), reference());
  EXPECT_LT(max_abs_difference(ours->tracked_values(), peer->tracked()), 1e-12);
  EXPECT_NEAR(ours->energy(), peer->energy(), 1e-10 * std::abs(peer->energy()));
  const Comparison c = compare(*ours, *peer, 1e-3, 1);
  ASSERT_TRUE(c.converged);
  EXPECT_LT(c.max_difference, 1e-3);  // measured 4.6e-4 (unit-vector top: 1.03e-2)
  EXPECT_LT(c.ours_drift, 4e-5);  // measured 1.3e-5 J
}

// The spatial chain (chain_model.hpp). One body is a spherical pendulum: regular, differences
// grow linearly (dt = 1e-3: 4.3e-5 m over 10 s, 1.3e-4 m over 30 s). Four bodies are chaotic:
// with dt = 1e-3 / 1e-4 the difference is 1.8e-4 / 1.8e-6 m over 3 s and 3.8e-4 / 4.1e-6 m
// over 5 s, then grows fast (7.5e-2 / 9.5e-4 m over 10 s, ~0.24 m over 30 s for every dt;
// even Simbody's 1e-10 and 1e-12 runs part by 9.4e-3 m over 30 s), so 3 s is the horizon.
TEST(SimbodyPeer, ChainAgrees) {
  {
    auto ours = engine_chain(ChainSpec{1});
    auto peer = SimbodyPeer::chain(ChainSpec{1}, reference());
    const Comparison c = compare(*ours, *peer, 1e-3, 10);
    ASSERT_TRUE(c.converged);
    EXPECT_LT(c.max_difference, 1e-4);  // measured 4.3e-5 m
    EXPECT_LT(c.ours_drift, 2e-6);  // measured 6.3e-7 J
  }
  {
    auto ours = engine_chain(ChainSpec{4});
    auto peer = SimbodyPeer::chain(ChainSpec{4}, reference());
    const Comparison c = compare(*ours, *peer, 1e-3, 3);
    ASSERT_TRUE(c.converged);
    EXPECT_LT(c.max_difference, 5e-4);  // measured 1.81e-4 m
    EXPECT_LT(c.ours_drift, 7e-4);  // measured 2.3e-4 J (E0 = -17.2 J)
    EXPECT_LT(c.peer_drift, 1e-10);
  }
}

// The closed loops timed by the bench are the same mechanisms in both programs. Over 3 s the
// four-bar (crank released at 60 deg) differs by 4.9e-5 m and the slider-crank (released at
// the dead centre, passing later dead centres) by 1.25e-5 m with dt = 1e-3.
TEST(SimbodyPeer, ClosedLoopsAgree) {
  {
    auto ours = engine_fourbar(kModels, {});
    auto peer = SimbodyPeer::fourbar({}, reference());
    const Comparison c = compare(*ours, *peer, 1e-3, 3);
    ASSERT_TRUE(c.converged);
    EXPECT_LT(c.max_difference, 1.5e-4);  // measured 4.85e-5 m
    // Trapezoidal energy error is bounded, not a drift: 9.5e-3 J over 3 s, 9.7e-3 J over
    // 30 s (E0 = 387 J); Simbody: 1.3e-10 J.
    EXPECT_LT(c.ours_drift, 3e-2);
    EXPECT_LT(c.peer_drift, 1e-9);
  }
  {
    auto ours = engine_slider_crank(kModels, {});
    auto peer = SimbodyPeer::slider_crank({}, reference());
    const Comparison c = compare(*ours, *peer, 1e-3, 3);
    ASSERT_TRUE(c.converged);
    EXPECT_LT(c.max_difference, 4e-5);  // measured 1.25e-5 m
    EXPECT_LT(c.ours_drift, 2e-4);  // measured 6.5e-5 J (6.8e-5 J over 30 s)
    EXPECT_LT(c.peer_drift, 1e-9);  // measured 3.7e-11 J
  }
}

}  // namespace
}  // namespace mbo::peers
