#include "estimator_loop.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "mbobserver/runtime/realtime.hpp"
#include "mbobserver/runtime/signals.hpp"

namespace mbo::runtime {

void run_estimator(StepSource& steps, MeasurementInbox& inbox, est::VehicleObserver& observer, DaemonShared& shared,
                   const EstimatorOptions& opt) {
  block_stop_signals_in_this_thread();
  apply_realtime(opt.realtime_priority, opt.lock_memory);
  prefault_stack();
  steps.begin();
  const double dt = opt.step_s;
  const std::int64_t mono0 = monotonic_ns();
  const bool progress_line = opt.progress && steps.fraction_done().has_value();
  const auto progress_every = static_cast<std::uint64_t>(std::max(1.0, 2.0 / dt));
  double previous_compute_s = 0;
  Step step;
  for (std::uint64_t k = 0; !shared.stopping(); ++k) {
    inbox.begin_step();
    if (!steps.next(step)) break;
    shared.skipped_steps.store(steps.skipped_steps(), std::memory_order_relaxed);
    if (opt.stop_after_s > 0 && step.elapsed > opt.stop_after_s) break;
    if (step.paced)
      shared.misses.on_step(step.late, classify_miss(previous_compute_s, dt, step.woke_in_time), step.start_ns);

    inbox.drain_until(step.t);
    EstimateRecord rec = observer.step(step.t);
    const std::int64_t step_end = monotonic_ns();
    rec.step_compute_us = (step_end - step.start_ns) * 1e-3;
    previous_compute_s = (step_end - step.start_ns) * 1e-9;
    if (inbox.newest_rx_ns() == 0)
      rec.frame_to_step_us = 0;
    else if (steps.latency_in_log_time())
      rec.frame_to_step_us = std::max(0.0, step.t - inbox.newest_t()) * 1e6;
    else
      rec.frame_to_step_us = std::max<std::int64_t>(0, step.start_ns - inbox.newest_rx_ns()) * 1e-3;
    rec.step_end_mono_ns = step_end;
    rec.t_wall = wall_clock_s();

    if (steps.lossless())
      while (shared.estimates.depth() >= shared.estimates.capacity() && !shared.stopping()) std::this_thread::yield();
    hand_over(shared.estimates, shared.estimates_ready, rec);
    shared.progress.kick();
    shared.steps.fetch_add(1, std::memory_order_relaxed);
    shared.observer.publish(observer.counters());

    if (progress_line && k % progress_every == 0) {
      const double done = *steps.fraction_done();
      const double elapsed = (monotonic_ns() - mono0) * 1e-9;
      if (done > 0)
        std::fprintf(stderr, "\rreplay %5.1f%%  log t=%.1f s  ETA %.0f s   ", 100 * done, step.elapsed,
                     elapsed * (1 - done) / done);
    }
  }
  if (progress_line) std::fprintf(stderr, "\n");
}

}  // namespace mbo::runtime
