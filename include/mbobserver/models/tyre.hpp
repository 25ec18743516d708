// Tyre: radial spring-damper on the road, Pacejka Magic Formula in the longitudinal and
// lateral directions (Macchi 2010 eqs. (5.19)-(5.23)) with the friction coefficient scaling the
// peak, combined slip, rolling resistance, a blend to a damped slip-velocity model at low speed,
// and the wheel's brake. TyreForce is the engine's CustomForce for one wheel: it acts on the
// wheel centre, its three unit vectors and its spin angle, and gives the engine the dominant
// parts of its stiffness K = -dQ/dq (radial spring) and damping C = -dQ/dqd (radial damper,
// slip damping, brake and rolling resistance near zero speed) for the implicit integrator.
//
// Conventions (Pacejka, Tyre and Vehicle Dynamics, ch. 1 and 4; ISO 8855 axes):
//   tyre frame  ex = a x n (heading in the road plane), ey = n x ex, n = road normal;
//   slip ratio  kappa = -v_sx / V      (> 0 driving: the tread is faster than the ground)
//   slip angle  tan(alpha) = -v_sy / V (> 0 gives Fy > 0, towards +ey)
// where v_s is the velocity of the wheel's material point at the effective rolling radius
// below the centre (the slip velocity) and V = smooth_max(|v_x|, v_low) the wheel centre's
// forward speed, held at no less than v_low/2 so that below v_low the forces become a damped
// slip-velocity law (F = -K v_s / V) and there is no singularity at standstill.
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include <Eigen/Dense>

#include "mbobserver/mb/model.hpp"
#include "mbobserver/models/road.hpp"

namespace mbo::models {

// One direction of the pure-slip Magic Formula, Y = D sin(C atan(B x - E (B x - atan(B x))))
// with D = mu * peak_factor * Fz, the slip stiffness B C D = stiffness * Fz (independent of mu,
// as in MF 2002 where lambda_mu scales D and B follows), hence B = stiffness / (C mu peak_factor).
struct MagicFormula {
  double stiffness = 0;  // slip stiffness per unit load (1/unit slip, 1/rad laterally)
  double C = 1.5;  // shape factor, 1 < C < 2 (the curve has a peak)
  double E = 0;  // curvature factor, E <= 1
  double peak_factor = 1;  // D / (mu Fz) at the nominal load
};

struct TyreParams {
  double radius_m = 0.3;  // unloaded radius R0
  double width_m = 0.2;
  double radial_stiffness_N_per_m = 2e5;
  double radial_damping_Ns_per_m = 200;
  double mu = 1;  // friction coefficient of the reference surface
  double nominal_load_N = 4000;  // Fz0
  double load_sensitivity = 0;  // d(mu)/mu per unit (Fz - Fz0)/Fz0 (MF pDx2, pDy2; < 0)
  MagicFormula longitudinal, lateral;
  double rolling_resistance = 0.01;  // f_r0
  double rolling_resistance_speed2 = 0;  // f_r2 [s^2/m^2]: f_r = f_r0 + f_r2 v^2
  double rolling_transition_mps = 0.2;  // tanh transition of rolling resistance at zero speed
  double low_speed_mps = 3;  // v_low of the slip blend
  double brake_transition_radps = 0.1;  // tanh transition of brake torque at zero spin rate
  double radius_growth_s2_per_m2 = 0;  // c_v: the free radius grows by R0 c_v v^2 with speed

