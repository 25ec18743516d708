#include "mbobserver/runtime/fixed_step_clock.hpp"
#include "mbobserver/runtime/udp_publisher.hpp"

#include <cerrno>
#include <thread>

#include <ifaddrs.h>
#include <net/if.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sample_records.hpp"
#include "udp_receiver.hpp"

using namespace mbo::runtime;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

PublishConfig loopback_config(unsigned short port, double rate_hz = 100) {
  PublishConfig c;
  c.address = "127.0.0.1";
  c.port = port;
  c.rate_hz = rate_hz;
  return c;
}

// Runs the io_context on this thread until `done()` or a generous hang guard.
template <class Pred>
bool run_until(boost::asio::io_context& io, Pred done) {
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    io.restart();
    io.run_for(20ms);
  }
  return true;
}

}  // namespace

TEST(Decimation, AtMostRateHzOfEstimatorTime) {
  EXPECT_EQ(decimation_for(100, 0.002), 5u);  // 500 Hz steps -> every 5th
  EXPECT_EQ(decimation_for(500, 0.002), 1u);
  EXPECT_EQ(decimation_for(1000, 0.002), 1u);  // never more often than every step
  EXPECT_EQ(decimation_for(30, 0.002), 17u);  // 29.4 Hz <= 30 Hz
  EXPECT_EQ(decimation_for(100, 0.01), 1u);
  EXPECT_EQ(decimation_for(0.5, 0.002), 1000u);
}

TEST(UdpPublisher, UnicastSendsOneStepInNWithItsLatency) {
  mbo::test::UdpReceiver rx;
  boost::asio::io_context io;
  UdpPublisher pub(io, loopback_config(rx.port()), 0.002);
  ASSERT_EQ(pub.decimation(), 5u);
  for (std::uint64_t seq = 0; seq < 20; ++seq) {
    auto r = mbo::test::sample_estimate(seq);
    r.step_end_mono_ns = monotonic_ns();
    pub.on_record(r);
  }
  for (std::uint64_t expected : {0u, 5u, 10u, 15u}) {
    auto d = rx.receive();
    ASSERT_TRUE(d) << "no datagram for seq " << expected;
    const json j = json::parse(*d);
    EXPECT_EQ(j["schema"], "mbobserver.estimate/2");
    EXPECT_EQ(j["seq"], expected);
    EXPECT_GE(j["latency_us"]["step_to_send"].get<double>(), 0.0);
  }
  EXPECT_EQ(pub.counters().records, 20u);
  EXPECT_EQ(pub.counters().estimates_sent, 4u);
  EXPECT_EQ(pub.counters().decimated, 16u);
  EXPECT_EQ(pub.counters().send_errors, 0u);
  EXPECT_EQ(pub.step_to_send().count(), 4u);
  EXPECT_EQ(pub.frame_to_step().count(), 20u);
}

TEST(UdpPublisher, StatusCombinesPublisherCountersWithTheDaemonsFiller) {
  mbo::test::UdpReceiver rx;
  boost::asio::io_context io;
  UdpPublisher pub(io, loopback_config(rx.port(), 500), 0.002);
  EstimateQueue queue(8);
  EventWakeup wakeup;
  pub.start(queue, wakeup, [](StatusRecord& s) {
    s.frames.received = 8000;
    s.add_queue("measurements", {.capacity = 8192, .overflows = 5});
  });
  pub.on_record(mbo::test::sample_estimate(0));
  ASSERT_TRUE(pub.send_status());
  ASSERT_TRUE(rx.receive());  // the estimate
  auto d = rx.receive();
  ASSERT_TRUE(d);
  const json j = json::parse(*d);
  EXPECT_EQ(j["schema"], "mbobserver.status/1");
  EXPECT_EQ(j["seq"], 0);
  EXPECT_EQ(j["frames"]["received"], 8000);
  EXPECT_EQ(j["queues"]["estimates"]["capacity"], 8);
  EXPECT_EQ(j["queue_overflows"], 5);
  EXPECT_EQ(j["publisher"]["records"], 1);
  EXPECT_EQ(j["publisher"]["estimates_sent"], 1);
  EXPECT_EQ(j["t"].get<double>(), 12.345);  // from the newest record
  EXPECT_EQ(j["faults"], json::array({"reset", "gnss_timeout"}));
  EXPECT_EQ(j["latency_us"]["frame_to_step"]["count"], 1);
  pub.stop();
}

TEST(UdpPublisher, AnUnreachableDestinationIsCountedNeverFatal) {
  // Linux refuses a datagram to the limited broadcast address without SO_BROADCAST (EACCES,
  // udp(7)): a real refusal by the kernel that needs no special network set-up.
  boost::asio::io_context io;
  PublishConfig c = loopback_config(47800, 500);
  c.address = "255.255.255.255";
  UdpPublisher pub(io, c, 0.002);
  for (std::uint64_t seq = 0; seq < 3; ++seq) EXPECT_NO_THROW(pub.on_record(mbo::test::sample_estimate(seq)));
  EXPECT_FALSE(pub.send_status());
  EXPECT_EQ(pub.counters().send_errors, 4u);
  EXPECT_EQ(pub.counters().estimates_sent, 0u);
  EXPECT_EQ(pub.counters().records, 3u);
  EXPECT_EQ(pub.counters().last_send_errno, EACCES);
  const StatusRecord s = pub.make_status();
  EXPECT_EQ(s.publisher.send_errors, 4u);
  EXPECT_EQ(json::parse(status_json(s))["publisher"]["last_send_error"], "EACCES");
}

