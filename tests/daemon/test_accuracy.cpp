// End to end accuracy: the simulated drive through the CAN log, the daemon and the scorer
// must agree with the in-process experiment on the same scenario. They share the truth model,
// the sensors' noise and the observer; what the CAN path adds is quantisation, the DBC
// round trip, the queues and the log's time stamps, which should cost next to nothing.
#include <cmath>

#include <gtest/gtest.h>

#include "harness.hpp"

using namespace mbo::dtest;

TEST(Accuracy, ReplayAgreesWithTheExperimentWithinTenPercent) {
  const Replay r = replay(write_config(default_config(), "config"), drive_log(), "drive");
  ASSERT_EQ(r.result.code, 0) << r.result.err;

  const fs::path eval_report = temp_path("eval.json");
  const Result eval = run(MBO_EVAL, {"--truth", drive_truth().string(), "--estimates", r.record.string(),
                                     "--metrics-from", "0.5", "--report", eval_report.string()},
                          "eval");
  ASSERT_EQ(eval.code, 0) << eval.err;
  const json scored = read_json(eval_report);
  EXPECT_EQ(json::parse(eval.out), scored);  // the report on stdout is the file's
  EXPECT_EQ(scored["bad_lines"], 0);
  EXPECT_EQ(scored["estimates"], r.summary["records_written"]);
  // nearly every step from 0.5 s on is valid and has a truth row
  EXPECT_GT(scored["scored"].get<double>(), 0.9 * scored["estimates"].get<double>());

  const fs::path exp_report = temp_path("experiment.json");
  const Result exp = run(MBO_EXPERIMENT,
                         {(fs::path(MBO_SOURCE_DIR) / "scenarios" / "vehicle_double_lane_change.json").string(),
                          "--report", exp_report.string()},
                         "experiment");
  ASSERT_EQ(exp.code, 0) << exp.err;
  const json reference = read_json(exp_report);

  for (const char* q : {"x", "y", "vx", "vy", "yaw_rate", "sideslip_deg"}) {
    const double daemon = scored["rmse"]["observer"][q].get<double>();
    const double experiment = reference["rmse"]["observer"][q].get<double>();
    ASSERT_TRUE(std::isfinite(daemon) && experiment > 0) << q;
    EXPECT_NEAR(daemon, experiment, 0.1 * experiment)
        << q << ": RMSE through CAN and the daemon " << daemon << ", in the experiment " << experiment;
  }
}
