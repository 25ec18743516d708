// Building a Model from code (the JSON loader and the vehicle builder both use this):
// entities, constraints, bodies with their constant mass matrices, forces, inputs, and the
// independent coordinates. build() derives the sparse patterns and validates.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "mbobserver/mb/model.hpp"

namespace mbo::mb {

// One basis vector of a body: the unit vector `a` (b < 0), or the point difference b - a.
struct BasisItem {
  int a = -1;
  int b = -1;
};

struct BodySpec {
  std::string name;
  double mass = 0;
  int origin = -1;  // a point entity of the body
  std::vector<BasisItem> basis;  // 3-D: three items; 2-D: one (the second is its
                                 // perpendicular); empty: a point mass at origin
  std::map<int, Vector3d> points;  // point entity -> local coordinates
  std::map<int, Vector3d> vectors;  // unit vector entity -> local direction
  Vector3d com = Vector3d::Zero();  // local centre of mass
  Eigen::Matrix3d inertia = Eigen::Matrix3d::Zero();  // about the centre of mass, local axes;
                                                      // 2-D: inertia(2,2) is I_zz
  bool rigid_constraints = true;  // false when other constraints already fix its shape
};

class ModelBuilder {
 public:
  ModelBuilder(std::string name, int dim);

  int dim() const { return m_.dim; }
  void set_gravity(const Vector3d& g) { m_.gravity = g; }
  SolverSettings& solver() { return m_.solver; }

  int point(const std::string& name, const Vector3d& at, bool fixed = false);
  int vector(const std::string& name, const Vector3d& at, bool fixed = false);  // unit length
  int scalar(const std::string& name, double at, ScalarKind kind, bool fixed = false);
  int input(const std::string& name);

  const Entity& entity(int e) const { return m_.entities.at(e); }
  int find_entity(const std::string& name) const { return m_.entity(name); }
  int find_input(const std::string& name) const { return m_.input(name); }
  const Model& model() const { return m_; }

  // Linear vectors
  LinearVec of(int entity, double a = 1) const;  // a * E
  LinearVec difference(int from, int to) const;  // E_to - E_from
  static LinearVec sum(const LinearVec& a, const LinearVec& b, double sb = 1);
  static LinearVec perp(const LinearVec& v);  // ez x v (2-D)

  // Constraints (`label` is used in messages)
  void dot(const LinearVec& A, const LinearVec& B, double c, const std::string& label);
  void distance(int p1, int p2, double length);
  void combination(std::vector<CombinationTerm> terms, const std::string& label);
  void angle(int theta, const LinearVec& from, const LinearVec& to, const LinearVec& axis, const std::string& label);
  void driving(int scalar, int input_value, int input_rate = -1, int input_accel = -1);
  // P = base + s * dir: a point sliding on a line with distance coordinate s (strut, piston).
  void point_on_line(int point, const LinearVec& base, const LinearVec& dir, int s);
  // u, v, w = Rz(yaw) Ry(pitch) Rx(roll) applied to the ground axes: yaw, pitch and roll as
  // coordinates of a triad (Sinigaglia 2016 4.2.4 explains why the observer needs yaw itself).
  void orientation_zyx(int u, int v, int w, int yaw, int pitch, int roll);

  // Bodies; returns its index.
  int body(const BodySpec& spec);
  LinearVec body_point(int body, const Vector3d& local) const;  // a point fixed on the body
  LinearVec body_vector(int body, const Vector3d& local) const;  // a direction fixed on it

  // Forces
  void point_force(const LinearVec& point, const Vector3d& constant, std::array<int, 3> inputs);
  void body_torque(int body, const Vector3d& constant, std::array<int, 3> inputs);
  void spring_damper(SpringDamper s);
  void coordinate_spring_damper(const CoordinateSpringDamper& s);
  void coordinate_force(const CoordinateForce& f);
  void custom_force(std::shared_ptr<const CustomForce> f);
  // An axisymmetric rotor of polar moment J spinning by the angle `theta` about e2 x e1 of
  // the carrier vectors e1, e2 (Rotor in model.hpp); the carrier body keeps the rotor's
  // whole inertia tensor.
  void rotor(int theta, int e1, int e2, double J);

  // Mass the input (kg) adds: a point mass at `local` on a body (a payload), or the body's own
  // mass and inertia scaled with its mass (`local` unused). Zero input: the model as built.
  void point_mass_input(int body, const Vector3d& local, int input);
  void body_mass_input(int body, int input);
  // The mass input `mass_input`'s settled weight changes input `load` by `per_unit` per unit
  // of it (Model::MassParameter::settled_load).
  void settled_load(int mass_input, int load, double per_unit);

  void independent(const std::vector<int>& slots);

  // Derives patterns, mass matrix and gravity forces; throws std::invalid_argument on a
  // model that cannot work (singular body basis, bad independent coordinates...).
  Model build() &&;

 private:
  struct BodyGeometry {
    int origin;
    Vector3d origin_local;
    std::vector<LinearVec> basis;  // dim vectors (2-D: e1 and its perpendicular)
    Eigen::Matrix3d basis_inverse;  // local -> basis coordinates
  };
  int add_entity(const std::string& name, EntityKind kind, int dim, const Vector3d& at, bool fixed,
                 ScalarKind sk = ScalarKind::other);
  void add_constraint(ConstraintKind kind, int index, int rows, const std::string& label);

  struct MassInput {
    int body, input;
    bool point;
    Vector3d local;
    std::vector<std::pair<int, double>> settled_load;
  };
  std::vector<MassInput> mass_inputs_;
  Model m_;
  std::vector<double> q_init_, c_init_;
  std::vector<int> entity_q_slot_;  // provisional: slots assigned in build()
  std::vector<BodyGeometry> geometry_;
  std::vector<char> vector_norm_added_;
};

}  // namespace mbo::mb
