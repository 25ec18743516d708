#include "mbobserver/mb/model_json.hpp"

#include <cmath>
#include <stdexcept>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/mb/builder.hpp"
#include "mbobserver/mb/kinematics.hpp"
#include "mbobserver/mb/state.hpp"
#include "mbobserver/mb/workspace.hpp"

namespace mbo::mb {
namespace {

using mbo::ConfigError;
using mbo::JsonReader;

Vector3d vec3(const JsonReader& r, int dim) {
  auto v = r.as_numbers(dim);
  Vector3d out = Vector3d::Zero();
  for (int k = 0; k < dim; ++k) out[k] = v[k];
  return out;
}

// Runs a builder call and turns its std::invalid_argument into a ConfigError at `where`.
template <class F>
auto at(const JsonReader& where, F&& f) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    where.fail(e.what());
  }
}

class Loader {
 public:
  Loader(const JsonReader& root) : root_(root), b_(root.string("name", "model"), dimension(root)) {}

  Model load() {
    const int d = b_.dim();
    if (auto g = root_.find("gravity")) b_.set_gravity(vec3(*g, d));
    if (auto in = root_.find("inputs"))
      for (const auto& i : in->items()) b_.input(i.as_string());
    if (auto pts = root_.find("points"))
      for (const auto& name : pts->keys()) {
        auto p = pts->at(name);
        Vector3d x = vec3(p.at("at"), d);
        bool fixed = p.boolean("fixed", false);
        p.finish();
        at(p, [&] { return b_.point(name, x, fixed); });
      }
    if (auto vs = root_.find("vectors"))
      for (const auto& name : vs->keys()) {
        auto v = vs->at(name);
        Vector3d x = vec3(v.at("at"), d);
        bool fixed = v.boolean("fixed", false);
        v.finish();
        at(v, [&] { return b_.vector(name, x, fixed); });
      }
    if (auto ss = root_.find("scalars"))
      for (const auto& name : ss->keys()) {
        auto s = ss->at(name);
        std::string type = s.choice("type", {"angle", "distance", "other"});
        ScalarKind k = type == "angle"      ? ScalarKind::angle
                       : type == "distance" ? ScalarKind::distance
                                            : ScalarKind::other;
        double x = s.number("at");
        bool fixed = s.boolean("fixed", false);
        s.finish();
        at(s, [&] { return b_.scalar(name, x, k, fixed); });
      }
    if (auto bs = root_.find("bodies"))
      for (const auto& name : bs->keys()) body(name, bs->at(name));
    if (auto cs = root_.find("constraints"))
      for (const auto& c : cs->items()) constraint(c);
    if (auto fs = root_.find("forces"))
      for (const auto& f : fs->items()) force(f);
    if (auto z = root_.find("independent")) {
      std::vector<int> slots;
      for (const auto& item : z->items()) slots.push_back(coordinate(item));
      at(*z, [&] {
        b_.independent(slots);
        return 0;
      });
    }
    if (auto s = root_.find("solver")) {
      auto& st = b_.solver();
      st.penalty = s->non_negative("penalty", st.penalty);  // 0: scaled to the model and step
      st.penalty_ratio = s->positive("penalty_ratio", st.penalty_ratio);
      st.tolerance = s->positive("tolerance", st.tolerance);
      st.max_iterations = static_cast<int>(s->integer("max_iterations", 1, 1000, st.max_iterations));
      st.kinematic_tolerance = s->positive("kinematic_tolerance", st.kinematic_tolerance);
      st.kinematic_max_iterations =
          static_cast<int>(s->integer("kinematic_max_iterations", 1, 1000, st.kinematic_max_iterations));
      s->finish();
    }
    if (root_.has("description")) root_.string("description");
    root_.finish();
    Model m = at(root_, [&] { return std::move(b_).build(); });
    if (!m.z.empty())
      at(root_, [&] {
        check_kinematics(m);
        return 0;
      });
    return m;
  }

 private:
  static int dimension(const JsonReader& r) { return static_cast<int>(r.integer("dimension", 2, 3)); }

  int entity(const JsonReader& r, const std::string& name, const char* what) {
    int e = b_.find_entity(name);
    if (e < 0) r.fail("unknown " + std::string(what) + " \"" + name + "\"");
    return e;
  }