  // Effective rolling radius for a given penetration and forward speed (Pacejka: between loaded
  // and unloaded, about R0 - penetration / 3 for radial tyres), with the free radius's
  // centrifugal growth R0 (1 + c_v v^2): the growth term of MF-Tyre 6.1's free radius
  // R_Omega = R0 (q_re0 + q_V1 (Omega R0 / V0)^2) with c_v = q_V1 / V0^2 (a q_V1 of 7.7e-4 at
  // V0 = 16.7 m/s, this project's assumption for a car tyre, grows it 0.36 % at 130 km/h).
  // 0 by default: the shipped tyres do not grow.
  double effective_radius(double penetration, double speed = 0) const {
    return radius_m * (1 + radius_growth_s2_per_m2 * speed * speed) - std::max(penetration, 0.0) / 3;
  }
};

// sin(C atan(y - E (y - atan y))) and its derivative in y.
double mf_shape(double y, double C, double E);
double mf_shape_slope(double y, double C, double E);
// The y at which mf_shape peaks (C atan(...) = pi/2); needs 1 < C < 2, E <= 1.
double mf_peak_argument(double C, double E);

// Forces of the combined-slip Magic Formula for normalised slips.
// Similarity method (Pacejka 2012, sec. 4.3.2): each direction's curve is evaluated at the
// combined slip level s = |(kappa/kappa_p, tan(alpha)/alpha_p)|, scaled to its own peak slip,
// and the force points along the normalised slip vector. Hence |F| <= max(Dx, Dy): the friction
// limit holds by construction (the test "never above mu Fz times the peak factor").
struct CombinedSlip {
  double Fx = 0, Fy = 0;
  Eigen::Matrix2d dF_dsigma = Eigen::Matrix2d::Zero();  // d(Fx, Fy) / d(sx, sy)
};
// falloff in [0, 1]: the fraction of the curve's drop beyond its peak that is kept (1: the
// Magic Formula as it is; 0: held at the peak).
CombinedSlip combined_slip(double sx, double sy, double Dx, double Dy, const MagicFormula& lx, const MagicFormula& ly,
                           double ypx, double ypy, double falloff = 1);

// Position and velocity of one wheel (all in the ground frame).
struct WheelKinematics {
  Eigen::Vector3d C, Cd;  // centre
  Eigen::Vector3d a, r, s;  // the carrier's triad: axle and two radial unit vectors (r x a = s)
  Eigen::Vector3d ad, rd, sd;
  double theta_d = 0;  // spin rate of the wheel relative to the carrier, about a
};

// The tyre at one contact.
struct ContactResult {
  Contact contact;
  Eigen::Vector3d ex = Eigen::Vector3d::UnitX(), ey = Eigen::Vector3d::UnitY();
  double Fx = 0, Fy = 0, Fz = 0;  // tyre frame of this contact
  double kappa = 0, tan_alpha = 0;
  double v_x = 0, v_sx = 0, v_sy = 0, V = 0;
  double effective_radius = 0;
  // Tangent pieces: dFz/d(penetration), dFz/d(penetration rate), slip damping -dF/dv_s
  double k_radial = 0, c_radial = 0;
  Eigen::Matrix2d slip_damping = Eigen::Matrix2d::Zero();
  Eigen::Vector3d force = Eigen::Vector3d::Zero();  // Fx ex + Fy ey + Fz n (on the wheel)
};

struct TyreResult {
  int n = 0;
  std::array<ContactResult, kMaxContacts> c;
  Eigen::Vector3d omega = Eigen::Vector3d::Zero();  // wheel angular velocity
  double Omega = 0;  // spin rate about a relative to the ground
  double rolling_torque = 0;  // about a, on the wheel (resists Omega)
  double rolling_damping = 0;  // -dT/dOmega
  double brake_torque = 0;  // generalised force on the spin angle (resists theta_d)
  double brake_damping = 0;  // -dT/dtheta_d
  int main = 0;  // contact with the largest load
  double Fz_total = 0;
};

// Parameters with the peak arguments of both curves solved once.
struct TyreModel {
  TyreParams p;
  double ypx = 0, ypy = 0;  // mf_peak_argument of the longitudinal and lateral curves
  TyreModel() = default;
  explicit TyreModel(const TyreParams& params);  // throws std::invalid_argument
  // Peak slips (slip ratio, tan of slip angle) at friction mu and load Fz.
  double mu_effective(double mu, double Fz) const;
  double peak_slip_ratio(double mu, double Fz) const;
  double peak_tan_slip_angle(double mu, double Fz) const;
};

// The whole tyre computation for one wheel. mu: the current friction coefficient;
// brake_torque_max: brake pressure times the axle's gain (N m); the stiffness scales multiply
// the tyre's longitudinal and cornering stiffness (1: its own; estimated by the observer).
void evaluate_tyre(const TyreModel& m, const Road& road, double mu, double brake_torque_max, const WheelKinematics& k,
                   TyreResult& out, double slip_stiffness_scale = 1, double cornering_stiffness_scale = 1,
                   double load_scale = 1);

// q slots of one wheel's coordinates.
struct WheelCoordinates {
  int C = -1, a = -1, r = -1, s = -1;  // first slot of each 3-vector
  int spin = -1;  // theta
};

// Wheel kinematics read from q and qd by slot.
WheelKinematics wheel_kinematics(const WheelCoordinates& w, const Eigen::VectorXd& q, const Eigen::VectorXd& qd);

// The engine's force element for one tyre: slots [C(3), a(3), r(3), s(3), theta].
class TyreForce final : public mb::CustomForce {
 public:
  // input_slip_stiffness, input_cornering_stiffness: inputs scaling the stiffnesses (a value
  // <= 0, as at start, reads as 1); -1: none. input_load_scale likewise scales the load the
  // horizontal forces see (not the vertical one): the observer's sensitivity to a payload
  // whose weight has settled on the tyre (mb::Model::MassParameter::settled_load).
  TyreForce(TyreParams p, std::shared_ptr<const Road> road, WheelCoordinates w, int input_brake, double brake_gain,
            int input_mu, int input_slip_stiffness = -1, int input_cornering_stiffness = -1, int input_load_scale = -1);
  std::vector<int> coordinates() const override;
  void evaluate(const mb::Model& model, const Eigen::VectorXd& x, const Eigen::VectorXd& xd,
                const Eigen::VectorXd& inputs, double t, mb::ForceSink& out) const override;

  // The tyre state for outputs (same numbers as the force).
  void compute(const Eigen::VectorXd& q, const Eigen::VectorXd& qd, const Eigen::VectorXd& inputs,
               TyreResult& out) const;
  const TyreParams& params() const { return m_.p; }
  const TyreModel& model() const { return m_; }
  const WheelCoordinates& wheel() const { return w_; }
  const Road& road() const { return *road_; }

 private:
  TyreModel m_;
  std::shared_ptr<const Road> road_;
  WheelCoordinates w_;
  int input_brake_, input_mu_, input_kx_, input_ky_, input_load_;
  double brake_gain_;
};

}  // namespace mbo::models
