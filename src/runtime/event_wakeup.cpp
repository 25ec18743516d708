#include "mbobserver/runtime/event_wakeup.hpp"

#include <cerrno>
#include <system_error>

#include <sys/eventfd.h>
#include <unistd.h>

namespace mbo::runtime {

EventWakeup::EventWakeup() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

EventWakeup::~EventWakeup() {
  if (descriptor_) {
    boost::system::error_code ec;
    descriptor_->cancel(ec);
    descriptor_->release();  // fd_ is closed below, once
  }
  if (fd_ >= 0) ::close(fd_);
}

void EventWakeup::notify() noexcept {
  const std::uint64_t one = 1;
  // EAGAIN only when the counter is at its maximum: the reader is already due to wake.
  [[maybe_unused]] ssize_t n = ::write(fd_, &one, sizeof one);
}

void EventWakeup::async_watch(boost::asio::io_context& io, std::function<void()> on_wake) {
  on_wake_ = std::move(on_wake);
  descriptor_ = std::make_unique<boost::asio::posix::stream_descriptor>(io, fd_);
  arm();
}

void EventWakeup::cancel() {
  if (descriptor_) {
    boost::system::error_code ec;
    descriptor_->cancel(ec);
  }
}

void EventWakeup::arm() {
  descriptor_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                          [this](const boost::system::error_code& ec) {
                            if (ec) return;  // cancelled: the owner is shutting down
                            std::uint64_t count = 0;
                            // Reading resets the counter (eventfd(2) without EFD_SEMAPHORE).
                            [[maybe_unused]] ssize_t n = ::read(fd_, &count, sizeof count);
                            on_wake_();
                            arm();
                          });
}

}  // namespace mbo::runtime
