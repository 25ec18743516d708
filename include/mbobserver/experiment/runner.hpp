// The three-simulation experiment (Sinigaglia 2016 3.3.4): truth model, wrong model open loop, and
// the wrong model corrected by the observer, stepped together; sensors sample the truth with
// noise; the report scores observer and open-loop model against the truth.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mbobserver/experiment/scenario.hpp"

namespace mbo::exp {

struct RunOptions {
  std::uint64_t seed = 1;
  std::ostream* trace = nullptr;  // CSV of every step when not null
};

// One run; the report has the keys of docs/interfaces.md "Report".
nlohmann::json run_experiment(const Scenario& sc, const RunOptions& options);

// Several runs: every number is the mean, and "min" / "max" hold the extremes; booleans are
// true in the mean only when true in every run.
nlohmann::json aggregate_reports(const std::vector<nlohmann::json>& runs);

}  // namespace mbo::exp
