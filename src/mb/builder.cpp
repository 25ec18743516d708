#include "mbobserver/mb/builder.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "mbobserver/mb/constraints.hpp"
#include "mbobserver/mb/forces.hpp"

namespace mbo::mb {
namespace {

[[noreturn]] void invalid(const std::string& what) { throw std::invalid_argument(what); }

Eigen::Matrix3d term_matrix(const LinearTerm& t) {
  Eigen::Matrix3d A = t.a * Eigen::Matrix3d::Identity();
  A(0, 1) -= t.b;
  A(1, 0) += t.b;
  return A;
}

// Unique, sorted entries and the map from a write sequence to them.
void compress(const std::vector<Model::Entry>& seq, std::vector<Model::Entry>& unique, std::vector<int>& target) {
  std::map<std::pair<int, int>, int> index;
  for (const auto& e : seq) index.emplace(std::make_pair(e.row, e.col), 0);
  unique.clear();
  int k = 0;
  for (auto& [rc, i] : index) {
    i = k++;
    unique.push_back({rc.first, rc.second});
  }
  target.clear();
  for (const auto& e : seq) target.push_back(index.at({e.row, e.col}));
}

}  // namespace

int Model::entity(const std::string& n) const {
  for (std::size_t i = 0; i < entities.size(); ++i)
    if (entities[i].name == n) return static_cast<int>(i);
  return -1;
}

int Model::coordinate(const std::string& n) const {
  for (std::size_t i = 0; i < coordinate_names.size(); ++i)
    if (coordinate_names[i] == n) return static_cast<int>(i);
  return -1;
}

int Model::input(const std::string& n) const {
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i] == n) return static_cast<int>(i);
  return -1;
}

bool Model::is_z(int slot) const { return std::find(z.begin(), z.end(), slot) != z.end(); }

LinearVec body_point(const Body& b, const Vector3d& local) {
  LinearVec r{{LinearTerm{b.origin_slot, 1, 0}}};
  if (b.basis.empty()) return r;
  Vector3d c = b.basis_inverse * (local - b.origin_local);
  for (std::size_t k = 0; k < b.basis.size(); ++k)
    if (c[k] != 0) r = ModelBuilder::sum(r, b.basis[k], c[k]);
  return r;
}

LinearVec body_direction(const Body& b, const Vector3d& local) {
  LinearVec r;
  Vector3d c = b.basis_inverse * local;
  for (std::size_t k = 0; k < b.basis.size(); ++k)
    if (c[k] != 0) r = ModelBuilder::sum(r, b.basis[k], c[k]);
  return r;
}

ModelBuilder::ModelBuilder(std::string name, int dim) {
  if (dim != 2 && dim != 3) invalid("model dimension must be 2 or 3");
  m_.name = std::move(name);
  m_.dim = dim;
}

int ModelBuilder::add_entity(const std::string& name, EntityKind kind, int dim, const Vector3d& at, bool fixed,
                             ScalarKind sk) {
  if (m_.entity(name) >= 0) invalid("duplicate name \"" + name + "\"");
  for (int k = 0; k < dim; ++k)
    if (!std::isfinite(at[k])) invalid("\"" + name + "\": non-finite initial value");
  Entity e;
  e.name = name;
  e.kind = kind;
  e.scalar_kind = sk;
  e.dim = dim;
  e.fixed = fixed;
  if (fixed) {
    e.slot = Model::kConstBase + static_cast<int>(c_init_.size());
    for (int k = 0; k < dim; ++k) c_init_.push_back(at[k]);
  } else {
    e.slot = static_cast<int>(q_init_.size());
    static const char* axis[] = {".x", ".y", ".z"};
    for (int k = 0; k < dim; ++k) {
      q_init_.push_back(at[k]);
      m_.coordinate_names.push_back(dim == 1 ? name : name + axis[k]);
    }
  }
  m_.entities.push_back(e);
  vector_norm_added_.push_back(0);
  return static_cast<int>(m_.entities.size()) - 1;
}

