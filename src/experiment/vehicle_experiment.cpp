#include "mbobserver/experiment/vehicle_experiment.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "calibration_truth.hpp"
#include "mbobserver/estimation/consistency.hpp"
#include "mbobserver/experiment/vehicle_quantities.hpp"
#include "mbobserver/models/vehicle_params.hpp"
#include "report_writer.hpp"

namespace mbo::exp {
namespace {

using nlohmann::json;

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

// The horizontal position error of a started observer over time, and the distance driven.
struct ErrorTrack {
  std::vector<std::pair<double, double>> err_t;  // (t, horizontal position error)
  std::vector<double> dist_t;  // distance driven by then
};

// A GNSS outage from a to b: the error when the fix returns against the distance driven
// without it, and how long until the error is back within the pre-outage level (issue 6).
json gnss_outage_report(const ErrorTrack& track, double a, double b) {
  const auto& err_t = track.err_t;
  const auto& dist_t = track.dist_t;
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
  return {{"from", a},
          {"to", b},
          {"distance_m", driven},
          {"error_at_return_m", at_return},
          {"error_percent_of_distance", driven > 0 ? 100 * at_return / driven : 0},
          {"pre_outage_error_rms_m", pre},
          {"recovery_s", recovered}};
}

// A GNSS position jump: the largest position error from its start to a second after its end.
json gnss_jump_report(const ErrorTrack& track, const GnssJump& j, std::uint64_t gnss_position_rejected) {
  double max_err = 0;
  for (const auto& [t, err] : track.err_t)
    if (t >= j.from && t < j.to + 1) max_err = std::max(max_err, err);
  return {{"from", j.from},
          {"to", j.to},
          {"size_m", std::hypot(j.east, j.north)},
          {"max_position_error_m", max_err},
          {"gnss_position_rejected", gnss_position_rejected}};
}

// The published 1-sigma of a quantity in an estimate record; -1: none.
double record_sigma(const EstimateRecord& r, const VehicleQuantity& q) {
  const std::string& k = q.estimate_key;
  const int w = q.wheel;
  if (q.name == "x") return r.std_x;
  if (q.name == "y") return r.std_y;
  if (q.name == "yaw") return r.std_yaw;
  if (q.name == "vx") return r.std_vx;
  if (q.name == "vy") return r.std_vy;
  if (q.name == "sideslip_deg") return r.std_sideslip_deg;
  if (q.name == "friction") return r.std_friction;
  if (w < 0) return -1;
  if (k == "tyre_fx") return r.std_tyre_fx[w];
  if (k == "tyre_fy") return r.std_tyre_fy[w];
  if (k == "tyre_fz") return r.std_tyre_fz[w];
  if (k == "suspension_travel") return r.std_suspension_travel[w];
  if (k == "wheel_spin_angle") return r.std_wheel_spin_angle[w];
  if (k == "wheel_speed") return r.std_wheel_speed[w];
  return -1;
}

}  // namespace

bool is_vehicle_scenario(const std::filesystem::path& file) {
  auto doc = load_json_file(file);
  return doc.is_object() && doc.contains("kind") && doc["kind"] == "vehicle";
}

VehicleScenario load_vehicle_scenario(const std::filesystem::path& file, const json* observer_patch) {
  VehicleScenario sc;
  sc.file = file;
  json doc;
  if (observer_patch) {
    doc = load_json_file(file);
    if (doc.is_object() && doc.contains("observer")) doc["observer"].merge_patch(*observer_patch);
  }
  auto root = observer_patch ? JsonReader(doc, file.string()) : JsonReader::from_file(file);
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
  sc.sensors_json = root.at("sensors").json();
  sc.sensors = read_sensor_sim_config(root.at("sensors"));
  if (auto pb = root.find("production_bus")) sc.production_bus = read_production_bus_config(*pb);
  if (auto p = root.find("perturb")) sc.perturb = read_perturbations(*p, sc.sensors_json);
  sc.observer = est::read_vehicle_observer_config(root.at("observer"), *sc.model);
  if (sc.sensors.gnss_stamp_fix_time)
    est::aiding::check_fixes_stamped_at_their_time(sc.observer.gnss, root.at("observer").at("gnss"),
                                                   "/sensors/gnss/stamp \"fix_time\"");
  if (sc.production_bus) fit_observer_to_production_bus(*sc.production_bus, sc.observer);
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

VehicleScenario realise_scenario(const VehicleScenario& sc, std::uint64_t seed) {
  if (sc.perturb.empty()) return sc;
  auto valid = [&](const json& sensors) {
    try {
      read_sensor_sim_config(JsonReader(sensors, sc.file.string(), "/sensors"));
      return true;
    } catch (const ConfigError&) {
      return false;
    }
  };
  auto run = draw_perturbations(sc.perturb, sc.truth->params, *sc.truth, sc.sensors_json, seed, valid);
  VehicleScenario out = sc;
  out.truth = std::make_shared<const models::Vehicle>(models::build_vehicle(run.truth));
  out.sensors = read_sensor_sim_config(JsonReader(run.sensors, sc.file.string(), "/sensors"));
  out.drawn = std::move(run.drawn);
  return out;
}

void score_at_model_points(const models::Vehicle& truth, const models::Vehicle& model, const mb::State& s,
                           models::VehicleOutputs& o) {
  const Eigen::Vector3d ref = model.params.cg_m, whole = model.params.vehicle_cg();
  if ((ref - truth.params.cg_m).norm() < 1e-9 && (whole - truth.params.vehicle_cg()).norm() < 1e-9) return;
  const auto p = models::chassis_point_kinematics(truth, s, ref);
  o.position = p.position;
  o.velocity = p.velocity;
  o.velocity_body = p.velocity_body;
  // vehicle_outputs' speed and sideslip, of the model's whole-vehicle CG as a point of the body
  const auto g = models::chassis_point_kinematics(truth, s, whole);
  o.cg_velocity = g.velocity;
  o.cg_velocity_body = g.velocity_body;
  const double c = std::cos(o.yaw), sn = std::sin(o.yaw);
  const double vx = c * g.velocity.x() + sn * g.velocity.y(), vy = -sn * g.velocity.x() + c * g.velocity.y();
  o.speed = std::hypot(vx, vy);
  o.sideslip = o.speed > 0.1 ? std::atan2(vy, vx) : 0.0;
  if (o.speed > 0.1 && vx < 0) o.sideslip = std::atan2(-vy, -vx);
}

TruthDrive::TruthDrive(const VehicleScenario& sc, std::uint64_t seed)
    : sc_(sc), ws_(sc.truth->model), sim_(*sc.truth, sc.sensors, seed) {
  if (sc.production_bus) bus_.emplace(*sc.truth, *sc.production_bus);
  in_ = models::manoeuvre_inputs(sc.manoeuvre, *sc.truth, o_, driver_, 0, sc.dt);
  // The start pose is the model's reference point's: the truth's own sprung CG starts where its
  // body puts it when the model's reference point is there (a payload moved it by cg_x_m).
  auto start = sc.manoeuvre.start;
  const Eigen::Vector3d d = sc.model->params.cg_m - sc.truth->params.cg_m;
  start.x -= std::cos(start.yaw) * d.x() - std::sin(start.yaw) * d.y();
  start.y -= std::sin(start.yaw) * d.x() + std::cos(start.yaw) * d.y();
  s_ = models::start_vehicle(*sc.truth, ws_, start, in_);
  models::vehicle_outputs(*sc.truth, s_, o_);
  scored_ = o_;
  score_at_model_points(*sc.truth, *sc.model, s_, scored_);
  sim_.start(s_, in_);
}

void TruthDrive::advance(std::vector<Measurement>& out) {
  t_ += sc_.dt;
  in_ = models::manoeuvre_inputs(sc_.manoeuvre, *sc_.truth, o_, driver_, t_, sc_.dt);
  models::set_inputs(*sc_.truth, in_, s_);
  auto r = mb::step(sc_.truth->model, s_, ws_, sc_.dt);
  if (!r.converged)
    throw std::runtime_error("the truth vehicle failed to converge at t = " + std::to_string(t_) + " s");
  models::vehicle_outputs(*sc_.truth, s_, o_);
  scored_ = o_;
  score_at_model_points(*sc_.truth, *sc_.model, s_, scored_);
  const std::size_t first = out.size();
  sim_.sample(t_, s_, in_, out);
  if (bus_) {
    // the production bus carries neither Hall counts nor per-wheel inputs, but its own
    out.erase(std::remove_if(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                             [](const Measurement& m) { return replaced_by_production_bus(m.channel); }),
              out.end());
    bus_->sample(t_, s_, in_, o_.velocity_body.x(), out);
  }
}

json run_vehicle_experiment(const VehicleScenario& nominal, const RunOptions& opt) {
  VehicleScenario sc = realise_scenario(nominal, opt.seed);
  if (sc.model_is_truth) sc.model = sc.truth;
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
  // The scored quantities (vehicle_quantities.hpp), and the report they go to.
  std::vector<const VehicleQuantity*> q;
  std::vector<std::string> names, kinds;
  for (const auto& vq : vehicle_quantities())
    if (vq.scored) q.push_back(&vq), names.push_back(vq.name);
  for (auto kind : kSensorKindNames) kinds.emplace_back(kind);
  const auto& observed = sc.observer.settings.observed;
  ReportWriter report(names, sc.truth->model, sc.model->model, observed, kinds);
  // The validity outputs, each with its quantities in the order of its sigmas.
  const auto& vouts = validity_outputs();
  std::vector<std::vector<const VehicleQuantity*>> vq(vouts.size());
  for (std::size_t o = 0; o < vouts.size(); ++o)
    for (const auto& name : vouts[o].quantities) {
      const auto& all = vehicle_quantities();
      const auto it = std::find_if(all.begin(), all.end(), [&](const VehicleQuantity& x) { return x.name == name; });
      if (it == all.end()) throw std::logic_error("validity output " + vouts[o].name + ": no quantity " + name);
      vq[o].push_back(&*it);
    }
  std::vector<double> errors, sigmas;
  // NEES of each published 1-sigma: mean of (error / sigma)^2 over the scored steps (1 for an
  // honest sigma), for the quantities that have one in the record.
  std::vector<double> nees_sum(q.size(), 0.0);
  std::vector<long> nees_n(q.size(), 0);
  CalibrationScore calibration;  // the learned parameters against the scenario's truth
  mb::State physical = obs.state();
  Eigen::MatrixXd physical_P;
  std::vector<double>& obs_us = report.timing("observer_step");
  std::vector<double>& open_us = report.timing("open_loop_model_step");
  std::vector<Measurement> meas;
  meas.reserve(64);
  // GNSS outage and jump bookkeeping
  ErrorTrack track;
  double dist = 0, prev_x = truth.outputs().position.x(), prev_y = truth.outputs().position.y();
  long steps = 0;
  std::uint64_t gnss_position_rejected = 0;
  bool trace_started = false;

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
      const auto kind = static_cast<std::size_t>(est::VehicleObserver::kind_of(m));
      report.count_measurement(kind, r.accepted);
      if (!r.accepted && kind == static_cast<std::size_t>(SensorKind::gnss_position)) ++gnss_position_rejected;
      // one series per row: each wheel's innovations are tested for whiteness on their own (they
      // were one interleaved series of the four wheels while each wheel was a sensor of its own)
      report.innovations(std::string(kSensorKindNames[kind]) + "[" + std::to_string(m.row) + "]")
          .push_back(r.innovation);
    }
    const auto& to = truth.outputs();
    dist += std::hypot(to.position.x() - prev_x, to.position.y() - prev_y);
    prev_x = to.position.x(), prev_y = to.position.y();
    if (obs.started()) {
      track.err_t.emplace_back(
          t, std::hypot(obs.outputs().position.x() - to.position.x(), obs.outputs().position.y() - to.position.y()));
      track.dist_t.push_back(dist);
    }
    // The header at the observer's start, when its record says which parameters it estimates;
    // rows from there on (every step, before metrics_from too).
    if (opt.trace && !trace_started && obs.started()) {
      trace_started = true;
      *opt.trace << "t";
      for (const auto* qq : q)
        *opt.trace << "," << qq->name << "_truth," << qq->name << "_model," << qq->name << "_observer";
      *opt.trace << ",valid,std_x,std_y,std_yaw,std_vx,std_vy,std_sideslip_deg";
      for (const char* w : {"fl", "fr", "rl", "rr"}) *opt.trace << ",std_tyre_fy_" << w;
      for (const char* w : {"fl", "fr", "rl", "rr"}) *opt.trace << ",std_tyre_fx_" << w;
      // the learned parameters (those the observer estimates), then the step's fault bits
      for (std::size_t k = 0; k < kCalibrationCount; ++k)
        if (obs.estimate().calibration[k].estimated)
          *opt.trace << "," << kCalibrationNames[k] << "," << kCalibrationNames[k] << "_std";
      *opt.trace << ",faults,valid_position,valid_heading,valid_velocity,valid_virtual_sensors,inconsistent\n";
    }
    if (opt.trace && trace_started) {
      *opt.trace << t;
      for (const auto* qq : q)
        *opt.trace << "," << qq->value(*sc.truth, truth.state(), to) << ","
                   << qq->value(*sc.model, open.state(), open.outputs()) << ","
                   << qq->value(*sc.model, obs.state(), obs.outputs());
      *opt.trace << "," << rec.valid << "," << rec.std_x << "," << rec.std_y << "," << rec.std_yaw << "," << rec.std_vx
                 << "," << rec.std_vy << "," << rec.std_sideslip_deg;
      for (double sd : rec.std_tyre_fy) *opt.trace << "," << sd;
      for (double sd : rec.std_tyre_fx) *opt.trace << "," << sd;
      for (const auto& c : rec.calibration)
        if (c.estimated) *opt.trace << "," << c.value << "," << c.std;
      const auto& v = rec.validity;
      *opt.trace << "," << rec.faults << "," << v.position << "," << v.heading << "," << v.velocity << ","
                 << v.virtual_sensors << ",";
      unsigned inconsistent = 0;  // bit k: SensorKind k's innovations disagree with the model
      for (std::size_t k = 0; k < kSensorKindCount; ++k)
        if (!rec.sensors[k].timed_out && !rec.sensors[k].consistent) inconsistent |= 1u << k;
      *opt.trace << inconsistent << "\n";
    }
    if (t + 1e-12 < sc.metrics_from) continue;
    const double speed = to.speed;
    // Whether each output's own flag told the truth, started or not (false_valid.hpp).
    for (std::size_t o = 0; o < vouts.size(); ++o) {
      errors.clear();
      sigmas.clear();
      for (std::size_t k = 0; k < vq[o].size(); ++k) {
        const VehicleQuantity& qq = *vq[o][k];
        if (qq.moving_only && speed < sc.sideslip_min_speed) break;
        const double e = qq.value(*sc.model, obs.state(), obs.outputs()) - qq.value(*sc.truth, truth.state(), to);
        errors.push_back(qq.angle ? est::wrap_angle(e) : e);
        sigmas.push_back(vouts[o].sigma_of ? vouts[o].sigma_of(rec, k) : 0);
      }
      if (errors.size() == vq[o].size()) report.false_valid().add(o, vouts[o].flag_of(rec.validity), errors, sigmas);
    }
    report.false_valid().next_step();
    if (!obs.started() || !open.started()) continue;
    // Every step of the started filter, valid or not: a parameter's 1-sigma is the filter's
    // belief whether or not the outputs are trusted.
    calibration.add(rec.calibration, calibration_truth(sc, truth, to.velocity_body.x()));
    for (std::size_t i = 0; i < q.size(); ++i) {
      if (q[i]->moving_only && speed < sc.sideslip_min_speed) continue;
      const double tv = q[i]->value(*sc.truth, truth.state(), to);
      const double ov = q[i]->value(*sc.model, obs.state(), obs.outputs());
      const double mv = q[i]->value(*sc.model, open.state(), open.outputs());
      report.add_quantity(i, q[i]->angle ? est::wrap_angle(ov - tv) : ov - tv,
                          q[i]->angle ? est::wrap_angle(mv - tv) : mv - tv);
      const double sd = record_sigma(rec, *q[i]);
      if (sd > 0 && rec.valid) {
        const double e = (q[i]->angle ? est::wrap_angle(ov - tv) : ov - tv) / sd;
        nees_sum[i] += e * e;
        ++nees_n[i];
      }
    }
    obs.physical_kinematics(physical, physical_P);  // wheels as their sensors count them
    report.add_coordinates(truth.state(), physical, open.state(), physical_P);
  }

