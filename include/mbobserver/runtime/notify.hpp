// systemd service notification (sd_notify(3)) and a watchdog fed by the estimator's progress.
//
// Type=notify: READY=1 once the inputs are open, STATUS=<one line> for `systemctl status`,
// STOPPING=1 at shutdown. WatchdogSec=: WATCHDOG=1 is sent by the I/O thread, but only when the
// estimator thread has completed steps since the previous check (ProgressWatchdog::kick), so a
// stalled estimator or a stalled I/O thread both let systemd's watchdog fire; a free-running
// timer would keep a dead estimator "alive".
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "mbobserver/runtime/asio.hpp"

namespace mbo::runtime {

class Notifier {
 public:
  // Outside systemd (no $NOTIFY_SOCKET) every call is a no-op that returns false.
  Notifier() = default;

  bool enabled() const;  // $NOTIFY_SOCKET is set
  bool ready() { return send("READY=1"); }
  bool stopping() { return send("STOPPING=1"); }
  bool watchdog() { return send("WATCHDOG=1"); }
  bool status(std::string_view line);  // "STATUS=" + line (newlines replaced by spaces)

  // sd_watchdog_enabled(3): the WatchdogSec= interval if the service manager expects
  // keep-alives from this process, else zero.
  static std::chrono::microseconds watchdog_interval();

  std::uint64_t sent() const { return sent_; }
  std::uint64_t failures() const { return failures_; }  // sd_notify returned an error

 private:
  bool send(const char* message);
  std::uint64_t sent_ = 0;
  std::uint64_t failures_ = 0;
};

// The estimator's progress counter: kick() once per completed step (estimator thread,
// wait-free, no allocation); read from the I/O thread.
class ProgressWatchdog {
 public:
  void kick() noexcept { steps_.store(steps_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
  std::uint64_t progress() const noexcept { return steps_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> steps_{0};
};

// I/O thread: every interval / 2 (the margin sd_watchdog_enabled(3) recommends), sends
// WATCHDOG=1 if and only if the estimator made progress since the last check.
class WatchdogFeeder {
 public:
  WatchdogFeeder(boost::asio::io_context& io, Notifier& notifier, const ProgressWatchdog& progress,
                 std::chrono::microseconds interval);
  void start();
  void stop();
  // One check, as the timer does it; true if WATCHDOG=1 was sent.
  bool check();

  std::uint64_t fed() const { return fed_; }
  std::uint64_t stalls() const { return stalls_; }  // checks that found no progress

 private:
  void arm();
  boost::asio::steady_timer timer_;
  Notifier& notifier_;
  const ProgressWatchdog& progress_;
  std::chrono::microseconds interval_;
  std::uint64_t last_progress_ = 0;
  std::uint64_t fed_ = 0;
  std::uint64_t stalls_ = 0;
  bool running_ = false;
  bool stalled_logged_ = false;
};

}  // namespace mbo::runtime
