// A replay's --record file is a function of the log and the configuration only (docs/interfaces.md,
// `--record`: byte-identical for the same log): not of thread interleaving, of how full the
// queues run, nor of the pace of the replay.
#include <gtest/gtest.h>

#include "harness.hpp"

using namespace mbo::dtest;

namespace {

void expect_clean_exit(const Replay& r) {
  EXPECT_EQ(r.result.code, 0) << r.result.err;
  ASSERT_TRUE(r.summary.is_object()) << "no --summary-json written\n" << r.result.err;
  // every step reached the record file
  EXPECT_EQ(r.summary["run"]["records_written"], r.summary["steps"]);
  EXPECT_EQ(lines_of(r.record).size(), r.summary["steps"].get<std::size_t>());
}

}  // namespace

// Three seconds: into the lane change, and well past the point where the reader fills the
// measurement queue and starts waiting for the estimator (the whole 8 s would double the
// cost under the sanitizers and add nothing).
TEST(Determinism, TwoMaxRateReplaysAreByteIdentical) {
  const fs::path config = write_config(default_config(), "config");
  const fs::path log = CandumpLog::read(drive_log()).first_seconds(3.0).write("piece");
  const Replay a = replay(config, log, "first");
  const Replay b = replay(config, log, "second");
  expect_clean_exit(a);
  expect_clean_exit(b);
  EXPECT_GE(a.summary["steps"].get<int>(), 1500);  // 2 ms steps from the first frame to the last
  EXPECT_EQ(a.summary["queues"]["measurements"]["high_water"], a.summary["queues"]["measurements"]["capacity"]);
  const std::string first = a.record_bytes(), second = b.record_bytes();
  ASSERT_FALSE(first.empty());
  EXPECT_TRUE(first == second) << first_difference(first, second);
}

// During a replay the reader waits on a full measurement queue; the smallest queue allowed
// holds fewer measurements than the frames of one step (about 35): no deadlock, same bytes.
TEST(TinyQueue, MeasurementQueueOfTheMinimumSizeGivesTheSameBytes) {
  const fs::path log = CandumpLog::read(drive_log()).first_seconds(2.0).write("piece");
  json tiny = default_config();
  tiny["runtime"]["queue_capacity"] = 16;
  const Replay normal = replay(write_config(default_config(), "normal"), log, "normal");
  const Replay small = replay(write_config(tiny, "tiny"), log, "tiny");
  expect_clean_exit(normal);
  expect_clean_exit(small);
  EXPECT_EQ(small.summary["queues"]["measurements"]["overflows"], 0);
  const std::string a = normal.record_bytes(), b = small.record_bytes();
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << first_difference(a, b);
}

// At --rate max the estimator outruns the I/O thread that writes the records; a replay must
// wait for it rather than drop records. (Whether a daemon that drops would drop here depends
// on scheduling; over a few seconds of log it practically always does.)
TEST(TinyQueue, EstimateQueueOfTheMinimumSizeLosesNoRecord) {
  const fs::path log = CandumpLog::read(drive_log()).first_seconds(4.0).write("piece");
  json tiny = default_config();
  tiny["runtime"]["estimate_queue_capacity"] = 2;
  const Replay r = replay(write_config(tiny, "tiny"), log, "tiny");
  expect_clean_exit(r);
  EXPECT_EQ(r.summary["queues"]["estimates"]["overflows"], 0);
}

// A paced replay hands frames over at their log time and the estimator waits for the wall
// clock, yet each step must see exactly the frames of its instant, as at --rate max. Real
// time, because the daemon must be able to keep up for the pacing to matter (under the
// sanitizers it manages little more).
TEST(Determinism, PacedReplayGivesTheBytesOfMaxRate) {
  const fs::path config = write_config(default_config(), "config");
  const std::vector<std::string> half_a_second = {"--stop-after", "0.5"};
  const Replay fast = replay(config, drive_log(), "max", half_a_second, "max");
  const Replay paced = replay(config, drive_log(), "paced", half_a_second, "realtime");
  expect_clean_exit(fast);
  expect_clean_exit(paced);
  EXPECT_EQ(fast.summary["run"]["rate"], "max");
  EXPECT_EQ(paced.summary["run"]["rate"], "realtime");
  EXPECT_NEAR(paced.summary["steps"].get<double>(), 251, 1);  // t0 .. t0 + 0.5 s at 2 ms
  // It was paced: half a second of log cannot take less than about half a second.
  EXPECT_GT(paced.summary["run"]["wall_time_s"].get<double>(), 0.4);
  const std::string a = fast.record_bytes(), b = paced.record_bytes();
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << first_difference(a, b);
}