  const auto& c = obs.counters();
  json rep = report.write({.scenario = sc.file.filename().string(),
                           .filter = sc.observer.filter_type,
                           .seed = opt.seed,
                           .steps = steps,
                           .duration = sc.duration,
                           .dt = sc.dt,
                           .metrics_from = sc.metrics_from},
                          {{"resets", c.resets},
                           {"model_step_failures", c.model_step_failures},
                           {"correction_failures", c.correction_failures},
                           {"wheel_resets", c.wheel_resets},
                           {"wheel_scale_releases", c.wheel_scale_releases},
                           {"open_loop_resets", open.counters().resets},
                           {"open_loop_model_step_failures", open.counters().model_step_failures}});
  rep["distance_m"] = dist;
  for (std::size_t i = 0; i < q.size(); ++i)
    if (nees_n[i] > 0) rep["consistency"]["output_nees"][q[i]->name] = nees_sum[i] / static_cast<double>(nees_n[i]);
  auto per_step = [](const est::VehicleObserverCounters& k) {
    return k.steps ? static_cast<double>(k.newton_iterations) / static_cast<double>(k.steps) : 0.0;
  };
  rep["newton_iterations_mean"] = {{"observer", per_step(c)}, {"model", per_step(open.counters())}};
  if (!sc.perturb.empty()) rep["perturbation"] = sc.drawn;
  // what the observer learned by the end (self-calibration), as its estimates publish it
  for (std::size_t k = 0; k < kCalibrationCount; ++k) {
    const auto& cal = obs.estimate().calibration[k];
    if (cal.estimated)
      rep["calibration"][std::string(kCalibrationNames[k])] = {
          {"value", cal.value}, {"std", cal.std}, {"converged", cal.converged}};
  }
  if (rep.contains("calibration")) calibration.report(rep["calibration"]);
  for (auto [a, b] : sc.sensors.outages) rep["gnss_outages"].push_back(gnss_outage_report(track, a, b));
  for (const auto& j : sc.sensors.jumps)
    rep["gnss_jumps"].push_back(gnss_jump_report(track, j, gnss_position_rejected));
  return rep;
}

}  // namespace mbo::exp