int ModelBuilder::point(const std::string& name, const Vector3d& at, bool fixed) {
  return add_entity(name, EntityKind::point, m_.dim, at, fixed);
}

int ModelBuilder::vector(const std::string& name, const Vector3d& at, bool fixed) {
  double n = at.head(m_.dim).norm();
  if (std::abs(n - 1) > 1e-9) invalid("unit vector \"" + name + "\" has length " + std::to_string(n) + ", not 1");
  return add_entity(name, EntityKind::vector, m_.dim, at, fixed);
}

int ModelBuilder::scalar(const std::string& name, double at, ScalarKind kind, bool fixed) {
  return add_entity(name, EntityKind::scalar, 1, Vector3d(at, 0, 0), fixed, kind);
}

int ModelBuilder::input(const std::string& name) {
  if (m_.input(name) >= 0) return m_.input(name);
  m_.inputs.push_back(name);
  return static_cast<int>(m_.inputs.size()) - 1;
}

LinearVec ModelBuilder::of(int e, double a) const {
  const auto& en = m_.entities.at(e);
  if (en.kind == EntityKind::scalar) invalid("\"" + en.name + "\" is a scalar, not a point or vector");
  return LinearVec{{LinearTerm{en.slot, a, 0}}};
}

LinearVec ModelBuilder::difference(int from, int to) const {
  if (m_.entities.at(from).kind != EntityKind::point || m_.entities.at(to).kind != EntityKind::point)
    invalid("a difference needs two points");
  return sum(of(to), of(from), -1);
}

LinearVec ModelBuilder::sum(const LinearVec& a, const LinearVec& b, double sb) {
  LinearVec r = a;
  for (auto t : b.terms) {
    t.a *= sb;
    t.b *= sb;
    r.terms.push_back(t);
  }
  return r;
}

LinearVec ModelBuilder::perp(const LinearVec& v) {
  LinearVec r = v;
  for (auto& t : r.terms) {
    double a = t.a, b = t.b;  // ez x (a I + b K) = a K - b I
    t.a = -b;
    t.b = a;
  }
  return r;
}

void ModelBuilder::add_constraint(ConstraintKind kind, int index, int rows, const std::string& label) {
  Constraint c;
  c.kind = kind;
  c.index = index;
  c.rows = rows;
  c.row = m_.nc;
  c.label = label;
  m_.nc += rows;
  m_.constraints.push_back(c);
}

void ModelBuilder::dot(const LinearVec& A, const LinearVec& B, double c, const std::string& label) {
  m_.dots.push_back({A, B, c});
  add_constraint(ConstraintKind::dot, static_cast<int>(m_.dots.size()) - 1, 1, label);
}

void ModelBuilder::distance(int p1, int p2, double length) {
  if (!(length > 0)) invalid("distance between points must be > 0");
  auto d = difference(p1, p2);
  dot(d, d, length * length, "distance " + m_.entities[p1].name + "-" + m_.entities[p2].name);
}

void ModelBuilder::combination(std::vector<CombinationTerm> terms, const std::string& label) {
  m_.combinations.push_back({std::move(terms)});
  add_constraint(ConstraintKind::combination, static_cast<int>(m_.combinations.size()) - 1, m_.dim, label);
}

void ModelBuilder::angle(int theta, const LinearVec& from, const LinearVec& to, const LinearVec& axis,
                         const std::string& label) {
  const auto& e = m_.entities.at(theta);
  if (e.kind != EntityKind::scalar) invalid("angle coordinate \"" + e.name + "\" must be a scalar");
  if (m_.dim == 3 && axis.terms.empty()) invalid(label + ": a 3-D angle needs an axis");
  m_.angles.push_back({e.slot, from, to, axis});
  add_constraint(ConstraintKind::angle, static_cast<int>(m_.angles.size()) - 1, 1, label);
}

