// SIGTERM (systemctl stop) and SIGINT (Ctrl-C) become a stop request: the main loop lets the
// estimator finish its step, sends a final status datagram and summary, and exits 0
// (docs/interfaces.md exit codes). SIGHUP, where the owner asks for it, reopens the output
// files (logrotate's postrotate; systemctl reload). Each signal is logged once, here. Asio's
// signal_set runs the handler on the I/O thread, not in signal context, so it may log, post
// and touch any I/O-thread state.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "mbobserver/runtime/asio.hpp"

namespace mbo::runtime {

class StopSignals {
 public:
  // `on_stop(signo)` runs on the io_context at the first SIGINT or SIGTERM. Later signals are
  // logged and otherwise ignored (systemd escalates to SIGKILL after TimeoutStopSec=).
  // `on_hangup`, if given, runs on the io_context at every SIGHUP (else SIGHUP keeps its
  // default action).
  StopSignals(boost::asio::io_context& io, std::function<void(int)> on_stop, std::function<void()> on_hangup = {});
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Any thread: the estimator loop polls this once per step.
  bool stop_requested() const noexcept { return signal_.load(std::memory_order_acquire) != 0; }
  int signal() const noexcept { return signal_.load(std::memory_order_acquire); }
  std::uint64_t signals_received() const noexcept { return received_.load(std::memory_order_relaxed); }

  // The same stop as a signal, from any thread (end of a replay, a fatal input error):
  // on_stop runs on the io_context. signo 0 is recorded as -1 so stop_requested() is true.
  void request_stop(int signo = 0);

 private:
  void arm();
  boost::asio::signal_set set_;
  std::function<void(int)> on_stop_;
  std::function<void()> on_hangup_;
  std::atomic<int> signal_{0};
  std::atomic<std::uint64_t> received_{0};
};

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread: call it at the start of the
// estimator thread so the kernel delivers them to the I/O thread and never interrupts a step's
// sleep.
void block_stop_signals_in_this_thread();

}  // namespace mbo::runtime
