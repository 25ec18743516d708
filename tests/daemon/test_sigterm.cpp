// SIGTERM (systemd's stop) during a paced replay: the daemon stops at once, cleanly: exit 0,
// the summary on stdout, every record it computed in the record file.
#include <csignal>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.hpp"

using namespace mbo::dtest;
using ::testing::HasSubstr;

TEST(Sigterm, DuringARealtimeReplayStopsCleanlyWithASummary) {
  const fs::path config = write_config(default_config(), "config");
  const fs::path record = temp_path("record.jsonl"), summary_file = temp_path("summary.json");
  const CandumpLog log = CandumpLog::read(drive_log());
  Child daemon(MBO_DAEMON,
               {"--config", config.string(), "--replay", drive_log().string(), "--rate", "realtime", "--record",
                record.string(), "--summary-json", summary_file.string(), "--no-progress"},
               "daemon");
  // Started when its first record is complete on disk (the record file is written by the
  // I/O thread as the estimator hands records over).
  ASSERT_TRUE(poll_until([&] { return slurp(record).find('\n') != std::string::npos || !daemon.running(); }));
  ASSERT_TRUE(daemon.running()) << daemon.wait().err;
  daemon.signal(SIGTERM);
  const Result r = daemon.wait();

  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("SIGTERM: stopping"));
  ASSERT_TRUE(json::accept(r.out)) << r.out;
  const json summary = json::parse(r.out);
  EXPECT_EQ(summary, read_json(summary_file));
  EXPECT_EQ(summary["run"]["mode"], "replay");
  EXPECT_EQ(summary["run"]["rate"], "realtime");
  // It stopped part way: the log is 8 s long and paced in real time.
  const auto steps = summary["steps"].get<std::size_t>();
  EXPECT_GT(steps, 0u);
  EXPECT_LT(summary["run"]["estimator_time_s"].get<double>(), log.t_end() - log.t0());
  // Every record it computed reached the file, each a whole line.
  EXPECT_EQ(summary["run"]["records_written"], steps);
  const auto lines = lines_of(record);
  ASSERT_EQ(lines.size(), steps);
  for (const auto& l : lines) ASSERT_TRUE(json::accept(l)) << l;
  EXPECT_EQ(slurp(record).back(), '\n');
}
