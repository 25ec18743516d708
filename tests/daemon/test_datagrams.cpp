// What the daemon really sends and records, checked against docs/estimate.schema.json and
// docs/status.schema.json by python3-jsonschema (tests/runtime/validate_jsonl.py, an
// implementation independent of ours).
//
// At --rate max a short replay finishes within the first status period, so the final status
// sent at shutdown may be the only one: the test needs at least that one, never more.
#include <csignal>
#include <cstdio>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "../runtime/udp_receiver.hpp"
#include "harness.hpp"

using namespace mbo::dtest;

namespace {

// Small enough that every datagram fits a default socket receive buffer even if this
// process were not scheduled at all during the replay, so that none can be lost.
constexpr double kPiece_s = 0.5;

}  // namespace

TEST(Datagrams, WhatTheDaemonSendsAndRecordsMatchesTheSchemas) {
  mbo::test::UdpReceiver rx;
  json c = default_config();
  c["publish"]["enabled"] = true;
  c["publish"]["address"] = "127.0.0.1";
  c["publish"]["port"] = rx.port();
  const fs::path config = write_config(c, "config");
  const fs::path log = CandumpLog::read(drive_log()).first_seconds(kPiece_s).write("piece");
  const fs::path record = temp_path("record.jsonl"), summary_file = temp_path("summary.json");

  Child daemon(MBO_DAEMON,
               {"--config", config.string(), "--replay", log.string(), "--rate", "max", "--record", record.string(),
                "--summary-json", summary_file.string(), "--no-progress"},
               "daemon");
  // Read while it runs; once it has exited, everything it sent is already queued on the
  // socket (loopback delivers within sendto), so a non-blocking drain gets the rest.
  std::vector<std::string> datagrams;
  ASSERT_TRUE(poll_until([&] {
    const bool exited = !daemon.running();
    while (auto d = rx.receive(exited ? 0 : 10)) datagrams.push_back(*d);
    return exited;
  }));
  const Result r = daemon.wait();
  ASSERT_EQ(r.code, 0) << r.err;
  const json summary = read_json(summary_file);

  std::vector<json> estimates, statuses;
  std::string jsonl;
  for (const auto& d : datagrams) {
    ASSERT_TRUE(json::accept(d)) << d;
    const json j = json::parse(d);
    (j["schema"] == "mbobserver.status/1" ? statuses : estimates).push_back(j);
    jsonl += d + "\n";
  }
  EXPECT_EQ(estimates.size(), summary["publisher"]["estimates_sent"].get<std::size_t>());
  EXPECT_EQ(statuses.size(), summary["publisher"]["status_sent"].get<std::size_t>());
  ASSERT_FALSE(estimates.empty());
  ASSERT_FALSE(statuses.empty());
  EXPECT_EQ(estimates.front()["schema"], "mbobserver.estimate/2");
  // The last datagram is the status sent at shutdown, with the final counters.
  const json last = json::parse(datagrams.back());
  ASSERT_EQ(last["schema"], "mbobserver.status/1");
  EXPECT_EQ(last["frames"]["received"], summary["frames"]["received"]);
  EXPECT_EQ(last["frames"]["decoded"], summary["frames"]["decoded"]);
  EXPECT_EQ(last["steps"], summary["steps"]);
  EXPECT_EQ(last["seq"].get<std::size_t>(), statuses.size() - 1);
  // The summary is the final status record (docs/summary.schema.json): every field of the
  // last status datagram, with the counters that had stopped changing equal.
  for (const auto& [key, value] : last.items()) EXPECT_TRUE(summary.contains(key)) << key;
  for (const char* key : {"frames", "queues", "steps", "deadline_misses", "deadline_miss_episodes", "resets",
                          "observer", "valid", "faults", "valid_steps", "faults_steps", "sensors"})
    EXPECT_EQ(last[key], summary[key]) << key;
  EXPECT_EQ(summary["valid_steps"].get<double>() / summary["steps"].get<double>(),
            summary["run"]["valid_fraction"].get<double>());
  // Decimated to rate_hz = 100 of estimator time: every 5th step at 2 ms.
  for (std::size_t i = 1; i < estimates.size(); ++i)
    EXPECT_EQ(estimates[i]["seq"].get<int>() - estimates[i - 1]["seq"].get<int>(), 5);

  const fs::path sent = temp_path("datagrams.jsonl");
  write_file(sent, jsonl);
  const Result v = validate_with_schemas(sent);
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_NE(
      v.out.find(std::to_string(datagrams.size()) + " of " + std::to_string(datagrams.size()) + " datagrams valid"),
      std::string::npos)
      << v.out;

  const fs::path summary_line = temp_path("summary.jsonl");
  write_file(summary_line, summary.dump() + "\n");
  const Result vs = validate_with_schemas(summary_line);
  EXPECT_EQ(vs.code, 0) << vs.out;
  EXPECT_NE(vs.out.find("1 of 1 datagrams valid"), std::string::npos) << vs.out;

  // Every line of the record file is an estimate (without the wall-clock fields).
  const auto lines = lines_of(record);
  ASSERT_EQ(lines.size(), summary["steps"].get<std::size_t>());
  EXPECT_FALSE(json::parse(lines.front()).contains("t_wall"));
  const Result vr = validate_with_schemas(record);
  EXPECT_EQ(vr.code, 0) << vr.out;
  EXPECT_NE(vr.out.find(std::to_string(lines.size()) + " of " + std::to_string(lines.size()) + " datagrams valid"),
            std::string::npos)
      << vr.out;
}

