// The tyre: Magic Formula shape, peak and slip stiffness; the friction limit of the combined
// slip; and its stiffness K and damping C (the tangent the engine integrates with) against
// finite differences of its generalised forces on a running vehicle.
#include <cmath>
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "mbobserver/mb/forces.hpp"
#include "mbobserver/models/tyre.hpp"
#include "mbobserver/models/vehicle_params.hpp"
#include "vehicle_sim.hpp"

using namespace mbo;
using namespace mbo::models;

namespace {

MagicFormula mf(double stiffness, double C, double E) {
  MagicFormula m;
  m.stiffness = stiffness;
  m.C = C;
  m.E = E;
  return m;
}

}  // namespace

TEST(Tyre, MagicFormulaPeak) {
  for (auto [C, E] : {std::pair{1.9, 0.97}, {1.3, -1.0}, {1.65, 0.0}, {1.2, 0.5}}) {
    const double yp = mf_peak_argument(C, E);
    EXPECT_NEAR(mf_shape(yp, C, E), 1.0, 1e-12) << C << " " << E;
    EXPECT_NEAR(mf_shape_slope(yp, C, E), 0.0, 1e-10);
    EXPECT_LT(mf_shape(0.9 * yp, C, E), 1.0);
    EXPECT_LT(mf_shape(1.1 * yp, C, E), 1.0);
    // Slope against a central difference.
    const double y = 0.7 * yp, h = 1e-6;
    EXPECT_NEAR(mf_shape_slope(y, C, E), (mf_shape(y + h, C, E) - mf_shape(y - h, C, E)) / (2 * h), 1e-8);
  }
  EXPECT_THROW(mf_peak_argument(0.9, 0), std::invalid_argument);
  EXPECT_THROW(mf_peak_argument(1.5, 1.2), std::invalid_argument);
}

TEST(Tyre, PureSlipStiffnessAndPeak) {
  TyreParams p;
  p.longitudinal = mf(19, 1.9, 0.97);
  p.lateral = mf(16, 1.3, -1.0);
  p.lateral.peak_factor = 1.05;
  const TyreModel m(p);
  const double Fz = 4000;
  for (double mu : {1.0, 0.6, 0.3}) {
    const double Dx = mu * Fz, Dy = mu * 1.05 * Fz;
    const double kp = m.peak_slip_ratio(mu, Fz), ap = m.peak_tan_slip_angle(mu, Fz);
    auto Fx = [&](double kappa) {
      return combined_slip(kappa / kp, 0, Dx, Dy, p.longitudinal, p.lateral, m.ypx, m.ypy).Fx;
    };
    auto Fy = [&](double ta) { return combined_slip(0, ta / ap, Dx, Dy, p.longitudinal, p.lateral, m.ypx, m.ypy).Fy; };
    // Slip stiffness B C D = stiffness * Fz whatever mu (MF 2002: lambda_mu scales D only).
    EXPECT_NEAR((Fx(1e-6) - Fx(-1e-6)) / 2e-6, 19 * Fz, 1e-4 * 19 * Fz) << mu;
    EXPECT_NEAR((Fy(1e-6) - Fy(-1e-6)) / 2e-6, 16 * Fz, 1e-4 * 16 * Fz) << mu;
    // Peak mu Fz peak_factor at the peak slip, and nowhere higher.
    EXPECT_NEAR(Fx(kp), Dx, 1e-9 * Dx);
    EXPECT_NEAR(Fy(ap), Dy, 1e-9 * Dy);
    for (double k = -2; k <= 2; k += 0.001) EXPECT_LE(std::abs(Fx(k)), Dx * (1 + 1e-12));
    // Odd in the slip.
    EXPECT_NEAR(Fx(-0.05), -Fx(0.05), 1e-9);
  }
  std::printf("sedan tyres at 4 kN, mu 1: peak slip ratio %.4f, peak slip angle %.2f deg\n", m.peak_slip_ratio(1, Fz),
              std::atan(m.peak_tan_slip_angle(1, Fz)) * 180 / M_PI);
}

TEST(Tyre, CombinedSlipStaysInsideTheFrictionLimit) {
  const MagicFormula lx = mf(19, 1.9, 0.97), ly = mf(16, 1.3, -1.0);
  const double ypx = mf_peak_argument(lx.C, lx.E), ypy = mf_peak_argument(ly.C, ly.E);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-6, 6);
  double worst = 0;
  for (int i = 0; i < 20000; ++i) {
    const double sx = u(rng), sy = u(rng), Dx = 4000, Dy = 4200;
    for (double falloff : {1.0, 0.5, 0.0}) {
      auto r = combined_slip(sx, sy, Dx, Dy, lx, ly, ypx, ypy, falloff);
      worst = std::max(worst, std::hypot(r.Fx, r.Fy) / std::max(Dx, Dy));
      // The force opposes the slip in each direction.
      EXPECT_GE(r.Fx * sx, 0);
      EXPECT_GE(r.Fy * sy, 0);
    }
  }
  std::printf("combined slip: max |F| / max(Dx, Dy) over 60000 samples = %.6f\n", worst);
  EXPECT_LE(worst, 1 + 1e-12);
}

