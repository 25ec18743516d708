// A sensor that stops: every frame of its CAN ids is cut from some time on. The records must
// say so once its timeout has passed (health.sensors.<kind>.timed_out, the fault flag, and
// the validity the observer ties to it: src/estimation/vehicle_observer.cpp, fill_record),
// the summary must count the steps, and the replay must go on to the end of the log.
#include <algorithm>
#include <ostream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.hpp"

using namespace mbo::dtest;

namespace {

struct Outage {
  std::string name;
  std::vector<std::uint32_t> ids;  // the CAN ids cut (config/can/vehicle.dbc)
  std::vector<std::string> sensors;  // health.sensors entries that must time out
  std::string fault;  // health.faults name and summary faults_steps key
  double timeout_s;  // from config/mbobserver.json / the observer's default
  std::vector<std::string> invalid;  // health.validity entries that must turn false
  bool invalidates;  // health.valid must turn false
};

void PrintTo(const Outage& o, std::ostream* os) { *os << o.name; }

constexpr double kPiece_s = 1.4, kCut_s = 0.6;

bool has_fault(const json& rec, const std::string& fault) {
  const auto& f = rec["health"]["faults"];
  return std::find(f.begin(), f.end(), fault) != f.end();
}

class SensorTimeout : public ::testing::TestWithParam<Outage> {};

}  // namespace

TEST_P(SensorTimeout, IsReportedFromItsTimeoutOnAndCounted) {
  const Outage& o = GetParam();
  const CandumpLog full = CandumpLog::read(drive_log()).first_seconds(kPiece_s);
  const CandumpLog log = full.without_ids_from(o.ids, kCut_s);
  ASSERT_LT(log.lines.size(), full.lines.size());
  double t_last = 0;  // the sensor's last frame
  for (const auto& l : log.lines)
    if (std::find(o.ids.begin(), o.ids.end(), frame_id(l)) != o.ids.end()) t_last = std::max(t_last, frame_time(l));

  const Replay r = replay(write_config(default_config(), "config"), log.write(o.name), o.name);
  ASSERT_EQ(r.result.code, 0) << r.result.err;
  const auto records = r.records();
  ASSERT_EQ(records.size(), r.summary["steps"].get<std::size_t>());
  EXPECT_NEAR(records.back()["t"].get<double>(), log.t_end(), 0.0021) << "the replay went on to the end";

  std::size_t with_fault = 0, out = 0, in = 0;
  const json* first_out = nullptr;
  for (const auto& rec : records) {
    with_fault += has_fault(rec, o.fault);
    const double silent = rec["t"].get<double>() - t_last;
    // A step within half a step of the limit could go either way in floating point.
    if (silent > o.timeout_s + 1e-3) {
      ++out;
      if (!first_out) first_out = &rec;
      for (const auto& s : o.sensors)
        EXPECT_TRUE(rec["health"]["sensors"][s]["timed_out"].get<bool>()) << s << " at t = " << rec["t"];
      EXPECT_TRUE(has_fault(rec, o.fault)) << "t = " << rec["t"];
      for (const auto& v : o.invalid)
        EXPECT_FALSE(rec["health"]["validity"][v].get<bool>()) << v << " at t = " << rec["t"];
      if (o.invalidates) {
        EXPECT_FALSE(rec["health"]["valid"].get<bool>()) << "t = " << rec["t"];
      }
    } else if (silent < o.timeout_s - 1e-3 && rec["t"].get<double>() - log.t0() > 0.2) {
      // after the start-up, before the outage shows: healthy
      ++in;
      for (const auto& s : o.sensors)
        EXPECT_FALSE(rec["health"]["sensors"][s]["timed_out"].get<bool>()) << s << " at t = " << rec["t"];
      EXPECT_FALSE(has_fault(rec, o.fault)) << "t = " << rec["t"];
      EXPECT_TRUE(rec["health"]["valid"].get<bool>()) << "t = " << rec["t"];
    }
  }
  EXPECT_GT(out, 50u);
  EXPECT_GT(in, 50u);
  // the summary counts every step with the fault, the start-up steps before any sample included
  EXPECT_EQ(r.summary["faults_steps"][o.fault].get<std::size_t>(), with_fault);
  for (const auto& s : o.sensors) EXPECT_TRUE(r.summary["sensors"][s]["timed_out"].get<bool>()) << s;

  if (o.name == "gnss") {
    // Without fixes nothing bounds the position: its uncertainty grows, while it stays
    // within the validity bound for this short outage.
    ASSERT_NE(first_out, nullptr);
    EXPECT_TRUE(records.back()["health"]["validity"]["position"].get<bool>());
    EXPECT_GT(records.back()["std"]["x"].get<double>(), (*first_out)["std"]["x"].get<double>());
    EXPECT_GT(records.back()["std"]["y"].get<double>(), (*first_out)["std"]["y"].get<double>());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cut, SensorTimeout,
    ::testing::Values(
        // GNSS_Latitude, _Longitude, _Alt_Vel, _Accuracy. A fused sensor that stops makes the
        // estimate invalid; the position's own validity follows its standard deviation (dead
        // reckoning), so it is not in the list.
        Outage{"gnss",
               {0x300, 0x301, 0x302, 0x303},
               {"gnss_pos", "gnss_vel", "gnss_course"},
               "gnss_timeout",
               0.5,
               {},
               true},
        // IMU_Accel, IMU_Gyro: the yaw gyro is fused (the accelerometers are not, in the default
        // errorEKF, so attitude stays valid): no heading, no virtual sensors.
        Outage{"imu", {0x080, 0x081}, {"accel", "gyro"}, "imu_timeout", 0.05, {"heading", "virtual_sensors"}, true},
        // Wheel_Counts: slips and tyre forces lean on the wheel speeds.
        Outage{"wheels", {0x090}, {"wheels"}, "wheel_timeout", 0.1, {"virtual_sensors"}, true},
        // Steering, Drive_Torques, Brake_Pressures: the model's inputs; no virtual sensors
        // without them.
        Outage{"inputs", {0x0A0, 0x0B0, 0x0B1}, {}, "input_timeout", 0.1, {"virtual_sensors"}, true}),
    [](const ::testing::TestParamInfo<Outage>& i) { return i.param.name; });
