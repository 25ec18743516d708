// The replay's reader thread: the frames of a candump or ASC log in file order, decoded and
// queued for the estimator, with a watermark of the order time (the log time, never
// decreasing: TimedMeasurement) below which every frame has been read (handed over, or the
// one read ahead). The estimator steps at t only once the watermark is past t, so a replay is
// deterministic at any speed (ReplayStepSource).
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>

#include "frame_decoder.hpp"
#include "mbobserver/io/log_reader.hpp"
#include "mbobserver/runtime/fixed_step_clock.hpp"
#include "mbobserver/runtime/log_timeline.hpp"

namespace mbo::runtime {

// What the reader tells the estimator and the status. Single writer: the reader thread.
struct ReplayFeed {
  std::atomic<double> watermark{-1e300};  // every frame of a smaller order time is handed over
  std::atomic<std::uint64_t> events{0};  // the estimator's wake-ups: new watermark, full queue, end
  std::atomic<double> t_last_frame{0};  // newest log time read, s
  std::atomic<double> read_fraction{0};  // share of the file read (the progress line)
  std::atomic<bool> done{false};  // end of the log, or stopped
  // The log's problems so far (LogReader::stats() and the timeline's counters belong to the
  // reader thread).
  std::atomic<std::uint64_t> bad_lines{0}, backwards{0}, time_jumps{0}, time_shifts{0};

  // Wakes the estimator when it sleeps on the reader (a counter, so that a wake-up is never
  // lost between its check and its wait; notify costs no system call without a waiter).
  void signal() noexcept {
    events.fetch_add(1, std::memory_order_release);
    events.notify_one();
  }
  void raise_watermark(double t) noexcept {
    if (t > watermark.load(std::memory_order_relaxed)) {
      watermark.store(t, std::memory_order_release);
      signal();
    }
  }
};

struct ReaderOptions {
  // Paced: a frame is handed over up to `lead_s` (one step) before its moment on the bus, as
  // a kernel holds it in the socket's buffer: a reader late by less than a step does not hold
  // the estimator up. Its receive time stays its moment on the bus.
  double lead_s = 0;
  // A paced replay stands in for the kernel delivering frames: the reader gets the
  // estimator's priority, or a late reader shows as the estimator's deadline miss (0: none).
  int realtime_priority = 0;
};

// The reader thread: hands over `first` (the frame that fixed the time origin, if the log has
// one) and every frame after it on the run's time base (`timeline`, reading `log`), paced by
// `pacer` (started at the first frame's time), until the log ends or `stop`. A jump of the
// time base goes into the queue as a marker before the first frame of the new base, and takes
// no wall time.
void run_reader(LogTimeline& timeline, const io::LogReader& log, std::optional<io::CanFrame> first, ReplayPacer pacer,
                FrameDecoder& decoder, ReplayFeed& feed, const std::atomic<bool>& stop, const ReaderOptions& options);

}  // namespace mbo::runtime