void ModelBuilder::driving(int s, int input_value, int input_rate, int input_accel) {
  const auto& e = m_.entities.at(s);
  if (e.kind != EntityKind::scalar || e.fixed) invalid("driven coordinate must be a movable scalar");
  m_.drivings.push_back({e.slot, input_value, input_rate, input_accel});
  add_constraint(ConstraintKind::driving, static_cast<int>(m_.drivings.size()) - 1, 1, "driving " + e.name);
}

void ModelBuilder::point_on_line(int p, const LinearVec& base, const LinearVec& dir, int s) {
  const auto& se = m_.entities.at(s);
  if (se.kind != EntityKind::scalar) invalid("distance coordinate must be a scalar");
  std::vector<CombinationTerm> terms;
  for (const auto& t : of(p).terms) terms.push_back({1, 0, {}, t});
  for (const auto& t : base.terms) terms.push_back({-1, 0, {}, t});
  for (const auto& t : dir.terms) {
    CombinationTerm ct{-1, 1, {}, t};
    ct.factors[0] = {se.slot, FactorKind::linear};
    terms.push_back(ct);
  }
  combination(std::move(terms), m_.entities[p].name + " on line (" + se.name + ")");
}

void ModelBuilder::orientation_zyx(int u, int v, int w, int yaw, int pitch, int roll) {
  if (m_.dim != 3) invalid("yaw/pitch/roll need a 3-D model");
  auto ground = [&](const char* name, const Vector3d& at) {
    int e = m_.entity(name);
    return e >= 0 ? e : point(name, at, true);
  };
  int gx = ground("__ground_x", Vector3d::UnitX());
  int gy = ground("__ground_y", Vector3d::UnitY());
  int gz = ground("__ground_z", Vector3d::UnitZ());
  const int Y = m_.entities[yaw].slot, P = m_.entities[pitch].slot, R = m_.entities[roll].slot;
  auto term = [&](double c, std::initializer_list<Factor> f, int g) {
    CombinationTerm t;
    t.c = c;
    t.nfactors = static_cast<int>(f.size());
    std::copy(f.begin(), f.end(), t.factors.begin());
    t.vec = {m_.entities[g].slot, 1, 0};
    return t;
  };
  auto C = [](int s) { return Factor{s, FactorKind::cos}; };
  auto S = [](int s) { return Factor{s, FactorKind::sin}; };
  auto self = [&](int e) { return CombinationTerm{1, 0, {}, {m_.entities[e].slot, 1, 0}}; };
  // Columns of Rz(yaw) Ry(pitch) Rx(roll).
  combination({self(u), term(-1, {C(Y), C(P)}, gx), term(-1, {S(Y), C(P)}, gy), term(1, {S(P)}, gz)}, "orientation u");
  combination({self(v), term(-1, {C(Y), S(P), S(R)}, gx), term(1, {S(Y), C(R)}, gx), term(-1, {S(Y), S(P), S(R)}, gy),
               term(-1, {C(Y), C(R)}, gy), term(-1, {C(P), S(R)}, gz)},
              "orientation v");
  combination({self(w), term(-1, {C(Y), S(P), C(R)}, gx), term(-1, {S(Y), S(R)}, gx), term(-1, {S(Y), S(P), C(R)}, gy),
               term(1, {C(Y), S(R)}, gy), term(-1, {C(P), C(R)}, gz)},
              "orientation w");
}

void ModelBuilder::point_mass_input(int body, const Vector3d& local, int input) {
  if (body < 0 || body >= static_cast<int>(m_.bodies.size())) invalid("point_mass_input: no such body");
  if (input < 0 || input >= static_cast<int>(m_.inputs.size())) invalid("point_mass_input: no such input");
  mass_inputs_.push_back({body, input, true, local, {}});
}

