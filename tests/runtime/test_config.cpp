#include "mbobserver/runtime/config.hpp"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mbobserver/runtime/daemon.hpp"

using namespace mbo::runtime;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

nlohmann::json parse(const std::string& text) { return mbo::parse_json_text(text, "cfg.json"); }

template <class F>
std::string error_of(const std::string& text, const char* pointer, F read) {
  const auto doc = parse(text);
  try {
    read(mbo::JsonReader(doc, "cfg.json", pointer));
  } catch (const mbo::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string publish_error(const std::string& text) {
  return error_of(text, "/publish", [](const mbo::JsonReader& r) { read_publish_config(r); });
}
std::string runtime_error(const std::string& text) {
  return error_of(text, "/runtime", [](const mbo::JsonReader& r) { read_runtime_config(r); });
}

}  // namespace

TEST(PublishConfig, DefaultsFromAnEmptySection) {
  const auto doc = parse("{}");
  const PublishConfig c = read_publish_config(mbo::JsonReader(doc, "cfg.json", "/publish"));
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.address, "127.0.0.1");
  EXPECT_EQ(c.port, kDefaultPort);
  EXPECT_EQ(c.rate_hz, 100);
  EXPECT_EQ(c.status_period_s, 1.0);
  EXPECT_EQ(c.multicast.ttl, 1);
  EXPECT_TRUE(c.multicast.loopback);
}

TEST(PublishConfig, EveryKey) {
  const auto doc = parse(R"({"enabled": false, "address": "239.192.0.8", "port": 5000,
      "rate_hz": 50, "status_period_s": 2,
      "multicast": {"ttl": 3, "interface": "eth0", "loopback": false}})");
  const PublishConfig c = read_publish_config(mbo::JsonReader(doc, "cfg.json", "/publish"));
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(c.address, "239.192.0.8");
  EXPECT_EQ(c.port, 5000);
  EXPECT_EQ(c.rate_hz, 50);
  EXPECT_EQ(c.status_period_s, 2);
  EXPECT_EQ(c.multicast.ttl, 3);
  EXPECT_EQ(c.multicast.interface, "eth0");
  EXPECT_FALSE(c.multicast.loopback);
}

TEST(PublishConfig, BadValuesNameTheFileAndPointer) {
  EXPECT_THAT(publish_error(R"({"addres": "1.2.3.4"})"), HasSubstr("cfg.json: /publish/addres: unknown key"));
  EXPECT_THAT(publish_error(R"({"address": "car.local"})"),
              HasSubstr("cfg.json: /publish/address: expected an IPv4 or IPv6 address"));
  EXPECT_THAT(publish_error(R"({"port": 70000})"), HasSubstr("/publish/port: must be in [1, 65535]"));
  EXPECT_THAT(publish_error(R"({"port": "80"})"), HasSubstr("/publish/port: expected an integer"));
  EXPECT_THAT(publish_error(R"({"rate_hz": 0})"), HasSubstr("/publish/rate_hz: must be in"));
  EXPECT_THAT(publish_error(R"({"multicast": {"ttl": 256}})"),
              HasSubstr("/publish/multicast/ttl: must be in [0, 255]"));
  EXPECT_THAT(publish_error(R"({"multicast": {"interface": "eth 0"}})"),
              HasSubstr("/publish/multicast/interface: expected an interface name"));
  EXPECT_THAT(publish_error(R"({"address": "ff02::1", "multicast": {"interface": "10.0.0.1"}})"),
              HasSubstr("an IPv6 group needs an interface name"));
  EXPECT_THAT(publish_error(R"({"multicast": {"loop": true}})"), HasSubstr("/publish/multicast/loop: unknown key"));
}

