#include "mbobserver/models/tyre.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mbobserver/mb/forces.hpp"

namespace mbo::models {
namespace {

using Eigen::Matrix2d;
using Eigen::Vector3d;

// max(|v|, v_low) with a parabola below v_low: C1-continuous, v_low / 2 at standstill.
double smooth_speed(double v, double v_low) {
  double av = std::abs(v);
  return av >= v_low ? av : 0.5 * v_low + 0.5 * av * av / v_low;
}

double smoothstep01(double x) {
  x = std::clamp(x, 0.0, 1.0);
  return x * x * (3 - 2 * x);
}

double sech2(double x) {
  double c = std::cosh(std::min(std::abs(x), 300.0));
  return 1 / (c * c);
}

// Slip damping for the tangent: the symmetric part of -dF/dv_s with its eigenvalues raised
// to at least `floor`, a fraction of the secant |F| / |v_s| (the slope from zero slip) that
// grows from 0 at half the peak slip to 1 at the peak and beyond. The wheel's discrete
// equation I (Omega - ...) 2/dt + rho F(kappa(Omega)) = T is tanh-like when the slip
// stiffness over V dominates the inertia (below ~8 m/s for a car wheel at 2 ms): from a
// point near or beyond the force peak a Newton step with the true (flat or negative) slope
// jumps across the steep middle to the other side and back, a 2-cycle (seen in ABS braking
// below 3 m/s). With the secant the step cannot pass zero slip; in the linear range the
// tangent is exact; near a saturated solution convergence is linear. The force is exact.
Matrix2d slip_damping_tangent(const Matrix2d& M, double floor) {
  Matrix2d S = 0.5 * (M + M.transpose());
  Eigen::SelfAdjointEigenSolver<Matrix2d> es(S);
  Eigen::Vector2d l = es.eigenvalues().cwiseMax(floor);
  return es.eigenvectors() * l.asDiagonal() * es.eigenvectors().transpose();
}

}  // namespace

double mf_shape(double y, double C, double E) {
  double phi = y - E * (y - std::atan(y));
  return std::sin(C * std::atan(phi));
}

double mf_shape_slope(double y, double C, double E) {
  double phi = y - E * (y - std::atan(y));
  double dphi = 1 - E + E / (1 + y * y);
  return std::cos(C * std::atan(phi)) * C / (1 + phi * phi) * dphi;
}

double mf_peak_argument(double C, double E) {
  if (!(C > 1 && C < 2) || !(E <= 1)) throw std::invalid_argument("Magic Formula needs 1 < C < 2 and E <= 1");
  // phi(y) = tan(pi / (2C)); phi is increasing for E <= 1. Bisection, then it is exact enough.
  const double target = std::tan(M_PI / (2 * C));
  auto phi = [&](double y) { return y - E * (y - std::atan(y)); };
  double lo = 0, hi = 1;
  while (phi(hi) < target) {
    hi *= 2;
    if (hi > 1e6) throw std::invalid_argument("Magic Formula has no peak for these C and E");
  }
  for (int i = 0; i < 200 && hi - lo > 1e-14 * hi; ++i) {
    double mid = 0.5 * (lo + hi);
    (phi(mid) < target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

CombinedSlip combined_slip(double sx, double sy, double Dx, double Dy, const MagicFormula& lx, const MagicFormula& ly,
                           double ypx, double ypy, double falloff) {
  CombinedSlip r;
  const double s = std::hypot(sx, sy);
  // Beyond the peak (s > 1) the curve falls off by `falloff` of its own drop: shape and slope
  // become 1 + falloff (shape - 1) and falloff * slope (C1 at the peak, where shape = 1 and
  // its slope is 0).
  auto shape = [&](double y, const MagicFormula& l, double yp, double& value, double& slope) {
    value = mf_shape(y, l.C, l.E);
    slope = mf_shape_slope(y, l.C, l.E);
    if (y > yp && falloff < 1) {
      value = 1 + falloff * (value - 1);
      slope *= falloff;
    }
  };
  // f(s) = shape(yp s) / s and f'(s); near s = 0, f = yp C (the slope at the origin) and
  // f' = O(s), whose products with the normalised slips vanish.
  double fx, fy, dfx, dfy;
  if (s < 1e-9) {
    fx = ypx * lx.C, fy = ypy * ly.C, dfx = dfy = 0;
  } else {
    double shx, slx, shy, sly;
    shape(ypx * s, lx, ypx, shx, slx);
    shape(ypy * s, ly, ypy, shy, sly);
    fx = shx / s, fy = shy / s;
    dfx = (ypx * slx * s - shx) / (s * s);
    dfy = (ypy * sly * s - shy) / (s * s);
  }
  r.Fx = Dx * fx * sx;
  r.Fy = Dy * fy * sy;
  if (s >= 1e-9) {
    r.dF_dsigma << Dx * (fx + dfx * sx * sx / s), Dx * dfx * sx * sy / s,  //
        Dy * dfy * sx * sy / s, Dy * (fy + dfy * sy * sy / s);
  } else {
    r.dF_dsigma << Dx * fx, 0, 0, Dy * fy;
  }
  return r;
}

TyreModel::TyreModel(const TyreParams& params)
    : p(params),
      ypx(mf_peak_argument(params.longitudinal.C, params.longitudinal.E)),
      ypy(mf_peak_argument(params.lateral.C, params.lateral.E)) {}

double TyreModel::mu_effective(double mu, double Fz) const {
  const double dfz = (Fz - p.nominal_load_N) / p.nominal_load_N;
  return mu * std::max(1 + p.load_sensitivity * dfz, 0.1);
}

double TyreModel::peak_slip_ratio(double mu, double Fz) const {
  return ypx * p.longitudinal.C * mu_effective(mu, Fz) * p.longitudinal.peak_factor / p.longitudinal.stiffness;
}

double TyreModel::peak_tan_slip_angle(double mu, double Fz) const {
  return ypy * p.lateral.C * mu_effective(mu, Fz) * p.lateral.peak_factor / p.lateral.stiffness;
}

void evaluate_tyre(const TyreModel& m, const Road& road, double mu, double brake_torque_max, const WheelKinematics& k,
                   TyreResult& out, double slip_stiffness_scale, double cornering_stiffness_scale, double load_scale) {
  const TyreParams& p = m.p;
  std::array<Contact, kMaxContacts> contacts;
  out.n = road_contacts(road, k.C, k.a, p.radius_m, contacts);
  // The carrier's angular velocity (of its orthonormal triad: 1/2 sum e x e_dot) plus the spin
  // relative to it about the axle.
  out.omega = 0.5 * (k.a.cross(k.ad) + k.r.cross(k.rd) + k.s.cross(k.sd)) + k.theta_d * k.a;
  out.Omega = k.a.dot(out.omega);
  out.Fz_total = 0;
  out.main = 0;
  const double ypx = m.ypx, ypy = m.ypy;
  double load_times_radius = 0;
  for (int i = 0; i < out.n; ++i) {
    ContactResult& c = out.c[i];
    c = ContactResult{};
    c.contact = contacts[i];
    const Vector3d& n = c.contact.normal;
    const double pen = c.contact.penetration;
    if (pen > 0) {
      const double dn = std::max(c.contact.d.dot(n), 1e-6);
      const double pen_rate = -k.Cd.dot(n) / dn;
      // The damper fades in over the first millimetre so that the force is continuous at
      // touch-down; the load is never negative (lift-off).
      const double ramp = std::min(1.0, pen / 1e-3);
      c.Fz = p.radial_stiffness_N_per_m * pen + p.radial_damping_Ns_per_m * ramp * pen_rate;
      if (c.Fz > 0) {
        c.k_radial = p.radial_stiffness_N_per_m / dn;
        c.c_radial = p.radial_damping_Ns_per_m * ramp / dn;
      } else {
        c.Fz = 0;
      }
    }
    Vector3d ex = k.a.cross(n);
    double exn = ex.norm();
    c.ex = exn > 1e-9 ? Vector3d(ex / exn) : Vector3d(n.unitOrthogonal());
    c.ey = n.cross(c.ex);
    c.effective_radius = p.effective_radius(pen, k.Cd.dot(c.ex));
    // Velocity of the wheel's material point Pe at the effective rolling radius below the
    // centre, arm = Pe - C: the carrier's part C_dot + ea a_dot + er r_dot + es s_dot with
    // e = arm . (a, r, s) (Sinigaglia 2016 eq. (29)) plus the spin's theta_dot a x arm; linear in
    // qd, and on the constraint manifold C_dot + omega x arm.
    const Vector3d arm = -c.effective_radius * c.contact.d;
    Vector3d vs = k.Cd + arm.dot(k.a) * k.ad + arm.dot(k.r) * k.rd + arm.dot(k.s) * k.sd + k.theta_d * k.a.cross(arm);
    c.v_x = k.Cd.dot(c.ex);
    c.v_sx = vs.dot(c.ex);
    c.v_sy = vs.dot(c.ey);
    c.V = smooth_speed(c.v_x, p.low_speed_mps);
    c.kappa = -c.v_sx / c.V;
    c.tan_alpha = -c.v_sy / c.V;
    if (c.Fz > 0) {
      const double Fz = load_scale * c.Fz;  // the load the horizontal forces see
      const double mu_eff = m.mu_effective(mu, Fz);
      const double Dx = mu_eff * p.longitudinal.peak_factor * Fz;
      const double Dy = mu_eff * p.lateral.peak_factor * Fz;
      // Peak slips: B x_p = y_p with B = stiffness / (C mu peak_factor).
      // a stiffness k times the tyre's moves the peak slips to 1/k of theirs (the peak force stays)
      const double kp = m.peak_slip_ratio(mu, Fz) / slip_stiffness_scale;
      const double ap = m.peak_tan_slip_angle(mu, Fz) / cornering_stiffness_scale;
      // Below v_low the curves keep their peak beyond the peak: at walking pace the force
      // becomes a monotone function of the slip velocity (friction-like), because the fall-off
      // divided by a small V makes the wheel's discrete equation near-singular (I + dt/2 rho
      // Re dF/dv_s ~ 0: Newton stalls while a braked wheel stops). Full fall-off above 2 v_low.
      const double falloff = smoothstep01((std::abs(c.v_x) - p.low_speed_mps) / p.low_speed_mps);
      CombinedSlip cs =
          combined_slip(c.kappa / kp, c.tan_alpha / ap, Dx, Dy, p.longitudinal, p.lateral, ypx, ypy, falloff);
      c.Fx = cs.Fx;
      c.Fy = cs.Fy;
      // d(sx, sy)/d(v_sx, v_sy) = -diag(1 / (V kp), 1 / (V ap))
      Matrix2d dF_dvs = cs.dF_dsigma;
      dF_dvs.col(0) *= -1 / (c.V * kp);
      dF_dvs.col(1) *= -1 / (c.V * ap);
      const double vs_norm = std::hypot(c.v_sx, c.v_sy);
      const double secant = vs_norm > 1e-9 ? std::hypot(c.Fx, c.Fy) / vs_norm : 0.0;
      const double level = std::hypot(c.kappa / kp, c.tan_alpha / ap);  // 1 at the peak
      c.slip_damping = slip_damping_tangent(-dF_dvs, secant * smoothstep01(2 * level - 1));
    }
    c.force = c.Fx * c.ex + c.Fy * c.ey + c.Fz * n;
    out.Fz_total += c.Fz;
    load_times_radius += c.Fz * c.contact.rho;
    if (c.Fz > out.c[out.main].Fz) out.main = i;
  }
  // Rolling resistance: a moment on the wheel, f_r Fz times the loaded radius, against the
  // rolling direction (a force at the contact would only be balanced by the tyre's own slip).
  const double v = out.c[out.main].v_x;
  const double fr = p.rolling_resistance + p.rolling_resistance_speed2 * v * v;
  const double Omega0 = p.rolling_transition_mps / p.radius_m;
  out.rolling_torque = -fr * load_times_radius * std::tanh(out.Omega / Omega0);
  out.rolling_damping = fr * load_times_radius / Omega0 * sech2(out.Omega / Omega0);
  // Brake: against the spin relative to the carrier, smooth through zero. Its damping in the
  // tangent is the secant T / theta_d (>= the tanh's slope): from a saturated point a Newton
  // step with the flat true slope would jump across zero speed and back.
  const double wb = p.brake_transition_radps;
  const double x = k.theta_d / wb;
  out.brake_torque = -brake_torque_max * std::tanh(x);
  out.brake_damping = brake_torque_max / wb * (std::abs(x) > 1e-6 ? std::tanh(x) / x : 1.0);
}

WheelKinematics wheel_kinematics(const WheelCoordinates& w, const Eigen::VectorXd& q, const Eigen::VectorXd& qd) {
  WheelKinematics k;
  k.C = q.segment<3>(w.C);
  k.Cd = qd.segment<3>(w.C);
  k.a = q.segment<3>(w.a);
  k.r = q.segment<3>(w.r);
  k.s = q.segment<3>(w.s);
  k.ad = qd.segment<3>(w.a);
  k.rd = qd.segment<3>(w.r);
  k.sd = qd.segment<3>(w.s);
  k.theta_d = qd[w.spin];
  return k;
}

TyreForce::TyreForce(TyreParams p, std::shared_ptr<const Road> road, WheelCoordinates w, int input_brake,
                     double brake_gain, int input_mu, int input_slip_stiffness, int input_cornering_stiffness,
                     int input_load_scale)
    : m_(p),
      road_(std::move(road)),
      w_(w),
      input_brake_(input_brake),
      input_mu_(input_mu),
      input_kx_(input_slip_stiffness),
      input_ky_(input_cornering_stiffness),
      input_load_(input_load_scale),
      brake_gain_(brake_gain) {}

std::vector<int> TyreForce::coordinates() const {
  std::vector<int> c;
  for (int base : {w_.C, w_.a, w_.r, w_.s})
    for (int k = 0; k < 3; ++k) c.push_back(base + k);
  c.push_back(w_.spin);
  return c;
}

void TyreForce::compute(const Eigen::VectorXd& q, const Eigen::VectorXd& qd, const Eigen::VectorXd& u,
                        TyreResult& out) const {
  WheelKinematics k = wheel_kinematics(w_, q, qd);
  double mu = m_.p.mu;
  if (input_mu_ >= 0 && u[input_mu_] > 0) mu = u[input_mu_];
  double tb = input_brake_ >= 0 ? std::max(u[input_brake_], 0.0) * brake_gain_ : 0.0;
  auto scale = [&](int slot) { return slot >= 0 && u[slot] > 0 ? u[slot] : 1.0; };
  evaluate_tyre(m_, *road_, mu, tb, k, out, scale(input_kx_), scale(input_ky_), scale(input_load_));
}

void TyreForce::evaluate(const mb::Model&, const Eigen::VectorXd& x, const Eigen::VectorXd& xd,
                         const Eigen::VectorXd& u, double, mb::ForceSink& out) const {
  TyreResult res;
  compute(x, xd, u, res);
  const Vector3d C = x.segment<3>(w_.C), a = x.segment<3>(w_.a), r = x.segment<3>(w_.r), s = x.segment<3>(w_.s);
  // Local coordinates: [C(3), a(3), r(3), s(3), theta]. A force F at the wheel's material point
  // P = C + arm, arm = ca a + cr r + cs s, has Q = J_P' F with J_P = [I, ca I, cr I, cs I, a x arm]:
  // the carrier's virtual motion (Sinigaglia 2016 eq. (29)) and the spin's (a x arm per unit
  // theta), so the moment about the axle, a . (arm x F), lands on theta. The slip velocity is
  // that of the material point Pe at the effective rolling radius, with J_Pe likewise; the
  // slip damping's tangent is J_P' S J_Pe (symmetrised by the engine), so that a spinning wheel
  // sees rho Re S, not rho^2 S.
  using Jacobian = Eigen::Matrix<double, 3, 13>;
  auto jacobian = [&](const Vector3d& arm) {
    Jacobian J = Jacobian::Zero();
    J.block<3, 3>(0, 0).setIdentity();
    J.block<3, 3>(0, 3).diagonal().setConstant(arm.dot(a));
    J.block<3, 3>(0, 6).diagonal().setConstant(arm.dot(r));
    J.block<3, 3>(0, 9).diagonal().setConstant(arm.dot(s));
    J.col(12) = a.cross(arm);
    return J;
  };
  std::array<Jacobian, kMaxContacts> JP, JPe;
  Eigen::Matrix<double, 13, 1> Q = Eigen::Matrix<double, 13, 1>::Zero();
  for (int i = 0; i < res.n; ++i) {
    const auto& c = res.c[i];
    JP[i] = jacobian(c.contact.point - C);
    JPe[i] = jacobian(-c.effective_radius * c.contact.d);
    Q.noalias() += JP[i].transpose() * c.force;
  }
  // A moment T about a on the wheel (rolling resistance): virtual power T Omega with Omega =
  // theta_dot + w_c . a and w_c . a = 1/2 (s_dot . r - r_dot . s). The brake acts between wheel
  // and carrier: on theta alone.
  Eigen::Matrix<double, 13, 1> g = Eigen::Matrix<double, 13, 1>::Zero();
  g.segment<3>(6) = -0.5 * s;
  g.segment<3>(9) = 0.5 * r;
  g[12] = 1;
  Q += res.rolling_torque * g;
  Q[12] += res.brake_torque;
  const int base[4] = {w_.C, w_.a, w_.r, w_.s};
  for (int b = 0; b < 4; ++b)
    for (int k = 0; k < 3; ++k) out.add(base[b] + k, Q[3 * b + k]);
  out.add(w_.spin, Q[12]);
  if (!out.jacobians()) return;
  Eigen::MatrixXd& K = out.K();
  Eigen::MatrixXd& Cm = out.C();
  for (int i = 0; i < res.n; ++i) {
    const auto& c = res.c[i];
    if (c.Fz <= 0) continue;
    const Vector3d& n = c.contact.normal;
    const Eigen::Matrix3d Kp = c.k_radial * n * n.transpose();
    Eigen::Matrix<double, 3, 2> E;
    E.col(0) = c.ex;
    E.col(1) = c.ey;
    const Eigen::Matrix3d Cr = c.c_radial * n * n.transpose();
    const Eigen::Matrix3d Cs = E * c.slip_damping * E.transpose();
    // The tangential force scales with the load: d F_t / d(C, C_dot) = (F_t / Fz) dFz/d(...),
    // a coupling of the load's spring and damper into the tangential direction (not
    // symmetric; the engine takes the symmetric part).
    const Eigen::Vector3d ft = (c.Fx * c.ex + c.Fy * c.ey) / c.Fz;
    const Eigen::Matrix3d Kt = c.k_radial * ft * n.transpose(), Ct = c.c_radial * ft * n.transpose();
    K.noalias() += JP[i].transpose() * Kp * JP[i];
    Cm.noalias() += JP[i].transpose() * Cr * JP[i] + JP[i].transpose() * Cs * JPe[i];
    K.leftCols<3>().noalias() += JP[i].transpose() * Kt;
    Cm.leftCols<3>().noalias() += JP[i].transpose() * Ct;
  }
  Cm.noalias() += res.rolling_damping * g * g.transpose();
  Cm(12, 12) += res.brake_damping;
}

}  // namespace mbo::models