  // "u" (a unit vector) or "A->B" (a point difference)
  LinearVec vector_expr(const JsonReader& r) {
    std::string s = r.as_string();
    auto arrow = s.find("->");
    if (arrow != std::string::npos) {
      int a = entity(r, s.substr(0, arrow), "point");
      int b = entity(r, s.substr(arrow + 2), "point");
      return at(r, [&] { return b_.difference(a, b); });
    }
    int e = entity(r, s, "vector");
    if (b_.entity(e).kind != EntityKind::vector)
      r.fail("\"" + s + "\" is not a unit vector (write \"A->B\" for the direction from A to B)");
    return b_.of(e);
  }

  int coordinate(const JsonReader& r) {
    std::string s = r.as_string();
    int slot = b_.model().coordinate(s);
    if (slot < 0) {
      int e = b_.find_entity(s);
      if (e >= 0 && b_.entity(e).fixed) r.fail("\"" + s + "\" is fixed, not a coordinate");
      r.fail("unknown coordinate \"" + s + "\"");
    }
    return slot;
  }

  int scalar_entity(const JsonReader& r) {
    std::string s = r.as_string();
    int e = entity(r, s, "coordinate");
    if (b_.entity(e).kind != EntityKind::scalar) r.fail("\"" + s + "\" is not a scalar coordinate");
    return e;
  }

  int input(const JsonReader& r) {
    std::string s = r.as_string();
    int i = b_.find_input(s);
    if (i < 0) r.fail("unknown input \"" + s + "\" (declare it in \"inputs\")");
    return i;
  }

  // "P1" (a point) or {"body": "b", "at": [..]}
  LinearVec point_ref(const JsonReader& r) {
    if (r.is_string()) {
      int e = entity(r, r.as_string(), "point");
      if (b_.entity(e).kind != EntityKind::point) r.fail("\"" + r.as_string() + "\" is not a point");
      return b_.of(e);
    }
    std::string body = r.string("body");
    auto it = bodies_.find(body);
    if (it == bodies_.end()) r.at("body").fail("unknown body \"" + body + "\"");
    Vector3d local = vec3(r.at("at"), b_.dim());
    r.finish();
    return at(r, [&] { return b_.body_point(it->second, local); });
  }

  void body(const std::string& name, const JsonReader& r) {
    const int d = b_.dim();
    BodySpec s;
    s.name = name;
    s.mass = r.non_negative("mass");
    if (auto pts = r.find("points"))
      for (const auto& p : pts->keys()) s.points[entity(pts->at(p), p, "point")] = vec3(pts->at(p), d);
    if (auto vs = r.find("vectors"))
      for (const auto& v : vs->keys()) s.vectors[entity(vs->at(v), v, "vector")] = vec3(vs->at(v), d);
    auto origin = r.at("origin");
    s.origin = entity(origin, origin.as_string(), "point");
    if (!s.points.count(s.origin)) s.points[s.origin] = Vector3d::Zero();
    if (auto basis = r.find("basis"))
      for (const auto& item : basis->items()) {
        std::string t = item.as_string();
        auto arrow = t.find("->");
        BasisItem bi;
        if (arrow != std::string::npos) {
          bi.a = entity(item, t.substr(0, arrow), "point");
          bi.b = entity(item, t.substr(arrow + 2), "point");
        } else {
          bi.a = entity(item, t, "vector");
        }
        s.basis.push_back(bi);
      }
    if (auto com = r.find("com")) s.com = vec3(*com, d);
    if (auto in = r.find("inertia")) {
      if (d == 2) {
        s.inertia(2, 2) = in->as_number();
        if (s.inertia(2, 2) < 0) in->fail("must be >= 0");
      } else {
        auto v = in->as_numbers();
        if (v.size() == 3) {
          s.inertia.diagonal() << v[0], v[1], v[2];
        } else if (v.size() == 6) {
          s.inertia << v[0], v[3], v[4], v[3], v[1], v[5], v[4], v[5], v[2];
        } else {
          in->fail("expected [Ixx, Iyy, Izz] or [Ixx, Iyy, Izz, Ixy, Ixz, Iyz]");
        }
        Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> es(s.inertia);
        if (es.eigenvalues().minCoeff() < -1e-12) in->fail("inertia tensor is not positive semi-definite");
      }
    }
    s.rigid_constraints = r.boolean("rigid", true);
    r.finish();
    bodies_[name] = at(r, [&] { return b_.body(s); });
  }

