#include "mbobserver/runtime/fixed_step_clock.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <ctime>
#include <stdexcept>

#include "mbobserver/core/json_reader.hpp"

namespace mbo::runtime {

namespace {
constexpr std::int64_t kNsPerS = 1'000'000'000;

timespec to_timespec(std::int64_t ns) noexcept {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / kNsPerS);
  ts.tv_nsec = static_cast<long>(ns % kNsPerS);
  return ts;
}

void store_max(std::atomic<std::int64_t>& a, std::int64_t v) noexcept {
  if (v > a.load(std::memory_order_relaxed)) a.store(v, std::memory_order_relaxed);
}

void increment(std::atomic<std::uint64_t>& a, std::uint64_t by = 1) noexcept {
  a.store(a.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}
}  // namespace

std::int64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * kNsPerS + ts.tv_nsec;
}

double wall_clock_s() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void sleep_until_monotonic_ns(std::int64_t deadline_ns) noexcept {
  const timespec ts = to_timespec(deadline_ns);
  // With TIMER_ABSTIME an interrupted sleep is simply restarted with the same deadline
  // (clock_nanosleep(2): the remain argument is unused for absolute sleeps).
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

FixedStepClock::FixedStepClock(std::chrono::nanoseconds step) : step_ns_(step.count()) {
  if (step_ns_ <= 0) throw std::invalid_argument("FixedStepClock: step must be > 0");
}

void FixedStepClock::start() noexcept { start_at(monotonic_ns() + step_ns_); }

void FixedStepClock::start_at(std::int64_t first_deadline_ns) noexcept {
  next_deadline_ns_ = first_deadline_ns;
  next_index_ = 0;
}

StepTick FixedStepClock::wait() noexcept {
  StepTick tick;
  const std::int64_t now = monotonic_ns();
  if (now > next_deadline_ns_) {
    // The previous step overran. Run the current step at once; drop the grid points that
    // are a whole step or more in the past so the loop resynchronises to the grid.
    tick.missed = true;
    const std::int64_t behind = now - next_deadline_ns_;
    const auto skip = static_cast<std::uint64_t>(behind / step_ns_);
    tick.skipped = skip;
    next_deadline_ns_ += static_cast<std::int64_t>(skip) * step_ns_;
    next_index_ += skip;
    increment(misses_);
    if (skip > 0) increment(skipped_, skip);
    tick.woke_ns = now;
  } else {
    sleep_until_monotonic_ns(next_deadline_ns_);
    tick.woke_ns = monotonic_ns();
  }
  tick.index = next_index_;
  tick.deadline_ns = next_deadline_ns_;
  tick.lateness_ns = tick.woke_ns > tick.deadline_ns ? tick.woke_ns - tick.deadline_ns : 0;
  store_max(max_lateness_ns_, tick.lateness_ns);
  increment(ticks_);
  next_deadline_ns_ += step_ns_;
  ++next_index_;
  return tick;
}

ClockCounters FixedStepClock::counters() const noexcept {
  ClockCounters c;
  c.ticks = ticks_.load(std::memory_order_relaxed);
  c.deadline_misses = misses_.load(std::memory_order_relaxed);
  c.skipped_steps = skipped_.load(std::memory_order_relaxed);
  c.max_lateness_ns = max_lateness_ns_.load(std::memory_order_relaxed);
  return c;
}

MissCause classify_miss(double previous_compute_s, double step_s, bool woke_in_time) noexcept {
  if (woke_in_time) return MissCause::input_wait;  // whatever came before, the wait made it late
  return previous_compute_s > step_s ? MissCause::overrun : MissCause::late_wakeup;
}

void DeadlineMisses::on_step(bool missed, MissCause cause, std::int64_t now_ns) noexcept {
  if (missed) {
    increment(steps_);
    if (!in_episode_) {
      increment(by_cause_[static_cast<std::size_t>(cause)]);
      if (n_starts_ < kKeptStarts) starts_[n_starts_++] = now_ns;
    }
  }
  in_episode_ = missed;
}

std::uint64_t DeadlineMisses::episodes() const noexcept {
  std::uint64_t n = 0;
  for (const auto& c : by_cause_) n += c.load(std::memory_order_relaxed);
  return n;
}

ReplayRate parse_replay_rate(std::string_view text) {
  if (text == "realtime") return {false, 1.0};
  if (text == "max") return {true, 1.0};
  double factor = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, factor);
  if (ec != std::errc() || ptr != end || !std::isfinite(factor) || !(factor > 0))
    throw ConfigError("--rate: expected realtime, max or a positive factor, got \"" + std::string(text) + "\"");
  return {false, factor};
}

std::string rate_name(const ReplayRate& rate) {
  if (rate.max) return "max";
  if (rate.factor == 1.0) return "realtime";
  char buf[32];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, rate.factor);
  return std::string(buf, ptr);
}

void ReplayPacer::start(double log_t0) noexcept {
  started_ = true;
  log_t0_ = log_t0;
  mono_t0_ns_ = monotonic_ns();
}

std::int64_t ReplayPacer::target_ns(double log_t) const noexcept {
  const double wall_s = (log_t - log_t0_) / rate_.factor;
  return mono_t0_ns_ + static_cast<std::int64_t>(std::llround(wall_s * 1e9));
}

double ReplayPacer::log_time_now() const noexcept {
  return log_t0_ + static_cast<double>(monotonic_ns() - mono_t0_ns_) * 1e-9 * rate_.factor;
}

void ReplayPacer::wait_until(double log_t) noexcept {
  if (rate_.max || !started_ || !std::isfinite(log_t)) return;
  const std::int64_t target = target_ns(log_t);
  if (target <= monotonic_ns()) return;
  ++sleeps_;
  sleep_until_monotonic_ns(target);
}

double ReplayPacer::behind_s(double log_t) const noexcept {
  if (rate_.max || !started_) return 0;
  const std::int64_t late = monotonic_ns() - target_ns(log_t);
  return late > 0 ? static_cast<double>(late) * 1e-9 : 0.0;
}

}  // namespace mbo::runtime
