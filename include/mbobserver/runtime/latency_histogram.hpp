// Allocation-free latency histogram with HdrHistogram's log-linear bucketing
// (Gil Tene, HdrHistogram; "2 significant digits" configuration): values are nanoseconds,
// powers of two split into 128 linear sub-buckets, so any value from 256 ns up to the top of
// the range is kept within 1/128 (0.78 %) of itself, and values below 256 ns exactly.
// Range: 0 .. 2^34 ns (17.2 s); larger values go to the top bucket and are counted in
// `saturated()`. Fixed storage of 3584 counters (28 KiB), inside the object.
// Not thread-safe: one thread records, the same thread (or one that owns a copy) reads.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace mbo::runtime {

struct LatencySummary {
  std::uint64_t count = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
};

class LatencyHistogram {
 public:
  static constexpr int kSubBucketHalfMagnitude = 7;  // 128 sub-buckets per power of two
  static constexpr std::int64_t kSubBucketHalf = std::int64_t{1} << kSubBucketHalfMagnitude;
  static constexpr std::int64_t kSubBucketCount = kSubBucketHalf * 2;
  static constexpr int kMaxMagnitude = 34;  // highest trackable value 2^34 - 1 ns
  static constexpr std::int64_t kHighestTrackableNs = (std::int64_t{1} << kMaxMagnitude) - 1;
  static constexpr std::size_t kBucketCount = kMaxMagnitude - kSubBucketHalfMagnitude;  // 27
  static constexpr std::size_t kCountsLength = (kBucketCount + 1) * kSubBucketHalf;  // 3584

  // Hot path: a few integer operations, no allocation, no branch on the common path.
  void record_ns(std::int64_t ns) noexcept;
  void record(std::chrono::nanoseconds d) noexcept { record_ns(d.count()); }
  void record_us(double us) noexcept;

  void merge(const LatencyHistogram& other) noexcept;
  void reset() noexcept;

  std::uint64_t count() const noexcept { return count_; }
  std::uint64_t saturated() const noexcept { return saturated_; }
  std::int64_t min_ns() const noexcept { return count_ ? min_ns_ : 0; }
  std::int64_t max_ns() const noexcept { return max_ns_; }  // exact, even when saturated
  double mean_ns() const noexcept;

  // The smallest recorded-bucket upper bound such that at least p % of the values are <= it
  // (nearest-rank definition), clamped to the exact maximum: never below the true
  // percentile, at most 0.78 % above it. 0 for an empty histogram. p in [0, 100].
  std::int64_t percentile_ns(double p) const noexcept;
  double percentile_us(double p) const noexcept { return percentile_ns(p) * 1e-3; }

  LatencySummary summary() const noexcept;

  // Index arithmetic, public for the tests.
  static std::size_t index_of(std::int64_t ns) noexcept;
  static std::int64_t lowest_equivalent(std::size_t index) noexcept;
  static std::int64_t highest_equivalent(std::size_t index) noexcept;

 private:
  std::array<std::uint64_t, kCountsLength> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t saturated_ = 0;
  std::int64_t min_ns_ = 0;
  std::int64_t max_ns_ = 0;
  long double sum_ns_ = 0;
};

}  // namespace mbo::runtime
