// The robustness suite's machinery, as CI can afford it (issue 17): two of scenarios/robustness
// (the sedan's lane change with smaller tyres and the loaded van on the mixed drive, every kind
// of error model switched on between them), one run each, cut to 2 s. It checks the table and
// the report, not accuracy; the full suite is one command in the README.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/experiment/suite.hpp"

namespace {

struct Run {
  int code;
  std::string out, err;
};

Run run(const std::string& cmd) {
  // files of this process: CTest runs the cases side by side
  const auto err_file =
      std::filesystem::temp_directory_path() / ("mbo_suite_stderr_" + std::to_string(getpid()) + ".txt");
  FILE* p = popen((cmd + " 2>" + err_file.string()).c_str(), "r");
  std::string out;
  std::array<char, 512> buf{};
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int status = pclose(p);
  std::ifstream f(err_file);
  std::string err((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove(err_file);
  return {WEXITSTATUS(status), out, err};
}

const std::string kSuite = std::string(MBO_SOURCE_DIR) + "/scenarios/robustness";

TEST(RobustnessSuite, TwoScenariosOneShortRunGiveTheTableTheReportAndTheFigure) {
  const auto dir = std::filesystem::temp_directory_path() / ("mbo_suite_smoke_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto report = dir / "suite.json";
  const auto r = run(std::string(MBO_EXPERIMENT_BIN) + " --suite " + kSuite +
                     " --only sedan_dlc_radius_minus1pct --only van_mixed_loaded --runs 1 --max-duration 2 --report " +
                     report.string());
  ASSERT_EQ(r.code, 0) << r.err;
  // the table: a header, the quantities of each scenario, the count of flagged cells
  EXPECT_NE(r.out.find("scenario"), std::string::npos);
  EXPECT_NE(r.out.find("open loop"), std::string::npos);
  EXPECT_NE(r.out.find("NEES (dof)"), std::string::npos);
  EXPECT_NE(r.out.find("sedan_dlc_radius_minus1pct  x (m)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("van_mixed_loaded"), std::string::npos);
  EXPECT_NE(r.err.find("[1/2] sedan_dlc_radius_minus1pct: 1 run in"), std::string::npos) << r.err;
  const auto suite = mbo::load_json_file(report);
  ASSERT_EQ(suite["scenarios"].size(), 2u);
  long flagged = 0, cells = 0;
  for (const auto& s : suite["scenarios"]) {
    const auto& rep = s["report"];
    EXPECT_EQ(rep["steps"].get<long>(), 1000);  // 2 s of 2 ms
    EXPECT_TRUE(rep.contains("perturbation")) << s["scenario"];  // both draw their truth
    ASSERT_EQ(s["table"].size(), mbo::exp::default_suite_quantities().size());
    for (const auto& row : s["table"]) {
      const std::string q = row["quantity"].get<std::string>();
      const double o = row["observer"].get<double>(), m = row["open_loop"].get<double>();
      EXPECT_EQ(o, rep["rmse"]["observer"][q].get<double>());
      EXPECT_EQ(m, rep["rmse"]["model"][q].get<double>());
      if (m > 0) {
        EXPECT_DOUBLE_EQ(row["ratio"].get<double>(), o / m);
      }
      EXPECT_EQ(row["worse"].get<bool>(), o > m);
      flagged += row["worse"].get<bool>();
      ++cells;
    }
    EXPECT_EQ(s["nees"], rep["consistency"]["nees_mean"]);
  }
  EXPECT_EQ(suite["flagged"].get<long>(), flagged);
  EXPECT_EQ(suite["cells"].get<long>(), cells);
  const std::string count = std::to_string(flagged) + " of " + std::to_string(cells) + " cells flagged WORSE";
  EXPECT_NE(r.out.find(count), std::string::npos) << r.out;
  // The summary figure from the report (matplotlib, Debian's).
  const auto png = dir / "suite.png";
  const auto p = run("/usr/bin/python3 " + std::string(MBO_SOURCE_DIR) + "/tools/plot_suite.py " + report.string() +
                     " --out " + png.string());
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_GT(std::filesystem::file_size(png), 10000u);
  std::filesystem::remove_all(dir);
}

// Issue 18's "NEES between 0.5 and 2 per state" over the suite: each parameter's mean over the
// scenarios that estimate it, each scenario weighing alike whatever its length.
TEST(RobustnessSuite, TheSuitesParameterNeesIsTheMeanOfItsScenariosPerParameter) {
  const auto suite = nlohmann::json::parse(R"({"scenarios": [
      {"scenario": "a", "parameter_nees": {"gyro_bias_z": 0.2, "payload_rear": 3.0}},
      {"scenario": "b"},
      {"scenario": "c", "parameter_nees": {"gyro_bias_z": 1.4}}]})");
  const auto pooled = mbo::exp::pooled_parameter_nees(suite);
  ASSERT_EQ(pooled.size(), 2u) << pooled.dump();
  EXPECT_DOUBLE_EQ(pooled["gyro_bias_z"]["nees"].get<double>(), 0.8);
  EXPECT_EQ(pooled["gyro_bias_z"]["scenarios"].get<int>(), 2);
  EXPECT_DOUBLE_EQ(pooled["payload_rear"]["nees"].get<double>(), 3.0);
  EXPECT_EQ(pooled["payload_rear"]["scenarios"].get<int>(), 1);
  EXPECT_TRUE(mbo::exp::pooled_parameter_nees(nlohmann::json::parse(R"({"scenarios": []})")).empty());
}

TEST(RobustnessSuite, BadSuiteUsageIsOneErrorWithExitCode2) {
  auto r = run(std::string(MBO_EXPERIMENT_BIN) + " --suite " + kSuite + " --only no_such_scenario");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no scenario no_such_scenario.json"), std::string::npos) << r.err;
  r = run(std::string(MBO_EXPERIMENT_BIN) + " --suite /nonexistent/folder");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent/folder: not a folder"), std::string::npos) << r.err;
  r = run(std::string(MBO_EXPERIMENT_BIN) + " --suite " + kSuite + " " + kSuite + "/sedan_dlc_baseline.json");
  EXPECT_EQ(r.code, 2) << r.err;
  r = run(std::string(MBO_EXPERIMENT_BIN));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("a scenario file or --suite DIR is required"), std::string::npos) << r.err;
  r = run(std::string(MBO_EXPERIMENT_BIN) + " --only x");
  EXPECT_EQ(r.code, 2) << r.err;
}

// Issue 18 judged on issue 17's suite: the shipped observer with the self-calibration patch
// (gyro biases and wheel scales learned) on the lane change whose truth has tyres 1 % smaller.
// Without it the observer is worse than the open loop in x (0.295 against 0.22 m); with it
// x is 0.0028 m and the wheel speed 0.03 rad/s.
TEST(RobustnessSuite, TheSelfCalibrationPatchMakesTheObserverBetterThanTheOpenLoopOnSmallerTyres) {
  const auto dir = std::filesystem::temp_directory_path() / ("mbo_suite_patch_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto cmd = std::string(MBO_EXPERIMENT_BIN) + " --suite " + kSuite + " --only sedan_dlc_radius_minus1pct";
  const std::string patch = std::string(MBO_SOURCE_DIR) + "/scenarios/patches/self_calibration.json";
  auto x_rmse = [](const nlohmann::json& suite, const char* who) {
    return suite["scenarios"][0]["report"]["rmse"][who]["x"].get<double>();
  };
  ASSERT_EQ(run(cmd + " --report " + (dir / "plain.json").string()).code, 0);
  const auto r = run(cmd + " --observer-patch " + patch + " --report " + (dir / "patched.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto plain = mbo::load_json_file(dir / "plain.json"), patched = mbo::load_json_file(dir / "patched.json");
  EXPECT_EQ(patched["observer_patch"], mbo::load_json_file(patch));
  EXPECT_FALSE(plain.contains("observer_patch"));
  // as shipped the held scales are released at 3.5 s and take what the radius did to the model
  // (0.14 m, against the open loop's 0.18 m; 0.26 m when they were merely reopened), far from
  // scales learned from the start
  EXPECT_LT(x_rmse(plain, "observer"), x_rmse(plain, "model"));
  EXPECT_GT(x_rmse(plain, "observer"), 10 * x_rmse(patched, "observer")) << "the patch no longer matters here";
  EXPECT_LT(x_rmse(patched, "observer"), 0.05 * x_rmse(patched, "model"));
  EXPECT_LT(x_rmse(patched, "observer"), 0.01);
  EXPECT_EQ(x_rmse(plain, "model"), x_rmse(patched, "model")) << "the patch touches the observer only";
  // the scales it learned are published: the truth's tyres are 1 % smaller, s = r_model/r_eff
  const auto& cal = patched["scenarios"][0]["report"];
  ASSERT_TRUE(cal.contains("calibration")) << cal.dump().substr(0, 400);
  for (const char* w : {"wheel_scale_fl", "wheel_scale_fr", "wheel_scale_rl", "wheel_scale_rr"}) {
    const double s = cal["calibration"][w]["value"].get<double>(), sd = cal["calibration"][w]["std"].get<double>();
    EXPECT_NEAR(s, 1 / 0.99, 0.003) << w << " +- " << sd;
  }
  EXPECT_TRUE(cal["calibration"].contains("gyro_bias_z"));
  // as shipped the suite holds its wheel scales until the fixes release them, and learns no
  // gyro bias: the 1 % small tyres release them
  const auto& shipped = plain["scenarios"][0]["report"];
  EXPECT_FALSE(shipped["calibration"].contains("gyro_bias_z"));
  EXPECT_EQ(shipped["failures"]["wheel_scale_releases"].get<double>(), 1.0);
  // each parameter's NEES against the truth's tyres (scale ~ 1/0.99) in the suite's report and
  // in the table printed after the quantities; without the patch only the scales'
  const auto& pn = patched["scenarios"][0]["parameter_nees"];
  for (const char* w : {"wheel_scale_fl", "wheel_scale_rr", "gyro_bias_z"})
    EXPECT_EQ(pn[w], cal["calibration"][w]["nees"]) << w;
  EXPECT_LT(pn["wheel_scale_fl"].get<double>(), 2.0) << "the learned scale is within its sigma of r_model/r_eff";
  EXPECT_NE(r.out.find("parameter NEES within [0.5, 2]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over the suite"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("flagged converged while 4 sigma off"), std::string::npos) << r.out;
  EXPECT_EQ(patched["scenarios"][0]["parameter_false_converged"]["wheel_scale_fl"],
            cal["calibration"]["wheel_scale_fl"]["false_converged"]);
  EXPECT_EQ(patched["parameter_nees"]["gyro_bias_z"]["nees"], pn["gyro_bias_z"]) << "one scenario: its own";
  EXPECT_NE(r.out.find("wheel_scale_fl"), std::string::npos) << r.out;
  EXPECT_FALSE(plain["scenarios"][0]["parameter_nees"].contains("gyro_bias_z"));
  // a patch that names a key the observer does not know is refused naming the scenario
  const auto bad = dir / "bad.json";
  std::ofstream(bad) << R"({"imu": {"estimate_gyro_bais": {}}})";
  const auto b = run(cmd + " --observer-patch " + bad.string());
  EXPECT_EQ(b.code, 2);
  EXPECT_NE(b.err.find("sedan_dlc_radius_minus1pct.json"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("estimate_gyro_bais"), std::string::npos) << b.err;
  std::filesystem::remove_all(dir);
}

}  // namespace

// --floor: each row's noise floor (the same runs with the truth's own car as the model) and the
// cells worse than the open loop and than 1.1 x the floor, counted.
TEST(RobustnessSuite, TheFloorFlagsOnlyCellsWorseThanTheObserverOnTheTruthsOwnCar) {
  const auto dir = std::filesystem::temp_directory_path() / ("mbo_suite_floor_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto report = dir / "suite.json";
  const auto r = run(std::string(MBO_EXPERIMENT_BIN) + " --suite " + kSuite +
                     " --only sedan_dlc_heavier --runs 1 --max-duration 2 --floor --report " + report.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto suite = mbo::load_json_file(report);
  long beyond = 0;
  for (const auto& row : suite["scenarios"][0]["table"]) {
    ASSERT_TRUE(row.contains("floor")) << row;
    const double o = row["observer"].get<double>(), m = row["open_loop"].get<double>(), f = row["floor"].get<double>();
    EXPECT_EQ(row["worse_beyond_floor"].get<bool>(), o > m && o > mbo::exp::kFloorMargin * f) << row;
    beyond += row["worse_beyond_floor"].get<bool>();
  }
  EXPECT_EQ(suite["flagged_beyond_floor"].get<long>(), beyond);
  EXPECT_NE(r.out.find(std::to_string(beyond) + " of them worse than the noise floor as well"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("floor"), std::string::npos);
  // without --suite there is no floor to take
  EXPECT_EQ(run(std::string(MBO_EXPERIMENT_BIN) + " " + kSuite + "/sedan_dlc_heavier.json --floor").code, 2);
  std::filesystem::remove_all(dir);
}
