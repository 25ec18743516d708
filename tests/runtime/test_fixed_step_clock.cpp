// No upper bounds on time anywhere: a loaded 2-core machine may wake us arbitrarily late.
// Only lower bounds (a sleep lasts at least as long as asked) and grid arithmetic are checked.
#include "mbobserver/runtime/fixed_step_clock.hpp"

#include <thread>

#include <gtest/gtest.h>

#include "mbobserver/core/json_reader.hpp"

using namespace mbo::runtime;
using namespace std::chrono_literals;

TEST(FixedStepClock, DeadlinesStayOnTheAbsoluteGrid) {
  FixedStepClock clock(1ms);
  const std::int64_t first = monotonic_ns() + 1'000'000;
  clock.start_at(first);
  std::uint64_t last_index = 0;
  for (int i = 0; i < 20; ++i) {
    StepTick tick = clock.wait();
    // Whatever was skipped, every deadline is first + k * step: no drift accumulates.
    EXPECT_EQ(tick.deadline_ns, first + static_cast<std::int64_t>(tick.index) * 1'000'000);
    EXPECT_GE(tick.woke_ns, tick.deadline_ns);  // never early
    EXPECT_EQ(tick.lateness_ns, tick.woke_ns - tick.deadline_ns);
    if (i > 0) {
      EXPECT_EQ(tick.index, last_index + 1 + tick.skipped);
    }
    last_index = tick.index;
  }
  auto c = clock.counters();
  EXPECT_EQ(c.ticks, 20u);
  EXPECT_GE(c.max_lateness_ns, 0);
}

TEST(FixedStepClock, AnOverrunIsCountedAndStaleDeadlinesAreSkipped) {
  FixedStepClock clock(1ms);
  clock.start();
  StepTick before = clock.wait();
  std::this_thread::sleep_for(5ms);  // a "step" that takes five periods
  StepTick after = clock.wait();
  EXPECT_TRUE(after.missed);
  // now >= before.deadline + 5 ms, so the grid points +1..+4 ms are at least a step old.
  EXPECT_GE(after.skipped, 4u);
  EXPECT_EQ(after.index, before.index + 1 + after.skipped);
  // After skipping, the step runs on the newest grid point already due: less than a step ago.
  EXPECT_LT(after.lateness_ns, 1'000'000);
  auto c = clock.counters();
  EXPECT_GE(c.deadline_misses, 1u);
  EXPECT_GE(c.skipped_steps, 4u);
  EXPECT_EQ(c.ticks, 2u);
}

TEST(FixedStepClock, RejectsANonPositiveStep) { EXPECT_THROW(FixedStepClock(0ns), std::invalid_argument); }

TEST(ReplayRate, ParsesTheThreeForms) {
  EXPECT_TRUE(parse_replay_rate("max").max);
  EXPECT_FALSE(parse_replay_rate("realtime").max);
  EXPECT_EQ(parse_replay_rate("realtime").factor, 1.0);
  EXPECT_EQ(parse_replay_rate("2.5").factor, 2.5);
  EXPECT_EQ(rate_name(parse_replay_rate("max")), "max");
  EXPECT_EQ(rate_name(parse_replay_rate("realtime")), "realtime");
  EXPECT_EQ(rate_name(parse_replay_rate("0.5")), "0.5");
  for (const char* bad : {"", "fast", "0", "-1", "nan", "inf", "2x", "1e999"}) {
    try {
      parse_replay_rate(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const mbo::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--rate"), std::string::npos) << e.what();
    }
  }
}

TEST(ReplayPacer, AtMaxItNeverSleeps) {
  ReplayPacer pacer(parse_replay_rate("max"));
  pacer.start(0.0);
  // At realtime these would sleep for ~30 years; at max the test finishes.
  pacer.wait_until(1e9);
  pacer.wait_until(2e9);
  EXPECT_EQ(pacer.sleeps(), 0u);
  EXPECT_EQ(pacer.behind_s(1e9), 0.0);
}

TEST(ReplayPacer, AFactorScalesLogTimeToWallTime) {
  ReplayPacer pacer(parse_replay_rate("10"));
  pacer.start(100.0);
  const std::int64_t t0 = monotonic_ns();
  pacer.wait_until(100.05);  // 50 ms of log at 10x: at least 5 ms of wall time
  EXPECT_GE(monotonic_ns() - t0, 5'000'000);
  // A timestamp going backwards, or one already due, returns at once.
  const std::uint64_t sleeps = pacer.sleeps();
  pacer.wait_until(99.0);
  EXPECT_EQ(pacer.sleeps(), sleeps);
}

TEST(ReplayPacer, AStopRequestCutsALongGapShort) {
  ReplayPacer pacer(parse_replay_rate("realtime"));
  pacer.start(0.0);
  int polls = 0;
  // A gap of a day in the log: the predicate says "stop" on its third look.
  EXPECT_FALSE(pacer.wait_until(86400.0, [&] { return ++polls >= 3; }));
  EXPECT_EQ(polls, 3);
  EXPECT_TRUE(pacer.wait_until(-1.0, [] { return true; }));  // nothing to wait for: no poll
}

// A stall makes every step until the loop has caught up start late: one episode, attributed to
// what delayed its first step; a later stall is a second episode.
TEST(DeadlineMisses, ARunOfLateStepsIsOneEpisodeWithTheCauseOfItsFirst) {
  DeadlineMisses m;
  const double step = 0.002;
  m.on_step(false, classify_miss(0.0001, step, true));
  for (int k = 0; k < 4; ++k)  // the first woke late; the rest catch up (compute 0.1 ms each)
    m.on_step(true, classify_miss(0.0001, step, k > 0), 100 + k);
  m.on_step(false, MissCause::input_wait, 104);
  m.on_step(true, classify_miss(0.0025, step, false), 105);  // the previous step overran
  m.on_step(true, classify_miss(0.0001, step, true), 106);  // input wait, but the same episode
  m.on_step(false, MissCause::overrun, 107);
  m.on_step(true, classify_miss(0.0001, step, true), 108);  // woke in time, waited for the reader
  EXPECT_EQ(m.steps(), 7u);
  EXPECT_EQ(m.episode_start_ns(0), 100);  // each episode's first late step
  EXPECT_EQ(m.episode_start_ns(1), 105);
  EXPECT_EQ(m.episode_start_ns(2), 108);
  // A step that woke in time but waited for the reader is late by the wait, even after an
  // overrun.
  EXPECT_EQ(classify_miss(0.0025, step, true), MissCause::input_wait);
  EXPECT_EQ(m.episodes(), 3u);
  EXPECT_EQ(m.episodes(MissCause::late_wakeup), 1u);
  EXPECT_EQ(m.episodes(MissCause::overrun), 1u);
  EXPECT_EQ(m.episodes(MissCause::input_wait), 1u);
}