void ModelBuilder::body_mass_input(int body, int input) {
  if (body < 0 || body >= static_cast<int>(m_.bodies.size())) invalid("body_mass_input: no such body");
  if (input < 0 || input >= static_cast<int>(m_.inputs.size())) invalid("body_mass_input: no such input");
  mass_inputs_.push_back({body, input, false, Vector3d::Zero(), {}});
}

void ModelBuilder::settled_load(int mass_input, int load, double per_unit) {
  if (load < 0 || load >= static_cast<int>(m_.inputs.size())) invalid("settled_load: no such input");
  for (auto& mi : mass_inputs_)
    if (mi.input == mass_input) {
      if (mi.settled_load.size() == Model::kMaxSettledLoads) invalid("settled_load: too many loads for one mass");
      mi.settled_load.emplace_back(load, per_unit);
      return;
    }
  invalid("settled_load: no mass input " + std::to_string(mass_input));
}

int ModelBuilder::body(const BodySpec& spec) {
  const int d = m_.dim;
  if (!(spec.mass >= 0) || !std::isfinite(spec.mass)) invalid("body \"" + spec.name + "\": mass must be >= 0");
  if (spec.origin < 0 || m_.entities.at(spec.origin).kind != EntityKind::point)
    invalid("body \"" + spec.name + "\": origin must be a point");
  auto local_of_point = [&](int e) {
    if (e == spec.origin && !spec.points.count(e)) return Vector3d(Vector3d::Zero());
    auto it = spec.points.find(e);
    if (it == spec.points.end())
      invalid("body \"" + spec.name + "\": point \"" + m_.entities.at(e).name + "\" has no local coordinates");
    return it->second;
  };
  auto local_of_vector = [&](int e) {
    auto it = spec.vectors.find(e);
    if (it == spec.vectors.end())
      invalid("body \"" + spec.name + "\": vector \"" + m_.entities.at(e).name + "\" has no local direction");
    return it->second;
  };
  for (const auto& [e, dir] : spec.vectors)
    if (std::abs(dir.head(d).norm() - 1) > 1e-9)
      invalid("body \"" + spec.name + "\": local direction of \"" + m_.entities.at(e).name + "\" is not unit length");

  BodyGeometry g;
  g.origin = spec.origin;
  g.origin_local = local_of_point(spec.origin);
  std::vector<Vector3d> local;
  std::vector<int> unit_vectors;
  const std::size_t nbasis_expected = d == 3 ? 3 : 1;
  if (!spec.basis.empty() && spec.basis.size() != nbasis_expected)
    invalid("body \"" + spec.name + "\": a " + std::to_string(d) + "-D body needs " + std::to_string(nbasis_expected) +
            " basis vector(s)");
  for (const auto& item : spec.basis) {
    if (item.b < 0) {
      g.basis.push_back(of(item.a));
      local.push_back(local_of_vector(item.a));
      unit_vectors.push_back(item.a);
    } else {
      g.basis.push_back(difference(item.a, item.b));
      local.push_back(local_of_point(item.b) - local_of_point(item.a));
    }
  }
  if (d == 2 && !g.basis.empty()) {
    g.basis.push_back(perp(g.basis[0]));
    local.push_back(Vector3d(-local[0].y(), local[0].x(), 0));
  }
  Eigen::Matrix3d B = Eigen::Matrix3d::Identity();
  for (std::size_t k = 0; k < local.size(); ++k) B.col(k) = local[k];
  if (!local.empty()) {
    double scale = 1;
    bool zero = false;
    for (auto& l : local) scale *= l.norm(), zero = zero || l.norm() < 1e-12;
    if (zero || std::abs(B.determinant()) < 1e-9 * scale)
      invalid("body \"" + spec.name + "\": singular geometry (basis vectors are parallel or zero)");
  }
  g.basis_inverse = B.inverse();

  // Rigid-body constraints of the basis (Sinigaglia 2016 eqs. (1)-(4), (33)).
  if (spec.rigid_constraints) {
    const std::size_t nb = d == 3 ? g.basis.size() : std::min<std::size_t>(g.basis.size(), 1);
    for (std::size_t k = 0; k < nb; ++k) {
      bool unit = spec.basis[k].b < 0;
      if (unit) {
        int e = spec.basis[k].a;
        if (!vector_norm_added_[e] && !m_.entities[e].fixed) {
          dot(g.basis[k], g.basis[k], 1.0, "unit " + m_.entities[e].name);
          vector_norm_added_[e] = 1;
        }
      } else {
        dot(g.basis[k], g.basis[k], local[k].squaredNorm(), spec.name + " rigid length");
      }
      for (std::size_t l = k + 1; l < nb; ++l)
        dot(g.basis[k], g.basis[l], local[k].dot(local[l]), spec.name + " rigid angle");
    }
  }
  // Other points and vectors of the body: combinations of its basis (eq. (34)).
  auto attach = [&](int e, const Vector3d& loc, bool is_point) {
    Vector3d c = g.basis_inverse * (is_point ? Vector3d(loc - g.origin_local) : loc);
    std::vector<CombinationTerm> terms;
    for (const auto& t : of(e).terms) terms.push_back({1, 0, {}, t});
    if (is_point)
      for (const auto& t : of(g.origin).terms) terms.push_back({-1, 0, {}, t});
    for (std::size_t k = 0; k < g.basis.size(); ++k)
      if (c[k] != 0)
        for (const auto& t : g.basis[k].terms) terms.push_back({-c[k], 0, {}, t});
    combination(std::move(terms), spec.name + ": " + m_.entities[e].name + " in body");
  };
  std::set<int> in_basis{spec.origin};
  for (const auto& item : spec.basis) {
    in_basis.insert(item.a);
    if (item.b >= 0) in_basis.insert(item.b);
  }
  if (spec.rigid_constraints) {
    for (const auto& [e, loc] : spec.points)
      if (!in_basis.count(e)) {
        if (g.basis.empty()) invalid("body \"" + spec.name + "\": a point mass cannot carry other points");
        attach(e, loc, true);
      }
    for (const auto& [e, dir] : spec.vectors)
      if (!in_basis.count(e)) {
        if (g.basis.empty()) invalid("body \"" + spec.name + "\": a point mass cannot carry vectors");
        attach(e, dir, false);
      }
  }

  // Constant mass matrix: r = S0 xl + sum_k c_k E_k xl, M = int C(c)' C(c) dm.
  Body body;
  body.name = spec.name;
  body.mass = spec.mass;
  std::vector<int> slots;
  auto add_slots = [&](int slot0, int n) {
    for (int k = 0; k < n; ++k)
      if (std::find(slots.begin(), slots.end(), slot0 + k) == slots.end()) slots.push_back(slot0 + k);
  };
  add_slots(m_.entities[spec.origin].slot, d);
  for (const auto& v : g.basis)
    for (const auto& t : v.terms) add_slots(t.slot, d);
  const int n = static_cast<int>(slots.size());
  auto local_index = [&](int slot) {
    return static_cast<int>(std::find(slots.begin(), slots.end(), slot) - slots.begin());
  };
  auto block = [&](const LinearVec& v) {
    Eigen::MatrixXd E = Eigen::MatrixXd::Zero(d, n);
    for (const auto& t : v.terms) {
      Eigen::Matrix3d A = term_matrix(t);
      for (int k = 0; k < d; ++k) E.block(0, local_index(t.slot + k), d, 1) += A.block(0, k, d, 1);
    }
    return E;
  };
  body.slots = slots;
  body.C0 = block(of(spec.origin));
  for (std::size_t k = 0; k < g.basis.size(); ++k) body.Ck[k] = block(g.basis[k]);
  body.basis = g.basis;
  body.origin_slot = m_.entities[spec.origin].slot;
  body.origin_local = g.origin_local;
  body.basis_local = B;
  body.basis_inverse = g.basis_inverse;
  Vector3d rg = spec.com - g.origin_local;
  body.com_local = g.basis.empty() ? Vector3d::Zero() : Vector3d(g.basis_inverse * rg);
  body.M = spec.mass * body.C0.transpose() * body.C0;
  if (!g.basis.empty()) {
    Eigen::Matrix3d EG;  // second moments about the centre of mass: int rho rho' dm
    if (d == 3) {
      EG = 0.5 * spec.inertia.trace() * Eigen::Matrix3d::Identity() - spec.inertia;
    } else {
      // Planar motion depends only on I_zz = trace; placing it along the first basis vector
      // reproduces the slender-bar mass matrix of Sinigaglia 2016 Appendix A.3.1 exactly.
      Vector3d e1 = local[0].normalized();
      EG = spec.inertia(2, 2) * e1 * e1.transpose();
    }
    Eigen::Matrix3d Jx = spec.mass * rg * rg.transpose() + EG;
    Eigen::Matrix3d J = g.basis_inverse * Jx * g.basis_inverse.transpose();
    const int nb = static_cast<int>(g.basis.size());
    for (int k = 0; k < nb; ++k) {
      body.M += spec.mass * body.com_local[k] * (body.C0.transpose() * body.Ck[k] + body.Ck[k].transpose() * body.C0);
      for (int l = 0; l < nb; ++l) body.M += J(k, l) * body.Ck[k].transpose() * body.Ck[l];
    }
  }
  m_.bodies.push_back(std::move(body));
  geometry_.push_back(std::move(g));
  return static_cast<int>(m_.bodies.size()) - 1;
}

