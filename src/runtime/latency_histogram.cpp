#include "mbobserver/runtime/latency_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace mbo::runtime {

std::size_t LatencyHistogram::index_of(std::int64_t ns) noexcept {
  const auto v = static_cast<std::uint64_t>(std::clamp<std::int64_t>(ns, 0, kHighestTrackableNs));
  // Bucket b holds [128 * 2^b, 256 * 2^b) in steps of 2^b; bucket 0 also holds [0, 128).
  const int pow2ceiling = 64 - std::countl_zero(v | static_cast<std::uint64_t>(kSubBucketCount - 1));
  const int bucket = pow2ceiling - (kSubBucketHalfMagnitude + 1);
  const auto sub = static_cast<std::int64_t>(v >> bucket);
  return static_cast<std::size_t>(((static_cast<std::int64_t>(bucket) + 1) << kSubBucketHalfMagnitude) +
                                  (sub - kSubBucketHalf));
}

std::int64_t LatencyHistogram::lowest_equivalent(std::size_t index) noexcept {
  auto bucket = static_cast<std::int64_t>(index >> kSubBucketHalfMagnitude) - 1;
  auto sub = static_cast<std::int64_t>(index & (kSubBucketHalf - 1)) + kSubBucketHalf;
  if (bucket < 0) {
    sub -= kSubBucketHalf;
    bucket = 0;
  }
  return sub << bucket;
}

std::int64_t LatencyHistogram::highest_equivalent(std::size_t index) noexcept {
  const auto bucket = std::max<std::int64_t>(static_cast<std::int64_t>(index >> kSubBucketHalfMagnitude) - 1, 0);
  return lowest_equivalent(index) + (std::int64_t{1} << bucket) - 1;
}

void LatencyHistogram::record_ns(std::int64_t ns) noexcept {
  if (ns < 0) ns = 0;  // a clock step backwards must not index out of range
  if (ns > kHighestTrackableNs) [[unlikely]]
    ++saturated_;
  ++counts_[index_of(ns)];
  if (count_ == 0 || ns < min_ns_) min_ns_ = ns;
  if (ns > max_ns_) max_ns_ = ns;
  ++count_;
  sum_ns_ += ns;
}

void LatencyHistogram::record_us(double us) noexcept {
  if (!(us >= 0)) us = 0;  // NaN or negative
  record_ns(us >= 9.2e12 ? kHighestTrackableNs + 1 : static_cast<std::int64_t>(std::llround(us * 1e3)));
}

void LatencyHistogram::merge(const LatencyHistogram& other) noexcept {
  if (other.count_ == 0) return;
  for (std::size_t i = 0; i < kCountsLength; ++i) counts_[i] += other.counts_[i];
  if (count_ == 0 || other.min_ns_ < min_ns_) min_ns_ = other.min_ns_;
  max_ns_ = std::max(max_ns_, other.max_ns_);
  count_ += other.count_;
  saturated_ += other.saturated_;
  sum_ns_ += other.sum_ns_;
}

void LatencyHistogram::reset() noexcept { *this = LatencyHistogram{}; }

double LatencyHistogram::mean_ns() const noexcept {
  return count_ ? static_cast<double>(sum_ns_ / static_cast<long double>(count_)) : 0.0;
}

std::int64_t LatencyHistogram::percentile_ns(double p) const noexcept {
  if (count_ == 0) return 0;
  p = std::clamp(std::isnan(p) ? 100.0 : p, 0.0, 100.0);
  // Nearest rank: the ceil(p/100 * N)-th smallest value, at least the first. In integers
  // (p as parts per million) so that 99.9 % of 1000 is rank 999, not 1000
  // through 0.999 * 1000 = 999.0000000000001.
  const auto p_ppm = static_cast<unsigned __int128>(std::llround(p * 1e4));  // parts per 10^6
  auto rank = static_cast<std::uint64_t>((p_ppm * count_ + 999'999) / 1'000'000);
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  const std::size_t top = kCountsLength - 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kCountsLength; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      // The top bucket also holds saturated values, whose only exact record is the maximum.
      if (i == top && saturated_ > 0) return max_ns_;
      return std::min(highest_equivalent(i), max_ns_);
    }
  }
  return max_ns_;
}

LatencySummary LatencyHistogram::summary() const noexcept {
  LatencySummary s;
  s.count = count_;
  s.p50_us = percentile_us(50);
  s.p99_us = percentile_us(99);
  s.p999_us = percentile_us(99.9);
  s.max_us = static_cast<double>(max_ns_) * 1e-3;
  return s;
}

}  // namespace mbo::runtime
