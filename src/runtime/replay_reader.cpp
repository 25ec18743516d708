#include "replay_reader.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "mbobserver/runtime/realtime.hpp"
#include "mbobserver/runtime/signals.hpp"

namespace mbo::runtime {

void run_reader(LogTimeline& timeline, const io::LogReader& log, std::optional<io::CanFrame> first, ReplayPacer pacer,
                FrameDecoder& decoder, ReplayFeed& feed, const std::atomic<bool>& stop, const ReaderOptions& options) {
  const bool max = pacer.rate().max;
  if (!max && options.realtime_priority > 0) apply_realtime(options.realtime_priority, false);
  block_stop_signals_in_this_thread();
  const double lead = max ? 0.0 : options.lead_s;
  auto stopping = [&] { return stop.load(std::memory_order_relaxed); };
  // A log names its interfaces (candump) or numbers its channels (ASC, from 1); frames go to
  // the configured interface of that name, or for ASC the configured interface in that
  // position, else to an unknown bus (the top-level DBC's).
  std::array<std::uint8_t, 256> bus_of{};
  std::size_t names_seen = 0;
  const io::SignalMap& map = decoder.map();
  auto to_bus = [&](io::CanFrame& fr) {
    const auto& names = log.interfaces();
    for (; names_seen < names.size() && names_seen < bus_of.size(); ++names_seen) {
      int b = map.bus_index(names[names_seen]);
      if (b < 0 && log.format() == io::LogFormat::asc && names_seen < map.interfaces().size() &&
          !map.interfaces().empty() && map.bus_index(std::to_string(names_seen + 1)) < 0)
        b = static_cast<int>(names_seen);
      bus_of[names_seen] = b < 0 ? std::uint8_t{255} : static_cast<std::uint8_t>(b);
    }
    fr.channel = bus_of[fr.channel];
  };
  io::CanFrame f = first.value_or(io::CanFrame{});
  double t_order = first ? f.t : 0;  // the order time of the frame in hand
  bool more = first.has_value();
  auto publish_log_stats = [&] {
    feed.bad_lines.store(log.stats().bad_lines, std::memory_order_relaxed);
    feed.backwards.store(timeline.counters().backwards, std::memory_order_relaxed);
    feed.time_jumps.store(timeline.counters().jumps, std::memory_order_relaxed);
    feed.time_shifts.store(timeline.counters().shifts, std::memory_order_relaxed);
  };
  publish_log_stats();
  for (std::uint64_t n = 0; more && !stopping(); ++n) {
    if (!pacer.wait_until(f.t - lead, stopping)) break;
    const std::int64_t now = monotonic_ns();
    to_bus(f);
    decoder.on_frame(f, max ? now : std::max(now, pacer.target_ns(f.t)), &stop, t_order);
    feed.t_last_frame.store(std::max(feed.t_last_frame.load(std::memory_order_relaxed), f.t),
                            std::memory_order_relaxed);
    feed.raise_watermark(t_order);
    if ((n & 1023u) == 0) feed.read_fraction.store(log.fraction_read(), std::memory_order_relaxed);
    bool jumped = false;
    more = timeline.next(f, jumped);
    publish_log_stats();
    if (more) {
      if (jumped) {
        // Queued before the watermark passes the old base: the estimator finishes the steps
        // of the old base, then goes on at the new one. The gap takes no wall time.
        decoder.push_time_jump(t_order, f.t, &stop);
        pacer.skip(t_order, f.t);
        t_order = f.t;
      }
      t_order = std::max(t_order, f.t);
      // Every frame before the one now in hand has been handed over: the steps before its
      // time need not wait for its moment.
      feed.raise_watermark(std::nextafter(t_order, -std::numeric_limits<double>::infinity()));
    }
  }
  publish_log_stats();
  feed.read_fraction.store(1.0, std::memory_order_relaxed);
  feed.done.store(true, std::memory_order_release);
  feed.raise_watermark(std::numeric_limits<double>::infinity());  // end of the log (or stop)
  feed.signal();
}

}  // namespace mbo::runtime
