// The calibration state file: written atomically and read back, and what a restart does with a
// missing, corrupt, foreign, stale or good file (a warning and the configured values, or the
// learned ones with their variance grown by the time since they were saved).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "mbobserver/runtime/calibration_file.hpp"
#include "mbobserver/runtime/daemon.hpp"

using namespace mbo;
using namespace mbo::runtime;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  auto d = fs::path(MBO_BINARY_DIR) / "calibration-test-scratch" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// The shipped configuration with the gyro z bias and the wheels' scales estimated.
struct Calibrated {
  DaemonConfig cfg = load_daemon_config(fs::path(MBO_SOURCE_DIR) / "config" / "mbobserver.json");
  Calibrated() {
    cfg.observer.imu.gyro_bias = {true, 0.01, 1e-8, -0.1, 0.1};
    cfg.observer.wheels.scale = {true, 0.02, 1e-9, 0.9, 1.1};
  }
  est::VehicleObserver observer() const { return est::VehicleObserver(cfg.vehicle, cfg.observer, cfg.runtime.step_s); }
};

int index_of(const est::VehicleObserver& o, const std::string& name) {
  for (std::size_t k = 0; k < o.sensor_parameters().size(); ++k)
    if (o.sensor_parameters()[k].name == name) return static_cast<int>(k);
  return -1;
}

}  // namespace

TEST(CalibrationFile, IsWrittenAtomicallyAndReadBack) {
  const auto dir = scratch("roundtrip");
  CalibrationFile c{"abc", 1.7e9, {{"gyro_bias_z", 0.01, 1e-4}, {"wheel_scale_fl", 1.003, 2e-4}}};
  write_calibration_file(dir / "cal.json", c);
  EXPECT_FALSE(fs::exists(dir / "cal.json.tmp"));
  const auto r = read_calibration_file(dir / "cal.json");
  ASSERT_TRUE(r.file) << r.problem;
  EXPECT_EQ(r.file->vehicle_sha256, "abc");
  EXPECT_EQ(r.file->saved_at, 1.7e9);
  ASSERT_EQ(r.file->parameters.size(), 2u);
  EXPECT_EQ(r.file->parameters[1].name, "wheel_scale_fl");
  EXPECT_EQ(r.file->parameters[1].value, 1.003);
  // a folder that does not exist: an error naming the path and why
  try {
    write_calibration_file(dir / "missing" / "cal.json", c);
    FAIL() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("missing/cal.json.tmp: cannot create"));
  }
}

TEST(CalibrationFile, AMissingCorruptOrForeignFileChangesNothing) {
  const auto dir = scratch("bad");
  Calibrated c;
  auto obs = c.observer();
  const int k = index_of(obs, "gyro_bias_z");
  ASSERT_GE(k, 0);
  const CalibrationConfig cc;
  EXPECT_THAT(restore_calibration(read_calibration_file(dir / "none.json"), c.cfg.vehicle_sha256, 0, cc, obs),
              HasSubstr("no calibration saved yet"));
  std::ofstream(dir / "garbage.json") << "{\"schema\": \"mbobserver.calibration/1\", \"parameters\": ";
  EXPECT_THAT(restore_calibration(read_calibration_file(dir / "garbage.json"), c.cfg.vehicle_sha256, 0, cc, obs),
              HasSubstr("not valid JSON"));
  std::ofstream(dir / "nan.json")
      << R"({"schema": "mbobserver.calibration/1", "vehicle_sha256": "x", "saved_at": 0, "parameters": {"gyro_bias_z": {"value": 1, "std": -1}}})";
  EXPECT_THAT(read_calibration_file(dir / "nan.json").problem, HasSubstr("gyro_bias_z"));
  write_calibration_file(dir / "foreign.json", {"another car", 0, {{"gyro_bias_z", 0.02, 1e-4}}});
  EXPECT_THAT(restore_calibration(read_calibration_file(dir / "foreign.json"), c.cfg.vehicle_sha256, 0, cc, obs),
              HasSubstr("another vehicle file"));
  write_calibration_file(dir / "old.json", {c.cfg.vehicle_sha256, 0, {{"gyro_bias_z", 0.02, 1e-4}}});
  EXPECT_THAT(restore_calibration(read_calibration_file(dir / "old.json"), c.cfg.vehicle_sha256, 31 * 86400.0, cc, obs),
              HasSubstr("older than max_age_days"));
  EXPECT_EQ(obs.parameter_value(k), 0.0);  // none of them moved the bias
  EXPECT_NEAR(obs.parameter_std(k), 0.01, 1e-15);
}

