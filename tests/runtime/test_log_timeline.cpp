// LogTimeline: a log's frames on the run's time base (include/mbobserver/runtime/log_timeline.hpp).
// Each case is a candump log in memory whose clock misbehaves once, and what the replay's
// reader gets from it: times, jumps, and the problems the summary lists.
#include "mbobserver/runtime/log_timeline.hpp"

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using mbo::io::CanFrame;
using mbo::io::LogReader;
using mbo::runtime::LogTimeline;
using mbo::runtime::TimelineOptions;
using ::testing::HasSubstr;

namespace {

constexpr double kT0 = 1700000000.0;

// A frame every 2 ms from kT0; `stamp(i, t)` may change frame i's stamp.
std::string log_text(int frames, const std::function<double(int, double)>& stamp = nullptr) {
  std::string s;
  char line[64];
  for (int i = 0; i < frames; ++i) {
    double t = kT0 + 0.002 * i;
    if (stamp) t = stamp(i, t);
    std::snprintf(line, sizeof line, "(%.6f) can0 %03X#%02X\n", t, 0x100 + i % 4, i & 0xFF);
    s += line;
  }
  return s;
}

struct Out {
  std::vector<double> t;  // relative to kT0
  std::vector<int> data;  // the payload byte: which frame of the log
  std::vector<std::size_t> jumps;  // indices in `t` of the first frames of new time bases
};

Out read_all(LogTimeline& tl) {
  Out out;
  CanFrame f;
  bool jumped = false;
  while (tl.next(f, jumped)) {
    if (jumped) out.jumps.push_back(out.t.size());
    out.t.push_back(f.t - kT0);
    out.data.push_back(f.data[0]);
  }
  return out;
}

const TimelineOptions kOpt{.max_gap_s = 3.0, .max_disorder_s = 0.1};

}  // namespace

