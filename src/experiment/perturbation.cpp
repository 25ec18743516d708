#include "mbobserver/experiment/perturbation.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <Eigen/Cholesky>

#include "mbobserver/experiment/sensor_errors.hpp"

namespace mbo::exp {
namespace {

constexpr int kMaxDraws = 1000;

enum class Op { add, factor };
struct Named {
  const char* name;
  Op op;
};
constexpr Named kNamed[] = {
    {"mass_kg", Op::add},
    {"payload_front_kg", Op::add},
    {"payload_rear_kg", Op::add},
    {"cg_x_m", Op::add},
    {"cg_z_m", Op::add},
    {"radius_growth_s2_per_m2", Op::add},
    {"yaw_inertia", Op::factor},
    {"roll_inertia", Op::factor},
    {"pitch_inertia", Op::factor},
    {"slip_stiffness", Op::factor},
    {"cornering_stiffness", Op::factor},
    {"cornering_front", Op::factor},
    {"cornering_rear", Op::factor},
    {"rolling_radius", Op::factor},
    {"friction", Op::factor},
    {"spring_rate", Op::factor},
    {"damper_rate", Op::factor},
};

const Named* named(const std::string& name) {
  for (const auto& n : kNamed)
    if (name == n.name) return &n;
  return nullptr;
}

// A point load of x kg (negative: taken off) at `at`, as the observer's payload input builds it
// (a point mass on the chassis, vehicle_build.cpp): the chassis's mass, its CG the mass-weighted
// mean, its inertia about the new CG by the parallel-axis theorem, I = I0 + m0 S(c0 - c) +
// x S(at - c) with S(d) = |d|^2 1 - d d'. False where the result is no body (mass or inertia not
// positive).
bool add_point_load(models::VehicleParams& p, const Eigen::Vector3d& at, double x) {
  const double m = p.mass_kg + x;
  if (!(m > 0)) return false;
  const Eigen::Vector3d c = (p.mass_kg * p.cg_m + x * at) / m;
  auto shift = [](const Eigen::Vector3d& d) -> Eigen::Matrix3d {
    return d.squaredNorm() * Eigen::Matrix3d::Identity() - d * d.transpose();
  };
  const Eigen::Matrix3d inertia = p.inertia_kgm2 + p.mass_kg * shift(p.cg_m - c) + x * shift(at - c);
  if (Eigen::LLT<Eigen::Matrix3d>(inertia).info() != Eigen::Success) return false;
  p.mass_kg = m, p.cg_m = c, p.inertia_kgm2 = inertia;
  return true;
}

// The truth's parameter `name` after a draw of x: false when the result is out of its range.
bool apply_vehicle(const std::string& name, double x, models::VehicleParams& p) {
  const Named* n = named(name);
  if (n->op == Op::factor && !(x > 0)) return false;
  if (name == "mass_kg") {
    p.mass_kg += x;
    return p.mass_kg > 0;
  }
  if (name == "payload_front_kg") return add_point_load(p, p.payload_front(), x);
  if (name == "payload_rear_kg") return add_point_load(p, p.payload_rear(), x);
  if (name == "cornering_front") return p.axles[0].tyre.lateral.stiffness *= x, true;
  if (name == "cornering_rear") return p.axles[1].tyre.lateral.stiffness *= x, true;
  if (name == "cg_x_m") return p.cg_m.x() += x, true;
  if (name == "cg_z_m") {
    p.cg_m.z() += x;
    return p.cg_m.z() > 0;
  }
  if (name == "yaw_inertia") return p.inertia_kgm2(2, 2) *= x, true;
  if (name == "roll_inertia") return p.inertia_kgm2(0, 0) *= x, true;
  if (name == "pitch_inertia") return p.inertia_kgm2(1, 1) *= x, true;
  for (auto& a : p.axles) {
    auto& t = a.tyre;
    if (name == "radius_growth_s2_per_m2") t.radius_growth_s2_per_m2 += x;
    if (name == "slip_stiffness") t.longitudinal.stiffness *= x;
    if (name == "cornering_stiffness") t.lateral.stiffness *= x;
    if (name == "rolling_radius") t.radius_m *= x;
    if (name == "friction") t.mu *= x;
    if (name == "spring_rate") a.suspension.spring_N_per_m *= x;
    if (name == "damper_rate")
      for (double& f : a.suspension.damper.y) f *= x;
    if (!(t.radius_growth_s2_per_m2 >= 0)) return false;
  }
  return true;
}

// Adds a draw to the number at `at`, or one draw to each number of the array at `at`; the
// draws go into `drawn` under `name`, an array's elements under name/0, name/1, ...
void add_draws(nlohmann::json& at, const Distribution& d, std::mt19937_64& rng, const std::string& name,
               nlohmann::json& drawn) {
  if (at.is_number()) {
    const double x = d.draw(rng);
    at = at.get<double>() + x;
    drawn[name] = x;
    return;
  }
  for (std::size_t i = 0; i < at.size(); ++i) add_draws(at[i], d, rng, name + "/" + std::to_string(i), drawn);
}

bool numbers_only(const nlohmann::json& j) {
  if (j.is_number()) return true;
  if (!j.is_array() || j.empty()) return false;
  return std::all_of(j.begin(), j.end(), numbers_only);
}

}  // namespace

double Distribution::draw(std::mt19937_64& rng) const {
  switch (kind) {
    case Kind::fixed:
      return a;
    case Kind::normal:
      return std::normal_distribution<double>(a, b)(rng);
    case Kind::uniform:
      return std::uniform_real_distribution<double>(a, b)(rng);
  }
  return a;
}

double Distribution::mean() const { return kind == Kind::uniform ? 0.5 * (a + b) : a; }

double Distribution::stddev() const {
  if (kind == Kind::normal) return b;
  if (kind == Kind::uniform) return (b - a) / std::sqrt(12.0);
  return 0;
}

Distribution read_distribution(const JsonReader& r) {
  Distribution d;
  if (r.is_number()) {
    d.a = r.as_number();
    return d;
  }
  if (!r.is_object()) r.fail("a distribution is a number, {\"normal\": [mean, std]} or {\"uniform\": [low, high]}");
  if (r.has("normal") == r.has("uniform")) r.fail("give one of \"normal\": [mean, std] or \"uniform\": [low, high]");
  if (r.has("normal")) {
    auto v = r.numbers("normal", 2);
    if (!(v[1] >= 0)) r.at("normal").fail("the standard deviation must be >= 0");
    d.kind = Distribution::Kind::normal, d.a = v[0], d.b = v[1];
  } else {
    auto v = r.numbers("uniform", 2);
    if (!(v[1] >= v[0])) r.at("uniform").fail("needs low <= high");
    d.kind = Distribution::Kind::uniform, d.a = v[0], d.b = v[1];
  }
  r.finish();
  return d;
}

std::vector<Perturbation> read_perturbations(const JsonReader& r, const nlohmann::json& sensors) {
  std::vector<Perturbation> out;
  for (const auto& key : r.keys()) {
    auto item = r.at(key);
    Perturbation p;
    p.name = key;
    if (key.rfind("sensors/", 0) == 0) {
      p.sensor = true;
      try {
        p.pointer = nlohmann::json::json_pointer(key.substr(7));
      } catch (const nlohmann::json::exception& e) {
        item.fail("not a JSON pointer into the sensors block: " + json_exception_detail(e));
      }
      if (!sensors.contains(p.pointer) || !numbers_only(sensors.at(p.pointer)))
        item.fail("the sensors block has no number or array of numbers at " + p.pointer.to_string() +
                  " (give the nominal value there)");
    } else if (!named(key)) {
      std::string known;
      for (const auto& n : kNamed) known += (known.empty() ? "" : ", ") + std::string(n.name);
      item.fail("unknown parameter \"" + key + "\" (known: " + known + ", or sensors/<pointer>)");
    }
    p.distribution = read_distribution(item);
    out.push_back(std::move(p));
  }
  return out;
}

PerturbedRun draw_perturbations(const std::vector<Perturbation>& items, const models::VehicleParams& truth,
                                const models::Vehicle& built_truth, const nlohmann::json& sensors, std::uint64_t seed,
                                const std::function<bool(const nlohmann::json&)>& valid_sensors) {
  PerturbedRun run{truth, sensors, nlohmann::json::object()};
  // A payload makes the truth sit lower: the springs keep the preload of the nominal car (the
  // static load of its sprung mass, vehicle_build.cpp) where the file leaves it to the load.
  for (int axle = 0; axle < 2; ++axle) {
    auto& su = run.truth.axles[axle].suspension;
    if (su.preload_N) continue;
    const int left = 2 * axle, right = 2 * axle + 1;
    su.preload_N = 0.5 * (truth.static_sprung_load(left) / built_truth.geometry[left].strut_axis.z() +
                          truth.static_sprung_load(right) / built_truth.geometry[right].strut_axis.z());
  }
  std::mt19937_64 rng(stream_seed(seed, kPerturbStream));
  for (const auto& p : items) {
    int tries = 0;
    for (;; ++tries) {
      if (tries == kMaxDraws)
        throw ConfigError("perturb: " + p.name + ": " + std::to_string(kMaxDraws) +
                          " draws in a row out of the parameter's range");
      if (p.sensor) {
        nlohmann::json trial = run.sensors, drawn = nlohmann::json::object();
        add_draws(trial.at(p.pointer), p.distribution, rng, p.name, drawn);
        if (!valid_sensors(trial)) continue;
        run.sensors = std::move(trial);
        run.drawn.update(drawn);
      } else {
        models::VehicleParams trial = run.truth;
        const double x = p.distribution.draw(rng);
        if (!apply_vehicle(p.name, x, trial)) continue;
        run.truth = std::move(trial);
        run.drawn[p.name] = x;
      }
      break;
    }
  }
  return run;
}

double vehicle_parameter(const models::VehicleParams& p, const std::string& name) {
  const auto& a = p.axles[0];
  if (name == "mass_kg" || name == "payload_front_kg" || name == "payload_rear_kg") return p.mass_kg;
  if (name == "cg_x_m") return p.cg_m.x();
  if (name == "cg_z_m") return p.cg_m.z();
  if (name == "yaw_inertia") return p.inertia_kgm2(2, 2);
  if (name == "roll_inertia") return p.inertia_kgm2(0, 0);
  if (name == "pitch_inertia") return p.inertia_kgm2(1, 1);
  if (name == "radius_growth_s2_per_m2") return a.tyre.radius_growth_s2_per_m2;
  if (name == "slip_stiffness") return a.tyre.longitudinal.stiffness;
  if (name == "cornering_stiffness" || name == "cornering_front") return a.tyre.lateral.stiffness;
  if (name == "cornering_rear") return p.axles[1].tyre.lateral.stiffness;
  if (name == "rolling_radius") return a.tyre.radius_m;
  if (name == "friction") return a.tyre.mu;
  if (name == "spring_rate") return a.suspension.spring_N_per_m;
  if (name == "damper_rate") return a.suspension.damper.y.back();
  throw std::invalid_argument("unknown vehicle parameter " + name);
}

}  // namespace mbo::exp
