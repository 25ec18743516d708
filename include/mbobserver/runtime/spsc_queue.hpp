// Bounded single-producer / single-consumer queue between the I/O and estimator threads
// (docs/architecture.md "Threads in the daemon"). A full queue drops the *new* element and counts
// it: the producer cannot discard the oldest element without becoming a second consumer.
// Depth and high-water mark are readable from any thread (for the status datagram).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <boost/lockfree/spsc_queue.hpp>

namespace mbo::runtime {

struct QueueCounters {
  std::size_t capacity = 0;
  std::size_t depth = 0;  // elements waiting now (approximate while both sides run)
  std::size_t high_water = 0;  // largest depth seen right after a push
  std::uint64_t pushed = 0;
  std::uint64_t popped = 0;
  std::uint64_t overflows = 0;  // pushes refused because the queue was full
};

template <class T>
class SpscQueue {
  // Elements are copied in and out of preallocated storage; a type that owns heap memory
  // would allocate on the estimator thread.
  static_assert(std::is_trivially_copyable_v<T>, "SpscQueue carries plain data only");

 public:
  // Allocates all storage now (start-up), never afterwards.
  explicit SpscQueue(std::size_t capacity) : queue_(capacity), capacity_(capacity) {}

  SpscQueue(const SpscQueue&) = delete;
  SpscQueue& operator=(const SpscQueue&) = delete;

  // Producer thread only. Returns false and counts an overflow when the queue is full.
  bool push(const T& value) noexcept {
    if (!queue_.push(value)) {
      overflows_.store(overflows_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return false;
    }
    const std::uint64_t pushed = pushed_.load(std::memory_order_relaxed) + 1;
    pushed_.store(pushed, std::memory_order_relaxed);
    // popped_ trails the real read index by the consumer's last pop at most, so clamp.
    const std::size_t depth =
        std::min(capacity_, static_cast<std::size_t>(pushed - popped_.load(std::memory_order_relaxed)));
    if (depth > high_water_.load(std::memory_order_relaxed)) high_water_.store(depth, std::memory_order_relaxed);
    return true;
  }

  // Consumer thread only.
  bool pop(T& out) noexcept {
    if (!queue_.pop(out)) return false;
    popped_.store(popped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return true;
  }

  // Consumer thread only: pops everything available now, calling f(const T&) for each;
  // returns how many were popped.
  template <class F>
  std::size_t drain(F&& f) {
    std::size_t n = 0;
    T value;
    while (pop(value)) {
      f(static_cast<const T&>(value));
      ++n;
    }
    return n;
  }

  std::size_t capacity() const noexcept { return capacity_; }
  std::uint64_t overflows() const noexcept { return overflows_.load(std::memory_order_relaxed); }
  std::size_t high_water() const noexcept { return high_water_.load(std::memory_order_relaxed); }
  // Any thread. Read popped first so that a concurrent pop cannot make depth negative.
  std::size_t depth() const noexcept {
    const std::uint64_t popped = popped_.load(std::memory_order_relaxed);
    const std::uint64_t pushed = pushed_.load(std::memory_order_relaxed);
    return pushed >= popped ? std::min(capacity_, static_cast<std::size_t>(pushed - popped)) : 0;
  }

  QueueCounters counters() const noexcept {
    QueueCounters c;
    c.capacity = capacity_;
    c.popped = popped_.load(std::memory_order_relaxed);
    c.pushed = pushed_.load(std::memory_order_relaxed);
    c.depth = c.pushed >= c.popped ? std::min(capacity_, static_cast<std::size_t>(c.pushed - c.popped)) : 0;
    c.high_water = high_water();
    c.overflows = overflows();
    return c;
  }

 private:
  boost::lockfree::spsc_queue<T> queue_;
  const std::size_t capacity_;
  // Each counter has a single writer (producer: pushed, overflows, high_water; consumer:
  // popped), so load + store is enough; atomics only make the cross-thread reads defined.
  alignas(64) std::atomic<std::uint64_t> pushed_{0};
  std::atomic<std::uint64_t> overflows_{0};
  std::atomic<std::size_t> high_water_{0};
  alignas(64) std::atomic<std::uint64_t> popped_{0};
};

}  // namespace mbo::runtime
