#include "mbobserver/estimation/bias_walk_check.hpp"

#include <algorithm>
#include <cmath>

namespace mbo::est {

double BiasWalkCheck::update(double t, bool standing, double value, double variance) {
  if (!c_.on || !std::isfinite(value) || !std::isfinite(variance)) return scale_;
  if (!standing) {
    moving_value_ = value, moving_var_ = variance, moving_ = true;
    stand_since_ = -1;
    checked_ = false;
    return scale_;
  }
  if (stand_since_ < 0) stand_since_ = t;
  if (checked_ || !moving_ || t - stand_since_ < c_.settle_s) return scale_;
  checked_ = true;
  const double gain = moving_var_ - variance;  // what the stop taught
  if (!(gain > 0) || variance > c_.min_gain * moving_var_) return scale_;
  ++stops_;
  const double d = value - moving_value_;
  nis_ = d * d / gain;
  if (nis_ > c_.nis_limit) scale_ = std::min(c_.max_scale, scale_ * nis_);
  return scale_;
}

}  // namespace mbo::est
