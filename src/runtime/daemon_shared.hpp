// What the daemon's threads share, in one place (docs/architecture.md "Threads in the daemon"):
//
//   reader (replay) or I/O thread (live) --measurements--> estimator --estimates--> I/O thread
//
// Each member has one writer, named beside it; every other thread only reads it.
#pragma once

#include <atomic>
#include <cstdint>

#include "frame_decoder.hpp"
#include "mbobserver/estimation/vehicle_observer.hpp"
#include "mbobserver/runtime/config.hpp"
#include "mbobserver/runtime/event_wakeup.hpp"
#include "mbobserver/runtime/fixed_step_clock.hpp"
#include "mbobserver/runtime/notify.hpp"
#include "mbobserver/runtime/status_record.hpp"
#include "mbobserver/runtime/udp_publisher.hpp"
#include "replay_reader.hpp"

namespace mbo::runtime {

// The observer's counters as the estimator last published them (the observer itself belongs
// to the estimator thread).
struct ObserverCounterMirror {
  std::atomic<std::uint64_t> resets{0}, model_step_failures{0}, correction_failures{0}, stale{0}, invalid{0};
  void publish(const est::VehicleObserverCounters& c) noexcept {
    resets.store(c.resets, std::memory_order_relaxed);
    model_step_failures.store(c.model_step_failures, std::memory_order_relaxed);
    correction_failures.store(c.correction_failures, std::memory_order_relaxed);
    stale.store(c.samples_stale, std::memory_order_relaxed);
    invalid.store(c.samples_invalid, std::memory_order_relaxed);
  }
  ObserverStatus snapshot() const noexcept {
    return {.model_step_failures = model_step_failures.load(std::memory_order_relaxed),
            .correction_failures = correction_failures.load(std::memory_order_relaxed),
            .stale_samples = stale.load(std::memory_order_relaxed),
            .invalid_samples = invalid.load(std::memory_order_relaxed)};
  }
};

struct DaemonShared {
  explicit DaemonShared(const RuntimeConfig& rc)
      : measurements(rc.queue_capacity), estimates(rc.estimate_queue_capacity) {}

  // Set by a signal (I/O thread) or at the end of the run (main thread).
  std::atomic<bool> stop{false};
  bool stopping() const noexcept { return stop.load(std::memory_order_relaxed); }

  // Producer: the reader (replay) or the I/O thread (live). Consumer: the estimator.
  MeasurementQueue measurements;
  AtomicFrameCounters frames;
  ReplayFeed feed;  // replay only: the reader's progress through the log

  // Producer: the estimator. Consumer: the I/O thread, woken by `estimates_ready`.
  EstimateQueue estimates;
  EventWakeup estimates_ready;

  // Written by the estimator.
  std::atomic<std::uint64_t> steps{0}, skipped_steps{0};
  DeadlineMisses misses;
  ObserverCounterMirror observer;
  ProgressWatchdog progress;  // fed to the systemd watchdog only while steps complete
};

}  // namespace mbo::runtime
