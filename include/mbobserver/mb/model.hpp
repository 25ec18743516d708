// The immutable description of a multibody system in natural coordinates (Sinigaglia 2016 ch. 2.1):
// basic points, unit vectors and relative scalar coordinates (angles, distances), the
// constraints that tie them, the bodies with their constant mass matrices, the force
// elements, the named inputs and which coordinates are independent (z). Built once by
// ModelBuilder (from JSON or from code); never changed by a step. The changing data lives in
// State (state.hpp), the scratch memory of the solvers in Workspace (workspace.hpp).
//
// Coordinates: every movable entity owns consecutive slots of q. Fixed (ground) entities own
// slots of a constant vector placed after q, so expressions index x = [q; constants] and a
// Jacobian entry on a slot >= nq is simply dropped.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "mbobserver/mb/sparse_system.hpp"

namespace mbo::mb {

using Eigen::Vector3d;
using Eigen::VectorXd;
using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

enum class EntityKind : std::uint8_t { point, vector, scalar };
enum class ScalarKind : std::uint8_t { angle, distance, other };

struct Entity {
  std::string name;
  EntityKind kind = EntityKind::point;
  ScalarKind scalar_kind = ScalarKind::other;
  int dim = 0;  // components: the model dimension for points and vectors, 1 for scalars
  int slot = 0;  // first index in x = [q; constants]
  bool fixed = false;
};

// One term of a vector that is linear in the coordinates: (a I + b [ez x]) E, where E is a
// point or vector entity starting at x[slot]. The [ez x] part (b != 0) is the planar
// perpendicular used by 2-point planar bodies (Sinigaglia 2016 eq. (31)); it is zero in 3-D models.
struct LinearTerm {
  int slot = 0;
  double a = 1;
  double b = 0;
};

// A vector linear in the coordinates, e.g. "P1 - A" = {P1, +1}, {A, -1}.
struct LinearVec {
  std::vector<LinearTerm> terms;
};

// A scalar factor g(s) of a combination coefficient.
enum class FactorKind : std::uint8_t { linear, cos, sin };
struct Factor {
  int slot = 0;  // a scalar coordinate
  FactorKind kind = FactorKind::linear;
};

// c * g1(s1) * g2(s2) * g3(s3) * (a I + b [ez x]) E
struct CombinationTerm {
  double c = 1;
  int nfactors = 0;
  std::array<Factor, 3> factors{};
  LinearTerm vec;
};

// --- Constraints -------------------------------------------------------------------------

// A . B - c = 0: constant distance (A = B = Pj - Pi, c = L^2), unit norm (A = B = u, c = 1),
// constant dot product (eq. (4), (6)), the planar prismatic alignment of eq. (5).
struct DotConstraint {
  LinearVec A, B;
  double c = 0;
};

// sum_k terms_k = 0, `dim` rows: a point or vector as a combination of a body's vectors
// (eq. (34)), with coefficients that may be linear in a distance coordinate (a strut's travel)
// or trigonometric in angle coordinates (a wheel's spin, the steering, yaw/pitch/roll).
struct CombinationConstraint {
  std::vector<CombinationTerm> terms;
};

// cos(theta) (A x B).n - sin(theta) (A . B) = 0: theta is the angle from A to B about n.
// One equation, well conditioned at every angle (its derivative in theta is -|A||B| at the
// solution), so no switching between a sine and a cosine form as in Sinigaglia 2016 eq. (21).
// Planar models use n = ez.
struct AngleConstraint {
  int theta_slot = 0;
  LinearVec A, B;
  LinearVec n;  // empty: ez (planar)
};

// s - s(t) = 0: a coordinate driven by an input (rheonomic). Rate and acceleration of the
// input enter the velocity and acceleration problems as Phi_t and Phi_tt.
struct DrivingConstraint {
  int slot = 0;
  int input_value = -1, input_rate = -1, input_accel = -1;  // -1: zero
};

enum class ConstraintKind : std::uint8_t { dot, combination, angle, driving };

struct Constraint {
  ConstraintKind kind = ConstraintKind::dot;
  int index = 0;  // into the kind's array
  int row = 0;  // first row in Phi
  int rows = 1;
  std::string label;  // for messages
};

// --- Bodies --------------------------------------------------------------------------------

// A rigid body: every point of it is r = r0 + sum_k c_k e_k with constant local coordinates c,
// where r0 is a basic point and e_k are linear vectors (unit vectors or point differences; in
// 2-D the second is the perpendicular of the first). Its mass matrix in the coordinates of
// those entities is therefore constant (Sinigaglia 2016 eq. (27)).
struct Body {
  std::string name;
  double mass = 0;
  std::vector<int> slots;  // coordinates of the body, in the order of its local mass matrix
  Eigen::MatrixXd M;  // constant local mass matrix (slots x slots), fixed slots included
  Vector3d com_local;  // centre of mass in the body's basis coordinates c
  // r(c) = C0 * xl + sum_k c_k Ck * xl, with xl = x[slots]
  Eigen::MatrixXd C0;
  std::array<Eigen::MatrixXd, 3> Ck;
  int origin_slot = 0;  // first slot of the origin point
  Vector3d origin_local = Vector3d::Zero();
  std::vector<LinearVec> basis;  // e_k (2-D: e1 and its perpendicular)
  Eigen::Matrix3d basis_local;  // columns: e_k in the body's orthonormal local frame
  Eigen::Matrix3d basis_inverse;
};

// A point or a direction fixed on a body, given in the body's local frame.
LinearVec body_point(const Body& b, const Vector3d& local);
LinearVec body_direction(const Body& b, const Vector3d& local);

// --- Forces ----------------------------------------------------------------------------------

// A point fixed on a body: r = sum_m (a_m I + b_m [ez x]) E_m (linear in the coordinates).
using BodyPoint = LinearVec;

// Piecewise-linear characteristic y(x) (Macchi 2010 Table 5.5); extrapolated with the end slopes.
struct Table {
  std::vector<double> x, y;
  bool empty() const { return x.empty(); }
  double value(double v) const;
  double slope(double v) const;
};

struct PointForce {  // F = constant + inputs (global frame), applied at a body point
  BodyPoint point;
  Vector3d constant = Vector3d::Zero();
  std::array<int, 3> inputs{-1, -1, -1};
};

// A torque on a body (global frame; 2-D: about z). Its generalised force follows from the
// virtual power T . omega with omega = (tr(G) I - G)^-1 sum_k e_k x e_k_dot, G = sum e_k e_k'
// (rigid motion e_k_dot = omega x e_k), so it is exact for any body basis.
struct BodyTorque {
  int body = 0;
  Vector3d constant = Vector3d::Zero();
  std::array<int, 3> inputs{-1, -1, -1};
};

// Force along the line between two body points: tension f = k (l - l0) + preload + c l_dot,
// or the tables when given (spring: f(l - l0), damper: f(l_dot)).
struct SpringDamper {
  BodyPoint p1, p2;
  LinearVec span;  // p2 - p1, derived at build
  double k = 0, c = 0, l0 = 0, preload = 0;
  Table spring, damper;
};

// Generalised force on one coordinate, or between two (coupling, e.g. an anti-roll bar):
// Q_i -= k (d - d0) + preload + c d_dot (+ tables), d = s_i - s_j (or s_i alone), Q_j += same.
// On an angle this is a rotational spring-damper, on a distance a strut spring-damper.
struct CoordinateSpringDamper {
  int slot = 0;
  int slot2 = -1;
  double k = 0, c = 0, x0 = 0, preload = 0;
  Table spring, damper;
};

// Generalised force on a coordinate: a torque on an angle, a force along a distance.
struct CoordinateForce {
  int slot = 0;
  double constant = 0;
  int input = -1;
  double gain = 1;
};

class Model;
class ForceSink;

// Forces a model layer adds (e.g. tyres). `evaluate` adds its generalised forces and, when
// asked, its stiffness K = -dQ/dq and damping C = -dQ/dqd on the coordinates it declared.
class CustomForce {
 public:
  virtual ~CustomForce() = default;
  virtual std::vector<int> coordinates() const = 0;  // q slots it reads and acts on
  virtual void evaluate(const Model& model, const VectorXd& x, const VectorXd& xd, const VectorXd& inputs, double t,
                        ForceSink& out) const = 0;
};

// --- Rotors ----------------------------------------------------------------------------------

// An axisymmetric rotor (a wheel) turning by the scalar coordinate theta relative to a carrier
// whose unit vectors e1, e2 are perpendicular to the rotor's axis a = e2 x e1. The carrier's
// body holds the rotor's whole inertia tensor, so its mass matrix gives 1/2 w_c' I w_c; the
// rotor adds the rest of the rotor's kinetic energy,
//   T_rotor = 1/2 J theta_dot^2 + J theta_dot (e1 . e2_dot),   e1 . e2_dot = w_c . a,
// J the polar moment: 1/2 (w_c + theta_dot a)' I (w_c + theta_dot a) in all. The spin is
// thus a scalar integrated with its rate, theta_{n+1} = theta_n + dt/2 (theta_dot_n +
// theta_dot_{n+1}), where a spin carried by unit vectors turns by 2 atan(w dt / 2) per
// trapezoidal step (an angle (w dt)^2/12 short of w dt, and a response to torque (w dt)^2/2
// too slow: 0.17 % and 1.3 % at 71 rad/s and 2 ms). J theta_ddot on theta is part of the
// constant mass matrix; the coupling (inertia J e1 between theta and e2, and the gyroscopic
// terms of Lagrange's equations) is evaluated by the dynamics (rotor_inertia in dynamics.hpp).
struct Rotor {
  int theta = 0;  // q slot of the spin angle
  int e1 = 0, e2 = 0;  // first slot of each carrier vector in x = [q; constants]
  double J = 0;  // polar moment of inertia (kg m^2)
};

struct SolverSettings {
  // alpha of eq. (39). 0 (the default) scales it to the model and the step:
  // alpha = penalty_ratio * max(M_ii) / (dt^2/4), so that the constraint stiffness of the
  // tangent dominates the largest mass by that ratio. Too small an alpha makes the multiplier
  // iteration converge slowly (its rate is about M / (alpha dt^2/4 Phi_q'Phi_q)); too large
  // an alpha costs digits.
  double penalty = 0;
  double penalty_ratio = 100;
  double tolerance = 1e-10;  // Newton: ||dq||_inf, absolute (m, rad)
  // Modified Newton: the step keeps its tangent while each correction is at most this fraction
  // of the one before (0: a new tangent every iteration). See step() for what it costs.
  double refresh_contraction = 0;
  // Aitken's extrapolation of the corrections where they shrink slowly along one direction
  // (step()); off only to measure it.
  bool extrapolate = true;
  int max_iterations = 25;
  double kinematic_tolerance = 1e-12;  // ||Phi||_inf for the position problem
  int kinematic_max_iterations = 50;
};

// --- The model -------------------------------------------------------------------------------

class Model {
 public:
  std::string name;
  int dim = 2;
  Vector3d gravity = Vector3d::Zero();

