#include "mbobserver/runtime/spsc_queue.hpp"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/runtime/event_wakeup.hpp"

using mbo::runtime::EventWakeup;
using mbo::runtime::SpscQueue;

TEST(SpscQueue, FullQueueCountsEveryRefusedPush) {
  SpscQueue<int> q(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.push(i));
  EXPECT_FALSE(q.push(4));
  EXPECT_FALSE(q.push(5));
  EXPECT_EQ(q.overflows(), 2u);
  EXPECT_EQ(q.depth(), 4u);
  EXPECT_EQ(q.high_water(), 4u);

  int v = -1;
  ASSERT_TRUE(q.pop(v));
  EXPECT_EQ(v, 0);  // the oldest survives; the refused ones were the newest
  EXPECT_EQ(q.depth(), 3u);
  EXPECT_EQ(q.high_water(), 4u);  // a high-water mark does not go down
  EXPECT_TRUE(q.push(6));

  std::vector<int> rest;
  EXPECT_EQ(q.drain([&](int x) { rest.push_back(x); }), 4u);
  EXPECT_EQ(rest, (std::vector<int>{1, 2, 3, 6}));
  auto c = q.counters();
  EXPECT_EQ(c.capacity, 4u);
  EXPECT_EQ(c.pushed, 5u);
  EXPECT_EQ(c.popped, 5u);
  EXPECT_EQ(c.depth, 0u);
  EXPECT_EQ(c.overflows, 2u);
}

TEST(SpscQueue, TwoThreadsLoseNothingThatWasNotCounted) {
  // A small queue and a producer faster than the consumer: whatever was refused is counted,
  // whatever was accepted arrives exactly once and in order.
  SpscQueue<std::uint64_t> q(64);
  constexpr std::uint64_t kAttempts = 200000;
  std::vector<std::uint64_t> accepted_ids;
  accepted_ids.reserve(kAttempts);
  std::atomic<bool> done{false};
  std::vector<std::uint64_t> received;
  received.reserve(kAttempts);

  std::thread consumer([&] {
    std::uint64_t v;
    for (;;) {
      const bool finished = done.load(std::memory_order_acquire);
      while (q.pop(v)) received.push_back(v);
      if (finished) break;
      std::this_thread::yield();
    }
  });
  for (std::uint64_t i = 0; i < kAttempts; ++i)
    if (q.push(i)) accepted_ids.push_back(i);
  done.store(true, std::memory_order_release);
  consumer.join();

  EXPECT_EQ(accepted_ids.size() + q.overflows(), kAttempts);
  EXPECT_EQ(received, accepted_ids);
  EXPECT_LE(q.high_water(), 64u);
  EXPECT_EQ(q.depth(), 0u);
}

TEST(SpscQueue, CarriesEstimateRecords) {
  SpscQueue<mbo::EstimateRecord> q(2);
  mbo::EstimateRecord r;
  r.seq = 7;
  r.tyre_fz = {1, 2, 3, 4};
  ASSERT_TRUE(q.push(r));
  mbo::EstimateRecord out;
  ASSERT_TRUE(q.pop(out));
  EXPECT_EQ(out.seq, 7u);
  EXPECT_EQ(out.tyre_fz[3], 4.0);
}

TEST(EventWakeup, NotifyFromAnotherThreadRunsTheHandlerOnTheIoContext) {
  boost::asio::io_context io;
  EventWakeup wake;
  int calls = 0;
  wake.async_watch(io, [&] {
    ++calls;
    io.stop();
  });
  std::thread t([&] { wake.notify(); });
  io.run_for(std::chrono::seconds(30));  // hang guard only
  t.join();
  EXPECT_EQ(calls, 1);

  // Several notifications before the I/O thread looks coalesce into at least one call.
  io.restart();
  wake.notify();
  wake.notify();
  wake.notify();
  io.run_for(std::chrono::seconds(30));
  EXPECT_EQ(calls, 2);
}
