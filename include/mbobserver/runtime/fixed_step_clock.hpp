// Pacing of the estimator thread.
//
// FixedStepClock: live operation. Deadlines lie on an absolute grid start + k*step of
// CLOCK_MONOTONIC and the thread sleeps with clock_nanosleep(TIMER_ABSTIME), so wake-up
// jitter never accumulates into drift (clock_nanosleep(2); the cyclictest pattern).
//
// ReplayPacer: replay. Maps the log's time to the monotonic clock at `realtime`, a factor, or
// `max` (no sleep at all, as fast as the estimator runs).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace mbo::runtime {

// CLOCK_MONOTONIC in nanoseconds (the clock of every deadline and latency in the daemon).
std::int64_t monotonic_ns() noexcept;
// CLOCK_REALTIME in seconds since the UNIX epoch (t_wall of the datagrams).
double wall_clock_s() noexcept;

// Sleeps until an absolute CLOCK_MONOTONIC time, resuming after signals (EINTR).
void sleep_until_monotonic_ns(std::int64_t deadline_ns) noexcept;

struct StepTick {
  std::uint64_t index = 0;  // grid index k of this deadline (counts skipped ones too)
  std::int64_t deadline_ns = 0;  // CLOCK_MONOTONIC
  std::int64_t woke_ns = 0;  // when wait() returned
  std::int64_t lateness_ns = 0;  // woke_ns - deadline_ns, >= 0
  std::uint64_t skipped = 0;  // deadlines that passed entirely while the last step ran
  bool missed = false;  // the previous step overran this deadline
};

struct ClockCounters {
  std::uint64_t ticks = 0;
  std::uint64_t deadline_misses = 0;  // steps that finished after the next deadline
  std::uint64_t skipped_steps = 0;  // grid points dropped to catch up after misses
  std::int64_t max_lateness_ns = 0;
};

class FixedStepClock {
 public:
  explicit FixedStepClock(std::chrono::nanoseconds step);

  // Starts the grid: the first deadline is now + step (or `first_deadline_ns` if given).
  void start() noexcept;
  void start_at(std::int64_t first_deadline_ns) noexcept;

  // Estimator thread: sleeps until the next deadline and returns it. If the previous step
  // ran past one or more deadlines, it returns at once with `missed` set; deadlines that
  // are already more than one step in the past are skipped (counted), so a long stall does
  // not turn into a burst of back-to-back steps. No allocation, no lock.
  StepTick wait() noexcept;

  std::chrono::nanoseconds step() const noexcept { return std::chrono::nanoseconds(step_ns_); }
  // Any thread (relaxed reads of single-writer counters).
  ClockCounters counters() const noexcept;

 private:
  std::int64_t step_ns_;
  std::int64_t next_deadline_ns_ = 0;
  std::uint64_t next_index_ = 0;
  std::atomic<std::uint64_t> ticks_{0};
  std::atomic<std::uint64_t> misses_{0};
  std::atomic<std::uint64_t> skipped_{0};
  std::atomic<std::int64_t> max_lateness_ns_{0};
};

// What made a step start late. The steps after a stall all start late while the loop catches
// up (a replay runs every step), so misses are grouped into episodes, each attributed to what
// delayed its first step:
//   overrun      the previous step computed for longer than a step;
//   late_wakeup  the thread woke more than a step late (the machine did not run it);
//   input_wait   a paced replay's estimator woke in time but waited for the log reader.
enum class MissCause : std::uint8_t { overrun, late_wakeup, input_wait };
inline constexpr std::array<std::string_view, 3> kMissCauseNames{"overrun", "late_wakeup", "input_wait"};
// `woke_in_time`: a paced replay's estimator woke within a step of its moment (live: false).
MissCause classify_miss(double previous_compute_s, double step_s, bool woke_in_time) noexcept;

// Deadline misses of the estimator loop: written by the estimator thread only (on_step),
// read by any thread. The CLOCK_MONOTONIC moments at which the first kKeptStarts episodes
// began are kept, to be matched against the system's own record of stalls (journalctl -o
// short-monotonic, a probe thread) once the run is over.
class DeadlineMisses {
 public:
  static constexpr std::size_t kKeptStarts = 32;
  void on_step(bool missed, MissCause cause, std::int64_t now_ns = 0) noexcept;
  std::uint64_t steps() const noexcept { return steps_.load(std::memory_order_relaxed); }
  std::uint64_t episodes() const noexcept;
  std::uint64_t episodes(MissCause c) const noexcept {
    return by_cause_[static_cast<std::size_t>(c)].load(std::memory_order_relaxed);
  }
  // After the estimator thread has stopped: the start of episode i < min(episodes(), kKeptStarts).
  std::int64_t episode_start_ns(std::size_t i) const noexcept { return starts_[i]; }

 private:
  std::atomic<std::uint64_t> steps_{0};
  std::array<std::atomic<std::uint64_t>, kMissCauseNames.size()> by_cause_{};
  std::array<std::int64_t, kKeptStarts> starts_{};
  std::size_t n_starts_ = 0;
  bool in_episode_ = false;
};

// --rate realtime | max | <factor>.
struct ReplayRate {
  bool max = false;  // never sleep
  double factor = 1.0;  // log seconds per wall second (1 = realtime); ignored when max
};

// Parses "realtime", "max" or a positive finite factor ("2", "0.5"); anything else is a
// ConfigError naming the value (exit code 2).
ReplayRate parse_replay_rate(std::string_view text);
std::string rate_name(const ReplayRate& rate);

class ReplayPacer {
 public:
  explicit ReplayPacer(ReplayRate rate) : rate_(rate) {}

  // Anchors log time `log_t0` (s) to now.
  void start(double log_t0) noexcept;
  // The log's time base jumped from `from` to `to` (LogTimeline): `to` is due when `from` was,
  // the gap takes no wall time. The same arithmetic wherever it is applied (reader, steps).
  void skip(double from, double to) noexcept { log_t0_ += to - from; }
  // Sleeps until the wall moment that corresponds to `log_t`; returns at once at `max`,
  // before start(), or when the replay is already behind (a log time going backwards too).
  void wait_until(double log_t) noexcept;
  // The same, in slices of at most 50 ms, giving up early when `stop()` becomes true (a gap
  // of minutes in a log must not delay SIGTERM past TimeoutStopSec=). Returns false if it
  // gave up.
  template <class StopPredicate>
  bool wait_until(double log_t, StopPredicate&& stop) noexcept {
    if (rate_.max || !started_ || !(log_t == log_t)) return true;
    const std::int64_t target = target_ns(log_t);
    bool slept = false;
    for (std::int64_t now = monotonic_ns(); now < target; now = monotonic_ns()) {
      if (stop()) return false;
      slept = true;
      sleep_until_monotonic_ns(std::min(target, now + kStopCheckNs));
    }
    if (slept) ++sleeps_;
    return true;
  }
  // How far the replay is behind its schedule at `log_t`, s (0 at max).
  double behind_s(double log_t) const noexcept;

  const ReplayRate& rate() const noexcept { return rate_; }
  std::uint64_t sleeps() const noexcept { return sleeps_; }
  // The monotonic moment of `log_t`, ns, and the log time of now (after start(), paced).
  std::int64_t target_ns(double log_t) const noexcept;
  double log_time_now() const noexcept;

 private:
  static constexpr std::int64_t kStopCheckNs = 50'000'000;
  ReplayRate rate_;
  bool started_ = false;
  double log_t0_ = 0;
  std::int64_t mono_t0_ns_ = 0;
  std::uint64_t sleeps_ = 0;
};

}  // namespace mbo::runtime
