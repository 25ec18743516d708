#include "mbobserver/experiment/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "mbobserver/estimation/consistency.hpp"
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/kinematics.hpp"
#include "report_writer.hpp"

namespace mbo::exp {
namespace {

using Eigen::VectorXd;
using nlohmann::json;

double diff(double a, double b, bool angle) { return angle ? est::wrap_angle(a - b) : a - b; }

// The scenario's sensors sampling the truth: each at its rate from its start, none during its
// outages, with Gaussian noise and quantisation (variance noise^2 + quantum^2 / 12).
class SensorSampler {
 public:
  SensorSampler(const Scenario& sc, std::uint64_t seed) : sc_(sc), next_(sc.sensors.size(), 0), rng_(seed) {
    for (const auto& spec : sc.sensors) on_truth_.push_back(make_sensor(spec, sc.truth));
  }

  // Appends the samples due at t to `meas`.
  void sample(double t, SimulatedModel& truth, std::vector<est::ScalarMeasurement>& meas) {
    truth.ws.x.head(sc_.truth.nq) = truth.s.q;
    truth.ws.xd.head(sc_.truth.nq) = truth.s.qd;
    VectorXd xdd = VectorXd::Zero(sc_.truth.nq + sc_.truth.nconst);
    xdd.head(sc_.truth.nq) = truth.s.qdd;
    est::MeasureContext tctx{sc_.truth, truth.ws.x, truth.ws.xd, xdd};
    for (std::size_t i = 0; i < sc_.sensors.size(); ++i) {
      const auto& spec = sc_.sensors[i];
      const double due = spec.start + next_[i] / spec.rate_hz;
      if (t + 1e-9 < due) continue;
      ++next_[i];
      bool out = false;
      for (auto [a, b] : spec.outages) out = out || (t >= a && t < b);
      if (out) continue;
      for (int row = 0; row < on_truth_[i]->rows(); ++row) {
        double v = on_truth_[i]->measure(tctx, row, nullptr) + spec.noise_std * normal_(rng_);
        if (spec.quantum > 0) v = spec.quantum * std::round(v / spec.quantum);
        double var = spec.noise_std * spec.noise_std + spec.quantum * spec.quantum / 12;
        meas.push_back({static_cast<int>(i), row, v, var});
      }
    }
  }

