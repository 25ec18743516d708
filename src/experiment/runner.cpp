#include "mbobserver/experiment/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>

#include "mbobserver/estimation/consistency.hpp"
#include "mbobserver/experiment/error_stats.hpp"
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/kinematics.hpp"

namespace mbo::exp {
namespace {

using Eigen::VectorXd;
using nlohmann::json;

double diff(double a, double b, bool angle) { return angle ? est::wrap_angle(a - b) : a - b; }

bool is_angle_slot(const mb::Model& m, int slot) {
  for (const auto& e : m.entities)
    if (e.kind == mb::EntityKind::scalar && e.slot == slot) return e.scalar_kind == mb::ScalarKind::angle;
  return false;
}

}  // namespace

json run_experiment(const Scenario& sc, const RunOptions& opt) {
  SimulatedModel truth(sc.truth, sc.truth_z0, sc.truth_zd0), open(sc.model, sc.model_z0, sc.model_zd0);
  apply_inputs(sc.truth_inputs, 0, truth.s);
  apply_inputs(sc.model_inputs, 0, open.s);
  if (sc.model_inputs_from_truth) open.s.u = truth.s.u;
  truth.start();
  open.start();

  std::vector<std::shared_ptr<const est::Sensor>> on_truth, on_model;
  for (const auto& spec : sc.sensors) {
    on_truth.push_back(make_sensor(spec, sc.truth));
    on_model.push_back(make_sensor(spec, sc.model));
  }
  est::ObserverSettings settings = sc.filter;
  settings.filter.force_error = sc.filter_type == "errorEKF-FE";
  if (settings.filter.force_error && !sc.fe_accel_noise.empty()) settings.filter.accel_noise = sc.fe_accel_noise;
  if (settings.filter.force_error && settings.filter.initial_std_a.empty())
    throw ConfigError(sc.file.string() + ": /filter: errorEKF-FE needs \"force_error\" settings");
  est::MbObserver obs(sc.model, on_model, settings, sc.dt);
  obs.initialize(open.s);

  std::mt19937_64 rng(opt.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  const int n = static_cast<int>(settings.observed.size());
  const long steps = std::lround(sc.duration / sc.dt);

  std::vector<ErrorStats> q_obs(sc.quantities.size()), q_open(sc.quantities.size());
  const std::size_t nz = sc.model.z.size();
  std::vector<ErrorStats> z_obs(nz), zd_obs(nz), z_open(nz), zd_open(nz);
  std::vector<std::vector<std::vector<double>>> innovations(sc.sensors.size());
  std::vector<long> next_sample(sc.sensors.size(), 0), fused(sc.sensors.size(), 0), rejected(sc.sensors.size(), 0);
  for (std::size_t i = 0; i < sc.sensors.size(); ++i) innovations[i].resize(on_model[i]->rows());
  std::vector<double> obs_us, model_us;
  obs_us.reserve(steps);
  model_us.reserve(steps);
  double nees_sum = 0;
  long nees_n = 0;
  long model_failures = 0, correction_failures = 0, unhealthy = 0, open_failures = 0;
  std::vector<est::ScalarMeasurement> meas;
  std::vector<est::UpdateResult> results;
  meas.reserve(64);
  results.reserve(64);
  VectorXd e(2 * n);
  const VectorXd std0 = obs.std_dev();

  if (opt.trace) {
    *opt.trace << "t";
    for (const auto& q : sc.quantities)
      *opt.trace << "," << q.name << "_truth," << q.name << "_model," << q.name << "_observer";
    for (const auto& zn : z_names(sc.model)) *opt.trace << "," << zn << "_truth," << zn << "_observer," << zn << "_std";
    // errorEKF-FE: the generalised force the model now carries, on each independent
    // coordinate (R' Q_correction).
    for (const auto& zn : z_names(sc.model)) *opt.trace << "," << zn << "_force";
    *opt.trace << "\n";
  }

  for (long k = 1; k <= steps; ++k) {
    const double t = k * sc.dt;
    apply_inputs(sc.truth_inputs, t, truth.s);
    if (!mb::step(sc.truth, truth.s, truth.ws, sc.dt).converged)
      throw std::runtime_error("the truth model failed to converge at t = " + std::to_string(t));
    apply_inputs(sc.model_inputs, t, open.s);
    if (sc.model_inputs_from_truth) open.s.u = truth.s.u;
    auto m0 = std::chrono::steady_clock::now();
    if (!mb::step(sc.model, open.s, open.ws, sc.dt).converged) ++open_failures;
    auto m1 = std::chrono::steady_clock::now();
    model_us.push_back(std::chrono::duration<double, std::micro>(m1 - m0).count());
    obs.state().u = open.s.u;

    // Sensors sample the truth.
    meas.clear();
    truth.ws.x.head(sc.truth.nq) = truth.s.q;
    truth.ws.xd.head(sc.truth.nq) = truth.s.qd;
    VectorXd xdd = VectorXd::Zero(sc.truth.nq + sc.truth.nconst);
    xdd.head(sc.truth.nq) = truth.s.qdd;
    est::MeasureContext tctx{sc.truth, truth.ws.x, truth.ws.xd, xdd};
    for (std::size_t i = 0; i < sc.sensors.size(); ++i) {
      const auto& spec = sc.sensors[i];
      const double due = spec.start + next_sample[i] / spec.rate_hz;
      if (t + 1e-9 < due) continue;
      ++next_sample[i];
      bool out = false;
      for (auto [a, b] : spec.outages) out = out || (t >= a && t < b);
      if (out) continue;
      for (int row = 0; row < on_truth[i]->rows(); ++row) {
        double v = on_truth[i]->measure(tctx, row, nullptr) + spec.noise_std * normal(rng);
        if (spec.quantum > 0) v = spec.quantum * std::round(v / spec.quantum);
        double var = spec.noise_std * spec.noise_std + spec.quantum * spec.quantum / 12;
        meas.push_back({static_cast<int>(i), row, v, var});
      }
    }

    auto o0 = std::chrono::steady_clock::now();
    auto rep = obs.step(meas, &results);
    auto o1 = std::chrono::steady_clock::now();
    obs_us.push_back(std::chrono::duration<double, std::micro>(o1 - o0).count());
    if (!rep.model_step.converged) ++model_failures;
    if (!rep.correction_converged) ++correction_failures;
    if (!rep.healthy) ++unhealthy;
    for (std::size_t j = 0; j < meas.size(); ++j) {
      const auto& r = results[j];
      if (r.accepted)
        ++fused[meas[j].sensor];
      else
        ++rejected[meas[j].sensor];
      innovations[meas[j].sensor][meas[j].row].push_back(r.innovation);
    }

    if (t + 1e-12 >= sc.metrics_from) {
      for (std::size_t i = 0; i < sc.quantities.size(); ++i) {
        const auto& q = sc.quantities[i];
        double tv = q.eval(sc.truth, truth.s);
        q_obs[i].add(diff(q.eval(sc.model, obs.state()), tv, q.angle));
        q_open[i].add(diff(q.eval(sc.model, open.s), tv, q.angle));
      }
      for (std::size_t j = 0; j < nz; ++j) {
        const int zt = sc.truth.z[j], zm = sc.model.z[j];
        const bool ang = is_angle_slot(sc.model, zm);
        z_obs[j].add(diff(obs.state().q[zm], truth.s.q[zt], ang));
        zd_obs[j].add(obs.state().qd[zm] - truth.s.qd[zt]);
        z_open[j].add(diff(open.s.q[zm], truth.s.q[zt], ang));
        zd_open[j].add(open.s.qd[zm] - truth.s.qd[zt]);
      }
      for (int j = 0; j < n; ++j) {
        const int zi = settings.observed[j];
        const int zt = sc.truth.z[zi], zm = sc.model.z[zi];
        e[j] = diff(truth.s.q[zt], obs.state().q[zm], is_angle_slot(sc.model, zm));
        e[n + j] = truth.s.qd[zt] - obs.state().qd[zm];
      }
      nees_sum += est::nees(e, obs.filter().covariance().topLeftCorner(2 * n, 2 * n));
      ++nees_n;
    }
    if (opt.trace) {
      *opt.trace << t;
      for (const auto& q : sc.quantities)
        *opt.trace << "," << q.eval(sc.truth, truth.s) << "," << q.eval(sc.model, open.s) << ","
                   << q.eval(sc.model, obs.state());
      VectorXd sd = obs.std_dev();
      for (std::size_t j = 0; j < nz; ++j) {
        auto it = std::find(settings.observed.begin(), settings.observed.end(), static_cast<int>(j));
        double s = it == settings.observed.end() ? std::nan("") : sd[it - settings.observed.begin()];
        *opt.trace << "," << truth.s.q[sc.truth.z[j]] << "," << obs.state().q[sc.model.z[j]] << "," << s;
      }
      VectorXd fq(sc.model.nq);
      mb::apply_Rt(sc.model, obs.workspace(), obs.state().Q_correction, fq);  // kinematics at the corrected state
      for (std::size_t j = 0; j < nz; ++j) *opt.trace << "," << fq[sc.model.z[j]];
      *opt.trace << "\n";
    }
  }

  json rep;
  rep["scenario"] = sc.file.filename().string();
  rep["filter"] = sc.filter_type;
  rep["seed"] = opt.seed;
  rep["steps"] = steps;
  rep["duration"] = sc.duration;
  rep["dt"] = sc.dt;
  rep["metrics_from"] = sc.metrics_from;
  for (std::size_t i = 0; i < sc.quantities.size(); ++i) {
    const auto& name = sc.quantities[i].name;
    rep["rmse"]["observer"][name] = q_obs[i].rmse();
    rep["rmse"]["model"][name] = q_open[i].rmse();
    rep["max_abs"]["observer"][name] = q_obs[i].max;
    rep["max_abs"]["model"][name] = q_open[i].max;
  }
  auto zn = z_names(sc.model);
  for (std::size_t j = 0; j < nz; ++j) {
    rep["dof_rmse"]["observer"]["z"][zn[j]] = z_obs[j].rmse();
    rep["dof_rmse"]["observer"]["zd"][zn[j]] = zd_obs[j].rmse();
    rep["dof_rmse"]["model"]["z"][zn[j]] = z_open[j].rmse();
    rep["dof_rmse"]["model"]["zd"][zn[j]] = zd_open[j].rmse();
  }
  auto interval = est::nees_interval(2 * n, nees_n);
  double nees_mean = nees_n ? nees_sum / nees_n : 0;
  rep["consistency"]["nees_mean"] = nees_mean;
  rep["consistency"]["nees_dof"] = 2 * n;
  rep["consistency"]["nees_interval_95"] = {interval.first, interval.second};
  rep["consistency"]["nees_consistent"] = nees_mean >= interval.first && nees_mean <= interval.second;
  json white = json::object();
  for (std::size_t i = 0; i < sc.sensors.size(); ++i) {
    for (std::size_t r = 0; r < innovations[i].size(); ++r) {
      auto w = est::whiteness_test(innovations[i][r]);
      std::string key = sc.sensors[i].name + (innovations[i].size() > 1 ? "[" + std::to_string(r) + "]" : "");
      white[key] = {{"samples", w.samples}, {"max_deviation", w.max_deviation}, {"bound", w.bound}, {"white", w.white}};
    }
    rep["sensors"][sc.sensors[i].name] = {{"fused", fused[i]}, {"rejected", rejected[i]}};
  }
  rep["consistency"]["innovation_whiteness"] = white;

  // Observability of (F, H) with the sensors' Jacobian rows at the end of the run, and which
  // standard deviations grew instead of shrinking (Sinigaglia 2016 3.3.2, 4.1.2).
  VectorXd sd = obs.std_dev();
  json grew = json::array();
  const int N = obs.filter().size();
  for (int i = 0; i < N; ++i) {
    const int j = i < 2 * n ? i % n : obs.filter().forced()[i - 2 * n];
    const std::string base = zn[settings.observed[j]];
    const std::string name = i < n ? base : i < 2 * n ? base + "_dot" : base + "_acc";
    rep["observability"]["initial_std"][name] = std0[i];
    rep["observability"]["final_std"][name] = sd[i];
    if (sd[i] > std0[i]) grew.push_back(name);
  }
  rep["observability"]["covariance_grew"] = grew;
  rep["observability"]["observable"] = grew.empty() && !sc.sensors.empty();
  if (sc.sensors.empty()) rep["observability"]["note"] = "no sensors: nothing corrects the model";

  rep["timing_us"]["observer_step"] = percentiles(obs_us);
  rep["timing_us"]["model_step"] = percentiles(model_us);
  rep["failures"] = {{"observer_model_steps", model_failures},
                     {"corrections", correction_failures},
                     {"unhealthy_steps", unhealthy},
                     {"open_loop_model_steps", open_failures}};
  return rep;
}

namespace {

void fold(const json& v, json& mean, json& mn, json& mx, std::size_t count, std::size_t idx) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      fold(it.value(), mean[it.key()], mn[it.key()], mx[it.key()], count, idx);
    }
  } else if (v.is_number()) {
    double x = v.get<double>();
    mean = (idx == 0 ? 0.0 : mean.get<double>()) + x / count;
    mn = idx == 0 ? x : std::min(mn.get<double>(), x);
    mx = idx == 0 ? x : std::max(mx.get<double>(), x);
  } else if (v.is_boolean()) {
    bool b = v.get<bool>();
    mean = idx == 0 ? b : (mean.get<bool>() && b);
    mn = mean;
    mx = idx == 0 ? b : (mx.get<bool>() || b);
  } else if (idx == 0) {
    mean = v;
    mn = v;
    mx = v;
  }
}

}  // namespace

json aggregate_reports(const std::vector<json>& runs) {
  json mean, mn, mx;
  for (std::size_t i = 0; i < runs.size(); ++i) fold(runs[i], mean, mn, mx, runs.size(), i);
  mean["runs"] = runs.size();
  mean.erase("seed");
  mn.erase("seed");
  mx.erase("seed");
  mean["min"] = mn;
  mean["max"] = mx;
  return mean;
}

}  // namespace mbo::exp
