#include "mbobserver/runtime/latency_histogram.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

using mbo::runtime::LatencyHistogram;

namespace {

// Nearest-rank percentile of the samples, p given in tenths of a percent (999 = 99.9 %).
std::int64_t exact_percentile(std::vector<std::int64_t> v, int p_tenths) {
  std::sort(v.begin(), v.end());
  const auto n = static_cast<std::uint64_t>(v.size());
  std::uint64_t rank = (static_cast<std::uint64_t>(p_tenths) * n + 999) / 1000;
  rank = std::max<std::uint64_t>(rank, 1);
  return v[rank - 1];
}

// The histogram never reports below the true value and at most 1/128 above it (plus the
// 1 ns of an integer bucket boundary).
void expect_close(std::int64_t reported, std::int64_t exact, const char* what) {
  EXPECT_GE(reported, exact) << what;
  EXPECT_LE(static_cast<double>(reported), static_cast<double>(exact) * (1.0 + 1.0 / 128) + 1)
      << what << " exact " << exact;
}

}  // namespace

TEST(LatencyHistogram, BucketsCoverEveryValueWithinOnePercent) {
  std::vector<std::int64_t> probes;
  for (std::int64_t v = 0; v < 5000; ++v) probes.push_back(v);
  for (double v = 1000; v < 1.7e10; v *= 1.013) probes.push_back(static_cast<std::int64_t>(v));
  probes.push_back(LatencyHistogram::kHighestTrackableNs);
  std::sort(probes.begin(), probes.end());
  std::size_t last_index = 0;
  for (std::int64_t v : probes) {
    const std::size_t i = LatencyHistogram::index_of(v);
    ASSERT_LT(i, LatencyHistogram::kCountsLength) << v;
    EXPECT_LE(LatencyHistogram::lowest_equivalent(i), v);
    EXPECT_GE(LatencyHistogram::highest_equivalent(i), v);
    const auto width = LatencyHistogram::highest_equivalent(i) - LatencyHistogram::lowest_equivalent(i) + 1;
    if (v < 256) {
      EXPECT_EQ(width, 1) << v;  // exact below 256 ns
    } else {
      EXPECT_LE(static_cast<double>(width) / static_cast<double>(v), 1.0 / 128) << v;
    }
    EXPECT_GE(i, last_index);  // monotone
    last_index = i;
  }
  EXPECT_EQ(LatencyHistogram::index_of(LatencyHistogram::kHighestTrackableNs), LatencyHistogram::kCountsLength - 1);
}

TEST(LatencyHistogram, PercentilesOfAUniformRampMatchTheExactOnes) {
  LatencyHistogram h;
  std::vector<std::int64_t> samples;
  for (std::int64_t us = 1; us <= 10000; ++us) {  // 1 us .. 10 ms, one each
    samples.push_back(us * 1000);
    h.record_us(static_cast<double>(us));
  }
  EXPECT_EQ(h.count(), 10000u);
  expect_close(h.percentile_ns(50), exact_percentile(samples, 500), "p50");
  expect_close(h.percentile_ns(99), exact_percentile(samples, 990), "p99");
  expect_close(h.percentile_ns(99.9), exact_percentile(samples, 999), "p99.9");
  EXPECT_EQ(exact_percentile(samples, 999), 9'990'000);
  EXPECT_EQ(h.max_ns(), 10'000'000);
  EXPECT_EQ(h.min_ns(), 1000);
  EXPECT_EQ(h.percentile_ns(100), h.max_ns());
  EXPECT_NEAR(h.mean_ns(), 5'000'500, 1);
  auto s = h.summary();
  EXPECT_EQ(s.count, 10000u);
  EXPECT_GE(s.p50_us, 5000.0);
  EXPECT_LE(s.p50_us, 5000.0 * (1 + 1.0 / 128));
  EXPECT_EQ(s.max_us, 10000.0);
}

TEST(LatencyHistogram, PercentilesOfLogUniformSamplesFrom1usTo10s) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> exponent(3.0, 10.0);  // 10^3 .. 10^10 ns
  LatencyHistogram h;
  std::vector<std::int64_t> samples;
  for (int i = 0; i < 50000; ++i) {
    auto ns = static_cast<std::int64_t>(std::pow(10.0, exponent(rng)));
    samples.push_back(ns);
    h.record_ns(ns);
  }
  for (int p : {10, 250, 500, 750, 900, 990, 999, 1000}) {
    SCOPED_TRACE(p);
    expect_close(h.percentile_ns(p / 10.0), exact_percentile(samples, p), "percentile");
  }
  EXPECT_EQ(h.max_ns(), *std::max_element(samples.begin(), samples.end()));
  EXPECT_EQ(h.saturated(), 0u);
}

TEST(LatencyHistogram, MergeEqualsRecordingEverythingInOne) {
  LatencyHistogram a, b, all;
  for (int i = 0; i < 1000; ++i) {
    const std::int64_t v = 1000 + 37 * i * i;
    (i % 3 ? a : b).record_ns(v);
    all.record_ns(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.max_ns(), all.max_ns());
  EXPECT_EQ(a.min_ns(), all.min_ns());
  for (double p : {0.0, 50.0, 99.0, 99.9, 100.0}) EXPECT_EQ(a.percentile_ns(p), all.percentile_ns(p));
}

TEST(LatencyHistogram, EmptyNegativeAndOutOfRangeValues) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile_ns(99), 0);
  EXPECT_EQ(h.summary().max_us, 0.0);

  h.record_ns(-5);  // a clock step backwards: kept as 0, never out of bounds
  h.record_us(std::nan(""));
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(h.max_ns(), 0);

  h.record_ns(std::int64_t{100} * 1'000'000'000);  // 100 s: beyond the tracked range
  EXPECT_EQ(h.saturated(), 1u);
  EXPECT_EQ(h.max_ns(), std::int64_t{100} * 1'000'000'000);  // the maximum stays exact
  EXPECT_EQ(h.percentile_ns(100), h.max_ns());

  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.saturated(), 0u);
}