TEST(Tyre, CombinedSlipDerivativeMatchesFiniteDifferences) {
  const MagicFormula lx = mf(19, 1.9, 0.97), ly = mf(16, 1.3, -1.0);
  const double ypx = mf_peak_argument(lx.C, lx.E), ypy = mf_peak_argument(ly.C, ly.E);
  for (auto [sx, sy] : {std::pair{0.3, 0.1}, {-0.8, 0.5}, {1.7, -0.2}, {0.01, 2.5}, {-3.0, -1.0}}) {
    for (double falloff : {1.0, 0.3}) {
      auto r = combined_slip(sx, sy, 4000, 4200, lx, ly, ypx, ypy, falloff);
      const double h = 1e-7;
      auto px = combined_slip(sx + h, sy, 4000, 4200, lx, ly, ypx, ypy, falloff);
      auto mx = combined_slip(sx - h, sy, 4000, 4200, lx, ly, ypx, ypy, falloff);
      auto py = combined_slip(sx, sy + h, 4000, 4200, lx, ly, ypx, ypy, falloff);
      auto my = combined_slip(sx, sy - h, 4000, 4200, lx, ly, ypx, ypy, falloff);
      Eigen::Matrix2d fd;
      fd << (px.Fx - mx.Fx) / (2 * h), (py.Fx - my.Fx) / (2 * h), (px.Fy - mx.Fy) / (2 * h), (py.Fy - my.Fy) / (2 * h);
      EXPECT_LT((r.dF_dsigma - fd).norm(), 1e-5 * fd.norm() + 1e-3) << sx << " " << sy << "\n"
                                                                    << r.dF_dsigma << "\n"
                                                                    << fd;
    }
  }
}

namespace {

// -dQ/dq and -dQ/dqd of one tyre by central differences, and its own K and C.
struct TyreJacobians {
  Eigen::MatrixXd K, C, K_fd, C_fd;
};

TyreJacobians tyre_jacobians(const Vehicle& v, const mb::State& s, int wheel) {
  const auto& f = *v.tyres[wheel];
  const auto slots = f.coordinates();
  const int n = static_cast<int>(slots.size());
  TyreJacobians j;
  j.K = Eigen::MatrixXd::Zero(n, n);
  j.C = Eigen::MatrixXd::Zero(n, n);
  j.K_fd = j.K;
  j.C_fd = j.C;
  Eigen::VectorXd Q = Eigen::VectorXd::Zero(v.model.nq);
  {
    mb::ForceSink sink(Q, v.model.nq, &j.K, &j.C);
    f.evaluate(v.model, s.q, s.qd, s.u, s.t, sink);
  }
  auto q_of = [&](const Eigen::VectorXd& q, const Eigen::VectorXd& qd) {
    Eigen::VectorXd Qp = Eigen::VectorXd::Zero(v.model.nq);
    mb::ForceSink sink(Qp, v.model.nq, nullptr, nullptr);
    f.evaluate(v.model, q, qd, s.u, s.t, sink);
    Eigen::VectorXd out(n);
    for (int i = 0; i < n; ++i) out[i] = Qp[slots[i]];
    return out;
  };
  for (int c = 0; c < n; ++c) {
    const double hq = 1e-7, hv = 1e-6;
    Eigen::VectorXd qp = s.q, qm = s.q, vp = s.qd, vm = s.qd;
    qp[slots[c]] += hq;
    qm[slots[c]] -= hq;
    vp[slots[c]] += hv;
    vm[slots[c]] -= hv;
    j.K_fd.col(c) = -(q_of(qp, s.qd) - q_of(qm, s.qd)) / (2 * hq);
    j.C_fd.col(c) = -(q_of(s.q, vp) - q_of(s.q, vm)) / (2 * hv);
  }
  return j;
}

double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

}  // namespace

