#include "frame_decoder.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include "replay_reader.hpp"

namespace mbo::runtime {

FrameCounters AtomicFrameCounters::snapshot() const {
  FrameCounters f;
  f.received = received.load(std::memory_order_relaxed);
  f.decoded = decoded.load(std::memory_order_relaxed);
  f.unknown = unknown.load(std::memory_order_relaxed);
  f.rejected = rejected.load(std::memory_order_relaxed);
  f.known_unmapped = unmapped.load(std::memory_order_relaxed);
  f.error_frames = error_frames.load(std::memory_order_relaxed);
  return f;
}

FrameDecoder::FrameDecoder(const io::SignalMap& map, MeasurementQueue& queue, AtomicFrameCounters& counters,
                           ReplayFeed* feed)
    : map_(map), queue_(queue), counters_(counters), feed_(feed), buf_(std::max<std::size_t>(1, map.max_per_frame())) {}

void FrameDecoder::on_frame(const io::CanFrame& f, std::int64_t rx_ns, const std::atomic<bool>* stop, double order_t) {
  counters_.received.fetch_add(1, std::memory_order_relaxed);
  if (f.error) {
    counters_.error_frames.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const std::size_t n = map_.decode(f, buf_);
  if (n == 0) {
    if (!map_.known(f))
      counters_.unknown.fetch_add(1, std::memory_order_relaxed);
    else
      counters_.unmapped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  counters_.decoded.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = 0; i < n; ++i) push(buf_[i], rx_ns, stop, order_t);
}

void FrameDecoder::push(const Measurement& m, std::int64_t rx_ns, const std::atomic<bool>* stop, double order_t) {
  if (!std::isfinite(m.value)) {
    counters_.rejected.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  enqueue(TimedMeasurement{m, rx_ns, std::isnan(order_t) ? m.t : order_t}, stop);
}

void FrameDecoder::push_time_jump(double from, double to, const std::atomic<bool>* stop) {
  Measurement m;
  m.t = to;
  enqueue(TimedMeasurement{m, 0, from, true}, stop);
}

void FrameDecoder::enqueue(const TimedMeasurement& tm, const std::atomic<bool>* stop) {
  if (!feed_) {
    queue_.push(tm);  // live: a full queue is counted by the queue
    return;
  }
  // replay: the reader waits for the estimator instead of dropping (nothing is lost)
  if (queue_.depth() >= queue_.capacity()) feed_->signal();
  while (queue_.depth() >= queue_.capacity()) {
    if (stop && stop->load(std::memory_order_relaxed)) return;
    std::this_thread::yield();
  }
  queue_.push(tm);
}

}  // namespace mbo::runtime