 private:
  const Scenario& sc_;
  std::vector<std::shared_ptr<const est::Sensor>> on_truth_;
  std::vector<long> next_;  // index of each sensor's next sample
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
};

// --trace: per step the quantities (truth, open-loop model, observer), each independent
// coordinate (truth, observer, its standard deviation if observed) and, errorEKF-FE, the
// generalised force the model now carries on it (R' Q_correction).
void write_trace_header(std::ostream& out, const Scenario& sc) {
  out << "t";
  for (const auto& q : sc.quantities) out << "," << q.name << "_truth," << q.name << "_model," << q.name << "_observer";
  for (const auto& zn : z_names(sc.model)) out << "," << zn << "_truth," << zn << "_observer," << zn << "_std";
  for (const auto& zn : z_names(sc.model)) out << "," << zn << "_force";
  out << "\n";
}

void write_trace_row(std::ostream& out, const Scenario& sc, double t, const SimulatedModel& truth,
                     const SimulatedModel& open, est::MbObserver& obs, const std::vector<int>& observed) {
  out << t;
  for (const auto& q : sc.quantities)
    out << "," << q.eval(sc.truth, truth.s) << "," << q.eval(sc.model, open.s) << "," << q.eval(sc.model, obs.state());
  VectorXd sd = obs.std_dev();
  for (std::size_t j = 0; j < sc.model.z.size(); ++j) {
    auto it = std::find(observed.begin(), observed.end(), static_cast<int>(j));
    double s = it == observed.end() ? std::nan("") : sd[it - observed.begin()];
    out << "," << truth.s.q[sc.truth.z[j]] << "," << obs.state().q[sc.model.z[j]] << "," << s;
  }
  VectorXd fq(sc.model.nq);
  mb::apply_Rt(sc.model, obs.workspace(), obs.state().Q_correction, fq);  // kinematics at the corrected state
  for (std::size_t j = 0; j < sc.model.z.size(); ++j) out << "," << fq[sc.model.z[j]];
  out << "\n";
}

// Observability of (F, H) with the sensors' Jacobian rows at the end of the run, and which
// standard deviations grew instead of shrinking (Sinigaglia 2016 3.3.2, 4.1.2).
json observability(const Scenario& sc, est::MbObserver& obs, const std::vector<int>& observed, const VectorXd& std0) {
  const auto zn = z_names(sc.model);
  const auto& L = obs.filter().layout();
  const auto& forced = obs.filter().forced();
  VectorXd sd = obs.std_dev();
  json o, grew = json::array();
  // each error-state entry by its block's name: z, z_dot, z_acc (FE), input_k
  auto name_of = [&](int i) {
    if (i < L.zd().offset) return zn[observed[i - L.z().offset]];
    if (i < L.accel().offset) return zn[observed[i - L.zd().offset]] + "_dot";
    if (i < L.input().offset) return zn[observed[forced[i - L.accel().offset]]] + "_acc";
    return "input_" + std::to_string(i - L.input().offset);
  };
  for (int i = 0; i < L.size(); ++i) {
    const std::string name = name_of(i);
    o["initial_std"][name] = std0[i];
    o["final_std"][name] = sd[i];
    if (sd[i] > std0[i]) grew.push_back(name);
  }
  o["covariance_grew"] = grew;
  o["observable"] = grew.empty() && !sc.sensors.empty();
  if (sc.sensors.empty()) o["note"] = "no sensors: nothing corrects the model";
  return o;
}

}  // namespace

json run_experiment(const Scenario& sc, const RunOptions& opt) {
  SimulatedModel truth(sc.truth, sc.truth_z0, sc.truth_zd0), open(sc.model, sc.model_z0, sc.model_zd0);
  apply_inputs(sc.truth_inputs, 0, truth.s);
  apply_inputs(sc.model_inputs, 0, open.s);
  if (sc.model_inputs_from_truth) open.s.u = truth.s.u;
  truth.start();
  open.start();

  SensorSampler sensors(sc, opt.seed);
  std::vector<std::shared_ptr<const est::Sensor>> on_model;
  for (const auto& spec : sc.sensors) on_model.push_back(make_sensor(spec, sc.model));
  est::ObserverSettings settings = sc.filter;
  settings.filter.force_error = sc.filter_type == "errorEKF-FE";
  if (settings.filter.force_error && !sc.fe_accel_noise.empty()) settings.filter.accel_noise = sc.fe_accel_noise;
  if (settings.filter.force_error && settings.filter.initial_std_a.empty())
    throw ConfigError(sc.file.string() + ": /filter: errorEKF-FE needs \"force_error\" settings");
  est::MbObserver obs(sc.model, on_model, settings, sc.dt);
  obs.initialize(open.s);

  const long steps = std::lround(sc.duration / sc.dt);

  std::vector<std::string> quantity_names, sensor_names;
  for (const auto& q : sc.quantities) quantity_names.push_back(q.name);
  for (const auto& spec : sc.sensors) sensor_names.push_back(spec.name);
  ReportWriter report(quantity_names, sc.truth, sc.model, settings.observed, sensor_names);
  // each sensor row's innovation sequence, reported as "<sensor>[<row>]" (only "<sensor>" for one row)
  std::vector<std::vector<std::vector<double>*>> innovations(sc.sensors.size());
  for (std::size_t i = 0; i < sc.sensors.size(); ++i)
    for (int r = 0; r < on_model[i]->rows(); ++r)
      innovations[i].push_back(
          &report.innovations(sc.sensors[i].name + (on_model[i]->rows() > 1 ? "[" + std::to_string(r) + "]" : "")));
  std::vector<double>& obs_us = report.timing("observer_step");
  std::vector<double>& model_us = report.timing("model_step");
  obs_us.reserve(steps);
  model_us.reserve(steps);
  long model_failures = 0, correction_failures = 0, unhealthy = 0, open_failures = 0;
  std::vector<est::ScalarMeasurement> meas;
  std::vector<est::UpdateResult> results;
  meas.reserve(64);
  results.reserve(64);
  const VectorXd std0 = obs.std_dev();

  if (opt.trace) write_trace_header(*opt.trace, sc);

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
    sensors.sample(t, truth, meas);

    auto o0 = std::chrono::steady_clock::now();
    auto rep = obs.step(meas, &results);
    auto o1 = std::chrono::steady_clock::now();
    obs_us.push_back(std::chrono::duration<double, std::micro>(o1 - o0).count());
    if (!rep.model_step.converged) ++model_failures;
    if (!rep.correction_converged) ++correction_failures;
    if (!rep.healthy) ++unhealthy;
    for (std::size_t j = 0; j < meas.size(); ++j) {
      report.count_measurement(meas[j].sensor, results[j].accepted);
      innovations[meas[j].sensor][meas[j].row]->push_back(results[j].innovation);
    }

    if (t + 1e-12 >= sc.metrics_from) {
      for (std::size_t i = 0; i < sc.quantities.size(); ++i) {
        const auto& q = sc.quantities[i];
        double tv = q.eval(sc.truth, truth.s);
        report.add_quantity(i, diff(q.eval(sc.model, obs.state()), tv, q.angle),
                            diff(q.eval(sc.model, open.s), tv, q.angle));
      }
      report.add_coordinates(truth.s, obs.state(), open.s, obs.filter().covariance());
    }
    if (opt.trace) write_trace_row(*opt.trace, sc, t, truth, open, obs, settings.observed);
  }

  json rep = report.write({.scenario = sc.file.filename().string(),
                           .filter = sc.filter_type,
                           .seed = opt.seed,
                           .steps = steps,
                           .duration = sc.duration,
                           .dt = sc.dt,
                           .metrics_from = sc.metrics_from},
                          {{"observer_model_steps", model_failures},
                           {"corrections", correction_failures},
                           {"unhealthy_steps", unhealthy},
                           {"open_loop_model_steps", open_failures}});

  rep["observability"] = observability(sc, obs, settings.observed, std0);
  return rep;
}

}  // namespace mbo::exp
