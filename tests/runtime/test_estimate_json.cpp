#include "mbobserver/runtime/estimate_json.hpp"

#include <cerrno>
#include <clocale>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sample_records.hpp"

using namespace mbo::runtime;
using nlohmann::json;

TEST(EstimateJson, CarriesTheDocumentedKeysWithExactValues) {
  const mbo::EstimateRecord r = mbo::test::sample_estimate();
  const std::string text = estimate_json(r);
  const json j = json::parse(text);
  EXPECT_EQ(j["schema"], "mbobserver.estimate/2");
  EXPECT_EQ(j["seq"], r.seq);
  EXPECT_EQ(j["t"].get<double>(), r.t);  // shortest round-trip: parses back bit for bit
  EXPECT_EQ(j["t_wall"].get<double>(), r.t_wall);
  EXPECT_EQ(j["state"]["x"].get<double>(), r.x);
  EXPECT_EQ(j["state"]["yaw_rate"].get<double>(), r.yaw_rate);
  EXPECT_EQ(j["state"]["v_lat"].get<double>(), r.v_lat);
  EXPECT_EQ(j["virtual"]["sideslip_deg"].get<double>(), r.sideslip_deg);
  EXPECT_EQ(j["virtual"]["friction"].get<double>(), r.friction);
  EXPECT_EQ(j["std"]["friction"].get<double>(), r.std_friction);
  EXPECT_EQ(j["virtual"]["tyre_fz"].get<std::vector<double>>(),
            std::vector<double>(r.tyre_fz.begin(), r.tyre_fz.end()));
  EXPECT_EQ(j["virtual"]["slip_angle_deg"][3].get<double>(), r.slip_angle_deg[3]);
  EXPECT_EQ(j["std"]["yaw"].get<double>(), r.std_yaw);
  EXPECT_EQ(j["health"]["valid"], false);
  EXPECT_EQ(j["health"]["validity"]["position"], true);
  EXPECT_EQ(j["health"]["validity"]["virtual_sensors"], false);
  EXPECT_EQ(j["health"]["validity"]["tyre_forces"], true);
  EXPECT_EQ(j["health"]["validity"]["tyre_loads"], false);
  EXPECT_EQ(j["health"]["faults"], json::array({"reset", "gnss_timeout"}));  // bit order
  EXPECT_EQ(j["health"]["resets"], 2);
  EXPECT_EQ(j["health"]["sensors"]["gnss_pos"]["age_ms"].get<double>(), 20.5);
  EXPECT_EQ(j["health"]["sensors"]["gnss_pos"]["fused"], 100);
  EXPECT_EQ(j["health"]["sensors"]["gnss_pos"]["timed_out"], false);
  EXPECT_TRUE(j["health"]["sensors"]["wheels"]["age_ms"].is_null());  // never received
  EXPECT_EQ(j["latency_us"]["frame_to_step"].get<double>(), r.frame_to_step_us);
  EXPECT_EQ(j["latency_us"]["step_to_send"].get<double>(), r.step_to_send_us);
  EXPECT_EQ(text.find(' '), std::string::npos);  // compact: no whitespace
}

TEST(EstimateJson, SameRecordSameBytesAndWallClockFieldsCanBeOmitted) {
  mbo::EstimateRecord a = mbo::test::sample_estimate();
  EXPECT_EQ(estimate_json(a), estimate_json(a));

  mbo::EstimateRecord b = a;  // the same step, run at another time on another machine
  b.t_wall += 1234.5;
  b.frame_to_step_us *= 3;
  b.step_compute_us += 7;
  b.step_to_send_us += 1;
  b.step_end_mono_ns += 999;
  b.wakeup_lateness_us += 12;
  EXPECT_NE(estimate_json(a), estimate_json(b));
  const JsonOptions replay{.wall_clock = false};
  EXPECT_EQ(estimate_json(a, replay), estimate_json(b, replay));
  const json j = json::parse(estimate_json(a, replay));
  EXPECT_FALSE(j.contains("t_wall"));
  EXPECT_FALSE(j.contains("latency_us"));
  EXPECT_TRUE(j.contains("t"));
}

TEST(EstimateJson, NumbersDoNotDependOnTheLocale) {
  const mbo::EstimateRecord r = mbo::test::sample_estimate();
  const std::string c_locale = estimate_json(r);
  const char* found = nullptr;
  for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "C.UTF-8"})
    if ((found = std::setlocale(LC_ALL, name))) break;
  const std::string other = estimate_json(r);
  std::setlocale(LC_ALL, "C");
  EXPECT_EQ(c_locale, other) << "locale " << (found ? found : "(none available)");
  EXPECT_NE(c_locale.find("\"t\":12.345,"), std::string::npos) << c_locale;
}

TEST(EstimateJson, NonFiniteNumbersBecomeNullAndUnknownFaultBitsStayVisible) {
  mbo::EstimateRecord r = mbo::test::sample_estimate();
  r.x = std::numeric_limits<double>::quiet_NaN();
  r.tyre_fx[1] = std::numeric_limits<double>::infinity();
  r.faults = mbo::kFaultDiverged | (1u << 20);
  const json j = json::parse(estimate_json(r));  // still valid JSON
  EXPECT_TRUE(j["state"]["x"].is_null());
  EXPECT_TRUE(j["virtual"]["tyre_fx"][1].is_null());
  EXPECT_EQ(j["health"]["faults"], json::array({"diverged", "bit_20"}));
}

