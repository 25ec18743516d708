// SocketCanSource: the reading and error paths over a socketpair carrying raw kernel records
// (this machine has no AF_CAN), the real socket's failure message, filters, records, cmsgs.
#include <chrono>
#include <cstring>
#include <ctime>
#include <deque>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/can/error.h>
#include <linux/can/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mbobserver/io/socketcan_source.hpp"

using namespace mbo::io;
using ::testing::HasSubstr;

namespace {

double monotonic_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs the io_context until `done` holds. The deadline only stops a broken test from
// hanging; a passing run ends as soon as the events have happened.
template <class Pred>
bool run_until(boost::asio::io_context& io, Pred done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    io.restart();
    io.run_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::vector<std::uint8_t> classic(canid_t id, std::initializer_list<std::uint8_t> data) {
  can_frame f{};
  f.can_id = id;
  f.len = static_cast<std::uint8_t>(data.size());
  std::copy(data.begin(), data.end(), f.data);
  std::vector<std::uint8_t> out(sizeof f);
  std::memcpy(out.data(), &f, sizeof f);
  return out;
}

std::vector<std::uint8_t> fd_record(canid_t id, std::uint8_t len, std::uint8_t flags) {
  canfd_frame f{};
  f.can_id = id;
  f.len = len;
  f.flags = flags;
  for (std::uint8_t i = 0; i < len; ++i) f.data[i] = i;
  std::vector<std::uint8_t> out(sizeof f);
  std::memcpy(out.data(), &f, sizeof f);
  return out;
}

// Hands out one end of a fresh SOCK_SEQPACKET socketpair per open (message boundaries like
// CAN_RAW), after a scripted number of failures; the test writes records into the other end.
class PairBackend : public CanSocketBackend {
 public:
  struct Shared {
    int failures_before_open = 0;
    bool permanent = false;
    std::deque<int> peers;  // test side of each opened pair
    int opens = 0, attempts = 0;
    std::optional<ControllerStatus> status;
    int restarts = 0;
  };
  explicit PairBackend(std::shared_ptr<Shared> s) : s_(std::move(s)) {}
  int open(const SocketCanOptions& o) override {
    ++s_->attempts;
    if (s_->failures_before_open > 0) {
      --s_->failures_before_open;
      throw CanOpenError(o.interface + ": scripted failure", s_->permanent);
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
      throw CanOpenError("socketpair failed", true);
    const int one = 1;
    setsockopt(sv[0], SOL_SOCKET, SO_TIMESTAMP, &one, sizeof one);
    s_->peers.push_back(sv[1]);
    ++s_->opens;
    return sv[0];
  }
  std::optional<ControllerStatus> controller_status(const std::string&) override { return s_->status; }
  bool restart(const std::string&) override {
    ++s_->restarts;
    s_->status->state = CAN_STATE_ERROR_ACTIVE;
    return true;
  }

 private:
  std::shared_ptr<Shared> s_;
};

SocketCanOptions fast_options() {
  SocketCanOptions o;
  o.interface = "test0";
  o.channel = 3;
  o.reconnect_initial_s = 0.001;
  o.reconnect_max_s = 0.004;
  o.state_poll_s = 0.001;
  return o;
}

}  // namespace

TEST(SocketCan, KernelFiltersMatchExactIdsOfDataFrames) {
  auto f = kernel_filters({{0x123, false}, {0x18FEF100, true}});
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].can_id, 0x123u);
  EXPECT_EQ(f[0].can_mask, CAN_SFF_MASK | CAN_EFF_FLAG | CAN_RTR_FLAG);
  EXPECT_EQ(f[1].can_id, 0x18FEF100u | CAN_EFF_FLAG);
  EXPECT_EQ(f[1].can_mask, CAN_EFF_MASK | CAN_EFF_FLAG | CAN_RTR_FLAG);
}

