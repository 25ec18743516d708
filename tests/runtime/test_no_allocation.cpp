// "No heap allocation on the estimator's path after start-up" (docs/architecture.md), checked by
// counting: this test binary replaces the global operator new/delete (the replaceable
// allocation functions, [new.delete]) with versions that count calls made on a thread while
// that thread has counting switched on.
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include <gtest/gtest.h>

#include "mbobserver/core/measurement.hpp"
#include "mbobserver/runtime/estimate_json.hpp"
#include "mbobserver/runtime/fixed_step_clock.hpp"
#include "mbobserver/runtime/latency_histogram.hpp"
#include "mbobserver/runtime/notify.hpp"
#include "mbobserver/runtime/udp_publisher.hpp"
#include "sample_records.hpp"
#include "udp_receiver.hpp"

namespace {
thread_local bool t_counting = false;
thread_local std::size_t t_allocations = 0;

void* counted(std::size_t n, std::size_t align) {
  if (t_counting) ++t_allocations;
  if (n == 0) n = 1;
  return align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                           : std::malloc(n);
}
void* counted_or_throw(std::size_t n, std::size_t align = 0) {
  if (void* p = counted(n, align)) return p;
  throw std::bad_alloc();
}

// Out of line, so GCC does not pair an inlined operator new with free() and warn
// (-Wmismatched-new-delete): here both sides really are malloc/free.
[[gnu::noinline]] void release(void* p) noexcept { std::free(p); }

// Counts the allocations made on this thread during its lifetime.
class AllocationCounter {
 public:
  AllocationCounter() {
    t_allocations = 0;
    t_counting = true;
  }
  ~AllocationCounter() { t_counting = false; }
  std::size_t count() const { return t_allocations; }
};
}  // namespace

void* operator new(std::size_t n) { return counted_or_throw(n); }
void* operator new[](std::size_t n) { return counted_or_throw(n); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }

using namespace mbo::runtime;
using namespace std::chrono_literals;

TEST(NoAllocation, TheCounterSeesAnAllocation) {
  // So that a zero below means "none", not "not counted".
  AllocationCounter counter;
  auto s = std::make_unique<std::string>(100, 'x');
  EXPECT_GE(counter.count(), 1u);
  EXPECT_EQ((*s)[99], 'x');
}

TEST(NoAllocation, EstimatorPathAfterStartUp) {
  // Start-up: everything is allocated here.
  EstimateQueue estimates(64);
  SpscQueue<mbo::Measurement> measurements(256);
  EventWakeup wakeup;
  auto histogram = std::make_unique<LatencyHistogram>();
  FixedStepClock clock(1ms);
  ProgressWatchdog progress;
  mbo::EstimateRecord record = mbo::test::sample_estimate();
  mbo::Measurement m{.t = 1.0, .channel = mbo::Channel::gyro_z, .value = 0.1};
  mbo::Measurement out{};
  clock.start();

  AllocationCounter counter;
  for (int step = 0; step < 50; ++step) {
    const StepTick tick = clock.wait();
    while (measurements.pop(out)) {
    }
    measurements.push(m);  // the I/O side of the same queue type, for completeness
    record.seq = static_cast<std::uint64_t>(step);
    record.wakeup_lateness_us = static_cast<double>(tick.lateness_ns) * 1e-3;
    record.step_end_mono_ns = monotonic_ns();
    hand_over(estimates, wakeup, record);
    histogram->record_ns(tick.lateness_ns);
    histogram->record_us(record.step_compute_us);
    progress.kick();
    if (step % 16 == 15) estimates.drain([](const mbo::EstimateRecord&) {});
  }
  for (int i = 0; i < 100; ++i) estimates.push(record);  // overflowing is also allocation-free
  EXPECT_EQ(counter.count(), 0u);
  EXPECT_GT(estimates.overflows(), 0u);
  EXPECT_EQ(histogram->count(), 100u);
}

TEST(NoAllocation, SerialisingIntoAReservedBufferAndPublishing) {
  // The I/O thread's steady state allocates nothing either, once its buffers exist.
  mbo::test::UdpReceiver rx;
  boost::asio::io_context io;
  PublishConfig c;
  c.port = rx.port();
  c.rate_hz = 500;
  UdpPublisher pub(io, c, 0.002);
  std::string buffer;
  buffer.reserve(8192);
  const mbo::EstimateRecord record = mbo::test::sample_estimate();
  const StatusRecord status = mbo::test::sample_status();
  pub.on_record(record);  // warm-up

  AllocationCounter counter;
  for (int i = 0; i < 20; ++i) {
    write_estimate_json(record, buffer);
    write_status_json(status, buffer);
    pub.on_record(record);
  }
  EXPECT_EQ(counter.count(), 0u);
}
