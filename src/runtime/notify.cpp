#include "mbobserver/runtime/notify.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

namespace mbo::runtime {

bool Notifier::enabled() const { return std::getenv("NOTIFY_SOCKET") != nullptr; }

bool Notifier::send(const char* message) {
  // unset_environment = 0: the watchdog and later notifications need $NOTIFY_SOCKET again.
  const int r = ::sd_notify(0, message);
  if (r > 0) {
    ++sent_;
    return true;
  }
  if (r < 0) {
    ++failures_;
    if (failures_ == 1) spdlog::warn("sd_notify(\"{}\") failed: {}", message, std::strerror(-r));
  }
  return false;
}

bool Notifier::status(std::string_view line) {
  std::string message = "STATUS=";
  for (char c : line) message += (c == '\n' ? ' ' : c);  // one assignment per line (sd_notify(3))
  return send(message.c_str());
}

std::chrono::microseconds Notifier::watchdog_interval() {
  std::uint64_t usec = 0;
  // > 0 only if $WATCHDOG_USEC is set and $WATCHDOG_PID is unset or names this process.
  if (::sd_watchdog_enabled(0, &usec) > 0) return std::chrono::microseconds(usec);
  return std::chrono::microseconds(0);
}

WatchdogFeeder::WatchdogFeeder(boost::asio::io_context& io, Notifier& notifier, const ProgressWatchdog& progress,
                               std::chrono::microseconds interval)
    : timer_(io), notifier_(notifier), progress_(progress), interval_(interval) {}

void WatchdogFeeder::start() {
  if (interval_.count() <= 0) return;
  running_ = true;
  last_progress_ = progress_.progress();
  arm();
}

void WatchdogFeeder::stop() {
  running_ = false;
  boost::system::error_code ec;
  timer_.cancel(ec);
}

void WatchdogFeeder::arm() {
  timer_.expires_after(interval_ / 2);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !running_) return;
    check();
    arm();
  });
}

bool WatchdogFeeder::check() {
  const std::uint64_t now = progress_.progress();
  if (now == last_progress_) {
    ++stalls_;
    if (!stalled_logged_) {
      spdlog::warn("estimator made no step in {} ms: not feeding the systemd watchdog",
                   std::chrono::duration_cast<std::chrono::milliseconds>(interval_ / 2).count());
      stalled_logged_ = true;
    }
    return false;
  }
  last_progress_ = now;
  stalled_logged_ = false;
  if (notifier_.watchdog()) ++fed_;
  return true;
}

}  // namespace mbo::runtime