TEST(StatusJson, CountersQueuesCanAndSensors) {
  StatusRecord s = mbo::test::sample_status();
  const json j = json::parse(status_json(s));
  EXPECT_EQ(j["schema"], "mbobserver.status/1");
  EXPECT_EQ(j["frames"]["received"], 8000);
  EXPECT_EQ(j["frames"]["unknown"], 3);
  EXPECT_EQ(j["queues"]["measurements"]["high_water"], 40);
  EXPECT_EQ(j["queues"]["estimates"]["overflows"], 2);
  EXPECT_EQ(j["queue_overflows"], 7);  // 5 + 2
  EXPECT_EQ(j["deadline_misses"], 1);
  EXPECT_EQ(j["latency_us"]["step_compute"]["p99"].get<double>(), 310.5);
  EXPECT_EQ(j["publisher"]["last_send_error"], "ENETUNREACH");
  EXPECT_EQ(j["can"]["can0"]["state"], "error_warning");
  EXPECT_EQ(j["can"]["can0"]["tx_errors"], 97);
  EXPECT_EQ(j["gnss_serial"]["rejected"], 10);
  EXPECT_EQ(j["gnss_serial"]["fix_time_unsynchronised"], 1);
  EXPECT_EQ(j["gnss_serial"]["fix_time_untimed"], 2);
  EXPECT_DOUBLE_EQ(j["gnss_serial"]["last_fix_age_s"].get<double>(), 0.083);
  EXPECT_EQ(j["sensors"]["gyro"]["fused"], 5);
  EXPECT_EQ(j["faults"], json::array({"imu_timeout"}));

  s.publisher.last_send_errno = 0;
  s.gnss_serial.present = false;  // replay, or GNSS over CAN: no block
  const json k = json::parse(status_json(s, {.wall_clock = false}));
  EXPECT_TRUE(k["publisher"]["last_send_error"].is_null());
  EXPECT_FALSE(k.contains("gnss_serial"));
  EXPECT_FALSE(k.contains("latency_us"));
  EXPECT_FALSE(k.contains("t_wall"));
  EXPECT_FALSE(k.contains("uptime_s"));
}

TEST(StatusJson, EpisodesObserverCountersAndFaultSteps) {
  StatusRecord s = mbo::test::sample_status();
  s.frames.known_unmapped = 6;
  s.frames.error_frames = 7;
  s.deadline_miss_episodes.total = 3;
  s.deadline_miss_episodes.by_cause[static_cast<std::size_t>(mbo::runtime::MissCause::late_wakeup)] = 2;
  s.observer.stale_samples = 11;
  s.valid_steps = 4990;
  s.faults_steps[2] = 4;  // "reset"
  const json j = json::parse(status_json(s, {.wall_clock = false}));
  EXPECT_EQ(j["frames"]["known_unmapped"], 6);
  EXPECT_EQ(j["frames"]["error_frames"], 7);
  EXPECT_EQ(j["deadline_miss_episodes"], json({{"total", 3}, {"overrun", 0}, {"late_wakeup", 2}, {"input_wait", 0}}));
  EXPECT_EQ(j["observer"]["stale_samples"], 11);
  EXPECT_EQ(j["valid_steps"], 4990);
  EXPECT_EQ(j["faults_steps"]["reset"], 4);
  EXPECT_EQ(j["faults_steps"].size(), mbo::kFaultNames.size());
}

// The summary is the status record written by the same code, plus the run's section.
TEST(SummaryJson, IsTheStatusRecordAndTheRun) {
  const StatusRecord s = mbo::test::sample_status();
  mbo::runtime::RunSummary run;
  run.replay = true;
  run.log = "drive \"1\".log";
  run.rate = "max";
  run.log_lines = 16007;
  run.log_problems_first = {"not a candump line (line 3)"};
  run.wall_time_s = 0.5;
  run.deadline_miss_episodes_first_at_monotonic_s = {12.5, 13.25};
  run.records_written = 5000;
  const json summary = json::parse(summary_json(s, run));
  const json status = json::parse(status_json(s));
  EXPECT_EQ(summary["schema"], "mbobserver.summary/1");
  json fields = summary;
  fields.erase("run");
  fields["schema"] = status["schema"];
  EXPECT_EQ(fields, status);
  EXPECT_EQ(summary["run"]["mode"], "replay");
  EXPECT_EQ(summary["run"]["log"], "drive \"1\".log");
  EXPECT_EQ(summary["run"]["log_problems_first"], json::array({"not a candump line (line 3)"}));
  EXPECT_EQ(summary["run"]["deadline_miss_episodes_first_at_monotonic_s"], json::array({12.5, 13.25}));
  EXPECT_EQ(summary["run"]["records_written"], 5000);

  run.replay = false;  // live: no log, no rate
  const json live = json::parse(summary_json(s, run));
  EXPECT_EQ(live["run"]["mode"], "live");
  EXPECT_FALSE(live["run"].contains("log"));
  EXPECT_FALSE(live["run"].contains("rate"));
}

TEST(StatusJson, NamesAreEscapedAndCapacityIsRespected) {
  StatusRecord s;
  mbo::runtime::CanControllerStatus c;
  set_name(c.name, "a\"b\\c\x01");
  EXPECT_TRUE(s.add_can(c));
  for (std::size_t i = 1; i < kMaxCanControllers; ++i) EXPECT_TRUE(s.add_can(c));
  EXPECT_FALSE(s.add_can(c));  // fixed capacity, refused rather than overrun
  set_name(c.name, "a-very-long-interface-name");
  EXPECT_EQ(name_of(c.name), "a-very-long-int");  // IFNAMSIZ - 1 characters
  const json j = json::parse(status_json(s));
  EXPECT_TRUE(j["can"].contains("a\"b\\c\x01"));
}

TEST(Errno, Names) {
  EXPECT_EQ(errno_name(ENETUNREACH), "ENETUNREACH");
  EXPECT_EQ(errno_name(EACCES), "EACCES");
  EXPECT_EQ(errno_name(99999), "unknown");
}
