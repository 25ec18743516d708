// mbobserver-experiment SCENARIO.json [--report OUT.json] [--trace OUT.csv] [--seed N] [--runs N]
// mbobserver-experiment --suite DIR [--runs N] [--report OUT.json] [--only NAME ...]
// The three-simulation experiment (docs/interfaces.md); the JSON report goes to stdout. A suite
// runs every scenario in DIR and prints one table (suite.hpp); its JSON goes to --report.
#include <fstream>
#include <iostream>
#include <optional>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/program.hpp"
#include "mbobserver/experiment/runner.hpp"
#include "mbobserver/experiment/suite.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Three-simulation experiment: truth model, wrong model open loop, wrong model + observer",
               "mbobserver-experiment"};
  mbo::CommonOptions common;
  mbo::add_common_options(app, common);
  std::string scenario, report, trace, filter, suite, observer_patch;
  std::uint64_t seed = 0;
  int runs = 1;
  std::vector<std::string> only, quantities;
  double max_duration = 0;
  bool floor = false;
  auto* scenario_opt = app.add_option("scenario", scenario, "scenario file (JSON)");
  auto* suite_opt = app.add_option("--suite", suite,
                                   "run every scenario (*.json) in this folder and print one table: per scenario and "
                                   "quantity the observer's and the open loop's RMSE, their ratio and the NEES, "
                                   "cells where the observer is worse flagged");
  scenario_opt->excludes(suite_opt);
  app.add_option("--only", only, "with --suite: only these scenarios (file names without .json)")->needs(suite_opt);
  app.add_option(
         "--quantities", quantities,
         "with --suite: the table's quantities (default: " +
             [] {
               std::string d;
               for (const auto& q : mbo::exp::default_suite_quantities()) d += (d.empty() ? "" : " ") + q;
               return d;
             }() +
             ")")
      ->needs(suite_opt);
  app.add_option("--max-duration", max_duration, "with --suite: cut every scenario to at most this many seconds")
      ->check(CLI::PositiveNumber)
      ->needs(suite_opt);
  app.add_flag("--floor", floor,
               "with --suite: also run each vehicle scenario with the truth's own car as the observer's model; "
               "its RMSE is the noise floor, and a cell is WORSE only beyond it")
      ->needs(suite_opt);
  app.add_option("--observer-patch", observer_patch,
                 "a JSON merge patch (RFC 7396) applied to every vehicle scenario's observer block "
                 "(e.g. scenarios/patches/self_calibration.json)");
  app.add_option("--report", report, "also write the report to this file");
  app.add_option("--trace", trace, "CSV of every step (first run)");
  app.add_option("--seed", seed, "first noise seed (default: the scenario's)");
  app.add_option("--runs", runs, "runs over consecutive seeds; numbers are means, with min and max")
      ->check(CLI::Range(1, 100000));
  app.add_option("--filter", filter, "override the scenario's filter type")
      ->check(CLI::IsMember({"errorEKF", "errorEKF-FE"}));
  return mbo::run_program(app, argc, argv, common, [&] {
    std::optional<nlohmann::json> patch;
    if (!observer_patch.empty()) {
      patch = mbo::load_json_file(observer_patch);
      if (!patch->is_object()) throw mbo::ConfigError(observer_patch + ": an observer patch is a JSON object");
    }
    if (!suite.empty()) {
      if (!trace.empty() || !filter.empty())
        throw mbo::ConfigError("--suite takes no --trace or --filter (see --help)");
      mbo::exp::SuiteOptions so;
      so.dir = suite;
      so.runs = runs;
      so.seed = seed;
      so.only = only;
      so.max_duration = max_duration;
      so.quantities = quantities;
      so.observer_patch = patch;
      so.floor = floor;
      const auto result = mbo::exp::run_suite(so, std::cerr);
      std::cout << mbo::exp::suite_table(result) << std::flush;
      std::cerr << "suite: " << result["scenarios"].size() << " scenarios x " << runs << " runs in "
                << result["wall_time_s"].get<double>() << " s\n";
      if (!report.empty()) {
        std::ofstream f(report);
        if (!f) throw mbo::ConfigError(report + ": cannot write");
        f << result.dump(2) << "\n";
      }
      return 0;
    }
    if (scenario.empty()) throw mbo::ConfigError("a scenario file or --suite DIR is required (see --help)");
    // Mechanism scenarios name a truth and a model file; vehicle scenarios say "kind": "vehicle".
    const bool vehicle = mbo::exp::is_vehicle_scenario(scenario);
    std::optional<mbo::exp::Scenario> sc;
    std::optional<mbo::exp::VehicleScenario> vsc;
    if (vehicle) {
      vsc = mbo::exp::load_vehicle_scenario(scenario, patch ? &*patch : nullptr);
      if (!filter.empty()) {
        if (filter == "errorEKF-FE" && vsc->observer.settings.filter.initial_std_a.empty())
          throw mbo::ConfigError(scenario + ": /observer/filter: errorEKF-FE needs a \"force_error\" block");
        vsc->observer.filter_type = filter;
        vsc->observer.settings.filter.force_error = filter == "errorEKF-FE";
      }
      if (seed == 0) seed = vsc->seed;
    } else {
      sc = mbo::exp::load_scenario(scenario);
      if (!filter.empty()) sc->filter_type = filter;
      if (seed == 0) seed = sc->seed;
    }
    std::ofstream trace_file;
    if (!trace.empty()) {
      trace_file.open(trace);
      if (!trace_file) throw mbo::ConfigError(trace + ": cannot write");
      // positions are hundreds of metres from the origin: 6 digits would be centimetres
      trace_file.precision(12);
    }
    std::vector<nlohmann::json> reports;
    for (int r = 0; r < runs; ++r) {
      mbo::exp::RunOptions opt;
      opt.seed = seed + r;
      opt.trace = (r == 0 && trace_file.is_open()) ? &trace_file : nullptr;
      reports.push_back(vehicle ? mbo::exp::run_vehicle_experiment(*vsc, opt) : mbo::exp::run_experiment(*sc, opt));
      if (runs > 3) std::cerr << "\rrun " << r + 1 << "/" << runs << std::flush;
    }
    if (runs > 3) std::cerr << "\n";
    nlohmann::json out = runs == 1 ? reports[0] : mbo::exp::aggregate_reports(reports);
    std::string text = out.dump(2);
    std::cout << text << "\n";
    if (!report.empty()) {
      std::ofstream f(report);
      if (!f) throw mbo::ConfigError(report + ": cannot write");
      f << text << "\n";
    }
    return 0;
  });
}