TEST(CalibrationFile, ALearnedValueStartsTheNextRunWithItsVarianceGrownByItsAge) {
  const auto dir = scratch("good");
  Calibrated c;
  auto obs = c.observer();
  write_calibration_file(dir / "cal.json",
                         {c.cfg.vehicle_sha256, 1000, {{"gyro_bias_z", 0.0123, 1e-4}, {"wheel_scale_rl", 1.01, 1e-4}}});
  CalibrationConfig cc;
  cc.carry_over = {"gyro_bias"};  // the wheels' scales do not carry over (new tyres every start, say)
  const std::string line =
      restore_calibration(read_calibration_file(dir / "cal.json"), c.cfg.vehicle_sha256, 1000 + 3600, cc, obs);
  EXPECT_THAT(line, HasSubstr("restored: 1 of 2 parameters"));
  const int g = index_of(obs, "gyro_bias_z"), w = index_of(obs, "wheel_scale_rl");
  EXPECT_EQ(obs.parameter_value(g), 0.0123);
  // 1e-8 (rad/s)^2/s of random walk over an hour parked, counted at parked_rate_scale 0.01
  EXPECT_NEAR(obs.parameter_std(g), std::sqrt(1e-8 + 1e-8 * 3600 * 0.01), 1e-12);
  cc.parked_rate_scale = 1;  // parked as driving: 1e-8 + 3.6e-5 -> sigma 0.0060 (below 0.01)
  restore_calibration(read_calibration_file(dir / "cal.json"), c.cfg.vehicle_sha256, 1000 + 3600, cc, obs);
  EXPECT_NEAR(obs.parameter_std(g), std::sqrt(1e-8 + 1e-8 * 3600), 1e-12);
  EXPECT_EQ(obs.parameter_value(w), 1.0);
  // a value beyond the range is held in it
  write_calibration_file(dir / "far.json", {c.cfg.vehicle_sha256, 1000, {{"gyro_bias_z", 5.0, 1e-4}}});
  restore_calibration(read_calibration_file(dir / "far.json"), c.cfg.vehicle_sha256, 1000, cc, obs);
  EXPECT_EQ(obs.parameter_value(g), 0.1);
  // what the observer publishes is what the next file holds
  const auto f = calibration_of(obs.step(0.002).calibration, "sha", 5);
  ASSERT_EQ(f.parameters.size(), 5u);  // the gyro z bias and four wheels
  EXPECT_EQ(f.parameters[0].name, "gyro_bias_z");
}

// The tyres' stiffness scales carry over (by default) and a payload does not (a load changes
// between trips) unless carry_over names it: a restored scale is the model's value from the
// next start on, with its variance grown by its age.
TEST(CalibrationFile, TheTyresStiffnessCarriesOverAndAPayloadOnlyWhenAsked) {
  const auto dir = scratch("inputs");
  Calibrated c;
  auto& set = c.cfg.observer.settings;
  const auto& v = *c.cfg.vehicle;
  for (auto [slot, lo, hi, std0] :
       {std::tuple{v.in.cornering_front, 0.5, 1.5, 0.1}, std::tuple{v.in.payload_rear, -300.0, 1000.0, 100.0}}) {
    set.estimated_inputs.push_back(slot);
    set.input_min.push_back(lo);
    set.input_max.push_back(hi);
    set.filter.input_rate_noise.push_back(1e-6);
    set.filter.initial_std_p.push_back(std0);
  }
  auto obs = c.observer();
  write_calibration_file(dir / "cal.json",
                         {c.cfg.vehicle_sha256, 1000, {{"cornering_front", 0.91, 0.005}, {"payload_rear", 150, 10}}});
  CalibrationConfig cc;  // the default carry-over: not the payload
  EXPECT_THAT(restore_calibration(read_calibration_file(dir / "cal.json"), c.cfg.vehicle_sha256, 1000 + 3600, cc, obs),
              HasSubstr("restored: 1 of 2 parameters"));
  models::VehicleStart start;
  start.speed = 10;
  obs.start(start, 0);
  const auto& cal = obs.step(0.002).calibration;
  const auto at = [&](const char* n) { return cal[calibration_index(n)]; };
  EXPECT_NEAR(at("cornering_front").value, 0.91, 1e-6);
  // 1e-6 /s of random walk over an hour parked at parked_rate_scale 0.01, one step of driving
  EXPECT_NEAR(at("cornering_front").std, std::sqrt(0.005 * 0.005 + 1e-6 * 36), 1e-5);
  EXPECT_NEAR(at("payload_rear").value, 0.0, 1e-3);
  EXPECT_NEAR(at("payload_rear").std, 100, 0.01);
  // asked for, the payload carries over too
  auto again = c.observer();
  cc.carry_over.push_back("payload");
  EXPECT_THAT(
      restore_calibration(read_calibration_file(dir / "cal.json"), c.cfg.vehicle_sha256, 1000 + 3600, cc, again),
      HasSubstr("restored: 2 of 2 parameters"));
  again.start(start, 0);
  EXPECT_NEAR(again.step(0.002).mass, v.params.total_mass() + 150, 1e-3);
}

