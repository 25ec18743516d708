// The JSON Schema files in docs/ against real datagrams: serialised by the publisher, sent
// over a UDP socket on loopback, received, and checked by python3-jsonschema (an independent
// implementation) as the oracle. A second test proves the check can fail.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <sys/wait.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mbobserver/runtime/udp_publisher.hpp"
#include "sample_records.hpp"
#include "udp_receiver.hpp"

using namespace mbo::runtime;
using nlohmann::json;
using ::testing::HasSubstr;

namespace {

struct Result {
  int code;
  std::string out;
};

Result validate(const std::vector<std::string>& datagrams, const std::string& name) {
  const auto file = std::filesystem::temp_directory_path() / ("mbo_schema_" + name + ".jsonl");
  {
    std::ofstream out(file);
    for (const auto& d : datagrams) out << d << "\n";
  }
  const std::string cmd = std::string("/usr/bin/python3 ") + MBO_SOURCE_DIR + "/tests/runtime/validate_jsonl.py " +
                          MBO_SOURCE_DIR + "/docs " + file.string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 512> buf{};
  while (p && std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int status = p ? ::pclose(p) : -1;
  std::filesystem::remove(file);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Sends a varied set of estimates and status reports through a real publisher and returns
// what arrived on the loopback socket.
std::vector<std::string> real_datagrams(const JsonOptions& options) {
  mbo::test::UdpReceiver rx;
  boost::asio::io_context io;
  PublishConfig c;
  c.port = rx.port();
  c.rate_hz = 500;  // every step
  UdpPublisher pub(io, c, 0.002, options);
  EstimateQueue queue(4);
  EventWakeup wakeup;
  pub.start(queue, wakeup, [](StatusRecord& s) {
    const StatusRecord sample = mbo::test::sample_status();
    s.frames = sample.frames;
    s.queues = sample.queues;
    s.queue_count = sample.queue_count;
    s.can = sample.can;
    s.can_count = sample.can_count;
    s.steps = 5000;
  });
  std::vector<mbo::EstimateRecord> records;
  records.push_back(mbo::test::sample_estimate(0));
  records.push_back(mbo::EstimateRecord{});  // all defaults: sensors never received
  auto bad = mbo::test::sample_estimate(2);
  bad.x = std::numeric_limits<double>::quiet_NaN();
  bad.tyre_fy[2] = -std::numeric_limits<double>::infinity();
  bad.faults = 0xffu | (1u << 31);
  bad.validity = {};
  records.push_back(bad);
  int expected = 0;
  for (const auto& r : records) {
    pub.on_record(r);
    ++expected;
    EXPECT_TRUE(pub.send_status());
    ++expected;
  }
  pub.stop();  // final status
  ++expected;
  std::vector<std::string> out;
  for (int i = 0; i < expected; ++i) {
    auto d = rx.receive();
    if (!d) break;
    out.push_back(*d);
  }
  EXPECT_EQ(out.size(), static_cast<std::size_t>(expected));
  return out;
}

}  // namespace

TEST(Schema, RealDatagramsValidate) {
  const auto datagrams = real_datagrams({});
  const Result r = validate(datagrams, "live");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("7 of 7 datagrams valid"));
}

TEST(Schema, ReplayRecordsWithoutWallClockFieldsValidate) {
  const auto datagrams = real_datagrams({.wall_clock = false});
  ASSERT_FALSE(datagrams.empty());
  EXPECT_FALSE(json::parse(datagrams[0]).contains("t_wall"));
  const Result r = validate(datagrams, "replay");
  EXPECT_EQ(r.code, 0) << r.out;
}

// The summary schema refers to the status schema's fields: a real status record with both
// kinds of run section validates, and a summary that breaks either part does not.
TEST(Schema, SummariesValidateAndBrokenOnesDoNot) {
  const StatusRecord s = mbo::test::sample_status();
  RunSummary replay;
  replay.replay = true;
  replay.log = "drive.log";
  replay.rate = "realtime";
  replay.log_problems_first = {"timestamp goes backwards (line 7)"};
  replay.deadline_miss_episodes_first_at_monotonic_s = {1.5};
  RunSummary live;
  const std::string a = summary_json(s, replay), b = summary_json(s, live);
  const Result ok = validate({a, b}, "summary");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_THAT(ok.out, HasSubstr("2 of 2 datagrams valid"));

  std::vector<std::string> broken;
  json j = json::parse(a);
  j.erase("run");
  broken.push_back(j.dump());
  j = json::parse(a);
  j.erase("latency_us");  // the summary always has the wall-clock fields
  broken.push_back(j.dump());
  j = json::parse(a);
  j["frames"].erase("error_frames");  // a status field, checked by the status schema
  broken.push_back(j.dump());
  j = json::parse(a);
  j["wall_time_s"] = 1;  // the run's fields belong under "run"
  broken.push_back(j.dump());
  j = json::parse(a);
  j["run"].erase("log");  // a replay names its log
  broken.push_back(j.dump());
  j = json::parse(b);
  j["run"]["rate"] = "max";  // a live run has no rate
  broken.push_back(j.dump());
  j = json::parse(a);
  j["schema"] = "mbobserver.status/1";  // a status datagram has no "run"
  broken.push_back(j.dump());
  for (std::size_t i = 0; i < broken.size(); ++i) {
    const Result r = validate({broken[i]}, "broken_summary" + std::to_string(i));
    EXPECT_EQ(r.code, 1) << "broken summary " << i << " passed: " << broken[i] << "\n" << r.out;
  }
}

TEST(Schema, BrokenDatagramsFailValidation) {
  const auto datagrams = real_datagrams({});
  const json estimate = json::parse(datagrams.at(0));
  const json status = json::parse(datagrams.at(1));
  ASSERT_EQ(status["schema"], "mbobserver.status/1");

  std::vector<std::string> broken;
  json e = estimate;
  e.erase("seq");
  broken.push_back(e.dump());
  e = estimate;
  e["virtual"]["tyre_fz"].erase(3);
  broken.push_back(e.dump());
  e = estimate;
  e["state"]["speed"] = 3;
  broken.push_back(e.dump());
  e = estimate;
  e["health"]["faults"] = {"on_fire"};
  broken.push_back(e.dump());
  json s = status;
  s["frames"]["received"] = -1;
  broken.push_back(s.dump());
  s = status;
  s["can"]["can0"]["state"] = "confused";
  broken.push_back(s.dump());
  broken.push_back(datagrams.at(0).substr(0, 100));  // truncated

  for (std::size_t i = 0; i < broken.size(); ++i) {
    const Result r = validate({broken[i]}, "broken" + std::to_string(i));
    EXPECT_EQ(r.code, 1) << "broken datagram " << i << " passed: " << broken[i] << "\n" << r.out;
  }
  const Result all = validate(broken, "broken_all");
  EXPECT_THAT(all.out, HasSubstr("'seq' is a required property"));
  EXPECT_THAT(all.out, HasSubstr("0 of 7 datagrams valid"));
}
