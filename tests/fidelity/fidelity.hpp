// The vehicle model's fidelity at a given step, against analytic references (issue 22): each
// case drives the sedan of config/vehicles through one manoeuvre and returns what it measured
// next to what the reference says. test_fidelity.cpp asserts them with stated tolerances at
// the shipped step; mbo_fidelity prints the table at 1, 2 and 5 ms.
#pragma once

#include <string>
#include <vector>

namespace mbo::fidelity {

// `short_run`: the sanitizer builds' shorter version of the same case (fewer seconds).
struct Options {
  double dt = 0.002;
  bool short_run = false;
};

// d(wheel angle)/dt against the wheel's spin rate, straight at a held speed: over 1 s, the
// largest |(theta_{n+1} - theta_n) / (dt (w_n + w_{n+1}) / 2) - 1| of the four wheels, and the
// same over the whole window against the Hermite integral of the rate.
struct SpinRate {
  double speed_kmh = 0, rate = 0;  // rad/s, front left
  double step_error = 0, window_error = 0;  // relative
};
SpinRate spin_rate(const Options& o, double speed_kmh);

// A freely spinning wheel: the sedan in the air without gravity, drag or preload, its wheels
// turning at 80 km/h's rate w; after 1 s the angle against w t.
struct FreeSpin {
  double rate = 0, angle = 0, expected = 0;
  double error() const { return angle / expected - 1; }
  double rate_drift = 0;  // relative
};
FreeSpin free_spin(const Options& o);

// Steady cornering at a low lateral acceleration against the linear single-track model of the
// same mass, geometry and axle cornering stiffnesses (two tyres' slip stiffness times their
// static load): yaw-rate gain and sideslip at the centre of gravity; and the understeer
// gradient d(delta - L/R)/d(a_y) from two such circles against m/L (l_r/C_f - l_f/C_r).
// `as_shipped` false: the sedan without what the single-track model leaves out (static toe,
// drag, rolling resistance); true: config/vehicles/sedan.json as it is.
struct Cornering {
  double speed = 0, ay_g = 0, steer = 0;
  double yaw_rate_gain = 0, yaw_rate_gain_ref = 0;  // 1/s
  double sideslip_deg = 0, sideslip_ref_deg = 0;
  double spread = 0;  // relative yaw-rate spread over the last second (steadiness)
};
Cornering cornering(const Options& o, double speed, double ay_g, bool as_shipped = false);
struct Understeer {
  double gradient = 0, reference = 0;  // rad/g
};
Understeer understeer(const Options& o, bool as_shipped = false);  // circles at 20 m/s, 0.05 and 0.1 g
Understeer understeer(const Cornering& a, const Cornering& b);  // from two circles at one speed

// Coasting from 30 m/s with no inputs against the closed form of M_eff dv/dt = -f_r M g -
// 1/2 rho Cd A v^2, M_eff = M + sum I_spin / (rho R_e): the largest relative speed error at
// 5 s intervals.
struct CoastDown {
  double duration = 0, worst = 0, speed_end = 0, ref_end = 0;
};
CoastDown coast_down(const Options& o);

// Load transfer: the front axle's load change under a steady drive torque against the static
// formula -M a_x h / L; the roll moment of the wheel loads sum Fz_i (y_i - y_G) in a steady
// circle at 0.4 g against M a_y h (h: the whole car's centre of gravity over the road). The
// balances with what the static formulas leave out (the wheels' spin angular momentum, the
// rolling-resistance moments, the drag's moment) are given too.
struct LoadTransfer {
  double accel = 0;  // a_x or a_y, m/s^2
  double measured = 0, formula = 0, balance = 0;  // N (longitudinal) or N m (lateral)
};
LoadTransfer longitudinal_transfer(const Options& o);
LoadTransfer lateral_transfer(const Options& o);

// An undamped bounce: the sedan without dampers, tyre damping, rolling resistance, drag or
// friction, dropped 2 cm onto its springs at rest; the largest |E - E0| over the run relative
// to the bounce's energy (E0 minus the energy at rest).
struct Bounce {
  double duration = 0, bounce_energy = 0, drift = 0;
  double relative() const { return drift / bounce_energy; }
};
Bounce bounce(const Options& o);

// A straight run at a held speed: the speed from the front left wheel's simulated Hall counts
// (40 teeth, 500 Hz; counts over the run times 2 pi / 40, times the effective rolling radius)
// against the truth's; the wheel rate from the counts against the truth's mean spin rate.
struct CountSpeed {
  double speed_kmh = 0, duration = 0;
  double rate_counts = 0, rate_truth = 0;  // rad/s
  double speed_counts = 0, speed_truth = 0;  // m/s
  double slip = 0;  // the truth's slip ratio of that wheel (mean)
};
CountSpeed count_speed(const Options& o, double speed_kmh);

// Simulated Hall counts against floor(integral of w dt / (2 pi / teeth)) on an ABS stop from
// 100 km/h (the rate's integral taken independently, by Gauss-Legendre quadrature of the cubic
// through the truth's rates and accelerations at the steps): how many samples, how many of
// them differ, and how many were too close to a tooth edge to tell (within 1e-9 rad).
struct HallExactness {
  long samples = 0, mismatches = 0, ambiguous = 0;
  double model_angle_gap = 0;  // largest |Hall angle - model's spin angle| (rad)
};
HallExactness hall_exactness(const Options& o);

// The other rotations the engine carries by unit vectors, at the speeds they reach: how far
// an angle coordinate's step falls short of its rate, |(a_{n+1} - a_n) / (dt (r_n + r_{n+1})
// / 2) - 1| (the trapezoidal rule's (r dt)^2 / 12 for a rotation of unit vectors; zero for a
// driven or rotor angle), largest and at the fastest rate, and what it adds up to.
struct RotationLag {
  double max_rate = 0;  // rad/s
  double step_shortfall = 0;  // at the fastest step (relative)
  double expected = 0;  // (max_rate dt)^2 / 12
  double accumulated = 0;  // rad: sum over the run of the angle's shortfall against its rate
  double against_fine = 0;  // rad: the angle at the end against the same run at dt / 20 (mechanisms, `fine`)
};
// The chassis yaw in a tight turn: 5 m/s at the steering's limit (0.6 rad), 6 s.
RotationLag chassis_yaw(const Options& o);
// The front wheels' steering through the ISO lane change at 80 km/h (a driven angle).
RotationLag steering(const Options& o);
// The crank of a mechanism scenario's truth (scenarios/fourbar_sinigaglia.json, 10 s) and the
// slider-crank released from its dead centre (config/models/slider_crank.json, 10 s).
// `fine`: also run the truth at dt / 20 for against_fine (its input steps at 4 and 5 s make
// that a first-order difference: the engine applies an input from the step it falls in).
RotationLag fourbar_crank(const Options& o, bool fine = false);
RotationLag slider_crank(const Options& o, bool fine = false);

}  // namespace mbo::fidelity