LinearVec ModelBuilder::body_point(int b, const Vector3d& local) const {
  const auto& g = geometry_.at(b);
  LinearVec r = of(g.origin);
  if (g.basis.empty()) return r;
  Vector3d c = g.basis_inverse * (local - g.origin_local);
  for (std::size_t k = 0; k < g.basis.size(); ++k)
    if (c[k] != 0) r = sum(r, g.basis[k], c[k]);
  return r;
}

LinearVec ModelBuilder::body_vector(int b, const Vector3d& local) const {
  const auto& g = geometry_.at(b);
  if (g.basis.empty()) invalid("a point mass has no directions");
  LinearVec r;
  Vector3d c = g.basis_inverse * local;
  for (std::size_t k = 0; k < g.basis.size(); ++k)
    if (c[k] != 0) r = sum(r, g.basis[k], c[k]);
  return r;
}

void ModelBuilder::point_force(const LinearVec& p, const Vector3d& constant, std::array<int, 3> inputs) {
  m_.point_forces.push_back({p, constant, inputs});
}

void ModelBuilder::body_torque(int body, const Vector3d& constant, std::array<int, 3> inputs) {
  if (body < 0 || body >= static_cast<int>(m_.bodies.size())) invalid("torque on an unknown body");
  if (m_.bodies[body].basis.empty()) invalid("a point mass cannot take a torque");
  m_.body_torques.push_back({body, constant, inputs});
}

