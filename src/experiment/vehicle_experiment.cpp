#include "mbobserver/experiment/vehicle_experiment.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include "mbobserver/estimation/consistency.hpp"
#include "mbobserver/experiment/error_stats.hpp"
#include "mbobserver/models/vehicle_params.hpp"

namespace mbo::exp {
namespace {

using nlohmann::json;
constexpr double kDeg = M_PI / 180;
const char* kW[4] = {"fl", "fr", "rl", "rr"};

// The vehicle file, with the friction coefficient of every tyre replaced when "mu" is given
// (Sinigaglia 2016 5.1: the truth and the model differ by their tyre friction).
std::shared_ptr<const models::Vehicle> load_vehicle(const JsonReader& r, double& mu) {
  auto path = r.directory() / r.string("vehicle");
  mu = r.has("mu") ? r.number_in("mu", 0.05, 2.0) : std::numeric_limits<double>::quiet_NaN();
  r.finish();
  auto params = models::load_vehicle_params(path);
  if (!std::isnan(mu))
    for (auto& a : params.axles) a.tyre.mu = mu;
  return std::make_shared<const models::Vehicle>(models::build_vehicle(params));
}

// The quantities scored for a vehicle (docs/interfaces.md "Report"), from a model state and its
// outputs. `speed_gate`: sideslip is only defined while moving.
struct Named {
  std::string name;
  bool angle;
  double (*get)(const models::Vehicle&, const mb::State&, const models::VehicleOutputs&, int);
  int wheel;
};

std::vector<Named> quantities() {
  std::vector<Named> q = {
      {"x", false, [](auto&, auto&, auto& o, int) { return o.position.x(); }, 0},
      {"y", false, [](auto&, auto&, auto& o, int) { return o.position.y(); }, 0},
      {"z", false, [](auto&, auto&, auto& o, int) { return o.position.z(); }, 0},
      {"yaw", true, [](auto&, auto&, auto& o, int) { return o.yaw; }, 0},
      {"pitch", true, [](auto&, auto&, auto& o, int) { return o.pitch; }, 0},
      {"roll", true, [](auto&, auto&, auto& o, int) { return o.roll; }, 0},
      {"vx", false, [](auto&, auto&, auto& o, int) { return o.velocity.x(); }, 0},
      {"vy", false, [](auto&, auto&, auto& o, int) { return o.velocity.y(); }, 0},
      {"yaw_rate", false, [](auto&, auto&, auto& o, int) { return o.yaw_rate; }, 0},
      {"sideslip_deg", false, [](auto&, auto&, auto& o, int) { return o.sideslip / kDeg; }, 0},
      // The road friction the tyres compute with: an input, 0 meaning the tyres' own.
      {"friction", false,
       [](auto& v, auto& st, auto&, int) {
         const double u = st.u[v.in.mu];
         return u > 0 ? u : v.params.axles[0].tyre.mu;
       },
       0},
  };
  for (int w = 0; w < 4; ++w) {
    std::string s = kW[w];
    q.push_back({"wheel_angle_" + s, false, [](auto& v, auto& st, auto&, int i) { return st.q[v.wheels[i].spin]; }, w});
    q.push_back(
        {"wheel_speed_" + s, false, [](auto& v, auto& st, auto&, int i) { return st.qd[v.wheels[i].spin]; }, w});
    q.push_back({"tyre_fx_" + s, false, [](auto&, auto&, auto& o, int i) { return o.wheel[i].Fx; }, w});
    q.push_back({"tyre_fy_" + s, false, [](auto&, auto&, auto& o, int i) { return o.wheel[i].Fy; }, w});
    q.push_back({"tyre_fz_" + s, false, [](auto&, auto&, auto& o, int i) { return o.wheel[i].Fz; }, w});
    q.push_back({"travel_" + s, false, [](auto&, auto&, auto& o, int i) { return o.wheel[i].travel; }, w});
  }
  return q;
}

}  // namespace

bool is_vehicle_scenario(const std::filesystem::path& file) {
  auto doc = load_json_file(file);
  return doc.is_object() && doc.contains("kind") && doc["kind"] == "vehicle";
}

VehicleScenario load_vehicle_scenario(const std::filesystem::path& file) {
  VehicleScenario sc;
  sc.file = file;
  auto root = JsonReader::from_file(file);
  root.choice("kind", {"vehicle"});
  sc.description = root.string("description", "");
  sc.dt = root.positive("dt", sc.dt);
  sc.duration = root.positive("duration");
  sc.seed = static_cast<std::uint64_t>(root.integer("seed", 0, 1LL << 62, 1));
  sc.metrics_from = root.non_negative("metrics_from", 0);
  sc.sideslip_min_speed = root.non_negative("sideslip_min_speed", sc.sideslip_min_speed);
  sc.truth = load_vehicle(root.at("truth"), sc.truth_mu);
  sc.model = load_vehicle(root.at("model"), sc.model_mu);
  if (sc.truth->model.nq != sc.model->model.nq) root.at("model").fail("truth and model must have the same topology");
  sc.manoeuvre = models::load_manoeuvre(root.at("manoeuvre"), *sc.truth);
  sc.sensors = read_sensor_sim_config(root.at("sensors"));
  sc.observer = est::read_vehicle_observer_config(root.at("observer"), *sc.model);
  // The observer's wheel counters wrap where the simulated ones do, and its East-North-Up
  // frame is the simulation's, so that estimates and truth compare in one frame.
  sc.observer.wheels.modulus.fill(sc.sensors.modulus);
  sc.observer.gnss.origin_from_first_fix = false;
  sc.observer.gnss.lat0 = sc.sensors.lat0;
  sc.observer.gnss.lon0 = sc.sensors.lon0;
  sc.observer.gnss.alt0 = sc.sensors.alt0;
  sc.start_from_truth = root.choice("initial", {"truth", "first_fix"}, "truth") == "truth";
  root.finish();
  return sc;
}

TruthDrive::TruthDrive(const VehicleScenario& sc, std::uint64_t seed)
    : sc_(sc), ws_(sc.truth->model), sim_(*sc.truth, sc.sensors, seed) {
  in_ = models::manoeuvre_inputs(sc.manoeuvre, *sc.truth, o_, driver_, 0, sc.dt);
  s_ = models::start_vehicle(*sc.truth, ws_, sc.manoeuvre.start, in_);
  models::vehicle_outputs(*sc.truth, s_, o_);
  sim_.start(s_);
}

void TruthDrive::advance(std::vector<Measurement>& out) {
  t_ += sc_.dt;
  in_ = models::manoeuvre_inputs(sc_.manoeuvre, *sc_.truth, o_, driver_, t_, sc_.dt);
  models::set_inputs(*sc_.truth, in_, s_);
  auto r = mb::step(sc_.truth->model, s_, ws_, sc_.dt);
  if (!r.converged)
    throw std::runtime_error("the truth vehicle failed to converge at t = " + std::to_string(t_) + " s");
  models::vehicle_outputs(*sc_.truth, s_, o_);
  sim_.sample(t_, s_, in_, out);
}

json run_vehicle_experiment(const VehicleScenario& sc, const RunOptions& opt) {
  TruthDrive truth(sc, opt.seed);
  auto obs_cfg = sc.observer;
  auto open_cfg = sc.observer;
  open_cfg.gnss.use_position = open_cfg.gnss.use_velocity = open_cfg.gnss.use_course = false;
  open_cfg.imu.use_accel = open_cfg.imu.use_gyro = false;
  open_cfg.wheels.use = false;
  // Nothing is fused, so the open loop's covariance only grows (a wheel force error's variance
  // as t^5); it must not count as divergence and reset the model it is there to show.
  open_cfg.settings.filter.max_variance = std::numeric_limits<double>::max();
  est::VehicleObserver obs(sc.model, obs_cfg, sc.dt), open(sc.model, open_cfg, sc.dt);
  auto start = sc.manoeuvre.start;
  if (sc.start_from_truth) {
    obs.start(start, 0);
    open.start(start, 0);
  }
  const auto q = quantities();
  std::vector<ErrorStats> st_obs(q.size()), st_open(q.size());
  const auto& zm = sc.model->model.z;
  std::vector<ErrorStats> z_obs(zm.size()), zd_obs(zm.size()), z_open(zm.size()), zd_open(zm.size());
  std::map<std::string, std::vector<double>> innov;
  std::array<std::uint64_t, kSensorKindCount> fused{}, rejected{};
  std::vector<double> obs_us, open_us;
  double nees_sum = 0;
  long nees_n = 0;
  std::vector<Measurement> meas;
  meas.reserve(64);
  const auto& observed = sc.observer.settings.observed;
  const int n = static_cast<int>(observed.size());
  Eigen::VectorXd e(2 * n);
  // GNSS outage and jump bookkeeping
  std::vector<std::pair<double, double>> err_t;  // (t, horizontal position error)
  double dist = 0, prev_x = truth.outputs().position.x(), prev_y = truth.outputs().position.y();
  std::vector<double> dist_t;
  long steps = 0;
  bool zangle[64] = {};
  for (std::size_t j = 0; j < zm.size() && j < 64; ++j)
    for (const auto& en : sc.model->model.entities)
      if (en.kind == mb::EntityKind::scalar && en.slot == zm[j]) zangle[j] = en.scalar_kind == mb::ScalarKind::angle;
  if (opt.trace) {
    *opt.trace << "t";
    for (const auto& qq : q)
      *opt.trace << "," << qq.name << "_truth," << qq.name << "_model," << qq.name << "_observer";
    *opt.trace << ",valid,std_x,std_y,std_yaw,std_vx,std_vy,std_sideslip_deg\n";
  }

  while (!truth.done()) {
    meas.clear();
    truth.advance(meas);
    const double t = truth.t();
    for (const auto& m : meas) {
      obs.push(m);
      open.push(m);
    }
    auto t0 = std::chrono::steady_clock::now();
    const auto& rec = obs.step(t);
    auto t1 = std::chrono::steady_clock::now();
    open.step(t);
    auto t2 = std::chrono::steady_clock::now();
    ++steps;
    obs_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    open_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
    for (std::size_t i = 0; i < obs.last_measurements().size(); ++i) {
      const auto& m = obs.last_measurements()[i];
      const auto& r = obs.last_results()[i];
      const int kind = obs.last_kinds()[i];
      (r.accepted ? fused : rejected)[kind]++;
      innov[std::string(kSensorKindNames[kind]) + "[" + std::to_string(m.row) + "]"].push_back(r.innovation);
    }
    const auto& to = truth.outputs();
    dist += std::hypot(to.position.x() - prev_x, to.position.y() - prev_y);
    prev_x = to.position.x(), prev_y = to.position.y();
    if (obs.started()) {
      err_t.emplace_back(
          t, std::hypot(obs.outputs().position.x() - to.position.x(), obs.outputs().position.y() - to.position.y()));
      dist_t.push_back(dist);
    }
    if (t + 1e-12 < sc.metrics_from || !obs.started() || !open.started()) continue;
    const double speed = to.speed;
    for (std::size_t i = 0; i < q.size(); ++i) {
      if (q[i].name == "sideslip_deg" && speed < sc.sideslip_min_speed) continue;
      double tv = q[i].get(*sc.truth, truth.state(), to, q[i].wheel);
      double ov = q[i].get(*sc.model, obs.state(), obs.outputs(), q[i].wheel);
      double mv = q[i].get(*sc.model, open.state(), open.outputs(), q[i].wheel);
      st_obs[i].add(q[i].angle ? est::wrap_angle(ov - tv) : ov - tv);
      st_open[i].add(q[i].angle ? est::wrap_angle(mv - tv) : mv - tv);
    }
    for (std::size_t j = 0; j < zm.size(); ++j) {
      auto d = [&](double a, double b) { return zangle[j] ? est::wrap_angle(a - b) : a - b; };
      z_obs[j].add(d(obs.state().q[zm[j]], truth.state().q[zm[j]]));
      zd_obs[j].add(obs.state().qd[zm[j]] - truth.state().qd[zm[j]]);
      z_open[j].add(d(open.state().q[zm[j]], truth.state().q[zm[j]]));
      zd_open[j].add(open.state().qd[zm[j]] - truth.state().qd[zm[j]]);
    }
    for (int j = 0; j < n; ++j) {
      const int zi = zm[observed[j]];
      e[j] = zangle[observed[j]] ? est::wrap_angle(truth.state().q[zi] - obs.state().q[zi])
                                 : truth.state().q[zi] - obs.state().q[zi];
      e[n + j] = truth.state().qd[zi] - obs.state().qd[zi];
    }
    nees_sum += est::nees(e, obs.observer().filter().covariance().topLeftCorner(2 * n, 2 * n));
    ++nees_n;
    if (opt.trace) {
      *opt.trace << t;
      for (std::size_t i = 0; i < q.size(); ++i)
        *opt.trace << "," << q[i].get(*sc.truth, truth.state(), to, q[i].wheel) << ","
                   << q[i].get(*sc.model, open.state(), open.outputs(), q[i].wheel) << ","
                   << q[i].get(*sc.model, obs.state(), obs.outputs(), q[i].wheel);
      *opt.trace << "," << rec.valid << "," << rec.std_x << "," << rec.std_y << "," << rec.std_yaw << "," << rec.std_vx
                 << "," << rec.std_vy << "," << rec.std_sideslip_deg << "\n";
    }
  }

  json rep;
  rep["scenario"] = sc.file.filename().string();
  rep["filter"] = sc.observer.filter_type;
  rep["seed"] = opt.seed;
  rep["steps"] = steps;
  rep["duration"] = sc.duration;
  rep["dt"] = sc.dt;
  rep["metrics_from"] = sc.metrics_from;
  rep["distance_m"] = dist;
  for (std::size_t i = 0; i < q.size(); ++i) {
    rep["rmse"]["observer"][q[i].name] = st_obs[i].rmse();
    rep["rmse"]["model"][q[i].name] = st_open[i].rmse();
    rep["max_abs"]["observer"][q[i].name] = st_obs[i].max;
    rep["max_abs"]["model"][q[i].name] = st_open[i].max;
  }
  const auto names = z_names(sc.model->model);
  for (std::size_t j = 0; j < zm.size(); ++j) {
    rep["dof_rmse"]["observer"]["z"][names[j]] = z_obs[j].rmse();
    rep["dof_rmse"]["observer"]["zd"][names[j]] = zd_obs[j].rmse();
    rep["dof_rmse"]["model"]["z"][names[j]] = z_open[j].rmse();
    rep["dof_rmse"]["model"]["zd"][names[j]] = zd_open[j].rmse();
  }
  auto interval = est::nees_interval(2 * n, nees_n);
  const double nees_mean = nees_n ? nees_sum / nees_n : 0;
  rep["consistency"]["nees_mean"] = nees_mean;
  rep["consistency"]["nees_dof"] = 2 * n;
  rep["consistency"]["nees_interval_95"] = {interval.first, interval.second};
  rep["consistency"]["nees_consistent"] = nees_mean >= interval.first && nees_mean <= interval.second;
  json white = json::object();
  for (const auto& [k, v] : innov) {
    auto w = est::whiteness_test(v);
    double mean = 0, ms = 0;
    for (double x : v) mean += x, ms += x * x;
    if (!v.empty()) mean /= v.size(), ms = std::sqrt(ms / v.size());
    white[k] = {{"samples", w.samples}, {"max_deviation", w.max_deviation},
                {"bound", w.bound},     {"white", w.white},
                {"mean", mean},         {"rms", ms}};
  }
  rep["consistency"]["innovation_whiteness"] = white;
  for (std::size_t k = 0; k < kSensorKindCount; ++k)
    rep["sensors"][std::string(kSensorKindNames[k])] = {{"fused", fused[k]}, {"rejected", rejected[k]}};
  rep["timing_us"]["observer_step"] = percentiles(obs_us);
  rep["timing_us"]["open_loop_model_step"] = percentiles(open_us);
  const auto& c = obs.counters();
  auto per_step = [](const est::VehicleObserverCounters& k) {
    return k.steps ? static_cast<double>(k.newton_iterations) / static_cast<double>(k.steps) : 0.0;
  };
  rep["newton_iterations_mean"] = {{"observer", per_step(c)}, {"model", per_step(open.counters())}};
  rep["failures"] = {{"resets", c.resets},
                     {"model_step_failures", c.model_step_failures},
                     {"correction_failures", c.correction_failures},
                     {"wheel_resets", c.wheel_resets},
                     {"open_loop_resets", open.counters().resets},
                     {"open_loop_model_step_failures", open.counters().model_step_failures}};
  // GNSS outages: the error when the fix returns against the distance driven without it, and
  // how long until the error is back within the pre-outage level (issue 6).
  for (auto [a, b] : sc.sensors.outages) {
    double pre_sum = 0, at_return = -1, dist_a = -1, dist_b = -1, recovered = -1;
    long pre_n = 0;
    for (std::size_t i = 0; i < err_t.size(); ++i) {
      const double t = err_t[i].first;
      if (t >= a - 5 && t < a) pre_sum += err_t[i].second * err_t[i].second, ++pre_n;
      if (dist_a < 0 && t >= a) dist_a = dist_t[i];
      if (at_return < 0 && t >= b) at_return = err_t[i].second, dist_b = dist_t[i];
    }
    const double pre = pre_n ? std::sqrt(pre_sum / pre_n) : 0;
    // recovered: first time after b from which a 0.5 s moving RMS is back under 2x pre-outage
    for (std::size_t i = 0; i < err_t.size() && recovered < 0; ++i) {
      if (err_t[i].first < b) continue;
      double s = 0;
      long k = 0;
      for (std::size_t j = i; j < err_t.size() && err_t[j].first < err_t[i].first + 0.5; ++j)
        s += err_t[j].second * err_t[j].second, ++k;
      if (k && std::sqrt(s / k) <= std::max(2 * pre, 0.05)) recovered = err_t[i].first - b;
    }
    const double driven = dist_b - dist_a;
    rep["gnss_outages"].push_back({{"from", a},
                                   {"to", b},
                                   {"distance_m", driven},
                                   {"error_at_return_m", at_return},
                                   {"error_percent_of_distance", driven > 0 ? 100 * at_return / driven : 0},
                                   {"pre_outage_error_rms_m", pre},
                                   {"recovery_s", recovered}});
  }
  for (const auto& j : sc.sensors.jumps) {
    double max_err = 0;
    for (const auto& [t, err] : err_t)
      if (t >= j.from && t < j.to + 1) max_err = std::max(max_err, err);
    rep["gnss_jumps"].push_back(
        {{"from", j.from},
         {"to", j.to},
         {"size_m", std::hypot(j.east, j.north)},
         {"max_position_error_m", max_err},
         {"gnss_position_rejected", rejected[static_cast<std::size_t>(SensorKind::gnss_position)]}});
  }
  return rep;
}

}  // namespace mbo::exp
