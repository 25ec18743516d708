// mbobserver-eval --truth TRUTH.csv --estimates EST.jsonl [--report OUT.json]
// Accuracy of a recorded run (mbobserverd --record) against the ground truth of
// mbobserver-sim, with the report keys of mbobserver-experiment.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/program.hpp"
#include "mbobserver/experiment/error_stats.hpp"
#include "mbobserver/experiment/false_valid.hpp"
#include "mbobserver/experiment/vehicle_quantities.hpp"

namespace {

using nlohmann::json;

double wrap(double a) { return std::remainder(a, 2 * M_PI); }

// The value at a path of object keys, or null when a key is missing or a level is no object.
const json* find_path(const json& j, const std::vector<std::string>& path) {
  const json* v = &j;
  for (const auto& k : path) {
    if (!v->is_object()) return nullptr;
    auto it = v->find(k);
    if (it == v->end()) return nullptr;
    v = &*it;
  }
  return v;
}

// The ground truth: one row of numbers per time step, a column per name; "t" first.
struct TruthTable {
  std::map<std::string, std::size_t> col;
  std::vector<std::vector<double>> rows;
  double dt = 0;
  // The row at time t (within a quarter step), or null.
  const std::vector<double>* at(double t) const {
    long i = std::lround((t - rows[0][0]) / dt);
    if (i < 0 || i >= static_cast<long>(rows.size()) || std::abs(rows[i][0] - t) > 0.25 * dt) return nullptr;
    return &rows[i];
  }
};

TruthTable read_truth(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw mbo::ConfigError(file + ": cannot open file");
  std::string line;
  std::getline(in, line);
  std::vector<std::string> head;
  {
    std::stringstream hs(line);
    for (std::string c; std::getline(hs, c, ',');) head.push_back(c);
  }
  if (head.empty() || head[0] != "t") throw mbo::ConfigError(file + ":1: not a truth CSV (first column must be t)");
  TruthTable truth;
  for (std::size_t i = 0; i < head.size(); ++i) truth.col[head[i]] = i;
  long lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    std::vector<double> r;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) {
      try {
        r.push_back(std::stod(c));
      } catch (const std::exception&) {
        throw mbo::ConfigError(file + ":" + std::to_string(lineno) + ": not a number: \"" + c + "\"");
      }
    }
    if (r.size() != head.size())
      throw mbo::ConfigError(file + ":" + std::to_string(lineno) + ": expected " + std::to_string(head.size()) +
                             " columns");
    truth.rows.push_back(std::move(r));
  }
  if (truth.rows.size() < 2) throw mbo::ConfigError(file + ": no data rows");
  truth.dt = truth.rows[1][0] - truth.rows[0][0];
  return truth;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Accuracy of recorded estimates against a ground truth", "mbobserver-eval"};
  mbo::CommonOptions common;
  mbo::add_common_options(app, common);
  std::string truth_file, est_file, report;
  double from = 0, to = std::numeric_limits<double>::infinity(), sideslip_min_speed = 5;
  app.add_option("--truth", truth_file, "ground truth CSV (mbobserver-sim --truth)")->required();
  app.add_option("--estimates", est_file, "estimates, JSON lines (mbobserverd --record)")->required();
  app.add_option("--report", report, "also write the report to this file");
  app.add_option("--metrics-from", from, "score estimates from this many seconds after the first")
      ->capture_default_str();
  app.add_option("--metrics-to", to, "score estimates up to this many seconds after the first (default: all)");
  app.add_option("--sideslip-min-speed", sideslip_min_speed, "score sideslip above this speed, m/s")
      ->capture_default_str();
  return mbo::run_program(app, argc, argv, common, [&] {
    if (!(to > from))
      throw mbo::ConfigError("--metrics-to " + std::to_string(to) + " must be after --metrics-from " +
                             std::to_string(from));
    const TruthTable truth = read_truth(truth_file);
    const auto& col = truth.col;
    // The scored quantities (vehicle_quantities.hpp), each against the truth column of its
    // name. A truth file may hold only what was measured (a reference system on a real car
    // gives position, velocity and sideslip, not tyre forces): quantities without a column are
    // not scored and are listed as such; only the time is required.
    if (!col.count("t") || col.at("t") != 0) throw mbo::ConfigError(truth_file + ":1: the first column must be \"t\"");
    std::vector<const mbo::exp::VehicleQuantity*> qs;
    std::vector<std::string> not_scored;
    for (const auto& q : mbo::exp::vehicle_quantities()) {
      if (!q.scored) continue;
      if (col.count(q.name))
        qs.push_back(&q);
      else
        not_scored.push_back(q.name);
    }
    if (qs.empty()) throw mbo::ConfigError(truth_file + ":1: no column of a scored quantity (x, y, yaw, vx, ...)");
    // sideslip is scored above a speed: the "speed" column, else the horizontal velocity
    const int c_speed = col.count("speed") ? col.at("speed") : -1;
    const int c_vx = col.count("vx") ? col.at("vx") : -1, c_vy = col.count("vy") ? col.at("vy") : -1;
    auto speed_of = [&](const std::vector<double>& r) {
      if (c_speed >= 0) return r[c_speed];
      if (c_vx >= 0 && c_vy >= 0) return std::hypot(r[c_vx], r[c_vy]);
      return std::numeric_limits<double>::infinity();
    };
    std::vector<mbo::exp::ErrorStats> st(qs.size());
    // The validity outputs (false_valid.hpp) whose quantities the truth has, each quantity with
    // its place in a record and its truth column.
    const auto& vouts = mbo::exp::validity_outputs();
    std::vector<std::vector<const mbo::exp::VehicleQuantity*>> vq(vouts.size());
    std::vector<bool> v_skip(vouts.size(), false);
    for (std::size_t o = 0; o < vouts.size(); ++o)
      for (const auto& name : vouts[o].quantities) {
        const mbo::exp::VehicleQuantity* found = nullptr;
        for (const auto& q : mbo::exp::vehicle_quantities())
          if (q.name == name) found = &q;
        if (!found || !col.count(name)) v_skip[o] = true;
        vq[o].push_back(found);
      }
    mbo::exp::FalseValidRate false_valid;
    std::vector<double> errors, sigmas;
    auto value_of = [](const json& e, const mbo::exp::VehicleQuantity& q) {
      const json* v = find_path(e, {q.estimate_group, q.estimate_key});
      if (v && q.wheel >= 0)
        v = v->is_array() && static_cast<std::size_t>(q.wheel) < v->size() ? &(*v)[q.wheel] : nullptr;
      return v && v->is_number() ? v->get<double>() : std::numeric_limits<double>::quiet_NaN();
    };
    // Whether each output's own flag told the truth on this record.
    auto score_validity = [&](const json& e, const std::vector<double>& tr) {
      for (std::size_t o = 0; o < vouts.size(); ++o) {
        if (v_skip[o]) continue;
        const json* flag = find_path(e, {"health", "validity", vouts[o].flag});
        // a recording older than the forces' own flag had them on virtual_sensors
        if (!flag && vouts[o].flag == "tyre_forces") flag = find_path(e, {"health", "validity", "virtual_sensors"});
        errors.clear();
        sigmas.clear();
        bool scored = true;
        for (std::size_t k = 0; k < vq[o].size(); ++k) {
          const auto& q = *vq[o][k];
          if (q.moving_only && speed_of(tr) < sideslip_min_speed) scored = false;
          const double err = value_of(e, q) - tr[col.at(q.name)];
          errors.push_back(q.angle ? wrap(err) : err);
          const json* s = vouts[o].has_sigma() ? find_path(e, {"std", vouts[o].sigma_keys[k]}) : nullptr;
          sigmas.push_back(s && s->is_number() ? s->get<double>() : std::numeric_limits<double>::quiet_NaN());
        }
        if (scored) false_valid.add(o, flag && flag->is_boolean() && flag->get<bool>(), errors, sigmas);
      }
      false_valid.next_step();
    };
    std::ifstream ein(est_file);
    if (!ein) throw mbo::ConfigError(est_file + ": cannot open file");
    long n = 0, matched = 0, valid = 0, bad = 0, after_from = 0;
    double t_first = NAN, t_last = NAN;
    for (std::string line; std::getline(ein, line);) {
      json e;
      try {
        e = json::parse(line);
      } catch (const std::exception&) {
        ++bad;
        continue;
      }
      // a line that is not an estimate record (wrong types, missing keys) is counted, not fatal
      const json* jt = e.is_object() ? find_path(e, {"t"}) : nullptr;
      const json* jv = e.is_object() ? find_path(e, {"health", "valid"}) : nullptr;
      if (!jt || !jt->is_number() || !jv || !jv->is_boolean()) {
        ++bad;
        continue;
      }
      ++n;
      const double t = jt->get<double>();
      if (std::isnan(t_first)) t_first = t;
      t_last = t;
      const bool record_valid = jv->get<bool>();
      valid += record_valid;
      if (t - t_first < from || t - t_first > to) continue;
      after_from += record_valid;  // valid estimates from --metrics-from to --metrics-to
      const auto* tr = truth.at(t);
      if (!tr) continue;
      score_validity(e, *tr);  // valid or not: a flag that is not set is never false
      if (!record_valid) continue;
      ++matched;
      for (std::size_t i = 0; i < qs.size(); ++i) {
        const auto& q = *qs[i];
        if (q.moving_only && speed_of(*tr) < sideslip_min_speed) continue;
        const double v = value_of(e, q);
        if (std::isnan(v)) continue;  // a record without this output (e.g. not started)
        st[i].add(q.angle ? wrap(v - (*tr)[col.at(q.name)]) : v - (*tr)[col.at(q.name)]);
      }
    }
    if (n == 0) throw mbo::ConfigError(est_file + ": no estimates");
    // Nothing scored is no accuracy: every RMSE would read 0. Say why instead.
    if (matched == 0) {
      auto num = [](double v) {
        char b[32];
        std::snprintf(b, sizeof b, "%.6f", v);
        return std::string(b);
      };
      std::string why;
      if (valid == 0)
        why = "none of its " + std::to_string(n) + " estimates is valid";
      else if (after_from == 0)
        why = "no valid estimate from --metrics-from " + num(from) + " s" +
              (std::isfinite(to) ? " to --metrics-to " + num(to) + " s" : std::string()) + " after the first (" +
              num(t_first) + ")";
      else
        why = "no valid estimate is at a time of the truth: estimates t " + num(t_first) + " .. " + num(t_last) +
              ", truth t " + num(truth.rows.front()[0]) + " .. " + num(truth.rows.back()[0]) + " every " +
              num(truth.dt) + " s (another clock or another drive?)";
      throw mbo::ConfigError(est_file + ": nothing to score: " + why);
    }
    json rep;
    rep["estimates"] = n;
    rep["valid"] = valid;
    rep["scored"] = matched;
    rep["bad_lines"] = bad;
    rep["not_scored"] = not_scored;
    for (std::size_t i = 0; i < qs.size(); ++i) {
      rep["rmse"]["observer"][qs[i]->name] = st[i].rmse();
      rep["max_abs"]["observer"][qs[i]->name] = st[i].max;
    }
    // every record with a truth row, valid or not, is a step of the false-valid rate
    rep["false_valid"] = false_valid.report(v_skip);
    std::string text = rep.dump(2);
    std::cout << text << "\n";
    if (!report.empty()) {
      std::ofstream f(report);
      if (!f) throw mbo::ConfigError(report + ": cannot write");
      f << text << "\n";
    }
    return 0;
  });
}
