// The daemon live on a serial NMEA receiver alone (a pseudo-terminal: no CAN on these
// machines), its sentences stamped at their fix time: the receiver's counters reach the status
// datagrams, valid against docs/status.schema.json (python3-jsonschema), a fix whose time
// disagrees with the host clock is dropped, counted and warned of once, and SIGTERM stops it cleanly.
#include <fcntl.h>
#include <unistd.h>
#include <csignal>
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../runtime/udp_receiver.hpp"
#include "../support/nmea_text.hpp"
#include "harness.hpp"

using namespace mbo::dtest;
using ::testing::HasSubstr;

TEST(LiveNmea, FixTimeStampsAndTheReceiversCountersReachTheStatus) {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  mbo::test::UdpReceiver rx;
  json c = default_config();
  c["can"]["interfaces"] = json::array();
  // max_fix_age_s: however slowly a loaded machine reads the lines
  c["gnss"] = {{"device", ptsname(master)}, {"stamp", "fix_time"}, {"max_fix_age_s", 10}};
  c["publish"]["enabled"] = true;
  c["publish"]["address"] = "127.0.0.1";
  c["publish"]["port"] = rx.port();
  c["publish"]["status_period_s"] = 0.1;
  const fs::path config = write_config(c, "config");
  Child daemon(MBO_DAEMON, {"--config", config.string(), "--no-progress"}, "daemon");

  std::vector<json> statuses;
  auto gnss_of = [&]() -> json {
    while (auto d = rx.receive(10)) {
      const json j = json::parse(*d);
      if (j["schema"] == "mbobserver.status/1") statuses.push_back(j);
    }
    return statuses.empty() || !statuses.back().contains("gnss_serial") ? json() : statuses.back()["gnss_serial"];
  };
  // connected: the port is open, what is written now is read
  ASSERT_TRUE(poll_until([&] {
    const json g = gnss_of();
    return !daemon.running() || (g.is_object() && g["connected"].get<bool>());
  })) << "no status with the receiver connected";
  ASSERT_TRUE(daemon.running()) << daemon.wait().err;

  // two fixes 0.1 s old, one from a clock 60 s apart, and a line that is not NMEA
  const std::string text =
      mbo::test::gga_aged(0.1) + mbo::test::gga_aged(0.1) + mbo::test::gga_aged(60) + "$GPGGA,garbage*00\r\n";
  ASSERT_EQ(::write(master, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ASSERT_TRUE(poll_until([&] {
    const json g = gnss_of();
    return !daemon.running() || (g.is_object() && g["lines"].get<int>() >= 4);
  }));
  ASSERT_TRUE(daemon.running()) << daemon.wait().err;
  const json g = statuses.back()["gnss_serial"];
  EXPECT_EQ(g["parsed"], 3);
  EXPECT_EQ(g["rejected"], 1);
  EXPECT_EQ(g["fix_time_stamped"], 2);
  EXPECT_EQ(g["fix_time_unsynchronised"], 1);
  EXPECT_GT(g["last_fix_age_s"].get<double>(), 59);

  daemon.signal(SIGTERM);
  const Result r = daemon.wait();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("is the host clock on GNSS time?"));
  ::close(master);

  std::string jsonl;
  for (const auto& s : statuses) jsonl += s.dump() + "\n";
  const fs::path file = temp_path("statuses.jsonl");
  write_file(file, jsonl);
  const Result v = validate_with_schemas(file);
  EXPECT_EQ(v.code, 0) << v.out;
}
