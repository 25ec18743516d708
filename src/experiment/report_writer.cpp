#include "report_writer.hpp"

#include <algorithm>
#include <cmath>

#include "mbobserver/estimation/consistency.hpp"
#include "mbobserver/experiment/runner.hpp"
#include "mbobserver/experiment/scenario.hpp"

namespace mbo::exp {

using nlohmann::json;

ReportWriter::ReportWriter(std::vector<std::string> quantities, const mb::Model& truth, const mb::Model& model,
                           std::vector<int> observed, std::vector<std::string> sensors)
    : names_(std::move(quantities)),
      truth_(truth),
      model_(model),
      observed_(std::move(observed)),
      sensors_(std::move(sensors)),
      observer_(names_.size()),
      open_loop_(names_.size()),
      z_observer_(model.z.size()),
      zd_observer_(model.z.size()),
      z_open_loop_(model.z.size()),
      zd_open_loop_(model.z.size()),
      z_angle_(model.z.size()),
      e_(2 * observed_.size()),
      fused_(sensors_.size(), 0),
      rejected_(sensors_.size(), 0) {
  for (std::size_t j = 0; j < model.z.size(); ++j) z_angle_[j] = angle_slot(model.z[j]);
}

bool ReportWriter::angle_slot(int slot) const {
  for (const auto& e : model_.entities)
    if (e.kind == mb::EntityKind::scalar && e.slot == slot) return e.scalar_kind == mb::ScalarKind::angle;
  return false;
}

void ReportWriter::add_coordinates(const mb::State& truth, const mb::State& observer, const mb::State& open_loop,
                                   const Eigen::MatrixXd& covariance) {
  auto diff = [](double a, double b, bool angle) { return angle ? est::wrap_angle(a - b) : a - b; };
  for (std::size_t j = 0; j < model_.z.size(); ++j) {
    const int zt = truth_.z[j], zm = model_.z[j];
    z_observer_[j].add(diff(observer.q[zm], truth.q[zt], z_angle_[j]));
    zd_observer_[j].add(observer.qd[zm] - truth.qd[zt]);
    z_open_loop_[j].add(diff(open_loop.q[zm], truth.q[zt], z_angle_[j]));
    zd_open_loop_[j].add(open_loop.qd[zm] - truth.qd[zt]);
  }
  // NEES of the kinematic block [z, zd], the part a truth can be compared with
  const est::ErrorStateLayout L{static_cast<int>(observed_.size())};
  for (int j = 0; j < L.observed; ++j) {
    const int zi = observed_[j];
    const int zt = truth_.z[zi], zm = model_.z[zi];
    e_[L.z(j)] = diff(truth.q[zt], observer.q[zm], z_angle_[zi]);
    e_[L.zd(j)] = truth.qd[zt] - observer.qd[zm];
  }
  const auto K = L.kinematic();
  nees_sum_ += est::nees(e_, covariance.block(K.offset, K.offset, K.size, K.size));
  ++nees_n_;
}

json ReportWriter::write(const RunHeader& h, const json& failures) const {
  json rep;
  rep["scenario"] = h.scenario;
  rep["filter"] = h.filter;
  rep["seed"] = h.seed;
  rep["steps"] = h.steps;
  rep["duration"] = h.duration;
  rep["dt"] = h.dt;
  rep["metrics_from"] = h.metrics_from;
  for (std::size_t i = 0; i < names_.size(); ++i) {
    rep["rmse"]["observer"][names_[i]] = observer_[i].rmse();
    rep["rmse"]["model"][names_[i]] = open_loop_[i].rmse();
    rep["max_abs"]["observer"][names_[i]] = observer_[i].max;
    rep["max_abs"]["model"][names_[i]] = open_loop_[i].max;
  }
  const auto zn = z_names(model_);
  for (std::size_t j = 0; j < model_.z.size(); ++j) {
    rep["dof_rmse"]["observer"]["z"][zn[j]] = z_observer_[j].rmse();
    rep["dof_rmse"]["observer"]["zd"][zn[j]] = zd_observer_[j].rmse();
    rep["dof_rmse"]["model"]["z"][zn[j]] = z_open_loop_[j].rmse();
    rep["dof_rmse"]["model"]["zd"][zn[j]] = zd_open_loop_[j].rmse();
  }
  const int dof = 2 * static_cast<int>(observed_.size());
  const auto interval = est::nees_interval(dof, nees_n_);
  const double nees_mean = nees_n_ ? nees_sum_ / nees_n_ : 0;
  rep["consistency"]["nees_mean"] = nees_mean;
  rep["consistency"]["nees_dof"] = dof;
  rep["consistency"]["nees_interval_95"] = {interval.first, interval.second};
  rep["consistency"]["nees_consistent"] = nees_mean >= interval.first && nees_mean <= interval.second;
  json white = json::object();
  for (const auto& [key, v] : innovations_) {
    const auto w = est::whiteness_test(v);
    double mean = 0, rms = 0;
    for (double x : v) mean += x, rms += x * x;
    if (!v.empty()) mean /= v.size(), rms = std::sqrt(rms / v.size());
    white[key] = {{"samples", w.samples}, {"max_deviation", w.max_deviation},
                  {"bound", w.bound},     {"white", w.white},
                  {"mean", mean},         {"rms", rms}};
  }
  rep["consistency"]["innovation_whiteness"] = white;
  for (std::size_t i = 0; i < sensors_.size(); ++i)
    rep["sensors"][sensors_[i]] = {{"fused", fused_[i]}, {"rejected", rejected_[i]}};
  for (const auto& [name, us] : timing_) rep["timing_us"][name] = percentiles(us);
  rep["failures"] = failures;
  if (false_valid_.steps() > 0) rep["false_valid"] = false_valid_.report();
  return rep;
}

namespace {

// A number in some runs only (an output NEES a run never scored, a NaN written as null) has no
// mean over the runs: it is null, not a mean of fewer runs divided by all (and not, as before,
// an exception that ended a --runs experiment on its second run).
void drop_numbers(json& mean, json& mn, json& mx) {
  if (mean.is_object()) {
    for (auto it = mean.begin(); it != mean.end(); ++it) drop_numbers(it.value(), mn[it.key()], mx[it.key()]);
  } else if (mean.is_number()) {
    mean = nullptr;
    mn = nullptr;
    mx = nullptr;
  }
}

void fold(const json& v, json& mean, json& mn, json& mx, std::size_t count, std::size_t idx) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      fold(it.value(), mean[it.key()], mn[it.key()], mx[it.key()], count, idx);
    }
    if (idx > 0 && mean.is_object())
      for (auto it = mean.begin(); it != mean.end(); ++it)
        if (!v.contains(it.key())) drop_numbers(it.value(), mn[it.key()], mx[it.key()]);
  } else if (v.is_number()) {
    if (idx > 0 && !mean.is_number()) return;  // missing or not a number in an earlier run
    double x = v.get<double>();
    mean = (idx == 0 ? 0.0 : mean.get<double>()) + x / count;
    mn = idx == 0 ? x : std::min(mn.get<double>(), x);
    mx = idx == 0 ? x : std::max(mx.get<double>(), x);
  } else if (v.is_boolean()) {
    bool b = v.get<bool>();
    mean = idx == 0 ? b : (mean.is_boolean() && mean.get<bool>() && b);
    mn = mean;
    mx = idx == 0 ? b : ((mx.is_boolean() && mx.get<bool>()) || b);
  } else if (idx == 0) {
    mean = v;
    mn = v;
    mx = v;
  } else {
    drop_numbers(mean, mn, mx);
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
