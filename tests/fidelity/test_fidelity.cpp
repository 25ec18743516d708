// The vehicle model's fidelity at the shipped step (2 ms) against analytic references
// (fidelity.hpp says what each case does; mbo_fidelity prints them at 1, 2 and 5 ms). The
// figure next to each tolerance is the one measured at 2 ms. The sanitizer build runs the
// same cases over fewer seconds.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "fidelity.hpp"

using namespace mbo::fidelity;

namespace {

Options shipped() {
  Options o;
  o.dt = 0.002;
#ifdef MBO_SANITIZED
  o.short_run = true;
#endif
  return o;
}

}  // namespace

// Acceptance of issue 22: in the truth, d(wheel angle)/dt is the wheel's spin rate within
// 0.01 % at 80 and 160 km/h. Measured: 1e-13 per step, 3e-10 / 4e-10 over 1 s (before the
// wheels became rotors: 0.17 % and 0.66 % short, the trapezoidal rule's (w dt)^2/12).
TEST(Fidelity, WheelAngleAdvancesByItsRate) {
  for (double kmh : {80.0, 160.0}) {
    const SpinRate r = spin_rate(shipped(), kmh);
    std::printf("[ measured ] %.0f km/h, %.2f rad/s: per step %.2e, over 1 s %.2e\n", kmh, r.rate, r.step_error,
                r.window_error);
    EXPECT_LT(r.step_error, 1e-4) << kmh;
    EXPECT_LT(r.window_error, 1e-6) << kmh;
  }
}

// A freely spinning wheel turns by w t: measured 9e-14 (the unit-vector wheel: -0.17 %).
TEST(Fidelity, FreeWheelTurnsByRateTimesTime) {
  const FreeSpin f = free_spin(shipped());
  std::printf("[ measured ] free wheel at %.2f rad/s: angle error %.2e, rate drift %.2e\n", f.rate, f.error(),
              f.rate_drift);
  EXPECT_LT(std::abs(f.error()), 1e-9);
  EXPECT_LT(std::abs(f.rate_drift), 1e-9);
}

// Steady cornering at 0.05 and 0.1 g, 20 m/s, against the linear single-track model, with the
// sedan stripped of what that model leaves out (static toe, drag, rolling resistance):
// yaw-rate gain -0.08 %, sideslip -0.0004 deg, understeer gradient +0.7 %. The shipped sedan
// is 13.6 % more understeering than its axle stiffnesses say (its rear toe-in turns the
// lateral load transfer into rear grip; drag and rolling resistance move load rearwards).
TEST(Fidelity, SteadyCorneringMatchesTheSingleTrackModel) {
  const Cornering a = cornering(shipped(), 20, 0.05), b = cornering(shipped(), 20, 0.1);
  const Understeer u = understeer(a, b);
  std::printf(
      "[ measured ] 20 m/s, %.3f g: yaw-rate gain %.4f vs %.4f 1/s, sideslip %.4f vs %.4f deg; understeer "
      "gradient %.5f vs %.5f rad/g\n",
      b.ay_g, b.yaw_rate_gain, b.yaw_rate_gain_ref, b.sideslip_deg, b.sideslip_ref_deg, u.gradient, u.reference);
  for (const Cornering* c : {&a, &b}) {
    EXPECT_LT(c->spread, 1e-3);  // steady
    EXPECT_NEAR(c->yaw_rate_gain / c->yaw_rate_gain_ref, 1, 0.01);
    EXPECT_NEAR(c->sideslip_deg, c->sideslip_ref_deg, 0.005);
  }
  EXPECT_NEAR(u.gradient / u.reference, 1, 0.05);
}

// Coasting from 30 m/s against the closed form: worst 0.028 % over 20 s.
TEST(Fidelity, CoastDownMatchesDragAndRollingResistance) {
  const CoastDown c = coast_down(shipped());
  std::printf("[ measured ] coast-down over %.0f s: worst %.4f %%, %.4f vs %.4f m/s at the end\n", c.duration,
              100 * c.worst, c.speed_end, c.ref_end);
  EXPECT_LT(c.worst, 1e-3);
}

// Load transfer against the static formulas. Longitudinal (500 N m on each rear wheel, 1.9
// m/s^2): -671.5 N on the front axle against -610.5 N from -M a_x h / L (+10 %: the body's
// squat moves G rearwards, the rolling-resistance moments, the drag's moment and the wheels'
// spin-up add the rest; with them the balance closes to 0.00 %). Lateral (0.38 g): the roll
// moment of the wheel loads -3286 N m against -M a_y h = -3230 N m (+1.7 %: the gyroscopic
// moment of the spinning wheels turned by the yaw rate; with it, 0.01 %).
TEST(Fidelity, LoadTransferMatchesTheStaticFormulas) {
  const LoadTransfer lon = longitudinal_transfer(shipped()), lat = lateral_transfer(shipped());
  std::printf("[ measured ] longitudinal a_x %.2f: %.1f N, formula %.1f N, balance %.1f N\n", lon.accel, lon.measured,
              lon.formula, lon.balance);
  std::printf("[ measured ] lateral a_y %.2f: %.0f N m, formula %.0f N m, balance %.0f N m\n", lat.accel, lat.measured,
              lat.formula, lat.balance);
  EXPECT_NEAR(lon.measured / lon.formula, 1, 0.15);
  EXPECT_NEAR(lon.measured / lon.balance, 1, 0.01);
  EXPECT_NEAR(lat.measured / lat.formula, 1, 0.03);
  EXPECT_NEAR(lat.measured / lat.balance, 1, 0.002);
}

