#include "mbobserver/experiment/scenario.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "mbobserver/estimation/sensors/mechanism_sensors.hpp"
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/kinematics.hpp"
#include "mbobserver/mb/model_json.hpp"

namespace mbo::exp {
namespace {

std::map<std::string, SensorFactory>& factories() {
  static std::map<std::string, SensorFactory> f;
  return f;
}

int coordinate_of(const JsonReader& r, const mb::Model& m) {
  std::string name = r.as_string();
  int slot = m.coordinate(name);
  if (slot < 0) r.fail("unknown coordinate \"" + name + "\" in model " + m.name);
  return slot;
}

const mb::Body& body_of(const JsonReader& r, const mb::Model& m) {
  std::string name = r.as_string();
  for (const auto& b : m.bodies)
    if (b.name == name) {
      if (b.basis.empty()) r.fail("body \"" + name + "\" is a point mass: it has no direction");
      return b;
    }
  r.fail("unknown body \"" + name + "\" in model " + m.name);
}

Eigen::Vector3d vec(const JsonReader& r, int dim) {
  auto v = r.as_numbers(dim);
  Eigen::Vector3d out = Eigen::Vector3d::Zero();
  for (int k = 0; k < dim; ++k) out[k] = v[k];
  return out;
}

void register_mechanism_sensors() {
  static bool done = false;
  if (done) return;
  done = true;
  register_sensor_factory("encoder", [](const SensorSpec& s, const mb::Model& m) {
    int slot = coordinate_of(s.params.at("coordinate"), m);
    bool angle = false;
    for (const auto& e : m.entities)
      if (e.kind == mb::EntityKind::scalar && e.slot == slot) angle = e.scalar_kind == mb::ScalarKind::angle;
    return std::make_shared<est::EncoderSensor>(slot, angle);
  });
  register_sensor_factory("body_angle", [](const SensorSpec& s, const mb::Model& m) {
    if (m.dim != 2) s.params.fail("body_angle is a planar sensor");
    const auto& b = body_of(s.params.at("body"), m);
    return std::make_shared<est::BodyAngleSensor>(b.basis[0], s.params.number("offset", 0));
  });
  register_sensor_factory("gyro", [](const SensorSpec& s, const mb::Model& m) {
    if (m.dim != 2) s.params.fail("this gyro is a planar sensor (use imu_gyro on a vehicle)");
    const auto& b = body_of(s.params.at("body"), m);
    return std::make_shared<est::PlanarGyroSensor>(b.basis[0], s.params.number("bias", 0));
  });
  register_sensor_factory("accelerometer", [](const SensorSpec& s, const mb::Model& m) {
    if (m.dim != 2) s.params.fail("this accelerometer is a planar sensor (use imu_accel on a vehicle)");
    const auto& b = body_of(s.params.at("body"), m);
    mb::LinearVec p = mb::body_point(b, vec(s.params.at("at"), 2));
    return std::make_shared<est::PlanarAccelerometerSensor>(p, b.basis[0], s.params.number("axis_angle", 0), m.gravity);
  });
}

std::vector<InputTable> read_inputs(const JsonReader& r, const mb::Model& m) {
  std::vector<InputTable> out;
  for (const auto& key : r.keys()) {
    auto item = r.at(key);
    InputTable t;
    std::string name;
    if (key.size() > 6 && key.compare(key.size() - 6, 6, "_steps") == 0) {
      name = key.substr(0, key.size() - 6);
    } else if (key.size() > 5 && key.compare(key.size() - 5, 5, "_ramp") == 0) {
      name = key.substr(0, key.size() - 5);
      t.ramp = true;
    } else {
      item.fail("an input schedule is named <input>_steps or <input>_ramp");
    }
    t.input = m.input(name);
    if (t.input < 0) item.fail("unknown input \"" + name + "\" in model " + m.name);
    for (const auto& row : item.items()) {
      auto p = row.as_numbers(2);
      if (!t.t.empty() && !(p[0] > t.t.back())) row.fail("times must increase");
      t.t.push_back(p[0]);
      t.v.push_back(p[1]);
    }
    if (t.t.empty()) item.fail("empty schedule");
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<double> per_observed(const JsonReader& r, const std::vector<std::string>& names,
                                 const std::string& suffix) {
  std::vector<double> out;
  for (const auto& n : names) {
    std::string key = n + suffix;
    if (!r.has(key)) r.fail("missing \"" + key + "\"");
    out.push_back(r.non_negative(key));
  }
  r.finish();
  return out;
}

void read_initial(const JsonReader& r, const mb::Model& m, std::vector<double>& z, std::vector<double>& zd) {
  z.clear();
  zd.clear();
  for (int s : m.z) z.push_back(m.x0[s]);
  zd.assign(m.z.size(), 0.0);
  if (auto v = r.find("z")) z = v->as_numbers(m.z.size());
  if (auto v = r.find("zd")) zd = v->as_numbers(m.z.size());
  r.finish();
}

}  // namespace

double InputTable::value(double time) const {
  std::size_t i = std::upper_bound(t.begin(), t.end(), time) - t.begin();
  if (i == 0) return v.front();
  if (!ramp || i == t.size()) return v[i - 1];
  double a = (time - t[i - 1]) / (t[i] - t[i - 1]);
  return v[i - 1] + a * (v[i] - v[i - 1]);
}

double InputTable::rate(double time) const {
  if (!ramp) return 0;
  std::size_t i = std::upper_bound(t.begin(), t.end(), time) - t.begin();
  if (i == 0 || i == t.size()) return 0;
  return (v[i] - v[i - 1]) / (t[i] - t[i - 1]);
}

void register_sensor_factory(const std::string& type, SensorFactory f) { factories()[type] = std::move(f); }

std::shared_ptr<const est::Sensor> make_sensor(const SensorSpec& spec, const mb::Model& model) {
  register_mechanism_sensors();
  auto it = factories().find(spec.type);
  if (it == factories().end()) {
    std::string known;
    for (const auto& [k, v] : factories()) known += (known.empty() ? "" : ", ") + k;
    spec.params.at("type").fail("unknown sensor type \"" + spec.type + "\" (known: " + known + ")");
  }
  return it->second(spec, model);
}

std::vector<std::string> z_names(const mb::Model& m) {
  std::vector<std::string> n;
  for (int s : m.z) n.push_back(m.coordinate_names[s]);
  return n;
}

Scenario load_scenario(const std::filesystem::path& file) {
  register_mechanism_sensors();
  Scenario sc;
  sc.file = file;
  auto root = JsonReader::from_file(file);
  const auto dir = root.directory();
  sc.description = root.string("description", "");
  sc.dt = root.positive("dt");
  sc.duration = root.positive("duration");
  sc.seed = static_cast<std::uint64_t>(root.integer("seed", 0, (1LL << 62), 1));
  sc.metrics_from = root.non_negative("metrics_from", 0);
  auto model_of = [&](const JsonReader& r) {
    auto path = dir / r.string("model");
    nlohmann::json ov = r.has("overrides") ? r.at("overrides").json() : nlohmann::json(nullptr);
    r.finish();
    return mb::load_model(path, ov, r.where() + "/overrides");
  };
  sc.truth = model_of(root.at("truth"));
  sc.model = model_of(root.at("model"));
  if (sc.truth.z.empty() || sc.model.z.empty()) root.fail("both models need independent coordinates");
  if (z_names(sc.truth) != z_names(sc.model))
    root.at("model").fail("truth and model must have the same independent coordinates");
  if (auto in = root.find("initial")) {
    if (auto t = in->find("truth")) read_initial(*t, sc.truth, sc.truth_z0, sc.truth_zd0);
    if (auto m = in->find("model")) read_initial(*m, sc.model, sc.model_z0, sc.model_zd0);
    in->finish();
  }
  if (sc.truth_z0.empty())
    read_initial(JsonReader(nlohmann::json::object(), file.string()), sc.truth, sc.truth_z0, sc.truth_zd0);
  if (sc.model_z0.empty())
    read_initial(JsonReader(nlohmann::json::object(), file.string()), sc.model, sc.model_z0, sc.model_zd0);
  if (auto in = root.find("inputs")) {
    if (auto t = in->find("truth")) sc.truth_inputs = read_inputs(*t, sc.truth);
    if (auto m = in->find("model")) {
      if (m->is_string()) {
        if (m->as_string() != "truth") m->fail("expected an object of schedules or \"truth\"");
        sc.model_inputs_from_truth = true;
      } else {
        sc.model_inputs = read_inputs(*m, sc.model);
      }
    }
    in->finish();
  }

  for (const auto& s : root.at("sensors").items()) {
    SensorSpec spec{"", s.string("type"), s, 0, 0, 0, 0, {}};
    spec.noise_std = s.non_negative("noise_std");
    spec.rate_hz = s.positive("rate_hz");
    spec.quantum = s.non_negative("quantum", 0);
    spec.start = s.non_negative("start", 0);
    if (auto o = s.find("outages"))
      for (const auto& w : o->items()) {
        auto p = w.as_numbers(2);
        if (!(p[1] > p[0])) w.fail("an outage is [from, to) with to > from");
        spec.outages.emplace_back(p[0], p[1]);
      }
    spec.name = s.string("name", "");
    // Build once on each model now, so that a bad name is a load-time error.
    make_sensor(spec, sc.truth);
    make_sensor(spec, sc.model);
    if (spec.name.empty()) {
      spec.name = spec.type;
      for (auto key : {"coordinate", "body"})
        if (s.has(key)) spec.name += " " + s.string(key);
    }
    s.finish();
    sc.sensors.push_back(std::move(spec));
  }

  auto f = root.at("filter");
  sc.filter_type = f.choice("type", {"errorEKF", "errorEKF-FE"});
  auto zn = z_names(sc.model);
  std::vector<std::string> observed;
  if (auto o = f.find("observe")) {
    for (const auto& item : o->items()) {
      std::string n = item.as_string();
      auto it = std::find(zn.begin(), zn.end(), n);
      if (it == zn.end()) item.fail("\"" + n + "\" is not an independent coordinate of the model");
      sc.filter.observed.push_back(static_cast<int>(it - zn.begin()));
      observed.push_back(n);
    }
  } else {
    for (std::size_t i = 0; i < zn.size(); ++i)
      sc.filter.observed.push_back(static_cast<int>(i)), observed.push_back(zn[i]);
  }
  auto& fs = sc.filter.filter;
  std::vector<double> fe_accel_noise;
  fs.accel_noise = per_observed(f.at("plant_noise"), observed, "");
  auto init = f.at("initial_std");
  fs.initial_std_z.clear();
  for (const auto& n : observed) fs.initial_std_z.push_back(init.positive(n));
  for (const auto& n : observed) fs.initial_std_zd.push_back(init.positive(n + "_dot"));
  if (auto fe = f.find("force_error")) {
    est::read_forced_coordinates(*fe, observed, fs);
    // errorEKF-FE may want less white acceleration noise than errorEKF, since its force
    // state absorbs the slowly varying part of the model error.
    if (fe->has("velocity_plant_noise")) fe_accel_noise = per_observed(fe->at("velocity_plant_noise"), observed, "");
    est::read_force_error_settings(*fe, sc.filter, 1, est::JacobianTerms::all, est::ForceCorrection::inertial);
    fe->finish();
  }
  init.finish();
  fs.gate_sigma = f.non_negative("gate_sigma", 5);
  std::string corr = f.choice("correction", {"position_problem", "velocity_approximation"}, "position_problem");
  sc.filter.correction =
      corr == "position_problem" ? est::Correction::position_problem : est::Correction::velocity_approximation;
  f.finish();
  sc.fe_accel_noise = fe_accel_noise;

  if (auto q = root.find("quantities")) {
    for (const auto& name : q->keys()) {
      auto r = q->at(name);
      std::string c = r.as_string();
      bool rate = !c.empty() && c.back() == '\'';
      if (rate) c.pop_back();
      int slot = sc.model.coordinate(c);
      if (slot < 0 || sc.truth.coordinate(c) != slot) r.fail("unknown coordinate \"" + c + "\"");
      bool angle = false;
      for (const auto& e : sc.model.entities)
        if (e.kind == mb::EntityKind::scalar && e.slot == slot) angle = e.scalar_kind == mb::ScalarKind::angle;
      Quantity qu{name, angle && !rate,
                  [slot, rate](const mb::Model&, const mb::State& s) { return rate ? s.qd[slot] : s.q[slot]; }};
      sc.quantities.push_back(std::move(qu));
    }
  }
  root.finish();
  return sc;
}

void apply_inputs(const std::vector<InputTable>& tables, double t, mb::State& s) {
  for (const auto& tb : tables) s.u[tb.input] = tb.value(t);
}

SimulatedModel::SimulatedModel(const mb::Model& model, const std::vector<double>& z0, const std::vector<double>& zd0)
    : m(model), ws(model), s(mb::initial_state(model)) {
  for (std::size_t j = 0; j < m.z.size(); ++j) s.q[m.z[j]] = z0[j], s.qd[m.z[j]] = zd0[j];
}

void SimulatedModel::start() {
  auto r = mb::solve_position(m, s.q, s.u, ws);
  if (!r.converged) throw std::runtime_error(m.name + ": the initial position problem does not converge");
  mb::solve_velocity(m, s.u, s.qd, ws);
  mb::initialize_accelerations(m, s, ws);
}

}  // namespace mbo::exp