// A frame whose timestamp goes backwards behind a frame that gives no sample (an unknown id):
// nothing in the queue stops a step from running before the late frame is read, so the daemon
// takes such a frame at the latest time read. Paced or not, the same bytes.
TEST(Determinism, FramesGoingBackwardsBehindAnUnknownIdGiveTheSameBytesPacedAndAtMax) {
  const CandumpLog piece = CandumpLog::read(drive_log()).first_seconds(0.6);
  CandumpLog log;
  for (std::size_t k = 0; k < piece.lines.size(); ++k) {
    if (k > 0 && k % 7 == 0) {
      char ahead[64];
      std::snprintf(ahead, sizeof ahead, "(%.6f) can0 7E5#00", frame_time(piece.lines[k]) + 0.003);
      log.lines.emplace_back(ahead);
    }
    log.lines.push_back(piece.lines[k]);
  }
  const fs::path file = log.write("backwards");
  const fs::path config = write_config(default_config(), "config");
  const std::vector<std::string> part = {"--stop-after", "0.4"};
  const Replay fast = replay(config, file, "max", part, "max");
  const Replay paced = replay(config, file, "paced", part, "realtime");
  expect_clean_exit(fast);
  expect_clean_exit(paced);
  EXPECT_GT(fast.summary["frames"]["timestamp_backwards"].get<int>(), 100);
  EXPECT_GT(fast.summary["frames"]["unknown"].get<int>(), 100);
  const std::string a = fast.record_bytes(), b = paced.record_bytes();
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << first_difference(a, b);
}

// mbobserver-sim with every error model of issue 17 switched on (a perturbed truth, IMU biases
// and their drift, scale factors, cross-axis sensitivity, a time-correlated GNSS error with
// latency varying fix to fix and multipath, tooth spacing, the sensors' clocks and latencies, receive jitter and
// dropped frames): the same seed gives the same bus log and truth byte for byte, another seed
// another car and another bus; the daemon reads the jittered log without a complaint.
TEST(Determinism, SimulatorWithEveryErrorModelIsAFunctionOfTheSeed) {
  json sc = read_json(std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_mixed_combined.json");
  for (auto k : {"truth", "model"}) sc[k]["vehicle"] = std::string(MBO_SOURCE_DIR) + "/config/vehicles/sedan.json";
  sc["duration"] = 3;
  auto& s = sc["sensors"];
  s["imu"]["gyro"]["bias_instability"] = 1e-4;
  s["imu"]["gyro"]["scale_factor"] = {0.01, 0.0, -0.01};
  s["imu"]["accel"]["cross_axis"] = {0.01, 0, 0, 0, 0, 0.01};
  s["imu"]["clock_ppm"] = 150;
  s["gnss"]["position_correlation_s"] = 20;
  s["gnss"]["latency_s"] = 0.05;
  s["gnss"]["latency_jitter_s"] = 0.03;
  s["gnss"]["multipath"] = {{"rate_per_min", 30}, {"size_m", 3}, {"duration_s", 1}};
  s["wheels"]["tooth_error_std"] = 0.02;
  s["wheels"]["latency_s"] = 0.01;
  s["can"] = {{"jitter_s", 0.0005}, {"drop_probability", 0.02}};
  sc["perturb"]["yaw_inertia"] = {{"normal", {1.0, 0.1}}};
  const fs::path scenario = temp_path("all_errors.json");
  write_file(scenario, sc.dump(2));
  const fs::path config = write_config(default_config(), "config");
  // (temp_path removes what is there: each path is made once)
  const fs::path log_a = temp_path("a.log");
  auto sim = [&](const std::string& seed, const std::string& tag) {
    const fs::path log = tag == "a" ? log_a : temp_path(tag + ".log"), truth = temp_path(tag + ".csv");
    const Result r = run(MBO_SIM,
                         {scenario.string(), "--config", config.string(), "--candump", log.string(), "--truth",
                          truth.string(), "--seed", seed},
                         tag);
    EXPECT_EQ(r.code, 0) << r.err;
    return std::make_pair(slurp(log), slurp(truth));
  };
  const auto a = sim("7", "a"), b = sim("7", "b"), c = sim("8", "c");
  ASSERT_GT(a.first.size(), 10000u);
  EXPECT_TRUE(a.first == b.first) << first_difference(a.first, b.first);
  EXPECT_TRUE(a.second == b.second) << first_difference(a.second, b.second);
  EXPECT_NE(a.first, c.first);
  EXPECT_NE(a.second, c.second);  // another yaw inertia drawn
  // the jittered frames are stamped in the order they arrive, microseconds apart
  const CandumpLog log = CandumpLog::read(log_a);
  for (std::size_t i = 1; i < log.lines.size(); ++i)
    ASSERT_GE(frame_time(log.lines[i]), frame_time(log.lines[i - 1])) << "line " << i + 1;
  const Replay r = replay(config, log_a, "replay");
  EXPECT_EQ(r.result.code, 0) << r.result.err;
  EXPECT_EQ(r.summary["frames"]["timestamp_backwards"], 0);
  EXPECT_EQ(r.summary["frames"]["bad_log_lines"], 0);
  EXPECT_EQ(r.summary["frames"]["decoded"], r.summary["frames"]["received"]);

  // fixes stamped at their epoch are the experiment's: a CAN log's stamps are arrivals
  s["gnss"]["stamp"] = "fix_time";
  const fs::path fix_time = temp_path("fix_time.json");
  write_file(fix_time, sc.dump(2));
  const Result refused = run(MBO_SIM,
                             {fix_time.string(), "--config", config.string(), "--candump", temp_path("f.log").string(),
                              "--truth", temp_path("f.csv").string()},
                             "fix_time");
  EXPECT_NE(refused.code, 0);
  EXPECT_NE(refused.err.find("fix_time.json: /sensors/gnss/stamp: \"fix_time\" cannot go into a CAN log"),
            std::string::npos)
      << refused.err;
}
