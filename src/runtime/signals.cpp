#include "mbobserver/runtime/signals.hpp"

#include <csignal>
#include <cstring>

#include <pthread.h>
#include <spdlog/spdlog.h>

namespace mbo::runtime {

StopSignals::StopSignals(boost::asio::io_context& io, std::function<void(int)> on_stop, std::function<void()> on_hangup)
    : set_(io, SIGINT, SIGTERM), on_stop_(std::move(on_stop)), on_hangup_(std::move(on_hangup)) {
  if (on_hangup_) set_.add(SIGHUP);
  arm();
}

StopSignals::~StopSignals() {
  boost::system::error_code ec;
  // Removing the signals restores their default action (Boost.Asio signal_set::remove).
  set_.clear(ec);
}

void StopSignals::arm() {
  set_.async_wait([this](const boost::system::error_code& ec, int signo) {
    if (ec) return;  // cancelled
    received_.fetch_add(1, std::memory_order_relaxed);
    if (signo == SIGHUP) {
      spdlog::info("SIGHUP: reopening the output files");
      on_hangup_();
    } else if (stop_requested()) {
      spdlog::warn("SIG{} while already stopping: ignored", ::sigabbrev_np(signo));
    } else {
      spdlog::info("SIG{}: stopping", ::sigabbrev_np(signo));
      request_stop(signo);
    }
    arm();
  });
}

void StopSignals::request_stop(int signo) {
  int expected = 0;
  if (!signal_.compare_exchange_strong(expected, signo == 0 ? -1 : signo, std::memory_order_acq_rel))
    return;  // already stopping
  // Always on the I/O thread, whichever thread asked.
  if (on_stop_) boost::asio::post(set_.get_executor(), [this, signo] { on_stop_(signo); });
}

void block_stop_signals_in_this_thread() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace mbo::runtime
