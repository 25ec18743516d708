// The daemon's summary at exit (--summary-json and stdout; docs/interfaces.md "Summary",
// docs/summary.schema.json): its final status record (status_record.hpp), written by the same
// writer, plus this "run" section of what only the run as a whole has.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mbo::runtime {

struct RunSummary {
  bool replay = false;
  // replay only
  std::string log;  // the log file
  std::string rate;  // --rate: "realtime", "max" or the factor
  std::uint64_t log_lines = 0;
  std::vector<std::string> log_problems_first;  // the first 10: "<message> (line <n>)"

  double wall_time_s = 0;  // from the start of the I/O loop to the end of every thread
  double estimator_time_s = 0;  // steps * step_s
  double steps_per_s = 0, frames_per_s = 0, real_time_factor = 0;  // per wall second
  // The clock of latency_us.frame_to_step: "log" at --rate max (the reader runs ahead of the
  // steps), else "wall".
  std::string frame_to_step_clock = "wall";
  // CLOCK_MONOTONIC starts of the first DeadlineMisses::kKeptStarts miss episodes, s (the
  // clock of journalctl -o short-monotonic).
  std::vector<double> deadline_miss_episodes_first_at_monotonic_s;
  double valid_fraction = 0;  // valid_steps / steps
  std::uint64_t records_written = 0;  // lines in the --record file
  double max_rss_mb = 0;  // getrusage(2) ru_maxrss
};

}  // namespace mbo::runtime