TEST(RuntimeConfig, DefaultsAndEveryKey) {
  const auto empty = parse("{}");
  const RuntimeConfig d = read_runtime_config(mbo::JsonReader(empty, "cfg.json", "/runtime"));
  EXPECT_EQ(d.step_s, 0.002);
  EXPECT_EQ(d.realtime_priority, 0);
  EXPECT_FALSE(d.lock_memory);
  EXPECT_EQ(d.queue_capacity, 8192u);
  EXPECT_EQ(d.estimate_queue_capacity, 256u);
  EXPECT_TRUE(d.watchdog);

  const auto doc = parse(R"({"step_s": 0.001, "realtime_priority": 40, "lock_memory": true,
      "queue_capacity": 1024, "estimate_queue_capacity": 64, "watchdog": false})");
  const RuntimeConfig c = read_runtime_config(mbo::JsonReader(doc, "cfg.json", "/runtime"));
  EXPECT_EQ(c.step_s, 0.001);
  EXPECT_EQ(c.realtime_priority, 40);
  EXPECT_TRUE(c.lock_memory);
  EXPECT_EQ(c.queue_capacity, 1024u);
  EXPECT_EQ(c.estimate_queue_capacity, 64u);
  EXPECT_FALSE(c.watchdog);
}

TEST(RuntimeConfig, BadValuesNameTheFileAndPointer) {
  EXPECT_THAT(runtime_error(R"({"step_s": 0})"), HasSubstr("cfg.json: /runtime/step_s: must be in"));
  EXPECT_THAT(runtime_error(R"({"realtime_priority": 100})"),
              HasSubstr("/runtime/realtime_priority: must be in [0, 99]"));
  EXPECT_THAT(runtime_error(R"({"realtime_priority": 1.5})"),
              HasSubstr("/runtime/realtime_priority: expected an integer"));
  EXPECT_THAT(runtime_error(R"({"lock_memory": "yes"})"), HasSubstr("/runtime/lock_memory: expected true or false"));
  EXPECT_THAT(runtime_error(R"({"queue_capacity": 1})"), HasSubstr("/runtime/queue_capacity: must be in"));
  EXPECT_THAT(runtime_error(R"({"stepsize": 0.002})"), HasSubstr("/runtime/stepsize: unknown key"));
}

TEST(DaemonConfig, FixesStampedAtTheirTimeRefuseALatencyBesides) {
  // The embedded default with a serial receiver whose sentences carry their fix time, and the
  // observer told the fixes are 0.1 s late: they would be taken back twice.
  const fs::path src = fs::path(MBO_SOURCE_DIR) / "config";
  std::ifstream in(src / "mbobserver.json");
  auto doc = nlohmann::json::parse(in);
  doc["vehicle"] = (src / "vehicles" / "sedan.json").string();
  doc["can"]["dbc"] = nlohmann::json::array({(src / "can" / "vehicle.dbc").string()});
  doc["gnss"] = {{"device", "/dev/ttyACM0"}, {"stamp", "fix_time"}};
  const auto dir = fs::path(MBO_BINARY_DIR) / "config-test-scratch";
  fs::create_directories(dir);
  auto write = [&](const char* name) { std::ofstream(dir / name) << doc.dump(); };
  doc["observer"]["gnss"]["latency_s"] = 0.0;
  doc["observer"]["gnss"].erase("latency_std");
  write("ok.json");
  const auto ok = load_daemon_config(dir / "ok.json");
  EXPECT_TRUE(ok.gnss_serial->stamp_fix_time);
  // each fix's latency is measured: the unmeasured receiver's default sigma (0.05 s) is not taken
  EXPECT_EQ(ok.observer.gnss.latency_std, 0.0);
  doc["observer"]["gnss"]["latency_std"] = 0.01;  // unless the configuration says one
  write("ok_std.json");
  EXPECT_EQ(load_daemon_config(dir / "ok_std.json").observer.gnss.latency_std, 0.01);
  doc["observer"]["gnss"].erase("latency_std");
  doc["observer"]["gnss"]["latency_s"] = 0.1;
  write("twice.json");
  try {
    load_daemon_config(dir / "twice.json");
    FAIL() << "a latency besides fix-time stamps was accepted";
  } catch (const mbo::ConfigError& e) {
    EXPECT_THAT(
        e.what(),
        HasSubstr("twice.json: /observer/gnss/latency_s: the fixes are stamped at their own time (/gnss/stamp"));
  }
  // nor learned: a calibration file's latency would be restored on top
  doc["observer"]["gnss"]["latency_s"] = 0.0;
  doc["observer"]["gnss"]["estimate_latency"] = nlohmann::json::object();
  write("learned.json");
  try {
    load_daemon_config(dir / "learned.json");
    FAIL() << "a learned latency besides fix-time stamps was accepted";
  } catch (const mbo::ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("learned.json: /observer/gnss/estimate_latency: the fixes are stamped"));
  }
}
