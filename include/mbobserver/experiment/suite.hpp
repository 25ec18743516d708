// A suite of experiments: every scenario in a folder, each over N runs, scored in one table
// (mbobserver-experiment --suite; docs/interfaces.md "Suite report"). Per scenario and quantity
// the observer's RMSE, the open loop's, their ratio and the scenario's NEES; a cell where the
// observer is worse than the open loop (ratio > 1) is flagged.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mbo::exp {

struct SuiteOptions {
  std::filesystem::path dir;
  int runs = 1;
  std::uint64_t seed = 0;  // first seed of every scenario; 0: each scenario's own
  std::vector<std::string> only;  // scenario names (file stems) to run; empty: all
  double max_duration = 0;  // > 0: each scenario cut to at most this many seconds
  std::vector<std::string> quantities;  // the table's rows per scenario
  std::optional<nlohmann::json> observer_patch;  // merged into every vehicle scenario's observer
  // Each vehicle scenario also run with the observer's model the truth's car (the same seeds and
  // sensors): its RMSE is the noise floor, what these sensors allow the observer on a perfect
  // model. A cell is then worse beyond it when the observer is worse than the open loop and
  // than kFloorMargin times the floor.
  bool floor = false;
};

constexpr double kFloorMargin = 1.1;

// The quantities the table shows unless told otherwise.
const std::vector<std::string>& default_suite_quantities();

// The scenario files a suite runs, sorted by name; a ConfigError when none, or when `only`
// names one that is not there.
std::vector<std::filesystem::path> suite_scenarios(const SuiteOptions& options);

// Runs the suite; one progress line per scenario to `progress`. The report holds per scenario
// its aggregated experiment report ("report") and its table rows ("table"), and the counts of
// flagged cells.
nlohmann::json run_suite(const SuiteOptions& options, std::ostream& progress);

// Each estimated parameter's NEES over the suite (issue 18: "between 0.5 and 2 per state"): the
// mean of its scenarios' NEES (each already the mean over its runs), each scenario weighing
// alike, with how many scenarios scored it: {name: {"nees", "scenarios"}}. Scenarios whose
// truth is the file's and whose drive does not excite a parameter score it far below 1 (the
// prior's sigma is for the cars that differ); pooled, the suite's spread of truths is the
// population the sigma is judged against.
nlohmann::json pooled_parameter_nees(const nlohmann::json& suite);

// The table, as mbobserver-experiment prints it.
std::string suite_table(const nlohmann::json& suite);

}  // namespace mbo::exp