TEST(UdpPublisher, RecordsCrossFromAnotherThreadAndStopSendsAFinalStatus) {
  mbo::test::UdpReceiver rx;
  boost::asio::io_context io;
  UdpPublisher pub(io, loopback_config(rx.port()), 0.002);
  EstimateQueue queue(512);
  EventWakeup wakeup;
  pub.start(queue, wakeup);
  constexpr std::uint64_t kRecords = 200;
  std::thread estimator([&] {
    for (std::uint64_t seq = 0; seq < kRecords; ++seq) {
      auto r = mbo::test::sample_estimate(seq);
      r.step_end_mono_ns = monotonic_ns();
      EXPECT_TRUE(hand_over(queue, wakeup, r));
    }
  });
  estimator.join();
  ASSERT_TRUE(run_until(io, [&] { return pub.counters().records == kRecords; }));
  pub.stop();
  EXPECT_EQ(pub.counters().estimates_sent, kRecords / 5);
  EXPECT_EQ(queue.overflows(), 0u);

  int estimates = 0;
  json final_status;
  while (auto d = rx.receive()) {
    const json j = json::parse(*d);
    if (j["schema"] == "mbobserver.estimate/2") {
      EXPECT_EQ(j["seq"].get<std::uint64_t>() % 5, 0u);
      ++estimates;
    } else if (j["publisher"]["records"] == kRecords) {
      final_status = j;
      break;
    }
  }
  EXPECT_EQ(estimates, static_cast<int>(kRecords / 5));
  ASSERT_FALSE(final_status.is_null()) << "no final status datagram";
  EXPECT_EQ(final_status["queues"]["estimates"]["pushed"], kRecords);
  EXPECT_EQ(final_status["queues"]["estimates"]["overflows"], 0);
}

TEST(UdpPublisher, StatusTimerSendsOnePerPeriod) {
  mbo::test::UdpReceiver rx;
  boost::asio::io_context io;
  PublishConfig c = loopback_config(rx.port());
  c.status_period_s = 0.05;
  UdpPublisher pub(io, c, 0.002);
  EstimateQueue queue(8);
  EventWakeup wakeup;
  pub.start(queue, wakeup);
  auto guard = boost::asio::make_work_guard(io);
  std::thread io_thread([&] { io.run(); });
  std::vector<std::uint64_t> seqs;
  while (seqs.size() < 3) {
    auto d = rx.receive();
    if (!d) break;  // hang guard expired
    seqs.push_back(json::parse(*d)["seq"].get<std::uint64_t>());
  }
  boost::asio::post(io, [&] {
    pub.stop();
    guard.reset();
  });
  io_thread.join();
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{0, 1, 2}));
}

TEST(UdpPublisher, DisabledPublisherStillMeasuresButSendsNothing) {
  boost::asio::io_context io;
  PublishConfig c = loopback_config(47800);
  c.enabled = false;
  UdpPublisher pub(io, c, 0.002);
  pub.on_record(mbo::test::sample_estimate(0));
  EXPECT_FALSE(pub.send_status());
  EXPECT_EQ(pub.counters().records, 1u);
  EXPECT_EQ(pub.counters().estimates_sent, 0u);
  EXPECT_EQ(pub.counters().send_errors, 0u);
}

TEST(UdpPublisher, AnUnknownMulticastInterfaceFailsAtStartUpWithItsName) {
  boost::asio::io_context io;
  PublishConfig c = loopback_config(47800);
  c.address = "239.255.77.77";
  c.multicast.interface = "nosuchif0";
  try {
    UdpPublisher pub(io, c, 0.002);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("nosuchif0"), std::string::npos) << e.what();
  }
}

TEST(UdpPublisher, MulticastWithTtlZeroReachesAListenerOnThisHost) {
  // TTL 0 keeps the datagrams on this host (ip(7) IP_MULTICAST_TTL); loopback delivers them.
  std::string itf;
  int ifindex = 0;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next)
      if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && (a->ifa_flags & IFF_UP) &&
          (a->ifa_flags & IFF_MULTICAST) && !(a->ifa_flags & IFF_LOOPBACK)) {
        itf = a->ifa_name;
        ifindex = static_cast<int>(::if_nametoindex(a->ifa_name));
        break;
      }
    ::freeifaddrs(list);
  }
  if (itf.empty()) GTEST_SKIP() << "no up, multicast-capable IPv4 interface on this host";

  mbo::test::UdpReceiver rx("0.0.0.0", 0);
  if (!rx.join("239.255.77.77", ifindex)) GTEST_SKIP() << "cannot join a group on " << itf;
  boost::asio::io_context io;
  PublishConfig c = loopback_config(rx.port(), 500);
  c.address = "239.255.77.77";
  c.multicast = {.ttl = 0, .interface = itf, .loopback = true};
  UdpPublisher pub(io, c, 0.002);
  std::optional<std::string> d;
  for (std::uint64_t seq = 0; seq < 100 && !d; ++seq) {  // the join may take effect late
    pub.on_record(mbo::test::sample_estimate(seq));
    d = rx.receive(300);
  }
  ASSERT_TRUE(d) << "nothing received on " << itf;
  EXPECT_EQ(json::parse(*d)["schema"], "mbobserver.estimate/2");
  EXPECT_EQ(pub.counters().send_errors, 0u);
}
