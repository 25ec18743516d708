// The estimator's end of the measurement queue: hands the observer the measurements that
// belong to a step and remembers when the newest of them arrived (the step's latency).
#pragma once

#include <algorithm>
#include <cstdint>

#include "frame_decoder.hpp"
#include "mbobserver/estimation/vehicle_observer.hpp"

namespace mbo::runtime {

class MeasurementInbox {
 public:
  MeasurementInbox(MeasurementQueue& queue, est::VehicleObserver& observer) : queue_(queue), observer_(observer) {}

  // Forgets the newest arrival of the previous step.
  void begin_step() noexcept {
    newest_rx_ns_ = 0;
    newest_t_ = -1e300;
    handed_ = 0;
  }
  // Hands the measurements received up to step time t to the observer (the latest of each
  // channel wins); stops at the first one of a later step, which it keeps for that step, and
  // at a time jump (time_jump()).
  void drain_until(double t) {
    for (;;) {
      if (!have_pending_) {
        if (!queue_.pop(pending_)) break;
        have_pending_ = true;
      }
      if (pending_.time_jump) break;  // the step source decides when (take_time_jump)
      if (pending_.order_t > t + kSameInstant_s) break;  // belongs to a later step
      observer_.push(pending_.m);
      ++handed_;
      newest_rx_ns_ = std::max(newest_rx_ns_, pending_.rx_ns);
      newest_t_ = std::max(newest_t_, pending_.m.t);
      have_pending_ = false;
    }
  }
  bool empty() const noexcept { return !have_pending_ && queue_.depth() == 0; }
  // A replay's time jump is next: every measurement of the old time base has been handed
  // over. `from`: the old base's newest time; the new base starts at take_time_jump().
  bool time_jump(double& from) const noexcept {
    if (!have_pending_ || !pending_.time_jump) return false;
    from = pending_.order_t;
    return true;
  }
  // Takes the jump: the observer forgets what it holds of the old time base (before any
  // sample of the new one reaches it). Returns the new base's first time.
  double take_time_jump() {
    have_pending_ = false;
    observer_.resynchronise();
    return pending_.m.t;
  }
  bool queue_full() const noexcept { return queue_.depth() >= queue_.capacity(); }
  // Of the measurements handed over since begin_step(): how many, the latest hand-over (0:
  // none) and the newest sample time.
  std::uint64_t handed() const noexcept { return handed_; }
  std::int64_t newest_rx_ns() const noexcept { return newest_rx_ns_; }
  double newest_t() const noexcept { return newest_t_; }

 private:
  MeasurementQueue& queue_;
  est::VehicleObserver& observer_;
  TimedMeasurement pending_;
  bool have_pending_ = false;
  std::int64_t newest_rx_ns_ = 0;
  double newest_t_ = 0;
  std::uint64_t handed_ = 0;
};

}  // namespace mbo::runtime