// The tyre's K and C are approximations of the dominant terms (the engine symmetrises them).
// Checked on a running vehicle against central differences of the tyre's own Q:
//  - radial stiffness and damping along the road normal at the wheel centre (exact terms);
//  - slip damping along the tyre's x and y at the centre and on the spin (rolling) motion;
//  - the whole tangent contribution dt/2 C + dt^2/4 K at dt = 2 ms (Frobenius norm), which
//    is what decides Newton's convergence.
TEST(Tyre, StiffnessAndDampingAgainstFiniteDifferences) {
  const auto p = load_vehicle_params(test::vehicle_path("sedan"));
  struct Case {
    const char* name;
    double speed, steer, torque, brake;
  };
  for (const Case c : {Case{"standstill", 0, 0, 0, 0}, Case{"walking pace, driving", 1.0, 0.05, 200, 0},
                       Case{"20 m/s, cornering", 20, 0.03, 150, 0}, Case{"20 m/s, braking", 20, 0.0, 0, 4e6},
                       Case{"20 m/s, wheels locked", 20, 0.0, 0, 1.2e7}}) {
    VehicleStart st;
    st.speed = c.speed;
    test::VehicleSim sim(build_vehicle(p), st);
    VehicleInputs in;
    in.steer = c.steer;
    in.drive_torque = {0, 0, c.torque, c.torque};
    in.brake_pressure = {c.brake, c.brake, c.brake, c.brake};
    for (int k = 0; k < 150; ++k) ASSERT_TRUE(sim.step(in));
    for (int w : {FL, RL}) {
      auto j = tyre_jacobians(sim.v, sim.s, w);
      TyreResult tr;
      sim.v.tyres[w]->compute(sim.s.q, sim.s.qd, sim.s.u, tr);
      const auto& ct = tr.c[tr.main];
      const Eigen::Vector3d n = ct.contact.normal, ex = ct.ex, ey = ct.ey;
      const Eigen::Matrix3d Kcc = j.K.topLeftCorner<3, 3>(), Kcc_fd = j.K_fd.topLeftCorner<3, 3>();
      const Eigen::Matrix3d Ccc = j.C.topLeftCorner<3, 3>(), Ccc_fd = j.C_fd.topLeftCorner<3, 3>();
      // Spin: unit spin rate about a moves r by -s and s by +r (13-slot vector on r and s).
      Eigen::VectorXd g = Eigen::VectorXd::Zero(13);
      g.segment<3>(6) = -sim.s.q.segment<3>(sim.v.wheels[w].s);
      g.segment<3>(9) = sim.s.q.segment<3>(sim.v.wheels[w].r);
      const double radial_k = n.dot(Kcc * n), radial_k_fd = n.dot(Kcc_fd * n);
      const double radial_c = n.dot(Ccc * n), radial_c_fd = n.dot(Ccc_fd * n);
      const double cx = ex.dot(Ccc * ex), cx_fd = ex.dot(Ccc_fd * ex);
      const double cy = ey.dot(Ccc * ey), cy_fd = ey.dot(Ccc_fd * ey);
      const double cs = g.dot(j.C * g), cs_fd = g.dot(j.C_fd * g);
      const auto& tm = sim.v.tyres[w]->model();
      const double level =
          std::hypot(ct.kappa / tm.peak_slip_ratio(1, ct.Fz), ct.tan_alpha / tm.peak_tan_slip_angle(1, ct.Fz));
      const bool saturated = level > 0.5;
      const double dt = 0.002;
      Eigen::MatrixXd T = dt / 2 * j.C + dt * dt / 4 * j.K, Tfd = dt / 2 * j.C_fd + dt * dt / 4 * j.K_fd;
      T = 0.5 * (T + T.transpose());  // the engine uses the symmetric parts
      Tfd = 0.5 * (Tfd + Tfd.transpose());
      const double t_err = (T - Tfd).norm() / Tfd.norm();
      std::printf(
          "%-22s %s (slip level %.2f of the peak): radial k %.4e (fd %.4e, %.2e)  radial c %.1f (fd %.1f)  slip c_x "
          "%.4e (fd %.4e, %.2e)  "
          "c_y %.4e (fd %.4e, %.2e)  spin %.4e (fd %.4e, %.2e)  tangent %.2e\n",
          c.name, kWheelNames[w], level, radial_k, radial_k_fd, rel(radial_k, radial_k_fd), radial_c, radial_c_fd, cx,
          cx_fd, rel(cx, cx_fd), cy, cy_fd, rel(cy, cy_fd), cs, cs_fd, rel(cs, cs_fd), t_err);
      EXPECT_LT(rel(radial_k, radial_k_fd), 0.01) << c.name;
      if (radial_c_fd > 1) {
        EXPECT_LT(rel(radial_c, radial_c_fd), 0.01) << c.name;
      }
      // Slip damping: exact in the linear range; beyond the peak (braking) the tangent is
      // raised to the secant, so only require it not to be below the finite difference there.
      if (!saturated) {
        EXPECT_LT(rel(cx, cx_fd), 0.05) << c.name;
        EXPECT_LT(rel(cy, cy_fd), 0.05) << c.name;
        EXPECT_LT(rel(cs, cs_fd), 0.05) << c.name;
        EXPECT_LT(t_err, 0.10) << c.name;
      } else {
        EXPECT_GE(cx, cx_fd - 1e-6 * std::abs(cx_fd)) << c.name;
      }
    }
  }
}
