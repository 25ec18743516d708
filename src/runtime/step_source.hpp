// When the estimator steps and at what estimator time: the one thing in which a live run and
// a replay differ for the estimator loop (estimator_loop.hpp).
//
//   LiveStepSource    the absolute CLOCK_MONOTONIC grid of FixedStepClock; estimator time is
//                     wall time.
//   ReplayStepSource  log time, one step after another from the first frame's time; a step runs
//                     once the reader has read every frame up to its time (deterministic at any
//                     --rate) and, paced, not before its wall moment (ReplayPacer).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "mbobserver/runtime/fixed_step_clock.hpp"
#include "measurement_inbox.hpp"
#include "replay_reader.hpp"

namespace mbo::runtime {

struct Step {
  double t = 0;  // estimator time, s
  // Estimator time stepped since the first step, s (what --stop-after counts): t - t0(), but
  // a replay's time jumps (LogTimeline) add one step, not the gap.
  double elapsed = 0;
  bool time_jump = false;  // replay: the first step of a new time base (the observer resynchronised)
  std::int64_t start_ns = 0;  // CLOCK_MONOTONIC when the step could begin
  bool paced = true;  // false at --rate max: a step has no moment, so no deadline either
  bool late = false;  // began more than a step after its moment (a deadline miss)
  bool woke_in_time = false;  // paced replay: woke within a step of its moment (classify_miss)
};

class StepSource {
 public:
  virtual ~StepSource() = default;
  // Estimator thread, once, after its real-time set-up and before the first next().
  virtual void begin() {}
  // Waits for the next step; false when the run is over (stop, or the end of the log).
  virtual bool next(Step& step) = 0;
  // Estimator time at the start (what --stop-after counts from), s.
  virtual double t0() const = 0;
  // True: the estimator waits for room in the estimate queue rather than drop a record (a
  // replay's --record holds every step at any speed); live never waits, a full queue is counted.
  virtual bool lossless() const = 0;
  // True: frame_to_step is measured in log time (at --rate max the reader runs ahead of the
  // steps, so wall time says nothing: the latency is then from the newest sample's log time to
  // the step that used it).
  virtual bool latency_in_log_time() const = 0;
  // Grid points dropped to catch up after misses (live).
  virtual std::uint64_t skipped_steps() const { return 0; }
  // Share of the input consumed, for a progress line; none live.
  virtual std::optional<double> fraction_done() const { return std::nullopt; }
};

class LiveStepSource final : public StepSource {
 public:
  explicit LiveStepSource(double step_s);
  void begin() override;
  bool next(Step& step) override;
  double t0() const override { return wall0_; }
  bool lossless() const override { return false; }
  bool latency_in_log_time() const override { return false; }
  std::uint64_t skipped_steps() const override { return clock_.counters().skipped_steps; }

 private:
  FixedStepClock clock_;
  double wall0_ = 0;  // estimator time of mono0_: the first deadline's time is wall0_ + step
  std::int64_t mono0_ = 0;
};

class ReplayStepSource final : public StepSource {
 public:
  // `pacer`: started at `t0`, the first frame's log time. Measurements are drained into
  // `inbox` while waiting for the reader (a step may hold more of them than the queue). At a
  // time jump in the queue, once every step that takes a measurement of the old time base has
  // run, the inbox resynchronises the observer and the steps go on from the new base's first
  // time: the gap is never stepped through.
  ReplayStepSource(double step_s, double t0, const ReplayPacer& pacer, const ReplayFeed& feed, MeasurementInbox& inbox,
                   const std::atomic<bool>& stop);
  bool next(Step& step) override;
  double t0() const override { return t0_; }
  bool lossless() const override { return true; }
  bool latency_in_log_time() const override { return pacer_.rate().max; }
  std::optional<double> fraction_done() const override;

 private:
  bool stopping() const noexcept { return stop_.load(std::memory_order_relaxed); }
  double dt_, t0_;
  ReplayPacer pacer_;
  const ReplayFeed& feed_;
  MeasurementInbox& inbox_;
  const std::atomic<bool>& stop_;
  double base_;  // the first step of the current time base: the first frame's time, or a jump's
  std::uint64_t k_ = 0;  // index of the next step on the current base
  double elapsed_before_ = 0;  // Step::elapsed of the current base's first step
  double last_elapsed_ = 0;
};

}  // namespace mbo::runtime
