// mbobserver-experiment SCENARIO.json [--report OUT.json] [--trace OUT.csv] [--seed N] [--runs N]
// The three-simulation experiment (docs/interfaces.md); the JSON report goes to stdout.
#include <fstream>
#include <iostream>
#include <optional>

#include "mbobserver/core/program.hpp"
#include "mbobserver/experiment/runner.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Three-simulation experiment: truth model, wrong model open loop, wrong model + observer",
               "mbobserver-experiment"};
  mbo::CommonOptions common;
  mbo::add_common_options(app, common);
  std::string scenario, report, trace, filter;
  std::uint64_t seed = 0;
  int runs = 1;
  app.add_option("scenario", scenario, "scenario file (JSON)")->required();
  app.add_option("--report", report, "also write the report to this file");
  app.add_option("--trace", trace, "CSV of every step (first run)");
  app.add_option("--seed", seed, "first noise seed (default: the scenario's)");
  app.add_option("--runs", runs, "runs over consecutive seeds; numbers are means, with min and max")
      ->check(CLI::Range(1, 100000));
  app.add_option("--filter", filter, "override the scenario's filter type")
      ->check(CLI::IsMember({"errorEKF", "errorEKF-FE"}));
  return mbo::run_program(app, argc, argv, common, [&] {
    // Mechanism scenarios name a truth and a model file; vehicle scenarios say "kind": "vehicle".
    const bool vehicle = mbo::exp::is_vehicle_scenario(scenario);
    std::optional<mbo::exp::Scenario> sc;
    std::optional<mbo::exp::VehicleScenario> vsc;
    if (vehicle) {
      vsc = mbo::exp::load_vehicle_scenario(scenario);
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
