// sd_notify against a fake service manager: an AF_UNIX datagram socket in a temporary
// directory, named by $NOTIFY_SOCKET as systemd would (sd_notify(3)).
#include "mbobserver/runtime/notify.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

using namespace mbo::runtime;
using namespace std::chrono_literals;

namespace {

class FakeServiceManager {
 public:
  FakeServiceManager() {
    dir_ = std::filesystem::temp_directory_path() / ("mbo_notify_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "notify").string();
    std::filesystem::remove(path_);
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    path_.copy(a.sun_path, sizeof a.sun_path - 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::setenv("NOTIFY_SOCKET", path_.c_str(), 1);
  }
  ~FakeServiceManager() {
    ::unsetenv("NOTIFY_SOCKET");
    ::unsetenv("WATCHDOG_USEC");
    ::unsetenv("WATCHDOG_PID");
    ::close(fd_);
    std::filesystem::remove_all(dir_);
  }
  // The next message; nullopt if none within timeout_ms (0: only what is already queued).
  std::optional<std::string> receive(int timeout_ms = 30000) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return std::nullopt;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0) return std::nullopt;
    return std::string(buf, static_cast<std::size_t>(n));
  }

 private:
  std::filesystem::path dir_;
  std::string path_;
  int fd_ = -1;
};

}  // namespace

TEST(Notifier, MessagesArriveAtTheNotifySocket) {
  FakeServiceManager manager;
  Notifier n;
  EXPECT_TRUE(n.enabled());
  EXPECT_TRUE(n.ready());
  EXPECT_EQ(manager.receive(), "READY=1");
  EXPECT_TRUE(n.status("steps 500, valid\nsecond line"));
  EXPECT_EQ(manager.receive(), "STATUS=steps 500, valid second line");
  EXPECT_TRUE(n.watchdog());
  EXPECT_EQ(manager.receive(), "WATCHDOG=1");
  EXPECT_TRUE(n.stopping());
  EXPECT_EQ(manager.receive(), "STOPPING=1");
  EXPECT_EQ(n.sent(), 4u);
  EXPECT_EQ(n.failures(), 0u);
}

TEST(Notifier, OutsideSystemdEverythingIsANoOp) {
  ::unsetenv("NOTIFY_SOCKET");
  Notifier n;
  EXPECT_FALSE(n.enabled());
  EXPECT_FALSE(n.ready());
  EXPECT_FALSE(n.watchdog());
  EXPECT_EQ(n.failures(), 0u);
  EXPECT_EQ(Notifier::watchdog_interval().count(), 0);
}

TEST(Notifier, AVanishedManagerIsCountedAsAFailure) {
  ::setenv("NOTIFY_SOCKET", "/nonexistent-dir/notify", 1);
  Notifier n;
  EXPECT_FALSE(n.ready());
  EXPECT_EQ(n.failures(), 1u);
  ::unsetenv("NOTIFY_SOCKET");
}

TEST(Notifier, WatchdogIntervalComesFromTheEnvironment) {
  FakeServiceManager manager;
  ::setenv("WATCHDOG_USEC", "2000000", 1);
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  EXPECT_EQ(Notifier::watchdog_interval(), 2s);
  ::setenv("WATCHDOG_PID", "1", 1);  // meant for another process
  EXPECT_EQ(Notifier::watchdog_interval().count(), 0);
}

TEST(WatchdogFeeder, FeedsOnlyWhileTheEstimatorMakesProgress) {
  FakeServiceManager manager;
  boost::asio::io_context io;
  Notifier n;
  ProgressWatchdog progress;
  WatchdogFeeder feeder(io, n, progress, 2s);
  feeder.start();

  progress.kick();
  EXPECT_TRUE(feeder.check());
  EXPECT_EQ(manager.receive(), "WATCHDOG=1");

  EXPECT_FALSE(feeder.check());  // no step since: no keep-alive, so systemd will act
  EXPECT_EQ(manager.receive(0), std::nullopt);  // sd_notify is synchronous: nothing queued
  EXPECT_EQ(feeder.stalls(), 1u);

  progress.kick();
  progress.kick();
  EXPECT_TRUE(feeder.check());
  EXPECT_EQ(manager.receive(), "WATCHDOG=1");
  EXPECT_EQ(feeder.fed(), 2u);
  feeder.stop();
}

TEST(WatchdogFeeder, TheTimerChecksOnItsOwnWhileAnEstimatorThreadKicks) {
  FakeServiceManager manager;
  boost::asio::io_context io;
  Notifier n;
  ProgressWatchdog progress;
  WatchdogFeeder feeder(io, n, progress, 20ms);
  feeder.start();
  std::atomic<bool> stop{false};
  std::thread estimator([&] {
    while (!stop.load()) {
      progress.kick();
      std::this_thread::sleep_for(1ms);
    }
  });
  auto guard = boost::asio::make_work_guard(io);
  std::thread io_thread([&] { io.run(); });
  EXPECT_EQ(manager.receive(), "WATCHDOG=1");
  EXPECT_EQ(manager.receive(), "WATCHDOG=1");
  stop = true;
  estimator.join();
  boost::asio::post(io, [&] {
    feeder.stop();
    guard.reset();
  });
  io_thread.join();
}