  void constraint(const JsonReader& c) {
    std::string type = c.choice("type", {"angle", "distance", "dot", "driving", "point_on_line", "orientation"});
    if (type == "angle") {
      int th = scalar_entity(c.at("coordinate"));
      LinearVec from = vector_expr(c.at("from")), to = vector_expr(c.at("to"));
      LinearVec axis;
      if (auto a = c.find("axis")) axis = vector_expr(*a);
      at(c, [&] {
        b_.angle(th, from, to, axis, "angle " + b_.entity(th).name);
        return 0;
      });
    } else if (type == "distance") {
      auto pts = c.at("points").items();
      if (pts.size() != 2) c.at("points").fail("expected two point names");
      int p1 = entity(pts[0], pts[0].as_string(), "point"), p2 = entity(pts[1], pts[1].as_string(), "point");
      double L = c.positive("length");
      at(c, [&] {
        b_.distance(p1, p2, L);
        return 0;
      });
    } else if (type == "dot") {
      LinearVec A = vector_expr(c.at("a")), B = vector_expr(c.at("b"));
      double v = c.number("value");
      b_.dot(A, B, v, "dot");
    } else if (type == "driving") {
      int s = scalar_entity(c.at("coordinate"));
      int v = input(c.at("input"));
      int rate = c.has("rate_input") ? input(c.at("rate_input")) : -1;
      int acc = c.has("acceleration_input") ? input(c.at("acceleration_input")) : -1;
      at(c, [&] {
        b_.driving(s, v, rate, acc);
        return 0;
      });
    } else if (type == "point_on_line") {
      auto pr = c.at("point");
      int p = entity(pr, pr.as_string(), "point");
      LinearVec base = point_ref(c.at("base"));
      LinearVec dir = vector_expr(c.at("direction"));
      int s = scalar_entity(c.at("coordinate"));
      at(c, [&] {
        b_.point_on_line(p, base, dir, s);
        return 0;
      });
    } else {  // orientation
      auto triad = c.at("triad").items();
      auto angles = c.at("yaw_pitch_roll").items();
      if (triad.size() != 3) c.at("triad").fail("expected three unit vectors");
      if (angles.size() != 3) c.at("yaw_pitch_roll").fail("expected three angle coordinates");
      int u = entity(triad[0], triad[0].as_string(), "vector");
      int v = entity(triad[1], triad[1].as_string(), "vector");
      int w = entity(triad[2], triad[2].as_string(), "vector");
      int y = scalar_entity(angles[0]), p = scalar_entity(angles[1]), r = scalar_entity(angles[2]);
      at(c, [&] {
        b_.orientation_zyx(u, v, w, y, p, r);
        return 0;
      });
    }
    c.finish();
  }

  Table table(const JsonReader& r) {
    Table t;
    for (const auto& row : r.items()) {
      auto xy = row.as_numbers(2);
      if (!t.x.empty() && !(xy[0] > t.x.back())) row.fail("table abscissae must increase");
      t.x.push_back(xy[0]);
      t.y.push_back(xy[1]);
    }
    if (t.x.empty()) r.fail("table is empty");
    return t;
  }

  std::array<int, 3> inputs3(const JsonReader& f) {
    std::array<int, 3> in{-1, -1, -1};
    if (auto r = f.find("inputs")) {
      auto items = r->items();
      if (static_cast<int>(items.size()) > 3) r->fail("at most three inputs");
      for (std::size_t k = 0; k < items.size(); ++k)
        if (!items[k].json().is_null()) in[k] = input(items[k]);
    }
    return in;
  }

  void force(const JsonReader& f) {
    std::string type =
        f.choice("type", {"point_force", "torque", "spring_damper", "coordinate_spring_damper", "coordinate_force"});
    const int d = b_.dim();
    if (type == "point_force") {
      LinearVec p = point_ref(f.at("at"));
      Vector3d F = f.has("force") ? vec3(f.at("force"), d) : Vector3d::Zero();
      b_.point_force(p, F, inputs3(f));
    } else if (type == "torque") {
      std::string body = f.string("body");
      auto it = bodies_.find(body);
      if (it == bodies_.end()) f.at("body").fail("unknown body \"" + body + "\"");
      Vector3d T = Vector3d::Zero();
      if (auto t = f.find("torque")) {
        if (d == 2)
          T.z() = t->as_number();
        else
          T = vec3(*t, 3);
      }
      auto in = inputs3(f);
      if (d == 2) in = {-1, -1, in[0]};
      at(f, [&] {
        b_.body_torque(it->second, T, in);
        return 0;
      });
    } else if (type == "spring_damper") {
      SpringDamper s;
      s.p1 = point_ref(f.at("from"));
      s.p2 = point_ref(f.at("to"));
      s.k = f.non_negative("stiffness", 0);
      s.c = f.non_negative("damping", 0);
      s.l0 = f.non_negative("free_length", 0);
      s.preload = f.number("preload", 0);
      if (auto t = f.find("spring_table")) s.spring = table(*t);
      if (auto t = f.find("damper_table")) s.damper = table(*t);
      b_.spring_damper(std::move(s));
    } else if (type == "coordinate_spring_damper") {
      CoordinateSpringDamper s;
      s.slot = coordinate(f.at("coordinate"));
      if (f.has("coordinate2")) s.slot2 = coordinate(f.at("coordinate2"));
      s.k = f.non_negative("stiffness", 0);
      s.c = f.non_negative("damping", 0);
      s.x0 = f.number("rest", 0);
      s.preload = f.number("preload", 0);
      if (auto t = f.find("spring_table")) s.spring = table(*t);
      if (auto t = f.find("damper_table")) s.damper = table(*t);
      b_.coordinate_spring_damper(s);
    } else {
      CoordinateForce c;
      c.slot = coordinate(f.at("coordinate"));
      c.constant = f.number("value", 0);
      if (f.has("input")) c.input = input(f.at("input"));
      c.gain = f.number("gain", 1);
      b_.coordinate_force(c);
    }
    f.finish();
  }

