// Plain descriptions of the mechanisms simulated by both our engine and the Simbody peer.
// Header-only and free of Eigen and Simbody types, so that the C++17 peer and the C++20
// tests and bench share one definition of the geometry and the initial conditions.
#pragma once

#include <array>
#include <cmath>
#include <vector>

namespace mbo::peers {

using Vec3 = std::array<double, 3>;
using Mat3 = std::array<double, 9>;  // row-major

// Two uniform bars pinned at the origin, moving in the x-y plane, gravity along -y.
// Angles are absolute, from the x axis to O->P1 and P1->P2 (config/models/double_pendulum.json).
struct DoublePendulumSpec {
  double l1 = 1, l2 = 1, m1 = 1, m2 = 1;
  double theta1 = -0.5707963267948966, theta2 = -1.0707963267948966;
  double omega1 = 0, omega2 = 0;  // absolute angular rates
  double g = 9.81;
};

// Heavy symmetric top on a spherical joint at the origin (config/models/spinning_top.json):
// body axes u, v, w = Rz(yaw) Ry(pitch) Rx(roll) applied to the ground axes, centre of
// gravity `com_height` along w, central inertia (I_t, I_t, I_a). `omega` is the initial
// angular velocity in the ground frame.
struct TopSpec {
  double mass = 1, com_height = 0.05, inertia_transverse = 2e-3, inertia_axial = 4e-3;
  double yaw = 0, pitch = 0.3, roll = 0;
  Vec3 omega{0, 0, 0};
  double g = 9.81;
};

// Four-bar of Sinigaglia 2016 Table 1 / Appendix A (config/models/fourbar.json): ground pivots
// A (0,0) and B (10,0); crank A-P1 2 m 2 kg, coupler P1-P2 8 m 8 kg, rocker P2-B 5 m 5 kg,
// uniform slender bars; released at rest with the crank at `theta` (from the x axis).
struct FourBarSpec {
  double ax = 0, bx = 10;
  double l1 = 2, l2 = 8, l3 = 5, m1 = 2, m2 = 8, m3 = 5;
  double theta = 1.0471975511965976;
  double g = 9.806;
};

// Slider-crank of Farci 2019 Tables 3.1-3.2 (config/models/slider_crank.json): crank O-P1
// 3 m 1.5 kg, rod P1-P2 6 m 3 kg, slider 0.25 kg at P2 on the x axis; released at rest from
// the dead-centre position theta = 0.
struct SliderCrankSpec {
  double r = 3, l = 6, m_crank = 1.5, m_rod = 3, m_slider = 0.25;
  double theta = 0;
  double g = 9.81;
};

// A spatial chain of n identical bodies hanging from the fixed origin under gravity (-z),
// joined by spherical joints. Body i (1..n) has its near joint at P_{i-1} (P_0 = origin),
// its far joint at P_i = P_{i-1} + length * x_i, and a cylinder's mass properties about its
// axis x_i. It starts at rest, each link tilted `tilt` rad from the vertical towards the
// azimuth i * `azimuth_step` and twisted i * `twist_step` about its own axis, so that the
// motion is fully spatial.
struct ChainSpec {
  int n = 4;
  double length = 0.25, mass = 1, radius = 0.05;
  double tilt = 0.5, azimuth_step = 0.9, twist_step = 0.3;
  double g = 9.81;

  double inertia_axial() const { return 0.5 * mass * radius * radius; }
  double inertia_transverse() const { return mass * (3 * radius * radius + length * length) / 12; }
};

// Rotation R_i (body axes as columns, row-major storage) of chain body i = 1..n at the start:
// Rz(i az) Ry(pi/2 - tilt) Rx(i tw), whose first column is
// (sin tilt cos(i az), sin tilt sin(i az), -cos tilt).
inline Mat3 chain_initial_rotation(const ChainSpec& s, int i) {
  auto mul = [](const Mat3& a, const Mat3& b) {
    Mat3 c{};
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 3; ++k)
        for (int j = 0; j < 3; ++j) c[3 * r + j] += a[3 * r + k] * b[3 * k + j];
    return c;
  };
  constexpr double kHalfPi = 1.5707963267948966;
  const double az = i * s.azimuth_step, el = kHalfPi - s.tilt, tw = i * s.twist_step;
  const Mat3 rz{std::cos(az), -std::sin(az), 0, std::sin(az), std::cos(az), 0, 0, 0, 1};
  const Mat3 ry{std::cos(el), 0, std::sin(el), 0, 1, 0, -std::sin(el), 0, std::cos(el)};
  const Mat3 rx{1, 0, 0, 0, std::cos(tw), -std::sin(tw), 0, std::sin(tw), std::cos(tw)};
  return mul(mul(rz, ry), rx);
}

// Far joint points P_1..P_n at the start.
inline std::vector<Vec3> chain_initial_points(const ChainSpec& s) {
  std::vector<Vec3> p;
  Vec3 at{0, 0, 0};
  for (int i = 1; i <= s.n; ++i) {
    const Mat3 r = chain_initial_rotation(s, i);
    for (int k = 0; k < 3; ++k) at[k] += s.length * r[3 * k];
    p.push_back(at);
  }
  return p;
}

}  // namespace mbo::peers
