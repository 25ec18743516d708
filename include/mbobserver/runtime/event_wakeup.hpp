// Wakes the I/O thread when the estimator has pushed a record, without a lock and without
// allocating on the estimator side: an eventfd(2) counter that the io_context watches.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "mbobserver/runtime/asio.hpp"

namespace mbo::runtime {

class EventWakeup {
 public:
  EventWakeup();  // throws std::system_error if eventfd(2) fails
  ~EventWakeup();
  EventWakeup(const EventWakeup&) = delete;
  EventWakeup& operator=(const EventWakeup&) = delete;

  // Any thread, async-signal-safe, no allocation: one write(2) to the eventfd. A saturated
  // counter (EAGAIN) still leaves the descriptor readable, so nothing is lost.
  void notify() noexcept;

  // I/O thread: calls `on_wake` on the io_context each time notify() was called at least
  // once since the last call (several notifications may coalesce into one call).
  void async_watch(boost::asio::io_context& io, std::function<void()> on_wake);
  void cancel();

 private:
  void arm();
  int fd_ = -1;
  std::unique_ptr<boost::asio::posix::stream_descriptor> descriptor_;
  std::function<void()> on_wake_;
};

}  // namespace mbo::runtime
