// What the experiments and mbobserver-eval report of an error series: RMSE and largest
// magnitude, and percentiles of step times. A non-finite error (a diverged estimate) makes the
// RMSE NaN: it must show, not be averaged away.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

namespace mbo::exp {

struct ErrorStats {
  double sum2 = 0, max = 0;
  long n = 0, non_finite = 0;
  void add(double e) {
    if (!std::isfinite(e)) {
      ++non_finite;
      return;
    }
    sum2 += e * e;
    max = std::max(max, std::abs(e));
    ++n;
  }
  double rmse() const { return non_finite ? std::nan("") : n ? std::sqrt(sum2 / n) : 0.0; }
};

// {"p50", "p99", "p999", "max"} of a sample (nearest rank).
inline nlohmann::json percentiles(std::vector<double> v) {
  if (v.empty()) return {{"p50", 0}, {"p99", 0}, {"p999", 0}, {"max", 0}};
  std::sort(v.begin(), v.end());
  auto at = [&](double p) { return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))]; };
  return {{"p50", at(0.5)}, {"p99", at(0.99)}, {"p999", at(0.999)}, {"max", v.back()}};
}

}  // namespace mbo::exp
