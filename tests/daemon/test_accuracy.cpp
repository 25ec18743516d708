// End to end accuracy: the simulated drive through the CAN log, the daemon and the scorer
// must agree with the in-process experiment on the same scenario. They share the truth model,
// the sensors' noise and the observer; what the CAN path adds is quantisation, the DBC
// round trip, the queues and the log's time stamps, which should cost next to nothing.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness.hpp"

using namespace mbo::dtest;

TEST(Accuracy, ReplayAgreesWithTheExperimentWithinTenPercent) {
  const Replay r = replay(write_config(default_config(), "config"), drive_log(), "drive");
  ASSERT_EQ(r.result.code, 0) << r.result.err;
  // the embedded default leaves the gyro's bias at an uncalibrated part's, and says so once
  EXPECT_NE(r.result.err.find("info: observer.imu.gyro_bias_std is 0.3 deg/s by default"), std::string::npos)
      << r.result.err;
  EXPECT_EQ(r.result.err.find("observer.gnss.latency_std"), std::string::npos) << r.result.err;  // it says 0

  const fs::path eval_report = temp_path("eval.json");
  const Result eval = run(MBO_EVAL,
                          {"--truth", drive_truth().string(), "--estimates", r.record.string(), "--metrics-from", "0.5",
                           "--report", eval_report.string()},
                          "eval");
  ASSERT_EQ(eval.code, 0) << eval.err;
  const json scored = read_json(eval_report);
  EXPECT_EQ(json::parse(eval.out), scored);  // the report on stdout is the file's
  EXPECT_EQ(scored["bad_lines"], 0);
  EXPECT_EQ(scored["estimates"], r.summary["run"]["records_written"]);
  // nearly every step from 0.5 s on is valid and has a truth row
  EXPECT_GT(scored["scored"].get<double>(), 0.9 * scored["estimates"].get<double>());

  const fs::path exp_report = temp_path("experiment.json");
  const Result exp = run(MBO_EXPERIMENT,
                         {(fs::path(MBO_SOURCE_DIR) / "scenarios" / "vehicle_double_lane_change.json").string(),
                          "--report", exp_report.string()},
                         "experiment");
  ASSERT_EQ(exp.code, 0) << exp.err;
  const json reference = read_json(exp_report);

  // One definition of the scored quantities (vehicle_quantities.hpp): the experiment scores
  // each, the scorer scores each that the simulated truth has a column for, and lists the rest.
  std::vector<std::string> in_experiment, in_eval;
  for (const auto& [q, v] : reference["rmse"]["observer"].items()) in_experiment.push_back(q);
  for (const auto& [q, v] : scored["rmse"]["observer"].items()) in_eval.push_back(q);
  for (const auto& q : scored["not_scored"]) in_eval.push_back(q.get<std::string>());
  std::sort(in_eval.begin(), in_eval.end());
  EXPECT_EQ(in_experiment, in_eval);
  // inputs, and the radius the counts imply: not in the truth CSV
  EXPECT_EQ(scored["not_scored"], json::array({"friction", "mass", "rolling_radius_fl", "rolling_radius_fr",
                                               "rolling_radius_rl", "rolling_radius_rr"}));
  for (const char* q : {"x", "y", "vx", "vy", "yaw_rate", "sideslip_deg"}) {
    const double daemon = scored["rmse"]["observer"][q].get<double>();
    const double experiment = reference["rmse"]["observer"][q].get<double>();
    ASSERT_TRUE(std::isfinite(daemon) && experiment > 0) << q;
    EXPECT_NEAR(daemon, experiment, 0.1 * experiment)
        << q << ": RMSE through CAN and the daemon " << daemon << ", in the experiment " << experiment;
  }
}