// mbobserver-listen --csv on what the daemon really sends: the CSV a Python csv reader reads
// back holds every estimate the daemon counts as sent, with the values of the JSON lines the
// same listener recorded (tests/runtime/check_csv.py, the oracle).
TEST(Datagrams, ListenWritesTheDaemonsEstimatesAsCsv) {
  const unsigned short port = [] {
    mbo::test::UdpReceiver probe;  // the kernel picks an unused port; released on return
    return probe.port();
  }();
  const fs::path jsonl = temp_path("listen.jsonl"), csv = temp_path("listen.csv");
  Child listen(
      MBO_LISTEN,
      {"--port", std::to_string(port), "--bind", "127.0.0.1", "--jsonl", jsonl.string(), "--csv", csv.string()},
      "listen");
  // UDP sent before the listener binds is lost: knock until it has written the knock.
  const int knock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  ASSERT_TRUE(poll_until([&] {
    const std::string hello = R"({"schema":"test.knock/1"})";
    ::sendto(knock, hello.data(), hello.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    return !lines_of(jsonl).empty();
  }));
  ::close(knock);

  json c = default_config();
  c["publish"]["enabled"] = true;
  c["publish"]["address"] = "127.0.0.1";
  c["publish"]["port"] = port;
  // 20 estimates a second of log: the whole piece fits the listener's default socket buffer
  // even if it were not scheduled while the daemon runs at full speed.
  c["publish"]["rate_hz"] = 20;
  const fs::path log = CandumpLog::read(drive_log()).first_seconds(1.5).write("piece");
  const Replay r = replay(write_config(c, "config"), log, "listened");
  ASSERT_EQ(r.result.code, 0) << r.result.err;
  const std::size_t estimates = r.summary["publisher"]["estimates_sent"].get<std::size_t>();
  const std::size_t statuses = r.summary["publisher"]["status_sent"].get<std::size_t>();
  ASSERT_GE(estimates, 20u);
  ASSERT_TRUE(poll_until([&] { return lines_of(jsonl).size() >= 1 + estimates + statuses; }));
  listen.signal(SIGTERM);
  const Result l = listen.wait();
  ASSERT_EQ(l.code, 0) << l.err;
  EXPECT_NE(l.err.find(std::to_string(estimates) + " CSV rows ("), std::string::npos) << l.err;
  EXPECT_EQ(lines_of(csv).size(), 1 + estimates);

  const Result check =
      run("/usr/bin/python3", {MBO_SOURCE_DIR "/tests/runtime/check_csv.py", csv.string(), jsonl.string()});
  EXPECT_EQ(check.code, 0) << check.out << check.err;
  EXPECT_EQ(check.out.rfind("rows " + std::to_string(estimates) + " mismatched 0 columns ", 0), 0u) << check.out;
}
