#include "mbobserver/runtime/log_timeline.hpp"

#include <charconv>
#include <cmath>
#include <string>

namespace mbo::runtime {

namespace {

std::string seconds(double s) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, s, std::chars_format::general, 6);
  return std::string(buf, r.ptr);
}

}  // namespace

LogTimeline::LogTimeline(io::LogReader& log, const TimelineOptions& options) : log_(log), opt_(options) {
  log_.set_time_checks(false);
}

std::optional<LogTimeline::Held> LogTimeline::read() {
  Held h;
  if (!log_.next(h.frame)) return std::nullopt;
  h.line = log_.line();
  return h;
}

bool LogTimeline::next(io::CanFrame& frame, bool& jumped) {
  jumped = false;
  for (;;) {
    std::optional<Held> cur = ahead_ ? std::move(ahead_) : read();
    if (!cur) return false;
    ahead_ = read();
    const double t = cur->frame.t + offset_;
    if (!started_) {
      started_ = true;
      last_ = t;
      frame = cur->frame;
      frame.t = t;
      return true;
    }
    const double step = t - last_;  // from the newest time handed out
    // The frame after this one, back within the tolerance of the frames before: this one
    // alone is off.
    const bool alone = std::abs(step) > opt_.max_disorder_s && ahead_ &&
                       std::abs(ahead_->frame.t + offset_ - last_) <= opt_.max_disorder_s;
    if (alone && step > 0) {
      ++counters_.bad_stamps;
      log_.reject_frame(cur->line, "timestamp " + seconds(step) + " s ahead of the frames around it: frame dropped");
      continue;
    }
    if (step < -opt_.max_disorder_s && !alone && ahead_) {
      // The log's clock stepped back and the log goes on from there: on after the newest
      // frame, one usual spacing later (how long the clock really took is not in the log).
      const double shift = last_ + spacing_ - t;
      offset_ += shift;
      ++counters_.shifts;
      ++counters_.backwards;
      log_.add_problem(cur->line, "timestamp goes back by " + seconds(-step) +
                                      " s and the log goes on from there: shifted forward by " + seconds(shift) + " s");
      frame = cur->frame;
      frame.t = last_ = cur->frame.t + offset_;
      return true;
    }
    if (step < 0) {
      ++counters_.backwards;
      log_.add_problem(cur->line, "timestamp goes back by " + seconds(-step) + " s");
    } else if (step > opt_.max_gap_s) {
      ++counters_.jumps;
      jumped = true;
      log_.add_problem(cur->line, "timestamp jumps forward by " + seconds(step) +
                                      " s: a new time base (the estimator resynchronises)");
    }
    frame = cur->frame;
    frame.t = t;
    if (step > 0 && step <= opt_.max_disorder_s) spacing_ = step;
    if (t > last_) last_ = t;
    return true;
  }
}

}  // namespace mbo::runtime