// An undamped bounce (2 cm drop, 186 J): the energy drifts down by 1.6 % in 10 s at 2 ms
// (0.25 % at 1 ms, 7 % at 5 ms). It is the Newton tolerance (1e-6) with the wheels' rotor
// coupling: with 1e-10 the energy stays within +-0.6 J.
TEST(Fidelity, UndampedBounceKeepsItsEnergy) {
  const Bounce b = bounce(shipped());
  std::printf("[ measured ] bounce over %.0f s: |E - E0| max %.3f J of %.2f J (%.2f %%)\n", b.duration, b.drift,
              b.bounce_energy, 100 * b.relative());
  EXPECT_LT(b.relative(), 0.03);
}

// A straight run's speed from the simulated Hall counts: the rate from the counts is the
// truth's mean spin rate within one tooth over the run (2.2e-4 of 10 s at 80 km/h); the speed
// from it, times the effective rolling radius, is the truth's speed plus the wheel's slip
// (-0.053 %, its rolling resistance). Measured at 80 / 160 km/h: rate +0.0021 / +0.0007 %,
// speed -0.0505 / -0.0517 %.
TEST(Fidelity, SpeedFromHallCountsIsTheTruthsSpeed) {
  for (double kmh : {80.0, 160.0}) {
    const CountSpeed c = count_speed(shipped(), kmh);
    const double tooth = 2 * M_PI / 40 / (c.rate_truth * c.duration);  // one count over the run, relative
    std::printf("[ measured ] %.0f km/h over %.0f s: rate %+.4f %%, speed %+.4f %%, slip %+.4f %%, one tooth %.4f %%\n",
                kmh, c.duration, 100 * (c.rate_counts / c.rate_truth - 1), 100 * (c.speed_counts / c.speed_truth - 1),
                100 * c.slip, 100 * tooth);
    EXPECT_LT(std::abs(c.rate_counts / c.rate_truth - 1), tooth) << kmh;
    EXPECT_LT(std::abs(c.speed_counts / c.speed_truth - 1 - c.slip), tooth + 1e-4) << kmh;
  }
}

// Acceptance of issue 22: the simulated Hall counts are floor(integral of w dt / (2 pi /
// teeth)) at every sample of an ABS stop (the integral taken here by Gauss-Legendre on the
// rate's cubic, independently of the sensor simulation). Measured: 8000 samples, none differs.
TEST(Fidelity, HallCountsAreTheFloorOfTheIntegratedRate) {
  const HallExactness h = hall_exactness(shipped());
  std::printf("[ measured ] %ld samples, %ld differ, %ld at an edge; Hall angle - model angle <= %.2e rad\n", h.samples,
              h.mismatches, h.ambiguous, h.model_angle_gap);
  EXPECT_GT(h.samples, 1000);
  EXPECT_EQ(h.mismatches, 0);
  EXPECT_LE(h.ambiguous, 1);
}

// The other rotations the engine carries by unit vectors, at the speeds they reach, 2 ms: the
// chassis yaw at full lock and 5 m/s (1.1 rad/s) falls (r dt)^2/12 = 4.1e-7 short per step,
// 2.1e-6 rad in 6 s; the steering is a driven angle (1.9e-9, rounding); the four-bar crank of
// Sinigaglia 2016's scenario (up to 7.2 rad/s) 1.6e-5 per step, 9.0e-5 rad in 10 s (5.6e-4 at
// the scenario's 5 ms: 3 % of its encoder's 1 deg noise); the slider-crank 2.6e-6 rad in 10 s.
// None of these is a wheel's 0.17 %: they are left to the trapezoidal rule.
TEST(Fidelity, OtherRotationsLagNegligibly) {
  const Options o = shipped();
  const RotationLag yaw = chassis_yaw(o), steer = steering(o), crank = fourbar_crank(o), slider = slider_crank(o);
  std::printf("[ measured ] yaw %.2f rad/s: step %.2e (expected %.2e), %.2e rad\n", yaw.max_rate, yaw.step_shortfall,
              yaw.expected, yaw.accumulated);
  std::printf("[ measured ] steering %.2f rad/s: step %.2e, %.2e rad\n", steer.max_rate, steer.step_shortfall,
              steer.accumulated);
  std::printf("[ measured ] four-bar %.2f rad/s: step %.2e (expected %.2e), %.2e rad\n", crank.max_rate,
              crank.step_shortfall, crank.expected, crank.accumulated);
  std::printf("[ measured ] slider-crank %.2f rad/s: step %.2e (expected %.2e), %.2e rad\n", slider.max_rate,
              slider.step_shortfall, slider.expected, slider.accumulated);
  EXPECT_GT(yaw.max_rate, 1.0);
  EXPECT_NEAR(yaw.step_shortfall / yaw.expected, 1, 0.1);
  EXPECT_LT(std::abs(yaw.accumulated), 1e-5);
  EXPECT_LT(std::abs(steer.step_shortfall), 1e-6);
  EXPECT_GT(crank.max_rate, 5.0);
  EXPECT_NEAR(crank.step_shortfall / crank.expected, 1, 0.1);
  EXPECT_LT(std::abs(crank.accumulated), 5e-4);
  EXPECT_LT(std::abs(slider.accumulated), 1e-5);
}