// calibration.parked_rate_scale per kind of parameter: a tyre's radius moves less while
// parked than a gyro's bias at turn-on. A kind that is not one stops the start-up.
TEST(CalibrationFile, TheParkedRateScaleMayBeGivenPerKindOfParameter) {
  const auto doc = nlohmann::json::parse(R"({"parked_rate_scale": {"default": 0.02, "wheel_scale": 0.001}})");
  const JsonReader sec(doc, "cfg.json", "/calibration");
  const CalibrationConfig cc = read_calibration_config(&sec);
  EXPECT_EQ(cc.parked_scale_of("wheel_scale_rl"), 0.001);
  EXPECT_EQ(cc.parked_scale_of("gyro_bias_z"), 0.02);
  const auto dir = scratch("per-kind");
  Calibrated c;
  auto obs = c.observer();
  write_calibration_file(dir / "cal.json",
                         {c.cfg.vehicle_sha256, 1000, {{"gyro_bias_z", 0.0123, 1e-4}, {"wheel_scale_rl", 1.01, 1e-4}}});
  restore_calibration(read_calibration_file(dir / "cal.json"), c.cfg.vehicle_sha256, 1000 + 86400, cc, obs);
  // a day parked: the gyro bias at 0.02 of its 1e-8 /s, the wheel's scale at 0.001 of 1e-9 /s
  EXPECT_NEAR(obs.parameter_std(index_of(obs, "gyro_bias_z")), std::sqrt(1e-8 + 1e-8 * 86400 * 0.02), 1e-12);
  EXPECT_NEAR(obs.parameter_std(index_of(obs, "wheel_scale_rl")), std::sqrt(1e-8 + 1e-9 * 86400 * 0.001), 1e-12);
  const auto bad = nlohmann::json::parse(R"({"parked_rate_scale": {"tyre": 0.001}})");
  const JsonReader bad_sec(bad, "cfg.json", "/calibration");
  try {
    read_calibration_config(&bad_sec);
    FAIL() << "an unknown kind was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/calibration/parked_rate_scale/tyre"));
  }
}

// Held wheel scales (wheels.scale_release) are published as not learned, with their prior's
// sigma, and a file that keeps them so leaves the next run's scales held; a file with a learned
// scale (sigma below the prior's) releases them: that car's tyres were found to differ.
TEST(CalibrationFile, HeldWheelScalesStayHeldAcrossARestartUnlessTheFileLearnedThem) {
  const auto dir = scratch("held");
  Calibrated c;
  c.cfg.observer.wheels.release.on = true;
  auto obs = c.observer();
  const int w = index_of(obs, "wheel_scale_rl");
  EXPECT_NEAR(obs.parameter_std(w), 1e-6, 1e-12);
  const auto held = calibration_of(obs.step(0.002).calibration, c.cfg.vehicle_sha256, 5);
  ASSERT_EQ(held.parameters.size(), 5u);
  EXPECT_EQ(held.parameters[3].name, "wheel_scale_rl");
  EXPECT_EQ(held.parameters[3].std, 0.02);
  write_calibration_file(dir / "held.json", held);
  CalibrationConfig cc;
  restore_calibration(read_calibration_file(dir / "held.json"), c.cfg.vehicle_sha256, 10, cc, obs);
  EXPECT_NEAR(obs.parameter_std(w), 1e-6, 1e-9) << "restoring the prior released the scales";
  write_calibration_file(dir / "learned.json", {c.cfg.vehicle_sha256, 5, {{"wheel_scale_rl", 1.01, 1e-4}}});
  restore_calibration(read_calibration_file(dir / "learned.json"), c.cfg.vehicle_sha256, 10, cc, obs);
  EXPECT_EQ(obs.parameter_value(w), 1.01);
  EXPECT_NEAR(obs.parameter_std(w), std::sqrt(1e-8 + 1e-9 * 5 * cc.parked_scale_of("wheel_scale_rl")), 1e-12);
  const auto learned = calibration_of(obs.step(0.004).calibration, c.cfg.vehicle_sha256, 10);
  EXPECT_LT(learned.parameters[3].std, 0.02);
}