TEST(LogTimeline, AnOrderlyLogKeepsItsTimes) {
  LogReader log(log_text(100), "ok.log");
  LogTimeline tl(log, kOpt);
  const Out out = read_all(tl);
  ASSERT_EQ(out.t.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_NEAR(out.t[i], 0.002 * i, 1e-6);
  EXPECT_TRUE(out.jumps.empty());
  EXPECT_EQ(tl.counters().backwards + tl.counters().jumps + tl.counters().shifts + tl.counters().bad_stamps, 0u);
  EXPECT_TRUE(log.problems().empty());
}

TEST(LogTimeline, ALoneStampFarAheadIsDroppedAsABadLine) {
  // One digit changed: frame 50 stamped 1e9 s later (the replay that never ended).
  LogReader log(log_text(100, [](int i, double t) { return i == 50 ? t + 1e9 : t; }), "stamp.log");
  LogTimeline tl(log, kOpt);
  const Out out = read_all(tl);
  ASSERT_EQ(out.t.size(), 99u);
  for (std::size_t k = 0; k < out.t.size(); ++k) EXPECT_LT(out.t[k], 0.2);
  EXPECT_TRUE(out.jumps.empty());
  EXPECT_EQ(tl.counters().bad_stamps, 1u);
  EXPECT_EQ(log.stats().bad_lines, 1u);
  EXPECT_EQ(log.stats().frames, 99u);
  ASSERT_EQ(log.problems().size(), 1u);
  EXPECT_EQ(log.problems()[0].line, 51u);
  EXPECT_THAT(log.problems()[0].message, HasSubstr("ahead of the frames around it: frame dropped"));
  // and one within the gap too: it would hold every later frame back by 0.5 s
  LogReader log2(log_text(100, [](int i, double t) { return i == 50 ? t + 0.5 : t; }), "stamp2.log");
  LogTimeline tl2(log2, kOpt);
  EXPECT_EQ(read_all(tl2).t.size(), 99u);
  EXPECT_EQ(tl2.counters().bad_stamps, 1u);
}

TEST(LogTimeline, ALoneStampBehindIsHandedOutAtItsOwnTime) {
  // A late frame: the observer judges its samples (stale); nothing after it moves.
  LogReader log(log_text(100, [](int i, double t) { return i == 50 ? t - 0.5 : t; }), "late.log");
  LogTimeline tl(log, kOpt);
  const Out out = read_all(tl);
  ASSERT_EQ(out.t.size(), 100u);
  EXPECT_NEAR(out.t[50], 0.1 - 0.5, 1e-6);
  EXPECT_NEAR(out.t[51], 0.102, 1e-6);
  EXPECT_EQ(tl.counters().backwards, 1u);
  EXPECT_EQ(tl.counters().shifts, 0u);
  ASSERT_EQ(log.problems().size(), 1u);
  EXPECT_THAT(log.problems()[0].message, HasSubstr("timestamp goes back by 0.498 s"));
  EXPECT_EQ(log.stats().backwards, 0u) << "the timeline counts, not the reader";
}

TEST(LogTimeline, AForwardJumpBeyondTheGapStartsANewTimeBase) {
  LogReader log(log_text(100, [](int i, double t) { return i >= 50 ? t + 5.0 : t; }), "jump.log");
  LogTimeline tl(log, kOpt);
  const Out out = read_all(tl);
  ASSERT_EQ(out.t.size(), 100u);
  ASSERT_EQ(out.jumps, std::vector<std::size_t>{50});
  EXPECT_NEAR(out.t[50], 5.1, 1e-6);  // the log's own time: the record says when it was
  EXPECT_NEAR(out.t[99], 5.198, 1e-6);
  EXPECT_EQ(tl.counters().jumps, 1u);
  ASSERT_EQ(log.problems().size(), 1u);
  EXPECT_EQ(log.problems()[0].line, 51u);
  EXPECT_THAT(log.problems()[0].message, HasSubstr("jumps forward by 5.002 s"));
}

TEST(LogTimeline, AGapWithinTheLimitIsKept) {
  // 2 s without a frame (< max_gap_s): stepped through, the sources time out
  LogReader log(log_text(100, [](int i, double t) { return i >= 50 ? t + 2.0 : t; }), "gap.log");
  LogTimeline tl(log, kOpt);
  const Out out = read_all(tl);
  EXPECT_TRUE(out.jumps.empty());
  EXPECT_NEAR(out.t[50], 2.1, 1e-6);
  EXPECT_TRUE(log.problems().empty());
}

TEST(LogTimeline, ALogWhoseClockStepsBackGoesOnShiftedWithNothingLost) {
  LogReader log(log_text(100, [](int i, double t) { return i >= 50 ? t - 1.0 : t; }), "back.log");
  LogTimeline tl(log, kOpt);
  const Out out = read_all(tl);
  ASSERT_EQ(out.t.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(out.data[i], i) << "every frame, in order";
    EXPECT_NEAR(out.t[i], 0.002 * i, 1e-6) << "one usual spacing after the last frame before the step";
  }
  EXPECT_TRUE(out.jumps.empty());
  EXPECT_EQ(tl.counters().shifts, 1u);
  EXPECT_NEAR(tl.shift_s(), 1.0, 1e-6);
  ASSERT_EQ(log.problems().size(), 1u);
  EXPECT_THAT(log.problems()[0].message,
              HasSubstr("goes back by 0.998 s and the log goes on from there: shifted forward by 1 s"));
}

TEST(LogTimeline, FramesOutOfOrderWithinTheToleranceKeepTheirTimes) {
  // two interfaces interleaved 3 ms apart: not a jump, not a shift
  LogReader log(log_text(100, [](int i, double t) { return i % 2 ? t + 0.003 : t; }), "order.log");
  LogTimeline tl(log, kOpt);
  const Out out = read_all(tl);
  ASSERT_EQ(out.t.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_NEAR(out.t[i], 0.002 * i + (i % 2 ? 0.003 : 0), 1e-6);
  EXPECT_EQ(tl.counters().shifts + tl.counters().jumps + tl.counters().bad_stamps, 0u);
  EXPECT_GT(tl.counters().backwards, 0u);
}

TEST(LogTimeline, ProblemsStayInLineOrderWithTheReadersOwn) {
  // a garbage line right after the dropped frame: the reader finds it while the timeline
  // looks ahead, before the timeline reports the frame
  std::string text = log_text(60, [](int i, double t) { return i == 30 ? t + 1e9 : t; });
  const auto at = text.find('\n', text.find("#1E")) + 1;  // after frame 30 (payload 0x1E)
  text.insert(at, "garbage\n");
  LogReader log(text, "order.log");
  LogTimeline tl(log, kOpt);
  read_all(tl);
  ASSERT_EQ(log.problems().size(), 2u);
  EXPECT_EQ(log.problems()[0].line, 31u);
  EXPECT_EQ(log.problems()[1].line, 32u);
  EXPECT_THAT(log.problems()[1].message, HasSubstr("candump"));
}
