#include "mbobserver/experiment/suite.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/experiment/false_valid.hpp"
#include "mbobserver/experiment/runner.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"

namespace mbo::exp {

using nlohmann::json;

namespace {

// Units of the table's quantities, for its labels.
std::string unit_of(const std::string& q) {
  if (q == "x" || q == "y" || q == "z" || q.rfind("travel_", 0) == 0) return "m";
  if (q == "vx" || q == "vy") return "m/s";
  if (q == "yaw" || q == "pitch" || q == "roll" || q.rfind("wheel_angle_", 0) == 0) return "rad";
  if (q == "yaw_rate" || q.rfind("wheel_speed_", 0) == 0) return "rad/s";
  if (q == "sideslip_deg") return "deg";
  if (q.rfind("tyre_", 0) == 0) return "N";
  return "";
}

std::string number(double x) {
  char buf[32];
  if (!std::isfinite(x)) return "-";
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

// The table rows of one scenario's (aggregated) report.
// `floor`: the report of the same runs with the observer's model the truth's car, or null.
json table_rows(const json& rep, const std::vector<std::string>& quantities, const json& floor) {
  json rows = json::array();
  const auto& obs = rep.at("rmse").at("observer");
  const auto& open = rep.at("rmse").at("model");
  for (const auto& q : quantities) {
    if (!obs.contains(q) || !open.contains(q)) continue;
    const double o = obs.at(q).get<double>(), m = open.at(q).get<double>();
    const double ratio = m > 0 ? o / m : (o > 0 ? INFINITY : 1.0);
    json row = {{"quantity", q},
                {"observer", o},
                {"open_loop", m},
                {"ratio", std::isfinite(ratio) ? json(ratio) : json(nullptr)},
                {"worse", o > m}};
    if (!floor.is_null() && floor.at("rmse").at("observer").contains(q)) {
      const double f = floor["rmse"]["observer"][q].get<double>();
      row["floor"] = f;
      row["worse_beyond_floor"] = o > m && o > kFloorMargin * f;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// The estimated parameters' NEES, a row per scenario and a column per parameter that any
// scenario estimates against a truth (in kCalibrationNames' order); "" when none does.
std::string parameter_nees_table(const json& suite, std::size_t w) {
  std::vector<std::string> names;
  for (auto name : kCalibrationNames)
    for (const auto& s : suite["scenarios"])
      if (s.contains("parameter_nees") && s["parameter_nees"].contains(name)) {
        names.emplace_back(name);
        break;
      }
  if (names.empty()) return "";
  std::ostringstream out;
  char cell[64];
  out << "\n" << std::string(w, ' ').replace(0, 8, "scenario");
  for (const auto& n : names) std::snprintf(cell, sizeof cell, " %14s", n.c_str()), out << cell;
  out << "\n";
  long in = 0, all = 0;
  for (const auto& s : suite["scenarios"]) {
    out << s["scenario"].get<std::string>() << std::string(w - s["scenario"].get<std::string>().size(), ' ');
    for (const auto& n : names) {
      std::string v = "-";
      if (s.contains("parameter_nees") && s["parameter_nees"].contains(n)) {
        const double x = s["parameter_nees"][n].get<double>();
        const bool ok = x >= 0.5 && x <= 2;
        in += ok, ++all;
        v = number(x) + (ok ? "  " : " *");
      }
      std::snprintf(cell, sizeof cell, " %14s", v.c_str());
      out << cell;
    }
    out << "\n";
  }
  const json pooled = pooled_parameter_nees(suite);
  long pooled_in = 0;
  out << std::string(w, ' ').replace(0, 9, "the suite");
  for (const auto& n : names) {
    const double x = pooled[n]["nees"].get<double>();
    const bool ok = x >= 0.5 && x <= 2;
    pooled_in += ok;
    std::snprintf(cell, sizeof cell, " %14s", (number(x) + (ok ? "  " : " *")).c_str());
    out << cell;
  }
  out << "\n"
      << in << " of " << all
      << " parameter NEES within [0.5, 2] (issue 18); * outside; NEES: mean over the scored steps of "
         "(value - truth)^2 / std^2, mean over the runs\n"
      << pooled_in << " of " << names.size()
      << " parameters within [0.5, 2] over the suite (the row \"the suite\": the mean of their scenarios' NEES)\n";
  // what a calibration file would keep as learned while it is not
  std::string falsely;
  for (const auto& s : suite["scenarios"])
    if (s.contains("parameter_false_converged"))
      for (const auto& [name, x] : s["parameter_false_converged"].items())
        if (x.get<double>() > 0)
          falsely += " " + s["scenario"].get<std::string>() + " " + name + " " + number(100 * x.get<double>()) + " %;";
  out << "flagged converged while " << number(kFalseValidSigmas)
      << " sigma off (share of the scored steps):" << (falsely.empty() ? " none" : falsely) << "\n";
  return out.str();
}

}  // namespace

json pooled_parameter_nees(const json& suite) {
  json pooled = json::object();
  for (const auto& s : suite.at("scenarios")) {
    if (!s.contains("parameter_nees")) continue;
    for (const auto& [name, x] : s["parameter_nees"].items()) {
      auto& p = pooled[name];
      if (p.is_null()) p = {{"sum", 0.0}, {"scenarios", 0}};
      p["sum"] = p["sum"].get<double>() + x.get<double>();
      p["scenarios"] = p["scenarios"].get<int>() + 1;
    }
  }
  for (auto& [name, p] : pooled.items()) {
    p["nees"] = p["sum"].get<double>() / p["scenarios"].get<double>();
    p.erase("sum");
  }
  return pooled;
}

const std::vector<std::string>& default_suite_quantities() {
  static const std::vector<std::string> q = {
      "x", "y", "yaw", "vx", "vy", "sideslip_deg", "wheel_speed_fl", "tyre_fy_fl", "tyre_fz_fl"};
  return q;
}

std::vector<std::filesystem::path> suite_scenarios(const SuiteOptions& opt) {
  std::error_code ec;
  if (!std::filesystem::is_directory(opt.dir, ec)) throw ConfigError(opt.dir.string() + ": not a folder");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(opt.dir))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (!opt.only.empty()) {
    std::vector<std::filesystem::path> chosen;
    for (const auto& name : opt.only) {
      auto it = std::find_if(files.begin(), files.end(), [&](const auto& f) { return f.stem() == name; });
      if (it == files.end()) throw ConfigError(opt.dir.string() + ": no scenario " + name + ".json");
      chosen.push_back(*it);
    }
    files = chosen;
  }
  if (files.empty()) throw ConfigError(opt.dir.string() + ": no scenario (*.json) in the folder");
  return files;
}

json run_suite(const SuiteOptions& opt, std::ostream& progress) {
  const auto files = suite_scenarios(opt);
  // Load every scenario first: a bad file stops the suite before any run.
  struct Loaded {
    std::filesystem::path file;
    std::optional<VehicleScenario> vehicle;
    std::optional<Scenario> mechanism;
  };
  std::vector<Loaded> loaded;
  for (const auto& f : files) {
    Loaded l{f, std::nullopt, std::nullopt};
    if (is_vehicle_scenario(f)) {
      l.vehicle = load_vehicle_scenario(f, opt.observer_patch ? &*opt.observer_patch : nullptr);
      if (opt.max_duration > 0) l.vehicle->duration = std::min(l.vehicle->duration, opt.max_duration);
    } else {
      l.mechanism = load_scenario(f);
      if (opt.max_duration > 0) l.mechanism->duration = std::min(l.mechanism->duration, opt.max_duration);
    }
    loaded.push_back(std::move(l));
  }
  const auto& quantities = opt.quantities.empty() ? default_suite_quantities() : opt.quantities;
  json suite;
  suite["suite"] = opt.dir.string();
  suite["runs"] = opt.runs;
  suite["quantities"] = quantities;
  if (opt.observer_patch) suite["observer_patch"] = *opt.observer_patch;
  suite["scenarios"] = json::array();
  long flagged = 0, cells = 0, beyond_floor = 0;
  const auto t_suite = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    const auto& l = loaded[i];
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint64_t seed = opt.seed ? opt.seed : (l.vehicle ? l.vehicle->seed : l.mechanism->seed);
    // opt.runs runs over consecutive seeds, aggregated
    auto over_runs = [&](const auto& run_one) {
      std::vector<json> reports;
      for (int r = 0; r < opt.runs; ++r) {
        RunOptions ro;
        ro.seed = seed + static_cast<std::uint64_t>(r);
        reports.push_back(run_one(ro));
      }
      return opt.runs == 1 ? reports[0] : aggregate_reports(reports);
    };
    json rep = over_runs([&](const RunOptions& ro) {
      return l.vehicle ? run_vehicle_experiment(*l.vehicle, ro) : run_experiment(*l.mechanism, ro);
    });
    json floor;  // null unless asked for
    if (opt.floor && l.vehicle) {
      VehicleScenario matched = *l.vehicle;
      matched.model_is_truth = true;
      floor = over_runs([&](const RunOptions& ro) { return run_vehicle_experiment(matched, ro); });
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    json entry;
    entry["scenario"] = l.file.stem().string();
    entry["description"] = l.vehicle ? l.vehicle->description : l.mechanism->description;
    entry["first_seed"] = seed;
    entry["table"] = table_rows(rep, quantities, floor);
    for (const auto& row : entry["table"]) {
      ++cells;
      flagged += row["worse"].get<bool>();
      beyond_floor += row.value("worse_beyond_floor", false);
    }
    entry["nees"] = rep["consistency"]["nees_mean"];
    entry["nees_dof"] = rep["consistency"]["nees_dof"];
    entry["nees_consistent"] = rep["consistency"]["nees_consistent"];
    // The self-calibration's NEES per parameter (mean over the runs), where it has a truth.
    if (rep.contains("calibration"))
      for (const auto& [name, c] : rep["calibration"].items())
        if (c.contains("nees")) {
          entry["parameter_nees"][name] = c["nees"];
          entry["parameter_false_converged"][name] = c.value("false_converged", 0.0);
        }
    entry["wall_time_s"] = wall;
    entry["report"] = std::move(rep);
    suite["scenarios"].push_back(std::move(entry));
    char line[160];
    std::snprintf(line, sizeof line, "[%zu/%zu] %s: %d run%s in %.1f s\n", i + 1, loaded.size(),
                  l.file.stem().string().c_str(), opt.runs, opt.runs == 1 ? "" : "s", wall);
    progress << line << std::flush;
  }
  suite["cells"] = cells;
  suite["flagged"] = flagged;
  if (opt.floor) suite["flagged_beyond_floor"] = beyond_floor;
  suite["parameter_nees"] = pooled_parameter_nees(suite);
  suite["wall_time_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_suite).count();
  return suite;
}

std::string suite_table(const json& suite) {
  std::ostringstream out;
  std::size_t w = 8;
  for (const auto& s : suite["scenarios"]) w = std::max(w, s["scenario"].get<std::string>().size());
  char line[256];
  const bool floor = suite.contains("flagged_beyond_floor");
  std::snprintf(line, sizeof line, "%-*s  %-20s %11s %11s %8s %s %s\n", static_cast<int>(w), "scenario", "quantity",
                "observer", "open loop", "ratio", floor ? "      floor       " : "     ", "NEES (dof)");
  out << line;
  for (const auto& s : suite["scenarios"]) {
    bool first = true;
    for (const auto& row : s["table"]) {
      const std::string q = row["quantity"].get<std::string>();
      const std::string unit = unit_of(q);
      const std::string label = unit.empty() ? q : q + " (" + unit + ")";
      std::string nees;
      if (first) {
        nees = number(s["nees"].get<double>()) + " (" + std::to_string(s["nees_dof"].get<int>()) + ")";
        if (!s["nees_consistent"].get<bool>()) nees += " *";
      }
      const std::string ratio = row["ratio"].is_null() ? "-" : number(row["ratio"].get<double>());
      // with a floor: WORSE beyond it, "worse" within it (the sensors' own limit)
      std::string flag = row["worse"].get<bool>() ? " WORSE" : "      ";
      if (floor) {
        char f[32];
        std::snprintf(f, sizeof f, " %11s", row.contains("floor") ? number(row["floor"].get<double>()).c_str() : "-");
        flag = std::string(f) + (row.value("worse_beyond_floor", false) ? " WORSE"
                                 : row["worse"].get<bool>()             ? " worse"
                                                                        : "      ");
      }
      std::snprintf(line, sizeof line, "%-*s  %-20s %11s %11s %8s%s %s\n", static_cast<int>(w),
                    first ? s["scenario"].get<std::string>().c_str() : "", label.c_str(),
                    number(row["observer"].get<double>()).c_str(), number(row["open_loop"].get<double>()).c_str(),
                    ratio.c_str(), flag.c_str(), nees.c_str());
      out << line;
      first = false;
    }
  }
  out << suite["flagged"].get<long>() << " of " << suite["cells"].get<long>()
      << " cells flagged WORSE: the observer's RMSE above the open loop's (ratio > 1); * NEES outside its 95 % "
         "interval; "
      << suite["runs"].get<int>() << " run" << (suite["runs"].get<int>() == 1 ? "" : "s")
      << " per scenario (RMSE: mean over the runs)\n";
  if (floor)
    out << suite["flagged_beyond_floor"].get<long>()
        << " of them worse than the noise floor as well (WORSE; worse: within it): the floor is the observer's RMSE "
           "with the truth's own car as its model and the same sensors, times "
        << kFloorMargin << "\n";
  out << parameter_nees_table(suite, w);
  return out.str();
}

}  // namespace mbo::exp
