// The I/O side's first stage (docs/architecture.md "Threads in the daemon"): a CAN frame
// decoded with the DBC signal map into measurements, queued for the estimator with the
// monotonic time at which they were handed over.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <vector>

#include "mbobserver/core/measurement.hpp"
#include "mbobserver/io/can_frame.hpp"
#include "mbobserver/io/signal_map.hpp"
#include "mbobserver/runtime/spsc_queue.hpp"
#include "mbobserver/runtime/status_record.hpp"

namespace mbo::runtime {

struct ReplayFeed;

// A measurement with the monotonic time at which the I/O side handed it over, and the time
// that decides which step takes it: its own, except in a replay whose log time goes backwards,
// where it is the latest log time read so far (the queue's order times never decrease, so a
// step never depends on how far ahead the reader is; the observer still sees the sample's own
// time and counts it stale).
//
// A replay's time jump (LogTimeline) travels in the same queue, in order: a marker whose
// `order_t` is the newest time of the old time base and `m.t` the first of the new one.
struct TimedMeasurement {
  Measurement m;
  std::int64_t rx_ns = 0;
  double order_t = 0;
  bool time_jump = false;
};

using MeasurementQueue = SpscQueue<TimedMeasurement>;

// Frame counters written by the I/O side (live) or the reader (replay), read by the status.
struct AtomicFrameCounters {
  std::atomic<std::uint64_t> received{0}, decoded{0}, unknown{0}, unmapped{0}, rejected{0}, error_frames{0};
  FrameCounters snapshot() const;
};

// What the I/O side does with one frame: decode it with the DBC signal map and queue the
// measurements. Unknown ids, error frames and non-finite values are counted, never fatal.
class FrameDecoder {
 public:
  // `feed`: replay only. The reader then waits for room in a full queue instead of dropping
  // (nothing is lost) and signals the estimator that it waits.
  FrameDecoder(const io::SignalMap& map, MeasurementQueue& queue, AtomicFrameCounters& counters,
               ReplayFeed* feed = nullptr);

  // `stop`: gives up waiting for room (replay). `order_t`: the step-ordering time (NaN: the
  // sample's own).
  void on_frame(const io::CanFrame& f, std::int64_t rx_ns, const std::atomic<bool>* stop = nullptr,
                double order_t = std::numeric_limits<double>::quiet_NaN());
  void push(const Measurement& m, std::int64_t rx_ns, const std::atomic<bool>* stop = nullptr,
            double order_t = std::numeric_limits<double>::quiet_NaN());
  // Replay: the time base jumps from `from` (the newest order time so far) to `to`.
  void push_time_jump(double from, double to, const std::atomic<bool>* stop);
  const io::SignalMap& map() const { return map_; }

 private:
  const io::SignalMap& map_;
  MeasurementQueue& queue_;
  AtomicFrameCounters& counters_;
  ReplayFeed* feed_;
  void enqueue(const TimedMeasurement& tm, const std::atomic<bool>* stop);
  std::vector<Measurement> buf_;
};

}  // namespace mbo::runtime