// A real car's reference system gives a few columns (position, velocity), not tyre forces; a
// record file may hold damaged lines. The scorer scores what it has, lists what it cannot,
// counts what it cannot read, and matches the full scoring on the columns it keeps.
TEST(Accuracy, EvalScoresTheTruthColumnsPresentAndCountsDamagedRecords) {
  const Replay r = replay(write_config(default_config(), "config"), drive_log(), "drive");
  ASSERT_EQ(r.result.code, 0) << r.result.err;
  // truth with t, x, y, vx, vy, sideslip only
  const auto truth = lines_of(drive_truth());
  ASSERT_GT(truth.size(), 2u);
  std::vector<std::string> head;
  {
    std::stringstream ls(truth[0]);
    for (std::string c; std::getline(ls, c, ',');) head.push_back(c);
  }
  const std::vector<std::string> keep = {"t",  "x",  "y",
                                         "vx", "vy", "sideslip_deg"};  // no "speed": sideslip gated on |v|
  std::string partial;
  for (const auto& line : truth) {
    std::stringstream ls(line);
    std::vector<std::string> cells;
    for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
    std::string out;
    for (const auto& k : keep) {
      const auto i = static_cast<std::size_t>(std::find(head.begin(), head.end(), k) - head.begin());
      ASSERT_LT(i, cells.size()) << k;
      out += (out.empty() ? "" : ",") + cells[i];
    }
    partial += out + "\n";
  }
  const fs::path partial_truth = temp_path("partial_truth.csv");
  write_file(partial_truth, partial);
  // three damaged records: not JSON, no time, a time that is a string
  std::string records = slurp(r.record);
  records += "{not json\n{\"health\": {\"valid\": true}}\n{\"t\": \"soon\", \"health\": {\"valid\": true}}\n";
  const fs::path damaged = temp_path("damaged.jsonl");
  write_file(damaged, records);

  const Result full = run(
      MBO_EVAL, {"--truth", drive_truth().string(), "--estimates", r.record.string(), "--metrics-from", "0.5"}, "full");
  const Result part = run(
      MBO_EVAL, {"--truth", partial_truth.string(), "--estimates", damaged.string(), "--metrics-from", "0.5"}, "part");
  ASSERT_EQ(full.code, 0) << full.err;
  ASSERT_EQ(part.code, 0) << part.err;
  const json f = json::parse(full.out), p = json::parse(part.out);
  EXPECT_EQ(p["bad_lines"], 3);
  EXPECT_EQ(p["estimates"], f["estimates"]);
  for (const char* q : {"x", "y", "vx", "vy", "sideslip_deg"})
    EXPECT_EQ(p["rmse"]["observer"][q], f["rmse"]["observer"][q]) << q;
  EXPECT_FALSE(p["rmse"]["observer"].contains("tyre_fz_fl"));
  const auto& ns = p["not_scored"];
  EXPECT_NE(std::find(ns.begin(), ns.end(), "tyre_fz_fl"), ns.end());
  EXPECT_EQ(std::find(ns.begin(), ns.end(), "x"), ns.end());

  // A recording from before the tyre forces had their own flag scores them on virtual_sensors,
  // as its writer meant: the same as a recording whose tyre_forces is virtual_sensors.
  std::string old_style, as_virtual;
  for (const auto& line : lines_of(r.record)) {
    json e = json::parse(line);
    auto& v = e["health"]["validity"];
    ASSERT_TRUE(v.contains("tyre_forces"));
    v.erase("tyre_forces");
    old_style += e.dump() + "\n";
    v["tyre_forces"] = v["virtual_sensors"];
    as_virtual += e.dump() + "\n";
  }
  const fs::path old_file = temp_path("old_style.jsonl"), virtual_file = temp_path("as_virtual.jsonl");
  write_file(old_file, old_style);
  write_file(virtual_file, as_virtual);
  const Result o = run(MBO_EVAL, {"--truth", drive_truth().string(), "--estimates", old_file.string()}, "old_style");
  const Result a = run(MBO_EVAL, {"--truth", drive_truth().string(), "--estimates", virtual_file.string()}, "virtual");
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_EQ(a.code, 0) << a.err;
  const json jo = json::parse(o.out), ja = json::parse(a.out);
  EXPECT_GT(ja["false_valid"]["valid_share"]["tyre_fx"].get<double>(), 0.5);
  EXPECT_EQ(jo["false_valid"]["valid_share"], ja["false_valid"]["valid_share"]);
  EXPECT_EQ(jo["false_valid"]["rate"], ja["false_valid"]["rate"]);
}

// Nothing to score is an error that says why, not a report of zero errors (issue 20).
TEST(Accuracy, EvalWithNothingToScoreExitsTwoSayingWhy) {
  const fs::path truth = temp_path("shifted_truth.csv");
  {
    std::ifstream in(drive_truth());
    std::ofstream out(truth);
    std::string line;
    std::getline(in, line);
    out << line << "\n";
    // the same truth an hour later: no estimate of the drive falls on one of its rows
    while (std::getline(in, line)) {
      const auto comma = line.find(',');
      char t[32];
      std::snprintf(t, sizeof t, "%.6f", std::stod(line.substr(0, comma)) + 3600);
      out << t << line.substr(comma) << "\n";
    }
  }
  const Replay r = replay(write_config(default_config(), "config_nothing"), drive_log(), "drive_nothing");
  ASSERT_EQ(r.result.code, 0) << r.result.err;
  const Result eval = run(MBO_EVAL, {"--truth", truth.string(), "--estimates", r.record.string()}, "eval_nothing");
  EXPECT_EQ(eval.code, 2);
  EXPECT_EQ(std::count(eval.err.begin(), eval.err.end(), '\n'), 1) << eval.err;
  EXPECT_NE(eval.err.find("nothing to score: no valid estimate is at a time of the truth"), std::string::npos)
      << eval.err;
  EXPECT_TRUE(eval.out.empty()) << eval.out;
}
