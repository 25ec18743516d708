#include "step_source.hpp"

#include <chrono>
#include <cmath>

namespace mbo::runtime {

LiveStepSource::LiveStepSource(double step_s)
    : clock_(std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(step_s * 1e9)))) {}

void LiveStepSource::begin() {
  wall0_ = wall_clock_s();
  mono0_ = monotonic_ns();
  clock_.start();
}

bool LiveStepSource::next(Step& step) {
  const StepTick tick = clock_.wait();
  step.start_ns = monotonic_ns();
  step.t = wall0_ + (tick.deadline_ns - mono0_) * 1e-9;
  step.elapsed = step.t - wall0_;
  step.paced = true;
  step.late = tick.missed;
  step.woke_in_time = false;
  return true;
}

ReplayStepSource::ReplayStepSource(double step_s, double t0, const ReplayPacer& pacer, const ReplayFeed& feed,
                                   MeasurementInbox& inbox, const std::atomic<bool>& stop)
    : dt_(step_s), t0_(t0), pacer_(pacer), feed_(feed), inbox_(inbox), stop_(stop), base_(t0) {}

bool ReplayStepSource::next(Step& step) {
  double t = base_ + static_cast<double>(k_) * dt_;
  if (!pacer_.wait_until(t, [this] { return stopping(); })) return false;
  const bool woke_in_time = pacer_.behind_s(t) <= dt_;
  step.time_jump = false;
  // Every frame up to t must have been read before the step (deterministic replay); the
  // reader raises the watermark past t once it has read the first frame after t, which it does
  // up to a step before t's wall moment (paced) or long before (max). The reader blocks on a
  // full queue, so this step's measurements are drained while waiting. The estimator sleeps on
  // the reader's event count (C++20 atomic wait): a new watermark or a full queue. The
  // watermark is read before the drain: whatever the reader queued before raising it is then
  // in the queue, so what a step takes never depends on the race.
  for (;;) {
    const auto seen = feed_.events.load(std::memory_order_acquire);
    const bool read_past_t = feed_.watermark.load(std::memory_order_acquire) > t + kSameInstant_s;
    inbox_.drain_until(t);
    double from = 0;
    if (inbox_.time_jump(from) && inbox_.handed() == 0) {
      // No measurement of the old base waits for this step: the old base is done.
      const double to = inbox_.take_time_jump();
      pacer_.skip(from, to);
      elapsed_before_ = last_elapsed_ + dt_;
      base_ = to;
      k_ = 0;
      t = to;
      step.time_jump = true;
      continue;
    }
    if (read_past_t || stopping()) break;
    if (inbox_.queue_full()) continue;  // the reader waits for room: make it
    feed_.events.wait(seen, std::memory_order_acquire);
  }
  ++k_;
  if (stopping()) return false;  // not a step with part of its samples
  // The end: the log is read, its every measurement taken, and the last frame a step ago.
  if (feed_.done.load(std::memory_order_acquire) && inbox_.empty() &&
      t > feed_.t_last_frame.load(std::memory_order_relaxed) + dt_)
    return false;
  step.t = t;
  step.elapsed = last_elapsed_ = elapsed_before_ + (t - base_);
  step.start_ns = monotonic_ns();
  step.paced = !pacer_.rate().max;
  step.late = pacer_.behind_s(t) > dt_;
  step.woke_in_time = woke_in_time;
  return true;
}

std::optional<double> ReplayStepSource::fraction_done() const {
  // the reader is at most a queue ahead of the steps: its share of the file is the progress
  return feed_.read_fraction.load(std::memory_order_relaxed);
}

}  // namespace mbo::runtime