  int nq = 0;  // coordinates
  int nconst = 0;  // constant slots after q
  int nc = 0;  // constraint equations
  VectorXd x0;  // initial coordinates and constants (size nq + nconst)
  std::vector<Entity> entities;
  std::vector<std::string> coordinate_names;  // nq names: "P1.x", "u.z", "theta"
  std::vector<int> z;  // independent coordinates (q slots)
  std::vector<std::string> inputs;

  std::vector<Constraint> constraints;
  std::vector<DotConstraint> dots;
  std::vector<CombinationConstraint> combinations;
  std::vector<AngleConstraint> angles;
  std::vector<DrivingConstraint> drivings;

  std::vector<Body> bodies;
  std::vector<PointForce> point_forces;
  std::vector<BodyTorque> body_torques;
  std::vector<SpringDamper> spring_dampers;
  std::vector<CoordinateSpringDamper> coordinate_spring_dampers;
  std::vector<CoordinateForce> coordinate_forces;
  std::vector<std::shared_ptr<const CustomForce>> custom_forces;
  std::vector<Rotor> rotors;

  SolverSettings solver;

  // Derived at build time ------------------------------------------------------------------
  VectorXd Q_gravity;  // constant generalised gravity force (nq)
  struct Entry {
    int row, col;
  };
  std::vector<Entry> jac;  // unique Phi_q pattern, sorted by row then column
  std::vector<int> jac_row_begin;  // nc + 1: entries of row r are [begin[r], begin[r+1])
  std::vector<int> jac_write_target;  // write sequence -> index into jac
  std::vector<Entry> force_K, force_C;  // unique K and C patterns (upper and lower)
  std::vector<int> force_K_target, force_C_target;
  std::vector<Entry> mass;  // global M, COO of unique entries
  std::vector<double> mass_values;
  // Mass the model takes from inputs (a payload, a body whose mass is estimated): with u the
  // inputs, M = M0 + sum_k u[input_k] M_k and Q_gravity likewise, M_k on the entries of `mass`.
  struct MassParameter {
    int input = -1;
    std::vector<double> mass_values;  // per unit of the input, one per entry of `mass`
    VectorXd Q_gravity;  // nq, per unit of the input
    // Where the model's forces read the load the mass puts on them once its weight has settled
    // (a tyre's load scale: input, change per unit of this input). The sensitivity B =
    // dzdd/du takes its weight through these instead of as a force on its body (derivatives.cpp).
    std::vector<std::pair<int, double>> settled_load;  // at most kMaxSettledLoads
  };
  static constexpr std::size_t kMaxSettledLoads = 8;
  std::vector<MassParameter> mass_parameters;
  double mass_scale = 1;  // max diagonal entry of M

  double penalty_for(double dt) const {
    return solver.penalty > 0 ? solver.penalty : solver.penalty_ratio * mass_scale * 4 / (dt * dt);
  }

  // While a model is being built, constant entities carry provisional slots kConstBase + k
  // (components stay contiguous); build() moves them after q. Structures made before build()
  // (e.g. a vehicle's sensor points) are mapped with these.
  static constexpr int kConstBase = 1 << 28;
  int resolve(int slot) const { return slot >= kConstBase ? nq + (slot - kConstBase) : slot; }
  LinearVec resolve(LinearVec v) const {
    for (auto& t : v.terms) t.slot = resolve(t.slot);
    return v;
  }

  // Lookup -----------------------------------------------------------------------------------
  int entity(const std::string& name) const;  // -1 if absent
  int coordinate(const std::string& name) const;  // q slot of "P1.x" / "theta"; -1 if absent
  int input(const std::string& name) const;  // -1 if absent
  bool is_z(int slot) const;
};

}  // namespace mbo::mb
