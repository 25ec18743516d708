#include "mbobserver/estimation/scale_release.hpp"

#include <algorithm>
#include <cmath>

namespace mbo::est {

void ScaleRelease::observe(double along, double t) {
  if (released_ || !c_.on || !std::isfinite(along)) return;
  // an exponentially weighted mean in time; for unit-variance white samples its variance is
  // the sum of the squared weights: v <- (1 - a)^2 v + a^2
  const double gap = last_t_ < 0 ? 0.0 : std::max(0.0, t - last_t_);
  const double a = last_t_ < 0 ? 1.0 : 1.0 - std::exp(-gap / c_.window_s);
  mean_ += a * (along - mean_);
  mean_var_ = (1 - a) * (1 - a) * mean_var_ + a * a;
  if (first_t_ < 0) first_t_ = t;
  last_t_ = t;
  // Failing counts over samples: a mean of less than a window (its first samples are the
  // start's transient) fails nothing, and a pause in them (a stop, a turn) starts it anew.
  const bool failing = t - first_t_ >= c_.window_s && test() > c_.test_sigma;
  if (!failing || gap > c_.sustained_s) failing_since_ = -1;
  if (failing && failing_since_ < 0) failing_since_ = t;
  if (failing && t - failing_since_ >= c_.sustained_s) released_ = true;
}

double ScaleRelease::test() const { return mean_var_ > 0 ? std::abs(mean_) / std::sqrt(mean_var_) : 0.0; }

}  // namespace mbo::est