TEST(SocketCan, RecordsBecomeFrames) {
  CanFrame f;
  ASSERT_TRUE(frame_from_record(classic(0x123, {1, 2, 3}), f));
  EXPECT_EQ(f.id, 0x123u);
  EXPECT_FALSE(f.extended || f.remote || f.error || f.fd);
  EXPECT_EQ(f.len, 3);
  EXPECT_EQ(f.data[2], 3);
  ASSERT_TRUE(frame_from_record(classic(0x1ABCDEF0 | CAN_EFF_FLAG | CAN_RTR_FLAG, {}), f));
  EXPECT_TRUE(f.extended && f.remote);
  EXPECT_EQ(f.id, 0x1ABCDEF0u);
  ASSERT_TRUE(frame_from_record(classic(CAN_ERR_FLAG | CAN_ERR_BUSOFF, {0, 0, 0, 0, 0, 0, 0, 0}), f));
  EXPECT_TRUE(f.error);
  EXPECT_EQ(f.id, static_cast<std::uint32_t>(CAN_ERR_BUSOFF));
  ASSERT_TRUE(frame_from_record(fd_record(0x7FF, 64, CANFD_BRS), f));
  EXPECT_TRUE(f.fd && f.brs && !f.esi);
  EXPECT_EQ(f.len, 64);
  EXPECT_EQ(f.data[63], 63);
  auto bad = classic(0x1, {});
  bad[4] = 9;  // len > 8
  EXPECT_FALSE(frame_from_record(bad, f));
  EXPECT_FALSE(frame_from_record(std::vector<std::uint8_t>(15), f));
  EXPECT_FALSE(frame_from_record(std::vector<std::uint8_t>(73), f));
}

TEST(SocketCan, AncillaryTimestampAndDrops) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timeval)) + CMSG_SPACE(sizeof(std::uint32_t))] = {};
  msghdr msg{};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SO_TIMESTAMP;
  c->cmsg_len = CMSG_LEN(sizeof(timeval));
  timeval tv{1700000000, 250000};
  std::memcpy(CMSG_DATA(c), &tv, sizeof tv);
  c = CMSG_NXTHDR(&msg, c);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SO_RXQ_OVFL;
  c->cmsg_len = CMSG_LEN(sizeof(std::uint32_t));
  std::uint32_t drops = 42;
  std::memcpy(CMSG_DATA(c), &drops, sizeof drops);
  RxAncillary a = parse_ancillary(msg);
  ASSERT_TRUE(a.realtime_s && a.drops);
  EXPECT_DOUBLE_EQ(*a.realtime_s, 1700000000.25);
  EXPECT_EQ(*a.drops, 42u);
}

TEST(SocketCan, DropCounterAcrossWrapAndSockets) {
  DropCounter d;
  d.update(5);
  d.update(5);
  d.update(9);
  EXPECT_EQ(d.total(), 9u);
  d.update(0xFFFFFFFEu);
  d.update(3);  // wrapped: 5 more
  EXPECT_EQ(d.total(), 9ull + (0xFFFFFFFEull - 9) + 5);
  d.new_socket();
  d.update(2);
  EXPECT_EQ(d.total(), 9ull + (0xFFFFFFFEull - 9) + 5 + 2);
}

TEST(SocketCan, RealSocketFailsWithOneClearMessage) {
  int probe = ::socket(PF_CAN, SOCK_RAW, CAN_RAW);
  if (probe >= 0) {
    ::close(probe);
    GTEST_SKIP() << "this kernel has SocketCAN";
  }
  auto backend = make_socketcan_backend();
  SocketCanOptions o;
  o.interface = "can0";
  try {
    backend->open(o);
    ADD_FAILURE() << "open succeeded";
  } catch (const CanOpenError& e) {
    EXPECT_TRUE(e.permanent());
    EXPECT_STREQ(e.what(),
                 "can0: cannot open a CAN_RAW socket: Address family not supported by protocol "
                 "(this kernel has no SocketCAN support: load the can and can_raw modules)");
  }
  // libsocketcan on an interface that does not exist: no status, not a crash.
  EXPECT_FALSE(backend->controller_status("mbo-none0").has_value());
  EXPECT_FALSE(backend->restart("mbo-none0"));
  // The source gives up once, says why, and stays quiet.
  boost::asio::io_context io;
  std::string fatal;
  SocketCanSource src(io, o, [](const CanFrame&) {});
  src.on_fatal = [&](const std::string& m) { fatal = m; };
  src.start();
  io.run_for(std::chrono::milliseconds(20));
  EXPECT_THAT(fatal, HasSubstr("can0: cannot open a CAN_RAW socket"));
  CanHealth h = src.health();
  EXPECT_TRUE(h.failed);
  EXPECT_FALSE(h.connected);
  EXPECT_EQ(h.open_failures, 1u);
  EXPECT_EQ(h.last_error, fatal);
}

