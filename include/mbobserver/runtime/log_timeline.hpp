// The time base of a replay (docs/interfaces.md "Time in a replay"): the frames of a log with
// their times on the run's clock, which never jumps inside a gap and never goes back. A log's
// clock is not always that: a logger that paused, an NTP step, two logs joined, one corrupt
// digit in a stamp. Looking one frame ahead, each frame is judged against the newest time
// handed out before it (`last`) and the frame after it (`next`), with the tolerance `disorder`
// (runtime.max_time_disorder_s) and the gap `gap` (runtime.max_time_gap_s):
//
//   a frame further than `disorder` from `last` while `next` is back within `disorder` of it:
//     ahead of both   a corrupt stamp: dropped as a bad line (it would hold back every frame
//                     after it until the log caught up with it);
//     behind both     a late frame: handed out at its own time (the observer counts its
//                     samples stale), counted as going backwards, as within `disorder`;
//   the log goes on more than `gap` ahead      a jump: a new time base. The estimator does not
//                     step through the gap: it resynchronises (VehicleObserver::resynchronise)
//                     and goes on from the new time;
//   the log goes on more than `disorder` back  the log's clock stepped back while the data went
//                     on: the rest of the log is shifted forward to go on from `last` one
//                     usual spacing of frames later, so no sample is lost or stale (record
//                     times are then the log's plus the shift);
//   otherwise (frames out of order within `disorder`, or a gap up to `gap`) the frame keeps
//                     its time; the replay's reader orders it at the newest time read.
//
// Each jump, shift and dropped stamp is counted and added to the log's problems with its line.
#pragma once

#include <cstdint>
#include <optional>

#include "mbobserver/io/can_frame.hpp"
#include "mbobserver/io/log_reader.hpp"

namespace mbo::runtime {

struct TimelineOptions {
  double max_gap_s = 3.0;  // runtime.max_time_gap_s
  double max_disorder_s = 0.1;  // runtime.max_time_disorder_s
};

struct TimelineCounters {
  std::uint64_t backwards = 0;  // frames handed out older than the newest before them
  std::uint64_t jumps = 0;  // forward jumps past max_gap_s: new time bases
  std::uint64_t shifts = 0;  // backward steps of the log's clock: the rest shifted forward
  std::uint64_t bad_stamps = 0;  // single frames stamped ahead of both neighbours, dropped
};

class LogTimeline {
 public:
  // Takes over the log's time checks (LogReader::set_time_checks(false)).
  LogTimeline(io::LogReader& log, const TimelineOptions& options);

  // The next frame with `frame.t` on the run's time base; `jumped` when the time base jumped
  // forward before it. False at the end of the log.
  bool next(io::CanFrame& frame, bool& jumped);

  const TimelineCounters& counters() const { return counters_; }
  // The run's time minus the log's, s (the sum of the backward shifts).
  double shift_s() const { return offset_; }

 private:
  struct Held {
    io::CanFrame frame;
    std::uint64_t line = 0;
  };
  std::optional<Held> read();

  io::LogReader& log_;
  TimelineOptions opt_;
  std::optional<Held> ahead_;
  bool started_ = false;
  double offset_ = 0;  // added to the log's times
  double last_ = 0;  // newest time handed out, on the run's base
  double spacing_ = 0;  // the latest step forward between frames within max_disorder_s, s
  TimelineCounters counters_;
};

}  // namespace mbo::runtime