  JsonReader root_;
  ModelBuilder b_;
  std::map<std::string, int> bodies_;
};

void apply_overrides(nlohmann::json& doc, const nlohmann::json& overrides, const std::string& where) {
  if (overrides.is_null()) return;
  if (!overrides.is_object()) throw ConfigError(where + ": expected an object");
  for (auto it = overrides.begin(); it != overrides.end(); ++it) {
    const std::string& key = it.key();
    std::string pointer;
    if (!key.empty() && key[0] == '/') {
      pointer = key;
    } else if (key.find('.') != std::string::npos) {
      auto dot = key.find('.');
      pointer = "/bodies/" + key.substr(0, dot) + "/" + key.substr(dot + 1);
    } else {
      pointer = "/" + key;
    }
    // A key is the user's JSON pointer (RFC 6901): "~" must be followed by 0 or 1 and so on
    // (found by fuzz/fuzz_scenario: nlohmann's parse_error escaped as another exception).
    try {
      nlohmann::json::json_pointer p(pointer);
      if (!doc.contains(p))
        throw ConfigError(where + "/" + key + ": overrides \"" + pointer + "\", which the model does not have");
      doc[p] = it.value();
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError(where + "/" + key + ": not a usable override (" + json_exception_detail(e) + ")");
    }
  }
}

}  // namespace

void check_kinematics(const Model& m) {
  Workspace ws(m);
  State s = initial_state(m);
  if (m.nq - static_cast<int>(m.z.size()) > m.nc)
    throw std::invalid_argument("the " + std::to_string(m.z.size()) + " independent coordinates and " +
                                std::to_string(m.nc) + " constraint equations leave " +
                                std::to_string(m.nq - static_cast<int>(m.z.size()) - m.nc) +
                                " coordinate(s) undetermined");
  if (!factor_kinematics(m, s.q, ws))
    throw std::invalid_argument(
        "singular geometry: the independent coordinates do not determine the others at the initial "
        "position (Phi_q over the dependent coordinates is rank deficient)");
  auto r = solve_position(m, s.q, s.u, ws);
  if (r.converged) {
    // Every degree of freedom needs inertia, or the dynamics are singular: Mbar = R' M R > 0.
    compute_R(m, ws);
    Eigen::MatrixXd M = Eigen::MatrixXd::Zero(m.nq, m.nq);
    for (std::size_t e = 0; e < m.mass.size(); ++e) M(m.mass[e].row, m.mass[e].col) += m.mass_values[e];
    Eigen::MatrixXd Mbar = ws.R.transpose() * M * ws.R;
    for (std::size_t j = 0; j < m.z.size(); ++j)
      if (!(Mbar(j, j) > 1e-12 * std::max(1.0, Mbar.diagonal().maxCoeff())))
        throw std::invalid_argument("independent coordinate \"" + m.coordinate_names[m.z[j]] +
                                    "\" moves no mass: the dynamics would be singular");
  }
  if (!r.converged)
    throw std::invalid_argument(
        "the position problem does not converge from the initial values "
        "(residual " +
        std::to_string(r.residual) +
        "): the geometry is inconsistent or the independent coordinates "
        "over-determine the mechanism");
}

Model model_from_json(const nlohmann::json& doc, const std::string& name) {
  JsonReader root(doc, name);
  return Loader(root).load();
}

Model load_model(const std::filesystem::path& file, const nlohmann::json& overrides,
                 const std::string& overrides_where) {
  nlohmann::json doc = mbo::load_json_file(file);
  apply_overrides(doc, overrides, overrides_where);
  return model_from_json(doc, file.string());
}

}  // namespace mbo::mb