void ModelBuilder::spring_damper(SpringDamper s) {
  s.span = sum(s.p2, s.p1, -1);
  m_.spring_dampers.push_back(std::move(s));
}

void ModelBuilder::coordinate_spring_damper(const CoordinateSpringDamper& s) {
  m_.coordinate_spring_dampers.push_back(s);
}

void ModelBuilder::coordinate_force(const CoordinateForce& f) { m_.coordinate_forces.push_back(f); }

void ModelBuilder::custom_force(std::shared_ptr<const CustomForce> f) { m_.custom_forces.push_back(std::move(f)); }

void ModelBuilder::rotor(int theta, int e1, int e2, double J) {
  const auto& t = m_.entities.at(theta);
  if (t.kind != EntityKind::scalar || t.fixed) invalid("rotor: \"" + t.name + "\" must be a movable scalar");
  for (int e : {e1, e2})
    if (m_.entities.at(e).kind != EntityKind::vector)
      invalid("rotor \"" + t.name + "\": \"" + m_.entities.at(e).name + "\" must be a unit vector");
  if (m_.dim != 3) invalid("rotor \"" + t.name + "\": rotors need a 3-D model");
  if (!(J > 0) || !std::isfinite(J)) invalid("rotor \"" + t.name + "\": polar inertia must be > 0");
  m_.rotors.push_back({t.slot, m_.entities[e1].slot, m_.entities[e2].slot, J});
}