TEST(SocketCan, ReadsFramesErrorsAndReconnectsWithBackoff) {
  auto shared = std::make_shared<PairBackend::Shared>();
  shared->failures_before_open = 3;  // the interface is not there yet
  boost::asio::io_context io;
  std::vector<CanFrame> got;
  SocketCanSource src(
      io, fast_options(), [&](const CanFrame& f) { got.push_back(f); }, std::make_unique<PairBackend>(shared));
  src.start();
  ASSERT_TRUE(run_until(io, [&] { return shared->opens == 1; }));
  EXPECT_EQ(shared->attempts, 4);
  const int peer = shared->peers.back();
  const double before = monotonic_s();
  for (const auto& rec : {classic(0x123, {0xAA, 0xBB}), classic(0x18FEF100 | CAN_EFF_FLAG, {1}),
                          classic(CAN_ERR_FLAG | CAN_ERR_CRTL, {0, 4, 0, 0, 0, 0, 0, 0}),
                          fd_record(0x100, 12, CANFD_BRS | CANFD_ESI), std::vector<std::uint8_t>{1, 2, 3, 4, 5}})
    ASSERT_EQ(::send(peer, rec.data(), rec.size(), 0), static_cast<ssize_t>(rec.size()));
  ASSERT_TRUE(run_until(io, [&] { return src.health().bad_records == 1; }));
  const double after = monotonic_s();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].id, 0x123u);
  EXPECT_EQ(got[0].channel, 3);
  EXPECT_EQ(got[0].data[1], 0xBB);
  EXPECT_TRUE(got[1].extended);
  EXPECT_TRUE(got[2].error);
  EXPECT_TRUE(got[3].fd && got[3].brs && got[3].esi);
  // SO_TIMESTAMP (wall clock) turned into CLOCK_MONOTONIC: between send and receipt, give or
  // take the offset sampling.
  EXPECT_GT(got[0].t, before - 1.0);
  EXPECT_LT(got[0].t, after + 1.0);
  CanHealth h = src.health();
  EXPECT_EQ(h.frames, 4u);
  EXPECT_EQ(h.error_frames, 1u);
  EXPECT_EQ(h.open_failures, 3u);
  EXPECT_EQ(h.reconnects, 1u);
  EXPECT_TRUE(h.connected);

  // The interface goes away: the source notices, backs off, reopens, reads again.
  shared->failures_before_open = 2;
  ::close(peer);
  ASSERT_TRUE(run_until(io, [&] { return shared->opens == 2; }));
  h = src.health();
  EXPECT_EQ(h.disconnects, 1u);
  EXPECT_EQ(h.open_failures, 5u);
  auto rec = classic(0x321, {7});
  ASSERT_EQ(::send(shared->peers.back(), rec.data(), rec.size(), 0), 16);
  ASSERT_TRUE(run_until(io, [&] { return got.size() == 5; }));
  EXPECT_EQ(got[4].id, 0x321u);
  EXPECT_EQ(src.health().reconnects, 2u);
  // Once more without failures: the disconnect's reason is what the health says.
  ::close(shared->peers.back());
  ASSERT_TRUE(run_until(io, [&] { return shared->opens == 3; }));
  h = src.health();
  EXPECT_EQ(h.disconnects, 2u);
  EXPECT_EQ(h.reconnects, 3u);
  EXPECT_EQ(h.last_error, "test0: socket closed");
  src.stop();
  ::close(shared->peers.back());
  EXPECT_FALSE(src.health().connected);
}

TEST(SocketCan, PermanentFailureStopsRetrying) {
  auto shared = std::make_shared<PairBackend::Shared>();
  shared->failures_before_open = 100;
  shared->permanent = true;
  boost::asio::io_context io;
  int fatal_calls = 0;
  SocketCanSource src(
      io, fast_options(), [](const CanFrame&) {}, std::make_unique<PairBackend>(shared));
  src.on_fatal = [&](const std::string&) { ++fatal_calls; };
  src.start();
  io.run_for(std::chrono::milliseconds(30));
  EXPECT_EQ(shared->attempts, 1);
  EXPECT_EQ(fatal_calls, 1);
  EXPECT_TRUE(src.health().failed);
}

TEST(SocketCan, BusOffIsReportedAndRestartedWhenAsked) {
  auto shared = std::make_shared<PairBackend::Shared>();
  shared->status = ControllerStatus{CAN_STATE_BUS_OFF, 255, 3};
  boost::asio::io_context io;
  auto o = fast_options();
  o.restart_bus_off = true;
  SocketCanSource src(
      io, o, [](const CanFrame&) {}, std::make_unique<PairBackend>(shared));
  src.start();
  ASSERT_TRUE(run_until(io, [&] { return src.health().controller_state == CAN_STATE_ERROR_ACTIVE; }));
  EXPECT_EQ(shared->restarts, 1);
  CanHealth h = src.health();
  EXPECT_EQ(h.bus_off_restarts, 1u);
  EXPECT_EQ(h.tx_errors, 255);
  EXPECT_EQ(h.rx_errors, 3);
  src.stop();
  for (int fd : shared->peers) ::close(fd);
}