void ModelBuilder::independent(const std::vector<int>& slots) {
  std::set<int> seen;
  for (int s : slots) {
    if (s < 0 || s >= static_cast<int>(q_init_.size()))
      invalid("an independent coordinate must be a movable coordinate");
    if (!seen.insert(s).second) invalid("independent coordinate listed twice");
  }
  m_.z = slots;
}

Model ModelBuilder::build() && {
  Model& m = m_;
  m.nq = static_cast<int>(q_init_.size());
  m.nconst = static_cast<int>(c_init_.size());
  if (m.nq == 0) invalid("model has no movable coordinates");
  auto fix = [&](int& s) { s = m.resolve(s); };
  auto fixv = [&](LinearVec& v) {
    for (auto& t : v.terms) fix(t.slot);
  };
  for (auto& e : m.entities) fix(e.slot);
  for (auto& d : m.dots) fixv(d.A), fixv(d.B);
  for (auto& c : m.combinations)
    for (auto& t : c.terms) {
      fix(t.vec.slot);
      for (int j = 0; j < t.nfactors; ++j) fix(t.factors[j].slot);
    }
  for (auto& a : m.angles) fix(a.theta_slot), fixv(a.A), fixv(a.B), fixv(a.n);
  for (auto& d : m.drivings) fix(d.slot);
  for (auto& b : m.bodies) {
    fix(b.origin_slot);
    for (auto& s : b.slots) fix(s);
    for (auto& v : b.basis) fixv(v);
  }
  for (auto& p : m.point_forces) fixv(p.point);
  for (auto& s : m.spring_dampers) fixv(s.p1), fixv(s.p2), fixv(s.span);
  for (auto& s : m.coordinate_spring_dampers) {
    fix(s.slot);
    if (s.slot2 >= 0) fix(s.slot2);
  }
  for (auto& f : m.coordinate_forces) fix(f.slot);
  for (auto& r : m.rotors) fix(r.theta), fix(r.e1), fix(r.e2);
  for (const auto& f : m.custom_forces)
    for (int s : f->coordinates())
      if (s < 0 || s >= m.nq) invalid("a custom force acts on a slot that is not a coordinate");

  m.x0.resize(m.nq + m.nconst);
  for (int i = 0; i < m.nq; ++i) m.x0[i] = q_init_[i];
  for (int i = 0; i < m.nconst; ++i) m.x0[m.nq + i] = c_init_[i];

  // Patterns
  compress(record_jacobian_pattern(m, m.x0), m.jac, m.jac_write_target);
  m.jac_row_begin.assign(m.nc + 1, 0);
  for (const auto& e : m.jac) ++m.jac_row_begin[e.row + 1];
  for (int r = 0; r < m.nc; ++r) m.jac_row_begin[r + 1] += m.jac_row_begin[r];
  std::vector<Model::Entry> kseq, cseq;
  record_force_patterns(m, m.x0, kseq, cseq);
  compress(kseq, m.force_K, m.force_K_target);
  compress(cseq, m.force_C, m.force_C_target);

  // Global mass matrix and gravity
  std::map<std::pair<int, int>, double> M;
  for (const auto& r : m.rotors) {
    const Vector3d e1 = m.x0.segment<3>(r.e1), e2 = m.x0.segment<3>(r.e2);
    if (std::abs(e1.dot(e2)) > 1e-6)
      invalid("rotor on \"" + m.coordinate_names[r.theta] + "\": e1 and e2 are not perpendicular");
    M[{r.theta, r.theta}] += r.J;  // 1/2 J theta_dot^2; the coupling is not constant
  }
  m.Q_gravity = VectorXd::Zero(m.nq);
  for (const auto& b : m.bodies) {
    const int n = static_cast<int>(b.slots.size());
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (b.slots[i] < m.nq && b.slots[j] < m.nq && b.M(i, j) != 0) M[{b.slots[i], b.slots[j]}] += b.M(i, j);
    Eigen::MatrixXd C = b.C0;
    for (int k = 0; k < 3; ++k)
      if (b.Ck[k].size()) C += b.com_local[k] * b.Ck[k];
    VectorXd q = b.mass * C.transpose() * m.gravity.head(m.dim);
    for (int i = 0; i < n; ++i)
      if (b.slots[i] < m.nq) m.Q_gravity[b.slots[i]] += q[i];
  }
  // Mass parameters: their local matrices per unit of input (a point mass m C(c)' C(c), a
  // body's M / mass), on the same global entries (added to the pattern where new).
  std::vector<std::map<std::pair<int, int>, double>> param_M(mass_inputs_.size());
  for (std::size_t k = 0; k < mass_inputs_.size(); ++k) {
    const auto& mi = mass_inputs_[k];
    const Body& b = m.bodies.at(static_cast<std::size_t>(mi.body));
    const int n = static_cast<int>(b.slots.size());
    Eigen::MatrixXd Mk, C = b.C0;
    if (mi.point) {
      const Vector3d c = b.basis_inverse * (mi.local - b.origin_local);  // the point's basis coordinates
      for (int j = 0; j < 3; ++j)
        if (b.Ck[j].size()) C += c[j] * b.Ck[j];
      Mk = C.transpose() * C;
    } else {
      if (!(b.mass > 0)) invalid("body \"" + b.name + "\": a mass input needs a body with mass");
      Mk = b.M / b.mass;
      for (int j = 0; j < 3; ++j)
        if (b.Ck[j].size()) C += b.com_local[j] * b.Ck[j];
    }
    Model::MassParameter mp;
    mp.input = mi.input;
    mp.settled_load = mi.settled_load;
    mp.Q_gravity = VectorXd::Zero(m.nq);
    const VectorXd g = C.transpose() * m.gravity.head(m.dim);
    for (int i = 0; i < n; ++i) {
      if (b.slots[i] < m.nq) mp.Q_gravity[b.slots[i]] += g[i];
      for (int j = 0; j < n; ++j)
        if (b.slots[i] < m.nq && b.slots[j] < m.nq && Mk(i, j) != 0) {
          M[{b.slots[i], b.slots[j]}] += 0.0;  // in the pattern
          param_M[k][{b.slots[i], b.slots[j]}] += Mk(i, j);
        }
    }
    m.mass_parameters.push_back(std::move(mp));
  }
  m.mass_scale = 0;
  for (auto& [rc, v] : M) {
    m.mass.push_back({rc.first, rc.second});
    m.mass_values.push_back(v);
    if (rc.first == rc.second) m.mass_scale = std::max(m.mass_scale, v);
  }
  if (!(m.mass_scale > 0)) m.mass_scale = 1;  // massless: the kinematic check names the DOF
  for (std::size_t k = 0; k < param_M.size(); ++k) {
    auto& values = m.mass_parameters[k].mass_values;
    values.assign(m.mass.size(), 0.0);
    for (std::size_t e = 0; e < m.mass.size(); ++e) {
      const auto it = param_M[k].find({m.mass[e].row, m.mass[e].col});
      if (it != param_M[k].end()) values[e] = it->second;
    }
  }
  return std::move(m_);
}

}  // namespace mbo::mb
